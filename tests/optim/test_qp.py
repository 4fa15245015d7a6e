"""The one-slack cutting-plane dual QP: exact against enumeration of the KKT faces and
SLSQP, on singular Gram matrices, with warm starts."""

from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from skstruct.optim._qp import QPResult, cutting_plane_primal_dual, solve_capped_simplex_qp

KINDS = ["random", "duplicates", "collinear", "low_rank", "near_duplicates", "zero_loss",
         "zero_gram", "negative_loss"]


def _instance(seed, n_planes, kind, log_lambda):
    """Cutting planes Ψ̄ (n_planes x d), their Gram matrix, losses Δ̄ and scale = 1/λ."""
    rng = np.random.default_rng(seed)
    dim = int(rng.integers(1, 2 * n_planes + 2))
    psi = rng.normal(size=(n_planes, dim)) * rng.uniform(0.1, 3.0)
    if kind == "duplicates":
        psi = psi[rng.integers(0, max(1, n_planes // 2 + 1), size=n_planes) % n_planes]
    elif kind == "collinear":
        psi = rng.normal(size=(1, dim)) * rng.uniform(-2.0, 2.0, size=(n_planes, 1))
    elif kind == "low_rank":
        rank = max(1, n_planes // 3)
        psi = rng.normal(size=(n_planes, rank)) @ rng.normal(size=(rank, dim))
    elif kind == "near_duplicates":
        psi = np.repeat(psi[:1], n_planes, axis=0) + 1e-7 * rng.normal(size=(n_planes, dim))
    elif kind == "zero_gram":
        psi = np.zeros((n_planes, dim))
    losses = rng.uniform(0.0, 1.0, size=n_planes)
    if kind == "zero_loss":
        losses[:] = 0.0
    elif kind == "negative_loss":
        losses -= 0.5
    return psi, psi @ psi.T, losses, 10.0 ** -log_lambda


def _dual(gram, linear, scale, alpha):
    return float(linear @ alpha - 0.5 * scale * alpha @ gram @ alpha)


def _size(gram, linear, scale):
    return max(np.abs(linear).max(initial=0.0), scale * np.diag(gram).max(initial=0.0), 1e-300)


def _kkt_atol(gram, linear, scale, alpha):
    """1e-9 in units of the losses, plus the rounding error of r = Δ̄ − scale · Gα.

    (Not in units of scale · max G_jj, nor of the terms of scale · Gα, which can exceed the
    losses by orders of magnitude and would accept a wrong support.)
    """
    terms = scale * (np.abs(gram) @ alpha).max(initial=0.0)
    return 1e-9 * np.abs(linear).max(initial=0.0) + 1e-13 * terms


def _enumerate(gram, linear, scale):
    """The maximum over every face of the simplex with the implicit zero plane added.

    On each support S the stationarity system H_SS x_S + ν 1 = c_S, 1ᵀx_S = 1 is solved
    by least squares; the point, made feasible, is a lower bound of the optimum, and the
    face holding a vertex of the optimal set gives the optimum itself (its system is
    nonsingular there).
    """
    n = linear.shape[0] + 1
    hessian = np.zeros((n, n))
    hessian[1:, 1:] = scale * gram
    c = np.concatenate(([0.0], linear))
    best_value, best_alpha = -np.inf, None
    for k in range(1, n + 1):
        for support in combinations(range(n), k):
            s = list(support)
            kkt = np.zeros((k + 1, k + 1))
            kkt[:k, :k] = hessian[np.ix_(s, s)]
            kkt[:k, k] = kkt[k, :k] = 1.0
            solution = np.linalg.lstsq(kkt, np.concatenate((c[s], [1.0])), rcond=None)[0]
            x = np.zeros(n)
            x[s] = np.maximum(solution[:k], 0.0)
            if x.sum() <= 0:
                continue
            x /= x.sum()
            value = _dual(gram, linear, scale, x[1:])
            if value > best_value:
                best_value, best_alpha = value, x[1:]
    return best_value, best_alpha


def _assert_kkt(gram, linear, scale, alpha, atol):
    """Independent check of feasibility, dual feasibility and complementary slackness."""
    assert np.all(alpha >= 0)
    assert alpha.sum() <= 1 + 1e-12
    r = linear - scale * gram @ alpha  # violation of plane j at w(α)
    xi = max(0.0, r.max(initial=0.0))  # multiplier of Σα ≤ 1 = primal slack
    # Stationarity r_j ≤ ξ holds by the choice of ξ; complementary slackness:
    assert np.all(r[alpha > 0] >= xi - atol)
    if 1 - alpha.sum() > 1e-12:
        assert xi <= atol


instances = st.builds(
    _instance,
    seed=st.integers(0, 2**32 - 1),
    n_planes=st.integers(1, 4),
    kind=st.sampled_from(KINDS),
    log_lambda=st.floats(-3, 3),
)


@given(instance=instances)
def test_matches_exhaustive_enumeration_of_the_kkt_faces(instance):
    _, gram, linear, scale = instance
    result = solve_capped_simplex_qp(gram, linear, scale)
    best_value, best_alpha = _enumerate(gram, linear, scale)
    size = _size(gram, linear, scale)
    assert result.converged
    assert result.objective == pytest.approx(best_value, rel=1e-10, abs=1e-13 * size)
    # α need not be unique (singular G) but w = scale Ψ̄ᵀα is, hence scale · Gα too.
    np.testing.assert_allclose(scale * gram @ result.alpha, scale * gram @ best_alpha,
                               atol=1e-6 * size)
    assert result.kkt_residual <= _kkt_atol(gram, linear, scale, result.alpha)


@settings(max_examples=25)
@given(seed=st.integers(0, 2**32 - 1), n_planes=st.integers(5, 20),
       kind=st.sampled_from(KINDS), log_lambda=st.floats(-2, 2))
def test_at_least_as_good_as_slsqp(seed, n_planes, kind, log_lambda):
    _, gram, linear, scale = _instance(seed, n_planes, kind, log_lambda)
    result = solve_capped_simplex_qp(gram, linear, scale)
    reference = minimize(
        lambda a: -_dual(gram, linear, scale, a),
        np.full(n_planes, 1.0 / (2 * n_planes)),
        jac=lambda a: -(linear - scale * gram @ a),
        method="SLSQP",
        bounds=[(0, None)] * n_planes,
        constraints=[{"type": "ineq", "fun": lambda a: 1 - a.sum(),
                      "jac": lambda a: -np.ones_like(a)}],
        options={"ftol": 1e-14, "maxiter": 1000},
    )
    size = _size(gram, linear, scale)
    # SLSQP may end slightly outside the set; compare at its projection onto the set
    feasible = np.clip(reference.x, 0, None)
    feasible /= max(1.0, feasible.sum())
    slsqp_value = _dual(gram, linear, scale, feasible)
    assert result.objective >= slsqp_value - 1e-12 * size
    if reference.success:
        assert result.objective == pytest.approx(-reference.fun, rel=1e-6, abs=1e-8 * size)


@settings(max_examples=60)
@given(seed=st.integers(0, 2**32 - 1), n_planes=st.integers(1, 40),
       kind=st.sampled_from(KINDS), log_lambda=st.floats(-4, 4))
def test_kkt_conditions_and_duality_gap(seed, n_planes, kind, log_lambda):
    psi, gram, linear, scale = _instance(seed, n_planes, kind, log_lambda)
    result = solve_capped_simplex_qp(gram, linear, scale)
    size = _size(gram, linear, scale)
    assert result.converged
    atol = _kkt_atol(gram, linear, scale, result.alpha)
    _assert_kkt(gram, linear, scale, result.alpha, atol=atol)
    assert result.kkt_residual <= atol
    # The primal objective of w(α) computed from the planes themselves.
    w = scale * psi.T @ result.alpha
    primal = 0.5 / scale * w @ w + max(0.0, np.max(linear - psi @ w))
    helper_primal, helper_dual = cutting_plane_primal_dual(gram, linear, scale, result.alpha)
    assert helper_primal == pytest.approx(primal, rel=1e-9, abs=1e-12 * size)
    assert helper_dual == pytest.approx(result.objective, rel=1e-12, abs=1e-15 * size)
    assert result.primal_objective == pytest.approx(helper_primal, rel=1e-12, abs=1e-15 * size)
    # The working-set duality gap certifies optimality: ≤ 1e-8 relative.
    # (P − D is computed with cancellation and may be −1 ulp; the reported gap is not.)
    magnitude = max(abs(helper_primal), abs(helper_dual))
    assert -1e-15 * magnitude <= helper_primal - helper_dual <= 1e-8 * magnitude
    assert 0 <= result.duality_gap <= 1e-8 * magnitude
    assert result.duality_gap <= result.kkt_residual + 1e-15 * size
    assert result.slack == pytest.approx(max(0.0, np.max(linear - psi @ w)), abs=1e-9 * size)


@settings(max_examples=20)
@given(seed=st.integers(0, 2**32 - 1), n_planes=st.integers(2, 15),
       kind=st.sampled_from(KINDS))
def test_plane_order_does_not_matter(seed, n_planes, kind):
    _, gram, linear, scale = _instance(seed, n_planes, kind, 0.0)
    order = np.random.default_rng(seed).permutation(n_planes)
    result = solve_capped_simplex_qp(gram, linear, scale)
    permuted_gram = gram[np.ix_(order, order)]
    permuted = solve_capped_simplex_qp(permuted_gram, linear[order], scale)
    size = _size(gram, linear, scale)
    assert permuted.objective == pytest.approx(result.objective, rel=1e-12, abs=1e-14 * size)
    np.testing.assert_allclose(permuted_gram @ permuted.alpha, (gram @ result.alpha)[order],
                               atol=1e-7 * size / scale)


@pytest.mark.parametrize(
    "gram, loss, scale, expected",
    [
        (2.0, 1.0, 1.0, 0.5),  # interior: α = Δ̄ / (scale G)
        (0.5, 1.0, 1.0, 1.0),  # Σα ≤ 1 active
        (1.0, 0.0, 1.0, 0.0),  # zero loss
        (1.0, -1.0, 1.0, 0.0),  # negative loss
        (0.0, 0.3, 1.0, 1.0),  # zero plane with positive loss
        (4.0, 0.2, 10.0, 0.005),
    ],
)
def test_one_plane_closed_form(gram, loss, scale, expected):
    result = solve_capped_simplex_qp([[gram]], [loss], scale)
    np.testing.assert_allclose(result.alpha, [expected], atol=1e-15)
    assert result.objective == pytest.approx(loss * expected - 0.5 * scale * gram * expected**2)
    assert result.duality_gap <= 1e-15 and result.converged


@pytest.mark.parametrize(
    "scale, active", [(0.5, True), (1.0, True), (10.0, False), (100.0, False)]
)
def test_capping_constraint_active_and_inactive(scale, active):
    # Orthonormal planes with equal losses: α_j = min(Δ̄ / scale, 1/J).
    n_planes, loss = 5, 1.0
    result = solve_capped_simplex_qp(np.eye(n_planes), np.full(n_planes, loss), scale)
    expected = min(loss / scale, 1.0 / n_planes)
    np.testing.assert_allclose(result.alpha, expected, rtol=1e-14)
    if active:
        assert result.alpha.sum() == pytest.approx(1.0) and result.slack > 0
    else:
        assert result.alpha.sum() < 1 and result.slack == pytest.approx(0.0, abs=1e-15)


def test_all_zero_losses_give_zero_weight_vector():
    rng = np.random.default_rng(0)
    psi = rng.normal(size=(6, 3))
    psi[3] = psi[0]
    result = solve_capped_simplex_qp(psi @ psi.T, np.zeros(6), 1.0)
    np.testing.assert_array_equal(psi.T @ result.alpha, 0.0)
    assert result.objective == 0.0 and result.primal_objective == 0.0
    assert result.converged and result.n_iter == 0


def test_zero_gram_puts_all_weight_on_the_largest_loss():
    result = solve_capped_simplex_qp(np.zeros((4, 4)), [0.1, 0.7, 0.3, 0.7], 1.0)
    assert result.objective == pytest.approx(0.7, rel=1e-15)
    assert result.alpha.sum() == pytest.approx(1.0)
    assert np.all(result.alpha[[0, 2]] == 0.0)


def test_duplicate_planes_share_the_weight_of_one():
    rng = np.random.default_rng(1)
    psi = rng.normal(size=(4, 6))
    losses = rng.uniform(size=4)
    single = solve_capped_simplex_qp(psi @ psi.T, losses, 2.0)
    repeated = np.concatenate((psi, psi[[1, 1, 3]]))
    repeated_losses = np.concatenate((losses, losses[[1, 1, 3]]))
    doubled = solve_capped_simplex_qp(repeated @ repeated.T, repeated_losses, 2.0)
    assert doubled.objective == pytest.approx(single.objective, rel=1e-13)
    np.testing.assert_allclose(repeated.T @ doubled.alpha, psi.T @ single.alpha, atol=1e-12)
    combined = doubled.alpha[:4] + np.bincount([1, 1, 3], doubled.alpha[4:], minlength=4)
    np.testing.assert_allclose(combined, single.alpha, atol=1e-12)


def test_collinear_planes_reach_the_optimum():
    # All planes are multiples of one vector: G has rank one.
    direction = np.array([1.0, -2.0, 0.5])
    multiples = np.array([0.5, 1.0, 2.0, -1.0, 3.0])
    psi = multiples[:, None] * direction
    losses = np.array([0.2, 0.9, 0.4, 0.3, 0.8])
    result = solve_capped_simplex_qp(psi @ psi.T, losses, 1.0)
    best_value, _ = _enumerate(psi @ psi.T, losses, 1.0)
    assert result.objective == pytest.approx(best_value, rel=1e-13)
    primal, dual = cutting_plane_primal_dual(psi @ psi.T, losses, 1.0, result.alpha)
    assert primal - dual <= 1e-14


def _growing_working_set(n_planes, dim, scale, seed):
    rng = np.random.default_rng(seed)
    psi = rng.normal(size=(n_planes, dim)) / np.sqrt(dim)
    return psi @ psi.T, rng.uniform(size=n_planes), scale


def test_warm_start_gives_the_same_answer_in_fewer_iterations():
    # The cutting-plane pattern: one plane more per outer iteration, warm started from the
    # previous solution (one entry shorter). A small λ keeps many planes in the support.
    gram, losses, scale = _growing_working_set(60, 100, 100.0, seed=0)
    alpha, warm_total, cold_total = None, 0, 0
    for n in range(1, 61):
        warm = solve_capped_simplex_qp(gram[:n, :n], losses[:n], scale, alpha0=alpha)
        cold = solve_capped_simplex_qp(gram[:n, :n], losses[:n], scale)
        assert warm.converged and cold.converged
        assert warm.objective == pytest.approx(cold.objective, rel=1e-12)
        np.testing.assert_allclose(gram[:n, :n] @ warm.alpha, gram[:n, :n] @ cold.alpha,
                                   atol=1e-10)
        assert warm.n_iter <= cold.n_iter
        warm_total += warm.n_iter
        cold_total += cold.n_iter
        alpha = warm.alpha
    assert (warm.alpha > 0).sum() >= 20  # the last working set has a large support
    assert warm.n_iter < cold.n_iter
    assert warm_total < cold_total / 5


def test_restart_at_the_optimum_takes_no_iteration():
    gram, losses, scale = _growing_working_set(30, 50, 20.0, seed=2)
    result = solve_capped_simplex_qp(gram, losses, scale)
    assert result.n_iter > 10
    again = solve_capped_simplex_qp(gram, losses, scale, alpha0=result.alpha)
    assert again.n_iter == 0 and again.converged
    np.testing.assert_array_equal(again.alpha, result.alpha)


def test_infeasible_warm_start_is_made_feasible():
    gram, losses, scale = _growing_working_set(10, 20, 1.0, seed=3)
    reference = solve_capped_simplex_qp(gram, losses, scale)
    for alpha0 in (np.full(10, 0.5), np.linspace(-1, 1, 10), np.zeros(10), [1.0]):
        result = solve_capped_simplex_qp(gram, losses, scale, alpha0=alpha0)
        assert result.objective == pytest.approx(reference.objective, rel=1e-13)
        assert np.all(result.alpha >= 0) and result.alpha.sum() <= 1 + 1e-15


def test_singular_warm_start_support():
    # A warm start whose support holds duplicate planes (singular reduced Hessian).
    psi = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    losses = np.array([0.6, 0.6, 0.6, 0.5, 1.2])
    gram = psi @ psi.T
    reference, _ = _enumerate(gram, losses, 1.0)
    result = solve_capped_simplex_qp(gram, losses, 1.0, alpha0=[0.3, 0.3, 0.3, 0.1, 0.0])
    assert result.objective == pytest.approx(reference, rel=1e-13)
    _assert_kkt(gram, losses, 1.0, result.alpha, atol=1e-13)


def test_max_iter_stops_early_with_a_feasible_point():
    gram, losses, scale = _growing_working_set(40, 80, 100.0, seed=4)
    result = solve_capped_simplex_qp(gram, losses, scale, max_iter=3)
    assert not result.converged and result.n_iter == 3
    assert np.all(result.alpha >= 0) and result.alpha.sum() <= 1
    assert result.duality_gap > 1e-6 and result.kkt_residual > 1e-6
    full = solve_capped_simplex_qp(gram, losses, scale)
    assert result.objective < full.objective


def test_empty_working_set():
    result = solve_capped_simplex_qp(np.zeros((0, 0)), np.zeros(0), 1.0)
    assert isinstance(result, QPResult)
    assert result.alpha.shape == (0,) and result.objective == 0.0 and result.converged


def test_weak_duality_of_the_helper_at_arbitrary_points():
    rng = np.random.default_rng(5)
    psi = rng.normal(size=(8, 5))
    losses = rng.uniform(size=8)
    optimum = solve_capped_simplex_qp(psi @ psi.T, losses, 0.5).objective
    for _ in range(20):
        alpha = rng.dirichlet(np.ones(9))[:8]
        primal, dual = cutting_plane_primal_dual(psi @ psi.T, losses, 0.5, alpha)
        assert dual <= optimum + 1e-14 <= primal + 2e-14


@pytest.mark.parametrize(
    "gram, linear, scale, kwargs, match",
    [
        (np.eye(2), np.ones(3), 1.0, {}, "shape"),
        (np.eye(2), np.ones((2, 1)), 1.0, {}, "1-dimensional"),
        (np.eye(2), np.ones(2), 0.0, {}, "scale"),
        (np.eye(2), np.ones(2), np.inf, {}, "scale"),
        (np.eye(2), [1.0, np.nan], 1.0, {}, "finite"),
        (-np.eye(2), np.ones(2), 1.0, {}, "semi-definite"),
        (np.eye(2), np.ones(2), 1.0, {"alpha0": np.zeros(3)}, "alpha0"),
        (np.eye(2), np.ones(2), 1.0, {"tol": -1.0}, "tol"),
    ],
)
def test_invalid_input(gram, linear, scale, kwargs, match):
    with pytest.raises(ValueError, match=match):
        solve_capped_simplex_qp(gram, linear, scale, **kwargs)


def test_exact_when_the_regularization_is_strong():
    # λ ≈ 1/3100 (found by a randomized search): the optimal α sums to ~2e-5, so the
    # gradient terms at the optimum are far below scale · max G_jj ≈ 2e6; a tolerance in
    # those units stopped here on a wrong support with a duality gap of 9e-5 ≫ D* ≈ 7e-6.
    psi, gram, losses, scale = _instance(3840141757, 36, "random", -3.4915255614092757)
    result = solve_capped_simplex_qp(gram, losses, scale)
    assert result.alpha.sum() < 1e-4 and scale * np.diag(gram).max() > 1e6
    primal, dual = cutting_plane_primal_dual(gram, losses, scale, result.alpha)
    assert result.duality_gap <= 1e-8 * primal
    assert result.kkt_residual <= _kkt_atol(gram, losses, scale, result.alpha)


def test_exact_when_the_gram_terms_cancel():
    # Low-rank planes with large entries and λ ≈ 1/1650 (found by a randomized search):
    # the terms of scale · Gα reach 5e6 while the violations r_j are about 1, and the
    # support exceeds the rank (singular reduced Hessians all along). A tolerance in
    # units of those terms stopped at a KKT residual of 2e-4.
    psi, gram, losses, scale = _instance(1238359281, 165, "low_rank", -3.2182747393248796)
    assert scale * (np.abs(gram) @ np.full(165, 1 / 165)).max() > 1e5
    result = solve_capped_simplex_qp(gram, losses, scale)
    assert result.converged
    atol = _kkt_atol(gram, losses, scale, result.alpha)
    _assert_kkt(gram, losses, scale, result.alpha, atol=atol)
    assert result.kkt_residual <= atol
    assert result.duality_gap <= 1e-8 * result.primal_objective
