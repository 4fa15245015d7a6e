"""``PerturbedMAPClassifier()`` with its defaults on every multilabel set of
``../shared/data/multilabel`` and on CoNLL-2000 chunking, beside one-vs-rest logistic
regression (multilabel), ``StructuredSVM()`` and ``CRF()``, all untuned.

Every (data set, method) fit runs in its own child process (``--one``), which reports
the CPU time of the fit (user + system of the process, all threads, from
``resource.getrusage``), its wall time, the resident memory before the fit (data loaded
and featurized) and the peak resident memory of the process (``ru_maxrss``: the data
plus everything the fit held at its peak), and the test score: example-based F1
(multilabel, ``f1_score(average="samples")``) or chunk F1 (CoNLL-2000). The
perturbation learner also reports its decoder calls (``map`` is 0) and L-BFGS
iterations. ConvergenceWarnings are counted, not shown.

Features as the loaders return them (multilabel: ``load_multilabel(name, path=...)``;
CoNLL-2000: the tutorial features ``sentences_to_features`` + ``SequenceVectorizer``).

A child process may take ``--cpu-limit`` seconds of CPU (300, data loading included);
a fit stopped there is reported as not finished.

Writes ``results/map_perturbation_defaults.md`` and ``.json``.

Run: ``nice -n 19 python benchmarks/bench_map_perturbation_defaults.py`` (about 20
minutes of CPU); ``--datasets yeast scene`` for some of them.
"""

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results"
NAME = "map_perturbation_defaults"
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
MULTILABEL = ("yeast", "scene", "emotions", "bibtex", "tmc2007")
DATASETS = MULTILABEL + ("conll2000",)
METHODS = {"multilabel": ("perturbed_map", "ovr_logistic", "ssvm", "crf"),
           "chain": ("perturbed_map", "ssvm", "crf")}
LABELS = {"perturbed_map": "PerturbedMAPClassifier()",
          "ovr_logistic": "OneVsRestClassifier(LogisticRegression())",
          "ssvm": "StructuredSVM()", "crf": "CRF()"}


def _rss_mb():
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def _cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _data(name, data_dir):
    from skstruct.datasets import load_conll2000, load_multilabel
    if name == "conll2000":
        from skstruct.preprocessing import SequenceVectorizer, sentences_to_features
        train, test = load_conll2000("train"), load_conll2000("test")
        vectorizer = SequenceVectorizer()
        X = vectorizer.fit_transform(sentences_to_features(train.words, train.pos))
        X_test = vectorizer.transform(sentences_to_features(test.words, test.pos))
        return X, list(train.target), X_test, list(test.target)
    path = data_dir / "multilabel"
    train = load_multilabel(name, "train", path=path)
    test = load_multilabel(name, "test", path=path)
    return train.data, train.target, test.data, test.target


def _model(method):
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier
    from skstruct import CRF, PerturbedMAPClassifier, StructuredSVM
    return {"perturbed_map": PerturbedMAPClassifier, "ssvm": StructuredSVM, "crf": CRF,
            "ovr_logistic": lambda: OneVsRestClassifier(LogisticRegression()),
            }[method]()


def run_one(name, method, data_dir):
    """One fit in this process: the dict the parent records."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.metrics import f1_score
    from skstruct.metrics import span_f1_score
    X, y, X_test, y_test = _data(name, data_dir)
    model = _model(method)
    rss_before = _rss_mb()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        cpu, wall = _cpu(), time.perf_counter()
        model.fit(X, y)
        cpu, wall = _cpu() - cpu, time.perf_counter() - wall
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6  # KiB
    predicted = model.predict(X_test)
    if name == "conll2000":
        score = float(span_f1_score(y_test, predicted))
    else:
        score = float(f1_score(y_test, predicted, average="samples", zero_division=0))
    result = {"score": score, "fit_cpu_seconds": cpu, "fit_wall_seconds": wall,
              "rss_before_fit_mb": rss_before, "peak_rss_mb": peak,
              "convergence_warnings": sum(issubclass(w.category, ConvergenceWarning)
                                          for w in caught)}
    if method == "perturbed_map":
        result["decoder_calls"] = {k: int(v) for k, v in model.decoder_calls_.items() if v}
        result["map_calls"] = int(model.decoder_calls_["map"])
        result["n_iter"] = int(model.n_iter_)
        result["beta"] = float(model.beta_)
    return result


def report(run, label="latest"):
    lines = [
        f"# PerturbedMAPClassifier with its defaults on real data (run `{label}`)",
        "",
        f"Command: `{run['command']}`; code {run['code']}; {run['machine']}.",
        "",
        "Every fit untuned (`Estimator()`), in its own process. Fit CPU: user + system "
        "time of the process during `fit` (all threads); peak RSS: the process's "
        "largest resident memory (data included), beside its resident memory before "
        "`fit`. Score: example-based F1 (multilabel) or chunk F1 (CoNLL-2000) on the "
        "published test split. Ratio: the score over one-vs-rest logistic regression's "
        "(multilabel) or the CRF's (CoNLL-2000); the target is >= 0.95. "
        f"CPU limit per process: {run.get('cpu_limit', '?')} s.",
        "",
        "| data | method | score | ratio | fit CPU (s) | fit wall (s) | RSS before fit "
        "(MB) | peak RSS (MB) | ConvergenceWarnings |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, methods in run["datasets"].items():
        reference = methods.get("crf" if name == "conll2000" else "ovr_logistic")
        for method, r in methods.items():
            if "error" in r:
                lines.append(f"| {name} | {LABELS[method]} | failed: {r['error']} "
                             "| | | | | | |")
                continue
            ratio = (f"{r['score'] / reference['score']:.3f}"
                     if reference and "score" in reference and reference["score"] else "")
            lines.append(
                f"| {name} | {LABELS[method]} | {r['score']:.4f} | {ratio} | "
                f"{r['fit_cpu_seconds']:.1f} | {r['fit_wall_seconds']:.1f} | "
                f"{r['rss_before_fit_mb']:.0f} | {r['peak_rss_mb']:.0f} | "
                f"{r['convergence_warnings']} |")
    lines += ["", "PerturbedMAPClassifier fits: β, L-BFGS iterations and decoder calls.", ""]
    for name, methods in run["datasets"].items():
        r = methods.get("perturbed_map", {})
        if "decoder_calls" in r:
            calls = ", ".join(f"{k} {v}" for k, v in r["decoder_calls"].items())
            lines.append(f"- {name}: β = {r['beta']:.4g}, {r['n_iter']} iterations, "
                         f"map calls {r['map_calls']}; {calls}")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", choices=DATASETS, default=list(DATASETS))
    parser.add_argument("--methods", nargs="+", choices=list(LABELS), default=None)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--one", nargs=2, metavar=("DATASET", "METHOD"),
                        help="(internal) run one fit and print its result as JSON")
    parser.add_argument("--cpu-limit", type=int, default=300,
                        help="seconds of CPU a child process may take (loading the data "
                        "included) before it is stopped and the fit reported unfinished")
    parser.add_argument("--label", default="latest")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(*args.one, args.data)))
        return None
    sys.path.insert(0, str(Path(__file__).parent))
    import skstruct
    from _report import code_version, command_line, machine_summary, record_run
    machine = machine_summary()
    run = {"command": command_line("benchmarks/bench_map_perturbation_defaults.py"),
           "code": code_version(skstruct),
           "machine": ", ".join(f"{k} {v}" for k, v in machine.items())
           if isinstance(machine, dict) else str(machine),
           "load_average_at_start": os.getloadavg()[0], "cpu_limit": args.cpu_limit,
           "datasets": {}}
    for name in args.datasets:
        kind = "chain" if name == "conll2000" else "multilabel"
        run["datasets"][name] = {}
        for method in METHODS[kind]:
            if args.methods and method not in args.methods:
                continue
            limit = args.cpu_limit
            child = subprocess.run(
                [sys.executable, __file__, "--one", name, method, "--data", str(args.data)],
                capture_output=True, text=True,
                preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CPU, (limit, limit)))
            if child.returncode == -signal.SIGXCPU or child.returncode == -signal.SIGKILL:
                result = {"error": f"not finished within {limit} s of CPU"}
            elif child.returncode:
                lines = child.stderr.strip().splitlines() or ["(no message)"]
                result = {"error": lines[-1][:200]}
            else:
                result = json.loads(child.stdout.strip().splitlines()[-1])
            run["datasets"][name][method] = result
            print(name, method, result, flush=True)
    runs = record_run(args.output / f"{NAME}.json", args.label, run)
    (args.output / f"{NAME}.md").write_text("\n".join(
        report(one, label) for label, one in runs.items()))
    print(report(run, args.label))
    return run


if __name__ == "__main__":
    main()
