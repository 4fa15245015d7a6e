"""Exact MAP of pairwise graphs by branch and bound (map_method="exact") against
enumeration, the decision rule of FactorGraphDecoder (decision="marginals"), and the
cutting plane's pairwise fast path against its generic path."""

import warnings

import numpy as np
import pytest

from skstruct import StructuredSVM
from skstruct.decoders import FactorGraph, FactorGraphDecoder, FactorGraphScores
from skstruct.decoders._factor_graph.exact import pairwise_exact_map
from skstruct.losses import HammingLoss
from skstruct.optim import _cutting_plane


@pytest.mark.parametrize("n_vars", [1, 3, 7])
@pytest.mark.parametrize("coupling_scale", [0.2, 3.0])
@pytest.mark.parametrize("shared", [False, True])
def test_branch_and_bound_finds_the_enumerated_map_score(n_vars, coupling_scale, shared):
    rng = np.random.default_rng(n_vars)
    graph = FactorGraph.pairwise(n_vars)
    unary = rng.normal(size=(40, n_vars))
    pair = coupling_scale * rng.normal(size=(1 if shared else 40, graph.n_pairs))
    scores = FactorGraphScores(unary, np.repeat(pair, 40 // pair.shape[0], axis=0))
    exact, best = FactorGraphDecoder(graph, map_method="enumerate").map(
        scores, return_score=True)
    labels = FactorGraphDecoder(graph, map_method="exact").map(scores)
    decoder = FactorGraphDecoder(graph)
    np.testing.assert_allclose(decoder.score_outputs(scores, labels), best, atol=1e-12)
    raw, raw_best = pairwise_exact_map(unary, pair, graph.pairs)
    np.testing.assert_array_equal(raw, labels)
    np.testing.assert_allclose(raw_best, best, atol=1e-12)


def test_branch_and_bound_sums_repeated_pairs_and_takes_a_sparse_pair_set():
    rng = np.random.default_rng(0)
    graph = FactorGraph.pairwise(5, pairs=np.array([[0, 1], [1, 0], [2, 4], [0, 1]]))
    scores = FactorGraphScores(rng.normal(size=(30, 5)), 2 * rng.normal(size=(30, 4)))
    _, best = FactorGraphDecoder(graph, map_method="enumerate").map(scores,
                                                                    return_score=True)
    _, found = FactorGraphDecoder(graph, map_method="exact").map(scores, return_score=True)
    np.testing.assert_allclose(found, best, atol=1e-12)


def test_exact_map_refuses_graphs_with_logic_factors():
    graph = FactorGraph.pairwise(3, at_least_one=True)
    decoder = FactorGraphDecoder(graph, map_method="exact")
    with pytest.raises(ValueError, match="PAIR factors only"):
        decoder.map(FactorGraphScores(np.zeros((1, 3))))
    with pytest.raises(ValueError, match="different variables"):
        pairwise_exact_map(np.zeros((1, 2)), np.zeros((1, 1)), np.array([[1, 1]]))


def test_marginals_decision_rounds_the_sparsemap_marginals_and_keeps_training_map():
    rng = np.random.default_rng(1)
    graph = FactorGraph.pairwise(4)
    scores = FactorGraphScores(rng.normal(size=(25, 4)), rng.normal(size=(25, 6)))
    by_map = FactorGraphDecoder(graph, max_iter=500, tol=1e-8)
    by_marginals = FactorGraphDecoder(graph, max_iter=500, tol=1e-8, decision="marginals")
    u = by_map.sparsemap(scores).unary
    np.testing.assert_array_equal(by_marginals.map(scores), graph.round(u))
    assert not np.array_equal(by_marginals.map(scores), by_map.map(scores))
    y = (rng.random((25, 4)) < 0.5).astype(int)
    np.testing.assert_array_equal(
        by_marginals.loss_augmented_map(scores, y, HammingLoss()),
        by_map.loss_augmented_map(scores, y, HammingLoss()))


@pytest.mark.parametrize("map_method", ["exact", "admm"])
def test_cutting_plane_pairwise_path_matches_the_generic_path(map_method, monkeypatch):
    rng = np.random.default_rng(2)
    X = rng.normal(size=(50, 4))
    Y = (X @ rng.normal(size=(4, 3)) + rng.normal(size=(50, 3)) > 0).astype(int)

    def fit():
        model = StructuredSVM(FactorGraphDecoder(FactorGraph.pairwise(3),
                                                 map_method=map_method),
                              solver="cutting_plane", alpha=0.1, max_iter=15)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X, Y)
        return np.concatenate([model.coef_.ravel(), model.intercept_, model.coupling_])

    offered = []
    original = _cutting_plane._PairwiseConstraints.offer.__func__
    monkeypatch.setattr(_cutting_plane._PairwiseConstraints, "offer", classmethod(
        lambda cls, risk, size: offered.append(original(cls, risk, size)) or offered[-1]))
    fast = fit()
    assert isinstance(offered[-1], _cutting_plane._PairwiseConstraints)
    monkeypatch.setattr(_cutting_plane._PairwiseConstraints, "offer",
                        classmethod(lambda cls, risk, size: None))
    np.testing.assert_allclose(fast, fit(), atol=1e-10)
