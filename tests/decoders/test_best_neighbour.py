"""The best-neighbour scan of the MAP-perturbation proposal: the compiled chain kernel
(k = 1) against listing the neighbourhood and scoring it, and against its definition."""

import numpy as np
import pytest

from skstruct.decoders import ChainDecoder, ChainScores
from skstruct.decoders._core.best_neighbour import best_neighbour_by_scan


def _random_chains(rng, integer, rate=0.2):
    """A batch of 1-6 chains of lengths 1-6 over 1-4 states, with -inf parts; integer
    scores in -2 .. 2 make many ties."""
    n_states = int(rng.integers(1, 5))
    lengths = rng.integers(1, 7, size=int(rng.integers(1, 7)))
    offsets = np.concatenate(([0], np.cumsum(lengths)))

    def draw(shape):
        values = (rng.integers(-2, 3, size=shape).astype(float) if integer
                  else rng.normal(size=shape))
        values[rng.random(shape) < rate] = -np.inf
        return values

    return ChainScores(draw((offsets[-1], n_states)), offsets, draw((n_states, n_states)),
                       draw(n_states), draw(n_states))


def _random_starts(rng, scores):
    """Uniform random labelings: some have forbidden parts (score -inf)."""
    return rng.integers(0, scores.n_states, size=scores.offsets[-1])


def _scan_by_definition(scores, y):
    """The scan written out: tokens in order, new labels increasing, y ← y' when
    θ(y') ≥ θ(y) over the neighbours of finite score, from full scores."""
    decoder = ChainDecoder()
    outputs, theta = y.copy(), np.empty(scores.n_sequences)
    for i in range(scores.n_sequences):
        a, b = scores.offsets[i], scores.offsets[i + 1]
        one = scores.take([i])
        best = y[a:b].copy()
        best_score = decoder.score_outputs(one, best)[0]
        for t in range(b - a):
            for v in range(scores.n_states):
                if v == y[a + t]:
                    continue
                candidate = y[a:b].copy()
                candidate[t] = v
                score = decoder.score_outputs(one, candidate)[0]
                if np.isfinite(score) and score >= best_score:
                    best, best_score = candidate, score
        outputs[a:b], theta[i] = best, best_score
    return outputs, theta


@pytest.mark.parametrize("integer", [True, False])
def test_chain_kernel_equals_listing_the_neighbours_with_forbidden_parts(integer):
    rng = np.random.default_rng(0 if integer else 1)
    decoder = ChainDecoder()
    moved = 0
    for _ in range(60):
        scores = _random_chains(rng, integer)
        start = _random_starts(rng, scores)
        outputs, theta = decoder.best_neighbour(scores, start)
        listed, listed_theta = best_neighbour_by_scan(decoder, scores, start, 1,
                                                      scores.offsets)
        np.testing.assert_array_equal(outputs, listed)
        if integer:  # sums of small integers are exact: ties are decided identically
            np.testing.assert_array_equal(theta, listed_theta)
        else:
            np.testing.assert_allclose(theta, listed_theta, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(theta, decoder.score_outputs(scores, outputs),
                                   rtol=1e-12, atol=1e-12)
        moved += np.count_nonzero(outputs != start)
    assert moved > 50


def test_chain_kernel_keeps_the_last_of_tied_best_neighbours_and_stays_below():
    # all-zero scores: every neighbour ties with the start, so the scan ends at the
    # last one (last token relabeled to the largest other label)
    scores = ChainScores(np.zeros((3, 3)), [0, 3], np.zeros((3, 3)), np.zeros(3),
                         np.zeros(3))
    outputs, theta = ChainDecoder().best_neighbour(scores, np.array([2, 1, 2]))
    np.testing.assert_array_equal(outputs, [2, 1, 1])
    np.testing.assert_array_equal(theta, [0.0])
    # every neighbour worse: the start stays
    unary = np.array([[5.0, 0.0], [5.0, 0.0]])
    scores = ChainScores(unary, [0, 2], np.zeros((2, 2)), np.zeros(2), np.zeros(2))
    outputs, theta = ChainDecoder().best_neighbour(scores, np.array([0, 0]))
    np.testing.assert_array_equal(outputs, [0, 0])
    np.testing.assert_array_equal(theta, [10.0])


def test_chain_kernel_equals_the_definition_from_invalid_starts():
    rng = np.random.default_rng(2)
    decoder = ChainDecoder()
    invalid = 0
    for _ in range(40):
        scores = _random_chains(rng, integer=True, rate=0.35)
        start = _random_starts(rng, scores)
        invalid += np.count_nonzero(decoder.score_outputs(scores, start) == -np.inf)
        outputs, theta = decoder.best_neighbour(scores, start)
        expected, expected_theta = _scan_by_definition(scores, start)
        np.testing.assert_array_equal(outputs, expected)
        np.testing.assert_array_equal(theta, expected_theta)
    assert invalid > 20


def test_larger_radius_and_changed_operations_list_the_neighbours():
    class ShiftedScores(ChainDecoder):
        def score_outputs(self, scores, y):
            return super().score_outputs(scores, y) + 1.0

    rng = np.random.default_rng(3)
    scores = _random_chains(rng, integer=True)
    start = _random_starts(rng, scores)
    for decoder, k in ((ChainDecoder(), 2), (ShiftedScores(), 1)):
        outputs, theta = decoder.best_neighbour(scores, start, k)
        listed, listed_theta = best_neighbour_by_scan(decoder, scores, start, k,
                                                      scores.offsets)
        np.testing.assert_array_equal(outputs, listed)
        np.testing.assert_array_equal(theta, listed_theta)


def test_bad_inputs():
    scores = ChainScores(np.zeros((3, 2)), [0, 3], np.zeros((2, 2)), np.zeros(2),
                         np.zeros(2))
    decoder = ChainDecoder()
    with pytest.raises(ValueError, match="start"):
        decoder.best_neighbour(scores, np.array([0, 1]))
    with pytest.raises(ValueError, match="start"):
        decoder.best_neighbour(scores, np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="start_scores"):
        decoder.best_neighbour(scores, np.array([0, 1, 1]), start_scores=np.zeros(2))
    with pytest.raises(ValueError, match="k"):
        decoder.best_neighbour(scores, np.array([0, 1, 1]), k=0)
    with pytest.raises(TypeError, match="ChainScores"):
        decoder.best_neighbour(np.zeros((3, 2)), np.array([0, 1, 1]))
