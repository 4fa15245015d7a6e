import numpy as np
import pytest
import scipy.sparse as sp

from skstruct.decoders import ChainDecoder, MulticlassDecoder, MulticlassScores
from skstruct.features import LinearChainFeatures, LinearFeatures
from skstruct.losses import CRFLoss, StructuredHingeLoss
from skstruct.optim import RegularizedRisk
from skstruct.utils import SequenceBatch


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("cost", [None, "hamming"])
def test_gradient_with_respect_to_the_weights(rng, sparse, cost):
    offsets = np.array([0, 3, 4, 8])
    X = rng.normal(size=(8, 5))
    X = sp.csr_matrix(np.where(X > 0, X, 0.0)) if sparse else X
    y = rng.integers(0, 3, size=8)
    features = LinearChainFeatures(5, 3)
    risk = RegularizedRisk(features, SequenceBatch(X, offsets), y, ChainDecoder(),
                           CRFLoss(cost=cost), alpha=0.3, sample_weight=np.array([1.0, 2.0, 0.5]))
    w = rng.normal(size=features.n_params)
    _, grad = risk.value_and_gradient(w)
    eps = 1e-6
    numeric = np.array([
        (risk.value_and_gradient(w + eps * e)[0] - risk.value_and_gradient(w - eps * e)[0])
        / (2 * eps)
        for e in np.eye(features.n_params)
    ])
    np.testing.assert_allclose(grad, numeric, atol=1e-6)


def _chain_risk(rng, sparse, loss):
    offsets = np.array([0, 3, 4, 8, 10])
    X = rng.normal(size=(10, 5))
    X = sp.csr_matrix(np.where(X > 0, X, 0.0)) if sparse else X
    y = rng.integers(0, 3, size=10)
    features = LinearChainFeatures(5, 3)
    return RegularizedRisk(features, SequenceBatch(X, offsets), y, ChainDecoder(), loss,
                           alpha=0.3, sample_weight=np.array([1.0, 2.0, 0.5, 1.0]))


def _multiclass_risk(rng, loss):
    X = rng.normal(size=(6, 4))
    y = rng.integers(0, 3, size=6)
    features = LinearFeatures(4, 3, MulticlassScores)
    return RegularizedRisk(features, SequenceBatch(X, np.arange(7)), y, MulticlassDecoder(),
                           loss, alpha=0.1, sample_weight=np.ones(6))


def _dense(risk, indices, values):
    assert len(indices) == len(values)
    assert len(np.unique(indices)) == len(indices)
    out = np.zeros(risk.n_params)
    out[indices] = values
    return out


def _example_value(risk, i, w):
    return risk.example_value_and_gradient(i, w)[0]


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("loss", [CRFLoss(), StructuredHingeLoss("hamming", "margin"),
                                  StructuredHingeLoss("hamming", "slack")],
                         ids=["crf", "hinge-margin", "hinge-slack"])
def test_example_gradient_matches_finite_differences(rng, sparse, loss):
    risk = _chain_risk(rng, sparse, loss)
    w = rng.normal(size=risk.n_params)
    eps = 1e-6
    checked = 0
    for i in range(risk.n_examples):
        value, indices, values = risk.example_value_and_gradient(i, w)
        grad = _dense(risk, indices, values)
        numeric = np.array([
            (_example_value(risk, i, w + eps * e) - _example_value(risk, i, w - eps * e))
            / (2 * eps) for e in np.eye(risk.n_params)
        ])
        # the hinge is piecewise linear: a random w is almost surely not on a kink
        np.testing.assert_allclose(grad, numeric, atol=1e-5)
        np.testing.assert_array_equal(_dense(risk, *risk.example_gradient(i, w)), grad)
        checked += 1
    assert checked == risk.n_examples == 4


def test_example_values_add_up_to_the_objective(rng):
    risk = _chain_risk(rng, False, CRFLoss())
    w = rng.normal(size=risk.n_params)
    values = np.array([_example_value(risk, i, w) for i in range(risk.n_examples)])
    grads = np.array([_dense(risk, *risk.example_gradient(i, w))
                      for i in range(risk.n_examples)])
    value, grad = risk.value_and_gradient(w)
    assert values.shape == (4,)
    np.testing.assert_allclose(risk.weights @ values + 0.15 * w @ w, value, rtol=1e-12)
    np.testing.assert_allclose(risk.weights @ grads + 0.3 * w, grad, atol=1e-12)


def test_example_gradient_multiclass(rng):
    risk = _multiclass_risk(rng, StructuredHingeLoss("hamming", "margin"))
    w = rng.normal(size=risk.n_params)
    eps = 1e-6
    for i in range(risk.n_examples):
        grad = _dense(risk, *risk.example_gradient(i, w))
        numeric = np.array([
            (_example_value(risk, i, w + eps * e) - _example_value(risk, i, w - eps * e))
            / (2 * eps) for e in np.eye(risk.n_params)
        ])
        np.testing.assert_allclose(grad, numeric, atol=1e-5)


def test_example_index_out_of_range(rng):
    risk = _chain_risk(rng, False, CRFLoss())
    with pytest.raises(IndexError, match="out of range"):
        risk.example_value_and_gradient(4, np.zeros(risk.n_params))


class _WithoutZeroScores:
    """The feature map without ``zero_scores``: gold parts come from scores at w = 0."""

    def __init__(self, features):
        self._features = features
        self.scored_at = []

    def __getattr__(self, name):
        if name == "zero_scores":
            raise AttributeError(name)
        return getattr(self._features, name)

    def scores(self, batch, w):
        self.scored_at.append(np.array(w))
        return self._features.scores(batch, w)


class _CountingProducts:
    """The feature map, counting its matrix products."""

    def __init__(self, features):
        self._features = features
        self.n_scores = 0

    def __getattr__(self, name):
        return getattr(self._features, name)

    def scores(self, batch, w):
        self.n_scores += 1
        return self._features.scores(batch, w)


def _part_arrays(parts):
    return {name: value for name, value in vars(parts).items() if isinstance(value, np.ndarray)}


@pytest.mark.parametrize("kind", ["chain", "multiclass"])
def test_gold_parts_are_equal_with_and_without_zero_scores(rng, kind):
    risk = _chain_risk(rng, True, CRFLoss()) if kind == "chain" else _multiclass_risk(
        rng, CRFLoss())
    w = rng.normal(size=risk.n_params)
    expected = risk.decoder.parts(risk.features.scores(risk.batch, w), risk.y)

    counting = _CountingProducts(risk.features)
    with_zero = RegularizedRisk(counting, risk.batch, risk.y, risk.decoder, risk.loss,
                                risk.alpha, risk.sample_weight)
    gold = with_zero.gold_parts()
    assert counting.n_scores == 0  # zero_scores: no matrix product
    assert with_zero.gold_parts() is gold  # computed once

    fallback_features = _WithoutZeroScores(risk.features)
    fallback = RegularizedRisk(fallback_features, risk.batch, risk.y, risk.decoder,
                               risk.loss, risk.alpha, risk.sample_weight)
    gold_fallback = fallback.gold_parts()
    assert len(fallback_features.scored_at) == 1
    assert not np.any(fallback_features.scored_at[0])

    arrays, arrays_fallback = _part_arrays(gold), _part_arrays(gold_fallback)
    assert arrays.keys() == _part_arrays(expected).keys() == arrays_fallback.keys()
    assert len(arrays) >= 1
    for name, value in _part_arrays(expected).items():
        np.testing.assert_array_equal(arrays[name], value)
        np.testing.assert_array_equal(arrays_fallback[name], value)
