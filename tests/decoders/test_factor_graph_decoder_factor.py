"""Decoders as factors of a factor graph (FactorGraph.add_structure): a lone chain, tree,
matching or subset factor is the decoder's SparseMAP; a chain with a BUDGET on one tag's
column against enumeration (LP-MAP) and against an independent dual solution
(LP-SparseMAP); the backward pass against central differences; an estimator learning the
chain's extra scores (structure_coef_); bad inputs."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from skstruct import SparseMAPClassifier
from skstruct.decoders import (
    ChainDecoder,
    ChainScores,
    FactorGraph,
    FactorGraphDecoder,
    FactorGraphScores,
    MatchingDecoder,
    MatchingScores,
    MultilabelDecoder,
    MultilabelScores,
    SubsetDecoder,
    TreeDecoder,
)
from skstruct.decoders._tree.decoder import TreeScores

T, S = 4, 3
N_EXTRA = S * S + 2 * S


def chain_graph(budget=None):
    graph = FactorGraph()
    tags = graph.variables((T, S))
    columns = graph.add_structure(ChainDecoder(), tags)
    if budget is not None:
        graph.add_budget(tags[:, 0], budget)
    return graph, columns


def chain_scores(unary, extra):
    """ChainScores of one example from its flat unary (T * S) and extra scores."""
    k = S * S
    return ChainScores(unary.reshape(T, S), [0, T], extra[:k].reshape(S, S),
                       extra[k:k + S], extra[k + S:])


def test_lone_chain_factor_is_chain_sparsemap():
    rng = np.random.default_rng(0)
    graph, columns = chain_graph()
    np.testing.assert_array_equal(columns, np.arange(N_EXTRA))
    assert graph.n_extra == N_EXTRA and graph.n_factors == 1
    unary, extra = rng.normal(size=(3, T * S)), rng.normal(size=(3, N_EXTRA))
    result = FactorGraphDecoder(graph, tol=1e-10, max_iter=2000).sparsemap(
        FactorGraphScores(unary, extra=extra))
    assert result.converged.all()
    for i in range(3):
        expected = ChainDecoder().sparsemap(chain_scores(unary[i], extra[i]), tol=1e-12)
        np.testing.assert_allclose(result.unary[i], expected.unary.ravel(), atol=1e-6)
        np.testing.assert_allclose(result.marginals.extra[i, :S * S],
                                   expected.marginals.transition.ravel(), atol=1e-6)
        np.testing.assert_allclose(result.marginals.extra[i, S * S:S * S + S],
                                   expected.marginals.start[0], atol=1e-6)


def test_lone_tree_factor_is_tree_sparsemap():
    rng = np.random.default_rng(1)
    n = 4
    graph = FactorGraph()
    graph.add_structure(TreeDecoder(), graph.variables((n, n)))
    assert graph.n_extra == 0
    unary = rng.normal(size=(2, n * n))
    result = FactorGraphDecoder(graph, tol=1e-10, max_iter=2000).sparsemap(
        FactorGraphScores(unary))
    for i in range(2):
        expected = TreeDecoder().sparsemap(TreeScores(unary[i], [0, n]), tol=1e-12)
        np.testing.assert_allclose(result.unary[i], expected.unary, atol=1e-6)


def test_enumeration_takes_the_chain_constraint_and_its_extra_scores():
    rng = np.random.default_rng(2)
    graph, _ = chain_graph()
    unary, extra = rng.normal(size=(4, T * S)), rng.normal(size=(4, N_EXTRA))
    decoder = FactorGraphDecoder(graph, map_method="enumerate")
    labels, best = decoder.map(FactorGraphScores(unary, extra=extra), return_score=True)
    for i in range(4):
        states, score = ChainDecoder().map(chain_scores(unary[i], extra[i]),
                                           return_score=True)
        np.testing.assert_array_equal(labels[i].reshape(T, S).argmax(axis=1), states)
        np.testing.assert_allclose(best[i], score[0])
    assert graph.feasible(labels).all()
    assert not graph.feasible(np.zeros((1, T * S))).any()       # a token without a state


def budget_instance(n, seed):
    rng = np.random.default_rng(seed)
    unary = rng.normal(size=(n, T * S))
    unary[:, ::S] += 1.5                              # tag 0 is wanted on most tokens
    return FactorGraphScores(unary, extra=rng.normal(0.0, 0.5, (n, N_EXTRA)))


def test_chain_with_budget_lp_map_is_integral_and_exact_in_common_cases():
    """The chain polytope cut by Σ_t u[t, 0] ≤ 2 has fractional vertices, so LP-MAP is
    not always integral; on these instances (tag 0 wanted on most tokens, so the budget
    binds) it is on 8 of 12 examples, and then it is the enumerated MAP; it always bounds the MAP score from above."""
    graph, _ = chain_graph(budget=2)
    scores = budget_instance(12, seed=3)
    lp = FactorGraphDecoder(graph, tol=1e-9, max_iter=5000).lp_map(scores)
    exact, best = FactorGraphDecoder(graph, map_method="enumerate").map(
        scores, return_score=True)
    assert exact[:, ::S].sum(axis=1).max() <= 2 and graph.feasible(exact).all()
    assert lp.integral.mean() >= 0.5
    np.testing.assert_array_equal(np.round(lp.u[lp.integral]), exact[lp.integral])
    lp_value = (np.einsum("ij,ij->i", lp.u, scores.unary)
                + np.einsum("ij,ij->i", lp.v, scores.extra))
    assert np.all(lp_value >= best - 1e-6)


def test_chain_with_budget_sparsemap_matches_its_dual_solution():
    """LP-SparseMAP over {μ ∈ chain polytope : Σ_t q[t, 0] ≤ 2} (the local polytope: the
    budget only touches the chain's variables) by its one-multiplier dual: q(λ) =
    ChainDecoder.sparsemap at unary − λ on tag 0, λ ≥ 0 found by bisection so that the
    budget holds with complementary slackness."""
    graph, _ = chain_graph(budget=2)
    scores = budget_instance(3, seed=4)
    result = FactorGraphDecoder(graph, tol=1e-10, max_iter=5000).sparsemap(scores)
    assert result.converged.all()

    def solve(i, lam):
        unary = scores.unary[i].reshape(T, S).copy()
        unary[:, 0] -= lam
        return ChainDecoder().sparsemap(chain_scores(unary.ravel(), scores.extra[i]),
                                        tol=1e-13).unary

    binding = 0
    for i in range(3):
        low, high = 0.0, 0.0
        if solve(i, 0.0)[:, 0].sum() > 2:
            binding += 1
            high = 50.0
            for _ in range(60):
                mid = 0.5 * (low + high)
                low, high = (mid, high) if solve(i, mid)[:, 0].sum() > 2 else (low, mid)
        np.testing.assert_allclose(result.unary[i], solve(i, high).ravel(), atol=1e-6)
        assert result.unary[i, ::S].sum() <= 2 + 1e-6
    assert binding >= 2


@pytest.mark.parametrize("budget", [None, 2])
def test_backward_matches_central_differences(budget):
    """d⟨g, u*⟩/d(unary, extra) along random directions, with the chain factor alone
    (constant weights: the decoder's SparseMAP) and with a BUDGET on its first column
    (varying weights: the weighted active set)."""
    rng = np.random.default_rng(5)
    graph, _ = chain_graph(budget)
    scores = budget_instance(1, seed=6)
    decoder = FactorGraphDecoder(graph, tol=1e-12, max_iter=20000)
    result = decoder.sparsemap(scores)
    g = rng.normal(size=result.unary.shape)
    grad = result.vjp(g)
    assert grad.unary.shape == (1, T * S) and grad.extra.shape == (1, N_EXTRA)
    eps = 1e-5
    for _ in range(2):
        du, de = rng.normal(size=(1, T * S)), rng.normal(size=(1, N_EXTRA))
        values = [np.sum(g * decoder.sparsemap(FactorGraphScores(
            scores.unary + sign * eps * du, extra=scores.extra + sign * eps * de)).unary)
            for sign in (1.0, -1.0)]
        numeric = (values[0] - values[1]) / (2 * eps)
        analytic = np.sum(grad.unary * du) + np.sum(grad.extra * de)
        np.testing.assert_allclose(analytic, numeric, atol=1e-5, rtol=1e-4)


def test_bad_inputs():
    graph = FactorGraph()
    block = graph.variables((3, 2))
    with pytest.raises(ValueError, match="2-D block"):
        graph.add_structure(ChainDecoder(), block[:, 0])
    with pytest.raises(ValueError, match="square"):
        graph.add_structure(TreeDecoder(), block)
    with pytest.raises(ValueError, match="1-D block"):
        graph.add_structure(MultilabelDecoder(), block)
    with pytest.raises(ValueError, match="negated"):
        graph.add_structure(ChainDecoder(), ~block)
    with pytest.raises(TypeError, match="ChainDecoder, TreeDecoder"):
        graph.add_structure(object(), block)
    with pytest.raises(TypeError, match="Variables block"):
        graph.add_structure(ChainDecoder(), np.zeros((3, 2)))
    graph.add_structure(ChainDecoder(), block)
    assert graph.n_extra == 8
    decoder = FactorGraphDecoder(graph)
    with pytest.raises(ValueError, match="extra"):
        decoder.sparsemap(FactorGraphScores(np.zeros((1, 6)), extra=np.zeros((1, 7))))
    with pytest.raises(ValueError, match="extra"):
        FactorGraphScores(np.zeros((2, 6)), extra=np.zeros((1, 8)))
    # extra scores default to zeros
    assert decoder.sparsemap(FactorGraphScores(np.zeros((1, 6)))).marginals.extra.shape \
        == (1, 8)


@pytest.mark.parametrize("decoder, shape", [(MatchingDecoder(), (2, 3)),
                                            (SubsetDecoder(2), (4,))])
def test_lone_matching_and_subset_factors_are_their_sparsemap(decoder, shape):
    rng = np.random.default_rng(7)
    graph = FactorGraph()
    graph.add_structure(decoder, graph.variables(shape))
    unary = rng.normal(size=(2, int(np.prod(shape))))
    result = FactorGraphDecoder(graph, tol=1e-10, max_iter=2000).sparsemap(
        FactorGraphScores(unary))
    for i in range(2):
        scores = (MatchingScores(unary[i], [shape]) if len(shape) == 2
                  else MultilabelScores(unary[i:i + 1]))
        expected = decoder.sparsemap(scores, tol=1e-12)
        np.testing.assert_allclose(result.unary[i], np.ravel(expected.unary), atol=1e-6)


def test_estimator_learns_the_chain_factor_scores_as_structure_coef():
    """3 tokens, 2 states: the state of token 0 follows x, the others copy it; the
    learned transitions reward staying."""
    rng = np.random.default_rng(8)
    X = rng.normal(size=(40, 3))
    state = (X[:, 0] > 0).astype(np.int64)
    Y = np.zeros((40, 3, 2), dtype=np.int64)
    Y[np.arange(40), :, state] = 1
    Y = Y.reshape(40, 6)
    graph = FactorGraph()
    graph.add_structure(ChainDecoder(), graph.variables((3, 2)))
    model = SparseMAPClassifier(alpha=1e-2, decoder=FactorGraphDecoder(graph, max_iter=300),
                                max_iter=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, Y)
    assert model.structure_coef_.shape == (8,) and model.coupling_.shape == (0,)
    transition = model.structure_coef_[:4].reshape(2, 2)
    assert np.trace(transition) > transition[0, 1] + transition[1, 0]
    pred = model.predict(X)
    assert graph.feasible(pred).all() and np.mean(np.all(pred == Y, axis=1)) > 0.8
