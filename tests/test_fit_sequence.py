"""Every estimator trains through the one fit sequence,
:meth:`~skstruct._linear_model.LinearStructuredModel._fit_sequence`."""

import ast
import inspect

import numpy as np
import pytest

import skstruct
from skstruct._linear_model import LinearStructuredModel

ESTIMATORS = [obj for obj in (getattr(skstruct, name) for name in skstruct.__all__)
              if inspect.isclass(obj) and issubclass(obj, LinearStructuredModel)]

CALLS = [(estimator, method) for estimator in ESTIMATORS
         for method in ("fit", "partial_fit") if hasattr(estimator(), method)]

X = [np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([[0.0, 1.0]])]
Y = [np.array(["N", "V"]), np.array(["V"])]


class SequenceReached(Exception):
    """Raised by the fit sequence in place of training."""


def test_the_estimators_and_their_partial_fit_are_found():
    assert {estimator.__name__ for estimator in ESTIMATORS} == {
        "CRF", "SparseMAPClassifier", "StructuredSVM", "StructuredPerceptron",
        "PerturbedMAPClassifier"}
    assert {(estimator.__name__, method) for estimator, method in CALLS
            if method == "partial_fit"} == {("StructuredSVM", "partial_fit"),
                                            ("StructuredPerceptron", "partial_fit"),
                                            ("PerturbedMAPClassifier", "partial_fit")}


@pytest.mark.parametrize("estimator, method", CALLS,
                         ids=[f"{e.__name__}.{m}" for e, m in CALLS])
def test_fit_and_partial_fit_run_the_fit_sequence(monkeypatch, estimator, method):
    reached = []

    def fit_sequence(self, X, y, sample_weight, classes=None, *, partial_fit=False,
                     loss=None):
        reached.append((type(self), X, y, sample_weight, classes, partial_fit))
        raise SequenceReached

    monkeypatch.setattr(LinearStructuredModel, "_fit_sequence", fit_sequence)
    model = estimator()
    kwargs = {"classes": ["N", "V"]} if method == "partial_fit" else {}
    with pytest.raises(SequenceReached):
        getattr(model, method)(X, Y, sample_weight=[1.0, 2.0], **kwargs)
    assert len(reached) == 1
    kind, X_seen, y_seen, weights, classes, partial_fit = reached[0]
    assert kind is estimator and X_seen is X and y_seen is Y
    assert weights == [1.0, 2.0]
    assert partial_fit == (method == "partial_fit")
    assert classes == kwargs.get("classes")
    assert not hasattr(model, "coef_")


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: e.__name__)
def test_no_estimator_module_builds_a_risk_or_runs_a_solver(estimator):
    """The sequence's own steps are not written out again beside it."""
    tree = ast.parse(inspect.getsource(inspect.getmodule(estimator)))
    called = {node.func.id if isinstance(node.func, ast.Name) else node.func.attr
              for node in ast.walk(tree) if isinstance(node, ast.Call)
              and isinstance(node.func, (ast.Name, ast.Attribute))}
    assert not called & {"RegularizedRisk", "run_solver", "_check_partial_fit_data",
                         "_finish_fit"}
