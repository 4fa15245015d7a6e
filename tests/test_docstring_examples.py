"""Every docstring example of the package runs and prints what it shows."""

import doctest
import importlib
import pkgutil

import pytest

import skstruct

MODULES = sorted(
    name
    for _, name, _ in pkgutil.walk_packages(skstruct.__path__, prefix="skstruct.")
)


@pytest.mark.parametrize("module_name", MODULES)
def test_docstring_examples(module_name):
    module = importlib.import_module(module_name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {module_name}"
