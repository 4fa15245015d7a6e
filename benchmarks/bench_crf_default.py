"""The default ``CRF()`` against CRFsuite (sklearn-crfsuite) on CoNLL-2000: CPU time, F1,
memory and the time per iteration at 1 % to 100 % of the training set.

Both train from the same token feature dicts (the sklearn-crfsuite tutorial features,
:func:`skstruct.preprocessing.sentences_to_features`) with CRFsuite's settings: L2 only,
c2 = 0.1 (skstruct ``alpha = 2 c2 / n_sequences``, every other parameter of ``CRF`` at its
default), exactly ``--iterations`` L-BFGS iterations (both convergence tests disabled:
``tol=0``; CRFsuite ``epsilon=1e-12, delta=0``). CRFsuite keeps the seen (feature, label)
pairs (``all_possible_states=False``) and all transitions.

``time`` (default): for each training fraction (the first sentences of the training
set), the two fits alternate in one process, ``--repeats`` times (at most two at 100 %: a fit of
CRFsuite there takes a minute), medians of wall and CPU time (``time.process_time``,
all threads of the process); a fit is ``sklearn_crfsuite.CRF.fit`` on the dicts against
``make_pipeline(SequenceVectorizer(), CRF(...)).fit`` on the dicts. At 100 % both tag the
test set (chunk F1, conlleval's definition). The fair-baseline check: after the
alternating runs the script runs itself once more in a fresh process
(``_compare.fresh_process``, option ``--peer-alone-json``) where only CRFsuite fits, the
same fractions and repeats, and reports those times beside the alternating ones
(``--no-fresh-check`` skips it). ``memory``: one fresh process per side
(``--side crfsuite`` or ``skstruct``), the peak resident set of the fit above the
resident set once the data are loaded (and, for skstruct, its kernels loaded by a fit
on 18 sentences). Without ``--side`` the ``memory`` mode starts the processes itself,
``--runs`` per side, alternating, and reports the medians.

Run: ``python benchmarks/bench_crf_default.py`` then ``python benchmarks/bench_crf_default.py
memory``; each writes its part of ``results/crf_default.json``; ``time`` also writes its
table into ``results/crf_default.md``, between the ``<!-- time: latest -->`` markers.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import sklearn_crfsuite
from sklearn.pipeline import make_pipeline

import skstruct
from skstruct import CRF
from skstruct.datasets import load_conll2000
from skstruct.metrics import span_f1_score
from skstruct.preprocessing import SequenceVectorizer, sentences_to_features

sys.path.insert(0, str(Path(__file__).parent))
from _compare import ALONE_OPTION, fresh_process, load_average, write_alone  # noqa: E402
from _report import code_version, machine_summary  # noqa: E402

RESULTS = Path(__file__).parent / "results"
FRACTIONS = (0.01, 0.03, 0.1, 0.3, 1.0)


def crfsuite_model(c2, iterations):
    return sklearn_crfsuite.CRF(
        algorithm="lbfgs", c1=0.0, c2=c2, max_iterations=iterations,
        all_possible_transitions=True, epsilon=1e-12, delta=0.0, period=10)


def skstruct_model(c2, iterations, n_sequences):
    return make_pipeline(SequenceVectorizer(),
                         CRF(alpha=2 * c2 / n_sequences, max_iter=iterations, tol=0.0))


def load(fraction=1.0):
    train = load_conll2000("train")
    n = max(1, int(round(fraction * len(train.words))))
    X = sentences_to_features(train.words[:n], train.pos[:n])
    return X, [list(t) for t in train.target[:n]], train.target[:n]


def timed(function):
    tic, tic_cpu = time.perf_counter(), time.process_time()
    result = function()
    return time.perf_counter() - tic, time.process_time() - tic_cpu, result


def warm_up():
    X, _, y = load(0.002)
    skstruct_model(0.1, 2, len(X)).fit(X, y)


def time_fraction(fraction, c2, iterations, repeats):
    X, y_lists, y = load(fraction)
    sides = {"crfsuite": lambda: crfsuite_model(c2, iterations).fit(X, y_lists),
             "skstruct": lambda: skstruct_model(c2, iterations, len(X)).fit(X, y)}
    wall = {name: [] for name in sides}
    cpu = {name: [] for name in sides}
    fitted = {}
    load_average = os.getloadavg()[0]
    for k in range(repeats):  # alternating; the first side swaps every round
        for name in (list(sides) if k % 2 == 0 else list(sides)[::-1]):
            w, c, fitted[name] = timed(sides[name])
            wall[name].append(w)
            cpu[name].append(c)
    crfsuite_iterations = len(fitted["crfsuite"].training_log_.iterations)
    sk_iterations = int(fitted["skstruct"][-1].n_iter_)
    row = {
        "fraction": fraction, "sentences": len(X), "tokens": int(sum(map(len, y))),
        "load_average": load_average, "repeats": repeats,
        "wall": {k: float(np.median(v)) for k, v in wall.items()},
        "cpu": {k: float(np.median(v)) for k, v in cpu.items()},
        "iterations": {"crfsuite": crfsuite_iterations, "skstruct": sk_iterations},
        "feature_label_pairs_": fitted["skstruct"][-1].feature_label_pairs_,
    }
    row["cpu_per_iteration"] = {
        "crfsuite": row["cpu"]["crfsuite"] / crfsuite_iterations,
        "skstruct": row["cpu"]["skstruct"] / sk_iterations}
    row["cpu_ratio"] = row["cpu"]["skstruct"] / row["cpu"]["crfsuite"]
    row["cpu_per_iteration_ratio"] = (row["cpu_per_iteration"]["skstruct"]
                                      / row["cpu_per_iteration"]["crfsuite"])
    if fraction == 1.0:
        test = load_conll2000("test")
        X_test = sentences_to_features(test.words, test.pos)
        row["chunk_f1"] = {
            "crfsuite": 100 * span_f1_score(test.target, fitted["crfsuite"].predict(X_test)),
            "skstruct": 100 * span_f1_score(test.target, fitted["skstruct"].predict(X_test))}
        row["unary_weights_skstruct"] = int(np.count_nonzero(fitted["skstruct"][-1].coef_))
        row["active_features_crfsuite"] = int(
            fitted["crfsuite"].training_log_.last_iteration["active_features"])
    return row


def crfsuite_alone(fractions, c2, iterations, repeats):
    """The fresh process of the fair-baseline check: CRFsuite's fits only, same rounds."""
    out = {}
    for fraction in fractions:
        X, y_lists, _ = load(fraction)
        n = min(repeats, 2) if fraction == 1.0 else repeats
        wall, cpu = [], []
        for _ in range(n):
            w, c, model = timed(lambda: crfsuite_model(c2, iterations).fit(X, y_lists))
            wall.append(w)
            cpu.append(c)
        out[str(fraction)] = {"seconds": wall, "cpu_seconds": cpu,
                              "median": float(np.median(wall)),
                              "cpu_median": float(np.median(cpu)),
                              "iterations": len(model.training_log_.iterations)}
    return {"fractions": out, "load_average_after": load_average()}


MARK_BEGIN, MARK_END = "<!-- time: latest -->", "<!-- /time: latest -->"


def time_report(rows, command, code, machine):
    """Markdown of a ``time`` run: same-run ratios beside the ratios to CRFsuite alone."""
    loads = [row["load_average"] for row in rows]
    lines = [MARK_BEGIN, "", f"### Time: `{command}` (at {code})", "",
             f"{machine['cpu']}, {machine['cores']} cores, {machine['numba_threads']} numba "
             f"threads; load average {min(loads):.1f}-{max(loads):.1f}. The two fits "
             "alternate in one process (the first side swaps every round); *alone* is "
             "CRFsuite's fit in a fresh process started after them, the same rounds, "
             "nothing of skstruct's in it. Medians; CPU is all threads of the process.", "",
             "| training set | sentences | tokens | rounds | CRFsuite CPU / iteration "
             "(alone) | skstruct CPU / iteration | CPU ratio, same run | CPU ratio to "
             "CRFsuite alone | wall, CRFsuite (alone) / skstruct |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        alone = row.get("crfsuite_alone") or {}
        per = row["cpu_per_iteration"]
        a_per = (f" ({1e3 * alone['cpu_median'] / alone['iterations']:.1f})"
                 if alone else "")
        a_ratio = f"{row['cpu_ratio_to_alone']:.2f}x" if alone else "not run"
        a_wall = f" ({alone['median']:.1f})" if alone else ""
        lines.append(
            f"| {100 * row['fraction']:g} % | {row['sentences']:,} | {row['tokens']:,} | "
            f"{row['repeats']} | {1e3 * per['crfsuite']:.1f} ms{a_per} | "
            f"{1e3 * per['skstruct']:.1f} ms | {row['cpu_per_iteration_ratio']:.2f}x | "
            f"{a_ratio} | {row['wall']['crfsuite']:.1f}{a_wall} s / "
            f"{row['wall']['skstruct']:.1f} s |")
    full = [row for row in rows if row["fraction"] == 1.0]
    if full:
        row = full[0]
        alone = row.get("crfsuite_alone")
        lines += ["", f"At 100 %: the fit took {row['cpu']['skstruct']:.2f} s of CPU against "
                  f"CRFsuite's {row['cpu']['crfsuite']:.2f} s in the same run "
                  f"(**{row['cpu_ratio']:.2f}x**)"
                  + (f" and {alone['cpu_median']:.2f} s alone in a fresh process "
                     f"(**{row['cpu_ratio_to_alone']:.2f}x**; rounds "
                     + ", ".join(f"{c:.2f}" for c in alone["cpu_seconds"]) + " s)"
                     if alone else "")
                  + f"; chunk F1 **{row['chunk_f1']['skstruct']:.2f}** against "
                  f"**{row['chunk_f1']['crfsuite']:.2f}**, "
                  f"{row['unary_weights_skstruct']:,} unary weights against CRFsuite's "
                  f"{row['active_features_crfsuite']:,} active features."]
    lines += ["", MARK_END]
    return "\n".join(lines)


def write_time_report(text):
    path = RESULTS / "crf_default.md"
    old = path.read_text() if path.exists() else "# The default `CRF()` against CRFsuite\n"
    if MARK_BEGIN in old and MARK_END in old:
        head, rest = old.split(MARK_BEGIN, 1)
        new = head + text + rest.split(MARK_END, 1)[1]
    else:  # first run: after the introduction (the first section heading)
        at = old.find("\n## ")
        at = len(old) if at < 0 else at + 1
        new = old[:at] + "## Latest run\n\n" + text + "\n\n" + old[at:]
    path.write_text(new)


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def memory_side(side, c2, iterations):
    X, y_lists, y = load(1.0)
    if side == "skstruct":
        warm_up()
    base = rss_mb()
    base_peak = peak_rss_mb()
    if side == "crfsuite":
        _, cpu, _ = timed(lambda: crfsuite_model(c2, iterations).fit(X, y_lists))
    else:
        _, cpu, _ = timed(lambda: skstruct_model(c2, iterations, len(X)).fit(X, y))
    peak = peak_rss_mb()
    return {"side": side, "rss_after_data_mb": base, "peak_before_fit_mb": base_peak,
            "peak_mb": peak, "above_data_mb": peak - max(base, base_peak), "cpu": cpu}


def write(key, value, command):
    path = RESULTS / "crf_default.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    results[key] = value
    results.setdefault("commands", {})[key] = command
    path.write_text(json.dumps(results, indent=2) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", nargs="?", choices=("time", "memory"), default="time")
    parser.add_argument("--side", choices=("crfsuite", "skstruct"), default=None)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--c2", type=float, default=0.1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--fractions", default=",".join(map(str, FRACTIONS)))
    parser.add_argument("--runs", type=int, default=3,
                        help="memory: fresh processes per side (medians)")
    parser.add_argument("--merge", action="store_true",
                        help="time: keep the rows of other fractions from the last run")
    parser.add_argument("--no-fresh-check", action="store_true",
                        help="time: skip timing CRFsuite alone in a fresh process")
    parser.add_argument(ALONE_OPTION, default=None, metavar="FILE",
                        help="time: fit CRFsuite only and write its times to FILE (the "
                             "fresh process of the fair-baseline check)")
    args = parser.parse_args()
    fractions = [float(f) for f in args.fractions.split(",")]
    alone_path = getattr(args, ALONE_OPTION.lstrip("-").replace("-", "_"))
    if alone_path:
        write_alone(alone_path, crfsuite_alone(fractions, args.c2, args.iterations,
                                               args.repeats))
        return
    command = "python benchmarks/bench_crf_default.py " + " ".join(sys.argv[1:])
    if args.mode == "memory" and args.side is not None:
        print(json.dumps(memory_side(args.side, args.c2, args.iterations)))
        return
    if args.mode == "memory":
        runs = []
        for _ in range(args.runs):
            for side in ("crfsuite", "skstruct"):
                out = subprocess.run(
                    [sys.executable, __file__, "memory", "--side", side,
                     "--iterations", str(args.iterations), "--c2", str(args.c2)],
                    check=True, capture_output=True, text=True).stdout
                runs.append(json.loads(out.strip().splitlines()[-1]))
                print(runs[-1], flush=True)
        above = {side: float(np.median([r["above_data_mb"] for r in runs
                                        if r["side"] == side]))
                 for side in ("crfsuite", "skstruct")}
        write("memory", {"load_average": os.getloadavg()[0], "runs": runs,
                         "median_above_data_mb": above,
                         "ratio": above["skstruct"] / above["crfsuite"]}, command)
        return
    warm_up()
    rows = []
    for fraction in fractions:
        repeats = min(args.repeats, 2) if fraction == 1.0 else args.repeats
        rows.append(time_fraction(fraction, args.c2, args.iterations, repeats))
        print(json.dumps(rows[-1]), flush=True)
    alone = None
    if not args.no_fresh_check:
        print("timing CRFsuite alone in a fresh process", flush=True)
        alone = fresh_process(Path(__file__).resolve(), [
            "time", "--iterations", str(args.iterations), "--c2", str(args.c2),
            "--repeats", str(args.repeats), "--fractions", args.fractions])
        print(json.dumps(alone), flush=True)
    for row in rows:
        entry = (alone or {}).get("fractions", {}).get(str(row["fraction"]))
        row["crfsuite_alone"] = entry
        if entry:
            row["cpu_ratio_to_alone"] = row["cpu"]["skstruct"] / entry["cpu_median"]
    code = code_version(skstruct)
    for row in rows:
        row["code"], row["command"] = code, command
    if args.merge:  # keep the earlier rows of other fractions (each row names its run)
        path = RESULTS / "crf_default.json"
        earlier = json.loads(path.read_text()).get("time", []) if path.exists() else []
        done = {row["fraction"] for row in rows}
        rows = sorted([r for r in earlier if r["fraction"] not in done] + rows,
                      key=lambda r: r["fraction"])
        command = "; ".join(dict.fromkeys(r.get("command", command) for r in rows))
        code = ", ".join(dict.fromkeys(r.get("code", code) for r in rows))
    write("time", rows, command)
    write("code", code, command)
    if alone is not None and "error" in alone:
        write("time_alone_error", alone["error"], command)
    write_time_report(time_report(rows, command, code, machine_summary()))


if __name__ == "__main__":
    main()
