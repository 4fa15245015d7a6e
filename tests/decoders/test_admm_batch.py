"""Batched LP-SparseMAP / LP-MAP ADMM: tiling, per-example penalty and stopping (equal to
the single-graph solver example by example), warm starts, the batched backward pass."""

import numpy as np
import pytest

from skstruct.decoders._factor_graph import linear_kernels as lin
from skstruct.decoders._factor_graph.admm import (
    BatchADMMResult,
    FlatFactorGraph,
    admm_backward,
    admm_batch,
    admm_batch_backward,
    admm_sparsemap,
)
from skstruct.decoders._factor_graph.groups import factor_groups

from test_admm import build_graph


def template():
    """XOR over (0, 1, 2), BUDGET over (2, 3, 4), an OROut, a frustrated PAIR cycle."""
    return build_graph(
        6, [((0, 1, 2), lin.XOR, (False,) * 3, (1.0,) * 3, 1.0),
            ((2, 3, 4), lin.BUDGET, (False, True, False), (1.0,) * 3, 2.0)],
        pairs=[(0, 3), (3, 4), (4, 0), (1, 5)], orouts=[(3, 5, 1)])


def batch_scores(rng, n):
    """Examples alternate: easy (weak attractive couplings) and hard (strong repulsive couplings)."""
    eta_u = rng.normal(0.0, 1.0, (n, 6))
    eta_pair = rng.normal(0.0, 0.3, (n, 4))
    eta_pair[1::2] -= 3.0
    eta_pair[::2] = 0.1
    return eta_u, eta_pair


def test_tile_is_disjoint_union_and_prefix_of_larger_tiling():
    graph = template()
    tiled = graph.tile(3)
    assert tiled.n_vars == 18 and tiled.n_pair == 12
    np.testing.assert_array_equal(tiled.pair_var[4:8], graph.pair_var + 6)
    np.testing.assert_array_equal(tiled.lin_var[6:12], graph.lin_var + 6)
    np.testing.assert_array_equal(tiled.orout_var[6:], graph.orout_var + 12)
    np.testing.assert_array_equal(tiled.lin_offsets, [0, 3, 6, 9, 12, 15, 18])
    np.testing.assert_array_equal(tiled.degree, np.tile(graph.degree, 3))
    two = graph.tile(2)
    for name in ("lin_var", "lin_kind", "lin_coef", "lin_negated", "pair_var",
                 "orout_var"):
        np.testing.assert_array_equal(getattr(tiled, name)[:len(getattr(two, name))],
                                      getattr(two, name))
    np.testing.assert_array_equal(tiled.lin_offsets[:5], two.lin_offsets)
    with pytest.raises(ValueError, match="n_copies"):
        graph.tile(0)


@pytest.mark.parametrize("map_mode", [False, True])
def test_batch_equals_single_solver_example_by_example(map_mode):
    graph = template()
    eta_u, eta_pair = batch_scores(np.random.default_rng(0), 6)
    options = dict(tol=1e-8, max_iter=3000, map_mode=map_mode)
    batch = admm_batch(graph, eta_u, eta_pair, **options)
    assert isinstance(batch, BatchADMMResult) and batch.u.shape == (6, 6)
    for i in range(6):
        single = admm_sparsemap(graph, eta_u[i], eta_pair[i], **options)
        example = batch.example(i)
        assert example.n_iter == single.n_iter and example.rho == single.rho
        assert example.converged == single.converged and example.integral == single.integral
        for name in ("u", "v", "lam", "a", "w", "q"):
            np.testing.assert_allclose(getattr(example, name), getattr(single, name),
                                       atol=1e-10, rtol=0)
    # every example stops on its own (above: after as many iterations as alone)
    assert batch.converged.all()
    assert np.unique(batch.n_iter).size >= 4


def test_batch_solution_is_the_tiled_graphs_solution():
    graph = template()
    eta_u, eta_pair = batch_scores(np.random.default_rng(1), 3)
    batch = admm_batch(graph, eta_u, eta_pair, tol=1e-10, max_iter=20000)
    whole = admm_sparsemap(graph.tile(3), eta_u.ravel(), eta_pair.ravel(), tol=1e-10,
                           max_iter=20000)
    np.testing.assert_allclose(batch.u.ravel(), whole.u, atol=1e-7)


def test_batch_warm_start_from_converged_result_stops_at_once():
    graph = template()
    eta_u, eta_pair = batch_scores(np.random.default_rng(2), 4)
    cold = admm_batch(graph, eta_u, eta_pair, tol=1e-8, max_iter=5000)
    warm = admm_batch(graph, eta_u, eta_pair, tol=1e-8, warm_start=cold)
    assert warm.converged.all() and warm.n_iter.max() <= 3
    np.testing.assert_allclose(warm.u, cold.u, atol=1e-7)
    np.testing.assert_array_equal(warm.s, eta_pair)
    with pytest.raises(ValueError, match="warm_start"):
        admm_batch(graph, eta_u[:2], eta_pair[:2], warm_start=cold)


def test_batch_rejects_bad_shapes():
    graph = template()
    with pytest.raises(ValueError, match="eta_u"):
        admm_batch(graph, np.zeros(6), np.zeros((1, 4)))
    with pytest.raises(ValueError, match="eta_pair"):
        admm_batch(graph, np.zeros((2, 6)), np.zeros((2, 3)))
    with pytest.raises(TypeError, match="FlatFactorGraph"):
        admm_batch(object(), np.zeros((2, 6)), np.zeros((2, 4)))


def test_batch_backward_equals_single_backward_and_central_differences():
    graph = template()
    rng = np.random.default_rng(3)
    eta_u, eta_pair = batch_scores(rng, 4)
    tight = dict(tol=1e-12, max_iter=50000)
    result = admm_batch(graph, eta_u, eta_pair, **tight)
    grad_u, grad_pair = rng.normal(size=(4, 6)), rng.normal(size=(4, 4))
    d_u, d_pair, info = admm_batch_backward(graph, result, grad_u, grad_pair,
                                            return_info=True)
    assert info["converged"].all()
    for i in range(4):
        s_u, s_pair = admm_backward(graph, result.example(i), grad_u[i], grad_pair[i])
        np.testing.assert_allclose(d_u[i], s_u, atol=1e-10)
        np.testing.assert_allclose(d_pair[i], s_pair, atol=1e-10)
    # central differences of ⟨g, (u, v)⟩ along a random direction, all examples at once
    du, dp = rng.normal(size=(4, 6)), rng.normal(size=(4, 4))
    eps = 1e-6

    def value(sign):
        r = admm_batch(graph, eta_u + sign * eps * du, eta_pair + sign * eps * dp, **tight)
        return np.sum(grad_u * r.u, axis=1) + np.sum(grad_pair * r.v, axis=1)
    numeric = (value(1) - value(-1)) / (2 * eps)
    analytic = np.sum(d_u * du, axis=1) + np.sum(d_pair * dp, axis=1)
    np.testing.assert_allclose(analytic, numeric, atol=1e-5)


def test_groups_vjp_is_transpose_of_jvp():
    graph = template().tile(2)
    rng = np.random.default_rng(4)
    for g in factor_groups(template(), 2):
        a = rng.normal(size=2 * g.size)
        w = rng.uniform(0.5, 2.0, 2 * g.size)
        s = rng.normal(size=2 * g.n_extra)
        q, v = np.empty_like(a), np.empty_like(s)
        g.qp(a, w, s, q, v)
        da, ds = rng.normal(size=a.shape), rng.normal(size=s.shape)
        gq, gv = rng.normal(size=a.shape), rng.normal(size=s.shape)
        dq, dv = np.empty_like(a), np.empty_like(s)
        ga, gs = np.empty_like(a), np.empty_like(s)
        g.jvp(a, w, s, q, da, ds, dq, dv)
        g.vjp(a, w, s, q, gq, gv, ga, gs)
        np.testing.assert_allclose(gq @ dq + gv @ dv, ga @ da + gs @ ds, atol=1e-10)
    assert graph.n_entries == 2 * template().n_entries


def test_map_mode_integral_per_example():
    graph = build_graph(3, pairs=[(0, 1), (1, 2), (0, 2)])
    eta_u = np.array([[1.0, 1.0, 1.0], [1.0, -2.0, 0.5]])
    eta_pair = np.array([[-3.0, -3.0, -3.0], [0.5, 0.5, 0.5]])
    result = admm_batch(graph, eta_u, eta_pair, map_mode=True, tol=1e-9, max_iter=50000)
    np.testing.assert_array_equal(result.integral, [False, True])
    assert isinstance(FlatFactorGraph(2), FlatFactorGraph)
