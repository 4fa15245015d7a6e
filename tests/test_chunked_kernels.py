"""Parallel kernels that run over chunks of work give the same results on 1 and 2 threads.

Every kernel below runs its parallel loop over contiguous chunks of work under the
dynamic schedule; the chunks depend on the input only. Each case runs a kernel through
its Python caller with the threshold of ``threads_for`` lowered (so that two threads
really run) and with small chunks (so that many chunks run), checks that there are many
chunks, and compares the results of 1 and 2 threads exactly; where a kernel computes
every item alone, also with the results of a single chunk.
"""

import numba
import numpy as np
import pytest
import scipy.sparse as sp

from _chain_data import random_chain_scores
from skstruct import StructuredSVM
from skstruct.decoders import (
    MulticlassDecoder,
    MulticlassScores,
    MultilabelDecoder,
    MultilabelScores,
)
from skstruct.decoders._chain import (
    counting as _constrained,
    counting_kernels as _constrained_kernels,
)
from skstruct.decoders._tabular import kernels as _independent_kernels
from skstruct.decoders._sparsemap import closed_form_kernels
from skstruct.decoders._sparsemap.closed_forms import clip_sparsemap, sparsemax_sparsemap
from skstruct.features import _compiled, _sparse
from skstruct.losses import FBetaLoss
from skstruct.optim import _cutting_plane, _lbfgs
from skstruct.preprocessing import ArcVectorizer, _arc_vectorizer
from skstruct.utils import _chunks, _parallel

pytestmark = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2,
                                reason="numba has a single thread here")

#: Least chunks of every case with small chunks.
MIN_CHUNKS = 8


def _spy(monkeypatch, module, name, calls):
    """Record the arguments of every call of ``module.name`` (a kernel or a chunking
    function) in ``calls``."""
    original = getattr(module, name)

    def recorded(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, recorded)


def _n_chunks(bounds):
    bounds = np.asarray(bounds)
    assert bounds[0] == 0 and np.all(np.diff(bounds) >= 0)
    return bounds.shape[0] - 1


def _flatten(result):
    """The arrays of a result (nested tuples, dicts and objects with ``unary``)."""
    if isinstance(result, dict):
        return [a for key in sorted(result) for a in _flatten(result[key])]
    if isinstance(result, (tuple, list)):
        return [a for item in result for a in _flatten(item)]
    if hasattr(result, "unary"):
        return _flatten(result.unary)
    return [np.asarray(result)]


def _assert_identical(a, b):
    a, b = _flatten(a), _flatten(b)
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x.shape == y.shape
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(x, y)


def _run(threads, run):
    previous = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        return run()
    finally:
        numba.set_num_threads(previous)


# Every case returns ``run`` (no arguments, the kernel through its caller), the list that
# records the calls of the spied function, where the bounds are among its arguments (an
# index, or None when the chunks are the fixed blocks of a compiled constant), and
# whether the results are those of a single chunk too.


def _top_k_binary(rng, monkeypatch):
    calls = []
    _spy(monkeypatch, _independent_kernels, "top_k_binary", calls)
    scores = MultilabelScores(rng.normal(size=(200, 7)))
    return (lambda: MultilabelDecoder().top_k(scores, 6)), calls, 2, True


def _count_loss_augmented_map(rng, monkeypatch):
    calls = []
    _spy(monkeypatch, _independent_kernels, "count_loss_augmented_map", calls)
    scores = MultilabelScores(rng.normal(size=(200, 9)))
    y = (rng.random((200, 9)) < 0.4).astype(np.int64)
    loss = FBetaLoss()
    return (lambda: MultilabelDecoder().loss_augmented_map(scores, y, loss)), calls, 7, True


def _constrained_table(rng, monkeypatch):
    calls = []
    _spy(monkeypatch, _constrained_kernels, "best_per_statistic", calls)
    scores = random_chain_scores(rng, rng.integers(1, 9, size=60), 3)
    increments = rng.integers(0, 2, size=scores.unary.shape + (2,))
    caps = np.repeat(scores.lengths[:, None], 2, axis=1)

    def run():
        table = _constrained.statistic_table(scores, increments, caps)
        return table.best, table.stats

    return run, calls, 10, True


def _constrained_backtrack(rng, monkeypatch):
    calls = []
    _spy(monkeypatch, _constrained_kernels, "best_with_statistic", calls)
    scores = random_chain_scores(rng, rng.integers(1, 9, size=60), 3)
    increments = rng.integers(0, 3, size=scores.unary.shape + (2,))
    caps = rng.integers(0, 5, size=(scores.n_sequences, 2))
    table = _constrained.statistic_table(scores, increments, caps)
    targets = rng.integers(0, np.diff(table.table_offsets))
    return (lambda: _constrained.best_with_statistic(scores, increments, caps, targets)), \
        calls, 13, True


def _sparsemax(rng, monkeypatch):
    calls = []
    _spy(monkeypatch, closed_form_kernels, "class_support", calls)
    scores = MulticlassScores(rng.normal(size=(300, 6)))

    def run():
        result = sparsemax_sparsemap(MulticlassDecoder(), scores)
        support = result._support
        return result.unary, result.objective, support.ptr, support.classes, support.weights

    return run, calls, 4, True


def _clip(rng, monkeypatch):
    calls = []
    _spy(monkeypatch, closed_form_kernels, "staircase_combine", calls)
    scores = MultilabelScores(rng.normal(0.5, 0.7, size=(300, 6)))

    def run():
        result = clip_sparsemap(MultilabelDecoder(), scores)
        support = result._support
        coefficients = np.arange(result.n_examples * 7, dtype=float).reshape(-1, 7)
        return (result.unary, result.objective, support.ptr, support.counts,
                support.weights, support._rank, result.combine(coefficients))

    return run, calls, 5, True


def _csr_matmul(rng, monkeypatch):
    calls = []
    _spy(monkeypatch, _sparse, "_csr_matmul", calls)
    matrix = sp.random(500, 40, density=0.2, format="csr", random_state=2)
    dense = rng.normal(size=(40, 5))
    return (lambda: _sparse.csr_matmul(matrix, dense)), calls, 4, True


def _csr_transpose_matmul(rng, monkeypatch):
    calls = []
    _spy(monkeypatch, _sparse, "_scatter_transpose_matmul", calls)
    matrix = sp.random(3000, 20, density=0.5, format="csr", random_state=3)
    dense = rng.normal(size=(3000, 4))
    # the chunks' buffers are summed in chunk order: the same for any thread count, not
    # the sum of a single chunk
    return (lambda: _sparse.csr_transpose_matmul(matrix, dense)), calls, 5, False


def _lbfgs_products(rng, monkeypatch):
    n = 3 * _lbfgs._CHUNK + 17
    grad = rng.normal(size=n)
    pairs = [(rng.normal(size=n), rng.normal(size=n), 1.0 / (1.0 + k)) for k in range(3)]

    def run():
        return _lbfgs._inner(grad, pairs[0][0]), _lbfgs._two_loop(grad, pairs)

    return run, None, None, False


def _column_dictionary(rng, monkeypatch):
    calls = []
    _spy(monkeypatch, _compiled, "_to_engine_rows", calls)
    lengths = rng.integers(1, 8, size=120)
    row_offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    nnz_per_row = rng.integers(1, 6, size=row_offsets[-1])
    indptr = np.concatenate(([0], np.cumsum(nnz_per_row))).astype(np.int64)
    indices = rng.integers(0, 16, size=indptr[-1]).astype(np.int32)

    def run():
        dictionary = _compiled.column_dictionary(indices, indptr, row_offsets, 16)
        assert dictionary  # the kernels ran to the end
        return dictionary

    return run, calls, 5, True


def _arc_features(rng, monkeypatch):
    calls = []
    _spy(monkeypatch, _arc_vectorizer, "_fill_features", calls)
    tags = np.array(["A", "B", "C", "D"])
    sentences = [(list(rng.choice(np.array(["x", "y", "z", "w", "v"]), size=n)),
                  list(rng.choice(tags, size=n))) for n in rng.integers(1, 12, size=60)]
    vectorizer = ArcVectorizer(min_word_count=1).fit(sentences)
    assert sum(len(w) ** 2 for w, _ in sentences) * 35 > 2 * \
        _arc_vectorizer._POSITIONS_PER_CHUNK  # _to_positions runs several chunks

    def run():
        stacked, offsets = vectorizer.transform_stacked(sentences)
        batch = vectorizer.transform_batch(sentences)
        rows = batch.rows
        return (stacked.indices, stacked.indptr, offsets, rows.indices, rows.indptr,
                rows.column_order)

    return run, calls, 11, True


CASES = {
    "top_k_binary": _top_k_binary,
    "count_loss_augmented_map": _count_loss_augmented_map,
    "constrained_table": _constrained_table,
    "constrained_backtrack": _constrained_backtrack,
    "sparsemax": _sparsemax,
    "clip_staircase": _clip,
    "csr_matmul": _csr_matmul,
    "csr_transpose_matmul": _csr_transpose_matmul,
    "lbfgs_products": _lbfgs_products,
    "column_dictionary": _column_dictionary,
    "arc_features": _arc_features,
}


@pytest.mark.parametrize("name", list(CASES))
def test_chunked_kernel_gives_the_same_results_on_one_and_two_threads(name, monkeypatch):
    rng = np.random.default_rng(sum(map(ord, name)))
    monkeypatch.setattr(_parallel, "MIN_WORK_PER_THREAD", 1)
    run, calls, where, chunk_free = CASES[name](rng, monkeypatch)
    monkeypatch.setattr(_chunks, "WORK_PER_CHUNK", 1)
    one = _run(1, run)
    two = _run(2, run)
    if calls is not None:
        assert len(calls) >= 2
        assert all(_n_chunks(args[where]) >= MIN_CHUNKS for args in calls)
    _assert_identical(one, two)
    if chunk_free:
        monkeypatch.setattr(_chunks, "WORK_PER_CHUNK", 10**15)
        del calls[:]
        single = _run(2, run)
        assert all(_n_chunks(args[where]) == 1 for args in calls)
        _assert_identical(one, single)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_cutting_plane_pass_gives_the_same_model_on_one_and_two_threads(monkeypatch):
    """constraint_pass over many chunks of examples (the plane summed in example order)."""
    from test_solver_input_forms import make_data

    monkeypatch.setattr(_parallel, "MIN_WORK_PER_THREAD", 1)
    calls = []
    _spy(monkeypatch, _cutting_plane, "constraint_pass", calls)
    X, y = make_data("sequence", "sparse", seed=5)
    X, y = X * 8, y * 8  # 96 sequences
    models = []
    for n_jobs in (1, 2):
        model = StructuredSVM(alpha=0.1, solver="cutting_plane", max_iter=4, n_jobs=n_jobs)
        models.append(model.fit(X, y))
    assert len(calls) >= 2
    assert all(_n_chunks(args[-1]) >= MIN_CHUNKS for args in calls)
    one, two = models
    _assert_identical((one.coef_, one.objective_curve_), (two.coef_, two.objective_curve_))
