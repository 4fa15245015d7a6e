"""The structures a SparseMAP solver has seen, stored once, compactly and ragged."""

import numpy as np

from ...utils._blocks import cumulative
from .kernels import count_nonzero_blocks, gather_blocks, sparse_blocks

__all__ = ["StructurePool"]


class _Growing:
    """An array that grows by appending, with amortized doubling (no copy per append)."""

    def __init__(self, dtype, initial=()):
        self._data = np.empty(max(16, len(initial)), dtype=dtype)
        self._size = len(initial)
        self._data[: self._size] = initial

    @property
    def dtype(self):
        return self._data.dtype

    def extend(self, values):
        values = np.asarray(values)
        needed = self._size + values.shape[0]
        if needed > self._data.shape[0] or not np.can_cast(values.dtype, self._data.dtype,
                                                            casting="safe"):
            dtype = np.promote_types(self._data.dtype, values.dtype)
            grown = np.empty(max(needed, 2 * self._data.shape[0]), dtype=dtype)
            grown[: self._size] = self._data[: self._size]
            self._data = grown
        self._data[self._size : needed] = values
        self._size = needed

    def view(self):
        return self._data[: self._size]

    def keep_blocks(self, ptr, ids):
        """Keep only the blocks ``ptr[s]:ptr[s + 1]`` of ``ids`` (sorted), in place."""
        sizes = ptr[ids + 1] - ptr[ids]
        kept = np.empty(max(16, int(sizes.sum())), dtype=self._data.dtype)
        gather_blocks(self._data, ptr, ids, kept)
        self._data = kept
        self._size = int(sizes.sum())


def _smallest_integer_dtype(values):
    """The narrowest signed integer type holding ``values`` (integers only)."""
    if values.size == 0:
        return np.dtype(np.int8)
    low, high = int(values.min()), int(values.max())
    for dtype in (np.int8, np.int16, np.int32):
        info = np.iinfo(dtype)
        if info.min <= low and high <= info.max:
            return np.dtype(dtype)
    return np.dtype(np.int64)


class _Outputs:
    """Encoded outputs, one block per structure, stored compactly.

    0/1 rows (a batch of 2-D outputs whose entries are 0 and 1, as multilabel indicator
    rows) are bit-packed, one bit a label; other integer outputs take the narrowest
    integer type that holds them. Returned in their own type.
    """

    def __init__(self):
        self._data = None
        self._ptr = _Growing(np.int64, [0])
        self.dtype = None
        self.tail = ()
        self._packed = None  # the row length of bit-packed rows, or None

    def add(self, y, sizes):
        """Append the outputs ``y`` of a batch; example i owns ``sizes[i]`` flat entries."""
        if self._data is None:
            self.dtype = y.dtype
            self.tail = y.shape[1:] if y.ndim > 1 else ()
            if y.ndim == 2 and _is_binary(y):
                self._packed = y.shape[1]
            storage = (np.uint8 if self._packed is not None else
                       _smallest_integer_dtype(y) if np.issubdtype(y.dtype, np.integer)
                       else y.dtype)
            self._data = _Growing(storage)
        if self._packed is not None and not (y.ndim == 2 and y.shape[1] == self._packed
                                             and _is_binary(y)):
            self._unpack()
        if self._packed is not None:
            packed = np.packbits(y.astype(np.uint8, copy=False), axis=1)
            self._data.extend(packed.reshape(-1))
            sizes = np.full(y.shape[0], packed.shape[1], dtype=np.int64)
        else:
            flat = y.reshape(-1)
            if np.issubdtype(flat.dtype, np.integer):
                flat = flat.astype(_smallest_integer_dtype(flat), copy=False)
            self._data.extend(flat)
        self._ptr.extend(self._ptr.view()[-1] + np.cumsum(sizes))

    def _unpack(self):
        rows = self.get(np.arange(self._ptr.view().shape[0] - 1))
        width = self._packed
        self._packed = None
        self._data = _Growing(_smallest_integer_dtype(rows))
        self._ptr = _Growing(np.int64, [0])
        self._data.extend(rows.reshape(-1).astype(self._data.dtype))
        self._ptr.extend(np.arange(1, rows.shape[0] + 1) * width)

    def get(self, ids):
        """The outputs of structures ``ids``, stacked as a decoder batch."""
        ptr = self._ptr.view()
        ids = np.asarray(ids, dtype=np.int64)
        flat = np.empty(int((ptr[ids + 1] - ptr[ids]).sum()), dtype=self._data.dtype)
        gather_blocks(self._data.view(), ptr, ids, flat)
        if self._packed is not None:
            rows = np.unpackbits(flat.reshape(ids.shape[0], -1), axis=1, count=self._packed)
            return rows.astype(self.dtype)
        return flat.astype(self.dtype, copy=False).reshape((-1,) + self.tail)

    def keep(self, ids):
        ptr = self._ptr.view()
        self._data.keep_blocks(ptr, ids)
        self._ptr = _Growing(np.int64, cumulative(ptr[ids + 1] - ptr[ids]))

    @property
    def nbytes(self):
        return 0 if self._data is None else self._data.view().nbytes


def _is_binary(y):
    return np.issubdtype(y.dtype, np.integer) and not ((y != 0) & (y != 1)).any()


class StructurePool:
    """Every structure a solver keeps: its sparse unary vector, score and output.

    Structure ``s`` has unary entries ``idx[ptr[s]:ptr[s + 1]]`` (positions local to its
    example's unary block, sorted, in the narrowest integer type that holds them) with
    values ``val[...]`` — no values at all while every value is 1 (indicator vectors:
    chains, trees, matchings, multiclass, multilabel) —, score ``theta[s]`` and an encoded
    output (see :class:`_Outputs`). :meth:`keep` drops the structures no example uses any
    more, so the pool follows the sum of the supports rather than the number of MAP calls.
    """

    def __init__(self):
        self._ptr = _Growing(np.int64, [0])
        self._idx = _Growing(np.int8)
        self._val = None  # a _Growing once a value other than 1 is seen
        self._theta = _Growing(np.float64)
        self._outputs = _Outputs()
        self.n = 0

    @property
    def output_tail(self):
        return self._outputs.tail

    def add(self, decoder, scores, y):
        """Add the outputs ``y`` of the examples of ``scores``; returns their ids."""
        parts = decoder.parts(scores, y)
        flat = np.ascontiguousarray(parts.unary, dtype=np.float64).reshape(-1)
        block = np.asarray(parts.unary_offsets, dtype=np.int64)
        del parts
        sizes = np.empty(scores.n_examples, dtype=np.int64)
        count_nonzero_blocks(flat, block, sizes)
        local = np.empty(int(sizes.sum()), dtype=_smallest_integer_dtype(np.diff(block)))
        binary = self._val is None and not ((flat != 0.0) & (flat != 1.0)).any()
        values = np.empty(0 if binary else local.shape[0])
        sparse_blocks(flat, block, local, values)
        del flat
        self._idx.extend(local)
        if not binary:
            if self._val is None:
                self._val = _Growing(np.float64, np.ones(self._ptr.view()[-1]))
            self._val.extend(values)
        self._ptr.extend(self._ptr.view()[-1] + np.cumsum(sizes))
        self._theta.extend(np.asarray(decoder.score_outputs(scores, y), dtype=np.float64))
        # example i's output is flat entries offsets[i]:offsets[i + 1] of the raveled y
        self._outputs.add(np.asarray(y), np.diff(scores.offsets))
        ids = self.n + np.arange(scores.n_examples)
        self.n += scores.n_examples
        return ids

    def arrays(self):
        """(ptr, idx, val, theta) as contiguous arrays for the kernels (views; ``val`` is
        empty while every value is 1)."""
        val = np.zeros(0) if self._val is None else self._val.view()
        return self._ptr.view(), self._idx.view(), val, self._theta.view()

    def outputs(self, ids):
        """The encoded outputs of structures ``ids``, stacked as a decoder batch."""
        return self._outputs.get(ids)

    @property
    def nbytes(self):
        """Bytes held by the stored structures (for memory accounting)."""
        total = sum(part.view().nbytes for part in (self._ptr, self._idx, self._theta))
        return total + self._outputs.nbytes + (0 if self._val is None else
                                               self._val.view().nbytes)

    def keep(self, ids):
        """Keep only the structures ``ids`` (sorted, distinct); returns old id → new id
        (-1 for a dropped structure)."""
        ids = np.asarray(ids, dtype=np.int64)
        remap = np.full(self.n, -1, dtype=np.int64)
        remap[ids] = np.arange(ids.shape[0])
        ptr = self._ptr.view()
        self._idx.keep_blocks(ptr, ids)
        if self._val is not None:
            self._val.keep_blocks(ptr, ids)
        self._theta.keep_blocks(np.arange(self.n + 1), ids)
        self._outputs.keep(ids)
        self._ptr = _Growing(np.int64, cumulative(ptr[ids + 1] - ptr[ids]))
        self.n = ids.shape[0]
        return remap
