"""The exact pruning of pairwise factor graphs (skstruct.decoders._factor_graph.pair_pruning)
against a slow peeling, the local-polytope LP (scipy's HiGHS) and the whole graph's ADMM."""

import numpy as np
import pytest
from scipy.optimize import linprog

from skstruct.decoders import FactorGraph
from skstruct.decoders._factor_graph.admm_compiled import admm_batch_compiled
from skstruct.decoders._factor_graph.pair_pruning import live_variables, pair_adjacency


def _graph(rng, n_vars, complete):
    if complete:
        return FactorGraph.pairwise(n_vars).flat()
    pairs = [(i, j) for i in range(n_vars) for j in range(i + 1, n_vars)
             if rng.random() < 0.3]
    pairs = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    return FactorGraph.pairwise(n_vars, pairs=pairs).flat()


def _sparse_label_scores(rng, graph, n):
    """Scores like those of multilabel data: most unaries negative, a few positive; pair
    scores of both signs."""
    eta_u = rng.normal(-1.0, 1.0, (n, graph.n_vars))
    eta_pair = rng.normal(-0.1, 0.4, (n, graph.n_pair))
    return eta_u, eta_pair


def _slow_live(eta, s, pair_var, degree):
    """Peel by recomputing every b_i over the live neighbours until nothing changes."""
    live = degree > 0
    while True:
        bound = eta.copy()
        for f, (i, j) in enumerate(pair_var):
            if live[i] and live[j] and s[f] > 0:
                bound[i] += s[f]
                bound[j] += s[f]
        dead = live & (bound <= 0)
        if not dead.any():
            return live
        live &= ~dead


def _live(graph, eta, s):
    n = graph.n_vars
    live = np.empty(n, dtype=bool)
    count = live_variables(eta, s, graph.entry_var, graph.degree, *graph.pair_adjacency,
                           np.empty(n), live, np.empty(n, np.int64))
    assert count == live.sum()
    return live


def _lp_map_value(graph, eta, s):
    """max η·u + s·v over the local polytope, by HiGHS."""
    n, m = graph.n_vars, graph.n_pair
    rows, rhs = [], []
    for f, (i, j) in enumerate(graph.pair_var):
        for coef, bound in [({n + f: 1, i: -1}, 0), ({n + f: 1, j: -1}, 0),
                            ({n + f: -1, i: 1, j: 1}, 1)]:
            row = np.zeros(n + m)
            for k, c in coef.items():
                row[k] += c
            rows.append(row)
            rhs.append(bound)
    result = linprog(-np.concatenate([eta, s]), A_ub=np.array(rows), b_ub=rhs,
                     bounds=[(0, 1)] * n + [(0, None)] * m, method="highs")
    assert result.status == 0
    return -result.fun


def test_adjacency_lists_every_pair_entry_at_its_variable():
    rng = np.random.default_rng(0)
    graph = _graph(rng, 9, complete=False)
    offsets, entry = pair_adjacency(graph.pair_var, graph.n_vars)
    flat = graph.pair_var.reshape(-1)
    assert sorted(entry.tolist()) == list(range(flat.size))
    for i in range(graph.n_vars):
        assert set(entry[offsets[i]:offsets[i + 1]]) == set(np.flatnonzero(flat == i))


@pytest.mark.parametrize("complete", [True, False])
def test_peeling_equals_the_slow_fixed_point(complete):
    rng = np.random.default_rng(1)
    for n_vars in (2, 5, 12, 25):
        graph = _graph(rng, n_vars, complete)
        eta_u, eta_pair = _sparse_label_scores(rng, graph, 30)
        for k in range(30):
            np.testing.assert_array_equal(
                _live(graph, eta_u[k], eta_pair[k]),
                _slow_live(eta_u[k], eta_pair[k], graph.pair_var, graph.degree))


@pytest.mark.parametrize("complete", [True, False])
def test_pruned_variables_are_off_at_the_whole_graphs_sparsemap_optimum(complete):
    """Every variable the peeling removes is 0 at the LP-SparseMAP optimum of the whole
    graph (its ADMM run to 1e-10), and the pruned solve gives the same u."""
    rng = np.random.default_rng(2)
    graph = _graph(rng, 14, complete)
    eta_u, eta_pair = _sparse_label_scores(rng, graph, 40)
    whole = admm_batch_compiled(graph, eta_u, eta_pair, tol=1e-10, max_iter=100000)
    assert whole.converged.all()
    pruned = admm_batch_compiled(graph, eta_u, eta_pair, tol=1e-10, max_iter=100000,
                                 keep_state=False, prune=True)
    assert pruned.converged.all()
    n_dead = 0
    for k in range(40):
        dead = ~_live(graph, eta_u[k], eta_pair[k]) & (graph.degree > 0)
        n_dead += dead.sum()
        assert np.abs(whole.u[k, dead]).max(initial=0.0) <= 1e-8
        assert np.all(pruned.u[k, dead] == 0.0)
    assert n_dead > 100  # the scores leave most variables off
    np.testing.assert_allclose(pruned.u, whole.u, atol=1e-7)


@pytest.mark.parametrize("complete", [True, False])
def test_pruned_lp_map_reaches_the_local_polytope_lp_optimum(complete):
    rng = np.random.default_rng(3)
    graph = _graph(rng, 10, complete)
    eta_u, eta_pair = _sparse_label_scores(rng, graph, 25)
    eta_pair += 0.4  # attractive pairs that can turn on variables of negative score
    pruned = admm_batch_compiled(graph, eta_u, eta_pair, tol=1e-9, max_iter=100000,
                                 map_mode=True, keep_state=False, prune=True)
    assert pruned.converged.all()
    values = (eta_u * pruned.u).sum(1) + (eta_pair * pruned.v).sum(1)
    expected = [_lp_map_value(graph, eta_u[k], eta_pair[k]) for k in range(25)]
    np.testing.assert_allclose(values, expected, atol=1e-6)


@pytest.mark.parametrize("map_mode", [False, True])
def test_factors_of_score_zero_are_left_out_of_the_solve(map_mode):
    """A PAIR factor whose score is exactly zero changes no u: the pruned solve, which
    leaves it out, reaches the whole graph's u (LP-SparseMAP) or the LP's optimum
    (LP-MAP), its v_f = u_i u_j is feasible, and an example whose live factors all
    score zero takes the closed form, in no iteration."""
    rng = np.random.default_rng(5)
    graph = _graph(rng, 12, complete=True)
    eta_u, eta_pair = _sparse_label_scores(rng, graph, 30)
    eta_u += 1.0  # most variables live
    eta_pair[rng.random(eta_pair.shape) < 0.8] = 0.0
    eta_pair[:5] = 0.0
    options = dict(tol=1e-10, max_iter=100000, map_mode=map_mode)
    pruned = admm_batch_compiled(graph, eta_u, eta_pair, keep_state=False, prune=True,
                                 **options)
    assert pruned.converged.all()
    if map_mode:
        values = (eta_u * pruned.u).sum(1) + (eta_pair * pruned.v).sum(1)
        expected = [_lp_map_value(graph, eta_u[k], eta_pair[k]) for k in range(30)]
        np.testing.assert_allclose(values, expected, atol=1e-6)
    else:
        whole = admm_batch_compiled(graph, eta_u, eta_pair, **options)
        np.testing.assert_allclose(pruned.u, whole.u, atol=1e-7)
    first, second = pruned.u[:, graph.pair_var[:, 0]], pruned.u[:, graph.pair_var[:, 1]]
    zero = eta_pair == 0.0
    np.testing.assert_allclose(pruned.v[zero], (first * second)[zero], atol=1e-12)
    assert np.all(pruned.n_iter[:5] == 0)
    np.testing.assert_array_equal(pruned.u[:5], np.clip(eta_u[:5], 0, 1) if not map_mode
                                  else (eta_u[:5] > 0).astype(float))


def test_an_example_with_every_variable_off_needs_no_iteration():
    graph = FactorGraph.pairwise(20).flat()
    eta_u = -np.ones((3, 20))
    eta_pair = np.full((3, graph.n_pair), 0.01)  # b_i = -1 + 19 * 0.01 < 0
    result = admm_batch_compiled(graph, eta_u, eta_pair, keep_state=False, prune=True)
    assert np.all(result.n_iter == 0) and result.converged.all()
    assert np.all(result.u == 0.0) and np.all(result.v == 0.0)


def test_warm_started_pruned_solve_reaches_the_cold_solution():
    """From the state of other scores (a live set that changed), the pruned solve still
    reaches the optimum, in fewer iterations than from the cold start when the scores
    moved little."""
    rng = np.random.default_rng(5)
    graph = FactorGraph.pairwise(30).flat()
    eta_u, eta_pair = _sparse_label_scores(rng, graph, 50)
    options = dict(tol=1e-9, max_iter=100000, keep_state=False, prune=True)
    first = admm_batch_compiled(graph, eta_u, eta_pair, **options)
    moved = eta_u + 0.3 * rng.normal(size=eta_u.shape)
    cold = admm_batch_compiled(graph, moved, eta_pair, **options)
    warm = admm_batch_compiled(graph, moved, eta_pair, warm_start=first, **options)
    assert warm.converged.all()
    np.testing.assert_allclose(warm.u, cold.u, atol=1e-7)
    near = admm_batch_compiled(graph, eta_u * 1.01, eta_pair, warm_start=first, **options)
    again = admm_batch_compiled(graph, eta_u * 1.01, eta_pair, **options)
    assert near.n_iter.sum() < 0.7 * again.n_iter.sum()


def test_pruning_needs_a_graph_of_pairs_and_no_kept_state():
    """With keep_state (the backward pass reads the whole graph's state) the whole graph is
    solved, to the bit of the unpruned call."""
    rng = np.random.default_rng(6)
    graph = FactorGraph.pairwise(8).flat()
    eta_u, eta_pair = _sparse_label_scores(rng, graph, 5)
    kept = admm_batch_compiled(graph, eta_u, eta_pair, prune=True)
    whole = admm_batch_compiled(graph, eta_u, eta_pair)
    np.testing.assert_array_equal(kept.u, whole.u)
    np.testing.assert_array_equal(kept.lam, whole.lam)
