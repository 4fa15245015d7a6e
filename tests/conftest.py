import os

import numba
import numpy as np
import pytest
import sklearn
from hypothesis import settings

from skstruct.decoders._core import registry as _family_registry
from skstruct.optim import _registry as _solver_registry
from skstruct.outputs import _base as _output_kinds

settings.register_profile("default", max_examples=40, deadline=None)
settings.load_profile("default")


@pytest.fixture
def rng():
    return np.random.default_rng(0)


# The process-wide state a test may change. Each entry reads the state and puts a reading
# back; the registries are read as (the module's dict object, a copy of its items), so a
# test that replaces the dict (monkeypatch.setattr) and one that edits it are both seen.
def _read_registry(module):
    return module._REGISTRY, dict(module._REGISTRY)


def _restore_registry(module, reading):
    registry, items = reading
    registry.clear()
    registry.update(items)
    module._REGISTRY = registry


def _read_environ():
    # pytest itself sets PYTEST_CURRENT_TEST in every phase of every test
    return {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}


def _restore_environ(reading):
    for key in set(_read_environ()) - set(reading):
        del os.environ[key]
    os.environ.update(reading)


_GLOBAL_STATE = {
    "the solver registry": (lambda: _read_registry(_solver_registry),
                            lambda r: _restore_registry(_solver_registry, r)),
    "the output-kind registry": (lambda: _read_registry(_output_kinds),
                                 lambda r: _restore_registry(_output_kinds, r)),
    "the decoder-family registry": (lambda: _read_registry(_family_registry),
                                    lambda r: _restore_registry(_family_registry, r)),
    "numba's thread count": (numba.get_num_threads, numba.set_num_threads),
    "os.environ": (_read_environ, _restore_environ),
    "scikit-learn's config": (sklearn.get_config, lambda r: sklearn.set_config(**r)),
    "numpy's error handling": (np.geterr, lambda r: np.seterr(**r)),
}


def _same(before, after):
    if isinstance(before, tuple):  # a registry: the same dict, holding the same items
        return before[0] is after[0] and before[1] == after[1]
    return before == after


@pytest.fixture(autouse=True)
def _global_state_is_restored(request):
    """Fail a test that leaves process-wide state changed, and put the state back.

    The suite runs in one process in any order (pytest-randomly shuffles it), so a test
    that changes a registry, an environment variable, numba's threads or a library's
    configuration must restore it itself (``monkeypatch``, or a fixture of its own); the
    state is put back here too, so one such test fails alone instead of the tests after it.
    """
    before = {name: read() for name, (read, _) in _GLOBAL_STATE.items()}
    yield
    changed = []
    for name, (read, restore) in _GLOBAL_STATE.items():
        if not _same(before[name], read()):
            changed.append(name)
            restore(before[name])
    if changed:
        pytest.fail(f"{request.node.nodeid} left {', '.join(changed)} changed; restore it "
                    "in the test (monkeypatch or a fixture).", pytrace=False)
