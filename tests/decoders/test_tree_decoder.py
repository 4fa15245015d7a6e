import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.special import logsumexp

from skstruct.decoders._tree import kernels
from skstruct.decoders._tree.decoder import (
    TreeDecoder,
    TreeParts,
    TreeScores,
    enumerate_trees,
    heads_to_states,
    states_to_heads,
    tree_parts,
)
from skstruct.losses import FBetaLoss, HammingLoss, ZeroOneLoss

SETTINGS = [(False, False), (False, True), (True, False), (True, True)]
IDS = ["nonprojective", "nonprojective-single-root", "projective", "projective-single-root"]
DECODERS = [TreeDecoder(projective=p, single_root=s) for p, s in SETTINGS]
decoders = pytest.mark.parametrize("decoder", DECODERS, ids=IDS)


@st.composite
def tree_instances(draw, max_sentences=3, max_length=5):
    """TreeScores of a few short sentences; integer scores make ties likely."""
    lengths = draw(st.lists(st.integers(1, max_length), min_size=1, max_size=max_sentences))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    scale = draw(st.sampled_from([0.1, 1.0, 10.0, 100.0, "integers"]))
    if scale == "integers":
        blocks = [rng.integers(-2, 3, size=(n, n)).astype(float) for n in lengths]
    else:
        blocks = [scale * rng.normal(size=(n, n)) for n in lengths]
    return TreeScores.from_blocks(blocks)


def random_scores(rng, lengths, scale=1.0):
    return TreeScores.from_blocks([scale * rng.normal(size=(n, n)) for n in lengths])


def reference(scores, i, decoder):
    """Every tree of sentence ``i`` that ``decoder`` allows, and their scores."""
    block = scores.block(i)
    n = block.shape[0]
    trees = enumerate_trees(n, decoder.projective, decoder.single_root)
    return trees, block[np.arange(n), trees].sum(axis=1)


def reference_marginals(scores, i, decoder):
    trees, theta = reference(scores, i, decoder)
    log_z = logsumexp(theta)
    p = np.exp(theta - log_z)
    n = trees.shape[1]
    marg = np.zeros((n, n))
    for m in range(n):
        np.add.at(marg[m], trees[:, m], p)
    return log_z, marg


def sentence(y, scores, i):
    return y[scores.offsets[i] : scores.offsets[i + 1]]


def log_space_marginals(decoder, scores):
    """The log-space kernels, which the decoder uses only for very spread scores."""
    kernel = kernels.eisner_inside_outside if decoder.projective else kernels.matrix_tree
    log_z, marg = kernel(
        scores.unary, scores.offsets, scores.unary_offsets, decoder.single_root, True, True
    )
    return log_z, TreeParts(marg, scores.offsets)


@decoders
@given(scores=tree_instances())
def test_map_matches_enumeration(decoder, scores):
    y, best = decoder.map(scores, return_score=True)
    assert y.shape == (scores.offsets[-1],) and y.dtype == np.int64
    assert best.shape == (scores.n_examples,)
    for i in range(scores.n_examples):
        trees, theta = reference(scores, i, decoder)
        assert (trees == sentence(y, scores, i)).all(axis=1).any()  # an allowed tree
        np.testing.assert_allclose(best[i], theta.max(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(decoder.score_outputs(scores, y), best, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(decoder.map(scores), y)


@decoders
@given(scores=tree_instances())
def test_log_partition_and_marginals_match_enumeration(decoder, scores):
    log_z, marg = decoder.marginals(scores)
    assert isinstance(marg, TreeParts) and marg.unary.shape == scores.unary.shape
    np.testing.assert_allclose(decoder.log_partition(scores), log_z, rtol=1e-13, atol=1e-13)
    log_z_log, marg_log = log_space_marginals(decoder, scores)
    for i in range(scores.n_examples):
        ref_log_z, ref = reference_marginals(scores, i, decoder)
        for value, parts in ((log_z, marg), (log_z_log, marg_log)):
            np.testing.assert_allclose(value[i], ref_log_z, rtol=1e-11, atol=1e-11)
            np.testing.assert_allclose(parts.block(i), ref, atol=1e-10)


@decoders
def test_marginals_are_the_gradient_of_the_log_partition(decoder, rng):
    scores = random_scores(rng, [4, 1, 3])
    _, marg = decoder.marginals(scores)
    eps = 1e-6
    numeric = np.empty_like(scores.unary)
    for k in range(scores.unary.shape[0]):
        shift = np.zeros_like(scores.unary)
        shift[k] = eps
        up = decoder.log_partition(scores.replace(unary=scores.unary + shift)).sum()
        down = decoder.log_partition(scores.replace(unary=scores.unary - shift)).sum()
        numeric[k] = (up - down) / (2 * eps)
    np.testing.assert_allclose(marg.unary, numeric, atol=1e-8)


@decoders
@given(scores=tree_instances(), seed=st.integers(0, 2**32 - 1))
def test_parts_and_scores_of_given_trees(decoder, scores, seed):
    rng = np.random.default_rng(seed)
    y, ref_theta = [], []
    for i in range(scores.n_examples):
        trees, theta = reference(scores, i, decoder)
        k = rng.integers(len(trees))
        y.append(trees[k])
        ref_theta.append(theta[k])
    y = np.concatenate(y)
    parts = decoder.parts(scores, y)
    assert isinstance(parts, TreeParts) and parts.unary.shape == scores.unary.shape
    for i in range(scores.n_examples):
        block = parts.block(i)
        n = block.shape[0]
        expected = np.zeros((n, n))
        expected[np.arange(n), sentence(y, scores, i)] = 1.0
        np.testing.assert_array_equal(block, expected)
    np.testing.assert_allclose(parts.dot(scores), ref_theta, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(decoder.score_outputs(scores, y), ref_theta, rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_array_equal(tree_parts(y, scores.offsets).unary, parts.unary)


@decoders
@given(scores=tree_instances(), seed=st.integers(0, 2**32 - 1))
def test_hamming_loss_augmented_map_matches_enumeration(decoder, scores, seed):
    rng = np.random.default_rng(seed)
    y_true = np.concatenate([
        enumerate_trees(n)[rng.integers(len(enumerate_trees(n)))] for n in scores.lengths
    ])
    for loss in (HammingLoss(), HammingLoss(normalize=True)):
        augmented = decoder.cost_augmented(scores, y_true, loss)
        ours = decoder.loss_augmented_map(scores, y_true, loss)
        np.testing.assert_array_equal(ours, decoder.map(augmented))
        value = decoder.score_outputs(scores, ours) + loss(y_true, ours, scores.offsets)
        for i in range(scores.n_examples):
            trees, theta = reference(scores, i, decoder)
            gold = np.tile(sentence(y_true, scores, i), len(trees))
            n = trees.shape[1]
            delta = loss(gold, trees.ravel(), np.arange(len(trees) + 1) * n)
            np.testing.assert_allclose(value[i], (theta + delta).max(), rtol=1e-12, atol=1e-12)
            # <c, a_y> is the loss itself, with no per-sentence constant
            augmented_theta = augmented.block(i)[np.arange(n), trees].sum(axis=1)
            np.testing.assert_allclose(augmented_theta, theta + delta, rtol=1e-12, atol=1e-12)


@decoders
def test_batches_mixing_lengths_equal_per_sentence_results(decoder, rng):
    lengths = rng.permutation(np.repeat(np.arange(1, 7), 2))
    scores = random_scores(rng, lengths)
    y, best = decoder.map(scores, return_score=True)
    log_z, marg = decoder.marginals(scores)
    for i in range(scores.n_examples):
        alone = scores.take([i])
        y_i, best_i = decoder.map(alone, return_score=True)
        np.testing.assert_array_equal(sentence(y, scores, i), y_i)
        np.testing.assert_allclose(best[i], best_i[0], rtol=1e-14)
        log_z_i, marg_i = decoder.marginals(alone)
        np.testing.assert_allclose(log_z[i], log_z_i[0], rtol=1e-14)
        np.testing.assert_allclose(marg.block(i), marg_i.unary.reshape(marg_i.block(0).shape),
                                   atol=1e-15)
    i = int(np.flatnonzero(lengths == 6)[0])
    trees, theta = reference(scores, i, decoder)
    np.testing.assert_allclose(best[i], theta.max(), rtol=1e-12)
    ref_log_z, ref = reference_marginals(scores, i, decoder)
    np.testing.assert_allclose(log_z[i], ref_log_z, rtol=1e-12)
    np.testing.assert_allclose(marg.block(i), ref, atol=1e-12)


@decoders
@pytest.mark.parametrize("scale", [1e3, -1e3])
def test_stable_at_large_scores(decoder, rng, scale):
    scores = random_scores(rng, [1, 2, 3, 4, 5, 6, 5])
    large = scores.replace(unary=scale * scores.unary)
    log_z, marg = decoder.marginals(large)
    assert np.all(np.isfinite(log_z)) and np.all(np.isfinite(marg.unary))
    for i in range(scores.n_examples):
        ref_log_z, ref = reference_marginals(large, i, decoder)
        np.testing.assert_allclose(log_z[i], ref_log_z, rtol=1e-12)
        np.testing.assert_allclose(marg.block(i), ref, atol=1e-9)
        np.testing.assert_allclose(marg.block(i).sum(axis=1), 1.0, atol=1e-12)
    if scale > 0:
        np.testing.assert_array_equal(decoder.map(large), decoder.map(scores))


@decoders
@pytest.mark.parametrize("scale", [0.3, 3.0, 30.0, 300.0])
def test_long_sentences_are_consistent(decoder, rng, scale):
    """Beyond enumeration: the two elimination spaces agree, marginals are distributions,
    and the MAP score is the zero-temperature limit of the log-partition."""
    scores = random_scores(rng, [40, 25, 12, 1], scale)
    log_z, marg = decoder.marginals(scores)
    log_z_log, marg_log = log_space_marginals(decoder, scores)
    np.testing.assert_allclose(log_z, log_z_log, rtol=1e-12)
    np.testing.assert_allclose(marg.unary, marg_log.unary, atol=1e-10)
    assert np.all(marg.unary >= -1e-12)
    for i in range(scores.n_examples):
        np.testing.assert_allclose(marg.block(i).sum(axis=1), 1.0, atol=1e-10)
    y, best = decoder.map(scores, return_score=True)
    cold = 1e6 / scale
    limit = decoder.log_partition(scores.replace(unary=cold * scores.unary)) / cold
    np.testing.assert_allclose(limit, best, rtol=1e-9, atol=1e-9)
    roots = y == np.arange(y.shape[0]) - np.repeat(scores.offsets[:-1], scores.lengths)
    children = np.add.reduceat(roots.astype(int), scores.offsets[:-1])
    assert np.all(children >= 1) and (not decoder.single_root or np.all(children == 1))


def test_single_root_map_is_the_best_over_forced_roots(rng):
    """With one root arc left open per run, the unconstrained decoders give the reference."""
    scores = random_scores(rng, [30, 9], scale=2.0)
    for projective in (False, True):
        decoder = TreeDecoder(projective=projective, single_root=True)
        _, best = decoder.map(scores, return_score=True)
        free = TreeDecoder(projective=projective)
        for i in range(scores.n_examples):
            block = scores.block(i)
            n = block.shape[0]
            candidates = []
            for r in range(n):
                forced = block.copy()
                forced[np.arange(n), np.arange(n)] = -1e9
                forced[r, r] = block[r, r]
                _, value = free.map(TreeScores.from_blocks([forced]), return_score=True)
                candidates.append(value[0])
            np.testing.assert_allclose(best[i], max(candidates), rtol=1e-12)


def test_enumerate_trees_counts():
    counts = {  # (n + 1)^(n - 1), n^(n - 1), and the projective counts (A001764, A006013)
        (False, False): [1, 3, 16, 125, 1296],
        (False, True): [1, 2, 9, 64, 625],
        (True, False): [1, 3, 12, 55, 273],
        (True, True): [1, 2, 7, 30, 143],
    }
    for (projective, single_root), expected in counts.items():
        for n, count in enumerate(expected, start=1):
            trees = enumerate_trees(n, projective, single_root)
            assert trees.shape == (count, n)
            assert len({tuple(t) for t in trees}) == count
    # the arc between tokens 0 and 2 spans token 1, which attaches to the root
    nonprojective = {tuple(t) for t in enumerate_trees(3).tolist()} - {
        tuple(t) for t in enumerate_trees(3, projective=True).tolist()
    }
    assert nonprojective == {(0, 1, 0), (1, 1, 0), (2, 1, 1), (2, 1, 2)}


def test_heads_and_states_round_trip(rng):
    offsets = np.array([0, 1, 4, 9])
    states = np.concatenate([enumerate_trees(1)[0], enumerate_trees(3)[rng.integers(16)],
                             enumerate_trees(5)[777]])
    heads = states_to_heads(states, offsets)
    np.testing.assert_array_equal(heads_to_states(heads, offsets), states)
    np.testing.assert_array_equal(states_to_heads(heads_to_states(heads, offsets), offsets),
                                  heads)
    np.testing.assert_array_equal(
        heads_to_states([0, 3, 1, 0, 0], [0, 1, 5]), [0, 2, 0, 2, 3]
    )


def test_tree_parts():
    parts = tree_parts(np.array([0, 0, 1]), np.array([0, 1, 3]))
    np.testing.assert_array_equal(parts.unary, [1.0, 1.0, 0.0, 0.0, 1.0])
    np.testing.assert_array_equal(parts.unary_offsets, [0, 1, 5])
    np.testing.assert_array_equal(parts.block(1), [[1.0, 0.0], [0.0, 1.0]])


def test_containers(rng):
    scores = random_scores(rng, [2, 1, 3])
    np.testing.assert_array_equal(scores.lengths, [2, 1, 3])
    np.testing.assert_array_equal(scores.unary_offsets, [0, 4, 5, 14])
    assert scores.n_examples == scores.n_sentences == 3
    np.testing.assert_array_equal(scores.block(2), scores.unary[5:].reshape(3, 3))
    taken = scores.take([2, 0])
    np.testing.assert_array_equal(taken.offsets, [0, 3, 5])
    np.testing.assert_array_equal(taken.block(0), scores.block(2))
    np.testing.assert_array_equal(taken.block(1), scores.block(0))
    np.testing.assert_array_equal(scores.take(np.array([False, True, False])).unary,
                                  scores.block(1).ravel())
    assert scores.take([]).n_examples == 0
    replaced = scores.replace(unary=np.zeros(14))
    np.testing.assert_array_equal(replaced.offsets, scores.offsets)

    a = TreeParts(rng.normal(size=14), scores.offsets)
    b = TreeParts(rng.normal(size=14), scores.offsets)
    weights = np.array([1.0, 2.0, 0.5])
    np.testing.assert_allclose((a - b).unary, a.unary - b.unary)
    np.testing.assert_allclose((a + b).unary, a.unary + b.unary)
    np.testing.assert_allclose((2 * a).unary, (a * 2).unary)
    per_entry = np.repeat(weights, [4, 1, 9])
    np.testing.assert_allclose(a.scale(weights).unary, a.unary * per_entry)
    np.testing.assert_allclose(
        a.dot(scores), [a.unary[s:e] @ scores.unary[s:e] for s, e in [(0, 4), (4, 5), (5, 14)]]
    )
    view = a.example(2)
    np.testing.assert_array_equal(view.offsets, [0, 3])
    view.unary[0] = 42.0
    assert a.unary[5] == 42.0  # a view
    np.testing.assert_array_equal(a.take([1]).unary, a.unary[4:5])
    expected = a.unary - b.unary
    a -= b
    np.testing.assert_allclose(a.unary, expected)


def test_decoder_parameters():
    decoder = TreeDecoder(projective=True)
    assert decoder.get_params() == {"projective": True, "single_root": False}
    assert decoder.set_params(single_root=True).single_root is True
    assert TreeDecoder.output_kind == "tree"
    # projective trees: no uniform sampler (Wilson's algorithm draws any arborescence)
    assert decoder.capabilities == {"map", "marginals", "loss_augmented_map", "parts",
                                    "neighbours"}
    assert "sample_uniform" in TreeDecoder().capabilities
    decoder._validate_params()
    with pytest.raises(ValueError, match="projective"):
        TreeDecoder(projective="yes")._validate_params()


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="empty sentence"):
        TreeScores(np.zeros(5), [0, 1, 1, 3])
    with pytest.raises(ValueError, match="Σ_i n_i² = 5"):
        TreeScores(np.zeros(4), [0, 1, 3])
    with pytest.raises(ValueError, match="start at 0"):
        TreeScores(np.zeros(1), [1, 2])
    with pytest.raises(ValueError, match="1-D"):
        TreeScores(np.zeros((1, 1)), [0, 1])
    with pytest.raises(ValueError, match="finite"):
        TreeScores(np.array([np.nan]), [0, 1])
    with pytest.raises(ValueError, match=r"\(n_i, n_i\)"):
        TreeScores.from_blocks([np.zeros((2, 3))])
    scores = TreeScores(np.zeros(5), [0, 1, 3])
    decoder = TreeDecoder()
    with pytest.raises(ValueError, match=r"y has shape \(2,\); expected \(3,\)"):
        decoder.parts(scores, np.array([0, 0]))
    with pytest.raises(ValueError, match=r"y\[2\] = 2 \(token 1 of sentence 1"):
        decoder.score_outputs(scores, np.array([0, 0, 2]))
    with pytest.raises(ValueError, match=r"y\[0\] = -1"):
        decoder.parts(scores, np.array([-1, 0, 1]))
    with pytest.raises(ValueError, match="integers"):
        decoder.parts(scores, np.array([0.0, 0.0, 1.0]))
    with pytest.raises(ValueError, match=r"y_true\[1\] = 5"):
        decoder.cost_augmented(scores, np.array([0, 5, 0]), HammingLoss())
    y_true = np.array([0, 1, 1])
    for loss in (ZeroOneLoss(), FBetaLoss()):
        with pytest.raises(ValueError, match="HammingLoss only"):
            decoder.cost_augmented(scores, y_true, loss)
        with pytest.raises(ValueError, match="HammingLoss only"):
            decoder.loss_augmented_map(scores, y_true, loss)
    with pytest.raises(ValueError, match="class_costs"):
        decoder.cost_augmented(scores, y_true, HammingLoss(class_costs=np.ones(2)))
    with pytest.raises(ValueError, match="rescaling='margin'"):
        decoder.loss_augmented_map(scores, y_true, HammingLoss(), rescaling="slack")
    with pytest.raises(TypeError, match="TreeScores"):
        decoder.map(np.zeros(5))
    with pytest.raises(ValueError, match=r"heads\[1\] = 3"):
        heads_to_states([0, 3, 1], [0, 1, 3])
    with pytest.raises(ValueError, match="1 <= n <= 6"):
        enumerate_trees(0)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_check_outputs_accepts_exactly_the_decoders_trees(n):
    every = enumerate_trees(n)
    offsets = np.array([0, n])
    for projective in (False, True):
        for single_root in (False, True):
            decoder = TreeDecoder(projective=projective, single_root=single_root)
            allowed = {tuple(t) for t in enumerate_trees(n, projective, single_root)}
            for tree in every:
                if tuple(tree) in allowed:
                    decoder.check_outputs(tree, offsets)
                else:
                    with pytest.raises(ValueError, match="projective|single_root"):
                        decoder.check_outputs(tree, offsets)
