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

__all__ = ["Side", "alternate", "load_average", "peer_import", "ratio", "timed"]


class Side:
    """One library's run: ``run()`` returns ``(result, seconds)`` or ``result``.

    Parameters
    ----------
    name : str
        Key of this side in the returned measurements.
    run : callable
        Trains a fresh model. When it returns ``(result, seconds)`` or ``(result, seconds,
        cpu_seconds)`` the given times are used (for example the time of ``fit`` alone,
        without building inputs); otherwise the wall and process CPU time of the whole
        call are.
    timed_inside : bool, default=False
        Whether ``run`` returns its own times.
    """

    def __init__(self, name, run, timed_inside=False):
        self.name, self.run, self.timed_inside = name, run, timed_inside

    def __call__(self):
        """``(result, wall seconds, CPU seconds)``; CPU seconds may be None."""
        tic, cpu_tic = time.perf_counter(), time.process_time()
        out = self.run()
        wall, cpu = time.perf_counter() - tic, time.process_time() - cpu_tic
        if not self.timed_inside:
            return out, wall, cpu
        if len(out) == 3:
            return out[0], float(out[1]), float(out[2])
        return out[0], float(out[1]), None


def timed(function, *args):
    """``(function(*args), wall seconds, CPU seconds of this process, all threads)``.

    On a machine shared with other processes the wall time includes the time the
    process waited for a core; the CPU time does not (it still grows with contention
    for caches and memory bandwidth), and sums over the threads of parallel code.
    """
    tic, cpu_tic = time.perf_counter(), time.process_time()
    result = function(*args)
    return result, time.perf_counter() - tic, time.process_time() - cpu_tic


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
        "cpu_seconds": [...], "cpu_median": float or None, "results": [result_1, ...]}``
        (wall times, and CPU times of this process).
    """
    measured = {side.name: {"seconds": [], "cpu_seconds": [], "results": []}
                for side in sides}
    for k in range(repeats):
        for side in (sides if k % 2 == 0 else sides[::-1]):
            result, seconds, cpu = side()
            measured[side.name]["seconds"].append(seconds)
            measured[side.name]["cpu_seconds"].append(cpu)
            measured[side.name]["results"].append(result)
            if log is not None:
                cpu_text = "" if cpu is None else f" (CPU {cpu:.3f} s)"
                log(f"  round {k + 1}/{repeats}: {side.name} {seconds:.3f} s{cpu_text}")
    for entry in measured.values():
        entry["median"] = float(np.median(entry["seconds"]))
        entry["min"] = float(np.min(entry["seconds"]))
        cpus = [c for c in entry["cpu_seconds"] if c is not None]
        entry["cpu_median"] = float(np.median(cpus)) if cpus else None
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
