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
compilations only) and reports the seconds spent compiling, as CPU seconds of the compiling
thread and as wall seconds, the specializations compiled and the wall seconds of the call.
The goal (issue 31): no call compiles for more than 5 s (CPU seconds: on a shared machine
the wall seconds of a compilation grow with the load). An example that ends with the error
its original raises too (``ORIGINALS_ERRORS``) counts as run.

Run: ``python benchmarks/bench_first_calls.py`` (about 10–15 minutes on 2 cores; wheels
from pip's cache or the configured index). ``--cache-dir DIR`` skips the installation
and runs the same calls from the checkout with ``NUMBA_CACHE_DIR=DIR`` (fill it first
with ``NUMBA_CACHE_DIR=DIR python -m skstruct.warmup``): a quicker check of what the
warm-up misses. ``--only NAME`` (repeatable) runs only the calls whose name contains
NAME. ``--python PY`` runs the calls with the Python of an environment the checkout was
installed into (``--install-record``: the one the last fresh-install run made, whose
installation record is kept). ``--render`` writes the markdown again from the json.
Writes ``results/first_calls.md`` and ``results/first_calls.json`` (not with
``--cache-dir``, ``--python`` or ``--only``, unless ``--write``).
"""

import argparse
import json
import os
import re
import shlex
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


class CPUCompileTimer(CompileTimer):
    # The CPU seconds of the thread that compiles, over the same outermost compilations:
    # on a shared machine the wall seconds of a compilation are its CPU seconds times the
    # machine's oversubscription, its CPU seconds what it costs on an idle machine.
    def __init__(self):
        super().__init__()
        self.cpu_seconds, self.cpu_durations, self._cpu_start = 0.0, [], None

    def on_start(self, event):
        if self._depth == 0:
            self._cpu_start = time.thread_time()
        super().on_start(event)

    def on_end(self, event):
        super().on_end(event)
        if self._depth == 0:
            seconds = time.thread_time() - self._cpu_start
            self.cpu_seconds += seconds
            self.cpu_durations.append(seconds)


timer = CPUCompileTimer().start()
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
    json.dump({"compile_seconds": timer.seconds, "compile_cpu_seconds": timer.cpu_seconds,
               "compile_durations": timer.durations,
               "compile_cpu_durations": timer.cpu_durations,
               "compiled": [list(map(str, c)) for c in timer.compiled],
               "wall_seconds": wall, "failed": failed, "doctests": attempted, "package": skstruct.__file__}, f)
"""


#: Errors an example ends with that its original raises as well, at the same line, under
#: the current versions of its other dependencies: (text of the error, why). The call
#: counts as run when it ends with that error.
ORIGINALS_ERRORS = {
    "pystruct's examples/plot_letters.py (facade imports)": (
        "The number of FixedLocator locations (25), usually from a call to set_ticks, does "
        "not match the number of labels (26)",
        "its last lines label the 26 rows of the transition matrix with 25 ticks "
        "(`plt.xticks(np.arange(25), abc)`), which matplotlib >= 3.5 refuses; pystruct "
        "0.3.2 itself raises the same error there, after everything the example computes "
        "and prints has run (checked with matplotlib 3.11.2, which the benchmark installs "
        "too: run with pystruct 0.3.2, whose own example first needs "
        "`np.array(X, dtype=object)` under NumPy >= 1.24, it prints a chain CRF test score "
        "of 0.7876 and a linear SVM's of 0.7138, then raises it)"),
}


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
    result["stdout_tail"] = proc.stdout[-300:]
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
    parser.add_argument("--python", help="run the calls with this Python, of an environment "
                        "into which the checkout was installed (pip install <checkout>, "
                        "not editable), instead of making a new one")
    parser.add_argument("--install-record", action="store_true",
                        help="with --python: the environment is the one the last "
                        "fresh-install run made; keep that run's installation record "
                        "(results/first_calls.json) in the report")
    parser.add_argument("--render", action="store_true",
                        help="only write results/first_calls.md again from "
                        "results/first_calls.json (the table's rules applied anew)")
    parser.add_argument("--write", action="store_true",
                        help="write the results even with --cache-dir or --only")
    args = parser.parse_args(argv)
    if args.render:
        result = json.loads((Path(__file__).parent / "results" / "first_calls.json")
                            .read_text())
        for name, run in result["calls"].items():
            expected = ORIGINALS_ERRORS.get(name)
            if run["failed"] and expected and expected[0] in run["failed"]:
                run["originals_error"], run["failed"] = run["failed"], None
        result["rendered"] = True
        write(result)
        return
    options = "".join(" " + shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    result = {"options": options, "machine": machine_summary(), "commit": git_commit(),
              "load_average_start": load_average(), "calls": {}}
    with tempfile.TemporaryDirectory() as tmp:
        if args.python:
            python = args.python
            env = _env(tmp)
            package = subprocess.run([python, "-c", "import skstruct; print(skstruct.__file__)"],
                                     env=env, cwd=tmp, capture_output=True, text=True,
                                     check=True).stdout.strip()
            result["setting"] = (f"the virtual environment of {python} (pip install "
                                 f"<checkout>; skstruct from {package})")
            previous = Path(__file__).parent / "results" / "first_calls.json"
            if args.install_record and previous.exists():
                # that environment's installation, as the fresh-install run recorded it
                before = json.loads(previous.read_text())
                if "pip_install_seconds" in before:
                    result["setting"] += (f", made by the fresh-install run at commit "
                                          f"{before['commit']}, whose installation record "
                                          "follows")
                    result["pip_install_seconds"] = before["pip_install_seconds"]
                    result["warmup"] = before["warmup"]
        elif args.cache_dir:
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
            expected = ORIGINALS_ERRORS.get(name)
            if run["failed"] and expected and expected[0] in run["failed"]:
                run["originals_error"], run["failed"] = run["failed"], None
            result["calls"][name] = run
            print(f"{name}: {run['compile_seconds']:.1f} s compiling "
                  f"({run.get('compile_cpu_seconds', float('nan')):.1f} s CPU; "
                  f"{len(run['compiled'])} specializations), {run['wall_seconds']:.1f} s "
                  f"wall{'; FAILED ' + run['failed'] if run['failed'] else ''}", flush=True)
            for qualname, types in run["compiled"]:
                print(f"    {qualname} {types[:150]}", flush=True)
    result["load_average_end"] = load_average()
    if (not args.cache_dir and not args.python and not args.only) or args.write:
        write(result)


def write(result):
    lines = [
        "# First calls in a fresh install: seconds spent compiling",
        "",
        f"Commit {result['commit']}; {result['machine']['cpu']}, "
        f"{result['machine']['cores']} cores; load average "
        f"{result['load_average_start']:.1f} at the start, "
        f"{result['load_average_end']:.1f} at the end. Setting: {result['setting']}. "
        f"Produced by `python benchmarks/bench_first_calls.py{result.get('options', '')}`"
        f"{'; this page written again from its json with `--render`' if result.get('rendered') else ''}.",
        "",
        "Each call runs in a fresh process with an empty user cache directory. *compile CPU* "
        "is the CPU seconds of the thread that compiles, over numba's outermost compile "
        "events in the call; *compile wall* the wall seconds of the same compilations, "
        "which on a loaded machine are the CPU seconds times the machine's "
        "oversubscription (see the load average). Goal: at most "
        f"{LIMIT_SECONDS:.0f} s of compiling per call, on the CPU seconds (what it costs "
        "on an idle machine).",
        "",
        "| call | compile CPU (s) | compile wall (s) | specializations compiled | wall (s) "
        "| ok |",
        "|---|---|---|---|---|---|",
    ]
    worst = 0.0
    notes = []
    for name, run in result["calls"].items():
        label = name + (f" `{' '.join(run['args'])}`" if run.get("args") else "")
        cpu = run.get("compile_cpu_seconds", float("nan"))
        measure = run["compile_seconds"] if cpu != cpu else cpu
        if run["failed"]:
            ok = "failed: " + run["failed"]
        else:
            ok = "yes" if measure <= LIMIT_SECONDS else "**no**"
            if run.get("originals_error"):
                notes.append(f"- {name} ends with `{run['originals_error']}`: "
                             f"{ORIGINALS_ERRORS[name][1]}.")
                ok += " (ends with the original's own error, below)"
        worst = max(worst, measure)
        lines.append(f"| {label} | {'n/a' if cpu != cpu else f'{cpu:.1f}'} "
                     f"| {run['compile_seconds']:.1f} "
                     f"| {len(run['compiled'])} | {run['wall_seconds']:.1f} | {ok} |")
    measured = "CPU" if all("compile_cpu_seconds" in run for run in result["calls"].values()) \
        else "wall; this run did not measure the CPU seconds"
    lines += ["", f"Largest compile time of one call: {worst:.1f} s ({measured}).", ""]
    if notes:
        lines += notes + [""]
    compiled = []
    for name, run in result["calls"].items():
        cpus = run.get("compile_cpu_durations") or [float("nan")] * len(run["compiled"])
        compiled += [(name, c, t) for c, t in zip(run["compiled"], cpus)]
    if compiled:
        lines += ["Specializations still compiled (kernel, CPU seconds, argument types):", ""]
        lines += [f"- {name}: `{qualname}` "
                  f"{'' if seconds != seconds else f'{seconds:.2f} s, '}{types[:120]}"
                  for name, (qualname, types), seconds in compiled]
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
