"""Compiled k-best enumeration and loss-augmented MAP for independent binary labels.

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
"""

import numpy as np
from numba import njit, prange

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


@njit(parallel=True, **_NJIT)
def top_k_binary(unary, k):
    """The ``k`` best distinct 0/1 vectors of every example.

    Parameters
    ----------
    unary : ndarray of shape (n_samples, n_labels)
        The score of a vector y is Σ_j unary[i, j] y_j.
    k : int >= 1

    Returns
    -------
    paths : ndarray of shape (n_samples, n_labels, k), int64
        ``paths[i, :, r]`` is the ``r``-th best vector; -1 where fewer than ``r + 1`` exist.
    scores : ndarray of shape (n_samples, k)
        Non-increasing along each row; -inf where fewer than ``k`` vectors of finite
        score exist (a label scored -inf has an infinite flip cost and stays off).
    """
    n_samples, n_labels = unary.shape
    paths = np.full((n_samples, n_labels, k), -1, dtype=np.int64)
    scores = np.full((n_samples, k), -np.inf)
    for i in prange(n_samples):
        cost = np.abs(unary[i])
        order = np.argsort(cost)
        best = 0.0
        for j in range(n_labels):
            best += max(unary[i, j], 0.0)
        # Node m is the subset {order[last[m]]} ∪ subset(prefix[m]); node 0 is the empty set.
        total = np.empty(2 * k)
        last = np.empty(2 * k, dtype=np.int64)
        prefix = np.empty(2 * k, dtype=np.int64)
        heap = np.empty(2 * k, dtype=np.int64)
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
            scores[i, r] = best - total[node]
            for j in range(n_labels):
                paths[i, j, r] = 1 if unary[i, j] > 0 else 0
            m = node
            while m > 0:
                j = order[last[m]]
                paths[i, j, r] = 1 - paths[i, j, r]
                m = prefix[m]
    return paths, scores


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


@njit(parallel=True, **_NJIT)
def count_loss_augmented_map(unary, y_true, ranked, table, table_start, mode, gold):
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

    Returns
    -------
    ndarray of shape (n_samples, n_labels), int64
        The a best gold positives and b best gold negatives on, for the first (a, b), in
        grid order, that maximizes the objective.
    """
    n_samples, n_labels = unary.shape
    labels = np.zeros((n_samples, n_labels), dtype=np.int64)
    for i in prange(n_samples):
        n_pos = 0
        for j in range(n_labels):
            n_pos += y_true[i, j]
        prefix = np.zeros((2, n_labels + 1))  # P and Q
        for g in range(2):
            for k in range(n_pos if g == 0 else n_labels - n_pos):
                prefix[g, k + 1] = prefix[g, k] + ranked[g, i, n_labels - 1 - k]
        best, best_tp, best_fp, row = -np.inf, 0, 0, table_start[i]
        for tp in range(n_pos + 1):
            for fp in range(n_labels - n_pos + 1):
                score = prefix[0, tp] + prefix[1, fp]
                if mode == MARGIN:
                    value = score + table[row]
                elif mode == SLACK:
                    value = (1.0 + score - gold[i]) * table[row]
                else:
                    value = table[row]
                if value > best:
                    best, best_tp, best_fp = value, tp, fp
                row += 1
        _turn_on(labels[i], unary[i], y_true[i], 1, ranked[0, i], best_tp)
        _turn_on(labels[i], unary[i], y_true[i], 0, ranked[1, i], best_fp)
    return labels
