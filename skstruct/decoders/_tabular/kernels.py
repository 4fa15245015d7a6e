"""Compiled kernels of the decoders of independent examples: k-best enumeration and
loss-augmented MAP of independent binary labels, and the row-wise log-partitions and
marginals of multiclass (softmax) and multilabel (sigmoid) scores.

The best 0/1 vector of an example turns on exactly the labels with positive score; any
other vector differs from it on a set S of labels and scores |unary| summed over S less.
The ``k`` best vectors are therefore the ``k`` subsets of labels with the smallest sums of
flip costs c = |unary|. With the labels sorted by cost, every non-empty subset with
largest element j comes from exactly one smaller subset by one of two moves: add j + 1,
or replace j by j + 1. A heap over these moves pops the subsets in non-decreasing order of
their sums, O(k log k) after an O(L log L) sort (L = n_labels).

A count-statistic loss of binary labels is a function of (TP, FP), and the best vector
with TP = a and FP = b turns on the a best gold-positive labels and the b best
gold-negative ones: its score is P[a] + Q[b], with P and Q the prefix sums of the two
groups' scores sorted in decreasing order. Loss-augmented MAP is therefore an argmax over
the (N* + 1) (L − N* + 1) values of (TP, FP), N* the number of gold positives.

The log-partition of one class among C is the max-shifted log Σ_k exp θ_k, and of
independent binary labels Σ_j log(1 + exp θ_j), each term max(θ_j, 0) + log1p(exp −|θ_j|);
their gradients are the softmax and the sigmoids. One pass over a row's scores computes
both; these kernels read and write memory at about the speed of their arithmetic, so they
run in one thread (measured no faster in parallel on 2 cores, and twice the compile time).
"""

import numpy as np
from numba import njit, prange

from .._core.sampling import first_change, next_change

_NJIT = dict(cache=True, nogil=True)

#: How :func:`count_loss_augmented_map` combines the score F of a (TP, FP) cell with the
#: table value t: F + t, (1 + F − θ_gold) t, or t itself.
MARGIN, SLACK, GIVEN = 0, 1, 2


@njit(inline="always")
def _push(heap, size, key, node):
    pos = size
    heap[pos] = node
    while pos > 0:
        parent = (pos - 1) // 2
        if key[heap[parent]] <= key[node]:
            break
        heap[pos] = heap[parent]
        heap[parent] = node
        pos = parent
    return size + 1


@njit(inline="always")
def _pop(heap, size, key):
    top = heap[0]
    size -= 1
    node = heap[size]
    pos = 0
    while True:
        child = 2 * pos + 1
        if child >= size:
            break
        if child + 1 < size and key[heap[child + 1]] < key[heap[child]]:
            child += 1
        if key[node] <= key[heap[child]]:
            break
        heap[pos] = heap[child]
        pos = child
    heap[pos] = node
    return top, size


@njit(**_NJIT)
def top_k_one(unary, k, paths, scores, total, last, prefix, heap):
    """The ``k`` best distinct 0/1 vectors of one example, into ``paths`` and ``scores``.

    Parameters
    ----------
    unary : ndarray of shape (n_labels,)
    k : int >= 1
    paths : ndarray of shape (n_labels, k), int64
        Filled with -1 beforehand; column ``r`` receives the ``r``-th best vector.
    scores : ndarray of shape (k,)
        Filled with -inf beforehand; receives the scores, non-increasing.
    total, last, prefix, heap : ndarray of shape (2 k,)
        Scratch (float64, int64, int64, int64).

    Notes
    -----
    Node m of the enumeration is the subset {order[last[m]]} ∪ subset(prefix[m]) of
    labels flipped away from the best vector; node 0 is the empty set.
    """
    n_labels = unary.shape[0]
    cost = np.abs(unary)
    order = np.argsort(cost)
    best = 0.0
    for j in range(n_labels):
        best += max(unary[j], 0.0)
    total[0] = 0.0
    total[1] = cost[order[0]]
    last[1] = 0
    prefix[1] = 0
    n_nodes = 2
    size = _push(heap, 0, total, 1)
    node = 0
    for r in range(k):
        if r > 0:
            if size == 0:
                break
            node, size = _pop(heap, size, total)
            if total[node] == np.inf:
                break  # the rest turn on a label scored -inf: never listed
            j = last[node] + 1
            if j < n_labels:
                for base in (node, prefix[node]):
                    total[n_nodes] = total[base] + cost[order[j]]
                    last[n_nodes] = j
                    prefix[n_nodes] = base
                    size = _push(heap, size, total, n_nodes)
                    n_nodes += 1
        scores[r] = best - total[node]
        for j in range(n_labels):
            paths[j, r] = 1 if unary[j] > 0 else 0
        m = node
        while m > 0:
            j = order[last[m]]
            paths[j, r] = 1 - paths[j, r]
            m = prefix[m]


@njit(**_NJIT)
def top_k_binary(unary, k, bounds):
    """The ``k`` best distinct 0/1 vectors of every example (:func:`top_k_one` each).

    Parameters
    ----------
    unary : ndarray of shape (n_samples, n_labels)
        The score of a vector y is Σ_j unary[i, j] y_j.
    k : int >= 1
    bounds : ndarray of shape (n_chunks + 1,), int64
        Contiguous chunks of examples, one per parallel iteration
        (:mod:`skstruct.utils._chunks`); the result does not depend on them.

    Returns
    -------
    paths : ndarray of shape (n_samples, n_labels, k), int64
        ``paths[i, :, r]`` is the ``r``-th best vector; -1 where fewer than ``r + 1`` exist.
    scores : ndarray of shape (n_samples, k)
        Non-increasing along each row; -inf where fewer than ``k`` vectors of finite
        score exist (a label scored -inf has an infinite flip cost and stays off).
    """
    n_samples, n_labels = unary.shape
    paths = np.empty((n_samples, n_labels, k), dtype=np.int64)
    scores = np.empty((n_samples, k))
    _top_k_chunks(unary, k, bounds, paths, scores)
    return paths, scores


@njit(parallel=True, **_NJIT)
def _top_k_chunks(unary, k, bounds, paths, scores):
    # the one parallel loop of top_k_binary: every chunk fills its own rows (no
    # whole-array expression, which the dynamic schedule would cut into elements)
    n_labels = unary.shape[1]
    for chunk in prange(bounds.shape[0] - 1):
        total = np.empty(2 * k)
        last = np.empty(2 * k, dtype=np.int64)
        prefix = np.empty(2 * k, dtype=np.int64)
        heap = np.empty(2 * k, dtype=np.int64)
        for i in range(bounds[chunk], bounds[chunk + 1]):
            for j in range(n_labels):
                for r in range(k):
                    paths[i, j, r] = -1
            for r in range(k):
                scores[i, r] = -np.inf
            top_k_one(unary[i], k, paths[i], scores[i], total, last, prefix, heap)


@njit(inline="always")
def _turn_on(labels, unary, y_true, group, ranked, n_on):
    """Turn on the ``n_on`` best labels j with y_true[j] == group; ``ranked`` ends with the
    group's scores in increasing order."""
    if n_on == 0:
        return
    cut = ranked[ranked.shape[0] - n_on]
    for above in (True, False):  # the labels above the cut, then ties at the cut
        for j in range(unary.shape[0]):
            if n_on > 0 and y_true[j] == group and (
                unary[j] > cut if above else unary[j] == cut
            ):
                labels[j] = 1
                n_on -= 1


@njit(**_NJIT)
def count_argmax_one(unary, y_true, positives, negatives, table, start, mode, gold,
                     prefix, labels):
    """The best 0/1 vector of one example for an objective of its score and (TP, FP).

    Parameters
    ----------
    unary : ndarray of shape (n_labels,)
    y_true : ndarray of shape (n_labels,), int64
        Gold 0/1 indicators.
    positives, negatives : ndarray of shape (N*,) and (n_labels − N*,)
        The scores of the gold positives and of the gold negatives, in increasing order.
    table : ndarray
        The (N* + 1) × (n_labels − N* + 1) grid, TP-major, starting at ``start``: the
        loss Δ(TP, FP) for MARGIN and SLACK, the objective itself for GIVEN.
    start : int
    mode : {MARGIN, SLACK, GIVEN}
    gold : float
        θ of the gold vector (read by SLACK only).
    prefix : ndarray of shape (n_labels + 2,)
        Scratch: the prefix sums P (best gold positives) and Q (best gold negatives).
    labels : ndarray of shape (n_labels,), int64
        Zeroed beforehand; receives the vector with the a best gold positives and b best
        gold negatives on, for the first (a, b) in grid order that maximizes the
        objective (ties at the cut go to the lower label index).

    Returns
    -------
    tp, fp : int
        That (a, b); Δ is ``table[start + a (n_labels − N* + 1) + b]`` (MARGIN, SLACK).
    """
    n_pos, n_neg = positives.shape[0], negatives.shape[0]
    P = prefix[: n_pos + 1]
    Q = prefix[n_pos + 1 : n_pos + n_neg + 2]
    P[0] = 0.0
    for k in range(n_pos):
        P[k + 1] = P[k] + positives[n_pos - 1 - k]
    Q[0] = 0.0
    for k in range(n_neg):
        Q[k + 1] = Q[k] + negatives[n_neg - 1 - k]
    best, best_tp, best_fp, row = -np.inf, 0, 0, start
    for tp in range(n_pos + 1):
        for fp in range(n_neg + 1):
            score = P[tp] + Q[fp]
            if mode == MARGIN:
                value = score + table[row]
            elif mode == SLACK:
                value = (1.0 + score - gold) * table[row]
            else:
                value = table[row]
            if value > best:
                best, best_tp, best_fp = value, tp, fp
            row += 1
    _turn_on(labels, unary, y_true, 1, positives, best_tp)
    _turn_on(labels, unary, y_true, 0, negatives, best_fp)
    return best_tp, best_fp


@njit(**_NJIT)
def count_loss_augmented_map(unary, y_true, ranked, table, table_start, mode, gold, bounds):
    """The best 0/1 vector of every example for an objective of its score and (TP, FP).

    Parameters
    ----------
    unary : ndarray of shape (n_samples, n_labels)
    y_true : ndarray of shape (n_samples, n_labels), int64
        Gold 0/1 indicators; N*_i = Σ_j y_true[i, j].
    ranked : ndarray of shape (2, n_samples, n_labels)
        Padding, then the scores of the gold positives (``ranked[0]``) or of the gold
        negatives (``ranked[1]``) of every example in increasing order.
    table : ndarray of shape (n_rows,)
        Example ``i`` reads the (N*_i + 1) × (n_labels − N*_i + 1) grid, TP-major, that
        starts at ``table_start[i]``: the loss Δ(TP, FP) for MARGIN and SLACK, the
        objective itself for GIVEN.
    table_start : ndarray of shape (n_samples,), int64
    mode : {MARGIN, SLACK, GIVEN}
    gold : ndarray of shape (n_samples,)
        θ of the gold vectors (read by SLACK only).
    bounds : ndarray of shape (n_chunks + 1,), int64
        Contiguous chunks of examples, one per parallel iteration
        (:mod:`skstruct.utils._chunks`); the result does not depend on them.

    Returns
    -------
    ndarray of shape (n_samples, n_labels), int64
        The a best gold positives and b best gold negatives on, for the first (a, b), in
        grid order, that maximizes the objective (:func:`count_argmax_one` each).
    """
    labels = np.empty(unary.shape, dtype=np.int64)
    _count_map_chunks(unary, y_true, ranked, table, table_start, mode, gold, bounds, labels)
    return labels


@njit(parallel=True, **_NJIT)
def _count_map_chunks(unary, y_true, ranked, table, table_start, mode, gold, bounds,
                      labels):
    # the one parallel loop of count_loss_augmented_map (see _top_k_chunks)
    n_labels = unary.shape[1]
    for chunk in prange(bounds.shape[0] - 1):
        prefix = np.empty(n_labels + 2)
        for i in range(bounds[chunk], bounds[chunk + 1]):
            n_pos = 0
            for j in range(n_labels):
                n_pos += y_true[i, j]
                labels[i, j] = 0
            count_argmax_one(
                unary[i], y_true[i], ranked[0, i, n_labels - n_pos :], ranked[1, i, n_pos:],
                table, table_start[i], mode, gold[i], prefix, labels[i],
            )


@njit(**_NJIT)
def rank_groups(unary, y_true, ranked):
    """Sort the scores of the gold positives and of the gold negatives of one example.

    Parameters
    ----------
    unary : ndarray of shape (n_labels,)
    y_true : ndarray of shape (n_labels,), int64
    ranked : ndarray of shape (n_labels,)
        Scratch that receives both groups, each in increasing order.

    Returns
    -------
    positives, negatives : views of ``ranked``
        As :func:`count_argmax_one` takes them.
    """
    n_labels = unary.shape[0]
    n_pos = 0
    for j in range(n_labels):
        if y_true[j] == 1:
            ranked[n_pos] = unary[j]
            n_pos += 1
    n_neg = n_pos
    for j in range(n_labels):
        if y_true[j] != 1:
            ranked[n_neg] = unary[j]
            n_neg += 1
    positives = ranked[:n_pos]
    negatives = ranked[n_pos:n_labels]
    _sort(positives)
    _sort(negatives)
    return positives, negatives


#: Runs up to this length are sorted by insertion, longer ones by numpy's sort.
_INSERTION_SORT_MAX = 48


@njit(**_NJIT)
def _sort(values):
    """Sort ``values`` in place in increasing order (-inf first)."""
    n = values.shape[0]
    if n > _INSERTION_SORT_MAX:
        values.sort()
        return
    for i in range(1, n):
        v = values[i]
        j = i - 1
        while j >= 0 and values[j] > v:
            values[j + 1] = values[j]
            j -= 1
        values[j + 1] = v


@njit(**_NJIT)
def numpy_row_sum(values):
    """Σ values in numpy's order: 0.0 + the pairwise sum of ``ndarray.sum``.

    The per-example oracles compare θ of the gold output with other scores exactly as
    the batched decoders, which sum rows with numpy: blocks of at most 128 values are
    summed with eight accumulators (sequentially below eight values), longer runs are
    split in two at a multiple of eight and the halves' sums added.
    """
    n = values.shape[0]
    if n <= 128:
        return 0.0 + _block_sum(values, 0, n)
    # the recursion of numpy's pairwise sum, unrolled on an explicit stack
    depth = 64
    lo_stack = np.empty(depth, dtype=np.int64)
    n_stack = np.empty(depth, dtype=np.int64)
    left_done = np.zeros(depth, dtype=np.bool_)
    left_sum = np.empty(depth)
    sp = 0
    lo_stack[0], n_stack[0], left_done[0] = 0, n, False
    while True:
        lo, m = lo_stack[sp], n_stack[sp]
        if m > 128:
            half = m // 2
            half -= half % 8
            sp += 1
            lo_stack[sp], n_stack[sp], left_done[sp] = lo, half, False
            continue
        value = _block_sum(values, lo, m)
        while True:  # hand the value to the parent frames
            if sp == 0:
                return 0.0 + value
            sp -= 1
            if not left_done[sp]:
                left_done[sp] = True
                left_sum[sp] = value
                half = n_stack[sp] // 2
                half -= half % 8
                sp += 1
                lo_stack[sp] = lo_stack[sp - 1] + half
                n_stack[sp] = n_stack[sp - 1] - half
                left_done[sp] = False
                break
            value = left_sum[sp] + value


@njit(**_NJIT)
def _block_sum(a, lo, n):
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    while i < n - n % 8:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(**_NJIT)
def neighbours_one(unary, y, k, paths, write):
    """The 0/1 vectors of finite score at Hamming distance 1 .. k from ``y`` (one
    example), in the order of :mod:`skstruct.decoders._core.sampling` (sets of flipped labels
    in lexicographic order, by size); written to ``paths`` (n_labels, >= count) when
    ``write``. Returns their number.

    A vector is valid when no label scored -inf is on: a candidate that flips the labels
    P is valid when y turns on no forbidden label outside P and the candidate none in P.
    """
    n_labels = unary.shape[0]
    positions = np.empty(k, dtype=np.int64)
    alternatives = np.empty(k, dtype=np.int64)
    bad_y = 0
    for j in range(n_labels):
        if y[j] == 1 and unary[j] == -np.inf:
            bad_y += 1
    count = 0
    for j in range(1, min(k, n_labels) + 1):
        first_change(j, positions, alternatives)
        more = True
        while more:
            bad = bad_y
            for i in range(j):
                p = positions[i]
                if unary[p] == -np.inf:
                    bad += -1 if y[p] == 1 else 1
            if bad == 0:
                if write:
                    for t in range(n_labels):
                        paths[t, count] = y[t]
                    for i in range(j):
                        paths[positions[i], count] = 1 - y[positions[i]]
                count += 1
            more = next_change(j, positions, alternatives, n_labels, 1)
    return count


@njit(parallel=True, **_NJIT)
def neighbours(unary, y, k, paths, counts, write, bounds):
    """:func:`neighbours_one` for every example: counts them (``write`` False) or writes
    them into ``paths`` (n_samples, n_labels, max count), filled with -1 beforehand.
    Chunks of examples ``bounds[c]:bounds[c + 1]`` per parallel iteration."""
    for chunk in prange(bounds.shape[0] - 1):
        for i in range(bounds[chunk], bounds[chunk + 1]):
            counts[i] = neighbours_one(unary[i], y[i], k, paths[i], write)


@njit(**_NJIT)
def softmax_rows(unary):
    """Log-partition and softmax of every row (multiclass log-partition and marginals).

    Parameters
    ----------
    unary : ndarray of shape (n_samples, n_classes)

    Returns
    -------
    log_z : ndarray of shape (n_samples,)
        log Σ_k exp unary[i, k], by the max-shifted sum: exact for scores of any size;
        -inf for a row scored -inf everywhere (its probabilities are then NaN).
    probabilities : ndarray of shape (n_samples, n_classes)
        exp(unary[i, k] − log_z[i]); rows sum to one.
    """
    n_samples, n_classes = unary.shape
    log_z = np.empty(n_samples)
    probabilities = np.empty((n_samples, n_classes))
    for i in range(n_samples):
        # one pass for the maximum, one for exp and the sum, one to normalize
        top = -np.inf
        for k in range(n_classes):
            if unary[i, k] > top:
                top = unary[i, k]
        shift = top if top > -np.inf else 0.0
        total = 0.0
        for k in range(n_classes):
            weight = np.exp(unary[i, k] - shift)
            probabilities[i, k] = weight
            total += weight
        if total == 0.0:  # every class scored -inf
            log_z[i] = -np.inf
            probabilities[i, :] = np.nan
            continue
        log_z[i] = shift + np.log(total)
        for k in range(n_classes):
            probabilities[i, k] /= total
    return log_z, probabilities


@njit(**_NJIT)
def logistic_rows(unary):
    """Log-partition and marginals of independent binary labels, every row.

    Parameters
    ----------
    unary : ndarray of shape (n_samples, n_labels)
        Score of label j on (off scores 0).

    Returns
    -------
    log_z : ndarray of shape (n_samples,)
        Σ_j log(1 + exp unary[i, j]), each term as max(s, 0) + log1p(exp(−|s|)).
    probabilities : ndarray of shape (n_samples, n_labels)
        The sigmoids σ(unary[i, j]) = p(y_j = 1), from exp(−|s|) (no overflow).
    """
    n_samples, n_labels = unary.shape
    log_z = np.empty(n_samples)
    probabilities = np.empty((n_samples, n_labels))
    for i in range(n_samples):
        total = 0.0
        for j in range(n_labels):
            s = unary[i, j]
            if s >= 0.0:
                e = np.exp(-s)
                probabilities[i, j] = 1.0 / (1.0 + e)
                total += s + np.log1p(e)
            else:
                e = np.exp(s)  # 0 at s = -inf: σ = 0, log(1 + e^s) = 0
                probabilities[i, j] = e / (1.0 + e)
                total += np.log1p(e)
        log_z[i] = total
    return log_z, probabilities
