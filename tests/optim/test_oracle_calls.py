"""StructuredSVM.oracle_calls_: cumulative oracle calls after each pass, every solver."""

import warnings

import numpy as np
import pytest

from skstruct import StructuredSVM
from skstruct.optim import solver_names

#: Oracle calls per entry of objective_curve_, in units of n.
PER_ITERATION = {"bcfw": 1, "subgradient": 1, "cutting_plane": 1, "svrg": 2, "casimir": 2}


def test_every_solver_is_listed():
    assert set(PER_ITERATION) == solver_names("hinge_margin", "hinge_slack")


@pytest.mark.parametrize("solver", sorted(PER_ITERATION))
@pytest.mark.parametrize("kind", ["sequences", "tabular"])
def test_oracle_calls_count_the_passes(sequences, tabular, solver, kind):
    if kind == "sequences":
        X, y, weights = sequences
    else:
        X, y, _, weights = tabular
    n = len(y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        svm = StructuredSVM(alpha=0.1, solver=solver, max_iter=5, tol=0,
                            random_state=0).fit(X, y, sample_weight=weights)
    assert svm.n_iter_ >= 1
    assert svm.oracle_calls_.shape == svm.objective_curve_.shape == (svm.n_iter_,)
    expected = PER_ITERATION[solver] * n * np.arange(1, svm.n_iter_ + 1)
    np.testing.assert_array_equal(svm.oracle_calls_, expected)


def test_oracle_calls_of_an_early_stop(sequences):
    X, y, _ = sequences
    svm = StructuredSVM(alpha=0.1, solver="svrg", max_iter=50, tol=0, random_state=0,
                        callback=lambda k, w, value: k >= 3).fit(X, y)
    assert svm.n_iter_ == 3
    np.testing.assert_array_equal(svm.oracle_calls_, 2 * len(y) * np.arange(1, 4))
