import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _chain_data import chain_instances, random_chain_scores
from skstruct.decoders import BruteForceDecoder, ChainDecoder, ChainScores, chain_parts
from skstruct.losses import HammingLoss, ZeroOneLoss

brute = BruteForceDecoder()
DECODERS = [ChainDecoder(), ChainDecoder(log_space=True), ChainDecoder(log_space=False)]


@pytest.mark.parametrize("decoder", DECODERS, ids=["auto", "log", "scaled"])
@given(scores=chain_instances())
def test_log_partition_and_marginals_match_enumeration(decoder, scores):
    log_z, marg = decoder.marginals(scores)
    ref_log_z, ref = brute.marginals(scores)
    np.testing.assert_allclose(log_z, ref_log_z, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(decoder.log_partition(scores), ref_log_z, rtol=1e-10, atol=1e-10)
    for name in ("unary", "transition", "start", "end"):
        np.testing.assert_allclose(getattr(marg, name), getattr(ref, name), atol=1e-9)


@given(scores=chain_instances())
def test_map_is_an_optimal_labeling(scores):
    labels, best = ChainDecoder().map(scores, return_score=True)
    _, ref_best = brute.map(scores, return_score=True)
    np.testing.assert_allclose(best, ref_best, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ChainDecoder().score_outputs(scores, labels), ref_best, atol=1e-9)


@given(scores=chain_instances(), k=st.integers(1, 30))
def test_top_k_matches_enumeration(scores, k):
    decoder = ChainDecoder()
    paths, top = decoder.top_k(scores, k)
    ref_paths, ref_top = brute.top_k(scores, k)
    np.testing.assert_allclose(top, ref_top, atol=1e-9)
    assert np.array_equal(paths == -1, ref_paths == -1)
    for r in range(k):
        found = np.isfinite(top[:, r])
        if not found.any():
            continue
        lengths = scores.lengths
        mask = np.repeat(found, lengths)
        sub = ChainScores(
            scores.unary[mask],
            np.concatenate(([0], np.cumsum(lengths[found]))),
            scores.transition,
            scores.start,
            scores.end,
        )
        np.testing.assert_allclose(decoder.score_outputs(sub, paths[mask, r]), top[found, r], atol=1e-9)
    # the k best are distinct label sequences
    for i in range(scores.n_sequences):
        a, b = scores.offsets[i], scores.offsets[i + 1]
        rows = {tuple(paths[a:b, r]) for r in range(k) if np.isfinite(top[i, r])}
        assert len(rows) == np.isfinite(top[i]).sum()


def test_top_k_returns_fewer_when_fewer_exist(rng):
    scores = random_chain_scores(rng, [2], n_states=2)
    paths, top = ChainDecoder().top_k(scores, 6)
    assert np.isfinite(top[0]).sum() == 4
    assert np.all(paths[:, 4:] == -1)
    assert np.all(np.diff(top[0, :4]) <= 0)


@given(scores=chain_instances(), seed=st.integers(0, 1000))
def test_loss_augmented_map_matches_enumeration(scores, seed):
    rng = np.random.default_rng(seed)
    y_true = rng.integers(0, scores.n_states, size=scores.unary.shape[0])
    costs = rng.uniform(0, 2, size=(scores.n_states, scores.n_states))
    np.fill_diagonal(costs, 0)
    decoder = ChainDecoder()
    for loss in (HammingLoss(), HammingLoss(normalize=True), HammingLoss(class_costs=costs),
                 ZeroOneLoss()):
        y_hat = decoder.loss_augmented_map(scores, y_true, loss)
        ref = brute.loss_augmented_map(scores, y_true, loss)
        value = decoder.score_outputs(scores, y_hat) + loss(y_true, y_hat, scores.offsets)
        ref_value = decoder.score_outputs(scores, ref) + loss(y_true, ref, scores.offsets)
        np.testing.assert_allclose(value, ref_value, atol=1e-9)


@given(scores=chain_instances())
def test_parts_and_score_agree_with_enumeration(scores):
    rng = np.random.default_rng(0)
    y = rng.integers(0, scores.n_states, size=scores.unary.shape[0])
    parts, ref = chain_parts(y, scores.offsets, scores.n_states), brute.parts(scores, y)
    for name in ("unary", "transition", "start", "end"):
        np.testing.assert_array_equal(getattr(parts, name), getattr(ref, name))
    np.testing.assert_allclose(ChainDecoder().score_outputs(scores, y), ref.dot(scores), atol=1e-10)


@pytest.mark.parametrize("decoder", DECODERS[:2], ids=["auto", "log"])
def test_marginals_are_the_gradient_of_the_log_partition(decoder, rng):
    scores = random_chain_scores(rng, [3, 1, 4], n_states=3)
    _, marg = decoder.marginals(scores)
    eps = 1e-6

    def numeric(field, index):
        arrays = {k: getattr(scores, k).copy() for k in ("unary", "transition", "start", "end")}
        values = []
        for sign in (1, -1):
            arrays[field][index] += sign * eps
            shifted = ChainScores(offsets=scores.offsets, **arrays)
            values.append(decoder.log_partition(shifted).sum())
            arrays[field][index] -= sign * eps
        return (values[0] - values[1]) / (2 * eps)

    for index in np.ndindex(scores.unary.shape):
        assert numeric("unary", index) == pytest.approx(marg.unary[index], abs=1e-6)
    for index in np.ndindex(scores.transition.shape):
        expected = marg.transition[(slice(None),) + index].sum()
        assert numeric("transition", index) == pytest.approx(expected, abs=1e-6)
    for field in ("start", "end"):
        for s in range(3):
            expected = getattr(marg, field)[:, s].sum()
            assert numeric(field, (s,)) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("pairwise_scale", [1.0, 1e4])
def test_stable_for_scores_of_1e4(rng, pairwise_scale):
    scores = random_chain_scores(rng, [4, 1, 3], n_states=3, scale=1e4,
                                 pairwise_scale=pairwise_scale)
    log_z, marg = ChainDecoder().marginals(scores)
    ref_log_z, ref = brute.marginals(scores)
    assert np.all(np.isfinite(log_z))
    np.testing.assert_allclose(log_z, ref_log_z, rtol=1e-12)
    np.testing.assert_allclose(marg.unary, ref.unary, atol=1e-9)
    np.testing.assert_allclose(marg.transition, ref.transition, atol=1e-9)
    np.testing.assert_allclose(marg.unary.sum(axis=1), 1.0, rtol=1e-10)


def test_scaled_kernel_handles_large_unary_scores(rng):
    """The rescaled recursion only needs moderate pairwise scores, whatever the unaries."""
    scores = random_chain_scores(rng, [5, 2], n_states=3, scale=1e4, pairwise_scale=1.0)
    log_z, marg = ChainDecoder(log_space=False).marginals(scores)
    ref_log_z, ref = brute.marginals(scores)
    np.testing.assert_allclose(log_z, ref_log_z, rtol=1e-12)
    np.testing.assert_allclose(marg.unary, ref.unary, atol=1e-9)


def test_length_one_sequences(rng):
    scores = random_chain_scores(rng, [1, 1, 1], n_states=4)
    theta = scores.unary + scores.start + scores.end
    labels = ChainDecoder().map(scores)
    np.testing.assert_array_equal(labels, theta.argmax(axis=1))
    log_z, marg = ChainDecoder().marginals(scores)
    expected = np.exp(theta - np.log(np.exp(theta).sum(axis=1, keepdims=True)))
    np.testing.assert_allclose(marg.unary, expected, rtol=1e-12)
    assert np.all(marg.transition == 0)


def test_batched_equals_one_at_a_time(rng):
    lengths = [5, 1, 7, 3]
    scores = random_chain_scores(rng, lengths, n_states=4)
    decoder = ChainDecoder()
    log_z, marg = decoder.marginals(scores)
    labels = decoder.map(scores)
    for i in range(len(lengths)):
        a, b = scores.offsets[i], scores.offsets[i + 1]
        single = ChainScores(scores.unary[a:b], [0, b - a], scores.transition, scores.start,
                             scores.end)
        single_log_z, single_marg = decoder.marginals(single)
        assert single_log_z[0] == pytest.approx(log_z[i], rel=1e-12)
        np.testing.assert_allclose(single_marg.unary, marg.unary[a:b], atol=1e-14)
        np.testing.assert_array_equal(decoder.map(single), labels[a:b])


def test_empty_sequences_are_rejected():
    with pytest.raises(ValueError, match="empty sequence"):
        ChainScores(np.zeros((2, 2)), [0, 0, 2], np.zeros((2, 2)), np.zeros(2), np.zeros(2))


def test_bad_shapes_are_rejected():
    with pytest.raises(ValueError, match="transition has shape"):
        ChainScores(np.zeros((2, 2)), [0, 2], np.zeros((3, 3)), np.zeros(2), np.zeros(2))
    with pytest.raises(ValueError, match="k must be"):
        ChainDecoder().top_k(
            ChainScores(np.zeros((2, 2)), [0, 2], np.zeros((2, 2)), np.zeros(2), np.zeros(2)), 0
        )
