"""sklearn-crfsuite's algorithms: CRFsuite against skstruct's facade, on CoNLL-2000.

Trains ``CRF(algorithm=...)`` of sklearn-crfsuite 0.5 (CRFsuite) and of
``skstruct.compat.sklearn_crfsuite`` on the 8,936 CoNLL-2000 training sentences with the
sklearn-crfsuite tutorial's token features
(:func:`skstruct.preprocessing.sentences_to_features`), each algorithm with its CRFsuite
defaults but for ``lbfgs``'s ``c1 = c2 = 0.1`` and 100 iterations (the tutorial's), then
tags the 2,012 test sentences. Both run in one process, from the peers' environment::

    PYTHONPATH=. ~/.cache/skstruct-peers/peers-venv/bin/python \\
        benchmarks/bench_crfsuite_algorithms.py [--algorithms lbfgs l2sgd ap pa]

For every algorithm: a warm-up fit of each side on a few sentences (numba compilation or
cache loading), then ``--repeats`` fits of each from the feature dicts, alternating, the
order swapped every round (``_compare.alternate``); medians of the fit's CPU and wall
time, and skstruct's CPU ratio to CRFsuite in the same run. Reported beside: chunk F1
(conlleval's), tagging CPU time, and the bytes of the pickled estimators (and of
CRFsuite's model file). Fair-baseline check: afterwards the script runs itself in a fresh
process (``_compare.fresh_process``, option ``--peer-alone-json``) where only CRFsuite's
fits run (the same warm-up, algorithms and repeats), and reports their medians beside the
alternating ones, with skstruct's CPU ratio to them (``--no-fresh-check`` skips it).
Writes ``results/crfsuite_algorithms.md`` and ``.json`` (``--n-train`` for a short check:
nothing written unless ``--output`` is given).

What each algorithm trains in skstruct is listed in
:class:`skstruct.compat.sklearn_crfsuite.CRF` (``lbfgs``: the CRF with L-BFGS / OWL-QN;
``l2sgd``: the CRF with SVRG; ``ap``: the averaged structured perceptron; ``pa``: the
structured hinge with BCFW).
"""

import argparse
import os
import pickle
import sys
import time
from importlib.metadata import version
from pathlib import Path

import sklearn_crfsuite

import skstruct
from skstruct.compat import sklearn_crfsuite as facade
from skstruct.datasets import load_conll2000
from skstruct.metrics import span_f1_score
from skstruct.preprocessing import sentences_to_features

sys.path.insert(0, str(Path(__file__).parent))
from _compare import (ALONE_OPTION, Side, alone_summary, alternate,  # noqa: E402
                      fresh_process, load_average, ratio, write_alone)
from _report import code_version, command_line, machine_summary, record_run  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
STEM = "crfsuite_algorithms"
ALGORITHMS = ["lbfgs", "l2sgd", "ap", "pa"]
LIBRARIES = {"crfsuite": sklearn_crfsuite, "skstruct": facade}
N_WARM = 30


def log(text):
    print(text, file=sys.stderr, flush=True)


class Data:
    """CoNLL-2000 with the tutorial token features, as lists of dicts and label lists."""

    def __init__(self, n_train=None):
        train, test = load_conll2000("train"), load_conll2000("test")
        self.X_train = sentences_to_features(train.words[:n_train], train.pos[:n_train])
        self.y_train = [list(t) for t in train.target[:n_train]]
        self.X_test = sentences_to_features(test.words, test.pos)
        self.y_test = test.target


def params(algorithm):
    """The estimator's parameters: CRFsuite's defaults, the tutorial's for lbfgs."""
    out = dict(algorithm=algorithm)
    if algorithm == "lbfgs":
        out.update(c1=0.1, c2=0.1, max_iterations=100)
    return out


def fitter(library, algorithm, X, y):
    """A callable that fits a fresh ``CRF`` of ``library`` on ``X, y`` and returns it."""
    def run():
        return LIBRARIES[library].CRF(**params(algorithm)).fit(X, y)
    return run


def sides_of(algorithm, data, libraries):
    """Warm each library up on a few sentences (fit and tag), then its timed side on all
    of them."""
    sides = []
    for library in libraries:
        fitter(library, algorithm, data.X_train[:N_WARM], data.y_train[:N_WARM])().predict(
            data.X_test[:5])
        sides.append(Side(library, fitter(library, algorithm, data.X_train,
                                          data.y_train)))
    return sides


def evaluate(library, crf, data):
    """Tagging CPU time, chunk F1 and pickled bytes of one fitted estimator."""
    tic = time.process_time()
    y_pred = crf.predict(data.X_test)
    row = {"predict_cpu_s": time.process_time() - tic,
           "f1": float(span_f1_score(data.y_test, y_pred)),
           "pickle_bytes": len(pickle.dumps(crf, protocol=pickle.HIGHEST_PROTOCOL))}
    if library == "crfsuite":
        row["model_file_bytes"] = os.path.getsize(crf.modelfile.name)
    return row


def compare(algorithm, data, repeats):
    """Both libraries alternating on one algorithm: times, F1, sizes and CPU ratio."""
    log(f"{algorithm}: CRFsuite and skstruct alternating, {repeats} rounds")
    load_before = load_average()
    measured = alternate(sides_of(algorithm, data, LIBRARIES), repeats, log=log)
    out = {"load_average": [load_before, load_average()]}
    for library, entry in measured.items():
        out[library] = {"fit_cpu_s": entry["cpu_median"], "fit_wall_s": entry["median"],
                        "fit_cpu_s_all": entry["cpu_seconds"],
                        "fit_wall_s_all": entry["seconds"],
                        **evaluate(library, entry["results"][-1], data)}
    out["cpu_ratio"] = ratio(out["skstruct"]["fit_cpu_s"], out["crfsuite"]["fit_cpu_s"])
    out["wall_ratio"] = ratio(out["skstruct"]["fit_wall_s"], out["crfsuite"]["fit_wall_s"])
    log(f"  {algorithm}: skstruct / CRFsuite CPU {out['cpu_ratio']:.2f}x")
    return out


def crfsuite_alone(data, args, path):
    """The fresh process of the fair-baseline check: CRFsuite's fits only."""
    summary = {"sides": {}}
    for algorithm in args.algorithms:
        measured = alternate(sides_of(algorithm, data, ["crfsuite"]), args.repeats, log=log)
        summary["sides"][algorithm] = alone_summary(measured)["sides"]["crfsuite"]
    summary["load_average_after"] = load_average()
    write_alone(path, summary)


def child_argv(args):
    """The options of the fresh process that times CRFsuite alone."""
    argv = ["--algorithms", *args.algorithms, "--repeats", str(args.repeats)]
    return argv + (["--n-train", str(args.n_train)] if args.n_train else [])


def add_alone(rows, alone):
    """Put CRFsuite's times alone (fresh process) beside each algorithm's row."""
    for algorithm, row in rows.items():
        if "error" in alone:
            row["crfsuite_alone"] = {"error": alone["error"]}
            continue
        side = alone["sides"][algorithm]
        row["crfsuite_alone"] = {
            "fit_cpu_s": side["cpu_median"], "fit_wall_s": side["median"],
            "fit_cpu_s_all": side["cpu_seconds"], "fit_wall_s_all": side["seconds"],
            "load_average": [alone["load_average_before"], alone["load_average_after"]]}
        row["cpu_ratio_to_alone"] = ratio(row["skstruct"]["fit_cpu_s"], side["cpu_median"])


# --- report -----------------------------------------------------------------------------

def report(run):
    rows = run["algorithms"]
    lines = [
        "# sklearn-crfsuite's algorithms: CRFsuite and skstruct's facade", "",
        f"CoNLL-2000 ({run['n_train']} training sentences), tutorial features; "
        f"`{run['command']}` (peers' environment, `PYTHONPATH=.`) at {run['code']}, "
        f"{run['date']}; {run['machine']['cpu']}, {run['machine']['cores']} cores, "
        f"{run['machine']['numba_threads']} numba threads; sklearn-crfsuite "
        f"{run['versions']['sklearn-crfsuite']}, python-crfsuite "
        f"{run['versions']['python-crfsuite']}. Load average "
        f"{run['load_average'][0]:.1f} before, {run['load_average'][1]:.1f} after "
        "(the machine was shared with other work: CPU time is the measure).", "",
        "Both libraries in one process: for each algorithm a warm-up fit of each on "
        f"{N_WARM} sentences (and tagging 5), then {run['repeats']} fits of each from the "
        "feature dicts, alternating with the order swapped every round; medians. CRFsuite "
        "alone: the same fits in a fresh process started by the script, nothing of "
        "skstruct's there.",
        "",
        "## Fit time (CPU seconds, wall in parentheses)", "",
        "| algorithm | CRFsuite | skstruct | skstruct / CRFsuite, CPU | wall | CRFsuite "
        "alone, fresh process | skstruct / CRFsuite alone, CPU |",
        "|---|---|---|---|---|---|---|"]
    for algorithm, r in rows.items():
        a, b, alone = r["crfsuite"], r["skstruct"], r.get("crfsuite_alone")
        alone_cell, alone_ratio = "—", "—"
        if alone and "error" not in alone:
            alone_cell = f"{alone['fit_cpu_s']:.2f} ({alone['fit_wall_s']:.2f})"
            alone_ratio = f"**{r['cpu_ratio_to_alone']:.2f}x**"
        elif alone:
            alone_cell = f"failed: {alone['error']}"
        lines.append(
            f"| {algorithm} | {a['fit_cpu_s']:.2f} ({a['fit_wall_s']:.2f}) | "
            f"{b['fit_cpu_s']:.2f} ({b['fit_wall_s']:.2f}) | **{r['cpu_ratio']:.2f}x** | "
            f"{r['wall_ratio']:.2f}x | {alone_cell} | {alone_ratio} |")
    lines += ["", "CPU seconds of every round (CRFsuite / skstruct; alone):", ""]
    for algorithm, r in rows.items():
        alone = r.get("crfsuite_alone") or {}
        lines.append(
            f"- {algorithm}: " + ", ".join(
                f"{a:.2f} / {b:.2f}" for a, b in zip(r["crfsuite"]["fit_cpu_s_all"],
                                                    r["skstruct"]["fit_cpu_s_all"]))
            + ("" if "fit_cpu_s_all" not in alone else
               "; alone " + ", ".join(f"{c:.2f}" for c in alone["fit_cpu_s_all"])))
    lines += [
        "", "## Accuracy and size", "",
        "Test chunk F1, tagging CPU seconds of the test set, pickled estimator bytes "
        "(CRFsuite: and its model file); the ratios are skstruct's pickle over CRFsuite's "
        "pickle and over its model file.", "",
        "| algorithm | CRFsuite F1 | skstruct F1 | CRFsuite tagging s | skstruct tagging s "
        "| CRFsuite pickle | CRFsuite model file | skstruct pickle | ratio | ratio to model "
        "file |", "|---|---|---|---|---|---|---|---|---|---|"]
    for algorithm, r in rows.items():
        a, b = r["crfsuite"], r["skstruct"]
        lines.append(
            f"| {algorithm} | {a['f1']:.4f} | {b['f1']:.4f} | {a['predict_cpu_s']:.2f} | "
            f"{b['predict_cpu_s']:.2f} | {a['pickle_bytes']:,} | {a['model_file_bytes']:,} "
            f"| {b['pickle_bytes']:,} | {b['pickle_bytes'] / a['pickle_bytes']:.2f} | "
            f"{b['pickle_bytes'] / a['model_file_bytes']:.2f} |")
    lines += ["", "What skstruct trains for each algorithm: "
              "`skstruct.compat.sklearn_crfsuite.CRF` (lbfgs: the CRF with L-BFGS / OWL-QN; "
              "l2sgd: the CRF with SVRG on the seen (attribute, label) pairs and label "
              "bigrams, `all_possible_states=False`; ap: the averaged structured "
              "perceptron; pa: the structured hinge with BCFW).", ""]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--algorithms", nargs="+", choices=ALGORITHMS, default=ALGORITHMS)
    parser.add_argument("--repeats", type=int, default=3, help="fits of each, alternating")
    parser.add_argument("--n-train", type=int, default=None,
                        help="first N training sentences (a short check)")
    parser.add_argument("--output", default=None,
                        help=f"results folder (default: {RESULTS}; none with --n-train)")
    parser.add_argument("--no-fresh-check", action="store_true",
                        help="skip timing CRFsuite alone in a fresh process")
    parser.add_argument(ALONE_OPTION, default=None, metavar="FILE",
                        help="fit only CRFsuite and write its times to FILE (the fresh "
                        "process of the fair-baseline check)")
    args = parser.parse_args()
    data = Data(args.n_train)
    if args.peer_alone_json:
        crfsuite_alone(data, args, args.peer_alone_json)
        return
    load_before = load_average()
    rows = {algorithm: compare(algorithm, data, args.repeats)
            for algorithm in args.algorithms}
    if not args.no_fresh_check:
        log("CRFsuite alone in a fresh process")
        add_alone(rows, fresh_process(Path(__file__).resolve(), child_argv(args)))
    run = {"command": command_line("benchmarks/bench_crfsuite_algorithms.py"),
           "code": code_version(skstruct),
           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
           "machine": machine_summary(), "repeats": args.repeats,
           "n_train": len(data.X_train), "algorithms": rows,
           "load_average": [load_before, load_average()],
           "versions": {"skstruct": skstruct.__version__,
                        "sklearn-crfsuite": version("sklearn-crfsuite"),
                        "python-crfsuite": version("python-crfsuite")}}
    output = Path(args.output) if args.output else (None if args.n_train else RESULTS)
    if output is not None:
        runs = record_run(output / f"{STEM}.json", "latest", run)
        (output / f"{STEM}.md").write_text(report(runs["latest"]))
    print(report(run))


if __name__ == "__main__":
    main()
