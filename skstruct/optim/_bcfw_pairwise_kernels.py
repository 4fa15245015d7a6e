"""The compiled loops of pairwise BCFW: scores of factored feature vectors, a step's
move, and the cached passes over every block's held outputs (no oracle call), on the
blocks packed in flat arrays.

A block's output k has the feature vector ψ_k = x ⊗ r_k + p_k: x shared by the block
(entry ``x_pos[f] + r_idx[j]`` of ψ_k is ``x_val[f] * r_val[j]``), r_k and p_k sparse
(:class:`~skstruct.optim._bcfw_pairwise._Block`)."""

import numba
import numpy as np

__all__ = ["cached_passes", "factored_dots", "move_by", "segment_dots"]


@numba.njit(cache=True, nogil=True)
def _dot(w, x_pos, x_val, xs, xe, r_idx, r_val, rs, re, p_idx, p_val, ps, pe):
    """⟨ψ, w⟩ of one factored vector: x[xs:xe] ⊗ r[rs:re] + p[ps:pe]."""
    total = 0.0
    for j in range(rs, re):
        column = 0.0
        for f in range(xs, xe):
            column += x_val[f] * w[x_pos[f] + r_idx[j]]
        total += r_val[j] * column
    for e in range(ps, pe):
        total += w[p_idx[e]] * p_val[e]
    return total


@numba.njit(cache=True, nogil=True)
def _move(w, scale, x_pos, x_val, xs, xe, r_idx, r_val, rs, re, p_idx, p_val, ps, pe):
    """w += scale ψ for one factored vector."""
    for j in range(rs, re):
        step = scale * r_val[j]
        for f in range(xs, xe):
            w[x_pos[f] + r_idx[j]] += step * x_val[f]
    for e in range(ps, pe):
        w[p_idx[e]] += scale * p_val[e]


@numba.njit(cache=True, nogil=True)
def factored_dots(x_pos, x_val, r_ptr, r_idx, r_val, p_ptr, p_idx, p_val, w):
    """⟨ψ_k, w⟩ of every output k of one block, shape (n_outputs,)."""
    out = np.zeros(r_ptr.size - 1)
    for k in range(r_ptr.size - 1):
        out[k] = _dot(w, x_pos, x_val, 0, x_pos.size, r_idx, r_val, r_ptr[k],
                      r_ptr[k + 1], p_idx, p_val, p_ptr[k], p_ptr[k + 1])
    return out


@numba.njit(cache=True, nogil=True)
def move_by(w, scale, x_pos, x_val, r_idx, r_val, p_idx, p_val):
    """w += scale ψ for the factored vector ψ = x ⊗ r + p."""
    _move(w, scale, x_pos, x_val, 0, x_pos.size, r_idx, r_val, 0, r_idx.size, p_idx,
          p_val, 0, p_idx.size)


@numba.njit(cache=True, nogil=True)
def segment_dots(ptr, indices, values, dense):
    """⟨v_k, dense⟩ of sparse vectors kept end to end: v_k has the entries
    ``ptr[k]:ptr[k + 1]`` of (``indices``, ``values``).

    Parameters
    ----------
    ptr : ndarray of shape (n_vectors + 1,), int64
    indices : ndarray of int64
    values : ndarray of float64
    dense : ndarray of float64

    Returns
    -------
    ndarray of shape (n_vectors,)
    """
    out = np.zeros(ptr.size - 1)
    for k in range(ptr.size - 1):
        total = 0.0
        for e in range(ptr[k], ptr[k + 1]):
            total += dense[indices[e]] * values[e]
        out[k] = total
    return out


@numba.njit(cache=True, nogil=True)
def cached_passes(orders, min_gain, block_ptr, x_ptr, x_pos, x_val, r_ptr, r_idx, r_val,
                  p_ptr, p_idx, p_val, losses, weights, gram_ptr, gram, omega, lam, w,
                  ell, scores):
    """Up to ``orders.shape[0]`` passes of pairwise steps among the outputs each block
    holds, stopping after the first pass that raises the dual by less than
    ``min_gain``.

    Block b holds outputs ``block_ptr[b]:block_ptr[b + 1]`` and x at
    ``x_ptr[b]:x_ptr[b + 1]`` of (``x_pos``, ``x_val``); output k has r at
    ``r_ptr[k]:r_ptr[k + 1]`` of (``r_idx``, ``r_val``), p likewise, the task loss
    ``losses[k]`` and the weight ``weights[k]`` (0: held no more, still a candidate
    toward which to step); the block's Gram matrix of its outputs' feature vectors is
    ``gram[gram_ptr[b]:gram_ptr[b + 1]]``, row-major. A step of block b: s the output
    of largest score v_k = ⟨ψ_k, w⟩ + Δ_k, a the held output (weight > 0, k ≠ s) of
    smallest score, γ = min(ω_b (v_s − v_a) / ((ω_b² / λ) (G_ss + G_aa − 2 G_sa)), α_a),
    w ← w − γ (ω_b / λ) (ψ_s − ψ_a), α_s += γ, α_a −= γ, ℓ_b += γ ω_b (Δ_s − Δ_a).

    Parameters
    ----------
    orders : ndarray of shape (max_passes, n_visits), int64
        The blocks visited by each pass.
    min_gain : float
    block_ptr, x_ptr, r_ptr, p_ptr, gram_ptr, x_pos, r_idx, p_idx : ndarray of int64
    x_val, r_val, p_val, losses, weights, gram, omega, w, ell : ndarray of float64
        ``weights``, ``w`` and ``ell`` are updated in place.
    lam : float
    scores : ndarray of float64
        Scratch, at least as long as the largest block.

    Returns
    -------
    int
        The passes run.
    """
    done = 0
    for p in range(orders.shape[0]):
        gain = 0.0
        for t in range(orders.shape[1]):
            b = orders[p, t]
            first, last = block_ptr[b], block_ptr[b + 1]
            k = last - first
            if k < 2:
                continue
            xs, xe = x_ptr[b], x_ptr[b + 1]
            s = -1
            best = -np.inf
            for j in range(k):
                atom = first + j
                v = losses[atom] + _dot(w, x_pos, x_val, xs, xe, r_idx, r_val,
                                        r_ptr[atom], r_ptr[atom + 1], p_idx, p_val,
                                        p_ptr[atom], p_ptr[atom + 1])
                scores[j] = v
                if v > best:
                    best, s = v, j
            a = -1
            worst = np.inf
            for j in range(k):
                if j != s and weights[first + j] > 0.0 and scores[j] < worst:
                    worst, a = scores[j], j
            if a < 0:
                continue
            om = omega[b]
            numerator = om * (scores[s] - scores[a])
            if numerator <= 0.0:
                continue
            g = gram_ptr[b]
            norm = gram[g + s * k + s] + gram[g + a * k + a] - 2.0 * gram[g + s * k + a]
            curvature = om * om / lam * max(norm, 0.0)
            held = weights[first + a]
            gamma = held if curvature <= 0.0 else min(numerator / curvature, held)
            scale = gamma * om / lam
            atom_s, atom_a = first + s, first + a
            _move(w, -scale, x_pos, x_val, xs, xe, r_idx, r_val, r_ptr[atom_s],
                  r_ptr[atom_s + 1], p_idx, p_val, p_ptr[atom_s], p_ptr[atom_s + 1])
            _move(w, scale, x_pos, x_val, xs, xe, r_idx, r_val, r_ptr[atom_a],
                  r_ptr[atom_a + 1], p_idx, p_val, p_ptr[atom_a], p_ptr[atom_a + 1])
            ell[b] += gamma * om * (losses[atom_s] - losses[atom_a])
            weights[atom_s] += gamma
            weights[atom_a] = 0.0 if gamma >= held else held - gamma
            gain += gamma * numerator - 0.5 * gamma * gamma * curvature
        done += 1
        if gain < min_gain:
            break
    return done
