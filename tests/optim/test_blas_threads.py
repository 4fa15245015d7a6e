"""The quasi-Newton solvers keep BLAS to one thread while the risk has a compiled
evaluation (idle BLAS threads would spin on the cores the kernels use), and restore it."""

import numpy as np
import pytest
import scipy.sparse as sp
from threadpoolctl import threadpool_info

from skstruct import CRF


def _blas_threads():
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def _chains(seed=0, n_sequences=30, n_features=6):
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(int(rng.integers(2, 6)), n_features)) for _ in range(n_sequences)]
    y = [(x[:, 0] > 0).astype(int) for x in X]
    return X, y


def _recorded_blas_threads(X, y, l1_ratio):
    seen = []

    def callback(n_iter, w, value):
        seen.append(max(_blas_threads()))

    CRF(alpha=0.1, l1_ratio=l1_ratio, max_iter=3, tol=0.0, callback=callback).fit(X, y)
    return seen


@pytest.mark.parametrize("l1_ratio", [0.0, 0.5])
def test_lbfgs_on_a_compiled_chain_objective_runs_with_one_blas_thread(l1_ratio):
    before = _blas_threads()
    if not before or max(before) < 2:
        pytest.skip("BLAS runs on one thread here already")
    X, y = _chains()
    # sparse token features: the chain feature map's compiled objective
    seen = _recorded_blas_threads([sp.csr_matrix(x) for x in X], y, l1_ratio)
    assert len(seen) == 3
    assert seen == [1, 1, 1]
    assert _blas_threads() == before


def test_lbfgs_on_the_generic_composition_keeps_the_blas_threads():
    """Dense features take the generic composition (BLAS products): BLAS is left alone."""
    before = _blas_threads()
    if not before or max(before) < 2:
        pytest.skip("BLAS runs on one thread here already")
    X, y = _chains()
    seen = _recorded_blas_threads(X, y, 0.0)
    assert len(seen) == 3
    assert seen == [max(before)] * 3
