"""How the cost of exact loss-augmented MAP on chains grows with the sequence length.

``ChainDecoder.loss_augmented_map`` on batches of random first-order chains (random
unary, transition, start and end scores; random gold labels, state 0 the "outside" state
with probability 1/2, the others uniform; every state but 0 positive for the counting
losses), on one thread by default (``--threads``), for:

- Hamming loss, margin rescaling: Viterbi on cost-augmented unaries, O(M N^2);
- Hamming loss, slack rescaling: message passing over the mismatch count, O(M^2 N^2), on
  versions of skstruct that support it (before, the call raised; the error is recorded
  and the configuration skipped);
- F1 (``FBetaLoss``), margin and slack rescaling: constrained message passing over the
  (true positive, false positive) counts, O(M^3 N^2);
- label count (``LabelCountLoss``), margin rescaling: message passing over the number of
  predicted positives, O(M^2 N^2);

with M the sequence length and N the number of states.

The backtracking pass of the counting losses allocates O(M N R) memory per sequence
(R = number of statistic values), so the time depends on whether the allocator hands
back memory it already has or fresh pages from the kernel, and glibc decides that from
the history of the process (its mmap threshold adapts). To make runs reproducible every
configuration is measured under two pinned allocator regimes (``--allocators``, glibc's
``mallopt``): *warm*, buffers up to 32 MB reused from the heap (the steady state of a
training loop; the compute cost), and *cold*, every buffer above 128 kB freshly mapped and
page-faulted on each call (a process's first calls, and always for buffers above 32 MB).

Every configuration is warmed up once (compilation, or loading the numba cache) on a tiny
batch; then, for each length, a probe batch of one sequence per thread predicts the time
of a full batch: a length whose full batch would take longer than ``--max-seconds`` is
dropped, with every larger one, and the report says so. Each timing is the median of
``--repeats`` measurements (fewer, at least ``--min-repeats``, when a call takes long: each
cell gets about ``--cell-budget`` seconds), taken round-robin over the lengths so that a
slowdown caused by other processes hits all lengths alike; fast calls are repeated inside a
measurement to last at least 50 ms. The growth exponent in M is the least-squares slope of
log(time) against log(M) over the lengths >= ``--fit-from``.

Each configuration is also checked once against enumeration (``BruteForceDecoder``) on a
few tiny chains (``--no-brute-force`` to skip): the loss-augmented objectives of both
answers must agree; the time of that check is recorded.

Run: ``python benchmarks/bench_loss_augmented_scaling.py``. Writes
``results/loss_augmented_scaling.md`` and ``.json`` next to this file.
"""

import argparse
import ctypes
import ctypes.util
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import numba
import numpy as np

import skstruct
from skstruct.decoders import BruteForceDecoder, ChainDecoder, ChainScores
from skstruct.decoders._chain.counting import (
    _loss_counters,
    best_with_statistic,
    statistic_table,
)
from skstruct.losses import FBetaLoss, HammingLoss, LabelCountLoss
from skstruct.utils._parallel import MIN_WORK_PER_THREAD

from _report import cpu_name, format_time, git_commit

RESULTS = Path(__file__).parent / "results"


def _positive(n_states):
    return np.arange(n_states) > 0


#: name, loss factory (n_states -> TaskLoss), rescaling, expected exponent in M
CONFIGS = [
    ("Hamming + margin", lambda n: HammingLoss(), "margin", 1),
    ("Hamming + slack", lambda n: HammingLoss(), "slack", 2),
    ("F1 + margin", lambda n: FBetaLoss().with_positive_states(_positive(n)), "margin", 3),
    ("F1 + slack", lambda n: FBetaLoss().with_positive_states(_positive(n)), "slack", 3),
    ("label count + margin",
     lambda n: LabelCountLoss().with_positive_states(_positive(n)), "margin", 2),
]

# --- allocator regimes (glibc mallopt) ---
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
ALLOCATOR_REGIMES = {
    "warm": "buffers up to 32 MB reused from the heap, never returned to the kernel",
    "cold": "every buffer above 128 kB freshly mapped and page-faulted on each call",
    "default": "glibc's adaptive thresholds, which depend on the history of the process",
}


def _libc():
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    libc = ctypes.CDLL(name)
    return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None


def set_allocator(regime):
    """Pin glibc's malloc thresholds; False where that is impossible (not glibc)."""
    if regime == "default":
        return True
    libc = _libc()
    if libc is None:
        return False
    if regime == "warm":
        ok = libc.mallopt(_M_MMAP_THRESHOLD, 32 * 2**20) and libc.mallopt(
            _M_TRIM_THRESHOLD, 2**30)
    else:
        ok = libc.mallopt(_M_MMAP_THRESHOLD, 128 * 2**10) and libc.mallopt(
            _M_TRIM_THRESHOLD, 128 * 2**10)
        libc.malloc_trim(0)
    return bool(ok)


def random_batch(rng, n_sequences, length, n_states):
    """Random ChainScores with equal-length sequences and random gold labels."""
    offsets = np.arange(n_sequences + 1) * length
    n_tokens = n_sequences * length
    scores = ChainScores(
        rng.normal(size=(n_tokens, n_states)), offsets, rng.normal(size=(n_states, n_states)),
        rng.normal(size=n_states), rng.normal(size=n_states),
    )
    outside = rng.random(n_tokens) < 0.5
    y_true = np.where(outside, 0, rng.integers(1, n_states, size=n_tokens))
    return scores, y_true.astype(np.int64)


def threads_used(loss, rescaling, scores):
    """The thread count skstruct's work heuristic (utils._parallel) picks for this call."""
    available = numba.get_num_threads()
    if rescaling == "margin" and hasattr(loss, "unary_costs"):
        work = scores.unary.size * scores.n_states
    else:  # constrained message passing; Hamming + slack counts mismatches (1 counter)
        n_counters = len(getattr(loss, "statistic_names", ("mismatches",)))
        work = int(((scores.lengths + 1) ** n_counters).sum()) * scores.n_states**2
    return max(1, min(available, work // MIN_WORK_PER_THREAD))


def measure(function, repeats, min_time=0.05):
    """Seconds per call over ``repeats`` measurements (after the caller's warm-up).

    Returns the median and the minimum (the least disturbed by other processes), all the
    times and the number of calls per measurement.
    """
    tic = time.perf_counter()
    function()
    first = time.perf_counter() - tic
    number = max(1, math.ceil(min_time / max(first, 1e-9)))
    times = []
    while len(times) < repeats:
        tic = time.perf_counter()
        for _ in range(number):
            function()
        times.append((time.perf_counter() - tic) / number)
    return float(np.median(times)), float(np.min(times)), times, number


def objective(decoder, scores, y_true, y_pred, loss, rescaling):
    theta = decoder.score_outputs(scores, y_pred)
    delta = loss(y_true, y_pred, scores.offsets)
    if rescaling == "margin":
        return theta + delta
    return delta * (1.0 + theta - decoder.score_outputs(scores, y_true))


def brute_force_check(rng, make_loss, rescaling, n_states, length, n_sequences=3):
    scores, y_true = random_batch(rng, n_sequences, length, n_states)
    loss = make_loss(n_states)
    decoder = ChainDecoder()
    fast = decoder.loss_augmented_map(scores, y_true, loss, rescaling)
    tic = time.perf_counter()
    slow = BruteForceDecoder().loss_augmented_map(scores, y_true, loss, rescaling)
    seconds = time.perf_counter() - tic
    found = objective(decoder, scores, y_true, fast, loss, rescaling)
    best = objective(decoder, scores, y_true, slow, loss, rescaling)
    gap = np.abs(found - best)
    return {"length": length, "n_sequences": n_sequences, "outputs": n_states**length,
            "seconds_per_sequence": seconds / n_sequences, "max_objective_gap": float(gap.max()),
            "agrees": bool(np.all(gap <= 1e-9 * (1 + np.abs(best))))}


def pass_breakdown(rng, n_states, length, n_sequences):
    """Seconds per sequence of the two passes of constrained message passing for F1."""
    scores, y_true = random_batch(rng, n_sequences, length, n_states)
    loss = FBetaLoss().with_positive_states(_positive(n_states))
    increments, caps = _loss_counters(loss, y_true, scores)
    targets = np.zeros(n_sequences, dtype=np.int64)
    table = measure(lambda: statistic_table(scores, increments, caps), 5)[0]
    back = measure(lambda: best_with_statistic(scores, increments, caps, targets), 5)[0]
    values = int(np.prod(caps[0] + 1))
    return {"length": length, "n_states": n_states, "statistic_values": values,
            "n_sequences": n_sequences,
            "table_seconds_per_sequence": table / n_sequences,
            "backtrack_seconds_per_sequence": back / n_sequences,
            "backtrack_megabytes_per_sequence": length * n_states * values * 24 / 1e6}


def fit_exponent(lengths, seconds, fit_from):
    points = [(m, s) for m, s in zip(lengths, seconds) if m >= fit_from and s is not None]
    if len(points) < 2:
        return None, len(points)
    x, y = np.log([p[0] for p in points]), np.log([p[1] for p in points])
    return float(np.polyfit(x, y, 1)[0]), len(points)


def run_config(rng, args, name, make_loss, rescaling, n_states):
    """Time one configuration at every length, the measurements interleaved across lengths.

    Round-robin over the lengths (one measurement of each per round) spreads any slowdown
    caused by other processes over all lengths alike, which keeps the ratios between
    lengths, and so the fitted exponent, steadier than measuring one length after another.
    """
    decoder = ChainDecoder()
    loss = make_loss(n_states)
    row = {"config": name, "n_states": n_states, "rescaling": rescaling, "cells": {}}
    warm_scores, warm_y = random_batch(rng, 2, 3, n_states)
    try:
        tic = time.perf_counter()
        decoder.loss_augmented_map(warm_scores, warm_y, loss, rescaling)
        row["warmup_seconds"] = time.perf_counter() - tic
    except ValueError as error:
        row["unsupported"] = str(error)
        return row
    n_threads = numba.get_num_threads()
    calls, dropped = {}, False
    for length in args.lengths:
        cell = row["cells"][str(length)] = {}
        if dropped:
            cell["dropped"] = "a smaller length was dropped"
            continue
        probe_scores, probe_y = random_batch(rng, n_threads, length, n_states)
        tic = time.perf_counter()
        decoder.loss_augmented_map(probe_scores, probe_y, loss, rescaling)
        probe = time.perf_counter() - tic
        estimate = probe * args.n_sequences / n_threads
        cell["probe_seconds_per_sequence"] = probe / n_threads
        cell["estimated_batch_seconds"] = estimate
        if estimate > args.max_seconds:
            cell["dropped"] = (f"estimated {estimate:.0f} s per batch of {args.n_sequences} "
                               f"> {args.max_seconds:g} s")
            dropped = True
            continue
        scores, y_true = random_batch(rng, args.n_sequences, length, n_states)
        call = (lambda s=scores, y=y_true: decoder.loss_augmented_map(s, y, loss, rescaling))
        tic = time.perf_counter()
        call()  # first call at this size; also sets the calls per measurement
        first = time.perf_counter() - tic
        calls[length] = (call, max(1, math.ceil(0.05 / max(first, 1e-9))))
        cell["repeats"] = int(np.clip(args.cell_budget / max(first, 1e-9), args.min_repeats,
                                      args.repeats))
        cell["batch_seconds"], cell["calls_per_measurement"] = [], calls[length][1]
        cell["threads"] = threads_used(loss, rescaling, scores)
    for _ in range(args.repeats):
        for length, (call, number) in calls.items():
            cell = row["cells"][str(length)]
            if len(cell["batch_seconds"]) < cell["repeats"]:
                tic = time.perf_counter()
                for _ in range(number):
                    call()
                cell["batch_seconds"].append((time.perf_counter() - tic) / number)
    for length in calls:
        cell = row["cells"][str(length)]
        cell["seconds_per_sequence"] = float(np.median(cell["batch_seconds"])) / args.n_sequences
        cell["min_seconds_per_sequence"] = min(cell["batch_seconds"]) / args.n_sequences
    return row


def add_fits(row, lengths, fit_from):
    def column(key):
        return [row["cells"].get(str(m), {}).get(key) for m in lengths]

    seconds = column("seconds_per_sequence")
    row["fitted_exponent"], row["fit_points"] = fit_exponent(lengths, seconds, fit_from)
    row["fitted_exponent_min"] = fit_exponent(
        lengths, column("min_seconds_per_sequence"), fit_from)[0]
    row["local_exponents"] = {
        f"{a}-{b}": float(np.log(tb / ta) / np.log(b / a))
        for (a, ta), (b, tb) in zip(zip(lengths, seconds), zip(lengths[1:], seconds[1:]))
        if ta is not None and tb is not None}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-sequences", type=int, default=64, help="sequences per batch")
    parser.add_argument("--states", type=int, nargs="+", default=[5, 23])
    parser.add_argument("--lengths", type=int, nargs="+", default=[5, 10, 20, 40, 80])
    parser.add_argument("--allocators", nargs="+", default=["warm", "cold"],
                        choices=sorted(ALLOCATOR_REGIMES),
                        help="allocator regimes to measure, in order ('default' only first)")
    parser.add_argument("--repeats", type=int, default=9, help="measurements per cell (max)")
    parser.add_argument("--min-repeats", type=int, default=5,
                        help="measurements per cell of the slow cells")
    parser.add_argument("--cell-budget", type=float, default=12.0,
                        help="seconds per cell that set the repeats of slow cells")
    parser.add_argument("--max-seconds", type=float, default=20.0,
                        help="drop a length (and larger) whose batch would take longer")
    parser.add_argument("--fit-from", type=int, default=20,
                        help="fit the exponent over the lengths >= this")
    parser.add_argument("--threads", type=int, default=1,
                        help="numba threads; 1 (default) keeps skstruct's thread heuristic "
                        "from changing the thread count across lengths; 0: numba's default")
    parser.add_argument("--no-brute-force", dest="brute_force", action="store_false")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if "default" in args.allocators[1:]:
        parser.error("'default' can only be the first allocator regime: pinning the "
                     "thresholds cannot be undone.")
    if args.threads > 0:
        numba.set_num_threads(args.threads)
    args.lengths = sorted(args.lengths)
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    load_before = os.getloadavg()

    rows, checks, breakdown, regimes = [], [], [], []
    for regime in args.allocators:
        if not set_allocator(regime):
            print(f"cannot pin the allocator ({regime}): not glibc; skipped", flush=True)
            continue
        regimes.append(regime)
        for n_states in args.states:
            for name, make_loss, rescaling, expected in CONFIGS:
                print(f"[{regime}] {name}, N = {n_states} ...", flush=True)
                row = run_config(rng, args, name, make_loss, rescaling, n_states)
                row["allocator"], row["expected_exponent"] = regime, expected
                add_fits(row, args.lengths, args.fit_from)
                rows.append(row)
                if args.brute_force and len(regimes) == 1 and "unsupported" not in row:
                    tiny = 4 if n_states <= 6 else 3
                    check = brute_force_check(rng, make_loss, rescaling, n_states, tiny)
                    check.update(config=name, n_states=n_states)
                    checks.append(check)
            # where F1's time goes: the statistic-table pass vs the back-pointer pass
            f1 = rows[-3]
            assert f1["config"] == "F1 + margin"
            measured = [m for m in args.lengths
                        if "seconds_per_sequence" in f1["cells"].get(str(m), {})]
            for length in measured[-2:]:
                part = pass_breakdown(rng, n_states, length, max(2, numba.get_num_threads()))
                part["allocator"] = regime
                breakdown.append(part)

    results = {
        "n_sequences": args.n_sequences,
        "states": args.states,
        "lengths": args.lengths,
        "allocators": regimes,
        "repeats": args.repeats,
        "min_repeats": args.min_repeats,
        "cell_budget": args.cell_budget,
        "max_seconds": args.max_seconds,
        "fit_from": args.fit_from,
        "seed": args.seed,
        "rows": rows,
        "brute_force": checks,
        "f1_passes": breakdown,
        "machine": machine(),
        "versions": {"skstruct": skstruct.__version__, "numba": numba.__version__,
                     "numpy": np.__version__, "python": platform.python_version()},
        "commit": git_commit(),
        "command": "python " + " ".join([os.path.relpath(sys.argv[0])] + sys.argv[1:]),
        "total_seconds": time.perf_counter() - started,
        "load_average_1min": {"before": load_before[0], "after": os.getloadavg()[0]},
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "loss_augmented_scaling.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / "loss_augmented_scaling.md").write_text(report(results))
    print(report(results))


def machine():
    cpu = cpu_name()
    return {"cpu": cpu, "cores": os.cpu_count(), "numba_threads": numba.get_num_threads(),
            "numba_default_threads": numba.config.NUMBA_NUM_THREADS,
            "threading_layer": threading_layer(), "platform": platform.platform()}


def threading_layer():
    try:
        return numba.threading_layer()
    except ValueError:  # no parallel kernel has run
        return numba.config.THREADING_LAYER


def _fmt(x):
    return "–" if x is None else f"{x:.2f}"


def _time_table(r, regime, notes):
    lengths = r["lengths"]
    show_threads = r["machine"]["numba_threads"] > 1
    lines = [
        "| loss + rescaling | N | " + " | ".join(f"M = {m}" for m in lengths)
        + (" | threads by M |" if show_threads else " |"),
        "|---|---|" + "---|" * (len(lengths) + show_threads),
    ]
    for row in r["rows"]:
        if row["allocator"] != regime:
            continue
        head = f"| {row['config']} | {row['n_states']} |"
        if "unsupported" in row:
            lines.append(head + " unsupported |" + " |" * (len(lengths) - 1 + show_threads))
            notes.setdefault(f"{row['config']} (N = {row['n_states']}): skipped, "
                             f"`ChainDecoder` raises: \"{row['unsupported']}\"")
            continue
        cells, threads = [], []
        for m in lengths:
            cell = row["cells"].get(str(m), {})
            where = f"{row['config']}, N = {row['n_states']}, M = {m}, {regime} allocator"
            if "seconds_per_sequence" in cell:
                cells.append(format_time(cell["seconds_per_sequence"]))
                threads.append(str(cell["threads"]))
            elif "estimated_batch_seconds" in cell:
                probe = format_time(cell["probe_seconds_per_sequence"])
                cells.append(f"dropped (~{probe})")
                threads.append("–")
                notes.setdefault(
                    f"{where}: dropped, {cell['dropped']} (single probe call: {probe} per "
                    "sequence, in parentheses, not used in the fit).")
            else:
                cells.append("dropped")
                threads.append("–")
                notes.setdefault(f"{where}: dropped (a smaller length exceeded the limit).")
        lines.append(head + " " + " | ".join(cells)
                     + (" | " + ",".join(threads) + " |" if show_threads else " |"))
    return lines + [""]


def report(r):
    m = r["machine"]
    lines = [
        "# Loss-augmented MAP on chains: time against sequence length",
        "",
        f"`ChainDecoder.loss_augmented_map` on random batches of {r['n_sequences']} chains of "
        f"equal length M with N states; time **per sequence** (batch time / "
        f"{r['n_sequences']}), median of {r['min_repeats']} to {r['repeats']} measurements "
        "(fewer for slow cells), taken round-robin over the lengths, after one warm-up call "
        "per configuration and one per length. Random unary, "
        "transition, start and end scores (standard normal); gold labels: state 0 "
        "(\"outside\", the only non-positive state for F1 and label count) with probability "
        "1/2, the other states uniform. "
        f"{m['cpu']}, {m['cores']} cores, {m['numba_threads']} numba thread(s) of "
        f"{m['numba_default_threads']} ({m['threading_layer']} layer); skstruct "
        f"{r['versions']['skstruct']} at {r['commit']}, numba {r['versions']['numba']}, "
        f"numpy {r['versions']['numpy']}, Python {r['versions']['python']}. Total run time "
        f"{r['total_seconds']:.0f} s; 1-minute load average "
        f"{r['load_average_1min']['before']:.2f} before the run, "
        f"{r['load_average_1min']['after']:.2f} after it.",
        "",
    ]
    if max(r["load_average_1min"].values()) > m["cores"] + 0.5:
        lines += [
            "**Other processes were using the CPU during this run** (load average above): "
            "absolute times are inflated and noisy, and the fitted exponents less reliable.",
            "",
        ]
    lines += [f"Produced by `{r['command']}`.", ""]
    notes = {}  # insertion-ordered set
    for regime in r["allocators"]:
        lines += [f"## Time per sequence, {regime} allocator", "",
                  f"*{regime}*: {ALLOCATOR_REGIMES[regime]}.", ""]
        lines += _time_table(r, regime, notes)
    if r["machine"]["numba_threads"] > 1:
        lines += [
            "*threads by M*: the numba threads skstruct's work heuristic "
            "(`utils._parallel.threads_for`, one thread per 10^6 multiply-adds) lets each "
            "call use, for M in the order of the columns; where it changes inside the fit "
            "range the exponent is biased down (`--threads 1` gives clean exponents).",
            "",
        ]
    if notes:
        lines += ["Dropped and skipped:", "", *(f"- {n}" for n in notes), ""]

    lines += [
        f"## Growth exponent in M (least squares on log time vs log M, M >= {r['fit_from']})",
        "",
        "Fitted on the medians; *minima* fits the fastest measurement of each cell instead "
        "(less sensitive to other processes). Local slopes are between consecutive lengths, "
        "on the medians.",
        "",
        "| loss + rescaling | N | "
        + " | ".join(f"{a} allocator" for a in r["allocators"])
        + " | expected | points | " + " | ".join(f"{a}, minima" for a in r["allocators"])
        + " | local slopes (" + r["allocators"][0] + ") |",
        "|---|---|" + "---|" * (2 * len(r["allocators"]) + 3),
    ]
    first = [row for row in r["rows"] if row["allocator"] == r["allocators"][0]]
    for row in first:
        if "unsupported" in row:
            continue
        same = [next(o for o in r["rows"] if o["allocator"] == a
                     and o["config"] == row["config"] and o["n_states"] == row["n_states"])
                for a in r["allocators"]]
        local = ", ".join(f"{k}: {v:.2f}" for k, v in row["local_exponents"].items())
        lines.append(
            f"| {row['config']} | {row['n_states']} | "
            + " | ".join(_fmt(o["fitted_exponent"]) for o in same)
            + f" | {row['expected_exponent']} | {row['fit_points']} | "
            + " | ".join(_fmt(o["fitted_exponent_min"]) for o in same) + f" | {local} |")
    lines.append("")

    if r["f1_passes"]:
        lines += [
            f"## Where F1's time goes (F1 + margin, batches of "
            f"{r['f1_passes'][0]['n_sequences']}, per sequence)",
            "",
            "The F1 call runs two passes of the same O(M N² R) dynamic program over "
            "R = (M + 1)² statistic values: `statistic_table` (two rows of scores, "
            "O(N R) memory) and `best_with_statistic` (the whole table plus two back-pointer "
            "arrays for the backtrack: M·N·R float64 and 2·M·N·R int64, 24 bytes per entry).",
            "",
            "| allocator | N | M | R | table pass | backtrack pass | "
            "backtrack memory per sequence |",
            "|---|---|---|---|---|---|---|",
        ]
        for b in r["f1_passes"]:
            lines.append(f"| {b['allocator']} | {b['n_states']} | {b['length']} | "
                         f"{b['statistic_values']} | "
                         f"{format_time(b['table_seconds_per_sequence'])} | "
                         f"{format_time(b['backtrack_seconds_per_sequence'])} | "
                         f"{b['backtrack_megabytes_per_sequence']:.3g} MB |")
        lines.append("")
    if r["brute_force"]:
        lines += [
            "## Check against enumeration (BruteForceDecoder)",
            "",
            "Loss-augmented objective (θ + Δ, or Δ(1 + θ − θ_gold)) of the decoder's answer vs "
            "the brute-force answer on a few tiny random chains.",
            "",
            "| loss + rescaling | N | M | outputs per chain | brute force per sequence | "
            "max objective gap | agrees |",
            "|---|---|---|---|---|---|---|",
        ]
        for c in r["brute_force"]:
            lines.append(f"| {c['config']} | {c['n_states']} | {c['length']} | "
                         f"{c['outputs']:,} | {format_time(c['seconds_per_sequence'])} | "
                         f"{c['max_objective_gap']:.1e} | {'yes' if c['agrees'] else 'NO'} |")
        lines.append("")
    lines += [
        "Notes.",
        "",
        "- Each call also pays a fixed cost in Python (cost or increment arrays, a new score "
        "container, thread settings, the statistic table's bookkeeping), spread over the "
        f"{r['n_sequences']} sequences; it dominates at small M for the cheap cases (Hamming, "
        "label count), which is why the exponent is fitted over the larger lengths only; the "
        "local slopes show the approach to the asymptote.",
        "- The counting losses (F1, label count, and Hamming + slack through the mismatch "
        "count) run the dynamic program twice: `statistic_table` for μ(l), then "
        "`best_with_statistic` to recover the labeling, which keeps the whole table and two "
        "back-pointer arrays, 24 bytes × M·N·R per sequence (R = (M + 1)² for F1): memory "
        "cubic in M. Under the cold allocator that memory is page-faulted anew on every "
        "call, a cost that grows with it; glibc's default behaviour switches between the two "
        "regimes depending on what the process allocated before (its mmap threshold adapts "
        "up to 32 MB), so unpinned timings depend on the order of the measurements.",
        "- Margin and slack rescaling run the same two passes and differ only in the "
        "objective evaluated on the table, so their times should match; differences are "
        "noise.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
