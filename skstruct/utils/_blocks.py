"""Index arithmetic of examples stored as consecutive blocks of a flat array."""

import numpy as np

__all__ = ["cumulative", "gather_ranges", "normalize_indices"]


def cumulative(counts):
    """[0, counts[0], counts[0] + counts[1], ...] as int64."""
    counts = np.asarray(counts, dtype=np.int64)
    out = np.zeros(counts.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def gather_ranges(starts, lengths):
    """Concatenation of ``arange(s, s + n)`` for every (s, n), without a Python loop."""
    lengths = np.asarray(lengths, dtype=np.int64)
    new_starts = cumulative(lengths)
    shift = np.repeat(np.asarray(starts, dtype=np.int64) - new_starts[:-1], lengths)
    return np.arange(new_starts[-1], dtype=np.int64) + shift


def normalize_indices(indices, n_examples):
    """Example indices (negative allowed) or a boolean mask, as a 1-D int64 array."""
    indices = np.asarray(indices)
    if indices.ndim != 1:
        raise ValueError(f"indices must be 1-D; got shape {indices.shape}.")
    if indices.size == 0:
        return np.zeros(0, dtype=np.int64)
    if indices.dtype != bool and not np.issubdtype(indices.dtype, np.integer):
        raise ValueError(f"indices must be integers or a boolean mask; got {indices.dtype}.")
    return np.arange(n_examples, dtype=np.int64)[indices]
