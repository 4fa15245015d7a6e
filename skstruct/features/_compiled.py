"""What a linear feature map offers the compiled per-example engine.

A linear feature map computes the part scores of example i as η_i = A_i w. For every
built-in map, A_i has the same shape: the stacked feature rows of the example (one row
per token, sample or arc) times a weight matrix W (n_features, K), plus an optional bias
b (K,) added to every row, plus ``n_pair`` parameters that are part scores themselves (the
transition, start and end scores of a chain). :class:`CompiledFeatures` describes that
shape with plain arrays, so that one set of compiled kernels scores an example, adds
s A_iᵀ g to w and computes ‖A_iᵀ g‖² for every map (``skstruct/optim/_engine_kernels.py``).
"""

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from ..utils import _chunks
from ..utils._chunks import weighted_chunks
from ..utils._parallel import dynamic_schedule, threads_for

__all__ = ["CompiledFeatures", "column_dictionary", "compiled_rows"]

# A column dictionary is built when the examples' distinct columns are at most this
# fraction of their stored entries (K = 1 rows only).
_DICTIONARY_RATIO = 0.7


class CompiledFeatures(NamedTuple):
    """The layout of A_i for every example of a batch, as arrays for compiled code.

    Attributes
    ----------
    data : ndarray of shape (nnz,) or (0,), float64
        CSR values of the stacked feature rows of the whole batch; empty when ``binary``
        and the rows came without values (the kernels read it only when not ``binary``).
    indices : ndarray of shape (nnz,), int32 or int64
        Their columns.
    indptr : ndarray of shape (n_rows + 1,), int64
    row_offsets : ndarray of shape (n_examples + 1,), int64
        Example ``i`` owns rows ``row_offsets[i]:row_offsets[i + 1]``.
    n_features : int
    n_unary : int
        K, the unary scores of a row (states, classes or labels; 1 for arcs).
    has_bias : bool
        Whether b (K values stored right after W in w) is added to every row.
    n_pair : int
        Number of parameters after W (and b) that are part scores themselves.
    binary : bool
        Whether every stored value is 1.0 (indicator features), so that the kernels may
        skip reading ``data``: x g = g exactly when x = 1.0, the results do not change.
    local_columns : ndarray of shape (n_distinct,), int32
        The column dictionary of every example (empty when not built): the distinct
        columns of example i, as engine rows of W (see ``column_order``) in ascending
        order, are ``local_columns[column_offsets[i]:column_offsets[i + 1]]``.
    column_offsets : ndarray of shape (n_examples + 1,), int64
    local_slots : ndarray of shape (nnz,), int32
        For every stored entry p of example i, ``column_order[local_columns[
        column_offsets[i] + local_slots[p]]] == indices[p]``. Scoring then reads w once
        per distinct column of the example, into a small buffer, and sums reads of that
        buffer (the same additions in the same order).
    column_order : ndarray of shape (n_features,), int64
        With a column dictionary, the order of W's rows in the engine: engine row j holds
        the parameters of column ``column_order[j]``, the columns in decreasing order of
        the number of examples they appear in (empty without a dictionary: W in column
        order). ``local_columns`` are engine rows, and the kernels then read and write W
        only through the dictionary. Frequent columns packed at the front of W stay in
        the cache while an example's buffer is filled.

    Notes
    -----
    Layout of w (in column order; the engine's copy permutes the rows of W by
    ``column_order`` when there is one): ``W = w[:n_features * K].reshape(n_features, K)``,
    then b (K values,
    when ``has_bias``), then the ``n_pair`` pair parameters. The part scores of example i
    are ``unary[r, k] = Σ_j X[r, j] W[j, k] (+ b[k])`` for its rows r and ``pair`` = the
    pair parameters. The transpose of a part-space vector g = (g_unary, g_pair) adds
    ``X[r, j] g_unary[r, k]`` to ``W[j, k]``, ``Σ_r g_unary[r, k]`` to ``b[k]`` and
    ``g_pair`` to the pair parameters.
    """

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    row_offsets: np.ndarray
    n_features: int
    n_unary: int
    has_bias: bool
    n_pair: int
    binary: bool = False
    local_columns: np.ndarray = np.empty(0, dtype=np.int32)
    column_offsets: np.ndarray = np.zeros(1, dtype=np.int64)
    local_slots: np.ndarray = np.empty(0, dtype=np.int32)
    column_order: np.ndarray = np.empty(0, dtype=np.int64)

    @property
    def n_examples(self):
        """Number of examples."""
        return self.row_offsets.shape[0] - 1

    @property
    def n_params(self):
        """Length of w: n_features K (+ K) + n_pair."""
        return self.n_features * self.n_unary + self.n_unary * self.has_bias + self.n_pair


def compiled_rows(X, row_offsets, n_features, n_unary, has_bias, n_pair):
    """A :class:`CompiledFeatures` from the feature rows ``X`` (dense or sparse).

    Dense rows are converted to CSR once (zeros dropped), so the kernels read one format.
    ``binary`` is set when every stored value is 1.0; rows without values (an
    :class:`~skstruct.utils._trees.ArcRows` whose values are all 1.0) give an empty
    ``data``, which the kernels never read (entries repeated in a row add up, as in the
    CSR form). Rows whose indices are positions in a ``column_order`` (an
    :class:`~skstruct.utils._trees.ArcRows` from ``ArcVectorizer.transform_batch``) give
    that order, composed with the dictionary's, as the engine's ``column_order``.
    """
    positions = None
    if getattr(X, "data", 0) is None or getattr(X, "binary", False):
        # rows without values (an ArcRows of indicator features): nothing to read
        data, binary = np.empty(0), True
        positions = X.column_order
    else:
        X = X.tocsr() if hasattr(X, "tocsr") else sp.csr_matrix(X)  # in column order
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        data = np.ascontiguousarray(X.data, dtype=np.float64)
        binary = bool(np.all(data == 1.0))
    indices = X.indices if X.indices.dtype in (np.int32, np.int64) else X.indices.astype(
        np.int64)
    indices = np.ascontiguousarray(indices)
    indptr = np.ascontiguousarray(X.indptr, dtype=np.int64)
    row_offsets = np.ascontiguousarray(row_offsets, dtype=np.int64)
    dictionary = {}
    if n_unary == 1 and indices.shape[0] > 0:
        dictionary = column_dictionary(indices, indptr, row_offsets, int(n_features))
    if positions is not None:
        # ``indices`` are positions in ``positions``: the engine's rows are those
        # positions (in the dictionary's order when there is one), mapped to columns
        order = dictionary.get("column_order")
        dictionary["column_order"] = np.ascontiguousarray(
            positions if order is None else positions[order], dtype=np.int64)
    return CompiledFeatures(
        data=data,
        indices=indices,
        indptr=indptr,
        row_offsets=row_offsets,
        n_features=int(n_features),
        n_unary=int(n_unary),
        has_bias=bool(has_bias),
        n_pair=int(n_pair),
        binary=binary,
        **dictionary,
    )


def column_dictionary(indices, indptr, row_offsets, n_features):
    """The column dictionary of K = 1 rows (see :class:`CompiledFeatures`), or an empty
    dict when the examples' distinct columns are more than ``_DICTIONARY_RATIO`` of their
    stored entries.

    Three compiled passes, the examples cut into contiguous chunks of about equal stored
    entries (:func:`_dictionary_chunks`, each chunk with its own marks, taken one at a
    time by the threads under :func:`~skstruct.utils._parallel.dynamic_schedule`): every
    example's distinct columns; the number of examples each column appears in, which
    ranks the columns into engine rows (most first, ties by column); every example's
    distinct columns mapped to engine rows, sorted, and the slots renumbered.

    Returns
    -------
    dict
        ``local_columns``, ``column_offsets``, ``local_slots`` and ``column_order``.
    """
    starts = np.ascontiguousarray(indptr[row_offsets], dtype=np.int64)
    n_examples = row_offsets.shape[0] - 1
    bounds = _dictionary_chunks(starts, n_features)
    work = _WORK_PER_ENTRY * int(starts[-1] - starts[0])
    with threads_for(work), dynamic_schedule():
        columns, n_distinct, slots = _distinct_columns(indices, starts, n_features, bounds)
    offsets = np.zeros(n_examples + 1, dtype=np.int64)
    np.cumsum(n_distinct, out=offsets[1:])
    if offsets[-1] > _DICTIONARY_RATIO * indices.shape[0]:
        return {}
    columns = _compact(columns, starts, offsets)
    order = np.argsort(-_appearances(columns, n_features), kind="stable")
    rank = np.empty(n_features, dtype=np.int32)
    rank[order] = np.arange(n_features, dtype=np.int32)
    with threads_for(work), dynamic_schedule():
        _to_engine_rows(columns, offsets, slots, starts, rank, bounds)
    return dict(local_columns=columns, column_offsets=offsets, local_slots=slots,
                column_order=order.astype(np.int64))


#: Work per stored entry of the dictionary's passes (a mark read at a random column, a
#: sort pass).
_WORK_PER_ENTRY = 8


def _dictionary_chunks(starts, n_features):
    """Chunks of examples of about equal stored entries for the dictionary's passes:
    about ``WORK_PER_CHUNK`` of work each, and at least ``n_features / 4`` entries, since
    every chunk fills marks of ``n_features`` entries. They depend on the batch only."""
    return weighted_chunks(starts, scale=_WORK_PER_ENTRY,
                           min_work=max(_chunks.WORK_PER_CHUNK,
                                        _WORK_PER_ENTRY * n_features // 4))


@njit(cache=True, nogil=True)
def _distinct_columns(indices, starts, n_features, bounds):
    """Every example's distinct columns in order of first appearance, written at the
    example's first stored entry in ``columns`` (nnz,); their counts (n_examples,); and
    the slot of every stored entry among them (nnz,)."""
    nnz = indices.shape[0]
    columns = np.empty(nnz, dtype=np.int32)
    slots = np.empty(nnz, dtype=np.int32)
    n_distinct = np.empty(starts.shape[0] - 1, dtype=np.int64)
    _distinct_column_chunks(indices, starts, n_features, bounds, columns, n_distinct, slots)
    return columns, n_distinct, slots


@njit(cache=True, nogil=True, parallel=True)
def _distinct_column_chunks(indices, starts, n_features, bounds, columns, n_distinct,
                            slots):
    # the one parallel loop of _distinct_columns: every example of a chunk writes its
    # own entries (no whole-array expression, which the dynamic schedule would cut into
    # single elements)
    for c in prange(bounds.shape[0] - 1):
        mark = np.full(n_features, -1, dtype=np.int32)
        for i in range(bounds[c], bounds[c + 1]):
            first, last = starts[i], starts[i + 1]
            count = 0
            for p in range(first, last):
                f = indices[p]
                q = mark[f]
                if q < 0:
                    q = count
                    mark[f] = q
                    columns[first + count] = f
                    count += 1
                slots[p] = q
            for q in range(count):
                mark[columns[first + q]] = -1
            n_distinct[i] = count


@njit(cache=True, nogil=True)
def _compact(columns, starts, offsets):
    """The distinct columns of every example, moved from its first stored entry to
    ``offsets[i]`` of one array."""
    out = np.empty(offsets[-1], dtype=np.int32)
    for i in range(offsets.shape[0] - 1):
        first = starts[i]
        for q in range(offsets[i + 1] - offsets[i]):
            out[offsets[i] + q] = columns[first + q]
    return out


@njit(cache=True, nogil=True)
def _appearances(columns, n_features):
    """Number of examples each column appears in (the examples' distinct columns)."""
    counts = np.zeros(n_features, dtype=np.int64)
    for q in range(columns.shape[0]):
        counts[columns[q]] += 1
    return counts


#: Engine rows are sorted per example by two counting passes on 11-bit digits (LSD radix
#: sort), exact for fewer than 2**22 rows; more rows take a comparison sort.
_RADIX_BITS = 11


@njit(cache=True, nogil=True, parallel=True)
def _to_engine_rows(columns, offsets, slots, starts, rank, bounds):
    """Map every example's distinct columns to engine rows (``rank``), sort them
    ascending and renumber the slots, in place.

    Ascending rows make the reads of w that fill an example's buffer sweep W in one
    direction; the slots are an index only, so the scores do not depend on the order.
    """
    longest = 0
    for i in range(offsets.shape[0] - 1):
        longest = max(longest, offsets[i + 1] - offsets[i])
    n_buckets = 1 << _RADIX_BITS
    radix = rank.shape[0] <= 1 << (2 * _RADIX_BITS)
    for c in prange(bounds.shape[0] - 1):
        rows = np.empty(longest, dtype=np.int32)
        origin = np.empty(longest, dtype=np.int32)
        rows_tmp = np.empty(longest, dtype=np.int32)
        origin_tmp = np.empty(longest, dtype=np.int32)
        keys = np.empty(longest if not radix else 0, dtype=np.int64)
        position = np.empty(longest, dtype=np.int32)
        histogram = np.empty(n_buckets + 1, dtype=np.int64)
        for i in range(bounds[c], bounds[c + 1]):
            start, count = offsets[i], offsets[i + 1] - offsets[i]
            if radix:
                for q in range(count):
                    rows[q] = rank[columns[start + q]]
                    origin[q] = q
                for shift in (0, _RADIX_BITS):
                    for d in range(n_buckets + 1):
                        histogram[d] = 0
                    for q in range(count):
                        histogram[((rows[q] >> shift) & (n_buckets - 1)) + 1] += 1
                    for d in range(n_buckets):
                        histogram[d + 1] += histogram[d]
                    for q in range(count):
                        d = (rows[q] >> shift) & (n_buckets - 1)
                        rows_tmp[histogram[d]] = rows[q]
                        origin_tmp[histogram[d]] = origin[q]
                        histogram[d] += 1
                    rows, rows_tmp = rows_tmp, rows
                    origin, origin_tmp = origin_tmp, origin
            else:
                for q in range(count):
                    keys[q] = (np.int64(rank[columns[start + q]]) << 32) | q
                keys[:count].sort()
                for q in range(count):
                    rows[q] = np.int32(keys[q] >> 32)
                    origin[q] = np.int32(keys[q] & 0xFFFFFFFF)
            for q in range(count):
                columns[start + q] = rows[q]
                position[origin[q]] = q
            for p in range(starts[i], starts[i + 1]):
                slots[p] = position[slots[p]]
