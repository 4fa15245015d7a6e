"""A cutting-plane run stopped before its tolerance returns its best iterate."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from skstruct import StructuredSVM
from skstruct.decoders import ChainDecoder
from skstruct.features import LinearChainFeatures
from skstruct.losses import StructuredHingeLoss
from skstruct.optim import RegularizedRisk, minimize_cutting_plane
from skstruct.utils import SequenceBatch


def _risk(sequences, alpha):
    X, y, weights = sequences
    codes = {"O": 0, "A": 1, "B": 2}
    offsets = np.concatenate(([0], np.cumsum([x.shape[0] for x in X])))
    encoded = np.array([codes[s] for labels in y for s in labels])
    return RegularizedRisk(LinearChainFeatures(6, 3),
                           SequenceBatch(sp.vstack(X).tocsr(), offsets), encoded,
                           ChainDecoder(), StructuredHingeLoss("hamming", "margin"), alpha,
                           weights)


def _capped_runs(risk):
    """Runs capped at 2..15 decoder calls whose last evaluated objective is not the
    smallest (the cutting plane's iterates do not decrease P monotonically)."""
    runs = []
    for max_iter in range(2, 16):
        result = minimize_cutting_plane(risk, max_iter=max_iter, tol=0.0)
        curve = np.asarray(result.objective_curve)
        if not result.converged and curve[-1] > curve.min() + 1e-9:
            runs.append(result)
    return runs


@pytest.mark.parametrize("alpha", [0.05, 0.005])
def test_capped_cutting_plane_returns_its_best_iterate(sequences, alpha):
    risk = _risk(sequences, alpha)
    runs = _capped_runs(risk)
    assert runs, "no capped run with a non-monotone objective to test on"
    for result in runs:
        curve = np.asarray(result.objective_curve)
        best = int(np.argmin(curve))
        # the returned parameters are the iterate of the smallest evaluated objective
        assert risk.value(result.w) == pytest.approx(curve[best], rel=1e-10, abs=1e-12)
        assert result.extra["best_iteration"] == best + 1
        assert "returned the best iterate" in result.message


def test_converged_cutting_plane_returns_its_last_iterate(sequences):
    risk = _risk(sequences, 0.05)
    result = minimize_cutting_plane(risk, max_iter=500, tol=0.05)
    assert result.converged
    assert result.extra["best_iteration"] is None
    assert "best iterate" not in result.message
    assert risk.value(result.w) == pytest.approx(result.objective_curve[-1], rel=1e-10)


def test_capped_fit_warns_that_it_returned_the_best_iterate(sequences):
    X, y, _ = sequences
    for max_iter in range(2, 16):
        model = StructuredSVM(ChainDecoder(), alpha=0.005, solver="cutting_plane",
                              max_iter=max_iter, tol=1e-12)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.fit(X, y)
        curve = model.objective_curve_
        if curve[-1] > min(curve) + 1e-9:
            break
    else:
        pytest.fail("no capped fit with a non-monotone objective to test on")
    messages = [str(w.message) for w in caught if w.category is ConvergenceWarning]
    assert any("returned the best iterate" in m for m in messages)


def test_cutting_plane_stopped_by_its_callback_is_not_converged(sequences):
    risk = _risk(sequences, 0.005)
    full = minimize_cutting_plane(risk, max_iter=500, tol=1e-3)
    assert full.converged and full.n_iter > 3
    stopped = minimize_cutting_plane(risk, max_iter=500, tol=1e-3,
                                     callback=lambda k, w, value: k == 3)
    assert stopped.n_iter == 3 and stopped.message.startswith("stopped by callback")
    assert not stopped.converged
    # the estimator says so: a ConvergenceWarning naming the callback
    X, y, _ = sequences
    model = StructuredSVM(ChainDecoder(), alpha=0.005, solver="cutting_plane",
                          max_iter=500, tol=1e-3, callback=lambda k, w, value: k == 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y)
    messages = [str(w.message) for w in caught if w.category is ConvergenceWarning]
    assert any("stopped by callback" in m for m in messages)
