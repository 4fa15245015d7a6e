"""BCFW computes the exact duality gap every ``check_gap_every`` passes (and at the end,
and where the running estimate of the gap is below ``tol``): the schedule must change no
bit of the model, the exact gaps it computes must be those of the gap after every pass,
and a stop on ``tol`` must rest on an exact gap."""

import warnings

import numpy as np
import pytest

import skstruct.optim._solvers as solvers_module
from skstruct import StructuredSVM


def _sequences(rng, n=40):
    X, y = [], []
    for length in rng.integers(2, 9, size=n):
        X.append(rng.normal(size=(length, 6)))
        y.append(np.where(X[-1][:, 0] + 0.5 * X[-1][:, 1] > 0.2, "B",
                          np.where(X[-1][:, 2] > 0, "I", "O")))
    return X, y


def _fit(X, y, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return StructuredSVM(alpha=0.05, random_state=0, **params).fit(X, y)


@pytest.mark.parametrize("every", [2, 10])
def test_the_gap_schedule_changes_no_bit_of_the_model(rng, every):
    X, y = _sequences(rng)
    dense = _fit(X, y, max_iter=23, tol=0.0, check_gap_every=1)
    sparse = _fit(X, y, max_iter=23, tol=0.0, check_gap_every=every)
    for name in ("coef_", "transition_", "start_transition_", "end_transition_", "t_"):
        np.testing.assert_array_equal(getattr(sparse, name), getattr(dense, name))
    assert sparse.n_iter_ == dense.n_iter_ == 23
    evaluated = [k for k in range(1, 24) if k % every == 0 or k == 23]
    curve, gaps = np.asarray(sparse.objective_curve_), np.asarray(sparse.duality_gaps_)
    assert curve.shape == gaps.shape == (23,)
    assert np.flatnonzero(np.isfinite(curve)).tolist() == [k - 1 for k in evaluated]
    assert np.flatnonzero(np.isfinite(gaps)).tolist() == [k - 1 for k in evaluated]
    # the exact values are those computed after every pass, bit for bit
    at = np.array(evaluated) - 1
    np.testing.assert_array_equal(curve[at], np.asarray(dense.objective_curve_)[at])
    np.testing.assert_array_equal(gaps[at], np.asarray(dense.duality_gaps_)[at])


def test_a_stop_on_tol_rests_on_an_exact_gap_at_the_same_pass(rng):
    X, y = _sequences(rng)
    tol = 2e-3
    dense = _fit(X, y, max_iter=400, tol=tol, check_gap_every=1)
    sparse = _fit(X, y, max_iter=400, tol=tol, check_gap_every=50)
    assert dense.n_iter_ < 400, "the reference fit did not stop on tol"
    stop = dense.n_iter_
    # the running estimate (below the exact gap of the average late in a run) asks for
    # the exact gap before it falls below tol, so the stop is at the same pass even
    # though no multiple of 50 is near it
    assert stop % 50 != 0
    assert sparse.n_iter_ == stop
    assert sparse.duality_gaps_[-1] == dense.duality_gaps_[-1] <= tol
    np.testing.assert_array_equal(sparse.coef_, dense.coef_)
    # and the fit does not stop on an estimate: every stop has its exact gap below tol
    finite = np.isfinite(sparse.duality_gaps_)
    assert (np.asarray(sparse.duality_gaps_)[finite][:-1] > tol).all()


def test_the_running_estimate_is_the_sum_of_the_block_gaps(rng, monkeypatch):
    """With one example and no averaging, the block gap of a step is the exact gap of
    the iterate it starts from: the estimate of pass k + 1 is the gap after pass k."""
    results = []
    run = solvers_module.minimize_bcfw

    def recording(*args, **kwargs):
        results.append(run(*args, **kwargs))
        return results[-1]

    monkeypatch.setattr(solvers_module, "minimize_bcfw", recording)
    X, y = _sequences(rng, n=1)
    for force_python in (False, True):
        if force_python:
            monkeypatch.setattr(solvers_module, "minimize_bcfw",
                                lambda *a, **k: recording(*a, _force_python=True, **k))
        _fit(X, y, max_iter=8, tol=0.0, averaging=False, check_gap_every=1)
    compiled, python = results
    for result in results:
        estimates, gaps = np.asarray(result.extra["gap_estimates"]), result.duality_gaps
        assert estimates.shape == (8,)
        np.testing.assert_allclose(estimates[1:], gaps[:-1], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(compiled.extra["gap_estimates"],
                               python.extra["gap_estimates"], rtol=1e-9, atol=1e-12)


def test_check_gap_every_is_validated(rng):
    X, y = _sequences(rng, n=5)
    with pytest.raises(ValueError, match="check_gap_every"):
        StructuredSVM(check_gap_every=0).fit(X, y)
