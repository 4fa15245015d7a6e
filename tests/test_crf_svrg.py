"""CRF(solver="svrg"): SVRG epochs on the negative log-likelihood (and softmax-margin)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from skstruct import CRF
from skstruct.decoders import TreeDecoder
from skstruct.optim import _registry
from skstruct.optim._svrg_crf import crf_problem
from skstruct.utils._parallel import n_jobs_threads

ALPHA = 0.01


@pytest.fixture(scope="module")
def chains():
    """60 sequences of 2 to 8 tokens whose labels follow their features, sample weights."""
    rng = np.random.default_rng(3)
    V = rng.normal(size=(6, 3))
    states = np.array(["O", "A", "B"])
    X, y = [], []
    for length in rng.integers(2, 9, size=60):
        x = rng.normal(size=(length, 6))
        X.append(x)
        y.append(states[np.argmax(x @ V + 0.5 * rng.normal(size=(length, 3)), axis=1)])
    return X, y, rng.uniform(0.5, 2.0, size=60)


def _risk(X, y, weights=None, **params):
    """The RegularizedRisk that CRF(**params) hands its solver."""
    seen = []
    spec = _registry.get_solver("lbfgs")

    def spy(risk, w0, options):
        seen.append(risk)
        return spec.run(risk, w0, dict(options, max_iter=1))

    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(_registry._REGISTRY, "lbfgs", _registry.SolverSpec(
            "lbfgs", spy, spec.losses, spec.warm_start, spec.description, spec.l1))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            CRF(alpha=ALPHA, **{"feature_label_pairs": "all", **params}).fit(
                X, y, sample_weight=weights)
    assert len(seen) == 1
    return seen[0]


def _trees(rng, count=8):
    X, y = [], []
    for _ in range(count):
        n = int(rng.integers(2, 6))
        X.append(rng.normal(size=(n * n, 4)))
        y.append(np.array([rng.integers(0, t) for t in range(1, n + 1)]))  # earlier heads
    return X, y


@pytest.mark.parametrize("cost", [None, "hamming"])
def test_entropy_oracle_with_mu_one_is_the_crf_loss(chains, cost):
    """The smoothed oracle's documented contract: entropy smoothing with μ = 1 and no
    costs (or the softmax-margin cost under margin rescaling) gives log Z − θ_ȳ and its
    gradient, so the epochs minimize the CRF objective."""
    X, y, weights = chains
    risk = _risk(X, y, weights, cost=cost)
    sp = crf_problem(risk)
    rng = np.random.default_rng(0)
    for _ in range(3):
        w = rng.normal(scale=0.5, size=risk.n_params)
        value, gradient = risk.value_and_gradient(w)
        gbar, data = sp.full_gradient(sp.problem.to_engine(w), 1.0)
        assert data + 0.5 * ALPHA * w @ w == pytest.approx(value, rel=1e-12)
        np.testing.assert_allclose(sp.problem.to_user(gbar) + ALPHA * w, gradient,
                                   rtol=1e-10, atol=1e-12)


def test_entropy_oracle_is_the_tree_crf_loss():
    rng = np.random.default_rng(1)
    X, y = _trees(rng)
    risk = _risk(X, y, decoder=TreeDecoder())
    sp = crf_problem(risk)
    w = rng.normal(size=risk.n_params)
    value, gradient = risk.value_and_gradient(w)
    gbar, data = sp.full_gradient(sp.problem.to_engine(w), 1.0)
    assert data + 0.5 * ALPHA * w @ w == pytest.approx(value, rel=1e-10)
    np.testing.assert_allclose(sp.problem.to_user(gbar) + ALPHA * w, gradient,
                               rtol=1e-8, atol=1e-10)


def _objective(crf, X, y, weights):
    """F(w) from the fitted model through the public API: the weighted mean of
    −log p(y_i | x_i) plus (alpha / 2) ‖w‖²."""
    log_p = crf.predict_log_proba_sequences(X, y)
    squares = sum(float(np.sum(a ** 2)) for a in (
        crf.coef_, crf.transition_, crf.start_transition_, crf.end_transition_))
    return -float(weights @ log_p) / float(np.sum(weights)) + 0.5 * crf.alpha * squares


@pytest.mark.parametrize("cost", [None, "hamming"])
def test_reaches_the_lbfgs_optimum(chains, cost):
    X, y, weights = chains
    reference = CRF(alpha=ALPHA, tol=1e-9, max_iter=500, cost=cost).fit(
        X, y, sample_weight=weights)
    svrg = CRF(alpha=ALPHA, solver="svrg", tol=1e-7, max_iter=150, cost=cost,
               random_state=0).fit(X, y, sample_weight=weights)
    optimum = reference.objective_curve_[-1]
    assert svrg.objective_curve_[-1] == pytest.approx(optimum, rel=1e-7)
    np.testing.assert_allclose(svrg.coef_, reference.coef_, atol=1e-3)
    assert svrg.n_iter_ < 150  # stopped by the gradient rule
    if cost is None:
        assert _objective(svrg, X, y, weights) == pytest.approx(
            svrg.objective_curve_[-1], rel=1e-12)


def test_objective_curve_is_the_regularized_nll_after_each_epoch(chains):
    X, y, weights = chains
    seen = []
    crf = CRF(alpha=ALPHA, solver="svrg", max_iter=4, tol=0, random_state=0,
              callback=lambda k, w, value: seen.append(value))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        crf.fit(X, y, sample_weight=weights)
    assert len(seen) == len(crf.objective_curve_) == crf.n_iter_ == 4
    np.testing.assert_array_equal(seen, crf.objective_curve_)
    assert crf.objective_curve_[-1] == pytest.approx(_objective(crf, X, y, weights),
                                                     rel=1e-12)
    assert np.all(np.diff(crf.objective_curve_) < 0)


def test_deterministic_and_thread_count_invariant(chains):
    X, y, weights = chains
    fits = []
    for threads, seed in [(1, 0), (2, 0), (2, 0), (2, 1)]:
        with n_jobs_threads(threads), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fits.append(CRF(alpha=ALPHA, solver="svrg", max_iter=3, tol=0,
                            random_state=seed).fit(X, y, sample_weight=weights))
    for fit in fits[1:3]:
        np.testing.assert_array_equal(fit.coef_, fits[0].coef_)
        np.testing.assert_array_equal(fit.transition_, fits[0].transition_)
        np.testing.assert_array_equal(fit.objective_curve_, fits[0].objective_curve_)
    assert not np.array_equal(fits[3].coef_, fits[0].coef_)


def test_learning_rate_is_used(chains):
    X, y, weights = chains
    fits = [CRF(alpha=ALPHA, solver="svrg", max_iter=2, tol=0, random_state=0,
                learning_rate=rate) for rate in ("auto", 0.2)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fit in fits:
            fit.fit(X, y)
    assert fits[1].objective_curve_[-1] < fits[0].objective_curve_[-1]


@pytest.mark.parametrize("params, match", [
    (dict(l1_ratio=0.5), "cannot minimize an L1 penalty"),
    (dict(warm_start=True), "cannot warm-start"),
    (dict(learning_rate=0.0), "learning_rate"),
    (dict(alpha=0.0), "positive L2 strength"),
])
def test_unsupported_settings_raise(chains, params, match):
    X, y, _ = chains
    with pytest.raises(ValueError, match=match):
        CRF(**dict(dict(alpha=ALPHA, solver="svrg"), **params)).fit(X, y)


@pytest.fixture(scope="module")
def labelled_features():
    """Sparse chains in which six indicator features each occur with one label only
    (so that most of their (feature, label) pairs are never seen), and three numeric
    features with every label."""
    rng = np.random.default_rng(3)
    states = np.array(["O", "A", "B"])
    X, y = [], []
    for length in rng.integers(2, 9, size=60):
        labels = rng.integers(0, 3, size=length)
        x = np.zeros((length, 9))
        x[np.arange(length), 3 * rng.integers(0, 2, size=length) + labels] = 1.0
        x[:, 6:] = rng.normal(size=(length, 3)) * (rng.random((length, 3)) < 0.5)
        X.append(sp.csr_matrix(x))
        y.append(states[labels])
    return X, y


def _seen(X, y, classes):
    """(n_classes, n_features) bool: label k on some token whose feature f is nonzero."""
    X_all = sp.vstack(X).tocsr()
    labels = np.searchsorted(classes, np.concatenate(y))
    seen = np.zeros((len(classes), X_all.shape[1]), dtype=bool)
    rows, columns = X_all.nonzero()
    seen[labels[rows], columns] = True
    return seen


def test_seen_pairs_reach_the_lbfgs_optimum_of_the_seen_pairs(labelled_features):
    """feature_label_pairs="seen": SVRG minimizes F over the seen pairs' weights, the
    others exactly zero, the same optimum as L-BFGS on the compact vector."""
    X, y = labelled_features
    reference = CRF(alpha=ALPHA, tol=1e-9, max_iter=500, feature_label_pairs="seen").fit(X, y)
    widths = []
    svrg = CRF(alpha=ALPHA, solver="svrg", tol=1e-7, max_iter=200, random_state=0,
               feature_label_pairs="seen",
               callback=lambda k, w, value: widths.append(w.shape[0])).fit(X, y)
    everything = CRF(alpha=ALPHA, solver="svrg", tol=1e-7, max_iter=200,
                     random_state=0, feature_label_pairs="all").fit(X, y)
    seen = _seen(X, y, svrg.classes_)
    assert 0 < np.count_nonzero(~seen) < seen.size  # the problem has unseen pairs
    assert np.all(svrg.coef_[~seen] == 0.0)
    assert np.all(svrg.coef_[seen] != 0.0)
    # the compact vector of the seen pairs, as L-BFGS's
    n_states = len(svrg.classes_)
    assert set(widths) == {int(seen.sum()) + n_states ** 2 + 2 * n_states}
    optimum = reference.objective_curve_[-1]
    assert svrg.n_iter_ < 200  # stopped by the gradient rule
    assert svrg.objective_curve_[-1] == pytest.approx(optimum, rel=1e-10)
    assert _objective(svrg, X, y, np.ones(len(X))) == pytest.approx(optimum, rel=1e-10)
    np.testing.assert_allclose(svrg.coef_, reference.coef_, atol=1e-4)
    np.testing.assert_allclose(svrg.transition_, reference.transition_, atol=1e-4)
    # the all-pairs optimum is another point, lower
    assert everything.objective_curve_[-1] < optimum * 0.9


def test_steps_leave_the_held_weights_of_the_engine_at_zero(labelled_features):
    """The compiled epochs run on all pairs; the unseen pairs' weights there, and those
    of ``fixed`` parameters, are never written."""
    X, y = labelled_features
    risk = _risk(X, y, feature_label_pairs="seen")
    fixed = np.zeros(risk.n_params, dtype=bool)
    fixed[[0, risk.n_params - 1]] = True  # a seen pair's weight and an end score
    sp_ = crf_problem(risk, fixed)
    problem = sp_.problem
    assert problem.n_params == risk.n_params < problem.features.n_params
    w = problem.to_engine(np.zeros(risk.n_params))
    rng = np.random.default_rng(0)
    for _ in range(3):
        gbar, _ = sp_.full_gradient(w, 1.0)
        w = sp_.steps(w, gbar, 1.0, 0.05, 0.0, w, rng.integers(0, len(X), size=len(X)),
                      False)
    held = problem.free == 0
    assert held.sum() == problem.features.n_params - risk.n_params + 2
    np.testing.assert_array_equal(w[held], 0.0)
    assert np.all(w[~held] != 0.0)
    user = problem.to_user(w)
    assert user[0] == 0.0 and user[-1] == 0.0 and np.count_nonzero(user) == risk.n_params - 2
