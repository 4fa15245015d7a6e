"""scikit-learn's own estimator checks, on tabular multiclass data, for every estimator
with every solver configuration it accepts (each solver registered for its training loss,
each rescaling a solver solves)."""

import warnings

from sklearn.utils.estimator_checks import parametrize_with_checks

from skstruct import (
    CRF,
    PerturbedMAPClassifier,
    SparseMAPClassifier,
    StructuredPerceptron,
    StructuredSVM,
)
from skstruct.optim import solver_names
from skstruct.optim._registry import get_solver

# Stochastic solvers visit examples in a random order, so a weight of 2 is not the same
# as a repeated example (scikit-learn's SGD estimators make the same exception).
_RANDOM_ORDER = "stochastic passes: weighting is not the same as repeating an example"
_SAMPLE_WEIGHT_CHECKS = ("check_sample_weight_equivalence_on_dense_data",
                         "check_sample_weight_equivalence_on_sparse_data")
# The randomized learner draws ceil(sqrt(m)) candidates per example, with m the number of
# examples: repeating an example changes m, and so the candidate sets.
_CANDIDATES = ("beta (and the paper's candidate sets) depend on the number of examples, "
               "which repeating changes")
# partial_fit takes the labels of the whole stream (classes) on its first call, as
# SGDClassifier's does; scikit-learn passes them to classifiers only, and these estimators
# are not tagged classifiers (tests/test_partial_fit.py runs the check with classes).
_PARTIAL_FIT_CLASSES = "partial_fit needs classes on its first call"
# The solvers whose passes visit the examples in a random order.
_STOCHASTIC = {"bcfw", "subgradient", "svrg", "casimir", "perceptron"}


def _ssvm_configurations():
    """StructuredSVM with every registered solver and every rescaling it solves."""
    return [StructuredSVM(solver=solver, rescaling=rescaling, max_iter=20, random_state=0)
            for solver in sorted(solver_names("hinge_margin", "hinge_slack"))
            for rescaling in ("margin", "slack")
            if f"hinge_{rescaling}" in get_solver(solver).losses]


ESTIMATORS = [
    *_ssvm_configurations(),
    StructuredPerceptron(random_state=0),
    # "svrg" serves the CRF loss only: SparseMAPClassifier(solver="svrg") raises at fit
    # (tests/test_sparsemap_classifier.py)
    *(SparseMAPClassifier(solver=solver, max_iter=50)
      for solver in sorted(solver_names("smooth") - {"svrg"})),
    PerturbedMAPClassifier(max_iter=10, random_state=0),
    *(CRF(solver=solver, random_state=0) for solver in sorted(solver_names("smooth"))),
]


def _expected_failed_checks(estimator):
    if isinstance(estimator, PerturbedMAPClassifier):
        return {**dict.fromkeys(_SAMPLE_WEIGHT_CHECKS, _CANDIDATES),
                "check_n_features_in_after_fitting": _PARTIAL_FIT_CLASSES}
    solver = getattr(estimator, "solver", "perceptron")
    expected = dict.fromkeys(_SAMPLE_WEIGHT_CHECKS, _RANDOM_ORDER) if (
        solver in _STOCHASTIC) else {}
    if hasattr(estimator, "partial_fit"):
        expected["check_n_features_in_after_fitting"] = _PARTIAL_FIT_CLASSES
    return expected


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=_expected_failed_checks)
def test_scikit_learn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)
