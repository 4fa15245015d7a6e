"""Factor-graph training at the size of real multilabel data: evaluations over chunks of
examples give the whole batch's objective and gradient, and BCFW's loss-augmented LP-MAP
starts every example from its own previous ADMM state."""

import warnings

import numpy as np
import pytest

import skstruct.decoders._factor_graph.admm_compiled as admm_compiled
import skstruct.decoders._factor_graph.memory as memory
from skstruct import SparseMAPClassifier, StructuredSVM
from skstruct.decoders import FactorGraph, FactorGraphDecoder
from skstruct.features import FactorGraphFeatures
from skstruct.decoders import FactorGraphScores
from skstruct.losses import SparseMAPLoss, StructuredHingeLoss
from skstruct.optim import RegularizedRisk
from skstruct.optim._bcfw_pairwise import oracle_group_size
from skstruct.utils._sequences import SequenceBatch


def _data(n, n_labels, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 8))
    Y = (X[:, :1] + rng.normal(size=(n, n_labels)) > 1.0).astype(np.int64)
    return X, Y


def _risk(loss, X, Y, decoder, sample_weight):
    n, n_labels = Y.shape
    features = FactorGraphFeatures(X.shape[1], n_labels, decoder.graph.n_pairs,
                                   FactorGraphScores)
    batch = SequenceBatch(X, np.arange(n + 1))
    return RegularizedRisk(features, batch, Y, decoder, loss, 1e-2, sample_weight)


def _force_chunks(monkeypatch, graph, per_chunk):
    """Chunks of ``per_chunk`` examples, in the generic evaluation (the fused pairwise
    LP-SparseMAP pass, which holds nothing of size n_examples × n_pairs, has none)."""
    budget = per_chunk * 8 * memory._chunk_work(graph.flat())
    monkeypatch.setattr(memory, "EVALUATION_CHUNK_BYTES", budget)
    monkeypatch.setattr(FactorGraphFeatures, "compiled_objective", lambda *args: None)


@pytest.mark.parametrize("loss", [SparseMAPLoss(), StructuredHingeLoss("hamming")],
                         ids=["lp_sparsemap", "hinge"])
def test_chunked_evaluation_gives_the_whole_batch_objective(monkeypatch, loss):
    X, Y = _data(230, 9)
    graph = FactorGraph.pairwise(9)
    weights = np.random.default_rng(1).uniform(0.5, 2.0, size=230)
    w = np.random.default_rng(2).normal(size=(8 + 1) * 9 + graph.n_pairs) * 0.5
    decoder = FactorGraphDecoder(graph, tol=1e-9, max_iter=5000)
    whole = _risk(loss, X, Y, decoder, weights)
    assert whole.evaluation_chunks() is None
    value, grad = whole.value_and_gradient(w)
    values = whole.loss_values(w)
    _force_chunks(monkeypatch, graph, 50)
    chunked = _risk(loss, X, Y, decoder, weights)
    chunks = chunked.evaluation_chunks()
    # 230 examples in chunks of 50: five chunks, the last one of 30
    assert [stop - start for _, _, start, stop in chunks] == [50, 50, 50, 50, 30]
    for _ in range(2):  # the second evaluation starts from the chunks' warm starts
        chunked_value, chunked_grad = chunked.value_and_gradient(w)
        np.testing.assert_allclose(chunked_value, value, rtol=1e-9)
        np.testing.assert_allclose(chunked_grad, grad, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(chunked.loss_values(w), values, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(chunked.value(w), value, rtol=1e-9)


def test_chunked_lp_sparsemap_fit_is_the_whole_batch_fit(monkeypatch):
    X, Y = _data(300, 8)
    graph = FactorGraph.pairwise(8)

    def fit():
        model = SparseMAPClassifier(alpha=1e-2, decoder=FactorGraphDecoder(graph),
                                    max_iter=25)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return model.fit(X, Y)

    whole = fit()
    _force_chunks(monkeypatch, graph, 64)
    chunked = fit()
    np.testing.assert_allclose(chunked.objective_curve_, whole.objective_curve_,
                               rtol=1e-8)
    np.testing.assert_allclose(chunked.coupling_, whole.coupling_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(chunked.coef_, whole.coef_, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("loss_augmented", ["relaxed", "rounded"])
def test_chunked_cutting_plane_fit_is_the_whole_batch_fit(monkeypatch, loss_augmented):
    # the one-slack cutting plane builds its constraints over the decoder's chunks of
    # examples (each chunk warm-started from its own last LP-MAP); every example's
    # ADMM is the same, only the plane's sums are taken in another order
    X, Y = _data(160, 6)
    graph = FactorGraph.pairwise(6)
    sample_weight = np.random.default_rng(3).uniform(0.5, 2.0, size=160)

    def fit():
        decoder = FactorGraphDecoder(graph, loss_augmented=loss_augmented, tol=1e-7,
                                     max_iter=300)
        model = StructuredSVM(decoder, alpha=1e-2, solver="cutting_plane", max_iter=12)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return model.fit(X, Y, sample_weight=sample_weight)

    whole = fit()
    _force_chunks(monkeypatch, graph, 48)
    assert FactorGraphDecoder(graph).evaluation_chunk_size(160) == 48
    chunked = fit()
    assert chunked.n_iter_ == whole.n_iter_ and whole.n_iter_ > 3
    np.testing.assert_allclose(chunked.objective_curve_, whole.objective_curve_,
                               rtol=1e-8)
    np.testing.assert_allclose(chunked.coupling_, whole.coupling_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(chunked.coef_, whole.coef_, rtol=1e-6, atol=1e-8)


def test_chunks_keep_only_the_warm_start_of_every_example(monkeypatch):
    X, Y = _data(200, 10)
    graph = FactorGraph.pairwise(10)
    _force_chunks(monkeypatch, graph, 40)
    risk = _risk(SparseMAPLoss(), X, Y, FactorGraphDecoder(graph), np.ones(200))
    risk.value_and_gradient(np.zeros(risk.n_params))
    kept = [risk._warm_start[("chunk", c)]["result"] for c in range(5)]
    for state in kept:
        admm = state.admm
        assert admm.lam.shape == (40, graph.flat().n_entries)
        # no marginals, scores or backward state beside u, λ' and ρ
        assert admm.v.size == 0 and admm.a.size == 0 and admm.s.size == 0
        assert not hasattr(state, "marginals")


def _counting_admm(monkeypatch):
    counts = []
    original = admm_compiled.admm_batch_compiled

    def counting(*args, **kwargs):
        result = original(*args, **kwargs)
        # a group of BCFW's oracle pass (not the duality gap's batch of all examples)
        if result.n_iter.shape[0] < 150:
            counts.append(int(result.n_iter.sum()))
        return result

    monkeypatch.setattr(admm_compiled, "admm_batch_compiled", counting)
    return counts


def test_bcfw_warm_starts_every_oracle_group_from_its_last_lp_map(monkeypatch):
    X, Y = _data(150, 10)
    graph = FactorGraph.pairwise(10)

    def fit():
        model = StructuredSVM(FactorGraphDecoder(graph), alpha=1e-2, max_iter=8,
                              tol=0.0, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return model.fit(X, Y)

    counts = _counting_admm(monkeypatch)
    warm = fit()
    warm_iterations = sum(counts)
    # one call per group of examples per pass
    assert len(counts) == 8 * -(-150 // oracle_group_size(150))
    counts.clear()
    relaxed = FactorGraphDecoder.relaxed_loss_augmented_map

    def cold_start(self, *args, warm_start=None, **kwargs):
        return relaxed(self, *args, **kwargs)

    monkeypatch.setattr(FactorGraphDecoder, "relaxed_loss_augmented_map", cold_start)
    cold = fit()
    cold_iterations = sum(counts)
    # the same fit to the ADMM's tolerance, in fewer ADMM iterations of the steps
    # (measured: 17,722 against 22,390 over the 8 passes, in groups of one example)
    assert len(counts) == 8 * -(-150 // oracle_group_size(150))
    np.testing.assert_allclose(warm.objective_curve_, cold.objective_curve_, rtol=1e-4)
    np.testing.assert_allclose(warm.duality_gaps_, cold.duality_gaps_, rtol=1e-3,
                               atol=1e-6)
    assert warm_iterations < 0.9 * cold_iterations, (warm_iterations, cold_iterations)
