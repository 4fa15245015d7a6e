"""Structured SVM solvers against pystruct 0.3.2, in one process, on the same data.

Run from the peers' virtual environment, where both libraries import::

    bash ../shared/peers/setup_peers.sh
    ~/.cache/skstruct-peers/peers-venv/bin/pip install -e .
    ~/.cache/skstruct-peers/peers-venv/bin/python benchmarks/bench_ssvm_pystruct.py

(``--parts`` to run some of the three parts; ``--quick`` for a smoke run on slices of the
data; ``--label before`` to record the results of the code before a change, kept beside
the ``latest`` ones.)

Three parts:

``multilabel``
    ``StructuredSVM(loss="f1", rescaling="slack", solver="subgradient")`` for exactly
    ``--subgradient-passes`` passes (``tol=0``) on MULAN yeast and scene (published splits,
    features standardized on the training set): the time per example step, fit time /
    (passes × n_train). Next to it, for reference only (another model and loss, so no
    ratio): pystruct ``OneSlackSSVM(C=0.1, tol=0.01, inference_cache=50)`` on a
    ``MultiLabelClf`` with an edge between every pair of labels, solved by AD3 (the set-up
    of pystruct's ``multi_label.py`` example, with AD3 for the unavailable QPBO), on the
    same standardized features with a constant column appended, on scene only by default
    (``--pystruct-datasets``; on yeast's 14 labels, 91 pairs, it takes very long). Test
    example-based F1 of both.
``cutting_plane``
    OCR letters, train on fold 0 (626 words), test on the other nine. skstruct
    ``StructuredSVM(solver="cutting_plane", alpha=1/(C n), tol=--cp-tol)`` against pystruct
    ``OneSlackSSVM(ChainCRF(), C, tol=0.1, inference_cache=50)``; C = 0.1. Both stop when
    the most violated one-slack constraint (mean over words of Hamming loss minus margin)
    exceeds the current slack by less than the tolerance, 0.1 for both by default. Fit
    time, test letter accuracy and final primal objective (pystruct's divided by C n, the
    factor between the two objectives) of both; ratio of the fit times.
``bcfw``
    skstruct ``StructuredSVM(solver="bcfw", alpha=1/(C n), tol=0)`` against pystruct
    ``FrankWolfeSSVM(ChainCRF(), C, tol=0)``, both averaged, the same number of passes,
    trained on fold 0 (``--bcfw-passes``) and on folds 1-9 (``--bcfw-large-passes``;
    6,251 words, tested on fold 0): time per pass = fit time / passes, and its ratio.
    Both compute the exact duality gap at their defaults, inside the timed fit: after
    every tenth pass and once more at the end (skstruct's ``check_gap_every=10``,
    pystruct's ``check_dual_every=10``; with ``tol=0`` skstruct's running estimate of
    the gap asks for no other). ``--bcfw-check-gap-every 1`` times skstruct with the
    gap after every pass.

Every timing is a median of ``--repeats`` fits, skstruct and pystruct alternating (the
order swapped each round), after a warm-up fit of each on a few examples (numba
compilation or cache loading; cvxopt and AD3 loading). The same arrays are given to
both: the letters as a list of (n_letters, 128) float arrays and a list of int label
arrays. Writes ``results/ssvm_pystruct.md`` and ``.json``. Without pystruct the skstruct
side still runs and the peer columns say why they are empty.
"""

import argparse
import itertools
import sys
import time
import warnings
from importlib.metadata import version
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import f1_score
from sklearn.preprocessing import StandardScaler

import skstruct
from skstruct import StructuredSVM
from skstruct.datasets import load_letters, load_multilabel
from skstruct.metrics import token_accuracy

sys.path.insert(0, str(Path(__file__).parent))
from _compare import (ALONE_OPTION, Side, alone_summary, alternate,  # noqa: E402
                      fresh_process, load_average, peer_import, ratio, timed, write_alone)
from _report import code_version, command_line, machine_summary, record_run  # noqa: E402

RESULTS = Path(__file__).parent / "results"
STEM = "ssvm_pystruct"
MULTILABEL_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "multilabel"
TARGETS = {"step_seconds": 10e-6, "cutting_plane_ratio": 0.1, "bcfw_ratio": 0.1}
N_LETTERS = 26
PARTS = ("multilabel", "cutting_plane", "bcfw")
#: With ``--peer-alone-json``: pystruct's sides of every comparison, timed alone.
ALONE = {}


def log(text):
    print(text, file=sys.stderr, flush=True)


def quiet_fit(model, X, y):
    """Fit without ConvergenceWarnings (the budgets here are fixed on purpose)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        return timed(model.fit, X, y)


class Pystruct:
    """The pystruct classes used here, or why they are missing."""

    def __init__(self, skip):
        self.missing = "--no-peer" if skip else None
        if skip:
            return
        learners, why = peer_import("pystruct.learners")
        models, why_models = peer_import("pystruct.models")
        self.missing = why or why_models
        if self.missing is None:
            self.learners, self.models = learners, models

    @property
    def available(self):
        return self.missing is None


# --------------------------------------------------------------------------- multilabel

def multilabel_data(name, args):
    path = None if name == "yeast" and args.multilabel_data is None else (
        args.multilabel_data or MULTILABEL_DATA)
    train = load_multilabel(name, path=path)
    test = load_multilabel(name, "test", path=path)
    X, y = train.data, np.asarray(train.target, dtype=int)
    X_test, y_test = test.data, np.asarray(test.target, dtype=int)
    if args.quick:
        X, y, X_test, y_test = X[:150], y[:150], X_test[:100], y_test[:100]
    scaler = StandardScaler().fit(X)
    return scaler.transform(X), y, scaler.transform(X_test), y_test


def run_multilabel(args, pystruct):
    out = {}
    for name in args.datasets:
        X, y, X_test, y_test = multilabel_data(name, args)
        n, n_labels = y.shape

        def sk_model(passes):
            return StructuredSVM(loss="f1", rescaling="slack", solver="subgradient",
                                 alpha=args.alpha, max_iter=passes, tol=0.0,
                                 random_state=args.seed, n_jobs=args.n_jobs)

        quiet_fit(sk_model(2), X[:30], y[:30])[0].predict(X_test[:5])
        sides = [Side("skstruct", lambda: quiet_fit(sk_model(args.subgradient_passes), X, y),
                      True)]
        if pystruct.available and name in args.pystruct_datasets:
            edges = np.array(list(itertools.combinations(range(n_labels), 2)))
            Xb = np.hstack([X, np.ones((n, 1))])
            Xb_test = np.hstack([X_test, np.ones((len(X_test), 1))])

            def ps_model():
                model = pystruct.models.MultiLabelClf(edges=edges, inference_method="ad3")
                return pystruct.learners.OneSlackSSVM(model, C=args.C, tol=0.01,
                                                      inference_cache=50)

            quiet_fit(ps_model(), Xb[:30], y[:30])
            sides.append(Side("pystruct", lambda: quiet_fit(ps_model(), Xb, y), True))
        log(f"multilabel {name}: {n} train, {n_labels} labels")
        measured = alternate(sides, args.repeats, log=log)
        sk = measured["skstruct"]
        entry = {
            "n_train": n, "n_test": len(y_test), "n_features": X.shape[1],
            "n_labels": n_labels, "passes": args.subgradient_passes, "alpha": args.alpha,
            "skstruct": {
                "fit_seconds_median": sk["median"], "fit_seconds": sk["seconds"],
                "fit_cpu_seconds_median": sk["cpu_median"],
                "seconds_per_example_step": sk["median"] / (args.subgradient_passes * n),
                "cpu_seconds_per_example_step": sk["cpu_median"]
                / (args.subgradient_passes * n),
                "example_f1": example_f1(y_test, sk["results"][-1].predict(X_test)),
            },
        }
        entry["meets_step_target"] = (entry["skstruct"]["seconds_per_example_step"]
                                      <= TARGETS["step_seconds"])
        if "pystruct" in measured:
            ps = measured["pystruct"]
            model = ps["results"][-1]
            entry["pystruct"] = {
                "fit_seconds_median": ps["median"], "fit_seconds": ps["seconds"],
                "fit_cpu_seconds_median": ps["cpu_median"],
                "example_f1": example_f1(y_test, np.asarray(model.predict(Xb_test))),
                "decoder_iterations": len(model.objective_curve_),
                "C": args.C,
            }
        out[name] = entry
    return out


def example_f1(y_true, y_pred):
    return float(f1_score(y_true, np.asarray(y_pred), average="samples", zero_division=0.0))


# --------------------------------------------------------------------------- OCR letters

def letters_split(train_folds, args):
    letters = load_letters(path=args.letters_data)
    train = np.isin(letters.folds, train_folds)
    X = [x for x, keep in zip(letters.data, train) if keep]
    y = [t for t, keep in zip(letters.target, train) if keep]
    X_test = [x for x, keep in zip(letters.data, train) if not keep]
    y_test = [t for t, keep in zip(letters.target, train) if not keep]
    if args.quick:
        keep = covering_words(y, 60)
        X, y = [X[i] for i in keep], [y[i] for i in keep]
        X_test, y_test = X_test[:100], y_test[:100]
    return X, y, X_test, y_test


def covering_words(y, n):
    """Indices of the first ``n`` words and of the first word holding each letter missing
    from them (pystruct's ChainCRF refuses a training set without all its states)."""
    keep = list(range(min(n, len(y))))
    seen = set(np.concatenate([y[i] for i in keep]).tolist())
    for i in range(len(keep), len(y)):
        if not set(y[i].tolist()) <= seen:
            keep.append(i)
            seen.update(y[i].tolist())
    return keep


def chain_crf(pystruct, X):
    """pystruct's first-order chain over the 26 letters (sized up front: a warm-up fit on
    a few words would otherwise infer fewer states)."""
    return pystruct.models.ChainCRF(n_states=N_LETTERS, n_features=X[0].shape[1])


def chain_comparison(args, pystruct, X, y, X_test, y_test, make_sk, make_ps, passes=None,
                     name=None):
    """Warm up, time both alternating, evaluate both; ``passes`` for a per-pass time.

    In the fresh process of the fair-baseline check (``--peer-alone-json``), only
    pystruct's side runs; its times are kept in :data:`ALONE` under ``name``.
    """
    warm = covering_words(y, 20)
    X_warm, y_warm = [X[i] for i in warm], [y[i] for i in warm]
    if args.peer_alone_json:
        quiet_fit(make_ps(few=True), X_warm, y_warm)
        measured = alternate([Side("pystruct", lambda: quiet_fit(make_ps(), X, y), True)],
                             args.repeats, log=log)
        ALONE[name] = alone_summary(measured)["sides"]["pystruct"]
        return None
    quiet_fit(make_sk(few=True), X_warm, y_warm)[0].predict(X_test[:5])
    sides = [Side("skstruct", lambda: quiet_fit(make_sk(), X, y), True)]
    if pystruct.available:
        quiet_fit(make_ps(few=True), X_warm, y_warm)
        sides.append(Side("pystruct", lambda: quiet_fit(make_ps(), X, y), True))
    measured = alternate(sides, args.repeats, log=log)
    scale = args.C * len(X)  # pystruct's objective / skstruct's
    entry = {"n_train_words": len(X), "n_train_letters": int(sum(map(len, y))),
             "n_test_words": len(X_test), "C": args.C, "alpha": 1.0 / scale}
    for name, m in measured.items():
        model = m["results"][-1]
        y_pred = model.predict(X_test)
        if name == "skstruct":
            objective = float(model.objective_curve_[-1])
            n_iter = int(model.n_iter_)
        else:
            curve = getattr(model, "primal_objective_curve_", None) or [np.nan]
            objective = float(curve[-1]) / scale
            n_iter = len(model.objective_curve_)
        entry[name] = {
            "fit_seconds_median": m["median"], "fit_seconds": m["seconds"],
            "fit_cpu_seconds_median": m["cpu_median"], "fit_cpu_seconds": m["cpu_seconds"],
            "accuracy": float(token_accuracy(y_test, [np.asarray(p) for p in y_pred])),
            "final_primal_objective": objective, "iterations": n_iter,
        }
        if passes:
            entry[name]["seconds_per_pass"] = m["median"] / passes
            entry[name]["cpu_seconds_per_pass"] = m["cpu_median"] / passes
        log(f"  {name}: fit {m['median']:.2f} s, accuracy {entry[name]['accuracy']:.4f}")
    key = "seconds_per_pass" if passes else "fit_seconds_median"
    entry["ratio"] = ratio(entry["skstruct"][key],
                           entry.get("pystruct", {}).get(key))
    entry["cpu_ratio"] = ratio(entry["skstruct"]["fit_cpu_seconds_median"],
                               entry.get("pystruct", {}).get("fit_cpu_seconds_median"))
    return entry


def run_cutting_plane(args, pystruct):
    X, y, X_test, y_test = letters_split([args.train_fold], args)
    alpha = 1.0 / (args.C * len(X))
    log(f"cutting plane: fold {args.train_fold}, {len(X)} words")

    def make_sk(few=False):
        return StructuredSVM(alpha=alpha, solver="cutting_plane", tol=args.cp_tol,
                             max_iter=3 if few else args.cp_max_iter, n_jobs=args.n_jobs)

    def make_ps(few=False):
        return pystruct.learners.OneSlackSSVM(
            chain_crf(pystruct, X), C=args.C, tol=args.cp_tol, inference_cache=50,
            max_iter=3 if few else args.cp_max_iter)

    entry = chain_comparison(args, pystruct, X, y, X_test, y_test, make_sk, make_ps,
                             name="cutting_plane")
    if entry is None:
        return None
    entry.update({"tol": args.cp_tol, "train_fold": args.train_fold})
    entry["meets_target"] = None if entry["ratio"] is None else \
        entry["ratio"] <= TARGETS["cutting_plane_ratio"]
    return entry


def run_bcfw(args, pystruct):
    out = {}
    settings = [("fold 0", [args.train_fold], args.bcfw_passes)]
    if not args.quick:
        others = [f for f in range(10) if f != args.train_fold]
        settings.append(("folds 1-9", others, args.bcfw_large_passes))
    for title, folds, passes in settings:
        X, y, X_test, y_test = letters_split(folds, args)
        alpha = 1.0 / (args.C * len(X))
        log(f"bcfw: {title}, {len(X)} words, {passes} passes")

        def make_sk(few=False):
            return StructuredSVM(alpha=alpha, solver="bcfw", tol=0.0, averaging=True,
                                 max_iter=2 if few else passes, random_state=args.seed,
                                 n_jobs=args.n_jobs,
                                 check_gap_every=args.bcfw_check_gap_every)

        def make_ps(few=False):
            return pystruct.learners.FrankWolfeSSVM(
                chain_crf(pystruct, X), C=args.C, tol=0.0, do_averaging=True,
                max_iter=2 if few else passes, random_state=args.seed)

        entry = chain_comparison(args, pystruct, X, y, X_test, y_test, make_sk, make_ps,
                                 passes=passes, name=title)
        if entry is None:
            continue
        entry.update({"passes": passes, "train_folds": folds,
                      "check_gap_every": args.bcfw_check_gap_every})
        entry["meets_target"] = None if entry["ratio"] is None else \
            entry["ratio"] <= TARGETS["bcfw_ratio"]
        out[title] = entry
    return out


# --------------------------------------------------------------------------- main

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--datasets", nargs="+", default=["yeast", "scene"])
    parser.add_argument("--pystruct-datasets", nargs="*", default=["scene"],
                        help="data sets of the pystruct reference (on yeast, AD3 on the 91 "
                        "label pairs takes very long)")
    parser.add_argument("--subgradient-passes", type=int, default=100)
    parser.add_argument("--alpha", type=float, default=0.1,
                        help="alpha of the multilabel subgradient SSVM")
    parser.add_argument("--C", type=float, default=0.1, help="pystruct's C (alpha = 1/(C n)"
                        " on the letters)")
    parser.add_argument("--train-fold", type=int, default=0)
    parser.add_argument("--cp-tol", type=float, default=0.1)
    parser.add_argument("--cp-max-iter", type=int, default=1000,
                        help="max_iter of both cutting planes (a safeguard: both stop at --cp-tol)")
    parser.add_argument("--bcfw-passes", type=int, default=50)
    parser.add_argument("--bcfw-large-passes", type=int, default=20,
                        help="passes when training on folds 1-9")
    parser.add_argument("--bcfw-check-gap-every", type=int, default=10,
                        help="skstruct's check_gap_every (its default, 10)")
    parser.add_argument("--repeats", type=int, default=3, help="fits of each, alternating")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-jobs", type=int, default=None,
                        help="skstruct's n_jobs (default: all numba threads)")
    parser.add_argument("--multilabel-data", default=None,
                        help=f"MULAN folder (default: {MULTILABEL_DATA}; yeast bundled)")
    parser.add_argument("--letters-data", default=None, help="letters.npz (default: bundled)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: slices of the data, a few passes, 1 repeat, yeast "
                        "only, no folds 1-9; no results written unless --output is given")
    parser.add_argument("--no-peer", action="store_true", help="skip pystruct")
    parser.add_argument("--no-fresh-check", action="store_true",
                        help="skip timing pystruct alone in a fresh process")
    parser.add_argument(ALONE_OPTION, default=None, metavar="FILE",
                        help="time only pystruct's sides of the OCR parts and write them to "
                        "FILE (the fresh process of the fair-baseline check)")
    parser.add_argument("--raise-errors", action="store_true",
                        help="stop at the first failing part instead of recording it")
    parser.add_argument("--label", default="latest",
                        help="name of this run in the results (e.g. before, latest)")
    parser.add_argument("--output", default=None,
                        help=f"results folder (default: {RESULTS}; none with --quick)")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats, args.datasets = 1, ["yeast"]
        args.subgradient_passes = min(args.subgradient_passes, 3)
        args.bcfw_passes, args.cp_max_iter = min(args.bcfw_passes, 3), min(args.cp_max_iter, 5)
    output = Path(args.output) if args.output else (None if args.quick else RESULTS)

    pystruct = Pystruct(args.no_peer)
    log(f"pystruct: {pystruct.missing or 'available'}")
    if args.peer_alone_json:
        for part in args.parts:
            if part != "multilabel":
                {"cutting_plane": run_cutting_plane, "bcfw": run_bcfw}[part](args, pystruct)
        write_alone(args.peer_alone_json, {"sides": ALONE, "load_average_after":
                                           load_average()})
        return ALONE
    run = {}
    for part in args.parts:
        load_before, tic = load_average(), time.perf_counter()
        error = None
        try:
            result = {"multilabel": run_multilabel, "cutting_plane": run_cutting_plane,
                      "bcfw": run_bcfw}[part](args, pystruct)
        except Exception as failure:  # noqa: BLE001 - recorded; the other parts still run
            if args.raise_errors:
                raise
            result, error = None, f"{type(failure).__name__}: {failure}"
            log(f"{part} failed: {error}")
        if result is not None and part != "multilabel" and pystruct.available \
                and not args.no_fresh_check:
            log(f"{part}: pystruct alone in a fresh process")
            add_alone(result if part == "bcfw" else {"cutting_plane": result},
                      fresh_process(Path(__file__).resolve(), child_argv(args, part)))
        run[part] = {
            "result": result, "error": error,
            "commit": code_version(skstruct),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "command": command_line("benchmarks/bench_ssvm_pystruct.py"),
            "repeats": args.repeats, "quick": args.quick, "n_jobs": args.n_jobs,
            "peer_missing": pystruct.missing,
            "machine": machine_summary(),
            "versions": {"skstruct": skstruct.__version__, "numba": version("numba"),
                         "numpy": np.__version__,
                         "pystruct": version("pystruct") if pystruct.available else None},
            "load_average_1min": {"before": load_before, "after": load_average()},
            "seconds": time.perf_counter() - tic,
        }
        if output is not None:  # after every part: a long run stopped early keeps them
            runs = record_run(output / f"{STEM}.json", args.label, {part: run[part]},
                              merge=True)
            (output / f"{STEM}.md").write_text(report(runs))
    markdown = None if output is None else report(runs)
    print(markdown or report({args.label: run}))
    return run


def child_argv(args, part):
    """The options of the fresh process that times pystruct's side of ``part`` alone."""
    argv = ["--parts", part, "--C", str(args.C), "--train-fold", str(args.train_fold),
            "--cp-tol", str(args.cp_tol), "--cp-max-iter", str(args.cp_max_iter),
            "--bcfw-passes", str(args.bcfw_passes),
            "--bcfw-large-passes", str(args.bcfw_large_passes),
            "--repeats", str(args.repeats), "--seed", str(args.seed)]
    if args.letters_data:
        argv += ["--letters-data", args.letters_data]
    return argv + (["--quick"] if args.quick else [])


def add_alone(entries, alone):
    """Put pystruct's times alone (fresh process) beside each comparison's entry."""
    for name, entry in entries.items():
        if "error" in alone:
            entry["pystruct_alone"] = {"error": alone["error"]}
            continue
        side = alone["sides"].get(name)
        if side is None or "pystruct" not in entry:
            continue
        entry["pystruct_alone"] = dict(side, load_average_before=alone[
            "load_average_before"], load_average_after=alone["load_average_after"])
        passes = entry.get("passes")
        if passes:
            entry["pystruct_alone"]["seconds_per_pass"] = side["median"] / passes
            entry["pystruct_alone"]["cpu_seconds_per_pass"] = side["cpu_median"] / passes
        entry["cpu_ratio_to_alone"] = ratio(entry["skstruct"]["fit_cpu_seconds_median"],
                                            side["cpu_median"])


def _alone_line(e):
    """The fair-baseline check of one comparison, or an empty list."""
    alone = e.get("pystruct_alone")
    if not alone:
        return []
    if "error" in alone:
        return [f"pystruct alone in a fresh process: failed ({alone['error']})."]
    ps = e["pystruct"]
    if "seconds_per_pass" in alone:
        times = (f"{1e3 * alone['seconds_per_pass']:.1f} ms a pass (CPU "
                 f"{1e3 * alone['cpu_seconds_per_pass']:.1f} ms) against "
                 f"{1e3 * ps['seconds_per_pass']:.1f} ms (CPU "
                 f"{1e3 * ps['cpu_seconds_per_pass']:.1f} ms)")
    else:
        times = (f"fit {alone['median']:.2f} s (CPU {alone['cpu_median']:.2f} s) against "
                 f"{ps['fit_seconds_median']:.2f} s (CPU {ps['fit_cpu_seconds_median']:.2f} s)")
    return [f"Fair-baseline check, pystruct alone in a fresh process (median of "
            f"{len(alone['seconds'])}, load {alone['load_average_before']:.1f}): {times} "
            f"alternating here; skstruct's CPU over pystruct alone: "
            f"**{e['cpu_ratio_to_alone']:.3f}**."]


# --------------------------------------------------------------------------- report

def report(runs):
    lines = [
        "# Structured SVM solvers: skstruct vs pystruct 0.3.2",
        "",
        "One process, the same arrays given to both, fits alternating (order swapped each "
        "round), medians, warm-up fits excluded. Ratios are skstruct / pystruct (below 1: "
        "skstruct faster). Run from the peers' virtual environment "
        "(`bash ../shared/peers/setup_peers.sh`, then "
        "`~/.cache/skstruct-peers/peers-venv/bin/pip install -e .`). The machine (2 cores) "
        "was shared with other processes during these runs; the load averages are given "
        "with each part, and alternating puts the load on both libraries alike.",
        "",
    ]
    for label, run in sorted(runs.items(), key=lambda item: item[0] != "before"):
        lines += [f"## {label}", ""]
        for part in PARTS:
            if part in run and run[part].get("error"):
                lines += _header(f"{part}: failed", run[part])
                lines += [f"`{run[part]['error'][:300]}`", ""]
            elif part in run:
                lines += globals()[f"_report_{part}"](run[part])
    return "\n".join(lines)


def _header(title, p):
    load = p["load_average_1min"]
    return [
        f"### {title}",
        "",
        f"Commit {p['commit']}, {p['date']}; `~/.cache/skstruct-peers/peers-venv/bin/python "
        f"{p['command']}`; median of {p['repeats']} fits each; {p['machine']['cpu']}, "
        f"{p['machine']['numba_threads']} numba threads; 1-minute load average "
        f"{load['before']:.1f} before, {load['after']:.1f} after; {p['seconds']:.0f} s."
        + (f" pystruct not run: {p['peer_missing']}." if p["peer_missing"] else ""),
        "",
    ]


def _peer(entry, key, fmt, scale=1.0):
    value = entry.get("pystruct", {}).get(key)
    return "—" if value is None else fmt.format(scale * value)


def _ratio(value, target):
    if value is None:
        return "—"
    return f"**{value:.3f}** ({'meets' if value <= target else 'misses'} ≤ {target})"


def _report_multilabel(p):
    lines = _header("Subgradient SSVM, F1 loss, slack rescaling (multilabel)", p)
    lines += [
        "| data set | n_train × labels | skstruct passes | skstruct fit (s) | "
        "**µs per example step** (target ≤ 10) | CPU µs per example step | skstruct example "
        "F1 | pystruct one-slack + AD3, pairwise (s) | pystruct example F1 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, e in p["result"].items():
        sk = e["skstruct"]
        lines.append(
            f"| {name} | {e['n_train']} × {e['n_labels']} | {e['passes']} | "
            f"{sk['fit_seconds_median']:.2f} | **{1e6 * sk['seconds_per_example_step']:.1f}**"
            f" | {_micro(sk.get('cpu_seconds_per_example_step'))}"
            f" | {sk['example_f1']:.4f} | {_peer(e, 'fit_seconds_median', '{:.2f}')} | "
            f"{_peer(e, 'example_f1', '{:.4f}')} |")
    lines += [
        "",
        "Example step = fit time / (passes × n_train), the per-pass objective included; "
        "wall time, and CPU time of the process (all threads; leaves out the waiting for a "
        "core on the loaded machine). "
        "skstruct: alpha = 0.1, tol = 0 (exactly the passes shown). pystruct (reference, a "
        "different model: Hamming loss, pairwise label interactions, stops at tol = 0.01): "
        "C = 0.1, inference_cache = 50, a constant feature appended."
        + ("" if any("pystruct" in e for e in p["result"].values()) else
           " Not run here (`--pystruct-datasets` named none of these data sets)."),
        "",
    ]
    return lines


def _report_cutting_plane(p):
    e = p["result"]
    lines = _header(f"One-slack cutting plane, OCR fold {e['train_fold']} "
                    f"({e['n_train_words']} words), C = {e['C']}", p)
    sk = e["skstruct"]
    lines += [
        "| library | fit, wall (s) | fit, CPU (s) | decoder iterations | test letter accuracy "
        "(%) | final primal objective (skstruct scale) |",
        "|---|---|---|---|---|---|",
        f"| skstruct `StructuredSVM(solver='cutting_plane', tol={e['tol']})` | "
        f"{sk['fit_seconds_median']:.2f} | {_fmt(sk.get('fit_cpu_seconds_median'), '{:.2f}')}"
        f" | {sk['iterations']} | {100 * sk['accuracy']:.2f} | "
        f"{sk['final_primal_objective']:.4f} |",
        f"| pystruct `OneSlackSSVM(C={e['C']}, tol={e['tol']}, inference_cache=50)` | "
        f"{_peer(e, 'fit_seconds_median', '{:.2f}')} | "
        f"{_peer(e, 'fit_cpu_seconds_median', '{:.2f}')} | {_peer(e, 'iterations', '{:.0f}')} | "
        f"{_peer(e, 'accuracy', '{:.2f}', 100)} | "
        f"{_peer(e, 'final_primal_objective', '{:.4f}')} |",
        "",
        f"Ratio of fit times skstruct / pystruct: wall {_ratio(e['ratio'], 0.1)}, CPU "
        f"{_ratio(e.get('cpu_ratio'), 0.1)}. Fit times of "
        f"all rounds: skstruct {_list(sk['fit_seconds'])}"
        + ("" if "pystruct" not in e else f"; pystruct {_list(e['pystruct']['fit_seconds'])}")
        + ". pystruct's iterations: entries of its objective curve (cached and fresh "
        "constraints).",
        "",
        *_alone_line(e),
        "",
    ]
    return lines


def _report_bcfw(p):
    lines = _header("Block-coordinate Frank-Wolfe, OCR letters", p)
    lines += [
        "| training set | passes | skstruct ms / pass | pystruct ms / pass | "
        "ratio (target ≤ 0.1) | CPU ms / pass, skstruct / pystruct | CPU ratio | skstruct "
        "accuracy (%) | pystruct accuracy (%) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for title, e in p["result"].items():
        sk = e["skstruct"]
        lines.append(
            f"| {title} ({e['n_train_words']} words) | {e['passes']} | "
            f"{1e3 * sk['seconds_per_pass']:.1f} | {_peer(e, 'seconds_per_pass', '{:.1f}', 1e3)}"
            f" | {_ratio(e['ratio'], 0.1)} | "
            f"{_fmt(sk.get('cpu_seconds_per_pass'), '{:.1f}', 1e3)} / "
            f"{_peer(e, 'cpu_seconds_per_pass', '{:.1f}', 1e3)} | "
            f"{_ratio(e.get('cpu_ratio'), 0.1)} | {100 * sk['accuracy']:.2f} | "
            f"{_peer(e, 'accuracy', '{:.2f}', 100)} |")
    lines += [
        "",
        "Time per pass = fit time / passes (setup and exact duality gaps included: "
        f"skstruct's {_gap_schedule(p)}, pystruct's after every tenth pass and at the "
        "end, its default). Test set: the "
        "folds not trained on. Both averaged, C = 0.1 (skstruct alpha = 1/(C n)), tol = 0.",
        "",
    ]
    for title, e in p["result"].items():
        if e.get("pystruct_alone"):
            lines += [f"{title}: " + " ".join(_alone_line(e)), ""]
    return lines


def _gap_schedule(p):
    """skstruct's gap schedule in a BCFW run (runs before ``check_gap_every`` existed
    computed it after every pass)."""
    every = {e.get("check_gap_every", 1) for e in p["result"].values()}
    if every == {1}:
        return "after every pass"
    if len(every) == 1:
        k = every.pop()
        return f"after every {k}th pass and at the end (``check_gap_every={k}``)"
    return "as ``check_gap_every`` of each row says"


def _fmt(value, fmt, scale=1.0):
    return "—" if value is None else fmt.format(scale * value)


def _micro(seconds):
    return _fmt(seconds, "{:.1f}", 1e6)


def _list(values):
    return ", ".join(f"{v:.2f}" for v in values)


if __name__ == "__main__":
    main()
