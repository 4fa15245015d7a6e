"""seqlearn's evaluation functions on flat label arrays."""

import numpy as np

from ...metrics import span_f1_score

__all__ = ["bio_f_score", "whole_sequence_accuracy"]


def bio_f_score(y_true, y_pred):
    """Chunk F1 of BIO tags, the CoNLL way, on flat label arrays.

    seqlearn's ``bio_f_score``: here :func:`skstruct.metrics.span_f1_score` of the two
    arrays taken as one sequence (conlleval's chunks; an ``I-X`` that follows no
    ``B-X`` or ``I-X`` starts a chunk, where seqlearn's approximation drops it, so
    scores of inconsistent labelings can differ).

    Parameters
    ----------
    y_true, y_pred : array-like of str of shape (n_tokens,)

    Returns
    -------
    f : float
    """
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    if len(y_true) != len(y_pred):
        raise ValueError(f"Sequences not of the same length ({len(y_true)} != "
                         f"{len(y_pred)}).")
    return float(span_f1_score([y_true], [y_pred]))


def whole_sequence_accuracy(y_true, y_pred, lengths):
    """The fraction of sequences predicted without a single error.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_tokens,)
    lengths : array-like of int of shape (n_sequences,)

    Returns
    -------
    accuracy : float
    """
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    lengths = np.asarray(lengths)
    if lengths.sum() != len(y_true) or len(y_true) != len(y_pred):
        raise ValueError("y_true, y_pred and the lengths must cover the same tokens.")
    end = np.cumsum(lengths)
    start = end - lengths
    errors = sum(bool(np.any(y_true[a:b] != y_pred[a:b])) for a, b in zip(start, end))
    return 1.0 - errors / len(lengths)
