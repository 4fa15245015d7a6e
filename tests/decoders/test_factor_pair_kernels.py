"""PAIR (Ising) and OR-output factor kernels: the local QPs against a brute-force QP over
the convex hull of the enumerated feasible 0/1 vectors, MAP against enumeration, the
Jacobians against central differences, batches against single factors."""

import itertools
from functools import lru_cache

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial import ConvexHull

from skstruct.decoders._factor_graph.pair_kernels import (
    ENTRIES_PER_CHUNK,
    FACTORS_PER_CHUNK,
    _orout_factor,
    orout_jvp,
    orout_map,
    orout_qp,
    orout_vjp,
    pair_jvp,
    pair_map,
    pair_qp,
    pair_vjp,
)

PAIR_VERTICES = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 1]], dtype=float)


def or_vectors(d):
    """The feasible 0/1 vectors (u_1..u_d, OR(u)) in lexicographic order."""
    rows = [list(bits) + [int(any(bits))] for bits in itertools.product((0, 1), repeat=d)]
    return np.array(rows, dtype=float)


# ------------------------------------------------------------------ brute-force QP

@lru_cache(maxsize=None)
def _hull(key):
    """Faces (vertex index sets, with an orthonormal basis of their direction space) and
    an H-representation of the convex hull of the vertices ``key`` (a tuple of rows)."""
    vertices = np.array(key)
    n = vertices.shape[1]
    origin = vertices[0]
    _, sv, vt = np.linalg.svd(vertices - origin)
    rank = int(np.sum(sv > 1e-9))
    basis, normal = vt[:rank].T, vt[rank:].T
    coords = (vertices - origin) @ basis
    if rank == 1:
        facets = [np.array([-1.0, coords[:, 0].min()]), np.array([1.0, -coords[:, 0].max()])]
    else:
        equations = ConvexHull(coords).equations
        facets = list({tuple(np.round(eq, 6)): eq for eq in equations}.values())
    facets = np.array(facets)  # rows (normal, offset): normal · z + offset <= 0
    sets = {frozenset(np.flatnonzero(np.abs(coords @ f[:-1] + f[-1]) < 1e-9))
            for f in facets}
    faces = set(sets) | {frozenset(range(len(vertices)))}
    frontier = set(faces)
    while frontier:
        new = {x & y for x in frontier for y in faces} - faces - {frozenset()}
        faces |= new
        frontier = new
    out = []
    for face in faces:
        idx = sorted(face)
        _, fsv, fvt = np.linalg.svd(vertices[idx] - vertices[idx[0]])
        frank = int(np.sum(fsv > 1e-9)) if len(idx) > 1 else 0
        out.append((vertices[idx[0]], fvt[:frank].T if frank else np.zeros((n, 0))))
    return out, origin, basis, normal, facets


def brute_force_qp(vertices, linear, quadratic):
    """argmax over conv(vertices) of linear·x − ½ Σ quadratic_j x_j², by maximizing over
    the affine hull of every face (skipping faces on which the objective is not strictly
    concave) and keeping the best feasible point."""
    faces, origin, basis, normal, facets = _hull(tuple(map(tuple, vertices)))
    best, best_value = None, -np.inf
    for start, directions in faces:
        if directions.shape[1]:
            h = directions.T @ (quadratic[:, None] * directions)
            if np.linalg.cond(h) > 1e10:
                continue
            z = np.linalg.solve(h, directions.T @ (linear - quadratic * start))
            x = start + directions @ z
        else:
            x = start
        coords = (x - origin) @ basis
        if (np.abs((x - origin) @ normal).max(initial=0.0) > 1e-10
                or (coords @ facets[:, :-1].T + facets[:, -1]).max() > 1e-10):
            continue
        value = linear @ x - 0.5 * quadratic @ x ** 2
        if value > best_value:
            best, best_value = x, value
    gradient = linear - quadratic * best
    assert ((vertices - best) @ gradient).max() < 1e-9  # Frank-Wolfe gap: optimal
    return best


def objective(x, linear, quadratic):
    return linear @ x - 0.5 * quadratic @ x ** 2


# ------------------------------------------------------------------ sample scores

def pair_cases(rng, n):
    """(a, w, s) of shape (n, 2), (n, 2), (n,): random of both signs, unit weights, and
    ties (scores on the kinks of the closed form)."""
    a = rng.normal(0.0, 1.5, size=(n, 2))
    w = rng.uniform(0.3, 3.0, size=(n, 2))
    s = rng.normal(0.0, 1.5, size=n)
    w[: n // 4] = 1.0
    tie = slice(n // 4, n // 2)
    grid = np.array([-1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0])
    a[tie] = rng.choice(grid, size=a[tie].shape)
    w[tie] = rng.choice([0.5, 1.0, 2.0], size=w[tie].shape)
    s[tie] = rng.choice(grid, size=s[tie].shape)
    s[n // 2: n // 2 + n // 8] = 0.0
    return a, w, s


def run_pair_qp(a, w, s):
    u = np.empty_like(a)
    v = np.empty_like(s)
    pair_qp(a, w, s, u, v)
    return u, v


def run_orout_qp(a, w, offsets):
    u = np.empty_like(a)
    orout_qp(a, w, offsets, u)
    return u


def orout_batch(rng, degrees, ties=False):
    offsets = np.concatenate([[0], np.cumsum(np.asarray(degrees) + 1)]).astype(np.int64)
    n = int(offsets[-1])
    a = rng.normal(0.0, 1.5, size=n)
    w = rng.uniform(0.3, 3.0, size=n)
    if ties:
        w = rng.choice([0.5, 1.0, 2.0], size=n)
        a = w * rng.choice([-0.5, 0.0, 0.25, 0.5, 1.0, 1.5], size=n)
    return a, w, offsets


# ------------------------------------------------------------------ polytopes

def vertices_of(inequalities, n):
    """Vertices of {x : G x <= h} by solving every n-subset of the inequalities."""
    g, h = inequalities
    subsets = np.array(list(itertools.combinations(range(len(h)), n)))
    systems = g[subsets]
    regular = np.abs(np.linalg.det(systems)) > 1e-9
    points = np.linalg.solve(systems[regular], h[subsets[regular]][..., None])[..., 0]
    points = points[(points @ g.T <= h + 1e-9).all(axis=1)]
    return np.unique(np.round(points, 9), axis=0)


def orout_inequalities(d):
    n = d + 1
    rows, rhs = [], []
    for i in range(d):  # u_i - y <= 0
        row = np.zeros(n)
        row[i], row[d] = 1.0, -1.0
        rows.append(row)
        rhs.append(0.0)
    row = -np.ones(n)  # y - Σ u_i <= 0
    row[d] = 1.0
    rows.append(row)
    rhs.append(0.0)
    for j in range(n):
        rows += [-np.eye(n)[j], np.eye(n)[j]]
        rhs += [0.0, 1.0]
    return np.array(rows), np.array(rhs)


@pytest.mark.parametrize("d", [1, 2, 3, 4, 5])
def test_orout_polytope_is_the_hull_of_the_or_vectors(d):
    found = vertices_of(orout_inequalities(d), d + 1)
    assert np.array_equal(found, or_vectors(d))


def test_pair_polytope_is_the_hull_of_the_four_vertices():
    g = np.array([[0, 0, -1], [-1, 0, 1], [0, -1, 1], [1, 1, -1]], dtype=float)
    h = np.array([0, 0, 0, 1], dtype=float)
    assert np.array_equal(vertices_of((g, h), 3), np.unique(PAIR_VERTICES, axis=0))


# ------------------------------------------------------------------ PAIR

def test_pair_qp_matches_the_brute_force_qp_over_the_hull(rng):
    a, w, s = pair_cases(rng, 400)
    u, v = run_pair_qp(a, w, s)
    assert u.shape == (400, 2) and v.shape == (400,)
    for f in range(400):
        linear = np.array([a[f, 0], a[f, 1], s[f]])
        quadratic = np.array([w[f, 0], w[f, 1], 0.0])
        want = brute_force_qp(PAIR_VERTICES, linear, quadratic)
        got = np.array([u[f, 0], u[f, 1], v[f]])
        np.testing.assert_allclose(got[:2], want[:2], rtol=0, atol=1e-8)
        if s[f] != 0.0:
            np.testing.assert_allclose(got[2], want[2], rtol=0, atol=1e-8)
        assert objective(got, linear, quadratic) >= objective(want, linear, quadratic) - 1e-12
        # feasible: v in [max(0, u1 + u2 - 1), min(u1, u2)]
        assert max(0.0, got[0] + got[1] - 1.0) - 1e-12 <= got[2] <= min(got[0], got[1]) + 1e-12


def test_pair_zero_coupling_is_two_clips_with_the_largest_v(rng):
    a = rng.normal(0.0, 1.5, size=(500, 2))
    w = rng.uniform(0.3, 3.0, size=(500, 2))
    s = np.zeros(500)
    s[::2] = -0.0
    u, v = run_pair_qp(a, w, s)
    np.testing.assert_array_equal(u, np.clip(a / w, 0.0, 1.0))
    np.testing.assert_array_equal(v, u.min(axis=1))


def brute_force_map(vertices, scores):
    """Best vertex (rows in lexicographic order: the first maximizer is the smallest)."""
    order = np.lexsort(vertices.T[::-1])
    values = vertices[order] @ scores
    best = int(np.argmax(values))
    return values[best], vertices[order][best]


def test_pair_map_matches_enumeration_with_ties_to_the_smallest_vertex(rng):
    a, w, s = pair_cases(rng, 400)
    a[:100] = rng.integers(-2, 3, size=(100, 2))  # exact ties
    s[:100] = rng.integers(-2, 3, size=100)
    u = np.empty_like(a)
    v = np.empty_like(s)
    value = pair_map(a, s, u, v)
    assert value.shape == (400,)
    n_ties = 0
    for f in range(400):
        scores = np.array([a[f, 0], a[f, 1], s[f]])
        want_value, want = brute_force_map(PAIR_VERTICES, scores)
        n_ties += np.sum(PAIR_VERTICES @ scores == want_value) > 1
        assert value[f] == pytest.approx(want_value, abs=1e-12)
        np.testing.assert_array_equal([u[f, 0], u[f, 1], v[f]], want)
    assert n_ties > 10


def pair_margin(a, w, s):
    """Distance (in u units) to the nearest boundary between pieces of the closed form,
    conservatively: every clip argument to 0 and 1, and every case condition."""
    a1, a2, w1, w2 = a[0], a[1], w[0], w[1]
    args = [a1 / w1, a2 / w2, (a1 + s) / w1, (a2 + s) / w2, (a1 + a2 + s) / (w1 + w2),
            (a1 - a2 + w2) / (w1 + w2)]
    c = np.clip(args, 0.0, 1.0)
    gaps = [abs(s)] + [abs(x) for x in args] + [abs(x - 1.0) for x in args]
    # a condition between two clips both at the same bound holds near the point
    for i, j, sign in [(2, 1, -1), (3, 0, -1), (0, 1, 1), (2, 3, 1)]:
        if not (c[i] == c[j] and c[i] in (0.0, 1.0)):
            gaps.append(abs(c[i] + sign * c[j] - (1.0 if sign > 0 else 0.0)))
    return min(gaps)


def test_pair_jvp_matches_central_differences(rng):
    a, w, s = pair_cases(rng, 300)
    keep = np.array([pair_margin(a[f], w[f], s[f]) > 1e-6 for f in range(300)])
    assert keep.sum() > 120
    a, w, s = a[keep], w[keep], s[keep]
    n = s.shape[0]
    h = 1e-8
    for j in range(3):
        da = np.zeros_like(a)
        ds = np.zeros_like(s)
        if j < 2:
            da[:, j] = 1.0
        else:
            ds[:] = 1.0
        du = np.empty_like(a)
        dv = np.empty_like(s)
        pair_jvp(a, w, s, da, ds, du, dv)
        up, vp = run_pair_qp(a + h * da, w, s + h * ds)
        um, vm = run_pair_qp(a - h * da, w, s - h * ds)
        assert du.shape == up.shape == (n, 2)
        np.testing.assert_allclose(du, (up - um) / (2 * h), rtol=0, atol=1e-6)
        np.testing.assert_allclose(dv, (vp - vm) / (2 * h), rtol=0, atol=1e-6)


def test_pair_vjp_is_the_transpose_of_jvp(rng):
    a, w, s = pair_cases(rng, 500)
    da, ds = rng.normal(size=a.shape), rng.normal(size=s.shape)
    gu, gv = rng.normal(size=a.shape), rng.normal(size=s.shape)
    du, dv = np.empty_like(a), np.empty_like(s)
    ga, gs = np.empty_like(a), np.empty_like(s)
    pair_jvp(a, w, s, da, ds, du, dv)
    pair_vjp(a, w, s, gu, gv, ga, gs)
    left = (du * gu).sum(axis=1) + dv * gv
    right = (da * ga).sum(axis=1) + ds * gs
    np.testing.assert_allclose(left, right, rtol=1e-12, atol=1e-12)
    assert np.abs(left).max() > 0.1


def run_pair_all(a, w, s, da, ds):
    u, v = run_pair_qp(a, w, s)
    mu, mv = np.empty_like(a), np.empty_like(s)
    value = pair_map(a, s, mu, mv)
    du, dv = np.empty_like(a), np.empty_like(s)
    pair_jvp(a, w, s, da, ds, du, dv)
    ga, gs = np.empty_like(a), np.empty_like(s)
    pair_vjp(a, w, s, da, ds, ga, gs)
    return u, v, mu, mv, value, du, dv, ga, gs


def assert_pair_batch_equals_single_factors(a, w, s, da, ds, factors):
    batch = run_pair_all(a, w, s, da, ds)
    for f in factors:
        single = run_pair_all(a[f:f + 1], w[f:f + 1], s[f:f + 1], da[f:f + 1], ds[f:f + 1])
        assert len(single) == len(batch)
        for got, want in zip(batch, single):
            np.testing.assert_array_equal(got[f:f + 1], want)


def test_pair_batch_of_several_chunks_equals_one_call_per_factor(rng):
    n = 2 * FACTORS_PER_CHUNK + 123
    a, w, s = pair_cases(rng, n)
    da, ds = rng.normal(size=a.shape), rng.normal(size=s.shape)
    edges = [k * FACTORS_PER_CHUNK + e for k in range(3) for e in (-1, 0, 1)] + [n - 1]
    factors = sorted(set(range(0, n, 7)) | {f for f in edges if 0 <= f < n})
    assert_pair_batch_equals_single_factors(a, w, s, da, ds, factors)


@given(st.integers(1, 40), st.integers(0, 2 ** 32 - 1))
def test_pair_any_batch_equals_one_call_per_factor(n, seed):
    rng = np.random.default_rng(seed)
    a, w, s = pair_cases(rng, n)
    da, ds = rng.normal(size=a.shape), rng.normal(size=s.shape)
    assert_pair_batch_equals_single_factors(a, w, s, da, ds, range(n))


# ------------------------------------------------------------------ OROut

@pytest.mark.parametrize("d", [0, 1, 2, 3, 4, 5])
def test_orout_qp_matches_the_brute_force_qp_over_the_hull(d):
    rng = np.random.default_rng(d)
    n_factors = 60 if d else 5
    a, w, offsets = orout_batch(rng, [d] * n_factors)
    ta, tw, _ = orout_batch(rng, [d] * n_factors, ties=True)
    half = (n_factors // 2) * (d + 1)
    a[:half], w[:half] = ta[:half], tw[:half]
    w[half: half + 10 * (d + 1)] = 1.0
    u = run_orout_qp(a, w, offsets)
    vertices = or_vectors(d)
    branches = set()
    for f in range(n_factors):
        lo, hi = offsets[f], offsets[f + 1]
        if d == 0:
            assert u[lo] == 0.0
            continue
        want = brute_force_qp(vertices, a[lo:hi], w[lo:hi])
        np.testing.assert_allclose(u[lo:hi], want, rtol=0, atol=1e-8)
        clip = np.clip(a[lo:hi] / w[lo:hi], 0, 1)
        branches.add("clip" if np.allclose(want, clip, atol=1e-9)
                     else "sum" if abs(want[-1] - want[:-1].sum()) < 1e-9 else "max")
    if d >= 2:
        assert branches == {"clip", "sum", "max"}


def brute_force_orout_map(a, lo, hi):
    return brute_force_map(or_vectors(hi - lo - 1), a[lo:hi])


@pytest.mark.parametrize("ties", [False, True])
def test_orout_map_matches_enumeration_with_ties_to_the_smallest_vector(ties):
    rng = np.random.default_rng(int(ties))
    degrees = rng.integers(0, 6, size=300)
    a, w, offsets = orout_batch(rng, degrees)
    if ties:
        a = rng.integers(-2, 3, size=a.shape).astype(float)
    u = np.empty_like(a)
    value = orout_map(a, offsets, u)
    assert value.shape == (300,)
    n_ties = 0
    for f in range(300):
        lo, hi = offsets[f], offsets[f + 1]
        want_value, want = brute_force_orout_map(a, lo, hi)
        n_ties += np.sum(or_vectors(hi - lo - 1) @ a[lo:hi] == want_value) > 1
        assert value[f] == pytest.approx(want_value, abs=1e-12)
        np.testing.assert_array_equal(u[lo:hi], want)
    assert (n_ties > 30) == ties


def orout_roles(a, w, lo, hi):
    u = np.empty(hi - lo)
    role = np.empty(hi - lo, dtype=np.int8)
    keys = np.empty(hi - lo)
    _orout_factor(a, w, lo, hi, u, lo, role, keys)
    return role


def test_orout_jvp_matches_central_differences():
    rng = np.random.default_rng(3)
    degrees = rng.integers(1, 7, size=200)
    a, w, offsets = orout_batch(rng, degrees)
    w[: offsets[50]] = 1.0
    # keep the factors whose piece is the same within 1e-6 along every coordinate
    keep = np.ones(len(degrees), dtype=bool)
    for f in range(len(degrees)):
        lo, hi = offsets[f], offsets[f + 1]
        role = orout_roles(a, w, lo, hi)
        for i in range(lo, hi):
            for step in (-1e-6, 1e-6):
                b = a.copy()
                b[i] += step
                keep[f] &= np.array_equal(orout_roles(b, w, lo, hi), role)
    assert keep.sum() > 150
    h = 1e-8
    tested = 0
    for f in np.flatnonzero(keep):
        lo, hi = offsets[f], offsets[f + 1]
        for i in range(lo, hi):
            da = np.zeros_like(a)
            da[i] = 1.0
            du = np.empty_like(a)
            orout_jvp(a, w, offsets, da, du)
            fd = (run_orout_qp(a + h * da, w, offsets) - run_orout_qp(a - h * da, w, offsets))
            np.testing.assert_allclose(du[lo:hi], fd[lo:hi] / (2 * h), rtol=0, atol=1e-6)
            tested += np.abs(du[lo:hi]).max() > 0
    assert tested > 300


def test_orout_vjp_is_the_transpose_of_jvp():
    rng = np.random.default_rng(4)
    degrees = rng.integers(0, 7, size=500)
    a, w, offsets = orout_batch(rng, degrees)
    da, gu = rng.normal(size=a.shape), rng.normal(size=a.shape)
    du, ga = np.empty_like(a), np.empty_like(a)
    orout_jvp(a, w, offsets, da, du)
    orout_vjp(a, w, offsets, gu, ga)
    left = np.add.reduceat(du * gu, offsets[:-1])
    right = np.add.reduceat(da * ga, offsets[:-1])
    np.testing.assert_allclose(left, right, rtol=1e-12, atol=1e-12)
    assert np.abs(left).max() > 0.1


def run_orout_all(a, w, offsets, da):
    u = run_orout_qp(a, w, offsets)
    mu = np.empty_like(a)
    value = orout_map(a, offsets, mu)
    du, ga = np.empty_like(a), np.empty_like(a)
    orout_jvp(a, w, offsets, da, du)
    orout_vjp(a, w, offsets, da, ga)
    return u, mu, du, ga, value


def assert_orout_batch_equals_single_factors(a, w, offsets, da, factors):
    batch = run_orout_all(a, w, offsets, da)
    for f in factors:
        lo, hi = offsets[f], offsets[f + 1]
        single = run_orout_all(a[lo:hi], w[lo:hi], np.array([0, hi - lo]), da[lo:hi])
        assert len(single) == len(batch)
        for got, want in zip(batch[:-1], single[:-1]):
            np.testing.assert_array_equal(got[lo:hi], want)
        assert batch[-1][f] == single[-1][0]


def test_orout_batch_of_several_chunks_equals_one_call_per_factor():
    rng = np.random.default_rng(5)
    degrees = rng.integers(0, 9, size=3 * ENTRIES_PER_CHUNK // 5)
    a, w, offsets = orout_batch(rng, degrees)
    assert offsets[-1] > 2 * ENTRIES_PER_CHUNK
    da = rng.normal(size=a.shape)
    n = len(degrees)
    assert_orout_batch_equals_single_factors(
        a, w, offsets, da, sorted(set(range(0, n, 5)) | set(range(n - 3, n))))


@given(st.lists(st.integers(0, 8), min_size=1, max_size=30), st.booleans(),
       st.integers(0, 2 ** 32 - 1))
def test_orout_any_batch_equals_one_call_per_factor(degrees, ties, seed):
    rng = np.random.default_rng(seed)
    a, w, offsets = orout_batch(rng, degrees, ties=ties)
    da = rng.normal(size=a.shape)
    assert_orout_batch_equals_single_factors(a, w, offsets, da, range(len(degrees)))
