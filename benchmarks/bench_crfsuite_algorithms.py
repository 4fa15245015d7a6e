"""sklearn-crfsuite's algorithms: CRFsuite against skstruct's facade, on CoNLL-2000.

Trains ``CRF(algorithm=...)`` of sklearn-crfsuite 0.5 (CRFsuite) or of
``skstruct.compat.sklearn_crfsuite`` (``--impl``) on the 8,936 CoNLL-2000 training
sentences with the sklearn-crfsuite tutorial's token features
(:func:`skstruct.preprocessing.sentences_to_features`), each algorithm with its CRFsuite
defaults but for ``lbfgs``'s ``c1 = c2 = 0.1`` and 100 iterations (the tutorial's), then
tags the 2,012 test sentences. Reports per algorithm: fit CPU and wall seconds, chunk F1
(conlleval's), and the bytes of the pickled estimator (and, for CRFsuite, of its model
file). The two implementations run in separate processes because CRFsuite's lives in the
peers' environment::

    ~/.cache/skstruct-peers/peers-venv/bin/python benchmarks/bench_crfsuite_algorithms.py \\
        --impl crfsuite                                  # PYTHONPATH=. for the features
    # or any venv with python-crfsuite, sklearn-crfsuite 0.5 and numba
    python benchmarks/bench_crfsuite_algorithms.py --impl skstruct
    python benchmarks/bench_crfsuite_algorithms.py --report   # results/crfsuite_algorithms.md

What each algorithm trains in skstruct is listed in
:class:`skstruct.compat.sklearn_crfsuite.CRF` (``lbfgs``: the CRF with L-BFGS / OWL-QN;
``l2sgd``: the CRF with SVRG; ``ap``: the averaged structured perceptron; ``pa``: the
structured hinge with BCFW).
"""

import argparse
import json
import os
import pickle
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
ALGORITHMS = ["lbfgs", "l2sgd", "ap", "pa"]


def run(impl, algorithms, n_train):
    from skstruct.datasets import load_conll2000
    from skstruct.metrics import span_f1_score
    from skstruct.preprocessing import sentences_to_features

    if impl == "crfsuite":
        import sklearn_crfsuite
    else:
        from skstruct.compat import sklearn_crfsuite
    train, test = load_conll2000("train"), load_conll2000("test")
    X_train = sentences_to_features(train.words[:n_train], train.pos[:n_train])
    y_train = train.target[:n_train]
    X_test = sentences_to_features(test.words, test.pos)
    rows = {}
    for algorithm in algorithms:
        params = dict(algorithm=algorithm)
        if algorithm == "lbfgs":
            params.update(c1=0.1, c2=0.1, max_iterations=100)
        crf = sklearn_crfsuite.CRF(**params)
        tic, wall = time.process_time(), time.perf_counter()
        crf.fit(X_train, y_train)
        fit_cpu, fit_wall = time.process_time() - tic, time.perf_counter() - wall
        tic = time.process_time()
        y_pred = crf.predict(X_test)
        predict_cpu = time.process_time() - tic
        row = dict(fit_cpu_s=round(fit_cpu, 2), fit_wall_s=round(fit_wall, 2),
                   predict_cpu_s=round(predict_cpu, 2),
                   f1=round(float(span_f1_score(test.target, y_pred)), 4),
                   pickle_bytes=len(pickle.dumps(crf, protocol=pickle.HIGHEST_PROTOCOL)))
        if impl == "crfsuite":
            row["model_file_bytes"] = os.path.getsize(crf.modelfile.name)
        rows[algorithm] = row
        print(impl, algorithm, row, flush=True)
    return rows


#: What the table does not say: how its l2sgd row was measured, and what it replaced.
NOTES = [
    "",
    "l2sgd (2026-12-02, 2 shared cores, so wall seconds are inflated by other load): "
    "skstruct trains CRFsuite's parameter set with SVRG, the weights of the seen "
    "(attribute, label) pairs and label bigrams only (`all_possible_states=False`, "
    "the default); before, SVRG trained every pair and its pickle was 10,369,776 bytes "
    "(1.80x CRFsuite's pickle, 1.81x its model file) at F1 0.9293 in 30.35 s CPU. "
    "Commands:",
    "",
    "```",
    "PYTHONPATH=. /work/venv-crfsuite/bin/python benchmarks/bench_crfsuite_algorithms.py "
    "--impl crfsuite --algorithms l2sgd",
    "PYTHONPATH=. python benchmarks/bench_crfsuite_algorithms.py --impl skstruct "
    "--algorithms l2sgd",
    "python benchmarks/bench_crfsuite_algorithms.py --report",
    "```",
    "",
    "(`/work/venv-crfsuite`: python-crfsuite 0.9.12, sklearn-crfsuite 0.5.0, numba.)",
]


def report():
    data = {impl: json.loads((RESULTS / f"crfsuite_algorithms_{impl}.json").read_text())
            for impl in ("crfsuite", "skstruct")}
    lines = ["# sklearn-crfsuite's algorithms: CRFsuite and skstruct's facade", "",
             "CoNLL-2000, tutorial features; `benchmarks/bench_crfsuite_algorithms.py`. "
             "Fit CPU seconds (wall seconds in parentheses where measured), test chunk "
             "F1, pickled estimator bytes (CRFsuite: and its model file); the ratios "
             "are skstruct's pickle over CRFsuite's pickle and over its model file.", "",
             "| algorithm | CRFsuite F1 | skstruct F1 | CRFsuite fit s | skstruct fit s | "
             "CRFsuite pickle | CRFsuite model file | skstruct pickle | ratio | "
             "ratio to model file |", "|---|---|---|---|---|---|---|---|---|---|"]
    for algorithm in ALGORITHMS:
        a, b = data["crfsuite"].get(algorithm), data["skstruct"].get(algorithm)
        if a is None or b is None:
            continue
        lines.append(f"| {algorithm} | {a['f1']:.4f} | {b['f1']:.4f} | {_seconds(a)} | "
                     f"{_seconds(b)} | {a['pickle_bytes']:,} | {a['model_file_bytes']:,} | "
                     f"{b['pickle_bytes']:,} | {b['pickle_bytes'] / a['pickle_bytes']:.2f} | "
                     f"{b['pickle_bytes'] / a['model_file_bytes']:.2f} |")
    lines += NOTES
    (RESULTS / "crfsuite_algorithms.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def _seconds(row):
    """Fit CPU seconds, and wall seconds in parentheses when the row has them."""
    wall = row.get("fit_wall_s")
    return f"{row['fit_cpu_s']}" + ("" if wall is None else f" ({wall})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--impl", choices=["crfsuite", "skstruct"])
    parser.add_argument("--algorithms", nargs="*", default=ALGORITHMS)
    parser.add_argument("--n-train", type=int, default=None)
    parser.add_argument("--report", action="store_true")
    args = parser.parse_args()
    if args.report:
        report()
        return
    rows = run(args.impl, args.algorithms, args.n_train)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"crfsuite_algorithms_{args.impl}.json"
    if args.n_train is None and path.exists():  # the other algorithms' rows are kept
        rows = {**json.loads(path.read_text()), **rows}
    path.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
