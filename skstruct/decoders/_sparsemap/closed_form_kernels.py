"""Compiled kernels of the closed-form SparseMAP solutions (sparsemax, staircase sums).

Every kernel runs over the rows (examples) in contiguous chunks ``bounds`` (see
:mod:`skstruct.utils._chunks`), one chunk per parallel iteration, and has no other
parallel loop (no whole-array expression, even inside the loop), for
:func:`~skstruct.utils._parallel.dynamic_schedule`. Each row is computed alone, so the
results do not depend on the chunks or the thread count.
"""

import numpy as np
from numba import njit, prange


@njit(cache=True, nogil=True, parallel=True)
def sparsemax_rows(scores, probabilities, support_size, objective, bounds):
    """Sparsemax of every row, its support size and its SparseMAP objective.

    p = max(z − τ, 0) with τ such that Σ p = 1: with z sorted decreasingly and
    ρ = max{k : z_(k) > (Σ_{j≤k} z_(j) − 1) / k}, τ = (Σ_{j≤ρ} z_(j) − 1) / ρ (Martins &
    Astudillo 2016). Scores are shifted by the row maximum first, so that the sums do not
    lose the differences to large offsets; -inf entries get probability 0. The objective is
    Σ_j p_j z_j − ½ Σ_j p_j². Every row needs a finite entry.
    """
    width = scores.shape[1]
    for chunk in prange(bounds.shape[0] - 1):
        for e in range(bounds[chunk], bounds[chunk + 1]):
            row = scores[e]
            top = -np.inf
            for j in range(width):
                if row[j] > top:
                    top = row[j]
            ranked = np.empty(width)
            count = 0
            for j in range(width):
                if row[j] > -np.inf:
                    ranked[count] = row[j] - top
                    count += 1
            ranked = np.sort(ranked[:count])[::-1]
            cumulative = 0.0
            tau = 0.0
            for k in range(count):
                cumulative += ranked[k]
                threshold = (cumulative - 1.0) / (k + 1)
                if ranked[k] > threshold:
                    tau = threshold
                else:
                    break
            size = 0
            value = 0.0
            for j in range(width):
                p = row[j] - top - tau if row[j] > -np.inf else 0.0
                if p > 0.0:
                    probabilities[e, j] = p
                    value += p * row[j] - 0.5 * p * p
                    size += 1
                else:
                    probabilities[e, j] = 0.0
            support_size[e] = size
            objective[e] = value


@njit(cache=True, nogil=True, parallel=True)
def class_support(probabilities, ptr, classes, weights, bounds):
    """The classes of positive probability of row ``e``, by decreasing probability (ties
    by class), into ``classes/weights[ptr[e]:ptr[e + 1]]``."""
    for chunk in prange(bounds.shape[0] - 1):
        for e in range(bounds[chunk], bounds[chunk + 1]):
            row = probabilities[e]
            n_positive = 0
            for j in range(row.shape[0]):
                n_positive += row[j] > 0.0
            positive = np.empty(n_positive, dtype=np.int64)
            keys = np.empty(n_positive)
            q = 0
            for j in range(row.shape[0]):
                if row[j] > 0.0:
                    positive[q] = j
                    keys[q] = -row[j]
                    q += 1
            order = np.argsort(keys, kind="mergesort")
            for q in range(order.shape[0]):
                j = positive[order[q]]
                classes[ptr[e] + q] = j
                weights[ptr[e] + q] = row[j]


@njit(cache=True, nogil=True, parallel=True)
def staircase_combine(ptr, counts, coefficients, rank, out, bounds):
    """out[e, j] = Σ_k coefficients[k] [rank[e, j] < counts[k]] over example ``e``'s
    structures k = ptr[e] .. ptr[e + 1] − 1 (structure k turns on the counts[k] labels of
    lowest rank)."""
    width = rank.shape[1]
    for chunk in prange(bounds.shape[0] - 1):
        for e in range(bounds[chunk], bounds[chunk + 1]):
            # at[c]: coefficients of the structures with c labels on; above[r] = Σ_{c > r} at[c]
            # (summed from the top, so that a rank no structure turns on gets exactly 0)
            at = np.empty(width + 1)
            for c in range(width + 1):
                at[c] = 0.0
            for k in range(ptr[e], ptr[e + 1]):
                at[counts[k]] += coefficients[k]
            above = np.empty(width)
            total = 0.0
            for r in range(width - 1, -1, -1):
                total += at[r + 1]
                above[r] = total
            for j in range(width):
                out[e, j] = above[rank[e, j]]


@njit(cache=True, nogil=True, parallel=True)
def clip_rows(scores, marginals, rank, support_size, objective, bounds):
    """u = clip(η, 0, 1) per row, its objective Σ η u − ½u², the rank of every label by
    decreasing u (ties by label) and the number of staircase structures (distinct steps
    of 1 = v_0 ≥ v_1 ≥ … ≥ v_L ≥ v_{L+1} = 0, u sorted decreasingly)."""
    width = scores.shape[1]
    for chunk in prange(bounds.shape[0] - 1):
        for e in range(bounds[chunk], bounds[chunk + 1]):
            value = 0.0
            for j in range(width):
                u = min(max(scores[e, j], 0.0), 1.0)
                marginals[e, j] = u
                if u > 0.0:
                    value += scores[e, j] * u - 0.5 * u * u
            objective[e] = value
            keys = np.empty(width)
            for j in range(width):
                keys[j] = -marginals[e, j]
            order = np.argsort(keys, kind="mergesort")
            steps = 0
            previous = 1.0
            for r in range(width):
                rank[e, order[r]] = r
                level = marginals[e, order[r]]
                if previous > level:
                    steps += 1
                previous = level
            if previous > 0.0:
                steps += 1
            support_size[e] = steps


@njit(cache=True, nogil=True, parallel=True)
def staircase(marginals, rank, ptr, counts, weights, bounds):
    """The staircase of every row into ``counts/weights[ptr[e]:ptr[e + 1]]``: the labeling
    with the c labels of lowest rank on has weight v_c − v_{c+1}, kept when positive."""
    width = marginals.shape[1]
    for chunk in prange(bounds.shape[0] - 1):
        for e in range(bounds[chunk], bounds[chunk + 1]):
            levels = np.empty(width + 2)
            levels[0] = 1.0
            levels[width + 1] = 0.0
            for j in range(width):
                levels[rank[e, j] + 1] = marginals[e, j]
            q = ptr[e]
            for c in range(width + 1):
                step = levels[c] - levels[c + 1]
                if step > 0.0:
                    counts[q] = c
                    weights[q] = step
                    q += 1
