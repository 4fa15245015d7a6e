"""Full-batch arc products on UD English EWT, and the memory of the arc feature forms.

The CRF and SparseMAP parsers compute s = X w and Xᵀ g with the whole arc feature matrix
once per objective evaluation. This measures, in one process and alternating (medians of
``--repeats``, after one warm-up call of each, so compilation is excluded):

- before: scipy-layout float64 CSR (the stacked list of per-sentence matrices) through
  ``skstruct.features._sparse.matmul`` / ``transpose_matmul``;
- after: :class:`~skstruct.features.LinearArcFeatures` (the compiled products of
  :mod:`skstruct.features._arc_products`) on the rows of an
  :class:`~skstruct.utils._trees.ArcFeatureBatch` (no values, int32 indices, columns
  in frequency order);

with wall and CPU time (all threads), the products checked equal to 1e-12; and the bytes
of each form: the list of matrices :meth:`ArcVectorizer.transform` returns, the stacked
float64 CSR the estimators build from it, and the batch (``ArcVectorizer.transform_batch``,
peak traced allocation measured with tracemalloc while it is built).

Run::

    python benchmarks/bench_arc_products.py --max-train 2000
    python benchmarks/bench_arc_products.py                # the whole training set
"""

import argparse
import os
import time
import tracemalloc

import numpy as np

from skstruct.datasets import load_ud_english_ewt
from skstruct.decoders import TreeScores
from skstruct.features import LinearArcFeatures
from skstruct.features._sparse import matmul, transpose_matmul
from skstruct.preprocessing import ArcVectorizer
from skstruct.utils._sequences import check_sequences
from skstruct.utils._trees import check_trees


def timed(function):
    start, cpu = time.perf_counter(), time.process_time()
    result = function()
    return result, time.perf_counter() - start, time.process_time() - cpu


def csr_bytes(matrix):
    return matrix.data.nbytes + matrix.indices.nbytes + matrix.indptr.nbytes


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-train", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}", flush=True)

    train = load_ud_english_ewt("train")[: args.max_train]
    vectorizer = ArcVectorizer().fit(train)
    tracemalloc.start()
    batch = vectorizer.transform_batch(train)
    batch_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    rows = batch.rows
    listed = vectorizer.transform(train)
    list_bytes = sum(csr_bytes(x) for x in listed)
    stacked = check_sequences(listed)[0].X
    del listed
    print(f"{len(train)} sentences, {rows.shape[0]} arcs, {rows.nnz / 1e6:.1f} M stored "
          f"entries, {rows.shape[1]} columns")
    print(f"memory: list of CSR matrices {list_bytes / 1e9:.3f} GB, stacked float64 CSR "
          f"{csr_bytes(stacked) / 1e9:.3f} GB, ArcFeatureBatch {batch.nbytes / 1e9:.3f} GB "
          f"(peak traced while built: {batch_peak / 1e9:.3f} GB)", flush=True)

    rng = np.random.default_rng(0)
    w = rng.normal(size=rows.shape[1])
    g = TreeScores(rng.normal(size=rows.shape[0]), batch.word_offsets)
    tree_batch = check_trees(batch)[0]
    features = LinearArcFeatures(rows.shape[1], TreeScores)
    products = {
        "X w   before (float64 CSR)": lambda: matmul(stacked, w[:, None])[:, 0],
        "X w   after  (no values)": lambda: features.scores(tree_batch, w).unary,
        "Xᵀ g  before (float64 CSR)": lambda: transpose_matmul(stacked,
                                                               g.unary[:, None])[:, 0],
        "Xᵀ g  after  (no values)": lambda: features.transpose(tree_batch, g),
    }
    results, times = {}, {name: [] for name in products}
    for name, product in products.items():  # warm-up: compilation, first touch
        results[name] = product()
    for _ in range(args.repeats):
        for name, product in products.items():
            _, wall, cpu = timed(product)
            times[name].append((wall, cpu))
    names = list(products)
    for before, after in ((names[0], names[1]), (names[2], names[3])):
        error = np.abs(results[before] - results[after]).max()
        scale = max(1.0, np.abs(results[before]).max())
        assert error <= 1e-12 * scale, (before, error)
    for name in names:
        wall = np.median([t[0] for t in times[name]])
        cpu = np.median([t[1] for t in times[name]])
        print(f"{name}: {wall:.3f} s wall, {cpu:.3f} s CPU (median of {args.repeats})")
    for before, after in ((names[0], names[1]), (names[2], names[3])):
        ratio = (np.median([t[0] for t in times[after]])
                 / np.median([t[0] for t in times[before]]))
        print(f"{after.split()[0]} after / before: {ratio:.2f} (wall)")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
