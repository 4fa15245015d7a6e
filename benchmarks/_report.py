"""What every benchmark report records: the machine, the code version, readable times.

Imported by the ``bench_*.py`` scripts (run as ``python benchmarks/bench_....py``, so this
folder is on the import path).
"""

import platform
import subprocess
from pathlib import Path

__all__ = ["cpu_name", "format_time", "git_commit"]


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
