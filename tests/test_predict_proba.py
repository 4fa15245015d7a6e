"""CRF's probabilities on tabular data (predict_proba, predict_log_proba), and where they
are not offered (sequences, trees; the estimators that model no probabilities)."""

import warnings

import numpy as np
import pytest
from scipy.special import expit
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import KFold, cross_val_score

from skstruct import CRF, SparseMAPClassifier, StructuredSVM
from skstruct.decoders import SubsetDecoder


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    order = np.random.default_rng(0).permutation(len(y))
    return X[order], y[order]


@pytest.fixture(scope="module")
def multilabel(iris):
    X, y = iris
    rng = np.random.default_rng(1)
    # three labels a linear model can partly learn, one of them noisy
    Y = np.stack([y == 0, X[:, 0] + 0.5 * rng.normal(size=len(y)) > 0, y == 2], axis=1)
    return X, Y.astype(int)


def _with_ones(X):
    return np.hstack([X, np.ones((X.shape[0], 1))])


def _fit(estimator, X, y, **fit_params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ConvergenceWarning of short fits
        return estimator.fit(X, y, **fit_params)


@pytest.mark.parametrize("alpha", [1e-3, 1e-1])
def test_multiclass_crf_is_multinomial_logistic_regression(iris, alpha):
    # alpha = 1 / (C n); the CRF's penalized intercept is LogisticRegression's weight of
    # a column of ones with fit_intercept=False
    X, y = iris
    n = len(y)
    crf = CRF(alpha=alpha, tol=1e-10, max_iter=1000).fit(X, y)
    lr = LogisticRegression(C=1 / (alpha * n), fit_intercept=False, tol=1e-12,
                            max_iter=10_000).fit(_with_ones(X), y)
    np.testing.assert_allclose(crf.coef_, lr.coef_[:, :-1], atol=1e-4)
    np.testing.assert_allclose(crf.intercept_, lr.coef_[:, -1], atol=1e-4)
    np.testing.assert_allclose(crf.predict_proba(X), lr.predict_proba(_with_ones(X)),
                               atol=1e-4)
    np.testing.assert_allclose(crf.predict_log_proba(X),
                               lr.predict_log_proba(_with_ones(X)), atol=1e-4)


def test_sample_weights_map_to_c_over_their_sum(iris):
    X, y = iris
    weights = np.random.default_rng(2).uniform(0.5, 3.0, size=len(y))
    alpha = 1e-2
    crf = CRF(alpha=alpha, tol=1e-10, max_iter=1000).fit(X, y, sample_weight=weights)
    lr = LogisticRegression(C=1 / (alpha * weights.sum()), fit_intercept=False, tol=1e-12,
                            max_iter=10_000).fit(_with_ones(X), y, sample_weight=weights)
    np.testing.assert_allclose(crf.predict_proba(X), lr.predict_proba(_with_ones(X)),
                               atol=1e-4)


def test_two_classes_are_binary_logistic_regression_with_twice_c(iris):
    X, y = iris
    y = (y == 1).astype(int)
    alpha, n = 1e-2, len(y)
    crf = CRF(alpha=alpha, tol=1e-10, max_iter=1000).fit(X, y)
    lr = LogisticRegression(C=2 / (alpha * n), fit_intercept=False, tol=1e-12,
                            max_iter=10_000).fit(_with_ones(X), y)
    v = crf.coef_[1] - crf.coef_[0]
    np.testing.assert_allclose(v, lr.coef_[0, :-1], atol=1e-4)
    np.testing.assert_allclose(crf.predict_proba(X), lr.predict_proba(_with_ones(X)),
                               atol=1e-4)


def test_multilabel_crf_is_one_logistic_regression_per_label(multilabel):
    X, Y = multilabel
    alpha, n = 1e-2, len(Y)
    crf = CRF(alpha=alpha, tol=1e-10, max_iter=1000).fit(X, Y)
    proba = crf.predict_proba(X)
    assert proba.shape == Y.shape
    for j in range(Y.shape[1]):
        lr = LogisticRegression(C=1 / (alpha * n), fit_intercept=False, tol=1e-12,
                                max_iter=10_000).fit(_with_ones(X), Y[:, j])
        np.testing.assert_allclose(proba[:, j], lr.predict_proba(_with_ones(X))[:, 1],
                                   atol=1e-4)


def test_multiclass_rows_sum_to_one_in_classes_order(iris):
    X, y = iris
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    crf = _fit(CRF(alpha=1e-2, max_iter=30), X, labels)
    proba = crf.predict_proba(X)
    assert proba.shape == (len(y), 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    assert np.all(proba >= 0)
    # column k is the probability of classes_[k]: the softmax of decision_function
    scores = crf.decision_function(X)
    expected = np.exp(scores - scores.max(axis=1, keepdims=True))
    np.testing.assert_allclose(proba, expected / expected.sum(axis=1, keepdims=True),
                               rtol=1e-12)
    np.testing.assert_allclose(np.exp(crf.predict_log_proba(X)), proba, rtol=1e-12)
    np.testing.assert_array_equal(crf.predict_marginals(X), proba)


def test_argmax_of_predict_proba_is_predict(iris):
    X, y = iris
    labels = np.array(["c", "a", "b"])[y]  # classes_ sorted: ['a', 'b', 'c']
    crf = _fit(CRF(alpha=1e-3, max_iter=30), X, labels)
    np.testing.assert_array_equal(crf.classes_[crf.predict_proba(X).argmax(axis=1)],
                                  crf.predict(X))


def test_multilabel_probabilities_are_sigmoids_of_decision_values(multilabel):
    X, Y = multilabel
    crf = _fit(CRF(alpha=1e-2, max_iter=30), X, Y)
    scores = crf.decision_function(X)
    np.testing.assert_allclose(crf.predict_proba(X), expit(scores), rtol=1e-12)
    np.testing.assert_allclose(crf.predict_log_proba(X), -np.logaddexp(0.0, -scores),
                               rtol=1e-12)
    # predict turns on the labels of probability > 1/2
    np.testing.assert_array_equal(crf.predict(X), (crf.predict_proba(X) > 0.5).astype(int))


def test_log_proba_does_not_underflow(iris):
    X, y = iris
    crf = _fit(CRF(alpha=1e-2, max_iter=30), X, y)
    far = 1e3 * X[:5]  # probabilities below 1e-308 for most classes
    log_proba = crf.predict_log_proba(far)
    assert np.all(np.isfinite(log_proba))
    np.testing.assert_allclose(np.logaddexp.reduce(log_proba, axis=1), 0.0, atol=1e-12)
    Y = np.stack([y == 0, y == 2], axis=1).astype(int)
    multi = _fit(CRF(alpha=1e-2, max_iter=30), X, Y)
    assert np.all(np.isfinite(multi.predict_log_proba(far)))


def test_dependent_labels_give_their_marginals(multilabel):
    # a SubsetDecoder(k=1) CRF: exactly one label on, so p(y_j = 1) is a softmax over labels
    X, _ = multilabel
    Y = np.eye(3, dtype=int)[np.arange(len(X)) % 3]
    crf = _fit(CRF(alpha=1e-2, max_iter=20, decoder=SubsetDecoder(k=1)), X, Y)
    proba = crf.predict_proba(X)
    scores = crf.decision_function(X)
    softmax = np.exp(scores - scores.max(axis=1, keepdims=True))
    np.testing.assert_allclose(proba, softmax / softmax.sum(axis=1, keepdims=True),
                               rtol=1e-10)
    np.testing.assert_allclose(np.exp(crf.predict_log_proba(X)), proba, rtol=1e-10)


def test_cross_val_score_with_neg_log_loss(iris):
    X, y = iris
    crf = CRF(alpha=1e-2, max_iter=50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scores = cross_val_score(crf, X, y, cv=KFold(3), scoring="neg_log_loss")
    assert scores.shape == (3,)
    assert np.all(np.isfinite(scores)) and np.all(scores < 0)
    assert scores.mean() > -0.3  # iris is easy: log loss of a good model
    # the same numbers as the log loss of the folds' predict_proba
    train, test = next(KFold(3).split(X))
    fitted = _fit(clone(crf), X[train], y[train])
    proba = fitted.predict_proba(X[test])
    expected = -np.mean(np.log(proba[np.arange(len(test)), y[test]]))
    np.testing.assert_allclose(scores[0], -expected, rtol=1e-10)


def _sequences():
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(n, 3)) for n in (4, 2, 5)]
    y = [np.array(["B", "I", "O"])[rng.integers(0, 3, size=n)] for n in (4, 2, 5)]
    return X, y


@pytest.mark.parametrize("method", ["predict_proba", "predict_log_proba"])
def test_sequences_have_no_predict_proba_and_say_to_use_predict_marginals(method):
    X, y = _sequences()
    crf = _fit(CRF(alpha=1e-2, max_iter=5), X, y)
    assert not hasattr(crf, method)
    with pytest.raises(AttributeError, match=rf"no attribute '{method}'.*sequence outputs"
                       r".*predict_marginals\(X\)"):
        getattr(crf, method)(X)
    # the per-token probabilities
    marginals = crf.predict_marginals(X)
    assert [m.shape for m in marginals] == [(4, 3), (2, 3), (5, 3)]
    # refitting on tabular data brings the method back
    tabular = np.vstack(X)
    _fit(crf, tabular, np.concatenate(y))
    assert getattr(crf, method)(tabular).shape == (11, 3)


def test_trees_have_no_predict_proba_and_give_arc_marginals():
    from skstruct.decoders import TreeDecoder

    rng = np.random.default_rng(0)
    sizes = (3, 4, 2)
    X = [rng.normal(size=(n * n, 4)) for n in sizes]
    y = [np.array([0, 1, 1]), np.array([2, 0, 2, 3]), np.array([0, 1])]  # CoNLL heads
    parser = _fit(CRF(decoder=TreeDecoder(), alpha=1e-2, max_iter=5), X, y)
    assert not hasattr(parser, "predict_proba")
    with pytest.raises(AttributeError, match=r"tree outputs.*predict_marginals\(X\)"):
        parser.predict_proba(X)
    blocks = parser.predict_marginals(X)
    assert [b.shape for b in blocks] == [(n, n) for n in sizes]
    for block in blocks:  # every token has one head (or is the root)
        np.testing.assert_allclose(block.sum(axis=1), 1.0)


def test_unfitted_crf_has_predict_proba_that_raises_not_fitted():
    crf = CRF()
    assert hasattr(crf, "predict_proba") and hasattr(crf, "predict_log_proba")
    with pytest.raises(NotFittedError):
        crf.predict_proba(np.zeros((2, 3)))


def test_bad_input_to_predict_proba_is_rejected(iris):
    X, y = iris
    crf = _fit(CRF(alpha=1e-2, max_iter=10), X, y)
    with pytest.raises(ValueError, match="X has 3 features, but CRF is expecting 4"):
        crf.predict_proba(X[:, :3])
    with pytest.raises(ValueError, match="per-sequence matrices"):
        crf.predict_proba([X[:3], X[3:5]])
    bad = X[:2].copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        crf.predict_log_proba(bad)


@pytest.mark.parametrize("estimator", [StructuredSVM(), SparseMAPClassifier()])
def test_estimators_without_a_probability_model_have_no_predict_proba(estimator):
    # margins and sparse distributions are not probabilities: no method, fitted or not
    # (the method is defined on no class in their hierarchy)
    assert not hasattr(estimator, "predict_proba")
    assert not hasattr(estimator, "predict_log_proba")


def test_user_guide_page_examples_run():
    import doctest
    from pathlib import Path

    page = Path(__file__).resolve().parent.parent / "doc" / "user_guide" / "probabilities.rst"
    if not page.exists():
        pytest.skip("the documentation sources are not next to the tests")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = doctest.testfile(str(page), module_relative=False,
                                  optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0
