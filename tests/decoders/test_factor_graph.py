"""The declarative factor graph and its decoder, against enumeration."""

import itertools

import numpy as np
import pytest
from _factor_graph_data import LOGIC_KINDS, add_logic_factor, negated_block, satisfies_factors

from skstruct.decoders import (
    FactorGraph,
    FactorGraphDecoder,
    FactorGraphScores,
    MulticlassDecoder,
    MulticlassScores,
)


def _all_outputs(n_vars):
    return np.array(list(itertools.product((0, 1), repeat=n_vars)), dtype=np.int64)


def _random_graph(rng, n_vars, n_factors, pairs=True):
    """A random graph with logic factors on random subsets, and its plain spec."""
    graph = FactorGraph()
    v = graph.variables(n_vars)
    spec = []
    for _ in range(n_factors):
        kind = LOGIC_KINDS[rng.integers(len(LOGIC_KINDS))]
        size = int(rng.integers(2, min(4, n_vars) + 1))
        ids = rng.choice(n_vars, size=size, replace=False)
        negated = rng.random(size) < 0.3
        if kind == "or_out":
            add_logic_factor(graph, kind, v[ids])
            spec.append((kind, ids, np.zeros(size, bool), None))
            continue
        extra = None
        if kind == "budget":
            extra = int(rng.integers(0, size))
        elif kind == "knapsack":
            extra = (rng.uniform(0.5, 2.0, size), 1.7)
        add_logic_factor(graph, kind, negated_block(v[ids], negated), extra)
        spec.append((kind, ids, negated, extra))
    if pairs:
        first, second = np.triu_indices(n_vars, 1)
        keep = rng.random(first.shape[0]) < 0.5
        if keep.any():
            graph.add_pair(v[first[keep]], v[second[keep]])
    return graph, spec


# -- the declarative API ----------------------------------------------------------------


def test_variables_are_numbered_row_major_in_the_users_shape():
    graph = FactorGraph()
    a = graph.variables((2, 3))
    b = graph.variables(4)
    assert a.shape == (2, 3) and b.shape == (4,)
    np.testing.assert_array_equal(a.ids, [[0, 1, 2], [3, 4, 5]])
    np.testing.assert_array_equal(b.ids, [6, 7, 8, 9])
    np.testing.assert_array_equal(a[:, 1].ids, [1, 4])
    assert (~a[0]).negated.all() and not a.negated.any()
    assert graph.n_vars == 10


def test_axis_adds_one_factor_per_slice_and_flat_form_lists_them():
    graph = FactorGraph()
    tags = graph.variables((3, 2))
    graph.add_xor(tags, axis=1)
    graph.add_budget(~tags[:, 0], 1)
    flat = graph.flat()
    np.testing.assert_array_equal(flat.lin_offsets, [0, 2, 4, 6, 9])
    np.testing.assert_array_equal(flat.lin_var, [0, 1, 2, 3, 4, 5, 0, 2, 4])
    np.testing.assert_array_equal(flat.lin_negated, [0, 0, 0, 0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(flat.lin_bound, [1, 1, 1, 1])
    graph.add_xor(tags, axis=0)  # the cached flat form is rebuilt
    assert graph.flat().lin_offsets.shape == (7,)
    assert graph.n_factors == 6


def test_pairwise_graph_has_every_pair_once():
    graph = FactorGraph.pairwise(5, at_least_one=True, max_labels=2)
    pairs = graph.pairs
    assert pairs.shape == (10, 2)
    assert {tuple(p) for p in pairs} == set(itertools.combinations(range(5), 2))
    assert graph.n_factors == 12
    given = FactorGraph.pairwise(4, pairs=[[0, 3], [1, 2]])
    np.testing.assert_array_equal(given.pairs, [[0, 3], [1, 2]])


def test_pairwise_graph_with_pairs_none_couples_every_pair():
    every = FactorGraph.pairwise(5, pairs=None, at_least_one=True)
    np.testing.assert_array_equal(every.pairs, FactorGraph.pairwise(5).pairs)
    assert {tuple(p) for p in every.pairs} == set(itertools.combinations(range(5), 2))
    assert every.n_factors == 11
    with pytest.raises(ValueError, match="pairs must be 'all'"):
        FactorGraph.pairwise(5, pairs="some")


@pytest.mark.parametrize("call, message", [
    (lambda g, v, w: g.add_xor(v[[0, 0]]), "at most once"),
    (lambda g, v, w: g.add_xor(w), "another FactorGraph"),
    (lambda g, v, w: g.add_xor(np.arange(3)), "Variables block"),
    (lambda g, v, w: g.add_xor(v, axis=2), "axis"),
    (lambda g, v, w: g.add_pair(v[:2], v[:1]), "same shape"),
    (lambda g, v, w: g.add_pair(v[[0]], v[[0]]), "with itself"),
    (lambda g, v, w: g.add_pair(~v[[0]], v[[1]]), "negated"),
    (lambda g, v, w: g.add_budget(v, -1), "budget"),
    (lambda g, v, w: g.add_budget(v, 1.5), "budget"),
    (lambda g, v, w: g.add_knapsack(v, [1.0, 2.0], 1.0), "costs"),
    (lambda g, v, w: g.add_knapsack(v, [1.0, -2.0, 1.0], 1.0), "costs"),
    (lambda g, v, w: g.add_or_out(v[:2], v[[0]]), "also an input"),
    (lambda g, v, w: g.add_or_out(v[:1], v[1:]), "one variable"),
    (lambda g, v, w: g.variables((2, 0)), "positive"),
])
def test_bad_declarations_raise_clear_errors(call, message):
    graph = FactorGraph()
    v = graph.variables(3)
    w = FactorGraph().variables(3)
    with pytest.raises((ValueError, TypeError), match=message):
        call(graph, v, w)


def test_feasible_follows_the_definitions_of_every_factor():
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(25):
        graph, spec = _random_graph(rng, 5, 3, pairs=False)
        outputs = _all_outputs(5)
        expected = np.array([satisfies_factors(spec, y) for y in outputs])
        np.testing.assert_array_equal(graph.feasible(outputs), expected)
        checked += expected.sum()
    assert checked > 0


def test_rounding_repairs_broken_factors_and_keeps_feasible_roundings():
    rng = np.random.default_rng(1)
    for trial in range(60):
        graph = FactorGraph()
        v = graph.variables((3, 4))
        kind = trial % 5
        block = ~v if trial % 2 else v
        if kind == 0:
            graph.add_xor(block, axis=1)
        elif kind == 1:
            graph.add_or(block, axis=0)
        elif kind == 2:
            graph.add_budget(block, 2, axis=1)
        elif kind == 3:
            graph.add_at_most_one(v, axis=0)
        else:
            graph.add_knapsack(v, rng.uniform(0.5, 2.0, (3, 4)), 1.5, axis=1)
        u = rng.random((6, 12))
        y = graph.round(u)
        assert graph.feasible(y).all()
        plain = (u > 0.5).astype(np.int64)
        ok = graph.feasible(plain)
        np.testing.assert_array_equal(y[ok], plain[ok])


# -- the decoder ------------------------------------------------------------------------


def _enumerated(graph, scores, extra_unary=None):
    """argmax and max of θ_y over the feasible outputs, from the definitions."""
    outputs = _all_outputs(graph.n_vars)
    outputs = outputs[graph.feasible(outputs)]
    pairs = graph.pairs
    unary = scores.unary if extra_unary is None else scores.unary + extra_unary
    theta = unary @ outputs.T + scores.pair @ (
        outputs[:, pairs[:, 0]] * outputs[:, pairs[:, 1]]).T
    return outputs, theta


def test_enumerated_map_is_the_best_feasible_output():
    rng = np.random.default_rng(2)
    for _ in range(10):
        graph, spec = _random_graph(rng, 6, 2)
        outputs, _ = _enumerated(graph, FactorGraphScores(np.zeros((1, 6)),
                                                          np.zeros((1, graph.n_pairs))))
        if outputs.shape[0] == 0:
            continue
        scores = FactorGraphScores(rng.normal(size=(3, 6)),
                                   rng.normal(size=(3, graph.n_pairs)))
        decoder = FactorGraphDecoder(graph, map_method="enumerate")
        labels, best = decoder.map(scores, return_score=True)
        outputs, theta = _enumerated(graph, scores)
        np.testing.assert_allclose(best, theta.max(axis=1))
        np.testing.assert_allclose(decoder.score_outputs(scores, labels), theta.max(axis=1))
        assert all(satisfies_factors(spec, y) for y in labels)


def _tree_graph(rng, n_vars):
    """PAIR factors along a random spanning tree: the local polytope is exact."""
    graph = FactorGraph()
    v = graph.variables(n_vars)
    parents = [int(rng.integers(0, i)) for i in range(1, n_vars)]
    graph.add_pair(v[parents], v[np.arange(1, n_vars)])
    return graph


def test_lp_map_on_a_tree_is_integral_and_equals_enumeration():
    rng = np.random.default_rng(3)
    graph = _tree_graph(rng, 7)
    scores = FactorGraphScores(rng.normal(size=(8, 7)), rng.normal(size=(8, 6)) * 2)
    decoder = FactorGraphDecoder(graph)
    result = decoder.lp_map(scores)
    assert result.integral.all() and result.converged.all()
    outputs, theta = _enumerated(graph, scores)
    np.testing.assert_array_equal(decoder.map(scores), outputs[theta.argmax(axis=1)])


def test_hamming_loss_augmented_map_equals_enumeration():
    rng = np.random.default_rng(4)
    graph = _tree_graph(rng, 6)
    scores = FactorGraphScores(rng.normal(size=(6, 6)), rng.normal(size=(6, 5)))
    y_true = rng.integers(0, 2, size=(6, 6))
    outputs, theta = _enumerated(graph, scores, extra_unary=1 - 2 * y_true)
    expected = outputs[theta.argmax(axis=1)]
    for method in ("admm", "enumerate"):
        decoder = FactorGraphDecoder(graph, map_method=method)
        np.testing.assert_array_equal(
            decoder.loss_augmented_map(scores, y_true, "hamming"), expected)


def test_single_xor_factor_reproduces_sparsemax():
    rng = np.random.default_rng(5)
    unary = rng.normal(size=(5, 6))
    graph = FactorGraph()
    graph.add_xor(graph.variables(6))
    result = FactorGraphDecoder(graph, tol=1e-12).sparsemap(FactorGraphScores(unary))
    expected = MulticlassDecoder().sparsemap(MulticlassScores(unary)).unary
    np.testing.assert_allclose(result.unary, expected, atol=1e-8)
    assert result.converged.all()


def test_sparsemap_of_a_batch_equals_one_example_at_a_time():
    rng = np.random.default_rng(6)
    graph = FactorGraph.pairwise(5, at_least_one=True)
    scores = FactorGraphScores(rng.normal(size=(4, 5)), rng.normal(size=(4, 10)) * 0.5)
    decoder = FactorGraphDecoder(graph, tol=1e-9, max_iter=5000)
    batch = decoder.sparsemap(scores)
    for i in range(4):
        one = decoder.sparsemap(scores.take([i]))
        np.testing.assert_allclose(batch.unary[i], one.unary[0], atol=1e-6)
        np.testing.assert_allclose(batch.marginals.pair[i], one.marginals.pair[0],
                                   atol=1e-6)
    # the objective is ηᵀμ − ½‖u‖² of the reported marginals
    expected = (np.sum(scores.unary * batch.unary, axis=1)
                + np.sum(scores.pair * batch.marginals.pair, axis=1)
                - 0.5 * np.sum(batch.unary ** 2, axis=1))
    np.testing.assert_allclose(batch.objective, expected)


def test_sparsemap_vjp_matches_finite_differences():
    rng = np.random.default_rng(7)
    graph = FactorGraph.pairwise(4, at_least_one=True)
    scores = FactorGraphScores(rng.normal(size=(2, 4)), rng.normal(size=(2, 6)) * 0.3)
    decoder = FactorGraphDecoder(graph, tol=1e-12, max_iter=20000)
    result = decoder.sparsemap(scores)
    g = rng.normal(size=(2, 4))
    grad = result.vjp(g)
    eps = 1e-6
    for i in range(2):
        for j in range(4):
            up, down = scores.unary.copy(), scores.unary.copy()
            up[i, j] += eps
            down[i, j] -= eps
            numeric = (np.sum(g * decoder.sparsemap(FactorGraphScores(up, scores.pair)).unary)
                       - np.sum(g * decoder.sparsemap(FactorGraphScores(down, scores.pair))
                                .unary)) / (2 * eps)
            assert abs(numeric - grad.unary[i, j]) < 1e-4
        for k in range(6):
            up, down = scores.pair.copy(), scores.pair.copy()
            up[i, k] += eps
            down[i, k] -= eps
            numeric = (np.sum(g * decoder.sparsemap(FactorGraphScores(scores.unary, up)).unary)
                       - np.sum(g * decoder.sparsemap(FactorGraphScores(scores.unary, down))
                                .unary)) / (2 * eps)
            assert abs(numeric - grad.pair[i, k]) < 1e-4


def test_parts_are_the_variables_and_their_pair_products():
    graph = FactorGraph.pairwise(3)
    decoder = FactorGraphDecoder(graph)
    scores = FactorGraphScores(np.array([[1.0, -2.0, 0.5]]), np.array([[0.3, -0.1, 2.0]]))
    parts = decoder.parts(scores, np.array([[1, 0, 1]]))
    np.testing.assert_array_equal(parts.unary, [[1, 0, 1]])
    np.testing.assert_array_equal(parts.pair, [[0, 1, 0]])  # pairs (0,1), (0,2), (1,2)
    np.testing.assert_allclose(decoder.score_outputs(scores, np.array([[1, 0, 1]])),
                               [1.5 - 0.1])


def test_gold_outputs_that_break_a_factor_are_rejected():
    graph = FactorGraph()
    graph.add_xor(graph.variables(3))
    decoder = FactorGraphDecoder(graph)
    decoder.check_outputs(np.array([[0, 1, 0]]), np.array([0, 3]))
    with pytest.raises(ValueError, match="breaks a logic factor"):
        decoder.check_outputs(np.array([[0, 1, 0], [1, 1, 0]]), np.array([0, 3, 6]))
    with pytest.raises(ValueError, match="3 variables"):
        decoder.check_outputs(np.array([[0, 1]]), np.array([0, 2]))


@pytest.mark.parametrize("unary, pair, message", [
    (np.array([[np.nan, 0.0, 0.0]]), None, "NaN"),
    (np.array([[-np.inf, 0.0, 0.0]]), None, "-inf"),
    (np.array([[0.0, 0.0, 0.0]]), np.array([[0.0], [1.0]]), "examples"),
    (np.zeros(3), None, "2-D"),
])
def test_bad_scores_raise_clear_errors(unary, pair, message):
    with pytest.raises(ValueError, match=message):
        FactorGraphScores(unary, pair)


def test_scores_that_do_not_fit_the_graph_and_missing_operations_raise():
    decoder = FactorGraphDecoder(FactorGraph.pairwise(3))
    with pytest.raises(ValueError, match="do not fit the graph"):
        decoder.map(FactorGraphScores(np.zeros((1, 4))))
    with pytest.raises(ValueError, match="do not fit the graph"):
        decoder.map(FactorGraphScores(np.zeros((1, 3)), np.zeros((1, 2))))
    scores = FactorGraphScores(np.zeros((1, 3)))  # zero pair scores filled in
    assert decoder.map(scores).shape == (1, 3)
    with pytest.raises(NotImplementedError, match="marginals"):
        decoder.marginals(scores)
    with pytest.raises(ValueError, match="margin"):
        decoder.loss_augmented_map(scores, np.zeros((1, 3), int), "hamming",
                                   rescaling="slack")
    big = FactorGraphDecoder(FactorGraph.pairwise(17), map_method="enumerate")
    with pytest.raises(ValueError, match="at most 16"):
        big.map(FactorGraphScores(np.zeros((1, 17))))
    with pytest.raises(TypeError, match="options"):
        decoder.sparsemap(scores, method="fw")
