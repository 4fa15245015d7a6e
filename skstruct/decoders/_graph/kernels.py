"""Compiled MAP inference over batches of pairwise graphs with multi-state nodes.

A batch holds n_graphs graphs. Graph i has the nodes ``node_offsets[i]`` ..
``node_offsets[i + 1] - 1`` of the stacked ``unary`` (n_nodes, n_states) scores and the
edges ``edge_offsets[i]`` .. ``edge_offsets[i + 1] - 1`` of ``edges`` (n_edges, 2), whose
two columns are node indices local to the graph (0 .. n_i - 1), and of ``pairwise``
(n_edges, n_states, n_states): ``pairwise[e, a, b]`` scores the first node of edge e in
state a and the second in state b. The score of a labeling y is

    Σ_v unary[v, y_v] + Σ_e pairwise[e, y_{e0}, y_{e1}],

and MAP is its maximizer. Each graph runs in one parallel iteration:

* a forest (no cycle, found by union-find) is decoded exactly by max-product along a
  breadth-first order of each tree, O(n_edges n_states²);
* a graph with cycles whose labelings are few (at most ``max_enumerated``) is decoded
  exactly by listing them;
* any other graph with cycles runs loopy max-product (``max_iter`` sweeps of damped messages
  over both directions of every edge), decodes each node's belief, then improves the
  labeling by iterated conditional modes until no single node's change raises the
  score. Loopy max-product is not guaranteed to find the MAP, nor to converge: the
  labeling returned is a valid labeling whose score is at most the MAP's, and at least
  that of every labeling one node away from it.
"""

import numpy as np
from numba import njit, prange

_NJIT = dict(cache=True, nogil=True)


@njit(**_NJIT)
def _find(parent, v):
    root = v
    while parent[root] != root:
        root = parent[root]
    while parent[v] != root:
        nxt = parent[v]
        parent[v] = root
        v = nxt
    return root


@njit(**_NJIT)
def _adjacency(n, edges):
    """CSR adjacency: for node v, ``nbr[ptr[v]:ptr[v + 1]]`` its neighbours,
    ``eid`` the edge and ``first`` whether v is the edge's first node."""
    m = edges.shape[0]
    degree = np.zeros(n + 1, dtype=np.int64)
    for e in range(m):
        degree[edges[e, 0] + 1] += 1
        degree[edges[e, 1] + 1] += 1
    ptr = np.cumsum(degree)
    fill = ptr[:-1].copy()
    nbr = np.empty(2 * m, dtype=np.int64)
    eid = np.empty(2 * m, dtype=np.int64)
    first = np.empty(2 * m, dtype=np.bool_)
    for e in range(m):
        a, b = edges[e, 0], edges[e, 1]
        nbr[fill[a]] = b
        eid[fill[a]] = e
        first[fill[a]] = True
        fill[a] += 1
        nbr[fill[b]] = a
        eid[fill[b]] = e
        first[fill[b]] = False
        fill[b] += 1
    return ptr, nbr, eid, first


@njit(**_NJIT)
def _is_forest(n, edges):
    parent = np.arange(n)
    for e in range(edges.shape[0]):
        ra = _find(parent, edges[e, 0])
        rb = _find(parent, edges[e, 1])
        if ra == rb:
            return False
        parent[ra] = rb
    return True


@njit(**_NJIT)
def _pair(pairwise, e, v_first, s_v, s_u):
    """Score of edge e with node v in state s_v and its other node u in s_u."""
    if v_first:
        return pairwise[e, s_v, s_u]
    return pairwise[e, s_u, s_v]


@njit(**_NJIT)
def _forest_map(unary, edges, pairwise, out):
    n, k = unary.shape
    ptr, nbr, eid, first = _adjacency(n, edges)
    order = np.empty(n, dtype=np.int64)
    parent = np.full(n, -1, dtype=np.int64)
    parent_slot = np.full(n, -1, dtype=np.int64)
    seen = np.zeros(n, dtype=np.bool_)
    head = 0
    tail = 0
    for root in range(n):
        if seen[root]:
            continue
        seen[root] = True
        order[tail] = root
        tail += 1
        while head < tail:
            v = order[head]
            head += 1
            for j in range(ptr[v], ptr[v + 1]):
                u = nbr[j]
                if not seen[u]:
                    seen[u] = True
                    parent[u] = v
                    parent_slot[u] = j
                    order[tail] = u
                    tail += 1
    belief = unary.copy()
    back = np.zeros((n, k), dtype=np.int64)
    for i in range(n - 1, -1, -1):
        v = order[i]
        p = parent[v]
        if p < 0:
            continue
        j = parent_slot[v]
        e = eid[j]
        p_first = first[j]
        for t in range(k):
            best = -np.inf
            arg = 0
            for s in range(k):
                value = belief[v, s] + _pair(pairwise, e, p_first, t, s)
                if value > best:
                    best = value
                    arg = s
            belief[p, t] += best
            back[v, t] = arg
    for i in range(n):
        v = order[i]
        p = parent[v]
        if p < 0:
            out[v] = np.argmax(belief[v])
        else:
            out[v] = back[v, out[p]]


@njit(**_NJIT)
def _local_score(unary, pairwise, ptr, nbr, eid, first, y, v, s):
    value = unary[v, s]
    for j in range(ptr[v], ptr[v + 1]):
        value += _pair(pairwise, eid[j], first[j], s, y[nbr[j]])
    return value


@njit(**_NJIT)
def _loopy_map(unary, edges, pairwise, out, max_iter, damping, start):
    n, k = unary.shape
    m = edges.shape[0]
    ptr, nbr, eid, first = _adjacency(n, edges)
    # msg[2e] goes from edges[e, 0] to edges[e, 1], msg[2e + 1] the other way
    msg = np.zeros((2 * m, k))
    incoming = np.zeros((n, k))
    new = np.empty(k)
    for _ in range(max_iter):
        incoming[:] = unary
        for e in range(m):
            incoming[edges[e, 1]] += msg[2 * e]
            incoming[edges[e, 0]] += msg[2 * e + 1]
        change = 0.0
        for e in range(m):
            for direction in range(2):
                src = edges[e, direction]
                back_msg = msg[2 * e + 1 - direction]
                for t in range(k):
                    best = -np.inf
                    for s in range(k):
                        value = incoming[src, s] - back_msg[s] + _pair(
                            pairwise, e, direction == 0, s, t)
                        if value > best:
                            best = value
                    new[t] = best
                top = new.max()
                for t in range(k):
                    value = damping * msg[2 * e + direction, t] + (1.0 - damping) * (
                        new[t] - top)
                    change = max(change, abs(value - msg[2 * e + direction, t]))
                    msg[2 * e + direction, t] = value
        if change < 1e-9:
            break
    incoming[:] = unary
    for e in range(m):
        incoming[edges[e, 1]] += msg[2 * e]
        incoming[edges[e, 0]] += msg[2 * e + 1]
    for v in range(n):
        out[v] = np.argmax(incoming[v])
    _icm(unary, pairwise, ptr, nbr, eid, first, out)
    if start.shape[0] == n:
        # a second descent from the given labeling; the better of the two is kept
        other = start.copy()
        _icm(unary, pairwise, ptr, nbr, eid, first, other)
        if _labeling_score(unary, edges, pairwise, other) > _labeling_score(
                unary, edges, pairwise, out):
            out[:] = other


@njit(**_NJIT)
def _labeling_score(unary, edges, pairwise, y):
    value = 0.0
    for v in range(unary.shape[0]):
        value += unary[v, y[v]]
    for e in range(edges.shape[0]):
        value += pairwise[e, y[edges[e, 0]], y[edges[e, 1]]]
    return value


@njit(**_NJIT)
def _icm(unary, pairwise, ptr, nbr, eid, first, out):
    """Iterated conditional modes from ``out``, in place: every change strictly raises
    the score, until no single node's change does."""
    n, k = unary.shape
    improved = True
    while improved:
        improved = False
        for v in range(n):
            current = _local_score(unary, pairwise, ptr, nbr, eid, first, out, v, out[v])
            for s in range(k):
                if s != out[v]:
                    value = _local_score(unary, pairwise, ptr, nbr, eid, first, out, v, s)
                    if value > current + 1e-12:
                        current = value
                        out[v] = s
                        improved = True


@njit(**_NJIT)
def _enumerated_map(unary, edges, pairwise, out):
    """Exact MAP by listing every labeling (small graphs with cycles): an odometer over
    the k^n labelings, each scored in O(n + n_edges)."""
    n, k = unary.shape
    m = edges.shape[0]
    y = np.zeros(n, dtype=np.int64)
    best = -np.inf
    while True:
        value = 0.0
        for v in range(n):
            value += unary[v, y[v]]
        for e in range(m):
            value += pairwise[e, y[edges[e, 0]], y[edges[e, 1]]]
        if value > best:
            best = value
            out[:] = y
        v = 0
        while v < n:
            y[v] += 1
            if y[v] < k:
                break
            y[v] = 0
            v += 1
        if v == n:
            return


@njit(parallel=True, **_NJIT)
def _batch_map(unary, node_offsets, edges, edge_offsets, pairwise, max_iter, damping,
               max_enumerated, out, exact, starts):
    k = unary.shape[1]
    for i in prange(node_offsets.shape[0] - 1):
        a, b = node_offsets[i], node_offsets[i + 1]
        c, d = edge_offsets[i], edge_offsets[i + 1]
        if _is_forest(b - a, edges[c:d]):
            exact[i] = True
            _forest_map(unary[a:b], edges[c:d], pairwise[c:d], out[a:b])
            continue
        labelings = 1.0
        for _ in range(b - a):
            labelings *= k
        if labelings <= max_enumerated:
            exact[i] = True
            _enumerated_map(unary[a:b], edges[c:d], pairwise[c:d], out[a:b])
        else:
            exact[i] = False
            _loopy_map(unary[a:b], edges[c:d], pairwise[c:d], out[a:b], max_iter,
                       damping, starts[a:b] if starts.shape[0] else starts[0:0])


def merge_parallel_edges(edges, edge_offsets, pairwise):
    """The edges of every graph with parallel edges merged, in either orientation.

    Edges (a, b) and (b, a), or repeated ones, score the same node pair: their pairwise
    scores are summed on one edge (a < b, the (b, a) scores transposed), so that a tree
    listed with both orientations of its edges is still decoded as a forest. Returns the
    inputs unchanged when no pair repeats.
    """
    n_graphs = len(edge_offsets) - 1
    if len(edges) == 0:
        return edges, edge_offsets, pairwise
    graph = np.repeat(np.arange(n_graphs), np.diff(edge_offsets))
    low = np.minimum(edges[:, 0], edges[:, 1])
    high = np.maximum(edges[:, 0], edges[:, 1])
    keys = np.stack([graph, low, high], axis=1)
    unique, inverse = np.unique(keys, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    if len(unique) == len(edges):
        return edges, edge_offsets, pairwise
    oriented = np.where((edges[:, 0] > edges[:, 1])[:, None, None],
                        pairwise.transpose(0, 2, 1), pairwise)
    merged = np.zeros((len(unique),) + pairwise.shape[1:])
    np.add.at(merged, inverse, oriented)
    offsets = np.concatenate(([0], np.cumsum(np.bincount(unique[:, 0],
                                                         minlength=n_graphs))))
    return (np.ascontiguousarray(unique[:, 1:], dtype=np.int64),
            offsets.astype(np.int64), merged)


def batch_map(unary, node_offsets, edges, edge_offsets, pairwise, max_iter=100,
              damping=0.5, max_enumerated=0, starts=None):
    """:func:`graph_map` on checked arrays (C-contiguous, int64 and float64).

    ``starts`` (n_nodes,), optional: a labeling of every graph from which the graphs
    decoded by loopy max-product also run iterated conditional modes, keeping the
    better labeling (loss-augmented MAP starts from the gold labeling, so that its
    answer never scores below the gold one).
    """
    edges, edge_offsets, pairwise = merge_parallel_edges(edges, edge_offsets, pairwise)
    out = np.zeros(len(unary), dtype=np.int64)
    exact = np.zeros(len(node_offsets) - 1, dtype=np.bool_)
    _batch_map(unary, node_offsets, np.ascontiguousarray(edges), edge_offsets,
               np.ascontiguousarray(pairwise), int(max_iter), float(damping),
               float(max_enumerated), out, exact,
               np.zeros(0, dtype=np.int64) if starts is None
               else np.ascontiguousarray(starts, dtype=np.int64))
    return out, exact


def _check(unary, node_offsets, edges, edge_offsets, pairwise):
    unary = np.ascontiguousarray(unary, dtype=np.float64)
    node_offsets = np.ascontiguousarray(node_offsets, dtype=np.int64)
    edges = np.ascontiguousarray(np.asarray(edges, dtype=np.int64).reshape(-1, 2))
    edge_offsets = np.ascontiguousarray(edge_offsets, dtype=np.int64)
    n_states = unary.shape[1]
    pairwise = np.ascontiguousarray(pairwise, dtype=np.float64).reshape(
        -1, n_states, n_states)
    if pairwise.shape[0] != edges.shape[0]:
        raise ValueError(f"pairwise has {pairwise.shape[0]} edges, edges "
                         f"{edges.shape[0]}.")
    if len(node_offsets) != len(edge_offsets) or node_offsets[-1] != len(unary) \
            or edge_offsets[-1] != len(edges):
        raise ValueError("node_offsets and edge_offsets must delimit the same number of "
                         "graphs over all the nodes and edges.")
    sizes = np.repeat(np.diff(node_offsets), np.diff(edge_offsets))
    if len(edges) and (edges.min() < 0 or np.any(edges.max(axis=1) >= sizes)):
        raise ValueError("edges must hold node indices local to their graph.")
    if np.any(edges[:, 0] == edges[:, 1]):
        raise ValueError("edges must not join a node to itself.")
    return unary, node_offsets, edges, edge_offsets, pairwise


def graph_map(unary, node_offsets, edges, edge_offsets, pairwise, *, max_iter=100,
              damping=0.5, max_enumerated=0, starts=None):
    """MAP labelings of a batch of pairwise graphs.

    Parameters
    ----------
    unary : ndarray of shape (n_nodes, n_states)
        Node scores, the graphs' nodes stacked.
    node_offsets : ndarray of shape (n_graphs + 1,)
        Graph i holds the nodes ``node_offsets[i]`` .. ``node_offsets[i + 1] - 1``.
    edges : ndarray of shape (n_edges, 2)
        Node pairs, indices local to their graph, the graphs' edges stacked.
    edge_offsets : ndarray of shape (n_graphs + 1,)
        Graph i holds the edges ``edge_offsets[i]`` .. ``edge_offsets[i + 1] - 1``.
    pairwise : ndarray of shape (n_edges, n_states, n_states)
        ``pairwise[e, a, b]``: edge e's score with its first node in state a and its
        second in b.
    max_iter : int, default=100
        Sweeps of loopy max-product on graphs with cycles.
    damping : float, default=0.5
        Weight of the previous message in each damped update.
    max_enumerated : int, default=0
        A graph with cycles whose n_states ** n_nodes labelings are at most this many is
        decoded exactly by listing them; the others by loopy max-product.
    starts : ndarray of shape (n_nodes,), default=None
        A labeling from which the graphs decoded by loopy max-product also run iterated
        conditional modes (the better labeling is kept).

    Returns
    -------
    labels : ndarray of shape (n_nodes,)
        The state of every node.
    exact : ndarray of shape (n_graphs,) of bool
        Whether each graph was decoded exactly (a forest, or listed within
        ``max_enumerated``); on the others the labeling is loopy max-product's,
        improved by iterated conditional modes (see the module).
    """
    unary, node_offsets, edges, edge_offsets, pairwise = _check(
        unary, node_offsets, edges, edge_offsets, pairwise)
    return batch_map(unary, node_offsets, edges, edge_offsets, pairwise, max_iter,
                     damping, max_enumerated, starts)


def graph_loss_augmented_map(unary, node_offsets, edges, edge_offsets, pairwise, y_true,
                             class_weight=None, **options):
    """MAP of the scores plus the (class-weighted) Hamming loss to ``y_true``.

    Maximizes Σ_v (unary[v, y_v] + c[y_true_v] 1[y_v ≠ y_true_v]) + Σ_e pairwise, with
    c = ``class_weight`` (ones by default); the other arguments and the returns are
    :func:`graph_map`'s. The graphs decoded by loopy max-product also descend from
    ``y_true``, so no answer scores below it.
    """
    unary = np.array(unary, dtype=np.float64)
    y_true = np.asarray(y_true, dtype=np.int64)
    n_states = unary.shape[1]
    costs = np.ones(n_states) if class_weight is None else np.asarray(class_weight,
                                                                      dtype=float)
    unary += costs[y_true][:, None]
    unary[np.arange(len(y_true)), y_true] -= costs[y_true]
    options.setdefault("starts", y_true)
    return graph_map(unary, node_offsets, edges, edge_offsets, pairwise, **options)


def graph_scores(unary, node_offsets, edges, edge_offsets, pairwise, labels):
    """The score of ``labels`` in every graph, shape (n_graphs,)."""
    unary, node_offsets, edges, edge_offsets, pairwise = _check(
        unary, node_offsets, edges, edge_offsets, pairwise)
    labels = np.asarray(labels, dtype=np.int64)
    node_part = unary[np.arange(len(labels)), labels]
    graph_of_edge = np.repeat(np.arange(len(node_offsets) - 1), np.diff(edge_offsets))
    base = node_offsets[graph_of_edge]
    first = labels[base + edges[:, 0]]
    second = labels[base + edges[:, 1]]
    edge_part = pairwise[np.arange(len(edges)), first, second]
    n_graphs = len(node_offsets) - 1
    graph_of_node = np.repeat(np.arange(n_graphs), np.diff(node_offsets))
    return (np.bincount(graph_of_node, weights=node_part, minlength=n_graphs)
            + np.bincount(graph_of_edge, weights=edge_part, minlength=n_graphs))
