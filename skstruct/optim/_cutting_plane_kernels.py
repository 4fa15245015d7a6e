"""The cutting plane's most violated constraint in one compiled pass over the examples.

For every example i (in parallel over chunks of examples, taken one at a time by the
threads under :func:`~skstruct.utils._parallel.dynamic_schedule`): its part scores η_i = A_i w,
the loss-augmented output ŷ_i from the decoder's compiled oracle (or the best of its
cached outputs), Δ_i, the hinge term

    h_i = Δ_i + ⟨a_ŷ − a_{y_i}, η_i⟩            (margin rescaling)
    h_i = Δ_i (1 + ⟨a_ŷ − a_{y_i}, η_i⟩)        (slack rescaling)

and, when h_i > 0, the example's share of the one-slack plane

    ψ̄ += c_i A_iᵀ (a_{y_i} − a_ŷ),   c_i = ω_i (margin) or ω_i Δ_i (slack),

added through the nonzero entries of a_ŷ − a_{y_i} only (rows where ŷ agrees with the
gold output contribute nothing), in example order after the parallel part, so that the
plane is the same for every number of threads. The feature map and the oracle come in the engine's
compiled forms (:class:`~skstruct.features.CompiledFeatures`,
:class:`~skstruct.decoders._core.engine_protocol.CompiledOracle`) and the per-example pieces
are the engine's (:mod:`skstruct.optim._engine_kernels`).
"""

import numpy as np
from numba import njit, prange

from ..utils._chunks import n_work_chunks
from ..utils._parallel import token_chunks
from ._engine_kernels import (
    _buffers,
    _call_oracle,
    _direction,
    _inner,
    _score,
    _sparse_update,
)

__all__ = ["cache_add", "constraint_pass", "example_chunks"]

#: Fewest chunks of examples of a pass (when there are as many examples).
MIN_CHUNKS = 64

_NJIT = dict(cache=True, nogil=True)


@njit(parallel=True, **_NJIT)
def constraint_pass(feats, orc, W, b, pair, weights, use_cache, cache_y, cache_delta,
                    cache_filled, yhat_out, delta_out, term_out, plane_W, plane_b,
                    plane_pair, bounds):
    """The most violated one-slack constraint at w = (W, b, pair).

    Parameters
    ----------
    feats : CompiledFeatures
    orc : CompiledOracle
        With margin or slack rescaling.
    W, b, pair : ndarray
        The blocks of the engine's w (see :meth:`CompiledProblem.to_engine
        <skstruct.optim._engine.CompiledProblem.to_engine>`).
    weights : ndarray of shape (n_examples,)
        ω_i.
    use_cache : bool
        Take each example's best cached output instead of calling the oracle.
    cache_y : ndarray of shape (n_slots, n_outputs), int64
        Cached outputs, stacked like ``orc.y``, one row per slot.
    cache_delta : ndarray of shape (n_slots, n_examples)
        Their task losses.
    cache_filled : ndarray of shape (n_slots, n_examples), bool
        Which slots hold an output of each example.
    yhat_out : ndarray of shape (n_outputs,), int64
        Output: the chosen ŷ_i, stacked.
    delta_out, term_out : ndarray of shape (n_examples,)
        Output: Δ_i and h_i.
    plane_W, plane_b, plane_pair : ndarray
        Output: the blocks of the plane ψ̄ (overwritten), in the engine's order.
    bounds : ndarray of shape (n_chunks + 1,), int64
        Contiguous chunks of examples scored and decoded in parallel, one per parallel
        iteration; the results do not depend on them.
    """
    slack = orc.rescaling == 2
    # the one parallel loop (the plane is summed after it, in example order): no
    # whole-array expression, which the dynamic schedule would cut into elements
    for chunk in prange(bounds.shape[0] - 1):
        first, last = bounds[chunk], bounds[chunk + 1]
        unary, d_unary, pair_scores, d_pair, yhat, local = _chunk_buffers(feats, orc, first,
                                                                          last)
        for i in range(first, last):
            n_rows = _score(feats, W, b, pair, 1.0, i, unary, pair_scores, local)
            ya, yb = orc.y_offsets[i], orc.y_offsets[i + 1]
            best, best_slot = -np.inf, -1
            if use_cache:
                for slot in range(cache_y.shape[0]):
                    if not cache_filled[slot, i]:
                        continue
                    _direction(orc, i, n_rows, cache_y[slot, ya:yb], 1.0, d_unary, d_pair)
                    margin = _inner(unary, pair_scores, d_unary, d_pair, n_rows)
                    delta = cache_delta[slot, i]
                    term = delta * (1.0 + margin) if slack else delta + margin
                    if term > best:
                        best, best_slot = term, slot
            if use_cache and best_slot >= 0:
                for t in range(yb - ya):
                    yhat[t] = cache_y[best_slot, ya + t]
                delta = cache_delta[best_slot, i]
            else:
                delta = _call_oracle(feats, orc, i, unary, pair_scores, n_rows, yhat)
            _direction(orc, i, n_rows, yhat, 1.0, d_unary, d_pair)
            margin = _inner(unary, pair_scores, d_unary, d_pair, n_rows)
            for t in range(yb - ya):
                yhat_out[ya + t] = yhat[t]
            delta_out[i] = delta
            term_out[i] = delta * (1.0 + margin) if slack else delta + margin
    # The plane is summed in example order, one example after the other, so that it does
    # not depend on the number of threads (it only visits the rows where ŷ differs).
    _plane(feats, orc, weights, slack, yhat_out, delta_out, term_out, plane_W, plane_b,
           plane_pair)


@njit(**_NJIT)
def _chunk_buffers(feats, orc, first, last):
    """The engine's per-example buffers (``_buffers``, ``_local_buffer``), sized for the
    examples ``first:last`` only (finding the longest of all examples in every chunk
    would cost a pass over the batch per chunk)."""
    longest = 1
    longest_columns = 0
    offsets = feats.column_offsets
    for i in range(first, last):
        longest = max(longest, feats.row_offsets[i + 1] - feats.row_offsets[i])
        if offsets.shape[0] > i + 1:
            longest_columns = max(longest_columns, offsets[i + 1] - offsets[i])
    unary = np.empty((longest, feats.n_unary))
    d_unary = np.empty((longest, feats.n_unary))
    pair_scores = np.empty(feats.n_pair)
    d_pair = np.empty(feats.n_pair)
    yhat = np.zeros(max(orc.max_output, 1), dtype=np.int64)
    return unary, d_unary, pair_scores, d_pair, yhat, np.empty(longest_columns)


def example_chunks(features):
    """Chunks of examples for :func:`constraint_pass`: about ``WORK_PER_CHUNK`` of
    scoring each (K multiply-adds per stored entry and K² per row, K = ``n_unary``), and
    at least ``MIN_CHUNKS`` when there are as many examples, since an oracle can cost
    far more than the scoring. They depend on the batch only."""
    rows = features.row_offsets
    entries = features.indptr[rows].astype(np.int64)
    k = max(1, int(features.n_unary))
    work = k * ((entries - entries[0]) + k * (rows - rows[0]))
    n_examples = rows.shape[0] - 1
    n_chunks = max(n_work_chunks(work[-1], n_examples), min(n_examples, MIN_CHUNKS))
    return token_chunks(work, n_chunks)


@njit(**_NJIT)
def _plane(feats, orc, weights, slack, yhat_out, delta_out, term_out, plane_W, plane_b,
           plane_pair):
    """ψ̄ = Σ_{i: h_i > 0} c_i A_iᵀ (a_{y_i} − a_ŷ), in example order."""
    unary, d_unary, pair_scores, d_pair, yhat = _buffers(feats, orc)
    n_unary = feats.n_unary
    nz_k = np.empty(n_unary, dtype=np.int64)
    nz_g = np.empty(n_unary)
    colsum = np.empty(n_unary)
    plane_W[:] = 0.0
    plane_b[:] = 0.0
    plane_pair[:] = 0.0
    for i in range(feats.row_offsets.shape[0] - 1):
        if not term_out[i] > 0:
            continue
        n_rows = feats.row_offsets[i + 1] - feats.row_offsets[i]
        ya, yb = orc.y_offsets[i], orc.y_offsets[i + 1]
        _direction(orc, i, n_rows, yhat_out[ya:yb], 1.0, d_unary, d_pair)
        c = weights[i] * delta_out[i] if slack else weights[i]
        _sparse_update(feats, i, n_rows, d_unary, d_pair, -c, plane_W, plane_b, plane_pair,
                       0.0, plane_W, plane_b, plane_pair, nz_k, nz_g, colsum)


@njit(**_NJIT)
def cache_add(cache_y, cache_delta, cache_filled, next_slot, yhat, delta, y_offsets):
    """Store each example's output ``yhat`` (and Δ) in its next slot, unless cached.

    Slots are used in turn per example, so the cache keeps the most recent distinct
    outputs.
    """
    n_slots = cache_y.shape[0]
    for i in range(y_offsets.shape[0] - 1):
        ya, yb = y_offsets[i], y_offsets[i + 1]
        seen = False
        for slot in range(n_slots):
            if not cache_filled[slot, i]:
                continue
            same = True
            for t in range(ya, yb):
                if cache_y[slot, t] != yhat[t]:
                    same = False
                    break
            if same:
                seen = True
                break
        if seen:
            continue
        slot = next_slot[i]
        cache_y[slot, ya:yb] = yhat[ya:yb]
        cache_delta[slot, i] = delta[i]
        cache_filled[slot, i] = True
        next_slot[i] = (slot + 1) % n_slots
