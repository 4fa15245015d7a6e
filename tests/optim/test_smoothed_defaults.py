"""The default SVRG and Casimir-SVRG solve the non-smooth problem, not a smoothed one."""

import warnings

import numpy as np
import pytest

from skstruct import StructuredSVM
from skstruct.optim import _solvers, minimize_bcfw
from skstruct.optim._casimir import minimize_casimir
from skstruct.optim._svrg import minimize_svrg

#: λ of the chain problem: a constant μ = 1 ends 3.3 % above its optimum there.
ALPHA = 0.01
#: Epochs allowed to the defaults.
EPOCHS = 60
#: Relative distance to the certified optimum they must reach.
TOLERANCE = 0.01


def _chain_risk():
    """The RegularizedRisk of 40 sequences whose labels follow their features."""
    rng = np.random.default_rng(5)
    V = rng.normal(size=(6, 3))
    states = np.array(["O", "A", "B"])
    X, y = [], []
    for length in rng.integers(2, 9, size=40):
        x = rng.normal(size=(length, 6))
        X.append(x)
        y.append(states[np.argmax(x @ V + 0.5 * rng.normal(size=(length, 3)), axis=1)])
    seen = []

    def spy(risk, *args, **kwargs):
        seen.append(risk)
        return minimize_svrg(risk, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_solvers, "minimize_svrg", spy)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            StructuredSVM(alpha=ALPHA, solver="svrg", max_iter=1).fit(X, y)
    return seen[0]


@pytest.fixture(scope="module")
def certified():
    """(risk, lower bound, upper bound) of the optimum from a long BCFW run."""
    risk = _chain_risk()
    result = minimize_bcfw(risk, max_iter=3000, tol=1e-6, random_state=0,
                           check_gap_every=1)  # the best primal of all passes
    upper = float(np.min(result.objective_curve))
    lower = float(result.objective_curve[-1] - result.duality_gaps[-1])
    assert upper - lower <= 0.25 * TOLERANCE * lower
    return risk, lower, upper


@pytest.mark.parametrize("minimize", [minimize_svrg, minimize_casimir],
                         ids=["svrg", "casimir"])
def test_defaults_reach_the_certified_optimum(certified, minimize):
    """Default parameters end within 1 % of the certified optimum in EPOCHS epochs,
    and the returned iterate is the best epoch end."""
    risk, lower, _ = certified
    result = minimize(risk, max_iter=EPOCHS, random_state=0)
    final = min(result.objective_curve)
    assert final >= lower - 1e-9
    assert (final - lower) / lower <= TOLERANCE


@pytest.mark.parametrize("minimize", [minimize_svrg, minimize_casimir],
                         ids=["svrg", "casimir"])
def test_returned_iterate_is_the_best_epoch_end(certified, minimize):
    risk = certified[0]
    ends = []
    result = minimize(risk, max_iter=EPOCHS, random_state=0,
                      callback=lambda k, w, value: ends.append((value, w.copy())))
    best = int(np.argmin([value for value, _ in ends]))
    np.testing.assert_array_equal(result.w, ends[best][1])
