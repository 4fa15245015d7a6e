"""Sequences: one label per token, decoded by a linear chain."""

import numpy as np
import scipy.sparse as sp

from ..decoders import ChainDecoder
from ..decoders._chain.counting import check_training_table_memory
from ..features import LinearChainFeatures
from ..metrics import token_accuracy
from ..utils._sequences import check_sequence_feature_names, check_sequences
from ._base import LabelledRowsKind, check_task_loss_on_gold, class_index_rows

__all__ = ["SequenceKind", "is_sequence_input"]


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


class SequenceKind(LabelledRowsKind):
    """Label sequences: ``X`` a list of (n_tokens_i, n_features) matrices, ``y`` a list of
    label arrays (any hashable labels), decoded by a
    :class:`~skstruct.decoders.ChainDecoder`.

    Encoded outputs are class indices of every token, stacked (``batch.offsets``).
    Fitted attributes: ``coef_`` (n_classes, n_features), ``transition_``
    (n_classes, n_classes), ``start_transition_`` and ``end_transition_`` (n_classes,).
    The default score is token accuracy.
    """

    name = "sequence"
    form = "X a list of (n_tokens, n_features) matrices, y a list of label arrays"
    has_label_pairs = True
    example_noun = "sequences"

    def recognizes(self, X, y):
        return is_sequence_input(X)

    def read_labels(self, X, y, estimator):
        return check_sequences(X, y, estimator=estimator)

    def check_prediction_data(self, X, fitted):
        name = type(fitted).__name__
        batch, _ = check_sequences(X, n_features=fitted.n_features_in_, estimator=name)
        check_sequence_feature_names(fitted, list(X))
        return batch

    def default_decoder(self):
        return ChainDecoder()

    def feature_map(self, n_features, classes):
        return LinearChainFeatures(n_features, len(classes))

    def store_coefficients(self, fitted, features, w):
        unary, transition, start, end = features.unpack(w)
        fitted.coef_ = np.ascontiguousarray(unary).T
        fitted.transition_ = transition.copy()
        fitted.start_transition_ = start.copy()
        fitted.end_transition_ = end.copy()

    def coefficients(self, fitted, features):
        return features.pack(*self.coefficient_parts(fitted))

    def coefficient_parts(self, fitted):
        return (fitted.coef_.T, fitted.transition_, fitted.start_transition_,
                fitted.end_transition_)

    def row_labels(self, y_encoded, n_outputs):
        return class_index_rows(y_encoded, n_outputs)

    def pack_unary(self, features, unary):
        n_outputs = np.shape(unary)[1]
        zeros = np.zeros(n_outputs)
        return features.pack(unary, np.zeros((n_outputs, n_outputs)), zeros, zeros)

    def check_task_loss(self, task_loss, y, batch, classes):
        check_task_loss_on_gold(task_loss, y, batch.offsets, len(classes))

    def check_training_memory(self, task_loss, decoder, features, batch, y, w):
        if task_loss.decomposition == "counts":
            check_training_table_memory(decoder, features.scores(batch, w), y, task_loss,
                                        "the training data")

    def score(self, y, y_pred, sample_weight=None):
        return token_accuracy(y, y_pred, sample_weight=sample_weight)
