"""The cached passes of pairwise BCFW, compiled: passes over every block's held outputs
(no oracle call), on the blocks packed in flat arrays."""

import numba
import numpy as np

__all__ = ["cached_passes", "segment_dots"]


@numba.njit(cache=True, nogil=True)
def cached_passes(orders, min_gain, block_ptr, atom_ptr, indices, values, losses,
                  weights, gram_ptr, gram, omega, lam, w, ell, scores):
    """Up to ``orders.shape[0]`` passes of pairwise steps among the outputs each block
    holds, stopping after the first pass that raises the dual by less than
    ``min_gain``.

    Block b holds outputs ``block_ptr[b]:block_ptr[b + 1]``; output k has the feature
    vector ``indices[atom_ptr[k]:atom_ptr[k + 1]]`` / ``values[...]``, the task loss
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
    block_ptr, atom_ptr, gram_ptr : ndarray of int64
    indices : ndarray of int32 or int64
    values, losses, weights, gram, omega, w, ell : ndarray of float64
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
            s = -1
            best = -np.inf
            for j in range(k):
                atom = first + j
                v = losses[atom]
                for e in range(atom_ptr[atom], atom_ptr[atom + 1]):
                    v += w[indices[e]] * values[e]
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
            for e in range(atom_ptr[atom_s], atom_ptr[atom_s + 1]):
                w[indices[e]] -= scale * values[e]
            for e in range(atom_ptr[atom_a], atom_ptr[atom_a + 1]):
                w[indices[e]] += scale * values[e]
            ell[b] += gamma * om * (losses[atom_s] - losses[atom_a])
            weights[atom_s] += gamma
            weights[atom_a] = 0.0 if gamma >= held else held - gamma
            gain += gamma * numerator - 0.5 * gamma * gamma * curvature
        done += 1
        if gain < min_gain:
            break
    return done


@numba.njit(cache=True, nogil=True)
def segment_dots(ptr, indices, values, dense):
    """⟨v_k, dense⟩ of sparse vectors kept end to end: v_k has the entries
    ``ptr[k]:ptr[k + 1]`` of (``indices``, ``values``).

    Parameters
    ----------
    ptr : ndarray of shape (n_vectors + 1,), int64
    indices : ndarray of int32 or int64
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
