"""Exact MAP of pairwise binary graphs (no logic or structure factors) by depth-first
branch and bound, compiled and parallel over examples.

Example i maximizes θ(y) = Σ_a u_a y_a + Σ_k c_k y_{a_k} y_{b_k} over y ∈ {0, 1}^n. With
C the symmetric n × n matrix of the summed couplings (C_ab = Σ of c_k over the factors
of the pair {a, b}, zero diagonal), the search assigns the variables in the order of
decreasing |u_a| and keeps the *field* f_a = u_a + Σ_{b on} C_ab, the gain of turning a
on given the variables on so far. A node at depth d (variables order[:d] assigned, S_d
the free ones) has the upper bound

    θ_current + Σ_{a ∈ S_d} max(0, f_a + ½ P_d(a)),   P_d(a) = Σ_{b ∈ S_d, b ≠ a} max(0, C_ab),

since turning on a set T ⊆ S_d adds Σ_{a∈T} f_a + Σ_{pairs in T} C_ab ≤
Σ_{a∈T} (f_a + ½ P_d(a)). A node whose bound does not beat the best leaf found is pruned;
the branch of the field's sign is tried first (so the first leaf is the greedy output).
The result is an exact maximizer (ties to the first found); the worst case visits all
2^n leaves, typical scores (unaries larger than the couplings) far fewer.
"""

import numpy as np
from numba import njit, prange

from ...utils._parallel import dynamic_schedule

__all__ = ["pairwise_exact_map"]


@njit(cache=True, nogil=True)
def _coupling_matrix(pair_scores, pairs, C):
    """C_ab = Σ of the pair scores of the factors on {a, b} (zero diagonal)."""
    C[:, :] = 0.0
    for k in range(pairs.shape[0]):
        a, b = pairs[k, 0], pairs[k, 1]
        C[a, b] += pair_scores[k]
        C[b, a] += pair_scores[k]


@njit(cache=True, nogil=True)
def _bnb_one(u, C, order, ppos, field, assign, step, first, y_best):
    """Branch and bound on one example (coupling matrix C); writes y_best (n,) and
    returns its θ."""
    n = u.shape[0]
    for m in range(n):  # insertion sort by decreasing |u|
        a = m
        key = abs(u[m])
        j = m - 1
        while j >= 0 and abs(u[order[j]]) < key:
            order[j + 1] = order[j]
            j -= 1
        order[j + 1] = a
    # ppos[d, a]: positive couplings of a to the free variables order[d:]
    ppos[n, :] = 0.0
    for d in range(n - 1, -1, -1):
        j = order[d]
        for a in range(n):
            c = C[j, a]
            ppos[d, a] = ppos[d + 1, a] + (c if c > 0.0 else 0.0)
    for a in range(n):
        field[a] = u[a]
        assign[a] = 0
        y_best[a] = 0
    best = -np.inf
    current = 0.0
    d = 0
    step[0] = 0
    while d >= 0:
        if step[d] == 0:
            if d == n:
                if current > best:
                    best = current
                    for a in range(n):
                        y_best[a] = assign[a]
                d -= 1
                continue
            bound = current
            for m in range(d, n):
                a = order[m]
                g = field[a] + 0.5 * ppos[d, a]
                if g > 0.0:
                    bound += g
            if bound <= best:
                d -= 1
                continue
            v = order[d]
            value = 1 if field[v] > 0.0 else 0
            first[d] = value
            step[d] = 1
        elif step[d] == 1:
            v = order[d]
            if first[d] == 1:  # undo the first branch
                for a in range(n):
                    field[a] -= C[v, a]
                current -= field[v]
                assign[v] = 0
            value = 1 - first[d]
            step[d] = 2
        else:
            v = order[d]
            if first[d] == 0:  # undo the second branch (v on)
                for a in range(n):
                    field[a] -= C[v, a]
                current -= field[v]
                assign[v] = 0
            d -= 1
            continue
        if value == 1:
            current += field[v]
            for a in range(n):
                field[a] += C[v, a]
            assign[v] = 1
        d += 1
        step[d] = 0
    return best


@njit(cache=True, nogil=True)
def _bnb_range(lo, hi, unary, pair, pairs, labels, best):
    """Examples lo .. hi − 1, one after the other, with one set of scratch arrays; a
    single row of ``pair`` is shared by every example."""
    n = unary.shape[1]
    C = np.empty((n, n))
    order = np.empty(n, dtype=np.int64)
    ppos = np.empty((n + 1, n))
    field = np.empty(n)
    assign = np.empty(n, dtype=np.int64)
    step = np.empty(n + 1, dtype=np.int64)
    first = np.empty(n + 1, dtype=np.int64)
    shared = pair.shape[0] == 1
    if shared:
        _coupling_matrix(pair[0], pairs, C)
    for i in range(lo, hi):
        if not shared:
            _coupling_matrix(pair[i], pairs, C)
        best[i] = _bnb_one(unary[i], C, order, ppos, field, assign, step, first,
                           labels[i])


@njit(cache=True, nogil=True, parallel=True)
def _bnb_parallel(bounds, unary, pair, pairs, labels, best):
    for c in prange(bounds.shape[0] - 1):
        _bnb_range(bounds[c], bounds[c + 1], unary, pair, pairs, labels, best)


#: Batches with fewer variables than this run in one thread: each example takes well
#: under a microsecond per variable, less than waking the threads costs.
PARALLEL_MIN_VARS = 10

#: Examples per parallel chunk.
EXAMPLES_PER_CHUNK = 64


def pairwise_exact_map(unary, pair, pairs):
    """Exact MAP of pairwise binary models, example by example (module docstring).

    Parameters
    ----------
    unary : ndarray of shape (n_examples, n_vars)
        u: the score of every variable being on.
    pair : ndarray of shape (n_examples, n_pairs)
        c: the score of both variables of every PAIR factor being on.
    pairs : ndarray of shape (n_pairs, 2), int
        The variables of every PAIR factor (a ≠ b).

    Returns
    -------
    labels : ndarray of shape (n_examples, n_vars), int64
        An output of largest θ of every example.
    best : ndarray of shape (n_examples,)
        Its θ.
    """
    unary = np.ascontiguousarray(unary, dtype=np.float64)
    pair = np.ascontiguousarray(pair, dtype=np.float64)
    pairs = np.ascontiguousarray(pairs, dtype=np.int64).reshape(-1, 2)
    if np.any(pairs[:, 0] == pairs[:, 1]):
        raise ValueError("A PAIR factor must couple two different variables.")
    if pair.shape[0] > 1 and np.all(pair == pair[0]):
        pair = pair[:1]  # one coupling matrix for the batch (learned couplings)
    labels = np.zeros(unary.shape, dtype=np.int64)
    best = np.zeros(unary.shape[0])
    if unary.shape[0] and unary.shape[1]:
        n = unary.shape[0]
        if unary.shape[1] < PARALLEL_MIN_VARS or n <= EXAMPLES_PER_CHUNK:
            _bnb_range(0, n, unary, pair, pairs, labels, best)
        else:
            bounds = np.append(np.arange(0, n, EXAMPLES_PER_CHUNK), n).astype(np.int64)
            with dynamic_schedule():
                _bnb_parallel(bounds, unary, pair, pairs, labels, best)
    return labels, best
