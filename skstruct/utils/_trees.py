"""Validation and batch-first storage of dependency-tree data.

A sentence of n tokens is one (n * n, n_features) arc feature matrix, modifier-major: row
``m * n + h`` holds the features of the arc "token h heads token m" for h ≠ m, and row
``m * n + m`` those of the arc "the root heads token m". Its tree is an array of n CoNLL
heads: 0 for the root, otherwise the 1-based position of the head.

Arc features come as a list of per-sentence matrices, or as one
:class:`ArcFeatureBatch`: the arc rows of all sentences stacked in CSR form, without a
``data`` array when every value is 1.0 (the binary templates of
:class:`~skstruct.preprocessing.ArcVectorizer`). The batch is what the estimators store
internally (:class:`ArcRows`), so it is used as is: no stacked copy, no values.
"""

import numbers

import numpy as np
import scipy.sparse as sp

from ._sequences import SequenceBatch, _as_sequence_list, _ranges, check_sequences

__all__ = ["ArcFeatureBatch", "ArcRows", "TreeBatch", "check_trees"]


class ArcRows:
    """Stacked feature rows in CSR form whose values may be left out (all 1.0).

    The form the estimators keep arc features in when they come as an
    :class:`ArcFeatureBatch`; :class:`~skstruct.features.LinearArcFeatures` and the
    compiled engine read it without ``data`` when :attr:`binary`.

    Parameters
    ----------
    indices : ndarray of shape (nnz,), int32 or int64
        Column of every stored entry, row after row.
    indptr : ndarray of shape (n_rows + 1,), int64
        Row ``r`` holds entries ``indptr[r]:indptr[r + 1]``.
    n_features : int
    data : ndarray of shape (nnz,), float32 or float64, or None
        The values; None means every stored value is 1.0.
    column_order : ndarray of shape (n_features,), int32 or int64, or None
        When given, ``indices`` are positions in it: the column of entry p is
        ``column_order[indices[p]]`` (see :class:`ArcFeatureBatch`).
    """

    format = "csr"

    def __init__(self, indices, indptr, n_features, data=None, column_order=None):
        self.indices = indices
        self.indptr = indptr
        self.data = data
        self.column_order = column_order
        self.shape = (indptr.shape[0] - 1, int(n_features))

    @property
    def nnz(self):
        """Number of stored entries."""
        return int(self.indices.shape[0])

    @property
    def binary(self):
        """Whether every stored value is 1.0 (no ``data``, or all of it 1.0)."""
        if self.data is None:
            return True
        if not hasattr(self, "_binary"):
            self._binary = bool(np.all(self.data == 1.0))
        return self._binary

    @property
    def nbytes(self):
        """Bytes held by the arrays."""
        arrays = (self.indices, self.indptr, self.data, self.column_order)
        return sum(a.nbytes for a in arrays if a is not None)

    def __getitem__(self, rows):
        """The rows at the integer array ``rows``, in that order (an :class:`ArcRows`)."""
        rows = np.asarray(rows, dtype=np.int64)
        starts, stops = self.indptr[rows], self.indptr[rows + 1]
        entries = _ranges(starts, stops)
        indptr = np.zeros(rows.shape[0] + 1, dtype=np.int64)
        np.cumsum(stops - starts, out=indptr[1:])
        data = None if self.data is None else self.data[entries]
        return ArcRows(self.indices[entries], indptr, self.shape[1], data, self.column_order)

    def tocsr(self):
        """The rows as a float64 scipy CSR matrix in column order (values 1.0 written out
        when absent, indices sorted in every row)."""
        data = (np.ones(self.nnz) if self.data is None
                else self.data.astype(np.float64))
        indices = (self.indices if self.column_order is None
                   else self.column_order[self.indices].astype(self.indices.dtype))
        matrix = sp.csr_matrix((data, indices, self.indptr), shape=self.shape)
        if self.column_order is not None:
            matrix.sort_indices()
        return matrix


class ArcFeatureBatch:
    """The arc features of many sentences, stacked: the compact form of the list of
    per-sentence matrices that :meth:`ArcVectorizer.transform
    <skstruct.preprocessing.ArcVectorizer.transform>` returns.

    Sentence ``i`` of ``n_i`` words owns the ``n_i²`` rows
    ``row_offsets[i]:row_offsets[i + 1]`` (``row_offsets = [0, cumsum(n_i²)]``), laid out
    as in :mod:`skstruct.utils._trees` (row ``m * n_i + h``: head h, modifier m). Rows are
    CSR without values when every value is 1.0, as with hashed indicator features: 4
    bytes a stored entry with int32 ``indices`` instead of 12 (float64 CSR) or 8
    (float32). Estimators with a :class:`~skstruct.decoders.TreeDecoder` take it for
    ``X`` in ``fit``, ``predict``, ``score``, ``decision_function`` and the rest, and
    learn the same model as from the list of matrices.

    Indexing: ``batch[i]`` is sentence i's (n_i², n_features) float64 CSR matrix (what
    the list form holds); ``batch[a:b]`` and ``batch[array]`` are sub-batches, so
    scikit-learn's splitters index it like a list. ``len(batch)`` is the number of
    sentences.

    Parameters
    ----------
    indices : ndarray of shape (nnz,), int32 or int64
        Column of every stored entry, rows one after the other.
    indptr : ndarray of shape (Σ_i n_i² + 1,), integer
        Row ``r`` holds entries ``indptr[r]:indptr[r + 1]``; ``indptr[0] == 0``.
    word_offsets : ndarray of shape (n_sentences + 1,), integer
        Sentence ``i`` has ``word_offsets[i + 1] - word_offsets[i]`` (at least one) words.
    n_features : int
        Number of columns.
    data : ndarray of shape (nnz,), float32 or float64, default=None
        The values; None when every value is 1.0.
    column_order : ndarray of shape (n_features,), integer, default=None
        A permutation of the columns; when given, ``indices`` are positions in it (the
        column of entry p is ``column_order[indices[p]]``). ``transform_batch`` orders
        the columns by decreasing frequency, so that the weights of frequent columns
        are packed together and stay in the cache while all arcs are scored.

    Attributes
    ----------
    row_offsets : ndarray of shape (n_sentences + 1,), int64
    rows : ArcRows
        The stacked rows.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.utils._trees import ArcFeatureBatch
    >>> batch = ArcFeatureBatch(indices=np.array([0, 2, 1, 1, 2], dtype=np.int32),
    ...                         indptr=np.array([0, 1, 2, 3, 4, 5]),
    ...                         word_offsets=np.array([0, 1, 3]), n_features=3)
    >>> len(batch), batch[1].toarray().tolist()
    (2, [[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    """

    def __init__(self, indices, indptr, word_offsets, n_features, data=None,
                 column_order=None):
        if not isinstance(n_features, numbers.Integral) or n_features < 1:
            raise ValueError(f"n_features must be a positive integer; got {n_features!r}.")
        indices = _index_array(indices, "indices")
        indptr = _index_array(indptr, "indptr").astype(np.int64, copy=False)
        word_offsets = _index_array(word_offsets, "word_offsets").astype(np.int64,
                                                                         copy=False)
        if word_offsets.shape[0] < 2 or word_offsets[0] != 0:
            raise ValueError("word_offsets must start at 0 and delimit at least one "
                             f"sentence; got {word_offsets.shape[0]} value(s).")
        lengths = np.diff(word_offsets)
        if np.any(lengths < 1):
            bad = int(np.flatnonzero(lengths < 1)[0])
            raise ValueError(f"Sentence {bad} has {lengths[bad]} words (word_offsets must "
                             "increase: every sentence needs at least one word).")
        row_offsets = np.zeros(lengths.shape[0] + 1, dtype=np.int64)
        np.cumsum(lengths * lengths, out=row_offsets[1:])
        if indptr.shape[0] != row_offsets[-1] + 1:
            raise ValueError(
                f"indptr has {indptr.shape[0]} entries; the sentences of word_offsets have "
                f"{row_offsets[-1]} arc rows (n * n for n words), so it needs "
                f"{row_offsets[-1] + 1}.")
        if indptr[0] != 0 or indptr[-1] != indices.shape[0] or np.any(np.diff(indptr) < 0):
            raise ValueError(
                f"indptr must start at 0, never decrease and end at the number of indices "
                f"({indices.shape[0]}); it ends at {indptr[-1]}.")
        if indices.shape[0] and (indices.min() < 0 or indices.max() >= n_features):
            raise ValueError(f"indices must lie in 0 .. n_features - 1 = {n_features - 1}; "
                             f"found {indices.min()} .. {indices.max()}.")
        if data is not None:
            data = np.asarray(data)
            if data.dtype not in (np.float32, np.float64):
                raise ValueError(f"data must be float32 or float64 (or None for values all "
                                 f"1.0); got dtype {data.dtype}.")
            if data.shape != indices.shape:
                raise ValueError(f"data has shape {data.shape}; indices {indices.shape}.")
            if not np.all(np.isfinite(data)):
                raise ValueError("data holds NaN or infinite values.")
            data = np.ascontiguousarray(data)
        if column_order is not None:
            column_order = _index_array(column_order, "column_order")
            if column_order.shape[0] != n_features or not np.array_equal(
                    np.sort(column_order), np.arange(n_features)):
                raise ValueError(f"column_order must be a permutation of 0 .. n_features - 1 "
                                 f"= {n_features - 1}.")
        self.word_offsets = word_offsets
        self.row_offsets = row_offsets
        self.rows = ArcRows(indices, indptr, n_features, data, column_order)

    @property
    def n_features(self):
        """Number of columns."""
        return self.rows.shape[1]

    @property
    def nbytes(self):
        """Bytes held by the arrays (indices, indptr, data if any, offsets)."""
        return self.rows.nbytes + self.word_offsets.nbytes + self.row_offsets.nbytes

    def __len__(self):
        return self.word_offsets.shape[0] - 1

    def __repr__(self):
        values = "no values (all 1.0)" if self.rows.data is None else (
            f"{self.rows.data.dtype} values")
        return (f"ArcFeatureBatch({len(self)} sentences, {self.rows.shape[0]} arcs, "
                f"{self.rows.nnz} stored entries, {self.n_features} features, {values})")

    def __getitem__(self, key):
        if isinstance(key, numbers.Integral):
            i = range(len(self))[key]
            rows = self.rows[np.arange(self.row_offsets[i], self.row_offsets[i + 1])]
            return rows.tocsr()
        sentences = np.arange(len(self))[key]
        if sentences.ndim != 1:
            raise IndexError("an ArcFeatureBatch is indexed by an integer, a slice or a 1-D "
                             "array of sentences.")
        starts, stops = self.row_offsets[sentences], self.row_offsets[sentences + 1]
        rows = self.rows[_ranges(starts, stops)]
        lengths = np.diff(self.word_offsets)[sentences]
        return ArcFeatureBatch(rows.indices, rows.indptr,
                               np.concatenate(([0], np.cumsum(lengths))), self.n_features,
                               rows.data, rows.column_order)

    def to_list(self):
        """The list of per-sentence float64 CSR matrices (the form of ``transform``)."""
        return [self[i] for i in range(len(self))]


def _index_array(values, name):
    array = np.asarray(values)
    if array.ndim != 1 or not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"{name} must be a 1-D integer array; got {array.dtype} of shape "
                         f"{array.shape}.")
    if array.dtype not in (np.int32, np.int64):
        array = array.astype(np.int64)
    return np.ascontiguousarray(array)


class TreeBatch(SequenceBatch):
    """Arc features of many sentences, stacked batch-first.

    Parameters
    ----------
    X : ndarray, scipy.sparse CSR matrix or ArcRows of shape (Σ_i n_i², n_features)
        Arc features of all sentences, one sentence after the other.
    offsets : ndarray of shape (n_sentences + 1,)
        Sentence ``i`` owns arc rows ``offsets[i]:offsets[i + 1]`` (n_i² of them).
    token_offsets : ndarray of shape (n_sentences + 1,)
        Sentence ``i`` owns tokens (and outputs) ``token_offsets[i]:token_offsets[i + 1]``.
    """

    def __init__(self, X, offsets, token_offsets):
        super().__init__(X, offsets)
        self.token_offsets = np.ascontiguousarray(token_offsets, dtype=np.int64)

    @property
    def output_offsets(self):
        """Sentence ``i`` owns encoded outputs ``output_offsets[i]:output_offsets[i + 1]``."""
        return self.token_offsets

    def take(self, indices):
        """The sub-batch of the sentences at ``indices``, in that order."""
        indices = np.asarray(indices, dtype=np.int64)
        arcs = super().take(indices)
        lengths = np.diff(self.token_offsets)[indices]
        return TreeBatch(arcs.X, arcs.offsets, np.concatenate(([0], np.cumsum(lengths))))


def check_trees(X, y=None, *, n_features=None, estimator=None):
    """Validate dependency-tree data and stack it batch-first.

    Parameters
    ----------
    X : list of array-like or sparse matrices of shape (n_i * n_i, n_features), or \
ArcFeatureBatch
        Arc features of each sentence (see the module docstring for the row layout). A
        batch is kept as is (its rows become the batch's ``X``, no copy).
    y : list of array-like of shape (n_i,), default=None
        CoNLL heads of each sentence: integers in 0 .. n_i, 0 meaning the root.
    n_features : int, default=None
        Expected number of features.
    estimator : str, default=None
        Name used in error messages.

    Returns
    -------
    batch : TreeBatch
    heads : ndarray of shape (Σ_i n_i,), int64, or None
        The heads of all tokens, concatenated.
    """
    where = f" in {estimator}" if estimator else ""
    if isinstance(X, ArcFeatureBatch):
        if n_features is not None and X.n_features != n_features:
            raise ValueError(
                f"X has {X.n_features} features, but {estimator or 'the estimator'} is "
                f"expecting {n_features} features as input.")
        tree_batch = TreeBatch(X.rows, X.row_offsets, X.word_offsets)
        lengths = np.diff(X.word_offsets)
    else:
        batch, _ = check_sequences(X, n_features=n_features, estimator=estimator)
        arcs = batch.lengths
        lengths = np.rint(np.sqrt(arcs)).astype(np.int64)
        bad = np.flatnonzero(lengths * lengths != arcs)
        if bad.size:
            raise ValueError(
                f"Sentence {bad[0]} of X has {arcs[bad[0]]} rows; a sentence of n tokens "
                f"needs n * n arc rows (row m * n + h: head h, modifier m; the diagonal "
                f"holds the root arcs){where}."
            )
        tree_batch = TreeBatch(batch.X, batch.offsets,
                               np.concatenate(([0], np.cumsum(lengths))))
    if y is None:
        return tree_batch, None
    heads = [np.asarray(h) for h in _as_sequence_list(y, "y")]
    if len(heads) != lengths.shape[0]:
        raise ValueError(f"X has {lengths.shape[0]} sentences but y has {len(heads)}{where}.")
    for i, h in enumerate(heads):
        if h.ndim != 1 or h.shape[0] != lengths[i]:
            raise ValueError(
                f"Sentence {i} has {lengths[i]} tokens in X but y[{i}] has shape {h.shape}"
                f"{where}."
            )
    flat = np.concatenate(heads)
    sentence = np.repeat(np.arange(lengths.shape[0]), lengths)
    position = np.arange(flat.shape[0]) - tree_batch.token_offsets[sentence] + 1
    if flat.size and not np.issubdtype(flat.dtype, np.integer):
        raise ValueError(f"y must hold CoNLL heads (integers); got dtype {flat.dtype}{where}.")
    bad = np.flatnonzero((flat < 0) | (flat > lengths[sentence]))
    if bad.size:
        i = sentence[bad[0]]
        raise ValueError(
            f"y[{i}] must hold CoNLL heads, integers in 0 .. {lengths[i]} (0 = root)"
            f"{where}."
        )
    bad = np.flatnonzero(flat == position)
    if bad.size:
        raise ValueError(f"y[{sentence[bad[0]]}] has a token that heads itself{where}.")
    flat = flat.astype(np.int64)
    cyclic = _sentences_with_cycles(flat, tree_batch.token_offsets)
    if cyclic.size:
        raise ValueError(
            f"y[{cyclic[0]}] is not a tree: its heads form a cycle, so some words never "
            f"reach the root{where}."
        )
    return tree_batch, flat


def _sentences_with_cycles(heads, token_offsets):
    """Sentences whose heads do not all lead to the root, by pointer doubling.

    Every token points to its head's global position, the root to a sink; after
    ⌈log₂ n⌉ squarings every token of a tree points to the sink.

    Parameters
    ----------
    heads : ndarray of shape (n_tokens,), int64
        CoNLL heads, stacked: 0 for the root, else the head's 1-based id in 1 .. n_i.
    token_offsets : ndarray of shape (n_sentences + 1,), int64

    Returns
    -------
    ndarray of shape (n_cyclic,), int64
        The sentences with a cycle, in increasing order.
    """
    n_tokens = heads.shape[0]
    if n_tokens == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.repeat(token_offsets[:-1], np.diff(token_offsets))
    sink = n_tokens
    parent = np.append(np.where(heads == 0, sink, starts + heads - 1), sink)
    for _ in range(int(np.ceil(np.log2(max(2, np.diff(token_offsets).max())))) + 1):
        parent = parent[parent]
    stuck = np.flatnonzero(parent[:n_tokens] != sink)
    sentence = np.searchsorted(token_offsets, stuck, side="right") - 1
    return np.unique(sentence)
