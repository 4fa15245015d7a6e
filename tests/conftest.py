import numpy as np
import pytest
from hypothesis import settings

settings.register_profile("default", max_examples=40, deadline=None)
settings.load_profile("default")


@pytest.fixture
def rng():
    return np.random.default_rng(0)
