"""scikit-learn's own estimator checks, on tabular multiclass data."""

import warnings

from sklearn.utils.estimator_checks import parametrize_with_checks

from skstruct import (
    CRF,
    PerturbedMAPClassifier,
    SparseMAPClassifier,
    StructuredPerceptron,
    StructuredSVM,
)

# Stochastic solvers visit examples in a random order, so a weight of 2 is not the same
# as a repeated example (scikit-learn's SGD estimators make the same exception).
_RANDOM_ORDER = "stochastic passes: weighting is not the same as repeating an example"
# The randomized learner draws ceil(sqrt(m)) candidates per example, with m the number of
# examples: repeating an example changes m, and so the candidate sets.
_CANDIDATES = "candidate sets depend on the number of examples, which repeating changes"
# partial_fit takes the labels of the whole stream (classes) on its first call, as
# SGDClassifier's does; scikit-learn passes them to classifiers only, and these estimators
# are not tagged classifiers (tests/test_partial_fit.py runs the check with classes).
_PARTIAL_FIT_CLASSES = "partial_fit needs classes on its first call"
EXPECTED_FAILURES = {
    "check_sample_weight_equivalence_on_dense_data": _RANDOM_ORDER,
    "check_sample_weight_equivalence_on_sparse_data": _RANDOM_ORDER,
}


@parametrize_with_checks(
    [
        StructuredSVM(max_iter=20, random_state=0),
        StructuredPerceptron(random_state=0),
        SparseMAPClassifier(max_iter=50),
        PerturbedMAPClassifier(max_iter=10, random_state=0),
        CRF(),
    ],
    expected_failed_checks=lambda estimator: (
        {} if isinstance(estimator, (SparseMAPClassifier, CRF)) else
        dict.fromkeys(EXPECTED_FAILURES, _CANDIDATES) if isinstance(
            estimator, PerturbedMAPClassifier) else
        {**EXPECTED_FAILURES, "check_n_features_in_after_fitting": _PARTIAL_FIT_CLASSES}
    ),
)
def test_scikit_learn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)
