"""The contract every sequence estimator keeps with scikit-learn."""

import numbers
import pickle

import joblib
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import (
    check_get_params_invariance,
    check_no_attributes_set_in_init,
    check_parameters_default_constructible,
    check_set_params,
)

from skstruct import CRF, SparseMAPClassifier, StructuredPerceptron, StructuredSVM
from skstruct.datasets import load_conll2000
from skstruct.metrics import span_f1_scorer, token_accuracy_scorer
from skstruct.preprocessing import SequenceVectorizer, sentences_to_features

# Short fits on purpose: the contract, not the optimum, is under test.
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

ESTIMATORS = [
    CRF(alpha=1e-3, max_iter=30),
    StructuredSVM(alpha=1e-2, max_iter=5, random_state=0),
    StructuredSVM(solver="subgradient", max_iter=5, random_state=0),
    StructuredPerceptron(max_iter=5, random_state=0),
    SparseMAPClassifier(alpha=1e-3, max_iter=20),
]


def _ids(estimator):
    return type(estimator).__name__


@pytest.fixture(scope="module")
def chunking():
    data = load_conll2000("test")
    n = 120
    X = sentences_to_features(data.words[:n], data.pos[:n])
    return X, list(data.target[:n])


@pytest.fixture(scope="module")
def vectorized(chunking):
    X, y = chunking
    return SequenceVectorizer().fit_transform(X), y


def assert_same_predictions(actual, expected):
    """Same number of sequences, and every one the same array (values, dtype, shape)."""
    assert len(actual) == len(expected)
    for p, q in zip(actual, expected, strict=True):
        assert p.dtype == q.dtype
        np.testing.assert_array_equal(p, q, strict=True)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_ids)
def test_sklearn_parameter_conventions(estimator):
    name = type(estimator).__name__
    check_parameters_default_constructible(name, clone(estimator))
    check_no_attributes_set_in_init(name, clone(estimator))
    check_get_params_invariance(name, clone(estimator))
    check_set_params(name, clone(estimator))


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_ids)
def test_clone_is_unfitted_with_the_same_parameters(estimator, vectorized):
    X, y = vectorized
    fitted = clone(estimator).fit(X, y)
    copy = clone(fitted)
    assert copy.get_params() == fitted.get_params()
    assert not any(k.endswith("_") and not k.startswith("_") for k in vars(copy))


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_ids)
def test_pickle_and_joblib_round_trip(estimator, vectorized, tmp_path):
    X, y = vectorized
    fitted = clone(estimator).fit(X, y)
    expected = fitted.predict(X)
    assert [len(p) for p in expected] == [len(t) for t in y]
    assert_same_predictions(pickle.loads(pickle.dumps(fitted)).predict(X), expected)
    joblib.dump(fitted, tmp_path / "model.joblib")
    assert_same_predictions(joblib.load(tmp_path / "model.joblib").predict(X), expected)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_ids)
def test_fitting_twice_gives_the_same_model(estimator, vectorized):
    X, y = vectorized
    first = clone(estimator).fit(X, y)
    second = clone(estimator).fit(X, y)
    refit = first.fit(X, y)
    fitted = {k: v for k, v in vars(second).items() if k.endswith("_") and k[0] != "_"}
    refitted = {k: v for k, v in vars(refit).items() if k.endswith("_") and k[0] != "_"}
    assert sorted(fitted) == sorted(refitted)
    assert {"coef_", "classes_", "n_iter_", "objective_curve_"} <= set(fitted)
    for name, value in fitted.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(value, refitted[name], err_msg=name, strict=True)
        elif isinstance(value, (numbers.Number, str)):
            assert value == refitted[name], name
        else:
            assert type(value) is type(refitted[name]), name
    assert_same_predictions(refit.predict(X), second.predict(X))


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_ids)
def test_grid_search_in_a_pipeline(estimator, chunking):
    X, y = chunking
    pipeline = make_pipeline(SequenceVectorizer(), clone(estimator))
    step = pipeline.steps[-1][0]
    name, values = ("alpha", [1e-3, 1e-1]) if "alpha" in estimator.get_params() else (
        "max_iter", [2, 5])
    search = GridSearchCV(pipeline, {f"{step}__{name}": values}, cv=KFold(2),
                          scoring=span_f1_scorer)
    search.fit(X, y)
    assert set(search.cv_results_[f"param_{step}__{name}"]) == set(values)
    assert 0.3 < search.best_score_ <= 1.0
    assert len(search.predict(X[:3])) == 3


def _own_score(estimator, X, y):
    return estimator.score(X, y)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_ids)
def test_cross_validate_with_scorers_and_joblib(estimator, chunking):
    X, y = chunking
    pipeline = make_pipeline(SequenceVectorizer(), clone(estimator))
    scoring = {"f1": span_f1_scorer, "accuracy": token_accuracy_scorer, "own": _own_score}
    parallel = cross_validate(pipeline, X, y, cv=3, n_jobs=2, scoring=scoring)
    serial = cross_validate(pipeline, X, y, cv=3, n_jobs=1, scoring=scoring)
    # Worker processes fit and score exactly what the parent process does.
    for key in ("test_f1", "test_accuracy", "test_own"):
        assert parallel[key].shape == (3,)
        np.testing.assert_array_equal(parallel[key], serial[key], err_msg=key)
    assert np.all(serial["test_accuracy"] > 0.6)
    # The estimator's own score is token accuracy.
    np.testing.assert_array_equal(serial["test_own"], serial["test_accuracy"])
