"""First-call cost of skstruct's compiled kernels: compiling (cold cache) and loading.

Runs two fresh interpreters that share an empty numba cache directory: the first compiles
every kernel (what a new install pays once), the second loads them from the cache (what
every later process pays). Each times the first call of each operation on a tiny input.

Run: ``python benchmarks/bench_compile_time.py``. Writes ``results/compile_time.md``.
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

PROBE = r"""
import json, time
t0 = time.perf_counter()
import numpy as np
import scipy.sparse as sp
from skstruct import CRF
from skstruct.decoders import ChainDecoder, ChainScores
times = {"import skstruct": time.perf_counter() - t0}
rng = np.random.default_rng(0)
scores = ChainScores(rng.normal(size=(5, 3)), [0, 2, 5], rng.normal(size=(3, 3)),
                     np.zeros(3), np.zeros(3))
decoder = ChainDecoder()
steps = {
    "Viterbi": lambda: decoder.map(scores),
    "forward-backward (rescaled)": lambda: decoder.marginals(scores),
    "forward-backward (log space)": lambda: ChainDecoder(log_space=True).marginals(scores),
    "top-k Viterbi": lambda: decoder.top_k(scores, 3),
    "CRF.fit, sparse input (matmul, L-BFGS kernels)": lambda: CRF(max_iter=3).fit(
        [sp.csr_matrix(rng.normal(size=(4, 6)))] * 3, [["a", "b", "a", "b"]] * 3),
}
for name, step in steps.items():
    tic = time.perf_counter()
    step()
    times[name] = time.perf_counter() - tic
print(json.dumps(times))
"""


def run_probe(cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, PYTHONWARNINGS="ignore")
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    with tempfile.TemporaryDirectory() as cache_dir:
        cold = run_probe(cache_dir)
        warm = run_probe(cache_dir)
    lines = [
        "# First-call cost of the compiled kernels",
        "",
        "Seconds for the first call of each operation in a fresh process: *compile* with an "
        "empty numba cache (once per install), *load* with the cache filled by the first "
        "run (every later process). Produced by `python benchmarks/bench_compile_time.py`.",
        "",
        "| step | compile (s) | load (s) |",
        "|---|---|---|",
    ]
    lines += [f"| {name} | {cold[name]:.2f} | {warm[name]:.2f} |" for name in cold]
    lines += [f"| **total** | **{sum(cold.values()):.1f}** | **{sum(warm.values()):.1f}** |", ""]
    results = Path(__file__).parent / "results"
    results.mkdir(exist_ok=True)
    (results / "compile_time.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
