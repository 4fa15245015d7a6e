"""CPU time of the default ``CRF()`` fit on CoNLL-2000, this checkout against another.

Both fit the same model as ``bench_crf_default.py``'s skstruct side (the tutorial token
features through ``SequenceVectorizer``, L2 only with c2 = 0.1, i.e. ``alpha = 2 c2 /
n_sequences``, exactly ``--iterations`` L-BFGS iterations, ``tol=0``), on the whole
training set, all threads. Each fit runs in a fresh process (``--fit``) with one of the
two package folders first on ``PYTHONPATH``; the two alternate, ``--rounds`` times, and
the first round (which may compile kernels) is reported but left out of the medians.
CPU time is ``time.process_time`` of the fit alone (features are computed before it).
The objective at the last iteration is reported for both (the same bits when the two
compute the same objective).

Run: ``python benchmarks/bench_crf_fit_cpu.py --against /path/to/other/checkout``
(``--against-commit REV`` names it when it is an export such as ``git archive REV``);
writes ``results/crf_fit_cpu.md`` and ``.json``.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
HERE = Path(__file__).resolve().parent.parent


def fit(iterations, c2):
    from skstruct import CRF
    from skstruct.datasets import load_conll2000
    from skstruct.preprocessing import SequenceVectorizer, sentences_to_features

    train = load_conll2000("train")
    X = SequenceVectorizer().fit_transform(sentences_to_features(train.words, train.pos))
    y = [list(t) for t in train.target]
    model = CRF(alpha=2 * c2 / len(y), max_iter=iterations, tol=0.0)
    wall, cpu = time.perf_counter(), time.process_time()
    model.fit(X, y)
    return {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
            "n_iter": int(model.n_iter_), "objective": float(model.objective_curve_[-1])}


def git_head(folder):
    try:
        return subprocess.check_output(["git", "-C", str(folder), "rev-parse", "--short",
                                        "HEAD"], text=True,
                                       stderr=subprocess.DEVNULL).strip()
    except (subprocess.CalledProcessError, OSError):
        return "?"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", help="folder of the other checkout")
    parser.add_argument("--against-commit", default=None,
                        help="the other side's commit, when its folder is not a git "
                             "checkout (e.g. a git archive)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--c2", type=float, default=0.1)
    parser.add_argument("--fit", action="store_true", help="one fit, in this process")
    args = parser.parse_args()
    if args.fit:
        import warnings
        warnings.simplefilter("ignore")
        print(json.dumps(fit(args.iterations, args.c2)))
        return
    sides = {"before": Path(args.against).resolve(), "after": HERE}
    load = [os.getloadavg()]
    runs = {side: [] for side in sides}
    for _ in range(args.rounds):
        for side, folder in sides.items():
            env = dict(os.environ, PYTHONPATH=str(folder))
            out = subprocess.check_output(
                [sys.executable, __file__, "--fit", "--iterations", str(args.iterations),
                 "--c2", str(args.c2)], env=env, text=True)
            runs[side].append(json.loads(out.strip().splitlines()[-1]))
    load.append(os.getloadavg())
    commits = {side: git_head(folder) for side, folder in sides.items()}
    if args.against_commit:
        commits["before"] = args.against_commit
    results = {"command": "python benchmarks/bench_crf_fit_cpu.py --against "
                          f"{args.against} --rounds {args.rounds}",
               "commits": commits,
               "iterations": args.iterations, "c2": args.c2, "load_average": load,
               "runs": runs}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "crf_fit_cpu.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / "crf_fit_cpu.md").write_text(report(results))
    print(report(results))


def _median(values):
    values = sorted(values)
    n = len(values)
    return values[n // 2] if n % 2 else 0.5 * (values[n // 2 - 1] + values[n // 2])


def report(r):
    kept = {side: runs[1:] or runs for side, runs in r["runs"].items()}
    cpu = {side: _median([x["cpu"] for x in runs]) for side, runs in kept.items()}
    lines = [
        "# Default CRF fit on CoNLL-2000: CPU time before and after",
        "",
        f"`CRF(alpha=2 c2 / n, max_iter={r['iterations']}, tol=0)`, c2 = {r['c2']}, on the "
        "whole training set from the tutorial features, all threads; one fresh process a "
        "fit, the two checkouts alternating. Load average "
        f"{', '.join(f'{x:.1f}' for x in r['load_average'][0])} before, "
        f"{', '.join(f'{x:.1f}' for x in r['load_average'][1])} after. Produced by "
        f"`{r['command']}`.",
        "",
        "| side | commit | CPU s per round (the first may compile) | median CPU s "
        "(rounds 2-) | wall s per round | objective at the end |",
        "|---|---|---|---|---|---|",
    ]
    for side, runs in r["runs"].items():
        lines.append(
            f"| {side} | {r['commits'][side]} | "
            f"{', '.join(format(x['cpu'], '.1f') for x in runs)} | {cpu[side]:.1f} | "
            f"{', '.join(format(x['wall'], '.1f') for x in runs)} | "
            f"{runs[-1]['objective']!r} |")
    lines += ["", f"After / before (median CPU): {cpu['after'] / cpu['before']:.2f}x.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
