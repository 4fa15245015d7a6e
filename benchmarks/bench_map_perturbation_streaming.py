"""``PerturbedMAPClassifier().partial_fit`` over a stream, beside ``fit`` on all of it.

For every multilabel set of ``../shared/data/multilabel`` (features as
``load_multilabel`` returns them) and, with ``--datasets conll2000``, CoNLL-2000 chunking
(the tutorial features), the training set is shuffled once (seed 0) and cut into
batches of ``--batch-sizes`` examples; one pass of ``partial_fit`` over them (defaults,
untuned) is scored on the test split beside ``fit`` on the whole training set:
example-based F1 (multilabel) or chunk F1 (CoNLL-2000), the ratio stream / fit, and the
CPU time (process time, all threads) of the fit and of the whole pass. Beside it, for
the multilabel sets, the streaming learner scikit-learn users reach for: one pass of
``MultiOutputClassifier(SGDClassifier(loss="log_loss", random_state=0)).partial_fit``
over the same batches (one logistic regression per label, one SGD step per example).

Writes ``results/map_perturbation_streaming.md`` and ``.json``.

Run: ``nice -n 19 python benchmarks/bench_map_perturbation_streaming.py`` (a few
minutes of CPU; CoNLL-2000 adds about 10).
"""

import argparse
import json
import os
import subprocess
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from bench_map_perturbation_defaults import DATA, MULTILABEL, _data

RESULTS = Path(__file__).parent / "results"
NAME = "map_perturbation_streaming"


def _score(name, y_true, y_pred):
    if name == "conll2000":
        from skstruct.metrics import span_f1_score
        return float(span_f1_score(y_true, y_pred))
    from sklearn.metrics import f1_score
    return float(f1_score(y_true, y_pred, average="samples", zero_division=0))


def _take(X, index):
    return [X[i] for i in index] if isinstance(X, list) else X[index]


def _sgd_stream(X, Y, X_test, Y_test, order, size, name):
    from sklearn.linear_model import SGDClassifier
    from sklearn.multioutput import MultiOutputClassifier
    model = MultiOutputClassifier(SGDClassifier(loss="log_loss", random_state=0))
    classes = [np.array([0, 1])] * Y.shape[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for first in range(0, len(order), size):
            index = order[first:first + size]
            model.partial_fit(X[index], Y[index], classes=classes if first == 0 else None)
    return _score(name, Y_test, model.predict(X_test))


def run(name, batch_sizes):
    from skstruct import PerturbedMAPClassifier
    X, y, X_test, y_test = _data(name, DATA)
    n = len(X) if isinstance(X, list) else X.shape[0]
    classes = None
    if name == "conll2000":
        classes = np.unique(np.concatenate(y))
    order = np.random.RandomState(0).permutation(n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        start = time.process_time()
        fitted = PerturbedMAPClassifier().fit(X, y)
        fit_cpu = time.process_time() - start
    fit_score = _score(name, y_test, fitted.predict(X_test))
    rows = []
    for size in batch_sizes:
        if size >= n:
            continue
        model = PerturbedMAPClassifier()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            start = time.process_time()
            for first in range(0, n, size):
                index = order[first:first + size]
                model.partial_fit(_take(X, index), _take(y, index), classes=classes)
            cpu = time.process_time() - start
        score = _score(name, y_test, model.predict(X_test))
        sgd = None if name == "conll2000" else _sgd_stream(X, y, X_test, y_test, order,
                                                           size, name)
        rows.append({"batch_size": size, "n_batches": int(np.ceil(n / size)),
                     "score": score, "ratio": score / fit_score, "cpu": cpu,
                     "sgd_score": sgd})
        print(f"{name} batch {size}: {score:.4f} ({score / fit_score:.3f} of fit), "
              f"{cpu:.1f} s CPU", flush=True)
    print(f"{name} fit: {fit_score:.4f}, {fit_cpu:.1f} s CPU", flush=True)
    return {"data": name, "n_train": n, "fit_score": fit_score, "fit_cpu": fit_cpu,
            "stream": rows}


def report(results, command):
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=Path(__file__).parent).stdout.strip()
    lines = ["# PerturbedMAPClassifier: one pass of partial_fit over a stream, beside fit",
             "",
             f"Command: `{command}`; code {commit}; {os.cpu_count()} cores, load average "
             f"{os.getloadavg()[0]:.1f} at the end (CPU times are process times).", "",
             "Training set shuffled once (seed 0) and cut into batches; one pass of "
             "`partial_fit` with the defaults (every call: L-BFGS on its batch's risk plus "
             "the diagonal summary of the earlier batches). Score: example-based F1 "
             "(multilabel) or chunk F1 (CoNLL-2000) on the test split.", "",
             "| data | n train | batch | batches | stream score | fit score | stream / fit "
             "| stream CPU (s) | fit CPU (s) | SGD log-loss stream score |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for result in results:
        for row in result["stream"]:
            lines.append(
                f"| {result['data']} | {result['n_train']:,} | {row['batch_size']:,} | "
                f"{row['n_batches']} | {row['score']:.4f} | {result['fit_score']:.4f} | "
                f"{row['ratio']:.3f} | {row['cpu']:.1f} | {result['fit_cpu']:.1f} | "
                + ("—" if row["sgd_score"] is None else f"{row['sgd_score']:.4f}") + " |")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{NAME}.md").write_text("\n".join(lines) + "\n")
    (RESULTS / f"{NAME}.json").write_text(json.dumps(results, indent=1) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(MULTILABEL))
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[100, 1000])
    args = parser.parse_args(argv)
    results = [run(name, args.batch_sizes) for name in args.datasets]
    command = "python benchmarks/bench_map_perturbation_streaming.py"
    if args.datasets != list(MULTILABEL):
        command += " --datasets " + " ".join(args.datasets)
    if args.batch_sizes != [100, 1000]:
        command += " --batch-sizes " + " ".join(map(str, args.batch_sizes))
    report(results, command)


if __name__ == "__main__":
    main()
