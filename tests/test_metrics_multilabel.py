"""Multilabel metrics and scorers: equal to scikit-learn's, dense or sparse, clear errors on
bad input, and usable as ``scoring=`` in model selection with a multilabel estimator."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn import metrics as skm
from sklearn.base import BaseEstimator
from sklearn.datasets import make_multilabel_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, KFold, cross_validate

from skstruct import StructuredSVM
from skstruct.metrics import (
    example_f1_score,
    get_scorer,
    hamming_loss,
    macro_f1_score,
    micro_f1_score,
    subset_accuracy,
)

MULTILABEL_SCORERS = ("example_f1", "neg_hamming_loss", "subset_accuracy", "micro_f1",
                      "macro_f1")


def random_pair(seed, n_samples=30, n_labels=5):
    """Indicator matrices with empty rows, an empty column and exact matches."""
    rng = np.random.default_rng(seed)
    y_true = (rng.random((n_samples, n_labels)) < 0.3).astype(int)
    y_pred = (rng.random((n_samples, n_labels)) < 0.3).astype(int)
    y_true[:4], y_pred[:3] = 0, 0  # empty-empty rows, and one empty-vs-predicted row
    y_pred[5:8] = y_true[5:8]  # exact matches
    y_true[:, -1], y_pred[:, -1] = 0, 0  # a label never true nor predicted
    weights = rng.integers(0, 4, size=n_samples).astype(float)
    weights[0] = 1.0
    return y_true, y_pred, weights


def sklearn_values(y_true, y_pred, sample_weight, zero_division):
    kw = {"sample_weight": sample_weight}
    f1 = {"zero_division": zero_division, **kw}
    return {
        example_f1_score: skm.f1_score(y_true, y_pred, average="samples", **f1),
        micro_f1_score: skm.f1_score(y_true, y_pred, average="micro", **f1),
        macro_f1_score: skm.f1_score(y_true, y_pred, average="macro", **f1),
        hamming_loss: skm.hamming_loss(y_true, y_pred, **kw),
        subset_accuracy: skm.accuracy_score(y_true, y_pred, **kw),
    }


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("zero_division", [0.0, 1.0])
def test_metrics_equal_sklearn_dense_and_sparse(seed, weighted, zero_division):
    y_true, y_pred, weights = random_pair(seed)
    weights = weights if weighted else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn's UndefinedMetricWarning
        expected = sklearn_values(y_true, y_pred, weights, zero_division)
    for metric, value in expected.items():
        kw = {} if metric in (hamming_loss, subset_accuracy) else {
            "zero_division": zero_division}
        for yt, yp in [(y_true, y_pred), (sp.csr_matrix(y_true), sp.csc_matrix(y_pred)),
                       (y_true.astype(bool), sp.csr_matrix(y_pred))]:
            got = metric(yt, yp, sample_weight=weights, **kw)
            assert isinstance(got, float)
            assert got == pytest.approx(value, abs=1e-12), metric.__name__


def test_example_f1_empty_true_and_predicted_sets_score_one_by_default():
    y_true = np.array([[0, 0, 0], [1, 0, 1]])
    y_pred = np.array([[0, 0, 0], [1, 0, 0]])
    assert example_f1_score(y_true, y_pred) == pytest.approx((1 + 2 / 3) / 2)
    assert example_f1_score(y_true, y_pred, zero_division=0.0) == pytest.approx(1 / 3)
    assert example_f1_score(np.zeros((2, 3)), np.zeros((2, 3))) == 1.0
    assert micro_f1_score(np.zeros((2, 3)), np.zeros((2, 3))) == 1.0
    # labels 1 (never occurs) score 1; label 2 (missed) scores 0
    assert macro_f1_score(y_true, y_pred) == pytest.approx(2 / 3)


def test_hamming_and_subset_accuracy_count_wrong_entries_and_exact_rows():
    y_true = np.array([[1, 1, 0, 0], [0, 1, 0, 1], [0, 0, 0, 0]])
    y_pred = np.array([[1, 1, 0, 0], [1, 1, 1, 1], [0, 1, 0, 0]])
    assert hamming_loss(y_true, y_pred) == pytest.approx(3 / 12)
    assert subset_accuracy(y_true, y_pred) == pytest.approx(1 / 3)
    assert subset_accuracy(y_true, y_pred, sample_weight=[2, 1, 1]) == pytest.approx(0.5)


@pytest.mark.parametrize("bad, message", [
    (np.array([[0, 2], [1, 0]]), r"only 0 and 1.*y_pred\[0, 1\] is 2"),
    (np.array([[0, -1], [1, 0]]), r"y_pred\[0, 1\] is -1"),
    (np.array([[0.0, 0.5], [1, 0]]), r"y_pred\[0, 1\] is 0.5"),
    (np.array([[0.0, np.nan], [1, 0]]), r"y_pred\[0, 1\] is nan"),
    (sp.csr_matrix(np.array([[0, 0], [3, 0]])), r"y_pred\[1, 0\] is 3"),
    (np.array([0, 1]), r"indicator matrix of shape \(n_samples, n_labels\).*shape \(2,\)"),
    ([[0, 1], [1]], "rows of different lengths"),
    (np.zeros((2, 3)), r"y_true has shape \(2, 2\) but y_pred has shape \(2, 3\)"),
    (np.zeros((0, 2)), "y_true has shape"),
])
def test_bad_indicator_matrices_raise_value_error_naming_the_problem(bad, message):
    empty = isinstance(bad, np.ndarray) and bad.shape == (0, 2)
    y_true = np.zeros((0, 2)) if empty else np.array([[0, 1], [1, 0]])
    for metric in (example_f1_score, hamming_loss, subset_accuracy, micro_f1_score,
                   macro_f1_score):
        with pytest.raises(ValueError, match=message):
            metric(y_true, bad)


@pytest.mark.parametrize("bad", [np.array([["a", "b"], ["c", "d"]]), "ab",
                                 np.array([[None, 1], [0, 1]], dtype=object)])
def test_non_numeric_indicator_matrices_raise_type_error(bad):
    with pytest.raises(TypeError, match="0/1 label indicator matrix"):
        example_f1_score(bad, np.array([[0, 1], [1, 0]]))


@pytest.mark.parametrize("weights, error, message", [
    ([1, 2, 3], ValueError, r"one per sample \(shape \(2,\)\); got shape \(3,\)"),
    ([1, -1], ValueError, "finite and non-negative; the weight of sample 1 is -1.0"),
    ([1, np.nan], ValueError, "finite and non-negative"),
    ([0, 0], ValueError, "not be all zero"),
    (["a", "b"], TypeError, "sample_weight must be numbers"),
])
def test_bad_sample_weight_is_refused(weights, error, message):
    y = np.array([[0, 1], [1, 0]])
    with pytest.raises(error, match=message):
        hamming_loss(y, y, sample_weight=weights)


@pytest.mark.parametrize("zero_division", [0.5, "warn", True, np.nan])
def test_zero_division_must_be_zero_or_one(zero_division):
    y = np.array([[0, 1], [1, 0]])
    with pytest.raises(ValueError, match="zero_division must be 0.0 or 1.0"):
        macro_f1_score(y, y, zero_division=zero_division)


def test_get_scorer_knows_the_multilabel_names_and_negates_hamming_loss():
    y_true = np.array([[1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0]])
    y_pred = np.array([[1, 0, 0, 0], [0, 1, 1, 0], [0, 0, 0, 0]])

    class Fixed(BaseEstimator):  # predicts y_pred whatever X is
        def predict(self, X):
            return y_pred

    expected = {"example_f1": example_f1_score(y_true, y_pred),
                "neg_hamming_loss": -hamming_loss(y_true, y_pred),
                "subset_accuracy": subset_accuracy(y_true, y_pred),
                "micro_f1": micro_f1_score(y_true, y_pred),
                "macro_f1": macro_f1_score(y_true, y_pred)}
    assert len(set(expected.values())) == len(expected)
    for name, value in expected.items():
        assert get_scorer(name)(Fixed(), None, y_true) == pytest.approx(value)
    with pytest.raises(ValueError, match="'neg_hamming_loss'"):
        get_scorer("hamming_loss")
    with pytest.raises(ValueError, match=", ".join(map(repr, MULTILABEL_SCORERS))):
        get_scorer("no_such_scorer")


@pytest.fixture(scope="module")
def multilabel_data():
    X, y = make_multilabel_classification(n_samples=60, n_features=6, n_classes=4,
                                          random_state=0)
    return X, y


def ssvm(alpha=0.01):
    return StructuredSVM(alpha=alpha, max_iter=3, random_state=0)


def test_scorers_in_cross_validate_with_a_multilabel_ssvm(multilabel_data):
    X, y = multilabel_data
    scoring = {name: get_scorer(name) for name in MULTILABEL_SCORERS}
    cv = KFold(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        out = cross_validate(ssvm(), X, y, cv=cv, scoring=scoring, return_estimator=True,
                             error_score="raise")
    for k, (_, test) in enumerate(cv.split(X)):
        y_pred = out["estimator"][k].predict(X[test])
        assert out["test_example_f1"][k] == pytest.approx(example_f1_score(y[test], y_pred))
        assert out["test_neg_hamming_loss"][k] == pytest.approx(
            -hamming_loss(y[test], y_pred))
        assert out["test_macro_f1"][k] == pytest.approx(macro_f1_score(y[test], y_pred))


def test_scorers_in_grid_search_single_and_multiple(multilabel_data):
    X, y = multilabel_data
    grid = {"alpha": [10.0, 0.01]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        single = GridSearchCV(ssvm(), grid, cv=2, scoring=get_scorer("example_f1"),
                              error_score="raise").fit(X, y)
        several = GridSearchCV(
            ssvm(), grid, cv=2, refit="micro_f1", error_score="raise",
            scoring={name: get_scorer(name) for name in ("micro_f1", "neg_hamming_loss")},
        ).fit(X, y)
    means = single.cv_results_["mean_test_score"]
    assert means[0] != means[1]
    assert single.best_params_["alpha"] == grid["alpha"][int(np.argmax(means))]
    assert np.all(several.cv_results_["mean_test_neg_hamming_loss"] <= 0)
    micro = several.cv_results_["mean_test_micro_f1"]
    assert several.best_params_["alpha"] == grid["alpha"][int(np.argmax(micro))]
    assert several.predict(X).shape == y.shape
