"""One batched PAIR local QP of a fully connected 159-label graph, with and without prange.

The LP-SparseMAP multilabel model of bibtex has one PAIR (Ising) factor per label pair:
159 · 158 / 2 = 12,561 factors, whose local QPs an ADMM iteration solves in one call of
:func:`skstruct.decoders._factor_graph.pair_kernels.pair_qp`. This times that call (weights
w = 1/158 as LP-SparseMAP's degree corrections make them, scores of both signs with a/w
and s/w of order 1, so that every piece of the closed form occurs) in a fresh process per variant and round (rounds alternating the variants), after a warm-up
call (compilation excluded):

- ``prange``: the module's kernel, parallel over chunks of ``FACTORS_PER_CHUNK`` factors,
  on all of numba's threads;
- ``prange, 1 thread``: the same kernel with ``numba.set_num_threads(1)``;
- ``serial``: the same per-factor closed form in a plain compiled loop (no parallel
  region).

Each sample is ``--calls`` consecutive calls (per-call times reported); the best of the
``--repeats`` × ``--rounds`` samples, CPU (``time.process_time``, all threads) and wall.
Separate processes, because a parallel kernel's worker threads keep spinning for a while
after it returns, which a serial kernel timed next in the same process would be charged.

Run::

    python benchmarks/bench_factor_pair_kernels.py            # 1 call per sample
    python benchmarks/bench_factor_pair_kernels.py --calls 100
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numba
import numpy as np
from numba import njit

import skstruct
from skstruct.decoders._factor_graph.pair_kernels import (
    FACTORS_PER_CHUNK,
    _pair_solve,
    pair_qp,
)

from _report import code_version, command_line, format_time, machine_summary, record_run

STEM = "factor_pair_kernels"
N_LABELS = 159


# not cached: numba's cache would not see changes of the inlined _pair_solve
@njit(nogil=True)
def pair_qp_serial(a, w, s, u, v):
    for f in range(s.shape[0]):
        u1, u2, vf = _pair_solve(a[f, 0], a[f, 1], w[f, 0], w[f, 1], s[f])
        u[f, 0] = u1
        u[f, 1] = u2
        v[f] = vf


def sample(function, calls):
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        function()
    return (time.perf_counter() - start) / calls, (time.process_time() - cpu) / calls


VARIANTS = ("prange", "prange, 1 thread", "serial")


def measure(variant, repeats, calls):
    """Samples (wall, CPU) per call of one variant, in this process, after a warm-up."""
    n = N_LABELS * (N_LABELS - 1) // 2
    rng = np.random.default_rng(0)
    degree = N_LABELS - 1  # every label is in 158 PAIR factors (plus its unary)
    w = np.full((n, 2), 1.0 / degree)
    # a / w and s / w of order 1: every piece of the closed form occurs
    a = w * rng.normal(0.3, 1.0, size=(n, 2))
    s = w[:, 0] * rng.normal(0.0, 1.0, size=n)
    u, v = np.empty((n, 2)), np.empty(n)
    kernel = pair_qp_serial if variant == "serial" else pair_qp
    if variant == "prange, 1 thread":
        numba.set_num_threads(1)
    kernel(a, w, s, u, v)  # warm-up: compilation, first touch
    samples = [sample(lambda: kernel(a, w, s, u, v), calls) for _ in range(repeats)]
    return samples, hashlib.sha1(u.tobytes() + v.tobytes()).hexdigest()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--calls", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", type=Path,
                        default=Path(__file__).resolve().parent / "results")
    parser.add_argument("--variant", choices=VARIANTS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.variant is not None:
        samples, digest = measure(args.variant, args.repeats, args.calls)
        print(json.dumps({"samples": samples, "digest": digest}))
        return None

    n = N_LABELS * (N_LABELS - 1) // 2
    threads = numba.get_num_threads()
    times = {name: [] for name in VARIANTS}
    digests = set()
    load_before = os.getloadavg()
    for _ in range(args.rounds):
        for name in VARIANTS:
            out = subprocess.run(
                [sys.executable, __file__, "--variant", name, "--repeats", str(args.repeats),
                 "--calls", str(args.calls)], capture_output=True, text=True, check=True)
            result = json.loads(out.stdout.strip().splitlines()[-1])
            times[name] += result["samples"]
            digests.add(result["digest"])
    load_after = os.getloadavg()
    assert len(digests) == 1, "the variants' solutions differ"

    best = {name: {"wall": min(t[0] for t in ts), "cpu": min(t[1] for t in ts)}
            for name, ts in times.items()}
    lines = [
        "# One batched PAIR local QP (12,561 factors, a fully connected 159-label graph)",
        "",
        f"`{command_line('benchmarks/bench_factor_pair_kernels.py')}`",
        "",
        f"{n:,} factors; {args.calls} call(s) per sample, {args.repeats} samples after a "
        f"warm-up call in a fresh process per variant (so that no variant pays for the "
        f"idle spinning of another's worker threads), {args.rounds} rounds alternating the "
        f"variants; best sample (CPU and wall separately). {threads} numba threads, {FACTORS_PER_CHUNK} factors per "
        f"parallel chunk ({max(1, n // FACTORS_PER_CHUNK)} chunks). Load average (1 min) "
        f"{load_before[0]:.2f} before, {load_after[0]:.2f} after. The solutions of all "
        f"variants are bitwise equal.",
        "",
        "| variant | CPU per call | wall per call | ns CPU per factor |",
        "|---|---|---|---|",
    ]
    for name, b in best.items():
        lines.append(f"| {name} | {format_time(b['cpu'])} | {format_time(b['wall'])} | "
                     f"{b['cpu'] / n * 1e9:.1f} |")
    machine = machine_summary()
    lines += ["", f"Code: {code_version(skstruct)}; CPU: {machine['cpu']}, "
              f"{machine['cores']} cores."]
    text = "\n".join(lines) + "\n"
    print(text)
    args.output.mkdir(parents=True, exist_ok=True)
    (args.output / f"{STEM}.md").write_text(text)
    run_record = {"n_factors": n, "calls": args.calls, "repeats": args.repeats,
                  "rounds": args.rounds,
                  "threads": threads, "load_average": [load_before[0], load_after[0]],
                  "best": best, "samples": times, "machine": machine,
                  "code": code_version(skstruct)}
    record_run(args.output / f"{STEM}.json", "latest", run_record)
    return run_record


if __name__ == "__main__":
    main()
