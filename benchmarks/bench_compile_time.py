"""First-call cost of skstruct's compiled kernels: compiling, loading, and after installing.

Three measurements, each in fresh interpreters:

- **kernels**: the first call of each basic operation on a tiny input (chain decoding and a
  short CRF fit), in three settings: an empty numba cache (``NUMBA_CACHE_DIR`` pointing to
  a new directory: what an install without precompiled kernels pays once), the same cache
  filled by that first run (what every later process pays), and a fresh virtual
  environment after ``pip install <checkout>`` (whose build precompiled the kernels);
- **quick start, empty cache**: ``examples/quickstart_chunking.py`` run from the checkout
  with an empty cache, its compile seconds as the script reports them (numba compile
  events);
- **quick start after pip install**: the same script with the fresh environment's Python and
  no ``NUMBA_CACHE_DIR``, so that numba looks up the cache the wheel installed; and the
  seconds ``pip install`` took with and without the precompilation
  (``SKSTRUCT_KERNEL_CACHE=0``), each into its own new environment.

Run: ``python benchmarks/bench_compile_time.py`` (``--no-install`` skips the two virtual
environments, which download numpy, scipy and numba wheels from PyPI unless cached).
Writes ``results/compile_time.md`` and ``results/compile_time.json``.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _report import git_commit, machine_summary  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

PROBE = r"""
import json, time
t0 = time.perf_counter()
import numpy as np
import scipy.sparse as sp
import skstruct
from skstruct import CRF
from skstruct.decoders import ChainDecoder, ChainScores
from skstruct.warmup import CompileTimer
times = {"import skstruct": time.perf_counter() - t0}
timer = CompileTimer().start()
rng = np.random.default_rng(0)
scores = ChainScores(rng.normal(size=(5, 3)), [0, 2, 5], rng.normal(size=(3, 3)),
                     np.zeros(3), np.zeros(3))
decoder = ChainDecoder()
steps = {
    "Viterbi": lambda: decoder.map(scores),
    "forward-backward (rescaled)": lambda: decoder.marginals(scores),
    "forward-backward (log space)": lambda: ChainDecoder(log_space=True).marginals(scores),
    "top-k Viterbi": lambda: decoder.top_k(scores, 3),
    "CRF.fit, sparse input (matmul, L-BFGS kernels)": lambda: CRF(max_iter=3).fit(
        [sp.csr_matrix(rng.normal(size=(4, 6)))] * 3, [["a", "b", "a", "b"]] * 3),
}
for name, step in steps.items():
    tic = time.perf_counter()
    step()
    times[name] = time.perf_counter() - tic
timer.stop()
print(json.dumps({"times": times, "compile_seconds": timer.seconds,
                  "compiled": len(timer.compiled), "package": skstruct.__file__}))
"""

QUICKSTART = ROOT / "examples" / "quickstart_chunking.py"
_COMPILED = re.compile(r"numba compiled (\d+) kernel specializations? in ([\d.]+) s")


def _env(cache_dir=None, pythonpath=None):
    env = {key: value for key, value in os.environ.items()
           if key not in ("NUMBA_CACHE_DIR", "PYTHONPATH")}
    env["PYTHONWARNINGS"] = "ignore"
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = str(cache_dir)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return env


def run_probe(python, env):
    out = subprocess.run([python, "-c", PROBE], env=env, check=True, cwd=tempfile.gettempdir(),
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def run_quickstart(python, env):
    """Compile seconds, specializations compiled and wall seconds of the quick start."""
    tic = time.perf_counter()
    out = subprocess.run([python, str(QUICKSTART)], env=env, check=True, cwd=ROOT,
                         capture_output=True, text=True).stdout
    wall = time.perf_counter() - tic
    match = _COMPILED.search(out)
    return {"compile_seconds": float(match.group(2)), "compiled": int(match.group(1)),
            "wall_seconds": wall,
            "output": [line for line in out.splitlines()
                       if line.startswith(("trained", "tagged", "numba"))]}


def fresh_install(venv, precompile=True):
    """A new virtual environment with ``pip install <checkout>``; its Python and seconds."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(Path(venv) / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--upgrade", "pip"],
                   check=True)
    env = _env()
    if not precompile:
        env["SKSTRUCT_KERNEL_CACHE"] = "0"
    tic = time.perf_counter()
    subprocess.run([python, "-m", "pip", "install", "--quiet", str(ROOT)], env=env,
                   check=True)
    return python, time.perf_counter() - tic


def load_average():
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-install", action="store_true",
                        help="skip the measurements in fresh virtual environments")
    parser.add_argument("--no-quickstart", action="store_true",
                        help="skip the quick start runs (each trains the full CRF)")
    args = parser.parse_args(argv)
    result = {"machine": machine_summary(), "commit": git_commit(),
              "load_average_start": load_average()}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        result["kernels_empty_cache"] = run_probe(sys.executable, _env(tmp / "c1", ROOT))
        result["kernels_cache_filled"] = run_probe(sys.executable, _env(tmp / "c1", ROOT))
        if not args.no_quickstart:
            result["quickstart_empty_cache"] = run_quickstart(
                sys.executable, _env(tmp / "c2", pythonpath=ROOT))
        if not args.no_install:
            python, seconds = fresh_install(tmp / "venv_plain", precompile=False)
            result["pip_install_seconds_plain"] = seconds
            python, seconds = fresh_install(tmp / "venv")
            result["pip_install_seconds"] = seconds
            result["kernels_after_install"] = run_probe(python, _env())
            if not args.no_quickstart:
                result["quickstart_after_install"] = run_quickstart(python, _env())
    result["load_average_end"] = load_average()
    write(result)


def write(result):
    cold, warm = result["kernels_empty_cache"], result["kernels_cache_filled"]
    installed = result.get("kernels_after_install")
    lines = [
        "# First-call cost of the compiled kernels",
        "",
        f"Commit {result['commit']}; {result['machine']['cpu']}, "
        f"{result['machine']['cores']} cores; load average "
        f"{result['load_average_start']:.1f} at the start, "
        f"{result['load_average_end']:.1f} at the end. Produced by "
        "`python benchmarks/bench_compile_time.py`.",
        "",
        "## Basic operations",
        "",
        "Seconds for the first call of each operation in a fresh process: *empty cache* "
        "compiles, *cache filled* loads what the first run compiled, *after pip install* "
        "runs in a new virtual environment where `pip install .` precompiled the kernels "
        "(no `NUMBA_CACHE_DIR`).",
        "",
        "| step | empty cache (s) | cache filled (s) | after pip install (s) |",
        "|---|---|---|---|",
    ]
    for name in cold["times"]:
        after = f"{installed['times'][name]:.2f}" if installed else "–"
        lines.append(f"| {name} | {cold['times'][name]:.2f} | {warm['times'][name]:.2f} "
                     f"| {after} |")
    total = (f"{sum(installed['times'].values()):.1f}" if installed else "–")
    lines.append(f"| **total** | **{sum(cold['times'].values()):.1f}** | "
                 f"**{sum(warm['times'].values()):.1f}** | **{total}** |")
    row = (lambda run: f"{run['compile_seconds']:.1f} s ({run['compiled']} specializations)"
           if run else "–")
    lines += ["", "numba compile seconds (compile events) in these calls: "
              f"empty cache {row(cold)}, cache filled {row(warm)}, "
              f"after pip install {row(installed)}.", ""]
    qs_cold = result.get("quickstart_empty_cache")
    qs_installed = result.get("quickstart_after_install")
    if qs_cold or qs_installed:
        lines += ["## Quick start", "",
                  "`examples/quickstart_chunking.py`: the numba compile seconds it reports "
                  "and its wall seconds.", "",
                  "| setting | compile (s) | specializations compiled | wall (s) |",
                  "|---|---|---|---|"]
        for label, run in (("empty cache, no precompiled kernels", qs_cold),
                           ("after `pip install .` in a new environment", qs_installed)):
            if run:
                lines.append(f"| {label} | {run['compile_seconds']:.1f} | {run['compiled']} "
                             f"| {run['wall_seconds']:.1f} |")
        lines.append("")
    if "pip_install_seconds" in result:
        lines += ["## Cost at install time", "",
                  "Wall seconds of `pip install <checkout>` into a new virtual environment "
                  "(wheels from pip's cache): "
                  f"{result['pip_install_seconds_plain']:.0f} s with "
                  "`SKSTRUCT_KERNEL_CACHE=0` (no precompilation; the build environment is "
                  f"still created), {result['pip_install_seconds']:.0f} s with it.", ""]
    results = Path(__file__).parent / "results"
    results.mkdir(exist_ok=True)
    (results / "compile_time.md").write_text("\n".join(lines))
    (results / "compile_time.json").write_text(json.dumps(result, indent=1) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
