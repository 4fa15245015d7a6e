"""The memory estimate of factor-graph fits: it bounds the measured peak, and the limit
raises before anything of the fit is allocated."""

import ctypes
import gc
import warnings
from pathlib import Path

import numpy as np
import pytest

import skstruct.decoders._factor_graph.admm_compiled as admm_compiled
import skstruct.decoders._factor_graph.memory as memory
from skstruct import SparseMAPClassifier, StructuredSVM
from skstruct.decoders import FactorGraph, FactorGraphDecoder, FactorGraphMemoryError
from skstruct.decoders import FactorGraphScores
from skstruct.features import FactorGraphFeatures
from skstruct.losses import SparseMAPLoss

linux_only = pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(),
                                reason="peak resident size from /proc (Linux)")


def _data(n, n_labels, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 8))
    Y = (X[:, :1] + rng.normal(size=(n, n_labels)) > 1.0).astype(np.int64)
    return X, Y


def _model(learner, decoder, max_iter):
    if learner == "lp_sparsemap":
        return SparseMAPClassifier(alpha=1e-2, decoder=decoder, max_iter=max_iter)
    return StructuredSVM(decoder, alpha=1e-2, solver=learner, max_iter=max_iter)


def _loss(learner):
    """The training loss of ``learner`` as the estimate reads it."""
    return SparseMAPLoss() if learner == "lp_sparsemap" else None


def _status(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


@linux_only
@pytest.mark.parametrize("learner,chunked", [
    ("cutting_plane", False), ("bcfw", False), ("lp_sparsemap", False),
    ("cutting_plane", True), ("bcfw", True), ("lp_sparsemap", True)])
def test_memory_estimate_bounds_the_measured_peak(monkeypatch, learner, chunked):
    X, Y = _data(1500, 60)
    decoder = FactorGraphDecoder(FactorGraph.pairwise(60), max_iter=50, tol=1e-4)
    work = memory._chunk_work(decoder.graph.flat())
    if chunked:
        # evaluations over 10 chunks of 150 examples: the estimate and the peak shrink
        monkeypatch.setattr(memory, "EVALUATION_CHUNK_BYTES", 150 * 8 * work)
        assert decoder.evaluation_chunk_size(X.shape[0]) == 150
    else:
        # one evaluation of all the examples
        monkeypatch.setattr(memory, "EVALUATION_CHUNK_BYTES", 1500 * 8 * work)
        assert decoder.evaluation_chunk_size(X.shape[0]) is None
    solver = learner if learner == "cutting_plane" else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _model(learner, decoder, 2).fit(X[:20], Y[:20])        # compile first
        # memory freed by earlier tests, kept by the allocator, would hide the fit's
        # growth: hand it back to the system first
        gc.collect()
        ctypes.CDLL(None).malloc_trim(0)
        Path("/proc/self/clear_refs").write_text("5")           # reset the peak
        before = _status("VmRSS")
        _model(learner, decoder, 3).fit(X, Y)
    peak = _status("VmHWM") - before
    estimate = decoder.estimate_memory(X.shape[0], solver=solver, loss=_loss(learner),
                                       n_features=X.shape[1])["fit_bytes"]
    # the estimate bounds the peak, and is of its size (not a bound by far)
    assert peak <= estimate, (peak, estimate)
    assert estimate <= 4 * peak, (peak, estimate)


def test_memory_estimate_grows_with_the_examples_and_the_pairs():
    small = FactorGraphDecoder(FactorGraph.pairwise(20)).estimate_memory(100)
    assert FactorGraphDecoder(FactorGraph.pairwise(20)).estimate_memory(200)[
        "fit_bytes"] == 2 * small["fit_bytes"]
    large = FactorGraphDecoder(FactorGraph.pairwise(40)).estimate_memory(100)
    # 780 pairs against 190: about four times the bytes of the arrays (beside the
    # objects kept per example, whose size does not depend on the graph)
    objects = 100 * memory._PER_EXAMPLE_OBJECTS
    assert large["fit_bytes"] > small["fit_bytes"]
    ratio = (large["fit_bytes"] - objects) / (small["fit_bytes"] - objects)
    assert 3.5 < ratio < 4.5, ratio
    assert large["n_factors"] == 780 and large["n_entries"] == 1560


@pytest.mark.parametrize("learner", ["cutting_plane", "bcfw", "subgradient",
                                     "lp_sparsemap"])
def test_memory_limit_raises_before_the_fit_allocates(monkeypatch, learner):
    X, Y = _data(300, 30)
    decoder = FactorGraphDecoder(FactorGraph.pairwise(30))
    solver = learner if learner == "cutting_plane" else None
    estimate = decoder.estimate_memory(X.shape[0], solver=solver, loss=_loss(learner),
                                       n_features=X.shape[1])["fit_bytes"]
    decoder.set_params(max_memory=estimate / 2)
    calls = []

    def record(name, original):
        def wrapper(*args, **kwargs):
            calls.append(name)
            return original(*args, **kwargs)
        return wrapper

    # what allocates the arrays that grow with the graph: the scores of the batch and
    # the ADMM
    monkeypatch.setattr(FactorGraphFeatures, "scores",
                        record("scores", FactorGraphFeatures.scores))
    monkeypatch.setattr(admm_compiled, "admm_batch_compiled",
                        record("admm", admm_compiled.admm_batch_compiled))
    with pytest.raises(FactorGraphMemoryError) as error:
        _model(learner, decoder, 2).fit(X, Y)
    assert calls == []
    message = str(error.value)
    from skstruct.decoders._factor_graph.memory import format_bytes

    assert format_bytes(estimate) in message
    assert "30 variables" in message and "435 PAIR" in message
    assert "max_memory" in message and "pairs=" in message
    assert isinstance(error.value, MemoryError) and isinstance(error.value, ValueError)


def test_memory_limit_raises_before_a_solve_allocates(monkeypatch):
    decoder = FactorGraphDecoder(FactorGraph.pairwise(30), max_memory=1e5)
    scores = FactorGraphScores(np.zeros((100, 30)), np.zeros((100, 435)))
    calls = []
    monkeypatch.setattr(admm_compiled, "admm_batch_compiled",
                        lambda *args, **kwargs: calls.append(1))
    for solve in (decoder.map, decoder.sparsemap, decoder.lp_map):
        with pytest.raises(FactorGraphMemoryError, match="The factor-graph ADMM needs"):
            solve(scores)
    assert calls == []


def test_no_memory_limit():
    X, Y = _data(60, 6)
    decoder = FactorGraphDecoder(FactorGraph.pairwise(6), max_memory=None)
    StructuredSVM(decoder, alpha=1e-2, solver="cutting_plane", max_iter=3).fit(X, Y)
    with pytest.raises(ValueError):
        FactorGraphDecoder(FactorGraph.pairwise(6), max_memory=0)._validate_params()


def _bcfw_runs(monkeypatch):
    """The Python BCFW runs with Frank–Wolfe steps started from now on (the factor
    graph has no compiled oracle), recorded as they are built."""
    import functools

    import skstruct.optim._bcfw as bcfw
    import skstruct.optim._solvers as solvers

    # Frank–Wolfe steps, whose blocks these tests read (the default with LP-MAP by
    # ADMM is pairwise steps, tests/test_bcfw_pairwise.py)
    monkeypatch.setattr(solvers, "minimize_bcfw",
                        functools.partial(bcfw.minimize_bcfw, steps="frank_wolfe"))
    runs = []
    build = bcfw._PythonBCFW.__init__

    def record(self, *args, **kwargs):
        build(self, *args, **kwargs)
        runs.append(self)

    monkeypatch.setattr(bcfw._PythonBCFW, "__init__", record)
    return runs


def _bcfw_fit(X, Y, n_labels):
    decoder = FactorGraphDecoder(FactorGraph.pairwise(n_labels), max_iter=50, tol=1e-4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return StructuredSVM(decoder, alpha=1e-2, solver="bcfw", max_iter=3,
                             random_state=0).fit(X, Y)


def test_bcfw_keeps_compact_dual_blocks_and_the_same_fit(monkeypatch):
    from skstruct.decoders._factor_graph.decoder import (CompactFactorGraphParts,
                                                        FactorGraphParts)

    # about 1.4 labels of 40 an example (bibtex: 2.4 of 159)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 8))
    Y = (X[:, :1] + rng.normal(size=(200, 40)) > 2.5).astype(np.int64)
    n_parts = 40 + 780
    runs = _bcfw_runs(monkeypatch)
    compact = _bcfw_fit(X, Y, 40)
    blocks = runs[-1].duals
    assert all(isinstance(block, CompactFactorGraphParts) for block in blocks)
    # the relaxed LP solutions leave most PAIR parts at 0: the blocks take a fraction
    # of their dense bytes (n_examples x n_parts float64)
    kept = sum(block.nbytes for block in blocks)
    assert kept < 0.25 * 200 * n_parts * 8, kept
    # kept as the parts themselves (dense), the fit is the same to the bit
    monkeypatch.delattr(FactorGraphParts, "compact")
    dense = _bcfw_fit(X, Y, 40)
    dense_blocks = runs[-1].duals
    assert all(isinstance(block, FactorGraphParts) for block in dense_blocks)
    np.testing.assert_array_equal(compact.coef_, dense.coef_)
    np.testing.assert_array_equal(compact.objective_curve_, dense.objective_curve_)
    np.testing.assert_array_equal(compact.duality_gaps_, dense.duality_gaps_)
    for block, dense_block in zip(blocks, dense_blocks):
        opened = block.expand()
        np.testing.assert_array_equal(opened.unary, dense_block.unary)
        np.testing.assert_array_equal(opened.pair, dense_block.pair)


def test_compact_parts_give_back_their_values():
    from skstruct.decoders._factor_graph.decoder import FactorGraphParts

    rng = np.random.default_rng(0)
    for density in (0.0, 0.05, 0.5, 0.9, 1.0):
        unary, pair, extra = (rng.normal(size=(1, k)) * (rng.random((1, k)) < density)
                              for k in (7, 21, 3))
        compact = FactorGraphParts(unary, pair, extra).compact()
        # never more bytes than the dense rows
        assert compact.nbytes <= 8 * 31
        opened = compact.expand()
        for got, expected in ((opened.unary, unary), (opened.pair, pair),
                              (opened.extra, extra)):
            assert got.shape == expected.shape
            np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("steps", ["frank_wolfe", "pairwise"])
def test_bcfw_builds_no_batch_of_dual_blocks(monkeypatch, steps):
    import functools
    import tracemalloc

    import skstruct.optim._bcfw as bcfw
    import skstruct.optim._solvers as solvers

    X, Y = _data(300, 60)
    dense_blocks = 300 * (60 + 1770) * 8           # one batch of dense parts, 4.4 MB
    peaks = []
    run_class = bcfw._PythonBCFW if steps == "frank_wolfe" else bcfw.PairwiseBCFW
    build = run_class.__init__

    def traced(self, *args, **kwargs):
        tracemalloc.start()
        try:
            build(self, *args, **kwargs)
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()

    monkeypatch.setattr(run_class, "__init__", traced)
    monkeypatch.setattr(solvers, "minimize_bcfw",
                        functools.partial(bcfw.minimize_bcfw, steps=steps))
    _bcfw_fit(X, Y, 60)
    assert peaks and peaks[-1] < dense_blocks / 2, (peaks, dense_blocks)
