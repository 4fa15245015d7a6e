"""The default L2 term of PerturbedMAPClassifier leaves the intercept out, as a logistic
regression does."""

import numpy as np
import pytest

from skstruct import PerturbedMAPClassifier


def _constant_inputs(n=400, seed=0):
    rng = np.random.RandomState(seed)
    X = np.zeros((n, 3))
    Y = np.column_stack([rng.rand(n) < 0.8, rng.rand(n) < 0.25]).astype(int)
    return X, Y


@pytest.mark.parametrize("l2", ["auto", 1e3])
def test_intercept_is_not_penalized(l2):
    # with constant inputs only the intercept can fit the label frequencies: unpenalized,
    # intercept_ / beta_ is their log-odds (the per-label logistic losses at temperature
    # beta), whatever the L2 strength; penalized, a strong L2 term pulls it to 0
    X, Y = _constant_inputs()
    model = PerturbedMAPClassifier(l2=l2, tol=1e-10).fit(X, Y)
    frequency = Y.mean(axis=0)
    np.testing.assert_allclose(model.intercept_ / model.beta_,
                               np.log(frequency / (1 - frequency)), atol=1e-4)
    np.testing.assert_array_equal(model.predict(X[:1]), [[1, 0]])


def test_coefficients_are_still_penalized():
    rng = np.random.RandomState(1)
    X = rng.randn(300, 4)
    Y = np.column_stack([X[:, 0] > 0, X[:, 1] + 0.3 * rng.randn(300) > 0]).astype(int)
    weak = PerturbedMAPClassifier(l2=1e-3).fit(X, Y)
    strong = PerturbedMAPClassifier(l2=10.0).fit(X, Y)
    assert np.abs(strong.coef_).sum() / strong.beta_ < \
        0.5 * np.abs(weak.coef_).sum() / weak.beta_


def test_first_partial_fit_leaves_the_intercept_unpenalized_too():
    X, Y = _constant_inputs(seed=2)
    streamed = PerturbedMAPClassifier(l2=1e3, tol=1e-10).partial_fit(X, Y)
    frequency = Y.mean(axis=0)
    np.testing.assert_allclose(streamed.intercept_ / streamed.beta_,
                               np.log(frequency / (1 - frequency)), atol=1e-4)


def _uncentred_counts(n=300, n_features=20, n_labels=5, seed=0):
    """Counts in 50 .. 255: every column far from zero, so that an unpenalized intercept
    and the coefficients are strongly correlated unless the features are centred."""
    rng = np.random.default_rng(seed)
    X = rng.integers(50, 256, size=(n, n_features)).astype(np.float64)
    chosen = ((X - X.mean(axis=0)) @ rng.normal(size=(n_features, n_labels))).argmax(axis=1)
    return X, np.eye(n_labels, dtype=int)[chosen]


def test_uncentred_features_converge_as_fast_as_centred_ones():
    # the intercept is unpenalized, so centring the features is an exact change of
    # coordinates: same coefficients, and L-BFGS needs about as many iterations as on
    # centred features (without the centring: 274 iterations, not converged at 300)
    X, Y = _uncentred_counts()
    raw = PerturbedMAPClassifier().fit(X, Y)
    centred = PerturbedMAPClassifier().fit(X - X.mean(axis=0), Y)
    assert raw.n_iter_ <= 2 * centred.n_iter_ + 5
    np.testing.assert_allclose(raw.coef_, centred.coef_, rtol=0,
                               atol=1e-4 * np.abs(centred.coef_).max())
    np.testing.assert_array_equal(raw.predict(X), centred.predict(X - X.mean(axis=0)))


def test_the_callback_sees_the_coefficients_not_the_centred_coordinates():
    X, Y = _uncentred_counts(n=120)
    seen = []
    model = PerturbedMAPClassifier(callback=lambda n, w, objective: seen.append(w.copy()))
    model.fit(X, Y)
    n_coef = model.coef_.size
    np.testing.assert_allclose(seen[-1][:n_coef], model.coef_.T.ravel(), rtol=1e-12)
    np.testing.assert_allclose(seen[-1][n_coef:], model.intercept_, rtol=1e-12)


def test_intercept_centring_is_a_change_of_coordinates():
    from skstruct.features._linear import InterceptCentring
    rng = np.random.RandomState(3)
    centring = InterceptCentring(rng.randn(4), 4, 3)
    v, g = rng.randn(15), rng.randn(15)
    np.testing.assert_allclose(centring.inverse(centring.forward(v)), v, rtol=1e-12)
    # the adjoint: <T v, g> = <v, T' g>
    np.testing.assert_allclose(centring.forward(v) @ g, v @ centring.adjoint(g), rtol=1e-12)
    X = rng.randn(6, 4) + 5.0
    W, b = centring.forward(v)[:12].reshape(4, 3), centring.forward(v)[12:]
    np.testing.assert_allclose(X @ W + b, (X - centring.mean) @ v[:12].reshape(4, 3) + v[12:],
                               rtol=1e-12)
