"""What the duality gap schedule of BCFW costs a pass: ``check_gap_every=1`` against 10.

``StructuredSVM(solver="bcfw", tol=0)`` on the OCR letters, trained on fold 0 (626
words, ``--passes`` passes) and on folds 1-9 (6,251 words, ``--large-passes``), C = 0.1
as in ``bench_ssvm_pystruct.py``: CPU time a pass (the whole fit's CPU time over its
passes) with the exact gap after every pass and after every tenth pass (and the last),
the two alternating in one process (the order swapped each round), medians of
``--repeats``. The ratio of the two is what the schedule saves on this machine in the
same run; the fitted coefficients of the two are checked to be identical. On fold 0 it
also records, from one fit with the gap after every pass (with and without averaging),
the running estimate of the gap (the block gaps met during a pass) over the exact gap,
at a few passes: what decides how early the estimate asks for the exact gap.

    PYTHONPATH=. python benchmarks/bench_bcfw_gap_schedule.py

Writes ``results/bcfw_gap_schedule.md`` and ``.json``.
"""

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import skstruct
import skstruct.optim._solvers as solvers
from skstruct import StructuredSVM
from skstruct.datasets import load_letters

sys.path.insert(0, str(Path(__file__).parent))
from _report import code_version, command_line, machine_summary, record_run  # noqa: E402

RESULTS = Path(__file__).parent / "results"
STEM = "bcfw_gap_schedule"


def fit_cpu(X, y, alpha, passes, every):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tic = time.process_time()
        model = StructuredSVM(alpha=alpha, tol=0.0, max_iter=passes, random_state=0,
                              check_gap_every=every).fit(X, y)
        return time.process_time() - tic, model


def estimate_over_gap(X, y, alpha, passes, averaging):
    """The running estimate over the exact gap at passes 1, 10, 20, ..., ``passes``."""
    results, run = [], solvers.minimize_bcfw

    def recording(*a, **k):
        results.append(run(*a, **k))
        return results[-1]

    solvers.minimize_bcfw = recording
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            StructuredSVM(alpha=alpha, tol=0.0, max_iter=passes, random_state=0,
                          check_gap_every=1, averaging=averaging).fit(X, y)
    finally:
        solvers.minimize_bcfw = run
    estimates = np.asarray(results[-1].extra["gap_estimates"])
    gaps = np.asarray(results[-1].duality_gaps)
    at = sorted({1, *range(10, passes + 1, 10), passes})
    return {str(k): float(estimates[k - 1] / gaps[k - 1]) for k in at}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=50)
    parser.add_argument("--large-passes", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--C", type=float, default=0.1)
    parser.add_argument("--label", default="latest")
    args = parser.parse_args(argv)
    letters = load_letters()
    load_before = os.getloadavg()[0]
    result = {}
    for title, folds, passes in (("fold 0", [0], args.passes),
                                 ("folds 1-9", list(range(1, 10)), args.large_passes)):
        keep = np.isin(letters.folds, folds)
        X = [x for x, k in zip(letters.data, keep) if k]
        y = [t for t, k in zip(letters.target, keep) if k]
        alpha = 1.0 / (args.C * len(X))
        fit_cpu(X[:40], y[:40], alpha, 2, 1)  # compile or load the kernels
        cpu, models = {1: [], 10: []}, {}
        for r in range(args.repeats):
            for every in ((1, 10) if r % 2 == 0 else (10, 1)):
                seconds, models[every] = fit_cpu(X, y, alpha, passes, every)
                cpu[every].append(seconds / passes)
                print(f"{title}, round {r + 1}: check_gap_every={every} "
                      f"{1e3 * cpu[every][-1]:.2f} ms of CPU a pass", flush=True)
        median = {every: float(np.median(v)) for every, v in cpu.items()}
        if title == "fold 0":
            result["estimate_over_gap"] = {
                "averaged": estimate_over_gap(X, y, alpha, passes, True),
                "last iterate": estimate_over_gap(X, y, alpha, passes, False)}
        result[title] = {
            "n_words": len(X), "passes": passes,
            "cpu_seconds_per_pass": {str(k): v for k, v in cpu.items()},
            "cpu_seconds_per_pass_median": {str(k): v for k, v in median.items()},
            "ratio": median[10] / median[1],
            "same_coef": bool(np.array_equal(models[1].coef_, models[10].coef_)
                              and np.array_equal(models[1].transition_,
                                                 models[10].transition_)),
        }
    run = {"commit": code_version(skstruct), "command": command_line(__file__),
           "machine": machine_summary(), "load_before": load_before,
           "load_after": os.getloadavg()[0],
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "result": result}
    runs = record_run(RESULTS / f"{STEM}.json", args.label, run)
    (RESULTS / f"{STEM}.md").write_text(report(runs))
    print(report({args.label: run}))


def report(runs):
    lines = ["# BCFW: the exact duality gap after every pass against every tenth", "",
             "`StructuredSVM(solver=\"bcfw\", tol=0)` on the OCR letters, C = 0.1, CPU "
             "time of the whole fit over its passes, `check_gap_every=1` and `10` "
             "alternating in one process, medians. Produced by "
             "`benchmarks/bench_bcfw_gap_schedule.py`.", ""]
    for label, run in runs.items():
        lines += [f"## {label}", "",
                  f"Commit {run['commit']}, {run['date']}; `{run['command']}`; "
                  f"{run['machine']['cpu']}, {run['machine']['numba_threads']} numba "
                  f"threads; 1-minute load average {run['load_before']:.1f} before, "
                  f"{run['load_after']:.1f} after.", "",
                  "| training set | passes | CPU ms a pass, gap every pass | every 10th "
                  "| ratio | coefficients identical |", "|---|---|---|---|---|---|"]
        for title, e in run["result"].items():
            if title == "estimate_over_gap":
                continue
            m = e["cpu_seconds_per_pass_median"]
            lines.append(f"| {title} ({e['n_words']} words) | {e['passes']} | "
                         f"{1e3 * m['1']:.2f} | {1e3 * m['10']:.2f} | {e['ratio']:.3f} | "
                         f"{'yes' if e['same_coef'] else 'no'} |")
        lines.append("")
        ratios = run["result"].get("estimate_over_gap")
        if ratios:
            passes = list(ratios["averaged"])
            lines += ["Fold 0, running estimate of the gap over the exact gap after pass:",
                      "", "| iterate | " + " | ".join(passes) + " |",
                      "|---|" + "---|" * len(passes)]
            for name, values in ratios.items():
                lines.append(f"| {name} | "
                             + " | ".join(f"{values[k]:.2f}" for k in passes) + " |")
            lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
