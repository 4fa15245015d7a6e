"""The MAP-perturbation learner (no MAP calls in training) on CoNLL-2000 chunking and on
MULAN yeast, beside CRF and structured SVMs.

``PerturbedMAPClassifier`` (Ghoshal & Honorio 2019) maximizes the likelihood of the data
under the Gumbel-perturbed predictor restricted to random candidate sets: the gold output
and ⌈√m⌉ draws per example and iteration of a proposal that starts from the gold output
(or, with probability α = min(1, ‖w‖₁ / √m), from a uniform sample) and moves to the best
Hamming-1 neighbour. Its steps are learning_rate / √t, which is scale sensitive, so the
learning rate is chosen from a small grid on a validation split:

- CoNLL-2000 (8,936 training sentences, 22 tags): the tutorial token features
  (``sentences_to_features`` + ``SequenceVectorizer``, binary indicators, not scaled). The
  learning rate is chosen by chunk F1 on the last ``--val`` training sentences after
  ``--tune-iterations`` iterations on the first ``--tune`` ones; the chosen value is then
  fit on the whole training set for ``--iterations`` iterations. The scan of every
  proposal draw uses ``ChainDecoder.best_neighbour`` (a compiled O(L S) kernel).
  Baselines: ``CRF`` (L-BFGS, 100 iterations, c2 = 0.1 as in the sklearn-crfsuite
  tutorial) and ``StructuredSVM`` (Hamming / margin, BCFW, ``--passes`` passes,
  alpha = 0.01 / n).
- yeast (1,500 / 917, 103 features, 14 labels): features standardized on the training
  set; the learning rate chosen by example-based F1 on a held-out 25 % of the training
  set, then refit on all of it. Baseline: ``StructuredSVM`` Hamming / margin, BCFW,
  50 passes, alpha = 0.01 (the value chosen in ``bench_ssvm_multilabel.py``).

Reported on the test sets: chunk F1 and token Hamming loss (1 − token accuracy), or
example-based F1 and Hamming loss; the final fit's time; the decoder calls of the final
fit (the learner's ``decoder_calls_``; L-BFGS iterations of the CRF; per-example oracle
calls of BCFW).

The learner runs in the paper's configuration (``candidates="proposal",
objective="pooled", l1=0.01``), which was its default when these results were recorded;
its steps are now ``learning_rate β² / (R² √t)``, so the grids below are in other units
than the recorded ones. The estimator's defaults are measured by
``bench_map_perturbation_defaults.py``.

Writes ``results/map_perturbation_real.md`` and ``.json`` next to this file.

Run: ``nice -n 19 python benchmarks/bench_map_perturbation_real.py`` (about 15 minutes on
2 busy cores); ``--datasets yeast`` or ``conll2000`` for one of them.
"""

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import f1_score, hamming_loss
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import skstruct
from _report import code_version, command_line, machine_summary, record_run
from skstruct import CRF, PerturbedMAPClassifier, StructuredSVM
from skstruct.datasets import load_conll2000, load_multilabel
from skstruct.metrics import span_f1_score, token_accuracy
from skstruct.preprocessing import SequenceVectorizer, sentences_to_features

RESULTS = Path(__file__).parent / "results"
NAME = "map_perturbation_real"


def timed_fit(model, X, y):
    """Fit; return the seconds (ConvergenceWarnings silenced: budgets are fixed)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        tic = time.perf_counter()
        model.fit(X, y)
        return time.perf_counter() - tic


def perturbation_calls(model):
    calls = {k: int(v) for k, v in model.decoder_calls_.items() if v}
    calls["map"] = int(model.decoder_calls_["map"])
    return calls


# ------------------------------------------------------------------------- CoNLL-2000


def chunking_scores(target, predicted):
    accuracy = token_accuracy(target, predicted)
    return {"chunk_f1": float(span_f1_score(target, predicted)),
            "token_hamming_loss": float(1.0 - accuracy)}


def run_conll(args):
    train, test = load_conll2000("train"), load_conll2000("test")
    X = sentences_to_features(train.words, train.pos)
    X_test = sentences_to_features(test.words, test.pos)
    y, y_test = list(train.target), list(test.target)
    if args.train_sentences:
        X, y = X[:args.train_sentences], y[:args.train_sentences]
    n = len(X)
    info = {"n_train": n, "n_test": len(X_test), "n_tags": len(set(np.concatenate(y))),
            "methods": {}}

    def perturbed(rate, iterations):
        return PerturbedMAPClassifier(candidates="proposal", objective="pooled", l1=0.01,
                                      learning_rate=rate, max_iter=iterations,
                                      random_state=0)

    # learning rate: first --tune sentences, chunk F1 on the last --val ones
    selection = {}
    X_tune, y_tune = X[:args.tune], y[:args.tune]
    X_val, y_val = X[n - args.val:], y[n - args.val:]
    for rate in args.grid:
        model = make_pipeline(SequenceVectorizer(), perturbed(rate, args.tune_iterations))
        seconds = timed_fit(model, X_tune, y_tune)
        selection[rate] = chunking_scores(y_val, model.predict(X_val))["chunk_f1"]
        print(f"conll2000: learning_rate={rate:g}: validation chunk F1 "
              f"{selection[rate]:.4f} ({seconds:.1f} s)", flush=True)
    best = max(args.grid, key=lambda r: (selection[r], -args.grid.index(r)))

    methods = {
        "perturbed_map": (f"PerturbedMAPClassifier ({args.iterations} iterations, "
                          f"learning_rate = {best:g})",
                          lambda: perturbed(best, args.iterations)),
        "crf": ("CRF (L-BFGS, 100 iterations, c2 = 0.1)",
                lambda: CRF(alpha=2 * 0.1 / n, max_iter=100)),
        "ssvm_bcfw": (f"StructuredSVM Hamming / margin, BCFW ({args.passes} passes, "
                      "alpha = 0.01 / n)",
                      lambda: StructuredSVM(alpha=0.01 / n, solver="bcfw",
                                            max_iter=args.passes, random_state=0)),
    }
    for key, (label, make) in methods.items():
        print(f"conll2000: {label}", flush=True)
        model = make_pipeline(SequenceVectorizer(), make())
        seconds = timed_fit(model, X, y)
        result = {"label": label, "fit_seconds": seconds,
                  **chunking_scores(y_test, model.predict(X_test))}
        estimator = model[-1]
        if isinstance(estimator, PerturbedMAPClassifier):
            result["decoder_calls"] = perturbation_calls(estimator)
            result["beta"] = float(estimator.beta_)
            result["randomized_loss_curve"] = [float(v) for v in
                                               estimator.objective_curve_]
            result["nonzero_weights"] = int(np.count_nonzero(estimator.coef_))
            result["selection_chunk_f1"] = {str(r): s for r, s in selection.items()}
        elif isinstance(estimator, CRF):
            result["decoder_calls"] = {"lbfgs_iterations": int(estimator.n_iter_)}
        else:
            result["decoder_calls"] = {"oracle_calls": int(estimator.oracle_calls_[-1])}
        info["n_features"] = int(estimator.n_features_in_)
        print(f"  -> chunk F1 {result['chunk_f1']:.4f}, token Hamming loss "
              f"{result['token_hamming_loss']:.4f}, fit {seconds:.1f} s", flush=True)
        info["methods"][key] = result
    info["tuning"] = {"grid": args.grid, "tune_sentences": args.tune,
                      "validation_sentences": args.val,
                      "tune_iterations": args.tune_iterations, "chosen": best}
    return info


# ------------------------------------------------------------------------------ yeast


def example_f1(y_true, y_pred):
    return float(f1_score(y_true, y_pred, average="samples", zero_division=0.0))


def run_yeast(args):
    train, test = load_multilabel("yeast"), load_multilabel("yeast", "test")
    scaler = StandardScaler().fit(train.data)
    X, X_test = scaler.transform(train.data), scaler.transform(test.data)
    y, y_test = train.target, test.target
    X_fit, X_val, y_fit, y_val = train_test_split(X, y, test_size=0.25, random_state=0)
    info = {"n_train": len(y), "n_test": len(y_test), "n_features": X.shape[1],
            "n_labels": y.shape[1], "methods": {}}

    def perturbed(rate):
        return PerturbedMAPClassifier(candidates="proposal", objective="pooled", l1=0.01,
                                      learning_rate=rate, max_iter=args.yeast_iterations,
                                      random_state=0)

    selection = {}
    for rate in args.yeast_grid:
        model = perturbed(rate)
        seconds = timed_fit(model, X_fit, y_fit)
        selection[rate] = example_f1(y_val, model.predict(X_val))
        print(f"yeast: learning_rate={rate:g}: held-out example F1 {selection[rate]:.4f} "
              f"({seconds:.1f} s)", flush=True)
    best = max(args.yeast_grid, key=lambda r: (selection[r], -args.yeast_grid.index(r)))
    methods = {
        "perturbed_map": (f"PerturbedMAPClassifier ({args.yeast_iterations} iterations, "
                          f"learning_rate = {best:g})", lambda: perturbed(best)),
        "ssvm_bcfw": ("StructuredSVM Hamming / margin, BCFW (50 passes, alpha = 0.01)",
                      lambda: StructuredSVM(loss="hamming", rescaling="margin",
                                            solver="bcfw", alpha=0.01, max_iter=50,
                                            random_state=0)),
    }
    for key, (label, make) in methods.items():
        print(f"yeast: {label}", flush=True)
        model = make()
        seconds = timed_fit(model, X, y)
        y_pred = model.predict(X_test)
        result = {"label": label, "fit_seconds": seconds,
                  "example_f1": example_f1(y_test, y_pred),
                  "hamming_loss": float(hamming_loss(y_test, y_pred)),
                  "mean_predicted_labels": float(np.asarray(y_pred).sum(axis=1).mean())}
        if isinstance(model, PerturbedMAPClassifier):
            result["decoder_calls"] = perturbation_calls(model)
            result["beta"] = float(model.beta_)
            result["randomized_loss_curve"] = [float(v) for v in model.objective_curve_]
            result["selection_example_f1"] = {str(r): s for r, s in selection.items()}
        else:
            result["decoder_calls"] = {"oracle_calls": int(model.oracle_calls_[-1])}
        print(f"  -> example F1 {result['example_f1']:.4f}, Hamming loss "
              f"{result['hamming_loss']:.4f}, fit {seconds:.1f} s", flush=True)
        info["methods"][key] = result
    info["tuning"] = {"grid": args.yeast_grid, "held_out": 0.25,
                      "iterations": args.yeast_iterations, "chosen": best}
    return info


# ----------------------------------------------------------------------------- report


def _calls(calls):
    return ", ".join(f"{k} {v:,}" for k, v in calls.items())


def report(run):
    lines = [
        "# The MAP-perturbation learner on real tasks (CoNLL-2000 chunking, yeast)",
        "",
        f"Command: `{run['command']}`; code {run['code']}; {run['machine']['cpu']}, "
        f"{run['machine']['numba_threads']} threads, load average "
        f"{run['load_average']:.1f} at the start (times are slow and noisy); "
        f"{run['total_seconds'] / 60:.1f} minutes in all.",
        "",
        "`PerturbedMAPClassifier` trains without MAP calls (decoder `map` count 0): every "
        "iteration draws ⌈√m⌉ proposal candidates per example (Algorithm 1 of Ghoshal & "
        "Honorio 2019: a start, gold or uniform with probability α, moved to its best "
        "Hamming-1 neighbour) and takes one step of learning_rate / √t on the likelihood "
        "of the data restricted to those candidates, then an ℓ1 proximal step (l1 = 0.01); "
        "β = 'auto' (the paper's 1 / log((r − 1)(√m − 1))).",
        "",
    ]
    datasets = run["datasets"]
    if "conll2000" in datasets:
        d = datasets["conll2000"]
        tune = d["tuning"]
        lines += [
            f"## CoNLL-2000 chunking: {d['n_train']} train / {d['n_test']} test sentences, "
            f"{d['n_tags']} tags, {d['n_features']:,} features",
            "",
            "Tutorial token features (binary indicators, not scaled). Learning rate from "
            f"{tune['grid']} by chunk F1 on the last {tune['validation_sentences']} training "
            f"sentences after {tune['tune_iterations']} iterations on the first "
            f"{tune['tune_sentences']}: chosen {tune['chosen']:g} (validation F1 "
            + ", ".join(f"{r}: {s:.4f}" for r, s in
                        d["methods"]["perturbed_map"]["selection_chunk_f1"].items())
            + ").",
            "",
            "| method | chunk F1 | token Hamming loss | fit (s) | decoder calls of the fit |",
            "|---|---|---|---|---|",
        ]
        for m in d["methods"].values():
            lines.append(f"| {m['label']} | {m['chunk_f1']:.4f} | "
                         f"{m['token_hamming_loss']:.4f} | {m['fit_seconds']:.1f} | "
                         f"{_calls(m['decoder_calls'])} |")
        p = d["methods"]["perturbed_map"]
        lines += ["", f"PerturbedMAPClassifier: β = {p['beta']:.4g}, "
                  f"{p['nonzero_weights']:,} nonzero weights, randomized loss by iteration "
                  + ", ".join(f"{v:.3f}" for v in p["randomized_loss_curve"]) + ".", ""]
    if "yeast" in datasets:
        d = datasets["yeast"]
        tune = d["tuning"]
        lines += [
            f"## yeast: {d['n_train']} train / {d['n_test']} test, {d['n_features']} "
            f"features, {d['n_labels']} labels",
            "",
            "Features standardized on the training set. Learning rate from "
            f"{tune['grid']} by example F1 on a held-out 25 % of the training set "
            f"({tune['iterations']} iterations), refit on all of it: chosen "
            f"{tune['chosen']:g} (held-out F1 "
            + ", ".join(f"{r}: {s:.4f}" for r, s in
                        d["methods"]["perturbed_map"]["selection_example_f1"].items())
            + ").",
            "",
            "| method | example F1 | Hamming loss | labels predicted per sample | fit (s) "
            "| decoder calls of the fit |",
            "|---|---|---|---|---|---|",
        ]
        for m in d["methods"].values():
            lines.append(f"| {m['label']} | {m['example_f1']:.4f} | "
                         f"{m['hamming_loss']:.4f} | {m['mean_predicted_labels']:.2f} | "
                         f"{m['fit_seconds']:.1f} | {_calls(m['decoder_calls'])} |")
        p = d["methods"]["perturbed_map"]
        lines += ["", f"PerturbedMAPClassifier: β = {p['beta']:.4g}, randomized loss by "
                  "iteration (every 10th) "
                  + ", ".join(f"{v:.3f}" for v in p["randomized_loss_curve"][::10]) + ".",
                  ""]
    lines += [
        "Decoder calls: the learner's `decoder_calls_` (`best_neighbour`: one batched scan "
        "of every example per proposal draw; `sample_uniform`, `score_outputs`, `parts` "
        "batched over all examples); CRF: L-BFGS iterations (each one or more batched "
        "forward-backward passes); BCFW: per-example loss-augmented MAP calls.",
        "",
    ]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["yeast", "conll2000"])
    parser.add_argument("--grid", nargs="+", type=float, default=[1e-5, 3e-5, 1e-4, 3e-4],
                        help="learning rates tried on CoNLL-2000 (β is small there, and "
                        "the steps scale as learning_rate / β)")
    parser.add_argument("--yeast-grid", nargs="+", type=float,
                        default=[0.001, 0.01, 0.1, 1.0], help="learning rates tried on yeast")
    parser.add_argument("--iterations", type=int, default=20,
                        help="iterations of the final CoNLL-2000 fit")
    parser.add_argument("--tune", type=int, default=2000,
                        help="CoNLL-2000 sentences of the learning-rate fits")
    parser.add_argument("--val", type=int, default=1000,
                        help="last CoNLL-2000 training sentences scored for the choice")
    parser.add_argument("--tune-iterations", type=int, default=10)
    parser.add_argument("--yeast-iterations", type=int, default=50)
    parser.add_argument("--passes", type=int, default=10,
                        help="BCFW passes on CoNLL-2000")
    parser.add_argument("--train-sentences", type=int, default=None,
                        help="only the first CoNLL-2000 training sentences (quick checks)")
    parser.add_argument("--label", default="latest")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()

    load = float(Path("/proc/loadavg").read_text().split()[0])
    tic = time.perf_counter()
    runners = {"yeast": run_yeast, "conll2000": run_conll}
    datasets = {name: runners[name](args) for name in args.datasets}
    run = {"command": command_line("python benchmarks/bench_map_perturbation_real.py"),
           "code": code_version(skstruct), "machine": machine_summary(),
           "load_average": load, "datasets": datasets,
           "total_seconds": time.perf_counter() - tic}
    record_run(args.output / f"{NAME}.json", args.label, run)
    text = report(run)
    (args.output / f"{NAME}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
