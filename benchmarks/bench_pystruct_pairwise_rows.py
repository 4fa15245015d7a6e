"""skstruct's pairwise LP-MAP structured hinge beside pystruct's, in two rows.

The same model on both sides: one weight vector per label and one coupling per pair of
labels, the structured hinge (Hamming, margin rescaling), one-slack cutting plane,
tolerance 0.01, LP-MAP inference (pystruct: ``MultiLabelClf(inference_method="ad3")``;
skstruct: ``FactorGraphDecoder(FactorGraph.pairwise(n))``, relaxed). pystruct's
objective ½‖w‖² + C Σ_i ξ_i divided by C n is skstruct's α/2 ‖w‖² + (1/n) Σ_i ξ_i with
α = 1/(C n).

1. **Equal regularization**: pystruct at C = 0.1 (its ``multi_label.py`` example's
   setting), skstruct at α = 1/(C n) for the same n.
2. **Each tuned by the same held-out grid**: C in ``--grid`` for pystruct, α = 1/(C n)
   for skstruct (the same regularization strengths), each chosen by the example-based
   F1 on a held-out 25 % of the training set (``train_test_split(random_state=0)``),
   then refit on all of it.

The final fits of each row run in one process, alternating (``_compare.alternate``:
``--repeats`` rounds, the order swapped every round), after a warm-up fit of each side;
wall and process CPU time (pystruct is single-threaded; skstruct's kernels use both
cores, so CPU time is the fair measure on a shared machine).

Run from the peers' environment with this tree on the path::

    PYTHONPATH=. ~/.cache/skstruct-peers/peers-venv/bin/python \\
        benchmarks/bench_pystruct_pairwise_rows.py --dataset scene

Writes ``results/pystruct_pairwise_rows_<dataset>.json`` and ``.md``.
"""

import argparse
import itertools
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skstruct import StructuredSVM
from skstruct.datasets import load_multilabel
from skstruct.decoders import FactorGraph, FactorGraphDecoder
from skstruct.metrics import example_f1_score, hamming_loss

sys.path.insert(0, str(Path(__file__).parent))
from _compare import Side, alternate, load_average  # noqa: E402

RESULTS = Path(__file__).parent / "results"
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "multilabel"
TOL = 0.01


def load(name):
    train = load_multilabel(name, "train", path=DATA)
    test = load_multilabel(name, "test", path=DATA)
    scaler = StandardScaler().fit(train.data)
    return (scaler.transform(train.data), np.asarray(train.target, dtype=int),
            scaler.transform(test.data), np.asarray(test.target, dtype=int))


def with_constant(X):
    return np.hstack([X, np.ones((X.shape[0], 1))])


def pystruct_model(C, n_labels):
    from pystruct.learners import OneSlackSSVM
    from pystruct.models import MultiLabelClf

    edges = np.array(list(itertools.combinations(range(n_labels), 2)))
    return OneSlackSSVM(MultiLabelClf(edges=edges, inference_method="ad3"), C=C, tol=TOL,
                        inference_cache=50)


def skstruct_model(alpha, n_labels):
    decoder = FactorGraphDecoder(FactorGraph.pairwise(n_labels), max_iter=200, tol=1e-4)
    return StructuredSVM(decoder, solver="cutting_plane", alpha=alpha, tol=TOL,
                         max_iter=2000)


def fit(side, value, X, y):
    """A fitted model of ``side`` at its regularization ``value`` (C or alpha)."""
    n_labels = y.shape[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if side == "pystruct":
            return pystruct_model(value, n_labels).fit(with_constant(X), y)
        return skstruct_model(value, n_labels).fit(X, y)


def predict(side, model, X):
    if side == "pystruct":
        return np.asarray(model.predict(with_constant(X)), dtype=int)
    return np.asarray(model.predict(X), dtype=int)


def measure(name, settings, X, y, X_test, y_test, repeats):
    """Alternating final fits of the two sides at ``settings`` = {side: value}."""
    sides = [Side(side, lambda side=side: fit(side, settings[side], X, y))
             for side in ("skstruct", "pystruct")]
    measured = alternate(sides, repeats, log=lambda text: print(text, file=sys.stderr,
                                                                 flush=True))
    row = {"row": name}
    for side in ("skstruct", "pystruct"):
        entry = measured[side]
        model = entry["results"][-1]
        prediction = predict(side, model, X_test)
        row[side] = dict(
            value=settings[side], wall=entry["seconds"], cpu=entry["cpu_seconds"],
            wall_median=entry["median"], cpu_median=entry["cpu_median"],
            example_f1=float(example_f1_score(y_test, prediction)),
            hamming=float(hamming_loss(y_test, prediction)),
            iterations=(len(model.objective_curve_)))
    row["wall_ratio"] = row["pystruct"]["wall_median"] / row["skstruct"]["wall_median"]
    row["cpu_ratio"] = row["pystruct"]["cpu_median"] / row["skstruct"]["cpu_median"]
    return row


def select(side, grid_values, X, y):
    X_fit, X_val, y_fit, y_val = train_test_split(X, y, test_size=0.25, random_state=0)
    scores = {}
    for value in grid_values:
        model = fit(side, value, X_fit, y_fit)
        scores[value] = float(example_f1_score(y_val, predict(side, model, X_val)))
        print(f"  {side} {value:.4g}: held-out example F1 {scores[value]:.4f}",
              file=sys.stderr, flush=True)
    return max(grid_values, key=lambda v: (scores[v], -grid_values.index(v))), scores


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default="scene")
    parser.add_argument("--C", type=float, default=0.1)
    parser.add_argument("--grid", type=float, nargs="+", default=[0.001, 0.01, 0.1, 1.0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--rows", nargs="+", default=["equal", "tuned"])
    args = parser.parse_args()
    X, y, X_test, y_test = load(args.dataset)
    n = X.shape[0]
    for side, value in (("skstruct", 1.0), ("pystruct", 0.1)):   # warm-up
        fit(side, value, X[:50], y[:50])
    out = dict(dataset=args.dataset, n_train=n, n_labels=y.shape[1],
               load_before=load_average(), rows=[],
               command="PYTHONPATH=. ~/.cache/skstruct-peers/peers-venv/bin/python "
                       "benchmarks/bench_pystruct_pairwise_rows.py " + " ".join(sys.argv[1:]),
               date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    if "equal" in args.rows:
        out["rows"].append(measure(
            f"equal regularization: C = {args.C:g}, alpha = 1/(C n) = {1 / (args.C * n):.4g}",
            {"pystruct": args.C, "skstruct": 1.0 / (args.C * n)}, X, y, X_test, y_test,
            args.repeats))
    if "tuned" in args.rows:
        n_fit = int(np.ceil(0.75 * n))
        grid = list(args.grid)
        best_C, scores_C = select("pystruct", grid, X, y)
        alphas = [1.0 / (C * n_fit) for C in grid]
        best_alpha, scores_alpha = select("skstruct", alphas, X, y)
        # refit on all the training set at the same strength: alpha = 1/(C n)
        C_of_alpha = 1.0 / (best_alpha * n_fit)
        row = measure(
            f"each tuned on the grid C in {grid} (alpha = 1/(C n)): pystruct C = "
            f"{best_C:g}, skstruct C = {C_of_alpha:g}",
            {"pystruct": best_C, "skstruct": 1.0 / (C_of_alpha * n)}, X, y, X_test,
            y_test, 1)
        row["selection"] = {"pystruct": scores_C,
                            "skstruct": {f"{1.0 / (a * n_fit):g}": s
                                         for a, s in scores_alpha.items()}}
        out["rows"].append(row)
    out["load_after"] = load_average()
    write(out)


def _kind(row):
    return "equal" if row["row"].startswith("equal") else "tuned"


def write(out):
    """Write the rows of ``out``, keeping the stored rows of the other kind (each kind of
    row can be run on its own)."""
    RESULTS.mkdir(exist_ok=True)
    stem = RESULTS / f"pystruct_pairwise_rows_{out['dataset']}"
    runs = [out]
    if stem.with_suffix(".json").exists():
        stored = json.loads(stem.with_suffix(".json").read_text())
        stored = stored.get("runs", [stored])
        kinds = {_kind(row) for row in out["rows"]}
        for run in stored:
            run["rows"] = [row for row in run["rows"] if _kind(row) not in kinds]
        runs = [run for run in stored if run["rows"]] + [out]
    stem.with_suffix(".json").write_text(json.dumps({"runs": runs}, indent=1))
    n, n_labels = out["n_train"], out["n_labels"]
    lines = [f"# Pairwise LP-MAP structured hinge on {out['dataset']}: skstruct beside "
             "pystruct, two rows", "",
             f"{n} training examples, {n_labels} labels, all label pairs; one-slack "
             f"cutting plane, tol {TOL}, both sides; each row's final fits alternating in "
             "one process (medians of the rounds); skstruct's ADMM stops at residuals "
             "1e-4 or 200 iterations.", ""]
    for run in runs:
        lines.append(f"- `{run['command']}` ({run['date']}; load average "
                     f"{run['load_before']:.2f} before, {run['load_after']:.2f} after)")
    lines += ["",
             "| row | side | regularization | example F1 | Hamming loss | cutting-plane "
             "iterations | fit wall (s) | fit CPU (s) | pystruct / skstruct, wall | "
             "pystruct / skstruct, CPU |", "|---|---|---|---|---|---|---|---|---|---|"]
    for row in (row for run in runs for row in run["rows"]):
        for side in ("skstruct", "pystruct"):
            r = row[side]
            reg = (f"alpha = {r['value']:.4g}" if side == "skstruct"
                   else f"C = {r['value']:g}")
            ratios = (f"{row['wall_ratio']:.1f}x | {row['cpu_ratio']:.1f}x"
                      if side == "skstruct" else " | ")
            lines.append(f"| {row['row']} | {side} | {reg} | {r['example_f1']:.4f} | "
                         f"{r['hamming']:.4f} | {r['iterations']} | "
                         f"{r['wall_median']:.2f} | {r['cpu_median']:.2f} | {ratios} |")
    for row in (row for run in runs for row in run["rows"]):
        if "selection" in row:
            lines.append("")
            lines.append("Held-out example F1 of the grid (by C; skstruct at alpha = "
                         "1/(C n)): " + "; ".join(
                             f"{side}: " + ", ".join(f"C = {float(c):g}: {v:.4f}"
                                                     for c, v in row["selection"][side].items())
                             for side in ("pystruct", "skstruct")))
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
