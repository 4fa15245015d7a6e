"""decision_function on two classes: scikit-learn's binary convention, one score per
sample (that of classes_[1] minus that of classes_[0]), for every estimator; three
classes or more, and multilabel Y, keep one column per class or label."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.utils.estimator_checks import check_classifiers_train

from skstruct import (
    CRF,
    PerturbedMAPClassifier,
    SparseMAPClassifier,
    StructuredPerceptron,
    StructuredSVM,
)

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

ESTIMATORS = [
    CRF(alpha=1e-2, max_iter=30),
    StructuredSVM(max_iter=10, random_state=0),
    StructuredPerceptron(max_iter=3, random_state=0),
    SparseMAPClassifier(alpha=1e-2, max_iter=30),
    PerturbedMAPClassifier(max_iter=5, random_state=0),
]
IDS = [type(e).__name__ for e in ESTIMATORS]


@pytest.fixture
def binary():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    y = (X[:, 0] - 0.5 * X[:, 1] + 0.5 * rng.normal(size=60) > 0).astype(int)
    return X, y


def _class_scores(model, X):
    return X @ model.coef_.T + model.intercept_


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_binary_decision_function_is_one_score_per_sample(estimator, binary):
    X, y = binary
    model = clone(estimator).fit(X, y)
    decision = model.decision_function(X)
    assert decision.shape == (len(X),)
    # the score of classes_[1] minus the score of classes_[0]
    scores = _class_scores(model, X)
    assert scores.shape == (len(X), 2)
    np.testing.assert_allclose(decision, scores[:, 1] - scores[:, 0], rtol=1e-12,
                               atol=1e-12)
    # positive where classes_[1] is predicted (ties aside)
    predicted = model.predict(X)
    decided = decision != 0
    assert decided.sum() > len(X) // 2
    np.testing.assert_array_equal(
        predicted[decided], model.classes_[(decision[decided] > 0).astype(int)])
    # coefficients keep one row per class
    assert model.coef_.shape == (2, 4) and model.intercept_.shape == (2,)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_binary_decision_function_with_string_labels(estimator, binary):
    X, y = binary
    labels = np.array(["no", "yes"])[y]
    model = clone(estimator).fit(X, labels)
    assert model.classes_.tolist() == ["no", "yes"]
    decision = model.decision_function(X)
    assert decision.shape == (len(X),)
    scores = _class_scores(model, X)
    np.testing.assert_allclose(decision, scores[:, 1] - scores[:, 0], rtol=1e-12,
                               atol=1e-12)
    decided = decision != 0
    np.testing.assert_array_equal(model.predict(X)[decided],
                                  np.where(decision[decided] > 0, "yes", "no"))


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_three_classes_keep_one_column_per_class(estimator, binary):
    X, _ = binary
    y = np.digitize(X[:, 0], [-0.4, 0.4])
    model = clone(estimator).fit(X, y)
    decision = model.decision_function(X)
    assert decision.shape == (len(X), 3)
    np.testing.assert_allclose(decision, _class_scores(model, X), rtol=1e-12, atol=1e-12)


def test_two_labels_of_multilabel_keep_one_column_per_label(binary):
    X, y = binary
    Y = np.stack([y, (X[:, 2] > 0).astype(int)], axis=1)
    model = StructuredSVM(max_iter=10, random_state=0).fit(X, Y)
    decision = model.decision_function(X)
    assert decision.shape == (len(X), 2)
    np.testing.assert_allclose(decision, _class_scores(model, X), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("estimator", [ESTIMATORS[0], ESTIMATORS[3]], ids=IDS[0:4:3])
def test_binary_probabilities_and_marginals_keep_two_columns(estimator, binary):
    X, y = binary
    model = clone(estimator).fit(X, y)
    assert model.predict_marginals(X).shape == (len(X), 2)
    if hasattr(model, "predict_proba"):
        proba = model.predict_proba(X)
        assert proba.shape == (len(X), 2)
        # the logistic of the decision function: p(classes_[1] | x)
        np.testing.assert_allclose(proba[:, 1], 1 / (1 + np.exp(-model.decision_function(X))),
                                   rtol=1e-10)


@pytest.mark.parametrize("estimator", [ESTIMATORS[0], ESTIMATORS[1]], ids=IDS[:2])
def test_roc_auc_cross_validation_is_finite_and_matches_a_manual_loop(estimator, binary):
    X, y = binary
    labels = np.array(["no", "yes"])[y]
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    scores = cross_val_score(estimator, X, labels, scoring="roc_auc", cv=cv)
    assert np.all(np.isfinite(scores))
    manual = []
    for train, test in cv.split(X, labels):
        model = clone(estimator).fit(X[train], labels[train])
        manual.append(roc_auc_score(labels[test] == "yes", model.decision_function(X[test])))
    np.testing.assert_allclose(scores, manual, rtol=1e-12)
    assert np.all(scores > 0.7)


@pytest.mark.parametrize("estimator", [ESTIMATORS[1], ESTIMATORS[2]], ids=IDS[1:3])
def test_calibrated_classifier_fits_on_two_classes(estimator, binary):
    X, y = binary
    calibrated = CalibratedClassifierCV(estimator, cv=3).fit(X, y)
    proba = calibrated.predict_proba(X)
    assert proba.shape == (len(X), 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    assert np.mean(calibrated.predict(X) == y) > 0.7


@pytest.mark.parametrize("estimator", [CRF(), StructuredSVM(random_state=0),
                                       StructuredPerceptron(random_state=0)],
                         ids=["CRF", "StructuredSVM", "StructuredPerceptron"])
def test_passes_check_classifiers_train(estimator):
    check_classifiers_train(type(estimator).__name__, estimator)


def test_every_estimator_has_classifier_tags_and_no_classifier_type():
    for estimator in ESTIMATORS:
        tags = estimator.__sklearn_tags__()
        assert tags.classifier_tags.multi_class and tags.classifier_tags.multi_label
        assert tags.estimator_type is None


def test_the_multiclass_kind_owns_the_binary_rule():
    from skstruct.outputs import MulticlassKind, MultilabelKind

    two = np.array([[1.0, 3.0], [2.0, -1.0]])
    np.testing.assert_array_equal(MulticlassKind().unary_to_decision(two, None), [2.0, -3.0])
    three = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(MulticlassKind().unary_to_decision(three, None), three)
    # marginals keep their columns; multilabel keeps one column per label
    np.testing.assert_array_equal(MulticlassKind().unary_to_user(two, None), two)
    np.testing.assert_array_equal(MultilabelKind().unary_to_decision(two, None), two)
