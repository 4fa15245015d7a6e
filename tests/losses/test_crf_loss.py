import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.special import logsumexp

from _chain_data import chain_instances, random_chain_scores
from skstruct.decoders import BruteForceDecoder, ChainDecoder, ChainScores
from skstruct.losses import CRFLoss, HammingLoss, ZeroOneLoss, check_task_loss

LOSSES = [CRFLoss(), CRFLoss(cost="hamming"), CRFLoss(cost=HammingLoss(normalize=True))]


def _labels(scores, seed=0):
    return np.random.default_rng(seed).integers(0, scores.n_states, size=scores.unary.shape[0])


@pytest.mark.parametrize("loss", LOSSES, ids=["log", "softmax-margin", "normalized"])
@given(scores=chain_instances(), seed=st.integers(0, 100))
def test_value_matches_enumeration(loss, scores, seed):
    y = _labels(scores, seed)
    values, _ = loss(ChainDecoder(), scores, y)
    brute = BruteForceDecoder()
    expected = []
    for i, outputs, _, _, theta in brute._enumerate(scores):
        a, b = scores.offsets[i], scores.offsets[i + 1]
        assert i == len(expected) and outputs.shape == (scores.n_states ** (b - a), b - a)
        cost = np.zeros(len(outputs))
        if loss.cost is not None:
            gold = np.tile(y[a:b], len(outputs))
            cost = loss.cost(gold, outputs.ravel(), np.arange(len(outputs) + 1) * (b - a))
        gold_theta = theta[np.flatnonzero((outputs == y[a:b]).all(axis=1))[0]]
        expected.append(logsumexp(theta + cost) - gold_theta)
    assert len(expected) == scores.n_sequences
    np.testing.assert_allclose(values, expected, rtol=0, atol=1e-9, strict=True)
    assert np.all(values >= -1e-12)


@pytest.mark.parametrize("loss", LOSSES, ids=["log", "softmax-margin", "normalized"])
def test_gradient_matches_finite_differences(loss, rng):
    scores = random_chain_scores(rng, [3, 1, 2], n_states=3)
    y = _labels(scores)
    decoder = ChainDecoder()
    _, grad = loss(decoder, scores, y)
    fields = ("unary", "transition", "start", "end")
    eps = 1e-6
    for field in fields:
        base = getattr(scores, field)
        for index in np.ndindex(base.shape):
            values = []
            for sign in (1, -1):
                arrays = {k: getattr(scores, k).copy() for k in fields}
                arrays[field][index] += sign * eps
                shifted = ChainScores(offsets=scores.offsets, **arrays)
                values.append(loss(decoder, shifted, y)[0].sum())
            numeric = (values[0] - values[1]) / (2 * eps)
            analytic = getattr(grad, field)
            analytic = analytic[index] if field == "unary" else analytic[(slice(None),) + index].sum()
            assert numeric == pytest.approx(analytic, abs=1e-6)


def test_zero_for_a_confident_correct_prediction(rng):
    scores = random_chain_scores(rng, [4, 2], n_states=3)
    y = _labels(scores)
    confident = scores.replace(unary=scores.unary + 1e3 * np.eye(3)[y])
    values, grad = CRFLoss()(ChainDecoder(), confident, y)
    np.testing.assert_allclose(values, 0.0, atol=1e-10)
    np.testing.assert_allclose(grad.unary, 0.0, atol=1e-10)


@pytest.mark.parametrize("t", [1e-3, 0.05, 0.5, 1.0, 4.0, 100.0])
def test_temperature_scaling_identity(rng, t):
    """ℓ_{tΩ}(η) = t ℓ_Ω(η / t) for the entropy regularizer Ω = −H."""
    scores = random_chain_scores(rng, [3, 2], n_states=3)
    y = _labels(scores)
    # ℓ_{tΩ}(η) = t log Σ_y exp(θ_y / t) − θ_ȳ, the log loss at temperature t, enumerated.
    expected = []
    for i, outputs, _, _, theta in BruteForceDecoder()._enumerate(scores):
        a, b = scores.offsets[i], scores.offsets[i + 1]
        gold_theta = theta[np.flatnonzero((outputs == y[a:b]).all(axis=1))[0]]
        expected.append(t * logsumexp(theta / t) - gold_theta)
        if t <= 1e-3:  # the zero-temperature limit: the perceptron loss max θ − θ_ȳ
            assert expected[-1] == pytest.approx(theta.max() - gold_theta, abs=1e-2)
    assert len(expected) == 2
    scaled = ChainScores(scores.unary / t, scores.offsets, scores.transition / t,
                         scores.start / t, scores.end / t)
    values, _ = CRFLoss()(ChainDecoder(), scaled, y)
    np.testing.assert_allclose(t * values, expected, rtol=1e-10, atol=1e-12, strict=True)


def test_convex_along_random_directions(rng):
    scores = random_chain_scores(rng, [3, 3], n_states=3)
    y = _labels(scores)
    other = random_chain_scores(rng, [3, 3], n_states=3)
    loss, decoder = CRFLoss(), ChainDecoder()

    def at(s):
        mixed = ChainScores(
            (1 - s) * scores.unary + s * other.unary, scores.offsets,
            (1 - s) * scores.transition + s * other.transition,
            (1 - s) * scores.start + s * other.start, (1 - s) * scores.end + s * other.end,
        )
        return loss(decoder, mixed, y)[0].sum()

    grid = np.linspace(0, 1, 11)
    values = np.array([at(s) for s in grid])
    assert np.all(values[1:-1] <= 0.5 * (values[:-2] + values[2:]) + 1e-10)


def test_softmax_margin_rejects_non_decomposable_cost():
    with pytest.raises(ValueError, match="decompose"):
        CRFLoss(cost=ZeroOneLoss())


def test_unknown_task_loss_names_are_rejected():
    with pytest.raises(ValueError, match="Unknown cost 'f2'"):
        CRFLoss(cost="f2")
    with pytest.raises(TypeError, match="TaskLoss"):
        check_task_loss(3)
