"""SVRG and Casimir-SVRG on the smoothed structured hinge (compiled epochs)."""

import warnings

import numpy as np
import pytest

from skstruct import StructuredSVM
from skstruct.optim import _solvers, run_solver, solver_names
from skstruct.optim import _svrg_kernels as kernels
from skstruct.optim._casimir import catalyst_alpha_beta, minimize_casimir
from skstruct.optim._svrg import minimize_svrg, smoothed_problem

ALPHA = 0.05
OPTIONS = dict(tol=0.0, averaging=True, random_state=0, verbose=0, callback=None)


def _risk_of(X, y, sample_weight=None, **params):
    """The RegularizedRisk StructuredSVM builds for (X, y)."""
    seen = []

    def spy(risk, *args, **kwargs):
        seen.append(risk)
        return minimize_svrg(risk, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_solvers, "minimize_svrg", spy)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            StructuredSVM(alpha=ALPHA, solver="svrg", max_iter=1, **params).fit(
                X, y, sample_weight=sample_weight)
    assert len(seen) == 1
    return seen[0]


@pytest.fixture(scope="module")
def chain_risk():
    """30 sequences whose labels follow their features (with noise), sample weights."""
    rng = np.random.default_rng(3)
    V = rng.normal(size=(6, 3))
    states = np.array(["O", "A", "B"])
    X, y = [], []
    for length in rng.integers(2, 9, size=30):
        x = rng.normal(size=(length, 6))
        X.append(x)
        y.append(states[np.argmax(x @ V + 0.5 * rng.normal(size=(length, 3)), axis=1)])
    return _risk_of(X, y, rng.uniform(0.5, 2.0, size=30))


@pytest.fixture(scope="module")
def optima():
    """Certified optimal primal values: a long BCFW run, P − gap ≤ P* ≤ P (per risk)."""
    return {}


def _optimum(optima, name, risk):
    from skstruct.optim import minimize_bcfw
    if name not in optima:
        result = minimize_bcfw(risk, max_iter=3000, tol=1e-4, random_state=0)
        optima[name] = (result.objective_curve[-1], result.duality_gaps[-1])
    return optima[name]


def _primal_at_zero(risk):
    problem = _problem(risk).problem
    return problem.hinge_primal(np.zeros(problem.n_params), risk.weights, risk.alpha)


def _problem(risk, smoothing="l2"):
    return smoothed_problem(risk, smoothing, 5, "svrg")


def _epoch_reference(sp, w_start, mu, eta, kappa, center, order, risk):
    """One SVRG epoch with dense NumPy steps (O(dim) per step) from per-example
    gradients."""
    p = sp.problem
    n = risk.n_examples
    scales = n * risk.weights

    def grad(i, w):
        g = np.zeros_like(w)
        kernels.example_gradient(p.features, p.oracle, sp.smoothing, mu, sp.top_k,
                                 *p.blocks(w), i, *p.blocks(g))
        return g

    anchor = w_start.copy()
    gbar = sum(risk.weights[i] * grad(i, anchor) for i in range(n))
    w = w_start.copy()
    total = np.zeros_like(w)
    for i in order:
        step = (scales[i] * (grad(i, w) - grad(i, anchor)) + gbar + sp.lam * w
                + kappa * (w - center))
        w = w - eta * step
        total += w
    return total / len(order), w


@pytest.mark.parametrize("smoothing", ["l2", "entropy"])
@pytest.mark.parametrize("kappa", [0.0, 0.3])
def test_lazy_epoch_equals_dense_numpy_steps(chain_risk, smoothing, kappa):
    sp = _problem(chain_risk, smoothing)
    p = sp.problem
    rng = np.random.default_rng(0)
    w_start = p.to_engine(rng.normal(scale=0.3, size=p.n_params))
    center = rng.normal(scale=0.3, size=p.n_params)
    order = rng.integers(0, chain_risk.n_examples, size=3 * chain_risk.n_examples)
    assert len(order) > 0
    eta = 0.02
    average, _ = sp.epoch(w_start, 0.5, eta, kappa, center, order, averaging=True)
    last, _ = sp.epoch(w_start, 0.5, eta, kappa, center, order, averaging=False)
    ref_average, ref_last = _epoch_reference(sp, w_start, 0.5, eta, kappa, center, order,
                                             chain_risk)
    np.testing.assert_allclose(last, ref_last, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(average, ref_average, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kappa", [0.0, 0.3])
def test_lazy_catch_up_equals_catching_up_every_step(chain_risk, kappa):
    sp = _problem(chain_risk)
    p = sp.problem
    rng = np.random.default_rng(1)
    w_start = rng.normal(size=p.n_params)
    center = rng.normal(size=p.n_params)
    order = rng.integers(0, chain_risk.n_examples, size=200)
    lazy = sp.epoch(w_start, 1.0, 0.01, kappa, center, order, lazy=True)[0]
    dense = sp.epoch(w_start, 1.0, 0.01, kappa, center, order, lazy=False)[0]
    np.testing.assert_allclose(lazy, dense, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("x", [0.0, 1e-9, 1e-6, 1e-3, 0.3])
@pytest.mark.parametrize("m", [0, 1, 2, 7, 500])
def test_geometric_sums_match_their_definitions(x, m):
    rho = 1.0 - x
    g = sum(rho ** s for s in range(m))
    h = sum(sum(rho ** r for r in range(s)) for s in range(1, m))
    power, g_value, h_value = kernels.geometric_sums(x, m)
    assert power == pytest.approx(rho ** m, rel=1e-12)
    assert g_value == pytest.approx(g, rel=1e-11, abs=1e-12)
    assert h_value == pytest.approx(h, rel=1e-11, abs=1e-12)


def test_catalyst_alpha_solves_its_recursion():
    alpha, q = 0.4, 0.1
    for _ in range(5):
        new, beta = catalyst_alpha_beta(alpha, q)
        assert 0 < new < 1
        assert new ** 2 == pytest.approx((1 - new) * alpha ** 2 + q * new)
        assert beta == pytest.approx(alpha * (1 - alpha) / (alpha ** 2 + new))
        alpha = new


def _bias_per_mu(risk, smoothing):
    """B with F_μ − P within [−μB, 0] (ℓ2) or [0, μB] (entropy) everywhere.

    ℓ2 (also over the top K only): h_μ(z) = max_{q ∈ Δ} ⟨q, z⟩ − (μ/2)‖q‖² is within
    μ/2 below the max, so B = Σ_i ω_i / 2. Entropy: μ log Σ_y exp(z_y / μ) is within
    μ log |Y_i| above it, |Y_i| ≤ S^{n_i} for n_i rows of S parts, so
    B = Σ_i ω_i n_i log S.
    """
    if smoothing == "l2":
        return 0.5 * float(np.sum(risk.weights))
    f = _problem(risk).problem.features
    rows = np.diff(np.asarray(f.row_offsets))
    return float(risk.weights @ rows) * np.log(f.n_unary)


#: The solvers' settings on the small problems, given the tolerance τ. The smoothed
#: solvers minimize F_μ with P(w_μ) − P* ≤ μB (``_bias_per_mu``: P(w_μ) ≤ F_μ(w_μ) + μB
#: ≤ F_μ(w*) + μB ≤ P* + μB for ℓ2, the same with the bias on the other side for
#: entropy), so μ = τ / (2B) leaves half of τ to the optimization; the adaptive schedule
#: starts there and decreases μ. Their step is proportional to μ (the curvature of F_μ
#: grows as 1/μ): μ/2 for ℓ2, μ for entropy, whose bound B (with log |Y_i|) is far more
#: pessimistic than ℓ2's, so its μ is smaller than the curvature needs. The step of
#: ``learning_rate="auto"`` is 2 to 6 times smaller on these problems (its smoothness
#: estimate is conservative, see the developer page): about 300 epochs on the chain, more
#: than 1000 on the multiclass problem.
CASES = {
    "bcfw": lambda tau, risk: dict(max_iter=400, tol=tau / 4),
    "subgradient": lambda tau, risk: dict(max_iter=400),
    "cutting_plane": lambda tau, risk: dict(max_iter=300, tol=tau / 4),
    "svrg-l2": lambda tau, risk: _smoothed(tau, risk, "l2", max_iter=400),
    "svrg-entropy": lambda tau, risk: _smoothed(tau, risk, "entropy", max_iter=400),
    "casimir-l2": lambda tau, risk: _smoothed(tau, risk, "l2", max_iter=400),
    "casimir-entropy": lambda tau, risk: _smoothed(tau, risk, "entropy", max_iter=400),
    "casimir-adapt-l2": lambda tau, risk: _smoothed(tau, risk, "l2", max_iter=400,
                                                    schedule="adapt"),
    "casimir-adapt-entropy": lambda tau, risk: _smoothed(tau, risk, "entropy",
                                                         max_iter=400, schedule="adapt"),
}


def _smoothed(tau, risk, smoothing, **options):
    mu = tau / (2 * _bias_per_mu(risk, smoothing))
    step = mu / 2 if smoothing == "l2" else mu
    return dict(options, smoothing=smoothing, mu=mu, learning_rate=step)


def test_every_structured_svm_solver_is_checked_against_the_optimum():
    assert {case.split("-")[0] for case in CASES} == solver_names("hinge_margin")


@pytest.fixture(scope="module")
def classes_risk():
    """40 samples of 5 features, 4 classes following the features (with noise), sample
    weights.

    The shared ``tabular`` classes are drawn independently of X: there w* ≈ 0 and
    P(0) − P* = 0.02, so 1 % of it is 2·10⁻⁴, which asks for μ ≈ 4·10⁻⁴ and some 10⁴
    epochs of the smoothed solvers (the time their O(1/ε) complexity predicts), and
    is below the gap of 3000 BCFW passes.
    """
    rng = np.random.default_rng(4)
    V = rng.normal(size=(5, 4))
    X = rng.normal(size=(40, 5))
    classes = np.argmax(X @ V + 0.5 * rng.normal(size=(40, 4)), axis=1)
    return _risk_of(X, classes, rng.uniform(0.5, 2.0, size=40))


@pytest.mark.parametrize("problem", ["chain", "classes"])
@pytest.mark.parametrize("case", list(CASES))
def test_reaches_the_certified_optimum(request, optima, problem, case):
    """Every StructuredSVM solver ends within τ = 1 % of P(0) − P* of the optimum P*
    that a long BCFW run certifies: P* ∈ [P_bcfw − gap, P_bcfw]."""
    risk = request.getfixturevalue(f"{problem}_risk")
    upper, gap = _optimum(optima, problem, risk)
    lower = upper - gap
    tau = 0.01 * (_primal_at_zero(risk) - upper)
    assert gap <= tau / 10
    solver = case.split("-")[0]
    options = dict(OPTIONS, **CASES[case](tau, risk))
    result = run_solver(solver, risk, np.zeros(risk.n_params), options)
    final = result.objective_curve[-1]
    assert final >= lower - 1e-9
    assert final - lower <= tau
    if solver == "bcfw":  # its own certificate
        assert result.duality_gaps[-1] <= tau


@pytest.mark.parametrize("solver", ["svrg", "casimir"])
def test_reported_objective_is_the_nonsmooth_primal(chain_risk, solver):
    minimize = minimize_svrg if solver == "svrg" else minimize_casimir
    seen = []
    result = minimize(chain_risk, max_iter=4, random_state=0, mu=0.5,
                      callback=lambda k, w, value: seen.append((w.copy(), value)))
    problem = _problem(chain_risk).problem
    assert len(seen) == len(result.objective_curve) == 4
    for (w, value), curve_value in zip(seen, result.objective_curve):
        assert value == curve_value
        assert value == pytest.approx(
            problem.hinge_primal(w, chain_risk.weights, chain_risk.alpha), rel=1e-12)
    assert min(result.objective_curve) == pytest.approx(
        problem.hinge_primal(result.w, chain_risk.weights, chain_risk.alpha), rel=1e-12)


@pytest.mark.parametrize("solver", ["svrg", "casimir"])
def test_deterministic_with_random_state(sequences, solver):
    X, y, _ = sequences
    fits = [StructuredSVM(alpha=ALPHA, solver=solver, max_iter=3, tol=0,
                          random_state=7).fit(X, y) for _ in range(2)]
    other = StructuredSVM(alpha=ALPHA, solver=solver, max_iter=3, tol=0,
                          random_state=8).fit(X, y)
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
    assert not np.array_equal(fits[0].coef_, other.coef_)


def test_same_model_for_any_n_jobs(sequences):
    X, y, _ = sequences
    fits = [StructuredSVM(alpha=ALPHA, solver="casimir", max_iter=3, tol=0, random_state=0,
                          n_jobs=n_jobs).fit(X, y) for n_jobs in (1, 2)]
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
    np.testing.assert_array_equal(fits[0].transition_, fits[1].transition_)


def test_full_gradient_does_not_depend_on_threads(chain_risk):
    import numba
    sp = _problem(chain_risk)
    w = np.random.default_rng(2).normal(size=sp.problem.n_params)
    grads = []
    before = numba.get_num_threads()
    try:
        for threads in sorted({1, numba.config.NUMBA_NUM_THREADS}):
            numba.set_num_threads(threads)
            grads.append(sp.full_gradient(w, 0.5)[0])
    finally:
        numba.set_num_threads(before)
    for g in grads[1:]:
        np.testing.assert_array_equal(g, grads[0])


@pytest.mark.parametrize("params, match", [
    (dict(smoothing="max"), "smoothing"),
    (dict(mu=0.0), "mu"),
    (dict(top_k=0), "top_k"),
    (dict(schedule="fast"), "schedule"),
    (dict(kappa=-1.0), "kappa"),
    (dict(warm_start_rule="anchor"), "warm_start_rule"),
    (dict(learning_rate="big"), "learning_rate"),
])
def test_bad_parameters_raise(sequences, params, match):
    X, y, _ = sequences
    with pytest.raises(ValueError, match=match):
        StructuredSVM(solver="casimir", **params).fit(X, y)


def test_unsupported_loss_names_what_is_supported(sequences):
    X, y, _ = sequences
    with pytest.raises(ValueError, match="Hamming"):
        StructuredSVM(solver="svrg", loss="f1").fit(X, y)
    with pytest.raises(ValueError, match="margin rescaling"):
        StructuredSVM(solver="svrg", rescaling="slack").fit(X, y)


def test_step_size_too_large_raises(chain_risk):
    with pytest.raises(ValueError, match=r"needs 0 < learning_rate < 1 / alpha"):
        minimize_svrg(chain_risk, max_iter=1, learning_rate=1.0 / ALPHA)


@pytest.mark.parametrize("name", ["svrg", "casimir"])
def test_smoothed_solvers_start_at_the_given_point(chain_risk, name):
    # an epoch of negligible steps stays at w0, so its primal is P(w0), not P(0)
    problem = _problem(chain_risk).problem
    w0 = np.random.default_rng(5).normal(size=problem.n_params)
    options = dict(OPTIONS, max_iter=1, learning_rate=1e-12)
    result = run_solver(name, chain_risk, w0, options)
    expected = problem.hinge_primal(w0, chain_risk.weights, chain_risk.alpha)
    assert abs(expected - _primal_at_zero(chain_risk)) > 1e-3
    assert result.objective_curve[0] == pytest.approx(expected, rel=1e-8)
    with pytest.raises(ValueError, match="parameters"):
        run_solver(name, chain_risk, w0[:-1], options)
