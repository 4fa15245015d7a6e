"""The SVRG step bound names the estimators' parameters: learning_rate, alpha, kappa."""

import numpy as np
import pytest

from skstruct import CRF, StructuredSVM


def _multilabel(n=40, n_features=4, n_labels=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, n_features)), (rng.normal(size=(n, n_labels)) > 0).astype(int)


@pytest.mark.parametrize("make, expected", [
    (lambda: StructuredSVM(solver="svrg", learning_rate=1e6, alpha=0.5, max_iter=2),
     r"solver='svrg' needs 0 < learning_rate < 1 / alpha = 2; got learning_rate=1e\+06"),
    (lambda: StructuredSVM(solver="casimir", learning_rate=1e6, alpha=1.0, kappa=3.0,
                           max_iter=2),
     r"solver='casimir' needs 0 < learning_rate < 1 / \(alpha \+ kappa\) = 0.25 "
     r"\(alpha = 1, kappa = 3\); got learning_rate=1e\+06"),
    (lambda: CRF(solver="svrg", learning_rate=1e6, alpha=0.5, max_iter=2),
     r"solver='svrg' needs 0 < learning_rate < 1 / alpha = 2; got learning_rate=1e\+06"),
], ids=["ssvm-svrg", "ssvm-casimir", "crf-svrg"])
def test_too_large_learning_rate_is_named_with_its_bound(make, expected):
    X, Y = _multilabel()
    with pytest.raises(ValueError, match=expected) as info:
        make().fit(X, Y)
    assert "step size" not in str(info.value)
    assert "Lower learning_rate, or use learning_rate='auto'" in str(info.value)


def test_learning_rate_below_the_bound_trains():
    X, Y = _multilabel()
    model = StructuredSVM(solver="svrg", learning_rate=0.5, alpha=1.0, max_iter=2).fit(X, Y)
    assert np.all(np.isfinite(model.coef_))
