"""Chain kernels against the machine: GFLOP/s of forward-backward and Viterbi next to a
measured peak.

Two peak loops of fused multiply-adds with no memory traffic, the larger of the two being
the peak the kernels are compared with:

- ``fma_peak``: every element of a (4, 1024) array goes through 32 dependent
  ``v = v * a + b``, four rows at a time (the loop over elements vectorizes, the 32 steps
  unroll), i.e. four independent vector chains: on a core whose FMA latency times its
  FMA throughput exceeds four, this stays below the core's peak;
- ``fma_peak_vectors``: eight independent chains of eight-lane vectors
  (:mod:`skstruct.decoders._chain.simd`), enough to keep two FMA units of four-cycle
  latency busy.

The chain kernels run on the CoNLL-2000 training set's sequence lengths (8,936
sentences, 211,727 tokens) with random scores at 9, 22 and 45 states (rows of 16, 24 and
48):

- forward-backward as the CRF objective runs it (``crf_forward_backward`` below: the
  chunks' sequences four at a time through ``scaled_forward_backward_group`` with gold
  labels, example weights and one transition sum per chunk, exactly as
  ``skstruct.features._chain_crf._lane_pass`` calls it, the unary scores copied into the
  chunk's rows where the objective computes them): 3 S² multiply-adds a token (forward
  α̂ expo, backward expo β̂, and the transition sums), counted as 6 S² flops (an FMA is
  two);
- the decoder's forward-backward with marginals (``forward_backward_scaled``: the same
  dynamic program, with per-sequence transition marginals as outputs), counted the same;
- Viterbi (``viterbi``, what ``predict`` runs): S² additions and S² comparisons a token,
  counted as 2 S².

``--against REV`` also loads ``skstruct/decoders/_chain/kernels.py`` as it was at the git
revision REV (as a module of the package, so that its relative imports resolve) and
times its kernels alternately with the current ones, call by call, in this process;
each sequence's results must agree (the report gives the largest difference).

CPU time (``time.process_time``), best of ``--repeats``, one thread (per-core figures) and
all threads; the load average is printed with the numbers. Writes
``results/chain_kernels_flops.md`` and ``.json`` next to this file.

Roofline: the memory bandwidth is measured by a compiled triad (``a = b + s c``) over
arrays of the size of the kernels' inputs (n_tokens by S float64), bytes counted as 3 per
element times 8 (read b, c; write a) in CPU time; a kernel's arithmetic intensity is its
flops over the bytes it must move at the least (forward-backward: the unary scores in, the
marginals out, the S² transition marginals of each sequence out; Viterbi: the unary scores
in, one int64 label out a token), and its roof is min(peak, intensity x bandwidth).

Run: ``python benchmarks/bench_chain_kernels_flops.py`` (``--states 22`` for one size,
``--against ee042a3`` for a before/after)
"""

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np
from numba import njit, prange

from skstruct.datasets import load_conll2000
from skstruct.decoders._chain import kernels
from skstruct.decoders._chain.simd import add8, fma8, load8, select_greater8, splat8, store8
from skstruct.utils._parallel import chunk_count, dynamic_schedule, token_chunks

RESULTS = Path(__file__).parent / "results"
STEPS = 32


@njit(cache=True, nogil=True)
def triad(a, b, c, s, repeats):
    """``repeats`` times a = b + s * c: memory-bound (3 arrays of 8-byte elements)."""
    for _ in range(repeats):
        for i in range(a.shape[0]):
            a[i] = b[i] + s * c[i]
    return a[0]


@njit(cache=True, nogil=True)
def fma_peak(values, a, b, repeats):
    """``repeats`` passes of STEPS dependent FMAs on four elements at a time (four
    independent chains per vector lane, so that the FMA units, not their latency, set
    the pace); returns a checksum."""
    total = 0.0
    n = values.shape[1]
    for _ in range(repeats):
        for j in range(n):
            v0, v1, v2, v3 = values[0, j], values[1, j], values[2, j], values[3, j]
            for _ in range(STEPS):
                v0 = v0 * a + b
                v1 = v1 * a + b
                v2 = v2 * a + b
                v3 = v3 * a + b
            values[0, j], values[1, j], values[2, j], values[3, j] = v0, v1, v2, v3
        total += values[0, 0]
    return total


def vector_chains(step):
    """A compiled loop of ``repeats`` passes of STEPS dependent ``v = step(v, a, b)`` on
    eight independent eight-lane vectors at a time (64 elements of ``values``, whose
    length is a multiple of 64); it returns ``values[0]``."""

    @njit(nogil=True)
    def chains(values, a, b, repeats):
        va, vb = splat8(a), splat8(b)
        for _ in range(repeats):
            for j in range(0, values.shape[0], 64):
                v0, v1 = load8(values, j), load8(values, j + 8)
                v2, v3 = load8(values, j + 16), load8(values, j + 24)
                v4, v5 = load8(values, j + 32), load8(values, j + 40)
                v6, v7 = load8(values, j + 48), load8(values, j + 56)
                for _ in range(STEPS):
                    v0, v1 = step(v0, va, vb), step(v1, va, vb)
                    v2, v3 = step(v2, va, vb), step(v3, va, vb)
                    v4, v5 = step(v4, va, vb), step(v5, va, vb)
                    v6, v7 = step(v6, va, vb), step(v7, va, vb)
                store8(values, j, v0)
                store8(values, j + 8, v1)
                store8(values, j + 16, v2)
                store8(values, j + 24, v3)
                store8(values, j + 32, v4)
                store8(values, j + 40, v5)
                store8(values, j + 48, v6)
                store8(values, j + 56, v7)
        return values[0]
    return chains


@njit(inline="always")
def _fma(v, a, b):
    """v * a + b, rounded once."""
    return fma8(v, a, b)


@njit(inline="always")
def _add_max(v, a, b):
    """max(v + a, b), lane by lane (Viterbi's candidate update: one ``maxpd``)."""
    w = add8(v, a)
    return select_greater8(w, b, w, b)


#: Eight independent chains of FMAs: enough to keep two FMA units of four-cycle latency
#: busy.
fma_peak_vectors = vector_chains(_fma)
#: The same of an addition and a maximum: the peak of the two operations Viterbi does per
#: candidate (counted as two flops a lane, as Viterbi's).
add_max_peak_vectors = vector_chains(_add_max)


def crf_driver(module):
    """A compiled loop over the chunks of a batch that runs ``module``'s
    ``scaled_forward_backward_group`` as the CRF objective's lane pass does (gold labels,
    weights, one shared transition sum per chunk), the unary scores copied into the
    chunk's rows; returns it."""
    group = module.scaled_forward_backward_group
    pairwise = module.scaled_pairwise
    order_of = module.group_order
    width_of = module.padded_width
    n_lockstep, pair_steps = module.GROUP, module.PAIR_STEPS

    @njit(parallel=True, nogil=True)
    def crf_forward_backward(unary, offsets, y, weights, trans, start, end, bounds, values,
                             pair):
        s = unary.shape[1]
        width = width_of(s)
        expo, expo_t, start_padded, exp_end, trans_max, end_max = pairwise(
            trans, start, end, width)
        for chunk in prange(bounds.shape[0] - 1):
            first_seq, stop_seq = bounds[chunk], bounds[chunk + 1]
            base, stop = offsets[first_seq], offsets[stop_seq]
            longest = 1
            for seq in range(first_seq, stop_seq):
                longest = max(longest, offsets[seq + 1] - offsets[seq])
            rows = np.empty((stop - base, width))
            alpha = np.empty((longest, n_lockstep, width))
            norm = np.empty((longest, n_lockstep))
            beta = np.empty((1, n_lockstep, width))
            weight = np.empty((pair_steps, n_lockstep, width))
            firsts = np.empty(n_lockstep, dtype=np.int64)
            lengths = np.empty(n_lockstep, dtype=np.int64)
            scales = np.empty(n_lockstep)
            log_z = np.empty(n_lockstep)
            work = np.empty((2, n_lockstep))
            steps = np.empty(pair_steps, dtype=np.int64)
            labels = y[base:stop]
            acc = pair[chunk:chunk + 1]
            for i in range(acc.shape[1]):
                for j in range(width):
                    acc[0, i, j] = 0.0
            order = order_of(offsets, first_seq, stop_seq)
            for head in range(0, order.shape[0], n_lockstep):
                n_group = min(n_lockstep, order.shape[0] - head)
                for g in range(n_group):
                    seq = order[head + g]
                    a, b = offsets[seq], offsets[seq + 1]
                    for t in range(a, b):
                        for j in range(s):
                            rows[t - base, j] = unary[t, j]
                        for j in range(s, width):
                            rows[t - base, j] = -np.inf
                    firsts[g] = a - base
                    lengths[g] = b - a
                    scales[g] = weights[seq]
                group(rows, firsts, lengths, n_group, s, expo, expo_t, start_padded,
                      exp_end, trans_max, end_max, alpha, norm, beta, weight, labels,
                      scales, acc, True, True, log_z, work, steps)
                for g in range(n_group):
                    values[order[head + g]] = log_z[g]
    return crf_forward_backward


def kernels_at(revision):
    """``skstruct/decoders/_chain/kernels.py`` at git ``revision``, imported as a module of
    the package (its relative imports resolve to the current package)."""
    root = Path(__file__).resolve().parent.parent
    source = subprocess.check_output(
        ["git", "-C", str(root), "show", f"{revision}:skstruct/decoders/_chain/kernels.py"])
    folder = Path(tempfile.mkdtemp(prefix="kernels_at_"))
    path = folder / f"kernels_{revision}.py"
    path.write_bytes(source)
    name = f"skstruct.decoders._chain._kernels_at_{revision}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def best_cpu(function, repeats):
    times = []
    for _ in range(repeats):
        tic = time.process_time()
        function()
        times.append(time.process_time() - tic)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--states", type=int, nargs="+", default=[9, 22, 45])
    parser.add_argument("--title", default=time.strftime("Run of %Y-%m-%d"),
                        help="heading of this run's section (earlier runs are kept below)")
    parser.add_argument("--against", default=None, metavar="REV",
                        help="also time the kernels of this git revision, alternately")
    args = parser.parse_args()
    load_before = os.getloadavg()

    lengths = np.array([len(t) for t in load_conll2000("train").target])
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    n_tokens = int(offsets[-1])
    values = np.full((4, 1024), 0.5)
    peak_repeats = 2000
    fma_peak(values, 0.999, 0.0001, 1)  # compile
    fma_peak_vectors(values.reshape(-1), 0.999, 0.0001, 1)
    add_max_peak_vectors(values.reshape(-1), -0.001, 0.25, 1)
    modules = {"current": kernels}
    if args.against:
        modules["before"] = kernels_at(args.against)
    drivers = {key: crf_driver(module) for key, module in modules.items()}
    sizes = {}
    for s in args.states:
        sizes[s] = measure(s, offsets, n_tokens, values, peak_repeats, args.repeats,
                           modules, drivers)
        sizes[s]["bandwidth_gb_per_s"] = bandwidth(n_tokens * s, args.repeats)
        mean_length = n_tokens / (offsets.shape[0] - 1)
        fb_bytes = 8 * (2 * s + s * s / mean_length)
        sizes[s]["fb_intensity"] = 6 * s * s / fb_bytes
        sizes[s]["viterbi_intensity"] = 2 * s * s / (8 * s + 8)
    results = {
        "tokens": n_tokens,
        "sequences": int(lengths.shape[0]),
        "repeats": args.repeats,
        "load_average": load_before,
        "machine": platform.processor() or platform.machine(),
        "numba": numba.__version__,
        "against": args.against,
        "command": "python benchmarks/bench_chain_kernels_flops.py"
                   + (f" --repeats {args.repeats}" if args.repeats != 7 else "")
                   + (f" --against {args.against}" if args.against else "")
                   + (f" --states {' '.join(map(str, args.states))}"
                      if args.states != [9, 22, 45] else ""),
        "load_average_after": None,
        "states": sizes,
    }
    results["load_average_after"] = os.getloadavg()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "chain_kernels_flops.json").write_text(json.dumps(results, indent=2) + "\n")
    path = RESULTS / "chain_kernels_flops.md"
    path.write_text(with_earlier_runs(report(results), path, args.title))
    print(report(results))


def bandwidth(n, repeats):
    """GB/s of the triad over three arrays of n float64 (CPU time, best of ``repeats``)."""
    a, b, c = np.zeros(n), np.ones(n), np.ones(n)
    triad(a, b, c, 0.5, 1)
    best = best_cpu(lambda: triad(a, b, c, 0.5, 3), repeats)
    return 3 * 3 * 8 * n / best / 1e9


def measure(s, offsets, n_tokens, values, peak_repeats, repeats, modules, drivers):
    """Per thread count: the peak loops, the CRF objective's and the decoder's
    forward-backward and Viterbi at ``s`` states, for each module of kernels; the calls
    alternate (peaks, then each module's kernels in turn), ``repeats`` rounds, best
    CPU time of each."""
    rng = np.random.default_rng(0)
    unary = 2.0 * rng.normal(size=(n_tokens, s))
    trans, start, end = rng.normal(size=(s, s)), rng.normal(size=s), rng.normal(size=s)
    n_seq = offsets.shape[0] - 1
    y = rng.integers(0, s, size=n_tokens)
    weights = np.full(n_seq, 1.0 / n_seq)
    bounds = token_chunks(offsets, chunk_count(n_tokens, n_seq))
    width = kernels.padded_width(s)
    flat = values.reshape(-1)
    outputs = {}

    def crf(key):
        out = (np.empty(n_seq), np.empty((bounds.shape[0] - 1, width, width)))

        def run():
            with dynamic_schedule():
                drivers[key](unary, offsets, y, weights, trans, start, end, bounds, *out)
        outputs[key, "crf"] = out
        return run

    def decoder(key):
        def run():
            with dynamic_schedule():
                outputs[key, "decoder"] = modules[key].forward_backward_scaled(
                    unary, offsets, trans, start, end, True)
        return run

    def viterbi(key):
        def run():
            with dynamic_schedule():
                outputs[key, "viterbi"] = modules[key].viterbi(unary, offsets, trans, start,
                                                               end)
        return run

    calls = {"peak": lambda: fma_peak(values, 0.999, 0.0001, peak_repeats),
             "peak_vectors": lambda: fma_peak_vectors(flat, 0.999, 0.0001, peak_repeats),
             "add_max": lambda: add_max_peak_vectors(flat, -0.001, 0.25, peak_repeats)}
    for key in modules:
        calls[key, "crf"] = crf(key)
        calls[key, "decoder"] = decoder(key)
        calls[key, "viterbi"] = viterbi(key)
    for call in calls.values():
        call()
    agreement = {}
    if "before" in modules:
        for kind in ("crf", "decoder", "viterbi"):
            now, then = outputs["current", kind], outputs["before", kind]
            agreement[kind] = max(float(np.max(np.abs(np.asarray(a, float) - b), initial=0.0))
                                  for a, b in zip(now, then))
    previous = numba.get_num_threads()
    rows = {}
    flops = {"crf": 6 * s * s * n_tokens, "decoder": 6 * s * s * n_tokens,
             "viterbi": 2 * s * s * n_tokens}
    for threads in sorted({1, previous}):
        numba.set_num_threads(threads)
        best = {name: np.inf for name in calls}
        try:
            for _ in range(repeats):
                for name, call in calls.items():
                    tic = time.process_time()
                    call()
                    best[name] = min(best[name], time.process_time() - tic)
        finally:
            numba.set_num_threads(previous)
        peak_flops = 2 * STEPS * values.size * peak_repeats
        row = {"fma_loop_gflops": peak_flops / best["peak"] / 1e9,
               "vector_fma_loop_gflops": peak_flops / best["peak_vectors"] / 1e9}
        row["peak_gflops"] = max(row["fma_loop_gflops"], row["vector_fma_loop_gflops"])
        row["add_max_loop_gflops"] = peak_flops / best["add_max"] / 1e9
        for key in modules:
            prefix = "" if key == "current" else f"{key}_"
            for kind in ("crf", "decoder", "viterbi"):
                seconds = best[key, kind]
                name = {"crf": "fb", "decoder": "decoder_fb", "viterbi": "viterbi"}[kind]
                row[f"{prefix}{name}_cpu_seconds"] = seconds
                row[f"{prefix}{name}_gflops"] = flops[kind] / seconds / 1e9
                row[f"{prefix}{name}_tokens_per_cpu_second"] = n_tokens / seconds
        rows[threads] = row
    rows["agreement_with_before"] = agreement
    return rows


def _share(gflops, peak):
    return f"{gflops:.2f} ({100 * gflops / peak:.0f} %)"


def report(r):
    against = r.get("against")
    lines = [
        "# Chain kernels against a measured FMA peak",
        "",
        f"{r['tokens']:,} tokens in {r['sequences']:,} sequences (CoNLL-2000 training "
        f"lengths), random scores; CPU time, best of {r['repeats']}, the calls "
        f"alternating; load average "
        f"{', '.join(f'{x:.1f}' for x in r['load_average'])} before, "
        f"{', '.join(f'{x:.1f}' for x in r['load_average_after'])} after, on "
        f"{r['machine']}, numba "
        f"{r['numba']}. Produced by `{r['command']}`.",
        "",
        "GFLOP/s (share of the peak, the larger of the two FMA loops). CRF: the "
        "forward-backward as the CRF objective runs it; decoder: "
        "`forward_backward_scaled` (with per-sequence transition marginals); Viterbi: "
        "`viterbi`.",
        "",
        "| states | threads | FMA loop / vector FMA loop (GFLOP/s) | CRF forward-backward "
        "| CRF fb (M tokens / CPU s) | decoder forward-backward | Viterbi | "
        "Viterbi (M tokens / CPU s) | add-max loop (GFLOP/s), Viterbi's share of it |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s, rows in r["states"].items():
        for threads, row in rows.items():
            if not isinstance(row, dict) or "peak_gflops" not in row:
                continue
            peak = row["peak_gflops"]
            lines.append(
                f"| {s} | {threads} | {row['fma_loop_gflops']:.1f} / "
                f"{row['vector_fma_loop_gflops']:.1f} | {_share(row['fb_gflops'], peak)} | "
                f"{row['fb_tokens_per_cpu_second'] / 1e6:.2f} | "
                f"{_share(row['decoder_fb_gflops'], peak)} | "
                f"{_share(row['viterbi_gflops'], peak)} | "
                f"{row['viterbi_tokens_per_cpu_second'] / 1e6:.2f} | "
                + (f"{row['add_max_loop_gflops']:.1f}, "
                   f"{100 * row['viterbi_gflops'] / row['add_max_loop_gflops']:.0f} % |"
                   if "add_max_loop_gflops" in row else "|"))
    if against:
        lines += [
            "",
            f"Before and after in the same process (kernels of `{against}` against the "
            "current ones, alternating call by call; largest difference of any output, "
            "log Z and transition sums, marginals, labels and best scores):",
            "",
            "| states | threads | CRF fb before / after (ms) | speed-up | decoder fb before "
            "/ after (ms) | Viterbi before / after (ms) | largest difference "
            "(CRF, decoder, Viterbi) |",
            "|---|---|---|---|---|---|---|",
        ]
        for s, rows in r["states"].items():
            agree = rows.get("agreement_with_before", {})
            for threads, row in rows.items():
                if not isinstance(row, dict) or "peak_gflops" not in row:
                    continue
                lines.append(
                    f"| {s} | {threads} | {1e3 * row['before_fb_cpu_seconds']:.1f} / "
                    f"{1e3 * row['fb_cpu_seconds']:.1f} | "
                    f"{row['before_fb_cpu_seconds'] / row['fb_cpu_seconds']:.2f}x | "
                    f"{1e3 * row['before_decoder_fb_cpu_seconds']:.1f} / "
                    f"{1e3 * row['decoder_fb_cpu_seconds']:.1f} | "
                    f"{1e3 * row['before_viterbi_cpu_seconds']:.1f} / "
                    f"{1e3 * row['viterbi_cpu_seconds']:.1f} | "
                    f"{agree.get('crf', 0):.1e}, {agree.get('decoder', 0):.1e}, "
                    f"{agree.get('viterbi', 0):.1e} |")
    lines += [
        "",
        "Roofline (one thread): bandwidth of the triad, arithmetic intensity (flops per "
        "byte the kernel must move), roof = min(peak, intensity x bandwidth), and the "
        "kernel's share of its roof.",
        "",
        "| states | triad (GB/s) | forward-backward: intensity, roof (GFLOP/s), CRF share | "
        "Viterbi: intensity, roof (GFLOP/s), share |",
        "|---|---|---|---|",
    ]
    for s, rows in r["states"].items():
        one = rows[1] if 1 in rows else rows["1"]
        bw = rows["bandwidth_gb_per_s"]
        fb_roof = min(one["peak_gflops"], rows["fb_intensity"] * bw)
        vit_roof = min(one["peak_gflops"], rows["viterbi_intensity"] * bw)
        lines.append(
            f"| {s} | {bw:.1f} | {rows['fb_intensity']:.1f} flop/B, {fb_roof:.1f}, "
            f"{100 * one['fb_gflops'] / fb_roof:.0f} % | {rows['viterbi_intensity']:.1f} "
            f"flop/B, {vit_roof:.1f}, {100 * one['viterbi_gflops'] / vit_roof:.0f} % |")
    lines += [
        "",
        "Flops: forward-backward 3 S² multiply-adds a token counted as 6 S² flops; Viterbi "
        "S² additions and S² comparisons, 2 S². The peak loops are CPU time of one thread "
        "per thread, so their figures are per core; the kernels' figures are per CPU second "
        "(per core) too. The add-max loop does an addition and a maximum a lane where the "
        "FMA loop does one fused multiply-add, both counted as two flops: on a core whose "
        "additions and maxima issue on the ports of its multiply-adds it reaches half of "
        "the FMA peak, which is then the most Viterbi can reach by this count.",
        "",
    ]
    return "\n".join(lines)


def with_earlier_runs(text, path, title):
    """``text`` (one run) under ``title``, then the earlier runs' sections of the file at
    ``path`` (everything from its first second-level heading)."""
    head, _, body = text.partition("\n\n")
    earlier = ""
    if path.exists():
        old = path.read_text()
        at = old.find("\n## ")
        earlier = old[at + 1:] if at >= 0 else ""
    return f"{head}\n\n## {title}\n\n{body.rstrip()}\n\n{earlier}"


if __name__ == "__main__":
    main()
