import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _chain_data import chain_instances, random_chain_scores
from skstruct.decoders import BruteForceDecoder, ChainDecoder, ChainScores, MulticlassDecoder
from skstruct.decoders import MulticlassScores
from skstruct.losses import FBetaLoss, HammingLoss, PerceptronLoss, StructuredHingeLoss

brute = BruteForceDecoder()


def _f1(n_states):
    positive = np.arange(n_states) > 0
    return FBetaLoss().with_positive_states(positive)


def _reference(scores, y_true, task_loss, rescaling):
    values = []
    for i, outputs, _, _, theta in brute._enumerate(scores):
        a, b = scores.offsets[i], scores.offsets[i + 1]
        gold_index = np.flatnonzero((outputs == y_true[a:b]).all(axis=1))[0]
        gold = np.tile(y_true[a:b], len(outputs))
        delta = task_loss(gold, outputs.ravel(), np.arange(len(outputs) + 1) * (b - a))
        margin = theta - theta[gold_index]
        values.append(np.max(margin + delta) if rescaling == "margin"
                      else np.max(delta * (1 + margin)))
    return np.array(values)


@pytest.mark.parametrize("rescaling", ["margin", "slack"])
@given(scores=chain_instances(), seed=st.integers(0, 1000))
def test_hinge_value_matches_enumeration(rescaling, scores, seed):
    y_true = np.random.default_rng(seed).integers(0, scores.n_states, scores.unary.shape[0])
    task_losses = [_f1(scores.n_states)]
    if rescaling == "margin":
        task_losses.append(HammingLoss())
    for task_loss in task_losses:
        values, _ = StructuredHingeLoss(task_loss, rescaling)(ChainDecoder(), scores, y_true)
        np.testing.assert_allclose(values, _reference(scores, y_true, task_loss, rescaling),
                                   atol=1e-9)
        assert np.all(values >= 0)


@pytest.mark.parametrize(
    "loss", [StructuredHingeLoss("hamming", "margin"), PerceptronLoss(),
             StructuredHingeLoss(_f1(3), "slack")],
    ids=["hinge-margin", "perceptron", "hinge-slack-f1"],
)
def test_gradient_is_a_subgradient_matching_finite_differences(loss, rng):
    scores = random_chain_scores(rng, [3, 2], n_states=3)
    y_true = rng.integers(0, 3, size=5)
    decoder = ChainDecoder()
    _, grad = loss(decoder, scores, y_true)
    fields = ("unary", "transition", "start", "end")
    eps = 1e-7  # piecewise linear: exact away from ties, which random scores avoid
    for field in fields:
        for index in np.ndindex(getattr(scores, field).shape):
            values = []
            for sign in (1, -1):
                arrays = {k: getattr(scores, k).copy() for k in fields}
                arrays[field][index] += sign * eps
                values.append(loss(decoder, ChainScores(offsets=scores.offsets, **arrays),
                                   y_true)[0].sum())
            analytic = getattr(grad, field)
            analytic = analytic[index] if field == "unary" else analytic[(slice(None),) + index].sum()
            assert (values[0] - values[1]) / (2 * eps) == pytest.approx(analytic, abs=1e-5)


def test_multiclass_hinge_is_crammer_singer(rng):
    unary = rng.normal(size=(20, 4))
    y = rng.integers(0, 4, size=20)
    values, grad = StructuredHingeLoss()(MulticlassDecoder(), MulticlassScores(unary), y)
    margins = unary + (np.arange(4)[None, :] != y[:, None]) - unary[np.arange(20), y][:, None]
    np.testing.assert_allclose(values, margins.max(axis=1))
    np.testing.assert_allclose(grad.unary.sum(axis=1), 0.0)


def test_zero_at_a_confident_correct_prediction(rng):
    scores = random_chain_scores(rng, [4], n_states=3)
    y = rng.integers(0, 3, size=4)
    confident = scores.replace(unary=scores.unary + 100 * np.eye(3)[y])
    for loss in (StructuredHingeLoss(), StructuredHingeLoss(_f1(3), "slack"), PerceptronLoss()):
        values, grad = loss(ChainDecoder(), confident, y)
        assert values[0] == pytest.approx(0.0)
        assert np.all(grad.unary == 0)


def test_bad_rescaling():
    with pytest.raises(ValueError, match="rescaling"):
        StructuredHingeLoss(rescaling="both")
