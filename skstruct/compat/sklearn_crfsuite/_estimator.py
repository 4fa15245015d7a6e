"""sklearn-crfsuite's ``CRF`` on skstruct's CRF: CRFsuite's objective and parameter set."""

import copy
import time
import warnings
from collections.abc import Iterator, Mapping
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from ..._crf import CRF as _SkstructCRF
from ..._ssvm import StructuredPerceptron, StructuredSVM
from ...preprocessing import SequenceVectorizer
from ...utils._sequences import check_sequences
from . import metrics

__all__ = ["CRF", "crfsuite_penalty"]

#: Iterations when ``max_iterations`` is None (CRFsuite's L-BFGS has no limit; it stops
#: by its own tests, skstruct's by ``tol``).
DEFAULT_MAX_ITER = 1000

#: Parameters of CRFsuite's algorithms or of its L-BFGS internals: accepted for the
#: signature, but an error at ``fit`` unless left at None or used by the algorithm
#: (:data:`ALGORITHM_PARAMETERS`).
_UNSUPPORTED = (
    "num_memories", "epsilon", "period", "delta", "linesearch", "max_linesearch",
    "calibration_eta", "calibration_rate", "calibration_samples",
    "calibration_candidates", "calibration_max_trials", "pa_type", "c",
    "error_sensitive", "averaging", "variance", "gamma", "trainer_cls",
)

#: The CRFsuite parameters each algorithm reads (beyond ``max_iterations``, ``verbose``
#: and ``tol``), and the skstruct learner it trains.
ALGORITHM_PARAMETERS = {
    "lbfgs": ("c1", "c2", "all_possible_states", "all_possible_transitions"),
    "l2sgd": ("c2", "all_possible_states", "all_possible_transitions"),
    "ap": (),
    "pa": ("c", "pa_type", "error_sensitive", "averaging"),
}

#: CRFsuite's default ``max_iterations`` of each algorithm (L-BFGS: no limit, here
#: :data:`DEFAULT_MAX_ITER`).
ALGORITHM_MAX_ITER = {"lbfgs": None, "l2sgd": 1000, "ap": 100, "pa": 100}


def crfsuite_penalty(c1, c2, n_sequences):
    """skstruct's ``alpha`` and ``l1_ratio`` for CRFsuite's ``c1`` and ``c2``.

    CRFsuite minimizes Σ_i −log p(y_i | x_i) + c1 ‖w‖₁ + c2 ‖w‖², skstruct
    F(w) = (1/n) Σ_i −log p(y_i | x_i) + alpha (l1_ratio ‖w‖₁ + (1 − l1_ratio)/2 ‖w‖²);
    the first is n F(w) (the same minimizer) exactly when alpha l1_ratio = c1 / n and
    alpha (1 − l1_ratio) / 2 = c2 / n, that is

        alpha = (c1 + 2 c2) / n,   l1_ratio = c1 / (c1 + 2 c2)   (0 when c1 = c2 = 0).

    Parameters
    ----------
    c1, c2 : float >= 0
        CRFsuite's L1 and L2 coefficients.
    n_sequences : int >= 1
        Number of training sequences n.

    Returns
    -------
    alpha, l1_ratio : float

    Examples
    --------
    >>> from skstruct.compat.sklearn_crfsuite import crfsuite_penalty
    >>> alpha, l1_ratio = crfsuite_penalty(0.1, 0.1, 300)  # the tutorial's c1 = c2 = 0.1
    >>> round(alpha, 12), round(l1_ratio, 12)
    (0.001, 0.333333333333)
    """
    for name, value in (("c1", c1), ("c2", c2)):
        if isinstance(value, bool) or not isinstance(value, Real) or not value >= 0:
            raise ValueError(f"{name} must be a number >= 0, got {value!r}.")
    total = c1 + 2 * c2
    if total == 0:
        return 0.0, 0.0
    return total / n_sequences, c1 / total


def seen_transitions(y_encoded, offsets, n_classes):
    """Which label bigrams (y_{t-1}, y_t) occur inside the training sequences.

    Parameters
    ----------
    y_encoded : ndarray of int of shape (n_tokens,)
        Class indices of all tokens, sequences one after the other.
    offsets : ndarray of int of shape (n_sequences + 1,)
        Start of every sequence in ``y_encoded``, then ``n_tokens``.
    n_classes : int

    Returns
    -------
    ndarray of bool of shape (n_classes, n_classes)
        Entry [i, j] is True when label i is followed by label j somewhere.
    """
    y_encoded = np.asarray(y_encoded, dtype=np.int64)
    inside = np.ones(y_encoded.shape[0], dtype=bool)  # token t has a predecessor
    inside[np.asarray(offsets[:-1], dtype=np.int64)[np.diff(offsets) > 0]] = False
    seen = np.zeros((n_classes, n_classes), dtype=bool)
    t = np.flatnonzero(inside)
    seen[y_encoded[t - 1], y_encoded[t]] = True
    return seen


def negative_state_sums(X, y_encoded, n_classes):
    """Which (attribute, label) pairs have a negative sum of values over their tokens.

    CRFsuite makes a state feature of a pair only when the attribute's values summed
    over the training tokens of that label are at least its ``feature.minfreq``, 0 by
    default: a pair whose values sum to less than 0 has no weight, whether or not
    ``all_possible_states`` is set.

    Parameters
    ----------
    X : sparse matrix of shape (n_tokens, n_features)
        Attribute values of all training tokens, sequences one after the other.
    y_encoded : ndarray of int of shape (n_tokens,)
        Class index of every token.
    n_classes : int

    Returns
    -------
    ndarray of bool of shape (n_features, n_classes)
        Entry [j, k] is True when attribute j's values on the tokens of label k sum to
        less than 0.
    """
    X = sp.csr_matrix(X)
    n_tokens, n_features = X.shape
    if X.nnz == 0 or X.data.min() >= 0:
        return np.zeros((n_features, n_classes), dtype=bool)
    labels = sp.csr_matrix((np.ones(n_tokens), (np.arange(n_tokens), y_encoded)),
                           shape=(n_tokens, n_classes))
    return (X.T @ labels).toarray() < 0


class _CRFsuiteChain(_SkstructCRF):
    """skstruct's CRF on CRFsuite's parameters, through the solver's mask of parameters
    held at zero: start and end scores (CRFsuite has none), the state weights of pairs
    whose values sum to less than 0 (:func:`negative_state_sums`) and, with
    ``all_possible_transitions=False``, the transitions never seen in training. Trained
    by L-BFGS (``"lbfgs"``) or SVRG (``"svrg"``, ``algorithm="l2sgd"``)."""

    _parameter_constraints = {**_SkstructCRF._parameter_constraints,
                              "all_possible_transitions": ["boolean"]}
    _tol_scale = "absolute"

    def __init__(self, alpha=1e-4, *, l1_ratio=0.0, feature_label_pairs="seen",
                 solver="lbfgs", max_iter=100, tol=1e-4, verbose=0, callback=None,
                 random_state=None, all_possible_transitions=False):
        super().__init__(alpha, l1_ratio=l1_ratio, feature_label_pairs=feature_label_pairs,
                         solver=solver, max_iter=max_iter, tol=tol, verbose=verbose,
                         callback=callback, random_state=random_state)
        self.all_possible_transitions = all_possible_transitions

    def _penalty(self, kind, features, batch, y_encoded, classes):
        l2_strength, options = super()._penalty(kind, features, batch, y_encoded, classes)
        n_classes = len(classes)
        transitions = np.zeros((n_classes, n_classes), dtype=bool)
        if not self.all_possible_transitions:
            transitions = ~seen_transitions(y_encoded, batch.output_offsets, n_classes)
        states = negative_state_sums(batch.X, y_encoded, n_classes)
        ends = np.ones(n_classes)
        held = features.pack(states, transitions, ends, ends).astype(bool)
        fixed = options.get("fixed")
        options["fixed"] = held if fixed is None else (np.asarray(fixed, dtype=bool) | held)
        return l2_strength, options


def _text(value):
    """A bytes value as the string python-crfsuite makes of it (its UTF-8 text; bytes
    that are not UTF-8 stay a string of their own), anything else unchanged."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "surrogateescape")
    return value


def _crfsuite_token(token, where):
    """One token as a flat feature dict, the way python-crfsuite reads it: a list of
    attribute strings is each attribute with value 1; a nested dict ``{k: {a: v}}`` is
    the attribute ``"k:a"``; bytes are their UTF-8 text."""
    if isinstance(token, Mapping):
        flat = {}
        for key, value in token.items():
            if isinstance(value, Mapping):
                for inner, inner_value in _crfsuite_token(value, where).items():
                    flat[f"{key}:{inner}"] = inner_value
            elif isinstance(value, (list, set)):
                flat[key] = [_text(item) for item in value]
            else:
                flat[key] = _text(value)
        return flat
    if isinstance(token, (list, tuple)):
        flat = {}
        for attribute in map(_text, token):
            if not isinstance(attribute, str):
                raise TypeError(
                    f"{where} is a list holding {attribute!r} of type "
                    f"{type(attribute).__name__}; a token is a dict of features or a "
                    "list of attribute strings.")
            flat[attribute] = flat.get(attribute, 0.0) + 1.0
        return flat
    raise TypeError(f"{where} is {type(token).__name__}; a token is a dict of features or "
                    "a list of attribute strings.")


def _feature_dicts(X):
    """``X`` with every token a flat dict (a Python pass; only for lists of attribute
    strings, nested dicts and bytes, which the vectorizer does not read)."""
    return [[_crfsuite_token(token, f"sequence {i} token {j}") for j, token in enumerate(seq)]
            for i, seq in enumerate(X)]


def _vectorize(vectorizer, X, fit):
    """Per-sequence CSR matrices of ``X``: flat feature dicts go straight to the
    vectorizer; other token forms python-crfsuite reads are flattened first."""
    method = vectorizer.fit_transform if fit else vectorizer.transform
    try:
        return method(X)
    except TypeError:
        flat = _feature_dicts(X)  # raises the TypeError naming a token of no known form
        return method(flat)


def _sequences(X, name):
    """``X`` as a list of sequences: a generator or other one-pass iterable is read once
    (python-crfsuite's trainer reads it once too, appending sequence by sequence)."""
    if isinstance(X, (str, Mapping)):
        raise ValueError(f"{name} must be a list or a generator of sequences.")
    if isinstance(X, Iterator) or not hasattr(X, "__len__"):
        try:
            X = list(X)
        except TypeError:
            raise ValueError(f"{name} must be a list or a generator of sequences; got "
                             f"{type(X).__name__}.") from None
    return X


def _vectorize_training(vectorizer, X, y):
    """The training sequences vectorized (fitting ``vectorizer``), and ``y`` as a list.

    ``X`` and ``y`` may be lists or generators; each is read once, then the token
    features are vectorized in one more pass over the sequences (two passes at most)."""
    X, y = _sequences(X, "X"), _sequences(y, "y")
    if len(X) == 0:
        raise ValueError("X must be a non-empty list of sequences of token features.")
    if len(y) != len(X):
        raise ValueError(
            f"y must be a list of label sequences, one per sequence of X ({len(X)}).")
    Xv = _vectorize(vectorizer, X, fit=True)
    return Xv, y


def _attribute_names(vectorizer):
    """python-crfsuite's name of every column: ``key:value`` for a string value, ``key``
    for a number (a boolean is the number 0 or 1)."""
    table, by_key = vectorizer._index
    names = np.empty(vectorizer.n_features_out_, dtype=object)
    for key, values in table.items():
        for value, column in values.items():
            if isinstance(value, str):
                names[column] = f"{key}:{value}"
    for key, column in by_key.items():
        names[column] = key
    return names


def _marginals(estimator, X):
    """Per-token label marginals of a fitted chain model, whatever trained it: CRFsuite's
    tagger computes them from any model's weights (the averaged perceptron's and
    passive-aggressive's too), as those of the CRF with these weights."""
    own = getattr(estimator, "predict_marginals", None)
    if own is not None:
        return own(X)
    batch = estimator._validate_prediction_data(X)
    _, marginals = estimator.decoder_.marginals(estimator._scores(batch))
    return estimator._fitted_kind().unary_to_user(marginals.unary, batch)


def _log_probabilities(estimator, X, y):
    """log p(y_i | x_i) of label sequences under the CRF of a fitted model's weights."""
    own = getattr(estimator, "predict_log_proba_sequences", None)
    if own is not None:
        return own(X, y)
    batch, y_flat = check_sequences(X, y, n_features=estimator.n_features_in_)
    encoded = np.minimum(np.searchsorted(estimator.classes_, y_flat),
                         len(estimator.classes_) - 1)
    if np.any(estimator.classes_[encoded] != y_flat):
        raise ValueError("y contains labels not seen in fit.")
    scores = estimator._scores(batch)
    return (estimator.decoder_.score_outputs(scores, encoded)
            - estimator.decoder_.log_partition(scores))


class TrainingLog:
    """What ``fit`` records, in the form of sklearn-crfsuite's ``training_log_``.

    Attributes
    ----------
    iterations : list of dict
        One per solver iteration: ``num`` (1, 2, ...), ``loss`` (CRFsuite's objective,
        n F(w): the negative log-likelihood summed over the sequences plus c1 ‖w‖₁ +
        c2 ‖w‖²), ``feature_norm`` (‖w‖₂), ``active_features`` (nonzero parameters),
        ``time`` (seconds since the previous iteration) and ``scores`` (empty but in
        the last one with ``X_dev``).
    last_iteration : dict or None
        ``iterations[-1]``; with ``X_dev``, its ``scores`` maps each label to a dict of
        ``precision``, ``recall``, ``f1`` and ``support`` on the holdout data, and it
        has ``item_accuracy`` and ``instance_accuracy`` (token and sequence accuracy).
        CRFsuite scores the holdout data after every iteration; here only the final
        model is.
    converged : bool
        Whether the solver stopped by its tolerance rather than by ``max_iterations``.
    """

    def __init__(self):
        self.iterations = []
        self.last_iteration = None
        self.converged = None


class CRF(BaseEstimator):
    """sklearn-crfsuite's ``CRF``, trained by skstruct: same parameters, inputs and outputs.

    Trains :class:`skstruct.CRF` with L-BFGS (OWL-QN when ``c1 > 0``, as CRFsuite) on the
    objective and parameter set of CRFsuite's first-order CRF:

    - objective: CRFsuite minimizes Σ_i −log p(y_i | x_i) + c1 ‖w‖₁ + c2 ‖w‖², which is
      n times skstruct's F(w) with ``alpha = (c1 + 2 c2) / n`` and
      ``l1_ratio = c1 / (c1 + 2 c2)``, n the number of training sequences
      (:func:`crfsuite_penalty`);
    - parameters: state weights of (attribute, label) pairs, all of them with
      ``all_possible_states=True``, else (CRFsuite's default) those of pairs seen in
      training (``feature_label_pairs="seen"``), in both cases without the pairs whose
      attribute values summed over the training tokens of the label are negative
      (CRFsuite's ``feature.minfreq`` test, with its default 0: a numeric attribute
      that is negative on every token of a label has no weight for that label);
      transition weights of all label pairs with ``all_possible_transitions=True``, else
      only of the bigrams seen in training; the pairs CRFsuite leaves out are held at
      zero by the solver; no start and end scores (held at zero: CRFsuite has none).

    Differences from CRFsuite:

    - the solvers' stopping tests: CRFsuite stops when ‖g‖ / max(1, ‖w‖) < ``epsilon``
      or the objective improved by less than ``delta`` over ``period`` iterations;
      skstruct when the largest gradient entry of F is at most ``tol``, or F decreased
      by less than a relative ``tol * 1e-3``. ``max_iterations=None`` is
      :data:`DEFAULT_MAX_ITER` iterations at most (CRFsuite: no limit). Reaching
      ``max_iterations`` is not warned about, as in CRFsuite
      (``training_log_.converged`` says whether it was reached);
    - a seen pair is a (attribute, label) pair whose attribute is *nonzero* on some token
      of that label: CRFsuite also counts an attribute present with value 0 (a boolean
      False), so with ``all_possible_states=False`` it has a few more state weights, of
      pairs such as (``word.isdigit()``, ``B-PP``) when that feature is False on
      ``B-PP`` tokens and never True;
    - ``classes_`` in order of first appearance in ``y`` (as CRFsuite); labels may be
      strings, numbers or booleans, all of one type (CRFsuite: strings), and are
      predicted in that type;
    - ``size_`` is the number of bytes of the pickled estimator, not of a model file;
      ``tagger_`` is a :class:`Tagger`, which has python-crfsuite's questions about a
      sequence (``labels``, ``tag``, ``probability``, ``marginal``) but reads no files.

    Parameters
    ----------
    algorithm : {"lbfgs", "l2sgd", "ap", "pa", None}, default=None
        The skstruct learner trained (``crf_``), with each algorithm's CRFsuite
        parameters:

        - ``"lbfgs"`` (None means it): :class:`skstruct.CRF` by L-BFGS (OWL-QN when
          ``c1 > 0``) on CRFsuite's parameter set, as described above; ``c1``, ``c2``,
          ``all_possible_states``, ``all_possible_transitions``.
        - ``"l2sgd"``: :class:`skstruct.CRF` with ``solver="svrg"`` (variance-reduced
          stochastic gradient, the same objective as CRFsuite's SGD) and
          ``alpha = 2 c2 / n`` on the parameter set of ``"lbfgs"`` (CRFsuite's, as
          described above: with ``all_possible_states=False`` the seen pairs only, whose
          weights alone the steps write); ``c2`` (default 1),
          ``all_possible_states``, ``all_possible_transitions``.
        - ``"ap"``: :class:`skstruct.StructuredPerceptron`, averaged, as CRFsuite's
          averaged perceptron (start and end scores included).
        - ``"pa"``: :class:`skstruct.StructuredSVM` with ``solver="bcfw"`` and
          ``alpha = 1 / (c n)``: the passive-aggressive algorithm's objective, the
          structured hinge with penalty ``c`` (CRFsuite's PA-I; ``pa_type=1``), minimized
          by block-coordinate Frank–Wolfe, whose step on one sequence is PA's update with
          an exact line search; ``c`` (default 1), ``error_sensitive`` (True: the Hamming
          margin; False: 0/1), ``averaging`` (default True).

        ``max_iterations`` is each algorithm's number of passes (CRFsuite's defaults:
        1000 for ``"l2sgd"``, 100 for ``"ap"`` and ``"pa"``). ``"arow"`` raises
        NotImplementedError: skstruct has no second-order online learner.
        ``predict_marginals`` and ``tagger_.probability`` use the model's weights as a
        CRF's, as CRFsuite's tagger does, whatever trained them.
    min_freq : None or 0, default=None
        Only no cut-off.
    all_possible_states : bool, default=None
        None or False: state weights of the seen (attribute, label) pairs only.
    all_possible_transitions : bool, default=None
        None or False: transition weights of the seen label bigrams only.
    c1 : float, default=None
        L1 coefficient (None: 0).
    c2 : float, default=None
        L2 coefficient (None: 1, CRFsuite's default).
    max_iterations : int, default=None
        Maximum number of L-BFGS iterations (None: :data:`DEFAULT_MAX_ITER`).
    num_memories, epsilon, period, delta, linesearch, max_linesearch : None
        CRFsuite's L-BFGS settings: NotImplementedError unless None (use ``tol``).
    calibration_eta, calibration_rate, calibration_samples, calibration_candidates, \
calibration_max_trials, pa_type, c, error_sensitive, averaging, variance, gamma : None
        Settings of the other algorithms: NotImplementedError unless None.
    verbose : bool, default=False
        Print one line per iteration.
    model_filename : None
        CRFsuite model files are neither written nor read (NotImplementedError): the
        fitted CRF pickles (``pickle.dump`` or ``joblib.dump``), its state weights
        stored sparse, and predicts from the loaded object.
    keep_tempfiles : bool, default=False
        Ignored: no files are written.
    trainer_cls : None
        NotImplementedError unless None.
    tol : float, default=1e-4
        skstruct's stopping tolerance (not a sklearn-crfsuite parameter), see above.

    Attributes
    ----------
    classes_ : list
        The labels, in order of first appearance in the training ``y``.
    state_features_ : dict of {(attribute, label): float}
        Nonzero state weights. An attribute is named as python-crfsuite names it:
        ``"key:value"`` for a string value, ``"key"`` for a number or boolean,
        ``"key:inner"`` for a nested dict.
    transition_features_ : dict of {(label_from, label_to): float}
        Nonzero transition weights.
    attributes_ : list of str
        Attributes with a nonzero state weight.
    num_attributes_ : int
        Their number.
    size_ : int
        Bytes of the pickled estimator.
    tagger_ : Tagger
        python-crfsuite's tagger calls on this model.
    training_log_ : TrainingLog
        One entry per iteration (CRFsuite's objective, norms, times).
    crf_ : skstruct.CRF
        The trained model (``coef_``, ``transition_``, ``predict_log_proba_sequences``,
        ``objective_curve_`` = the log's losses / n, ...).
    vectorizer_ : skstruct.preprocessing.SequenceVectorizer
        Token feature dicts to the model's columns.

    See Also
    --------
    skstruct.CRF : the estimator trained here, with more options (solvers, costs, trees).

    Examples
    --------
    >>> from skstruct.compat import sklearn_crfsuite
    >>> X = [[{"w": "the"}, {"w": "cat"}], [{"w": "a"}, {"w": "dog"}, {"w": "ran"}]]
    >>> y = [["DT", "NN"], ["DT", "NN", "VB"]]
    >>> crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.0, c2=0.01).fit(X, y)
    >>> crf.classes_
    ['DT', 'NN', 'VB']
    >>> crf.predict([[{"w": "the"}, {"w": "dog"}]])
    [['DT', 'NN']]
    >>> sorted(crf.transition_features_)  # only the bigrams seen in training
    [('DT', 'NN'), ('NN', 'VB')]
    """

    #: None before ``fit`` (sklearn-crfsuite's); the fitted labels after.
    classes_ = None

    _parameter_constraints: dict = {
        "all_possible_states": ["boolean", None],
        "all_possible_transitions": ["boolean", None],
        "c1": [Interval(Real, 0, None, closed="left"), None],
        "c2": [Interval(Real, 0, None, closed="left"), None],
        "max_iterations": [Interval(Integral, 1, None, closed="left"), None],
        "verbose": ["verbose"],
        "tol": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(
        self,
        algorithm=None,
        min_freq=None,
        all_possible_states=None,
        all_possible_transitions=None,
        c1=None,
        c2=None,
        max_iterations=None,
        num_memories=None,
        epsilon=None,
        period=None,
        delta=None,
        linesearch=None,
        max_linesearch=None,
        calibration_eta=None,
        calibration_rate=None,
        calibration_samples=None,
        calibration_candidates=None,
        calibration_max_trials=None,
        pa_type=None,
        c=None,
        error_sensitive=None,
        averaging=None,
        variance=None,
        gamma=None,
        verbose=False,
        model_filename=None,
        keep_tempfiles=False,
        trainer_cls=None,
        tol=1e-4,
    ):
        self.algorithm = algorithm
        self.min_freq = min_freq
        self.all_possible_states = all_possible_states
        self.all_possible_transitions = all_possible_transitions
        self.c1 = c1
        self.c2 = c2
        self.max_iterations = max_iterations
        self.num_memories = num_memories
        self.epsilon = epsilon
        self.period = period
        self.delta = delta
        self.linesearch = linesearch
        self.max_linesearch = max_linesearch
        self.calibration_eta = calibration_eta
        self.calibration_rate = calibration_rate
        self.calibration_samples = calibration_samples
        self.calibration_candidates = calibration_candidates
        self.calibration_max_trials = calibration_max_trials
        self.pa_type = pa_type
        self.c = c
        self.error_sensitive = error_sensitive
        self.averaging = averaging
        self.variance = variance
        self.gamma = gamma
        self.verbose = verbose
        self.model_filename = model_filename
        self.keep_tempfiles = keep_tempfiles
        self.trainer_cls = trainer_cls
        self.tol = tol

    def _algorithm(self):
        """The algorithm's name, after checking that skstruct has it and that the
        parameters set are the ones it reads."""
        algorithm = "lbfgs" if self.algorithm is None else self.algorithm
        if algorithm == "arow":
            raise NotImplementedError(
                "algorithm='arow' (adaptive regularization of weights) has no skstruct "
                "equivalent: skstruct has no second-order online learner. Use "
                "algorithm='pa' (the structured hinge, skstruct.StructuredSVM) or 'ap' "
                "(skstruct.StructuredPerceptron), or 'lbfgs' for the CRF.")
        if algorithm not in ALGORITHM_PARAMETERS:
            raise ValueError(f"algorithm must be one of 'lbfgs', 'l2sgd', 'ap', 'pa', "
                             f"'arow' or None; got {algorithm!r}.")
        if self.model_filename is not None:
            raise NotImplementedError(
                f"model_filename={self.model_filename!r}: skstruct does not read or write "
                "CRFsuite model files. Save the fitted CRF with pickle (or joblib.dump) "
                "and load it the same way; it predicts without any file.")
        if self.min_freq not in (None, 0):
            raise NotImplementedError(
                f"min_freq={self.min_freq!r} is not supported: only no cut-off (None or 0).")
        own = ALGORITHM_PARAMETERS[algorithm]
        for name in _UNSUPPORTED + ("c1", "c2", "all_possible_states",
                                    "all_possible_transitions"):
            value = getattr(self, name)
            if name in own or value is None or (
                    name in ("all_possible_states", "all_possible_transitions")
                    and value is False):
                continue
            raise NotImplementedError(
                f"{name}={value!r} is not supported with algorithm={algorithm!r}: it "
                f"reads {', '.join(own + ('max_iterations',))}, verbose (and tol, "
                "skstruct's stopping tolerance); leave the others at None.")
        if algorithm == "pa" and self.pa_type not in (None, 1):
            raise NotImplementedError(
                f"pa_type={self.pa_type!r} is not supported: algorithm='pa' trains the "
                "structured hinge with a penalty c (CRFsuite's PA-I, pa_type=1).")
        return algorithm

    def _learner(self, algorithm, n, callback):
        """The skstruct estimator that ``algorithm`` maps onto, for ``n`` sequences."""
        max_iter = self.max_iterations
        if max_iter is None:
            max_iter = ALGORITHM_MAX_ITER[algorithm] or DEFAULT_MAX_ITER
        verbose = int(bool(self.verbose))
        if algorithm == "lbfgs":
            c1 = 0.0 if self.c1 is None else self.c1
            c2 = 1.0 if self.c2 is None else self.c2
            alpha, l1_ratio = crfsuite_penalty(c1, c2, n)
            return _CRFsuiteChain(
                alpha, l1_ratio=l1_ratio,
                feature_label_pairs="all" if self.all_possible_states else "seen",
                max_iter=max_iter, tol=self.tol, verbose=verbose, callback=callback,
                all_possible_transitions=bool(self.all_possible_transitions))
        if algorithm == "l2sgd":
            c2 = 1.0 if self.c2 is None else self.c2
            alpha, _ = crfsuite_penalty(0.0, c2, n)
            if alpha == 0:
                raise ValueError("algorithm='l2sgd' needs c2 > 0.")
            return _CRFsuiteChain(
                alpha, solver="svrg",
                feature_label_pairs="all" if self.all_possible_states else "seen",
                max_iter=max_iter, tol=self.tol, verbose=verbose, callback=callback,
                random_state=0,
                all_possible_transitions=bool(self.all_possible_transitions))
        if algorithm == "ap":
            return StructuredPerceptron(max_iter=max_iter, averaging=True, random_state=0,
                                        verbose=verbose, callback=callback)
        c = 1.0 if self.c is None else self.c
        if not c > 0:
            raise ValueError(f"algorithm='pa' needs c > 0; got {c!r}.")
        loss = "zero_one" if self.error_sensitive is False else "hamming"
        return StructuredSVM(loss=loss, alpha=1.0 / (c * n), solver="bcfw",
                             max_iter=max_iter, tol=self.tol,
                             averaging=self.averaging is not False, random_state=0,
                             verbose=verbose, callback=callback,
                             check_gap_every=1)  # a log line after every pass

    def fit(self, X, y, X_dev=None, y_dev=None):
        """Train the CRF.

        Parameters
        ----------
        X : list or generator of n sequences of token features
            A generator (or other one-pass iterable) of sequences is read once, then the
            sequences are vectorized in a second pass (two passes at most). Each token
            a dict of features (string values become ``key:value``
            attributes, bytes values their UTF-8 text, numbers and booleans are the
            values of attribute ``key``, nested dicts ``key:inner``) or a list of
            attribute strings (each with value 1).
        y : list or generator of n sequences of labels
            Strings, numbers or booleans, all of one type.
        X_dev, y_dev : same forms, default=None
            Holdout data, both or neither: the final model's per-label scores and
            accuracies are stored in ``training_log_.last_iteration``.

        Returns
        -------
        self : CRF
        """
        if (X_dev is None) != (y_dev is None):
            raise ValueError("Pass both X_dev and y_dev to use the holdout data")
        self._validate_params()
        algorithm = self._algorithm()
        vectorizer = SequenceVectorizer()
        Xv, y = _vectorize_training(vectorizer, X, y)
        n = len(Xv)
        # the model's checks, run here so that their errors name this class
        _, y_flat = check_sequences(Xv, y, estimator=type(self).__name__)
        log = TrainingLog()
        clock = [time.perf_counter()]

        def record(n_iter, w, objective):
            now = time.perf_counter()
            log.iterations.append({
                "num": int(n_iter), "scores": {}, "loss": float(objective) * n,
                "feature_norm": float(np.linalg.norm(w)),
                "active_features": int(np.count_nonzero(w)), "time": now - clock[0]})
            clock[0] = now

        crf = self._learner(algorithm, n, record)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            crf.fit(Xv, y)
        crf.callback = None  # the closure holds the log; keep the fitted model plain
        log.converged = crf.n_iter_ < crf.max_iter
        log.last_iteration = log.iterations[-1] if log.iterations else None
        self.crf_ = crf
        self.vectorizer_ = vectorizer
        self.classes_ = list(dict.fromkeys(y_flat.tolist()))
        self.training_log_ = log
        if X_dev is not None and log.last_iteration is not None:
            log.last_iteration.update(self._holdout_scores(X_dev, y_dev))
        return self

    def _holdout_scores(self, X_dev, y_dev):
        from sklearn.metrics import precision_recall_fscore_support

        y_pred = self.predict(X_dev)
        true, pred = metrics._flatten(y_dev, "y_dev"), metrics._flatten(y_pred, "y_pred")
        p, r, f, s = precision_recall_fscore_support(
            true, pred, labels=self.classes_, zero_division=0)
        scores = {label: {"precision": float(p[k]), "recall": float(r[k]),
                          "f1": float(f[k]), "support": int(s[k])}
                  for k, label in enumerate(self.classes_)}
        return {"scores": scores,
                "item_accuracy": metrics.flat_accuracy_score(y_dev, y_pred),
                "instance_accuracy": metrics.sequence_accuracy_score(y_dev, y_pred)}

    def _transform(self, X):
        check_is_fitted(self, "crf_")
        return _vectorize(self.vectorizer_, X, fit=False)

    def predict(self, X):
        """Most likely label sequence of every sequence (Viterbi).

        Parameters
        ----------
        X : list or generator of sequences of token features, as in :meth:`fit`

        Returns
        -------
        list of lists of labels
        """
        check_is_fitted(self, "crf_")
        X = _sequences(X, "X")
        if len(X) == 0:
            return []
        return [labels.tolist() for labels in self.crf_.predict(self._transform(X))]

    def predict_single(self, xseq):
        """:meth:`predict` of one sequence: its list of labels."""
        return self.predict([xseq])[0]

    def predict_marginals(self, X):
        """Per-token label probabilities p(y_t = label | x).

        Returns
        -------
        list of lists of dict
            ``[i][t][label]``, every label of ``classes_`` in each dict.
        """
        check_is_fitted(self, "crf_")
        X = _sequences(X, "X")
        if len(X) == 0:
            return []
        marginals = _marginals(self.crf_, self._transform(X))
        order = [int(np.searchsorted(self.crf_.classes_, label)) for label in self.classes_]
        return [[dict(zip(self.classes_, row)) for row in m[:, order].tolist()]
                for m in marginals]

    def predict_marginals_single(self, xseq):
        """:meth:`predict_marginals` of one sequence."""
        return self.predict_marginals([xseq])[0]

    def score(self, X, y):
        """Token accuracy on ``(X, y)`` (:func:`.metrics.flat_accuracy_score`)."""
        return metrics.flat_accuracy_score(y, self.predict(X))

    def _fitted(self):
        return hasattr(self, "crf_")

    @property
    def tagger_(self):
        """A :class:`Tagger` of the fitted model (python-crfsuite's tagger's calls), or
        None before ``fit``."""
        return Tagger(self) if self._fitted() else None

    @property
    def state_features_(self):
        if not self._fitted():
            return None
        names = _attribute_names(self.vectorizer_)
        labels = self.crf_.classes_.tolist()
        coef = self.crf_.coef_
        columns, rows = np.nonzero(coef.T)  # attribute by attribute, labels in order
        return {(names[j], labels[k]): float(coef[k, j]) for j, k in zip(columns, rows)}

    @property
    def transition_features_(self):
        if not self._fitted():
            return None
        labels = self.crf_.classes_.tolist()
        transition = self.crf_.transition_
        return {(labels[i], labels[j]): float(transition[i, j])
                for i, j in zip(*np.nonzero(transition))}

    @property
    def attributes_(self):
        if not self._fitted():
            return None
        names = _attribute_names(self.vectorizer_)
        return names[np.flatnonzero(np.any(self.crf_.coef_ != 0, axis=0))].tolist()

    @property
    def num_attributes_(self):
        attributes = self.attributes_
        return None if attributes is None else len(attributes)

    @property
    def size_(self):
        """Bytes of the pickled model (None before ``fit``): what CRFsuite's ``size_``,
        the size of its model file, measures."""
        if not self._fitted():
            return None
        import pickle

        return len(pickle.dumps(self, protocol=pickle.HIGHEST_PROTOCOL))

    def __getstate__(self):
        """The state to pickle, with the state weights stored sparse: only the nonzero
        ones (with ``all_possible_states=False``, a subset of the (attribute, label)
        pairs seen in training), as a CRFsuite model file stores them; dense when that
        is smaller (``all_possible_states=True``, when nearly every pair has a
        weight)."""
        state = super().__getstate__()
        crf = state.get("crf_")
        if crf is not None and getattr(crf, "coef_", None) is not None:
            coef = sp.csr_matrix(crf.coef_)
            if coef.data.nbytes + coef.indices.nbytes < crf.coef_.nbytes:
                state = dict(state)
                crf = copy.copy(crf)
                state["_sparse_coef"] = coef
                crf.coef_ = None
                state["crf_"] = crf
        return state

    def __setstate__(self, state):
        coef = state.pop("_sparse_coef", None)
        super().__setstate__(state)
        if coef is not None:
            self.crf_.coef_ = coef.toarray()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.dict = True
        tags.target_tags.required = True
        return tags


class Tagger:
    """python-crfsuite's ``Tagger`` calls on a fitted facade CRF.

    ``crf.tagger_`` returns one. It has the calls of ``pycrfsuite.Tagger`` that ask about
    the model or one sequence: ``labels()``, ``set(xseq)``, ``tag(xseq=None)``,
    ``probability(yseq)`` (p(y | x) of the sequence set), ``marginal(y, t)`` and
    ``info()``. Opening or dumping CRFsuite model files (``open``, ``open_inmemory``,
    ``dump``) is not available: the model pickles.

    Parameters
    ----------
    crf : CRF
        A fitted facade CRF.
    """

    def __init__(self, crf):
        self._crf = crf
        self._xseq = None
        self._marginals = None

    def labels(self):
        """The labels of the model, in order of first appearance in training."""
        return list(self._crf.classes_)

    def set(self, xseq):
        """Set the sequence that :meth:`tag`, :meth:`probability` and :meth:`marginal`
        are about."""
        self._xseq = list(xseq)
        self._marginals = None

    def _current(self):
        if self._xseq is None:
            raise ValueError("No sequence is set: call tagger.set(xseq) or tag(xseq).")
        return self._xseq

    def tag(self, xseq=None):
        """The most likely labels of ``xseq`` (of the set sequence when None)."""
        if xseq is not None:
            self.set(xseq)
        return self._crf.predict_single(self._current())

    def probability(self, yseq):
        """p(yseq | x) of the set sequence under the model (a CRF's probability; for
        models trained by ``"ap"`` or ``"pa"``, that of the CRF with their weights)."""
        crf = self._crf
        Xv = crf._transform([self._current()])
        return float(np.exp(_log_probabilities(crf.crf_, Xv, [list(yseq)])[0]))

    def marginal(self, y, t):
        """p(y_t = y | x) of the set sequence."""
        if self._marginals is None:
            self._marginals = self._crf.predict_marginals_single(self._current())
        return float(self._marginals[t][y])

    def info(self):
        """The model's weights, as python-crfsuite's ``ParsedDump``-like attributes."""
        crf = self._crf
        from types import SimpleNamespace

        return SimpleNamespace(state_features=crf.state_features_,
                               transitions=crf.transition_features_,
                               labels={label: k for k, label in enumerate(crf.classes_)},
                               attributes={name: k for k, name in
                                           enumerate(crf.attributes_)})

    def open(self, *args, **kwargs):
        raise NotImplementedError("CRFsuite model files are not read: pickle the fitted "
                                  "CRF and load it with pickle instead.")

    open_inmemory = dump = open
