"""The smoothed solvers' defaults after 30 epochs, against BCFW's certified lower bound.

For each task (OCR fold 0; the first ``--n-train`` training sentences of CoNLL-2000
chunking and of UD EWT UPOS, token features hashed to 2^16 columns as in
``bench_smoothed_svm.py``) and λ ∈ {1, 0.1, 0.01}/n, a long BCFW run gives the best
primal F_BCFW (an upper bound on the optimum P*) and the certified lower bound
LB = max over passes of (primal − duality gap), a dual value. Then 30 epochs of
``StructuredSVM(solver="svrg")`` and ``solver="casimir"`` with default parameters
(``random_state=0``, ``n_jobs=1``), and of the previous defaults (constant μ = 1), are
compared with both: the objective reported is the primal of the returned (best) iterate.

Run: ``python benchmarks/bench_smoothed_svm_defaults.py`` (all tasks) or ``--quick``
(OCR fold 0 only, 300 BCFW passes). Writes ``results/smoothed_svm_defaults.json`` and
``results/smoothed_svm_defaults.md``.
"""

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from _report import code_version  # noqa: E402

import skstruct  # noqa: E402
from bench_smoothed_defaults import fit, load  # noqa: E402,F401 (one loader and fit)

RESULTS = Path(__file__).parent / "results"
LAMBDAS_N = (1.0, 0.1, 0.01)
EPOCHS = 30

CONFIGS = {
    "svrg (defaults)": dict(solver="svrg"),
    "casimir (defaults)": dict(solver="casimir"),
    "svrg, constant μ = 1 (previous default)": dict(solver="svrg", mu=1.0),
    "casimir const, μ = 1 (previous default)": dict(solver="casimir", schedule="const"),
}


def certificate(X, y, lam, passes):
    """BCFW's best primal, certified lower bound, passes and CPU seconds."""
    curve, cpu, est = fit(X, y, lam, passes, solver="bcfw", check_gap_every=1)
    gaps = np.asarray(est.duality_gaps_)
    lower = float(np.max(curve[-len(gaps):] - gaps))
    return dict(upper=float(curve.min()), lower=lower, passes=len(curve), cpu=cpu,
                at_30=float(curve[min(EPOCHS, len(curve)) - 1]))


def one_setting(X, y, lam_n, bcfw_passes):
    """The record of one task and λ: the certificate and every configuration's run."""
    lam = lam_n / len(X)
    record = dict(lambda_n=lam_n, n=len(X), bcfw=certificate(X, y, lam, bcfw_passes),
                  runs={})
    lower = record["bcfw"]["lower"]
    for label, params in CONFIGS.items():
        curve, cpu, _ = fit(X, y, lam, EPOCHS, **params)
        best = float(curve.min())
        breaks = np.maximum(curve[1:] - np.minimum.accumulate(curve)[:-1], 0) / best
        record["runs"][label] = dict(final=best, last=float(curve[-1]), cpu=cpu,
                                     gap=(best - lower) / lower,
                                     max_increase=float(breaks.max(initial=0.0)))
        print(f"  {label}: {best:.5f} ({(best - lower) / lower:+.2%} of LB) {cpu:.1f} s",
              flush=True)
    return record


def table(task, records):
    """The markdown table of a task."""
    lines = [f"## {task}, n = {records[0]['n']}", "",
             "| λ·n | certified LB | F_BCFW | BCFW passes (CPU s) | BCFW after 30 passes | "
             + " | ".join(f"{label}: F after 30 epochs (gap to LB), CPU s"
                          for label in CONFIGS) + " |",
             "|---" * (5 + len(CONFIGS)) + "|"]
    for r in records:
        b = r["bcfw"]
        cells = [f"{r['lambda_n']:g}", f"{b['lower']:.5f}", f"{b['upper']:.5f}",
                 f"{b['passes']} ({b['cpu']:.0f})",
                 f"{b['at_30']:.5f} ({(b['at_30'] - b['lower']) / b['lower']:+.1%})"]
        for label in CONFIGS:
            run = r["runs"][label]
            cells.append(f"{run['final']:.5f} ({run['gap']:+.1%}), {run['cpu']:.1f}")
        lines.append("| " + " | ".join(cells) + " |")
    return lines + [""]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="OCR fold 0 only, 300 BCFW passes")
    parser.add_argument("--tasks", nargs="+", default=["ocr", "chunking", "upos"])
    parser.add_argument("--n-train", type=int, default=500)
    parser.add_argument("--bcfw-passes", type=int, default=1000)
    args = parser.parse_args()
    tasks = ["ocr"] if args.quick else args.tasks
    passes = 300 if args.quick else args.bcfw_passes
    out = {"version": code_version(skstruct), "load": os.getloadavg()[0],
           "n_train": args.n_train, "tasks": {}}
    for task in tasks:
        X, y = load(task, args.n_train)
        out["tasks"][task] = []
        for lam_n in LAMBDAS_N:
            print(f"{task}, λ = {lam_n:g}/n", flush=True)
            out["tasks"][task].append(one_setting(X, y, lam_n, passes))
    suffix = "_quick" if args.quick else ""
    (RESULTS / f"smoothed_svm_defaults{suffix}.json").write_text(json.dumps(out, indent=1))
    lines = [f"Produced by `python benchmarks/bench_smoothed_svm_defaults.py"
             f"{' --quick' if args.quick else ''}` (skstruct {out['version']}, load "
             f"{out['load']:.1f}); gap = (F − LB) / LB, F the primal of the returned "
             "(best) iterate.", ""]
    for task, records in out["tasks"].items():
        lines += table(task, records)
    (RESULTS / f"smoothed_svm_defaults{suffix}.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
