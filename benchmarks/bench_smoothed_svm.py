"""Smoothed structured SVMs (SVRG, Casimir-SVRG) against BCFW and the subgradient method.

Chains of first order with the Hamming loss and margin rescaling on two tasks, with the
token features of :func:`~skstruct.preprocessing.sentences_to_features` hashed to 2^16
columns (as in the smoothed-SSVM paper's experiments):

- CoNLL-2000 chunking (8,936 training sentences, 22 tags; test: chunk F1);
- UD English EWT UPOS tagging (12,544 training sentences, 17 tags; test: token accuracy).

For every task, regularization λ ∈ {1, 0.1, 0.01} / n (``StructuredSVM(alpha=λ)``), seed
and solver, one fit records after every epoch the non-smooth SSVM primal
F(w) = (1/n) Σ_i max_y [θ_y(w) + Δ(y_i, y) − θ_{y_i}(w)] + (λ/2)‖w‖², the number of
oracle calls so far divided by n ("passes"), the wall-clock time of the fit so far, and
w; the test metric of every recorded w is computed after the fit (so evaluation never
counts in the times). All solvers run with ``n_jobs=1`` so that the curves compare the
methods, not their use of threads.

Run: ``python benchmarks/bench_smoothed_svm.py`` (all tasks, λ, seeds and solvers; about
an hour on 2 cores) or a part of it, e.g. ``--tasks upos --lambdas 0.1 --seeds 0``.
Writes ``results/smoothed_svm_<task>.json`` (every curve of the task; runs of other parts
are kept, so the two tasks can run in two processes at once), ``results/smoothed_svm.md``
(from all tasks' files; ``--report-only`` rewrites it alone) and the plots
``results/smoothed_svm_<task>.png``.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from _report import code_version, command_line, machine_summary

import skstruct
from skstruct import StructuredSVM
from skstruct.datasets import load_conll2000, load_ud_english_ewt
from skstruct.metrics import span_f1_score, token_accuracy
from skstruct.preprocessing import SequenceVectorizer, sentences_to_features

RESULTS = Path(__file__).parent / "results"
REPORT = RESULTS / "smoothed_svm.md"

#: Hashed feature columns, as in the paper.
N_HASHED = 2 ** 16

#: Solver settings. ``passes_per_epoch`` is the number of oracle calls of one epoch
#: divided by n when the estimator does not report it.
SOLVERS = {
    "bcfw": dict(solver="bcfw", tol=0.0, check_gap_every=1),
    "subgradient": dict(solver="subgradient", tol=0.0),
    "svrg": dict(solver="svrg", tol=0.0),
    "casimir-const": dict(solver="casimir", tol=0.0, schedule="const"),
    "casimir-adapt": dict(solver="casimir", tol=0.0, schedule="adapt"),
}


def load_task(name):
    """(X_train, y_train, X_test, y_test, metric name, metric) of a task, features hashed."""
    if name == "chunking":
        train, test = load_conll2000("train"), load_conll2000("test")
        tokens = [sentences_to_features(d.words, d.pos) for d in (train, test)]
        targets = [list(d.chunks) for d in (train, test)]
        metric_name, metric = "chunk F1", span_f1_score
    elif name == "upos":
        train, test = load_ud_english_ewt("train"), load_ud_english_ewt("test")
        tokens = [sentences_to_features([list(s["form"]) for s in d]) for d in (train, test)]
        targets = [[list(s["upos"]) for s in d] for d in (train, test)]
        metric_name, metric = "UPOS accuracy", token_accuracy
    else:
        raise ValueError(f"unknown task {name!r}")
    vectorizer = SequenceVectorizer(backend="hash", n_features=N_HASHED)
    X_train = vectorizer.fit_transform(tokens[0])
    X_test = vectorizer.transform(tokens[1])
    return X_train, targets[0], X_test, targets[1], metric_name, metric


def run_one(task, solver, lam, seed, budget):
    """Fit once; the curve of one run (lists per epoch)."""
    X_train, y_train, X_test, y_test, _, metric = task
    n = len(X_train)
    settings = dict(SOLVERS[solver])
    records = []
    start = [None]

    def callback(n_pass, w, objective):
        records.append((time.perf_counter() - start[0], float(objective), w.copy()))

    epochs = budget
    estimator = StructuredSVM(alpha=lam / n, max_iter=epochs, random_state=seed, n_jobs=1,
                              callback=callback, **settings)
    start[0] = time.perf_counter()
    estimator.fit(X_train, y_train)
    total = time.perf_counter() - start[0]
    calls = getattr(estimator, "oracle_calls_", None)
    if calls is None:
        passes = np.arange(1, len(records) + 1, dtype=float)
    else:
        passes = np.asarray(calls, dtype=float)[:len(records)] / n
    kind = estimator._fitted_kind()
    features = estimator._features()
    scores = []
    for _, _, w in records:
        kind.store_coefficients(estimator, features, w)
        scores.append(float(metric(y_test, estimator.predict(X_test))))
    curve = {"passes": passes.tolist(), "time": [r[0] for r in records],
             "objective": [r[1] for r in records], "test": scores, "fit_seconds": total}
    gaps = getattr(estimator, "duality_gaps_", None)
    if solver == "bcfw" and gaps is not None and len(gaps) == len(records):
        # the dual value D(α) = P(w) − gap: a certified lower bound on the optimum
        curve["lower_bound"] = (np.asarray(curve["objective"]) - np.asarray(gaps)).tolist()
    return curve


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="chunking,upos")
    parser.add_argument("--lambdas", default="1,0.1,0.01",
                        help="λ·n values (alpha = value / n)")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--solvers", default=",".join(SOLVERS))
    parser.add_argument("--passes", type=int, default=30,
                        help="oracle-call budget per run, in passes over the data")
    parser.add_argument("--report-only", action="store_true",
                        help="rewrite the report and plots from the stored runs")
    parser.add_argument("--epoch-time", action="store_true",
                        help="only time Casimir-SVRG epochs (l2, K = 5) on UPOS with all "
                             "threads and write results/smoothed_svm_epoch.md")
    return parser.parse_args(argv)


def task_json(task_name):
    return RESULTS / f"smoothed_svm_{task_name}.json"


def stored_runs(task_name):
    path = task_json(task_name)
    return json.loads(path.read_text()).get("runs", {}) if path.exists() else {}


def budget_epochs(solver, passes):
    """Epochs of ``solver`` for about ``passes`` oracle calls per example."""
    per_epoch = {"svrg": 2, "casimir-const": 2, "casimir-adapt": 2}.get(solver, 1)
    return max(1, passes // per_epoch)


def main(argv=None):
    args = parse_args(argv)
    if args.epoch_time:
        return time_epochs()
    for task_name in [] if args.report_only else args.tasks.split(","):
        runs = stored_runs(task_name)
        task = load_task(task_name)
        print(f"{task_name}: {len(task[0])} training sequences", flush=True)
        for lam in (float(v) for v in args.lambdas.split(",")):
            for seed in (int(s) for s in args.seeds.split(",")):
                for solver in args.solvers.split(","):
                    curve = run_one(task, solver, lam, seed,
                                    budget_epochs(solver, args.passes))
                    key = f"{task_name}|{lam:g}|{solver}|{seed}"
                    runs[key] = curve
                    print(f"  λn={lam:g} seed={seed} {solver}: F={curve['objective'][-1]:.6f}"
                          f" after {curve['passes'][-1]:.1f} passes, "
                          f"{curve['fit_seconds']:.1f} s, test {curve['test'][-1]:.4f}",
                          flush=True)
                    curve.update(code=code_version(skstruct), load=os.getloadavg()[0],
                                 command=command_line("benchmarks/bench_smoothed_svm.py"))
                    RESULTS.mkdir(parents=True, exist_ok=True)
                    task_json(task_name).write_text(json.dumps(
                        {"runs": runs, "machine": machine_summary()}, indent=1) + "\n")
    runs = {}
    for task_name in ("chunking", "upos"):
        runs.update(stored_runs(task_name))
    write_report(runs)


def time_epochs(n_epochs=6):
    """Wall and CPU time of each Casimir-SVRG epoch (ℓ2, K = 5, constant smoothing) on UD
    EWT UPOS with all threads, after a warm-up fit on a few sentences (compilation
    excluded); the first epoch includes the one-time preparation of the fit."""
    X_train, y_train, *_ = load_task("upos")
    StructuredSVM(solver="casimir", max_iter=1, n_jobs=None).fit(X_train[:50], y_train[:50])
    marks = []

    def callback(n_pass, w, objective):
        marks.append((time.perf_counter(), time.process_time(), float(objective)))

    load_before = os.getloadavg()[0]
    estimator = StructuredSVM(solver="casimir", smoothing="l2", top_k=5, tol=0.0,
                              alpha=0.1 / len(X_train), max_iter=n_epochs, random_state=0,
                              n_jobs=None, callback=callback)
    start = (time.perf_counter(), time.process_time())
    estimator.fit(X_train, y_train)
    load_after = os.getloadavg()[0]
    rows, previous = [], start
    for k, (wall, cpu, objective) in enumerate(marks, 1):
        rows.append(f"| {k} | {wall - previous[0]:.2f} s | {cpu - previous[1]:.2f} s | "
                    f"{objective:.5f} |")
        previous = (wall, cpu)
    later = [marks[k][0] - marks[k - 1][0] for k in range(1, len(marks))]
    lines = ["# Casimir-SVRG epoch time on UD English EWT UPOS", "",
             f"12,544 training sentences, 17 tags, features hashed to 2^16 columns; ℓ2 "
             f"smoothing, K = 5, constant schedule, λ = 0.1/n, all threads "
             f"({machine_summary()['numba_threads']}) on {os.cpu_count()} cores. An epoch is "
             f"2n oracle calls (the anchor pass and n steps) plus the evaluation of the "
             f"non-smooth primal. Load average {load_before:.2f} before, {load_after:.2f} "
             f"after. Code {code_version(skstruct)}. Command: "
             f"`python benchmarks/bench_smoothed_svm.py --epoch-time`.", "",
             "| epoch | wall | CPU | primal |", "|---|---|---|---|", *rows, "",
             f"Epochs 2–{len(marks)}: median {np.median(later):.2f} s wall "
             f"(the first includes the preparation of the fit).", ""]
    (RESULTS / "smoothed_svm_epoch.md").write_text("\n".join(lines))
    print("\n".join(lines))


def _best_objectives(runs):
    """Per (task, λ): the smallest objective any run reached (the reference F*), and the
    largest lower bound on the optimum certified by a BCFW duality gap (−inf if none)."""
    best, lower = {}, {}
    for key, curve in runs.items():
        group = tuple(key.split("|")[:2])
        best[group] = min(best.get(group, np.inf), min(curve["objective"]))
        if "lower_bound" in curve:
            lower[group] = max(lower.get(group, -np.inf), max(curve["lower_bound"]))
    return best, lower


def passes_to_reach(curve, target):
    """Passes after which the objective is first at most ``target`` (None if never)."""
    for passes, value in zip(curve["passes"], curve["objective"]):
        if value <= target:
            return passes
    return None


def write_report(runs):
    """Markdown summary (medians over seeds) and plots."""
    best, lower = _best_objectives(runs)
    groups = {}
    for key, curve in runs.items():
        task, lam, solver, seed = key.split("|")
        groups.setdefault((task, lam), {}).setdefault(solver, []).append(curve)
    lines = ["# Smoothed SSVMs: SVRG and Casimir-SVRG against BCFW and the subgradient method",
             "", "First-order chains, Hamming loss, margin rescaling; token features of "
             "`sentences_to_features` hashed to 2^16 columns; CoNLL-2000 chunking (test: "
             "chunk F1) and UD English EWT UPOS tagging (test: token accuracy); λ ∈ "
             "{1, 0.1, 0.01}/n; every solver with `n_jobs=1`; F is the non-smooth SSVM "
             "primal, evaluated after every epoch.", "",
             "Suboptimality is (F − F*) / F* with F* the smallest objective any run reached "
             "for that task and λ (the certified lower bound on the optimum, the largest "
             "dual value of the BCFW runs, is given beside it); *passes to 1e-2* and "
             "*to 1e-3* are oracle calls / n "
             "until the suboptimality is first below that (— never within the budget); "
             "medians over seeds. Produced by `python benchmarks/bench_smoothed_svm.py`.", ""]
    for (task, lam), solvers in sorted(groups.items()):
        f_star = best[(task, lam)]
        bound = lower.get((task, lam), -np.inf)
        lines += [f"## {task}, λ = {lam}/n (F* = {f_star:.6g}; certified lower bound "
                  f"{bound:.6g})", "",
                  "| solver | seeds | passes | final F | final subopt. | passes to 1e-2 | "
                  "passes to 1e-3 | s / pass | test |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for solver, curves in solvers.items():
            final = np.median([c["objective"][-1] for c in curves])
            reach = {}
            for tol in (1e-2, 1e-3):
                hits = [passes_to_reach(c, f_star * (1 + tol)) for c in curves]
                reach[tol] = ("—" if any(h is None for h in hits)
                              else f"{np.median(hits):.1f}")
            per_pass = np.median([c["time"][-1] / c["passes"][-1] for c in curves])
            lines.append(
                f"| {solver} | {len(curves)} | {curves[0]['passes'][-1]:.1f} | {final:.6g} | "
                f"{(final - f_star) / f_star:.2e} | {reach[1e-2]} | {reach[1e-3]} | "
                f"{per_pass:.2f} | {np.median([c['test'][-1] for c in curves]):.4f} |")
        lines.append("")
    notes = RESULTS / "smoothed_svm_notes.md"
    if notes.exists():  # the findings, written by hand from the runs
        lines += ["", notes.read_text()]
    REPORT.write_text("\n".join(lines) + "\n")
    plot(groups, best)


def plot(groups, best):
    """One figure per task: suboptimality against passes and time, test metric against
    passes, one row per λ (first seed of each solver)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plots (pip install '.[benchmarks]')")
        return
    tasks = sorted({task for task, _ in groups})
    for task in tasks:
        lams = sorted((lam for t, lam in groups if t == task), key=float, reverse=True)
        fig, axes = plt.subplots(len(lams), 3, figsize=(13, 3.2 * len(lams)), squeeze=False)
        for row, lam in enumerate(lams):
            f_star = best[(task, lam)]
            for solver, curves in groups[(task, lam)].items():
                c = curves[0]
                sub = np.maximum((np.asarray(c["objective"]) - f_star) / f_star, 1e-5)
                axes[row, 0].semilogy(c["passes"], sub, label=solver)
                axes[row, 1].semilogy(c["time"], sub, label=solver)
                axes[row, 2].plot(c["passes"], c["test"], label=solver)
            axes[row, 0].set_ylabel(f"λ = {lam}/n\n(F − F*) / F*")
            axes[row, 2].set_ylabel("test")
        axes[-1, 0].set_xlabel("passes (oracle calls / n)")
        axes[-1, 1].set_xlabel("seconds")
        axes[-1, 2].set_xlabel("passes (oracle calls / n)")
        axes[0, 0].legend(fontsize=8)
        fig.suptitle(task)
        fig.tight_layout()
        fig.savefig(RESULTS / f"smoothed_svm_{task}.png", dpi=90)
        plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
