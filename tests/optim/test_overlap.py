"""BCFW and the subgradient solver evaluate a pass (duality gap, objective) in a second
thread while the next pass runs; the fit must be the one the sequential order gives."""

import threading
import warnings

import numba
import numpy as np
import pytest
import scipy.sparse as sp

import skstruct.optim._overlap as overlap_module
from skstruct import StructuredSVM
from skstruct.optim._engine import CompiledProblem

needs_two_threads = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2,
                                       reason="numba started one thread")


@pytest.fixture(scope="module")
def sequences():
    rng = np.random.default_rng(4)
    X, y = [], []
    for length in rng.integers(1, 9, size=40):
        dense = rng.normal(size=(length, 8))
        X.append(sp.csr_matrix(np.where(dense > 0.3, dense, 0.0)))
        y.append(rng.choice(["O", "B", "I"], size=length))
    return X, y


def _fit(monkeypatch, sequences, overlap, solver="bcfw", **params):
    """A fit with the evaluations overlapped (threshold 0) or in turn; the model and the
    names of the threads that ran the evaluations."""
    X, y = sequences
    threads = []
    primal = CompiledProblem.hinge_primal

    def recording(self, *args):
        threads.append(threading.current_thread().name)
        return primal(self, *args)

    with monkeypatch.context() as patch:
        patch.setattr(overlap_module, "OVERLAP_MIN_ENTRIES", 0 if overlap else 10**18)
        patch.setattr(CompiledProblem, "hinge_primal", recording)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = StructuredSVM(solver=solver, alpha=0.3, random_state=0, n_jobs=2,
                                  **params).fit(X, y)
    return model, threads


@needs_two_threads
@pytest.mark.parametrize("solver,params", [
    ("bcfw", dict(max_iter=6, tol=0.0, check_gap_every=1)),  # every pass, no stop
    ("bcfw", dict(max_iter=50, tol=0.1, check_gap_every=1)),  # stops on the gap (~pass 10)
    ("bcfw", dict(max_iter=1, tol=0.0)),          # a single pass
    ("bcfw", dict(max_iter=25, tol=0.0)),         # the gap at passes 10, 20 and 25
    ("bcfw", dict(max_iter=50, tol=0.1)),         # the gap every 10th pass and where the
                                                  # running estimate is below tol
    ("subgradient", dict(max_iter=6, tol=0.0)),
    ("subgradient", dict(max_iter=60, tol=0.01)),  # stops on the relative decrease
    ("subgradient", dict(max_iter=1, tol=0.0)),
])
def test_overlapped_evaluation_gives_the_sequential_fit(monkeypatch, sequences, solver,
                                                       params):
    overlapped, overlap_threads = _fit(monkeypatch, sequences, True, solver, **params)
    in_turn, turn_threads = _fit(monkeypatch, sequences, False, solver, **params)
    evaluated = int(np.isfinite(in_turn.objective_curve_).sum())
    assert len(overlap_threads) == len(turn_threads) == evaluated > 0
    if params == dict(max_iter=25, tol=0.0):
        assert evaluated == 3 and np.isfinite(in_turn.objective_curve_[[9, 19, 24]]).all()
    if params["max_iter"] > 1:
        assert all(name.startswith("skstruct-objective") for name in overlap_threads)
    assert not any(name.startswith("skstruct-objective") for name in turn_threads)
    if params["tol"] > 0:
        assert in_turn.n_iter_ < params["max_iter"], "the fit did not stop on its test"
    assert overlapped.n_iter_ == in_turn.n_iter_
    names = ["coef_", "transition_", "objective_curve_"]
    names += ["duality_gaps_"] if solver == "bcfw" else []
    for name in names:
        np.testing.assert_array_equal(getattr(overlapped, name), getattr(in_turn, name))


@needs_two_threads
@pytest.mark.parametrize("solver,params,stop,calls", [
    ("bcfw", dict(check_gap_every=1), 3, [1, 2, 3]),
    ("bcfw", dict(check_gap_every=2), 4, [2, 4]),  # the callback sees evaluated passes
    ("subgradient", {}, 3, [1, 2, 3]),
])
def test_overlapped_evaluation_stops_on_the_callback_at_the_same_pass(
        monkeypatch, sequences, solver, params, stop, calls):
    seen = {True: [], False: []}
    models = {}
    for overlap in (True, False):
        def callback(n_pass, w, objective, record=seen[overlap]):
            record.append((n_pass, w.copy(), objective))
            return n_pass == stop

        models[overlap], _ = _fit(monkeypatch, sequences, overlap, solver, max_iter=10,
                                  tol=0.0, callback=callback, **params)
    assert [a for a, _, _ in seen[True]] == [b for b, _, _ in seen[False]] == calls
    for (a, wa, fa), (b, wb, fb) in zip(seen[True], seen[False]):
        assert a == b and fa == fb
        np.testing.assert_array_equal(wa, wb)
    assert models[True].n_iter_ == models[False].n_iter_ == stop
    np.testing.assert_array_equal(models[True].coef_, models[False].coef_)
