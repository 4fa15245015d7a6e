"""What the gallery's examples say they show (examples/gallery/).

The examples run in the docs build; these tests run two of them as scripts and check the
property their text relies on: the CRF-marginals example draws a sentence whose marginals
show uncertainty, and the solver-curves example measures suboptimality against a
certified lower bound (a dual value), not against the lowest objective reached.
matplotlib is not in the tests extra: without it, pyplot is replaced by a stub that
accepts every call (the figures are not checked here, the docs build draws them).
"""

import runpy
import sys
import types
import warnings
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

GALLERY = Path(__file__).resolve().parent.parent / "examples" / "gallery"

pytestmark = pytest.mark.skipif(not GALLERY.exists(),
                                reason="the examples are not next to the tests")


def _stub_pyplot():
    pyplot = types.ModuleType("matplotlib.pyplot")

    def subplots(nrows=1, ncols=1, **kwargs):
        axes = [mock.MagicMock() for _ in range(nrows * ncols)]
        return mock.MagicMock(), axes[0] if len(axes) == 1 else tuple(axes)

    pyplot.subplots = subplots
    pyplot.__getattr__ = lambda name: mock.MagicMock()
    package = types.ModuleType("matplotlib")
    package.pyplot = pyplot
    return {"matplotlib": package, "matplotlib.pyplot": pyplot}


def run_example(name):
    """The global namespace of examples/gallery/<name> after running it."""
    try:
        import matplotlib
    except ImportError:
        modules = _stub_pyplot()
    else:
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        modules = {}
    # Only the stub's own entries are put in and taken out of sys.modules (restoring the
    # whole dict would drop the modules the example imported, numba's among them, whose
    # second import fails).
    sys.modules.update(modules)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # Agg cannot show figures
            namespace = runpy.run_path(str(GALLERY / name), run_name="__main__")
    finally:
        for key in modules:
            sys.modules.pop(key, None)
    if not modules:
        plt.close("all")
    return namespace


def test_marginals_example_shows_uncertainty():
    ns = run_example("plot_crf_marginals.py")
    marginals, words = ns["marginals"], ns["words"]
    assert marginals.shape[0] == len(words)
    np.testing.assert_allclose(marginals.sum(axis=1), 1.0, atol=1e-9)
    # Some tokens of the sentence drawn are in doubt (the text describes them) ...
    top = marginals.max(axis=1)
    assert top.min() < 0.9
    assert (top < 0.9).sum() >= 2
    # ... and it is the most uncertain of the short test sentences, as the text says.
    entropy = [-(m * np.log(np.clip(m, 1e-300, None))).sum(axis=1).mean()
               for m in ns["all_marginals"]]
    short = [j for j, m in enumerate(ns["all_marginals"]) if 8 <= len(m) <= 20]
    assert ns["i"] == max(short, key=lambda j: entropy[j])


def test_solver_curves_use_a_certified_bound():
    ns = run_example("plot_solver_curves.py")
    lower, upper, long_run = ns["lower"], ns["upper"], ns["long_run"]
    # The bound is a dual value of a BCFW run: P(w) − gap, at most the optimum.
    duals = long_run.objective_curve_ - long_run.duality_gaps_
    assert lower == pytest.approx(duals.max())
    assert lower < upper
    for svm in ns["svms"].values():
        # every curve drawn, F − L, stays above zero: none reaches the bound
        assert (svm.objective_curve_ - lower > 0).all()
    # The bound is tight enough to tell the solvers apart after their budget.
    assert upper - lower < ns["svms"]["bcfw"].objective_curve_[-1] - lower
    # The CRF is measured against another, longer run, not against its own last value.
    crf, reference = ns["crf"], ns["crf_reference"]
    assert (crf.objective_curve_ - reference > 0).all()
