"""The suite's guard against tests that leave process-wide state changed (conftest.py):
such a test fails at teardown, and the tests after it see the state as it was."""

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

_CONFTEST = (Path(__file__).parent / "conftest.py").read_text()


@pytest.mark.parametrize("leak, named", [
    ("from skstruct.optim._registry import unregister_solver\n"
     "    unregister_solver('perceptron')", "the solver registry"),
    ("from skstruct.outputs import _base\n"
     "    _base._REGISTRY = dict(_base._REGISTRY)", "the output-kind registry"),
    ("import os\n    os.environ['SKSTRUCT_LEAKED'] = '1'", "os.environ"),
    ("import numba\n    numba.set_num_threads(1)", "numba's thread count"),
    ("import sklearn\n    sklearn.set_config(assume_finite=True)", "scikit-learn's config"),
])
def test_a_test_that_leaves_global_state_changed_fails_and_the_next_sees_it_restored(
        pytester, leak, named):
    pytester.makeconftest(_CONFTEST)
    pytester.makepyfile(test_leak=f"""
import os

import numba
import sklearn
from skstruct.optim._registry import get_solver
from skstruct.outputs import _base

KINDS = _base._REGISTRY


def test_1_leaks():
    {leak}


def test_2_sees_the_state_restored():
    assert get_solver("perceptron").partial_fit
    assert _base._REGISTRY is KINDS
    assert "SKSTRUCT_LEAKED" not in os.environ
    assert numba.get_num_threads() == numba.config.NUMBA_NUM_THREADS
    assert not sklearn.get_config()["assume_finite"]
""")
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines([f"*test_1_leaks left {named} changed*"])


def test_a_test_that_restores_through_monkeypatch_passes(pytester):
    pytester.makeconftest(_CONFTEST)
    pytester.makepyfile(test_restores="""
from skstruct.optim import _registry


def test_edits_a_copy(monkeypatch):
    monkeypatch.setattr(_registry, "_REGISTRY", dict(_registry._REGISTRY))
    _registry.unregister_solver("perceptron")
    monkeypatch.setenv("SKSTRUCT_SET_FOR_ONE_TEST", "1")
""")
    result = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
