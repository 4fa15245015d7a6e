"""Peak memory of SparseMAP on multilabel data with hundreds of labels.

Two measurements per data set, each in a fresh process under ``/usr/bin/time -v`` (its
"Maximum resident set size" is the peak memory reported):

- *fit*: ``SparseMAPClassifier(max_iter=3).fit(X, Y)`` through the public estimator, with
  whatever SparseMAP solver the multilabel decoder brings (the solver is recorded: the
  closed form ``"clip"`` once the decoder has its own ``sparsemap``, else the active set);
- *active set*: the generic active set forced on the multilabel decoder,
  ``active_set_sparsemap(MultilabelDecoder(), MultilabelScores(S))`` (``sparsemap`` in the
  old code, where it is the active set) on the full-size scores S = X W + b of the model
  the fit above returns (computed once with the new code and saved), with the default
  ``max_iter=100, tol=1e-9``.

Data: the MULAN sets of this size (corel5k: 374 labels, delicious: 983) are not among the
offline copies in ``../shared/data``, so synthetic sets of the same shapes stand in:
4,500 × 499 (corel5k's train split; label cardinality 3.5) and 12,920 × 500
(delicious's; cardinality 19.0), binary features of density 0.05, labels from a random
linear model thresholded per label at Zipf-distributed frequencies that sum to the
cardinality (``make_multilabel``, seeded). ``--sizes`` replaces them (``n×d×L×c``).

A child process whose resident memory passes ``--cap-gb`` (default 10) stops itself and
the run is reported as "> cap" (the machine is shared).

Run: ``python benchmarks/bench_sparsemap_memory.py --before /tmp/before`` with
``/tmp/before`` an extracted copy of the code to compare with (``git archive <commit> |
tar -x -C /tmp/before``); without ``--before`` only this checkout is measured. Writes
``results/sparsemap_memory.md`` next to this file.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
SETS = {
    "corel5k-like": (4500, 499, 374, 3.5),
    "delicious-like": (12920, 500, 983, 19.0),
}


def make_multilabel(n_samples, n_features, n_labels, cardinality, seed=0):
    """Binary features and labels thresholded from a random linear model.

    Label j is on where its latent score is above the (1 − f_j) quantile of its column,
    with frequencies f_j ∝ 1/(j + 1)^0.8 scaled to sum to ``cardinality`` (capped at 0.5).
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    X = (rng.random((n_samples, n_features)) < 0.05).astype(np.float64)
    latent = X @ rng.normal(size=(n_features, n_labels)) + rng.normal(
        size=(n_samples, n_labels))
    frequency = 1.0 / np.arange(1, n_labels + 1) ** 0.8
    frequency = np.minimum(frequency * cardinality / frequency.sum(), 0.5)
    thresholds = np.quantile(latent, 1.0 - frequency, axis=0).diagonal()
    Y = (latent > thresholds).astype(np.int64)
    return X, Y


def _watchdog(cap_bytes):
    """Stop this process when its resident memory passes ``cap_bytes``."""
    def watch():
        while True:
            with open("/proc/self/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        rss = int(line.split()[1]) * 1024
            if rss > cap_bytes:
                print(json.dumps({"capped": True, "rss": rss}), flush=True)
                os._exit(3)
            time.sleep(0.05)

    threading.Thread(target=watch, daemon=True).start()


def child(args):
    sys.path.insert(0, str(Path(args.code).resolve()))
    import numpy as np

    import skstruct
    from skstruct import SparseMAPClassifier
    from skstruct.decoders import MultilabelDecoder, MultilabelScores
    from skstruct.decoders._sparsemap import sparsemap as module

    assert Path(skstruct.__file__).resolve().is_relative_to(Path(args.code).resolve())
    _watchdog(args.cap_gb * 2**30)
    n, d, n_labels, cardinality = (float(v) for v in args.size.split("x"))
    X, Y = make_multilabel(int(n), int(d), int(n_labels), cardinality, seed=args.seed)
    solver = getattr(module, "active_set_sparsemap", module.sparsemap)
    tiny = MultilabelScores(np.array([[0.5, -1.0]]))
    out = {}
    start = time.perf_counter()
    if args.mode == "fit":
        model = SparseMAPClassifier(max_iter=3).fit(X, Y)
        out["n_iter"] = int(model.n_iter_)
        out["solver"] = module.sparsemap(MultilabelDecoder(), tiny).method
        if args.save_scores:
            np.save(args.save_scores, X @ model.coef_.T + model.intercept_)
    else:
        scores = MultilabelScores(np.load(args.scores))
        result = solver(MultilabelDecoder(), scores)
        out["solver"] = result.method
        out["support_mean"] = float(result.support_size.mean())
        out["support_max"] = int(result.support_size.max())
        out["converged"] = float(result.converged.mean())
        out["unary_error"] = float(np.abs(result.unary - np.clip(scores.unary, 0, 1)).max())
    out["seconds"] = time.perf_counter() - start
    print(json.dumps(out), flush=True)


def measure(code, mode, size, cap_gb, seed, scores=None, save_scores=None):
    command = ["/usr/bin/time", "-v", sys.executable, __file__, "--child", "--code", code,
               "--mode", mode, "--size", size, "--cap-gb", str(cap_gb), "--seed", str(seed)]
    if scores:
        command += ["--scores", scores]
    if save_scores:
        command += ["--save-scores", save_scores]
    env = dict(os.environ, PYTHONPATH=code)
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    peak = next(int(line.split(":")[1]) * 1024 for line in done.stderr.splitlines()
                if "Maximum resident set size" in line)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    record = json.loads(lines[-1]) if lines else {"error": done.stderr[-2000:]}
    record.update(peak=peak, code=code, mode=mode, size=size)
    if done.returncode not in (0, 3):
        record["error"] = done.stderr[-2000:]
    print(json.dumps(record), flush=True)
    return record


def _gib(record, cap_gb):
    if record.get("capped"):
        return f"> {cap_gb} GiB (stopped)"
    if "error" in record:
        return "error"
    return f"{record['peak'] / 2**30:.2f} GiB"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--code", default=str(HERE.parent))
    parser.add_argument("--before", default=None)
    parser.add_argument("--mode", default="fit")
    parser.add_argument("--size", default=None)
    parser.add_argument("--sizes", default=None,
                        help="comma-separated name=n×d×L×c (with x for ×)")
    parser.add_argument("--scores", default=None)
    parser.add_argument("--save-scores", default=None)
    parser.add_argument("--cap-gb", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.child:
        return child(args)
    sets = {name: "x".join(str(v) for v in shape) for name, shape in SETS.items()}
    if args.sizes:
        sets = dict(item.split("=") for item in args.sizes.split(","))
    after = str(HERE.parent)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, size in sets.items():
            saved = str(Path(tmp) / f"{name}.npy")
            fit_after = measure(after, "fit", size, args.cap_gb, args.seed, save_scores=saved)
            runs = {"after": {"fit": fit_after}}
            runs["after"]["active_set"] = measure(after, "active_set", size, args.cap_gb,
                                                  args.seed, scores=saved)
            if args.before:
                runs["before"] = {mode: measure(args.before, mode, size, args.cap_gb,
                                                args.seed, scores=saved)
                                  for mode in ("fit", "active_set")}
            rows.append((name, size, runs))
    write_report(rows, args)


def write_report(rows, args):
    from _report import cpu_name, git_commit

    lines = [
        "# SparseMAP peak memory on multilabel data with hundreds of labels",
        "",
        f"Command: `python benchmarks/bench_sparsemap_memory.py"
        f"{' --before <old checkout>' if args.before else ''}`; commit {git_commit()}, "
        f"{cpu_name()}. Peak = maximum resident set size of the whole process "
        "(`/usr/bin/time -v`), including Python, numpy, numba and the data.",
        "",
        "| data (n × d, labels, cardinality) | measurement | code | solver | peak memory "
        "| time | notes |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, size, runs in rows:
        n, d, n_labels, cardinality = size.split("x")
        shape = f"{name} ({n} × {d}, {n_labels}, {cardinality})"
        for version in ("before", "after"):
            for mode, record in runs.get(version, {}).items():
                what = ("SparseMAPClassifier(max_iter=3).fit" if mode == "fit"
                        else "active set forced, full-size scores")
                notes = ""
                if mode == "active_set" and "support_mean" in record:
                    notes = (f"support mean {record['support_mean']:.1f}, max "
                             f"{record['support_max']}, converged "
                             f"{100 * record['converged']:.0f} %, max abs(u − clip(η)) "
                             f"{record['unary_error']:.1e}")
                seconds = f"{record['seconds']:.1f} s" if "seconds" in record else "–"
                lines.append(f"| {shape} | {what} | {version} | {record.get('solver', '–')} "
                             f"| {_gib(record, args.cap_gb)} | {seconds} | {notes} |")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "sparsemap_memory.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
