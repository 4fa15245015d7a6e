import numpy as np
import pytest
from scipy.special import expit
from sklearn.linear_model import Lasso

from skstruct.optim import minimize_lbfgs, minimize_owlqn, solver_names
from skstruct.optim._owlqn import pseudo_gradient
from skstruct.optim._registry import check_solver, get_solver


def _lasso_problem(rng, n=60, d=15):
    X = rng.normal(size=(n, d))
    w_true = np.zeros(d)
    w_true[:4] = [3.0, -2.0, 1.5, 0.5]
    y = X @ w_true + 0.3 * rng.normal(size=n)

    def fun(w):
        residual = X @ w - y
        return 0.5 / n * residual @ residual, X.T @ residual / n

    return X, y, fun


def _logistic_problem(rng, n=80, d=12):
    X = rng.normal(size=(n, d))
    w_true = np.zeros(d)
    w_true[:3] = [2.0, -1.5, 1.0]
    y = np.where(rng.random(n) < expit(X @ w_true), 1.0, -1.0)

    def fun(w):
        margins = y * (X @ w)
        value = np.mean(np.logaddexp(0.0, -margins))
        grad = -X.T @ (y * expit(-margins)) / n
        return value, grad

    return X, y, fun


def _proximal_gradient(fun, lipschitz, l1, d, n_iter=40000):
    """FISTA on f + l1 ||w||_1: exact zeros from soft thresholding, to high precision."""
    w = z = np.zeros(d)
    t = 1.0
    for _ in range(n_iter):
        step = z - fun(z)[1] / lipschitz
        w_next = np.sign(step) * np.maximum(np.abs(step) - l1 / lipschitz, 0.0)
        t_next = 0.5 * (1 + np.sqrt(1 + 4 * t * t))
        z = w_next + (t - 1) / t_next * (w_next - w)
        w, t = w_next, t_next
    return w


def _objective(fun, l1, w):
    return fun(w)[0] + l1 * np.abs(w).sum()


def test_pseudo_gradient_is_the_minimum_norm_subgradient(rng):
    w = np.array([1.0, -2.0, 0.0, 0.0, 0.0])
    grad = np.array([0.3, 0.3, 0.3, 1.7, -1.2])
    np.testing.assert_allclose(pseudo_gradient(w, grad, 1.0), [1.3, -0.7, 0.0, 0.7, -0.2])
    # randomized: the result is the element of smallest magnitude of the subdifferential
    for _ in range(20):
        w = rng.normal(size=30) * (rng.random(30) < 0.5)
        grad, l1 = rng.normal(size=30), rng.random()
        pg = pseudo_gradient(w, grad, l1)
        low = np.where(w > 0, grad + l1, np.where(w < 0, grad - l1, grad - l1))
        high = np.where(w > 0, grad + l1, np.where(w < 0, grad - l1, grad + l1))
        np.testing.assert_allclose(pg, np.clip(0.0, low, high))


def test_lasso_same_objective_and_zero_pattern_as_coordinate_descent(rng):
    X, y, fun = _lasso_problem(rng)
    l1 = 0.1
    reference = Lasso(alpha=l1, fit_intercept=False, tol=1e-14, max_iter=100000).fit(X, y)
    result = minimize_owlqn(fun, np.zeros(X.shape[1]), l1=l1, max_iter=1000, tol=1e-10)
    assert result.converged
    assert 0 < np.count_nonzero(reference.coef_) < X.shape[1]  # a real zero pattern
    np.testing.assert_array_equal(result.w == 0, reference.coef_ == 0)
    assert _objective(fun, l1, result.w) == pytest.approx(
        _objective(fun, l1, reference.coef_), rel=1e-6)
    np.testing.assert_allclose(result.w, reference.coef_, atol=1e-5)
    assert result.extra["n_nonzero"] == np.count_nonzero(reference.coef_)


@pytest.mark.parametrize("l1", [0.01, 0.05])
def test_l1_logistic_same_objective_and_zero_pattern_as_proximal_gradient(rng, l1):
    X, y, fun = _logistic_problem(rng)
    lipschitz = 0.25 * np.linalg.norm(X, 2) ** 2 / X.shape[0]
    reference = _proximal_gradient(fun, lipschitz, l1, X.shape[1])
    result = minimize_owlqn(fun, np.zeros(X.shape[1]), l1=l1, max_iter=1000, tol=1e-10)
    assert result.converged
    assert 0 < np.count_nonzero(reference) < X.shape[1]
    np.testing.assert_array_equal(result.w == 0, reference == 0)
    assert _objective(fun, l1, result.w) == pytest.approx(
        _objective(fun, l1, reference), rel=1e-6)


def test_the_curve_is_the_full_objective_and_decreases(rng):
    X, y, fun = _logistic_problem(rng)
    seen = []
    result = minimize_owlqn(fun, np.zeros(X.shape[1]), l1=0.03, max_iter=200, tol=1e-9,
                            callback=lambda it, w, value: seen.append((value, w.copy())))
    assert len(seen) == result.n_iter == len(result.objective_curve) > 3
    for value, w in seen:
        assert value == pytest.approx(_objective(fun, 0.03, w), rel=1e-12)
    assert np.all(np.diff(result.objective_curve) <= 0)


def test_without_l1_reaches_the_lbfgs_optimum(rng):
    a = rng.normal(size=(20, 20))
    hessian, b = a @ a.T + np.eye(20), rng.normal(size=20)

    def fun(w):
        return 0.5 * w @ hessian @ w - b @ w, hessian @ w - b

    result = minimize_owlqn(fun, np.zeros(20), max_iter=500, tol=1e-10)
    reference = minimize_lbfgs(fun, np.zeros(20), max_iter=500, tol=1e-10)
    np.testing.assert_allclose(result.w, np.linalg.solve(hessian, b), atol=1e-7)
    assert result.objective_curve[-1] == pytest.approx(reference.objective_curve[-1],
                                                       rel=1e-12)


@pytest.mark.parametrize("l1", [0.0, 0.02])
def test_fixed_coordinates_stay_zero_and_the_rest_solves_the_reduced_problem(rng, l1):
    X, y, fun = _logistic_problem(rng)
    fixed = np.zeros(X.shape[1], dtype=bool)
    fixed[[0, 5, 7]] = True
    w0 = rng.normal(size=X.shape[1])  # nonzero on fixed coordinates: set to zero
    result = minimize_owlqn(fun, w0, l1=l1, fixed=fixed, max_iter=1000, tol=1e-10)
    assert np.all(result.w[fixed] == 0)
    keep = ~fixed

    def reduced(v):
        w = np.zeros(X.shape[1])
        w[keep] = v
        value, grad = fun(w)
        return value, grad[keep]

    reference = minimize_owlqn(reduced, np.zeros(keep.sum()), l1=l1, max_iter=1000,
                               tol=1e-10)
    np.testing.assert_allclose(result.w[keep], reference.w, atol=1e-6)


def test_stops_at_max_iter_and_by_callback_and_prints_lines(rng):
    X, y, fun = _logistic_problem(rng)
    result = minimize_owlqn(fun, np.zeros(X.shape[1]), l1=0.01, max_iter=3, tol=0)
    assert result.n_iter == 3 and not result.converged
    result = minimize_owlqn(fun, np.zeros(X.shape[1]), l1=0.01, max_iter=100, tol=0,
                            callback=lambda it, w, value: it == 2)
    assert result.n_iter == 2 and not result.converged and result.stopped_by_callback
    lines = []
    result = minimize_owlqn(fun, np.zeros(X.shape[1]), l1=0.01, max_iter=4, tol=0,
                            verbose=1, printer=lines.append)
    assert len(lines) == result.n_iter == 4
    assert "objective" in lines[0] and "|pgrad|" in lines[0] and "nonzero" in lines[0]


def test_bad_arguments_are_clear_errors():
    fun = lambda w: (float(w @ w), 2 * w)  # noqa: E731
    with pytest.raises(ValueError, match="l1 must be a non-negative"):
        minimize_owlqn(fun, np.zeros(3), l1=-1.0)
    with pytest.raises(ValueError, match="fixed has shape"):
        minimize_owlqn(fun, np.zeros(3), fixed=np.zeros(4, dtype=bool))


def test_registered_for_smooth_losses_with_an_l1_term():
    assert "owlqn" in solver_names("smooth")
    assert get_solver("owlqn").l1 and get_solver("lbfgs").l1
    assert not get_solver("lbfgsb").l1
    assert check_solver("lbfgs", "smooth", l1=True).name == "lbfgs"
    with pytest.raises(ValueError, match=r"solver='lbfgsb' cannot minimize an L1 penalty.*"
                                         r"use solver='lbfgs' or solver='owlqn'"):
        check_solver("lbfgsb", "smooth", l1=True)

