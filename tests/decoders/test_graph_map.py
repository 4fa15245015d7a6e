"""MAP over batches of pairwise graphs with multi-state nodes against enumeration."""

from itertools import product

import numpy as np
import pytest

from skstruct.decoders._graph.kernels import graph_loss_augmented_map, graph_map, graph_scores


def _random_graph(rng, n, tree, extra=0):
    edges = []
    if tree:
        for v in range(1, n):
            edges.append((int(rng.integers(v)), v))
        if rng.random() < 0.5 and n > 2:  # a forest: drop one edge
            edges.pop(int(rng.integers(len(edges))))
    else:
        edges = [(v, (v + 1) % n) for v in range(n)]  # a cycle
        for _ in range(extra):
            a, b = rng.choice(n, 2, replace=False)
            edges.append((int(a), int(b)))
    edges = np.array(edges, dtype=np.int64).reshape(-1, 2)
    flip = rng.random(len(edges)) < 0.5  # either orientation
    edges[flip] = edges[flip][:, ::-1]
    return edges


def _batch(rng, tree, n_graphs=6, n_states=3):
    sizes = rng.integers(3 if not tree else 1, 7, size=n_graphs)
    graphs = [_random_graph(rng, n, tree, extra=int(rng.integers(3))) for n in sizes]
    node_offsets = np.concatenate([[0], np.cumsum(sizes)])
    edge_offsets = np.concatenate([[0], np.cumsum([len(g) for g in graphs])])
    edges = np.concatenate(graphs)
    unary = rng.normal(size=(node_offsets[-1], n_states))
    pairwise = 2 * rng.normal(size=(len(edges), n_states, n_states))
    return unary, node_offsets, edges, edge_offsets, pairwise


def _enumerated_max(unary, node_offsets, edges, edge_offsets, pairwise, i):
    a, b = node_offsets[i], node_offsets[i + 1]
    c, d = edge_offsets[i], edge_offsets[i + 1]
    one = (unary[a:b], [0, b - a], edges[c:d], [0, d - c], pairwise[c:d])
    return max(graph_scores(*one, np.array(y))[0]
               for y in product(range(unary.shape[1]), repeat=b - a))


@pytest.mark.parametrize("seed", range(4))
def test_forests_are_decoded_exactly(seed):
    rng = np.random.default_rng(seed)
    batch = _batch(rng, tree=True)
    labels, exact = graph_map(*batch)
    assert exact.all()
    scores = graph_scores(*batch, labels)
    for i in range(len(batch[1]) - 1):
        assert scores[i] == pytest.approx(_enumerated_max(*batch, i), abs=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_loopy_graphs_give_a_valid_labeling_no_better_than_the_map(seed):
    rng = np.random.default_rng(seed)
    batch = _batch(rng, tree=False)
    labels, exact = graph_map(*batch)
    assert not exact.any()
    assert labels.shape == (batch[0].shape[0],)
    assert labels.min() >= 0 and labels.max() < batch[0].shape[1]
    scores = graph_scores(*batch, labels)
    gaps = []
    for i in range(len(batch[1]) - 1):
        best = _enumerated_max(*batch, i)
        assert scores[i] <= best + 1e-9
        gaps.append(best - scores[i])
    # no single node's change raises the score (iterated conditional modes)
    unary, node_offsets, edges, edge_offsets, pairwise = batch
    base = graph_scores(*batch, labels)
    for v in range(len(labels)):
        for s in range(unary.shape[1]):
            other = labels.copy()
            other[v] = s
            assert np.all(graph_scores(*batch, other) <= base + 1e-9)
    # on these small graphs loopy max-product mostly finds the MAP
    assert np.mean(np.array(gaps) < 1e-9) >= 0.5


def test_loss_augmented_map_adds_the_hamming_loss():
    rng = np.random.default_rng(7)
    unary, node_offsets, edges, edge_offsets, pairwise = _batch(rng, tree=True)
    y_true = rng.integers(3, size=len(unary))
    weight = np.array([1.0, 2.0, 0.5])
    labels, _ = graph_loss_augmented_map(unary, node_offsets, edges, edge_offsets,
                                         pairwise, y_true, class_weight=weight)
    augmented = unary + weight[y_true][:, None]
    augmented[np.arange(len(y_true)), y_true] -= weight[y_true]
    batch = (augmented, node_offsets, edges, edge_offsets, pairwise)
    scores = graph_scores(*batch, labels)
    for i in range(len(node_offsets) - 1):
        assert scores[i] == pytest.approx(_enumerated_max(*batch, i), abs=1e-9)
    # and it differs from plain MAP somewhere: the loss pulls away from y_true
    plain, _ = graph_map(unary, node_offsets, edges, edge_offsets, pairwise)
    assert np.mean(labels != y_true) >= np.mean(plain != y_true)


def test_bad_edges_raise():
    unary = np.zeros((3, 2))
    with pytest.raises(ValueError, match="local"):
        graph_map(unary, [0, 3], [[0, 3]], [0, 1], np.zeros((1, 2, 2)))
    with pytest.raises(ValueError, match="itself"):
        graph_map(unary, [0, 3], [[1, 1]], [0, 1], np.zeros((1, 2, 2)))


def test_loss_augmented_map_on_loopy_graphs_never_scores_below_the_gold_labeling():
    # Loopy max-product then iterated conditional modes can miss labelings that
    # score far above its answer: here 1 of 20 grids, without the descent from y_true,
    # gets an answer below the gold labeling itself, so the hinge of that graph would
    # be reported as 0 while its constraint is violated.
    from skstruct.decoders import GraphDecoder, GraphScores
    from skstruct.losses import HammingLoss

    rng = np.random.default_rng(0)
    h = w = 6
    n_graphs, n_states = 20, 3
    idx = np.arange(h * w).reshape(h, w)
    grid = np.concatenate([np.c_[idx[:, :-1].ravel(), idx[:, 1:].ravel()],
                           np.c_[idx[:-1].ravel(), idx[1:].ravel()]])
    n = h * w
    y_true = rng.integers(n_states, size=n * n_graphs)
    unary = rng.normal(size=(n * n_graphs, n_states))
    unary += 1.0
    unary[np.arange(len(y_true)), y_true] -= 1.0
    edges = np.tile(grid, (n_graphs, 1))
    node_offsets = np.arange(n_graphs + 1) * n
    edge_offsets = np.arange(n_graphs + 1) * len(grid)
    pairwise = rng.normal(size=(len(edges), n_states, n_states))
    base = np.repeat(node_offsets[:-1], len(grid))
    # the gold pair of every edge gets a bonus: the gold labeling scores high
    pairwise[np.arange(len(edges)), y_true[base + edges[:, 0]],
             y_true[base + edges[:, 1]]] += 2.0
    # undo the cost augmentation: the decoder adds the Hamming loss itself
    plain = unary - 1.0
    plain[np.arange(len(y_true)), y_true] += 1.0
    scores = GraphScores(plain, node_offsets, edges, edge_offsets, pairwise)
    decoder = GraphDecoder()
    y_hat = decoder.loss_augmented_map(scores, y_true, HammingLoss())
    assert not decoder.decode(scores)[1].any()  # every grid is decoded approximately
    batch = (unary, node_offsets, edges, edge_offsets, pairwise)
    assert np.all(graph_scores(*batch, y_hat) >= graph_scores(*batch, y_true) - 1e-9)
