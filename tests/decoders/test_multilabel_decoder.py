import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from skstruct.decoders import (
    BruteForceDecoder,
    ChainDecoder,
    ChainScores,
    MultilabelDecoder,
    MultilabelParts,
    MultilabelScores,
)
from skstruct.decoders._chain.counting import loss_augmented_map_by_statistic
from skstruct.losses import (
    CountingLoss,
    FBetaLoss,
    HammingLoss,
    IoULoss,
    LabelCountLoss,
    PrecisionLoss,
    RecallLoss,
    ZeroOneLoss,
)
from skstruct.losses._counting import MismatchCount

brute = BruteForceDecoder()
decoder = MultilabelDecoder()


@st.composite
def instances(draw, max_samples=4, max_labels=5):
    """MultilabelScores with small shapes; integer scores make ties (and zeros) likely."""
    shape = (draw(st.integers(1, max_samples)), draw(st.integers(1, max_labels)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    scale = draw(st.sampled_from([0.1, 1.0, 10.0, "integers"]))
    if scale == "integers":
        return MultilabelScores(rng.integers(-2, 3, size=shape).astype(float))
    return MultilabelScores(scale * rng.normal(size=shape))


def _losses(rng):
    costs = np.array([[0.0, rng.uniform(0, 2)], [rng.uniform(0, 2), 0.0]])
    return [HammingLoss(), HammingLoss(normalize=True), HammingLoss(class_costs=costs),
            HammingLoss(normalize=True, class_costs=rng.uniform(0, 2, size=2)), ZeroOneLoss(),
            FBetaLoss(), FBetaLoss(beta=2.0), PrecisionLoss(), RecallLoss(), IoULoss(),
            LabelCountLoss(), MismatchCount(), MismatchCount(zero_one=True)]


def _bound(loss):
    """The loss of a multilabel output: a sequence of binary states, state 1 positive."""
    return loss.with_positive_states([False, True]) if isinstance(loss, CountingLoss) else loss


@given(scores=instances())
def test_map_matches_enumeration(scores):
    labels, best = decoder.map(scores, return_score=True)
    _, ref_best = brute.map(scores, return_score=True)
    assert labels.shape == scores.unary.shape
    np.testing.assert_allclose(best, ref_best, rtol=1e-12)
    np.testing.assert_allclose(decoder.score_outputs(scores, labels), ref_best, rtol=1e-12)


@given(scores=instances())
def test_log_partition_and_marginals_match_enumeration(scores):
    log_z, marg = decoder.marginals(scores)
    ref_log_z, ref = brute.marginals(scores)
    np.testing.assert_allclose(log_z, ref_log_z, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(decoder.log_partition(scores), ref_log_z, rtol=1e-12)
    np.testing.assert_allclose(marg.unary, ref.unary, atol=1e-12)


def test_marginals_are_the_gradient_of_the_log_partition(rng):
    scores = MultilabelScores(rng.normal(size=(3, 4)))
    _, marg = decoder.marginals(scores)
    eps = 1e-6
    for index in np.ndindex(scores.unary.shape):
        shift = np.zeros(scores.unary.shape)
        shift[index] = eps
        numeric = (decoder.log_partition(scores.replace(unary=scores.unary + shift)).sum()
                   - decoder.log_partition(scores.replace(unary=scores.unary - shift)).sum())
        assert numeric / (2 * eps) == pytest.approx(marg.unary[index], abs=1e-8)


@given(scores=instances(), k=st.integers(1, 40))
def test_top_k_matches_enumeration(scores, k):
    paths, top = decoder.top_k(scores, k)
    ref_paths, ref_top = brute.top_k(scores, k)
    n_samples, n_labels = scores.unary.shape
    assert paths.shape == (n_samples, n_labels, k) and top.shape == (n_samples, k)
    np.testing.assert_allclose(top, ref_top, rtol=1e-12, atol=1e-12)
    assert np.array_equal(paths == -1, ref_paths == -1)
    n_found = min(k, 2**n_labels)
    assert np.all(np.isfinite(top[:, :n_found])) and np.all(top[:, n_found:] == -np.inf)
    assert np.all(paths[:, :, n_found:] == -1)
    for r in range(n_found):
        np.testing.assert_allclose(
            decoder.score_outputs(scores, paths[:, :, r]), top[:, r], rtol=1e-12, atol=1e-12
        )
    for i in range(n_samples):
        assert len({tuple(paths[i, :, r]) for r in range(n_found)}) == n_found


def test_top_k_on_many_labels_is_sorted_and_distinct(rng):
    scores = MultilabelScores(rng.normal(size=(20, 30)))
    paths, top = decoder.top_k(scores, 50)
    assert np.all(np.diff(top, axis=1) <= 0)
    np.testing.assert_allclose(top[:, 0], decoder.map(scores, return_score=True)[1])
    for i in range(20):
        assert len({tuple(paths[i, :, r]) for r in range(50)}) == 50
        np.testing.assert_allclose(
            decoder.score_outputs(MultilabelScores(np.repeat(scores.unary[i : i + 1], 50, 0)),
                                  paths[i].T), top[i], rtol=1e-12)


@pytest.mark.parametrize("rescaling", ["margin", "slack"])
@given(scores=instances(), seed=st.integers(0, 1000))
def test_loss_augmented_map_matches_enumeration(rescaling, scores, seed):
    rng = np.random.default_rng(seed)
    y_true = rng.integers(0, 2, size=scores.unary.shape)
    is_map = rng.random(scores.n_examples) < 0.5  # gold outputs that win, by more or less
    y_true[is_map] = decoder.map(scores)[is_map]
    offsets = np.arange(scores.n_examples + 1) * scores.n_labels
    gold = decoder.score_outputs(scores, y_true)

    def objective(y, loss):
        theta = decoder.score_outputs(scores, y)
        delta = _bound(loss)(y_true.ravel(), y.ravel(), offsets)
        return theta + delta if rescaling == "margin" else delta * (1 + theta - gold)

    for loss in _losses(rng):
        ours = decoder.loss_augmented_map(scores, y_true, loss, rescaling)
        ref = brute.loss_augmented_map(scores, y_true, loss, rescaling)
        assert ours.shape == y_true.shape
        np.testing.assert_allclose(objective(ours, loss), objective(ref, loss), atol=1e-9)


def _chain_loss_augmented_map(scores, y_true, loss, rescaling):
    """The former path: the labels as a chain of binary states, constrained message passing."""
    n_samples, n_labels = y_true.shape
    unary = np.stack((np.zeros_like(scores.unary), scores.unary), axis=-1).reshape(-1, 2)
    chain = ChainScores(unary, np.arange(n_samples + 1) * n_labels, np.zeros((2, 2)),
                        np.zeros(2), np.zeros(2))
    labels = loss_augmented_map_by_statistic(
        ChainDecoder(), chain, y_true.ravel(), _bound(loss), rescaling
    )
    return labels.reshape(n_samples, n_labels)


def _smooth_objective(F, stats, example, gold, n_gold):
    """An objective non-decreasing in F that is neither margin nor slack rescaling."""
    weight = 1.0 + stats.sum(axis=-1)
    return weight * np.tanh(F - gold[example]) + stats[:, 0] / (1.0 + n_gold[example])


def _objective(scores, y_true, loss, rescaling, y):
    loss = _bound(loss)
    offsets = np.arange(scores.n_examples + 1) * scores.n_labels
    theta = decoder.score_outputs(scores, y)
    gold = decoder.score_outputs(scores, y_true)
    if callable(rescaling):
        stats = loss.statistics(y_true.ravel(), y.ravel(), offsets, 2)
        return rescaling(theta, stats, np.arange(scores.n_examples), gold, y_true.sum(axis=1))
    delta = loss(y_true.ravel(), y.ravel(), offsets)
    return theta + delta if rescaling == "margin" else delta * (1 + theta - gold)


@pytest.mark.parametrize("rescaling", ["margin", "slack", _smooth_objective])
@pytest.mark.parametrize(
    "loss",
    [FBetaLoss(), FBetaLoss(beta=0.5), PrecisionLoss(), RecallLoss(), IoULoss(),
     LabelCountLoss()],
    ids=repr,
)
@pytest.mark.parametrize("n_labels", [1, 7, 30])
def test_count_losses_agree_with_the_chain_path(rng, rescaling, loss, n_labels):
    scores = MultilabelScores(rng.normal(size=(25, n_labels)) + rng.normal(size=(25, 1)))
    y_true = (rng.random((25, n_labels)) < rng.random((25, 1))).astype(np.int64)
    y_true[:3], y_true[3:6] = 0, 1  # no gold positive, all gold positive
    ours = decoder.loss_augmented_map(scores, y_true, loss, rescaling)
    ref = _chain_loss_augmented_map(scores, y_true, loss, rescaling)
    np.testing.assert_allclose(_objective(scores, y_true, loss, rescaling, ours),
                               _objective(scores, y_true, loss, rescaling, ref), atol=1e-9)


@pytest.mark.parametrize(
    "loss", [HammingLoss(), HammingLoss(normalize=True, class_costs=[0.3, 2.0])], ids=repr
)
def test_slack_hamming_agrees_with_the_chain_path(rng, loss):
    scores = MultilabelScores(rng.normal(size=(25, 12)))
    y_true = rng.integers(0, 2, size=(25, 12))
    ours = decoder.loss_augmented_map(scores, y_true, loss, "slack")
    ref = _chain_loss_augmented_map(scores, y_true, loss.binary_counts(12), "slack")
    np.testing.assert_allclose(_objective(scores, y_true, loss, "slack", ours),
                               _objective(scores, y_true, loss, "slack", ref), atol=1e-9)


@given(scores=instances(max_labels=7), seed=st.integers(0, 1000),
       rescaling=st.sampled_from(["margin", "slack", _smooth_objective]))
def test_count_losses_match_enumeration_with_extreme_gold(scores, seed, rescaling):
    """Gold vectors with no or only positives, and scores that tie."""
    rng = np.random.default_rng(seed)
    y_true = np.zeros(scores.unary.shape, dtype=np.int64)
    y_true[rng.random(scores.n_examples) < 0.5] = 1
    for loss in [FBetaLoss(beta=2), PrecisionLoss(), RecallLoss(), IoULoss(), LabelCountLoss()]:
        ours = decoder.loss_augmented_map(scores, y_true, loss, rescaling)
        if callable(rescaling):
            ref = _chain_loss_augmented_map(scores, y_true, loss, rescaling)
        else:
            ref = brute.loss_augmented_map(scores, y_true, loss, rescaling)
        np.testing.assert_allclose(_objective(scores, y_true, loss, rescaling, ours),
                                   _objective(scores, y_true, loss, rescaling, ref), atol=1e-9)


def test_loss_augmented_map_accepts_a_monotone_objective(rng):
    scores = MultilabelScores(rng.normal(size=(6, 4)))
    y_true = rng.integers(0, 2, size=(6, 4))
    loss = FBetaLoss()
    bound = _bound(loss)

    def margin(F, stats, example, gold, n_gold):
        return F + bound.eta(stats, n_gold[example])

    ours = decoder.loss_augmented_map(scores, y_true, loss, margin)
    ref = decoder.loss_augmented_map(scores, y_true, loss, "margin")
    offsets = np.arange(7) * 4

    def value(y):
        return decoder.score_outputs(scores, y) + bound(y_true.ravel(), y.ravel(), offsets)

    np.testing.assert_allclose(value(ours), value(ref), atol=1e-12)
    with pytest.raises(ValueError, match="non-decreasing"):
        decoder.loss_augmented_map(scores, y_true, loss, lambda F, *args: -F)


@given(scores=instances())
def test_parts_and_score_agree_with_enumeration(scores):
    y = np.random.default_rng(0).integers(0, 2, size=scores.unary.shape)
    parts = decoder.parts(scores, y)
    np.testing.assert_array_equal(parts.unary, brute.parts(scores, y).unary)
    np.testing.assert_allclose(decoder.score_outputs(scores, y), parts.dot(scores), rtol=1e-12)
    np.testing.assert_allclose(brute.score_outputs(scores, y), parts.dot(scores), rtol=1e-12)


def test_part_arithmetic(rng):
    a, b = MultilabelParts(rng.normal(size=(3, 2))), MultilabelParts(rng.normal(size=(3, 2)))
    weights = np.array([1.0, 2.0, 0.0])
    np.testing.assert_allclose((a - b).unary, a.unary - b.unary)
    np.testing.assert_allclose(a.scale(weights).unary, a.unary * weights[:, None])
    expected = a.unary - b.unary
    a -= b
    np.testing.assert_allclose(a.unary, expected)


@pytest.mark.parametrize("scale", [1e4, -1e4])
def test_stable_for_scores_of_1e4(rng, scale):
    scores = MultilabelScores(scale * rng.normal(size=(5, 4)))
    log_z, marg = decoder.marginals(scores)
    ref_log_z, ref = brute.marginals(scores)
    assert np.all(np.isfinite(log_z)) and np.all(np.isfinite(marg.unary))
    np.testing.assert_allclose(log_z, ref_log_z, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(marg.unary, ref.unary, atol=1e-12)
    _, top = decoder.top_k(scores, 3)
    np.testing.assert_allclose(top, brute.top_k(scores, 3)[1], rtol=1e-12)


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match=r"unary has shape \(3,\)"):
        MultilabelScores(np.zeros(3))
    with pytest.raises(ValueError, match="n_labels"):
        MultilabelScores(np.zeros((2, 0)))
    scores = MultilabelScores(np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"y has shape \(2,\); expected \(2, 3\)"):
        decoder.parts(scores, np.array([0, 1]))
    with pytest.raises(ValueError, match="0/1 indicator"):
        decoder.score_outputs(scores, np.full((2, 3), 2))
    with pytest.raises(ValueError, match="k must be"):
        decoder.top_k(scores, 0)
    with pytest.raises(ValueError, match="ZeroOneLoss with rescaling='hinge'"):
        decoder.loss_augmented_map(scores, np.zeros((2, 3)), ZeroOneLoss(), "hinge")
    with pytest.raises(ValueError, match="rescaling must be"):
        decoder.loss_augmented_map(scores, np.zeros((2, 3)), FBetaLoss(), "hinge")

    class FalseNegatives(CountingLoss):
        statistic_names = ("fn",)

    with pytest.raises(ValueError, match="no exact loss-augmented MAP for FalseNegatives"):
        decoder.loss_augmented_map(scores, np.zeros((2, 3)), FalseNegatives(), "margin")


def test_marginals_of_a_large_batch_match_the_closed_form(rng):
    from scipy.special import expit

    unary = 30.0 * rng.normal(size=(20_000, 6))
    unary[::89, 1] = -np.inf  # a label scored -inf is never on
    log_z, marg = decoder.marginals(MultilabelScores(unary))
    np.testing.assert_allclose(log_z, np.logaddexp(0.0, unary).sum(axis=1), rtol=1e-13)
    np.testing.assert_allclose(marg.unary, expit(unary), rtol=1e-13, atol=1e-300)
    np.testing.assert_array_equal(decoder.log_partition(MultilabelScores(unary)), log_z)
    assert np.all(marg.unary[::89, 1] == 0.0)
