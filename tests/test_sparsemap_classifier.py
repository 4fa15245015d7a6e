"""SparseMAPClassifier and the SparseMAP loss: reductions, gradients and outputs."""

import numpy as np
import pytest
from _chain_data import moved_chain_scores, random_chain_scores
from scipy.optimize import minimize

from skstruct import SparseMAPClassifier
from skstruct.decoders import ChainDecoder, ChainScores, MulticlassDecoder, MulticlassScores
from skstruct.decoders import chain_parts
from skstruct.losses import FBetaLoss, SparseMAPLoss

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def sparsemax(z):
    z_sorted = np.sort(z)[::-1]
    cumulative = np.cumsum(z_sorted) - 1.0
    k = np.arange(1, z.size + 1)
    rho = k[z_sorted - cumulative / k > 0][-1]
    return np.maximum(z - cumulative[rho - 1] / rho, 0.0)


def sparsemax_objective(params, X, y, alpha, n_classes):
    """Mean sparsemax loss (Martins & Astudillo 2016) + (alpha/2)‖w‖², and its gradient."""
    n, d = X.shape
    W, b = params[: d * n_classes].reshape(d, n_classes), params[d * n_classes :]
    Z = X @ W + b
    P = np.array([sparsemax(z) for z in Z])
    onehot = np.eye(n_classes)[y]
    losses = (Z * P).sum(1) - 0.5 * (P * P).sum(1) + 0.5 - Z[np.arange(n), y]
    G = (P - onehot) / n
    grad = np.concatenate([(X.T @ G).ravel(), G.sum(0)]) + alpha * params
    return losses.mean() + 0.5 * alpha * params @ params, grad


def test_multiclass_equals_the_sparsemax_loss():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    y = (X[:, 0] + 0.5 * rng.normal(size=60) > 0).astype(int) + (X[:, 1] > 0.8)
    alpha = 0.05
    clf = SparseMAPClassifier(alpha=alpha, tol=1e-9, max_iter=500).fit(X, y)
    reference = minimize(sparsemax_objective, np.zeros(5 * 3), args=(X, y, alpha, 3),
                         jac=True, method="L-BFGS-B",
                         options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 5000})
    W, b = reference.x[:12].reshape(4, 3), reference.x[12:]
    np.testing.assert_allclose(clf.coef_, W.T, atol=1e-5)
    np.testing.assert_allclose(clf.intercept_, b, atol=1e-5)
    assert clf.objective_curve_[-1] == pytest.approx(reference.fun, rel=1e-8)
    # Its marginals are the sparsemax probabilities of the decision function.
    expected = np.array([sparsemax(z) for z in clf.decision_function(X)])
    np.testing.assert_allclose(clf.predict_marginals(X), expected, atol=1e-12)


@pytest.mark.parametrize("cost", [None, "hamming"])
def test_loss_gradient_matches_finite_differences(cost):
    rng = np.random.default_rng(1)
    scores = random_chain_scores(rng, [3, 1, 4], 3)
    y = rng.integers(0, 3, size=8)
    loss, decoder = SparseMAPLoss(cost=cost), ChainDecoder()
    values, grad = loss(decoder, scores, y)
    assert np.all(values >= 0)
    direction = random_chain_scores(rng, [3, 1, 4], 3)
    eps = 1e-6

    def moved(sign):
        return loss(decoder, moved_chain_scores(scores, direction, sign * eps), y)[0]

    numeric = (moved(1) - moved(-1)) / (2 * eps)
    np.testing.assert_allclose(grad.dot(direction), numeric, rtol=1e-5, atol=1e-7)


def test_loss_is_zero_when_gold_wins_by_the_margin_and_scales():
    rng = np.random.default_rng(2)
    y = np.array([0, 2, 1, 1])
    offsets = np.array([0, 4])
    gold = chain_parts(y, offsets, 3)
    scores = ChainScores(10.0 * gold.unary, offsets, np.zeros((3, 3)), np.zeros(3),
                         np.zeros(3))
    for cost in (None, "hamming"):
        values, _ = SparseMAPLoss(cost=cost)(ChainDecoder(), scores, y)
        assert values[0] == pytest.approx(0.0, abs=1e-12)
    # ℓ_{tΩ}(η) = t ℓ_Ω(η / t): for Ω = ½‖u‖², ℓ(η) with η scaled by 1/t, times t,
    # equals the loss of the scaled regularizer; check the equivalent homogeneity
    # ℓ_Ω(tη) = t ℓ_{Ω/t}(η) through the decoder-free multiclass case.
    z = rng.normal(size=(5, 4))
    labels = rng.integers(0, 4, size=5)
    loss = SparseMAPLoss()
    value, _ = loss(MulticlassDecoder(), MulticlassScores(z), labels)
    expected = []
    for row, k in zip(z, labels):
        p = sparsemax(row)
        expected.append(row @ p - 0.5 * p @ p + 0.5 - row[k])
    np.testing.assert_allclose(value, expected, atol=1e-12)


def test_sequences_fit_predict_and_distribution():
    rng = np.random.default_rng(3)
    X, y = [], []
    for _ in range(30):
        length = rng.integers(2, 7)
        labels = rng.integers(0, 3, size=length)
        features = np.eye(3)[labels] + 0.3 * rng.normal(size=(length, 3))
        X.append(features)
        y.append(np.array(["a", "b", "c"])[labels])
    clf = SparseMAPClassifier(alpha=1e-2, max_iter=200).fit(X, y)
    assert clf.score(X, y) > 0.9
    distributions = clf.predict_distribution(X[:5])
    predictions = clf.predict(X[:5])
    for (outputs, weights), prediction in zip(distributions, predictions):
        assert weights.sum() == pytest.approx(1.0)
        assert np.all(weights > 0)
        assert all(o.dtype == prediction.dtype and o.shape == prediction.shape
                   for o in outputs)
    marginals = clf.predict_marginals(X[:5])
    for m, x in zip(marginals, X[:5]):
        assert m.shape == (x.shape[0], 3)
        np.testing.assert_allclose(m.sum(axis=1), 1.0)


def test_m_sparsemap_on_multilabel():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(80, 5))
    Y = (X[:, :3] + 0.3 * rng.normal(size=(80, 3)) > 0).astype(int)
    clf = SparseMAPClassifier(alpha=1e-3, cost="hamming", max_iter=200).fit(X, Y)
    assert clf.predict(X).shape == Y.shape
    assert (clf.predict(X) == Y).mean() > 0.85
    outputs, weights = clf.predict_distribution(X[:1])[0]
    assert all(o.shape == (3,) for o in outputs)
    # Independent labels: SparseMAP clips the scores to [0, 1].
    clf = SparseMAPClassifier(alpha=1e-3, max_iter=200).fit(X, Y)
    np.testing.assert_allclose(clf.predict_marginals(X),
                               np.clip(clf.decision_function(X), 0, 1), atol=1e-12)


def test_cost_must_decompose():
    X = np.array([[0.0, 1.0], [1.0, 0.0]])
    with pytest.raises(ValueError, match="decompose"):
        SparseMAPClassifier(cost=FBetaLoss()).fit([X], [np.array([0, 1])])
