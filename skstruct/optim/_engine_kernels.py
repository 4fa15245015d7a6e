"""Compiled passes of the incremental solvers over any linear feature map and oracle.

Every kernel reads the feature rows of an example from the CSR arrays of a
:class:`~skstruct.features.CompiledFeatures` (``feats``) and asks the decoder's oracle
for its output through the dispatchers of :mod:`skstruct.decoders._engine.dispatch` (``orc`` is a
:class:`~skstruct.decoders._core.engine_protocol.CompiledOracle`). w is passed as views of its
blocks, ``W`` (n_features, K), ``b`` (K, or empty) and ``pair`` (n_pair,), so that updates
write into w itself. W is the engine's: when the features have a column dictionary, its rows
are in ``feats.column_order`` (frequent columns first) and every kernel reads and writes
it through the dictionary; :class:`~skstruct.optim._engine.CompiledProblem` maps w to
and from that order.

One step on example i:

* scores: unary[r, k] = Σ_j X[r, j] W[j, k] (+ b[k]) for its rows r (a CSR row times W,
  K contiguous values per stored entry), pair = the pair parameters;
* the oracle's output ŷ and Δ, then a part-space direction g from ``add_parts``;
* the update s A_iᵀ g: W[j, k] += s X[r, j] g[r, k], b += s Σ_r g[r], pair += s g_pair.
  Indicator directions (perceptron, subgradient) touch only the nonzero (r, k) entries;
  BCFW needs ‖A_iᵀ g‖² first, so it gathers A_iᵀ g in a compact scratch: each column
  touched by the example gets the next row of the scratch (``slot`` maps columns to
  rows, −1 when untouched), so that the sums, the norm and the update read the scratch
  sequentially; the slots are reset afterwards.

Buffers are allocated once per pass, never per example.
"""

import numpy as np
from numba import njit, prange

from ..decoders._engine.dispatch import add_parts, oracle

__all__ = ["bcfw_pass", "hinge_values", "perceptron_pass", "score_example",
           "subgradient_pass"]

_NJIT = dict(cache=True, nogil=True)


@njit(**_NJIT)
def _row_dot(data, indices, start, stop, W, binary):
    """Σ_p x_p W[j_p, 0] over the stored entries ``start:stop`` of a row (K = 1).

    Summed in the order of the general loop (from 0.0, one entry at a time), so the value
    is the same; ``binary`` skips reading x_p = 1.0.
    """
    total = 0.0
    if binary:
        for p in range(start, stop):
            total += W[indices[p], 0]
    else:
        for p in range(start, stop):
            total += data[p] * W[indices[p], 0]
    return total


@njit(**_NJIT)
def score_example(feats, W, b, pair, scale, i, unary, pair_scores):
    """Part scores of example ``i`` at w = ``scale`` (W, b, pair), from the plain CSR
    rows (W in column order; the engine's kernels score through :func:`_score`).

    Parameters
    ----------
    feats : CompiledFeatures
    W, b, pair : ndarray
        The blocks of w (``b`` empty without a bias).
    scale : float
    i : int
    unary : ndarray of shape (>= n_rows_i, K)
        Output, rows ``:n_rows_i``.
    pair_scores : ndarray of shape (n_pair,)
        Output.

    Returns
    -------
    int
        n_rows_i.
    """
    a = feats.row_offsets[i]
    n_rows = feats.row_offsets[i + 1] - a
    n_unary = unary.shape[1]
    data, indices, indptr = feats.data, feats.indices, feats.indptr
    for r in range(n_rows):
        row = unary[r]
        if n_unary == 1:
            row[0] = _row_dot(data, indices, indptr[a + r], indptr[a + r + 1], W,
                              feats.binary)
        else:
            for k in range(n_unary):
                row[k] = 0.0
            for p in range(indptr[a + r], indptr[a + r + 1]):
                x = 1.0 if feats.binary else data[p]
                f = indices[p]
                for k in range(n_unary):
                    row[k] += x * W[f, k]
        if scale != 1.0:
            for k in range(n_unary):
                row[k] *= scale
        if feats.has_bias:
            for k in range(n_unary):
                row[k] += scale * b[k]
    for j in range(pair.shape[0]):
        pair_scores[j] = scale * pair[j]
    return n_rows


@njit(**_NJIT)
def _score(feats, W, b, pair, scale, i, unary, pair_scores, local):
    """Part scores of example ``i`` at w = ``scale`` (W, b, pair), W the engine's (rows
    in ``feats.column_order`` when the features have a column dictionary).

    Through the dictionary, ``local`` (>= the most distinct columns of an example,)
    receives W[j, 0] once per distinct engine row j of the example; every row then sums
    reads of ``local`` in the order of its stored entries, so the scores equal those of
    :func:`score_example` on W in column order. Without one, this is
    :func:`score_example`.
    """
    if feats.local_slots.shape[0] == 0:
        return score_example(feats, W, b, pair, scale, i, unary, pair_scores)
    a = feats.row_offsets[i]
    n_rows = feats.row_offsets[i + 1] - a
    columns = feats.local_columns
    c0 = feats.column_offsets[i]
    for q in range(feats.column_offsets[i + 1] - c0):
        local[q] = W[columns[c0 + q], 0]
    data, slots, indptr = feats.data, feats.local_slots, feats.indptr
    binary = feats.binary
    for r in range(n_rows):
        total = 0.0
        if binary:
            for p in range(indptr[a + r], indptr[a + r + 1]):
                total += local[slots[p]]
        else:
            for p in range(indptr[a + r], indptr[a + r + 1]):
                total += data[p] * local[slots[p]]
        if scale != 1.0:
            total *= scale
        if feats.has_bias:
            total += scale * b[0]
        unary[r, 0] = total
    for j in range(pair.shape[0]):
        pair_scores[j] = scale * pair[j]
    return n_rows


@njit(**_NJIT)
def _local_buffer(feats):
    """A buffer for the most distinct columns of an example (empty without a
    dictionary)."""
    longest = 0
    offsets = feats.column_offsets
    for i in range(offsets.shape[0] - 1):
        longest = max(longest, offsets[i + 1] - offsets[i])
    return np.empty(longest)


@njit(**_NJIT)
def _direction(orc, i, n_rows, yhat, hat_scale, d_unary, d_pair):
    """d = hat_scale a_ŷ − a_{y_i} in the part buffers (rows ``:n_rows``)."""
    d_unary[:n_rows] = 0.0
    d_pair[:] = 0.0
    ya, yb = orc.y_offsets[i], orc.y_offsets[i + 1]
    add_parts(orc.code, yhat[:yb - ya], hat_scale, d_unary[:n_rows], d_pair, orc.ints)
    add_parts(orc.code, orc.y[ya:yb], -1.0, d_unary[:n_rows], d_pair, orc.ints)


@njit(**_NJIT)
def _call_oracle(feats, orc, i, unary, pair_scores, n_rows, yhat):
    """ŷ of example i into ``yhat``; returns Δ(y_i, ŷ)."""
    ya, yb = orc.y_offsets[i], orc.y_offsets[i + 1]
    start = feats.row_offsets[i] if orc.costs.shape[0] > 0 else 0
    stop = start + n_rows if orc.costs.shape[0] > 0 else 0
    return oracle(orc.code, orc.rescaling, unary[:n_rows], pair_scores, orc.y[ya:yb],
                  orc.costs[start:stop], orc.ints, orc.floats, yhat)


@njit(**_NJIT)
def _inner(unary, pair_scores, d_unary, d_pair, n_rows):
    """⟨d, η⟩ over the example's rows and the pair scores."""
    total = 0.0
    for r in range(n_rows):
        for k in range(unary.shape[1]):
            total += d_unary[r, k] * unary[r, k]
    for j in range(pair_scores.shape[0]):
        total += d_pair[j] * pair_scores[j]
    return total


@njit(**_NJIT)
def _sparse_update(feats, i, n_rows, d_unary, d_pair, scale, W, b, pair, weight,
                   acc_W, acc_b, acc_pair, nz_k, nz_g, colsum):
    """W += scale A_iᵀ d and, when ``weight`` is nonzero, acc += weight scale A_iᵀ d.

    Only the nonzero entries of d's rows are visited (indicator directions have at most a
    few per row). With a column dictionary, W and acc are the engine's (rows in
    ``feats.column_order``) and the columns are read through it.
    """
    a = feats.row_offsets[i]
    data, indices, indptr = feats.data, feats.indices, feats.indptr
    n_unary = d_unary.shape[1]
    colsum[:] = 0.0
    local_form = feats.local_slots.shape[0] > 0
    c0 = feats.column_offsets[i] if local_form else 0
    binary = feats.binary  # x = 1.0: scale * x == scale, the same products
    for r in range(n_rows):
        if local_form:
            g = d_unary[r, 0]
            colsum[0] += g
            if g == 0.0:
                continue
            for p in range(indptr[a + r], indptr[a + r + 1]):
                x = scale if binary else scale * data[p]
                f = feats.local_columns[c0 + feats.local_slots[p]]
                W[f, 0] += x * g
                if weight != 0.0:
                    acc_W[f, 0] += weight * (x * g)
            continue
        count = 0
        for k in range(n_unary):
            g = d_unary[r, k]
            if g != 0.0:
                nz_k[count] = k
                nz_g[count] = g
                count += 1
                colsum[k] += g
        if count == 0:
            continue
        for p in range(indptr[a + r], indptr[a + r + 1]):
            x = scale if binary else scale * data[p]
            f = indices[p]
            for c in range(count):
                W[f, nz_k[c]] += x * nz_g[c]
            if weight != 0.0:
                for c in range(count):
                    acc_W[f, nz_k[c]] += weight * (x * nz_g[c])
    if feats.has_bias:
        for k in range(n_unary):
            b[k] += scale * colsum[k]
            if weight != 0.0:
                acc_b[k] += weight * (scale * colsum[k])
    for j in range(pair.shape[0]):
        if d_pair[j] != 0.0:
            pair[j] += scale * d_pair[j]
            if weight != 0.0:
                acc_pair[j] += weight * (scale * d_pair[j])


@njit(**_NJIT)
def _buffers(feats, orc):
    n_unary = feats.n_unary
    longest = 1
    for i in range(feats.row_offsets.shape[0] - 1):
        longest = max(longest, feats.row_offsets[i + 1] - feats.row_offsets[i])
    unary = np.empty((longest, n_unary))
    d_unary = np.empty((longest, n_unary))
    pair_scores = np.empty(feats.n_pair)
    d_pair = np.empty(feats.n_pair)
    yhat = np.zeros(max(orc.max_output, 1), dtype=np.int64)
    return unary, d_unary, pair_scores, d_pair, yhat


@njit(**_NJIT)
def perceptron_pass(feats, orc, W, b, pair, acc_W, acc_b, acc_pair, scales, order, step,
                    averaging):
    """One pass of the (averaged) structured perceptron over ``order``.

    w ← w − s_i A_iᵀ(a_ŷ − a_{y_i}) when the MAP ŷ differs from y_i in a unary part
    (s_i = n ω_i); with averaging, acc += t Δw_t at step t, so that the average of the
    iterates w_0 .. w_T is w_T − acc / (T + 1).

    Returns
    -------
    step : int
        Steps taken after the pass.
    mistakes : int
    """
    unary, d_unary, pair_scores, d_pair, yhat = _buffers(feats, orc)
    n_unary = feats.n_unary
    nz_k = np.empty(n_unary, dtype=np.int64)
    nz_g = np.empty(n_unary)
    colsum = np.empty(n_unary)
    local = _local_buffer(feats)
    mistakes = 0
    for i in order:
        n_rows = _score(feats, W, b, pair, 1.0, i, unary, pair_scores, local)
        _call_oracle(feats, orc, i, unary, pair_scores, n_rows, yhat)
        _direction(orc, i, n_rows, yhat, 1.0, d_unary, d_pair)
        step += 1
        wrong = False
        for r in range(n_rows):
            for k in range(n_unary):
                if d_unary[r, k] != 0.0:
                    wrong = True
        if wrong:
            mistakes += 1
            _sparse_update(feats, i, n_rows, d_unary, d_pair, -scales[i], W, b, pair,
                           float(step) if averaging else 0.0, acc_W, acc_b, acc_pair,
                           nz_k, nz_g, colsum)
    return step, mistakes


@njit(**_NJIT)
def subgradient_pass(feats, orc, W, b, pair, state, avg_W, avg_b, avg_pair, scales, lam,
                     order, step, first_step, averaging):
    """One pass of stochastic subgradient descent with Pegasos steps, in O(nnz) per step.

    The iterate is kept as w = a v (``state[0]`` = a, v in W, b, pair), so the shrink
    w ← (1 − η_t λ) w is a scalar update. The t-weighted average
    w̄_k = (1 − ρ_k) w̄_{k−1} + ρ_k w_k, ρ_k = 2 / (k + 2), is kept as
    w̄ = α u + β v (``state[1]`` = α, ``state[2]`` = β, u in avg_*): with δ the change
    of v at step k, α ← (1 − ρ) α, u ← u − (β / α_old) δ, β ← (1 − ρ) β + ρ a.

    Each step: η_t = 1 / (λ (t + 2)); ŷ from the oracle at w; g = a_ŷ − a_{y_i} (times
    Δ, or 0 when Δ (1 + θ_ŷ − θ_{y_i}) ≤ 0, under slack rescaling); w ← (1 − η_t λ) w −
    η_t s_i A_iᵀ g with s_i = n ω_i.

    Returns
    -------
    int
        Steps taken after the pass.
    """
    unary, d_unary, pair_scores, d_pair, yhat = _buffers(feats, orc)
    n_unary = feats.n_unary
    nz_k = np.empty(n_unary, dtype=np.int64)
    nz_g = np.empty(n_unary)
    colsum = np.empty(n_unary)
    local = _local_buffer(feats)
    for i in order:
        a = state[0]
        n_rows = _score(feats, W, b, pair, a, i, unary, pair_scores, local)
        delta = _call_oracle(feats, orc, i, unary, pair_scores, n_rows, yhat)
        _direction(orc, i, n_rows, yhat, 1.0, d_unary, d_pair)
        weight = 1.0
        if orc.rescaling == 2:
            margin = _inner(unary, pair_scores, d_unary, d_pair, n_rows)
            weight = delta if delta * (1.0 + margin) > 0 else 0.0
        eta = 1.0 / (lam * (step + 2))
        a *= 1.0 - eta * lam
        state[0] = a
        coefficient = eta * scales[i]
        step += 1
        if averaging:
            rho = 2.0 / (step - first_step + 2)
            ratio = state[2] / state[1]
            state[1] *= 1.0 - rho
            state[2] = (1.0 - rho) * state[2] + rho * a
        else:
            ratio = 0.0
        if weight != 0.0:
            # v += scale A_iᵀ g, u −= ratio · (that change)
            _sparse_update(feats, i, n_rows, d_unary, d_pair, -coefficient * weight / a, W,
                           b, pair, -ratio, avg_W, avg_b, avg_pair, nz_k, nz_g, colsum)
    return step


@njit(**_NJIT)
def _gather_row(data, indices, start, stop, g, binary, scratch, slot, touched_list,
                n_touched):
    """scratch[slot[j_p], 0] += x_p g over the stored entries ``start:stop`` of a row
    (K = 1), giving newly touched columns the next slot (its scratch row zeroed); returns
    the new count. ``binary`` skips reading x_p = 1.0 (x g = g exactly)."""
    for p in range(start, stop):
        f = indices[p]
        t = slot[f]
        if t < 0:
            t = n_touched
            slot[f] = t
            touched_list[t] = f
            scratch[t, 0] = 0.0
            n_touched += 1
        if binary:
            scratch[t, 0] += g
        else:
            scratch[t, 0] += data[p] * g
    return n_touched


@njit(**_NJIT)
def _gather_row_local(data, slots, start, stop, g, binary, values, seen, touched,
                      n_touched):
    """The column dictionary's form of :func:`_gather_row`: values[q] += x_p g for the
    local slot q of every stored entry ``start:stop``, ``touched`` listing the slots in
    order of first touch (``seen[q]`` is 0 while q is untouched; ``values[q]`` is set on
    first touch). The first touches come in the same order as :func:`_gather_row`'s, so the
    norm and the update sum the same numbers in the same order."""
    for p in range(start, stop):
        q = slots[p]
        if seen[q] == 0:
            seen[q] = 1
            touched[n_touched] = q
            values[q] = 0.0
            n_touched += 1
        if binary:
            values[q] += g
        else:
            values[q] += data[p] * g
    return n_touched


@njit(**_NJIT)
def bcfw_pass(feats, orc, W, b, pair, lazy_W, lazy_b, lazy_pair, dual_unary, dual_pair,
              ell, sums, omega, lam, order, step, averaging, scratch, slot, touched_list):
    """One pass of block-coordinate Frank–Wolfe (margin rescaling) over ``order``.

    The duals of block i live in part space: c_i (its rows of ``dual_unary`` and
    ``dual_pair[i]``), w = Σ_i (ω_i / λ) A_iᵀ c_i. One step: ŷ = loss-augmented MAP,
    d = c_i − (a_{y_i} − a_ŷ), γ = clip([ω_i ⟨d, η_i⟩ − ℓ_i + ω_i Δ] / [(ω_i² / λ)
    ‖A_iᵀ d‖²], 0, 1), w ← w − γ (ω_i / λ) A_iᵀ d, c_i ← c_i − γ d,
    ℓ_i ← ℓ_i + γ (ω_i Δ − ℓ_i). The average w̄ = w − B / T_k, T_k = (k + 1)(k + 2) / 2,
    keeps B ← B − T_k Δw lazily; ``sums`` holds Σ_i ℓ_i, its running average and, in
    ``sums[2]``, the block gaps g_i = ω_i ⟨d, η_i⟩ − ℓ_i + ω_i Δ (the numerator of γ)
    added up over the steps of the pass (each at the w of its step; the caller resets it).

    ``scratch`` (n_features, K) holds A_iᵀ d compactly, row t for the column
    ``touched_list[t]``; ``slot`` (n_features,), int32, must be −1 on entry and is left
    so. With a column dictionary, A_iᵀ d is gathered by local slot instead, in a buffer
    the size of the example's distinct columns (no reads of a global slot map).

    Returns
    -------
    int
        Steps taken after the pass.
    """
    unary, d_unary, pair_scores, d_pair, yhat = _buffers(feats, orc)
    n_unary = feats.n_unary
    colsum = np.empty(n_unary)
    data, indices, indptr = feats.data, feats.indices, feats.indptr
    local = _local_buffer(feats)
    local_form = feats.local_slots.shape[0] > 0
    local_values = np.empty(local.shape[0])
    local_seen = np.zeros(local.shape[0], dtype=np.uint8)
    local_touched = np.empty(local.shape[0], dtype=np.int64)
    for i in order:
        a = feats.row_offsets[i]
        n_rows = _score(feats, W, b, pair, 1.0, i, unary, pair_scores, local)
        delta = _call_oracle(feats, orc, i, unary, pair_scores, n_rows, yhat)
        _direction(orc, i, n_rows, yhat, 1.0, d_unary, d_pair)
        # d = c_i − (a_gold − a_hat)
        for r in range(n_rows):
            for k in range(n_unary):
                d_unary[r, k] += dual_unary[a + r, k]
        for j in range(d_pair.shape[0]):
            d_pair[j] += dual_pair[i, j]
        inner = _inner(unary, pair_scores, d_unary, d_pair, n_rows)
        # A_iᵀ d in the scratch, its squared norm
        n_touched = 0
        colsum[:] = 0.0
        for r in range(n_rows):
            g = d_unary[r]
            nonzero = False
            for k in range(n_unary):
                colsum[k] += g[k]
                nonzero = nonzero or g[k] != 0.0
            if not nonzero:
                continue
            if local_form:
                n_touched = _gather_row_local(data, feats.local_slots, indptr[a + r],
                                              indptr[a + r + 1], g[0], feats.binary,
                                              local_values, local_seen, local_touched,
                                              n_touched)
                continue
            if n_unary == 1:
                n_touched = _gather_row(data, indices, indptr[a + r], indptr[a + r + 1],
                                        g[0], feats.binary, scratch, slot,
                                        touched_list, n_touched)
                continue
            for p in range(indptr[a + r], indptr[a + r + 1]):
                f = indices[p]
                x = 1.0 if feats.binary else data[p]
                t = slot[f]
                if t < 0:
                    t = n_touched
                    slot[f] = t
                    touched_list[t] = f
                    scratch[t] = 0.0
                    n_touched += 1
                row = scratch[t]
                for k in range(n_unary):
                    row[k] += x * g[k]
        norm = 0.0
        if local_form:
            for t in range(n_touched):
                value = local_values[local_touched[t]]
                norm += value * value
        else:
            for t in range(n_touched):
                row = scratch[t]
                for k in range(n_unary):
                    norm += row[k] * row[k]
        if feats.has_bias:
            for k in range(n_unary):
                norm += colsum[k] * colsum[k]
        for j in range(d_pair.shape[0]):
            norm += d_pair[j] * d_pair[j]
        ell_s = omega[i] * delta
        curvature = omega[i] * omega[i] / lam * norm
        block_gap = omega[i] * inner - ell[i] + ell_s
        sums[2] += block_gap
        gamma = 0.0
        if curvature > 0:
            gamma = min(max(block_gap / curvature, 0.0), 1.0)
        factor = gamma * omega[i] / lam
        weight = (step + 1) * (step + 2) / 2.0
        if local_form:
            c0 = feats.column_offsets[i]
            for t in range(n_touched):
                q = local_touched[t]
                f = feats.local_columns[c0 + q]
                update = factor * local_values[q]
                W[f, 0] -= update
                if averaging:
                    lazy_W[f, 0] -= weight * update
                local_seen[q] = 0
            n_touched = 0
        for t in range(n_touched):
            f = touched_list[t]
            row = scratch[t]
            target = W[f]
            lazy = lazy_W[f]
            for k in range(n_unary):
                update = factor * row[k]
                target[k] -= update
                if averaging:
                    lazy[k] -= weight * update
            slot[f] = -1
        if feats.has_bias:
            for k in range(n_unary):
                update = factor * colsum[k]
                b[k] -= update
                if averaging:
                    lazy_b[k] -= weight * update
        for j in range(d_pair.shape[0]):
            update = factor * d_pair[j]
            pair[j] -= update
            if averaging:
                lazy_pair[j] -= weight * update
            dual_pair[i, j] -= d_pair[j] * gamma
        for r in range(n_rows):
            for k in range(n_unary):
                dual_unary[a + r, k] -= d_unary[r, k] * gamma
        sums[0] += gamma * (ell_s - ell[i])
        ell[i] += gamma * (ell_s - ell[i])
        step += 1
        sums[1] += (2.0 / (step + 2)) * (sums[0] - sums[1])
    return step


@njit(**_NJIT)
def _hinge_one(feats, orc, W, b, pair, i, unary, d_unary, pair_scores, d_pair, yhat,
               local):
    """H_i(w) of example ``i`` (see :func:`hinge_values`), with the given buffers."""
    n_rows = _score(feats, W, b, pair, 1.0, i, unary, pair_scores, local)
    delta = _call_oracle(feats, orc, i, unary, pair_scores, n_rows, yhat)
    _direction(orc, i, n_rows, yhat, 1.0, d_unary, d_pair)
    margin = _inner(unary, pair_scores, d_unary, d_pair, n_rows)
    if orc.rescaling == 2:
        return max(delta * (1.0 + margin), 0.0)
    return max(margin + delta, 0.0)


@njit(parallel=True, **_NJIT)
def hinge_values(feats, orc, W, b, pair, out, n_chunks):
    """The structured hinge H_i(w) of every example, into ``out`` (n_examples,).

    Margin rescaling: H_i = max(θ_ŷ + Δ(y_i, ŷ) − θ_{y_i}, 0); slack rescaling:
    H_i = max(Δ(y_i, ŷ) (1 + θ_ŷ − θ_{y_i}), 0), ŷ the oracle's output.

    The examples are cut into ``n_chunks`` contiguous chunks of about equal stored
    entries (a few per thread), each with its own buffers, run in parallel. Every H_i is
    computed alone, so ``out`` is the same for any number of threads or chunks.
    """
    n_chunks = max(1, min(feats.row_offsets.shape[0] - 1, n_chunks))
    bounds = _balanced_chunks(feats, n_chunks)
    for c in prange(n_chunks):
        unary, d_unary, pair_scores, d_pair, yhat = _buffers(feats, orc)
        local = _local_buffer(feats)
        for i in range(bounds[c], bounds[c + 1]):
            out[i] = _hinge_one(feats, orc, W, b, pair, i, unary, d_unary, pair_scores,
                                d_pair, yhat, local)


@njit(**_NJIT)
def _balanced_chunks(feats, n_chunks):
    """Bounds (n_chunks + 1,) of contiguous example chunks of about equal stored
    entries (plus one per row, so that empty rows count)."""
    n_examples = feats.row_offsets.shape[0] - 1
    bounds = np.empty(n_chunks + 1, dtype=np.int64)
    indptr, offsets = feats.indptr, feats.row_offsets
    total = indptr[offsets[n_examples]] + offsets[n_examples]
    i = 0
    bounds[0] = 0
    for c in range(1, n_chunks):
        target = total * c // n_chunks
        while i < n_examples and indptr[offsets[i]] + offsets[i] < target:
            i += 1
        bounds[c] = i
    bounds[n_chunks] = n_examples
    return bounds
