"""The compiled per-example smoothed hinges equal the Python smoothed losses.

For every family and smoothing, :func:`smoothed_oracle` called one example at a time on a
decoder's CompiledOracle gives the values and part gradients of
EntropySmoothedHingeLoss / L2SmoothedHingeLoss (or of enumeration), the ℓ2 certificate of
L2SmoothedHingeLoss.oracle, and the CRF loss for μ = 1 without costs.
"""

import numpy as np
import pytest

from _chain_data import random_chain_scores
from skstruct.decoders import ChainDecoder, ChainScores
from skstruct.decoders._smoothed_oracles import (
    ENTROPY,
    L2,
    smoothed_oracle,
    supports_smoothed,
)
from skstruct.losses import (
    CRFLoss,
    EntropySmoothedHingeLoss,
    FBetaLoss,
    HammingLoss,
    L2SmoothedHingeLoss,
    ZeroOneLoss,
)

SENTINEL = 7.25  # the d_unary rows beyond the example's must keep it


def _call(compiled, i, smoothing, mu, top_k, unary, pair, row_offsets):
    """smoothed_oracle on example i of a batch; (value, exact, d_unary rows, d_pair)."""
    a, b = row_offsets[i], row_offsets[i + 1]
    y_i = compiled.y[compiled.y_offsets[i]:compiled.y_offsets[i + 1]]
    costs_i = compiled.costs[a:b] if compiled.costs.shape[0] else compiled.costs
    d_unary = np.full((b - a + 2, unary.shape[1]), SENTINEL)
    d_pair = np.full(pair.shape[0], SENTINEL)
    value, exact = smoothed_oracle(
        compiled.code, smoothing, mu, top_k, np.ascontiguousarray(unary[a:b]), pair, y_i,
        costs_i, compiled.ints, compiled.floats, d_unary, d_pair)
    assert np.all(d_unary[b - a:] == SENTINEL), "wrote beyond the example's rows"
    return value, exact, d_unary[:b - a], d_pair


# --------------------------------------------------------------------------------------
# Chains

CHAIN_LOSSES = {
    "hamming": lambda S: HammingLoss(),
    "normalized": lambda S: HammingLoss(normalize=True),
    "class_costs": lambda S: HammingLoss(class_costs=np.arange(1.0, S + 1)),
}


def _chain_batch(rng, n_states, lengths, forbid, scale=1.0):
    """Random chain scores and gold labels; ``forbid`` sets some non-gold unary scores
    and transitions to -inf (the gold labeling stays feasible)."""
    scores = random_chain_scores(rng, lengths, n_states, scale)
    y = rng.integers(0, n_states, size=scores.unary.shape[0])
    if forbid:
        mask = rng.random(scores.unary.shape) < 0.25
        mask[np.arange(y.shape[0]), y] = False
        scores.unary[mask] = -np.inf
        used = np.zeros((n_states, n_states), dtype=bool)
        offsets = scores.offsets
        for s in range(len(lengths)):
            labels = y[offsets[s]:offsets[s + 1]]
            used[labels[:-1], labels[1:]] = True
        scores.transition[(rng.random(used.shape) < 0.3) & ~used] = -np.inf
    return scores, y


def _chain_pair(scores):
    return np.concatenate((scores.transition.ravel(), scores.start, scores.end))


def _chain_compiled(scores, y, task_loss, rescaling="margin"):
    return ChainDecoder().compiled_oracle(task_loss, rescaling, y, scores.offsets)


def _chain_gradient_rows(gradient, i):
    return np.concatenate((gradient.transition[i].ravel(), gradient.start[i],
                           gradient.end[i]))


def _check_chain(scores, y, compiled, smoothing, mu, top_k, values, gradient, exact=None):
    pair = _chain_pair(scores)
    offsets = scores.offsets
    n = offsets.shape[0] - 1
    assert values.shape == (n,)
    for i in range(n):
        value, flag, d_unary, d_pair = _call(compiled, i, smoothing, mu, top_k,
                                             scores.unary, pair, offsets)
        assert value == pytest.approx(values[i], rel=1e-9, abs=1e-9)
        np.testing.assert_allclose(d_unary, gradient.unary[offsets[i]:offsets[i + 1]],
                                   atol=1e-9)
        np.testing.assert_allclose(d_pair, _chain_gradient_rows(gradient, i), atol=1e-9)
        assert flag == (True if exact is None else exact[i])


@pytest.mark.parametrize("loss_name", sorted(CHAIN_LOSSES))
@pytest.mark.parametrize("forbid", [False, True])
def test_chain_entropy_equals_entropy_smoothed_hinge_loss(loss_name, forbid):
    rng = np.random.default_rng(1)
    for mu in (0.05, 0.5, 1.0, 3.0):
        n_states = int(rng.integers(1, 6))
        lengths = rng.integers(1, 7, size=4)
        scores, y = _chain_batch(rng, n_states, lengths, forbid, scale=2.0)
        task_loss = CHAIN_LOSSES[loss_name](n_states)
        loss = EntropySmoothedHingeLoss(task_loss, strength=mu)
        values, gradient = loss(ChainDecoder(), scores, y)
        _check_chain(scores, y, _chain_compiled(scores, y, task_loss), ENTROPY, mu, 1,
                     values, gradient)


@pytest.mark.parametrize("loss_name", sorted(CHAIN_LOSSES))
@pytest.mark.parametrize("forbid", [False, True])
def test_chain_l2_equals_l2_smoothed_hinge_loss_and_its_certificate(loss_name, forbid):
    rng = np.random.default_rng(2)
    flags = []
    for mu, top_k in ((0.05, 1), (0.3, 3), (1.0, 5), (4.0, 2), (10.0, 20)):
        n_states = int(rng.integers(2, 6))
        lengths = rng.integers(1, 7, size=4)
        scores, y = _chain_batch(rng, n_states, lengths, forbid)
        task_loss = CHAIN_LOSSES[loss_name](n_states)
        loss = L2SmoothedHingeLoss(task_loss, strength=mu, top_k=top_k)
        values, gradient, exact = loss.oracle(ChainDecoder(), scores, y)
        _check_chain(scores, y, _chain_compiled(scores, y, task_loss), L2, mu, top_k,
                     values, gradient, exact)
        flags.extend(exact)
    assert any(flags) and not all(flags), "both certificates must occur"


def test_chain_l2_with_k_beyond_the_feasible_labelings_is_exact():
    # start in 1 and the transition 0 -> 1 forbidden: 000 is the only feasible labeling
    scores = ChainScores(np.zeros((3, 2)), np.array([0, 3]),
                         np.array([[0.0, -np.inf], [0.1, 0.0]]),
                         np.array([0.0, -np.inf]), np.zeros(2))
    y = np.array([0, 0, 0])
    compiled = _chain_compiled(scores, y, HammingLoss())
    value, exact, d_unary, d_pair = _call(compiled, 0, L2, 100.0, 8, scores.unary,
                                          _chain_pair(scores), scores.offsets)
    # q = (1): value ⟨q, z⟩ − μ/2 − z_ȳ = −μ/2, zero gradient
    assert exact
    assert value == pytest.approx(-50.0)
    assert not d_unary.any() and not d_pair.any()
    loss = L2SmoothedHingeLoss("hamming", strength=100.0, top_k=8)
    values, _, flags = loss.oracle(ChainDecoder(), scores, y)
    assert values[0] == pytest.approx(value) and flags[0] == exact


def test_chain_entropy_falls_back_to_log_space_beyond_the_scaled_range():
    # every labeling crosses a transition e^-900 below the largest one: the rescaled
    # recursion underflows to "infeasible", the log-space one does not
    trans = np.array([[-900.0, -900.0], [-900.0, 0.0]])
    scores = ChainScores(np.random.default_rng(3).normal(size=(4, 2)), np.array([0, 4]),
                         trans, np.array([0.0, -np.inf]), np.zeros(2))
    y = np.array([0, 1, 1, 1])
    task_loss = HammingLoss()
    for mu in (0.5, 1.0):
        values, gradient = EntropySmoothedHingeLoss(task_loss, strength=mu)(
            ChainDecoder(), scores, y)
        assert np.isfinite(values).all()
        _check_chain(scores, y, _chain_compiled(scores, y, task_loss), ENTROPY, mu, 1,
                     values, gradient)


def test_chain_entropy_at_mu_one_without_costs_is_the_crf_loss():
    rng = np.random.default_rng(4)
    scores, y = _chain_batch(rng, 4, rng.integers(1, 8, size=5), forbid=True)
    values, gradient = CRFLoss()(ChainDecoder(), scores, y)
    compiled = _chain_compiled(scores, y, None, rescaling=None)
    assert supports_smoothed(compiled, ENTROPY)
    _check_chain(scores, y, compiled, ENTROPY, 1.0, 1, values, gradient)


def test_chain_infeasible_sequence_raises():
    scores = ChainScores(np.full((2, 2), -np.inf), np.array([0, 2]), np.zeros((2, 2)),
                         np.zeros(2), np.zeros(2))
    y = np.array([0, 0])
    compiled = _chain_compiled(scores, y, HammingLoss())
    for smoothing in (ENTROPY, L2):
        with pytest.raises(ValueError, match="finite score"):
            _call(compiled, 0, smoothing, 1.0, 3, scores.unary, _chain_pair(scores),
                  scores.offsets)


def test_supports_smoothed_chain_losses():
    rng = np.random.default_rng(5)
    scores, y = _chain_batch(rng, 3, [3, 2], forbid=False)
    hamming = _chain_compiled(scores, y, HammingLoss())
    assert supports_smoothed(hamming, ENTROPY) and supports_smoothed(hamming, "l2")
    assert not supports_smoothed(_chain_compiled(scores, y, HammingLoss(), "slack"),
                                 ENTROPY)
    assert not supports_smoothed(_chain_compiled(scores, y, ZeroOneLoss()), L2)
    f1 = FBetaLoss().with_positive_states(np.array([False, True, True]))
    assert not supports_smoothed(_chain_compiled(scores, y, f1), ENTROPY)
    assert not supports_smoothed(None, ENTROPY)
    assert not supports_smoothed(hamming, 2)
    with pytest.raises(ValueError, match="Hamming"):
        _call(_chain_compiled(scores, y, ZeroOneLoss()), 0, ENTROPY, 1.0, 1,
              scores.unary, _chain_pair(scores), scores.offsets)
