"""Compiled enumeration of directed acyclic graphs with bounded in-degree, and the
decoder operations over it.

A DAG on n nodes is held as its parent masks: entry c is the bit set of the parents of
node c (n <= 6, so a mask fits a uint8). :func:`enumerate_dags` builds every DAG on
nodes 0 .. m from every DAG on nodes 0 .. m − 1 by adding node m with a parent set P
and a child set C among the old nodes; the result is acyclic iff no node of C reaches a
node of P, and a DAG arises from exactly one smaller one (remove node m). The DAGs are
then sorted lexicographically by their row-major adjacency matrix a[p, c] = 1 for the
arc p -> c (the empty graph first).

Every operation on a group of examples with the same number of nodes scores all DAGs of
an example, θ_d = Σ_c S_c[parents_d(c)] with S_c[M] = Σ_{p ∈ M} A[p, c] tabulated over
the 2^n masks M: O(2^n n² + N n) time per example for N DAGs, one example per parallel
iteration. Two operations need no enumeration: :func:`local_neighbours` generates the
graphs at Hamming distance 1 or 2 and keeps the valid ones, and
:func:`sample_uniform_dags` draws uniform DAGs by rejection from a subset dynamic
programme (O(2^n n) per example and per proposal).
"""

import numpy as np
from numba import njit, prange

from .._core.sampling import next_uniform

_NJIT = dict(cache=True, nogil=True)


@njit(inline="always")
def _popcount(mask):
    x = np.int64(mask)
    count = 0
    while x:
        x &= x - 1
        count += 1
    return count


@njit(inline="always")
def _acyclic(parents, n):
    """Whether the graph with parent masks ``parents`` (n,) has no directed cycle: peel
    the nodes with no remaining parent until none is left (acyclic) or none can go (a
    cycle remains). O(n²)."""
    remaining = (np.int64(1) << n) - 1
    changed = True
    while remaining and changed:
        changed = False
        for c in range(n):
            if (remaining >> c) & 1 and (parents[c] & remaining) == 0:
                remaining &= ~(np.int64(1) << c)
                changed = True
    return remaining == 0


@njit(**_NJIT)
def _extend(parents, m, max_parents, out, fill):
    """The DAGs on m + 1 nodes from those on m nodes (``parents``, shape (N, m)):
    their number, and when ``fill`` their parent masks written to ``out``."""
    total = 0
    desc = np.zeros(m, dtype=np.int64)
    for d in range(parents.shape[0]):
        # desc[c]: c and every node it reaches
        for c in range(m):
            desc[c] = 1 << c
        for _ in range(m):
            for c in range(m):
                for e in range(m):
                    if (parents[d, e] >> c) & 1:
                        desc[c] |= desc[e]
        for P in range(1 << m):
            if _popcount(P) > max_parents:
                continue
            allowed = 0
            for c in range(m):
                if _popcount(parents[d, c]) < max_parents and (desc[c] & P) == 0:
                    allowed |= 1 << c
            C = allowed  # every subset of the allowed children
            while True:
                if fill:
                    for c in range(m):
                        out[total, c] = parents[d, c] | (((C >> c) & 1) << m)
                    out[total, m] = P
                total += 1
                if C == 0:
                    break
                C = (C - 1) & allowed
    return total


@njit(**_NJIT)
def _adjacency_keys(masks, n):
    """The row-major adjacency matrix of every DAG read as a binary number, entry
    (0, 0) the most significant bit."""
    keys = np.zeros(masks.shape[0], dtype=np.int64)
    top = n * n - 1
    for d in range(masks.shape[0]):
        key = 0
        for c in range(n):
            for p in range(n):
                if (masks[d, c] >> p) & 1:
                    key |= np.int64(1) << (top - (p * n + c))
        keys[d] = key
    return keys


def enumerate_dags(n, max_parents):
    """Parent masks (N, n), uint8, of every DAG on ``n`` nodes with at most
    ``max_parents`` parents per node, sorted by adjacency matrix (see the module)."""
    masks = np.zeros((1, 1), dtype=np.uint8)
    for m in range(1, n):
        count = _extend(masks, m, max_parents, np.zeros((0, m + 1), dtype=np.uint8), False)
        grown = np.zeros((count, m + 1), dtype=np.uint8)
        _extend(masks, m, max_parents, grown, True)
        masks = grown
    return masks[np.argsort(_adjacency_keys(masks, n), kind="stable")]


@njit(**_NJIT)
def _theta(masks, block, n, theta):
    """Scores of every DAG of one example with arc scores ``block`` (n * n,), row-major
    [parent, child]; -inf for a DAG with an arc scored -inf."""
    S = np.zeros((n, 1 << n))
    for c in range(n):
        for M in range(1, 1 << n):
            low = M & -M
            p = 0
            while (low >> p) != 1:
                p += 1
            if (M >> c) & 1:
                S[c, M] = 0.0  # never used: a node is not its own parent
            else:
                S[c, M] = S[c, M ^ low] + block[p * n + c]
    for d in range(masks.shape[0]):
        total = 0.0
        for c in range(n):
            total += S[c, masks[d, c]]
        theta[d] = total


@njit(parallel=True, **_NJIT)
def best(masks, blocks, n):
    """Index (first of the ties) and score of the best DAG of every example."""
    g = blocks.shape[0]
    index = np.zeros(g, dtype=np.int64)
    score = np.empty(g)
    for i in prange(g):
        theta = np.empty(masks.shape[0])
        _theta(masks, blocks[i], n, theta)
        j = np.argmax(theta)
        index[i] = j
        score[i] = theta[j]
    return index, score


@njit(inline="always")
def _worse(hs, hi, a, b):
    """Whether heap entry a ranks below entry b (lower score, or the later DAG)."""
    return hs[a] < hs[b] or (hs[a] == hs[b] and hi[a] > hi[b])


@njit(**_NJIT)
def _sift_down(hs, hi, size, pos):
    while True:
        child = 2 * pos + 1
        if child >= size:
            return
        if child + 1 < size and _worse(hs, hi, child + 1, child):
            child += 1
        if not _worse(hs, hi, child, pos):
            return
        hs[pos], hs[child] = hs[child], hs[pos]
        hi[pos], hi[child] = hi[child], hi[pos]
        pos = child


@njit(parallel=True, **_NJIT)
def top_k(masks, blocks, n, K):
    """The indices (-1 beyond the DAGs of finite score) and scores (-inf beyond) of the
    ``K`` best DAGs of every example, best first, ties in enumeration order; a heap of
    the K best so far, O(N log K)."""
    g = blocks.shape[0]
    index = np.full((g, K), -1, dtype=np.int64)
    score = np.full((g, K), -np.inf)
    for i in prange(g):
        theta = np.empty(masks.shape[0])
        _theta(masks, blocks[i], n, theta)
        hs = np.empty(K)
        hi = np.empty(K, dtype=np.int64)
        size = 0
        for d in range(masks.shape[0]):
            t = theta[d]
            if t == -np.inf:
                continue
            if size < K:
                hs[size] = t
                hi[size] = d
                pos = size
                size += 1
                while pos > 0:
                    parent = (pos - 1) // 2
                    if not _worse(hs, hi, pos, parent):
                        break
                    hs[pos], hs[parent] = hs[parent], hs[pos]
                    hi[pos], hi[parent] = hi[parent], hi[pos]
                    pos = parent
            elif t > hs[0]:
                hs[0] = t
                hi[0] = d
                _sift_down(hs, hi, size, 0)
        for r in range(size - 1, -1, -1):  # pop the worst into the last free rank
            score[i, r] = hs[0]
            index[i, r] = hi[0]
            last = r
            hs[0] = hs[last]
            hi[0] = hi[last]
            _sift_down(hs, hi, last, 0)
    return index, score


@njit(parallel=True, **_NJIT)
def log_partition(masks, blocks, n, with_marginals):
    """log Σ_d exp θ_d of every example and, when asked, the arc marginals (g, n * n):
    O(N n + 2^n n²) per example."""
    g = blocks.shape[0]
    log_z = np.empty(g)
    marginals = np.zeros((g, n * n) if with_marginals else (0, 0))
    for i in prange(g):
        theta = np.empty(masks.shape[0])
        _theta(masks, blocks[i], n, theta)
        top = np.max(theta)
        total = 0.0
        for d in range(masks.shape[0]):
            total += np.exp(theta[d] - top)
        lz = top + np.log(total)
        log_z[i] = lz
        if not with_marginals:
            continue
        # W[c, M]: the probability that the parents of c are M; then p -> c sums W[c, M]
        # over the masks M that hold p
        W = np.zeros((n, 1 << n))
        for d in range(masks.shape[0]):
            w = np.exp(theta[d] - lz)
            for c in range(n):
                W[c, masks[d, c]] += w
        for c in range(n):
            for M in range(1, 1 << n):
                for p in range(n):
                    if (M >> p) & 1:
                        marginals[i, p * n + c] += W[c, M]
    return log_z, marginals


@njit(parallel=True, **_NJIT)
def neighbours(masks, blocks, n, y_masks, k, index, write):
    """The DAGs of finite score at Hamming distance 1 .. k from ``y_masks[i]``.

    Counts them (returned, shape (g,)) and, when ``write``, writes their indices to
    ``index`` (g, >= count) ordered by distance, then by the set of changed adjacency
    entries in lexicographic order (for sets of one size: the changes read as a binary
    number, entry (0, 0) the most significant bit, in decreasing order).
    """
    g = blocks.shape[0]
    counts = np.zeros(g, dtype=np.int64)
    top = n * n - 1
    bits = np.zeros(256, dtype=np.int64)  # bits[x]: the number of bits set in x
    for x in range(1, 256):
        bits[x] = bits[x >> 1] + (x & 1)
    for i in prange(g):
        theta = np.empty(masks.shape[0])
        _theta(masks, blocks[i], n, theta)
        found = np.empty(masks.shape[0], dtype=np.int64)
        keys = np.empty(masks.shape[0], dtype=np.int64)
        count = 0
        for d in range(masks.shape[0]):
            if theta[d] == -np.inf:
                continue
            distance = 0
            for c in range(n):
                distance += bits[masks[d, c] ^ y_masks[i, c]]
            if distance < 1 or distance > k:
                continue
            if write:
                changed = 0
                for c in range(n):
                    x = np.int64(masks[d, c]) ^ np.int64(y_masks[i, c])
                    for p in range(n):
                        if (x >> p) & 1:
                            changed |= np.int64(1) << (top - (p * n + c))
                found[count] = d
                keys[count] = (np.int64(distance) << 40) - changed
            count += 1
        counts[i] = count
        if write:
            order = np.argsort(keys[:count], kind="mergesort")
            for r in range(count):
                index[i, r] = found[order[r]]
    return counts


@njit(**_NJIT)
def first_violation(y, offsets, n_nodes, bounds):
    """The first encoded graph that is not a DAG with bounded in-degree.

    Parameters
    ----------
    y : ndarray of shape (Σ_i n_i²,), int64
        Row-major 0/1 adjacency matrices a[p, c] (the arc p -> c), stacked.
    offsets : ndarray of shape (n_examples + 1,), int64
    n_nodes : ndarray of shape (n_examples,), int64
    bounds : ndarray of shape (n_examples,), int64
        The largest number of parents of a node of example i.

    Returns
    -------
    ndarray of shape (3,), int64
        (example, kind, detail): kind 0 when every graph is valid, 1 for an arc from a
        node to itself, 2 for a node with ``detail`` > bound parents, 3 for a directed
        cycle. Acyclicity by peeling: repeatedly remove the nodes with no remaining
        parent; a cycle remains iff some node is never removed. O(Σ_i n_i³).
    """
    out = np.zeros(3, dtype=np.int64)
    for i in range(n_nodes.shape[0]):
        n = n_nodes[i]
        base = offsets[i]
        parents = np.zeros(n, dtype=np.int64)
        for p in range(n):
            for c in range(n):
                if y[base + p * n + c] != 0:
                    if p == c:
                        out[0] = i
                        out[1] = 1
                        return out
                    parents[c] |= np.int64(1) << p
        for c in range(n):
            count = _popcount(parents[c])
            if count > bounds[i]:
                out[0] = i
                out[1] = 2
                out[2] = count
                return out
        if not _acyclic(parents, n):
            out[0] = i
            out[1] = 3
            return out
    return out


# ---------------------------------------------------------------------------------------
# Neighbourhoods and uniform draws without enumeration
# ---------------------------------------------------------------------------------------


@njit(inline="always")
def _offer_flip(parents, p, c, n, bound, forbidden, paths, base, count, write):
    """Flip the arc p -> c of ``parents``, count the graph (and write it as candidate
    ``count`` when ``write``) if it is valid, flip the arc back; the new count."""
    parents[c] ^= np.int64(1) << p
    if _valid_parents(parents, n, bound, forbidden):
        if write:
            _write_candidate(paths, base, n, parents, count)
        count += 1
    parents[c] ^= np.int64(1) << p
    return count


@njit(**_NJIT)
def _valid_parents(parents, n, bound, forbidden):
    """Whether the graph with parent masks ``parents`` (n,) has at most ``bound``
    parents per node, no forbidden arc (``forbidden[c]``: the parents p whose arc p -> c
    scores -inf) and no directed cycle (:func:`_acyclic`)."""
    for c in range(n):
        if _popcount(parents[c]) > bound or (parents[c] & forbidden[c]) != 0:
            return False
    return _acyclic(parents, n)


@njit(**_NJIT)
def _write_candidate(paths, base, n, parents, column):
    for p in range(n):
        for c in range(n):
            paths[base + p * n + c, column] = (parents[c] >> p) & 1


@njit(parallel=True, **_NJIT)
def local_neighbours(unary, offsets, n_nodes, bounds, y, k, paths, write):
    """The valid DAGs at Hamming distance 1 .. k (k <= 2) from the graphs ``y``, by
    generating the candidates: every single flip of an off-diagonal adjacency entry
    (add or remove an arc), and for k = 2 every pair of flips (which includes the
    reversals). A candidate is kept when :func:`_valid_parents` holds.

    Order: distance 1, then 2; within one distance the changed raveled entries in
    lexicographic order (e, then e1 < e2 lexicographically). O(n⁴ · n²) per example for
    k = 2 with n nodes (n² (n − 1)² / 2 candidates, an O(n²) check each), no enumeration.

    Parameters
    ----------
    unary : ndarray of shape (Σ_i n_i²,)
        Arc scores, row-major [parent, child] per example.
    offsets : ndarray of shape (n_examples + 1,), int64
    n_nodes, bounds : ndarray of shape (n_examples,), int64
        Nodes and the most parents of a node of every example.
    y : ndarray of shape (Σ_i n_i²,), int64
        0/1 adjacency matrices with zero diagonals (acyclicity not required).
    k : int, 1 or 2
    paths : ndarray of shape (Σ_i n_i², >= max(counts)), int64
        Written when ``write``: column r of example i holds its r-th neighbour.
    write : bool

    Returns
    -------
    counts : ndarray of shape (n_examples,), int64
    """
    g = n_nodes.shape[0]
    counts = np.zeros(g, dtype=np.int64)
    for i in prange(g):
        n = n_nodes[i]
        base = offsets[i]
        bound = bounds[i]
        parents = np.zeros(n, dtype=np.int64)
        forbidden = np.zeros(n, dtype=np.int64)
        for p in range(n):
            for c in range(n):
                if y[base + p * n + c] != 0:
                    parents[c] |= np.int64(1) << p
                if p != c and unary[base + p * n + c] == -np.inf:
                    forbidden[c] |= np.int64(1) << p
        count = 0
        n2 = n * n
        for e in range(n2):
            p, c = e // n, e % n
            if p == c:
                continue
            count = _offer_flip(parents, p, c, n, bound, forbidden, paths, base, count,
                                write)
        if k >= 2:
            for e1 in range(n2):
                p1, c1 = e1 // n, e1 % n
                if p1 == c1:
                    continue
                parents[c1] ^= np.int64(1) << p1
                for e2 in range(e1 + 1, n2):
                    p2, c2 = e2 // n, e2 % n
                    if p2 == c2:
                        continue
                    count = _offer_flip(parents, p2, c2, n, bound, forbidden, paths, base,
                                        count, write)
                parents[c1] ^= np.int64(1) << p1
        counts[i] = count
    return counts


@njit(**_NJIT)
def _binomials(size):
    C = np.zeros((size + 1, size + 1))
    for m in range(size + 1):
        C[m, 0] = 1.0
        for j in range(1, m + 1):
            C[m, j] = C[m - 1, j - 1] + C[m - 1, j]
    return C


@njit(**_NJIT)
def _parent_sets(C, m, bound):
    """Σ_{j <= bound} C(m, j): the subsets of at most ``bound`` of ``m`` candidates."""
    total = 0.0
    for j in range(min(m, bound) + 1):
        total += C[m, j]
    return total


@njit(**_NJIT)
def _linear_extensions(parents, n, F):
    """The number of topological orders of the DAG ``parents``: F(S) = Σ_{v ∈ S,
    parents(v) ⊆ S \\ v} F(S \\ v) over the subsets S, F(∅) = 1 (0 unless S is closed
    under parents); O(2^n n)."""
    F[0] = 1.0
    for S in range(1, 1 << n):
        total = 0.0
        for v in range(n):
            if (S >> v) & 1:
                rest = S ^ (np.int64(1) << v)
                if (parents[v] & ~rest) == 0:
                    total += F[rest]
        F[S] = total
    return F[(1 << n) - 1]


@njit(parallel=True, **_NJIT)
def sample_uniform_dags(unary, offsets, n_nodes, bounds, n_draws, seeds, draws, proposals):
    """Uniform draws among the valid DAGs of every example, by rejection.

    A proposal draws a pair (π, G) uniformly among the pairs of a DAG G and one of its
    topological orders π: π with probability c(π) / Z, c(π) = Π_v a(v, pred_π(v)) where
    a(v, P) counts the allowed parent sets of v within P (at most ``bound`` parents, no
    arc scored -inf), sampled backwards from the subset DP Z(S) = Σ_{v ∈ S}
    Z(S \\ v) a(v, S \\ v); then every node's parents uniformly among its allowed sets
    within its predecessors. G is accepted with probability 1 / ext(G) (ext: its number
    of topological orders, :func:`_linear_extensions`), so an accepted G is uniform; the
    expected number of proposals per draw is Z / N for N valid DAGs. O(2^n n) per
    example for Z, O(2^n n + n²) per proposal.

    ``draws`` (Σ_i n_i², n_draws) is written; ``proposals`` (n_examples,) receives the
    number of proposals of every example. Random numbers: splitmix64 from ``seeds[i]``.
    """
    g = n_nodes.shape[0]
    C = _binomials(64)
    for i in prange(g):
        n = n_nodes[i]
        base = offsets[i]
        bound = bounds[i]
        state = np.empty(1, dtype=np.uint64)
        state[0] = seeds[i]
        allowed = np.zeros(n, dtype=np.int64)
        for p in range(n):
            for c in range(n):
                if p != c and unary[base + p * n + c] != -np.inf:
                    allowed[c] |= np.int64(1) << p
        full = (np.int64(1) << n) - 1
        Z = np.empty(1 << n)
        Z[0] = 1.0
        for S in range(1, 1 << n):
            total = 0.0
            for v in range(n):
                if (S >> v) & 1:
                    rest = S ^ (np.int64(1) << v)
                    total += Z[rest] * _parent_sets(C, _popcount(rest & allowed[v]), bound)
            Z[S] = total
        F = np.empty(1 << n)
        parents = np.zeros(n, dtype=np.int64)
        candidates = np.empty(n, dtype=np.int64)
        tried = 0
        for r in range(n_draws):
            while True:
                tried += 1
                S = full
                while S:  # the last node of S in π, then its parents among S \ v
                    u = next_uniform(state) * Z[S]
                    chosen = -1
                    for v in range(n):
                        if (S >> v) & 1:
                            rest = S ^ (np.int64(1) << v)
                            chosen = v
                            u -= Z[rest] * _parent_sets(
                                C, _popcount(rest & allowed[v]), bound)
                            if u < 0.0:
                                break
                    v = chosen
                    S ^= np.int64(1) << v
                    pool = S & allowed[v]
                    m = 0
                    for q in range(n):
                        if (pool >> q) & 1:
                            candidates[m] = q
                            m += 1
                    u = next_uniform(state) * _parent_sets(C, m, bound)
                    size = 0
                    top = min(m, bound)
                    while size < top:
                        u -= C[m, size]
                        if u < 0.0:
                            break
                        size += 1
                    mask = np.int64(0)
                    need = size
                    for j in range(m):  # selection sampling: `size` of the m candidates
                        if need == 0:
                            break
                        if next_uniform(state) * (m - j) < need:
                            mask |= np.int64(1) << candidates[j]
                            need -= 1
                    parents[v] = mask
                if next_uniform(state) * _linear_extensions(parents, n, F) < 1.0:
                    break
            for p in range(n):
                for c in range(n):
                    draws[base + p * n + c, r] = (parents[c] >> p) & 1
        proposals[i] = tried
    return proposals


@njit(parallel=True, **_NJIT)
def count_dags(unary, offsets, n_nodes, bounds):
    """The number of valid DAGs of every example (at most ``bounds[i]`` parents per
    node, no arc scored -inf), without enumeration: inclusion-exclusion over the set T
    of sinks, a(S) = Σ_{∅ ≠ T ⊆ S} (−1)^{|T|+1} a(S \\ T) Π_{v ∈ T} A(v, S \\ T),
    a(∅) = 1, A(v, P) the allowed parent sets of v within P (the sinks' parents lie
    outside T and the other nodes' parents outside T too). O(3^n n) per example."""
    g = n_nodes.shape[0]
    out = np.empty(g)
    C = _binomials(64)
    for i in prange(g):
        n = n_nodes[i]
        base = offsets[i]
        bound = bounds[i]
        allowed = np.zeros(n, dtype=np.int64)
        for p in range(n):
            for c in range(n):
                if p != c and unary[base + p * n + c] != -np.inf:
                    allowed[c] |= np.int64(1) << p
        a = np.empty(1 << n)
        a[0] = 1.0
        for S in range(1, 1 << n):
            total = 0.0
            T = S
            while T:
                rest = S ^ T
                term = a[rest]
                for v in range(n):
                    if (T >> v) & 1:
                        term *= _parent_sets(C, _popcount(rest & allowed[v]), bound)
                total += term if _popcount(T) % 2 == 1 else -term
                T = (T - 1) & S
            a[S] = total
        out[i] = a[(1 << n) - 1]
    return out
