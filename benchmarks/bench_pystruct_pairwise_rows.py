"""skstruct's pairwise factor-graph learners beside pystruct's pairwise SSVM, in two rows.

The same model structure on every side: one weight vector per label and one coupling per
pair of labels, LP-MAP inference. pystruct: ``OneSlackSSVM(MultiLabelClf(edges=all pairs,
inference_method="ad3"), tol=0.01, inference_cache=50)``, the structured hinge (Hamming,
margin rescaling), a constant feature appended. skstruct's learners (``--learners``):

``hinge``
    ``StructuredSVM(FactorGraphDecoder(FactorGraph.pairwise(n)), solver="cutting_plane",
    tol=0.01)``: the same structured hinge with LP-MAP (relaxed) loss-augmented
    inference, one-slack cutting plane.
``lp_sparsemap``
    ``SparseMAPClassifier(decoder=FactorGraphDecoder(FactorGraph.pairwise(n),
    decision="marginals"))``: the LP-SparseMAP loss (L-BFGS, its defaults), predicting the
    LP-SparseMAP marginals rounded at 1/2.

The ADMM of skstruct's decoder runs at ``--admm-max-iter`` / ``--admm-tol`` (None: the
decoder's defaults, 1000 iterations and residuals 1e-6). pystruct's objective
½‖w‖² + C Σ_i ξ_i divided by C n is skstruct's α/2 ‖w‖² + (1/n) Σ_i loss_i with
α = 1/(C n).

Rows (``--rows``):

1. ``equal``: **equal regularization**, pystruct at C = ``--C`` (0.1, its ``multi_label.py``
   example's setting), every skstruct learner at α = 1/(C n) for the same n.
2. ``tuned``: **each tuned by the same held-out grid**: C in ``--grid`` for pystruct,
   α = 1/(C n) for skstruct (the same strengths), each chosen by the example-based F1 on a
   held-out 25 % of the training set (``train_test_split(random_state=0)``, ties to the
   stronger regularization), then refit on all of it. ``--jobs`` runs the grid's
   selection fits in worker processes (only their scores are used; the final fits are
   timed in the main process as in the other rows). ``--grid-cpu-cap`` stops every
   side's selection fits after that many seconds of CPU time (pystruct's through its
   logger, skstruct's through their callback): a stopped fit's held-out score is
   reported but it is not eligible (unless no fit of the side finished). The final
   fits have no cap.
3. ``alone``: pystruct's fit at C = ``--C`` alone, in a fresh process (this script with
   ``--pystruct-alone``, a warm-up fit on 50 examples first, as in the rows), to check
   the figure it has in the rows' shared process.

The final fits of a row run in one process, alternating (``_compare.alternate``:
``--repeats`` rounds, the order reversed every other round), after a warm-up fit of
each side; wall and process CPU time (pystruct mostly runs on one core, its linear
algebra at times on more; skstruct's kernels use both cores, so CPU time is the fair
measure on a shared machine); the 1-minute load average before and after.

pystruct comes from the peers' environment (``../shared/peers/setup_peers.sh``): run
either that environment's python with this tree on the path, or skstruct's with the
peers' site-packages appended (``--peer-site``, used when pystruct is not importable)::

    PYTHONPATH=. python benchmarks/bench_pystruct_pairwise_rows.py --dataset yeast

Writes ``results/pystruct_pairwise_rows_<dataset>.json`` and ``.md`` (the rows of the
kinds not run are kept from the stored file).
"""

import argparse
import itertools
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from skstruct import SparseMAPClassifier, StructuredSVM
from skstruct.datasets import load_multilabel
from skstruct.decoders import FactorGraph, FactorGraphDecoder
from skstruct.metrics import example_f1_score, hamming_loss

sys.path.insert(0, str(Path(__file__).parent))
from _compare import Side, alternate, load_average  # noqa: E402

RESULTS = Path(__file__).parent / "results"
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "multilabel"
PEER_SITE = (Path.home() / ".cache" / "skstruct-peers" / "peers-venv" / "lib"
             / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages")
TOL = 0.01
LEARNERS = {
    "hinge": "StructuredSVM, LP-MAP hinge, cutting plane",
    "lp_sparsemap": "SparseMAPClassifier, LP-SparseMAP loss, L-BFGS",
    "pystruct": "pystruct OneSlackSSVM, MultiLabelClf, AD3",
}


def load(name):
    train = load_multilabel(name, "train", path=DATA)
    test = load_multilabel(name, "test", path=DATA)
    scaler = StandardScaler().fit(train.data)
    return (scaler.transform(train.data), np.asarray(train.target, dtype=int),
            scaler.transform(test.data), np.asarray(test.target, dtype=int))


class CPUCap:
    """Stop a fit after ``seconds`` of this process's CPU time: skstruct's callback
    (returns True) or, with ``pystruct=True``, pystruct's logger (raises the
    ``KeyboardInterrupt`` its learners catch to end training)."""

    def __init__(self, seconds, pystruct=False):
        self.seconds, self.pystruct = seconds, pystruct
        self.start, self.hit = time.process_time(), False

    def __call__(self, *args):
        if self.pystruct and args[-1] == "final":
            return None
        self.hit = self.hit or time.process_time() - self.start > self.seconds
        if self.hit and self.pystruct:
            raise KeyboardInterrupt
        return self.hit


def with_constant(X):
    return np.hstack([X, np.ones((X.shape[0], 1))])


def pystruct_model(C, n_labels, cap=None):
    from pystruct.learners import OneSlackSSVM
    from pystruct.models import MultiLabelClf

    edges = np.array(list(itertools.combinations(range(n_labels), 2)))
    return OneSlackSSVM(MultiLabelClf(edges=edges, inference_method="ad3"), C=C, tol=TOL,
                        inference_cache=50, logger=cap)


def _admm(args):
    options = {}
    if args.admm_max_iter is not None:
        options["max_iter"] = args.admm_max_iter
    if args.admm_tol is not None:
        options["tol"] = args.admm_tol
    return options


def skstruct_model(learner, alpha, n_labels, args, cap=None):
    if learner == "hinge":
        decoder = FactorGraphDecoder(FactorGraph.pairwise(n_labels), **_admm(args))
        return StructuredSVM(decoder, solver="cutting_plane", alpha=alpha, tol=TOL,
                             max_iter=2000, callback=cap)
    decoder = FactorGraphDecoder(FactorGraph.pairwise(n_labels), decision="marginals",
                                 **_admm(args))
    return SparseMAPClassifier(decoder=decoder, alpha=alpha, callback=cap)


def fit(side, value, X, y, args, cpu_cap=None):
    """A fitted model of ``side`` at its regularization ``value`` (C or alpha), stopped
    after ``cpu_cap`` seconds of CPU time if given (``model.capped_``)."""
    n_labels = y.shape[1]
    cap = None if cpu_cap is None else CPUCap(cpu_cap, pystruct=(side == "pystruct"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if side == "pystruct":
            model = pystruct_model(value, n_labels, cap).fit(with_constant(X), y)
        else:
            model = skstruct_model(side, value, n_labels, args, cap).fit(X, y)
    model.warned_ = sorted({type(w.message).__name__ for w in caught})
    model.capped_ = bool(cap is not None and cap.hit)
    return model


def predict(side, model, X):
    if side == "pystruct":
        return np.asarray(model.predict(with_constant(X)), dtype=int)
    return np.asarray(model.predict(X), dtype=int)


def iterations(side, model):
    if side == "lp_sparsemap":
        return int(np.max(model.n_iter_))
    return len(model.objective_curve_)


def evaluate(side, model, X_test, y_test):
    prediction = predict(side, model, X_test)
    return dict(example_f1=float(example_f1_score(y_test, prediction)),
                hamming=float(hamming_loss(y_test, prediction)),
                iterations=iterations(side, model),
                converged=("ConvergenceWarning" not in model.warned_))


def measure(name, settings, X, y, X_test, y_test, args, repeats):
    """Alternating final fits of the sides at ``settings`` = {side: value}."""
    sides = [Side(side, lambda side=side: fit(side, settings[side], X, y, args))
             for side in settings]
    measured = alternate(sides, repeats, log=lambda text: print(text, file=sys.stderr,
                                                                 flush=True))
    row = {"row": name, "sides": {}}
    for side in settings:
        entry = measured[side]
        row["sides"][side] = dict(
            value=settings[side], wall=entry["seconds"], cpu=entry["cpu_seconds"],
            wall_median=entry["median"], cpu_median=entry["cpu_median"],
            **evaluate(side, entry["results"][-1], X_test, y_test))
    peer = row["sides"]["pystruct"]
    row["ratios"] = {side: dict(wall=peer["wall_median"] / r["wall_median"],
                                cpu=peer["cpu_median"] / r["cpu_median"])
                     for side, r in row["sides"].items() if side != "pystruct"}
    return row


def _held_out(side, value, X_fit, y_fit, X_val, y_val, args):
    """Held-out example F1 of ``side`` at ``value`` and whether the fit was stopped at
    ``--grid-cpu-cap`` (run in a worker by ``--jobs``)."""
    if args.peer_site not in sys.path:
        sys.path.append(args.peer_site)
    cpu = time.process_time()
    model = fit(side, value, X_fit, y_fit, args, args.grid_cpu_cap)
    cpu = time.process_time() - cpu
    score = float(example_f1_score(y_val, predict(side, model, X_val)))
    print(f"  {side} {value:.4g}: held-out example F1 {score:.4f} ({iterations(side, model)}"
          f" iterations, {cpu:.1f} s CPU{', stopped at the CPU cap' if model.capped_ else ''})",
          file=sys.stderr, flush=True)
    return score, model.capped_


def select(side, grid_values, X, y, args):
    """The value of ``grid_values`` of best held-out example F1 among the fits not
    stopped at the CPU cap (ties to the stronger regularization), every value's score
    and the values whose fits were stopped. With ``--jobs`` above 1 the grid's fits
    run in that many worker processes (their times are not measured), the weakest
    regularization first: it is the longest fit, so the others run beside it."""
    X_fit, X_val, y_fit, y_val = train_test_split(X, y, test_size=0.25, random_state=0)
    if args.jobs > 1:
        from joblib import Parallel, delayed

        weakest_first = sorted(grid_values, reverse=(side == "pystruct"))
        found = Parallel(n_jobs=min(args.jobs, len(grid_values)))(
            delayed(_held_out)(side, value, X_fit, y_fit, X_val, y_val, args)
            for value in weakest_first)
        found = [found[weakest_first.index(value)] for value in grid_values]
    else:
        found = [_held_out(side, value, X_fit, y_fit, X_val, y_val, args)
                 for value in grid_values]
    scores = {value: score for value, (score, _) in zip(grid_values, found)}
    capped = [value for value, (_, hit) in zip(grid_values, found) if hit]
    eligible = [value for value in grid_values if value not in capped] or grid_values
    best = max(eligible, key=lambda v: (scores[v], -grid_values.index(v)))
    return best, scores, capped


def pystruct_alone(args, X, y, X_test, y_test):
    """One pystruct fit at ``args.C`` in this (fresh) process, after a warm-up fit."""
    fit("pystruct", args.C, X[:50], y[:50], args)
    load_before = load_average()
    tic, cpu_tic = time.perf_counter(), time.process_time()
    model = fit("pystruct", args.C, X, y, args)
    wall, cpu = time.perf_counter() - tic, time.process_time() - cpu_tic
    return dict(value=args.C, wall=wall, cpu=cpu, load_before=load_before,
                load_after=load_average(), pid=os.getpid(),
                **evaluate("pystruct", model, X_test, y_test))


def run_alone(args):
    command = [sys.executable, __file__, "--dataset", args.dataset, "--C", str(args.C),
               "--pystruct-alone"]
    print("  fresh process: " + " ".join(command), file=sys.stderr, flush=True)
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dataset", default="scene")
    parser.add_argument("--C", type=float, default=0.1)
    parser.add_argument("--grid", type=float, nargs="+", default=[0.001, 0.01, 0.1, 1.0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--rows", nargs="+", default=["equal", "tuned", "alone"],
                        choices=["equal", "tuned", "alone"])
    parser.add_argument("--learners", nargs="+", default=["hinge", "lp_sparsemap"],
                        choices=["hinge", "lp_sparsemap"])
    parser.add_argument("--admm-max-iter", type=int, default=None)
    parser.add_argument("--admm-tol", type=float, default=None)
    parser.add_argument("--grid-cpu-cap", type=float, default=None,
                        help="CPU seconds after which a selection fit is stopped "
                             "(tuned row; it is then not eligible)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="worker processes for the held-out grid's fits (tuned row)")
    parser.add_argument("--peer-site", default=str(PEER_SITE))
    parser.add_argument("--pystruct-alone", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    try:
        import pystruct  # noqa: F401
    except ImportError:
        sys.path.append(args.peer_site)
    X, y, X_test, y_test = load(args.dataset)
    n = X.shape[0]
    if args.pystruct_alone:
        print(json.dumps(pystruct_alone(args, X, y, X_test, y_test)))
        return
    out = dict(dataset=args.dataset, n_train=n, n_labels=y.shape[1],
               admm={"max_iter": args.admm_max_iter, "tol": args.admm_tol},
               load_before=load_average(), rows=[],
               command="PYTHONPATH=. python benchmarks/bench_pystruct_pairwise_rows.py "
                       + " ".join(sys.argv[1:]),
               date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    if "equal" in args.rows or "tuned" in args.rows:
        for side, value in [(s, 1.0) for s in args.learners] + [("pystruct", 0.1)]:
            fit(side, value, X[:50], y[:50], args)   # warm-up
    if "equal" in args.rows:
        settings = {side: 1.0 / (args.C * n) for side in args.learners}
        settings["pystruct"] = args.C
        out["rows"].append(measure(
            f"equal regularization: C = {args.C:g}, alpha = 1/(C n) = {1 / (args.C * n):.4g}",
            settings, X, y, X_test, y_test, args, args.repeats))
        _written(out)
    if "tuned" in args.rows:
        n_fit = int(np.ceil(0.75 * n))
        grid = list(args.grid)
        chosen, selection, stopped = {}, {}, {}
        best_C, scores, capped = select("pystruct", grid, X, y, args)
        chosen["pystruct"], selection["pystruct"] = best_C, {f"{c:g}": s
                                                              for c, s in scores.items()}
        stopped["pystruct"] = [f"{c:g}" for c in capped]
        for learner in args.learners:
            alphas = [1.0 / (C * n_fit) for C in grid]
            best_alpha, scores, capped = select(learner, alphas, X, y, args)
            # refit on all the training set at the same strength: alpha = 1/(C n)
            chosen[learner] = 1.0 / (best_alpha * n_fit)
            selection[learner] = {f"{1.0 / (a * n_fit):g}": s for a, s in scores.items()}
            stopped[learner] = [f"{1.0 / (a * n_fit):g}" for a in capped]
        settings = {side: 1.0 / (chosen[side] * n) for side in args.learners}
        settings["pystruct"] = best_C
        row = measure(
            f"each tuned on the grid C in {grid} (alpha = 1/(C n)): " + ", ".join(
                f"{side} C = {chosen[side]:g}" for side in ["pystruct"] + args.learners),
            settings, X, y, X_test, y_test, args, 1)
        row["selection"] = selection
        if args.grid_cpu_cap is not None:
            row["grid_cpu_cap"], row["selection_capped"] = args.grid_cpu_cap, stopped
        out["rows"].append(row)
        _written(out)
    if "alone" in args.rows:
        out["rows"].append({"row": f"pystruct alone in a fresh process: C = {args.C:g}",
                            "alone": run_alone(args)})
    _written(out)


def _written(out):
    """Write the rows measured so far (a long run stopped later keeps them)."""
    out["load_after"] = load_average()
    write(json.loads(json.dumps(out)))


def _kind(row):
    return row["row"].split(" ")[0].replace("each", "tuned").replace("pystruct", "alone")


def _upgrade(row):
    """Rows stored before the LP-SparseMAP learner: 'skstruct' was the hinge."""
    if "sides" in row or "alone" in row:
        return row
    row = dict(row)
    row["sides"] = {"hinge": row.pop("skstruct"), "pystruct": row.pop("pystruct")}
    row["ratios"] = {"hinge": dict(wall=row.pop("wall_ratio"), cpu=row.pop("cpu_ratio"))}
    if "selection" in row:
        row["selection"] = {("hinge" if k == "skstruct" else k): v
                            for k, v in row["selection"].items()}
    return row


def _admm_text(run):
    if not any("sides" in row or "skstruct" in row for row in run["rows"]):
        return "pystruct only"
    admm = run.get("admm")
    if admm is None:
        return "ADMM 200 iterations, residuals 1e-4 (the script's settings then)"
    if admm["max_iter"] is None and admm["tol"] is None:
        return "ADMM at the decoder's defaults (1000 iterations, residuals 1e-6)"
    return f"ADMM max_iter {admm['max_iter']}, tol {admm['tol']}"


def write(out):
    """Write the rows of ``out``, keeping the stored rows of the other kinds."""
    RESULTS.mkdir(exist_ok=True)
    stem = RESULTS / f"pystruct_pairwise_rows_{out['dataset']}"
    runs = [out]
    if stem.with_suffix(".json").exists():
        stored = json.loads(stem.with_suffix(".json").read_text())
        stored = stored.get("runs", [stored])
        kinds = {_kind(row) for row in out["rows"]}
        for run in stored:
            run["rows"] = [_upgrade(row) for row in run["rows"] if _kind(row) not in kinds]
        runs = [run for run in stored if run["rows"]] + [out]
    stem.with_suffix(".json").write_text(json.dumps({"runs": runs}, indent=1))
    n, n_labels = out["n_train"], out["n_labels"]
    lines = [f"# Pairwise factor-graph learners on {out['dataset']}: skstruct beside "
             "pystruct, two rows", "",
             f"{n} training examples, {n_labels} labels, all label pairs; LP-MAP inference "
             f"on every side; the hinge: one-slack cutting plane, tol {TOL}, both "
             "libraries; each row's final fits alternating in one process (medians of "
             "the rounds). Ratios: pystruct's time over skstruct's (above 1: skstruct "
             "faster).", ""]
    for run in runs:
        lines.append(f"- `{run['command']}` ({run['date']}; load average "
                     f"{run['load_before']:.2f} before, {run['load_after']:.2f} after; "
                     f"{_admm_text(run)}): rows "
                     + ", ".join(sorted({_kind(row) for row in run["rows"]})))
    lines += ["",
              "| row | side | regularization | example F1 | Hamming loss | iterations | "
              "converged | fit wall (s) | fit CPU (s) | pystruct / skstruct, wall | "
              "pystruct / skstruct, CPU |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    all_rows = [row for run in runs for row in run["rows"]]
    for row in all_rows:
        if "sides" not in row:
            continue
        for side, r in row["sides"].items():
            reg = f"C = {r['value']:g}" if side == "pystruct" else f"alpha = {r['value']:.4g}"
            ratio = row["ratios"].get(side)
            ratios = f"{ratio['wall']:.1f}x | {ratio['cpu']:.1f}x" if ratio else " | "
            converged = {True: "yes", False: "no", None: ""}[r.get("converged")]
            lines.append(f"| {row['row']} | {LEARNERS[side]} | {reg} | "
                         f"{r['example_f1']:.4f} | {r['hamming']:.4f} | {r['iterations']} | "
                         f"{converged} | {r['wall_median']:.2f} | {r['cpu_median']:.2f} | "
                         f"{ratios} |")
    for row in all_rows:
        if "selection" in row:
            lines.append("")
            capped = row.get("selection_capped", {})
            lines.append("Held-out example F1 of the grid (by C; skstruct at alpha = "
                         "1/(C n)): " + "; ".join(
                             f"{side}: " + ", ".join(
                                 f"C = {float(c):g}: {v:.4f}"
                                 + (" (stopped at the CPU cap, not eligible)"
                                    if c in capped.get(side, []) else "")
                                 for c, v in scores.items())
                             for side, scores in row["selection"].items()))
            if "grid_cpu_cap" in row:
                lines[-1] += (f". Selection fits stopped after {row['grid_cpu_cap']:g} s "
                              "of CPU time (every side; the final fits have no cap).")
    for row in all_rows:
        if "alone" in row:
            a = row["alone"]
            same = [r["sides"]["pystruct"] for r in all_rows if "sides" in r
                    and r["sides"]["pystruct"]["value"] == a["value"]]
            text = (f"pystruct alone in a fresh process at C = {a['value']:g}: "
                    f"{a['wall']:.2f} s wall, {a['cpu']:.2f} s CPU (load {a['load_before']:.2f} "
                    f"before, {a['load_after']:.2f} after), example F1 {a['example_f1']:.4f}, "
                    f"{a['iterations']} iterations")
            for r in same:
                text += (f"; in the rows' process at the same C: {r['wall_median']:.2f} s "
                         f"wall, {r['cpu_median']:.2f} s CPU (CPU {a['cpu'] / r['cpu_median']:.2f} "
                         "times the rows' figure)")
            lines += ["", text + "."]
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
