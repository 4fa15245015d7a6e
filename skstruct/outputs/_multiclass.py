"""Multiclass: one label per sample."""

import numpy as np
from sklearn.metrics import accuracy_score
from sklearn.utils.validation import column_or_1d

from ..decoders import MulticlassDecoder, MulticlassScores
from ..features import LinearFeatures
from ..utils._labels import check_label_types
from ._base import OutputKind, check_task_loss_on_gold, class_index_rows, encode_labels
from ._sequence import is_sequence_input
from ._tabular import TabularKind, tabular_batch

__all__ = ["MulticlassKind"]


class MulticlassKind(TabularKind, OutputKind):
    """One label per sample: ``X`` a 2-D (n_samples, n_features) matrix, ``y`` 1-D labels,
    decoded by a :class:`~skstruct.decoders.MulticlassDecoder`.

    The fallback for tabular ``X``: registered first, tried last. Encoded outputs are
    class indices; the default score is accuracy. ``decision_function`` returns the
    (n_samples, n_classes) class scores, or with two classes the (n_samples,) score of
    ``classes_[1]`` minus that of ``classes_[0]`` (scikit-learn's binary convention);
    marginals and probabilities keep one column per class.
    """

    name = "multiclass"
    form = "X a 2-D (n_samples, n_features) matrix, y 1-D labels"

    classes_are_labels = True

    def recognizes(self, X, y):
        return not is_sequence_input(X)

    def read_labels(self, X, y, estimator):
        batch = tabular_batch(X, estimator)
        return batch, _check_target(y, batch, estimator)

    def check_training_data(self, X, y, estimator):
        batch, y_flat = self.read_labels(X, y, estimator)
        classes, y_encoded = encode_labels(y_flat, estimator)
        return batch, classes, y_encoded

    def decode(self, encoded, batch, classes):
        return classes[encoded]

    def decode_one(self, encoded, classes):
        return classes[int(np.asarray(encoded).reshape(-1)[0])]

    def unary_to_decision(self, unary, batch):
        """The (n_samples, n_classes) class scores; with two classes, scikit-learn's
        binary convention: the (n_samples,) score of ``classes_[1]`` minus that of
        ``classes_[0]`` (positive when ``classes_[1]`` scores higher)."""
        scores = self.unary_to_user(unary, batch)
        if scores.ndim == 2 and scores.shape[1] == 2:
            return scores[:, 1] - scores[:, 0]
        return scores

    def row_labels(self, y_encoded, n_outputs):
        return class_index_rows(y_encoded, n_outputs)

    def log_marginals(self, decoder, scores):
        """θ_k − log Z: the class probabilities are the marginals of the unary parts."""
        return scores.unary - decoder.log_partition(scores)[:, None]

    def default_decoder(self):
        return MulticlassDecoder()

    def feature_map(self, n_features, classes):
        return LinearFeatures(n_features, len(classes), MulticlassScores)

    def check_task_loss(self, task_loss, y, batch, classes):
        check_task_loss_on_gold(task_loss, y, batch.offsets, len(classes))

    def score(self, y, y_pred, sample_weight=None):
        return accuracy_score(y, y_pred, sample_weight=sample_weight)


def _check_target(y, batch, name):
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
