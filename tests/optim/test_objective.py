import numpy as np
import pytest
import scipy.sparse as sp

from skstruct.decoders import ChainDecoder
from skstruct.features import LinearChainFeatures
from skstruct.losses import CRFLoss
from skstruct.optim import RegularizedRisk
from skstruct.utils import SequenceBatch


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("cost", [None, "hamming"])
def test_gradient_with_respect_to_the_weights(rng, sparse, cost):
    offsets = np.array([0, 3, 4, 8])
    X = rng.normal(size=(8, 5))
    X = sp.csr_matrix(np.where(X > 0, X, 0.0)) if sparse else X
    y = rng.integers(0, 3, size=8)
    features = LinearChainFeatures(5, 3)
    risk = RegularizedRisk(features, SequenceBatch(X, offsets), y, ChainDecoder(),
                           CRFLoss(cost=cost), alpha=0.3, sample_weight=np.array([1.0, 2.0, 0.5]))
    w = rng.normal(size=features.n_params)
    _, grad = risk.value_and_gradient(w)
    eps = 1e-6
    numeric = np.array([
        (risk.value_and_gradient(w + eps * e)[0] - risk.value_and_gradient(w - eps * e)[0])
        / (2 * eps)
        for e in np.eye(features.n_params)
    ])
    np.testing.assert_allclose(grad, numeric, atol=1e-6)
