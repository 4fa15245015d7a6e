import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from _chain_data import chain_instances
from skstruct.decoders import BruteForceDecoder, ChainDecoder
from skstruct.decoders._chain.counting import (
    best_with_statistic,
    loss_augmented_map_by_statistic,
    statistic_table,
)
from skstruct.losses import FBetaLoss, IoULoss, LabelCountLoss, PrecisionLoss, RecallLoss

LOSSES = [FBetaLoss(), FBetaLoss(beta=2.0), PrecisionLoss(), RecallLoss(), IoULoss(),
          LabelCountLoss()]
brute = BruteForceDecoder()


def _bound(loss, n_states):
    positive = np.ones(n_states, dtype=bool)
    positive[0] = False  # state 0 plays the outside label
    return loss.with_positive_states(positive)


def _enumerated(scores, y_true, loss):
    """Every labeling of every sequence with its score θ_y and Δ(y_true, y)."""
    for i, outputs, _, _, theta in brute._enumerate(scores):
        a, b = scores.offsets[i], scores.offsets[i + 1]
        gold = np.tile(y_true[a:b], len(outputs))
        offsets = np.arange(len(outputs) + 1) * (b - a)
        stats = loss.statistics(gold, outputs.ravel(), offsets, scores.n_states)
        yield i, outputs, theta, stats, loss(gold, outputs.ravel(), offsets)


@given(scores=chain_instances(max_states=3, max_length=4), seed=st.integers(0, 1000))
def test_table_is_the_best_score_per_statistic(scores, seed):
    y_true = np.random.default_rng(seed).integers(0, scores.n_states, scores.unary.shape[0])
    loss = _bound(FBetaLoss(), scores.n_states)
    increments = loss.increments(y_true, scores.n_states)
    caps = np.repeat(scores.lengths[:, None], 2, axis=1)
    table = statistic_table(scores, increments, caps)
    for i, _, theta, stats, _ in _enumerated(scores, y_true, loss):
        rows = np.flatnonzero(table.example == i)
        for row in rows:
            match = np.all(stats == table.stats[row], axis=1)
            expected = theta[match].max() if match.any() else -np.inf
            assert table.best[row] == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("loss", LOSSES, ids=lambda l: type(l).__name__)
@pytest.mark.parametrize("rescaling", ["margin", "slack"])
@given(scores=chain_instances(max_states=3, max_length=4), seed=st.integers(0, 1000))
def test_loss_augmented_map_matches_enumeration(loss, rescaling, scores, seed):
    y_true = np.random.default_rng(seed).integers(0, scores.n_states, scores.unary.shape[0])
    loss = _bound(loss, scores.n_states)
    decoder = ChainDecoder()
    y_hat = loss_augmented_map_by_statistic(decoder, scores, y_true, loss, rescaling)
    gold = decoder.score_outputs(scores, y_true)
    achieved = decoder.score_outputs(scores, y_hat)
    delta = loss(y_true, y_hat, scores.offsets)
    for i, _, theta, _, deltas in _enumerated(scores, y_true, loss):
        if rescaling == "margin":
            best, got = np.max(theta + deltas), achieved[i] + delta[i]
        else:
            best = np.max((1 + theta - gold[i]) * deltas)
            got = (1 + achieved[i] - gold[i]) * delta[i]
        assert got == pytest.approx(best, abs=1e-9)


def test_user_objective_must_be_monotone_in_the_score(rng):
    from _chain_data import random_chain_scores

    scores = random_chain_scores(rng, [3, 2], n_states=3)
    y_true = rng.integers(0, 3, size=5)
    loss = _bound(FBetaLoss(), 3)

    def decreasing(F, stats, example, gold, n_gold):
        return -F + loss.eta(stats, n_gold[example])

    with pytest.raises(ValueError, match="non-decreasing"):
        loss_augmented_map_by_statistic(ChainDecoder(), scores, y_true, loss, decreasing)

    def squared_margin(F, stats, example, gold, n_gold):
        return F + loss.eta(stats, n_gold[example]) ** 2

    y_hat = loss_augmented_map_by_statistic(ChainDecoder(), scores, y_true, loss, squared_margin)
    assert y_hat.shape == y_true.shape


@pytest.mark.parametrize("rescaling", ["margin", "slack"])
def test_chain_decoder_routes_counting_losses(rng, rescaling):
    from _chain_data import random_chain_scores

    scores = random_chain_scores(rng, [4, 3, 1], n_states=3)
    y_true = rng.integers(0, 3, size=8)
    loss = _bound(FBetaLoss(), 3)
    ours = ChainDecoder().loss_augmented_map(scores, y_true, loss, rescaling=rescaling)
    ref = brute.loss_augmented_map(scores, y_true, loss, rescaling=rescaling)
    decoder = ChainDecoder()

    def objective(y):
        theta, delta = decoder.score_outputs(scores, y), loss(y_true, y, scores.offsets)
        if rescaling == "margin":
            return theta + delta
        return delta * (1 + theta - decoder.score_outputs(scores, y_true))

    np.testing.assert_allclose(objective(ours), objective(ref), atol=1e-9)


def test_unsupported_combinations_are_named():
    from _chain_data import random_chain_scores
    from skstruct.losses import HammingLoss

    scores = random_chain_scores(np.random.default_rng(0), [2], n_states=2)
    weighted = HammingLoss(class_costs=[1.0, 2.0])
    with pytest.raises(ValueError, match="HammingLoss with rescaling='slack'"):
        ChainDecoder().loss_augmented_map(scores, np.array([0, 1]), weighted, "slack")


@pytest.mark.parametrize("loss_name", ["hamming", "normalized", "zero_one"])
@given(scores=chain_instances(max_states=3, max_length=4), seed=st.integers(0, 1000))
def test_slack_hamming_and_zero_one_match_enumeration(loss_name, scores, seed):
    from skstruct.losses import HammingLoss, ZeroOneLoss

    loss = {"hamming": HammingLoss(), "normalized": HammingLoss(normalize=True),
            "zero_one": ZeroOneLoss()}[loss_name]
    y_true = np.random.default_rng(seed).integers(0, scores.n_states, scores.unary.shape[0])
    decoder = ChainDecoder()
    y_hat = decoder.loss_augmented_map(scores, y_true, loss, rescaling="slack")
    ref = brute.loss_augmented_map(scores, y_true, loss, rescaling="slack")
    gold = decoder.score_outputs(scores, y_true)

    def objective(y):
        return loss(y_true, y, scores.offsets) * (1 + decoder.score_outputs(scores, y) - gold)

    np.testing.assert_allclose(objective(y_hat), objective(ref), atol=1e-9)


@pytest.mark.parametrize("loss", LOSSES, ids=lambda l: type(l).__name__)
@pytest.mark.parametrize("rescaling", ["margin", "slack"])
@given(scores=chain_instances(max_states=4, max_length=5), seed=st.integers(0, 1000))
def test_chain_decoder_matches_the_brute_force_decoder(loss, rescaling, scores, seed):
    y_true = np.random.default_rng(seed).integers(0, scores.n_states, scores.unary.shape[0])
    loss = _bound(loss, scores.n_states)
    decoder = ChainDecoder()
    ours = decoder.loss_augmented_map(scores, y_true, loss, rescaling=rescaling)
    ref = brute.loss_augmented_map(scores, y_true, loss, rescaling=rescaling)
    gold = decoder.score_outputs(scores, y_true)

    def objective(y):
        theta, delta = decoder.score_outputs(scores, y), loss(y_true, y, scores.offsets)
        return theta + delta if rescaling == "margin" else delta * (1 + theta - gold)

    np.testing.assert_allclose(objective(ours), objective(ref), atol=1e-9, rtol=1e-12)


def _capped_statistics(outputs, increments, caps):
    """min(Σ_t increments[t, y_t], caps) of every enumerated labeling (rows of outputs)."""
    per_token = increments[np.arange(outputs.shape[1]), outputs]
    return np.minimum(per_token.sum(axis=1), caps)


@given(scores=chain_instances(max_states=3, max_length=5), seed=st.integers(0, 10**6))
def test_capped_counters_match_enumeration(scores, seed):
    """Caps that bind (the previous counter value is then stored) and caps that do not,
    random increments including 0 and jumps of 2: the table is μ(l) for every value and
    the backtracking pass reaches every target with that score, -1 where unreachable."""
    rng = np.random.default_rng(seed)
    n_counters = int(rng.integers(1, 3))
    increments = rng.integers(0, 3, size=scores.unary.shape + (n_counters,))
    caps = rng.integers(0, 5, size=(scores.n_sequences, n_counters))
    table = statistic_table(scores, increments, caps)
    targets = rng.integers(0, np.diff(table.table_offsets))
    labels = best_with_statistic(scores, increments, caps, targets)
    for i, outputs, _, _, theta in brute._enumerate(scores):
        a, b = scores.offsets[i], scores.offsets[i + 1]
        stats = _capped_statistics(outputs, increments[a:b], caps[i])
        rows = np.arange(table.table_offsets[i], table.table_offsets[i + 1])
        for row in rows:
            match = np.all(stats == table.stats[row], axis=1)
            expected = theta[match].max() if match.any() else -np.inf
            assert table.best[row] == pytest.approx(expected, abs=1e-9)
        target = table.best[rows[targets[i]]]
        if target == -np.inf:
            assert np.all(labels[a:b] == -1)
            continue
        found = labels[a:b]
        hit = np.flatnonzero(np.all(outputs == found, axis=1))[0]
        np.testing.assert_array_equal(stats[hit], table.stats[rows[targets[i]]])
        assert theta[hit] == pytest.approx(target, abs=1e-9)


@given(scores=chain_instances(max_states=3, max_length=5), seed=st.integers(0, 1000))
def test_map_with_label_count_matches_enumeration(scores, seed):
    rng = np.random.default_rng(seed)
    positive = rng.random(scores.n_states) < 0.5
    count = rng.integers(0, 7, size=scores.n_sequences)
    labels, best = ChainDecoder().map_with_label_count(scores, count, positive)
    for i, outputs, _, _, theta in brute._enumerate(scores):
        a, b = scores.offsets[i], scores.offsets[i + 1]
        match = positive[outputs].sum(axis=1) == count[i]
        if not match.any():
            assert best[i] == -np.inf and np.all(labels[a:b] == -1)
            continue
        assert best[i] == pytest.approx(theta[match].max(), abs=1e-9)
        assert positive[labels[a:b]].sum() == count[i]
        hit = np.flatnonzero(np.all(outputs == labels[a:b], axis=1))[0]
        assert theta[hit] == pytest.approx(best[i], abs=1e-9)


@given(scores=chain_instances(max_states=3, max_length=5),
       min_distance=st.integers(1, 3), k=st.integers(1, 4))
def test_diverse_top_k_matches_enumeration(scores, min_distance, k):
    paths, path_scores = ChainDecoder().diverse_top_k(scores, k, min_distance)
    for i, outputs, _, _, theta in brute._enumerate(scores):
        a, b = scores.offsets[i], scores.offsets[i + 1]
        allowed = np.ones(len(outputs), dtype=bool)
        for r in range(k):
            if not allowed.any():
                assert path_scores[i, r] == -np.inf and np.all(paths[a:b, r] == -1)
                continue
            assert path_scores[i, r] == pytest.approx(theta[allowed].max(), abs=1e-9)
            chosen = paths[a:b, r]
            hit = np.flatnonzero(np.all(outputs == chosen, axis=1))[0]
            assert allowed[hit] and theta[hit] == pytest.approx(path_scores[i, r], abs=1e-9)
            allowed &= (outputs != chosen).sum(axis=1) >= min_distance
