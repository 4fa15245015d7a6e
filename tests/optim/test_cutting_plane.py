"""The cutting plane's compiled constraint pass equals the batched path on every built-in
decoder, with and without the inference cache; a user's decoder gets the batched path."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import skstruct.optim._cutting_plane as cutting_plane_module
from skstruct import StructuredSVM
from skstruct.decoders import ChainDecoder, MulticlassDecoder, MultilabelDecoder, TreeDecoder
from skstruct.features import LinearChainFeatures
from skstruct.losses import FBetaLoss, HammingLoss, StructuredHingeLoss
from skstruct.optim import RegularizedRisk, minimize_cutting_plane
from skstruct.utils import SequenceBatch

_offer = cutting_plane_module._CompiledConstraints.offer


class _Spy:
    """Records whether the compiled source was offered; refuses it for the batched path."""

    def __init__(self, batched):
        self.batched, self.offers = batched, []

    def __call__(self, risk, cache_size):
        source = None if self.batched else _offer(risk, cache_size)
        self.offers.append(source)
        return source


def _params(model):
    names = ("coef_", "intercept_", "transition_", "start_transition_", "end_transition_")
    return {name: np.asarray(getattr(model, name)) for name in names if hasattr(model, name)}


def _fit_both_ways(monkeypatch, make_model, X, y, sample_weight):
    models = []
    for batched in (False, True):
        spy = _Spy(batched)
        with monkeypatch.context() as patch:
            patch.setattr(cutting_plane_module._CompiledConstraints, "offer", spy)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # convergence is not the point
                models.append(make_model().fit(X, y, sample_weight=sample_weight))
        assert len(spy.offers) == 1
        if not batched:
            assert spy.offers[0] is not None, "the compiled pass was not offered"
    compiled, batched = models
    a, b = _params(compiled), _params(batched)
    assert a.keys() == b.keys() and a
    for name in a:
        assert a[name].shape == b[name].shape, name
        scale = max(1.0, float(np.abs(b[name]).max(initial=0.0)))
        np.testing.assert_allclose(a[name], b[name], rtol=0, atol=1e-8 * scale, err_msg=name)
    assert compiled.n_iter_ == batched.n_iter_ > 1
    np.testing.assert_allclose(compiled.objective_curve_, batched.objective_curve_,
                               rtol=1e-9)
    np.testing.assert_allclose(compiled.duality_gaps_, batched.duality_gaps_, rtol=1e-7,
                               atol=1e-10)


@pytest.mark.parametrize("loss,rescaling", [
    ("hamming", "margin"), ("hamming", "slack"), ("f1", "margin"), ("f1", "slack"),
    ("zero_one", "margin"), ("weighted_hamming", "margin")])
def test_chain_compiled_equals_batched(monkeypatch, sequences, loss, rescaling):
    X, y, weights = sequences
    task_loss = HammingLoss(class_costs=[1.0, 2.5, 0.5]) if loss == "weighted_hamming" \
        else loss

    def make_model():
        return StructuredSVM(loss=task_loss, rescaling=rescaling, solver="cutting_plane",
                             alpha=0.05, max_iter=8, tol=0.0)

    _fit_both_ways(monkeypatch, make_model, X, y, weights)


@pytest.mark.parametrize("rescaling", ["margin", "slack"])
def test_multiclass_compiled_equals_batched(monkeypatch, tabular, rescaling):
    X, classes, _, weights = tabular

    def make_model():
        return StructuredSVM(decoder=MulticlassDecoder(), rescaling=rescaling,
                             solver="cutting_plane", alpha=0.05, max_iter=8, tol=0.0)

    _fit_both_ways(monkeypatch, make_model, X, classes, weights)


@pytest.mark.parametrize("loss,rescaling", [("hamming", "margin"), ("f1", "slack")])
def test_multilabel_takes_the_batched_path(monkeypatch, tabular, loss, rescaling):
    # A multilabel y is an (n_samples, n_labels) matrix with one output offset per sample,
    # not the stacked layout the compiled oracle reads: the batched path is used.
    X, _, labels, weights = tabular
    spy = _Spy(batched=False)
    monkeypatch.setattr(cutting_plane_module._CompiledConstraints, "offer", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = StructuredSVM(decoder=MultilabelDecoder(), loss=loss, rescaling=rescaling,
                              solver="cutting_plane", alpha=0.05, max_iter=8,
                              tol=0.0).fit(X, labels, sample_weight=weights)
    assert spy.offers == [None]
    assert model.predict(X).shape == labels.shape


def test_tree_compiled_equals_batched(monkeypatch):
    rng = np.random.default_rng(2)
    X, y = [], []
    for n in rng.integers(1, 6, size=20):
        dense = rng.normal(size=(n * n, 5))
        X.append(sp.csr_matrix(np.where(dense > 0.0, dense, 0.0)))
        y.append(np.array([rng.integers(0, m + 1) if m else 0 for m in range(n)]))

    def make_model():
        return StructuredSVM(decoder=TreeDecoder(), solver="cutting_plane", alpha=0.05,
                             max_iter=8, tol=0.0)

    _fit_both_ways(monkeypatch, make_model, X, y, rng.uniform(0.5, 2.0, size=len(X)))


def _chain_risk(loss, sequences):
    X, y, weights = sequences
    codes = {"O": 0, "A": 1, "B": 2}
    offsets = np.concatenate(([0], np.cumsum([x.shape[0] for x in X])))
    encoded = np.array([codes[s] for labels in y for s in labels])
    return RegularizedRisk(LinearChainFeatures(6, 3), SequenceBatch(sp.vstack(X).tocsr(),
                           offsets), encoded, ChainDecoder(), loss, 0.05, weights)


@pytest.mark.parametrize("cache_size", [0, 3])
def test_private_keyword_forces_the_batched_path(sequences, cache_size):
    f1 = FBetaLoss().with_positive_states(np.array([False, True, True]))
    risk = _chain_risk(StructuredHingeLoss(f1, "slack"), sequences)
    compiled = minimize_cutting_plane(risk, max_iter=10, tol=0.0, cache_size=cache_size)
    batched = minimize_cutting_plane(risk, max_iter=10, tol=0.0, cache_size=cache_size,
                                     _force_python=True)
    assert compiled.extra["compiled"] and not batched.extra["compiled"]
    assert compiled.n_evaluations == batched.n_evaluations == 10
    assert compiled.extra["n_planes"] == batched.extra["n_planes"]
    if cache_size:
        assert compiled.extra["n_planes"] > compiled.n_evaluations  # the cache served
    np.testing.assert_allclose(compiled.w, batched.w, rtol=0, atol=1e-9)
    np.testing.assert_allclose(compiled.objective_curve, batched.objective_curve, rtol=1e-9)


def test_user_decoder_gets_the_batched_path(sequences):
    class MyChainDecoder(ChainDecoder):
        def loss_augmented_map(self, scores, y_true, task_loss, rescaling="margin"):
            return super().loss_augmented_map(scores, y_true, task_loss, rescaling)

    risk = _chain_risk(StructuredHingeLoss("hamming", "margin"), sequences)
    reference = minimize_cutting_plane(risk, max_iter=6, tol=0.0)
    risk.decoder = MyChainDecoder()
    result = minimize_cutting_plane(risk, max_iter=6, tol=0.0)
    assert reference.extra["compiled"] and not result.extra["compiled"]
    np.testing.assert_allclose(result.w, reference.w, rtol=0, atol=1e-9)


def test_the_plane_does_not_depend_on_the_number_of_threads(sequences):
    import numba

    f1 = FBetaLoss().with_positive_states(np.array([False, True, True]))
    risk = _chain_risk(StructuredHingeLoss(f1, "slack"), sequences)
    runs = []
    for n_threads in (1, numba.config.NUMBA_NUM_THREADS):
        previous = numba.get_num_threads()
        numba.set_num_threads(n_threads)
        try:
            runs.append(minimize_cutting_plane(risk, max_iter=10, tol=0.0, cache_size=3))
        finally:
            numba.set_num_threads(previous)
    assert runs[0].extra["compiled"]
    np.testing.assert_array_equal(runs[0].w, runs[1].w)
    np.testing.assert_array_equal(runs[0].objective_curve, runs[1].objective_curve)


def test_converges_to_tol_and_reports_progress(sequences):
    risk = _chain_risk(StructuredHingeLoss("hamming", "margin"), sequences)
    lines, seen = [], []
    result = minimize_cutting_plane(risk, max_iter=500, tol=1e-4, verbose=1,
                                    printer=lines.append,
                                    callback=lambda k, w, value: seen.append(k) and False)
    assert result.converged and "tol" in result.message
    assert len(lines) == len(seen) == result.n_iter == len(result.duality_gaps)
    assert seen == list(range(1, result.n_iter + 1))
    assert "gap" in lines[0] and "planes" in lines[0]
    stopped = minimize_cutting_plane(risk, max_iter=500, tol=1e-4,
                                     callback=lambda k, w, value: k == 3)
    assert stopped.n_iter == 3 and stopped.message.startswith("stopped by callback")
    assert not stopped.converged
    # a run stopped by its callback returns its best evaluated iterate
    assert risk.value(stopped.w) == pytest.approx(min(stopped.objective_curve), rel=1e-10)
