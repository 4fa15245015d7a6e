"""How far the smoothed solvers' defaults get in 30 epochs, against a certified bound.

For a task (OCR fold 0, or the first ``--n-train`` sentences of CoNLL-2000 chunking or UD
EWT UPOS with token features hashed to 2^16 columns) and λ = ``--lambda-n`` / n, a long
BCFW run gives an upper bound F_BCFW and a certified lower bound LB = F_BCFW − gap on the
optimal primal; then 30 epochs of each configuration (``StructuredSVM`` with the given
parameters, ``random_state=0``, ``n_jobs=1``) are compared with both. Reported: the
final and best non-smooth primal after 10, 20 and 30 epochs, relative to F_BCFW (negative:
below it) and to LB, with the CPU time of the fit.

Run: ``python benchmarks/bench_smoothed_defaults.py --task ocr --lambda-n 1`` (or
``--task chunking --n-train 2000 --lambda-n 0.1``). Appends to
``results/smoothed_defaults.md``.
"""

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from _report import code_version  # noqa: E402

import skstruct  # noqa: E402
from skstruct import StructuredSVM  # noqa: E402
from skstruct.datasets import load_letters  # noqa: E402

REPORT = Path(__file__).parent / "results" / "smoothed_defaults.md"

CONFIGS = {
    "casimir (defaults)": dict(solver="casimir"),
    "svrg (defaults)": dict(solver="svrg"),
    "casimir adapt, μ_0 = 2": dict(solver="casimir", schedule="adapt"),
    "casimir adapt, μ_0 = 0.3": dict(solver="casimir", schedule="adapt", mu=0.3),
    "casimir const, μ = 0.1": dict(solver="casimir", mu=0.1),
}


def load(task, n_train):
    if task == "ocr":
        letters = load_letters()
        keep = letters.folds == 0
        return ([x for x, k in zip(letters.data, keep) if k],
                [t for t, k in zip(letters.target, keep) if k])
    from bench_casimir_reference import load_task
    return load_task(task, n_train, 2 ** 16)


def fit(X, y, lam, epochs, **params):
    curve = []
    est = StructuredSVM(alpha=lam, max_iter=epochs, tol=0.0, random_state=0, n_jobs=1,
                        callback=lambda k, w, f: curve.append(f), **params)
    cpu = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    return np.asarray(curve), time.process_time() - cpu, est


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="ocr")
    parser.add_argument("--n-train", type=int, default=None)
    parser.add_argument("--lambda-n", type=float, default=1.0)
    parser.add_argument("--bcfw-passes", type=int, default=1000)
    args = parser.parse_args()
    X, y = load(args.task, args.n_train)
    n = len(X)
    lam = args.lambda_n / n
    bcfw, bcfw_cpu, est = fit(X, y, lam, args.bcfw_passes, solver="bcfw",
                               check_gap_every=1)
    upper = float(bcfw.min())
    lower = float(bcfw[-1] - est.duality_gaps_[-1])
    lines = [f"## {args.task}, n = {n}, λ = {args.lambda_n:g}/n", "",
             f"BCFW, {len(bcfw)} passes ({bcfw_cpu:.0f} s CPU): F_BCFW = {upper:.5f}, "
             f"certified lower bound LB = {lower:.5f} (gap {(upper - lower) / upper:.1%} of "
             f"F_BCFW); BCFW after 30 passes: {bcfw[29]:.5f} "
             f"({(bcfw[29] - upper) / upper:+.1%}). skstruct {code_version(skstruct)}, load "
             f"{os.getloadavg()[0]:.1f}.", "",
             "| configuration | F after 10 / 20 / 30 epochs, relative to F_BCFW | best | "
             "final relative to LB | CPU s |", "|---|---|---|---|---|"]
    for label, params in CONFIGS.items():
        curve, cpu, _ = fit(X, y, lam, 30, **params)
        rel = (curve - upper) / upper
        lines.append(f"| {label} | {rel[9]:+.1%} / {rel[19]:+.1%} / {rel[29]:+.1%} | "
                     f"{(curve.min() - upper) / upper:+.1%} | "
                     f"{(curve[-1] - lower) / lower:+.1%} | {cpu:.1f} |")
        print(lines[-1], flush=True)
    text = REPORT.read_text() if REPORT.exists() else (
        "# The smoothed solvers' defaults after 30 epochs, against a certified bound\n\n"
        "Produced by `benchmarks/bench_smoothed_defaults.py` (see its docstring).\n\n")
    REPORT.write_text(text + "\n".join(lines) + "\n\n")


if __name__ == "__main__":
    main()
