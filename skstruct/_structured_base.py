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
from sklearn.utils.validation import check_array, check_consistent_length, check_is_fitted

from .decoders import (
    ChainDecoder,
    MulticlassDecoder,
    MulticlassScores,
    MultilabelDecoder,
    MultilabelScores,
)
from .features import LinearArcFeatures, LinearChainFeatures, LinearFeatures
from .utils._trees import check_trees
from .utils._sequences import (
    SequenceBatch,
    check_sample_weight_sequences,
    check_sequences,
    split_sequences,
)

__all__ = ["StructuredEstimator", "output_kind"]

_DECODERS = {"sequence": ChainDecoder, "multiclass": MulticlassDecoder,
             "multilabel": MultilabelDecoder}


def output_kind(y):
    """``"sequence"``, ``"multiclass"`` or ``"multilabel"`` from the form of ``y``."""
    if sp.issparse(y):
        return "multilabel"
    if isinstance(y, np.ndarray) and y.dtype != object:
        return "multilabel" if y.ndim == 2 else "multiclass"
    try:
        first = y[0]
    except (TypeError, IndexError, KeyError):
        return "multiclass"
    if isinstance(first, (str, bytes)) or np.ndim(first) == 0:
        return "multiclass"
    return "sequence" if isinstance(y, (list, tuple)) or np.ndim(y) == 1 else "multilabel"


class StructuredEstimator(BaseEstimator):
    """Base class of structured estimators over sequences, multiclass and multilabel data.

    Subclasses set ``_output_kinds`` (the kinds they accept), implement ``fit``, and use
    the helpers below; ``predict`` and ``score`` are shared.
    """

    _output_kinds = ("sequence", "multiclass", "multilabel", "tree")

    def _validate_training_data(self, X, y, sample_weight):
        """Check and encode training data.

        Returns
        -------
        kind : str
        batch : SequenceBatch
            Features; one row per example for tabular data (offsets 0, 1, ..., n).
        classes : ndarray of shape (n_classes,)
            Sorted labels (sequences, multiclass) or label indices (multilabel).
        y_encoded : ndarray
            (n_tokens,) or (n_samples,) class indices, or the (n_samples, n_labels) 0/1
            matrix.
        weights : ndarray of shape (n_examples,)
        """
        name = type(self).__name__
        from_y = [k for k in self._output_kinds if k != "tree"]  # trees: by the decoder
        kind = from_y[0] if len(from_y) == 1 else output_kind(y)
        declared = getattr(getattr(self, "decoder", None), "output_kind", None)
        if declared == "tree":
            kind = "tree"
        elif declared is not None and declared != kind:
            raise ValueError(
                f"{name} was given a {type(self.decoder).__name__}, which decodes {declared} "
                f"outputs, but y looks like {kind} data."
            )
        if kind not in self._output_kinds:
            raise ValueError(
                f"{name} takes {' or '.join(self._output_kinds)} outputs, but y looks like "
                f"{kind} data."
            )
        if kind == "tree":
            from .decoders._tree import heads_to_states

            batch, heads = check_trees(X, y, estimator=name)
            y_encoded = heads_to_states(heads, batch.token_offsets)
            weights = check_sample_weight_sequences(sample_weight, batch.n_sequences)
            return kind, batch, None, y_encoded, weights
        if kind == "sequence":
            batch, y_flat = check_sequences(X, y, estimator=name)
        else:
            X = check_array(X, accept_sparse="csr", dtype=np.float64, estimator=name)
            if X.shape[0] == 0:
                raise ValueError(f"X contains no samples in {name}.")
            batch = SequenceBatch(X, np.arange(X.shape[0] + 1))
        if kind == "multilabel":
            Y = check_array(y, accept_sparse="csr", estimator=name, ensure_2d=True)
            Y = Y.toarray() if sp.issparse(Y) else Y
            check_consistent_length(X, Y)
            if not np.isin(Y, (0, 1)).all():
                raise ValueError(f"y must be a 0/1 indicator matrix for multilabel {name}.")
            classes, y_encoded = np.arange(Y.shape[1]), Y.astype(np.int64)
        else:
            if kind == "multiclass":
                y_flat = np.asarray(y)
                if y_flat.ndim != 1:
                    raise ValueError(f"y must be 1-D for multiclass {name}; got {y_flat.shape}.")
                check_consistent_length(X, y_flat)
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
            return batch
        X = check_array(X, accept_sparse="csr", dtype=np.float64, estimator=name)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but {name} is expecting "
                f"{self.n_features_in_} features as input."
            )
        return SequenceBatch(X, np.arange(X.shape[0] + 1))

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
