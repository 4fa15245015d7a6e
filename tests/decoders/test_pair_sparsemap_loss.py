"""The fused LP-SparseMAP objective of pairwise models
(skstruct.decoders._factor_graph.pair_loss) against the generic composition of the
feature map, the decoder's ADMM and the SparseMAP loss."""

import numpy as np
import pytest

from skstruct.decoders import FactorGraph, FactorGraphDecoder
from skstruct.features import FactorGraphFeatures
from skstruct.features._factor_graph import PairwiseSparseMAPObjective
from skstruct.losses import SparseMAPLoss
from skstruct.optim import RegularizedRisk
from skstruct.decoders import FactorGraphScores
from skstruct.utils._sequences import SequenceBatch


def _risk(graph, n=120, n_features=5, seed=0, cost=None, sample_weight=None):
    rng = np.random.default_rng(seed)
    n_labels = graph.n_vars
    X = rng.normal(size=(n, n_features))
    Y = (X[:, :1] + rng.normal(size=(n, n_labels)) > 0.7).astype(np.int64)
    decoder = FactorGraphDecoder(graph, tol=1e-10, max_iter=20000, decision="marginals")
    features = FactorGraphFeatures(n_features, n_labels, graph.n_pairs,
                                   FactorGraphScores, n_extra=graph.n_extra)
    batch = SequenceBatch(X, np.arange(n + 1))
    weights = np.ones(n) if sample_weight is None else sample_weight
    risk = RegularizedRisk(features, batch, Y, decoder, SparseMAPLoss(cost), 1e-2,
                           weights)
    w = rng.normal(size=features.n_params) * 0.7
    coupling = features.coupling(w)
    coupling[rng.random(coupling.size) < 0.5] = 0.0
    return risk, w


def _generic(risk, w):
    compiled, risk._compiled = risk._compiled, None
    try:
        return risk.value_gradient_and_spread(w)
    finally:
        risk._compiled = compiled


@pytest.mark.parametrize("complete,weighted", [(True, False), (False, True)])
def test_fused_objective_equals_the_generic_composition(complete, weighted):
    """Value, gradient and the spread at the zero couplings, on a complete graph and on
    a sparse one (labels without any pair among them), uniform and uneven weights."""
    rng = np.random.default_rng(1)
    if complete:
        graph = FactorGraph.pairwise(7)
    else:
        graph = FactorGraph.pairwise(8, pairs=np.array([[0, 1], [0, 3], [1, 3], [2, 5]]))
    weights = rng.uniform(0.2, 3.0, 120) if weighted else None
    risk, w = _risk(graph, sample_weight=weights)
    assert isinstance(risk.compiled_objective(), PairwiseSparseMAPObjective)
    fused = risk.value_gradient_and_spread(w)
    generic = _generic(risk, w)
    assert fused[0] == pytest.approx(generic[0], rel=1e-9, abs=1e-9)
    for got, expected in zip(fused[1:], generic[1:]):
        np.testing.assert_allclose(got, expected, atol=1e-8)
    coupling = risk.features.coupling(np.arange(risk.n_params))
    assert np.any(fused[2][coupling][risk.features.coupling(w) == 0] > 1e-3)  # kinks
    value, grad = risk.value_and_gradient(w)
    assert value == fused[0]
    np.testing.assert_array_equal(grad, fused[1])


def test_no_fused_objective_with_a_cost_or_structure_factors():
    risk, _ = _risk(FactorGraph.pairwise(5), cost="hamming")
    assert risk.compiled_objective() is None
    risk, _ = _risk(FactorGraph.pairwise(5, at_least_one=True))
    assert risk.compiled_objective() is None
    assert risk.kinked_parameters() is not None  # the generic spread serves them
