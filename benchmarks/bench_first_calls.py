"""Seconds spent compiling in every example and documented first call of a fresh install.

Makes a new virtual environment, ``pip install``\\ s the checkout into it (not editable, so
that the wheel's build runs ``python -m skstruct.warmup`` and the installed package
carries the precompiled kernels), adds matplotlib for the gallery, then runs, each in a
fresh process with that environment's Python, no ``NUMBA_CACHE_DIR`` and an empty user
cache directory (``XDG_CACHE_HOME`` pointing to a new folder, so nothing compiled by an
earlier call is reused):

- every script of ``examples/`` and ``examples/gallery/`` (matplotlib's ``Agg`` backend);
- pystruct 0.3.2's examples that run on ``skstruct.compat.pystruct`` (``plot_letters.py``,
  ``multi_label.py``, ``plot_ssvm_objective_curves.py``), with the facade's imports,
  read from the peers' source distribution when it is there;
- the README's "Using it" snippet and the examples of the public estimators' docstrings;
- the doctests of every user-guide page that has some (``doc/user_guide/*.rst``), one
  process per page: the calls a reader copies first.

Each run counts numba's compile events (:class:`skstruct.warmup.CompileTimer`, outermost
compilations only) and reports the seconds spent compiling, the specializations compiled
and the wall seconds. The goal (issue 31): no call compiles for more than 5 s.

Run: ``python benchmarks/bench_first_calls.py`` (about 10–15 minutes on 2 cores; wheels
from pip's cache or the configured index). ``--cache-dir DIR`` skips the installation
and runs the same calls from the checkout with ``NUMBA_CACHE_DIR=DIR`` (fill it first
with ``NUMBA_CACHE_DIR=DIR python -m skstruct.warmup``): a quicker check of what the
warm-up misses. ``--only NAME`` (repeatable) runs only the calls whose name contains
NAME. Writes ``results/first_calls.md`` and ``results/first_calls.json`` (not with
``--cache-dir`` or ``--only``, unless ``--write``).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _report import git_commit, machine_summary  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LIMIT_SECONDS = 5.0

#: The public estimators, whose class docstrings' examples are first calls too.
ESTIMATORS = ["CRF", "PerturbedMAPClassifier", "SparseMAPClassifier", "StructuredPerceptron",
              "StructuredSVM"]

#: Extra arguments of the examples that take them: a smaller run, which compiles the same
#: kernels (the compilation does not depend on the data size) in less time.
EXAMPLE_ARGS = {"dependency_parsing_ewt.py": ["--max-train", "300", "--max-iter", "5",
                                            "--sparsemap-max-iter", "5"],
                "pystruct_snakes_edge_features.py": ["--n-train", "20", "--n-test", "10",
                                                     "--max-iter", "5"]}

# Runs one call in this process under a CompileTimer and writes what it measured as JSON
# to the file named by argv[1]. argv[2] is the kind ("script", "snippet", "doctest") and
# argv[3] the path; argv[4:] are the script's arguments.
RUNNER = r"""
import json, sys, time, warnings
out, kind, path, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
import skstruct
from skstruct.warmup import CompileTimer
timer = CompileTimer().start()
tic = time.perf_counter()
failed = None
attempted = None
try:
    if kind == "script":
        import runpy
        sys.argv = [path] + args
        runpy.run_path(path, run_name="__main__")
    elif kind == "snippet":
        code = open(path).read()
        exec(compile(code, "README snippet", "exec"), {"__name__": "__main__"})
    elif kind == "docstring":
        import doctest, importlib
        module, _, name = path.rpartition(".")
        obj = getattr(importlib.import_module(module), name)
        runner = doctest.DocTestRunner(
            optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
        for test in doctest.DocTestFinder(recurse=False).find(obj, name, globs={}):
            runner.run(test, out=lambda text: None)
        result = runner.summarize(verbose=False)
    else:
        import doctest
        result = doctest.testfile(path, module_relative=False,
                                  optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS,
                                  report=False)
    if kind in ("docstring", "doctest"):
        attempted = result.attempted
        if result.failed or not result.attempted:
            failed = f"{result.failed} of {result.attempted} doctests failed"
except BaseException as error:
    failed = f"{type(error).__name__}: {error}"
wall = time.perf_counter() - tic
timer.stop()
with open(out, "w") as f:
    json.dump({"compile_seconds": timer.seconds, "compiled": [list(map(str, c)) for c in timer.compiled],
               "wall_seconds": wall, "failed": failed, "doctests": attempted, "package": skstruct.__file__}, f)
"""


def readme_snippet():
    """The first ``.. code-block:: python`` of README.rst's "Using it" section."""
    text = (ROOT / "README.rst").read_text()
    start = text.index("Using it")
    block = text.index(".. code-block:: python", start)
    lines = []
    for line in text[block:].splitlines()[2:]:
        if line and not line.startswith("    "):
            break
        lines.append(line[4:])
    return "\n".join(lines).strip() + "\n"


#: pystruct 0.3.2's examples that run on the facade, with the imports it changes
#: (read from the peers' source distribution when it is there).
PYSTRUCT_SDIST = Path.home() / ".cache" / "skstruct-peers" / "peers-sdists" / \
    "pystruct-0.3.2.tar.gz"
PYSTRUCT_EXAMPLES = {
    "plot_letters.py": {
        "from pystruct.datasets import load_letters":
            "from skstruct.compat.pystruct.datasets import load_letters",
        "from pystruct.models import ChainCRF":
            "from skstruct.compat.pystruct.models import ChainCRF",
        "from pystruct.learners import FrankWolfeSSVM":
            "from skstruct.compat.pystruct.learners import FrankWolfeSSVM"},
    "multi_label.py": {
        "from sklearn.datasets import fetch_mldata": "pass",
        "from pystruct.learners import OneSlackSSVM":
            "from skstruct.compat.pystruct.learners import OneSlackSSVM",
        "from pystruct.models import MultiLabelClf":
            "from skstruct.compat.pystruct.models import MultiLabelClf",
        "from pystruct.datasets import load_scene":
            "from skstruct.compat.pystruct.datasets import load_yeast as load_scene"},
    "plot_ssvm_objective_curves.py": {
        "from pystruct.models import GridCRF":
            "from skstruct.compat.pystruct.models import GridCRF",
        "from pystruct.learners import (NSlackSSVM, OneSlackSSVM, SubgradientSSVM,":
            "from skstruct.compat.pystruct.learners import (NSlackSSVM, OneSlackSSVM, "
            "SubgradientSSVM,",
        "from pystruct.datasets import generate_crosses_explicit":
            "from skstruct.compat.pystruct.datasets import generate_crosses_explicit"},
}


def pystruct_examples(tmp):
    """pystruct's examples with the facade's imports, written to ``tmp``."""
    import tarfile

    if not PYSTRUCT_SDIST.exists():
        return []
    found = []
    with tarfile.open(PYSTRUCT_SDIST) as tar:
        for name, rewrites in PYSTRUCT_EXAMPLES.items():
            text = tar.extractfile(f"pystruct-0.3.2/examples/{name}").read().decode()
            lines = text.replace("\r\n", "\n").split("\n")
            lines = [rewrites.get(line.strip(), line) for line in lines]
            path = Path(tmp) / f"pystruct_{name}"
            path.write_text("\n".join(lines))
            found.append((f"pystruct's examples/{name} (facade imports)", "script", path,
                          []))
    return found


def calls(tmp):
    """(name, kind, path, args) of every call measured."""
    found = []
    for script in sorted((ROOT / "examples").glob("*.py")):
        found.append((f"examples/{script.name}", "script", script,
                      EXAMPLE_ARGS.get(script.name, [])))
    for script in sorted((ROOT / "examples" / "gallery").glob("*.py")):
        found.append((f"examples/gallery/{script.name}", "script", script, []))
    found += pystruct_examples(tmp)
    snippet = Path(tmp) / "readme_snippet.py"
    snippet.write_text(readme_snippet())
    found.append(("README snippet", "snippet", snippet, []))
    for name in ESTIMATORS:
        found.append((f"{name} docstring example", "docstring", f"skstruct.{name}", []))
    for page in sorted((ROOT / "doc" / "user_guide").glob("*.rst")):
        if re.search(r"^\s*>>> ", page.read_text(), flags=re.M):
            found.append((f"doc/user_guide/{page.name} (doctests)", "doctest", page, []))
    return found


def _env(tmp, cache_dir=None, pythonpath=None):
    env = {key: value for key, value in os.environ.items()
           if key not in ("NUMBA_CACHE_DIR", "PYTHONPATH")}
    env["PYTHONWARNINGS"] = "ignore"
    env["MPLBACKEND"] = "Agg"
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = env["SOURCE_CACHE_DIR"] = str(cache_dir)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return env


def run_call(python, env, kind, path, args, tmp, timeout):
    out = Path(tmp) / "call.json"
    if out.exists():
        out.unlink()
    # Nothing compiled by an earlier call may serve this one: a new user cache directory,
    # and with --cache-dir a new copy of the warm-up's cache.
    env = dict(env)
    user_cache = Path(tmp) / "user-cache"
    shutil.rmtree(user_cache, ignore_errors=True)
    env["XDG_CACHE_HOME"] = str(user_cache)
    if "NUMBA_CACHE_DIR" in env:
        copy = Path(tmp) / "numba-cache"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(env.pop("SOURCE_CACHE_DIR"), copy)
        env["NUMBA_CACHE_DIR"] = str(copy)
    tic = time.perf_counter()
    try:
        proc = subprocess.run([python, "-c", RUNNER, str(out), kind, str(path), *args],
                              env=env, cwd=tmp, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"failed": f"timed out after {timeout} s", "compile_seconds": float("nan"),
                "compiled": [], "wall_seconds": time.perf_counter() - tic}
    if not out.exists():
        return {"failed": f"exit {proc.returncode}: {proc.stderr[-500:]}",
                "compile_seconds": float("nan"), "compiled": [],
                "wall_seconds": time.perf_counter() - tic}
    result = json.loads(out.read_text())
    result["notices"] = [line for line in proc.stdout.splitlines() if "compiling" in line]
    return result


def fresh_install(venv):
    """A new virtual environment with the checkout installed; its Python and seconds."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(Path(venv) / "bin" / "python")
    env = {key: value for key, value in os.environ.items()
           if key not in ("NUMBA_CACHE_DIR", "PYTHONPATH")}
    tic = time.perf_counter()
    build = subprocess.run([python, "-m", "pip", "install", "-v", str(ROOT)], env=env,
                           check=True, capture_output=True, text=True)
    seconds = time.perf_counter() - tic
    # pip shows the build backend's output with -v, on stdout or stderr by pip version.
    warmup = [line.strip() for line in (build.stdout + build.stderr).splitlines()
              if " s compiling (" in line or "kernel specializations compiled" in line]
    subprocess.run([python, "-m", "pip", "install", "--quiet", "matplotlib"], env=env,
                   check=True)
    return python, seconds, warmup


def load_average():
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", help="run from the checkout with this NUMBA_CACHE_DIR "
                        "instead of installing into a new environment")
    parser.add_argument("--only", action="append", default=[],
                        help="run only the calls whose name contains this")
    parser.add_argument("--timeout", type=float, default=1200.0,
                        help="seconds after which a call is stopped (default 1200)")
    parser.add_argument("--write", action="store_true",
                        help="write the results even with --cache-dir or --only")
    args = parser.parse_args(argv)
    result = {"machine": machine_summary(), "commit": git_commit(),
              "load_average_start": load_average(), "calls": {}}
    with tempfile.TemporaryDirectory() as tmp:
        if args.cache_dir:
            python = sys.executable
            env = _env(tmp, cache_dir=Path(args.cache_dir).resolve(), pythonpath=ROOT)
            result["setting"] = f"checkout, NUMBA_CACHE_DIR={args.cache_dir}"
        else:
            python, seconds, warmup = fresh_install(Path(tmp) / "venv")
            env = _env(tmp)
            result["setting"] = "fresh virtual environment after pip install <checkout>"
            result["pip_install_seconds"] = seconds
            result["warmup"] = warmup
            print(f"pip install: {seconds:.0f} s", *warmup, sep="\n", flush=True)
        for name, kind, path, call_args in calls(tmp):
            if args.only and not any(part in name for part in args.only):
                continue
            run = run_call(python, env, kind, path, call_args, tmp, args.timeout)
            run["args"] = call_args
            result["calls"][name] = run
            print(f"{name}: {run['compile_seconds']:.1f} s compiling "
                  f"({len(run['compiled'])} specializations), {run['wall_seconds']:.1f} s "
                  f"wall{'; FAILED ' + run['failed'] if run['failed'] else ''}", flush=True)
            for qualname, types in run["compiled"]:
                print(f"    {qualname} {types[:150]}", flush=True)
    result["load_average_end"] = load_average()
    if (not args.cache_dir and not args.only) or args.write:
        write(result)


def write(result):
    lines = [
        "# First calls in a fresh install: seconds spent compiling",
        "",
        f"Commit {result['commit']}; {result['machine']['cpu']}, "
        f"{result['machine']['cores']} cores; load average "
        f"{result['load_average_start']:.1f} at the start, "
        f"{result['load_average_end']:.1f} at the end. Setting: {result['setting']}. "
        "Produced by `python benchmarks/bench_first_calls.py`.",
        "",
        "Each call runs in a fresh process with an empty user cache directory; *compile* is "
        "the wall seconds numba spent compiling in it (compile events, outermost "
        f"compilations only). Goal: at most {LIMIT_SECONDS:.0f} s per call.",
        "",
        "| call | compile (s) | specializations compiled | wall (s) | ok |",
        "|---|---|---|---|---|",
    ]
    worst = 0.0
    for name, run in result["calls"].items():
        label = name + (f" `{' '.join(run['args'])}`" if run.get("args") else "")
        ok = "failed: " + run["failed"] if run["failed"] else (
            "yes" if run["compile_seconds"] <= LIMIT_SECONDS else "**no**")
        worst = max(worst, run["compile_seconds"])
        lines.append(f"| {label} | {run['compile_seconds']:.1f} | {len(run['compiled'])} "
                     f"| {run['wall_seconds']:.1f} | {ok} |")
    lines += ["", f"Largest compile time of one call: {worst:.1f} s.", ""]
    compiled = [(name, c) for name, run in result["calls"].items() for c in run["compiled"]]
    if compiled:
        lines += ["Specializations still compiled (kernel, argument types):", ""]
        lines += [f"- {name}: `{qualname}` {types[:120]}" for name, (qualname, types) in compiled]
        lines.append("")
    if "pip_install_seconds" in result:
        lines += ["## The wheel's warm-up", "",
                  f"`pip install <checkout>` took {result['pip_install_seconds']:.0f} s "
                  "(build environment from pip's cache, the warm-up, the installation). "
                  "The warm-up's own report (`python -m skstruct.warmup`, printed by "
                  "`pip install -v`):", "", "```",
                  *(result["warmup"] or ["(not found in pip's output)"]), "```", ""]
    results = Path(__file__).parent / "results"
    results.mkdir(exist_ok=True)
    (results / "first_calls.md").write_text("\n".join(lines))
    (results / "first_calls.json").write_text(json.dumps(result, indent=1) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
