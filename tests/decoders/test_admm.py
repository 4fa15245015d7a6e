"""LP-SparseMAP / LP-MAP by ADMM on factor graphs: single factors against their kernels,
tiny mixed graphs against a generic QP over the local polytope, LP-MAP on trees against
enumeration, the backward pass against central differences, warm starts."""

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import LinearConstraint, minimize, nnls

from skstruct.decoders._factor_graph import linear_kernels as lin
from skstruct.decoders._factor_graph import pair_kernels as pk
from skstruct.decoders._factor_graph.admm import FlatFactorGraph, admm_backward, admm_sparsemap

TIGHT = dict(tol=1e-12, max_iter=50000)


# ------------------------------------------------------------------ graph builders

def build_graph(n_vars, linear=(), pairs=(), orouts=()):
    """linear: (vars, kind, negated, coef, bound) tuples; pairs: (i, j); orouts: vars
    (last = output)."""
    lin_var = [i for f in linear for i in f[0]]
    offsets = np.cumsum([0] + [len(f[0]) for f in linear])
    or_var = [i for f in orouts for i in f]
    or_offsets = np.cumsum([0] + [len(f) for f in orouts])
    return FlatFactorGraph(
        n_vars,
        lin_var=np.array(lin_var, dtype=np.int64), lin_offsets=offsets,
        lin_kind=np.array([f[1] for f in linear], dtype=np.int64),
        lin_negated=np.array([b for f in linear for b in f[2]], dtype=bool),
        lin_coef=np.array([c for f in linear for c in f[3]], dtype=float),
        lin_bound=np.array([f[4] for f in linear], dtype=float),
        pair_var=np.array(pairs, dtype=np.int64).reshape(-1, 2),
        orout_var=np.array(or_var, dtype=np.int64), orout_offsets=or_offsets)


def _satisfies(x, factor):
    vars_, kind, negated, coef, bound = factor
    xt = np.where(negated, 1 - x[list(vars_)], x[list(vars_)])
    total = float(np.dot(coef, xt))
    return {lin.XOR: total == 1, lin.AT_MOST_ONE: total <= 1, lin.OR: total >= 1,
            lin.BUDGET: total <= bound, lin.KNAPSACK: total <= bound}[kind]


def random_graph(rng, n_vars):
    """A random feasible mixed graph: linear factors that a random 0/1 point satisfies
    (so the local polytope is not empty), PAIR factors, maybe an OROut factor whose output
    agrees with that point."""
    x = rng.integers(0, 2, n_vars)
    linear = []
    while len(linear) < rng.integers(1, 4):
        size = int(rng.integers(2, min(3, n_vars) + 1))
        vars_ = tuple(int(i) for i in rng.choice(n_vars, size, replace=False))
        kind = int(rng.integers(0, 5))
        negated = tuple(bool(b) for b in rng.random(size) < 0.3)
        coef = tuple(rng.uniform(0.5, 2.0, size)) if kind == lin.KNAPSACK else (1.0,) * size
        bound = {lin.BUDGET: float(rng.integers(1, size)),
                 lin.KNAPSACK: float(rng.uniform(0.5, 2.5))}.get(kind, 1.0)
        factor = (vars_, kind, negated, coef, bound)
        if _satisfies(x, factor):
            linear.append(factor)
    pairs = [tuple(int(i) for i in rng.choice(n_vars, 2, replace=False))
             for _ in range(rng.integers(1, 4))]
    orouts = []
    if n_vars >= 3 and rng.random() < 0.5:
        vars_ = [int(i) for i in rng.choice(n_vars, 3, replace=False)]
        if x[vars_[2]] == int(x[vars_[0]] or x[vars_[1]]):
            orouts.append(vars_)
    return build_graph(n_vars, linear, pairs, orouts), (linear, pairs, orouts)


# ------------------------------------------------------------------ reference QP

def local_polytope_constraints(n_vars, factors):
    """The local polytope as G z <= h, E z = e over z = (u, v) (box apart)."""
    linear, pairs, orouts = factors
    n = n_vars + len(pairs)
    ineq, eq = [], []

    def row(entries, constant):
        r = np.zeros(n + 1)
        for k, value in entries:
            r[k] += value
        r[n] = constant
        return r
    for vars_, kind, negated, coef, bound in linear:
        # Σ c_i ũ_i = Σ s_i c_i u_i + Σ_{negated} c_i
        entries = [(i, -c if neg else c) for i, neg, c in zip(vars_, negated, coef)]
        offset = sum(c for neg, c in zip(negated, coef) if neg)
        if kind == lin.XOR:
            eq.append(row(entries, offset - 1.0))
        elif kind == lin.OR:
            ineq.append(row([(k, -c) for k, c in entries], 1.0 - offset))
        else:
            ineq.append(row(entries, offset - bound))
    for f, (i, j) in enumerate(pairs):
        k = n_vars + f
        ineq += [row([(k, 1), (i, -1)], 0), row([(k, 1), (j, -1)], 0),
                 row([(i, 1), (j, 1), (k, -1)], -1)]
    for vars_ in orouts:
        *inputs, y = vars_
        ineq += [row([(i, 1), (y, -1)], 0) for i in inputs]
        ineq.append(row([(y, 1)] + [(i, -1) for i in inputs], 0))
    G = np.array(ineq).reshape(-1, n + 1)
    E = np.array(eq).reshape(-1, n + 1)
    return G[:, :n], -G[:, n], E[:, :n], -E[:, n]


def local_polytope_qp(n_vars, factors, eta_u, eta_pair):
    """max η·u + η_pair·v − ½‖u‖² over the local polytope (constraints written out
    explicitly): an interior-point solve (scipy trust-constr) finds the active
    constraints, then the equality-constrained QP on them is solved exactly (KKT system)
    and checked feasible and optimal (multiplier signs). Returns u (unique; v may not be).
    """
    G, h, E, e = local_polytope_constraints(n_vars, factors)
    n = G.shape[1]
    G = np.vstack([G, np.eye(n), -np.eye(n)])
    h = np.concatenate([h, np.ones(n), np.zeros(n)])
    eta = np.concatenate([eta_u, eta_pair])
    Q = np.diag(np.r_[np.ones(n_vars), np.zeros(n - n_vars)])
    cons = [LinearConstraint(G, -np.inf, h)]
    if E.shape[0]:
        # drop redundant equalities (several XOR factors may be dependent): trust-constr
        # needs a full row rank
        left, sing, _ = np.linalg.svd(E, full_matrices=False)
        basis = left[:, sing > 1e-10 * sing[0]].T
        cons.append(LinearConstraint(basis @ E, basis @ e, basis @ e))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rough = minimize(lambda z: -(eta @ z - 0.5 * z @ Q @ z), np.full(n, 0.5),
                         jac=lambda z: -eta + Q @ z, hess=lambda z: Q,
                         method="trust-constr", constraints=cons,
                         options=dict(gtol=1e-12, xtol=1e-14, maxiter=5000)).x
    for threshold in (1e-4, 1e-6, 1e-3, 1e-5, 1e-7):
        z = _certified_optimum(Q, eta, G, h, E, e, h - G @ rough < threshold)
        if z is not None:
            return z[:n_vars]
    raise AssertionError("no certified optimum")


def _certified_optimum(Q, eta, G, h, E, e, active):
    """Solve the QP with the ``active`` inequalities as equalities (KKT system); return
    the solution if it is feasible and optimal, else None."""
    n = Q.shape[0]
    A = np.vstack([E, G[active]])
    b = np.concatenate([e, h[active]])
    m = A.shape[0]
    kkt = np.block([[Q, A.T], [A, np.zeros((m, m))]])
    z = np.linalg.lstsq(kkt, np.concatenate([eta, b]), rcond=None)[0][:n]
    if not (np.all(G @ z <= h + 1e-9) and np.allclose(E @ z, e, atol=1e-9)):
        return None
    # optimality certificate: η − Q z = Aᵀ μ with μ ≥ 0 on the inequalities (the active
    # set may be degenerate, so the multipliers come from non-negative least squares)
    split = np.hstack([E.T, -E.T, G[active].T])
    _, residual = nnls(split, eta - Q @ z, maxiter=10000)
    return z if residual <= 1e-8 else None


# ------------------------------------------------------------------ single factors

@pytest.mark.parametrize("kind, bound, negated", [
    (lin.XOR, 1.0, (False, False, False, False)),
    (lin.AT_MOST_ONE, 1.0, (False, True, False, False)),
    (lin.OR, 1.0, (True, False, False, True)),
    (lin.BUDGET, 2.0, (False, False, True, False)),
    (lin.KNAPSACK, 1.5, (False, True, False, False)),
])
def test_single_linear_factor_equals_kernel_qp(kind, bound, negated):
    rng = np.random.default_rng(kind)
    coef = rng.uniform(0.5, 2.0, 4) if kind == lin.KNAPSACK else np.ones(4)
    graph = build_graph(4, [((0, 1, 2, 3), kind, negated, tuple(coef), bound)])
    for _ in range(5):
        eta = rng.normal(0.5, 1.0, 4)
        result = admm_sparsemap(graph, eta, None, **TIGHT)
        expected = np.empty(4)
        lin.qp(eta, np.ones(4), np.array([0, 4]), np.array([kind]), coef,
               np.array([bound]), np.array(negated), expected)
        assert result.converged
        np.testing.assert_allclose(result.u, expected, atol=1e-8)


def test_single_pair_factor_equals_kernel_qp():
    rng = np.random.default_rng(0)
    graph = build_graph(2, pairs=[(1, 0)])
    for _ in range(10):
        eta = rng.normal(0.5, 1.0, 2)
        s = rng.normal(0.0, 1.0, 1)
        result = admm_sparsemap(graph, eta, s, **TIGHT)
        u = np.empty((1, 2))
        v = np.empty(1)
        pk.pair_qp(eta[[1, 0]][None], np.ones((1, 2)), s, u, v)
        np.testing.assert_allclose(result.u, u[0, [1, 0]], atol=1e-8)
        np.testing.assert_allclose(result.v, v, atol=1e-8)


def test_single_orout_factor_equals_kernel_qp():
    rng = np.random.default_rng(1)
    graph = build_graph(3, orouts=[(2, 0, 1)])
    for _ in range(10):
        eta = rng.normal(0.3, 1.0, 3)
        result = admm_sparsemap(graph, eta, None, **TIGHT)
        u = np.empty(3)
        pk.orout_qp(eta[[2, 0, 1]], np.ones(3), np.array([0, 3]), u)
        np.testing.assert_allclose(result.u[[2, 0, 1]], u, atol=1e-8)


def test_variable_in_no_factor_is_solved_alone():
    graph = build_graph(3, pairs=[(0, 1)])
    eta = np.array([0.2, 0.1, 1.7])
    assert admm_sparsemap(graph, eta, np.zeros(1)).u[2] == 1.0
    eta[2] = 0.4
    assert admm_sparsemap(graph, eta, np.zeros(1)).u[2] == 0.4
    assert admm_sparsemap(graph, eta, np.zeros(1), map_mode=True).u[2] == 1.0
    eta[2] = -0.4
    assert admm_sparsemap(graph, eta, np.zeros(1), map_mode=True).u[2] == 0.0


# ------------------------------------------------------------------ tiny graphs

@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(3, 5))
def test_tiny_graph_equals_local_polytope_qp(seed, n_vars):
    rng = np.random.default_rng(seed)
    graph, factors = random_graph(rng, n_vars)
    eta_u = rng.normal(0.0, 1.5, n_vars)
    eta_pair = rng.normal(0.0, 1.0, graph.n_pair)
    result = admm_sparsemap(graph, eta_u, eta_pair, tol=1e-10, max_iter=50000)
    assert result.converged
    expected = local_polytope_qp(n_vars, factors, eta_u, eta_pair)
    np.testing.assert_allclose(result.u, expected, atol=1e-5)


# ------------------------------------------------------------------ LP-MAP on trees

@pytest.mark.parametrize("seed", range(6))
def test_map_mode_on_pair_tree_is_integral_enumerated_map(seed):
    rng = np.random.default_rng(seed)
    n_vars = 5
    pairs = [(int(rng.integers(0, child)), child) for child in range(1, n_vars)]
    graph = build_graph(n_vars, pairs=pairs)
    eta_u = rng.normal(0.0, 1.0, n_vars)
    eta_pair = rng.normal(0.0, 1.5, len(pairs))
    best, best_x = -np.inf, None
    for bits in itertools.product((0, 1), repeat=n_vars):
        x = np.array(bits, dtype=float)
        score = eta_u @ x + sum(s * x[i] * x[j] for s, (i, j) in zip(eta_pair, pairs))
        if score > best:
            best, best_x = score, x
    result = admm_sparsemap(graph, eta_u, eta_pair, map_mode=True, tol=1e-9,
                            max_iter=50000)
    assert result.integral
    np.testing.assert_array_equal(np.round(result.u), best_x)


def test_map_mode_reports_fractional_solution_of_frustrated_cycle():
    # three repulsive pairs: the best 0/1 vector scores 1, u = 0.5, v = 0 scores 1.5
    graph = build_graph(3, pairs=[(0, 1), (1, 2), (0, 2)])
    result = admm_sparsemap(graph, np.ones(3), np.full(3, -3.0), map_mode=True, tol=1e-9,
                            max_iter=50000)
    assert result.converged and result.integral is False
    np.testing.assert_allclose(result.u, 0.5, atol=1e-6)


# ------------------------------------------------------------------ backward pass

def _solve(graph, eta_u, eta_pair):
    result = admm_sparsemap(graph, eta_u, eta_pair, **TIGHT)
    assert result.converged
    return result


@pytest.mark.parametrize("seed", range(8))
def test_backward_matches_central_differences(seed):
    rng = np.random.default_rng(100 + seed)
    n_vars = int(rng.integers(3, 6))
    graph, _ = random_graph(rng, n_vars)
    eta_u = rng.normal(0.0, 1.0, n_vars)
    eta_pair = rng.normal(0.0, 1.0, graph.n_pair)
    result = _solve(graph, eta_u, eta_pair)
    n_in = n_vars + graph.n_pair
    eps = 1e-5
    jac = np.empty((n_in, n_in))
    for k in range(n_in):
        step = np.zeros(n_in)
        step[k] = eps
        plus = _solve(graph, eta_u + step[:n_vars], eta_pair + step[n_vars:])
        minus = _solve(graph, eta_u - step[:n_vars], eta_pair - step[n_vars:])
        jac[:, k] = (np.concatenate([plus.u, plus.v]) -
                     np.concatenate([minus.u, minus.v])) / (2 * eps)
    for _ in range(3):
        g = rng.normal(size=n_in)
        d_u, d_pair, info = admm_backward(graph, result, g[:n_vars], g[n_vars:],
                                          return_info=True)
        assert info["converged"]
        np.testing.assert_allclose(np.concatenate([d_u, d_pair]), g @ jac, atol=1e-6)


def test_backward_of_single_pair_is_kernel_vjp():
    graph = build_graph(2, pairs=[(0, 1)])
    eta, s = np.array([0.3, 0.6]), np.array([0.4])
    result = _solve(graph, eta, s)
    g_u, g_v = np.array([0.7, -1.1]), np.array([0.5])
    ga, gs = np.empty((1, 2)), np.empty(1)
    pk.pair_vjp(eta[None], np.ones((1, 2)), s, g_u[None], g_v, ga, gs)
    d_u, d_pair = admm_backward(graph, result, g_u, g_v)
    np.testing.assert_allclose(d_u, ga[0], atol=1e-9)
    np.testing.assert_allclose(d_pair, gs, atol=1e-9)


def test_result_rho_is_the_penalty_of_the_last_local_problems():
    # the backward pass reads ρ from the result: it must be the one of the stored a, w,
    # also when max_iter ends on an adaptation step
    graph = build_graph(4, [((0, 1, 2), lin.XOR, (False,) * 3, (1.0,) * 3, 1.0)],
                        pairs=[(0, 1), (1, 2), (2, 3), (0, 3)])
    eta_u = np.array([0.4, 0.3, 0.5, 0.2])
    eta_pair = np.array([0.8, -0.5, 0.6, 0.3])
    rhos = set()
    for max_iter in (10, 20, 30, 40):
        # from a too small ρ, the primal residual dominates: ρ doubles every 10 iterations
        result = admm_sparsemap(graph, eta_u, eta_pair, tol=0.0, max_iter=max_iter,
                                rho=1e-3)
        rhos.add(result.rho)
        np.testing.assert_allclose(result.w * graph.degree[graph.entry_var],
                                   1.0 + result.rho)
    # ρ starts at rho × mean degree (11 entries on 4 variables)
    assert np.allclose(sorted(rhos), np.array([1, 2, 4, 8]) * 1e-3 * 11 / 4)


def test_backward_rejects_map_mode():
    graph = build_graph(2, pairs=[(0, 1)])
    result = admm_sparsemap(graph, np.zeros(2), np.zeros(1), map_mode=True)
    with pytest.raises(ValueError, match="map_mode"):
        admm_backward(graph, result, np.zeros(2), np.zeros(1))


# ------------------------------------------------------------------ warm start

def test_warm_start_from_converged_solution_converges_in_few_iterations():
    graph = build_graph(4, [((0, 1, 2), lin.XOR, (False,) * 3, (1.0,) * 3, 1.0)],
                        pairs=[(0, 1), (1, 2), (2, 3), (0, 3)])
    eta_u = np.array([0.4, 0.3, 0.5, 0.2])
    eta_pair = np.array([0.8, -0.5, 0.6, 0.3])
    cold = admm_sparsemap(graph, eta_u, eta_pair, tol=1e-8, max_iter=50000)
    assert cold.converged and cold.n_iter > 20
    warm = admm_sparsemap(graph, eta_u, eta_pair, tol=1e-8, warm_start=cold)
    assert warm.converged and warm.n_iter <= 3
    np.testing.assert_allclose(warm.u, cold.u, atol=1e-7)


def test_converged_residuals_below_tol_and_zero_tol_runs_max_iter():
    graph = build_graph(3, pairs=[(0, 1), (1, 2), (0, 2)])
    eta_u, eta_pair = np.array([0.2, -0.3, 0.9]), np.array([0.5, -0.4, 0.3])
    result = admm_sparsemap(graph, eta_u, eta_pair)
    assert result.converged
    assert result.primal_residual < 1e-6 and result.dual_residual < 1e-6
    fixed = admm_sparsemap(graph, eta_u, eta_pair, tol=0.0, max_iter=37)
    assert fixed.n_iter == 37 and not fixed.converged
