"""What every benchmark report records: the machine, the code version, readable times.

Imported by the ``bench_*.py`` scripts (run as ``python benchmarks/bench_....py``, so this
folder is on the import path).
"""

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

__all__ = ["code_version", "command_line", "cpu_name", "format_time", "git_commit",
           "machine_summary", "record_run"]


def cpu_name():
    """The CPU model from /proc/cpuinfo, or what the platform module knows."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return cpu


def git_commit():
    """Short hash of HEAD, flagged when the package files differ from it."""
    here = Path(__file__).parent
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, check=True, cwd=here).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "../skstruct"],
                               capture_output=True, text=True, cwd=here).stdout.strip()
        return out + (" (package files modified or untracked)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def format_time(seconds):
    """Seconds as s, ms or µs with three significant digits."""
    if seconds >= 1.0:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} µs"


def machine_summary():
    """CPU, cores, numba threads and the Python that runs the benchmark, as a dict."""
    try:
        import numba
        threads = numba.get_num_threads()
    except ImportError:
        threads = None
    return {"cpu": cpu_name(), "cores": os.cpu_count(), "numba_threads": threads,
            "python": platform.python_version(), "executable": sys.executable}


def command_line(script):
    """How the running benchmark was called, with ``script`` as its path."""
    return " ".join([script, *sys.argv[1:]])


def record_run(path, label, run, merge=False):
    """Store ``run`` under ``label`` in the JSON file of labelled runs; return all runs.

    The file at ``path`` maps labels (for example ``"before"`` for the code at the start
    of a change and ``"latest"`` for the current code) to the results of one run each, so
    that a re-run replaces its own label and keeps the others.

    Parameters
    ----------
    path : pathlib.Path
        The ``.json`` file; created with its folder when missing.
    label : str
    run : dict
        JSON-serializable results.
    merge : bool, default=False
        Update the stored run of ``label`` key by key (a re-run of some parts of a
        benchmark keeps the other parts) instead of replacing it.

    Returns
    -------
    runs : dict
        ``label -> run`` for every label in the file, in the order they were first written.
    """
    runs = {}
    if path.exists():
        try:
            runs = json.loads(path.read_text()).get("runs", {})
        except (ValueError, AttributeError):
            runs = {}
    runs[label] = {**runs.get(label, {}), **run} if merge else run
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"runs": runs}, indent=2) + "\n")
    return runs


def code_version(package):
    """The version of the imported package's code: this repository's commit, or, when the
    package was imported from elsewhere (an exported copy of an older commit put first on
    ``PYTHONPATH``), ``$SKSTRUCT_CODE_VERSION`` and the folder it came from."""
    package_dir = Path(package.__file__).resolve().parent
    if package_dir == Path(__file__).resolve().parents[1] / "skstruct":
        return git_commit()
    return f"{os.environ.get('SKSTRUCT_CODE_VERSION', 'unknown')} (skstruct from {package_dir})"
