"""Compiled inference over batches of arc-factored dependency trees.

Every batch kernel takes the stacked arc scores ``unary`` (Σ_i n_i²,), the token
``offsets`` (n_sentences + 1,) and the block offsets ``unary_offsets`` (n_sentences + 1,),
and runs one sentence per parallel iteration. Sentence ``i`` has n = n_i tokens and arc
scores A[m, h] = ``unary[unary_offsets[i] + m * n + h]``: the score of token h heading
token m for h ≠ m, and of m attaching to the root for h = m. Outputs are encoded states,
one per token: the head's index, or the token's own index for the root.

Inside the per-sentence routines the root is node 0 and token t is node t + 1 (MAP), or
position 0 and t + 1 on the line (Eisner's spans).

* ``chu_liu_edmonds``: maximum spanning arborescence (non-projective MAP), O(n²).
* ``eisner``: best projective tree, O(n³).
* ``matrix_tree``: log-partition and arc marginals over non-projective trees by
  cancellation-free elimination of the Laplacian, O(n³).
* ``eisner_inside_outside``: log-partition and arc marginals over projective trees, O(n³).
"""

import numpy as np
from numba import njit, prange

from .._core.sampling import alternative_value, first_change, next_change, next_uniform

_NJIT = dict(cache=True, nogil=True)
# Reassociation lets sums over split points and over tokens vectorize; no flag assumes
# finite values.
_FAST = {"reassoc", "contract", "arcp", "nsz"}

#: Largest spread (max − min) of the arc scores into any one token (root included) for
#: which ``matrix_tree`` eliminates in linear space after a per-token shift; beyond it,
#: the sentence is eliminated in log space. Below the limit every shifted weight is at
#: least exp(-LINEAR_SPREAD_LIMIT), far above the double-precision underflow at exp(-708),
#: so every quantity of the elimination stays accurately representable.
LINEAR_SPREAD_LIMIT = 500.0


@njit(**_NJIT)
def max_row_spread(block):
    """max over modifiers m of (max_h block[m, h] − min_h block[m, h]): the spread that
    decides between the linear-space and the log-space matrix-tree elimination."""
    n = block.shape[0]
    spread = 0.0
    for m in range(n):
        lo, hi = block[m, 0], block[m, 0]
        for h in range(1, n):
            lo = min(lo, block[m, h])
            hi = max(hi, block[m, h])
        spread = max(spread, hi - lo)
    return spread


@njit(**_NJIT)
def _copy_block(unary, start, n):
    block = np.empty((n, n))
    for m in range(n):
        for h in range(n):
            block[m, h] = unary[start + m * n + h]
    return block


@njit(**_NJIT)
def _store_block(out, start, block, n):
    """The inverse of :func:`_copy_block`: write an (n, n) block back into the flat array."""
    for m in range(n):
        for h in range(n):
            out[start + m * n + h] = block[m, h]


# --------------------------------------------------------------------------------------
# Chu–Liu–Edmonds


@njit(inline="always")
def _beats(k1, w1, k2, w2):
    """Whether the weight (k1, w1) exceeds (k2, w2) lexicographically; w = -inf is no arc."""
    if w1 == -np.inf:
        return False
    if w2 == -np.inf:
        return True
    return k1 > k2 or (k1 == k2 and w1 > w2)


@njit(**_NJIT)
def _best_head(W, K, active, v, n_nodes):
    best = -1
    bk = 0
    bw = -np.inf
    for u in range(n_nodes):
        if u != v and active[u] and _beats(K[u, v], W[u, v], bk, bw):
            best = u
            bk = K[u, v]
            bw = W[u, v]
    return best


def cle_workspace(n):
    """Sizes (n_floats, n_ints) of the scratch :func:`arborescence_one` needs for n tokens."""
    size = 2 * n + 1
    return size * size, 3 * size * size + 9 * size


@njit(**_NJIT)
def arborescence_one(arc, n, single_root, states, floats, ints):
    """Maximum spanning arborescence of one sentence (Chu–Liu–Edmonds), into ``states``.

    Parameters
    ----------
    arc : ndarray of shape (n * n,)
        The sentence's arc scores, modifier-major: arc[m * n + h] scores head h for token
        m, arc[m * n + m] the root.
    n : int
    single_root : bool
    states : ndarray of shape (n,), int64
        Receives the encoded tree.
    floats, ints : ndarray, float64 and int64
        Scratch of at least the sizes :func:`cle_workspace` gives; nothing is allocated.

    Notes
    -----
    Arc weights are pairs (k, w) compared lexicographically: w is the arc score and k is
    -1 on root arcs when ``single_root`` (else 0). A tree's k is minus its number of root
    children, so the best tree has one root child and is the best such tree: the
    algorithm is exact for weights in any totally ordered abelian group.

    Contraction is lazy: every node keeps its best incoming arc; a walk along these arcs
    from every node either reaches the root (the nodes walked are settled) or closes a
    cycle, which is contracted into a new node whose incoming arcs are reduced by the
    cycle arcs they would replace. Each arc of the current graph remembers the original
    arc it stands for, which expands the contractions in reverse order. Node 0 is the
    root and token t is node t + 1; the arc matrices are filled for the n + 1 original
    nodes and, when a node is created, for its row and column only, so a sentence
    without cycles costs O(n²) with a small constant.
    """
    size = 2 * n + 1
    square = size * size
    W = floats[:square].reshape((size, size))
    K = ints[:square].reshape((size, size))
    src = ints[square : 2 * square].reshape((size, size))
    dst = ints[2 * square : 3 * square].reshape((size, size))
    vectors = ints[3 * square : 3 * square + 9 * size]
    active = vectors[:size]
    settled = vectors[size : 2 * size]
    parent = vectors[2 * size : 3 * size]
    best_in = vectors[3 * size : 4 * size]
    queue = vectors[4 * size : 5 * size]
    mark = vectors[5 * size : 6 * size]
    cycle = vectors[6 * size : 7 * size]
    in_src = vectors[7 * size : 8 * size]
    in_dst = vectors[8 * size : 9 * size]
    root_key = -1 if single_root else 0
    for m in range(1, n + 1):
        W[0, m] = arc[(m - 1) * n + m - 1]
        K[0, m] = root_key
        src[0, m] = 0
        dst[0, m] = m
        W[m, m] = -np.inf
        K[m, m] = 0
        for h in range(1, n + 1):
            if h != m:
                W[h, m] = arc[(m - 1) * n + h - 1]
                K[h, m] = 0
                src[h, m] = h
                dst[h, m] = m
    for v in range(size):
        active[v] = 1 if v <= n else 0
        settled[v] = 0
        parent[v] = -1
        best_in[v] = -1
        mark[v] = 0
    settled[0] = 1
    for v in range(1, n + 1):
        best_in[v] = _best_head(W, K, active, v, n + 1)
    for v in range(n):
        queue[v] = v + 1
    q_head, q_tail = 0, n
    walk = 0
    n_nodes = n + 1
    while q_head < q_tail:
        v = queue[q_head]
        q_head += 1
        if not active[v] or settled[v]:
            continue
        walk += 1
        u = v
        while not settled[u] and mark[u] != walk:
            mark[u] = walk
            u = best_in[u]
        if settled[u]:
            u = v
            while not settled[u]:
                settled[u] = 1
                u = best_in[u]
            continue
        # u lies on a cycle: contract it into the new node c
        c = n_nodes
        n_nodes += 1
        for x in range(c + 1):
            W[x, c] = -np.inf
            K[x, c] = 0
            W[c, x] = -np.inf
            K[c, x] = 0
        length = 0
        x = u
        while True:
            cycle[length] = x
            length += 1
            parent[x] = c
            x = best_in[x]
            if x == u:
                break
        for x in range(c):
            if not active[x] or parent[x] == c:
                continue
            bk, bw, arg = 0, -np.inf, -1
            for t in range(length):
                y = cycle[t]
                if W[x, y] == -np.inf:
                    continue
                b = best_in[y]
                kk = K[x, y] - K[b, y]
                ww = W[x, y] - W[b, y]
                if _beats(kk, ww, bk, bw):
                    bk, bw, arg = kk, ww, y
            if arg >= 0:
                W[x, c] = bw
                K[x, c] = bk
                src[x, c] = src[x, arg]
                dst[x, c] = dst[x, arg]
            if x == 0:
                continue
            bk, bw, arg = 0, -np.inf, -1
            for t in range(length):
                y = cycle[t]
                if _beats(K[y, x], W[y, x], bk, bw):
                    bk, bw, arg = K[y, x], W[y, x], y
            if arg >= 0:
                W[c, x] = bw
                K[c, x] = bk
                src[c, x] = src[arg, x]
                dst[c, x] = dst[arg, x]
        for t in range(length):
            active[cycle[t]] = 0
        active[c] = 1
        for x in range(c):
            if active[x] and best_in[x] >= 0 and parent[best_in[x]] == c:
                best_in[x] = c
        best_in[c] = _best_head(W, K, active, c, c + 1)
        queue[q_tail] = c
        q_tail += 1
    # expand: the arc into every node, as an original (head, modifier) pair
    for x in range(n_nodes):
        in_src[x] = -1
        in_dst[x] = -1
    for x in range(1, n_nodes):
        if active[x]:
            b = best_in[x]
            in_src[x] = src[b, x]
            in_dst[x] = dst[b, x]
    for c in range(n_nodes - 1, n, -1):
        d = in_dst[c]
        entered = d
        while parent[entered] != c:
            entered = parent[entered]
        for x in range(c):
            if parent[x] != c:
                continue
            if x == entered:
                in_src[x] = in_src[c]
                in_dst[x] = d
            else:
                b = best_in[x]
                in_src[x] = src[b, x]
                in_dst[x] = dst[b, x]
    for m in range(1, n + 1):
        h = in_src[m]
        states[m - 1] = m - 1 if h == 0 else h - 1


@njit(parallel=True, **_NJIT)
def chu_liu_edmonds(unary, offsets, unary_offsets, single_root):
    """Best non-projective tree of every sentence (:func:`arborescence_one` each).

    Returns
    -------
    states : ndarray of shape (n_tokens,), int64
    best : ndarray of shape (n_sentences,)
        The score of each best tree.
    """
    n_sent = offsets.shape[0] - 1
    states = np.empty(offsets[-1], dtype=np.int64)
    best = np.empty(n_sent)
    for s in prange(n_sent):
        a, n, start = offsets[s], offsets[s + 1] - offsets[s], unary_offsets[s]
        size = 2 * n + 1
        floats = np.empty(size * size)
        ints = np.empty(3 * size * size + 9 * size, dtype=np.int64)
        arborescence_one(unary[start : start + n * n], n, single_root,
                         states[a : a + n], floats, ints)
        total = 0.0
        for m in range(n):
            total += unary[start + m * n + states[a + m]]
        best[s] = total
    return states, best


# --------------------------------------------------------------------------------------
# Eisner
#
# Spans over positions 0 (the root) .. n: complete right CR[i, j] (head i and its
# descendants up to j), complete left CL[i, j] (head j), incomplete right IR[i, j] (the arc
# i → j and what lies between) and incomplete left IL[i, j] (the arc j → i). The root
# heads no left span. Every recursion combines a row of one chart with a column of
# another; charts read by column are kept transposed (CRt[j, i] = CR[i, j], CLt, ILt) so
# that the inner loops run over contiguous memory. B[i, j] combines CR[i, q] and
# CL[q + 1, j], the part IR[i, j] and IL[i, j] share. With ``single_root`` the root's
# incomplete spans IR[0, j] take only the split q = 0, so the root has one child.

#: The linear-space inside pass is kept when log Z' >= 2 n - EISNER_LINEAR_FLOOR, with Z'
#: the partition function of the scores shifted by the best score into every token. Then
#: spans that underflow (below exp(-708)) lose less than 6.75^n exp(-708) / Z' <= exp(-38)
#: of Z' (each weight is at most 1 and there are fewer than 6.75^n projective trees).
EISNER_LINEAR_FLOOR = 670.0


@njit(**_NJIT)
def _position_scores(block):
    """S[h, m]: the score of position h heading position m (position 0 is the root)."""
    n = block.shape[0]
    S = np.full((n + 1, n + 1), -np.inf)
    for m in range(1, n + 1):
        S[0, m] = block[m - 1, m - 1]
        for h in range(1, n + 1):
            if h != m:
                S[h, m] = block[m - 1, h - 1]
    return S


def eisner_workspace(n):
    """Sizes (n_floats, n_ints) of the scratch :func:`eisner_one` needs for n tokens."""
    size = n + 1
    return 6 * size * size, 3 * size * size + 3 * (4 * size + 4)


@njit(inline="always")
def _position_score(arc, n, h, m):
    """The score of position h heading position m (position 0 is the root; h ≠ m, m ≥ 1)."""
    return arc[(m - 1) * n + (m - 1 if h == 0 else h - 1)]


@njit(**_NJIT)
def eisner_one(arc, n, single_root, states, floats, ints):
    """Best projective tree of one sentence, into ``states`` (Eisner 1996).

    Parameters
    ----------
    arc : ndarray of shape (n * n,)
        The sentence's arc scores, modifier-major (see :func:`arborescence_one`).
    n : int
    single_root : bool
    states : ndarray of shape (n,), int64
        Receives the encoded tree.
    floats, ints : ndarray, float64 and int64
        Scratch of at least the sizes :func:`eisner_workspace` gives; nothing is
        allocated. Every chart entry is written before it is read, except the diagonals,
        which are zeroed here.
    """
    size = n + 1
    square = size * size
    CR = floats[:square].reshape((size, size))
    CRt = floats[square : 2 * square].reshape((size, size))
    CL = floats[2 * square : 3 * square].reshape((size, size))
    CLt = floats[3 * square : 4 * square].reshape((size, size))
    IR = floats[4 * square : 5 * square].reshape((size, size))
    ILt = floats[5 * square : 6 * square].reshape((size, size))
    split = ints[:square].reshape((size, size))
    split_cr = ints[square : 2 * square].reshape((size, size))
    split_cl = ints[2 * square : 3 * square].reshape((size, size))
    for i in range(size):
        CR[i, i] = 0.0
        CRt[i, i] = 0.0
        CL[i, i] = 0.0
        CLt[i, i] = 0.0
    for w in range(1, size):
        for i in range(size - w):
            j = i + w
            q_end = i + 1 if (single_root and i == 0) else j
            top, arg = -np.inf, i
            for q in range(i, q_end):
                v = CR[i, q] + CLt[j, q + 1]
                if v > top:
                    top, arg = v, q
            split[i, j] = arg
            IR[i, j] = top + _position_score(arc, n, i, j)
            if i > 0:
                ILt[j, i] = top + _position_score(arc, n, j, i)
                top, arg = -np.inf, i
                for q in range(i, j):
                    v = CL[i, q] + ILt[j, q]
                    if v > top:
                        top, arg = v, q
                CL[i, j] = top
                CLt[j, i] = top
                split_cl[i, j] = arg
            else:
                ILt[j, i] = -np.inf
                CL[i, j] = -np.inf
                CLt[j, i] = -np.inf
            top, arg = -np.inf, j
            for q in range(i + 1, j + 1):
                v = IR[i, q] + CRt[j, q]
                if v > top:
                    top, arg = v, q
            CR[i, j] = top
            CRt[j, i] = top
            split_cr[i, j] = arg
    # backtrack from CR[0, n]; span kinds 0 = CR, 1 = CL, 2 = IR, 3 = IL
    depth = 4 * size + 4
    kind = ints[3 * square : 3 * square + depth]
    left = ints[3 * square + depth : 3 * square + 2 * depth]
    right = ints[3 * square + 2 * depth : 3 * square + 3 * depth]
    kind[0], left[0], right[0] = 0, 0, n
    sp = 1
    while sp > 0:
        sp -= 1
        t, i, j = kind[sp], left[sp], right[sp]
        if i == j:
            continue
        if t == 0:
            q = split_cr[i, j]
            kind[sp], left[sp], right[sp] = 2, i, q
            kind[sp + 1], left[sp + 1], right[sp + 1] = 0, q, j
        elif t == 1:
            q = split_cl[i, j]
            kind[sp], left[sp], right[sp] = 1, i, q
            kind[sp + 1], left[sp + 1], right[sp + 1] = 3, q, j
        else:
            if t == 2:
                states[j - 1] = j - 1 if i == 0 else i - 1
            else:
                states[i - 1] = j - 1
            q = split[i, j]
            kind[sp], left[sp], right[sp] = 0, i, q
            kind[sp + 1], left[sp + 1], right[sp + 1] = 1, q + 1, j
        sp += 2


@njit(parallel=True, **_NJIT)
def eisner(unary, offsets, unary_offsets, single_root):
    """Best projective tree of every sentence (:func:`eisner_one` each).

    Returns
    -------
    states : ndarray of shape (n_tokens,), int64
    best : ndarray of shape (n_sentences,)
    """
    n_sent = offsets.shape[0] - 1
    states = np.empty(offsets[-1], dtype=np.int64)
    best = np.empty(n_sent)
    for s in prange(n_sent):
        a, n, start = offsets[s], offsets[s + 1] - offsets[s], unary_offsets[s]
        size = n + 1
        floats = np.empty(6 * size * size)
        ints = np.empty(3 * size * size + 3 * (4 * size + 4), dtype=np.int64)
        eisner_one(unary[start : start + n * n], n, single_root, states[a : a + n],
                   floats, ints)
        total = 0.0
        for m in range(n):
            total += unary[start + m * n + states[a + m]]
        best[s] = total
    return states, best


@njit(fastmath=_FAST, **_NJIT)
def _eisner_inside_linear(block, single_root, CR, CRt, CL, CLt, IR, ILt, B):
    """Inside pass in linear space, into the zeroed charts; returns the total shift.

    Arc weights are exp(score − c_m), with c_m the best score into token m; every tree
    has one arc into every token, so log Z = Σ_m c_m + log CR[0, n].
    """
    n = block.shape[0]
    size = n + 1
    weight = np.zeros((size, size))  # weight[h, m]: position h heading position m
    shift = 0.0
    for m in range(1, size):
        top = block[m - 1, 0]
        for h in range(1, n):
            top = max(top, block[m - 1, h])
        shift += top
        weight[0, m] = np.exp(block[m - 1, m - 1] - top)
        for h in range(1, size):
            if h != m:
                weight[h, m] = np.exp(block[m - 1, h - 1] - top)
    for i in range(size):
        CR[i, i] = 1.0
        CRt[i, i] = 1.0
        CL[i, i] = 1.0
        CLt[i, i] = 1.0
    for w in range(1, size):
        for i in range(size - w):
            j = i + w
            q_end = i + 1 if (single_root and i == 0) else j
            acc = 0.0
            for q in range(i, q_end):
                acc += CR[i, q] * CLt[j, q + 1]
            B[i, j] = acc
            IR[i, j] = acc * weight[i, j]
            if i > 0:
                ILt[j, i] = acc * weight[j, i]
                acc = 0.0
                for q in range(i, j):
                    acc += CL[i, q] * ILt[j, q]
                CL[i, j] = acc
                CLt[j, i] = acc
            acc = 0.0
            for q in range(i + 1, j + 1):
                acc += IR[i, q] * CRt[j, q]
            CR[i, j] = acc
            CRt[j, i] = acc
    return shift


@njit(inline="always")
def _share_factor(g, x):
    """g / x, or 0 when the product with terms below x could overflow (x tiny)."""
    return g / x if x >= 1e-300 else 0.0


@njit(**_NJIT)
def _eisner_outside_linear(n, single_root, CR, CRt, CL, CLt, IR, ILt, B, marg):
    """Arc marginals from the linear-space charts, into ``marg``.

    Reverse-mode differentiation of log Z in the probability domain: g[X] = ∂ log Z /
    ∂ log X is the marginal probability of span X, split among the terms a b of X by their
    shares a b / X ≤ 1. The marginal of arc i → j is g[IR[i, j]]. Adjoints of charts read
    by row and by column accumulate in two arrays, added when read.
    """
    size = n + 1
    gCR = np.zeros((size, size))
    gCRt = np.zeros((size, size))
    gCL = np.zeros((size, size))
    gCLt = np.zeros((size, size))
    gIR = np.zeros((size, size))
    gILt = np.zeros((size, size))
    gCR[0, n] = 1.0
    for w in range(n, 0, -1):
        for i in range(size - w):
            j = i + w
            g = gCR[i, j] + gCRt[j, i]
            x = CR[i, j]
            if g != 0.0 and x > 0.0:
                f = _share_factor(g, x)
                for q in range(i + 1, j + 1):
                    term = IR[i, q] * CRt[j, q]
                    p = f * term if f > 0.0 else g * (term / x)
                    gIR[i, q] += p
                    gCRt[j, q] += p
            if i > 0:
                g = gCL[i, j] + gCLt[j, i]
                x = CL[i, j]
                if g != 0.0 and x > 0.0:
                    f = _share_factor(g, x)
                    for q in range(i, j):
                        term = CL[i, q] * ILt[j, q]
                        p = f * term if f > 0.0 else g * (term / x)
                        gCL[i, q] += p
                        gILt[j, q] += p
            g = gIR[i, j] + gILt[j, i]
            x = B[i, j]
            if g != 0.0 and x > 0.0:
                f = _share_factor(g, x)
                q_end = i + 1 if (single_root and i == 0) else j
                for q in range(i, q_end):
                    term = CR[i, q] * CLt[j, q + 1]
                    p = f * term if f > 0.0 else g * (term / x)
                    gCR[i, q] += p
                    gCLt[j, q + 1] += p
            if i == 0:
                marg[j - 1, j - 1] = gIR[i, j]
            else:
                marg[j - 1, i - 1] = gIR[i, j]
                marg[i - 1, j - 1] = gILt[j, i]


@njit(**_NJIT)
def _eisner_inside_outside_log(block, single_root, with_marginals, marg):
    """Log Z and arc marginals of one sentence with every chart in log space.

    The inside pass is Eisner's recursion in the log semiring; the backward pass splits
    every span's marginal among its terms by their softmax weights exp(term − X) ≤ 1.
    """
    n = block.shape[0]
    size = n + 1
    S = _position_scores(block)
    CR = np.zeros((size, size))
    CRt = np.zeros((size, size))
    CL = np.zeros((size, size))
    CLt = np.zeros((size, size))
    IR = np.zeros((size, size))
    ILt = np.zeros((size, size))
    B = np.zeros((size, size))
    for w in range(1, size):
        for i in range(size - w):
            j = i + w
            q_end = i + 1 if (single_root and i == 0) else j
            top = -np.inf
            for q in range(i, q_end):
                top = max(top, CR[i, q] + CLt[j, q + 1])
            acc = 0.0
            for q in range(i, q_end):
                acc += np.exp(CR[i, q] + CLt[j, q + 1] - top)
            B[i, j] = top + np.log(acc)
            IR[i, j] = B[i, j] + S[i, j]
            if i > 0:
                ILt[j, i] = B[i, j] + S[j, i]
                top = -np.inf
                for q in range(i, j):
                    top = max(top, CL[i, q] + ILt[j, q])
                acc = 0.0
                for q in range(i, j):
                    acc += np.exp(CL[i, q] + ILt[j, q] - top)
                CL[i, j] = top + np.log(acc)
            else:
                ILt[j, i] = -np.inf
                CL[i, j] = -np.inf
            CLt[j, i] = CL[i, j]
            top = -np.inf
            for q in range(i + 1, j + 1):
                top = max(top, IR[i, q] + CRt[j, q])
            acc = 0.0
            for q in range(i + 1, j + 1):
                acc += np.exp(IR[i, q] + CRt[j, q] - top)
            CR[i, j] = top + np.log(acc)
            CRt[j, i] = CR[i, j]
    log_z = CR[0, n]
    if not with_marginals:
        return log_z
    gCR = np.zeros((size, size))
    gCRt = np.zeros((size, size))
    gCL = np.zeros((size, size))
    gCLt = np.zeros((size, size))
    gIR = np.zeros((size, size))
    gILt = np.zeros((size, size))
    gCR[0, n] = 1.0
    for w in range(n, 0, -1):
        for i in range(size - w):
            j = i + w
            g = gCR[i, j] + gCRt[j, i]
            if g != 0.0:
                x = CR[i, j]
                for q in range(i + 1, j + 1):
                    p = g * np.exp(IR[i, q] + CRt[j, q] - x)
                    gIR[i, q] += p
                    gCRt[j, q] += p
            if i > 0:
                g = gCL[i, j] + gCLt[j, i]
                if g != 0.0:
                    x = CL[i, j]
                    for q in range(i, j):
                        p = g * np.exp(CL[i, q] + ILt[j, q] - x)
                        gCL[i, q] += p
                        gILt[j, q] += p
            g = gIR[i, j] + gILt[j, i]
            if g != 0.0:
                x = B[i, j]
                q_end = i + 1 if (single_root and i == 0) else j
                for q in range(i, q_end):
                    p = g * np.exp(CR[i, q] + CLt[j, q + 1] - x)
                    gCR[i, q] += p
                    gCLt[j, q + 1] += p
            if i == 0:
                marg[j - 1, j - 1] = gIR[i, j]
            else:
                marg[j - 1, i - 1] = gIR[i, j]
                marg[i - 1, j - 1] = gILt[j, i]
    return log_z


@njit(**_NJIT)
def _eisner_inside_outside(block, single_root, with_marginals, marg, log_space):
    """log Z of one sentence over projective trees, and arc marginals into ``marg``.

    Linear space after a per-token shift when that is accurate (``EISNER_LINEAR_FLOOR``),
    log space otherwise.
    """
    n = block.shape[0]
    if not log_space and n < 300:
        size = n + 1
        CR = np.zeros((size, size))
        CRt = np.zeros((size, size))
        CL = np.zeros((size, size))
        CLt = np.zeros((size, size))
        IR = np.zeros((size, size))
        ILt = np.zeros((size, size))
        B = np.zeros((size, size))
        shift = _eisner_inside_linear(block, single_root, CR, CRt, CL, CLt, IR, ILt, B)
        z = CR[0, n]
        if z > 0.0 and z < np.inf and np.log(z) >= 2.0 * n - EISNER_LINEAR_FLOOR:
            if with_marginals:
                _eisner_outside_linear(n, single_root, CR, CRt, CL, CLt, IR, ILt, B, marg)
            return shift + np.log(z)
    return _eisner_inside_outside_log(block, single_root, with_marginals, marg)


@njit(parallel=True, **_NJIT)
def eisner_inside_outside(
    unary, offsets, unary_offsets, single_root, with_marginals, log_space
):
    """Log-partition and arc marginals of every sentence over projective trees.

    Parameters
    ----------
    log_space : bool
        True runs every sentence in log space; False in linear space where that is
        accurate (``EISNER_LINEAR_FLOOR``), in log space elsewhere.

    Returns
    -------
    log_z : ndarray of shape (n_sentences,)
    marginals : ndarray of shape (Σ_i n_i²,)
        Laid out like ``unary``; empty when ``with_marginals`` is False.
    """
    n_sent = offsets.shape[0] - 1
    log_z = np.empty(n_sent)
    out = np.zeros(unary.shape[0] if with_marginals else 0)
    for s in prange(n_sent):
        n, start = offsets[s + 1] - offsets[s], unary_offsets[s]
        marg = np.zeros((n, n) if with_marginals else (0, 0))
        log_z[s] = _eisner_inside_outside(
            _copy_block(unary, start, n), single_root, with_marginals, marg, log_space
        )
        if with_marginals:
            _store_block(out, start, marg, n)
    return log_z, out


# --------------------------------------------------------------------------------------
# Matrix-tree theorem by cancellation-free elimination
#
# With weights w(h, m) = exp A[m, h] and root weights r(m) = exp A[m, m], the Laplacian
# L[h, m] = -w(h, m) (h ≠ m), L[m, m] = r(m) + Σ_{h ≠ m} w(h, m) has det L = Z, the sum
# over trees of the product of their weights (Koo et al. 2007; Tutte's matrix-tree
# theorem). L is a column diagonally dominant M-matrix whose column m has "excess" r(m).
# Gaussian elimination of node k (in order 0 .. n - 1) keeps that structure:
#
#     p_k = e_k + Σ_{h > k} W[h, k]                 (the pivot L[k, k])
#     W[h, m] += W[h, k] W[k, m] / p_k              (h, m > k, off-diagonal magnitudes)
#     e_m += e_k W[k, m] / p_k                      (m > k, column excesses)
#
# and Z = Π_k p_k. Every update adds non-negative numbers, so the pivots keep a small
# relative error however peaked the distribution (Grassmann, Taksar & Heyman 1985), whereas
# LU with a subtracted diagonal, or marginals from L⁻¹ as differences of its entries,
# lose every digit when the trees' total weight is tiny relative to the entries.
#
# Trees with a single root child: Z₁ = [λ¹] det L(λ r). Expanding the elimination to
# first order in λ, pivots k < n - 1 leave the excess out (p_k = Σ_{h > k} W[h, k]),
# excesses propagate as above, and the last pivot is the excess e_{n-1}: Z₁ = Π_k p_k.
#
# Marginals are ∂ log Z / ∂ log w, obtained by reverse-mode differentiation of the
# elimination. The adjoint of the stage-k quantities is the arc marginal of the reduced
# graph, in [0, 1], and each step splits it by the share the old value and the new term
# have in their sum: the backward pass also only multiplies by shares in [0, 1] and adds,
# with one subtraction (1 − Σ) per pivot that costs an absolute error of a few ulps.


@njit(**_NJIT)
def _stage_offsets(n):
    """Start of the stored (n - k - 1)² block of elimination stage k, for every k."""
    out = np.zeros(n + 1, dtype=np.int64)
    for k in range(n):
        out[k + 1] = out[k] + (n - k - 1) * (n - k - 1)
    return out


@njit(fastmath=_FAST, **_NJIT)
def _matrix_tree_linear(block, single_root, with_marginals, marg):
    """log Z of one sentence, and ∂ log Z / ∂ A into ``marg``, in linear space.

    Weights are shifted by the largest score into each token (every tree has one arc into
    every token, so log Z gets the shifts back); needs a spread of at most
    ``LINEAR_SPREAD_LIMIT`` within each token's scores.
    """
    n = block.shape[0]
    W = np.empty((n, n))  # W[h, m]: weight of h heading m; the diagonal is unused
    e = np.empty(n)
    log_z = 0.0
    for m in range(n):
        top = block[m, 0]
        for h in range(1, n):
            top = max(top, block[m, h])
        log_z += top
        for h in range(n):
            W[h, m] = np.exp(block[m, h] - top)
        e[m] = W[m, m]
        W[m, m] = 1.0
    pivot = np.empty(n)
    e_stage = np.empty(n)
    offsets = _stage_offsets(n)
    store = np.empty(offsets[n] if with_marginals else 0)
    e_store = np.empty(n * (n - 1) // 2 if with_marginals else 0)
    e_pos = 0
    for k in range(n):
        with_excess = not single_root or k == n - 1
        p = e[k] if with_excess else 0.0
        for h in range(k + 1, n):
            p += W[h, k]
        pivot[k] = p
        e_stage[k] = e[k]
        log_z += np.log(p)
        ek = e[k] / p
        for m in range(k + 1, n):
            e[m] += ek * W[k, m]
        for h in range(k + 1, n):
            a = W[h, k] / p
            for m in range(k + 1, n):
                W[h, m] += a * W[k, m]
        if with_marginals:
            pos = offsets[k]
            for h in range(k + 1, n):
                for m in range(k + 1, n):
                    store[pos] = W[h, m]
                    pos += 1
            for m in range(k + 1, n):
                e_store[e_pos] = e[m]
                e_pos += 1
    if not with_marginals:
        return log_z
    G = np.zeros((n, n))  # adjoint of log W[h, m] at the current stage
    ge = np.zeros(n)
    grow = np.empty(n)
    for k in range(n - 1, -1, -1):
        size = n - k - 1
        pos = offsets[k]
        e_pos -= size
        p = pivot[k]
        pbar = 1.0
        for m in range(k + 1, n):
            grow[m] = 0.0
        for h in range(k + 1, n):
            a = W[h, k] / p
            gc = 0.0
            row = pos + (h - k - 1) * size - (k + 1)
            for m in range(k + 1, n):
                # G[h, h] stays 0 and the stored diagonal is positive: no term there
                g = G[h, m]
                t = g * (a * W[k, m] / store[row + m])
                G[h, m] = g - t
                gc += t
                grow[m] += t
            G[h, k] = gc
            pbar -= gc
        ek = e_stage[k] / p
        ek_bar = 0.0
        for m in range(k + 1, n):
            g = ge[m]
            r = g * (ek * W[k, m] / e_store[e_pos + m - k - 1])
            ge[m] = g - r
            grow[m] += r
            ek_bar += r
            pbar -= r
        for h in range(k + 1, n):
            G[h, k] += pbar * W[h, k] / p
        for m in range(k + 1, n):
            G[k, m] = grow[m]
        with_excess = not single_root or k == n - 1
        ge[k] = ek_bar + (pbar * ek if with_excess else 0.0)
    for m in range(n):
        for h in range(n):
            marg[m, h] = ge[m] if h == m else G[h, m]
    return log_z


@njit(inline="always")
def _logaddexp(x, y):
    if x > y:
        return x + np.log1p(np.exp(y - x))
    return y + np.log1p(np.exp(x - y))


@njit(**_NJIT)
def _matrix_tree_log(block, single_root, with_marginals, marg):
    """Same as :func:`_matrix_tree_linear` with every weight held by its logarithm."""
    n = block.shape[0]
    W = np.empty((n, n))  # log w(h, m)
    e = np.empty(n)
    for m in range(n):
        for h in range(n):
            W[h, m] = block[m, h]
        e[m] = block[m, m]
        W[m, m] = 0.0
    pivot = np.empty(n)
    e_stage = np.empty(n)
    offsets = _stage_offsets(n)
    store = np.empty(offsets[n] if with_marginals else 0)
    e_store = np.empty(n * (n - 1) // 2 if with_marginals else 0)
    e_pos = 0
    log_z = 0.0
    for k in range(n):
        with_excess = not single_root or k == n - 1
        top = e[k] if with_excess else -np.inf
        for h in range(k + 1, n):
            top = max(top, W[h, k])
        acc = np.exp(e[k] - top) if with_excess else 0.0
        for h in range(k + 1, n):
            acc += np.exp(W[h, k] - top)
        p = top + np.log(acc)
        pivot[k] = p
        e_stage[k] = e[k]
        log_z += p
        ek = e[k] - p
        for m in range(k + 1, n):
            e[m] = _logaddexp(e[m], ek + W[k, m])
        for h in range(k + 1, n):
            a = W[h, k] - p
            for m in range(k + 1, n):
                if m != h:
                    W[h, m] = _logaddexp(W[h, m], a + W[k, m])
        if with_marginals:
            pos = offsets[k]
            for h in range(k + 1, n):
                for m in range(k + 1, n):
                    store[pos] = W[h, m]
                    pos += 1
            for m in range(k + 1, n):
                e_store[e_pos] = e[m]
                e_pos += 1
    if not with_marginals:
        return log_z
    G = np.zeros((n, n))
    ge = np.zeros(n)
    grow = np.empty(n)
    for k in range(n - 1, -1, -1):
        size = n - k - 1
        pos = offsets[k]
        e_pos -= size
        p = pivot[k]
        pbar = 1.0
        for m in range(k + 1, n):
            grow[m] = 0.0
        for h in range(k + 1, n):
            a = W[h, k] - p
            gc = 0.0
            row = pos + (h - k - 1) * size - (k + 1)
            for m in range(k + 1, n):
                if m == h:
                    continue
                g = G[h, m]
                t = g * np.exp(a + W[k, m] - store[row + m])
                G[h, m] = g - t
                gc += t
                grow[m] += t
            G[h, k] = gc
            pbar -= gc
        ek = e_stage[k] - p
        ek_bar = 0.0
        for m in range(k + 1, n):
            g = ge[m]
            r = g * np.exp(ek + W[k, m] - e_store[e_pos + m - k - 1])
            ge[m] = g - r
            grow[m] += r
            ek_bar += r
            pbar -= r
        for h in range(k + 1, n):
            G[h, k] += pbar * np.exp(W[h, k] - p)
        for m in range(k + 1, n):
            G[k, m] = grow[m]
        with_excess = not single_root or k == n - 1
        ge[k] = ek_bar + (pbar * np.exp(ek) if with_excess else 0.0)
    for m in range(n):
        for h in range(n):
            marg[m, h] = ge[m] if h == m else G[h, m]
    return log_z


@njit(parallel=True, **_NJIT)
def matrix_tree(unary, offsets, unary_offsets, single_root, with_marginals, log_space):
    """Log-partition and arc marginals of every sentence over non-projective trees.

    Parameters
    ----------
    log_space : bool
        True eliminates every sentence in log space; False in linear space where the
        spread of each token's scores allows it (``LINEAR_SPREAD_LIMIT``), in log space
        elsewhere.

    Returns
    -------
    log_z : ndarray of shape (n_sentences,)
    marginals : ndarray of shape (Σ_i n_i²,)
        Laid out like ``unary``; empty when ``with_marginals`` is False.
    """
    n_sent = offsets.shape[0] - 1
    log_z = np.empty(n_sent)
    out = np.zeros(unary.shape[0] if with_marginals else 0)
    for s in prange(n_sent):
        n, start = offsets[s + 1] - offsets[s], unary_offsets[s]
        block = _copy_block(unary, start, n)
        spread = max_row_spread(block)
        marg = np.zeros((n, n) if with_marginals else (0, 0))
        if not log_space and spread <= LINEAR_SPREAD_LIMIT:
            log_z[s] = _matrix_tree_linear(block, single_root, with_marginals, marg)
        else:
            log_z[s] = _matrix_tree_log(block, single_root, with_marginals, marg)
        if with_marginals:
            _store_block(out, start, marg, n)
    return log_z, out


@njit(**_NJIT)
def non_projective_sentences(states, offsets):
    """1 for every sentence whose tree has crossing arcs (the root at position -1)."""
    n_sentences = offsets.shape[0] - 1
    out = np.zeros(n_sentences, dtype=np.int64)
    for i in range(n_sentences):
        start = offsets[i]
        n = offsets[i + 1] - start
        for m in range(n):
            h = states[start + m]
            head = -1 if h == m else h
            lo, hi = min(head, m), max(head, m)
            # Every arc from inside (lo, hi) must stay within [lo, hi].
            for k in range(lo + 1, hi):
                hk = states[start + k]
                head_k = -1 if hk == k else hk
                if head_k < lo or head_k > hi:
                    out[i] = 1
                    break
            if out[i]:
                break
    return out


# --------------------------------------------------------------------------------------
# Uniform sampling (Wilson's algorithm) and Hamming-k neighbourhoods
#
# The valid trees of a sentence are those whose arcs all have a finite score (and, with
# ``single_root``, one root child). Node n stands for the root in these routines.


@njit(**_NJIT)
def _reach(arc, n, target, reached, queue):
    """Mark ``reached[m]`` for every token with a path of allowed arcs from m up to
    ``target`` (a token, or n for the root: through an allowed root arc A[m, m]; token
    arcs only for a token target). Returns how many tokens are reached (the target
    token included)."""
    count = 0
    for m in range(n):
        reached[m] = False
    size = 0
    if target == n:
        for m in range(n):
            if arc[m * n + m] > -np.inf:
                reached[m] = True
                queue[size] = m
                size += 1
    else:
        reached[target] = True
        queue[0] = target
        size = 1
    head = 0
    while head < size:
        h = queue[head]
        head += 1
        count += 1
        for m in range(n):
            if not reached[m] and m != h and arc[m * n + h] > -np.inf:
                reached[m] = True
                queue[size] = m
                size += 1
    return count


@njit(**_NJIT)
def _wilson(choices, n_choices, n, root_child, state, nxt, in_tree, out):
    """One uniform spanning arborescence by Wilson's algorithm (loop-erased random walks
    towards the root).

    Token m walks to a uniform choice among ``choices[m, :n_choices[m]]`` (a head
    index, or m itself for the root); walks start from the tokens in order and stop at
    the tree built so far, and the last exit from every node is kept (Wilson 1996).
    With ``root_child`` >= 0 the tree is rooted at that token instead (its own walk is
    never taken) and the choices must hold no root arc.
    """
    for m in range(n):
        in_tree[m] = False
    if root_child >= 0:
        in_tree[root_child] = True
        out[root_child] = root_child
    for i in range(n):
        u = i
        while u < n and not in_tree[u]:
            c = n_choices[u]
            pick = min(int(next_uniform(state) * c), c - 1)
            h = choices[u, pick]
            nxt[u] = h
            u = n if h == u else h
        u = i
        while u < n and not in_tree[u]:
            in_tree[u] = True
            out[u] = nxt[u]
            u = n if nxt[u] == u else nxt[u]


@njit(**_NJIT)
def sample_trees_one(arc, n, single_root, seed, paths):
    """``paths.shape[1]`` uniform trees of finite score of one sentence.

    Without ``single_root``: Wilson's algorithm on the allowed arcs (root arcs included),
    once every token can reach the root. With ``single_root``: the root child r is drawn
    with probability ∝ [A[r, r] finite] N_r, with N_r the number of spanning
    arborescences of the allowed token arcs rooted at r (the matrix-tree theorem:
    det of the out-degree Laplacian without row and column r, one ``slogdet`` per token
    when some token arc is forbidden; N_r = 0 exactly when a token cannot reach r), then
    the rest of the tree by Wilson's algorithm rooted at r.

    Returns
    -------
    bool
        False when the sentence has no valid tree (``paths`` left as they are).
    """
    n_draws = paths.shape[1]
    state = np.empty(1, dtype=np.uint64)
    state[0] = seed
    reached = np.empty(n, dtype=np.bool_)
    queue = np.empty(n, dtype=np.int64)
    choices = np.empty((n, n), dtype=np.int64)
    n_choices = np.zeros(n, dtype=np.int64)
    nxt = np.empty(n, dtype=np.int64)
    in_tree = np.empty(n, dtype=np.bool_)
    out = np.empty(n, dtype=np.int64)
    complete = True
    for m in range(n):
        for h in range(n):
            allowed = arc[m * n + h] > -np.inf
            if h != m and not allowed:
                complete = False
            if allowed and (h != m or not single_root):
                choices[m, n_choices[m]] = h
                n_choices[m] += 1
    if not single_root:
        if _reach(arc, n, n, reached, queue) < n:
            return False
        for d in range(n_draws):
            _wilson(choices, n_choices, n, -1, state, nxt, in_tree, out)
            for m in range(n):
                paths[m, d] = out[m]
        return True
    weights = np.zeros(n)
    logs = np.full(n, -np.inf)
    for r in range(n):
        if arc[r * n + r] > -np.inf and _reach(arc, n, r, reached, queue) == n:
            logs[r] = 0.0
            if not complete and n > 1:
                minor = np.empty((n - 1, n - 1))
                for a in range(n - 1):
                    m = a if a < r else a + 1
                    for b in range(n - 1):
                        h = b if b < r else b + 1
                        minor[a, b] = -1.0 if (m != h and arc[m * n + h] > -np.inf) else 0.0
                    minor[a, a] = n_choices[m]
                logs[r] = np.linalg.slogdet(minor)[1]
    top = logs.max()
    if top == -np.inf:
        return False
    total = 0.0
    for r in range(n):
        weights[r] = np.exp(logs[r] - top) if logs[r] > -np.inf else 0.0
        total += weights[r]
    for d in range(n_draws):
        u = next_uniform(state) * total
        r = -1
        acc = 0.0
        for t in range(n):
            if weights[t] > 0.0:
                r = t
                acc += weights[t]
                if acc > u:
                    break
        _wilson(choices, n_choices, n, r, state, nxt, in_tree, out)
        for m in range(n):
            paths[m, d] = out[m]
    return True


@njit(parallel=True, **_NJIT)
def sample_trees(unary, offsets, unary_offsets, single_root, n_draws, seeds):
    """Uniform trees of finite score of every sentence (:func:`sample_trees_one`), one
    sentence per parallel iteration, each with its own splitmix64 stream seeded by
    ``seeds[i]`` (so the draws do not depend on the number of threads).

    Returns
    -------
    paths : ndarray of shape (n_tokens, n_draws), int64
        -1 for the sentences without a valid tree.
    feasible : ndarray of shape (n_sentences,), bool
    """
    n_sent = offsets.shape[0] - 1
    paths = np.empty((offsets[-1], n_draws), dtype=np.int64)
    feasible = np.empty(n_sent, dtype=np.bool_)
    for s in prange(n_sent):
        a, n, start = offsets[s], offsets[s + 1] - offsets[s], unary_offsets[s]
        ok = sample_trees_one(unary[start : start + n * n], n, single_root, seeds[s],
                              paths[a : a + n])
        feasible[s] = ok
        if not ok:
            for t in range(a, a + n):
                for d in range(n_draws):
                    paths[t, d] = -1
    return paths, feasible


@njit(**_NJIT)
def _is_tree(heads, n, mark):
    """Whether the heads (m itself for the root) form a tree: every token reaches the
    root. O(n) with ``mark`` (n,) scratch."""
    for m in range(n):
        mark[m] = -1
    for i in range(n):
        u = i
        walking = True
        while walking:
            if mark[u] != -1:
                if mark[u] == i:
                    return False  # back to a token of this walk: a cycle
                walking = False  # a token that reaches the root
            else:
                mark[u] = i
                if heads[u] == u:
                    walking = False
                else:
                    u = heads[u]
    return True


@njit(**_NJIT)
def _is_projective(heads, n):
    """Whether the tree has no crossing arcs (the root at position -1)."""
    for m in range(n):
        head = -1 if heads[m] == m else heads[m]
        lo, hi = min(head, m), max(head, m)
        for t in range(lo + 1, hi):
            head_t = -1 if heads[t] == t else heads[t]
            if head_t < lo or head_t > hi:
                return False
    return True


@njit(**_NJIT)
def neighbours_one(arc, n, y, k, projective, single_root, paths, write):
    """The valid trees at Hamming distance 1 .. k from the heads ``y`` of one sentence,
    in the order of :mod:`skstruct.decoders._core.sampling`; written to ``paths``
    (n, >= count) when ``write``. Returns their number.

    A candidate changes the heads of 1 .. k tokens; it is kept when its arcs have finite
    scores, it has no cycle, one root child under ``single_root`` and no crossing arcs
    under ``projective``: O(n) per candidate, O(n²) when projective.
    """
    positions = np.empty(k, dtype=np.int64)
    alternatives = np.empty(k, dtype=np.int64)
    heads = np.empty(n, dtype=np.int64)
    mark = np.empty(n, dtype=np.int64)
    bad_y = 0
    roots_y = 0
    for m in range(n):
        heads[m] = y[m]
        if arc[m * n + y[m]] == -np.inf:
            bad_y += 1
        if y[m] == m:
            roots_y += 1
    count = 0
    if n < 2:
        return 0
    for j in range(1, min(k, n) + 1):
        first_change(j, positions, alternatives)
        more = True
        while more:
            bad = bad_y
            roots = roots_y
            for i in range(j):
                m = positions[i]
                h = alternative_value(alternatives[i], y[m])
                heads[m] = h
                bad += int(arc[m * n + h] == -np.inf) - int(arc[m * n + y[m]] == -np.inf)
                roots += int(h == m) - int(y[m] == m)
            if (bad == 0 and (roots == 1 or not single_root) and _is_tree(heads, n, mark)
                    and (not projective or _is_projective(heads, n))):
                if write:
                    for m in range(n):
                        paths[m, count] = heads[m]
                count += 1
            for i in range(j):
                heads[positions[i]] = y[positions[i]]
            more = next_change(j, positions, alternatives, n, n - 1)
    return count


@njit(parallel=True, **_NJIT)
def neighbours(unary, offsets, unary_offsets, y, k, projective, single_root, paths,
               counts, write):
    """:func:`neighbours_one` for every sentence, one per parallel iteration: counts
    them (``write`` False) or writes them into ``paths`` (n_tokens, max count), filled
    with -1 beforehand."""
    for s in prange(offsets.shape[0] - 1):
        a, n, start = offsets[s], offsets[s + 1] - offsets[s], unary_offsets[s]
        counts[s] = neighbours_one(unary[start : start + n * n], n, y[a : a + n], k,
                                   projective, single_root, paths[a : a + n], write)
