"""Arc-factored dependency parsers on UD English EWT: test UAS, training time and the
time per pass of the structured SVM's block-coordinate Frank–Wolfe.

The four parsers of ``examples/dependency_parsing_ewt.py`` share one feature map
(McDonald et al.'s first-order arc templates, :class:`~skstruct.preprocessing.ArcVectorizer`)
and one non-projective :class:`~skstruct.decoders.TreeDecoder`:

- ``ssvm``: ``StructuredSVM(loss="hamming")`` by BCFW (``--ssvm-passes`` passes); its
  passes run in compiled code (per-sentence Chu–Liu–Edmonds on cost-augmented scores);
- ``crf``: the CRF (matrix-tree theorem), L-BFGS;
- ``sparsemap`` and ``m-sparsemap`` (Hamming cost added), L-BFGS.

Besides the table, ``--python-passes k`` fits the SSVM for k passes with the compiled
engine switched off (the Python loop over sentences that per-example solvers fall back to
for a user's decoder), in the same process, so that the time per pass of both is
measured side by side.

Run::

    python benchmarks/bench_parsing_ewt.py                       # the whole table
    python benchmarks/bench_parsing_ewt.py --parsers ssvm --python-passes 1
    python benchmarks/bench_parsing_ewt.py --max-train 2000 --max-iter 30    # quicker

The training features are an :class:`~skstruct.utils._trees.ArcFeatureBatch`
(``ArcVectorizer.transform_batch``: no values, int32 indices, 0.98 GB on EWT) unless
``--features list`` (the list of per-sentence float64 CSR matrices of ``transform``,
2.8 GB, which the estimators stack into a second copy).

Writes the markdown table to ``--results`` (default ``results/parsing_ewt.md`` next to
this file) unless ``--results ''``. The rows are kept in a JSON file next to it (same
name, ``.json``): a run of some parsers replaces their rows and keeps the others, each
row with the command, date and load average of the run that measured it.
"""

import argparse
import datetime
import json
import os
import platform
import resource
import time
import warnings
from pathlib import Path

import numba
from sklearn.exceptions import ConvergenceWarning

from skstruct import CRF, SparseMAPClassifier, StructuredSVM
from skstruct.datasets import load_ud_english_ewt
from skstruct.decoders import TreeDecoder
from skstruct.preprocessing import ArcVectorizer

RESULTS = Path(__file__).parent / "results" / "parsing_ewt.md"
#: The previous table (UAS, training seconds): full training set, 12 SSVM passes, 60
#: L-BFGS iterations, 20 MAP calls per SparseMAP solve; the SSVM on a quiet machine.
BEFORE = {"ssvm": (84.37, 48.4), "crf": (84.28, 335.0), "sparsemap": (83.94, 853.0),
          "m-sparsemap": (83.86, 637.0)}
FULL_TRAIN = 12544
PARSERS = ("ssvm", "crf", "sparsemap", "m-sparsemap")
NAMES = {
    "ssvm": "SSVM (Hamming, BCFW)",
    "crf": "CRF",
    "sparsemap": "SparseMAP",
    "m-sparsemap": "m-SparseMAP (Hamming)",
}


def make_parser(key, args, alpha):
    decoder = TreeDecoder()
    if key == "ssvm":
        return StructuredSVM(decoder=decoder, loss="hamming", alpha=alpha,
                             max_iter=args.ssvm_passes, random_state=0)
    if key == "crf":
        return CRF(decoder=decoder, alpha=alpha, max_iter=args.max_iter)
    return SparseMAPClassifier(
        decoder=decoder, cost="hamming" if key == "m-sparsemap" else None, alpha=alpha,
        max_iter=args.max_iter, sparsemap_max_iter=args.sparsemap_max_iter)


def fit(model, X, y):
    """Fit; the wall-clock and CPU times (all threads) and whether a ConvergenceWarning
    was raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        start, cpu = time.perf_counter(), time.process_time()
        model.fit(X, y)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
    return seconds, cpu, converged


def python_fallback_fit(model, X, y):
    """Fit with the compiled engine switched off (the Python loop over sentences)."""
    import skstruct.optim._bcfw as bcfw_module

    original = bcfw_module.compiled_problem
    bcfw_module.compiled_problem = lambda *args: None
    try:
        return fit(model, X, y)
    finally:
        bcfw_module.compiled_problem = original


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parsers", nargs="+", choices=PARSERS, default=list(PARSERS))
    parser.add_argument("--max-train", type=int, default=None,
                        help="use the first N training sentences (default: all)")
    parser.add_argument("--ssvm-passes", type=int, default=12, help="BCFW passes")
    parser.add_argument("--max-iter", type=int, default=60,
                        help="L-BFGS iterations (CRF, SparseMAP)")
    parser.add_argument("--sparsemap-max-iter", type=int, default=20,
                        help="MAP calls per sentence in each SparseMAP solve")
    parser.add_argument("--python-passes", type=int, default=0,
                        help="also fit the SSVM this many passes on the Python fallback")
    parser.add_argument("--alpha", type=float, default=None,
                        help="L2 strength (default: 1 / n_train_sentences)")
    parser.add_argument("--features", choices=("batch", "list"), default="batch",
                        help="ArcFeatureBatch (transform_batch) or a list of CSR matrices")
    parser.add_argument("--results", default=str(RESULTS),
                        help="markdown output ('' for none)")
    args = parser.parse_args()

    train = load_ud_english_ewt("train")[: args.max_train]
    test = load_ud_english_ewt("test")
    start = time.perf_counter()
    vectorizer = ArcVectorizer().fit(train)
    transform = (vectorizer.transform_batch if args.features == "batch"
                 else vectorizer.transform)
    X_train, X_test = transform(train), transform(test)
    y_train = [sentence["head"] for sentence in train]
    y_test = [sentence["head"] for sentence in test]
    featurize = time.perf_counter() - start
    n_words = sum(len(h) for h in y_train)
    nnz, feature_bytes = feature_size(X_train)
    print(f"{len(train)} training sentences ({n_words} words), {len(test)} test sentences; "
          f"arc features in {featurize:.1f} s ({nnz / 1e6:.0f} M nonzeros, "
          f"{feature_bytes / 1e9:.2f} GB as {args.features})", flush=True)
    alpha = args.alpha if args.alpha is not None else 1.0 / len(train)

    # compile (or load from numba's cache) on a few sentences first: not timed
    StructuredSVM(decoder=TreeDecoder(), loss="hamming", alpha=alpha, max_iter=1,
                  random_state=0).fit(X_train[:20], y_train[:20])

    rows = []
    for key in args.parsers:
        model = make_parser(key, args, alpha)
        load_before = os.getloadavg()[0]
        seconds, cpu, converged = fit(model, X_train, y_train)
        uas = model.score(X_test, y_test)
        rows.append(dict(
            key=key, name=NAMES[key], uas=uas, seconds=seconds, cpu=cpu,
            n_iter=int(model.n_iter_), converged=converged,
            load=[load_before, os.getloadavg()[0]], features=args.features,
            feature_gb=feature_bytes / 1e9, peak_rss_gb=peak_rss_gb(),
            date=datetime.date.today().isoformat(), command=command_line(args)))
        print(f"{NAMES[key]:24s} test UAS {100 * uas:6.2f}   training {seconds:7.1f} s, "
              f"CPU {cpu:7.1f} s ({model.n_iter_} iterations, "
              f"{seconds / max(1, model.n_iter_):.2f} s "
              f"each; load average {load_before:.1f} -> {os.getloadavg()[0]:.1f}, peak RSS "
              f"{peak_rss_gb():.2f} GB)", flush=True)
    fallback = None
    if args.python_passes:
        model = make_parser("ssvm", args, alpha).set_params(max_iter=args.python_passes)
        seconds, cpu, _ = python_fallback_fit(model, X_train, y_train)
        fallback = (seconds, cpu, model.n_iter_)
        print(f"SSVM on the Python fallback: {seconds:.1f} s for {model.n_iter_} passes "
              f"({seconds / model.n_iter_:.2f} s each, CPU {cpu:.1f} s)", flush=True)
    if args.results:
        path = Path(args.results)
        setup = dict(n_train=len(train), n_words=n_words, nnz=nnz, alpha=alpha,
                     sparsemap_max_iter=args.sparsemap_max_iter,
                     machine=platform.processor() or platform.machine(),
                     threads=numba.get_num_threads())
        rows = merge_rows(path.with_suffix(".json"), rows, setup)
        path.write_text(report(rows, fallback, setup))


def path_notes():
    """Notes written by hand about the last full run, appended to the table."""
    return RESULTS.with_name("parsing_ewt_notes.md")


def feature_size(X):
    """Stored entries and bytes of the training features (a batch or a list of CSR)."""
    if hasattr(X, "nbytes"):
        return X.rows.nnz, X.nbytes
    return (sum(x.nnz for x in X),
            sum(x.data.nbytes + x.indices.nbytes + x.indptr.nbytes for x in X))


def peak_rss_gb():
    """Peak resident memory of this process so far, in GB (Linux reports kB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


def command_line(args):
    return "python benchmarks/bench_parsing_ewt.py " + " ".join(
        f"--{k.replace('_', '-')} {' '.join(v) if isinstance(v, list) else v}"
        for k, v in vars(args).items() if v is not None and k != "results"
    )


def merge_rows(path, rows, setup):
    """The rows of this run with those of earlier runs on the same setup that it did not
    re-run, in table order; saved to ``path`` (JSON)."""
    previous = json.loads(path.read_text()) if path.exists() else {}
    kept = previous.get("rows", {}) if previous.get("setup") == setup else {}
    kept.update({row["key"]: row for row in rows})
    path.write_text(json.dumps({"setup": setup, "rows": kept}, indent=1) + "\n")
    return [kept[key] for key in PARSERS if key in kept]


def report(rows, fallback, setup):
    lines = [
        "# Dependency parsing, UD English EWT (arc-factored linear parsers)",
        "",
        f"Training: {setup['n_train']} sentences ({setup['n_words']} words), "
        f"{setup['nnz'] / 1e6:.0f} M arc-feature nonzeros; test: the 2,077 test sentences "
        f"(25,094 words). Non-projective `TreeDecoder`, first-order McDonald et al. (2005) "
        f"features hashed to 2^22 columns, alpha = {setup['alpha']:.3g}; each SparseMAP "
        f"solve stops after {setup['sparsemap_max_iter']} MAP calls per sentence. Machine: "
        f"{setup['machine']}, {setup['threads']} threads.",
        "",
        "| loss | test UAS (punctuation included) | training time | iterations | time per "
        "iteration | CPU time per iteration (all threads) | features | load average "
        "(start, end) | peak RSS |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        n_iter = max(1, row["n_iter"])
        lines.append(
            f"| {row['name']} | {100 * row['uas']:.2f} | {row['seconds']:.0f} s | {n_iter}"
            f"{'' if row['converged'] else ' (not converged)'} | "
            f"{row['seconds'] / n_iter:.2f} s | {row['cpu'] / n_iter:.2f} s | "
            f"{row['features']} ({row['feature_gb']:.2f} GB) | "
            f"{row['load'][0]:.1f}, {row['load'][1]:.1f} | {row['peak_rss_gb']:.1f} GB |")
    lines += ["", "Before (the previous table: float64 CSR lists, scipy-layout products; same "
              "features, alpha and iterations), its training time and the ratio before / "
              "now:", ""]
    for row in rows:
        before = BEFORE.get(row["key"])
        if before is not None and setup["n_train"] == FULL_TRAIN:
            lines.append(f"- {row['name']}: {before[1]:.1f} s (UAS {before[0]:.2f}); "
                         f"before / now {before[1] / row['seconds']:.2f} in wall-clock "
                         f"time (load average now {row['load'][0]:.1f} to "
                         f"{row['load'][1]:.1f})")
    lines += ["", "Commands (date of the run):", ""]
    for command in dict.fromkeys(f"`{row['command']}` ({row['date']})" for row in rows):
        lines.append(f"- {command}")
    lines += [
        "",
        "The SSVM counts passes over the data (block-coordinate Frank–Wolfe; the time of a "
        "pass includes the duality gap computed after it); the others count L-BFGS "
        "iterations. For orientation, the SparseMAP paper (Niculae et al., 2018, Table 3) "
        "reports with a BiLSTM parser on UD English: SSVM 87.02, CRF 86.74, SparseMAP "
        "86.90, m-SparseMAP 87.34; linear first-order features land lower.",
        "",
    ]
    notes = path_notes()
    if notes is not None and notes.exists():
        lines += [notes.read_text().rstrip(), ""]
    if fallback is not None:
        seconds, cpu, n_iter = fallback
        lines += [
            f"SSVM passes on the Python loop over sentences (the compiled engine switched "
            f"off, same process): {seconds:.1f} s for {n_iter} pass(es), "
            f"{seconds / n_iter:.2f} s per pass (CPU {cpu / n_iter:.2f} s).",
            "",
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
