"""The linear-constraint factors' local QP, MAP and Jacobian against enumeration.

Every reference here is built from the factor's feasible 0/1 vectors (or, for KNAPSACK,
from the vertices of its relaxation polytope), enumerated for n <= 6, and never from the
kernels' own formulas.
"""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skstruct.decoders._factor_graph import linear_kernels as K
from skstruct.optim._qp import solve_capped_simplex_qp

KINDS = [K.XOR, K.AT_MOST_ONE, K.OR, K.BUDGET, K.KNAPSACK]


class Factor:
    """One factor: kind, scores a, weights w, costs c, bound B, negated entries."""

    def __init__(self, kind, a, w, c, bound, negated):
        self.kind = kind
        self.a = np.asarray(a, dtype=float)
        self.w = np.asarray(w, dtype=float)
        self.c = np.asarray(c, dtype=float)
        self.bound = float(bound)
        self.negated = np.asarray(negated, dtype=bool)

    @property
    def n(self):
        return self.a.shape[0]

    def holds(self, total, tol=0.0):
        """Whether Σ c_i x̃_i = total satisfies the constraint."""
        if self.kind == K.XOR:
            return abs(total - self.bound) <= tol
        if self.kind == K.OR:
            return total >= self.bound - tol
        return total <= self.bound + tol

    def tilde(self, x):
        return np.where(self.negated, 1.0 - x, x)

    def feasible_vertices(self):
        """The feasible 0/1 vectors, in increasing lexicographic order."""
        points = [np.array(x, dtype=float) for x in itertools.product([0, 1], repeat=self.n)]
        return [x for x in points if self.holds(float(self.c @ self.tilde(x)))]

    def polytope_vertices(self):
        """Vertices of [0, 1]ⁿ ∩ {Σ c_i ũ_i (=, ≤, ≥) B}: the cube's vertices on the
        feasible side and the points where the cube's edges cross the hyperplane."""
        points = [np.array(x, dtype=float) for x in itertools.product([0, 1], repeat=self.n)]
        vertices = [x for x in points if self.holds(float(self.c @ self.tilde(x)))]
        for i in range(self.n):
            for x in points:
                if x[i] != 0.0:
                    continue
                rest = self.c @ self.tilde(x) - self.c[i] * self.tilde(x)[i]
                t = (self.bound - rest) / self.c[i]
                if 0.0 < t < 1.0:
                    y = x.copy()
                    y[i] = 1.0 - t if self.negated[i] else t
                    vertices.append(y)
        return vertices


def batch(factors):
    """The flat arrays of a list of factors, in the kernels' layout."""
    offsets = np.cumsum([0] + [f.n for f in factors]).astype(np.int64)
    cat = (lambda name, dtype: np.concatenate([getattr(f, name) for f in factors]).astype(dtype)
           if factors else np.empty(0, dtype))
    return (cat("a", float), cat("w", float), offsets,
            np.array([f.kind for f in factors], dtype=np.int64), cat("c", float),
            np.array([f.bound for f in factors]), cat("negated", bool))


def solve(factors):
    a, w, offsets, kind, coef, bound, negated = batch(factors)
    K.check_linear_factors(a, w, offsets, kind, coef, bound, negated)
    u = np.full(a.shape[0], np.nan)
    K.qp(a, w, offsets, kind, coef, bound, negated, u)
    return u


def local_map(factors):
    a, w, offsets, kind, coef, bound, negated = batch(factors)
    x = np.full(a.shape[0], np.nan)
    value = K.map_(a, offsets, kind, coef, bound, negated, x)
    return x, value


def jvp(factors, u, da):
    a, w, offsets, kind, coef, bound, negated = batch(factors)
    du = np.full(a.shape[0], np.nan)
    K.jvp(u, a, w, offsets, kind, coef, bound, negated, np.asarray(da, float), du)
    return du


def vjp(factors, u, du):
    a, w, offsets, kind, coef, bound, negated = batch(factors)
    da = np.full(a.shape[0], np.nan)
    K.vjp(u, a, w, offsets, kind, coef, bound, negated, np.asarray(du, float), da)
    return da


def random_factor(rng, kind, n, *, unit_weights=False, ties=False, negate=None):
    if ties:
        a = rng.integers(-2, 3, size=n).astype(float) / 2.0
    else:
        a = rng.normal(scale=rng.choice([0.3, 1.0, 3.0]), size=n)
    w = np.ones(n) if unit_weights else rng.uniform(0.3, 3.0, size=n)
    if negate is None:
        negate = rng.random() < 0.5
    negated = rng.random(n) < 0.4 if negate else np.zeros(n, dtype=bool)
    c = np.ones(n)
    bound = 1.0
    if kind == K.BUDGET:
        bound = float(rng.integers(0, n + 2))
    elif kind == K.KNAPSACK:
        c = rng.uniform(0.2, 2.0, size=n)
        if ties:
            c = rng.integers(1, 4, size=n).astype(float)
        bound = 0.0 if rng.random() < 0.1 else rng.uniform(0.0, c.sum())
    return Factor(kind, a, w, c, bound, negated)


def reference_qp(factor, vertices):
    """argmax over conv(vertices) of a·u − ½ Σ w u², by an exact active-set QP over the
    vertex weights p ∈ simplex: max θᵀp − ½ pᵀGp with θ_s = a·x_s, G = X W Xᵀ (a
    constant added to θ makes Σ p = 1 optimal on the capped simplex)."""
    X = np.array(vertices)
    theta = X @ factor.a
    gram = (X * factor.w) @ X.T
    shift = 10.0 * (np.abs(gram).sum(axis=1).max() + np.ptp(theta) + 1.0)
    result = solve_capped_simplex_qp(gram, theta - theta.max() + shift, 1.0, tol=1e-14)
    assert abs(result.alpha.sum() - 1.0) < 1e-9
    return result.alpha @ X


def objective(factor, u):
    return float(factor.a @ u - 0.5 * factor.w @ (u * u))


def sparsemax(z):
    """Martins & Astudillo (2016), by sorting."""
    z_sorted = np.sort(z)[::-1]
    cumulative = np.cumsum(z_sorted) - 1.0
    k = np.arange(1, z.size + 1)
    rho = k[z_sorted - cumulative / k > 0][-1]
    return np.maximum(z - cumulative[rho - 1] / rho, 0.0)


# ---------------------------------------------------------------------------- polytopes


@pytest.mark.parametrize("kind", [K.XOR, K.AT_MOST_ONE, K.OR, K.BUDGET])
def test_box_and_constraint_is_the_hull_of_the_feasible_vectors(kind):
    # The vertices of [0,1]ⁿ ∩ {constraint} are all 0/1 and are the feasible vectors.
    rng = np.random.default_rng(kind)
    for n in range(1, 7):
        for _ in range(6):
            factor = random_factor(rng, kind, n)
            feasible = {tuple(x) for x in factor.feasible_vertices()}
            vertices = {tuple(x) for x in factor.polytope_vertices()}
            assert feasible and vertices == feasible


def test_knapsack_polytope_is_larger_than_the_hull():
    # costs (1, 1, 2), B = 2: (1, 0, 0.5) is a vertex of the relaxation, and the direction
    # (1, 1, 2) is worth 3 there but at most 2 on any feasible 0/1 vector.
    factor = Factor(K.KNAPSACK, [1.0, 1.0, 2.0], np.ones(3), [1.0, 1.0, 2.0], 2.0,
                    np.zeros(3, bool))
    vertices = factor.polytope_vertices()
    assert any(np.any((v > 0) & (v < 1)) for v in vertices)
    assert max(v @ factor.a for v in factor.feasible_vertices()) == 2.0
    # costs (1, 1, 1.5), B = 2: no feasible 0/1 vector has x_2 = x_3 = 1, but the QP's
    # solution for a = (0, 5, 5) is (0, 1, 2/3), outside their hull.
    factor = Factor(K.KNAPSACK, [0.0, 5.0, 5.0], np.ones(3), [1.0, 1.0, 1.5], 2.0,
                    np.zeros(3, bool))
    u = solve([factor])
    np.testing.assert_allclose(u, [0.0, 1.0, 2.0 / 3.0], atol=1e-12)
    direction = np.array([0.0, 1.0, 1.0])
    assert u @ direction > max(x @ direction for x in factor.feasible_vertices()) + 0.5


# ---------------------------------------------------------------------------- the QP


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", ["random", "ties", "unit_weights", "negated"])
def test_qp_equals_the_qp_over_the_enumerated_polytope(kind, case):
    rng = np.random.default_rng(100 * kind + len(case))
    checked = 0
    fractional = 0
    for trial in range(30):
        n = 1 + trial % 6
        factor = random_factor(rng, kind, n, ties=case == "ties",
                               unit_weights=case in ("ties", "unit_weights"),
                               negate=True if case == "negated" else None)
        vertices = factor.polytope_vertices()
        fractional += any(np.any((v > 0) & (v < 1)) for v in vertices)
        u = solve([factor])
        expected = reference_qp(factor, vertices)
        np.testing.assert_allclose(u, expected, atol=1e-8, rtol=0)
        # u is feasible and no vertex improves the linearized objective (exact optimality)
        assert np.all((u >= 0) & (u <= 1))
        assert factor.holds(float(factor.c @ factor.tilde(u)), tol=1e-10)
        gradient = factor.a - factor.w * u
        scale = 1.0 + np.abs(gradient).max()
        assert max((x - u) @ gradient for x in vertices) <= 1e-10 * scale
        assert objective(factor, u) >= objective(factor, expected) - 1e-10 * scale
        checked += 1
    assert checked == 30
    if kind == K.KNAPSACK and case != "ties":
        assert fractional > 0  # the relaxation's own vertices were exercised


def test_xor_with_unit_weights_is_sparsemax():
    rng = np.random.default_rng(7)
    factors = []
    for trial in range(200):
        n = 1 + trial % 9
        scores = rng.normal(scale=rng.choice([0.1, 1.0, 10.0]), size=n)
        if trial % 3 == 0:
            scores = rng.integers(-2, 3, size=n) / 2.0
        factors.append(Factor(K.XOR, scores, np.ones(n), np.ones(n), 1.0,
                              np.zeros(n, bool)))
    u = solve(factors)
    expected = np.concatenate([sparsemax(f.a) for f in factors])
    assert u.shape == expected.shape
    np.testing.assert_allclose(u, expected, atol=1e-12, rtol=0)


def test_negated_entry_is_the_change_of_variables():
    # Negating entry i maps u_i -> 1 - u_i with score w_i - a_i, whatever the kind.
    rng = np.random.default_rng(11)
    for kind in KINDS:
        for n in range(1, 7):
            factor = random_factor(rng, kind, n, negate=False)
            flip = rng.random(n) < 0.5
            flipped = Factor(kind, np.where(flip, factor.w - factor.a, factor.a), factor.w,
                             factor.c, factor.bound, flip)
            u = solve([factor])
            v = solve([flipped])
            np.testing.assert_allclose(np.where(flip, 1.0 - v, v), u, atol=1e-12)


def test_large_factors_satisfy_the_optimality_conditions():
    # Beyond enumeration (n up to 200, sorting by np.sort): u = clip((a' − τc)/w) with
    # one τ, the constraint tight when τ ≠ 0, and τ of the sign the constraint allows.
    rng = np.random.default_rng(5)
    for kind in KINDS:
        for n in (33, 64, 200):
            factor = random_factor(rng, kind, n)
            if kind == K.BUDGET:
                factor.bound = float(rng.integers(0, n // 3))
            u = solve([factor])
            v = factor.tilde(u)
            score = np.where(factor.negated, factor.w - factor.a, factor.a)
            free = (v > 1e-9) & (v < 1 - 1e-9)
            if free.any():
                taus = (score[free] - factor.w[free] * v[free]) / factor.c[free]
                tau = taus.mean()
                np.testing.assert_allclose(taus, tau, atol=1e-9 * (1 + abs(tau)))
                expected = np.clip((score - tau * factor.c) / factor.w, 0, 1)
                np.testing.assert_allclose(v, expected, atol=1e-9)
                total = factor.c @ v
                if abs(tau) > 1e-9:
                    assert total == pytest.approx(factor.bound, abs=1e-9 * n)
                    assert kind == K.XOR or (tau > 0) == (kind != K.OR)
            assert factor.holds(float(factor.c @ v), tol=1e-9 * n)


# ---------------------------------------------------------------------------- MAP


@pytest.mark.parametrize("kind", KINDS)
def test_map_equals_enumeration_with_lexicographic_ties(kind):
    rng = np.random.default_rng(30 + kind)
    for trial in range(60):
        n = 1 + trial % 6
        factor = random_factor(rng, kind, n, ties=trial % 2 == 0)
        best = None
        best_value = -np.inf
        for x in factor.feasible_vertices():  # increasing lexicographic order
            value = 0.0
            for i in range(n):
                if x[i]:
                    value += factor.a[i]
            if value > best_value:
                best, best_value = x, value
        x, value = local_map([factor])
        np.testing.assert_array_equal(x, best)
        assert value[0] == best_value


def test_map_ties_go_to_the_lexicographically_smallest_vector():
    zero = np.zeros(3, bool)
    # XOR tie between entries 0 and 2: e_2 < e_0 lexicographically
    x, _ = local_map([Factor(K.XOR, [1.0, 0.0, 1.0], np.ones(3), np.ones(3), 1.0, zero)])
    np.testing.assert_array_equal(x, [0, 0, 1])
    # AtMostOne with a zero best score keeps everything off
    x, value = local_map([Factor(K.AT_MOST_ONE, [0.0, -1.0, 0.0], np.ones(3), np.ones(3),
                                 1.0, zero)])
    np.testing.assert_array_equal(x, [0, 0, 0])
    assert value[0] == 0.0
    # OR over a negated entry: x = (0, 0, 0) satisfies it through entry 1
    x, _ = local_map([Factor(K.OR, [0.0, 0.0, 0.0], np.ones(3), np.ones(3), 1.0,
                             [False, True, False])])
    np.testing.assert_array_equal(x, [0, 0, 0])


def test_map_refuses_knapsacks_beyond_the_enumeration_limit():
    n = K.MAX_KNAPSACK_MAP_DEGREE + 1
    factor = Factor(K.KNAPSACK, np.ones(n), np.ones(n), np.ones(n), 2.0, np.zeros(n, bool))
    with pytest.raises(ValueError, match="MAX_KNAPSACK_MAP_DEGREE"):
        local_map([factor])
    with pytest.raises(ValueError, match="KNAPSACK"):
        K.check_linear_factors(*batch([factor]), for_map=True)
    K.check_linear_factors(*batch([factor]))  # the QP has no such limit


# ---------------------------------------------------------------------------- Jacobian


def _piece(factor, u):
    """The affine piece of the solution map: support pattern and active constraint."""
    v = np.clip(np.where(factor.negated, factor.w - factor.a, factor.a) / factor.w, 0, 1)
    total = float(factor.c @ v)
    active = factor.kind == K.XOR or not factor.holds(total)
    return tuple((u > 0) & (u < 1)) + tuple(u == 1) + (active,)


@pytest.mark.parametrize("kind", KINDS)
def test_jvp_matches_central_finite_differences(kind):
    rng = np.random.default_rng(50 + kind)
    h = 1e-6
    compared = 0
    for trial in range(80):
        n = 1 + trial % 6
        factor = random_factor(rng, kind, n, unit_weights=trial % 4 == 0)
        direction = rng.normal(size=n)

        def moved(step):
            copy = Factor(factor.kind, factor.a + step * direction, factor.w, factor.c,
                          factor.bound, factor.negated)
            return copy, solve([copy])

        u = solve([factor])
        ends = [moved(-h), moved(h)]
        # skip points within h of a kink: the map is affine on a segment inside one piece
        if any(_piece(f, v) != _piece(factor, u) for f, v in ends):
            continue
        expected = (ends[1][1] - ends[0][1]) / (2 * h)
        np.testing.assert_allclose(jvp([factor], u, direction), expected, atol=1e-7)
        compared += 1
    assert compared >= 60


@pytest.mark.parametrize("kind", KINDS)
def test_jvp_is_zero_off_the_support_and_keeps_the_constraint(kind):
    rng = np.random.default_rng(70 + kind)
    for trial in range(40):
        factor = random_factor(rng, kind, 1 + trial % 6)
        u = solve([factor])
        du = jvp([factor], u, rng.normal(size=factor.n))
        free = (u > 0) & (u < 1)
        assert np.all(du[~free] == 0.0)
        if _piece(factor, u)[-1]:
            sign = np.where(factor.negated, -1.0, 1.0)
            assert abs(factor.c @ (sign * du)) <= 1e-12 * (1 + np.abs(du).sum())


def test_xor_jacobian_is_the_sparsemax_jacobian():
    rng = np.random.default_rng(8)
    for n in range(1, 9):
        scores = rng.normal(size=n)
        factor = Factor(K.XOR, scores, np.ones(n), np.ones(n), 1.0, np.zeros(n, bool))
        u = solve([factor])
        g = rng.normal(size=n)
        support = u > 0
        expected = np.where(support, g - g[support].mean(), 0.0)
        np.testing.assert_allclose(jvp([factor], u, g), expected, atol=1e-12)


def test_vjp_is_the_transpose_of_jvp():
    rng = np.random.default_rng(9)
    factors = [random_factor(rng, KINDS[t % 5], 1 + t % 6) for t in range(300)]
    u = solve(factors)
    n = u.shape[0]
    for _ in range(5):
        g, v = rng.normal(size=n), rng.normal(size=n)
        lhs = v @ jvp(factors, u, g)
        rhs = vjp(factors, u, v) @ g
        assert lhs == pytest.approx(rhs, rel=1e-12, abs=1e-12)
    # column by column on one factor with an active constraint
    factor = Factor(K.KNAPSACK, [1.0, 0.5, 1.0, -3.0], [1.0, 2.0, 0.5, 1.0],
                    [1.0, 0.5, 2.0, 1.0], 1.0, [False, True, False, False])
    u = solve([factor])
    eye = np.eye(4)
    jac = np.column_stack([jvp([factor], u, e) for e in eye])
    jac_t = np.column_stack([vjp([factor], u, e) for e in eye])
    assert np.all((u[:3] > 0) & (u[:3] < 1)) and u[3] == 0.0
    assert np.abs(jac - np.diag(np.diag(jac))).max() > 0.1  # the constraint couples them
    np.testing.assert_allclose(jac_t, jac.T, atol=1e-14)


# ---------------------------------------------------------------------------- batching


@st.composite
def factor_lists(draw):
    seed = draw(st.integers(0, 2**32 - 1))
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=0, max_size=12))
    sizes = draw(st.lists(st.integers(0, 7), min_size=len(kinds), max_size=len(kinds)))
    rng = np.random.default_rng(seed)
    factors = []
    for kind, n in zip(kinds, sizes):
        if kind in (K.XOR, K.OR):
            n = max(n, 1)
        factors.append(random_factor(rng, kind, n, ties=rng.random() < 0.3))
    return factors


def _per_factor_results(factors):
    rng = np.random.default_rng(0)
    us, xs, values, dus, das = [], [], [], [], []
    for f in factors:
        u = solve([f])
        x, value = local_map([f])
        g = np.linspace(-1.0, 1.0, f.n) + 0.1 * rng.normal(size=f.n)
        us.append(u)
        xs.append(x)
        values.append(value)
        dus.append(jvp([f], u, g))
        das.append(vjp([f], u, g))
    return us, xs, values, dus, das


def _check_batched_equals_one_call_per_factor(factors):
    rng = np.random.default_rng(0)
    directions = [np.linspace(-1.0, 1.0, f.n) + 0.1 * rng.normal(size=f.n) for f in factors]
    singles = _per_factor_results(factors)
    assert len(singles[0]) == len(factors)
    u = solve(factors)
    x, value = local_map(factors)
    g = np.concatenate(directions) if factors else np.empty(0)
    expected = [np.concatenate(parts) if factors else np.empty(0) for parts in singles]
    for got, want in zip([u, x, value, jvp(factors, u, g), vjp(factors, u, g)], expected):
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)


@settings(max_examples=40, deadline=None)
@given(factor_lists())
def test_batched_calls_equal_one_call_per_factor(factors):
    _check_batched_equals_one_call_per_factor(factors)


def test_batches_of_many_chunks_equal_one_call_per_factor():
    # enough entries for several parallel chunks
    rng = np.random.default_rng(12)
    factors = []
    while sum(f.n for f in factors) < 3 * K.ENTRIES_PER_CHUNK:
        kind = KINDS[rng.integers(5)]
        factors.append(random_factor(rng, kind, int(rng.integers(1, 9))))
    assert K._chunks(batch(factors)[2]).shape[0] > 2
    _check_batched_equals_one_call_per_factor(factors)


# ---------------------------------------------------------------------------- bad input


def _good_batch():
    rng = np.random.default_rng(1)
    return list(batch([random_factor(rng, k, 3) for k in KINDS]))


@pytest.mark.parametrize("position, name", [(0, "a"), (1, "w"), (4, "coef"),
                                            (6, "negated")])
def test_mismatched_entry_lengths_are_rejected(position, name):
    args = _good_batch()
    args[position] = args[position][:-1]
    with pytest.raises(ValueError, match=name):
        K.check_linear_factors(*args)


@pytest.mark.parametrize("position, name", [(3, "kind"), (5, "bound")])
def test_mismatched_factor_lengths_are_rejected(position, name):
    args = _good_batch()
    args[position] = args[position][1:]
    with pytest.raises(ValueError, match=name):
        K.check_linear_factors(*args)


@pytest.mark.parametrize("change, message", [
    (lambda args: args[2].__setitem__(1, 9), "offsets"),
    (lambda args: args[1].__setitem__(0, 0.0), "w must be positive"),
    (lambda args: args[0].__setitem__(0, np.nan), "a must be finite"),
    (lambda args: args[3].__setitem__(0, 7), "kind"),
    (lambda args: args[4].__setitem__(0, 2.0), "coef must be 1"),
    (lambda args: args[5].__setitem__(3, 1.5), "BUDGET"),
    (lambda args: args[5].__setitem__(0, 2.0), "bound must be 1"),
    (lambda args: args.__setitem__(6, args[6].astype(int)), "boolean"),
])
def test_invalid_values_are_rejected(change, message):
    args = _good_batch()
    K.check_linear_factors(*args)
    change(args)
    with pytest.raises(ValueError, match=message):
        K.check_linear_factors(*args)


def test_empty_xor_is_rejected_and_empty_budget_accepted():
    args = batch([Factor(K.XOR, [], [], [], 1.0, []), ])
    with pytest.raises(ValueError, match="at least one entry"):
        K.check_linear_factors(*args)
    factors = [Factor(K.BUDGET, [], [], [], 0.0, []), Factor(K.XOR, [1.0], [1.0], [1.0],
                                                             1.0, [False])]
    np.testing.assert_array_equal(solve(factors), [1.0])
