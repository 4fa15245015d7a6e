"""Tagging throughput from token feature dicts: skstruct's CRF versus CRFsuite.

Both tag the CoNLL-2000 test set (2,012 sentences, 47,377 tokens) from the same token
feature dicts (the sklearn-crfsuite tutorial features, built once by
``sentences_to_features``), with models trained once at the start on the training set:
sklearn-crfsuite's ``CRF`` (L-BFGS, ``c2``) and ``SequenceVectorizer`` + skstruct's
``CRF``. Training runs only ``--iterations`` L-BFGS iterations (10 by default): tagging
time does not depend on how far training went (CRFsuite keeps every attribute of the
training set with ``c1 = 0``; skstruct's weights are dense), only the F1 does, so the F1
printed is that of an unfinished model and is there as a sanity check.

Timed, alternating in one process after a warm-up (``--repeats`` rounds, medians, wall
and CPU time of this process):

- ``crfsuite``: ``sklearn_crfsuite.CRF.predict(X)`` (turning the dicts into CRFsuite
  items, then Viterbi), split into ``crfsuite items`` (``pycrfsuite.ItemSequence`` of
  every sentence) and ``crfsuite tag`` (``Tagger.tag`` on those items);
- ``skstruct``: ``CRF.predict(SequenceVectorizer.transform(X))``, split into its
  ``transform`` and ``predict`` parts, and ``skstruct model only`` (``predict`` on the
  vectorized test set, built once);
- ``skstruct hashed``: the same with ``SequenceVectorizer(backend="hash",
  n_features=--hash-features)`` (scikit-learn's ``FeatureHasher``, 2^20 columns by
  default) and a CRF trained on its output the same way;
- ``featurize``: ``sentences_to_features`` on the test sentences, the step both sides
  share when tagging from words;
- three C-level passes over the test set's (key, value) items that any vectorizer reading
  Python dicts makes, each timed alone (``floor *``): reading every value into a list
  (``map(dict.values)``), the set of the values' types, and one lookup per item in one
  dict of every fitted string value (keys ignored, so the lookup is cheaper than a
  correct one) written into an int64 array. Their sum is a lower bound on
  ``SequenceVectorizer.transform`` for a vectorizer written with Python's C-level
  iteration (the compiled walk of ``SequenceVectorizer`` reads the dicts without them);
  the report sets it against the transform time that throughput 2.5 times CRFsuite's
  would allow.

Fair-baseline check: after the alternating rounds, the script runs itself again in a
fresh process with ``--peer-alone-json`` (``_compare.fresh_process``), where only
CRFsuite's sides are trained, warmed up and timed (the same rounds); those medians are
reported beside the alternating ones (``--no-fresh-check`` skips it).

Writes ``results/tagging_throughput.md`` and ``.json`` (runs stored under ``--label``).
Run: ``python benchmarks/bench_tagging_throughput.py`` (needs ``pip install
sklearn-crfsuite``); ``--quick`` for a short run on slices.
"""

import argparse
import sys
import time
from itertools import chain, repeat
from importlib.metadata import version
from pathlib import Path

import numpy as np

import skstruct
from _compare import (ALONE_OPTION, Side, alone_summary, alternate, fresh_process,
                      load_average, peer_import, ratio, write_alone)
from _report import code_version, command_line, machine_summary, record_run
from skstruct import CRF
from skstruct.datasets import load_conll2000
from skstruct.metrics import span_f1_score
from skstruct.preprocessing import SequenceVectorizer, sentences_to_features

STEM = "tagging_throughput"
RESULTS = Path(__file__).parent / "results"


def log(line):
    print(line, file=sys.stderr, flush=True)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=10, help="L-BFGS iterations")
    parser.add_argument("--c2", type=float, default=0.1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--label", default="latest", help="name of this run in the JSON")
    parser.add_argument("--output", default=str(RESULTS))
    parser.add_argument("--quick", action="store_true",
                        help="300 training and 200 test sentences, 3 repeats")
    parser.add_argument("--no-peer", action="store_true", help="skip CRFsuite")
    parser.add_argument("--hash-features", type=int, default=2 ** 20,
                        help="columns of the hashing vectorizer's side")
    parser.add_argument("--no-fresh-check", action="store_true",
                        help="skip timing CRFsuite alone in a fresh process")
    parser.add_argument(ALONE_OPTION, default=None, metavar="FILE",
                        help="time only CRFsuite's sides and write them to FILE (the fresh "
                        "process of the fair-baseline check)")
    return parser.parse_args(argv)


def crfsuite_sides(sklearn_crfsuite, args, X_train, y_train, X_test):
    """CRFsuite's sides: ``predict`` from dicts, and its two parts."""
    import pycrfsuite

    peer = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.0, c2=args.c2,
                                max_iterations=args.iterations,
                                all_possible_transitions=True)
    peer.fit(X_train, y_train)
    items = [pycrfsuite.ItemSequence(x) for x in X_test]
    tagger = peer.tagger_
    return [Side("crfsuite", lambda: peer.predict(X_test)),
            Side("crfsuite items", lambda: [pycrfsuite.ItemSequence(x) for x in X_test]),
            Side("crfsuite tag", lambda: [tagger.tag(x) for x in items])]


def peer_alone(args, repeats, X_train, y_train, X_test):
    """The fresh process of the fair-baseline check: CRFsuite's sides alone."""
    import sklearn_crfsuite

    sides = crfsuite_sides(sklearn_crfsuite, args, X_train, y_train, X_test)
    for side in sides:
        side()
    write_alone(getattr(args, ALONE_OPTION.lstrip("-").replace("-", "_")),
                alone_summary(alternate(sides, repeats, log=log)))


def skstruct_tagger(vectorizer, crf, X):
    """Tag ``X`` (feature dicts); the result carries the time of each part."""

    def run():
        tic, cpu = time.perf_counter(), time.process_time()
        Xv = vectorizer.transform(X)
        mid, cpu_mid = time.perf_counter(), time.process_time()
        y = crf.predict(Xv)
        end, cpu_end = time.perf_counter(), time.process_time()
        return {"y": y, "transform": (mid - tic, cpu_mid - cpu),
                "predict": (end - mid, cpu_end - cpu_mid)}

    return run


def floor_passes(vectorizer, X):
    """The ``floor *`` sides: C-level passes over the items that any dict reader makes."""
    tokens = list(chain.from_iterable(X))
    values = list(chain.from_iterable(map(dict.values, tokens)))
    merged = {}
    for inner in vectorizer._index[0].values():
        merged.update(inner)

    def lookup():
        return np.fromiter(map(merged.get, values, repeat(-2)), dtype=np.int64,
                           count=len(values))

    return [Side("floor values", lambda: list(chain.from_iterable(map(dict.values, tokens)))),
            Side("floor types", lambda: set(map(type, values))),
            Side("floor lookup", lookup)]


def summarize(measured, n_tokens):
    """Per side: medians of wall and CPU seconds, tokens per second (wall)."""
    out = {}
    for name, entry in measured.items():
        out[name] = {"seconds": entry["seconds"], "cpu_seconds": entry["cpu_seconds"],
                     "median": entry["median"], "cpu_median": entry["cpu_median"],
                     "tokens_per_second": n_tokens / entry["median"]}
        first = entry["results"][0]
        if isinstance(first, dict) and "transform" in first:
            for part in ("transform", "predict"):
                walls = [r[part][0] for r in entry["results"]]
                cpus = [r[part][1] for r in entry["results"]]
                out[f"{name} {part}"] = {
                    "seconds": walls, "cpu_seconds": cpus, "median": float(np.median(walls)),
                    "cpu_median": float(np.median(cpus)),
                    "tokens_per_second": n_tokens / float(np.median(walls))}
    return out


def main(argv=None):
    args = parse_args(argv)
    repeats = 3 if args.quick else args.repeats
    train, test = load_conll2000("train"), load_conll2000("test")
    n_train, n_test = (300, 200) if args.quick else (len(train.words), len(test.words))
    train_words, train_pos, train_target = train.words[:n_train], train.pos[:n_train], \
        train.target[:n_train]
    words, pos, target = test.words[:n_test], test.pos[:n_test], test.target[:n_test]
    X_train = sentences_to_features(train_words, train_pos)
    X_test = sentences_to_features(words, pos)
    y_train = [list(t) for t in train_target]
    n_tokens = sum(map(len, X_test))
    if getattr(args, ALONE_OPTION.lstrip("-").replace("-", "_")):
        return peer_alone(args, repeats, X_train, y_train, X_test)
    load_before = load_average()

    log(f"training on {len(X_train)} sentences, {args.iterations} iterations")
    vectorizer = SequenceVectorizer()
    crf = CRF(alpha=2 * args.c2 / len(X_train), max_iter=args.iterations, tol=0.0)
    crf.fit(vectorizer.fit_transform(X_train), train_target)
    Xv_test = vectorizer.transform(X_test)
    log(f"training on hashed features ({args.hash_features} columns)")
    hasher = SequenceVectorizer(backend="hash", n_features=args.hash_features)
    crf_hashed = CRF(alpha=2 * args.c2 / len(X_train), max_iter=args.iterations, tol=0.0)
    crf_hashed.fit(hasher.fit_transform(X_train), train_target)
    sides = [Side("skstruct", skstruct_tagger(vectorizer, crf, X_test)),
             Side("skstruct hashed", skstruct_tagger(hasher, crf_hashed, X_test)),
             Side("skstruct model only", lambda: crf.predict(Xv_test)),
             Side("featurize", lambda: sentences_to_features(words, pos))]
    sides += floor_passes(vectorizer, X_test)

    sklearn_crfsuite, missing = (None, "--no-peer") if args.no_peer else (
        peer_import("sklearn_crfsuite"))
    if sklearn_crfsuite is not None:
        sides += crfsuite_sides(sklearn_crfsuite, args, X_train, y_train, X_test)

    for side in sides:  # warm-up: compilation or cache loading, first calls
        side()
    log(f"timing {repeats} rounds, alternating")
    measured = alternate(sides, repeats, log=log)
    timings = summarize(measured, n_tokens)
    f1 = {"skstruct": span_f1_score(target, measured["skstruct"]["results"][0]["y"]),
          "skstruct hashed": span_f1_score(target,
                                           measured["skstruct hashed"]["results"][0]["y"])}
    if "crfsuite" in measured:
        f1["crfsuite"] = span_f1_score(target, measured["crfsuite"]["results"][0])

    def speedup(numerator, denominator, key="median"):
        if numerator not in timings or denominator not in timings:
            return None
        return ratio(timings[numerator][key], timings[denominator][key])

    paired = None  # median over rounds of CRFsuite's time / skstruct's time, same round
    if "crfsuite" in measured:
        paired = {kind: float(np.median(np.divide(measured["crfsuite"][key],
                                                  measured["skstruct"][key])))
                  for kind, key in (("wall", "seconds"), ("cpu", "cpu_seconds"))}
    alone = None
    if "crfsuite" in measured and not args.no_fresh_check:
        log("timing CRFsuite alone in a fresh process")
        passed = ["--iterations", str(args.iterations), "--c2", str(args.c2),
                  "--repeats", str(repeats)] + (["--quick"] if args.quick else [])
        alone = fresh_process(Path(__file__).resolve(), passed)
    featurize = timings["featurize"]["median"]
    from_words = None
    if "crfsuite" in timings:
        from_words = ratio(timings["crfsuite"]["median"] + featurize,
                           timings["skstruct"]["median"] + featurize)
    run = {
        "command": command_line("benchmarks/bench_tagging_throughput.py"),
        "code": code_version(skstruct),
        "machine": machine_summary(),
        "load_average": {"before": load_before, "after": load_average()},
        "versions": {"skstruct": skstruct.__version__, "numpy": np.__version__,
                     **({"sklearn-crfsuite": version("sklearn-crfsuite"),
                         "python-crfsuite": version("python-crfsuite")}
                        if sklearn_crfsuite is not None else {})},
        "peer_missing": missing,
        "iterations": args.iterations, "repeats": repeats,
        "test_sentences": len(X_test), "test_tokens": n_tokens,
        "train_sentences": len(X_train),
        "timings": timings,
        "speedup_from_dicts": speedup("crfsuite", "skstruct"),
        "speedup_from_dicts_cpu": speedup("crfsuite", "skstruct", "cpu_median"),
        "speedup_from_dicts_hashed": speedup("crfsuite", "skstruct hashed"),
        "hash_features": args.hash_features,
        "speedup_model_only": speedup("crfsuite tag", "skstruct model only"),
        "speedup_from_dicts_paired": paired,
        "speedup_from_words": from_words,
        "peer_alone": alone,
        "chunk_f1": f1,
    }
    output = Path(args.output)
    runs = record_run(output / f"{STEM}.json", args.label, run)
    (output / f"{STEM}.md").write_text(report(runs))
    print(report({args.label: run}))
    return run


ROWS = [
    ("crfsuite", "CRFsuite `predict` from dicts"),
    ("crfsuite items", "· dicts to `ItemSequence`"),
    ("crfsuite tag", "· `Tagger.tag` on items (model only)"),
    ("skstruct", "skstruct `transform` + `predict` from dicts"),
    ("skstruct transform", "· `SequenceVectorizer.transform`"),
    ("skstruct predict", "· `CRF.predict` on the matrices"),
    ("skstruct model only", "`CRF.predict` on prebuilt matrices (model only), timed alone"),
    ("skstruct hashed", "skstruct with `SequenceVectorizer(backend=\"hash\")`: `transform` "
                        "+ `predict` from dicts"),
    ("skstruct hashed transform", "· `SequenceVectorizer.transform` (hashing)"),
    ("skstruct hashed predict", "· `CRF.predict` on the hashed matrices"),
    ("featurize", "`sentences_to_features` (both sides, from words)"),
    ("floor values", "floor: all values into a list (`map(dict.values)`)"),
    ("floor types", "floor: the set of the values' types"),
    ("floor lookup", "floor: one lookup per item in one dict, keys ignored, into int64"),
]

FLOOR = ("floor values", "floor types", "floor lookup")


def alone_lines(run):
    """The fair-baseline check: CRFsuite alone in a fresh process, beside its times here."""
    alone, t = run.get("peer_alone"), run["timings"]
    if not alone or "crfsuite" not in t:
        return []
    if "error" in alone:
        return [f"- CRFsuite alone in a fresh process: failed ({alone['error']})."]
    lines = []
    for key in ("crfsuite", "crfsuite items", "crfsuite tag"):
        mine, theirs = t.get(key), alone["sides"].get(key)
        if mine is None or theirs is None:
            continue
        lines.append(
            f"- Fair-baseline check, `{key}` alone in a fresh process: "
            f"{theirs['median'] * 1e3:.0f} ms (CPU {theirs['cpu_median'] * 1e3:.0f} ms) "
            f"against {mine['median'] * 1e3:.0f} ms (CPU {mine['cpu_median'] * 1e3:.0f} ms) "
            f"alternating here; skstruct's CPU throughput over CRFsuite alone: "
            f"{theirs['cpu_median'] / t['skstruct']['cpu_median']:.2f}x."
            if key == "crfsuite" else
            f"- Fair-baseline check, `{key}` alone: {theirs['median'] * 1e3:.0f} ms "
            f"(CPU {theirs['cpu_median'] * 1e3:.0f} ms) against {mine['median'] * 1e3:.0f} "
            f"ms (CPU {mine['cpu_median'] * 1e3:.0f} ms).")
    return lines


def report(runs):
    lines = [
        "# Tagging throughput from feature dicts: skstruct vs CRFsuite",
        "",
        "CoNLL-2000 test set, tutorial token features built once by "
        "`sentences_to_features`; models trained once at the start (few L-BFGS iterations: "
        "tagging time does not depend on them). Sides alternate in one process after a "
        "warm-up; medians of the rounds, wall time (CPU time of the process in brackets). "
        "Produced by `python benchmarks/bench_tagging_throughput.py`.",
        "",
    ]
    for label, run in runs.items():
        t = run["timings"]
        load = run["load_average"]
        lines += [
            f"## {label}",
            "",
            f"Command: `{run['command']}`; code {run['code']}; "
            f"{run['machine']['cpu']}, {run['machine']['cores']} cores; load average "
            f"{load['before']:.2f} before, {load['after']:.2f} after; "
            f"{run['test_tokens']:,} tokens, {run['iterations']} training iterations, "
            f"{run['repeats']} rounds.",
            "",
            "| step | time | tokens/s |",
            "|---|---|---|",
        ]
        for key, name in ROWS:
            if key not in t:
                continue
            entry = t[key]
            cpu = "" if entry["cpu_median"] is None else f" ({entry['cpu_median'] * 1e3:.0f} ms)"
            lines.append(f"| {name} | {entry['median'] * 1e3:.0f} ms{cpu} | "
                         f"{entry['tokens_per_second']:,.0f} |")

        def fmt(x):
            return "n/a" if x is None else f"{x:.2f}x"

        f1 = ", ".join(f"{k} {100 * v:.2f}" for k, v in run["chunk_f1"].items())
        per_round = run.get("speedup_from_dicts_paired")
        paired = "n/a" if not per_round else (
            f"{fmt(per_round['wall'])} wall, {fmt(per_round['cpu'])} CPU")
        lines += [
            "",
            f"- skstruct's throughput over CRFsuite's, from dicts: "
            f"**{fmt(run['speedup_from_dicts_cpu'])} CPU**, {fmt(run['speedup_from_dicts'])}"
            f" wall (ratios of the medians); median of the per-round ratios: {paired}; model "
            f"only: {fmt(run['speedup_model_only'])}; from words (featurization added to "
            f"both): {fmt(run['speedup_from_words'])}; with the hashing vectorizer "
            f"({run.get('hash_features', 0):,} columns; its own model, trained the same "
            f"way): {fmt(run.get('speedup_from_dicts_hashed'))}.",
            f"- Chunk F1 of these briefly trained models (sanity check only): {f1}.",
            *alone_lines(run),
        ]
        if all(key in t for key in FLOOR) and "crfsuite" in t:
            floor = sum(t[key]["median"] for key in FLOOR)
            allowed = t["crfsuite"]["median"] / 2.5 - t["skstruct predict"]["median"]
            lines.append(
                f"- Lower bound of a dict reader built on C-level iteration (sum of the three "
                f"floor passes): {floor * 1e3:.0f} ms, against {t['skstruct transform']['median'] * 1e3:.0f} ms "
                f"for `SequenceVectorizer.transform` (whose compiled walk over the dicts is not "
                f"bound by them); throughput 2.5 times CRFsuite's needs the transform within "
                f"{allowed * 1e3:.0f} ms (CRFsuite's predict / 2.5 minus skstruct's "
                f"predict).")
        lines.append("")
        if run.get("peer_missing"):
            lines += [f"- CRFsuite not run: {run['peer_missing']}.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
