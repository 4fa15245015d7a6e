"""Per-example cost of the compiled smoothed oracles against the loss-augmented MAP oracle.

Random chains of 17 states and 23 tokens (the UD English EWT tag set and about its mean
sentence length), Hamming loss, margin rescaling. One compiled loop calls, for every
example in turn, one of:

- ``map``: the engine's loss-augmented Viterbi (``_engine.dispatch.oracle``) and the direction
  a_ŷ − a_{y_i} (two ``add_parts``), what a BCFW or subgradient step asks;
- ``entropy``: ``smoothed_oracle`` with entropy smoothing (μ = 1);
- ``l2 K=5``: ``smoothed_oracle`` with ℓ2 smoothing over the 5 best labelings (μ = 1);
- ``top_k_one K=5``: the list Viterbi alone (``_chain.kernels.top_k_one`` on the unary
  scores), the bulk of the ℓ2 oracle.

Times are per example: the best of 3 alternating rounds, each over all examples, after a
warm-up (compilation excluded); CPU time (``time.process_time``) beside wall time, and
the load average, since the machine may be shared.

Run: ``python benchmarks/bench_smoothed_oracles.py [--examples 2000]``. Writes
``results/smoothed_oracles.md`` and ``results/smoothed_oracles.json``.
"""

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
from numba import njit

from _report import code_version, command_line, format_time, machine_summary

import skstruct
from skstruct.decoders import ChainDecoder
from skstruct.decoders._chain.kernels import top_k_one
from skstruct.decoders._engine.dispatch import add_parts, oracle
from skstruct.decoders._engine.dispatch import smoothed_oracle
from skstruct.decoders._engine.smoothed import ENTROPY, L2
from skstruct.losses import HammingLoss

RESULTS = Path(__file__).parent / "results"


@njit(cache=True, nogil=True)
def _map_loop(code, rescaling, unary, offsets, pair, y, costs, ints, floats, d_unary,
              d_pair, yhat):
    total = 0.0
    for i in range(offsets.shape[0] - 1):
        a, b = offsets[i], offsets[i + 1]
        total += oracle(code, rescaling, unary[a:b], pair, y[a:b], costs, ints, floats,
                        yhat)
        d_unary[:b - a] = 0.0
        d_pair[:] = 0.0
        add_parts(code, yhat[:b - a], 1.0, d_unary[:b - a], d_pair, ints)
        add_parts(code, y[a:b], -1.0, d_unary[:b - a], d_pair, ints)
    return total


@njit(cache=True, nogil=True)
def _smoothed_loop(code, smoothing, mu, top_k, unary, offsets, pair, y, costs, ints,
                   floats, d_unary, d_pair):
    total = 0.0
    for i in range(offsets.shape[0] - 1):
        a, b = offsets[i], offsets[i + 1]
        value, _ = smoothed_oracle(code, smoothing, mu, top_k, unary[a:b], pair, y[a:b],
                                   costs, ints, floats, d_unary, d_pair)
        total += value
    return total


@njit(cache=True, nogil=True)
def _top_k_loop(top_k, unary, offsets, pair, n_states):
    square = n_states * n_states
    trans = pair[:square].reshape((n_states, n_states))
    start = pair[square:square + n_states]
    end = pair[square + n_states:square + 2 * n_states]
    length = offsets[1] - offsets[0]
    paths = np.empty((length, top_k), dtype=np.int64)
    scores = np.empty(top_k)
    total = 0.0
    for i in range(offsets.shape[0] - 1):
        a, b = offsets[i], offsets[i + 1]
        paths[:b - a] = -1
        scores[:] = -np.inf
        top_k_one(unary[a:b], trans, start, end, top_k, paths[:b - a], scores)
        total += scores[0]
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2000)
    args = parser.parse_args()
    n_states, length, n = 17, 23, args.examples
    rng = np.random.default_rng(0)
    unary = rng.normal(size=(n * length, n_states))
    pair = rng.normal(size=n_states * n_states + 2 * n_states)
    y = rng.integers(0, n_states, size=n * length)
    offsets = np.arange(n + 1, dtype=np.int64) * length
    compiled = ChainDecoder().compiled_oracle(HammingLoss(), "margin", y, offsets)
    d_unary = np.empty((length, n_states))
    d_pair = np.empty_like(pair)
    yhat = np.empty(length, dtype=np.int64)
    args_common = (unary, offsets, pair, compiled.y, compiled.costs, compiled.ints,
                   compiled.floats, d_unary, d_pair)
    runs = {
        "map": lambda: _map_loop(compiled.code, compiled.rescaling, *args_common, yhat),
        "entropy": lambda: _smoothed_loop(compiled.code, ENTROPY, 1.0, 1, *args_common),
        "l2 K=5": lambda: _smoothed_loop(compiled.code, L2, 1.0, 5, *args_common),
        "top_k_one K=5": lambda: _top_k_loop(5, unary, offsets, pair, n_states),
    }
    for run in runs.values():
        run()
    load_before = os.getloadavg()[0]
    wall = {name: [] for name in runs}
    cpu = {name: [] for name in runs}
    for _ in range(3):
        for name, run in runs.items():
            w0, c0 = time.perf_counter(), time.process_time()
            run()
            wall[name].append((time.perf_counter() - w0) / n)
            cpu[name].append((time.process_time() - c0) / n)
    load_after = os.getloadavg()[0]
    result = {
        "command": command_line("python benchmarks/bench_smoothed_oracles.py"),
        "version": code_version(skstruct), "machine": machine_summary(),
        "n_states": n_states, "length": length, "examples": n,
        "load_average": [load_before, load_after],
        "wall_per_example": {k: min(v) for k, v in wall.items()},
        "cpu_per_example": {k: min(v) for k, v in cpu.items()},
    }
    lines = [
        "# Compiled smoothed oracles: per-example cost",
        "",
        f"Chains of {n_states} states and {length} tokens, Hamming loss, μ = 1; "
        f"{n} examples per round, best of 3 alternating rounds.",
        f"Command: `{result['command']}`; code {result['version']}; "
        f"load average {load_before:.2f} → {load_after:.2f} "
        f"({result['machine']['cores']} cores).",
        "",
        "| oracle | wall / example | CPU / example |",
        "|---|---|---|",
    ]
    for name in runs:
        lines.append(f"| {name} | {format_time(result['wall_per_example'][name])} | "
                     f"{format_time(result['cpu_per_example'][name])} |")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "smoothed_oracles.md").write_text("\n".join(lines) + "\n")
    (RESULTS / "smoothed_oracles.json").write_text(json.dumps(result, indent=2) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
