"""Time per pass of ``StructuredSVM(decoder=TreeDecoder())`` by BCFW on UD English EWT.

Prints, per pass, the wall-clock and CPU seconds and the primal objective (each pass
includes the exact duality gap, which scores every training sentence again), and the
time of a bare compiled gather over all stored arc-feature entries: the floor that one
full scoring of the training set cannot go below with explicit arc features.

Run::

    python benchmarks/bench_tree_bcfw_pass.py            # 3 passes
    python benchmarks/bench_tree_bcfw_pass.py --passes 5 --max-train 3000

The first pass includes the one-time checks and stacking of the training data.
"""

import argparse
import time
import warnings

import numpy as np
import scipy.sparse as sp
from numba import njit
from sklearn.exceptions import ConvergenceWarning

from skstruct import StructuredSVM
from skstruct.datasets import load_ud_english_ewt
from skstruct.decoders import TreeDecoder
from skstruct.preprocessing import ArcVectorizer

ALPHA = 7.97e-05  # as in benchmarks/bench_parsing_ewt.py


@njit(cache=True, nogil=True)
def _gather(indices, indptr, w, out):
    for r in range(indptr.shape[0] - 1):
        total = 0.0
        for p in range(indptr[r], indptr[r + 1]):
            total += w[indices[p]]
        out[r] = total


def gather_floor(X, repeats=3):
    """Best seconds of one pass of w[column] reads over every stored entry of ``X``."""
    A = sp.vstack(X).tocsr()
    w, out = np.random.default_rng(0).random(A.shape[1]), np.empty(A.shape[0])
    _gather(A.indices[:1], A.indptr[:2], w, out)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        _gather(A.indices, A.indptr, w, out)
        times.append(time.perf_counter() - start)
    return min(times), A.nnz


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--max-train", type=int, default=None)
    args = parser.parse_args()
    train = load_ud_english_ewt("train")[: args.max_train]
    X = ArcVectorizer().fit(train).transform(train)
    y = [sentence["head"] for sentence in train]
    StructuredSVM(decoder=TreeDecoder(), max_iter=1, alpha=ALPHA).fit(X[:20], y[:20])
    marks = []

    def callback(n_pass, w, objective):
        marks.append((time.perf_counter(), time.process_time(), objective))

    warnings.simplefilter("ignore", ConvergenceWarning)
    previous = (time.perf_counter(), time.process_time())
    StructuredSVM(decoder=TreeDecoder(), max_iter=args.passes, alpha=ALPHA, random_state=0,
                  callback=callback).fit(X, y)
    for n_pass, (wall, cpu, objective) in enumerate(marks, 1):
        print(f"pass {n_pass}: wall {wall - previous[0]:6.2f} s  cpu {cpu - previous[1]:6.2f} s"
              f"  objective {objective!r}")
        previous = (wall, cpu)
    seconds, nnz = gather_floor(X)
    print(f"bare gather over {nnz:,} stored entries: {seconds:.2f} s")


if __name__ == "__main__":
    main()
