"""The verbose progress lines: elapsed time and the estimate of the time left."""

import re

import numpy as np
import pytest

from skstruct.optim import _progress
from skstruct.optim._progress import Progress, format_seconds

LINE = re.compile(r"^pass\s+(\d+)/(\d+)\s+objective\s+\S+\s+time\s+([\d.]+)s"
                  r"(?:\s+left ~\s*([\d.]+)s)?$")


class FakeClock:
    """perf_counter replacement: the first pass takes 5 s, every later one 1 s."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(_progress.time, "perf_counter", fake)
    return fake


def test_lines_show_elapsed_time_and_time_left(clock, capsys):
    progress = Progress(verbose=1, callback=None, unit="pass", max_iter=5)
    steps = [5.0, 1.0, 1.0, 1.0, 1.0]
    for step in steps:
        clock.now += step
        progress.report(np.zeros(1), 1.0)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 5
    parsed = [LINE.match(line) for line in lines]
    assert all(parsed), lines
    assert [int(m.group(1)) for m in parsed] == [1, 2, 3, 4, 5]
    assert all(int(m.group(2)) == 5 for m in parsed)
    np.testing.assert_allclose([float(m.group(3)) for m in parsed], np.cumsum(steps))
    # after pass 1 the only rate known is 5 s a pass; then 1 s a pass (pass 1 left out)
    left = [m.group(4) for m in parsed]
    assert left[-1] is None  # nothing left after the last pass
    np.testing.assert_allclose([float(v) for v in left[:-1]], [20.0, 3.0, 2.0, 1.0])


def test_estimate_leaves_out_the_first_iteration():
    progress = Progress(verbose=0, callback=None, max_iter=10)
    # a 30 s first iteration (compilation) then 0.5 s ones
    assert progress.remaining(elapsed=[30.0, 30.5, 31.0]) == pytest.approx(7 * 0.5)
    assert progress.remaining(elapsed=[30.0]) == pytest.approx(9 * 30.0)
    assert progress.remaining(elapsed=[]) is None


def test_no_estimate_without_the_budget(clock, capsys):
    progress = Progress(verbose=1, callback=None, unit="pass")
    for _ in range(3):
        clock.now += 1.0
        progress.report(np.zeros(1), 2.0, gap=0.5)
    out = capsys.readouterr().out
    assert "left" not in out and "/" not in out
    assert out.splitlines()[-1].endswith("time    3.00s")
    assert progress.remaining() is None


def test_silent_when_not_verbose_but_still_records(clock, capsys):
    progress = Progress(verbose=0, callback=None, max_iter=3)
    clock.now += 2.0
    progress.report(np.zeros(1), 2.0)
    assert capsys.readouterr().out == ""
    assert progress.times == [2.0] and progress.remaining() == pytest.approx(4.0)


def test_long_durations_in_minutes_and_hours():
    assert format_seconds(0.0) == "0.00s"
    assert format_seconds(59.994) == "59.99s"
    assert format_seconds(61.0) == "1m01s"
    assert format_seconds(3 * 3600 + 5 * 60 + 9) == "3h05m"
    assert format_seconds(-1.0) == "0.00s"


@pytest.mark.parametrize("max_iter", [0, -3, 2.5, True, "10"])
def test_bad_budget_is_rejected(max_iter):
    with pytest.raises((ValueError, TypeError), match="max_iter|invalid"):
        Progress(verbose=1, callback=None, max_iter=max_iter)


def test_solver_lines_carry_the_elapsed_time(capsys):
    """A real solver run: every verbose line ends with its elapsed time."""
    from skstruct.optim import minimize_lbfgs

    def fun(w):
        return float(w @ w), 2 * w

    minimize_lbfgs(fun, np.ones(3), max_iter=5, tol=0.0, verbose=1)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert lines and all(re.search(r"time\s+[\d.]+s", line) for line in lines)
