"""The compiled exponential of the rescaled forward-backward (``_exp_nonpositive``)."""

import numpy as np
from numba import njit

from skstruct.decoders._chain_kernels import _EXP_FLOOR, _exp_nonpositive


@njit
def _exp_all(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = _exp_nonpositive(x[i])
    return out


def test_exp_is_within_one_unit_in_the_last_place_of_numpy(rng):
    x = np.concatenate([-rng.exponential(3.0, size=20000),
                        rng.uniform(_EXP_FLOOR, 0.0, size=20000),
                        -np.logspace(-300, 0, 200), [0.0, -0.0, _EXP_FLOOR]])
    got, want = _exp_all(x), np.exp(x)
    assert got.shape == want.shape
    assert np.all(np.abs(got - want) <= np.spacing(want))


def test_exp_of_minus_inf_and_below_the_floor_is_zero_and_nan_stays_nan():
    x = np.array([-np.inf, _EXP_FLOOR - 1e-9, -745.0, -1e300, np.nan])
    got = _exp_all(x)
    assert np.array_equal(got[:4], np.zeros(4))
    assert np.isnan(got[4])
