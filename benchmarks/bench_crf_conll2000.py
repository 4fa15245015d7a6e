"""skstruct's CRF versus CRFsuite (through sklearn-crfsuite) on CoNLL-2000 chunking.

Both train on the full CoNLL-2000 training set (8,936 sentences) with the same token
features (the sklearn-crfsuite tutorial set: word lower-case, suffixes, shape, POS, and
the same for the neighbouring words), L2 regularization only (CRFsuite ``c2``; skstruct
``alpha = 2 c2 / n_sequences``, the same objective up to the factor n), and the same
L-BFGS iteration budget, with both convergence tests disabled so that each runs exactly
``--iterations`` iterations. Both then tag the 2,012 test sentences.

Reported, in one run: training time of each and the ratio, tagging throughput of each and
the ratio, chunk F1 of each (conlleval's definition). Timings are medians over
``--repeats`` runs. Writes ``results/crf_conll2000.md`` and ``.json`` next to this file.

Run: ``python benchmarks/bench_crf_conll2000.py`` (needs ``pip install sklearn-crfsuite``).
"""

import argparse
import json
import platform
import time
from importlib.metadata import version
from pathlib import Path

import numba
import numpy as np
import pycrfsuite
import sklearn_crfsuite

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
    parser.add_argument("--data", default=None, help="folder with train.txt.gz, test.txt.gz "
                        "(default: the copy bundled with skstruct, the same files)")
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

    def fit_skstruct():
        vectorizer = SequenceVectorizer()
        Xv = vectorizer.fit_transform(X_train)
        tic = time.perf_counter()
        crf = CRF(alpha=alpha, max_iter=args.iterations, tol=0.0).fit(Xv, train.target)
        return vectorizer, crf, time.perf_counter() - tic

    CRF(max_iter=2, tol=0.0).fit(  # compile (or load the cache) before timing
        SequenceVectorizer().fit_transform(X_train[:20]), train.target[:20])
    crfsuite_fit, crfsuite = median_time(fit_crfsuite, args.repeats)
    sk_fit, (vectorizer, crf, sk_solver) = median_time(fit_skstruct, args.repeats)
    crfsuite_solver = sum(it["time"] for it in crfsuite.training_log_.iterations)

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
        "features_skstruct": int(crf.n_features_in_ * len(crf.classes_)),
        "features_crfsuite": int(crfsuite.training_log_.last_iteration["active_features"]),
        "fit_seconds": {"crfsuite": crfsuite_fit, "skstruct": sk_fit},
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
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "crf_conll2000.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / "crf_conll2000.md").write_text(report(results))
    print(report(results))


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
        row("fit from feature dicts (s)", "fit_seconds", "{:.1f}", False),
        row("solver only (s)", "solver_seconds", "{:.1f}", False),
        row("tagging from feature dicts (tokens/s)", "tag_tokens_per_second", "{:,.0f}", True),
        row("tagging, model only (tokens/s)", "tag_core_tokens_per_second", "{:,.0f}", True),
        f"| chunk F1 | {100 * r['chunk_f1']['crfsuite']:.2f} | "
        f"{100 * r['chunk_f1']['skstruct']:.2f} | "
        f"{100 * (r['chunk_f1']['skstruct'] - r['chunk_f1']['crfsuite']):+.2f} points |",
        f"| token accuracy | {100 * r['token_accuracy']['crfsuite']:.2f} | "
        f"{100 * r['token_accuracy']['skstruct']:.2f} | |",
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
        f"- Parameters: skstruct's CRF has a weight for every (feature, label) pair "
        f"({r['features_skstruct']:,}), CRFsuite only for pairs seen in training "
        f"({r['features_crfsuite']:,} active); skstruct adds start and end scores.",
        f"- Final training objective per sentence: skstruct {r['final_objective_skstruct']:.5f}"
        f", CRFsuite {r['final_loss_crfsuite_scaled']:.5f} (CRFsuite's loss / n; the "
        "two models differ as just said).",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
