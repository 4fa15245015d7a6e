"""Small problems shared by the solver tests: chains and tabular data with sample weights."""

import numpy as np
import pytest
import scipy.sparse as sp


@pytest.fixture(scope="module")
def sequences():
    """24 sequences of 1 to 7 tokens, 6 sparse features, states O/A/B; and sample weights."""
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 8, size=24)
    states = np.array(["O", "A", "B"])
    X, y = [], []
    for length in lengths:
        dense = rng.normal(size=(length, 6))
        X.append(sp.csr_matrix(np.where(dense > 0.2, dense, 0.0)))
        y.append(states[rng.integers(0, 3, size=length)])
    return X, y, rng.uniform(0.5, 2.0, size=len(lengths))


@pytest.fixture(scope="module")
def tabular():
    """40 samples of 5 features: 4 classes, 4 labels (about 40 % on), sample weights."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 5))
    classes = rng.integers(0, 4, size=40)
    labels = (rng.random(size=(40, 4)) < 0.4).astype(int)
    return X, classes, labels, rng.uniform(0.5, 2.0, size=40)
