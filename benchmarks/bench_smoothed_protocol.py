"""The smoothed-SSVM paper's claim tested the paper's way: every method's step on one grid.

The claim (Pillutla et al. 2018, NER experiments): Casimir-SVRG reaches a given non-smooth
SSVM objective in fewer passes over the data than BCFW and SGD. The protocol here follows
the paper's: for every method with a step size, the step is chosen on ONE grid common to
all methods by the non-smooth objective reached after a few passes; then every method runs
with 3 seeds and its objective is recorded against passes (oracle calls / n), wall time
and CPU time.

Data: the first ``--n-train`` training sentences of CoNLL-2000 chunking and of UD English
EWT UPOS, first-order chains, Hamming loss, margin rescaling, the token features of
:func:`~skstruct.preprocessing.sentences_to_features` hashed to ``--hashed`` columns (the
loading of ``bench_casimir_reference.py``, so that the reference code can run on the same
data); λ ∈ ``--lambdas`` / n (the paper's NER script: ``--l2reg`` 1, 0.1, 0.01).

Methods (skstruct, ``n_jobs=1``), the paper's settings apart from the tuned step η:

- ``bcfw``: block-coordinate Frank–Wolfe (exact line search, no step to tune);
- ``sgd``: stochastic subgradient with weighted averaging and the steps
  η_t = η / (1 + λ η t) (the reference's ``linear`` scheme η_0 / (1 + t / t_0) with
  t_0 = 1/(λ η), which is Pegasos' 1/(λ t) shifted to start at η: skstruct's
  ``solver="subgradient"`` started at step 1/(λ η) − 2);
- ``svrg``: SVRG on the ℓ2-smoothed hinge, μ = 1, K = 5, step η;
- ``casimir-const``: Casimir-SVRG, μ = 1, K = 5, L = 1/η, κ = L/(n + 1) − λ, step
  1/(L + λ + κ), warm start at the previous iterate (the reference's ``csvrg`` with
  ``--L``);
- ``casimir-adapt``: Casimir-SVRG, μ_0 = 2 decreasing geometrically, κ = λ, step η, warm
  start by extrapolation (the reference's ``csvrg_lr``);
- ``casimir-default`` (not tuned, for context): ``StructuredSVM(solver="casimir")`` with
  its defaults.

Grid: η ∈ {2^-1, ..., 2^-9}; the chosen η is the one whose best non-smooth primal after
``--tune-passes`` passes (seed 0) is smallest (a diverging run counts as +inf). An
SVRG/Casimir epoch is 2n oracle calls, so the smoothed methods get half as many epochs as
BCFW and SGD for the same passes. The objective is evaluated after every epoch (not
counted in the passes; its time is in the time columns of every method alike).

``--reference`` also runs the reference code (casimir, built by
``reference_casimir/setup_casimir.sh``; run this script with its venv's python) for seed 0
with the same tuned steps on the same data, through
:class:`reference_casimir.exported_ifo.ExportedChainIfo`: its BCFW, SGD (``linear``,
``wavg``), SVRG, ``csvrg`` and ``csvrg_lr``.

Run::

    python benchmarks/bench_smoothed_protocol.py                      # skstruct only
    ~/.cache/skstruct-peers/casimir/venv/bin/python \\
        benchmarks/bench_smoothed_protocol.py --reference --tasks upos --lambdas 1 \\
        --methods bcfw,sgd,casimir-const,casimir-adapt                  # adds the reference

Writes ``results/smoothed_protocol.json`` (runs of other invocations are kept),
``results/smoothed_protocol.md`` and ``results/smoothed_protocol_<task>.png``.
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
sys.path.insert(0, str(HERE))

from _report import code_version, command_line, machine_summary  # noqa: E402
from bench_casimir_reference import CASIMIR, load_task  # noqa: E402

import skstruct  # noqa: E402
from skstruct import StructuredSVM  # noqa: E402

RESULTS = HERE / "results"
JSON = RESULTS / "smoothed_protocol.json"
REPORT = RESULTS / "smoothed_protocol.md"
NOTES = RESULTS / "smoothed_protocol_notes.md"

GRID = [2.0 ** -j for j in range(1, 10)]
TUNED = ("sgd", "svrg", "casimir-const", "casimir-adapt")
METHODS = ("bcfw", "sgd", "svrg", "casimir-const", "casimir-adapt", "casimir-default")
PASSES_PER_EPOCH = {"bcfw": 1, "sgd": 1}  # the others: 2


class _ShiftedSGD(StructuredSVM):
    """``solver="subgradient"`` whose Pegasos steps 1/(λ (t + 2)) start at step
    ``first_step`` (so the first step is η = 1/(λ (first_step + 2)))."""

    def _training_options(self, run):
        options = super()._training_options(run)
        options["first_step"] = self._first_step
        return options


def settings(method, eta, n, lam):
    """StructuredSVM parameters of ``method`` with step ``eta``."""
    if method == "bcfw":
        return dict(solver="bcfw", check_gap_every=1)  # a point after every pass
    if method == "sgd":
        return dict(solver="subgradient")
    if method == "svrg":
        return dict(solver="svrg", learning_rate=eta, mu=1.0, top_k=5)
    if method == "casimir-const":
        L = 1.0 / eta
        kappa = L / (n + 1) - lam if L / (n + 1) > lam else L / (n + 1)
        return dict(solver="casimir", schedule="const", mu=1.0, top_k=5, kappa=kappa,
                    learning_rate=1.0 / (L + lam + kappa), warm_start_rule="prev_iterate")
    if method == "casimir-adapt":
        return dict(solver="casimir", schedule="adapt", mu=2.0, top_k=5, kappa=lam,
                    learning_rate=eta, warm_start_rule="extrapolation")
    if method == "casimir-default":
        return dict(solver="casimir")
    raise ValueError(method)


def run_skstruct(method, eta, X, y, lam, seed, passes):
    """One fit; per epoch: passes, objective, wall and CPU seconds since the start."""
    n = len(X)
    epochs = max(1, passes // PASSES_PER_EPOCH.get(method, 2))
    marks = []

    def callback(k, w, objective):
        marks.append((time.perf_counter(), time.process_time(), float(objective)))

    cls = _ShiftedSGD if method == "sgd" else StructuredSVM
    est = cls(alpha=lam, max_iter=epochs, tol=0.0, random_state=seed, n_jobs=1,
              callback=callback, **settings(method, eta, n, lam))
    if method == "sgd":
        est._first_step = max(0, int(round(1.0 / (lam * eta))) - 2)
    start = (time.perf_counter(), time.process_time())
    with np.errstate(all="ignore"):
        try:
            est.fit(X, y)
        except (FloatingPointError, ValueError, OverflowError) as exc:  # diverged
            print(f"    {method} η={eta:g}: {type(exc).__name__}: {exc}", flush=True)
    objective = [m[2] if np.isfinite(m[2]) else float("inf") for m in marks]
    calls = getattr(est, "oracle_calls_", None)
    if calls is not None and len(calls) >= len(marks):
        passes_axis = (np.asarray(calls[:len(marks)], dtype=float) / n).tolist()
    else:
        per = PASSES_PER_EPOCH.get(method, 2)
        passes_axis = [per * (k + 1) for k in range(len(marks))]
    curve = dict(passes=passes_axis, objective=objective,
                 wall=[m[0] - start[0] for m in marks], cpu=[m[1] - start[1] for m in marks])
    gaps = getattr(est, "duality_gaps_", None)
    if method == "bcfw" and gaps is not None and len(gaps) == len(marks):
        curve["lower_bound"] = (np.asarray(objective) - np.asarray(gaps)).tolist()
    return curve


def run_reference(method, eta, ifo, lam, seed, passes, n):
    """The reference's method with the same step, from w = 0; curve as run_skstruct's
    (times from the reference's own epoch timer, CPU from a per-epoch hook)."""
    from casimir import optim

    reg = [optim.L2Penalty(lam)]
    w0 = np.zeros(ifo.dim)
    if method == "bcfw":
        ifo.update_smoothing_coefficient(None)
        start = time.process_time()
        model, logs = optim.block_coordinate_frank_wolfe_optimize(
            w0, ifo, None, None, reg, num_passes=passes, seed=seed, logging=True,
            verbose=False)
        cpu = np.linspace(0, time.process_time() - start, passes + 1)[1:].tolist()
        per = 1
    else:
        if method == "sgd":
            ifo.update_smoothing_coefficient(None)
            algorithm = "sgd"
            options = dict(learning_rate_scheme="linear", averaging="wavg",
                           initial_learning_rate=eta, learning_rate_time_factor=1.0 / (lam * eta))
            per = 1
        else:
            per = 2
            if method == "svrg":
                ifo.update_smoothing_coefficient(1.0)
                algorithm = "svrg"
                options = dict(learning_rate=eta, smoothing_coefficient=1.0)
            elif method == "casimir-const":
                ifo.update_smoothing_coefficient(1.0)
                algorithm = "casimir_svrg"
                options = dict(grad_lipschitz_parameter=1.0 / eta, initial_smoothing_coefficient=1.0,
                               smoothing_coefficient_update_rule="const", warm_start="prev-iterate")
            elif method == "casimir-adapt":
                ifo.update_smoothing_coefficient(2.0)
                algorithm = "casimir_svrg"
                options = dict(learning_rate=eta, initial_smoothing_coefficient=2.0,
                               smoothing_coefficient_update_rule="expo",
                               warm_start="extrapolation", initial_moreau_coefficient=lam)
            else:
                raise ValueError(method)
        cpu_marks = []

        def tick(model, train_ifo):
            cpu_marks.append(time.process_time())
            return False

        epochs = max(1, passes // per)
        model, logs = optim.optimize_ifo(
            w0, ifo, None, None, algorithm, reg, num_passes=epochs, termination_criterion=tick,
            seed=seed, logging=True, verbose=False, optim_options=options)
        cpu_marks.append(time.process_time())
        cpu = np.cumsum(np.diff(cpu_marks)).tolist()
    objective = [float(row[1]) if np.isfinite(row[1]) else float("inf") for row in logs[1:]]
    wall = np.cumsum([float(row[-1]) for row in logs[1:]]).tolist()
    return dict(passes=[per * (k + 1) for k in range(len(objective))], objective=objective,
                wall=wall, cpu=cpu)


def tune(method, X, y, lam, tune_passes):
    """(chosen η, {η: best objective after tune_passes}) on GRID, seed 0."""
    scores = {}
    for eta in GRID:
        curve = run_skstruct(method, eta, X, y, lam, 0, tune_passes)
        scores[eta] = min(curve["objective"]) if curve["objective"] else float("inf")
    return min(scores, key=scores.get), scores


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="chunking,upos")
    parser.add_argument("--lambdas", default="1,0.1,0.01", help="λ·n values")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--n-train", type=int, default=2000)
    parser.add_argument("--hashed", type=int, default=2 ** 12)
    parser.add_argument("--passes", type=int, default=40)
    parser.add_argument("--tune-passes", type=int, default=6)
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--reference", action="store_true",
                        help="also run the reference code (seed 0), with the stored tuned steps")
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args(argv)
    stored = json.loads(JSON.read_text()) if JSON.exists() else {"settings": {}, "runs": {}}
    methods = args.methods.split(",")
    for task in [] if args.report_only else args.tasks.split(","):
        X, y = load_task(task, args.n_train, args.hashed)
        n = len(X)
        # compile the kernels outside the timings
        for method in methods:
            run_skstruct(method, GRID[4], X[:30], y[:30], 1.0 / n, 0, 2)
        for lam_n in (float(v) for v in args.lambdas.split(",")):
            lam = lam_n / n
            group = f"{task}|{lam_n:g}|{n}|{args.hashed}"
            setting = stored["settings"].setdefault(group, {"eta": {}, "grid": {}})
            if args.reference:
                run_reference_group(stored, group, task, X, y, lam, methods, args)
                continue
            for method in methods:
                if method in TUNED:
                    start = time.process_time()
                    eta, scores = tune(method, X, y, lam, args.tune_passes)
                    setting["eta"][method] = eta
                    setting["grid"][method] = {f"{k:g}": v for k, v in scores.items()}
                    print(f"{group} {method}: η = {eta:g} (grid CPU "
                          f"{time.process_time() - start:.1f} s)", flush=True)
                eta = setting["eta"].get(method, float("nan"))
                for seed in (int(s) for s in args.seeds.split(",")):
                    curve = run_skstruct(method, eta, X, y, lam, seed, args.passes)
                    curve.update(load=os.getloadavg(), code=code_version(skstruct), eta=eta)
                    stored["runs"][f"{group}|skstruct|{method}|{seed}"] = curve
                    print(f"  {method} seed {seed}: F = {min(curve['objective']):.6f} after "
                          f"{curve['passes'][-1]:g} passes, CPU {curve['cpu'][-1]:.1f} s, "
                          f"wall {curve['wall'][-1]:.1f} s, load {os.getloadavg()[0]:.2f}",
                          flush=True)
                stored["command"] = command_line("benchmarks/bench_smoothed_protocol.py")
                stored["machine"] = machine_summary()
                save(stored)
    write_report(stored)


def run_reference_group(stored, group, task, X, y, lam, methods, args):
    sys.path.insert(0, str(CASIMIR / "src"))
    from reference_casimir.exported_ifo import ExportedChainIfo

    classes = np.unique(np.concatenate(y))
    encoded = np.searchsorted(classes, np.concatenate(y))
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in y])])
    ifo = ExportedChainIfo(sp.vstack(list(X)).tocsr(), offsets, encoded, len(classes), 1.0, 5)
    etas = stored["settings"][group]["eta"]
    for method in methods:
        if method == "casimir-default":
            continue
        eta = etas.get(method, float("nan"))
        curve = run_reference(method, eta, ifo, lam, 0, args.passes, len(X))
        curve.update(load=os.getloadavg(), eta=eta,
                     command=command_line("benchmarks/bench_smoothed_protocol.py"))
        stored["runs"][f"{group}|reference|{method}|0"] = curve
        print(f"  reference {method}: F = {min(curve['objective']):.6f} after "
              f"{curve['passes'][-1]:g} passes, CPU {curve['cpu'][-1]:.1f} s, "
              f"load {os.getloadavg()[0]:.2f}", flush=True)
        save(stored)


def save(stored):
    RESULTS.mkdir(exist_ok=True)
    JSON.write_text(json.dumps(stored, indent=1) + "\n")


def running_min(values):
    return np.minimum.accumulate(np.asarray(values, dtype=float))


def passes_to(curve, target):
    """Passes after which the best objective so far is first at most ``target``."""
    for p, v in zip(curve["passes"], running_min(curve["objective"])):
        if v <= target:
            return p
    return None


def _groups(stored):
    groups = {}
    for key, curve in stored["runs"].items():
        task, lam_n, n, hashed, side, method, seed = key.split("|")
        groups.setdefault((task, lam_n, n, hashed), {}).setdefault((side, method), []).append(curve)
    return groups


def reference_objective(runs):
    """F* = the smallest objective any run of the group reached; LB = the best BCFW dual."""
    f_star = min(min(c["objective"]) for curves in runs.values() for c in curves)
    lb = max((max(c["lower_bound"]) for curves in runs.values() for c in curves
              if "lower_bound" in c), default=float("-inf"))
    return f_star, lb


TARGETS = (0.3, 0.1, 0.03, 0.01)


def write_report(stored):
    reference_commands = sorted({r["command"] for k, r in stored["runs"].items()
                                 if "|reference|" in k and "command" in r})
    lines = ["# The smoothed-SSVM paper's claim, tested the paper's way", "",
             "Produced by `benchmarks/bench_smoothed_protocol.py` (its docstring has the "
             "protocol). Command: `" + stored.get("command", "?") + "`"
             + ("; reference runs: " + ", ".join(f"`{c}`" for c in reference_commands)
                if reference_commands else "") + ".", "",
             "Per task and λ: the step η chosen on the common grid 2^-1 … 2^-9 (by the "
             "best non-smooth primal after 6 passes, seed 0); then, medians over 3 seeds: "
             "the best primal after 10, 20 and 40 passes (oracle calls / n), the passes "
             "needed to bring the best primal within 30 %, 10 %, 3 % and 1 % of F* "
             "(the smallest primal any run reached, far above the optimum at small λ; — : not "
             "within the budget; a median "
             "over seeds, — if any seed misses), and the CPU and wall seconds of the "
             "whole run (objective evaluations included). `reference` rows: the paper's "
             "code, seed 0, same data, same η, 20 passes (nan: beyond its run).", ""]
    for (task, lam_n, n, hashed), runs in sorted(_groups(stored).items()):
        f_star, lb = reference_objective(runs)
        etas = stored["settings"].get(f"{task}|{lam_n}|{n}|{hashed}", {}).get("eta", {})
        lines += [f"## {task}, λ = {lam_n}/n, n = {n}, features hashed to {hashed}", "",
                  f"F* = {f_star:.6g}; certified lower bound (best BCFW dual in these runs) "
                  f"{lb:.6g}.", "",
                  "| code | method | η | seeds | F @10 | F @20 | F @40 | "
                  + " | ".join(f"passes to {t:.0%}" for t in TARGETS)
                  + " | CPU s | wall s |",
                  "|---|---|---|---|---|---|---|" + "---|" * len(TARGETS) + "---|---|"]
        order = {m: i for i, m in enumerate(METHODS)}
        for (side, method), curves in sorted(runs.items(),
                                             key=lambda kv: (kv[0][0] != "skstruct",
                                                             order.get(kv[0][1], 99))):
            def at(p):
                vals = []
                for c in curves:
                    if c["passes"][-1] < p:  # a shorter run
                        return float("nan")
                    rm = running_min(c["objective"])
                    idx = [k for k, q in enumerate(c["passes"]) if q <= p]
                    vals.append(rm[idx[-1]] if idx else np.inf)
                return np.median(vals)
            reach = []
            for t in TARGETS:
                hits = [passes_to(c, f_star * (1 + t)) for c in curves]
                reach.append("—" if any(h is None for h in hits) else f"{np.median(hits):g}")
            eta = etas.get(method)
            lines.append(
                f"| {side} | {method} | {'' if eta is None else f'{eta:g}'} | {len(curves)} | "
                f"{at(10):.5g} | {at(20):.5g} | {at(40):.5g} | " + " | ".join(reach)
                + f" | {np.median([c['cpu'][-1] for c in curves]):.1f} | "
                f"{np.median([c['wall'][-1] for c in curves]):.1f} |")
        lines.append("")
        grid = stored["settings"].get(f"{task}|{lam_n}|{n}|{hashed}", {}).get("grid", {})
        if grid:
            lines += ["Grid (best primal after 6 passes, seed 0):", "",
                      "| method | " + " | ".join(f"2^-{j}" for j in range(1, 10)) + " |",
                      "|---|" + "---|" * 9]
            for method, scores in grid.items():
                lines.append(f"| {method} | " + " | ".join(
                    f"{scores.get(f'{g:g}', float('nan')):.4g}" for g in GRID) + " |")
            lines.append("")
    if NOTES.exists():
        lines += [NOTES.read_text()]
    REPORT.write_text("\n".join(lines) + "\n")
    plot(stored)


def plot(stored):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plots")
        return
    groups = _groups(stored)
    for task in sorted({g[0] for g in groups}):
        keys = sorted((g for g in groups if g[0] == task), key=lambda g: -float(g[1]))
        fig, axes = plt.subplots(len(keys), 3, figsize=(15, 3.4 * len(keys)), squeeze=False)
        for row, key in enumerate(keys):
            runs = groups[key]
            for (side, method), curves in sorted(runs.items()):
                style = "-" if side == "skstruct" else "--"
                for s, c in enumerate(curves):
                    sub = running_min(c["objective"])
                    label = f"{method}" + (" (reference)" if side != "skstruct" else "")
                    kw = dict(ls=style, alpha=0.8, label=label if s == 0 else None,
                              color=f"C{METHODS.index(method)}")
                    axes[row, 0].semilogy(c["passes"], sub, **kw)
                    axes[row, 1].semilogy(c["cpu"], sub, **kw)
                    axes[row, 2].semilogy(c["wall"], sub, **kw)
            axes[row, 0].set_ylabel(f"λ = {key[1]}/n\nbest primal so far")
        axes[-1, 0].set_xlabel("passes (oracle calls / n)")
        axes[-1, 1].set_xlabel("CPU seconds")
        axes[-1, 2].set_xlabel("wall seconds")
        axes[0, 0].legend(fontsize=7)
        fig.suptitle(f"{task}: best non-smooth primal so far, 3 seeds (dashed: reference code, "
                     f"seed 0)")
        fig.tight_layout()
        fig.savefig(RESULTS / f"smoothed_protocol_{task}.png", dpi=80)
        plt.close(fig)


if __name__ == "__main__":
    main()
