"""The structures a SparseMAP solver has seen, stored once, compactly and ragged."""

import numpy as np

from ..utils._blocks import cumulative, gather_ranges

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

    def keep(self, positions):
        """Keep only the entries at ``positions`` (sorted), shrinking the storage."""
        kept = self._data[positions]
        self._data = np.empty(max(16, 2 * kept.shape[0]), dtype=self._data.dtype)
        self._data[: kept.shape[0]] = kept
        self._size = kept.shape[0]


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


class StructurePool:
    """Every structure a solver keeps: its sparse unary indicators, score and output.

    Structure ``s`` has unary entries ``idx/val[ptr[s]:ptr[s + 1]]`` (positions local to
    its example's unary block, sorted), score ``theta[s]`` and encoded output
    ``outputs[out_ptr[s]:out_ptr[s + 1]]``. Integer outputs are stored in the narrowest
    integer type that holds them (a 0/1 labeling takes one byte a label) and returned in
    their own type; :meth:`keep` drops the structures no example uses any more, so the pool
    follows the sum of the supports rather than the number of MAP calls.
    """

    def __init__(self):
        self._ptr = _Growing(np.int64, [0])
        self._idx = _Growing(np.int32)
        self._val = _Growing(np.float64)
        self._theta = _Growing(np.float64)
        self._out_ptr = _Growing(np.int64, [0])
        self._out = None
        self._out_dtype = None
        self.output_tail = ()
        self.n = 0

    def add(self, decoder, scores, y):
        """Add the outputs ``y`` of the examples of ``scores``; returns their ids."""
        parts = decoder.parts(scores, y)
        flat = np.asarray(parts.unary, dtype=np.float64).reshape(-1)
        block = np.asarray(parts.unary_offsets)
        nonzero = np.flatnonzero(flat)
        example = np.searchsorted(block, nonzero, side="right") - 1
        self._idx.extend((nonzero - block[example]).astype(np.int32))
        self._val.extend(flat[nonzero])
        sizes = np.bincount(example, minlength=scores.n_examples)
        self._ptr.extend(self._ptr.view()[-1] + np.cumsum(sizes))
        self._theta.extend(np.asarray(decoder.score_outputs(scores, y), dtype=np.float64))
        y = np.asarray(y)
        self.output_tail = y.shape[1:] if y.ndim > 1 else ()
        # example i's output is flat entries offsets[i]:offsets[i + 1] of the raveled y
        self._store_outputs(y.reshape(-1), np.diff(scores.offsets))
        ids = self.n + np.arange(scores.n_examples)
        self.n += scores.n_examples
        return ids

    def _store_outputs(self, flat, sizes):
        if self._out is None:
            self._out_dtype = flat.dtype
            storage = (_smallest_integer_dtype(flat)
                       if np.issubdtype(flat.dtype, np.integer) else flat.dtype)
            self._out = _Growing(storage)
        if np.issubdtype(flat.dtype, np.integer):
            flat = flat.astype(np.promote_types(self._out.dtype,
                                                _smallest_integer_dtype(flat)), copy=False)
        self._out.extend(flat)
        self._out_ptr.extend(self._out_ptr.view()[-1] + np.cumsum(sizes))

    def arrays(self):
        """(ptr, idx, val, theta) as contiguous arrays for the kernels (views)."""
        return self._ptr.view(), self._idx.view(), self._val.view(), self._theta.view()

    def outputs(self, ids):
        """The encoded outputs of structures ``ids``, stacked as a decoder batch."""
        ptr = self._out_ptr.view()
        ids = np.asarray(ids, dtype=np.int64)
        flat = self._out.view()[gather_ranges(ptr[ids], ptr[ids + 1] - ptr[ids])]
        return flat.astype(self._out_dtype, copy=False).reshape((-1,) + self.output_tail)

    def n_stored(self):
        """Numbers of stored unary entries and output entries (for memory accounting)."""
        return self._idx.view().shape[0], self._out.view().shape[0] if self._out else 0

    def keep(self, ids):
        """Keep only the structures ``ids`` (sorted, distinct); returns old id → new id
        (-1 for a dropped structure)."""
        ids = np.asarray(ids, dtype=np.int64)
        remap = np.full(self.n, -1, dtype=np.int64)
        remap[ids] = np.arange(ids.shape[0])
        ptr = self._ptr.view()
        entries = gather_ranges(ptr[ids], ptr[ids + 1] - ptr[ids])
        new_ptr = cumulative(ptr[ids + 1] - ptr[ids])
        out_ptr = self._out_ptr.view()
        out_entries = gather_ranges(out_ptr[ids], out_ptr[ids + 1] - out_ptr[ids])
        new_out_ptr = cumulative(out_ptr[ids + 1] - out_ptr[ids])
        self._idx.keep(entries)
        self._val.keep(entries)
        self._theta.keep(ids)
        self._out.keep(out_entries)
        self._ptr = _Growing(np.int64, new_ptr)
        self._out_ptr = _Growing(np.int64, new_out_ptr)
        self.n = ids.shape[0]
        return remap
