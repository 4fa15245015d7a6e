"""SparseMAP over non-projective trees, every sentence solved in one compiled call.

The generic active set (:mod:`skstruct.decoders._sparsemap.active_set`) alternates a batched MAP call and a
batched active-set step, with Python between them: gathering the unconverged sentences'
scores, pooling the new trees, dropping unused ones. For trees all of it runs per
sentence inside one parallel loop: each sentence keeps its own small pool of the trees it
has seen (at most the warm-start trees plus ``max_iter``), runs Chu–Liu–Edmonds on
η − u, and takes the same major and minor iterations
(:func:`~skstruct.decoders._sparsemap.kernels.major_iteration`, :func:`~skstruct.decoders._sparsemap.kernels.warm_start_one`)
as the generic solver, so the solution is the same up to the rounding of the tree
scores.
"""

import numba
import numpy as np
from numba import njit, prange

from ...utils._blocks import cumulative, gather_ranges
from ...utils._parallel import threads_for
from .._sparsemap import kernels
from .._sparsemap.result import SparseMAPResult
from .kernels import arborescence_one

__all__ = ["tree_active_set_sparsemap", "TreeSupport"]


@njit(cache=True, nogil=True)
def _add_tree(states, n, unary, base, pool_states, pool_idx, pool_theta, s):
    """Store tree ``states`` as structure ``s`` of a sentence's pool: its arcs' local
    positions m n + y_m (sorted) and its score Σ_m A[m, y_m]."""
    total = 0.0
    for m in range(n):
        pool_states[s * n + m] = states[m]
        pool_idx[s * n + m] = m * n + states[m]
        total += unary[base + m * n + states[m]]
    pool_theta[s] = total


@njit(parallel=True, cache=True, nogil=True)
def _solve_all(unary, offsets, unary_offsets, single_root, init_ptr, init_tokens,
               init_states, init_weights, max_iter, tol, max_inner, out_ptr, out_tokens,
               out_states, out_weights, n_active, u, n_iter, gap, objective, converged,
               lift):
    """The active set of every sentence, from its warm-start trees (possibly none).

    Sentence e's warm-start trees are blocks of n_e tokens of ``init_states``, the j-th
    at ``init_tokens[e] + n_e · j``, with weights
    ``init_weights[init_ptr[e]:init_ptr[e + 1]]``. Its final support (``n_active[e]``
    trees) goes to the slots ``out_ptr[e]:`` of ``out_weights`` and the tokens
    ``out_tokens[e]:`` of ``out_states``.
    """
    tau = np.zeros(offsets.shape[0] - 1)
    no_values = np.zeros(0)
    for e in prange(offsets.shape[0] - 1):
        n = offsets[e + 1] - offsets[e]
        base = unary_offsets[e]
        size = n * n
        n_init = init_ptr[e + 1] - init_ptr[e]
        capacity = n_init + max_iter
        pool_states = np.empty(capacity * n, dtype=np.int64)
        pool_idx = np.empty(capacity * n, dtype=np.int64)
        pool_ptr = np.arange(capacity + 1) * n
        pool_theta = np.empty(capacity)
        slots = np.full(capacity + 2, -1, dtype=np.int64)
        slot_weights = np.zeros(capacity + 2)
        factor = np.zeros((capacity + 2, capacity + 2))
        if n_init > 0:
            first = init_tokens[e]
            for j in range(n_init):
                _add_tree(init_states[first + j * n:first + (j + 1) * n], n, unary, base,
                          pool_states, pool_idx, pool_theta, j)
            kernels.warm_start_one(e, np.arange(n_init), init_weights[init_ptr[e]:
                                   init_ptr[e + 1]], True, slots, slot_weights, factor,
                                   n_active, lift, u, base, size, pool_ptr, pool_idx,
                                   no_values, pool_theta, tau, objective, max_inner)
        n_pool = n_init
        adjusted = np.empty(size)
        states = np.empty(n, dtype=np.int64)
        width = 2 * n + 1
        floats = np.empty(width * width)
        ints = np.empty(3 * width * width + 9 * width, dtype=np.int64)
        for _ in range(max_iter):
            if converged[e]:
                break
            for q in range(size):
                adjusted[q] = unary[base + q] - u[base + q]
            arborescence_one(adjusted, n, single_root, states, floats, ints)
            _add_tree(states, n, unary, base, pool_states, pool_idx, pool_theta, n_pool)
            kernels.major_iteration(e, n_pool, slots, slot_weights, factor, n_active, lift,
                                    u, base, size, pool_ptr, pool_idx, no_values,
                                    pool_theta, tau, gap, converged, objective, tol,
                                    max_inner)
            n_pool += 1
            n_iter[e] += 1
        start, tokens = out_ptr[e], out_tokens[e]
        for j in range(n_active[e]):
            out_weights[start + j] = slot_weights[j]
            s = slots[j]
            for m in range(n):
                out_states[tokens + n * j + m] = pool_states[s * n + m]


@njit(parallel=True, cache=True, nogil=True)
def _combine(ptr, tokens, states, coefficients, offsets, unary_offsets, out):
    """out[e's block][m, y_m] += c for every support tree y of coefficient c, in support
    order (out zero beforehand); support position j's tree starts at ``tokens[j]``."""
    for e in prange(offsets.shape[0] - 1):
        n = offsets[e + 1] - offsets[e]
        base = unary_offsets[e]
        for j in range(ptr[e], ptr[e + 1]):
            for m in range(n):
                out[base + m * n + states[tokens[j] + m]] += coefficients[j]


class TreeSupport:
    """The support of a tree SparseMAP solution: every sentence's trees, stacked.

    Support position ``p`` of sentence ``e`` (``ptr[e] <= p < ptr[e + 1]``) is the tree
    of n_e tokens ``states[tokens[p]:tokens[p] + n_e]`` with weight ``weights[p]``, the
    trees stacked in position order (see :mod:`skstruct.decoders._sparsemap.result` for the interface).
    """

    def __init__(self, decoder, scores, ptr, states, weights, lift, parts_type):
        self._decoder = decoder
        self._parts_type = parts_type
        self._scores = scores
        self.ptr = ptr
        self.states = states
        self.weights = weights
        self._lift = lift
        self._lengths = np.repeat(scores.lengths, np.diff(ptr))
        self._tokens = cumulative(self._lengths)

    def outputs(self, positions):
        positions = np.asarray(positions, dtype=np.int64)
        return self.states[gather_ranges(self._tokens[positions], self._lengths[positions])]

    def split(self, outputs, count):
        n_tokens = outputs.shape[0] // max(count, 1)
        return [outputs[j * n_tokens : (j + 1) * n_tokens] for j in range(count)]

    def combine(self, coefficients):
        scores = self._scores
        out = np.zeros(int(scores.unary_offsets[-1]))
        _combine(self.ptr, self._tokens, self.states,
                 np.asarray(coefficients, dtype=np.float64),
                 scores.offsets, np.asarray(scores.unary_offsets, dtype=np.int64), out)
        return self._parts_type(out, scores.offsets)

    def marginals(self):
        return self.combine(self.weights)

    def check_backward(self, method):
        pass

    def vjp(self, upstream):
        scores = self._scores
        u_offsets = np.asarray(scores.unary_offsets, dtype=np.int64)
        lengths = self._lengths
        pool_ptr = self._tokens
        # arc positions m n + y_m of every support tree, sorted within each tree
        local = np.arange(self.states.shape[0]) - np.repeat(pool_ptr[:-1], lengths)
        pool_idx = local * np.repeat(lengths, lengths) + self.states
        coefficients = np.zeros(self.ptr[-1])
        kernels.support_coefficients(
            self.ptr, np.arange(self.ptr[-1]), self._lift, pool_ptr, pool_idx, np.zeros(0),
            np.ascontiguousarray(upstream, dtype=np.float64), u_offsets, coefficients)
        return self.combine(coefficients)


def _initial_trees(init, lengths):
    """(ptr, stacked states, weights) of an earlier solution's supports."""
    support = init._support
    if isinstance(support, TreeSupport):
        return support.ptr, support.states, support.weights
    ptr = np.asarray(support.ptr, dtype=np.int64)
    states = np.asarray(support.outputs(np.arange(ptr[-1])), dtype=np.int64).reshape(-1)
    return ptr, states, np.asarray(support.weights, dtype=np.float64)


def tree_active_set_sparsemap(decoder, scores, flat, max_iter, tol, max_inner, init,
                              parts_type):
    """SparseMAP over non-projective trees by the active-set method, all sentences in one
    compiled call (options checked by the caller; see
    :meth:`~skstruct.decoders.TreeDecoder.sparsemap`).

    Parameters
    ----------
    decoder : TreeDecoder
        Non-projective.
    scores : TreeScores
    flat : ndarray of shape (Σ_i n_i²,), float64
        The checked arc scores.
    max_iter, max_inner : int
    tol : float
    init : SparseMAPResult or None
    parts_type : type
        The part vectors of trees (:class:`~skstruct.decoders._tree.decoder.TreeParts`), which
        ``combine`` and ``marginals`` return; passed in so that this module does not
        import the decoder's.

    Returns
    -------
    SparseMAPResult
    """
    offsets = scores.offsets
    u_offsets = np.asarray(scores.unary_offsets, dtype=np.int64)
    lengths = scores.lengths
    n = scores.n_examples
    if init is None:
        init_ptr, init_states, init_weights = np.zeros(n + 1, dtype=np.int64), \
            np.zeros(0, dtype=np.int64), np.zeros(0)
    else:
        init_ptr, init_states, init_weights = _initial_trees(init, lengths)
    out_ptr = cumulative(np.diff(init_ptr) + max_iter)
    out_tokens = cumulative(np.diff(out_ptr) * lengths)
    init_tokens = cumulative(np.diff(init_ptr) * lengths)
    out_states = np.empty(out_tokens[-1], dtype=np.int64)
    out_weights = np.empty(out_ptr[-1])
    n_active = np.zeros(n, dtype=np.int64)
    u = np.zeros_like(flat)
    n_iter = np.zeros(n, dtype=np.int64)
    gap = np.full(n, np.inf)
    objective = np.zeros(n)
    converged = np.zeros(n, dtype=bool)
    lift = np.ones(n)
    with threads_for(20 * max_iter * float(np.sum(lengths.astype(np.float64) ** 2))), \
            numba.parallel_chunksize(8):
        _solve_all(flat, offsets, u_offsets, bool(decoder.single_root), init_ptr,
                   init_tokens, init_states, init_weights, int(max_iter), float(tol),
                   int(max_inner), out_ptr, out_tokens, out_states, out_weights, n_active,
                   u, n_iter, gap, objective, converged, lift)
    ptr = cumulative(n_active)
    slots = gather_ranges(out_ptr[:-1], n_active)
    states = out_states[gather_ranges(out_tokens[:-1], n_active * lengths)]
    support = TreeSupport(decoder, scores, ptr, states, out_weights[slots], lift, parts_type)
    return SparseMAPResult(decoder, scores, support, u, n_iter, gap, objective, converged,
                           "active_set")
