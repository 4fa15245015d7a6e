"""Compiled passes of SVRG on the smoothed structured hinge (and Casimir's inner loop).

The smoothed loss of example i is f_i(w) = h_μ(A_iᵀ w) with h_μ the entropy or ℓ2 (top-K)
smoothing of max_y [θ_y + Δ(y_i, y)] − θ_{y_i}; its gradient is A_iᵀ d_i with d_i the
part-space vector E_q[a_y] − a_{y_i} that the smoothed oracle
(:func:`skstruct.decoders._engine.smoothed.smoothed_oracle`) writes. An epoch minimizes

.. math::

   F(w) = \\sum_i \\omega_i f_i(w) + \\frac{\\lambda}{2} \\lVert w \\rVert^2
          + \\frac{\\kappa}{2} \\lVert w - z \\rVert^2

(κ = 0 for plain SVRG) from an anchor w̃. The kernels read the hinge's costs from the
oracle: an oracle of margin rescaling gives the smoothed structured hinge, one of plain
MAP (no costs) a smooth loss without hinge, the CRF's negative log-likelihood under
entropy smoothing with μ = 1.

* :func:`full_gradient`: d_i(w̃) of every example (kept, so that a step needs one oracle
  call instead of two) and ḡ = Σ_i ω_i A_iᵀ d_i(w̃), parallel over a fixed number of
  chunks of examples, each summing into its own buffer; the buffers are added in chunk
  order by the caller, so ḡ does not depend on the number of threads;
* :func:`svrg_epoch`: steps on examples drawn at random,
  w ← w − η [s_i A_iᵀ (d_i(w) − d_i(w̃)) + ḡ + λ w + κ (w − z)], s_i = n ω_i.

The dense part of a step is the same affine map of every coordinate,
w_j ← ρ w_j − η c_j with ρ = 1 − η (λ + κ) and c = ḡ − κ z fixed during the epoch. It is
applied lazily per row of W: a row untouched for m steps is caught up in closed form,

.. math::

   w_j \\leftarrow \\rho^m w_j - \\eta\\, G_m c_j, \\qquad
   G_m = \\sum_{s=0}^{m-1} \\rho^s = \\frac{1 - \\rho^m}{1 - \\rho},

before the example that touches it is scored, and all rows at the end of the epoch. The
sum of the iterates (for the average iterate) is kept the same way: with
``acc_j`` = Σ_{s < last_j} w_{s, j}, catching up from step l to step l + m adds
Σ_{s=0}^{m−1} w_{l+s, j} = G_m w_{l, j} − η H_m c_j, H_m = Σ_{s=1}^{m−1} G_s. The bias and
the pair parameters (touched by nearly every example) are updated densely every step.
"""

import math

import numpy as np
from numba import njit, prange

from ._engine_kernels import _buffers, _local_buffer, _score, _sparse_update

try:  # the compiled smoothed oracles (decoders)
    from ..decoders._engine.dispatch import smoothed_oracle
except ImportError:  # pragma: no cover - only while the decoders lack them
    @njit(cache=True, nogil=True)
    def smoothed_oracle(code, smoothing, mu, top_k, unary, pair, y_i, costs_i, ints,
                        floats, d_unary, d_pair):
        raise RuntimeError("the smoothed oracles are not available")

__all__ = ["catch_up_all", "full_gradient", "geometric_sums", "svrg_epoch"]

_NJIT = dict(cache=True, nogil=True)

#: Below this m (1 − ρ), G_m and H_m are summed by their Taylor series in (1 − ρ): the
#: closed forms divide a difference of nearly equal numbers by 1 − ρ.
_SERIES_BELOW = 1e-4


@njit(**_NJIT)
def geometric_sums(x, m):
    """(ρ^m, G_m, H_m) for ρ = 1 − x and m ≥ 0 steps.

    G_m = Σ_{s=0}^{m−1} ρ^s and H_m = Σ_{s=1}^{m−1} G_s = Σ_{r=0}^{m−2} (m − 1 − r) ρ^r, so
    that m steps of w ← ρ w − η c from w_0 give w_m = ρ^m w_0 − η G_m c and
    Σ_{s=0}^{m−1} w_s = G_m w_0 − η H_m c. ``x`` = η (λ + κ) in [0, 1).
    """
    if m == 0:
        return 1.0, 0.0, 0.0
    fm = float(m)
    if x * fm < _SERIES_BELOW:
        # G_m = Σ_s ρ^s with ρ^s = 1 − s x + C(s, 2) x² − ...; H_m the sum of G_1..G_{m−1}
        power = math.exp(fm * math.log1p(-x)) if x > 0 else 1.0
        g = fm - x * fm * (fm - 1) / 2 + x * x * fm * (fm - 1) * (fm - 2) / 6
        k = fm - 1
        h = (k * (k + 1) / 2 - x * (k + 1) * k * (k - 1) / 6
             + x * x * (k + 1) * k * (k - 1) * (k - 2) / 24)
        return power, g, h
    log_rho = math.log1p(-x)
    power = math.exp(fm * log_rho)
    g = -math.expm1(fm * log_rho) / x
    # H_m = Σ_{s=1}^{m−1} (1 − ρ^s) / x = ((m − 1) − ρ G_{m−1}) / x
    g_prev = -math.expm1((fm - 1) * log_rho) / x
    h = ((fm - 1) - (1 - x) * g_prev) / x
    return power, g, h


@njit(**_NJIT)
def _catch_up_row(f, target, W, acc_W, C_W, last, eta, x, averaging):
    """Row f of W (and of acc_W) from step ``last[f]`` to step ``target``."""
    m = target - last[f]
    if m <= 0:
        return
    power, g, h = geometric_sums(x, m)
    row, c = W[f], C_W[f]
    if averaging:
        acc = acc_W[f]
        for k in range(row.shape[0]):
            acc[k] += g * row[k] - eta * h * c[k]
    for k in range(row.shape[0]):
        row[k] = power * row[k] - eta * g * c[k]
    last[f] = target


@njit(**_NJIT)
def _catch_up_example(feats, i, target, W, acc_W, C_W, last, eta, x, averaging):
    """The rows of W that example i reads, to step ``target``."""
    if feats.local_slots.shape[0] > 0:
        for q in range(feats.column_offsets[i], feats.column_offsets[i + 1]):
            _catch_up_row(feats.local_columns[q], target, W, acc_W, C_W, last, eta, x,
                          averaging)
        return
    a = feats.row_offsets[i]
    indptr, indices = feats.indptr, feats.indices
    for p in range(indptr[a], indptr[feats.row_offsets[i + 1]]):
        _catch_up_row(indices[p], target, W, acc_W, C_W, last, eta, x, averaging)


@njit(**_NJIT)
def catch_up_all(W, acc_W, C_W, last, target, eta, x, averaging):
    """Every row of W to step ``target`` (the end of an epoch)."""
    for f in range(W.shape[0]):
        _catch_up_row(f, target, W, acc_W, C_W, last, eta, x, averaging)


@njit(**_NJIT)
def _smoothed_call(feats, orc, smoothing, mu, top_k, i, unary, pair_scores,
                   n_rows, d_unary, d_pair):
    """d_i = E_q[a_y] − a_{y_i} into the part buffers; returns (value, exact)."""
    ya, yb = orc.y_offsets[i], orc.y_offsets[i + 1]
    start = feats.row_offsets[i] if orc.costs.shape[0] > 0 else 0
    stop = start + n_rows if orc.costs.shape[0] > 0 else 0
    return smoothed_oracle(orc.code, smoothing, mu, top_k, unary[:n_rows], pair_scores,
                           orc.y[ya:yb], orc.costs[start:stop], orc.ints, orc.floats, d_unary[:n_rows],
                           d_pair)


@njit(parallel=True, **_NJIT)
def full_gradient(feats, orc, smoothing, mu, top_k, W, b, pair, weights,
                  anchor_unary, anchor_pair, values, exact, grads, bounds):
    """d_i(w̃) of every example, its smoothed value, and ḡ per chunk of examples.

    Parameters
    ----------
    feats, orc : CompiledFeatures, CompiledOracle
    smoothing : int
        0 entropy, 1 ℓ2 (top-K).
    mu : float
    top_k : int
    W, b, pair : ndarray
        Blocks of the anchor w̃ (engine order).
    weights : ndarray of shape (n_examples,)
        ω_i.
    anchor_unary : ndarray of shape (n_rows, K)
        Output: d_i(w̃) rows, stacked like the feature rows.
    anchor_pair : ndarray of shape (n_examples, n_pair)
        Output.
    values : ndarray of shape (n_examples,)
        Output: f_i(w̃).
    exact : ndarray of shape (n_examples,), uint8
        Output: whether the oracle was exact (top-K covers the support).
    grads : ndarray of shape (n_chunks, n_params)
        Output: row c is Σ_{i in chunk c} ω_i A_iᵀ d_i(w̃), in the engine's order.
    bounds : ndarray of shape (n_chunks + 1,), int64
        Chunks of examples.
    """
    n_chunks = bounds.shape[0] - 1
    cut = feats.n_features * feats.n_unary
    bias = feats.n_unary if feats.has_bias else 0
    for c in prange(n_chunks):
        unary, d_unary, pair_scores, d_pair, yhat = _buffers(feats, orc)
        local = _local_buffer(feats)
        n_unary = feats.n_unary
        nz_k = np.empty(n_unary, dtype=np.int64)
        nz_g = np.empty(n_unary)
        colsum = np.empty(n_unary)
        flat = grads[c]
        flat[:] = 0.0
        gW = flat[:cut].reshape((feats.n_features, feats.n_unary))
        gb = flat[cut:cut + bias]
        gp = flat[cut + bias:]
        for i in range(bounds[c], bounds[c + 1]):
            n_rows = _score(feats, W, b, pair, 1.0, i, unary, pair_scores, local)
            value, ok = _smoothed_call(feats, orc, smoothing, mu, top_k, i,
                                       unary, pair_scores, n_rows, d_unary,
                                       d_pair)
            values[i] = value
            exact[i] = 1 if ok else 0
            a = feats.row_offsets[i]
            anchor_unary[a:a + n_rows] = d_unary[:n_rows]
            anchor_pair[i] = d_pair
            _sparse_update(feats, i, n_rows, d_unary, d_pair, weights[i], gW, gb, gp, 0.0,
                           gW, gb, gp, nz_k, nz_g, colsum)


@njit(**_NJIT)
def _held_update(feats, i, n_rows, d_unary, d_pair, scale, W, b, pair, free_W, free_b,
                 free_pair, nz_k, nz_g, colsum):
    """W += scale A_iᵀ d on the free entries only (``free_*`` nonzero); the held entries
    of W, b and pair are not written.

    The visits of :func:`~._engine_kernels._sparse_update` (nonzero entries of d's rows,
    through the column dictionary when the features have one), each behind its entry of
    ``free_W``.
    """
    a = feats.row_offsets[i]
    data, indices, indptr = feats.data, feats.indices, feats.indptr
    n_unary = d_unary.shape[1]
    colsum[:] = 0.0
    local_form = feats.local_slots.shape[0] > 0
    c0 = feats.column_offsets[i] if local_form else 0
    binary = feats.binary
    for r in range(n_rows):
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
            f = feats.local_columns[c0 + feats.local_slots[p]] if local_form else indices[p]
            free = free_W[f]
            row = W[f]
            for c in range(count):
                k = nz_k[c]
                if free[k]:
                    row[k] += x * nz_g[c]
    if feats.has_bias:
        for k in range(n_unary):
            if free_b[k]:
                b[k] += scale * colsum[k]
    for j in range(pair.shape[0]):
        if d_pair[j] != 0.0 and free_pair[j]:
            pair[j] += scale * d_pair[j]


@njit(**_NJIT)
def svrg_epoch(feats, orc, smoothing, mu, top_k, W, b, pair, acc_W, acc_b,
               acc_pair, C_W, C_b, C_pair, last, anchor_unary, anchor_pair, scales, eta,
               x, order, averaging, lazy, free_W, free_b, free_pair):
    """Variance-reduced steps on the examples of ``order`` (one SVRG epoch).

    Step t on example i (w = w_t, rows of W caught up to t before scoring):
    w_{t+1} = ρ w_t − η c − η s_i A_iᵀ (d_i(w_t) − d_i(w̃)), ρ = 1 − x, x = η (λ + κ),
    c = ḡ − κ z (``C_*``), d_i(w̃) from :func:`full_gradient` (``anchor_*``). The rows
    of W are left at the steps in ``last``; call :func:`catch_up_all` with
    ``len(order)`` after the epoch. With ``averaging``, ``acc_*`` gathers Σ_{s<t} w_s
    (rows: up to ``last``).

    ``lazy=False`` catches up every row at every step (O(dim) per step): the reference
    the lazy form is tested against.

    ``free_W``, ``free_b``, ``free_pair`` (uint8, shaped like W, b and pair, or W's of
    shape (0, 0) when every parameter is free): the sparse part of a step writes the
    free parameters only. A held parameter that is 0 with its entry of c 0 stays exactly
    0 (ρ 0 − η 0), so the epoch minimizes over the free parameters, the others held at
    zero (``feature_label_pairs="seen"``).

    Returns
    -------
    int
        Steps at which the oracle was not exact.
    """
    unary, d_unary, pair_scores, d_pair, yhat = _buffers(feats, orc)
    local = _local_buffer(feats)
    n_unary = feats.n_unary
    nz_k = np.empty(n_unary, dtype=np.int64)
    nz_g = np.empty(n_unary)
    colsum = np.empty(n_unary)
    rho = 1.0 - x
    inexact = 0
    for t in range(order.shape[0]):
        i = order[t]
        if lazy:
            _catch_up_example(feats, i, t, W, acc_W, C_W, last, eta, x, averaging)
        n_rows = _score(feats, W, b, pair, 1.0, i, unary, pair_scores, local)
        value, ok = _smoothed_call(feats, orc, smoothing, mu, top_k, i, unary,
                                   pair_scores, n_rows, d_unary, d_pair)
        if not ok:
            inexact += 1
        a = feats.row_offsets[i]
        s = scales[i]
        for r in range(n_rows):
            for k in range(n_unary):
                d_unary[r, k] = s * (d_unary[r, k] - anchor_unary[a + r, k])
        for j in range(d_pair.shape[0]):
            d_pair[j] = s * (d_pair[j] - anchor_pair[i, j])
        # the dense part of step t: rows, bias and pair to t + 1
        if lazy:
            _catch_up_example(feats, i, t + 1, W, acc_W, C_W, last, eta, x, averaging)
        else:
            catch_up_all(W, acc_W, C_W, last, t + 1, eta, x, averaging)
        for k in range(b.shape[0]):
            if averaging:
                acc_b[k] += b[k]
            b[k] = rho * b[k] - eta * C_b[k]
        for j in range(pair.shape[0]):
            if averaging:
                acc_pair[j] += pair[j]
            pair[j] = rho * pair[j] - eta * C_pair[j]
        if free_W.shape[0] == 0:
            _sparse_update(feats, i, n_rows, d_unary, d_pair, -eta, W, b, pair, 0.0, W, b,
                           pair, nz_k, nz_g, colsum)
        else:
            _held_update(feats, i, n_rows, d_unary, d_pair, -eta, W, b, pair, free_W,
                         free_b, free_pair, nz_k, nz_g, colsum)
    return inexact


@njit(**_NJIT)
def example_gradient(feats, orc, smoothing, mu, top_k, W, b, pair, i, gW, gb,
                     gp):
    """f_i(w) and A_iᵀ d_i(w) added into (gW, gb, gp); for tests and references."""
    unary, d_unary, pair_scores, d_pair, yhat = _buffers(feats, orc)
    local = _local_buffer(feats)
    n_unary = feats.n_unary
    n_rows = _score(feats, W, b, pair, 1.0, i, unary, pair_scores, local)
    value, ok = _smoothed_call(feats, orc, smoothing, mu, top_k, i, unary,
                               pair_scores, n_rows, d_unary, d_pair)
    _sparse_update(feats, i, n_rows, d_unary, d_pair, 1.0, gW, gb, gp, 0.0, gW, gb, gp,
                   np.empty(n_unary, dtype=np.int64), np.empty(n_unary),
                   np.empty(n_unary))
    return value
