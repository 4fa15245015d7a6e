"""The relaxed structured hinge of factor-graph models: loss-augmented LP-MAP keeps the
fractional LP solution μ = (u, v) (``FactorGraphDecoder(loss_augmented="relaxed")``)."""

import warnings

import numpy as np
import pytest

from skstruct import StructuredSVM
from skstruct.decoders import FactorGraph, FactorGraphDecoder, FactorGraphScores
from skstruct.decoders._factor_graph.relaxed import RelaxedOutputs, relaxed_task_loss
from skstruct.losses import HammingLoss, StructuredHingeLoss
from skstruct.optim import _cutting_plane


def _all_outputs(n_vars):
    return (np.arange(2 ** n_vars)[:, None] >> np.arange(n_vars)[::-1]) & 1


class _ShiftedCostsHamming(HammingLoss):
    """Hamming, with per-variable costs shifted by a constant: Δ = Σ_i c_i(y_i) + const
    with c_i(ȳ_i) ≠ 0 (``unary_costs`` are defined up to a constant per example)."""

    def unary_costs(self, y_true, offsets, n_states):
        return super().unary_costs(y_true, offsets, n_states) + 0.5


@pytest.mark.parametrize("loss", [HammingLoss(), HammingLoss(normalize=True),
                                  HammingLoss(class_costs=[1.0, 3.0]),
                                  _ShiftedCostsHamming()])
def test_relaxed_task_loss_is_the_task_loss_at_0_1_outputs_and_linear_between(loss):
    rng = np.random.default_rng(0)
    n, n_vars = 6, 5
    offsets = np.arange(n + 1) * n_vars
    y_true = rng.integers(0, 2, size=(n, n_vars))
    y = rng.integers(0, 2, size=(n, n_vars))
    np.testing.assert_allclose(relaxed_task_loss(loss, y_true, y, offsets),
                               loss(y_true.ravel(), y.ravel(), offsets), atol=1e-12)
    np.testing.assert_allclose(relaxed_task_loss(loss, y_true, y_true, offsets), 0.0,
                               atol=1e-12)
    other = rng.integers(0, 2, size=(n, n_vars))
    t = rng.uniform(size=(n, 1))
    mix = t * y + (1 - t) * other
    expected = (t[:, 0] * loss(y_true.ravel(), y.ravel(), offsets)
                + (1 - t[:, 0]) * loss(y_true.ravel(), other.ravel(), offsets))
    np.testing.assert_allclose(relaxed_task_loss(loss, y_true, mix, offsets), expected,
                               atol=1e-12)


def _hinge(decoder, scores, y_true, y_hat, delta):
    theta_hat = decoder.parts(scores, y_hat).dot(scores)
    return delta + theta_hat - decoder.score_outputs(scores, y_true)


def test_relaxed_hinge_bounds_the_exact_hinge_and_the_rounded_one_from_above():
    """max over the local polytope ≥ max over the outputs (enumerated) ≥ the rounded
    output's hinge, on random graphs of mixed couplings, some with fractional LPs."""
    rng = np.random.default_rng(1)
    n, n_vars = 40, 5
    graph = FactorGraph.pairwise(n_vars)
    relaxed = FactorGraphDecoder(graph, max_iter=5000, tol=1e-9)
    rounded = FactorGraphDecoder(graph, max_iter=5000, tol=1e-9, loss_augmented="rounded")
    exact = FactorGraphDecoder(graph, map_method="enumerate")
    loss = StructuredHingeLoss("hamming")
    scores = FactorGraphScores(rng.normal(0, 1, (n, n_vars)),
                               rng.normal(0, 2, (n, graph.n_pairs)))
    y_true = rng.integers(0, 2, size=(n, n_vars))
    mu, delta_mu = loss.loss_augmented(relaxed, scores, y_true)
    assert isinstance(mu, RelaxedOutputs) and mu.shape == (n, n_vars + graph.n_pairs)
    y_round, delta_round = loss.loss_augmented(rounded, scores, y_true)
    y_exact, delta_exact = loss.loss_augmented(exact, scores, y_true)
    assert y_round.dtype == y_exact.dtype == np.int64
    h_relaxed = _hinge(relaxed, scores, y_true, mu, delta_mu)
    h_exact = _hinge(exact, scores, y_true, y_exact, delta_exact)
    h_rounded = _hinge(rounded, scores, y_true, y_round, delta_round)
    u = np.asarray(mu)[:, :n_vars]
    fractional = np.any(np.abs(u - np.round(u)) > 1e-3, axis=1)
    assert 0 < fractional.sum() < n            # both kinds of LP solutions occur
    assert np.all(h_relaxed >= h_exact - 1e-6)
    assert np.all(h_exact >= h_rounded - 1e-9)
    assert np.any(h_relaxed[fractional] > h_exact[fractional] + 1e-3)
    # integral LP solutions are the exact loss-augmented outputs
    np.testing.assert_allclose(h_relaxed[~fractional], h_exact[~fractional], atol=1e-5)
    # the parts read back are (u, v), v inside the local polytope of every pair
    parts = relaxed.parts(scores, mu)
    a, b = graph.pairs[:, 0], graph.pairs[:, 1]
    v = parts.pair
    assert np.all(v >= -1e-6) and np.all(v <= np.minimum(u[:, a], u[:, b]) + 1e-6)
    assert np.all(v >= u[:, a] + u[:, b] - 1 - 1e-6)


def test_slack_rescaling_and_exact_map_are_not_relaxed():
    graph = FactorGraph.pairwise(3)
    scores = FactorGraphScores(np.ones((1, 3)), -1.5 * np.ones((1, 3)))
    y_true = np.array([[1, 0, 0]])
    relaxed = FactorGraphDecoder(graph)
    assert relaxed.relaxed_loss_augmented_map(scores, y_true, "hamming", "slack") is None
    with pytest.raises(ValueError, match="rescaling='slack'"):
        StructuredHingeLoss("hamming", "slack").loss_augmented(relaxed, scores, y_true)
    exact = FactorGraphDecoder(graph, map_method="exact")
    assert exact.relaxed_loss_augmented_map(scores, y_true, "hamming") is None
    # the frustrated triangle: LP-MAP is u = 1/2 everywhere
    mu, delta = relaxed.relaxed_loss_augmented_map(scores, np.zeros((1, 3), int), "hamming")
    np.testing.assert_allclose(np.asarray(mu)[0, :3], 0.5, atol=1e-4)
    np.testing.assert_allclose(delta, 1.5, atol=1e-3)


def test_relaxed_outputs_of_the_wrong_shape_are_refused():
    decoder = FactorGraphDecoder(FactorGraph.pairwise(3))
    scores = FactorGraphScores(np.zeros((2, 3)), np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"LP solutions have shape \(2, 6\)"):
        decoder.parts(scores, RelaxedOutputs.pack(np.zeros((2, 3)), np.zeros((2, 2))))


def _frustrated_data(seed=0, n=80, n_features=4, n_labels=6):
    """Labels that come in exclusive groups: repulsive couplings, fractional LPs."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    W = rng.normal(size=(n_features, n_labels))
    scores = X @ W + rng.normal(0.0, 0.3, (n, n_labels))
    Y = np.zeros((n, n_labels), dtype=int)
    for group in (slice(0, 3), slice(3, 6)):
        block = scores[:, group]
        Y[np.arange(n), group.start + np.argmax(block, axis=1)] = 1
    return X, Y


def _fit(decoder, solver="cutting_plane", **params):
    X, Y = _frustrated_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return StructuredSVM(decoder, solver=solver, alpha=0.05, **params).fit(X, Y)


def test_the_fast_pairwise_path_and_the_generic_one_fit_the_same_relaxed_model(
        monkeypatch):
    graph = FactorGraph.pairwise(6)
    kw = dict(max_iter=4000, tol=1e-10)
    fast = _fit(FactorGraphDecoder(graph, **kw), max_iter=40, tol=1e-4)
    with monkeypatch.context() as patch:
        patch.setattr(_cutting_plane._PairwiseConstraints, "offer",
                      classmethod(lambda cls, risk, cache_size: None))
        generic = _fit(FactorGraphDecoder(graph, **kw), max_iter=40, tol=1e-4)
    assert fast.n_iter_ == generic.n_iter_ > 3
    np.testing.assert_allclose(fast.coef_, generic.coef_, atol=1e-5)
    np.testing.assert_allclose(fast.coupling_, generic.coupling_, atol=1e-5)


def test_relaxed_hinge_differs_from_the_rounded_one_only_through_fractional_lps():
    """On a tree of pairs (LP-MAP integral) relaxed and rounded fits coincide; on the
    fully connected graph of exclusive groups they differ, and the relaxed objective
    bounds the rounded one from above (it maximizes over a larger set)."""
    chain = np.column_stack([np.arange(5), np.arange(1, 6)])
    kw = dict(max_iter=4000, tol=1e-10)
    tree = FactorGraph.pairwise(6, pairs=chain)
    a = _fit(FactorGraphDecoder(tree, **kw), max_iter=30)
    b = _fit(FactorGraphDecoder(tree, loss_augmented="rounded", **kw), max_iter=30)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-6)
    full = FactorGraph.pairwise(6)
    relaxed = _fit(FactorGraphDecoder(full, **kw), max_iter=30)
    rounded = _fit(FactorGraphDecoder(full, loss_augmented="rounded", **kw), max_iter=30)
    assert np.abs(relaxed.coupling_ - rounded.coupling_).max() > 1e-3


@pytest.mark.parametrize("solver", ["subgradient", "bcfw"])
def test_other_solvers_train_on_relaxed_outputs(solver, monkeypatch):
    seen = []
    original = FactorGraphDecoder.relaxed_loss_augmented_map

    def spy(self, *args, **kwargs):
        found = original(self, *args, **kwargs)
        seen.append(found is not None and isinstance(found[0], RelaxedOutputs))
        return found

    monkeypatch.setattr(FactorGraphDecoder, "relaxed_loss_augmented_map", spy)
    X, Y = _frustrated_data()
    model = _fit(FactorGraphDecoder(FactorGraph.pairwise(6)), solver=solver, max_iter=5)
    assert seen and all(seen)
    assert model.score(X, Y) > 0.3
    # the repulsive structure is learned: labels of one group push each other off
    assert model.coupling_[0] < 0
