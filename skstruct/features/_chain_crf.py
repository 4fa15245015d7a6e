"""The CRF objective of linear chains in two compiled passes.

F(w) = Σ_i ω_i [log Z_i(w) − θ_{ȳ_i}(w)] + (α/2) ‖w‖², with θ the chain scores of
:class:`~skstruct.features.LinearChainFeatures` (unary scores X W, transition, start and
end scores). The generic path (:class:`~skstruct.optim.RegularizedRisk`) computes it as
a sparse product, a batched forward-backward that stores every marginal, indicator parts,
and a transposed product; here the same numbers come from two compiled passes over the
batch:

1. lanes (at most 8, runs of consecutive chunks of sequences with about equal numbers of
   stored entries, taken by the threads as they finish), each with its own copy of ∇_W;
   chunk after chunk (about equal token counts), the unary scores of the chunk's
   sequences are computed into the chunk's rows, their gold scores read from them, the
   rescaled forward-backward (``scaled_forward_backward_group``, the decoder's own
   dynamic program, four sequences in lockstep) turns them in place into
   G_t = ω_i (p_t − e_{ȳ_t}), the transition, start and end gradients are summed per
   chunk, and Xᵀ G of the chunk's tokens is added, in token order, to the lane's copy
   while G is in cache (G of the whole batch is never stored);
2. blocks of ∇_W: the lanes' copies summed in lane order, plus α W.

With ``pairs`` (the (feature, label) pairs seen in training), W is stored compactly: the
unary part of w holds, feature by feature, the weights of its seen labels only (sorted),
and the passes read and write only those (the compact branches of the scores and of
the scatter); the other pairs are not parameters at all.

With constraints (``allowed``, the masks of ``ChainDecoder(constraints=...)``), the
forbidden transition, start and end scores are -inf in the passes, as the decoder sets
them: zeros of the rescaled recursion, so no expected count reaches them, and their
weights get the gradient α w only. The passes then also record the range of the unary
scores, and hand back to the generic path wherever the decoder's "auto" would take log
space.

Every sum runs in an order that depends on the batch only, so the value and gradient are
the same on any number of threads. (Reading G by the columns of X instead, one row of
∇_W at a time with no copies, took twice as long: the rows of G it gathers are scattered
over 40 MB, where the lanes read G in order and their writes hit the rows of frequent
features, which stay in cache.)
"""

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from ..decoders._chain.decoder import CONSTRAINED_UNARY_SPREAD, _finite_spread
from ..decoders._chain.kernels import (
    BLOCK,
    GROUP,
    PAIR_STEPS,
    SCALED_RANGE_LIMIT,
    group_order,
    padded_width,
    scaled_forward_backward_group,
    scaled_pairwise,
)
from ..utils._parallel import chunk_count, dynamic_schedule, threads_for, token_chunks

__all__ = ["ChainCRFObjective"]

_NJIT = dict(cache=True, nogil=True)
# Fused multiply-adds only (see ``_chain.kernels``): the block sums stay in registers.
_CONTRACT = {"contract"}

#: Most lanes of the transposed product, and the most memory their copies of ∇_W take.
MAX_LANES = 8
LANE_MEMORY_LIMIT = 256 * 2**20

#: Entries of ∇_W per block when the lanes are summed.
ENTRIES_PER_BLOCK = 65536

#: In the compact layout, features with more seen labels than this get a dense row.
DENSE_ROW_LABELS = 4


class ChainCRFObjective:
    """Value and gradient of the regularized CRF objective of a chain batch.

    Parameters
    ----------
    X : scipy.sparse matrix of shape (n_tokens, n_features)
        Token features, stacked.
    offsets : ndarray of shape (n_sequences + 1,), int64
    y : ndarray of shape (n_tokens,), int
        Encoded gold labels.
    n_states : int
    weights : ndarray of shape (n_sequences,)
        Normalized example weights ω_i (summing to one).
    pairs : tuple (pair_offsets, pair_labels) or None, default=None
        The compact layout of W: feature ``f`` has the weights
        ``w[pair_offsets[f]:pair_offsets[f + 1]]``, of the labels
        ``pair_labels[pair_offsets[f]:pair_offsets[f + 1]]`` (increasing); its other labels
        score 0. ``pair_offsets`` has shape (n_features + 1,), ``pair_labels`` shape
        (n_pairs,). None: W is dense, (n_features, n_states) row by row.
    allowed : tuple (transition, start, end) of boolean ndarrays or None, default=None
        The parts the decoder allows (:class:`~skstruct.decoders.ChainConstraints`'
        masks, of shapes (n_states, n_states), (n_states,), (n_states,)): the others score
        -inf, exactly as in ``ChainDecoder(constraints=...)``. Their weights then get the
        gradient α w only (no labeling uses them). None: no constraints.

    Attributes
    ----------
    n_unary : int
        Entries of w that are unary weights: ``n_pairs``, or ``n_features * n_states``.
    n_params : int
        ``n_unary + n_states ** 2 + 2 * n_states``.

    Notes
    -----
    Works with the rescaled forward-backward only: :meth:`value_and_gradient` returns
    None when the transition or end scores spread more than ``SCALED_RANGE_LIMIT`` (or
    forbid a part), or when a sequence has no labeling of finite score, and the caller
    takes the generic path, which chooses log space or raises. With ``allowed``, the
    forbidden parts' -inf are exact zeros of the recursion, and the range is that of
    ``ChainDecoder``'s "auto" with constraints: the allowed transition and end scores
    spread at most ``SCALED_RANGE_LIMIT`` and the unary scores of the batch at most
    ``CONSTRAINED_UNARY_SPREAD``.

    Memory: up to ``MAX_LANES`` copies of the unary part of w (at most
    ``LANE_MEMORY_LIMIT`` bytes together), kept between evaluations, and per lane in
    flight the rows of one chunk of sequences, (tokens of the chunk, width) float64,
    width = ``n_states`` rounded up to a multiple of 8.
    """

    def __init__(self, X, offsets, y, n_states, weights, pairs=None, allowed=None):
        X = X.tocsr()
        if not X.has_canonical_format:
            X = X.copy()
            X.sum_duplicates()
        self.n_features = X.shape[1]
        self.n_states = s = int(n_states)
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        self.y = np.ascontiguousarray(y, dtype=np.int64)
        self.weights = np.ascontiguousarray(weights, dtype=np.float64)
        self.binary = bool(np.all(X.data == 1.0))
        n_tokens = X.shape[0]
        n_seq = self.offsets.shape[0] - 1
        self.bounds = token_chunks(self.offsets, chunk_count(n_tokens, n_seq))
        # its Python version: the compiled one (inlined into the kernels) is not
        # cached, and would compile in every new process for this call
        width = padded_width.py_func(s)
        self.compact = pairs is not None
        if self.compact:
            self.n_unary = int(pairs[0][-1])
            (X, self.split, self.stride, self.sparse_offsets, self.table_labels,
             self.positions, n_table) = _table_layout(X, pairs[0], pairs[1], width)
            self._table = np.zeros(n_table)
        else:
            # the table is w itself, rows of n_states
            self.n_unary = n_table = self.n_features * s
            self.split = np.ascontiguousarray(X.indptr[1:], dtype=np.int64)
            self.stride = s
            self.sparse_offsets = self.table_labels = self.positions = np.empty(0, np.int64)
        self.rows = _csr_arrays(X)
        n_chunks = self.bounds.shape[0] - 1
        n_lanes = max(1, min(MAX_LANES, n_chunks, LANE_MEMORY_LIMIT // max(1, 8 * n_table)))
        # lanes of about equal stored entries: runs of chunks
        self.lanes = token_chunks(self.rows[2][self.offsets[self.bounds]], n_lanes)
        self.blocks = np.linspace(0, self.n_unary,
                                  max(1, self.n_unary // ENTRIES_PER_BLOCK) + 1).astype(np.int64)
        self.width = width
        self._lane_grads = np.empty((self.lanes.shape[0] - 1, n_table))
        self._pair = np.empty((self.bounds.shape[0] - 1, width + 2, width))
        self._gold_transitions = _gold_transitions(self.y, self.offsets, s, self.weights)
        self.n_params = self.n_unary + s * s + 2 * s
        self._work = 3 * n_tokens * s * s
        self.constrained = allowed is not None
        if self.constrained:
            masks = [np.asarray(m, dtype=bool) for m in allowed]
            if [m.shape for m in masks] != [(s, s), (s,), (s,)]:
                raise ValueError(
                    f"allowed has masks of shapes {[m.shape for m in masks]}; expected "
                    f"[({s}, {s}), ({s},), ({s},)]."
                )
            # which entries of w[n_unary:] (transition, start, end) are allowed, and the
            # additive mask: 0 where allowed, -inf where forbidden
            self._allowed = np.concatenate([m.ravel() for m in masks])
            self._penalty = np.where(self._allowed, 0.0, -np.inf)
        # the unary scores' min and max per chunk (tracked with constraints only)
        self._unary_range = np.empty((self.bounds.shape[0] - 1, 2))

    def in_scaled_range(self, w):
        """Whether the rescaled forward-backward is exact at ``w`` (as the decoder's "auto"),
        as far as the pairwise scores tell: with constraints, the unary scores are checked
        in :meth:`value_and_gradient`, once computed."""
        s = self.n_states
        base = self.n_unary
        pairwise = (w[base:base + s * s], w[base + s * s + s:])
        if self.constrained:
            # the decoder's rule: the spread of the allowed (finite) scores; none allowed
            # is an infinite spread (every chain infeasible, which the generic path says)
            masked = self._pairwise(w)
            return max(_finite_spread(masked[:s * s]),
                       _finite_spread(masked[s * s + s:])) <= SCALED_RANGE_LIMIT
        return all(np.isfinite(x).all() and np.ptp(x) <= SCALED_RANGE_LIMIT
                   for x in pairwise)

    def _pairwise(self, w):
        """The transition, start and end scores (w[n_unary:]), forbidden ones -inf."""
        pairwise = w[self.n_unary:]
        return pairwise + self._penalty if self.constrained else pairwise

    def value_and_gradient(self, w, alpha):
        """F(w) and ∇F(w), or None outside the scaled regime (see the class notes).

        Parameters
        ----------
        w : ndarray of shape (n_params,)
        alpha : float
            L2 strength α.

        Returns
        -------
        values : ndarray of shape (n_sequences,)
            The losses ℓ_i(w) = log Z_i − θ_{ȳ_i}.
        value : float
            F(w) = Σ_i ω_i ℓ_i + (α/2) ‖w‖².
        gradient : ndarray of shape (n_params,)
        """
        if not self.in_scaled_range(w):
            return None
        w = np.ascontiguousarray(w, dtype=np.float64)
        grad = np.empty_like(w)
        values = np.empty(self.offsets.shape[0] - 1)
        with threads_for(self._work), dynamic_schedule():
            self._lane_pass(w, values)
            if not np.isfinite(values).all():
                return None
            if self.constrained and not (self._unary_range[:, 1].max()
                                         - self._unary_range[:, 0].min()
                                         <= CONSTRAINED_UNARY_SPREAD):
                return None  # the decoder's "auto" takes log space
            self._sum_lanes(w, float(alpha), grad)
        _pair_gradient(self._pair, self.width, self.n_states, self._gold_transitions,
                       w, self._pairwise(w), float(alpha), self.n_unary, grad)
        value = float(self.weights @ values) + 0.5 * alpha * float(w @ w)
        return values, value, grad

    # The passes, each on its own (for measurements); run under ``threads_for`` and
    # ``dynamic_schedule`` as in :meth:`value_and_gradient`.

    def _lane_pass(self, w, values):
        """Passes 1 and 2: the losses in ``values``, the pair sums, the lanes' Xᵀ G."""
        table = w
        if self.compact:
            table = self._table
            table[self.positions] = w[:self.n_unary]
        _lane_pass(*self.rows, self.split, self.binary, self.offsets, self.y, self.weights,
                   table, self.stride, self.sparse_offsets, self.table_labels,
                   np.ascontiguousarray(self._pairwise(w)), self.n_states, self.bounds,
                   self.lanes, self.width, values, self._pair, self.constrained,
                   self._unary_range, self._lane_grads)

    def _sum_lanes(self, w, alpha, grad):
        """Pass 3: the unary part of ``grad``."""
        if self.compact:
            _gather_lanes(self._lane_grads, self.positions, self.blocks, w, alpha, grad)
        else:
            _sum_lanes(self._lane_grads, self.blocks, w, alpha, grad)


def _csr_arrays(matrix):
    """(data, indices, indptr) of a CSR matrix, as float64, int32 or int64, int64."""
    indices = matrix.indices
    if indices.dtype not in (np.int32, np.int64):
        indices = indices.astype(np.int64)
    return (np.ascontiguousarray(matrix.data, dtype=np.float64),
            np.ascontiguousarray(indices),
            np.ascontiguousarray(matrix.indptr, dtype=np.int64))


def _table_layout(X, pair_offsets, pair_labels, width):
    """The table of the compact layout, and X with its columns renumbered to match.

    Features with more than ``DENSE_ROW_LABELS`` seen labels (the frequent ones) get a
    dense row of ``width`` entries, zero at their unseen labels, read and written by blocks
    of 8; the others keep their seen labels only, added one by one. The dense-row features
    come first in the new column order, so each token's stored entries split in two runs.

    Returns
    -------
    X : csr_matrix
        Columns renumbered (dense-row features first, each group in the old order),
        indices sorted.
    split : ndarray of shape (n_tokens,), int64
        Token t's dense-row entries are ``indptr[t]:split[t]``, the others
        ``split[t]:indptr[t + 1]``.
    stride : int
        ``width``: dense-row feature f (new numbering) is ``table[f * width:(f + 1) * width]``.
    sparse_offsets : ndarray of shape (n_features + 1,), int64
        Feature f (new numbering, not a dense row) is
        ``table[sparse_offsets[f]:sparse_offsets[f + 1]]``.
    table_labels : ndarray of shape (n_table,), int64
        The label of each table entry.
    positions : ndarray of shape (n_pairs,), int64
        The table entry of each unary parameter (w's compact order).
    n_table : int
    """
    n_features = pair_offsets.shape[0] - 1
    counts = np.diff(pair_offsets)
    dense = counts > DENSE_ROW_LABELS
    order = np.concatenate((np.flatnonzero(dense), np.flatnonzero(~dense)))
    new_of_old = np.empty(n_features, dtype=np.int64)
    new_of_old[order] = np.arange(n_features)
    n_dense = int(dense.sum())
    # table extent of each feature in the new order
    extent = np.where(dense[order], width, counts[order])
    sparse_offsets = np.concatenate(([0], np.cumsum(extent))).astype(np.int64)
    n_table = int(sparse_offsets[-1])
    # the table entry of every pair, in w's order (by old feature, then label)
    pair_feature = np.repeat(np.arange(n_features), counts)
    rank = np.arange(pair_labels.shape[0]) - pair_offsets[pair_feature]
    new = new_of_old[pair_feature]
    positions = np.where(dense[pair_feature], new * width + pair_labels,
                         sparse_offsets[new] + rank).astype(np.int64)
    table_labels = np.zeros(n_table, dtype=np.int64)
    table_labels[:n_dense * width] = np.tile(np.arange(width), n_dense)
    table_labels[positions] = pair_labels
    index_dtype = X.indices.dtype if n_features <= np.iinfo(np.int32).max else np.int64
    renumbered = sp.csr_matrix((X.data, new_of_old.astype(index_dtype)[X.indices],
                                X.indptr), shape=X.shape)
    renumbered.sort_indices()
    split = _dense_run_ends(renumbered.indices, renumbered.indptr, n_dense)
    return (renumbered, split, width, sparse_offsets, table_labels, positions, n_table)


@njit(**_NJIT)
def _dense_run_ends(indices, indptr, n_dense):
    """Per row of a CSR matrix with sorted indices, the end of its entries below
    ``n_dense``."""
    n_rows = indptr.shape[0] - 1
    split = np.empty(n_rows, dtype=np.int64)
    for t in range(n_rows):
        p = indptr[t]
        while p < indptr[t + 1] and indices[p] < n_dense:
            p += 1
        split[t] = p
    return split


def _gold_transitions(y, offsets, n_states, weights):
    """Σ_i ω_i (gold transition counts of sequence i), shape (n_states, n_states)."""
    s = n_states
    follows = np.ones(y.shape[0], dtype=bool)
    follows[offsets[:-1]] = False
    t = np.flatnonzero(follows)
    token_weight = np.repeat(weights, np.diff(offsets))
    counts = np.bincount(y[t - 1] * s + y[t], weights=token_weight[t], minlength=s * s)
    return counts.reshape(s, s)


def _pair_gradient(pair, width, n_states, gold, w, pairwise, alpha, base, grad):
    """The transition, start and end entries of ∇F (from ``w[base]`` on) from the chunks'
    sums, in chunk order (the first and last rows of G hold the gold indicators already).
    ``pairwise``: the scores the passes used (forbidden ones -inf, whose ``expo`` is 0)."""
    s = n_states
    total = pair[0].copy()
    for chunk in range(1, pair.shape[0]):
        total += pair[chunk]
    trans = pairwise[:s * s].reshape(s, s)
    top = trans.max()
    # the shift of ``scaled_pairwise`` (0 when no transition is allowed)
    expo = np.exp(trans - (top if np.isfinite(top) else 0.0))
    grad[base:base + s * s] = ((expo * total[:s, :s] - gold).ravel()
                               + alpha * w[base:base + s * s])
    grad[base + s * s:base + s * s + s] = total[width, :s] + alpha * w[base + s * s:base + s * s + s]
    grad[base + s * s + s:] = total[width + 1, :s] + alpha * w[base + s * s + s:]


@njit(inline="always")
def _unsigned(i):
    """``i`` as an unsigned index.

    numba wraps negative signed indices around (``a[-1]``), which costs a compare and a
    select per access and keeps the compiler from vectorizing a loop whose indices come
    from data (feature columns, table offsets); an unsigned index has no such branch.
    Every index below is known non-negative. Mixed signed and unsigned arithmetic gives
    floats in numba, so the index arithmetic stays unsigned throughout.
    """
    return np.uint64(i)


@njit(inline="always")
def _score_block(out, r, data, indices, lo, hi, binary, w, n_states, o):
    """out[r, o:o + BLOCK] = Σ_{lo <= p < hi} x_p W[indices[p], o:o + BLOCK], W read from
    the flat ``w`` with rows of ``n_states`` entries apart; eight named sums stay in
    registers. (Rows are passed by index, never as views: see the note on views in
    ``scaled_forward_backward_one``.)"""
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    stride, offset = _unsigned(n_states), _unsigned(o)
    one = _unsigned(1)
    for p in range(_unsigned(lo), _unsigned(hi)):
        x = 1.0 if binary else data[p]
        q = _unsigned(indices[p]) * stride + offset
        s0 += x * w[q]
        s1 += x * w[q + one]
        s2 += x * w[q + _unsigned(2)]
        s3 += x * w[q + _unsigned(3)]
        s4 += x * w[q + _unsigned(4)]
        s5 += x * w[q + _unsigned(5)]
        s6 += x * w[q + _unsigned(6)]
        s7 += x * w[q + _unsigned(7)]
    out[r, o], out[r, o + 1], out[r, o + 2], out[r, o + 3] = s0, s1, s2, s3
    out[r, o + 4], out[r, o + 5], out[r, o + 6], out[r, o + 7] = s4, s5, s6, s7


@njit(inline="always")
def _add_sparse(out, r, data, indices, lo, hi, binary, table, sparse_offsets, table_labels):
    """out[r, k] += Σ_{lo <= p < hi} x_p table[q] over the table entries q of feature
    indices[p], each of label table_labels[q] (the features without a dense row)."""
    for p in range(_unsigned(lo), _unsigned(hi)):
        x = 1.0 if binary else data[p]
        f = _unsigned(indices[p])
        for q in range(_unsigned(sparse_offsets[f]), _unsigned(sparse_offsets[f + _unsigned(1)])):
            out[r, _unsigned(table_labels[q])] += x * table[q]


@njit(parallel=True, fastmath=_CONTRACT, **_NJIT)
def _lane_pass(data, indices, indptr, split, binary, offsets, y, weights, table, stride,
               sparse_offsets, table_labels, pairwise, n_states, bounds, lanes, width,
               values, pair, track_range, unary_range, lane_grads):
    """Passes 1 and 2 by lanes: per chunk of sequences, the unary scores, the
    forward-backward and G = ω (p − e_ȳ) of its sequences, then Xᵀ G of its tokens added
    to its lane's copy of ∇_W.

    Parameters
    ----------
    data, indices, indptr : CSR arrays of X (n_tokens, n_features)
    split : ndarray of shape (n_tokens,)
        Token t's entries ``indptr[t]:split[t]`` are features with a dense row in
        ``table``, the others features with ``sparse_offsets``.
    binary : bool
        Every stored value is 1.0 (the products skip reading ``data``).
    offsets, y, weights
        As in :class:`ChainCRFObjective`.
    table : ndarray
        The unary weights as the passes read them: dense rows ``stride`` apart (feature
        f's at ``f * stride``), then the sparse features' entries (see
        ``_table_layout``). Without pairs, ``w`` itself with rows of ``n_states``.
    stride : int
    sparse_offsets, table_labels : ndarray
        The sparse features' table entries and their labels (empty without pairs).
    pairwise : ndarray of shape (n_states ** 2 + 2 * n_states,)
        The transition (row-major), start and end scores, -inf where forbidden.
    bounds : ndarray of shape (n_chunks + 1,)
        Chunks of sequences (``token_chunks``).
    lanes : ndarray of shape (n_lanes + 1,)
        Lane ``l`` holds chunks ``lanes[l]:lanes[l + 1]``, one lane per parallel
        iteration.
    width : int
        ``n_states`` rounded up to a multiple of ``BLOCK``.
    values : ndarray of shape (n_sequences,)
        Output: log Z_i − θ_{ȳ_i} (-inf or NaN flags a sequence the scaled recursion
        cannot handle).
    pair : ndarray of shape (n_chunks, width + 2, width)
        Output per chunk: rows 0..width-1 the transition sums to multiply by ``expo``,
        row ``width`` Σ G of first tokens, row ``width + 1`` Σ G of last tokens.
    track_range : bool
        Whether to write ``unary_range``.
    unary_range : ndarray of shape (n_chunks, 2)
        Output with ``track_range``: the least and greatest unary score (X_t W) of each
        chunk.
    lane_grads : ndarray of shape (n_lanes, n_table)
        Output: Σ_{t in lane l} x_tᵀ G_t (in token order), laid out like the table.

    Notes
    -----
    G lives only in the chunk's rows (a chunk's tokens by ``width``), read back by the
    scatter while it is in cache: no (n_tokens, width) buffer.
    """
    s = n_states
    n_blocks = width // BLOCK
    trans = pairwise[:s * s].reshape((s, s))
    start = pairwise[s * s:s * s + s]
    end = pairwise[s * s + s:s * s + 2 * s]
    expo, expo_t, start_padded, exp_end, trans_max, end_max = scaled_pairwise(
        trans, start, end, width)
    stride_u = _unsigned(stride)
    one = _unsigned(1)
    for lane in prange(lanes.shape[0] - 1):
        out = lane_grads[lane]
        for i in range(out.shape[0]):
            out[i] = 0.0
        first_chunk, stop_chunk = lanes[lane], lanes[lane + 1]
        most = 1
        longest = 1
        for chunk in range(first_chunk, stop_chunk):
            most = max(most, offsets[bounds[chunk + 1]] - offsets[bounds[chunk]])
            for seq in range(bounds[chunk], bounds[chunk + 1]):
                longest = max(longest, offsets[seq + 1] - offsets[seq])
        rows = np.empty((most, width))
        alpha = np.empty((longest, GROUP, width))
        norm = np.empty((longest, GROUP))
        beta = np.empty((1, GROUP, width))
        weight = np.empty((PAIR_STEPS, GROUP, width))
        firsts = np.empty(GROUP, dtype=np.int64)
        lengths = np.empty(GROUP, dtype=np.int64)
        scales = np.empty(GROUP)
        golds = np.empty(GROUP)
        log_z = np.empty(GROUP)
        work = np.empty((2, GROUP))
        steps = np.empty(PAIR_STEPS, dtype=np.int64)
        for chunk in range(first_chunk, stop_chunk):
            first_seq, stop_seq = bounds[chunk], bounds[chunk + 1]
            base = offsets[first_seq]
            stop = offsets[stop_seq]
            labels = y[base:stop]
            acc = pair[chunk:chunk + 1]
            for i in range(acc.shape[1]):
                for j in range(width):
                    acc[0, i, j] = 0.0
            low, high = np.inf, -np.inf
            order = group_order(offsets, first_seq, stop_seq)
            for head in range(0, order.shape[0], GROUP):
                n_group = min(GROUP, order.shape[0] - head)
                for g in range(n_group):
                    seq = order[head + g]
                    a, b = offsets[seq], offsets[seq + 1]
                    # unary scores X_t W, dense rows read by whole blocks: the reads past
                    # a row of w stay inside w (the pair parameters follow) and land in
                    # the padding, reset below
                    for t in range(a, b):
                        r = t - base
                        for block in range(n_blocks):
                            _score_block(rows, r, data, indices, indptr[t], split[t], binary,
                                         table, stride, block * BLOCK)
                        _add_sparse(rows, r, data, indices, split[t], indptr[t + 1], binary,
                                    table, sparse_offsets, table_labels)
                        for j in range(s, width):
                            rows[r, j] = -np.inf
                        if track_range:
                            for j in range(s):
                                low = min(low, rows[r, j])
                                high = max(high, rows[r, j])
                    gold = start[y[a]] + end[y[b - 1]] + rows[a - base, y[a]]
                    for t in range(a + 1, b):
                        gold += rows[t - base, y[t]] + trans[y[t - 1], y[t]]
                    golds[g] = gold
                    firsts[g] = a - base
                    lengths[g] = b - a
                    scales[g] = weights[seq]
                scaled_forward_backward_group(
                    rows, firsts, lengths, n_group, s, expo, expo_t, start_padded, exp_end,
                    trans_max, end_max, alpha, norm, beta, weight, labels, scales, acc, True,
                    True, log_z, work, steps)
                for g in range(n_group):
                    seq = order[head + g]
                    a, b = offsets[seq], offsets[seq + 1]
                    values[seq] = log_z[g] - golds[g]
                    for j in range(width):
                        acc[0, width, j] += rows[a - base, j]
                        acc[0, width + 1, j] += rows[b - 1 - base, j]
            if track_range:
                unary_range[chunk, 0] = low
                unary_range[chunk, 1] = high
            # Xᵀ G of the chunk's tokens, in token order
            for t in range(_unsigned(base), _unsigned(stop)):
                r = t - _unsigned(base)
                # whole rows of ``stride`` entries (width in the compact layout, whose
                # padding columns of G are 0; n_states otherwise)
                for p in range(_unsigned(indptr[t]), _unsigned(split[t])):
                    x = 1.0 if binary else data[p]
                    o = _unsigned(indices[p]) * stride_u
                    for j in range(stride_u):
                        out[o + j] += x * rows[r, j]
                for p in range(_unsigned(split[t]), _unsigned(indptr[t + one])):
                    x = 1.0 if binary else data[p]
                    f = _unsigned(indices[p])
                    for q in range(_unsigned(sparse_offsets[f]),
                                   _unsigned(sparse_offsets[f + one])):
                        out[q] += x * rows[r, _unsigned(table_labels[q])]


@njit(parallel=True, **_NJIT)
def _sum_lanes(lane_grads, blocks, w, alpha, grad):
    """Pass 3: grad[:n] = Σ_l lane_grads[l] (in lane order) + α w[:n], by blocks."""
    n_lanes = lane_grads.shape[0]
    for block in prange(blocks.shape[0] - 1):
        for i in range(blocks[block], blocks[block + 1]):
            v = lane_grads[0, i]
            for lane in range(1, n_lanes):
                v += lane_grads[lane, i]
            grad[i] = v + alpha * w[i]


@njit(parallel=True, **_NJIT)
def _gather_lanes(lane_grads, positions, blocks, w, alpha, grad):
    """Pass 3 of the compact layout: grad[i] = Σ_l lane_grads[l, positions[i]] (in lane
    order) + α w[i] for the unary parameters i, by blocks."""
    n_lanes = lane_grads.shape[0]
    for block in prange(blocks.shape[0] - 1):
        for i in range(blocks[block], blocks[block + 1]):
            q = positions[i]
            v = lane_grads[0, q]
            for lane in range(1, n_lanes):
                v += lane_grads[lane, q]
            grad[i] = v + alpha * w[i]
