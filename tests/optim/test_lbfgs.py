import numpy as np
import pytest
from scipy.optimize import minimize, rosen, rosen_der

from skstruct.optim import minimize_lbfgs, minimize_lbfgsb, minimize_owlqn

SOLVERS = [minimize_lbfgs, minimize_lbfgsb]


def _quadratic(rng, n=20):
    a = rng.normal(size=(n, n))
    hessian = a @ a.T + np.eye(n)
    b = rng.normal(size=n)
    return (lambda w: (0.5 * w @ hessian @ w - b @ w, hessian @ w - b)), np.linalg.solve(hessian, b)


@pytest.mark.parametrize("solver", SOLVERS)
def test_reaches_the_minimum_and_the_curve_decreases(solver, rng):
    fun, solution = _quadratic(rng)
    result = solver(fun, np.zeros(20), max_iter=500, tol=1e-10)
    assert result.converged
    np.testing.assert_allclose(result.w, solution, atol=1e-6)
    assert len(result.objective_curve) == result.n_iter
    assert np.all(np.diff(result.objective_curve) <= 1e-12)


@pytest.mark.parametrize("solver", SOLVERS)
def test_nonconvex_rosenbrock(solver):
    result = solver(lambda w: (rosen(w), rosen_der(w)), np.full(6, -1.0), max_iter=1000,
                    tol=1e-9)
    np.testing.assert_allclose(result.w, np.ones(6), atol=1e-4)


@pytest.mark.parametrize("solver", SOLVERS)
def test_max_iter_and_callback_stop(solver, rng):
    fun, _ = _quadratic(rng)
    result = solver(fun, np.zeros(20), max_iter=3, tol=0)
    assert result.n_iter == 3 and not result.converged
    seen, iterates = [], []
    result = solver(fun, np.zeros(20), max_iter=100, tol=0,
                    callback=lambda it, w, value: (seen.append(value),
                                                   iterates.append(w.copy()))[0] or it == 2)
    assert len(seen) == 2 and not result.converged and result.n_iter == 2
    assert result.stopped_by_callback
    # the iterate at which the callback stopped, whichever form scipy's callback takes
    np.testing.assert_array_equal(result.w, iterates[-1])
    assert result.objective_curve[-1] == seen[-1] == fun(result.w)[0]


@pytest.mark.parametrize("solver", SOLVERS)
def test_verbose_prints_one_line_per_iteration(solver, rng):
    fun, _ = _quadratic(rng)
    lines = []
    result = solver(fun, np.zeros(20), max_iter=5, tol=0, verbose=1, printer=lines.append)
    assert len(lines) == result.n_iter == 5
    assert "objective" in lines[0] and "|grad|" in lines[0] and "time" in lines[0]
    assert "nan" not in lines[-1]


def test_same_optimum_as_scipy(rng):
    fun, _ = _quadratic(rng, n=50)
    ours = minimize_lbfgs(fun, np.zeros(50), max_iter=200, tol=1e-9)
    ref = minimize(fun, np.zeros(50), jac=True, method="L-BFGS-B",
                   options=dict(maxiter=200, gtol=1e-9, ftol=1e-14))
    assert ours.objective_curve[-1] == pytest.approx(ref.fun, rel=1e-10)
    assert ours.n_evaluations <= 2 * ours.n_iter + 2


@pytest.mark.parametrize("minimize", [minimize_lbfgs, minimize_owlqn])
def test_a_tolerance_relative_to_the_start_ignores_the_scale_of_the_objective(minimize, rng):
    fun, _ = _quadratic(rng)
    w0 = np.full(20, 3.0)

    def scaled(factor):
        def scaled_fun(w):
            value, gradient = fun(w)
            return factor * value, factor * gradient
        return scaled_fun

    small = minimize(scaled(1e-3), w0, tol=1e-3, tol_scale="initial", max_iter=500)
    large = minimize(scaled(1e3), w0, tol=1e-3, tol_scale="initial", max_iter=500)
    assert small.converged and large.converged
    assert large.n_iter == small.n_iter > 1
    plain = minimize(fun, w0, tol=1e-3, tol_scale="initial", max_iter=500)
    initial = np.max(np.abs(fun(w0)[1]))
    assert np.max(np.abs(fun(plain.w)[1])) <= 1e-3 * initial


def test_tol_scale_must_be_known(rng):
    fun, _ = _quadratic(rng)
    with pytest.raises(ValueError, match="tol_scale"):
        minimize_lbfgs(fun, np.zeros(20), tol_scale="relative")
