"""Uniform samplers over the valid outputs and Hamming-k neighbourhoods, against
brute-force enumeration on tiny instances (chains, multilabel sets, trees)."""

import itertools

import numpy as np
import pytest
from scipy.stats import chisquare

from skstruct.decoders import (
    ChainDecoder,
    ChainScores,
    InfeasibleOutputError,
    MultilabelDecoder,
    MultilabelScores,
)
from skstruct.decoders._core import sampling as _sampling
from skstruct.decoders._tree.decoder import TreeDecoder, TreeScores, enumerate_trees

P_MIN = 1e-3


# --------------------------------------------------------------------------- instances


def _chain_scores(seed, lengths=(1, 3, 4), n_states=3, rate=0.25):
    """Chains with forbidden unary, transition, start and end scores, every sequence
    feasible."""
    rng = np.random.default_rng(seed)
    while True:
        offsets = np.concatenate(([0], np.cumsum(lengths)))
        unary = rng.normal(size=(offsets[-1], n_states))
        transition = rng.normal(size=(n_states, n_states))
        start, end = rng.normal(size=n_states), rng.normal(size=n_states)
        for array in (unary, transition, start, end):
            array[rng.random(array.shape) < rate] = -np.inf
        scores = ChainScores(unary, offsets, transition, start, end)
        if all(len(_valid_chains(scores, i)) for i in range(len(lengths))):
            return scores


def _valid_chains(scores, i):
    """Every labeling of finite score of sequence i, in lexicographic order."""
    one = scores.take([i])
    length = int(one.lengths[0])
    outputs = np.array(list(itertools.product(range(scores.n_states), repeat=length)))
    theta = np.array([ChainDecoder().score_outputs(one, y)[0] for y in outputs])
    return outputs[np.isfinite(theta)]


def _multilabel_scores(seed, n_samples=3, n_labels=4):
    rng = np.random.default_rng(seed)
    unary = rng.normal(size=(n_samples, n_labels))
    unary[rng.random(unary.shape) < 0.3] = -np.inf
    unary[0, 0] = -np.inf
    return MultilabelScores(unary)


def _valid_vectors(scores, i):
    outputs = np.array(list(itertools.product((0, 1), repeat=scores.n_labels)))
    theta = MultilabelDecoder().score_outputs(
        MultilabelScores(np.repeat(scores.unary[i : i + 1], len(outputs), axis=0)), outputs)
    return outputs[np.isfinite(theta)]


def _tree_scores(seed, lengths=(1, 3, 4)):
    rng = np.random.default_rng(seed)
    return TreeScores.from_blocks([rng.normal(size=(n, n)) for n in lengths])


def _valid_trees(decoder, scores, i):
    """Every tree of sentence i allowed by the decoder's options and of finite score."""
    n = int(scores.lengths[i])
    trees = enumerate_trees(n, decoder.projective, decoder.single_root)
    block = scores.block(i)
    finite = np.isfinite(block[np.arange(n), trees]).all(axis=1)
    return trees[finite]


# --------------------------------------------------------------------------- helpers


def _examples(paths, offsets):
    """The draws (or neighbours) of every example as rows: paths (n_entries, width)
    stacked over offsets."""
    return [paths[a:b].T for a, b in zip(offsets[:-1], offsets[1:])]


def _assert_uniform(draws, valid):
    """Every draw is valid, and the counts pass a chi-square test of uniformity."""
    index = {tuple(y): r for r, y in enumerate(valid.tolist())}
    hits = [index.get(tuple(y)) for y in draws.tolist()]
    assert None not in hits, "a draw is not a valid output"
    counts = np.bincount(hits, minlength=len(valid))
    if len(valid) > 1:
        assert chisquare(counts).pvalue > P_MIN, counts


def _hamming_ball(valid, y, k):
    """The valid outputs at distance 1 .. k from y, as a set of tuples."""
    distance = (valid != y).sum(axis=1)
    return {tuple(v) for v in valid[(distance >= 1) & (distance <= k)].tolist()}


def _assert_neighbours(paths, counts, valid_of, y_of, k):
    for i, (rows, count) in enumerate(zip(paths, counts)):
        assert np.all(rows[count:] == -1)
        listed = [tuple(r) for r in rows[:count].tolist()]
        assert len(listed) == len(set(listed)), "a neighbour is listed twice"
        assert set(listed) == _hamming_ball(valid_of(i), y_of(i), k)
        # the documented order: by distance, then changed positions, then values
        y = y_of(i)
        keys = [((np.array(r) != y).sum(), tuple(np.flatnonzero(np.array(r) != y)), r)
                for r in listed]
        assert keys == sorted(keys)
    width = {rows.shape[0] for rows in paths}
    assert width == {counts.max()}, "the trailing axis is max(counts) long"


# --------------------------------------------------------------------------- chains


@pytest.mark.parametrize("seed", [0, 1])
def test_chain_draws_are_uniform_over_valid_labelings(seed):
    scores = _chain_scores(seed)
    paths = ChainDecoder().sample_uniform(scores, 3000, random_state=seed)
    assert paths.shape == (scores.unary.shape[0], 3000) and paths.dtype == np.int64
    for i, draws in enumerate(_examples(paths, scores.offsets)):
        _assert_uniform(draws, _valid_chains(scores, i))


@pytest.mark.parametrize("k", [1, 2])
def test_chain_neighbours_equal_enumeration(k):
    scores = _chain_scores(3)
    rng = np.random.default_rng(k)
    # any labeling, valid or not
    y = rng.integers(0, scores.n_states, size=scores.unary.shape[0])
    paths, counts = ChainDecoder().neighbours(scores, y, k=k)
    assert counts.dtype == np.int64 and counts.shape == (scores.n_sequences,)
    offsets = scores.offsets
    _assert_neighbours(_examples(paths, offsets), counts,
                       lambda i: _valid_chains(scores, i),
                       lambda i: y[offsets[i] : offsets[i + 1]], k)


def test_chain_neighbours_without_forbidden_parts_count_every_relabeling():
    scores = ChainScores(np.zeros((5, 3)), [0, 5], np.zeros((3, 3)), np.zeros(3),
                         np.zeros(3))
    _, counts = ChainDecoder().neighbours(scores, np.zeros(5, dtype=int), k=1)
    assert counts.tolist() == [5 * 2]
    _, counts = ChainDecoder().neighbours(scores, np.zeros(5, dtype=int), k=2)
    assert counts.tolist() == [5 * 2 + 10 * 4]


# --------------------------------------------------------------------------- multilabel


def test_multilabel_draws_are_uniform_over_valid_vectors():
    scores = _multilabel_scores(0)
    paths = MultilabelDecoder().sample_uniform(scores, 3000, random_state=4)
    assert paths.shape == scores.unary.shape + (3000,)
    for i in range(scores.n_examples):
        _assert_uniform(paths[i].T, _valid_vectors(scores, i))


@pytest.mark.parametrize("k", [1, 2])
def test_multilabel_neighbours_equal_enumeration(k):
    scores = _multilabel_scores(1)
    y = np.random.default_rng(k).integers(0, 2, size=scores.unary.shape)
    paths, counts = MultilabelDecoder().neighbours(scores, y, k=k)
    _assert_neighbours([p.T for p in paths], counts, lambda i: _valid_vectors(scores, i),
                       lambda i: y[i], k)


# --------------------------------------------------------------------------- trees


def _forbid_arcs(scores, seed, rate=0.3):
    """Scores with some arcs set to -inf after construction (TreeScores rejects -inf,
    the samplers and neighbourhoods honour it), every sentence keeping a valid tree
    under both root options."""
    rng = np.random.default_rng(seed)
    while True:
        unary = scores.unary.copy()
        unary[rng.random(unary.shape) < rate] = -np.inf
        forbidden = scores.replace()
        forbidden.unary = unary
        if all(len(_valid_trees(TreeDecoder(single_root=True), forbidden, i))
               for i in range(forbidden.n_examples)):
            return forbidden


OPTIONS = [dict(), dict(single_root=True), dict(projective=True),
           dict(projective=True, single_root=True)]


@pytest.mark.parametrize("single_root", [False, True])
@pytest.mark.parametrize("forbid", [False, True])
def test_tree_draws_are_uniform_over_valid_trees(single_root, forbid):
    scores = _tree_scores(0)
    if forbid:
        scores = _forbid_arcs(scores, 1)
    decoder = TreeDecoder(single_root=single_root)
    paths = decoder.sample_uniform(scores, 4000, random_state=2)
    assert paths.shape == (scores.offsets[-1], 4000)
    for i, draws in enumerate(_examples(paths, scores.offsets)):
        _assert_uniform(draws, _valid_trees(decoder, scores, i))


@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize("k", [1, 2])
def test_tree_neighbours_equal_enumeration(options, k):
    scores = _forbid_arcs(_tree_scores(3, lengths=(1, 2, 4, 5)), 4, rate=0.15)
    decoder = TreeDecoder(**options)
    rng = np.random.default_rng(k)
    # any head assignment, tree or not
    y = np.concatenate([rng.integers(0, n, size=n) for n in scores.lengths])
    paths, counts = decoder.neighbours(scores, y, k=k)
    offsets = scores.offsets
    _assert_neighbours(_examples(paths, offsets), counts,
                       lambda i: _valid_trees(decoder, scores, i),
                       lambda i: y[offsets[i] : offsets[i + 1]], k)


def test_tree_without_valid_tree_is_infeasible():
    scores = _tree_scores(0)
    scores.unary[scores.unary_offsets[2] + np.arange(4) * 5] = -np.inf  # no root arc
    with pytest.raises(InfeasibleOutputError, match="sentence 2 ") as info:
        TreeDecoder().sample_uniform(scores, 2, random_state=0)
    assert info.value.examples.tolist() == [2]
    scores.unary[scores.unary_offsets[1] + np.array([1, 2, 3, 5, 6, 7])] = -np.inf
    with pytest.raises(InfeasibleOutputError, match="sentences 1, 2 "):
        TreeDecoder(single_root=True).sample_uniform(scores, 2, random_state=0)


def test_projective_trees_have_no_uniform_sampler():
    decoder = TreeDecoder(projective=True)
    assert "sample_uniform" not in decoder.capabilities
    assert "neighbours" in decoder.capabilities
    assert {"sample_uniform", "neighbours"} <= TreeDecoder().capabilities
    with pytest.raises(NotImplementedError, match="projective"):
        decoder.sample_uniform(_tree_scores(0), 3)


# --------------------------------------------------------------------------- common


def _cases():
    chain = _chain_scores(5)
    return [
        (ChainDecoder(), chain, np.zeros(chain.unary.shape[0], dtype=int)),
        (MultilabelDecoder(), _multilabel_scores(2), np.zeros((3, 4), dtype=int)),
        (TreeDecoder(), _tree_scores(0), np.zeros(8, dtype=int)),
        (TreeDecoder(single_root=True), _tree_scores(1), np.zeros(8, dtype=int)),
    ]


@pytest.mark.parametrize("case", range(4))
def test_same_seed_same_draws_and_different_seeds_differ(case):
    decoder, scores, _ = _cases()[case]
    a = decoder.sample_uniform(scores, 50, random_state=7)
    b = decoder.sample_uniform(scores, 50, random_state=np.random.default_rng(7))
    c = decoder.sample_uniform(scores, 50, random_state=8)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    np.testing.assert_array_equal(
        decoder.sample_uniform(scores, 5, random_state=np.random.RandomState(3)),
        decoder.sample_uniform(scores, 5, random_state=np.random.RandomState(3)))
    assert decoder.sample_uniform(scores, 1, random_state=0).shape[-1] == 1


def test_draws_do_not_depend_on_the_number_of_threads():
    import numba

    cases = _cases()
    before = [d.sample_uniform(s, 20, random_state=1) for d, s, _ in cases]
    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        after = [d.sample_uniform(s, 20, random_state=1) for d, s, _ in cases]
    finally:
        numba.set_num_threads(previous)
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("case", range(4))
def test_bad_arguments_are_rejected(case):
    decoder, scores, y = _cases()[case]
    with pytest.raises(ValueError, match="n_draws must be an integer >= 1"):
        decoder.sample_uniform(scores, 0)
    with pytest.raises(TypeError, match="n_draws"):
        decoder.sample_uniform(scores, 2.0)
    with pytest.raises(TypeError, match="random_state"):
        decoder.sample_uniform(scores, 2, random_state="seed")
    with pytest.raises(ValueError, match="k must be an integer >= 1"):
        decoder.neighbours(scores, y, k=0)
    with pytest.raises(ValueError, match="y_true has shape"):
        decoder.neighbours(scores, y[:-1], k=1)


def test_infeasible_chain_is_named():
    scores = _chain_scores(0)
    unary = scores.unary.copy()
    unary[scores.offsets[1] + 1] = -np.inf  # every state of a token of sequence 1
    scores = scores.replace(unary=unary)
    with pytest.raises(InfeasibleOutputError, match="sequence 1 ") as info:
        ChainDecoder().sample_uniform(scores, 3, random_state=0)
    assert info.value.examples.tolist() == [1]


def test_huge_neighbourhood_is_refused_before_any_work():
    scores = ChainScores(np.zeros((200, 30)), [0, 200], np.zeros((30, 30)), np.zeros(30),
                         np.zeros(30))
    with pytest.raises(ValueError, match="Hamming-3 neighbourhood of sequence 0"):
        ChainDecoder().neighbours(scores, np.zeros(200, dtype=int), k=3)
    assert _sampling.MAX_NEIGHBOUR_CANDIDATES < 200 * 199 * 198 // 6 * 29**3
    trees = TreeScores.from_blocks([np.zeros((50, 50))])
    with pytest.raises(ValueError, match="Hamming-2 neighbourhood of sentence 0 has "
                                         "2,943,675 candidate"):
        TreeDecoder().neighbours(trees, np.arange(50), k=2)
