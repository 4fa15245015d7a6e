"""skstruct's CRF versus CRFsuite (through sklearn-crfsuite) on CoNLL-2000 chunking.

Both train on the full CoNLL-2000 training set (8,936 sentences) with the same token
features (the sklearn-crfsuite tutorial set: word lower-case, suffixes, shape, POS, and
the same for the neighbouring words), L2 regularization only (CRFsuite ``c2``; skstruct
``alpha = 2 c2 / n_sequences``, the same objective up to the factor n), and the same
L-BFGS iteration budget, with both convergence tests disabled so that each runs exactly
``--iterations`` iterations. Both then tag the 2,012 test sentences.

Reported, in one run: training time of each and the ratio in three machine states (all
threads; one thread, ``numba.set_num_threads(1)``; all threads while a process started by
the benchmark keeps one core busy), the two libraries alternating fit by fit, medians of
``--repeats``, wall and CPU time; tagging throughput of each and the ratio; chunk F1 of
each (conlleval's definition); and the share of each step of one objective evaluation
(one thread, best CPU time of 5) in the generic composition and in the compiled passes.
Writes ``results/crf_conll2000.md`` and ``.json`` next to this file.

Run: ``python benchmarks/bench_crf_conll2000.py`` (needs ``pip install sklearn-crfsuite``);
``--states all,one-thread,busy-core`` chooses the machine states; ``--pairs seen`` trains
skstruct with ``feature_label_pairs="seen"`` (the parameters CRFsuite has: its
``all_possible_states=False``, which the benchmark always uses), ``--pairs all`` (the
default) with a weight for every (feature, label) pair.

Fair-baseline check: after the machine state ``all``, the script runs itself in a fresh
process with ``--peer-alone-json``, where only CRFsuite's fits run (same data, settings and
repeats), and reports their medians beside the alternating ones, with skstruct's CPU ratio
to them (``--no-fresh-check`` skips it). The fits alternate with the order swapped every
round. ``--output`` writes the results elsewhere than ``results/`` (a short check run).
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path

import numba
import numpy as np
import pycrfsuite
import sklearn_crfsuite

sys.path.insert(0, str(Path(__file__).parent))
from _compare import ALONE_OPTION, fresh_process, load_average  # noqa: E402

import skstruct
from skstruct import CRF
from skstruct.datasets import load_conll2000
from skstruct.metrics import span_f1_score, token_accuracy
from skstruct.preprocessing import SequenceVectorizer, sentences_to_features

RESULTS = Path(__file__).parent / "results"


def median_time(function, repeats):
    times, result = [], None
    for _ in range(repeats):
        tic = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - tic)
    return float(np.median(times)), result


def alternating_medians(functions, repeats):
    """Run the functions in turn ``repeats`` times; median wall and CPU time of each and
    the last result of each."""
    wall = {name: [] for name in functions}
    cpu = {name: [] for name in functions}
    results = {}
    names = list(functions)
    for k in range(repeats):
        for name in (names if k % 2 == 0 else names[::-1]):  # order swapped every round
            function = functions[name]
            tic, tic_cpu = time.perf_counter(), time.process_time()
            results[name] = function()
            wall[name].append(time.perf_counter() - tic)
            cpu[name].append(time.process_time() - tic_cpu)
    return ({name: float(np.median(v)) for name, v in wall.items()},
            {name: float(np.median(v)) for name, v in cpu.items()}, results)


@contextmanager
def machine_state(state):
    """``all``: as is; ``one-thread``: kernels on one thread; ``busy-core``: another
    process spins on one core meanwhile."""
    previous = numba.get_num_threads()
    spinner = None
    if state == "one-thread":
        numba.set_num_threads(1)
    elif state == "busy-core":
        spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        time.sleep(0.5)
    try:
        yield
    finally:
        numba.set_num_threads(previous)
        if spinner is not None:
            spinner.kill()
            spinner.wait()


def objective_step_shares(Xv, target, alpha, pairs="all", repeats=5):
    """CPU time of the steps of one objective evaluation on one thread, best of
    ``repeats``: the generic composition and the compiled passes."""
    from skstruct.features._sparse import matmul
    from skstruct.losses import CRFLoss
    from skstruct.optim import RegularizedRisk
    from skstruct.utils._parallel import dynamic_schedule

    crf = CRF(alpha=alpha, feature_label_pairs=pairs)
    kind, batch, classes, y, weights = crf._validate_training_data(Xv, target, None)
    decoder = crf._make_decoder(kind, [("marginals", "CRF training")], y, batch)
    features = crf._training_features(kind, batch, y, classes, decoder)
    risk = RegularizedRisk(features, batch, y, decoder, CRFLoss(), alpha, weights)
    compiled = risk.compiled_objective()
    w = np.random.default_rng(0).normal(scale=0.05, size=features.n_params)
    W = features.unpack(w)[0]
    scores = features.scores(batch, w)
    grad_parts = risk._loss(scores)[1]
    values, grad = np.empty(batch.n_sequences), np.empty_like(w)
    c = compiled
    generic = {
        "X @ W": lambda: matmul(batch.X, W),
        "forward-backward, loss and G": lambda: risk._loss(scores),
        "X^T G and pairwise sums": lambda: features.transpose(batch, grad_parts),
    }
    passes = {
        "X @ W, forward-backward, loss, G and X^T G by lanes (passes 1 and 2)":
            lambda: c._lane_pass(w, values),
        "lane sums + alpha w (pass 3)": lambda: c._sum_lanes(w, alpha, grad),
    }
    out = {}
    with machine_state("one-thread"):
        for label, steps, total in (
                ("generic", generic, lambda: (setattr(risk, "_compiled", None),
                                              risk.value_and_gradient(w),
                                              setattr(risk, "_compiled", compiled))),
                ("compiled", passes, lambda: risk.value_and_gradient(w))):
            times = {}
            for name, step in list(steps.items()) + [("total", total)]:
                step()
                best = np.inf
                for _ in range(repeats):
                    with dynamic_schedule() if "pass" in name else _nothing():
                        tic = time.process_time()
                        step()
                        best = min(best, time.process_time() - tic)
                times[name] = best
            out[label] = times
    return out


@contextmanager
def _nothing():
    yield


def crfsuite_model(c2, iterations):
    return sklearn_crfsuite.CRF(
        algorithm="lbfgs", c1=0.0, c2=c2, max_iterations=iterations,
        all_possible_transitions=True, epsilon=1e-12, delta=0.0, period=10,
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--c2", type=float, default=0.1)
    parser.add_argument("--repeats", type=int, default=3, help="training repeats")
    parser.add_argument("--states", default="all,one-thread,busy-core",
                        help="machine states, comma-separated: all, one-thread, busy-core")
    parser.add_argument("--pairs", choices=("all", "seen"), default="all",
                        help="skstruct's feature_label_pairs (CRFsuite: always its default, "
                        "all_possible_states=False, the seen pairs)")
    parser.add_argument("--data", default=None, help="folder with train.txt.gz, test.txt.gz "
                        "(default: the copy bundled with skstruct, the same files)")
    parser.add_argument("--output", default=str(RESULTS), help="results folder")
    parser.add_argument("--no-fresh-check", action="store_true",
                        help="skip timing CRFsuite alone in a fresh process")
    parser.add_argument(ALONE_OPTION, default=None, metavar="FILE",
                        help="fit only CRFsuite and write its times to FILE (the fresh "
                        "process of the fair-baseline check)")
    args = parser.parse_args()

    train, test = load_conll2000("train", path=args.data), load_conll2000("test", path=args.data)
    X_train = sentences_to_features(train.words, train.pos)
    X_test = sentences_to_features(test.words, test.pos)
    y_train = [list(t) for t in train.target]
    n_train_tokens = sum(map(len, y_train))
    n_test_tokens = sum(map(len, test.target))
    alpha = 2 * args.c2 / len(X_train)

    # --- training, from the token feature dicts (what a user calls) ---
    def fit_crfsuite():
        return crfsuite_model(args.c2, args.iterations).fit(X_train, y_train)

    if args.peer_alone_json:
        wall, cpu, _ = alternating_medians({"crfsuite": fit_crfsuite}, args.repeats)
        Path(args.peer_alone_json).write_text(json.dumps(
            {"wall": wall["crfsuite"], "cpu": cpu["crfsuite"],
             "load_average_after": load_average()}))
        return

    def fit_skstruct():
        vectorizer = SequenceVectorizer()
        Xv = vectorizer.fit_transform(X_train)
        tic = time.perf_counter()
        crf = CRF(alpha=alpha, max_iter=args.iterations, tol=0.0,
                  feature_label_pairs=args.pairs).fit(Xv, train.target)
        return vectorizer, crf, time.perf_counter() - tic

    CRF(max_iter=2, tol=0.0, feature_label_pairs=args.pairs).fit(  # compile before timing
        SequenceVectorizer().fit_transform(X_train[:20]), train.target[:20])
    training = {}
    for state in args.states.split(","):
        with machine_state(state):
            load = os.getloadavg()[0]
            wall, cpu, fitted = alternating_medians(
                {"crfsuite": fit_crfsuite, "skstruct": fit_skstruct}, args.repeats)
        training[state] = {"wall": wall, "cpu": cpu, "load_average": load,
                           "ratio": wall["skstruct"] / wall["crfsuite"],
                           "cpu_ratio": cpu["skstruct"] / cpu["crfsuite"]}
        print(state, training[state], flush=True)
    alone = None
    if "all" in training and not args.no_fresh_check:
        passed = ["--iterations", str(args.iterations), "--c2", str(args.c2),
                  "--repeats", str(args.repeats)] + (["--data", args.data] if args.data
                                                     else [])
        alone = fresh_process(Path(__file__).resolve(), passed)
        if "error" not in alone:
            alone["cpu_ratio"] = training["all"]["cpu"]["skstruct"] / alone["cpu"]
        print("crfsuite alone", alone, flush=True)
    crfsuite = fitted["crfsuite"]
    vectorizer, crf, sk_solver = fitted["skstruct"]
    crfsuite_fit, sk_fit = wall["crfsuite"], wall["skstruct"]
    crfsuite_solver = sum(it["time"] for it in crfsuite.training_log_.iterations)
    shares = objective_step_shares(vectorizer.transform(X_train), train.target, alpha,
                                   args.pairs)

    # --- tagging, from the token feature dicts ---
    crfsuite_tag, crfsuite_pred = median_time(lambda: crfsuite.predict(X_test), 5)
    sk_tag, sk_pred = median_time(lambda: crf.predict(vectorizer.transform(X_test)), 5)
    # --- tagging, model only (features already in each library's format) ---
    items = [pycrfsuite.ItemSequence(x) for x in X_test]
    tagger = crfsuite.tagger_
    crfsuite_core, _ = median_time(lambda: [tagger.tag(x) for x in items], 5)
    Xv_test = vectorizer.transform(X_test)
    sk_core, _ = median_time(lambda: crf.predict(Xv_test), 5)

    results = {
        "iterations": args.iterations,
        "c2": args.c2,
        "alpha": alpha,
        "train_sentences": len(X_train),
        "train_tokens": n_train_tokens,
        "test_tokens": n_test_tokens,
        "pairs": args.pairs,
        "features_skstruct": int(crf.n_features_in_ * len(crf.classes_)
                                 if args.pairs == "all" else np.count_nonzero(crf.coef_)),
        "features_crfsuite": int(crfsuite.training_log_.last_iteration["active_features"]),
        "fit_seconds": {"crfsuite": crfsuite_fit, "skstruct": sk_fit},
        "training": training,
        "crfsuite_alone": alone,
        "objective_steps": shares,
        "solver_seconds": {"crfsuite": crfsuite_solver, "skstruct": sk_solver},
        "tag_tokens_per_second": {"crfsuite": n_test_tokens / crfsuite_tag,
                                  "skstruct": n_test_tokens / sk_tag},
        "tag_core_tokens_per_second": {"crfsuite": n_test_tokens / crfsuite_core,
                                       "skstruct": n_test_tokens / sk_core},
        "chunk_f1": {"crfsuite": span_f1_score(test.target, crfsuite_pred),
                     "skstruct": span_f1_score(test.target, sk_pred)},
        "token_accuracy": {"crfsuite": token_accuracy(test.target, crfsuite_pred),
                           "skstruct": token_accuracy(test.target, sk_pred)},
        "final_objective_skstruct": float(crf.objective_curve_[-1]),
        "final_loss_crfsuite_scaled": crfsuite.training_log_.last_iteration["loss"]
        / len(X_train),
        "machine": f"{platform.processor() or platform.machine()}, "
                   f"{numba.get_num_threads()} threads",
        "versions": {"skstruct": skstruct.__version__,
                     "sklearn-crfsuite": version("sklearn-crfsuite"),
                     "python-crfsuite": version("python-crfsuite"),
                     "numba": numba.__version__},
        "repeats": args.repeats,
        "command": "python benchmarks/bench_crf_conll2000.py " + " ".join(sys.argv[1:]),
    }
    output = Path(args.output)
    output.mkdir(exist_ok=True)
    (output / "crf_conll2000.json").write_text(json.dumps(results, indent=2) + "\n")
    (output / "crf_conll2000.md").write_text(report(results))
    print(report(results))


def _alone_lines(r):
    """The fair-baseline check: CRFsuite alone in a fresh process."""
    alone = r.get("crfsuite_alone")
    if not alone:
        return ["Fair-baseline check: not run (results from before the check was added, "
                "or `--no-fresh-check`)."]
    if "error" in alone:
        return [f"Fair-baseline check: CRFsuite alone in a fresh process failed "
                f"({alone['error']})."]
    t = r["training"]["all"]
    return [f"Fair-baseline check, CRFsuite alone in a fresh process (load "
            f"{alone['load_average_before']:.1f}): {alone['wall']:.1f} s (CPU "
            f"{alone['cpu']:.1f} s) against {t['wall']['crfsuite']:.1f} s (CPU "
            f"{t['cpu']['crfsuite']:.1f} s) alternating; skstruct's CPU over CRFsuite "
            f"alone: **{alone['cpu_ratio']:.2f}x**."]


def report(r):
    def row(name, key, fmt, higher_is_better):
        a, b = r[key]["crfsuite"], r[key]["skstruct"]
        ratio = (b / a) if higher_is_better else (a / b)
        return f"| {name} | {fmt.format(a)} | {fmt.format(b)} | {ratio:.2f}x |"

    lines = [
        "# CRF on CoNLL-2000 chunking: skstruct vs CRFsuite",
        "",
        f"Full training set ({r['train_sentences']} sentences, {r['train_tokens']} tokens), "
        f"test set {r['test_tokens']} tokens; L-BFGS, exactly {r['iterations']} iterations "
        f"each, L2 only (c2 = {r['c2']}, alpha = {r['alpha']:.3e}); identical token feature "
        f"dicts. {r['machine']}; medians of {r['repeats']} training runs and 5 tagging runs. "
        "Produced by `python benchmarks/bench_crf_conll2000.py`.",
        "",
        "| measure | CRFsuite | skstruct | skstruct advantage |",
        "|---|---|---|---|",
        row("fit from feature dicts (s), last machine state", "fit_seconds", "{:.1f}", False),
        row("solver only (s)", "solver_seconds", "{:.1f}", False),
        row("tagging from feature dicts (tokens/s)", "tag_tokens_per_second", "{:,.0f}", True),
        row("tagging, model only (tokens/s)", "tag_core_tokens_per_second", "{:,.0f}", True),
        f"| chunk F1 | {100 * r['chunk_f1']['crfsuite']:.2f} | "
        f"{100 * r['chunk_f1']['skstruct']:.2f} | "
        f"{100 * (r['chunk_f1']['skstruct'] - r['chunk_f1']['crfsuite']):+.2f} points |",
        f"| token accuracy | {100 * r['token_accuracy']['crfsuite']:.2f} | "
        f"{100 * r['token_accuracy']['skstruct']:.2f} | |",
        "",
        "Training time by machine state (the two fits alternating, medians of "
        f"{r['repeats']}; wall, with CPU time in parentheses; load average at the start):",
        "",
        "| machine state | load | CRFsuite | skstruct | skstruct / CRFsuite, CPU | wall |",
        "|---|---|---|---|---|---|",
    ] + [
        f"| {state} | {t['load_average']:.1f} | {t['wall']['crfsuite']:.1f} s "
        f"({t['cpu']['crfsuite']:.1f} s) | {t['wall']['skstruct']:.1f} s "
        f"({t['cpu']['skstruct']:.1f} s) | "
        + (f"**{t['cpu_ratio']:.2f}x**" if "cpu_ratio" in t else "—")
        + f" | {t['ratio']:.2f}x |"
        for state, t in r["training"].items()
    ] + [
        "",
    ] + _alone_lines(r) + [
        "",
        "One objective evaluation on one thread (best CPU time of 5; share of the total):",
        "",
        "| path | step | CPU ms | share |",
        "|---|---|---|---|",
    ] + [
        f"| {path} | {step} | {1e3 * t:.1f} | {100 * t / steps['total']:.0f} % |"
        for path, steps in r["objective_steps"].items() for step, t in steps.items()
    ] + [
        "",
        f"Command: `{r['command']}`.",
        "",
        "Notes.",
        "",
        "- *fit from feature dicts* is what a user waits for: sklearn-crfsuite's `fit` "
        "(loading the sequences into CRFsuite, then training) against "
        "`SequenceVectorizer().fit_transform` + `CRF.fit`. *solver only* is CRFsuite's own "
        "per-iteration times summed against `CRF.fit` on the vectorized data.",
        "- *model only* tagging: CRFsuite's `Tagger.tag` on prebuilt item sequences against "
        "`CRF.predict` on the vectorized test set; the other row includes featurization of "
        "the dicts by each library.",
        (f"- Parameters: skstruct's CRF has a weight for every (feature, label) pair "
         f"({r['features_skstruct']:,}), CRFsuite only for pairs seen in training "
         f"({r['features_crfsuite']:,} active); skstruct adds start and end scores."
         if r.get("pairs", "all") == "all" else
         f"- Parameters: both only for the (feature, label) pairs seen in training "
         f"(skstruct `feature_label_pairs=\"seen\"`: {r['features_skstruct']:,} nonzero; "
         f"CRFsuite {r['features_crfsuite']:,} active); skstruct adds start and end scores."),
        f"- Final training objective per sentence: skstruct {r['final_objective_skstruct']:.5f}"
        f", CRFsuite {r['final_loss_crfsuite_scaled']:.5f} (CRFsuite's loss / n; the "
        "two models differ as just said).",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
