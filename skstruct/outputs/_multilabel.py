"""Multilabel: a set of labels per sample, as a 0/1 indicator matrix."""

import numpy as np
import scipy.sparse as sp
from sklearn.metrics import accuracy_score
from sklearn.utils.validation import check_array

from ..decoders import MultilabelDecoder, MultilabelScores
from ..decoders._core.checks import keeps_operations
from ..features import LinearFeatures
from ..losses import CountingLoss, check_task_loss
from ._base import OutputKind
from ._sequence import is_sequence_input
from ._tabular import TabularKind, tabular_batch

__all__ = ["MultilabelKind"]


class MultilabelKind(TabularKind, OutputKind):
    """Label sets: ``X`` a 2-D (n_samples, n_features) matrix, ``y`` a 0/1 indicator
    matrix (n_samples, n_labels), decoded by a
    :class:`~skstruct.decoders.MultilabelDecoder`.

    Encoded outputs are the int64 indicator matrix; ``classes_`` holds the label
    indices. The default score is subset accuracy.
    """

    name = "multilabel"
    form = "X a 2-D (n_samples, n_features) matrix, y a 0/1 indicator matrix"

    def recognizes(self, X, y):
        if is_sequence_input(X):
            return False
        if sp.issparse(y):
            return True
        if isinstance(y, np.ndarray) and y.dtype != object:
            return y.ndim == 2 and y.shape[1] != 1
        if hasattr(y, "iloc"):  # pandas
            return np.ndim(y) == 2 and y.shape[1] != 1
        try:
            first = y[0]
        except (TypeError, IndexError, KeyError):
            return False
        return not (isinstance(first, (str, bytes)) or np.ndim(first) == 0)

    def check_data_form(self, X, y, estimator):
        hint = _tabular_x_hint(X, y)
        if hint:
            raise ValueError(f"X and y do not fit together in {estimator}.{hint}")

    def check_training_data(self, X, y, estimator):
        batch = tabular_batch(X, estimator)
        return batch, np.arange(_n_labels(y)), _check_indicator(y, batch, estimator)

    def decode(self, encoded, batch, classes):
        return np.asarray(encoded, dtype=np.int64)

    def decode_one(self, encoded, classes):
        return np.asarray(encoded).reshape(-1).astype(np.int64)

    def row_labels(self, y_encoded, n_outputs):
        return sp.csr_matrix((np.asarray(y_encoded) != 0).astype(np.float64))

    def log_marginals(self, decoder, scores):
        """log σ(θ_j) = −log(1 + exp(−θ_j)) with independent labels; the log of the
        marginals when the decoder couples them (e.g. ``SubsetDecoder``)."""
        if keeps_operations(decoder, MultilabelDecoder, ("marginals",)):
            return -np.logaddexp(0.0, -scores.unary)
        return super().log_marginals(decoder, scores)

    def default_decoder(self):
        return MultilabelDecoder()

    def feature_map(self, n_features, classes):
        return LinearFeatures(n_features, len(classes), MultilabelScores)

    def bind_task_loss(self, loss, classes):
        """Counting losses count the labels that are on."""
        task_loss = check_task_loss(loss, "loss")
        if isinstance(task_loss, CountingLoss):
            return task_loss.with_positive_states([False, True])
        return task_loss

    def score(self, y, y_pred, sample_weight=None):
        return accuracy_score(y, y_pred, sample_weight=sample_weight)


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
