"""Token feature dicts to one CSR matrix, and a CSR matrix to per-sequence blocks, fast.

:class:`~skstruct.preprocessing.SequenceVectorizer` spends its time here. Every step
iterates at C level (``map``, ``itertools.chain``, ``dict.get``), in numpy or in a
compiled kernel; Python code runs only once per feature that the column table misses (a number
other than 0 or 1, an unseen string) and once per sequence when splitting.

The column table ``{key: {value: column}}`` holds every fitted one-hot feature
``"key=value"`` under its string value, and every fitted numeric feature ``key`` under
the values ``True`` (its column) and ``False`` (:data:`DROP`). Python's dict equality
makes ``1``, ``1.0`` and ``True`` one dict key, and ``0``, ``0.0``, ``-0.0`` and ``False``
another, so a numeric feature whose value is 0 or 1 is found by the same two lookups as a
string feature, and always has the value 1 when it is stored (0 is dropped, as
DictVectorizer drops it when it removes stored zeros).
"""

from itertools import chain, islice, repeat
from operator import is_not

import numpy as np
import scipy.sparse as sp
from numba import njit

from ..utils._sequences import SequenceBlocks
from ._dict_walk import NUMBER, dict_codes

__all__ = ["DROP", "MISS", "column_table", "lookup_csr", "split_rows"]

#: Table code of a feature that is not stored (a numeric feature of value 0).
DROP = -1
#: Code of a (key, value) pair absent from the table.
MISS = -2

#: Value types the table path handles exactly as the general path does; any other type
#: (str or int subclasses, numpy scalars, lists of strings) sends the whole call to the
#: general path.
_TABLE_TYPES = frozenset({str, bool, int, float})

_EMPTY = {}


def column_table(by_value, by_key):
    """The column table: string values of each key, plus ``True``/``False`` of numeric keys.

    Parameters
    ----------
    by_value : dict of {key: {str: int}}
        Column of the one-hot feature ``"key=value"``.
    by_key : dict of {key: int}
        Column of the numeric feature ``key``.

    Returns
    -------
    table : dict of {key: {str or bool: int}}
        ``table[key][value]`` is the column of ``"key=value"``; ``table[key][True]`` the
        column of numeric ``key`` and ``table[key][False]`` is :data:`DROP`.
    """
    table = {key: dict(inner) for key, inner in by_value.items()}
    for key, column in by_key.items():
        inner = table.setdefault(key, {})
        inner[True] = column
        inner[False] = DROP
    return table


def _codes(tokens, counts, table, code_dtype=np.int64):
    """Table code of every (key, value) item of every token, in token then dict order.

    C-level passes over the items: the list of all values, their types (checked on that
    list), then one lookup per item written straight into the output array. Reading
    the values once into a list makes the two later passes and the misses (read back by
    position) cheaper than iterating the dicts again (about 15 ms on the 884,067 items
    of the CoNLL-2000 test set).

    Parameters
    ----------
    tokens : list of dict
    counts : ndarray of shape (n_tokens,), int64
        ``len`` of every token.
    table : dict
        From :func:`column_table`.
    code_dtype : integer dtype, default=np.int64
        The type of the codes (int32 when every column fits: half the memory).

    Returns
    -------
    codes : ndarray of shape (n_items,), dtype ``code_dtype``, or None
        Column, :data:`DROP` or :data:`MISS`; None when a value's type is not one of
        :data:`_TABLE_TYPES`.
    values : list of n_items values, or None
    """
    values = list(chain.from_iterable(map(dict.values, tokens)))
    n_items = int(counts.sum())
    if len(values) != n_items:
        raise RuntimeError("a token feature dict changed while it was being vectorized")
    if not _TABLE_TYPES.issuperset(map(type, values)):
        return None, None
    inner_tables = map(table.get, chain.from_iterable(map(dict.keys, tokens)), repeat(_EMPTY))
    lookups = map(dict.get, inner_tables, values, repeat(MISS))
    try:
        codes = np.fromiter(lookups, dtype=code_dtype, count=n_items)
    except ValueError as error:  # fewer keys than counted
        raise RuntimeError("a token feature dict changed while it was being vectorized"
                           ) from error
    if next(inner_tables, None) is not None:  # more keys than values
        raise RuntimeError("a token feature dict changed while it was being vectorized")
    return codes, values


def lookup_csr(tokens, table, by_key, n_features, dtype):
    """CSR matrix of the tokens' features, columns from the fitted ``table``.

    Same matrix as DictVectorizer's ``transform`` after ``sum_duplicates``: features
    unseen in fit dropped, string values one-hot, numbers kept (zeros not stored),
    booleans 1 or 0.

    Parameters
    ----------
    tokens : list of n_tokens dict
        The token feature dicts, all sequences one after the other.
    table : dict
        From :func:`column_table` (a table without numeric entries is valid too: numbers
        then all take the slower path for misses).
    by_key : dict of {key: int}
        Column of each numeric feature.
    n_features : int
        Number of columns.
    dtype : floating dtype
        Type of the values.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_tokens, n_features), or None
        Sorted column indices within each row, duplicates summed. None when a token is
        not a ``dict`` or a value's type is not str, bool, int or float: the caller then
        uses its general path, which also explains bad input.
    """
    try:
        counts = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
    except TypeError:  # a token that is not a dict
        return None
    code_dtype = np.int32 if n_features <= np.iinfo(np.int32).max else np.int64
    number_items, number_values = _NO_NUMBERS, np.zeros(0, dtype=dtype)
    codes = dict_codes(tokens, int(counts.sum()), table, MISS, code_dtype)
    if codes is not None:  # the compiled walk: only numbers it missed are left
        numbers = np.flatnonzero(codes == NUMBER)
        if numbers.size:
            number_items, number_values = _resolve_numbers(tokens, counts, numbers, by_key,
                                                           codes, dtype)
    else:
        try:
            codes, values = _codes(tokens, counts, table, code_dtype)
        except TypeError:  # a token that is not a dict
            return None
        if codes is None:
            return None
        misses = np.flatnonzero(codes == MISS)
        if misses.size:
            number_items, number_values = _resolve_misses(tokens, values, counts, misses,
                                                          by_key, codes, dtype)
        del values, misses  # one reference per item: freed before the rows are assembled
    indptr, indices, data = _assemble_rows(codes, counts, number_items, number_values)
    return sp.csr_matrix((data, indices, indptr), shape=(len(tokens), n_features))


_NO_NUMBERS = np.zeros(0, dtype=np.int64)

#: Rows with more items are sorted by a merge sort instead of by insertion.
_INSERTION_SORT_ITEMS = 48


@njit(cache=True, nogil=True)
def _assemble_rows(codes, counts, number_items, number_values):
    """CSR rows of the kept items: columns increasing within each row, duplicates summed.

    Token ``t`` owns the next ``counts[t]`` entries of ``codes``; an entry ``>= 0`` is a
    column, of value ``number_values[p]`` if the item is ``number_items[p]``, else 1.
    A row of ``k`` items is sorted by insertion (O(k^2), k is small) or, above
    :data:`_INSERTION_SORT_ITEMS`, by a merge sort (O(k log k)). O(n_items) otherwise.

    Parameters
    ----------
    codes : ndarray of shape (n_items,), int32 or int64
    counts : ndarray of shape (n_tokens,), int64
    number_items : ndarray of shape (n_numbers,), int64, increasing
    number_values : ndarray of shape (n_numbers,), floating

    Returns
    -------
    indptr : ndarray of shape (n_tokens + 1,), int64
    indices : ndarray of shape (nnz,), int32
    data : ndarray of shape (nnz,), dtype of ``number_values``
    """
    n_tokens, n_items = counts.shape[0], codes.shape[0]
    indptr = np.empty(n_tokens + 1, dtype=np.int64)
    indices = np.empty(n_items, dtype=np.int32)
    data = np.empty(n_items, dtype=number_values.dtype)
    indptr[0] = 0
    nnz = item = p = 0
    for t in range(n_tokens):
        start, stop = nnz, item + counts[t]
        if counts[t] > _INSERTION_SORT_ITEMS:  # gather, then sort and merge below
            for j in range(item, stop):
                value = 1.0
                if p < number_items.shape[0] and number_items[p] == j:
                    value = number_values[p]
                    p += 1
                if codes[j] >= 0:
                    indices[nnz] = codes[j]
                    data[nnz] = value
                    nnz += 1
            order = np.argsort(indices[start:nnz], kind="mergesort")
            row_indices = indices[start:nnz][order]
            row_data = data[start:nnz][order]
            nnz = start
            for q in range(row_indices.shape[0]):
                if nnz > start and indices[nnz - 1] == row_indices[q]:
                    data[nnz - 1] += row_data[q]
                else:
                    indices[nnz] = row_indices[q]
                    data[nnz] = row_data[q]
                    nnz += 1
        else:
            for j in range(item, stop):
                value = 1.0
                if p < number_items.shape[0] and number_items[p] == j:
                    value = number_values[p]
                    p += 1
                column = codes[j]
                if column < 0:
                    continue
                i = nnz
                while i > start and indices[i - 1] > column:
                    i -= 1
                if i > start and indices[i - 1] == column:
                    data[i - 1] += value
                    continue
                for q in range(nnz, i, -1):
                    indices[q] = indices[q - 1]
                    data[q] = data[q - 1]
                indices[i] = column
                data[i] = value
                nnz += 1
        item = stop
        indptr[t + 1] = nnz
    return indptr, indices[:nnz], data[:nnz]


def _resolve_misses(tokens, values, counts, misses, by_key, codes, dtype):
    """The items the table missed that are numbers of a numeric key; their codes in place.

    An unseen string stays a miss (dropped); a number gets the column of its key, if the
    key was numeric in fit, and keeps its own value unless that is 0 (dropped). The
    missed values are read from ``values`` by position at C level; Python code runs once
    per missed number (its key is read from its token).

    Returns
    -------
    number_items : ndarray of shape (n_numbers,), int64
        Increasing positions of the kept numbers among all items (``codes`` now holds
        their columns).
    number_values : ndarray of shape (n_numbers,), ``dtype``
    """
    missed = list(map(values.__getitem__, misses.tolist()))
    is_number = np.fromiter(map(is_not, map(type, missed), repeat(str)), dtype=bool,
                            count=len(missed))
    number_items, number_columns, number_values = [], [], []
    if is_number.any():
        starts = np.zeros(len(tokens) + 1, dtype=np.int64)
        np.cumsum(counts, out=starts[1:])
        numbers = np.flatnonzero(is_number)
        items = misses[numbers]
        token_of = np.searchsorted(starts, items, side="right") - 1
        for j, item, token in zip(numbers.tolist(), items.tolist(), token_of.tolist()):
            key = next(islice(tokens[token], item - int(starts[token]), None))
            value = missed[j]
            column = by_key.get(key)
            if column is not None and value:
                number_items.append(item)
                number_columns.append(column)
                number_values.append(value)
    if number_items:
        codes[number_items] = number_columns
    return (np.array(number_items, dtype=np.int64),
            np.array(number_values, dtype=dtype).reshape(-1))


def _resolve_numbers(tokens, counts, numbers, by_key, codes, dtype):
    """The numbers the compiled walk missed (its :data:`NUMBER` codes): their columns.

    Each is read back from its token by position (Python code once per such number) and
    treated as :func:`_resolve_misses` treats a missed number: the column of its key, if
    the key was numeric in fit, and its own value unless that is 0 (dropped).

    Returns
    -------
    number_items : ndarray of shape (n_numbers,), int64
        Increasing positions of the kept numbers among all items.
    number_values : ndarray of shape (n_numbers,), ``dtype``
    """
    starts = np.zeros(len(tokens) + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    token_of = np.searchsorted(starts, numbers, side="right") - 1
    number_items, number_columns, number_values = [], [], []
    for item, token in zip(numbers.tolist(), token_of.tolist()):
        key, value = next(islice(tokens[token].items(), item - int(starts[token]), None))
        column = by_key.get(key)
        if column is not None and value:
            number_items.append(item)
            number_columns.append(column)
            number_values.append(value)
    if number_items:
        codes[number_items] = number_columns
    return (np.array(number_items, dtype=np.int64),
            np.array(number_values, dtype=dtype).reshape(-1))


def split_rows(X, lengths):
    """Drop the stored zeros of CSR ``X`` and split its rows into blocks of ``lengths`` rows.

    Each block is a CSR matrix whose ``data`` and ``indices`` are views of ``X``'s and
    whose ``indptr`` is a view of one array computed for all blocks at once. The blocks
    equal the matrices ``csr_matrix((data, indices, indptr), shape)`` builds, with the
    index dtype it chooses; they are assembled directly (scipy's constructor checks and
    copies every block, about 25 us each, the time of tagging 20 tokens) once the first
    block, built by the constructor, confirms the attributes that scipy's CSR matrices
    hold; otherwise all are built by the constructor.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix of shape (n_tokens, n_features)
    lengths : ndarray of shape (n_sequences,)
        Rows of each block; ``lengths.sum() == n_tokens``.

    Returns
    -------
    blocks : SequenceBlocks or list of n_sequences csr_matrix of shape (lengths[i], n_features)
        A :class:`~skstruct.utils._sequences.SequenceBlocks` (a list that also remembers
        ``X``, so that estimators skip stacking the blocks again) when the blocks were
        assembled directly; a plain list when scipy's constructor built them.
    """
    X.eliminate_zeros()
    n_sequences, n_features = len(lengths), X.shape[1]
    bounds = np.zeros(n_sequences + 1, dtype=np.int64)
    np.cumsum(lengths, out=bounds[1:])
    index_dtype = np.int32 if max(X.nnz, n_features) <= np.iinfo(np.int32).max else np.int64
    data, indices = X.data, X.indices.astype(index_dtype, copy=False)
    # Block i's indptr is local[ext_bounds[i]:ext_bounds[i + 1]]: lengths[i] + 1 entries.
    ext_bounds = bounds + np.arange(n_sequences + 1)
    rows = np.arange(ext_bounds[-1]) - np.repeat(np.arange(n_sequences), lengths + 1)
    local = (X.indptr[rows] - np.repeat(X.indptr[bounds[:-1]], lengths + 1)).astype(index_dtype)
    nnz = X.indptr[bounds].tolist()
    ext = ext_bounds.tolist()
    shapes = [(int(n), n_features) for n in lengths]
    if n_sequences == 0:
        return []
    first_piece = (data[:nnz[1]], indices[:nnz[1]], local[:ext[1]], shapes[0])
    first = _csr_by_constructor(*first_piece)
    if not _assembly_matches(first, first_piece):
        return [first] + [
            _csr_by_constructor(data[nnz[i]:nnz[i + 1]], indices[nnz[i]:nnz[i + 1]],
                                local[ext[i]:ext[i + 1]], shapes[i])
            for i in range(1, n_sequences)
        ]
    maxprint, new, cls = first.maxprint, sp.csr_matrix.__new__, sp.csr_matrix
    blocks = []
    for i in range(n_sequences):  # the first too: all views (scipy copies small views)
        block = new(cls)
        block.__dict__ = {"_shape": shapes[i], "maxprint": maxprint,
                          "indices": indices[nnz[i]:nnz[i + 1]],
                          "indptr": local[ext[i]:ext[i + 1]], "data": data[nnz[i]:nnz[i + 1]]}
        blocks.append(block)
    return SequenceBlocks(blocks, data, indices, X.indptr.astype(index_dtype, copy=False),
                          n_features, bounds, local)


def _csr_by_constructor(data, indices, indptr, shape):
    return sp.csr_matrix((data, indices, indptr), shape=shape)


_CSR_ATTRIBUTES = frozenset({"_shape", "maxprint", "indices", "indptr", "data"})


def _assembly_matches(block, piece):
    """Whether the constructor's ``block`` holds ``piece`` in exactly the known attributes.

    True when scipy stores a CSR matrix as the attributes :data:`_CSR_ATTRIBUTES` and
    kept the arrays of ``piece`` with their dtypes (it may copy a view that is small next
    to its base): blocks assembled from those attributes then equal the constructor's.
    """
    data, indices, indptr, shape = piece
    return set(vars(block)) == _CSR_ATTRIBUTES and block._shape == shape and all(
        mine.dtype == theirs.dtype and np.array_equal(mine, theirs)
        for mine, theirs in ((block.data, data), (block.indices, indices),
                             (block.indptr, indptr))
    )
