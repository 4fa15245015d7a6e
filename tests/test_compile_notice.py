"""A fit that compiles says so at verbose=1 first; the progress estimate leaves compiling out.

A kernel compiled in this process (or loaded from the cache) sends no compile event, so
these tests make one compile on purpose: a fresh ``njit`` dispatcher without ``cache=True``
compiles at its first call in every process. The fixture puts it in place of the Python
wrapper L-BFGS calls for its inner products (``skstruct.optim._lbfgs._inner``), which
monkeypatch restores afterwards.
"""

import re

import numpy as np
import pytest
from numba import njit

import skstruct.optim._lbfgs as lbfgs
from skstruct import CRF
from skstruct.optim._progress import Progress
from skstruct.utils._compile_report import (CompileNotice, CompileTimer, compile_seconds,
                                            estimated_compile_seconds)


def _fresh_kernel():
    """A new dispatcher (never compiled, not cached) of a dot product with enough NumPy
    in it to take a noticeable time to compile."""
    def dot(a, b):
        order = np.argsort(np.abs(a))
        total = 0.0
        for i in order:
            total += a[i] * b[i]
        return total + 0.0 * np.cumsum(np.sort(b))[-1]

    return njit(dot)


@pytest.fixture
def compiling_inner(monkeypatch):
    """L-BFGS's inner products through a kernel that compiles at its first call."""
    kernel = _fresh_kernel()
    monkeypatch.setattr(lbfgs, "_inner", lambda a, b: kernel(a, b))
    return kernel


def _tabular(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    return X, (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)


def test_a_fit_that_compiles_says_so_before_compiling(compiling_inner, capsys):
    X, y = _tabular()
    with CompileTimer() as timer:
        CRF(alpha=1e-2, max_iter=20, tol=0.0, verbose=1).fit(X, y)
    assert timer.compiled, "the fixture's kernel did not compile"
    lines = capsys.readouterr().out.splitlines()
    notices = [i for i, line in enumerate(lines) if line.startswith("compiling ")]
    assert len(notices) == 1
    seconds = estimated_compile_seconds("CRF", "lbfgs")
    assert lines[notices[0]] == (
        f"compiling CRF(solver='lbfgs') once (its numba kernels are not cached yet), "
        f"about {seconds:.0f} s; later runs load them from the cache")
    # Before the iteration whose time includes the compilation.
    first_compiling = next(i for i, line in enumerate(lines) if " compiling " in line)
    assert notices[0] < first_compiling


def test_no_notice_when_nothing_compiles_or_verbose_is_0(compiling_inner, capsys):
    X, y = _tabular()
    CRF(alpha=1e-2, max_iter=5, verbose=0).fit(X, y)  # compiles, silently
    assert "compiling" not in capsys.readouterr().out
    CRF(alpha=1e-2, max_iter=5, verbose=1).fit(X, y)  # everything compiled already
    out = capsys.readouterr().out
    assert "iter" in out and "compiling" not in out


def test_compile_notice_prints_once_at_the_first_compile_event():
    printed = []
    kernel, other = _fresh_kernel(), _fresh_kernel()
    a = np.arange(3.0)
    with CompileNotice(1, "the kernels", 7, printer=printed.append) as notice:
        assert printed == []
        kernel(a, a)
        other(a, a)
    assert notice.printed
    assert printed == ["compiling the kernels once (its numba kernels are not cached "
                       "yet), about 7 s; later runs load them from the cache"]
    _fresh_kernel()(a, a)  # outside the block: nothing more
    assert len(printed) == 1


def test_progress_estimate_leaves_compile_time_out():
    printed = []
    progress = Progress(verbose=1, callback=None, printer=printed.append, max_iter=100)
    a = np.arange(5.0)
    before = compile_seconds()
    _fresh_kernel()(a, a)  # compiles in the first iteration
    compiled = compile_seconds() - before
    assert compiled > 0.05
    progress.report(np.zeros(2), 1.0)
    # Without the exclusion the estimate would be 99 times the first iteration's time,
    # which is the compilation's.
    assert progress.compile_times[-1] == pytest.approx(compiled, rel=0.05, abs=0.01)
    assert progress.times[-1] >= compiled
    assert progress.remaining() < 0.1 * 99 * compiled
    match = re.search(r"compiling +([\d.]+)s", printed[-1])
    assert match and float(match.group(1)) == pytest.approx(compiled, abs=0.011)
    progress.report(np.zeros(2), 0.5)
    assert progress.remaining() < 0.1 * 98 * compiled


def test_crf_progress_estimate_excludes_the_compilation(compiling_inner, capsys):
    X, y = _tabular()
    with CompileTimer() as timer:
        CRF(alpha=1e-2, max_iter=200, tol=0.0, verbose=1).fit(X, y)
    lines = [line for line in capsys.readouterr().out.splitlines() if "left ~" in line]
    assert timer.seconds > 0.05 and lines
    seconds = {"s": 1, "m": 60, "h": 3600}

    def parse(text):
        parts = re.findall(r"([\d.]+)([hms])", text)
        return sum(float(v) * seconds[u] for v, u in parts)

    lefts = [parse(re.search(r"left ~\s*(\S+)", line).group(1)) for line in lines]
    # The iterations of a 40-sample CRF take well under a millisecond each: an estimate
    # that counted the compilation would say (200 - n) times its seconds.
    assert max(lefts) < 0.2 * 199 * timer.seconds


def test_compile_seconds_is_cumulative():
    first = compile_seconds()
    _fresh_kernel()(np.arange(2.0), np.arange(2.0))
    assert compile_seconds() > first


def test_structured_svm_says_it_compiles_first_and_its_estimate_leaves_it_out(
        monkeypatch, capsys):
    # The BCFW engine's first use in a fresh install: a kernel compiles once the progress
    # reporter is made, before the first pass (here the fixture's kernel, run by the
    # pass order the engine draws).
    import skstruct.optim._bcfw as bcfw
    from skstruct import StructuredSVM

    kernel, draw = _fresh_kernel(), bcfw.pass_order

    def pass_order(*args):
        kernel(np.arange(3.0), np.arange(3.0))
        return draw(*args)

    monkeypatch.setattr(bcfw, "pass_order", pass_order)
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(n, 4)) for n in (3, 4, 5, 3, 4, 5)]
    y = [rng.integers(0, 3, size=len(x)) for x in X]
    max_iter = 50
    with CompileTimer() as timer:
        StructuredSVM(max_iter=max_iter, tol=0.0, random_state=0, verbose=1).fit(X, y)
    assert timer.seconds > 0.05, "the fixture's kernel did not compile"
    lines = capsys.readouterr().out.splitlines()
    notices = [i for i, line in enumerate(lines) if line.startswith("compiling ")]
    passes = [i for i, line in enumerate(lines) if line.startswith("pass ")]
    assert len(notices) == 1 and passes and notices[0] < passes[0], lines[:5]
    assert lines[notices[0]].startswith("compiling StructuredSVM(solver='bcfw') once")
    assert " compiling " in lines[passes[0]]  # the first pass's time includes it
    seconds = {"s": 1, "m": 60, "h": 3600}
    lefts = [sum(float(v) * seconds[u]
                 for v, u in re.findall(r"([\d.]+)([hms])", line.split("left ~")[1]))
             for line in lines if "left ~" in line]
    # Counting the compilation, the first estimate alone would be (max_iter − 1) times
    # its seconds; the passes of six short chains take well under a millisecond.
    assert lefts and max(lefts) < 0.2 * (max_iter - 1) * timer.seconds, lefts[:3]
