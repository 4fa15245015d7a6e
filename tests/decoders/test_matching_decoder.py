import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.base import clone

from skstruct.decoders._core.checks import check_capability
from skstruct.decoders._matching.decoder import (
    MatchingDecoder,
    MatchingParts,
    MatchingScores,
    enumerate_matchings,
    matching_parts,
)
from skstruct.losses import HammingLoss, PerceptronLoss, ZeroOneLoss

decoder = MatchingDecoder()
SHAPES = list(itertools.product(range(1, 5), repeat=2))  # square and rectangular both ways


@st.composite
def instances(draw, max_examples=3, max_size=4):
    """MatchingScores of a few examples with r, c in 1..max_size; integer scores tie."""
    n = draw(st.integers(1, max_examples))
    shapes = np.array(
        [[draw(st.integers(1, max_size)), draw(st.integers(1, max_size))] for _ in range(n)]
    )
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    size = int((shapes[:, 0] * shapes[:, 1]).sum())
    scale = draw(st.sampled_from([0.1, 1.0, 10.0, "integers"]))
    if scale == "integers":
        return MatchingScores(rng.integers(-2, 3, size=size).astype(float), shapes)
    return MatchingScores(scale * rng.normal(size=size), shapes)


def _theta(block, outputs):
    """Scores of the encoded matchings ``outputs`` (n_matchings, r) under ``block``."""
    matched = outputs >= 0
    rows = np.broadcast_to(np.arange(outputs.shape[1]), outputs.shape)
    return np.where(matched, block[rows, np.where(matched, outputs, 0)], 0.0).sum(axis=1)


def _hamming(gold, outputs, normalize):
    delta = (outputs != gold).sum(axis=1).astype(float)
    return delta / outputs.shape[1] if normalize else delta


def _examples(scores, y):
    for i in range(scores.n_examples):
        a, b = scores.offsets[i], scores.offsets[i + 1]
        yield i, scores.block(i), y[a:b]


def _random_matchings(scores, rng):
    """One uniformly drawn encoded matching per example, stacked."""
    drawn = []
    for r, c in scores.shapes:
        outputs = enumerate_matchings(r, c)
        drawn.append(outputs[rng.integers(len(outputs))])
    return np.concatenate(drawn)


@pytest.mark.parametrize("r, c", SHAPES)
def test_enumerate_matchings(r, c):
    outputs = enumerate_matchings(r, c)
    assert outputs.dtype == np.int64 and outputs.shape[1] == r
    assert len(outputs) == math.perm(max(r, c), min(r, c))
    assert len(np.unique(outputs, axis=0)) == len(outputs)
    assert np.all((outputs >= 0).sum(axis=1) == min(r, c))
    for y in outputs:  # each is a valid matching: the decoder accepts it
        matched = y[y >= 0]
        assert len(np.unique(matched)) == len(matched) and np.all(matched < c)
    shapes = np.tile([r, c], (len(outputs), 1))
    matching_parts(outputs.ravel(), shapes)


@given(scores=instances())
def test_map_matches_enumeration(scores):
    y, best = decoder.map(scores, return_score=True)
    assert y.shape == (scores.offsets[-1],) and y.dtype == np.int64
    for i, block, y_i in _examples(scores, y):
        outputs = enumerate_matchings(*block.shape)
        ref = _theta(block, outputs).max()
        assert best[i] == pytest.approx(ref, rel=1e-12, abs=1e-12)
        assert _theta(block, y_i[None])[0] == pytest.approx(ref, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(decoder.score_outputs(scores, y), best, rtol=1e-12)
    np.testing.assert_allclose(decoder.parts(scores, y).dot(scores), best, rtol=1e-12)
    assert np.array_equal(decoder.map(scores), y)


def test_map_on_an_empty_batch():
    scores = MatchingScores(np.zeros(0), np.zeros((0, 2), dtype=np.int64))
    y, best = decoder.map(scores, return_score=True)
    assert y.shape == (0,) and best.shape == (0,)


def test_map_respects_forbidden_pairs():
    block = np.array([[10.0, -np.inf], [-np.inf, 0.0], [5.0, 1.0]])
    y, best = decoder.map(MatchingScores.from_blocks([block]), return_score=True)
    np.testing.assert_array_equal(y, [0, -1, 1])
    np.testing.assert_allclose(best, [11.0])


@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("r, c", SHAPES)
def test_cost_augmentation_adds_the_hamming_loss_exactly(r, c, normalize, rng):
    """⟨c, a_y⟩ = Δ(y_true, y) for every matching y and every gold matching."""
    outputs = enumerate_matchings(r, c)
    scores = MatchingScores(rng.normal(size=r * c), [[r, c]])
    loss = HammingLoss(normalize=normalize)
    theta = _theta(scores.block(0), outputs)
    for gold in outputs:
        augmented = decoder.cost_augmented(scores, gold, loss)
        assert np.array_equal(augmented.shapes, scores.shapes)
        np.testing.assert_allclose(
            _theta(augmented.block(0), outputs) - theta, _hamming(gold, outputs, normalize),
            atol=1e-12,
        )


@pytest.mark.parametrize("normalize", [False, True])
@given(scores=instances(), seed=st.integers(0, 1000))
def test_loss_augmented_map_matches_enumeration(normalize, scores, seed):
    rng = np.random.default_rng(seed)
    y_true = _random_matchings(scores, rng)
    y_map = decoder.map(scores)
    for i in np.flatnonzero(rng.random(scores.n_examples) < 0.5):  # gold that wins
        a, b = scores.offsets[i], scores.offsets[i + 1]
        y_true[a:b] = y_map[a:b]
    loss = HammingLoss(normalize=normalize)
    y_hat = decoder.loss_augmented_map(scores, y_true, loss)
    assert y_hat.shape == y_true.shape
    for (i, block, ours), (_, _, gold) in zip(_examples(scores, y_hat), _examples(scores, y_true)):
        outputs = enumerate_matchings(*block.shape)
        ref = (_theta(block, outputs) + _hamming(gold, outputs, normalize)).max()
        got = _theta(block, ours[None]) + _hamming(gold, ours[None], normalize)
        assert got[0] == pytest.approx(ref, rel=1e-12, abs=1e-12)


@given(scores=instances(), seed=st.integers(0, 1000))
def test_parts_and_scores_agree_with_enumeration(scores, seed):
    y = _random_matchings(scores, np.random.default_rng(seed))
    parts = decoder.parts(scores, y)
    assert isinstance(parts, MatchingParts) and parts.unary.shape == scores.unary.shape
    for i, block, y_i in _examples(scores, y):
        expected = np.zeros(block.shape)
        rows = np.flatnonzero(y_i >= 0)
        expected[rows, y_i[rows]] = 1.0
        np.testing.assert_array_equal(parts.block(i), expected)
    reference = np.array([_theta(block, y_i[None])[0] for _, block, y_i in _examples(scores, y)])
    np.testing.assert_allclose(parts.dot(scores), reference, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(decoder.score_outputs(scores, y), reference, rtol=1e-12, atol=1e-12)


def test_score_container_layout():
    scores = MatchingScores.from_blocks([np.ones((2, 3)), 2 * np.ones((4, 1)), [[3.0]]])
    assert scores.n_examples == 3
    np.testing.assert_array_equal(scores.shapes, [[2, 3], [4, 1], [1, 1]])
    np.testing.assert_array_equal(scores.offsets, [0, 2, 6, 7])
    np.testing.assert_array_equal(scores.unary_offsets, [0, 6, 10, 11])
    assert scores.offsets.dtype == np.int64 and scores.unary_offsets.dtype == np.int64
    block = scores.block(1)
    assert block.shape == (4, 1) and np.shares_memory(block, scores.unary)


def test_take_and_replace(rng):
    blocks = [rng.normal(size=shape) for shape in [(2, 3), (3, 2), (1, 1), (4, 4)]]
    scores = MatchingScores.from_blocks(blocks)
    for indices in ([3, 0, 0, 2], [-1], np.array([True, False, True, False])):
        taken = scores.take(indices)
        order = np.arange(4)[np.asarray(indices)]
        assert taken.n_examples == len(order)
        for k, i in enumerate(order):
            np.testing.assert_array_equal(taken.block(k), blocks[i])
    assert scores.take([]).n_examples == 0
    with pytest.raises(IndexError):
        scores.take([4])

    replaced = scores.replace(unary=np.zeros(scores.unary.shape))
    assert isinstance(replaced, MatchingScores) and np.all(replaced.unary == 0)
    np.testing.assert_array_equal(replaced.shapes, scores.shapes)
    np.testing.assert_array_equal(scores.replace().unary, scores.unary)
    with pytest.raises(ValueError, match="unary has 3 entries"):
        scores.replace(unary=np.zeros(3))


def test_part_arithmetic(rng):
    shapes = np.array([[2, 3], [1, 2]])
    a, b = MatchingParts(rng.normal(size=8), shapes), MatchingParts(rng.normal(size=8), shapes)
    np.testing.assert_allclose((a - b).unary, a.unary - b.unary)
    np.testing.assert_allclose((a + b).unary, a.unary + b.unary)
    np.testing.assert_allclose((2.0 * a).unary, 2.0 * a.unary)
    np.testing.assert_allclose((a * 2.0).unary, 2.0 * a.unary)
    np.testing.assert_allclose(a.scale([2.0, 0.0]).unary, a.unary * np.repeat([2.0, 0.0], [6, 2]))
    scores = MatchingScores(rng.normal(size=8), shapes)
    np.testing.assert_allclose(
        a.dot(scores), [a.unary[:6] @ scores.unary[:6], a.unary[6:] @ scores.unary[6:]]
    )
    taken = a.take([1, 0])
    np.testing.assert_array_equal(taken.unary, np.concatenate((a.unary[6:], a.unary[:6])))
    np.testing.assert_array_equal(taken.shapes, [[1, 2], [2, 3]])
    np.testing.assert_array_equal(a.unary_offsets, [0, 6, 8])
    expected = a.unary - b.unary
    a -= b
    np.testing.assert_allclose(a.unary, expected)
    first = a.example(1)
    assert first.shapes.tolist() == [[1, 2]]
    first.unary[:] = 7.0  # a view
    assert np.all(a.unary[6:] == 7.0) and np.all(a.block(1) == 7.0)


def test_perceptron_loss_uses_map_and_parts(rng):
    scores = MatchingScores(rng.normal(size=4 * 3 + 2 * 5), [[4, 3], [2, 5]])
    y_true = _random_matchings(scores, rng)
    values, gradient = PerceptronLoss()(decoder, scores, y_true)
    gold = decoder.score_outputs(scores, y_true)
    _, best = decoder.map(scores, return_score=True)
    np.testing.assert_allclose(values, best - gold)
    expected = decoder.parts(scores, decoder.map(scores)) - decoder.parts(scores, y_true)
    np.testing.assert_array_equal(gradient.unary, expected.unary)


def test_no_partition_function():
    scores = MatchingScores(np.zeros(4), [[2, 2]])
    for method in (decoder.log_partition, decoder.marginals):
        with pytest.raises(NotImplementedError, match=r"#P-hard") as info:
            method(scores)
        message = str(info.value)
        assert "permanent" in message and "no CRF over matchings" in message
        assert "SparseMAP" in message
    with pytest.raises(ValueError, match="'marginals'"):
        check_capability(decoder, "marginals", "CRFLoss")
    with pytest.raises(NotImplementedError, match="top_k"):
        decoder.top_k(scores, 2)


def test_estimator_interface():
    assert MatchingDecoder.output_kind == "matching"
    assert decoder.capabilities == {"map", "loss_augmented_map", "parts"}
    assert decoder.get_params() == {}
    assert isinstance(clone(decoder), MatchingDecoder)


def test_bad_scores_are_rejected():
    with pytest.raises(ValueError, match=r"shapes has shape \(2,\)"):
        MatchingScores(np.zeros(4), [2, 2])
    with pytest.raises(ValueError, match="integers"):
        MatchingScores(np.zeros(4), [[2.0, 2.0]])
    with pytest.raises(ValueError, match=r"example 1 has shape \(0, 3\) \(empty example\)"):
        MatchingScores(np.zeros(4), [[2, 2], [0, 3]])
    with pytest.raises(ValueError, match="empty example"):
        MatchingScores(np.zeros(0), [[2, 0]])
    with pytest.raises(ValueError, match="unary has 5 entries; shapes needs .* = 4"):
        MatchingScores(np.zeros(5), [[2, 2]])
    with pytest.raises(ValueError, match="1-D"):
        MatchingScores(np.zeros((2, 2)), [[2, 2]])
    with pytest.raises(ValueError, match=r"Block 0 has shape \(3,\)"):
        MatchingScores.from_blocks([np.zeros(3)])
    with pytest.raises(ValueError, match="example 1 .*NaN"):
        decoder.map(MatchingScores(np.array([0.0, 1.0, np.nan, 2.0]), [[1, 2], [1, 2]]))
    with pytest.raises(ValueError, match="example 0 .*finite"):
        decoder.map(MatchingScores.from_blocks([[[-np.inf, -np.inf], [1.0, 2.0]]]))


def test_bad_outputs_are_rejected():
    scores = MatchingScores(np.zeros(4 + 6 + 3), [[2, 2], [3, 2], [1, 3]])
    valid = np.array([0, 1, 1, -1, 0, 2])
    decoder.parts(scores, valid)
    with pytest.raises(ValueError, match=r"y has shape \(5,\); expected \(6,\)"):
        decoder.parts(scores, valid[:5])
    with pytest.raises(ValueError, match="integers"):
        decoder.parts(scores, valid.astype(float))
    with pytest.raises(ValueError, match=r"y\[5\] = 3 \(row 0 of example 2\) is out of range"):
        decoder.parts(scores, np.array([0, 1, 1, -1, 0, 3]))
    with pytest.raises(ValueError, match=r"y\[0\] = -2"):
        decoder.score_outputs(scores, np.array([-2, 1, 1, -1, 0, 2]))
    with pytest.raises(ValueError, match="column 1 of example 1 to 2 rows"):
        decoder.parts(scores, np.array([0, 1, 1, 1, 0, 2]))
    with pytest.raises(ValueError, match="matches 1 rows of example 0 .* min\\(r, c\\) = 2"):
        decoder.parts(scores, np.array([0, -1, 1, -1, 0, 2]))
    with pytest.raises(ValueError, match="matches 1 rows of example 1"):
        decoder.parts(scores, np.array([0, 1, 1, -1, -1, 2]))
    with pytest.raises(ValueError, match="y_true"):
        decoder.loss_augmented_map(scores, valid[:5], HammingLoss())
    with pytest.raises(ValueError, match="matches 0 rows"):
        matching_parts(np.array([-1]), [[1, 1]])


def test_unsupported_losses_are_rejected():
    scores = MatchingScores(np.zeros(4), [[2, 2]])
    y_true = np.array([0, 1])
    with pytest.raises(ValueError, match="Hamming loss only; got ZeroOneLoss"):
        decoder.loss_augmented_map(scores, y_true, ZeroOneLoss())
    with pytest.raises(ValueError, match="class_costs"):
        decoder.loss_augmented_map(scores, y_true, HammingLoss(class_costs=[1.0, 2.0]))
    with pytest.raises(ValueError, match="rescaling='slack'"):
        decoder.loss_augmented_map(scores, y_true, HammingLoss(), "slack")
    with pytest.raises(ValueError, match="rescaling must be"):
        decoder.loss_augmented_map(scores, y_true, HammingLoss(), "hinge")
    with pytest.raises(ValueError, match="r, c >= 1"):
        enumerate_matchings(0, 2)
