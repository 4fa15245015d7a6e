"""OWL-QN where f itself has kinks at zero (``minimize_owlqn(..., kinked=...)``)."""

import numpy as np
import pytest

from skstruct.optim import minimize_owlqn
from skstruct.optim._owlqn import _kinked_pseudo_gradient_into, pseudo_gradient


def _kinked_quadratic(rng, d=12):
    """f(w) = ½ wᵀQw − bᵀw + Σ_j c_j |w_j| for the first half of the coordinates, with the
    kink given as a spread: the gradient returned at w_j = 0 is an arbitrary element of
    ∂f (the left end of a random split), as a solver's oracle would return it."""
    A = rng.normal(size=(d, d))
    Q = A @ A.T / d + np.eye(d)
    b = 2.0 * rng.normal(size=d)
    c = np.zeros(d)
    c[: d // 2] = rng.uniform(0.5, 2.0, size=d // 2)
    kinked = c > 0
    split = rng.uniform(size=d)

    def fun(w):
        at_zero = kinked & (w == 0)
        value = 0.5 * w @ Q @ w - b @ w + c @ np.abs(w)
        grad = Q @ w - b + c * np.sign(w)
        # at zero: g = the element −c + 2c·split of [−c, c], spread to both ends
        grad = grad + np.where(at_zero, c * (2 * split - 1), 0.0)
        down = np.where(at_zero, grad - (Q @ w - b - c), 0.0)
        up = np.where(at_zero, (Q @ w - b + c) - grad, 0.0)
        return value, grad, down, up

    return Q, b, c, kinked, fun


def _reference_minimum(Q, b, c, n_iter=20000):
    """Proximal gradient on ½ wᵀQw − bᵀw + Σ c_j |w_j| (exact zeros)."""
    step = 1.0 / np.linalg.eigvalsh(Q).max()
    w = np.zeros(len(b))
    for _ in range(n_iter):
        z = w - step * (Q @ w - b)
        w = np.sign(z) * np.maximum(np.abs(z) - step * c, 0.0)
    return w


def test_kinked_pseudo_gradient_is_the_minimum_norm_subgradient(rng):
    d = 200
    w = np.where(rng.random(d) < 0.5, 0.0, rng.normal(size=d))
    grad = rng.normal(size=d)
    down = np.where(w == 0, rng.uniform(0, 1.5, size=d), 0.0)
    up = np.where(w == 0, rng.uniform(0, 1.5, size=d), 0.0)
    for l1 in (0.0, 0.4):
        out = np.empty(d)
        largest, squares = _kinked_pseudo_gradient_into(w, grad, down, up, l1, out)
        # brute force: the element of least magnitude of each coordinate's interval
        lower = np.where(w == 0, grad - down - l1, grad + l1 * np.sign(w))
        upper = np.where(w == 0, grad + up + l1, grad + l1 * np.sign(w))
        expected = np.clip(0.0, lower, upper)
        np.testing.assert_array_equal(out, expected)
        assert largest == np.abs(expected).max()
        assert squares == pytest.approx(expected @ expected)
    # no spread: OWL-QN's pseudo-gradient
    out = np.empty(d)
    _kinked_pseudo_gradient_into(w, grad, 0 * down, 0 * up, 0.4, out)
    np.testing.assert_array_equal(out, pseudo_gradient(w, grad, 0.4))


@pytest.mark.parametrize("seed", range(5))
def test_kinked_minimum_reaches_the_tolerance_and_the_exact_zeros(seed):
    rng = np.random.default_rng(seed)
    Q, b, c, kinked, fun = _kinked_quadratic(rng)
    expected = _reference_minimum(Q, b, c)
    assert (expected[kinked] == 0).any()  # some kinks hold their coordinate at zero
    result = minimize_owlqn(fun, np.zeros(len(b)), kinked=kinked, tol=1e-9, max_iter=500)
    assert result.converged
    assert result.extra["max_pseudo_gradient"] <= 1e-5
    np.testing.assert_allclose(result.w, expected, atol=1e-5)
    np.testing.assert_array_equal(result.w[kinked] == 0, expected[kinked] == 0)
    assert result.extra["n_kinked_at_zero"] == int(np.sum(expected[kinked] == 0))


def test_without_the_spread_the_kinks_stop_a_smooth_solver_short(rng):
    """The same f handed to OWL-QN as smooth (its gradient at zero an arbitrary element of
    the subdifferential): the iterates cannot settle on the kinks, and the run ends far
    from the minimum or without meeting the tolerance."""
    Q, b, c, kinked, fun = _kinked_quadratic(rng)
    expected = _reference_minimum(Q, b, c)

    def smooth(w):
        return fun(w)[:2]

    result = minimize_owlqn(smooth, np.zeros(len(b)), tol=1e-9, max_iter=500)
    reached = (result.message == "pseudo-gradient below tol"
               and np.allclose(result.w, expected, atol=1e-5))
    assert not reached


def test_kinked_with_an_l1_term_and_fixed_coordinates(rng):
    Q, b, c, kinked, fun = _kinked_quadratic(rng)
    l1 = 0.3
    fixed = np.zeros(len(b), dtype=bool)
    fixed[-1] = True
    result = minimize_owlqn(fun, np.ones(len(b)), l1=l1, fixed=fixed, kinked=kinked,
                            tol=1e-9, max_iter=500)
    free = ~fixed
    expected = np.zeros(len(b))
    expected[free] = _reference_minimum(Q[np.ix_(free, free)], b[free], c[free] + l1)
    assert result.converged
    np.testing.assert_allclose(result.w, expected, atol=1e-5)


def test_kinked_shape_is_checked():
    with pytest.raises(ValueError, match="kinked has shape"):
        minimize_owlqn(lambda w: (0.0, w, w, w), np.zeros(3), kinked=np.zeros(2, bool))
