import itertools

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import chisquare

from skstruct.decoders import (
    InfeasibleOutputError,
    MultilabelParts,
    MultilabelScores,
    SubsetDecoder,
)
from skstruct.losses import HammingLoss, ZeroOneLoss

SHAPES = [(1, 1), (4, 1), (5, 2), (6, 3), (4, 4), (7, 3)]


def _subsets(n_labels, k):
    """Every 0/1 vector of ``n_labels`` entries with ``k`` ones, shape (C(L, k), L)."""
    out = np.zeros((0, n_labels), dtype=np.int64)
    rows = [np.isin(np.arange(n_labels), c).astype(np.int64)
            for c in itertools.combinations(range(n_labels), k)]
    return np.array(rows) if rows else out


def _theta(unary, outputs):
    """Scores (n_samples, n_outputs) of every output; a label scored -inf that is off
    adds 0."""
    return np.where(outputs[None] == 1, unary[:, None, :], 0.0).sum(axis=2)


def _instance(n_samples, n_labels, k, seed, forbid=True):
    rng = np.random.default_rng(seed)
    unary = rng.normal(size=(n_samples, n_labels)) * 2
    if forbid and k < n_labels:
        unary[0, rng.integers(n_labels)] = -np.inf
    return MultilabelScores(unary)


@pytest.mark.parametrize("n_labels, k", SHAPES)
def test_map_log_partition_marginals_match_enumeration(n_labels, k):
    scores = _instance(3, n_labels, k, seed=n_labels * 10 + k)
    decoder = SubsetDecoder(k)
    outputs = _subsets(n_labels, k)
    theta = _theta(scores.unary, outputs)
    labels, best = decoder.map(scores, return_score=True)
    np.testing.assert_allclose(best, theta.max(axis=1))
    np.testing.assert_allclose(decoder.score_outputs(scores, labels), best)
    assert (labels.sum(axis=1) == k).all()
    log_z, marginals = decoder.marginals(scores)
    np.testing.assert_allclose(log_z, logsumexp(theta, axis=1), rtol=1e-12)
    np.testing.assert_allclose(decoder.log_partition(scores), log_z, rtol=1e-12)
    p = np.exp(theta - log_z[:, None])
    assert isinstance(marginals, MultilabelParts)
    np.testing.assert_allclose(marginals.unary, p @ outputs, atol=1e-12)


def test_marginals_are_stable_for_large_scores():
    scores = MultilabelScores(np.array([[1000., 999., -1000., 0., 500.]]))
    log_z, marginals = SubsetDecoder(2).marginals(scores)
    theta = _theta(scores.unary, _subsets(5, 2))
    np.testing.assert_allclose(log_z, logsumexp(theta, axis=1))
    np.testing.assert_allclose(marginals.unary.sum(), 2.0)
    assert np.isfinite(marginals.unary).all()


@pytest.mark.parametrize("n_labels, k", SHAPES)
def test_top_k_lists_match_enumeration(n_labels, k):
    scores = _instance(3, n_labels, k, seed=n_labels + 7 * k)
    outputs = _subsets(n_labels, k)
    theta = _theta(scores.unary, outputs)
    K = outputs.shape[0] + 2
    paths, top = SubsetDecoder(k).top_k(scores, K)
    assert paths.shape == (3, n_labels, K) and top.shape == (3, K)
    for i in range(3):
        order = np.argsort(-theta[i], kind="stable")
        finite = order[theta[i, order] > -np.inf]
        m = finite.size
        np.testing.assert_allclose(top[i, :m], theta[i, finite])
        assert np.all(top[i, m:] == -np.inf) and np.all(paths[i, :, m:] == -1)
        # the same subsets, in the same order (continuous scores: no ties)
        np.testing.assert_array_equal(paths[i, :, :m].T, outputs[finite])


def test_top_k_with_ties_lists_distinct_subsets_in_order():
    scores = MultilabelScores(np.array([[1., 1., 1., 0., 0., -np.inf]]))
    paths, top = SubsetDecoder(3).top_k(scores, 12)
    listed = {tuple(p) for p in paths[0].T if p[0] >= 0}
    assert len(listed) == 10  # C(5, 3): the -inf label is never on
    assert np.all(np.diff(top[0, :10]) <= 0)
    np.testing.assert_allclose(np.sort(top[0, :10])[::-1],
                               np.sort(_theta(scores.unary[:, :5], _subsets(5, 3))[0])[::-1])


@pytest.mark.parametrize("normalize", [False, True])
def test_loss_augmented_map_hamming_and_zero_one_match_enumeration(normalize):
    n_labels, k = 6, 3
    scores = _instance(4, n_labels, k, seed=3)
    decoder = SubsetDecoder(k)
    outputs = _subsets(n_labels, k)
    theta = _theta(scores.unary, outputs)
    y_true = outputs[[0, 5, 11, 19]]
    hamming = (outputs[None] != y_true[:, None]).sum(axis=2)
    if normalize:
        hamming = hamming / n_labels
    found = decoder.loss_augmented_map(scores, y_true, HammingLoss(normalize=normalize))
    value = decoder.score_outputs(scores, found) + (found != y_true).sum(axis=1) / (
        n_labels if normalize else 1)
    np.testing.assert_allclose(value, (theta + hamming).max(axis=1))
    zero_one = decoder.loss_augmented_map(scores, y_true, ZeroOneLoss())
    differ = (outputs[None] != y_true[:, None]).any(axis=2)
    value = decoder.score_outputs(scores, zero_one) + (zero_one != y_true).any(axis=1)
    np.testing.assert_allclose(value, (theta + differ).max(axis=1))


def test_sample_uniform_is_uniform_by_chi_square():
    # 5 labels, one forbidden: C(4, 2) = 6 subsets equally likely
    scores = MultilabelScores(np.array([[0.3, -np.inf, 5., -2., 1.]] * 2))
    draws = SubsetDecoder(2).sample_uniform(scores, 3000, random_state=0)
    assert draws.shape == (2, 5, 3000) and draws.dtype == np.int64
    assert (draws.sum(axis=1) == 2).all() and (draws[:, 1] == 0).all()
    for i in range(2):
        codes = draws[i].T @ (1 << np.arange(5))
        observed = np.unique(codes, return_counts=True)[1]
        assert observed.size == 6
        assert chisquare(observed).pvalue > 1e-3
    # a skewed sampler fails the same test
    skewed = np.concatenate([observed, [observed[0]]])[1:] * np.array([1.2, 1, 1, 1, 1, .8])
    assert chisquare(np.round(skewed)).pvalue < 1e-3


def test_sample_uniform_random_state():
    scores = _instance(3, 6, 2, seed=0)
    decoder = SubsetDecoder(2)
    a = decoder.sample_uniform(scores, 4, random_state=1)
    np.testing.assert_array_equal(a, decoder.sample_uniform(scores, 4, random_state=1))
    b = decoder.sample_uniform(scores, 4, random_state=np.random.default_rng(1))
    c = decoder.sample_uniform(scores, 4, random_state=np.random.RandomState(1))
    for draws in (a, b, c):
        assert (draws.sum(axis=1) == 2).all()
        assert np.isfinite(decoder.score_outputs(scores, draws[..., 0]))[0]


@pytest.mark.parametrize("n_labels, k", [(5, 2), (6, 3), (4, 4), (7, 3), (4, 1)])
@pytest.mark.parametrize("distance", [1, 2, 3, 4, 6])
def test_neighbours_match_enumeration(n_labels, k, distance):
    scores = _instance(3, n_labels, k, seed=distance)
    decoder = SubsetDecoder(k)
    outputs = _subsets(n_labels, k)
    theta = _theta(scores.unary, outputs)
    allowed = theta > -np.inf
    y = outputs[[0, 1 % outputs.shape[0], outputs.shape[0] - 1]]
    paths, counts = decoder.neighbours(scores, y, k=distance)
    assert paths.shape == (3, n_labels, counts.max(initial=0)) and counts.dtype == np.int64
    for i in range(3):
        d = (outputs != y[i]).sum(axis=1)
        expected = {tuple(o) for o in outputs[(d >= 1) & (d <= distance) & allowed[i]]}
        listed = [tuple(p) for p in paths[i, :, : counts[i]].T]
        assert len(listed) == len(expected) and set(listed) == expected
        assert (paths[i, :, counts[i]:] == -1).all()
        listed_d = (paths[i, :, : counts[i]].T != y[i]).sum(axis=1)
        assert np.all(np.diff(listed_d) >= 0)


def test_neighbours_order_is_documented():
    scores = MultilabelScores(np.zeros((1, 4)))
    paths, counts = SubsetDecoder(2).neighbours(scores, np.array([[0, 1, 1, 0]]), k=2)
    # the changed labels {0, 1}, {0, 2}, {1, 3}, {2, 3}, in lexicographic order
    np.testing.assert_array_equal(paths[0].T, [[1, 0, 1, 0], [1, 1, 0, 0],
                                               [0, 0, 1, 1], [0, 1, 0, 1]])


def test_neighbours_of_an_output_with_a_forbidden_label_turn_it_off():
    scores = MultilabelScores(np.array([[0., -np.inf, 0., 0.]]))
    paths, counts = SubsetDecoder(2).neighbours(scores, np.array([[1, 1, 0, 0]]), k=4)
    listed = {tuple(p) for p in paths[0].T}
    assert listed == {(1, 0, 1, 0), (1, 0, 0, 1), (0, 0, 1, 1)}


def test_infeasible_examples_are_named():
    scores = MultilabelScores(np.array([[0., 1., 2.], [0., -np.inf, -np.inf]]))
    decoder = SubsetDecoder(2)
    np.testing.assert_array_equal(decoder.log_partition(scores)[1], -np.inf)
    for call in (decoder.map, decoder.marginals, lambda s: decoder.top_k(s, 2),
                 lambda s: decoder.sample_uniform(s, 2)):
        with pytest.raises(InfeasibleOutputError) as error:
            call(scores)
        np.testing.assert_array_equal(error.value.examples, [1])


def test_bad_inputs():
    scores = MultilabelScores(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="only 3"):
        SubsetDecoder(4).map(scores)
    with pytest.raises(ValueError, match="k"):
        SubsetDecoder(0).map(scores)
    with pytest.raises(TypeError, match="MultilabelScores"):
        SubsetDecoder(1).map(np.zeros((2, 3)))
    decoder = SubsetDecoder(2)
    wrong = np.array([[1, 1, 1], [1, 1, 0]])
    for call in (decoder.parts, decoder.score_outputs, decoder.neighbours,
                 lambda s, y: decoder.loss_augmented_map(s, y, "hamming")):
        with pytest.raises(ValueError, match=r"y(_true)?\[0\] has 3 labels on"):
            call(scores, wrong)
    with pytest.raises(ValueError, match="exactly 2"):
        decoder.check_outputs(wrong, np.array([0, 3, 6]))
    with pytest.raises(ValueError, match="0 or 1"):
        decoder.check_outputs(np.array([[2, 0, 0]]), np.array([0, 3]))
    with pytest.raises(ValueError, match="indicator"):
        decoder.check_outputs(np.array([1, 1, 0]), np.array([0, 3]))
    decoder.check_outputs(np.array([[1, 1, 0]]), np.array([0, 3]))
    with pytest.raises(ValueError, match="n_draws"):
        decoder.sample_uniform(scores, 0)
    with pytest.raises(ValueError, match="k must be"):
        decoder.neighbours(scores, np.array([[1, 1, 0]] * 2), k=0)
    with pytest.raises(ValueError, match="rescaling='slack'"):
        decoder.loss_augmented_map(scores, np.array([[1, 1, 0]] * 2), "hamming", "slack")
