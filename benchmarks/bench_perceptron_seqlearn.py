"""StructuredPerceptron against seqlearn's StructuredPerceptron on CoNLL-2000 chunking.

Run from the peers' virtual environment, where both libraries import::

    bash ../shared/peers/setup_peers.sh
    ~/.cache/skstruct-peers/peers-venv/bin/pip install -e .
    ~/.cache/skstruct-peers/peers-venv/bin/python benchmarks/bench_perceptron_seqlearn.py

(``--quick`` for a smoke run on a slice of the data; ``--label before`` to record the
results of the code before a change, kept beside the ``latest`` ones.)

Both learners see the same numbers: the tutorial token features (``sentences_to_features``:
word lower-case, suffixes, shape, POS, and the same for the neighbouring words) vectorized
once by ``SequenceVectorizer`` into one sparse row per token. skstruct gets the list of
per-sentence CSR matrices; seqlearn the same rows stacked, with ``lengths``. Both run
``--passes`` passes (``max_iter``) over the 8,936 training sentences in a shuffled order
(``random_state``), averaged; seqlearn with its defaults otherwise (Viterbi decoding,
learning rate ``1 / t ** 0.1`` in pass t, no transition features). Both models have
start, end and transition scores.

Timed: ``fit`` alone (the vectorizing is shared and done once), ``--repeats`` times each,
alternating, after a warm-up fit of each on a few sentences (numba compilation or cache
loading). Reported: median fit time of each and their ratio skstruct / seqlearn, the
tagging time of the 2,012 test sentences, and the chunk F1 of each (conlleval's
definition, ``skstruct.metrics.span_f1_score``). Fair-baseline check: the script then runs
itself in a fresh process with ``--peer-alone-json``, where only seqlearn's fits run (same
data, warm-up and repeats), and reports their times beside the alternating ones
(``--no-fresh-check`` skips it). Writes
``results/perceptron_seqlearn.md`` and ``.json``. Without seqlearn the skstruct side still
runs and the peer columns say why they are empty.
"""

import argparse
import sys
import time
from importlib.metadata import version
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import skstruct
from skstruct import StructuredPerceptron
from skstruct.datasets import load_conll2000
from skstruct.metrics import span_f1_score, token_accuracy
from skstruct.preprocessing import SequenceVectorizer, sentences_to_features

sys.path.insert(0, str(Path(__file__).parent))
from _compare import (ALONE_OPTION, Side, alone_summary, alternate,  # noqa: E402
                      fresh_process, load_average, peer_import, ratio, timed, write_alone)
from _report import code_version, command_line, machine_summary, record_run  # noqa: E402

RESULTS = Path(__file__).parent / "results"
STEM = "perceptron_seqlearn"
TARGET_RATIO = 0.2


def log(text):
    print(text, file=sys.stderr, flush=True)


def load_data(args):
    """Token feature rows of train and test, shared by both libraries."""
    train = load_conll2000("train", path=args.data)
    test = load_conll2000("test", path=args.data)
    n_train = args.train_sentences or len(train.words)
    n_test = args.test_sentences or len(test.words)
    vectorizer = SequenceVectorizer()
    X_train = vectorizer.fit_transform(
        sentences_to_features(train.words[:n_train], train.pos[:n_train]))
    X_test = vectorizer.transform(
        sentences_to_features(test.words[:n_test], test.pos[:n_test]))
    return X_train, list(train.target[:n_train]), X_test, list(test.target[:n_test])


def stacked(X, y=None):
    """seqlearn's layout: one CSR of all token rows, the labels, the sentence lengths."""
    lengths = np.array([x.shape[0] for x in X])
    X_all = sp.vstack(X, format="csr")
    return X_all, (None if y is None else np.concatenate(y)), lengths


def split(flat, lengths):
    return np.split(np.asarray(flat), np.cumsum(lengths)[:-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=10, help="max_iter of both")
    parser.add_argument("--repeats", type=int, default=3, help="fits of each, alternating")
    parser.add_argument("--seed", type=int, default=0, help="random_state of both")
    parser.add_argument("--train-sentences", type=int, default=None,
                        help="first N training sentences (default: all 8,936)")
    parser.add_argument("--test-sentences", type=int, default=None)
    parser.add_argument("--data", default=None, help="folder with train.txt.gz, "
                        "test.txt.gz (default: the copy bundled with skstruct)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 300 sentences, 2 passes, 1 repeat, no results "
                        "written unless --output is given")
    parser.add_argument("--no-peer", action="store_true", help="skip seqlearn")
    parser.add_argument("--no-fresh-check", action="store_true",
                        help="skip timing seqlearn alone in a fresh process")
    parser.add_argument(ALONE_OPTION, default=None, metavar="FILE",
                        help="time only seqlearn's fits and write them to FILE (the fresh "
                        "process of the fair-baseline check)")
    parser.add_argument("--label", default="latest",
                        help="name of this run in the results (e.g. before, latest)")
    parser.add_argument("--output", default=None,
                        help=f"results folder (default: {RESULTS}; none with --quick)")
    args = parser.parse_args(argv)
    if args.quick:
        args.passes, args.repeats = min(args.passes, 2), 1
        args.train_sentences = args.train_sentences or 300
        args.test_sentences = args.test_sentences or 100
    output = Path(args.output) if args.output else (None if args.quick else RESULTS)
    load_before = load_average()
    total_tic = time.perf_counter()

    seqlearn_perceptron, why_no_peer = (None, "--no-peer") if args.no_peer else \
        peer_import("seqlearn.perceptron")
    X_train, y_train, X_test, y_test = load_data(args)
    Xs_train, ys_train, len_train = stacked(X_train, y_train)
    Xs_test, _, len_test = stacked(X_test)
    log(f"{len(X_train)} train / {len(X_test)} test sentences, {X_train[0].shape[1]} "
        f"feature columns; seqlearn: {why_no_peer or 'available'}")

    def fit_skstruct(X, y, passes):
        model = StructuredPerceptron(max_iter=passes, random_state=args.seed)
        return timed(model.fit, X, y)

    def fit_seqlearn(X, y, lengths, passes):
        model = seqlearn_perceptron.StructuredPerceptron(max_iter=passes,
                                                         random_state=args.seed)
        return timed(model.fit, X, y, lengths)

    # Warm-up: compile (or load numba's cache) and touch every code path before timing.
    warm = min(50, len(X_train))
    if args.peer_alone_json:
        n_warm = int(len_train[:warm].sum())
        fit_seqlearn(Xs_train[:n_warm], ys_train[:n_warm], len_train[:warm], 1)
        side = Side("seqlearn", lambda: fit_seqlearn(Xs_train, ys_train, len_train,
                                                     args.passes), True)
        write_alone(args.peer_alone_json, alone_summary(alternate([side], args.repeats,
                                                                  log=log)))
        return None
    fit_skstruct(X_train[:warm], y_train[:warm], 1)[0].predict(X_test[:10])
    sides = [Side("skstruct", lambda: fit_skstruct(X_train, y_train, args.passes), True)]
    if seqlearn_perceptron is not None:
        n_warm = int(len_train[:warm].sum())
        fit_seqlearn(Xs_train[:n_warm], ys_train[:n_warm], len_train[:warm], 1)
        sides.append(Side("seqlearn", lambda: fit_seqlearn(Xs_train, ys_train, len_train,
                                                           args.passes), True))
    measured = alternate(sides, args.repeats, log=log)
    alone = None
    if "seqlearn" in measured and not args.no_fresh_check:
        log("seqlearn alone in a fresh process")
        passed = ["--passes", str(args.passes), "--repeats", str(args.repeats),
                  "--seed", str(args.seed)]
        for option, value in (("--train-sentences", args.train_sentences),
                              ("--test-sentences", args.test_sentences),
                              ("--data", args.data)):
            if value is not None:
                passed += [option, str(value)]
        alone = fresh_process(Path(__file__).resolve(), passed)

    libraries = {}
    for name, entry in measured.items():
        model = entry["results"][-1]
        tic = time.perf_counter()
        if name == "skstruct":
            y_pred = model.predict(X_test)
        else:
            y_pred = split(model.predict(Xs_test, len_test), len_test)
        tag_seconds = time.perf_counter() - tic
        libraries[name] = {
            "fit_seconds_median": entry["median"], "fit_seconds": entry["seconds"],
            "fit_cpu_seconds_median": entry["cpu_median"],
            "fit_cpu_seconds": entry["cpu_seconds"],
            "tag_seconds": tag_seconds,
            "chunk_f1": float(span_f1_score(y_test, y_pred)),
            "token_accuracy": float(token_accuracy(y_test, y_pred)),
        }
        log(f"{name}: fit {entry['median']:.2f} s (median), chunk F1 "
            f"{100 * libraries[name]['chunk_f1']:.2f}")

    sk, peer = libraries["skstruct"], libraries.get("seqlearn")
    fit_ratio = ratio(sk["fit_seconds_median"], peer and peer["fit_seconds_median"])
    cpu_ratio = ratio(sk["fit_cpu_seconds_median"], peer and peer["fit_cpu_seconds_median"])
    run = {
        "commit": code_version(skstruct),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": command_line("benchmarks/bench_perceptron_seqlearn.py"),
        "passes": args.passes, "repeats": args.repeats, "seed": args.seed,
        "quick": args.quick,
        "n_train_sentences": len(X_train), "n_test_sentences": len(X_test),
        "n_train_tokens": int(len_train.sum()), "n_test_tokens": int(len_test.sum()),
        "n_feature_columns": int(X_train[0].shape[1]),
        "libraries": libraries,
        "peer_missing": why_no_peer,
        "peer_alone": alone,
        "fit_ratio_skstruct_over_seqlearn": fit_ratio,
        "fit_cpu_ratio_skstruct_over_seqlearn": cpu_ratio,
        "target_ratio": TARGET_RATIO,
        "meets_time_target": None if fit_ratio is None else fit_ratio <= TARGET_RATIO,
        "meets_f1_target": None if peer is None else sk["chunk_f1"] >= peer["chunk_f1"],
        "machine": machine_summary(),
        "versions": {"skstruct": skstruct.__version__,
                     "seqlearn": None if peer is None else version("seqlearn"),
                     "numba": version("numba"), "numpy": np.__version__},
        "load_average_1min": {"before": load_before, "after": load_average()},
        "total_seconds": time.perf_counter() - total_tic,
    }
    markdown = None
    if output is not None:
        runs = record_run(output / f"{STEM}.json", args.label, run)
        markdown = report(runs)
        (output / f"{STEM}.md").write_text(markdown)
    print(markdown or report({args.label: run}))
    return run


def report(runs):
    """Markdown: one table per labelled run, ``before`` first."""
    lines = [
        "# StructuredPerceptron vs seqlearn on CoNLL-2000 chunking",
        "",
        "Same sparse token features (the tutorial set, vectorized once) fed to both; "
        "averaged perceptron, shuffled passes, fit time only; medians of alternating fits "
        "in one process after a warm-up fit of each. Ratio = skstruct / seqlearn (target "
        f"≤ {TARGET_RATIO}, with chunk F1 ≥ seqlearn's).",
        "",
        "Run from the peers' virtual environment (`bash ../shared/peers/setup_peers.sh`, "
        "then `~/.cache/skstruct-peers/peers-venv/bin/pip install -e .`):",
        "",
    ]
    for label, r in sorted(runs.items(), key=lambda item: item[0] != "before"):
        sk, peer = r["libraries"]["skstruct"], r["libraries"].get("seqlearn")
        fit_ratio = r["fit_ratio_skstruct_over_seqlearn"]
        tag_ratio = ratio(sk["tag_seconds"], peer and peer["tag_seconds"])
        load = r["load_average_1min"]
        lines += [
            f"## {label}: commit {r['commit']}, {r['date']}",
            "",
            f"`~/.cache/skstruct-peers/peers-venv/bin/python {r['command']}`",
            "",
            f"{r['n_train_sentences']} train sentences ({r['n_train_tokens']} tokens), "
            f"{r['n_test_sentences']} test sentences ({r['n_test_tokens']} tokens), "
            f"{r['n_feature_columns']} feature columns; {r['passes']} passes; median of "
            f"{r['repeats']} fits each. {r['machine']['cpu']}, {r['machine']['cores']} "
            f"cores, {r['machine']['numba_threads']} numba threads; 1-minute load average "
            f"{load['before']:.1f} before, {load['after']:.1f} after (the machine was "
            "shared with other processes: above the core count, times are inflated, for "
            "both libraries alike since they alternate; the CPU time of the process, all "
            "threads, leaves out the waiting for a core); the run took "
            f"{r['total_seconds']:.0f} s.",
            "",
            "| measure | skstruct | seqlearn | ratio skstruct / seqlearn |",
            "|---|---|---|---|",
            f"| fit, {r['passes']} passes, wall (s) | {sk['fit_seconds_median']:.2f} | "
            f"{_num(peer, 'fit_seconds_median', '{:.2f}')} | {_ratio(fit_ratio)} |",
            f"| fit, CPU time of the process (s) | {_num(sk, 'fit_cpu_seconds_median', '{:.2f}')}"
            f" | {_num(peer, 'fit_cpu_seconds_median', '{:.2f}')} | "
            f"{_ratio(r.get('fit_cpu_ratio_skstruct_over_seqlearn'))} |",
            f"| tagging the test set (s) | {sk['tag_seconds']:.3f} | "
            f"{_num(peer, 'tag_seconds', '{:.3f}')} | {_ratio(tag_ratio)} |",
            f"| chunk F1 (%) | {100 * sk['chunk_f1']:.2f} | "
            f"{_num(peer, 'chunk_f1', '{:.2f}', 100)} | |",
            f"| token accuracy (%) | {100 * sk['token_accuracy']:.2f} | "
            f"{_num(peer, 'token_accuracy', '{:.2f}', 100)} | |",
            "",
            f"All fit times (s): skstruct {_list(sk['fit_seconds'])}"
            + ("" if peer is None else f"; seqlearn {_list(peer['fit_seconds'])}") + ". "
            + _verdict(r),
            "",
            *_alone_lines(r),
        ]
    return "\n".join(lines)


def _alone_lines(r):
    """The fair-baseline check: seqlearn alone in a fresh process."""
    alone, peer = r.get("peer_alone"), r["libraries"].get("seqlearn")
    if not alone or peer is None:
        return []
    if "error" in alone:
        return [f"seqlearn alone in a fresh process: failed ({alone['error']}).", ""]
    side = alone["sides"]["seqlearn"]
    sk_cpu = r["libraries"]["skstruct"]["fit_cpu_seconds_median"]
    return [f"Fair-baseline check, seqlearn alone in a fresh process (median of "
            f"{len(side['seconds'])}, load {alone['load_average_before']:.1f}): fit "
            f"{side['median']:.2f} s (CPU {side['cpu_median']:.2f} s) against "
            f"{peer['fit_seconds_median']:.2f} s (CPU {peer['fit_cpu_seconds_median']:.2f} "
            f"s) alternating here; skstruct's CPU over seqlearn alone: "
            f"**{sk_cpu / side['cpu_median']:.3f}**.", ""]


def _num(entry, key, fmt, scale=1):
    value = None if entry is None else entry.get(key)
    return "—" if value is None else fmt.format(scale * value)


def _ratio(value):
    return "—" if value is None else f"**{value:.3f}**"


def _list(values):
    return ", ".join(f"{v:.2f}" for v in values)


def _verdict(r):
    if r["peer_missing"]:
        return f"seqlearn not run ({r['peer_missing']})."
    time_ok = "meets" if r["meets_time_target"] else "does not meet"
    f1_ok = "meets" if r["meets_f1_target"] else "does not meet"
    return (f"Time {time_ok} the target ratio ≤ {r['target_ratio']}; chunk F1 {f1_ok} "
            "the target (≥ seqlearn's).")


if __name__ == "__main__":
    main()
