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
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

__all__ = ["ALONE_OPTION", "Side", "alone_summary", "alternate", "fresh_process",
           "load_average", "peer_import", "ratio", "timed", "write_alone"]

#: Command-line option by which a benchmark runs only its peer's sides, in a fresh process
#: started by :func:`fresh_process`, and writes their times to the file it names.
ALONE_OPTION = "--peer-alone-json"


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


def fresh_process(script, argv, option=ALONE_OPTION):
    """Run ``script`` in a fresh Python process with ``argv`` and ``option FILE``; its JSON.

    The fair-baseline check: the script, given ``option``, times its peer's sides alone
    (its own warm-up, the same repeats, nothing of skstruct's run in between) and writes
    :func:`alone_summary` of them to FILE with :func:`write_alone`. The caller reports these
    times beside the alternating ones, to show that running the two side by side in one
    process did not inflate the peer's figure. Returns ``{"error": message}`` when the
    child fails (the caller's run is still reported).
    """
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "alone.json"
        command = [sys.executable, str(script), *argv, option, str(path)]
        tic, load = time.perf_counter(), load_average()
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0 or not path.exists():
            tail = (done.stderr or "").strip().splitlines()[-3:]
            return {"error": f"exit status {done.returncode}: {' / '.join(tail)}"}
        out = json.loads(path.read_text())
    out.update({"load_average_before": load, "process_seconds": time.perf_counter() - tic})
    return out


def alone_summary(measured):
    """Wall and CPU medians (and all rounds) of every side of an :func:`alternate` run."""
    return {"sides": {name: {key: entry[key] for key in
                             ("seconds", "cpu_seconds", "median", "cpu_median")}
                      for name, entry in measured.items()},
            "load_average_after": load_average()}


def write_alone(path, summary):
    Path(path).write_text(json.dumps(summary, indent=1))
