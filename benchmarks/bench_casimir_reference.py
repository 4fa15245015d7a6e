"""skstruct's SVRG, Casimir-SVRG and BCFW beside the smoothed-SSVM paper's own code.

The reference code (casimir, Pillutla et al. 2018) is built by
``benchmarks/reference_casimir/setup_casimir.sh`` into a venv that also holds skstruct, and
this script runs both in one process on the same data and features: first-order chains
with the Hamming loss, the token features of
:func:`~skstruct.preprocessing.sentences_to_features` hashed to ``--hashed`` columns, the
reference's optimizers (``casimir.optim``, unchanged) reading them through
:class:`reference_casimir.exported_ifo.ExportedChainIfo` (the reference's top-K Viterbi
and simplex projection over skstruct's parametrization). For each method the settings of
the paper's NER script (``scripts/named_entity_recognition.sh`` of the reference):

- ``svrg``: learning rate 2e-2, μ = 1, K = 5;
- ``casimir-const`` (the reference's ``csvrg``): L = 32, μ = 1, K = 5, warm start at the
  previous iterate, κ = L/(n + 1) − λ and step 1/(L + λ + κ);
- ``casimir-adapt`` (``csvrg_lr``): learning rate 2e-2, μ_0 = 2 decreasing
  geometrically ("expo"), κ = λ, warm start by extrapolation;
- ``bcfw``: the reference's BCFW (sampling with replacement, weighted averaging); skstruct's
  draws its examples from the same stream (a RandomState whose ``permutation`` draws with
  replacement).

Both sides draw the examples of every step from ``RandomState(seed)`` in the same order
(the reference's ``rng.randint(0, n)`` per step and skstruct's ``randint(0, n, size=n)``
per epoch give the same sequence). ``--start random`` starts both at the same small random
w_0 (so that no two outputs tie in the first top-K calls: at w = 0 every output that
differs from the gold one everywhere has the same score, and the two top-K
implementations break such ties differently); ``--start zero`` starts at 0, the default
of both. BCFW starts at 0 on both sides (its dual starts there).

Reports, per epoch, the non-smooth primal F(w) = (1/n) Σ_i H_i(w) + (λ/2)‖w‖² of both and
their relative difference, and the wall and CPU time per epoch of each (one thread: the
reference is single-threaded, skstruct runs with ``n_jobs=1``; BLAS threads are set to 1).

Run (in the venv of setup_casimir.sh)::

    bash benchmarks/reference_casimir/setup_casimir.sh
    ~/.cache/skstruct-peers/casimir/venv/bin/python benchmarks/bench_casimir_reference.py \\
        --tasks chunking,upos --methods svrg,casimir-const,casimir-adapt,bcfw

Writes ``results/casimir_reference.json`` (runs of other invocations are kept) and
``results/casimir_reference.md``.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

HERE = Path(__file__).parent
CASIMIR = Path(os.environ.get("PEERS_CACHE", Path.home() / ".cache/skstruct-peers")) / "casimir"
sys.path.insert(0, str(CASIMIR / "src"))
sys.path.insert(0, str(HERE))

from _report import code_version, command_line, machine_summary  # noqa: E402

import skstruct  # noqa: E402
from skstruct import StructuredSVM  # noqa: E402
from skstruct.datasets import load_conll2000, load_ud_english_ewt  # noqa: E402
from skstruct.preprocessing import SequenceVectorizer, sentences_to_features  # noqa: E402

RESULTS = HERE / "results"
JSON = RESULTS / "casimir_reference.json"
REPORT = RESULTS / "casimir_reference.md"

#: The reference's NER settings per method (scripts/named_entity_recognition.sh).
METHODS = {
    "svrg": dict(lr=2e-2, mu=1.0),
    "casimir-const": dict(L=32.0, mu=1.0),
    "casimir-adapt": dict(lr=2e-2, mu=2.0),
    "bcfw": dict(),
}


def load_task(name, n_train, hashed):
    """(X blocks, tag lists) of the first ``n_train`` training sentences of a task."""
    if name == "chunking":
        train = load_conll2000("train")
        tokens = sentences_to_features(train.words[:n_train], train.pos[:n_train])
        targets = [list(c) for c in train.chunks[:n_train]]
    elif name == "upos":
        train = load_ud_english_ewt("train")[:n_train]
        tokens = sentences_to_features([list(s["form"]) for s in train])
        targets = [list(s["upos"]) for s in train]
    else:
        raise ValueError(f"unknown task {name!r}")
    return SequenceVectorizer(backend="hash", n_features=hashed).fit_transform(tokens), targets


class _FromStart(StructuredSVM):
    """StructuredSVM that starts its solver at a given w_0 (user order)."""

    def _initial_params(self, features, kind, classes, n_features):
        w0 = getattr(self, "_w0", None)
        return np.zeros(features.n_params) if w0 is None else w0.copy()


class _WithReplacement(np.random.RandomState):
    """A RandomState whose ``permutation(n)`` draws n indices with replacement: the
    reference's BCFW order, for skstruct's BCFW."""

    def permutation(self, n):
        return self.randint(0, n, size=n)


def skstruct_settings(method, n, lam):
    m = METHODS[method]
    if method == "svrg":
        return dict(solver="svrg", learning_rate=m["lr"], mu=m["mu"], top_k=5)
    if method == "casimir-const":
        # the reference: L/(n + 1) − λ when L/(n + 1) > λ, else L/(n + 1)
        kappa = m["L"] / (n + 1) - lam if m["L"] / (n + 1) > lam else m["L"] / (n + 1)
        return dict(solver="casimir", schedule="const", mu=m["mu"], top_k=5, kappa=kappa,
                    learning_rate=1.0 / (m["L"] + lam + kappa),
                    warm_start_rule="prev_iterate")
    if method == "casimir-adapt":
        return dict(solver="casimir", schedule="adapt", mu=m["mu"], top_k=5, kappa=lam,
                    learning_rate=m["lr"], warm_start_rule="extrapolation")
    return dict(solver="bcfw", check_gap_every=1)  # a point after every pass


def run_skstruct(method, X, y, lam, seed, epochs, w0):
    n = len(X)
    marks = []

    def callback(k, w, objective):
        marks.append((time.perf_counter(), time.process_time(), float(objective)))

    random_state = _WithReplacement(seed) if method == "bcfw" else seed
    est = _FromStart(alpha=lam, max_iter=epochs, tol=0.0, random_state=random_state,
                     n_jobs=1, callback=callback, **skstruct_settings(method, n, lam))
    est._w0 = None if method == "bcfw" else w0
    start = (time.perf_counter(), time.process_time())
    est.fit(X, y)
    wall = np.diff([start[0]] + [m[0] for m in marks])
    cpu = np.diff([start[1]] + [m[1] for m in marks])
    w = est._params()
    return dict(objective=[m[2] for m in marks], wall=wall.tolist(), cpu=cpu.tolist(),
                w=w, classes=est.classes_)


def run_reference(method, ifo, lam, seed, epochs, w0):
    from casimir import optim

    reg = [optim.L2Penalty(lam)]
    m = METHODS[method]
    if method == "bcfw":
        ifo.update_smoothing_coefficient(None)
        model, logs = optim.block_coordinate_frank_wolfe_optimize(
            np.zeros(ifo.dim), ifo, None, None, reg, num_passes=epochs, seed=seed,
            logging=True, verbose=False)
        cpu = [np.nan] * epochs
    else:
        ifo.update_smoothing_coefficient(m["mu"])
        if method == "svrg":
            algorithm = "svrg"
            options = dict(learning_rate=m["lr"], smoothing_coefficient=m["mu"])
        elif method == "casimir-const":
            algorithm = "casimir_svrg"
            options = dict(grad_lipschitz_parameter=m["L"], initial_smoothing_coefficient=m["mu"],
                           smoothing_coefficient_update_rule="const",
                           warm_start="prev-iterate")
        else:
            algorithm = "casimir_svrg"
            options = dict(learning_rate=m["lr"], initial_smoothing_coefficient=m["mu"],
                           smoothing_coefficient_update_rule="expo", warm_start="extrapolation",
                           initial_moreau_coefficient=lam)
        # the CPU time of every epoch, from a termination criterion called at its start
        cpu_marks = []

        def tick(model, train_ifo):
            cpu_marks.append(time.process_time())
            return False

        model, logs = optim.optimize_ifo(
            w0.copy(), ifo, None, None, algorithm, reg, num_passes=epochs,
            termination_criterion=tick, seed=seed, logging=True, verbose=False,
            optim_options=options)
        cpu_marks.append(time.process_time())
        cpu = np.diff(cpu_marks).tolist()  # includes the logging's objective pass
    objective = [float(row[1]) for row in logs[1:]]
    wall = [float(row[-1]) for row in logs[1:]]  # the reference's own epoch timer
    return dict(objective=objective, wall=wall, cpu=cpu, w=np.asarray(model))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="chunking,upos")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--lambda-n", type=float, default=0.1, help="λ·n (the reference's --l2reg)")
    parser.add_argument("--n-train", type=int, default=1000, help="training sentences")
    parser.add_argument("--hashed", type=int, default=2 ** 12, help="hashed token-feature columns")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--start", choices=("random", "zero"), default="random")
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args(argv)
    stored = json.loads(JSON.read_text()) if JSON.exists() else {"runs": {}}
    from reference_casimir.exported_ifo import ExportedChainIfo

    for task in [] if args.report_only else args.tasks.split(","):
        X, y = load_task(task, args.n_train, args.hashed)
        n = len(X)
        lam = args.lambda_n / n
        classes = np.unique(np.concatenate(y))
        encoded = np.searchsorted(classes, np.concatenate(y))
        offsets = np.concatenate([[0], np.cumsum([len(s) for s in y])])
        ifo = ExportedChainIfo(sp.vstack(list(X)).tocsr(), offsets, encoded, len(classes),
                               1.0, 5)
        rng = np.random.RandomState(12345)
        w0 = (1e-3 * rng.standard_normal(ifo.dim) if args.start == "random"
              else np.zeros(ifo.dim))
        # warm up skstruct's kernels on a few sentences (compilation not timed)
        for method in args.methods.split(","):
            run_skstruct(method, X[:30], y[:30], lam, 0, 1, None)
        for method in args.methods.split(","):
            ours = run_skstruct(method, X, y, lam, args.seed, args.epochs, w0)
            assert np.array_equal(ours["classes"], classes)
            ref = run_reference(method, ifo, lam, args.seed, args.epochs, w0)
            rel = (np.asarray(ours["objective"]) - ref["objective"]) / np.asarray(ref["objective"])
            w_rel = float(np.linalg.norm(ours["w"] - ref["w"]) / max(np.linalg.norm(ref["w"]), 1e-300))
            key = f"{task}|{args.lambda_n:g}|{method}|{args.start}|{n}|{args.hashed}"
            stored["runs"][key] = dict(
                skstruct={k: v for k, v in ours.items() if k not in ("w", "classes")},
                reference={k: v for k, v in ref.items() if k != "w"},
                relative_difference=rel.tolist(), w_relative_difference=w_rel,
                n=n, n_params=int(ifo.dim), seed=args.seed, load=os.getloadavg()[0],
                code=code_version(skstruct),
                command=command_line("benchmarks/bench_casimir_reference.py"))
            print(f"{task} {method} start={args.start}: max |rel. diff| "
                  f"{np.max(np.abs(rel)):.2e}, final F {ours['objective'][-1]:.6f} vs "
                  f"{ref['objective'][-1]:.6f}, ‖Δw‖/‖w‖ {w_rel:.1e}; s/epoch (wall) "
                  f"{np.median(ours['wall']):.3f} vs {np.median(ref['wall']):.3f}", flush=True)
            RESULTS.mkdir(exist_ok=True)
            stored["machine"] = machine_summary()
            JSON.write_text(json.dumps(stored, indent=1) + "\n")
    write_report(stored)


def write_report(stored):
    lines = [
        "# skstruct beside the smoothed-SSVM paper's reference code",
        "",
        "Generated by `benchmarks/bench_casimir_reference.py` (see its docstring for the",
        "settings); the reference is built by `benchmarks/reference_casimir/setup_casimir.sh`.",
        "Per run: the largest relative difference of the non-smooth primal over the epochs",
        "(skstruct − reference, / reference), the final primals, the relative difference of",
        "the final weights, and the median time per epoch on one thread (wall; CPU for",
        "skstruct; the reference's CPU includes its logging pass, its wall does not).",
        "BCFW starts at 0 on both sides whatever the start column says.",
        "",
        "| task | λ·n | method | start | n | params | epochs | max rel. diff | F skstruct | "
        "F reference | ‖Δw‖/‖w‖ | s/epoch skstruct (wall / CPU) | s/epoch reference (wall / CPU) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key, run in sorted(stored["runs"].items()):
        task, lam_n, method, start, n, _ = key.split("|")
        ours, ref = run["skstruct"], run["reference"]
        lines.append(
            f"| {task} | {lam_n} | {method} | {start} | {n} | {run['n_params']} | "
            f"{len(ours['objective'])} | {np.max(np.abs(run['relative_difference'])):.1e} | "
            f"{ours['objective'][-1]:.5f} | {ref['objective'][-1]:.5f} | "
            f"{run['w_relative_difference']:.1e} | {np.median(ours['wall']):.3f} / "
            f"{np.median(ours['cpu']):.3f} | {np.median(ref['wall']):.3f} / "
            f"{np.nanmedian(ref['cpu']) if np.any(np.isfinite(ref['cpu'])) else float('nan'):.3f} |")
    lines += ["", "Per-epoch curves are in `casimir_reference.json`.", ""]
    REPORT.write_text("\n".join(lines))


if __name__ == "__main__":
    main()
