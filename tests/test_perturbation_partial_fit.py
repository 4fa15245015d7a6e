"""PerturbedMAPClassifier.partial_fit: the default streams by L-BFGS on every batch's risk
plus a diagonal summary of the earlier batches; the stochastic ascent continues its step
counter. Small random data, so that the file runs in seconds."""

import numpy as np
import pytest

from skstruct import PerturbedMAPClassifier
from skstruct.optim._streaming import StreamedRisk


def _multilabel(seed=0, n=400, n_features=4, n_labels=3, scale=1.0):
    """Independent features, so that the diagonal summary of a batch is close to exact."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features)) * scale
    W = rng.normal(size=(n_features, n_labels)) * 2 / scale
    Y = (X @ W + rng.logistic(size=(n, n_labels)) > 0).astype(int)
    return X, Y


def test_the_first_call_is_a_fit_on_its_batch():
    X, Y = _multilabel()
    fitted = PerturbedMAPClassifier().fit(X[:100], Y[:100])
    streamed = PerturbedMAPClassifier().partial_fit(X[:100], Y[:100])
    np.testing.assert_allclose(streamed.coef_, fitted.coef_, rtol=1e-6, atol=1e-8)
    assert streamed.beta_ == fitted.beta_


def _natural(model):
    """w / β: the parameters of P(y | x) ∝ exp(θ_y / β), which the L2 term is on (the
    first call of a stream fixes β from its batch, a fit from all of its data)."""
    return model.coef_ / model.beta_


def test_one_pass_over_a_stream_approximates_the_fit_on_all_of_it():
    X, Y = _multilabel(n=4000)
    fitted = _natural(PerturbedMAPClassifier().fit(X, Y))
    streamed = PerturbedMAPClassifier()
    for start in range(0, X.shape[0], 1000):
        streamed.partial_fit(X[start:start + 1000], Y[start:start + 1000])
    gap = np.linalg.norm(_natural(streamed) - fitted)
    assert gap <= 0.1 * np.linalg.norm(fitted)
    # the earlier batches count: a model of the last batch alone is further away
    last = PerturbedMAPClassifier().partial_fit(X[3000:], Y[3000:])
    assert gap < 0.5 * np.linalg.norm(_natural(last) - fitted)
    assert streamed._partial_state["seen_weight"] == X.shape[0]


def test_partial_fit_after_fit_keeps_the_fitted_model_on_the_same_data():
    X, Y = _multilabel(seed=1)
    fitted = PerturbedMAPClassifier().fit(X, Y)
    coef = fitted.coef_.copy()
    fitted.partial_fit(X, Y)
    # the same data again: the risk of all 2n units of weight, l2 halved
    assert np.linalg.norm(fitted.coef_ - coef) <= 0.05 * np.linalg.norm(coef)


@pytest.mark.parametrize("scale", [1e-3, 1e3])
def test_streaming_fits_any_feature_scale_to_finite_coefficients(scale):
    X, Y = _multilabel(seed=2, scale=scale)
    model = PerturbedMAPClassifier()
    for start in range(0, X.shape[0], 100):
        model.partial_fit(X[start:start + 100], Y[start:start + 100])
    assert np.all(np.isfinite(model.coef_))
    fitted = PerturbedMAPClassifier().fit(X, Y)
    assert np.mean(model.predict(X) == Y) >= np.mean(fitted.predict(X) == Y) - 0.03


def test_the_ascent_continues_its_step_counter_across_calls():
    X, Y = _multilabel(n=60)
    model = PerturbedMAPClassifier(candidates="proposal", k=1, random_state=0)
    model.partial_fit(X[:30], Y[:30])
    model.partial_fit(X[30:], Y[30:])
    assert model._partial_state["solver"] == "perturbed_ascent"
    assert model._partial_state["state"]["t"] == 2
    assert np.all(np.isfinite(model.coef_))


def test_the_streamed_risk_is_the_batch_share_plus_the_quadratic_summary():
    class Quadratic:
        loss, n_examples, n_params = None, 3, 2

        def value_and_gradient(self, w):
            return float(w @ w), 2 * w

        def compiled_objective(self):
            return None

    risk = StreamedRisk(Quadratic(), batch_weight=1.0, center=np.array([1.0, -1.0]),
                        curvature=np.array([2.0, 4.0]), seen_weight=3.0)
    w = np.array([0.5, 0.5])
    value, gradient = risk.value_and_gradient(w)
    offset = w - risk.center
    assert value == pytest.approx(0.25 * 0.5 + 0.5 * (2 * 0.25 + 4 * 2.25) / 4)
    np.testing.assert_allclose(gradient, 0.25 * 2 * w + np.array([2.0, 4.0]) * offset / 4)


def test_a_separated_batch_is_not_forgotten():
    # batch A: label 0 is separated by feature 0; batch B: feature 0 absent, so only the
    # summary of A holds its coefficient against the L2 term. At A's own minimizer
    # p (1 - p) is small and the summary would let the coefficient shrink to 0.69 of the
    # fit's on A and B together; from the curvature at the weights the call started
    # from it stays at 0.88 of it
    rng = np.random.RandomState(0)
    n = 60
    XA = np.column_stack([rng.choice([-1.0, 1.0], n), rng.randn(n, 3)])
    YA = np.column_stack([XA[:, 0] > 0, rng.rand(n) < 0.5]).astype(int)
    XB = np.column_stack([np.zeros(n), rng.randn(n, 3)])
    YB = (rng.rand(n, 2) < 0.5).astype(int)
    full = PerturbedMAPClassifier().fit(np.vstack([XA, XB]), np.vstack([YA, YB]))
    stream = PerturbedMAPClassifier().partial_fit(XA, YA).partial_fit(XB, YB)
    ratio = (stream.coef_[0, 0] / stream.beta_) / (full.coef_[0, 0] / full.beta_)
    assert 0.8 < ratio < 1.2
