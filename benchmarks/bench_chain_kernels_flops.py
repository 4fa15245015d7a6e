"""Chain kernels against the machine: GFLOP/s of forward-backward and Viterbi next to a
measured peak.

The peak is a small compiled loop of fused multiply-adds with no memory traffic: every
element of a (4, 1024) array goes through 32 dependent ``v = v * a + b``, four rows at
a time (the loop over elements vectorizes, the 32 steps unroll, four chains per lane hide
the FMA latency), so it runs at what numba's code reaches on this core. The chain kernels run on the
CoNLL-2000 training set's sequence lengths (8,936 sentences, 211,727 tokens) with random
scores at 9, 22 and 45 states (rows of 16, 24 and 48):

- forward-backward with marginals (``forward_backward_scaled``): 3 S² multiply-adds a
  token (forward α̂ expo, backward expo β̂, and the transition sums), counted as 6 S²
  flops (an FMA is two);
- Viterbi (``viterbi``): S² additions and S² comparisons a token, counted as 2 S².

CPU time (``time.process_time``), best of ``--repeats``, one thread (per-core figures) and
all threads; the load average is printed with the numbers. Writes
``results/chain_kernels_flops.md`` and ``.json`` next to this file.

Roofline: the memory bandwidth is measured by a compiled triad (``a = b + s c``) over
arrays of the size of the kernels' inputs (n_tokens by S float64), bytes counted as 3 per
element times 8 (read b, c; write a) in CPU time; a kernel's arithmetic intensity is its
flops over the bytes it must move at the least (forward-backward: the unary scores in, the
marginals out, the S² transition marginals of each sequence out; Viterbi: the unary scores
in, one int64 label out a token), and its roof is min(peak, intensity x bandwidth).

Run: ``python benchmarks/bench_chain_kernels_flops.py`` (``--states 22`` for one size)
"""

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numba
import numpy as np
from numba import njit

from skstruct.datasets import load_conll2000
from skstruct.decoders._chain import kernels
from skstruct.utils._parallel import dynamic_schedule

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
    args = parser.parse_args()
    load_before = os.getloadavg()

    lengths = np.array([len(t) for t in load_conll2000("train").target])
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    n_tokens = int(offsets[-1])
    values = np.full((4, 1024), 0.5)
    peak_repeats = 2000
    fma_peak(values, 0.999, 0.0001, 1)  # compile
    sizes = {}
    for s in args.states:
        sizes[s] = measure(s, offsets, n_tokens, values, peak_repeats, args.repeats)
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
        "command": "python benchmarks/bench_chain_kernels_flops.py"
                   + (f" --repeats {args.repeats}" if args.repeats != 7 else "")
                   + (f" --states {' '.join(map(str, args.states))}"
                      if args.states != [9, 22, 45] else ""),
        "load_average_after": None,
        "states": sizes,
    }
    results["load_average_after"] = os.getloadavg()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "chain_kernels_flops.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / "chain_kernels_flops.md").write_text(report(results))
    print(report(results))


def bandwidth(n, repeats):
    """GB/s of the triad over three arrays of n float64 (CPU time, best of ``repeats``)."""
    a, b, c = np.zeros(n), np.ones(n), np.ones(n)
    triad(a, b, c, 0.5, 1)
    best = best_cpu(lambda: triad(a, b, c, 0.5, 3), repeats)
    return 3 * 3 * 8 * n / best / 1e9


def measure(s, offsets, n_tokens, values, peak_repeats, repeats):
    """Per thread count: the peak loop, forward-backward and Viterbi at ``s`` states."""
    rng = np.random.default_rng(0)
    unary = 2.0 * rng.normal(size=(n_tokens, s))
    trans, start, end = rng.normal(size=(s, s)), rng.normal(size=s), rng.normal(size=s)

    def forward_backward():
        with dynamic_schedule():
            kernels.forward_backward_scaled(unary, offsets, trans, start, end, True)

    def viterbi():
        with dynamic_schedule():
            kernels.viterbi(unary, offsets, trans, start, end)

    forward_backward()
    viterbi()
    previous = numba.get_num_threads()
    rows = {}
    for threads in sorted({1, previous}):
        numba.set_num_threads(threads)
        try:
            peak = best_cpu(lambda: fma_peak(values, 0.999, 0.0001, peak_repeats), repeats)
            fb = best_cpu(forward_backward, repeats)
            vit = best_cpu(viterbi, repeats)
        finally:
            numba.set_num_threads(previous)
        rows[threads] = {
            "peak_gflops": 2 * STEPS * values.size * peak_repeats / peak / 1e9,
            "fb_cpu_seconds": fb,
            "fb_gflops": 6 * s * s * n_tokens / fb / 1e9,
            "fb_tokens_per_cpu_second": n_tokens / fb,
            "viterbi_cpu_seconds": vit,
            "viterbi_gflops": 2 * s * s * n_tokens / vit / 1e9,
            "viterbi_tokens_per_cpu_second": n_tokens / vit,
        }
    return rows


def report(r):
    lines = [
        "# Chain kernels against a measured FMA peak",
        "",
        f"{r['tokens']:,} tokens in {r['sequences']:,} sequences (CoNLL-2000 training "
        f"lengths), random scores; CPU time, best of {r['repeats']}; load average "
        f"{', '.join(f'{x:.1f}' for x in r['load_average'])} before, "
        f"{', '.join(f'{x:.1f}' for x in r['load_average_after'])} after, on "
        f"{r['machine']}, numba "
        f"{r['numba']}. Produced by `{r['command']}`.",
        "",
        "| states | threads | FMA loop peak (GFLOP/s) | forward-backward (GFLOP/s) | "
        "forward-backward (M tokens / CPU s) | Viterbi (GFLOP/s) | "
        "Viterbi (M tokens / CPU s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for s, rows in r["states"].items():
        for threads, row in rows.items():
            if not isinstance(row, dict):
                continue
            lines.append(
                f"| {s} | {threads} | {row['peak_gflops']:.1f} | {row['fb_gflops']:.2f} "
                f"({100 * row['fb_gflops'] / row['peak_gflops']:.0f} % of peak) | "
                f"{row['fb_tokens_per_cpu_second'] / 1e6:.2f} | "
                f"{row['viterbi_gflops']:.2f} "
                f"({100 * row['viterbi_gflops'] / row['peak_gflops']:.0f} % of peak) | "
                f"{row['viterbi_tokens_per_cpu_second'] / 1e6:.2f} |")
    lines += [
        "",
        "Roofline (one thread): bandwidth of the triad, arithmetic intensity (flops per "
        "byte the kernel must move), roof = min(peak, intensity x bandwidth), and the "
        "kernel's share of its roof.",
        "",
        "| states | triad (GB/s) | forward-backward: intensity, roof (GFLOP/s), share | "
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
        "S² additions and S² comparisons, 2 S². The peak loop is CPU time of one thread "
        "per thread, so its figure is per core; the kernels' figures are per CPU second "
        "(per core) too.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
