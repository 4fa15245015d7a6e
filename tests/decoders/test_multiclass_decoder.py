import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from skstruct.decoders import (
    BruteForceDecoder,
    InfeasibleOutputError,
    MulticlassDecoder,
    MulticlassParts,
    MulticlassScores,
)
from skstruct.losses import (
    FBetaLoss,
    HammingLoss,
    IoULoss,
    LabelCountLoss,
    PrecisionLoss,
    RecallLoss,
    ZeroOneLoss,
)

brute = BruteForceDecoder()
decoder = MulticlassDecoder()


@st.composite
def instances(draw, max_samples=4, max_classes=5):
    """MulticlassScores with small shapes; integer scores make ties likely."""
    shape = (draw(st.integers(1, max_samples)), draw(st.integers(1, max_classes)))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    scale = draw(st.sampled_from([0.1, 1.0, 10.0, "integers"]))
    if scale == "integers":
        return MulticlassScores(rng.integers(-2, 3, size=shape).astype(float))
    return MulticlassScores(scale * rng.normal(size=shape))


def _losses(n_classes, rng):
    costs = rng.uniform(0, 2, size=(n_classes, n_classes))
    np.fill_diagonal(costs, 0)
    positive = np.arange(n_classes) != 0  # class 0 plays the outside label
    counting = [FBetaLoss(), FBetaLoss(beta=2.0), PrecisionLoss(), RecallLoss(), IoULoss(),
                LabelCountLoss()]
    return [HammingLoss(), HammingLoss(normalize=True), HammingLoss(class_costs=costs),
            HammingLoss(class_costs=rng.uniform(0, 2, size=n_classes)), ZeroOneLoss()] + [
        loss.with_positive_states(positive) for loss in counting
    ]


@given(scores=instances())
def test_map_matches_enumeration(scores):
    labels, best = decoder.map(scores, return_score=True)
    _, ref_best = brute.map(scores, return_score=True)
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
    scores = MulticlassScores(rng.normal(size=(3, 4)))
    _, marg = decoder.marginals(scores)
    eps = 1e-6
    for index in np.ndindex(scores.unary.shape):
        shift = np.zeros(scores.unary.shape)
        shift[index] = eps
        numeric = (decoder.log_partition(scores.replace(unary=scores.unary + shift)).sum()
                   - decoder.log_partition(scores.replace(unary=scores.unary - shift)).sum())
        assert numeric / (2 * eps) == pytest.approx(marg.unary[index], abs=1e-8)


@given(scores=instances(), k=st.integers(1, 7))
def test_top_k_matches_enumeration(scores, k):
    paths, top = decoder.top_k(scores, k)
    ref_paths, ref_top = brute.top_k(scores, k)
    assert paths.shape == (scores.n_examples, k) and top.shape == (scores.n_examples, k)
    np.testing.assert_allclose(top, ref_top, rtol=1e-12)
    assert np.array_equal(paths == -1, ref_paths == -1)
    assert np.array_equal(paths == -1, np.isinf(top))
    for r in range(min(k, scores.n_states)):
        np.testing.assert_array_equal(decoder.score_outputs(scores, paths[:, r]), top[:, r])
    found = np.sort(paths[:, : scores.n_states], axis=1)
    assert np.all(np.diff(found, axis=1) != 0)  # distinct classes


def test_top_k_pads_beyond_n_classes(rng):
    scores = MulticlassScores(rng.normal(size=(2, 3)))
    paths, top = decoder.top_k(scores, 5)
    assert np.all(paths[:, 3:] == -1) and np.all(top[:, 3:] == -np.inf)
    assert np.all(np.diff(top[:, :3], axis=1) <= 0)


@pytest.mark.parametrize("rescaling", ["margin", "slack"])
@given(scores=instances(), seed=st.integers(0, 1000))
def test_loss_augmented_map_matches_enumeration(rescaling, scores, seed):
    rng = np.random.default_rng(seed)
    y_true = rng.integers(0, scores.n_states, size=scores.n_examples)
    is_map = rng.random(scores.n_examples) < 0.5  # gold outputs that win, by more or less
    y_true[is_map] = decoder.map(scores)[is_map]
    offsets = np.arange(scores.n_examples + 1)
    gold = decoder.score_outputs(scores, y_true)

    def objective(y, loss):
        theta, delta = decoder.score_outputs(scores, y), loss(y_true, y, offsets)
        return theta + delta if rescaling == "margin" else delta * (1 + theta - gold)

    for loss in _losses(scores.n_states, rng):
        ours = decoder.loss_augmented_map(scores, y_true, loss, rescaling)
        ref = brute.loss_augmented_map(scores, y_true, loss, rescaling)
        assert ours.shape == y_true.shape
        np.testing.assert_allclose(objective(ours, loss), objective(ref, loss), atol=1e-9)


@given(scores=instances())
def test_parts_and_score_agree_with_enumeration(scores):
    y = np.random.default_rng(0).integers(0, scores.n_states, size=scores.n_examples)
    parts = decoder.parts(scores, y)
    np.testing.assert_array_equal(parts.unary, brute.parts(scores, y).unary)
    np.testing.assert_allclose(decoder.score_outputs(scores, y), parts.dot(scores), rtol=1e-12)
    np.testing.assert_allclose(brute.score_outputs(scores, y), parts.dot(scores), rtol=1e-12)


def test_part_arithmetic(rng):
    a, b = MulticlassParts(rng.normal(size=(3, 2))), MulticlassParts(rng.normal(size=(3, 2)))
    weights = np.array([1.0, 2.0, 0.0])
    np.testing.assert_allclose((a - b).unary, a.unary - b.unary)
    np.testing.assert_allclose(a.scale(weights).unary, a.unary * weights[:, None])
    expected = a.unary - b.unary
    a -= b
    np.testing.assert_allclose(a.unary, expected)


@pytest.mark.parametrize("scale", [1e4, -1e4])
def test_stable_for_scores_of_1e4(rng, scale):
    scores = MulticlassScores(scale * rng.normal(size=(5, 4)))
    log_z, marg = decoder.marginals(scores)
    ref_log_z, ref = brute.marginals(scores)
    np.testing.assert_allclose(log_z, ref_log_z, rtol=1e-12)
    np.testing.assert_allclose(marg.unary, ref.unary, atol=1e-12)
    np.testing.assert_allclose(marg.unary.sum(axis=1), 1.0, rtol=1e-12)


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match=r"unary has shape \(3,\)"):
        MulticlassScores(np.zeros(3))
    with pytest.raises(ValueError, match="n_classes"):
        MulticlassScores(np.zeros((2, 0)))
    scores = MulticlassScores(np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"y has shape \(3,\); expected \(2,\)"):
        decoder.parts(scores, np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="encoded classes 0 .. 2"):
        decoder.score_outputs(scores, np.array([0, 3]))
    with pytest.raises(ValueError, match="k must be"):
        decoder.top_k(scores, 0)
    with pytest.raises(ValueError, match="rescaling must be"):
        decoder.loss_augmented_map(scores, np.array([0, 1]), HammingLoss(), "hinge")
    with pytest.raises(ValueError, match="bind"):
        decoder.loss_augmented_map(scores, np.array([0, 1]), FBetaLoss())


def test_marginals_of_a_large_batch_match_the_closed_form(rng):
    from scipy.special import logsumexp, softmax

    unary = 5.0 * rng.normal(size=(20_000, 7))
    unary[::97, 2] = -np.inf  # forbidden classes get probability 0
    log_z, marg = decoder.marginals(MulticlassScores(unary))
    np.testing.assert_allclose(log_z, logsumexp(unary, axis=1), rtol=1e-13)
    np.testing.assert_allclose(marg.unary, softmax(unary, axis=1), rtol=1e-12, atol=1e-300)
    assert np.all(marg.unary[::97, 2] == 0.0)


def test_log_partition_of_a_row_scored_minus_inf_is_minus_inf():
    scores = MulticlassScores(np.array([[0.0, 1.0], [-np.inf, -np.inf]]))
    log_z = decoder.log_partition(scores)
    assert np.isfinite(log_z[0]) and log_z[1] == -np.inf
    with pytest.raises(InfeasibleOutputError):
        decoder.marginals(scores)
