"""CRF and SparseMAPClassifier with an elastic-net penalty (``l1_ratio``)."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV
from sklearn.utils._param_validation import InvalidParameterError

from skstruct import CRF, SparseMAPClassifier
from skstruct._linear_model import LinearStructuredModel
from skstruct.losses import CRFLoss
from skstruct.optim import RegularizedRisk


def make_sequences(rng, n_sequences=40, n_features=12, labels=("B", "I", "O")):
    """Labels driven by the first few features; the others are noise (L1 drops them)."""
    X, y = [], []
    for _ in range(n_sequences):
        length = rng.integers(2, 7)
        states = rng.integers(len(labels), size=length)
        features = rng.normal(size=(length, n_features))
        features[np.arange(length), states] += 2.0
        X.append(features)
        y.append(np.array(labels)[states])
    return X, y


def smooth_gradient(model, X, y, l2_strength):
    """The fitted flat w and the gradient of the data term + L2 part of F at it."""
    kind, batch, classes, y_encoded, weights = model._validate_training_data(X, y, None)
    features = kind.feature_map(batch.n_features, classes)
    risk = RegularizedRisk(features, batch, y_encoded, model.decoder_, CRFLoss(),
                           l2_strength, weights)
    w = model._params()
    return w, risk.value_and_gradient(w)


@pytest.mark.parametrize("l1_ratio", [1.0, 0.5])
def test_l1_gives_exact_zeros_at_a_minimum(rng, l1_ratio):
    X, y = make_sequences(rng)
    alpha = 0.05
    crf = CRF(alpha=alpha, l1_ratio=l1_ratio, max_iter=1000, tol=1e-7).fit(X, y)
    w, (smooth_value, grad) = smooth_gradient(crf, X, y, alpha * (1 - l1_ratio))
    l1 = alpha * l1_ratio
    zero = w == 0
    assert 0 < zero.sum() < w.size  # exact zeros, but not all
    assert crf.n_nonzero_ == np.count_nonzero(w)
    assert crf.objective_curve_[-1] == pytest.approx(smooth_value + l1 * np.abs(w).sum(),
                                                     rel=1e-12)
    # subgradient optimality: |g_j| <= l1 at zeros, g_j = -l1 sign(w_j) elsewhere
    assert np.max(np.abs(grad[zero])) <= l1 + 1e-6
    np.testing.assert_allclose(grad[~zero], -l1 * np.sign(w[~zero]), atol=1e-5)


class PlainL2CRF(CRF):
    """The L2 path as it was: the base class's penalty and feature map, which know
    nothing of l1_ratio."""

    _penalty = LinearStructuredModel._penalty
    _training_features = LinearStructuredModel._training_features


def test_l1_ratio_zero_is_the_l2_model_bit_for_bit(rng):
    X, y = make_sequences(rng)
    crf = CRF(alpha=0.01, max_iter=50, tol=1e-6).fit(X, y)
    before = PlainL2CRF(alpha=0.01, max_iter=50, tol=1e-6).fit(X, y)
    for name in ("coef_", "transition_", "start_transition_", "end_transition_",
                 "objective_curve_"):
        np.testing.assert_array_equal(getattr(crf, name), getattr(before, name))
    assert crf.n_iter_ == before.n_iter_


def test_more_l1_gives_fewer_nonzeros(rng):
    X, y = make_sequences(rng)
    counts = [CRF(alpha=0.05, l1_ratio=r, max_iter=300).fit(X, y).n_nonzero_
              for r in (0.0, 0.3, 1.0)]
    assert counts[0] == 12 * 3 + 9 + 3 + 3
    assert counts[0] > counts[1] > counts[2] > 0


def test_owlqn_solver_without_l1_reaches_the_lbfgs_optimum(rng):
    X, y = make_sequences(rng)
    lbfgs = CRF(alpha=0.01, max_iter=500, tol=1e-8).fit(X, y)
    owlqn = CRF(alpha=0.01, solver="owlqn", max_iter=500, tol=1e-8).fit(X, y)
    assert owlqn.objective_curve_[-1] == pytest.approx(lbfgs.objective_curve_[-1], rel=1e-8)
    np.testing.assert_allclose(owlqn.coef_, lbfgs.coef_, atol=1e-4)


@pytest.mark.parametrize("l1_ratio, error", [
    (-0.1, InvalidParameterError), (1.5, InvalidParameterError),
    ("0.5", InvalidParameterError), (None, InvalidParameterError),
    (np.nan, InvalidParameterError),
])
@pytest.mark.parametrize("estimator", [CRF, SparseMAPClassifier])
def test_bad_l1_ratio_is_a_clear_error(rng, estimator, l1_ratio, error):
    X, y = make_sequences(rng, n_sequences=5)
    with pytest.raises(error, match=r"'l1_ratio' parameter of .* must be a float in the "
                                    r"range \[0(\.0)?, 1(\.0)?\]"):
        estimator(l1_ratio=l1_ratio).fit(X, y)


def test_lbfgsb_with_l1_says_which_solvers_can(rng):
    X, y = make_sequences(rng, n_sequences=5)
    with pytest.raises(ValueError, match=r"solver='lbfgsb' cannot minimize an L1 penalty"
                                         r".*use solver='lbfgs' or solver='owlqn'"):
        CRF(l1_ratio=0.5, solver="lbfgsb").fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        CRF(l1_ratio=0.0, solver="lbfgsb", max_iter=5).fit(X, y)  # L2 only: fine
        # alpha = 0 makes the L1 term vanish: nothing to refuse
        CRF(alpha=0.0, l1_ratio=0.5, solver="lbfgsb", max_iter=5).fit(X, y)


def test_clone_pickle_and_grid_search(rng):
    X, y = make_sequences(rng, n_sequences=30)
    crf = CRF(alpha=0.02, l1_ratio=0.7, max_iter=200)
    copy = clone(crf)
    assert copy.get_params()["l1_ratio"] == 0.7
    fitted = copy.fit(X, y)
    restored = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(restored.coef_, fitted.coef_)
    assert restored.n_nonzero_ == fitted.n_nonzero_
    search = GridSearchCV(CRF(alpha=0.02, max_iter=200), {"l1_ratio": [0.0, 0.5, 1.0]},
                          cv=2).fit(X, y)
    assert search.best_params_["l1_ratio"] in (0.0, 0.5, 1.0)
    assert len(search.cv_results_["mean_test_score"]) == 3
    assert search.best_estimator_.l1_ratio == search.best_params_["l1_ratio"]


def test_warm_start_continues_an_l1_fit(rng):
    X, y = make_sequences(rng)
    crf = CRF(alpha=0.05, l1_ratio=1.0, max_iter=1000, tol=1e-7, warm_start=True).fit(X, y)
    objective, zeros = crf.objective_curve_[-1], crf.coef_ == 0
    crf.fit(X, y)
    assert crf.n_iter_ <= 3
    assert crf.objective_curve_[-1] == pytest.approx(objective, rel=1e-6)
    np.testing.assert_array_equal(crf.coef_ == 0, zeros)


def test_sparsemap_classifier_with_l1_on_multiclass(rng):
    X = rng.normal(size=(200, 10))
    y = np.argmax(X[:, :3], axis=1)  # columns 3: are noise
    l2 = SparseMAPClassifier(alpha=0.01, max_iter=300).fit(X, y)
    l1 = SparseMAPClassifier(alpha=0.01, l1_ratio=1.0, max_iter=300).fit(X, y)
    assert l2.n_nonzero_ == np.count_nonzero(l2.coef_) + np.count_nonzero(l2.intercept_)
    assert l1.n_nonzero_ < l2.n_nonzero_
    informative, noise = np.abs(l1.coef_[:, :3]).sum(), np.abs(l1.coef_[:, 3:]).sum()
    assert informative > 3 * noise
    assert l1.score(X, y) > 0.85
