"""What every structured estimator shares: output kinds, input checks, label encoding.

Three kinds of outputs, told apart by the form of ``y``:

- ``"sequence"``: ``y`` is a list of 1-D label arrays, ``X`` a list of per-sequence
  (n_tokens_i, n_features) matrices; decoded by a chain.
- ``"multiclass"``: ``y`` is a 1-D array of labels, ``X`` a 2-D (n_samples, n_features)
  matrix.
- ``"multilabel"``: ``y`` is a 2-D 0/1 indicator matrix (n_samples, n_labels),
  ``X`` a 2-D matrix.
- ``"tree"``: ``y`` is a list of CoNLL head arrays, ``X`` a list of per-sentence
  (n_i * n_i, n_features) arc feature matrices (see :mod:`skstruct.utils._trees`); chosen
  by passing a decoder whose ``output_kind`` is ``"tree"`` (a
  :class:`~skstruct.decoders.TreeDecoder`), since heads look like sequence labels.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.metrics import accuracy_score
from sklearn.utils.validation import (
    _get_feature_names,
    check_array,
    check_is_fitted,
    column_or_1d,
)

from .decoders import (
    ChainDecoder,
    MulticlassDecoder,
    MulticlassScores,
    MultilabelDecoder,
    MultilabelScores,
)
from .features import LinearArcFeatures, LinearChainFeatures, LinearFeatures
from .utils._features import check_feature_names
from .utils._labels import check_label_types
from .utils._trees import check_trees
from .utils._sequences import (
    SequenceBatch,
    check_sequence_feature_names,
    check_sample_weight_sequences,
    check_sequences,
    split_sequences,
)

__all__ = ["StructuredEstimator", "output_kind", "is_sequence_input"]

_DECODERS = {"sequence": ChainDecoder, "multiclass": MulticlassDecoder,
             "multilabel": MultilabelDecoder}

_KIND_FORMS = {
    "sequence": "X a list of (n_tokens, n_features) matrices, y a list of label arrays",
    "multiclass": "X a 2-D (n_samples, n_features) matrix, y 1-D labels",
    "multilabel": "X a 2-D (n_samples, n_features) matrix, y a 0/1 indicator matrix",
    "tree": "X a list of (n * n, n_features) arc feature matrices, y a list of head arrays",
}


def is_sequence_input(X):
    """True when ``X`` is a list of per-sequence 2-D matrices (or a 3-D array).

    A 2-D array-like (ndarray, sparse matrix, DataFrame, list of feature rows) is tabular
    data, one sample a row.
    """
    if sp.issparse(X):
        return False
    shape = getattr(X, "shape", None)
    if shape is not None and not (isinstance(X, np.ndarray) and X.dtype == object):
        return len(shape) == 3
    try:
        first = X[0]
    except (TypeError, IndexError, KeyError):
        return False
    if sp.issparse(first):
        return True
    try:
        return np.ndim(first) == 2
    except ValueError:  # ragged rows: a malformed sequence, reported by check_sequences
        return True


def _reject_token_dicts(X, name):
    """X given as sequences of token feature dicts or strings: say which transformer to use."""
    if not isinstance(X, (list, tuple)) or not X or not isinstance(X[0], (list, tuple)):
        return
    token = X[0][0] if X[0] else None
    if isinstance(token, dict):
        raise TypeError(
            f"X holds sequences of token {type(token).__name__}s; {name} takes numeric "
            "feature matrices. Turn token feature dicts into matrices with "
            "skstruct.preprocessing.SequenceVectorizer, e.g. "
            f"make_pipeline(SequenceVectorizer(), {name}())."
        )


def _check_container(data, what, name):
    """``X`` or ``y`` must be an array-like or a list; say what was given otherwise."""
    if sp.issparse(data):
        return
    if isinstance(data, (str, bytes, dict)) or not (
        hasattr(data, "__len__") or hasattr(data, "shape") or hasattr(data, "__array__")
    ):
        forms = ("a 2-D (n_samples, n_features) array or a list of 2-D (n_tokens, "
                 "n_features) arrays, one per sequence") if what == "X" else (
                 "an array of labels, a 0/1 indicator matrix or a list of label arrays, one "
                 "per sequence")
        raise TypeError(f"{what} must be {forms} in {name}; got {type(data).__name__}.")


def _looks_like_label_sequences(y):
    """A list of label arrays of different lengths or of non-numbers (not an indicator)."""
    if not isinstance(y, (list, tuple)) or not y:
        return False
    try:
        rows = [np.asarray(labels) for labels in y]
    except ValueError:
        return True
    if any(r.ndim != 1 for r in rows):
        return False
    return len({r.shape[0] for r in rows}) > 1 or any(r.dtype.kind in "OUS" for r in rows)


def _tabular_x_hint(X, y):
    """What to change when tabular-looking X comes with per-sequence labels, or ''."""
    if not _looks_like_label_sequences(y):
        return ""
    first = X[0] if isinstance(X, (list, tuple)) and len(X) else None
    if first is not None and np.ndim(first) == 1:
        return (" y is a list of label sequences, but sequence 0 of X is 1-D: each "
                "sequence must be a 2-D (n_tokens, n_features) array (one feature per "
                "token: x.reshape(-1, 1)).")
    return (" y is a list of label sequences, but X is a single 2-D matrix: pass X as a "
            "list of (n_tokens, n_features) matrices, one per sequence. If y lists the "
            "labels of each sample (multilabel), turn it into a 0/1 indicator matrix with "
            "sklearn.preprocessing.MultiLabelBinarizer.")


def _n_examples(X):
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) >= 1:
        return shape[0]
    try:
        return len(X)
    except TypeError:
        return None


def output_kind(X, y):
    """``"sequence"``, ``"multiclass"`` or ``"multilabel"`` from the forms of ``X`` and ``y``.

    A list of per-sequence matrices ``X`` means sequences (``y`` a list of label arrays,
    or a 2-D array with one row of labels per equal-length sequence). Tabular ``X`` means
    multiclass for 1-D ``y`` (or a column vector) and multilabel for a 2-D ``y``.
    """
    if is_sequence_input(X):
        return "sequence"
    if sp.issparse(y):
        return "multilabel"
    if isinstance(y, np.ndarray) and y.dtype != object:
        return "multilabel" if y.ndim == 2 and y.shape[1] != 1 else "multiclass"
    if hasattr(y, "iloc"):  # pandas
        return "multilabel" if np.ndim(y) == 2 and y.shape[1] != 1 else "multiclass"
    try:
        first = y[0]
    except (TypeError, IndexError, KeyError):
        return "multiclass"
    if isinstance(first, (str, bytes)) or np.ndim(first) == 0:
        return "multiclass"
    return "multilabel"


class StructuredEstimator(BaseEstimator):
    """Base class of structured estimators over sequences, multiclass and multilabel data.

    Subclasses set ``_output_kinds`` (the kinds they accept), implement ``fit``, and use
    the helpers below; ``predict`` and ``score`` are shared.
    """

    _output_kinds = ("sequence", "multiclass", "multilabel", "tree")

    def set_params(self, **params):
        """Set parameters; ``decoder__<name>`` needs an explicit decoder.

        Parameters
        ----------
        **params : dict
            Estimator parameters, and ``decoder__<name>`` for the decoder's own.

        Returns
        -------
        self
        """
        nested = sorted(k for k in params if k.startswith("decoder__"))
        decoder = params.get("decoder", getattr(self, "decoder", None))
        if nested and decoder is None:
            name = type(self).__name__
            key = nested[0]
            raise ValueError(
                f"Cannot set {key}: {name}(decoder=None) chooses its decoder from y at fit "
                f"time. Pass the decoder itself, e.g. {name}(decoder=ChainDecoder("
                f"{key[len('decoder__'):]}=...)) or set_params(decoder=ChainDecoder(...)); "
                "then decoder__<name> works, also in a grid search."
            )
        return super().set_params(**params)

    def _output_kind(self, X, y):
        """The output kind of the training data, checked against the estimator and decoder."""
        name = type(self).__name__
        declared = getattr(getattr(self, "decoder", None), "output_kind", None)
        kind = "tree" if declared == "tree" else output_kind(X, y)
        hint = _tabular_x_hint(X, y) if kind == "multilabel" else ""
        if hint:
            raise ValueError(f"X and y do not fit together in {name}.{hint}")
        if declared is not None and declared != kind:
            raise ValueError(
                f"{name} was given a {type(self.decoder).__name__}, which decodes {declared} "
                f"outputs, but X and y look like {kind} data ({_KIND_FORMS[kind]})."
            )
        if kind not in self._output_kinds:
            hint = ""
            if "sequence" in self._output_kinds and kind != "sequence":
                hint = (" Pass X as a list of 2-D arrays, one (n_tokens, n_features) array "
                        "per sequence; for a single sequence pass [X] and [y].")
            raise ValueError(
                f"{name} takes {' or '.join(self._output_kinds)} outputs, but X and y look "
                f"like {kind} data ({_KIND_FORMS[kind]}).{hint}"
            )
        return kind

    def _validate_training_data(self, X, y, sample_weight):
        """Check and encode training data.

        Returns
        -------
        kind : str
        batch : SequenceBatch
            Features; one row per example for tabular data (offsets 0, 1, ..., n). Its
            ``feature_names`` are the column names of a DataFrame ``X``, else None.
        classes : ndarray of shape (n_classes,)
            Sorted labels (sequences, multiclass) or label indices (multilabel).
        y_encoded : ndarray
            (n_tokens,) or (n_samples,) class indices, or the (n_samples, n_labels) 0/1
            matrix.
        weights : ndarray of shape (n_examples,)
        """
        name = type(self).__name__
        if y is None:
            raise ValueError(f"{name} requires y to be passed, but the target y is None.")
        if _n_examples(X) == 0:
            noun = "samples" if getattr(X, "ndim", 1) == 2 else "sequences"
            raise ValueError(f"X contains no {noun} in {name}; at least one is required.")
        _check_container(X, "X", name)
        _check_container(y, "y", name)
        _reject_token_dicts(X, name)
        kind = self._output_kind(X, y)
        if kind == "tree":
            from .decoders._tree import heads_to_states

            batch, heads = check_trees(X, y, estimator=name)
            y_encoded = heads_to_states(heads, batch.token_offsets)
            weights = check_sample_weight_sequences(sample_weight, batch.n_sequences)
            return kind, batch, None, y_encoded, weights
        if kind == "sequence":
            batch, y_flat = check_sequences(X, y, estimator=name)
        else:
            batch = _tabular_batch(X, name)
        if kind == "multilabel":
            classes, y_encoded = np.arange(_n_labels(y)), _check_indicator(y, batch, name)
        else:
            if kind == "multiclass":
                y_flat = _check_multiclass_target(y, batch, name)
            classes, y_encoded = np.unique(y_flat, return_inverse=True)
            if classes.shape[0] < 2:
                raise ValueError(
                    f"{name} needs samples of at least 2 classes in the data, but the data "
                    f"contains only one class: {classes.tolist()}."
                )
            y_encoded = y_encoded.astype(np.int64)
        weights = check_sample_weight_sequences(sample_weight, batch.n_sequences)
        return kind, batch, classes, y_encoded, weights

    @staticmethod
    def _default_decoder(kind):
        if kind == "tree":
            from .decoders._tree import TreeDecoder

            return TreeDecoder()
        return _DECODERS[kind]()

    @staticmethod
    def _feature_map(kind, n_features, n_outputs):
        if kind == "tree":
            from .decoders._tree import TreeScores

            return LinearArcFeatures(n_features, TreeScores)
        if kind == "sequence":
            return LinearChainFeatures(n_features, n_outputs)
        scores_type = MulticlassScores if kind == "multiclass" else MultilabelScores
        return LinearFeatures(n_features, n_outputs, scores_type)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _validate_prediction_data(self, X):
        check_is_fitted(self)
        name = type(self).__name__
        if self.output_kind_ == "tree":
            return check_trees(X, n_features=self.n_features_in_, estimator=name)[0]
        if self.output_kind_ == "sequence":
            batch, _ = check_sequences(X, n_features=self.n_features_in_, estimator=name)
            check_sequence_feature_names(self, list(X))
            return batch
        check_feature_names(self, X)
        batch = _tabular_batch(X, name)
        if batch.n_features != self.n_features_in_:
            raise ValueError(
                f"X has {batch.n_features} features, but {name} is expecting "
                f"{self.n_features_in_} features as input."
            )
        return batch

    def _to_user(self, encoded, batch):
        if self.output_kind_ == "tree":
            from .decoders._tree import states_to_heads

            heads = states_to_heads(encoded, batch.token_offsets)
            return split_sequences(heads, batch.token_offsets)
        if self.output_kind_ == "sequence":
            return split_sequences(self.classes_[encoded], batch.offsets)
        if self.output_kind_ == "multiclass":
            return self.classes_[encoded]
        return np.asarray(encoded, dtype=np.int64)

    def predict(self, X):
        """Predict the output of every input.

        Parameters
        ----------
        X : list of (n_tokens_i, n_features) matrices (sequences), a (n_samples,
            n_features) matrix (multiclass, multilabel), or a list of (n_i * n_i,
            n_features) arc feature matrices (trees)

        Returns
        -------
        list of ndarray of shape (n_tokens_i,), ndarray of shape (n_samples,), 0/1
        ndarray of shape (n_samples, n_labels), or list of CoNLL head arrays (n_i,)
        """
        batch = self._validate_prediction_data(X)
        return self._to_user(self._decode(batch), batch)

    def score(self, X, y, sample_weight=None):
        """Token accuracy (sequences), attachment score (trees: the fraction of tokens with
        the right head), accuracy (multiclass) or subset accuracy (multilabel).

        Parameters
        ----------
        X : as in :meth:`predict`
        y : as in ``fit``
        sample_weight : array-like of shape (n_examples,), default=None

        Returns
        -------
        float
        """
        from .metrics import token_accuracy

        y_pred = self.predict(X)
        if self.output_kind_ in ("sequence", "tree"):
            return token_accuracy(y, y_pred, sample_weight=sample_weight)
        return accuracy_score(y, y_pred, sample_weight=sample_weight)


def _tabular_batch(X, name):
    """A 2-D (n_samples, n_features) matrix as a batch of one-row examples."""
    if is_sequence_input(X):
        raise ValueError(
            f"{name} was fitted on tabular data (X a 2-D (n_samples, n_features) matrix), "
            "but X is a list of per-sequence matrices."
        )
    feature_names = _get_feature_names(X)
    X = check_array(X, accept_sparse="csr", dtype=np.float64, estimator=name)
    batch = SequenceBatch(X, np.arange(X.shape[0] + 1))
    batch.feature_names = feature_names
    return batch


def _n_labels(y):
    return y.shape[1] if hasattr(y, "shape") and len(y.shape) == 2 else len(y[0])


def _check_indicator(y, batch, name):
    """A 0/1 (n_samples, n_labels) indicator matrix, as int64."""
    try:
        Y = check_array(y, accept_sparse="csr", estimator=name, ensure_2d=True,
                        ensure_min_features=1)
    except ValueError as exc:
        raise ValueError(
            f"y must be a 0/1 indicator matrix (n_samples, n_labels) for multilabel {name} "
            f"with a 2-D X; for sequences pass X as a list of (n_tokens, n_features) "
            f"matrices. ({exc})"
        ) from None
    Y = Y.toarray() if sp.issparse(Y) else Y
    if Y.shape[0] != batch.n_sequences:
        raise ValueError(f"X has {batch.n_sequences} samples but y has {Y.shape[0]} in {name}.")
    if not np.isin(Y, (0, 1)).all():
        raise ValueError(f"y must be a 0/1 indicator matrix for multilabel {name}.")
    return Y.astype(np.int64)


def _check_multiclass_target(y, batch, name):
    """1-D labels of one type, one per sample (a column vector is raveled)."""
    check_label_types([y], f" in {name}")
    y_flat = np.asarray(y)
    if y_flat.ndim == 2 and y_flat.shape[1] == 1:
        y_flat = column_or_1d(y_flat, warn=True)
    if y_flat.ndim != 1:
        raise ValueError(f"y must be 1-D for multiclass {name}; got shape {y_flat.shape}.")
    if y_flat.shape[0] != batch.n_sequences:
        raise ValueError(
            f"X has {batch.n_sequences} samples but y has {y_flat.shape[0]} in {name}."
        )
    return y_flat
