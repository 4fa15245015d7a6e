"""The compiled ADMM loop: equal to admm_batch example by example (every factor kind, both
modes, warm starts, examples alone or several to a parallel chunk), and loadable from a
warm numba cache in a new process."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from skstruct.decoders._factor_graph import admm_compiled as _admm_compiled
from skstruct.decoders._factor_graph import linear_kernels as lin
from skstruct.decoders._factor_graph.admm import BatchADMMResult, FlatFactorGraph, admm_batch
from skstruct.decoders._factor_graph.admm_compiled import admm_batch_compiled

from test_admm import build_graph

FIELDS = ("u", "v", "lam", "a", "w", "q", "rho", "primal_residual", "dual_residual")


def mixed_graph(rng, n_vars=9):
    """A graph with every factor kind: the five linear kinds (some inputs negated), PAIR
    factors and two OROut factors, all satisfied by one random 0/1 point (so the local
    polytope is not empty); a variable in no factor."""
    x = rng.integers(0, 2, n_vars - 1)
    used = n_vars - 1
    linear = []
    for kind in (lin.XOR, lin.AT_MOST_ONE, lin.OR, lin.BUDGET, lin.KNAPSACK):
        while True:
            size = int(rng.integers(2, 5))
            vars_ = tuple(int(i) for i in rng.choice(used, size, replace=False))
            negated = tuple(bool(b) for b in rng.random(size) < 0.3)
            xt = np.where(negated, 1 - x[list(vars_)], x[list(vars_)])
            coef = (tuple(rng.uniform(0.5, 2.0, size)) if kind == lin.KNAPSACK
                    else (1.0,) * size)
            total = float(np.dot(coef, xt))
            if kind == lin.XOR and total != 1 or kind == lin.OR and total < 1:
                continue
            if kind == lin.AT_MOST_ONE and total > 1:
                continue
            bound = {lin.BUDGET: float(max(np.ceil(total), 1.0)),
                     lin.KNAPSACK: total + 0.3}.get(kind, 1.0)
            linear.append((vars_, kind, negated, coef, bound))
            break
    pairs = [tuple(int(i) for i in rng.choice(used, 2, replace=False)) for _ in range(6)]
    orouts = []
    while len(orouts) < 2:
        vars_ = [int(i) for i in rng.choice(used, int(rng.integers(3, 5)), replace=False)]
        if x[vars_[-1]] == int(x[vars_[:-1]].max()):
            orouts.append(vars_)
    return build_graph(n_vars, linear, pairs, orouts)


def scores(rng, graph, n):
    """Easy examples (weak attractive couplings) alternate with hard ones (strong
    repulsive couplings), so that the examples stop after different iterations."""
    eta_u = rng.normal(0.0, 1.0, (n, graph.n_vars))
    eta_pair = rng.normal(0.0, 0.3, (n, graph.n_pair))
    eta_pair[1::2] -= 3.0
    return eta_u, eta_pair


def assert_same(result, expected):
    assert isinstance(result, BatchADMMResult) and result.map_mode == expected.map_mode
    np.testing.assert_array_equal(result.n_iter, expected.n_iter)
    np.testing.assert_array_equal(result.converged, expected.converged)
    for name in FIELDS:  # to the bit: the same operations in the same order
        np.testing.assert_array_equal(getattr(result, name), getattr(expected, name),
                                      err_msg=name)
    np.testing.assert_array_equal(result.s, expected.s)
    if expected.integral is None:
        assert result.integral is None
    else:
        np.testing.assert_array_equal(result.integral, expected.integral)


@pytest.mark.parametrize("map_mode", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_equals_admm_batch_example_by_example_with_warm_starts(map_mode, seed):
    rng = np.random.default_rng(seed)
    graph = mixed_graph(rng)
    n = 6
    eta_u, eta_pair = scores(rng, graph, n)
    options = dict(tol=1e-7, max_iter=400, map_mode=map_mode)
    expected = admm_batch(graph, eta_u, eta_pair, **options)
    assert_same(admm_batch_compiled(graph, eta_u, eta_pair, **options), expected)
    assert np.unique(expected.n_iter).size > 1 and expected.converged.any()
    # warm starts, from a short unconverged run (with adaptation off, then on)
    short = admm_batch(graph, eta_u, eta_pair, tol=1e-7, max_iter=15, adapt=False,
                       map_mode=map_mode, rho=0.3)
    assert not short.converged.all()
    assert_same(admm_batch_compiled(graph, eta_u, eta_pair, tol=1e-7, max_iter=15,
                                    adapt=False, map_mode=map_mode, rho=0.3), short)
    warm = admm_batch(graph, eta_u, eta_pair, warm_start=short, **options)
    assert_same(admm_batch_compiled(graph, eta_u, eta_pair, warm_start=short, **options),
                warm)


def test_fully_connected_graph_equals_admm_batch():
    n_labels = 92  # 8,372 PAIR entries: more than ENTRIES_PER_CHUNK, one example a chunk
    first, second = np.triu_indices(n_labels, k=1)
    graph = FlatFactorGraph(n_labels, pair_var=np.stack([first, second], axis=1))
    assert graph.n_entries > _admm_compiled.ENTRIES_PER_CHUNK
    rng = np.random.default_rng(5)
    eta_u = rng.normal(size=(3, n_labels))
    eta_pair = rng.normal(scale=0.3, size=(3, graph.n_pair))
    for tol in (0.0, 1e-6):
        options = dict(tol=tol, max_iter=60)
        assert_same(admm_batch_compiled(graph, eta_u, eta_pair, **options),
                    admm_batch(graph, eta_u, eta_pair, **options))


def test_graphs_without_entries_or_examples_equal_admm_batch():
    rng = np.random.default_rng(3)
    for graph, n in [(FlatFactorGraph(3), 4), (mixed_graph(rng), 0),
                     (build_graph(4, pairs=[(0, 2)]), 3)]:
        eta_u, eta_pair = scores(rng, graph, n)
        for map_mode in (False, True):
            assert_same(admm_batch_compiled(graph, eta_u, eta_pair, map_mode=map_mode),
                        admm_batch(graph, eta_u, eta_pair, map_mode=map_mode))


def test_rejects_bad_arguments():
    graph = build_graph(3, pairs=[(0, 1)])
    with pytest.raises(TypeError, match="FlatFactorGraph"):
        admm_batch_compiled(object(), np.zeros((2, 3)), np.zeros((2, 1)))
    with pytest.raises(ValueError, match="eta_pair"):
        admm_batch_compiled(graph, np.zeros((2, 3)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="max_iter"):
        admm_batch_compiled(graph, np.zeros((2, 3)), np.zeros((2, 1)), max_iter=0)
    result = admm_batch_compiled(graph, np.zeros((2, 3)), np.zeros((2, 1)))
    with pytest.raises(ValueError, match="warm_start"):
        admm_batch_compiled(graph, np.zeros((1, 3)), np.zeros((1, 1)), warm_start=result)
    with pytest.raises(TypeError, match="warm_start"):
        admm_batch_compiled(graph, np.zeros((2, 3)), np.zeros((2, 1)),
                            warm_start=result.example(0))


_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    from skstruct.decoders._factor_graph import admm_compiled as _admm_compiled
    from skstruct.decoders._factor_graph.admm import FlatFactorGraph

    graph, eta_u, eta_pair = {problem}
    result = _admm_compiled.admm_batch_compiled(graph, eta_u, eta_pair)
    print(json.dumps(result.u.tolist()))
""")

_PROBLEM = """(
    FlatFactorGraph(4, lin_var=np.array([0, 1, 2]), lin_offsets=np.array([0, 3]),
                    lin_kind=np.array([0]), pair_var=np.array([[0, 3], [1, 3]]),
                    orout_var=np.array([1, 2, 3]), orout_offsets=np.array([0, 3])),
    np.array([[0.3, -0.2, 0.5, 1.0], [1.0, 0.1, -0.4, 0.2]]),
    np.array([[0.5, -1.0], [-2.0, 0.3]]))"""


def test_second_process_loads_the_cached_solver_and_gets_the_same_result():
    # This process compiles (or loads) the solver for these argument types and leaves it
    # in numba's cache; a new process must load it from there (what a user sees after
    # installation) and compute the same marginals.
    namespace = {"np": np, "FlatFactorGraph": FlatFactorGraph}
    graph, eta_u, eta_pair = eval(_PROBLEM, namespace)
    expected = admm_batch_compiled(graph, eta_u, eta_pair).u
    np.testing.assert_array_equal(expected, admm_batch(graph, eta_u, eta_pair).u)
    done = subprocess.run([sys.executable, "-c", _CHILD.format(problem=_PROBLEM)],
                          capture_output=True, text=True, timeout=600, env=os.environ)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    np.testing.assert_array_equal(np.array(got), expected)


@pytest.mark.parametrize("map_mode", [False, True])
@pytest.mark.parametrize("n_labels", [12, 40])
def test_skipping_pair_factors_at_the_corner_keeps_every_value_to_the_bit(map_mode,
                                                                          n_labels):
    # sparse outputs (a few labels likely on, most strongly off), as in multilabel
    # training: most PAIR factors sit at (0, 0, 0) with both variables at exactly 0, so
    # the compiled solver without a kept state skips them; its u, v, multipliers,
    # penalties, iteration counts and residuals are still admm_batch's, to the bit,
    # cold and warm-started (the warm start from a short run, at shifted scores, so
    # variables leave and enter the corner during the solve)
    first, second = np.triu_indices(n_labels, k=1)
    graph = FlatFactorGraph(n_labels, pair_var=np.stack([first, second], axis=1))
    rng = np.random.default_rng(n_labels)
    n = 6
    eta_u = rng.normal(-2.0, 1.0, (n, n_labels))
    eta_u[:, :3] += 3.0
    eta_pair = rng.normal(0.0, 0.5, (n, graph.n_pair))
    eta_pair[1::2] -= 1.0  # repulsive couplings take the s < 0 form
    options = dict(tol=1e-8, max_iter=500, map_mode=map_mode)
    short = admm_batch(graph, eta_u, eta_pair, tol=1e-8, max_iter=7, map_mode=map_mode)
    shifted = eta_u + rng.normal(0.0, 0.3, eta_u.shape)
    for scores_u, warm in [(eta_u, None), (shifted, short)]:
        expected = admm_batch(graph, scores_u, eta_pair, warm_start=warm, **options)
        result = admm_batch_compiled(graph, scores_u, eta_pair, warm_start=warm,
                                     keep_state=False, **options)
        for name in ("u", "v", "lam", "rho", "primal_residual", "dual_residual",
                     "n_iter", "converged"):
            np.testing.assert_array_equal(getattr(result, name), getattr(expected, name),
                                          err_msg=name)
        assert expected.converged.sum() >= n // 2
        off = expected.u == 0.0
        both_off = off[:, first] & off[:, second]
        assert both_off.mean() > 0.4  # the skipped branch is taken
