"""BCFW's pairwise steps on the first 2,000 bibtex training examples with all label
pairs, for one setting of the solver's module constants: the outputs a block holds, the
outputs a collapse keeps, the cached passes at most, and a block's bytes (times its
number of parts). Prints the duality gap after every 10th of 40 passes, the wall and CPU
seconds and the process's peak resident size.

    PYTHONPATH=. python benchmarks/bench_bcfw_pairwise_settings.py 32 8 20 8
"""

import argparse
import resource
import time
from pathlib import Path

import numpy as np

import skstruct.optim._bcfw as bcfw
import skstruct.optim._bcfw_pairwise as pairwise
from skstruct import StructuredSVM
from skstruct.datasets import load_multilabel
from skstruct.decoders import FactorGraph, FactorGraphDecoder

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "multilabel"


def main():
    parser = argparse.ArgumentParser()
    for name in ("held", "keep", "passes", "bytes_per_part"):
        parser.add_argument(name, type=int)
    parser.add_argument("--examples", type=int, default=2000)
    args = parser.parse_args()
    pairwise.MAX_HELD_OUTPUTS = args.held
    pairwise.COLLAPSE_KEEPS = args.keep
    pairwise.MAX_CACHED_PASSES = args.passes
    bcfw._block_bytes = lambda risk: args.bytes_per_part * (
        risk.decoder.graph.n_vars + risk.decoder.graph.n_pairs + risk.decoder.graph.n_extra)
    train = load_multilabel("bibtex", "train", path=DATA)
    X, Y = train.data[:args.examples], np.asarray(train.target)[:args.examples]
    wall, cpu = time.perf_counter(), time.process_time()
    model = StructuredSVM(FactorGraphDecoder(FactorGraph.pairwise(Y.shape[1])),
                          max_iter=40, tol=0).fit(X, Y)
    gaps = np.asarray(model.duality_gaps_)
    print(f"held {args.held} keep {args.keep} passes {args.passes} bytes/part "
          f"{args.bytes_per_part}: gaps {np.round(gaps[np.isfinite(gaps)], 5).tolist()} "
          f"wall {time.perf_counter() - wall:.0f} s cpu {time.process_time() - cpu:.0f} s "
          f"peak rss {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB")


if __name__ == "__main__":
    main()
