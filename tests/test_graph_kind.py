"""Graph outputs: node labels of pairwise graphs learned by skstruct's estimators."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from skstruct import StructuredPerceptron, StructuredSVM
from skstruct.decoders import BruteForceDecoder, GraphDecoder, GraphParts, GraphScores
from skstruct.features import LinearGraphFeatures
from skstruct.outputs._graph import check_graphs


def _grid_edges(h, w):
    idx = np.arange(h * w).reshape(h, w)
    return np.concatenate([np.c_[idx[:, :-1].ravel(), idx[:, 1:].ravel()],
                           np.c_[idx[:-1].ravel(), idx[1:].ravel()]])


def _quadrants(n, rng, h=6, w=6, n_states=3, noise=1.5, labels=None):
    """Grids whose four quadrants have random states, seen through noisy features."""
    X, Y = [], []
    for _ in range(n):
        y = np.kron(rng.integers(n_states, size=(2, 2)),
                    np.ones((h // 2, w // 2), dtype=int)).ravel()
        features = np.eye(n_states)[y] + noise * rng.normal(size=(h * w, n_states))
        X.append((np.c_[features, np.ones(h * w)], _grid_edges(h, w)))
        Y.append(y if labels is None else np.asarray(labels)[y])
    return X, Y


def _without_edges(X):
    return [(x[0], np.zeros((0, 2), dtype=int)) for x in X]


@pytest.mark.parametrize("solver", ["bcfw", "cutting_plane", "subgradient"])
def test_structured_svm_learns_pairwise_potentials_beyond_independent_nodes(solver):
    rng = np.random.default_rng(0)
    X_train, Y_train = _quadrants(30, rng)
    X_test, Y_test = _quadrants(30, rng)
    model = StructuredSVM(solver=solver, alpha=1e-2, max_iter=30).fit(X_train, Y_train)
    independent = StructuredSVM(solver=solver, alpha=1e-2, max_iter=30).fit(
        _without_edges(X_train), Y_train)
    assert model.output_kind_ == "graph"
    assert model.coef_.shape == (3, 4) and model.edge_coef_.shape == (1, 3, 3)
    score = model.score(X_test, Y_test)
    assert score > independent.score(_without_edges(X_test), Y_test) + 0.1
    # neighbours agree: equal states score higher than any other pair
    pair = model.edge_coef_[0]
    assert np.all(np.diag(pair)[:, None] > pair - np.diag(np.diag(pair)))


def test_perceptron_learns_graphs_and_predictions_keep_the_labels():
    rng = np.random.default_rng(1)
    labels = np.array(["sea", "sky", "sand"])
    X, Y = _quadrants(30, rng, labels=labels)
    model = StructuredPerceptron(max_iter=10, random_state=0).fit(X, Y)
    y_pred = model.predict(X[:2])
    assert [p.shape for p in y_pred] == [(36,), (36,)]
    assert set(np.concatenate(y_pred)) <= set(labels)
    assert model.score(X, Y) > 0.7
    copy = pickle.loads(pickle.dumps(model))
    assert copy.n_features_in_ == 5  # 4 node features, 1 (constant) edge feature
    for a, b in zip(copy.predict(X), model.predict(X)):
        np.testing.assert_array_equal(a, b)


def test_edge_features_change_the_potential_per_edge_and_are_checked_at_predict():
    rng = np.random.default_rng(2)
    h = w = 5
    edges = _grid_edges(h, w)
    horizontal = (np.arange(len(edges)) < h * (w - 1)).astype(float)
    X, Y = [], []
    for _ in range(40):
        # rows share a state: horizontal neighbours agree, vertical ones need not
        y = np.repeat(rng.integers(3, size=h), w)
        features = np.eye(3)[y] + 1.5 * rng.normal(size=(h * w, 3))
        X.append((features, edges, np.c_[horizontal, 1 - horizontal]))
        Y.append(y)
    model = StructuredSVM(alpha=1e-2, max_iter=50).fit(X, Y)
    along, across = model.edge_coef_
    assert np.trace(along) / 3 > np.trace(across) / 3 + 0.5
    with pytest.raises(ValueError, match="3 edge features, but StructuredSVM was "
                                         "fitted with 2"):
        model.predict([(x[0], x[1], np.c_[x[2], x[2][:, :1]]) for x in X[:2]])


@pytest.mark.parametrize("sparse", [False, True])
def test_feature_map_transpose_is_the_adjoint_of_scores(sparse):
    rng = np.random.default_rng(3)
    X = [(rng.normal(size=(n, 4)) * (rng.random((n, 4)) < 0.5),
          np.array([(a, b) for a in range(n) for b in range(a + 1, n)][:n + 1]).reshape(-1, 2),
          rng.normal(size=(min(n + 1, n * (n - 1) // 2), 2))) for n in (3, 4, 1)]
    if sparse:
        X = [(sp.csr_matrix(x[0]),) + x[1:] for x in X]
    batch, _ = check_graphs(X, [np.zeros(len(np.asarray(x[0].shape[0] * [0])))
                                for x in X])
    features = LinearGraphFeatures(4, 2, 3)
    w = rng.normal(size=features.n_params)
    scores = features.scores(batch, w)
    grad = GraphParts(rng.normal(size=scores.unary.shape),
                      rng.normal(size=scores.pairwise.shape), scores.offsets,
                      scores.edge_offsets)
    lhs = np.sum(grad.unary * scores.unary) + np.sum(grad.pairwise * scores.pairwise)
    assert lhs == pytest.approx(w @ features.transpose(batch, grad), rel=1e-10)
    for i in range(batch.n_sequences):
        one = batch.take([i])
        g = grad.take([i])
        dense = np.zeros(features.n_params)
        indices, values = features.example_transpose(one, g)
        assert len(np.unique(indices)) == len(indices)
        dense[indices] = values
        np.testing.assert_allclose(dense, features.transpose(one, g), atol=1e-12)


def test_a_tree_listed_with_both_orientations_is_decoded_exactly():
    rng = np.random.default_rng(4)
    tree = np.array([[0, 1], [1, 2], [1, 3], [3, 4], [4, 5], [0, 6]])
    edges = np.concatenate([tree, tree[:, ::-1]])
    n = 8
    scores = GraphScores(rng.normal(size=(7 * n, 3)), np.arange(n + 1) * 7,
                         np.tile(edges, (n, 1)), np.arange(n + 1) * len(edges),
                         3 * rng.normal(size=(n * len(edges), 3, 3)))
    y, exact = GraphDecoder(max_enumerated=0).decode(scores)
    assert exact.all()  # decoded as forests, not by loopy max-product
    _, best = BruteForceDecoder().map(scores, return_score=True)
    np.testing.assert_allclose(GraphDecoder().score_outputs(scores, y), best)


def test_large_graphs_with_cycles_are_decoded_approximately_and_say_so():
    rng = np.random.default_rng(5)
    edges = _grid_edges(10, 10)
    scores = GraphScores(rng.normal(size=(100, 3)), [0, 100], edges, [0, len(edges)],
                         rng.normal(size=(len(edges), 3, 3)))
    y, exact = GraphDecoder().decode(scores)
    assert not exact[0]
    # still a labeling at least as good as every one-node change of it
    decoder = GraphDecoder()
    base = decoder.score_outputs(scores, y)[0]
    for v in range(0, 100, 7):
        for s in range(3):
            other = y.copy()
            other[v] = s
            assert decoder.score_outputs(scores, other)[0] <= base + 1e-9
    small = GraphScores(rng.normal(size=(4, 3)), [0, 4], _grid_edges(2, 2), [0, 4],
                        rng.normal(size=(4, 3, 3)))
    assert GraphDecoder().decode(small)[1].all()  # 81 labelings: listed


def test_the_graph_kind_round_trips_outputs_coefficients_and_unary_scores():
    import types

    from skstruct.outputs import get_output_kind, infer_output_kind

    kind = get_output_kind("graph")
    rng = np.random.default_rng(6)
    X = [(rng.normal(size=(n, 3)), np.array([[0, 1], [1, 2]][:n - 1]).reshape(-1, 2),
          rng.normal(size=(max(n - 1, 0), 2))) for n in (3, 1, 2)]
    y = [rng.choice(np.array(["x", "y", "z"]), size=n) for n in (3, 1, 2)]
    assert infer_output_kind(X, y).name == "graph"
    assert infer_output_kind([x[0] for x in X], y).name == "sequence"
    batch, classes, encoded = kind.check_training_data(X, y, "Test")
    for a, b in zip(kind.decode(encoded, batch, classes), y):
        np.testing.assert_array_equal(a, b)
    labels = kind.read_labels(X, y, "Test")[1]
    np.testing.assert_array_equal(classes[encoded], labels)
    features = kind.feature_map(batch.n_features, classes)
    assert batch.n_features == 5 and features.n_params == 3 * 3 + 2 * 9
    w = rng.normal(size=features.n_params)
    fitted = types.SimpleNamespace()
    kind.store_coefficients(fitted, features, w)
    assert fitted.coef_.shape == (3, 3) and fitted.edge_coef_.shape == (2, 3, 3)
    np.testing.assert_array_equal(kind.coefficients(fitted, features), w)
    scores = features.scores(batch, w)
    assert [u.shape for u in kind.unary_to_user(scores.unary, batch)] == [
        (3, 3), (1, 3), (2, 3)]
    decoder = kind.default_decoder()
    np.testing.assert_allclose(decoder.parts(scores, encoded).dot(scores),
                               decoder.score_outputs(scores, encoded))


def _propagated(n, rng, h=4, w=4, n_states=3):
    """Grids whose labels only the edge features tell: node features are constant but
    for one anchor node that shows its own state, and every edge's features are the
    one-hot difference (y_b − y_a) mod n_states of its nodes' states."""
    edges = _grid_edges(h, w)
    X, Y = [], []
    for _ in range(n):
        y = rng.integers(n_states, size=h * w)
        nodes = np.zeros((h * w, n_states + 1))
        nodes[:, -1] = 1.0
        anchor = rng.integers(h * w)
        nodes[anchor, y[anchor]] = 1.0
        difference = (y[edges[:, 1]] - y[edges[:, 0]]) % n_states
        X.append((nodes, edges, np.eye(n_states)[difference]))
        Y.append(y)
    return X, Y


@pytest.mark.parametrize("solver", ["cutting_plane", "bcfw"])
def test_edge_features_alone_carry_the_labels_and_are_learned(solver):
    # 3 ** 16 labelings per grid: decoded by loopy max-product, in training too
    rng = np.random.default_rng(3)
    X_train, Y_train = _propagated(30, rng)
    X_test, Y_test = _propagated(30, rng)
    model = StructuredSVM(solver=solver, alpha=1e-2, max_iter=50).fit(X_train, Y_train)
    constant = [(x[0], x[1], np.ones((len(x[1]), 1))) for x in X_train]
    shared = StructuredSVM(solver=solver, alpha=1e-2, max_iter=50).fit(constant, Y_train)
    # one shared potential cannot tell the states apart beyond the anchors (about 1/3)
    assert shared.score([(x[0], x[1], np.ones((len(x[1]), 1))) for x in X_test],
                        Y_test) < 0.6
    assert model.score(X_test, Y_test) > 0.95
    # the potential of difference d rewards the pairs (a, a + d)
    for d, potential in enumerate(model.edge_coef_):
        rewarded = [(a, (a + d) % 3) for a in range(3)]
        for a in range(3):
            assert potential[rewarded[a]] == potential[a].max()
