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


def sparsemax_loss(z, k):
    """ℓ(z; k) = zᵀp − ½‖p‖² − (z_k − ½) at p = sparsemax(z)."""
    p = sparsemax(z)
    return z @ p - 0.5 * p @ p + 0.5 - z[k]


SCALES = [1e-6, 1e-3, 0.5, 0.99, 1.0, 1.01, 1.5, 2.0, 3.0, 10.0, 1e3, 1e6]


@pytest.mark.parametrize("t", SCALES)
def test_loss_is_zero_when_gold_wins_by_the_margin_and_scales(t):
    # Scores t·(gold indicators), no transitions: the polytope and ½‖u‖² factor over the
    # tokens, so the chain loss is the sum of per-token sparsemax losses at t·e_k. Hamming
    # adds 1 to every wrong label: per token (t − 1)·e_k up to a constant. The loss is 0
    # exactly when the gold wins by the margin: t ≥ 1 (plain), t ≥ 2 (Hamming).
    y = np.array([0, 2, 1, 1])
    offsets = np.array([0, 4])
    gold = chain_parts(y, offsets, 3)
    scores = ChainScores(t * gold.unary, offsets, np.zeros((3, 3)), np.zeros(3),
                         np.zeros(3))
    for cost, margin in ((None, 1.0), ("hamming", 2.0)):
        values, _ = SparseMAPLoss(cost=cost)(ChainDecoder(), scores, y)
        assert values.shape == (1,)
        s = t - (margin - 1.0)
        expected = sum(sparsemax_loss(s * np.eye(3)[k], k) for k in y)
        assert values[0] == pytest.approx(expected, rel=1e-9, abs=1e-12)
        if t >= margin:
            assert values[0] == pytest.approx(0.0, abs=1e-12)
        else:
            assert values[0] > 0.0
    # Multiclass: SparseMAP is sparsemax, so ℓ(t·z) is the sparsemax loss at t·z, at every
    # scale (1e-6: ℓ(0) = ½ − 1/(2K) to first order; 1e6: t·(max z − z_k) exactly).
    rng = np.random.default_rng(2)
    z = rng.normal(size=(5, 4))
    labels = rng.integers(0, 4, size=5)
    value, _ = SparseMAPLoss()(MulticlassDecoder(), MulticlassScores(t * z), labels)
    expected = [sparsemax_loss(t * row, k) for row, k in zip(z, labels, strict=True)]
    np.testing.assert_allclose(value, expected, rtol=1e-9, atol=1e-12)
    if t >= 1e3:
        top = np.sort(z, axis=1)
        assert np.all(t * (top[:, -1] - top[:, -2]) > 1)  # sparsemax(t·z) is one-hot
        np.testing.assert_allclose(value, t * (z.max(axis=1) - z[np.arange(5), labels]),
                                   rtol=1e-12, atol=1e-12)


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
    assert len(distributions) == len(predictions) == 5
    for (outputs, weights), prediction, x in zip(distributions, predictions, X[:5],
                                                 strict=True):
        assert prediction.shape == (x.shape[0],)
        assert len(outputs) == len(weights) >= 1
        assert weights.sum() == pytest.approx(1.0)
        assert np.all(weights > 0)
        assert all(o.dtype == prediction.dtype and o.shape == prediction.shape
                   for o in outputs)
    marginals = clf.predict_marginals(X[:5])
    assert len(marginals) == 5
    for m, x in zip(marginals, X[:5], strict=True):
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
    assert len(outputs) == len(weights) >= 1 and weights.sum() == pytest.approx(1.0)
    assert all(o.shape == (3,) for o in outputs)
    # Independent labels: SparseMAP clips the scores to [0, 1].
    clf = SparseMAPClassifier(alpha=1e-3, max_iter=200).fit(X, Y)
    np.testing.assert_allclose(clf.predict_marginals(X),
                               np.clip(clf.decision_function(X), 0, 1), atol=1e-12)


def test_cost_must_decompose():
    X = np.array([[0.0, 1.0], [1.0, 0.0]])
    with pytest.raises(ValueError, match="decompose"):
        SparseMAPClassifier(cost=FBetaLoss()).fit([X], [np.array([0, 1])])


def test_solver_svrg_serves_the_crf_loss_only_and_says_so():
    X, y = np.random.default_rng(0).random((20, 3)), np.arange(20) % 3
    with pytest.raises(ValueError, match="SparseMAPLoss has no compiled oracle for it: "
                                         "use solver='lbfgs'"):
        SparseMAPClassifier(solver="svrg").fit(X, y)
