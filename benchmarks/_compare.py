"""Timing skstruct and a peer library side by side, in one process.

Imported by the ``bench_*`` scripts that compare skstruct with a peer (seqlearn, pystruct),
run from the peers' virtual environment (``../shared/peers/setup_peers.sh``, then
``pip install -e .`` into it). Each side is a callable that trains (and, if wanted,
evaluates) a fresh model; :func:`alternate` calls them in turn, ``repeats`` times each,
swapping which side goes first on every round, so that a change in the machine's load
during the run falls on both sides alike. Warm-up (numba compilation or cache loading,
the peer's first import) is the caller's job, before :func:`alternate`.
"""

import importlib
import os
import time

import numpy as np

__all__ = ["Side", "alternate", "load_average", "peer_import", "ratio"]


class Side:
    """One library's run: ``run()`` returns ``(result, seconds)`` or ``result``.

    Parameters
    ----------
    name : str
        Key of this side in the returned measurements.
    run : callable
        Trains a fresh model. When it returns a pair ``(result, seconds)`` the given
        seconds are used (for example the time of ``fit`` alone, without building
        inputs); otherwise the wall time of the whole call is.
    timed_inside : bool, default=False
        Whether ``run`` returns ``(result, seconds)``.
    """

    def __init__(self, name, run, timed_inside=False):
        self.name, self.run, self.timed_inside = name, run, timed_inside

    def __call__(self):
        tic = time.perf_counter()
        out = self.run()
        wall = time.perf_counter() - tic
        if self.timed_inside:
            result, seconds = out
            return result, float(seconds)
        return out, wall


def alternate(sides, repeats, log=None):
    """Run every side ``repeats`` times, alternating, and summarize the times.

    Round ``k`` runs the sides in their given order when ``k`` is even and reversed when
    it is odd.

    Parameters
    ----------
    sides : list of Side
    repeats : int
    log : callable or None
        Called with one line of text after every run (progress on stderr).

    Returns
    -------
    measured : dict
        ``name -> {"seconds": [t_1, ..., t_repeats], "median": float, "min": float,
        "results": [result_1, ...]}``.
    """
    measured = {side.name: {"seconds": [], "results": []} for side in sides}
    for k in range(repeats):
        for side in (sides if k % 2 == 0 else sides[::-1]):
            result, seconds = side()
            measured[side.name]["seconds"].append(seconds)
            measured[side.name]["results"].append(result)
            if log is not None:
                log(f"  round {k + 1}/{repeats}: {side.name} {seconds:.3f} s")
    for entry in measured.values():
        entry["median"] = float(np.median(entry["seconds"]))
        entry["min"] = float(np.min(entry["seconds"]))
    return measured


def ratio(numerator, denominator):
    """``numerator / denominator``, or None when either is missing or the divisor is 0."""
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def peer_import(name):
    """Import a peer library, or return ``(None, reason)`` when it cannot be imported."""
    try:
        return importlib.import_module(name), None
    except Exception as error:  # noqa: BLE001 - any failure means "no peer here"
        return None, f"{type(error).__name__}: {error}"


def load_average():
    """1-minute load average (0.0 where the platform has none)."""
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return 0.0
