"""Time per pass of ``StructuredSVM(decoder=TreeDecoder())`` by BCFW on UD English EWT.

Prints the wall-clock and CPU seconds between the callbacks of consecutive passes, the
primal objective of each pass (every pass includes the exact duality gap, which decodes
every training sentence again at the averaged iterate), the steady-state time per pass
(from the first callback to the last, divided by the passes in between) and the time of
a bare compiled gather over all stored arc-feature entries.

With two or more threads the gap of pass k is computed in a second thread while pass
k + 1 runs, and the callback of pass k comes when both are done: the interval between
two callbacks is then one pass and one gap run side by side, the last interval the gap
of the last pass alone. The first interval includes the one-time checks and stacking of
the training data.

The training features are an ``ArcFeatureBatch`` (``ArcVectorizer.transform_batch``: no
values, columns in frequency order) unless ``--features list`` (per-sentence float64 CSR
matrices); both give the same objectives.

Run::

    python benchmarks/bench_tree_bcfw_pass.py            # 3 passes
    python benchmarks/bench_tree_bcfw_pass.py --passes 6 --max-train 3000
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
    A = X.rows if hasattr(X, "rows") else sp.vstack(X).tocsr()
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
    parser.add_argument("--features", choices=("batch", "list"), default="batch")
    args = parser.parse_args()
    train = load_ud_english_ewt("train")[: args.max_train]
    vectorizer = ArcVectorizer().fit(train)
    X = (vectorizer.transform_batch if args.features == "batch"
         else vectorizer.transform)(train)
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
    if len(marks) > 1:
        between = len(marks) - 1
        wall = (marks[-1][0] - marks[0][0]) / between
        cpu = (marks[-1][1] - marks[0][1]) / between
        print(f"per pass, passes 2-{len(marks)} with their gaps: wall {wall:.2f} s  "
              f"cpu {cpu:.2f} s")
    seconds, nnz = gather_floor(X)  # the batch's columns in frequency order
    print(f"bare gather over {nnz:,} stored entries: {seconds:.2f} s")


if __name__ == "__main__":
    main()
