"""Validation and batch-first storage of sequence data.

Users pass sequences as a list of per-sequence 2-D feature arrays (dense or sparse) and a
list of per-sequence label arrays. Every compiled kernel instead works on one stacked matrix
of all tokens and an ``offsets`` array that marks where each sequence starts.
"""

import copy
import numbers
from itertools import repeat
from operator import attrgetter, is_

import numpy as np
import scipy.sparse as sp

from ._labels import check_label_types

__all__ = ["SequenceBatch", "SequenceBlocks", "check_sequences", "split_sequences"]


class SequenceBatch:
    """Token features of many sequences, stacked batch-first.

    Parameters
    ----------
    X : ndarray or scipy.sparse CSR matrix of shape (n_tokens, n_features)
        Features of all tokens of all sequences, one sequence after the other.
    offsets : ndarray of shape (n_sequences + 1,), dtype int64
        Sequence ``i`` owns rows ``offsets[i]:offsets[i + 1]``; ``offsets[0] == 0``.
    """

    #: Column names of a DataFrame ``X`` (tabular data), else None.
    feature_names = None

    def __init__(self, X, offsets):
        self.X = X
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)

    @property
    def n_sequences(self):
        return self.offsets.shape[0] - 1

    @property
    def n_tokens(self):
        return int(self.offsets[-1])

    @property
    def n_features(self):
        return self.X.shape[1]

    @property
    def lengths(self):
        return np.diff(self.offsets)

    @property
    def output_offsets(self):
        """Sequence ``i`` owns encoded outputs ``output_offsets[i]:output_offsets[i + 1]``."""
        return self.offsets

    @property
    def is_sparse(self):
        return sp.issparse(self.X)

    def with_features(self, X):
        """The same batch (same type, same offsets) holding the features ``X`` instead.

        ``X`` must have the same number of rows; a subclass keeps its extra layout (a
        :class:`~skstruct.utils._trees.TreeBatch` keeps its token offsets).
        """
        if X.shape[0] != self.X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows; the batch has {self.X.shape[0]}.")
        batch = copy.copy(self)
        batch.X = X
        return batch

    def take(self, indices):
        """Return the sub-batch of the sequences at ``indices``, in that order."""
        indices = np.asarray(indices, dtype=np.int64)
        starts, stops = self.offsets[indices], self.offsets[indices + 1]
        rows = _ranges(starts, stops)
        offsets = np.concatenate(([0], np.cumsum(stops - starts)))
        return SequenceBatch(self.X[rows], offsets)


class SequenceBlocks(list):
    """Per-sequence CSR blocks that are row slices of one stacked matrix.

    A plain list of ``n_sequences`` CSR matrices (what
    :meth:`~skstruct.preprocessing.SequenceVectorizer.transform` returns) that also
    remembers the stacked matrix its blocks were cut from, so that
    :func:`check_sequences` can hand that matrix to the model instead of stacking the
    blocks again (about 10 us per block, 20 ms on the 2,012 CoNLL-2000 test sentences).

    The stacked matrix is used only while the list and its blocks are as they were made:
    the same block objects in the same places, each block still holding the same
    ``data``, ``indices``, ``indptr`` and ``shape`` objects, and the blocks' row pointers
    unchanged (they are views of one array, compared with a saved copy). A block's
    ``data`` and ``indices`` are views of the stacked matrix's, so changing them in place
    changes the stacked matrix too, which :func:`check_sequences` validates as a whole
    (finite values, column indices in range). Anything else (a block replaced, added or
    removed, an attribute of a block reassigned, a slice, a copy, a pickle round trip:
    those give plain lists) goes through the general path, which stacks the blocks.

    Parameters
    ----------
    blocks : list of n_sequences csr_matrix of shape (n_tokens_i, n_features)
        ``blocks[i]`` holds rows ``offsets[i]:offsets[i + 1]`` of the stacked matrix; its
        ``data`` and ``indices`` are views of ``data`` and ``indices``, its ``indptr`` a
        view of ``block_indptr``.
    data : ndarray of shape (nnz,)
    indices : ndarray of shape (nnz,)
    indptr : ndarray of shape (n_tokens + 1,)
        The stacked CSR matrix of shape (n_tokens, n_features).
    n_features : int
    offsets : ndarray of shape (n_sequences + 1,), dtype int64
    block_indptr : ndarray
        The array every block's ``indptr`` is a view of.
    """

    def __init__(self, blocks, data, indices, indptr, n_features, offsets, block_indptr):
        super().__init__(blocks)
        self._origin = (
            tuple(blocks), tuple(map(_DATA, blocks)), tuple(map(_INDICES, blocks)),
            tuple(map(_INDPTR, blocks)), tuple(map(_SHAPE, blocks)),
            block_indptr, block_indptr.copy(), (data, indices, indptr),
            (int(offsets[-1]), int(n_features)), offsets,
        )

    def __reduce_ex__(self, protocol):
        # copies and pickles are plain lists: their blocks are no views of a stacked matrix
        return list, (list(self),)

    def _stacked(self):
        """``(data, indices, indptr, shape, offsets)`` of the stacked matrix, or None.

        None unless the list and its blocks are as they were made (see the class
        docstring); the check costs a few identity comparisons per block and one
        comparison of the blocks' row pointers with their saved copy.
        """
        (blocks, datas, indices, indptrs, shapes, block_indptr, saved, arrays, shape,
         offsets) = self._origin
        intact = (
            len(self) == len(blocks)
            and all(map(is_, self, blocks))
            and all(map(is_, map(type, self), repeat(sp.csr_matrix)))
            and all(map(is_, map(_DATA, self), datas))
            and all(map(is_, map(_INDICES, self), indices))
            and all(map(is_, map(_INDPTR, self), indptrs))
            and all(map(is_, map(_SHAPE, self), shapes))
            and np.array_equal(block_indptr, saved)
        )
        return (*arrays, shape, offsets) if intact else None


_DATA, _INDICES, _INDPTR, _SHAPE = map(attrgetter, ("data", "indices", "indptr", "shape"))


def _ranges(starts, stops):
    """Concatenate ``arange(start, stop)`` for every pair, without a Python loop."""
    lengths = stops - starts
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    shifts = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
    return np.arange(total, dtype=np.int64) + shifts


def split_sequences(stacked, offsets):
    """Split a stacked per-token array back into a list of per-sequence arrays.

    Parameters
    ----------
    stacked : ndarray of shape (n_tokens, ...)
    offsets : ndarray of shape (n_sequences + 1,)

    Returns
    -------
    list of ndarray
        ``n_sequences`` views, the ``i``-th of shape ``(lengths[i], ...)``.
    """
    inner = np.asarray(offsets)[1:-1].tolist()  # np.split's pieces, without its overhead
    return list(map(stacked.__getitem__, map(slice, [None] + inner, inner + [None])))


def _as_sequence_list(X, name):
    if isinstance(X, np.ndarray):
        if X.ndim == 3:
            return list(X)
        if X.dtype != object or X.ndim != 1:
            raise TypeError(
                f"{name} must be a list of 2-D arrays, one (n_tokens, n_features) array per "
                f"sequence; got an ndarray of shape {X.shape}. For a single sequence pass "
                f"[{name}]."
            )
        return list(X)
    if sp.issparse(X) or isinstance(X, (str, bytes)) or not hasattr(X, "__len__"):
        raise TypeError(
            f"{name} must be a list of 2-D arrays, one (n_tokens, n_features) array per "
            f"sequence; got {type(X).__name__}."
        )
    return list(X)


def _stack_sparse(blocks, n_features):
    csr = [b.tocsr() if sp.issparse(b) else sp.csr_matrix(b) for b in blocks]
    nnz = np.array([b.nnz for b in csr], dtype=np.int64)
    index_dtype = np.int32 if max(nnz.sum(), n_features) < 2**31 - 1 else np.int64
    data = np.concatenate([b.data for b in csr]).astype(np.float64, copy=False)
    indices = np.concatenate([b.indices for b in csr]).astype(index_dtype, copy=False)
    row_starts = np.concatenate(([0], np.cumsum(nnz)[:-1]))
    indptr = np.concatenate(
        [b.indptr[:-1] + start for b, start in zip(csr, row_starts)] + [[nnz.sum()]]
    ).astype(index_dtype)
    n_tokens = indptr.shape[0] - 1
    return sp.csr_matrix((data, indices, indptr), shape=(n_tokens, n_features))


def check_sequences(X, y=None, *, n_features=None, estimator=None):
    """Validate sequence data and stack it batch-first.

    Parameters
    ----------
    X : list of array-like or sparse matrices of shape (n_tokens_i, n_features)
        One feature matrix per sequence. A 3-D array is read as equal-length sequences.
    y : list of array-like of shape (n_tokens_i,), default=None
        One label array per sequence, labels of any hashable type.
    n_features : int, default=None
        Expected number of features (the fitted ``n_features_in_`` at predict time).
    estimator : str, default=None
        Name used in error messages.

    Returns
    -------
    batch : SequenceBatch
        Stacked float64 features (CSR if any sequence is sparse, dense otherwise).
    y_flat : ndarray of shape (n_tokens,) or None
        The labels of all tokens, concatenated in sequence order.

    Raises
    ------
    ValueError
        On empty input, empty sequences, NaN or infinite features, inconsistent numbers of
        features, a wrong number of features, or X and y of different lengths.
    TypeError
        When X is not a list of 2-D arrays.
    """
    where = f" in {estimator}" if estimator else ""
    stacked = X._stacked() if type(X) is SequenceBlocks else None
    if stacked is not None:
        batch = _stacked_batch(*stacked, n_features, where)
        if batch is not None:
            return batch, None if y is None else _check_labels(y, batch.lengths, where)
    blocks = _as_sequence_list(X, "X")
    if len(blocks) == 0:
        raise ValueError(f"X contains no sequences{where}; at least one is required.")
    blocks_in = blocks
    blocks = [b if sp.issparse(b) else np.asarray(b) for b in blocks]
    if any(np.iscomplexobj(b) for b in blocks):
        raise ValueError(f"Complex data not supported{where}; X must hold real numbers.")
    for i, block in enumerate(blocks):
        if block.ndim != 2:
            raise ValueError(
                f"Sequence {i} of X has {block.ndim} dimension(s); each sequence must be a "
                f"2-D (n_tokens, n_features) array{where}."
            )
        if block.shape[0] == 0:
            raise ValueError(f"Sequence {i} of X is empty{where}; sequences need >= 1 token.")
    widths = np.array([b.shape[1] for b in blocks])
    if np.any(widths != widths[0]):
        bad = int(np.flatnonzero(widths != widths[0])[0])
        raise ValueError(
            f"Sequence {bad} of X has {widths[bad]} features but sequence 0 has "
            f"{widths[0]}{where}."
        )
    if n_features is not None and widths[0] != n_features:
        raise ValueError(
            f"X has {widths[0]} features, but {estimator or 'the estimator'} is expecting "
            f"{n_features} features as input."
        )
    lengths = np.array([b.shape[0] for b in blocks], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    if any(sp.issparse(b) for b in blocks):
        stacked = _stack_sparse(blocks, int(widths[0]))
        values = stacked.data
    else:
        try:
            stacked = np.ascontiguousarray(np.concatenate(blocks), dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"X must contain numbers{where}: {exc}") from exc
        values = stacked
    _check_values(stacked, values, where)
    batch = SequenceBatch(stacked, offsets)
    batch.feature_names = sequence_feature_names(blocks_in, where)
    if y is None:
        return batch, None
    return batch, _check_labels(y, lengths, where)


def _stacked_batch(data, indices, indptr, shape, offsets, n_features, where):
    """The batch of :class:`SequenceBlocks` that are intact, validated in bulk.

    The same batch as the general path of :func:`check_sequences` would stack from the
    blocks (float64 values, the same index arrays), or None when the blocks have
    something the general path reports (an empty sequence, a wrong number of features).
    """
    if (n_features is not None and shape[1] != n_features) or not np.all(
            offsets[1:] > offsets[:-1]):
        return None
    stacked = sp.csr_matrix((data.astype(np.float64, copy=False), indices, indptr),
                            shape=shape)
    _check_values(stacked, stacked.data, where)
    return SequenceBatch(stacked, offsets)


def _check_values(stacked, values, where):
    """Finite values of moderate magnitude; column indices of a sparse ``stacked`` in
    ``[0, n_features)`` (the compiled kernels read the weights at those indices)."""
    if not np.all(np.isfinite(values)):
        raise ValueError(f"X contains NaN or infinity{where}.")
    _check_magnitude(values, where)
    if sp.issparse(stacked) and stacked.nnz and (
            stacked.indices.min() < 0 or stacked.indices.max() >= stacked.shape[1]):
        raise ValueError(
            f"X has sparse column indices outside [0, {stacked.shape[1]}){where}; the "
            "sparse matrices of X are malformed."
        )


#: Features of larger magnitude overflow float64 once multiplied by weights and summed.
MAX_FEATURE_MAGNITUDE = 1e100


def _check_magnitude(values, where):
    largest = float(np.abs(values).max(initial=0.0))
    if largest > MAX_FEATURE_MAGNITUDE:
        raise ValueError(
            f"X has features of magnitude up to {largest:.3g}{where}; part scores (features "
            "times weights, summed) would overflow float64. Scale the features, e.g. with "
            "sklearn.preprocessing.MaxAbsScaler or StandardScaler."
        )


def sequence_feature_names(blocks, where=""):
    """The column names shared by per-sequence DataFrames, or None.

    Raises
    ------
    ValueError
        When the sequences' DataFrames have different column names.
    """
    from sklearn.utils.validation import _get_feature_names

    names = _get_feature_names(blocks[0])
    if names is None:
        return None
    for i, block in enumerate(blocks[1:], start=1):
        other = _get_feature_names(block)
        if other is None or not np.array_equal(other, names):
            raise ValueError(
                f"Sequence {i} of X has other column names than sequence 0{where}; every "
                "sequence's DataFrame needs the same columns, in the same order."
            )
    return names


def check_sequence_feature_names(estimator, blocks):
    """At predict: per-sequence DataFrames must have the columns seen at fit."""
    fitted = getattr(estimator, "feature_names_in_", None)
    name = type(estimator).__name__
    names = sequence_feature_names(blocks, f" in {name}")
    if fitted is not None and names is not None and not np.array_equal(fitted, names):
        raise ValueError(
            f"The feature names should match those that were passed during fit: {name} was "
            f"fitted on columns {list(fitted)} but X has columns {list(names)}."
        )


def _check_labels(y, lengths, where):
    label_seqs = _as_sequence_list(y, "y") if not isinstance(y, np.ndarray) else list(y)
    if len(label_seqs) != lengths.shape[0]:
        raise ValueError(
            f"X has {lengths.shape[0]} sequences but y has {len(label_seqs)}{where}."
        )
    check_label_types(label_seqs, where)
    label_seqs = [np.asarray(labels) for labels in label_seqs]
    for i, labels in enumerate(label_seqs):
        if labels.ndim != 1:
            kind = "a scalar" if labels.ndim == 0 else f"{labels.ndim}-D"
            raise ValueError(
                f"y[{i}] is {kind}; y must be a list of 1-D label arrays, one per "
                f"sequence{where} (X was read as {lengths.shape[0]} sequences, of "
                f"{lengths[0]} token(s) for the first)."
            )
        if labels.shape[0] != lengths[i]:
            raise ValueError(
                f"Sequence {i} has {lengths[i]} tokens in X but {labels.shape[0]} labels "
                f"in y{where}."
            )
    return np.concatenate(label_seqs)


def check_sample_weight_sequences(sample_weight, n_sequences, *, allow_zero_sum=False):
    """Validate per-sequence weights: numeric, finite, non-negative, not all zero.

    Parameters
    ----------
    sample_weight : array-like of shape (n_sequences,), number or None
        One weight per sequence; a number weighs every sequence alike, None is all ones.
    n_sequences : int
        Number of sequences.
    allow_zero_sum : bool, default=False
        Accept weights that are all zero (a metric then returns its value for no data)
        instead of raising.

    Returns
    -------
    sample_weight : ndarray of shape (n_sequences,), dtype float64

    Raises
    ------
    TypeError
        If the weights are not numbers (strings, None, complex numbers...).
    ValueError
        If there is not one weight per sequence, or a weight is negative, NaN or
        infinite, or (unless ``allow_zero_sum``) all weights are zero.
    """
    if sample_weight is None:
        return np.ones(n_sequences)
    if isinstance(sample_weight, numbers.Real):
        sample_weight = np.full(n_sequences, float(sample_weight))
    array = sample_weight if isinstance(sample_weight, np.ndarray) else None
    if array is None:
        try:
            array = np.asarray(sample_weight)
        except (TypeError, ValueError):  # ragged nesting
            array = np.asarray(sample_weight, dtype=object)
    try:
        if array.dtype.kind not in "biuf" and not (
            array.dtype.kind == "O"
            and all(isinstance(w, numbers.Real) for w in array.ravel().tolist())
        ):
            raise TypeError  # astype would turn None into NaN and "1" into 1.0
        converted = array.astype(np.float64)
    except (TypeError, ValueError):
        values = array.ravel().tolist()
        example = next((w for w in values if not isinstance(w, numbers.Real)), array.dtype)
        raise TypeError(
            f"sample_weight must be numeric, one number per sequence; got {example!r} of "
            f"type {type(example).__name__}."
        ) from None
    if converted.shape != (n_sequences,):
        raise ValueError(
            f"sample_weight has shape {converted.shape}; expected one weight per sequence, "
            f"i.e. shape ({n_sequences},)."
        )
    bad = ~np.isfinite(converted) | (converted < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            "sample_weight must be finite and non-negative; the weight of sequence "
            f"{i} is {float(converted[i])!r}."
        )
    if not allow_zero_sum and converted.sum() <= 0:
        raise ValueError("sample_weight must not be all zero.")
    return converted
