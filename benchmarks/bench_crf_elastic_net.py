"""Elastic-net CRF (OWL-QN) against CRFsuite on CoNLL-2000, and seen pairs against all.

Part ``elastic``: CRFsuite's tutorial setting, L-BFGS with c1 = c2 = 0.1 (CRFsuite runs
OWL-QN), ``--iterations`` iterations at most with CRFsuite's own stopping tests as in the
tutorial, against skstruct's ``CRF(alpha=(c1 + 2 c2) / n, l1_ratio=c1 / (c1 + 2 c2),
feature_label_pairs="seen")`` with ``--our-iterations`` OWL-QN iterations and its stopping
tests off; both from the same token feature dicts (the sklearn-crfsuite tutorial set, as in
``bench_crf_conll2000.py``), trained alternating in one process, medians of ``--repeats``.
Reported: fit time of each (wall and CPU) and the ratio, chunk F1, the nonzero state
weights and the final objective in one scaling, F = (CRFsuite's objective) / n:

- CRFsuite's model is loaded into skstruct's layout (start and end scores zero: CRFsuite
  has none) and F evaluated there by skstruct's objective;
- skstruct's fitted model, which also has start and end scores;
- skstruct on exactly CRFsuite's parameter set (seen pairs, all transitions, start and end
  held at zero): the same solver run once more with those held too.

The fair-baseline check of this part: after the alternating fits the script runs itself in
a fresh process (``_compare.fresh_process``, option ``--peer-alone-json``) where only
CRFsuite fits, ``--repeats`` times, and reports its times there beside the alternating
ones, with skstruct's CPU ratio to them (``--no-fresh-check`` skips it).

Part ``l2``: L2 only (c2 = 0.1, ``--l2-iterations`` L-BFGS iterations, no stopping test),
``feature_label_pairs="all"`` against ``"seen"``, alternating: chunk F1, fit time,
parameters and nonzero weights.

Writes ``results/crf_elastic_net.md`` and ``.json`` next to this file.

Run: ``python benchmarks/bench_crf_elastic_net.py [--repeats 3] [--parts elastic l2]``
(needs ``pip install sklearn-crfsuite``).
"""

import argparse
import os
import sys
import time
from importlib.metadata import version
from pathlib import Path

import numpy as np
import sklearn_crfsuite

import skstruct
from skstruct import CRF
from skstruct._elastic_net import unseen_pairs_mask
from skstruct.datasets import load_conll2000
from skstruct.losses import CRFLoss
from skstruct.metrics import span_f1_score
from skstruct.optim import RegularizedRisk, run_solver
from skstruct.preprocessing import SequenceVectorizer, sentences_to_features

sys.path.insert(0, str(Path(__file__).parent))
from _compare import (ALONE_OPTION, Side, alone_summary, alternate, fresh_process,  # noqa: E402
                      load_average, write_alone)
from _report import code_version, command_line, machine_summary, record_run  # noqa: E402

RESULTS = Path(__file__).parent / "results"
SCRIPT = "benchmarks/bench_crf_elastic_net.py"


def log(text):
    print(text, file=sys.stderr, flush=True)


class Data:
    """CoNLL-2000 with the tutorial token features."""

    def __init__(self, path=None, max_sentences=None):
        train, test = load_conll2000("train", path=path), load_conll2000("test", path=path)
        if max_sentences:
            train = {k: v[:max_sentences] for k, v in train.items() if k != "DESCR"}
            train = type(test)(**train)
        self.X_train = sentences_to_features(train.words, train.pos)
        self.X_test = sentences_to_features(test.words, test.pos)
        self.y_train = train.target
        self.y_train_lists = [list(t) for t in train.target]
        self.y_test = test.target
        self.n = len(self.X_train)
        self.keys = sorted({key for sentence in self.X_train[:500] for token in sentence
                            for key in token})


# --- the two sides ----------------------------------------------------------------------

def fit_crfsuite(data, c1, c2, iterations):
    def run():
        model = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=c1, c2=c2,
                                     max_iterations=iterations,
                                     all_possible_transitions=True)
        return model.fit(data.X_train, data.y_train_lists)
    return run


def fit_skstruct(data, alpha, l1_ratio, pairs, iterations):
    """Vectorize + fit (what the user waits for); also returns the solver time."""
    def run():
        tic, cpu_tic = time.perf_counter(), time.process_time()
        vectorizer = SequenceVectorizer()
        Xv = vectorizer.fit_transform(data.X_train)
        solver_tic = time.perf_counter()
        crf = CRF(alpha=alpha, l1_ratio=l1_ratio, feature_label_pairs=pairs,
                  max_iter=iterations, tol=0.0).fit(Xv, data.y_train)
        crf.solver_seconds_ = time.perf_counter() - solver_tic
        result = (vectorizer, Xv, crf)
        return result, time.perf_counter() - tic, time.process_time() - cpu_tic
    return run


# --- objectives in one scaling ----------------------------------------------------------

class Objective:
    """F(w) = mean NLL + alpha (l1_ratio ||w||_1 + (1 - l1_ratio) / 2 ||w||^2) on the
    training set, evaluated by skstruct (its features, decoder and loss)."""

    def __init__(self, crf, Xv, y, alpha, l1_ratio):
        kind, batch, classes, y_encoded, weights = crf._validate_training_data(Xv, y, None)
        self.kind, self.batch, self.classes, self.y_encoded = kind, batch, classes, y_encoded
        self.features = kind.feature_map(batch.n_features, classes)
        self.l1 = alpha * l1_ratio
        self.risk = RegularizedRisk(self.features, batch, y_encoded, crf.decoder_, CRFLoss(),
                                    alpha * (1 - l1_ratio), weights)

    def __call__(self, w):
        return self.risk.value(w) + self.l1 * float(np.abs(w).sum())

    def crfsuite_weights(self, model, vectorizer, keys):
        """CRFsuite's state and transition weights in skstruct's flat layout."""
        column = {_crfsuite_attribute(name, keys): j
                  for j, name in enumerate(vectorizer.get_feature_names_out())}
        index = {label: k for k, label in enumerate(self.classes)}
        n_classes = len(self.classes)
        unary = np.zeros((self.batch.n_features, n_classes))
        missing = 0
        for (attribute, label), weight in model.state_features_.items():
            j = column.get(attribute)
            if j is None:
                missing += 1
                continue
            unary[j, index[label]] = weight
        transition = np.zeros((n_classes, n_classes))
        for (previous, current), weight in model.transition_features_.items():
            transition[index[previous], index[current]] = weight
        zeros = np.zeros(n_classes)
        return self.features.pack(unary, transition, zeros, zeros), missing

    def solve_on_crfsuite_parameters(self, iterations):
        """OWL-QN with the unseen pairs and the start and end scores held at zero."""
        fixed = unseen_pairs_mask(self.kind, self.features, self.batch, self.y_encoded,
                                  self.classes)
        n_classes = len(self.classes)
        ones = np.ones(n_classes)
        fixed |= self.features.pack(np.zeros((self.batch.n_features, n_classes)),
                                    np.zeros((n_classes, n_classes)), ones, ones).astype(bool)
        options = dict(max_iter=iterations, tol=0.0, verbose=0, callback=None, l1=self.l1,
                       fixed=fixed)
        return run_solver("lbfgs", self.risk, np.zeros(self.features.n_params), options)


def _crfsuite_attribute(name, keys):
    """python-crfsuite's attribute name of a SequenceVectorizer column: ``key=value``
    (a string value) becomes ``key:value``; a boolean or number keeps its key."""
    if name in keys:
        return name
    key = max((k for k in keys if name.startswith(k + "=")), key=len)
    return key + ":" + name[len(key) + 1:]


def first_iteration_within(curve, target, rtol):
    hits = np.flatnonzero(np.asarray(curve) <= target * (1 + rtol))
    return int(hits[0]) + 1 if hits.size else None


# --- parts ------------------------------------------------------------------------------

def run_elastic(data, args):
    c1, c2, n = args.c1, args.c2, data.n
    alpha, l1_ratio = (c1 + 2 * c2) / n, c1 / (c1 + 2 * c2)
    sides = [Side("crfsuite", fit_crfsuite(data, c1, c2, args.iterations)),
             Side("skstruct", fit_skstruct(data, alpha, l1_ratio, "seen", args.our_iterations),
                  timed_inside=True)]
    load_before = load_average()
    measured = alternate(sides, args.repeats, log=log)
    load_after = load_average()
    alone = None
    if not args.no_fresh_check:
        log("timing CRFsuite alone in a fresh process")
        alone = fresh_process(Path(__file__).resolve(), child_argv(args))
    crfsuite = measured["crfsuite"]["results"][-1]
    vectorizer, Xv, crf = measured["skstruct"]["results"][-1]
    objective = Objective(crf, Xv, data.y_train, alpha, l1_ratio)
    w_crfsuite, missing = objective.crfsuite_weights(crfsuite, vectorizer, data.keys)
    F_crfsuite = objective(w_crfsuite)
    F_ours = objective(crf._params())
    log("  solving on CRFsuite's parameter set (start and end held at zero)")
    same = objective.solve_on_crfsuite_parameters(args.our_iterations)
    F_same = objective(same.w)
    crfsuite_log = crfsuite.training_log_.last_iteration
    pred_crfsuite = crfsuite.predict(data.X_test)
    pred_ours = crf.predict(vectorizer.transform(data.X_test))
    return {
        "c1": c1, "c2": c2, "alpha": alpha, "l1_ratio": l1_ratio,
        "crfsuite_iterations": len(crfsuite.training_log_.iterations),
        "our_iterations": int(crf.n_iter_),
        "fit_seconds": {k: measured[k]["median"] for k in measured},
        "fit_seconds_all": {k: measured[k]["seconds"] for k in measured},
        "fit_cpu_seconds": {k: measured[k]["cpu_median"] for k in measured},
        "fit_cpu_seconds_all": {k: measured[k]["cpu_seconds"] for k in measured},
        "crfsuite_alone": alone,
        "solver_seconds": {
            "crfsuite": sum(it["time"] for it in crfsuite.training_log_.iterations),
            "skstruct": crf.solver_seconds_},
        "chunk_f1": {"crfsuite": span_f1_score(data.y_test, pred_crfsuite),
                     "skstruct": span_f1_score(data.y_test, pred_ours)},
        "nonzero_state_weights": {"crfsuite": int(np.count_nonzero(
                                      list(crfsuite.state_features_.values()))),
                                  "skstruct": int(np.count_nonzero(crf.coef_))},
        "crfsuite_active_features_log": int(crfsuite_log["active_features"]),
        "nonzero_parameters_skstruct": crf.n_nonzero_,
        "seen_pairs": int(crf.n_features_in_ * len(crf.classes_)
                          - unseen_pairs_mask(objective.kind, objective.features,
                                              objective.batch, objective.y_encoded,
                                              objective.classes).sum()),
        "crfsuite_attributes_not_in_vocabulary": missing,
        "objective": {
            "crfsuite_evaluated_by_skstruct": F_crfsuite,
            "crfsuite_log_loss_over_n": crfsuite_log["loss"] / n,
            "skstruct_fit": F_ours,
            "skstruct_fit_curve_last": float(crf.objective_curve_[-1]),
            "skstruct_same_parameters": F_same,
            "skstruct_same_parameters_nonzero_state": int(np.count_nonzero(
                objective.features.unpack(same.w)[0])),
        },
        "relative_difference": {
            "fit": (F_ours - F_crfsuite) / F_crfsuite,
            "same_parameters": (F_same - F_crfsuite) / F_crfsuite,
        },
        "first_iteration_within_1e-3": {
            "fit": first_iteration_within(crf.objective_curve_, F_crfsuite, 1e-3),
            "same_parameters": first_iteration_within(same.objective_curve, F_crfsuite,
                                                      1e-3),
        },
        "load_average": [load_before, load_after],
    }


def child_argv(args):
    """The arguments of the fresh process that fits CRFsuite alone (the elastic part)."""
    argv = ["--c1", str(args.c1), "--c2", str(args.c2), "--iterations", str(args.iterations),
            "--repeats", str(args.repeats), "--parts", "elastic"]
    if args.data:
        argv += ["--data", args.data]
    if args.max_sentences:
        argv += ["--max-sentences", str(args.max_sentences)]
    return argv


def crfsuite_alone(data, args, path):
    """The fresh process of the fair-baseline check: CRFsuite's elastic-net fits only."""
    side = Side("crfsuite", fit_crfsuite(data, args.c1, args.c2, args.iterations))
    write_alone(path, alone_summary(alternate([side], args.repeats, log=log)))


def alone_lines(e):
    """CRFsuite alone in a fresh process, beside its alternating times."""
    alone = e.get("crfsuite_alone")
    if not alone:
        return ["CRFsuite was not timed alone in a fresh process in this run.", ""]
    if "error" in alone:
        return [f"CRFsuite alone in a fresh process: failed ({alone['error']}).", ""]
    mine = alone["sides"]["crfsuite"]
    cpu, wall = e["fit_cpu_seconds"], e["fit_seconds"]
    return [
        f"Fair-baseline check: CRFsuite alone in a fresh process (the same "
        f"{len(mine['cpu_seconds'])} fits, nothing of skstruct's in that process, load "
        f"{alone['load_average_before']:.1f} before, {alone['load_average_after']:.1f} "
        f"after): CPU {mine['cpu_median']:.1f} s (rounds "
        + ", ".join(f"{c:.1f}" for c in mine["cpu_seconds"])
        + f"), wall {mine['median']:.1f} s, against {cpu['crfsuite']:.1f} s CPU and "
        f"{wall['crfsuite']:.1f} s wall alternating here; skstruct's fit CPU "
        f"{cpu['skstruct']:.1f} s is **{cpu['skstruct'] / mine['cpu_median']:.2f}x** of "
        f"CRFsuite alone (**{cpu['skstruct'] / cpu['crfsuite']:.2f}x** in the same run).",
        "",
        "Per round, CPU seconds alternating (CRFsuite / skstruct): "
        + ", ".join(f"{a:.1f} / {b:.1f}" for a, b in zip(
            e["fit_cpu_seconds_all"]["crfsuite"], e["fit_cpu_seconds_all"]["skstruct"]))
        + ".", ""]


def run_l2(data, args):
    alpha = 2 * args.c2 / data.n
    sides = [Side(pairs, fit_skstruct(data, alpha, 0.0, pairs, args.l2_iterations),
                  timed_inside=True) for pairs in ("all", "seen")]
    load_before = load_average()
    measured = alternate(sides, args.repeats, log=log)
    load_after = load_average()
    out = {"c2": args.c2, "alpha": alpha, "iterations": args.l2_iterations,
           "load_average": [load_before, load_after]}
    for pairs in ("all", "seen"):
        vectorizer, Xv, crf = measured[pairs]["results"][-1]
        out[pairs] = {
            "fit_seconds": measured[pairs]["median"],
            "fit_seconds_all": measured[pairs]["seconds"],
            "fit_cpu_seconds": measured[pairs]["cpu_median"],
            "chunk_f1": span_f1_score(data.y_test, crf.predict(
                vectorizer.transform(data.X_test))),
            "unary_weights": int(np.size(crf.coef_)) if pairs == "all" else None,
            "nonzero_state_weights": int(np.count_nonzero(crf.coef_)),
            "nonzero_parameters": crf.n_nonzero_,
            "final_objective": float(crf.objective_curve_[-1]),
        }
    return out


# --- report -----------------------------------------------------------------------------

def report(run):
    lines = ["# Elastic-net CRF on CoNLL-2000: skstruct (OWL-QN) vs CRFsuite", "",
             f"Produced by `{run['command']}` at {run['code']}; {run['machine']['cpu']}, "
             f"{run['machine']['cores']} cores, {run['machine']['numba_threads']} numba "
             f"threads; medians of {run['repeats']} fits, alternating in one process. "
             "sklearn-crfsuite " + run["versions"]["sklearn-crfsuite"] + ".", ""]
    e = run.get("elastic")
    if e:
        o, rel = e["objective"], e["relative_difference"]
        first = e["first_iteration_within_1e-3"]
        fit, cpu = e["fit_seconds"], e["fit_cpu_seconds"]
        lines += [
            f"## c1 = {e['c1']}, c2 = {e['c2']} (alpha = {e['alpha']:.4e}, "
            f"l1_ratio = {e['l1_ratio']:.4f}, feature_label_pairs='seen')", "",
            f"CRFsuite: L-BFGS (OWL-QN), at most {run['args']['iterations']} iterations with "
            f"its default stopping tests, all transitions; it ran {e['crfsuite_iterations']}. "
            f"skstruct: {e['our_iterations']} OWL-QN iterations, stopping tests off. "
            f"Load average {e['load_average'][0]:.1f} before, {e['load_average'][1]:.1f} "
            "after."
            + (f" This part: `{e['command']}` at {e['code']}." if "command" in e else ""),
            "",
            "| measure | CRFsuite | skstruct | ratio |", "|---|---|---|---|",
            f"| fit from feature dicts, wall (s) | {fit['crfsuite']:.1f} | "
            f"{fit['skstruct']:.1f} | {fit['skstruct'] / fit['crfsuite']:.2f}x |",
            f"| fit, CPU (s) | {cpu['crfsuite']:.1f} | {cpu['skstruct']:.1f} | "
            f"{cpu['skstruct'] / cpu['crfsuite']:.2f}x |",
            f"| solver only, wall (s) | {e['solver_seconds']['crfsuite']:.1f} | "
            f"{e['solver_seconds']['skstruct']:.1f} | "
            f"{e['solver_seconds']['skstruct'] / e['solver_seconds']['crfsuite']:.2f}x |",
            *([f"| fit, CPU, CRFsuite alone in a fresh process (s) | "
               f"{e['crfsuite_alone']['sides']['crfsuite']['cpu_median']:.1f} | "
               f"{cpu['skstruct']:.1f} | "
               f"{cpu['skstruct'] / e['crfsuite_alone']['sides']['crfsuite']['cpu_median']:.2f}x |"]
              if e.get("crfsuite_alone") and "error" not in e["crfsuite_alone"] else []),
            f"| chunk F1 | {100 * e['chunk_f1']['crfsuite']:.2f} | "
            f"{100 * e['chunk_f1']['skstruct']:.2f} | "
            f"{100 * (e['chunk_f1']['skstruct'] - e['chunk_f1']['crfsuite']):+.2f} points |",
            f"| nonzero state weights | {e['nonzero_state_weights']['crfsuite']:,} | "
            f"{e['nonzero_state_weights']['skstruct']:,} | |",
            f"| final objective F | {o['crfsuite_evaluated_by_skstruct']:.6f} | "
            f"{o['skstruct_fit']:.6f} | {rel['fit']:+.2e} relative |",
            "", *alone_lines(e),
            "Objective, one scaling: F = CRFsuite's objective / n = mean negative "
            "log-likelihood + alpha (l1_ratio ||w||_1 + (1 - l1_ratio)/2 ||w||^2).", "",
            f"- CRFsuite's final model, loaded into skstruct's layout (start and end scores "
            f"zero) and evaluated by skstruct: {o['crfsuite_evaluated_by_skstruct']:.6f} "
            f"(CRFsuite's own last logged loss / n: {o['crfsuite_log_loss_over_n']:.6f}; "
            f"{e['crfsuite_attributes_not_in_vocabulary']} CRFsuite attributes had no "
            "column).",
            f"- skstruct's fitted CRF (it also has start and end scores): "
            f"{o['skstruct_fit']:.6f}, {rel['fit']:+.2e} relative; within 1e-3 of CRFsuite's "
            f"final value from iteration {first['fit']}.",
            f"- skstruct on exactly CRFsuite's parameters (the {e['seen_pairs']:,} seen "
            f"pairs, all transitions, start and end held at zero), same solver and "
            f"iterations: {o['skstruct_same_parameters']:.6f}, "
            f"{rel['same_parameters']:+.2e} relative; within 1e-3 from iteration "
            f"{first['same_parameters']}; "
            f"{o['skstruct_same_parameters_nonzero_state']:,} nonzero state weights.",
            f"- Nonzero parameters of skstruct's CRF (state, transitions, start, end): "
            f"{e['nonzero_parameters_skstruct']:,}; CRFsuite's log counts "
            f"{e['crfsuite_active_features_log']:,} active features.",
            "- Fit times include vectorizing the feature dicts (skstruct) and loading "
            "them (CRFsuite); *solver only* is CRFsuite's summed iteration times against "
            "`CRF.fit` on the vectorized data.", ""]
    l2 = run.get("l2")
    if l2:
        a, s = l2["all"], l2["seen"]
        lines += [
            f"## L2 only: all pairs vs seen pairs (c2 = {l2['c2']}, alpha = "
            f"{l2['alpha']:.4e}, {l2['iterations']} L-BFGS iterations)", "",
            f"Load average {l2['load_average'][0]:.1f} before, "
            f"{l2['load_average'][1]:.1f} after."
            + (f" This part: `{l2['command']}` at {l2['code']}." if "command" in l2 else ""),
            "",
            "| feature_label_pairs | fit wall (s) | fit CPU (s) | chunk F1 | nonzero state "
            "weights | final objective |", "|---|---|---|---|---|---|",
            f"| all | {a['fit_seconds']:.1f} | {a['fit_cpu_seconds']:.1f} | "
            f"{100 * a['chunk_f1']:.2f} | {a['nonzero_state_weights']:,} of "
            f"{a['unary_weights']:,} | {a['final_objective']:.5f} |",
            f"| seen | {s['fit_seconds']:.1f} | {s['fit_cpu_seconds']:.1f} | "
            f"{100 * s['chunk_f1']:.2f} | {s['nonzero_state_weights']:,} | "
            f"{s['final_objective']:.5f} |", "",
            "The seen pairs are held at zero by a mask (same feature maps and kernels), so "
            "the time per iteration is the same; the model is smaller.", ""]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--c1", type=float, default=0.1)
    parser.add_argument("--c2", type=float, default=0.1)
    parser.add_argument("--iterations", type=int, default=100,
                        help="CRFsuite's max_iterations (the tutorial's 100)")
    parser.add_argument("--our-iterations", type=int, default=100,
                        help="skstruct's OWL-QN iterations")
    parser.add_argument("--l2-iterations", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--parts", nargs="+", choices=["elastic", "l2"],
                        default=["elastic", "l2"])
    parser.add_argument("--data", default=None)
    parser.add_argument("--max-sentences", type=int, default=None,
                        help="train on the first sentences only (a quick check)")
    parser.add_argument("--no-fresh-check", action="store_true",
                        help="skip timing CRFsuite alone in a fresh process")
    parser.add_argument(ALONE_OPTION, default=None, metavar="FILE",
                        help="fit CRFsuite only (elastic part) and write its times to FILE "
                             "(the fresh process of the fair-baseline check)")
    args = parser.parse_args()

    data = Data(args.data, args.max_sentences)
    alone_path = getattr(args, ALONE_OPTION.lstrip("-").replace("-", "_"))
    if alone_path:
        crfsuite_alone(data, args, alone_path)
        return
    warm = SequenceVectorizer().fit_transform(data.X_train[:30])
    CRF(max_iter=2, tol=0.0, l1_ratio=0.5, feature_label_pairs="seen").fit(
        warm, data.y_train[:30])  # compile (or load the cache) before timing
    run = {"command": command_line(SCRIPT), "code": code_version(skstruct),
           "machine": machine_summary(), "repeats": args.repeats, "args": vars(args),
           "numba_num_threads_env": os.environ.get("NUMBA_NUM_THREADS"),
           "versions": {"skstruct": skstruct.__version__,
                        "sklearn-crfsuite": version("sklearn-crfsuite"),
                        "python-crfsuite": version("python-crfsuite")}}
    if "elastic" in args.parts:
        log("elastic net: CRFsuite vs skstruct")
        run["elastic"] = {**run_elastic(data, args), "command": run["command"],
                          "code": run["code"]}
    if "l2" in args.parts:
        log("L2: all pairs vs seen pairs")
        run["l2"] = {**run_l2(data, args), "command": run["command"], "code": run["code"]}
    label = "latest" if not args.max_sentences else "quick check"
    runs = record_run(RESULTS / "crf_elastic_net.json", label, run, merge=True)
    text = report(runs[label])
    if args.max_sentences:  # a quick check does not replace the committed report
        print(text)
        return
    (RESULTS / "crf_elastic_net.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
