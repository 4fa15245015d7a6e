import functools
import itertools

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import chisquare

from skstruct.decoders import DAGDecoder, DAGParts, DAGScores
from skstruct.decoders._dag.decoder import enumerate_dags
from skstruct.losses import HammingLoss, ZeroOneLoss


@functools.lru_cache(maxsize=None)
def _all_dags(n, max_parents):
    """Every DAG on n nodes with at most max_parents parents, by filtering all 0/1
    matrices with a zero diagonal: (n_dags, n, n), in lexicographic order."""
    off = [(p, c) for p in range(n) for c in range(n) if p != c]
    out = []
    for bits in itertools.product((0, 1), repeat=len(off)):
        a = np.zeros((n, n), dtype=np.int64)
        for (p, c), b in zip(off, bits):
            a[p, c] = b
        if a.sum(axis=0).max(initial=0) > max_parents:
            continue
        if np.linalg.matrix_power(a, n).any():
            continue
        out.append(a)
    return np.array(out)


def _theta(dags, block):
    return np.where(dags == 1, block[None], 0.0).sum(axis=(1, 2))


def _instance(sizes, seed, forbid=2):
    rng = np.random.default_rng(seed)
    blocks = [rng.normal(size=(n, n)) * 2 for n in sizes]
    for _ in range(forbid):
        i = rng.integers(len(sizes))
        n = sizes[i]
        if n > 1:
            p, c = rng.choice(n, 2, replace=False)
            blocks[i][p, c] = -np.inf
    return DAGScores.from_blocks(blocks)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize("max_parents", [0, 1, 2, None])
def test_enumeration_matches_brute_force(n, max_parents):
    bound = n - 1 if max_parents is None else max_parents
    np.testing.assert_array_equal(enumerate_dags(n, max_parents), _all_dags(n, bound))


def test_enumeration_counts():
    assert len(enumerate_dags(5)) == 29281  # OEIS A003024
    assert len(enumerate_dags(5, max_parents=2)) == 13956
    # at most one parent: rooted forests, (n + 1)^(n - 1) (Cayley)
    assert len(enumerate_dags(6, max_parents=1)) == 7**5


SIZES = [3, 1, 4, 2, 4]


@pytest.mark.parametrize("max_parents", [1, 2, None])
def test_map_marginals_top_k_match_enumeration(max_parents):
    scores = _instance(SIZES, seed=max_parents or 5)
    decoder = DAGDecoder(max_parents=max_parents)
    y, best = decoder.map(scores, return_score=True)
    log_z, marginals = decoder.marginals(scores)
    K = 30
    paths, top = decoder.top_k(scores, K)
    assert y.shape == (scores.offsets[-1],) and paths.shape == (scores.offsets[-1], K)
    assert isinstance(marginals, DAGParts)
    np.testing.assert_allclose(decoder.score_outputs(scores, y), best)
    np.testing.assert_allclose(decoder.log_partition(scores), log_z)
    for i, n in enumerate(SIZES):
        dags = _all_dags(n, n - 1 if max_parents is None else min(max_parents, n - 1))
        block = scores.block(i)
        theta = _theta(dags, block)
        np.testing.assert_allclose(best[i], theta.max())
        np.testing.assert_allclose(log_z[i], logsumexp(theta))
        p = np.exp(theta - logsumexp(theta))
        np.testing.assert_allclose(marginals.block(i), np.einsum("d,dpc->pc", p, dags),
                                   atol=1e-12)
        order = np.argsort(-theta, kind="stable")
        order = order[theta[order] > -np.inf][:K]
        m = order.size
        a, b = scores.offsets[i], scores.offsets[i + 1]
        np.testing.assert_allclose(top[i, :m], theta[order])
        np.testing.assert_array_equal(paths[a:b, :m].T, dags[order].reshape(m, -1))
        assert np.all(top[i, m:] == -np.inf) and np.all(paths[a:b, m:] == -1)


@pytest.mark.parametrize("normalize", [False, True])
def test_loss_augmented_map_matches_enumeration(normalize):
    sizes = [3, 4, 2]
    scores = _instance(sizes, seed=11, forbid=0)
    decoder = DAGDecoder(max_parents=2)
    gold = [_all_dags(n, 2)[j] for n, j in zip(sizes, (7, 100, 1))]
    y_true = np.concatenate([g.ravel() for g in gold])
    found = decoder.loss_augmented_map(scores, y_true, HammingLoss(normalize=normalize))
    zero_one = decoder.loss_augmented_map(scores, y_true, ZeroOneLoss())
    for i, n in enumerate(sizes):
        dags = _all_dags(n, 2)
        theta = _theta(dags, scores.block(i))
        hamming = (dags != gold[i]).sum(axis=(1, 2)) / (n * n if normalize else 1)
        a, b = scores.offsets[i], scores.offsets[i + 1]
        got = found[a:b].reshape(n, n)
        value = _theta(got[None], scores.block(i))[0] + (got != gold[i]).sum() / (
            n * n if normalize else 1)
        np.testing.assert_allclose(value, (theta + hamming).max())
        got = zero_one[a:b].reshape(n, n)
        value = _theta(got[None], scores.block(i))[0] + (got != gold[i]).any()
        np.testing.assert_allclose(value, (theta + (dags != gold[i]).any(axis=(1, 2))).max())


def test_sample_uniform_is_uniform_by_chi_square():
    block = np.zeros((3, 3))
    block[0, 1] = -np.inf
    scores = DAGScores.from_blocks([block, np.zeros((2, 2))])
    dags = _all_dags(3, 1)
    allowed = dags[_theta(dags, block) > -np.inf]  # 16 forests, 11 without the arc 0 -> 1
    draws = DAGDecoder(max_parents=1).sample_uniform(scores, 2200, random_state=0)
    assert draws.shape == (13, 2200)
    first = draws[:9].T.reshape(-1, 3, 3)
    assert (first[:, 0, 1] == 0).all()
    codes = first.reshape(len(first), -1) @ (1 << np.arange(9))
    values, observed = np.unique(codes, return_counts=True)
    np.testing.assert_array_equal(np.sort(allowed.reshape(len(allowed), -1)
                                          @ (1 << np.arange(9))), values)
    assert chisquare(observed).pvalue > 1e-3
    second = draws[9:].T @ (1 << np.arange(4))
    assert chisquare(np.unique(second, return_counts=True)[1]).pvalue > 1e-3
    again = DAGDecoder(max_parents=1).sample_uniform(scores, 2200,
                                                     random_state=np.random.default_rng(0))
    np.testing.assert_array_equal(draws, again)


@pytest.mark.parametrize("distance", [1, 2, 3])
def test_neighbours_match_enumeration(distance):
    sizes = [3, 4, 1]
    scores = _instance(sizes, seed=distance, forbid=3)
    decoder = DAGDecoder(max_parents=2)
    ys = [_all_dags(n, 2)[j] for n, j in zip(sizes, (5, 321, 0))]
    ys[0] = np.array([[0, 1, 1], [0, 0, 1], [1, 0, 0]])  # y itself may be cyclic
    y = np.concatenate([a.ravel() for a in ys])
    paths, counts = decoder.neighbours(scores, y, k=distance)
    assert paths.shape == (scores.offsets[-1], counts.max())
    for i, n in enumerate(sizes):
        dags = _all_dags(n, min(2, n - 1))
        theta = _theta(dags, scores.block(i))
        d = (dags != ys[i]).sum(axis=(1, 2))
        keep = (d >= 1) & (d <= distance) & (theta > -np.inf)
        # by distance, then the sorted changed entries in lexicographic order
        changed = [tuple(np.flatnonzero(x.ravel() != ys[i].ravel())) for x in dags[keep]]
        expected = dags[keep][sorted(range(len(changed)),
                                     key=lambda r: (len(changed[r]), changed[r]))]
        a, b = scores.offsets[i], scores.offsets[i + 1]
        assert counts[i] == len(expected)
        np.testing.assert_array_equal(paths[a:b, : counts[i]].T,
                                      expected.reshape(len(expected), n * n))
        assert (paths[a:b, counts[i]:] == -1).all()


def _linear_extensions(a):
    """Topological orders of the DAG with adjacency a, by trying every permutation."""
    n = len(a)
    return sum(all(a[q, p] == 0 for i, p in enumerate(order) for q in order[i + 1:])
               for order in itertools.permutations(range(n)))


@pytest.mark.parametrize("max_parents", [1, 2, 3])
@pytest.mark.parametrize("forbid", [0, 3])
def test_sample_uniform_on_four_nodes_is_uniform_with_the_expected_acceptance(max_parents,
                                                                               forbid):
    rng = np.random.default_rng(10 * max_parents + forbid)
    block = np.zeros((4, 4))
    for p, c in itertools.islice(
            (e for e in rng.permutation([(p, c) for p in range(4) for c in range(4)
                                         if p != c])), forbid):
        block[p, c] = -np.inf
    dags = _all_dags(4, max_parents)
    allowed = dags[_theta(dags, block) > -np.inf]
    n_draws = 60 * len(allowed)
    draws, proposals = DAGDecoder(max_parents=max_parents)._sample_uniform(
        DAGScores.from_blocks([block]), n_draws, 0)
    codes = draws.T @ (1 << np.arange(16))
    values, observed = np.unique(codes, return_counts=True)
    np.testing.assert_array_equal(np.sort(allowed.reshape(len(allowed), -1)
                                          @ (1 << np.arange(16))), values)
    assert chisquare(observed).pvalue > 1e-3
    # total variation from uniform: E|TV| ~ sqrt(N / (2 pi n_draws)) ~ 0.05 here
    assert 0.5 * np.abs(observed / n_draws - 1 / len(allowed)).sum() < 0.1
    # proposals per draw: the pairs (topological order, DAG) over the DAGs
    expected = sum(_linear_extensions(a) for a in allowed) / len(allowed)
    rate = proposals[0] / n_draws
    assert abs(rate - expected) < 4 * np.sqrt(expected * (expected - 1) / n_draws) + 1e-9


def test_sample_uniform_is_uniform_on_arc_marginals_of_six_nodes():
    """Six nodes with at most 2 parents (695,902 DAGs): the arc frequencies of 40,000
    draws match the arc probabilities under the uniform distribution (enumerated)."""
    block = np.zeros((6, 6))
    block[0, 1] = block[3, 2] = -np.inf
    scores = DAGScores.from_blocks([block])
    _, marginals = DAGDecoder().marginals(scores)
    draws = DAGDecoder().sample_uniform(scores, 40000, random_state=1)
    frequency = draws.mean(axis=1)
    p = marginals.unary
    assert (frequency[[1, 3 * 6 + 2]] == 0).all()
    z = (frequency - p) / np.sqrt(np.maximum(p * (1 - p), 1e-12) / 40000)
    assert np.abs(z).max() < 5


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("distance", [1, 2])
def test_generated_neighbours_equal_the_enumerated_ones(seed, distance):
    """Random graphs (DAGs and cyclic ones) on 2 .. 6 nodes with forbidden arcs: the
    generated neighbourhood equals the enumeration's, in the same order."""
    rng = np.random.default_rng(seed)
    sizes = [2, 3, 4, 5, 6, 5]
    scores = _instance(sizes, seed=seed, forbid=8)
    ys = []
    for n in sizes:
        a = (rng.random((n, n)) < 0.3).astype(np.int64)
        np.fill_diagonal(a, 0)
        ys.append(a)
    y = np.concatenate([a.ravel() for a in ys])
    for max_parents in (1, 2, None):
        decoder = DAGDecoder(max_parents=max_parents)
        paths, counts = decoder.neighbours(scores, y, k=distance)
        y_checked = scores._check_outputs(y)
        reference, reference_counts = decoder._enumerated_neighbours(scores, y_checked,
                                                                     distance)
        np.testing.assert_array_equal(counts, reference_counts)
        np.testing.assert_array_equal(paths, reference)


@pytest.mark.parametrize("max_parents", [0, 1, 2, None])
def test_log_count_is_the_number_of_valid_dags(max_parents):
    """With forbidden arcs on 1 .. 5 nodes: the count of the brute-force filter; and
    the log-partition at zero scores."""
    sizes = [1, 2, 3, 4, 4, 5]
    scores = _instance(sizes, seed=7, forbid=6)
    scores = scores.replace(unary=np.where(np.isinf(scores.unary), -np.inf, 0.0))
    decoder = DAGDecoder(max_parents=max_parents)
    got = decoder.log_count(scores)
    for i, n in enumerate(sizes):
        bound = n - 1 if max_parents is None else min(max_parents, n - 1)
        dags = _all_dags(n, bound)
        assert np.exp(got[i]) == pytest.approx((_theta(dags, scores.block(i)) > -np.inf)
                                               .sum(), rel=1e-12)
    np.testing.assert_allclose(got, decoder.log_partition(scores), rtol=1e-12)


def test_neighbours_at_distance_two_include_reversals():
    scores = DAGScores.from_blocks([np.zeros((2, 2))])
    paths, counts = DAGDecoder().neighbours(scores, np.array([0, 1, 0, 0]), k=2)
    np.testing.assert_array_equal(paths.T, [[0, 0, 0, 0], [0, 0, 1, 0]])


def test_bad_inputs():
    decoder = DAGDecoder(max_parents=1)
    scores = DAGScores.from_blocks([np.zeros((3, 3))])
    cyclic = np.array([0, 1, 0, 0, 0, 1, 1, 0, 0])
    two_parents = np.array([0, 0, 1, 0, 0, 1, 0, 0, 0])
    loop = np.array([1, 0, 0, 0, 0, 0, 0, 0, 0])
    offsets = np.array([0, 9])
    for y, match in ((cyclic, "cycle"), (two_parents, "2 parents"),
                     (loop, "from a node to itself")):
        with pytest.raises(ValueError, match=match):
            decoder.check_outputs(y, offsets)
        with pytest.raises(ValueError, match=match):
            decoder.score_outputs(scores, y)
    with pytest.raises(ValueError, match="y_true of example 0 has a directed cycle"):
        decoder.loss_augmented_map(scores, cyclic, "hamming")
    with pytest.raises(ValueError, match="cumulative squares"):
        decoder.check_outputs(np.zeros(8, dtype=int), np.array([0, 8]))
    with pytest.raises(ValueError, match="0 or 1"):
        decoder.check_outputs(2 * two_parents, offsets)
    with pytest.raises(ValueError, match="shape"):
        decoder.parts(scores, np.zeros(4, dtype=int))
    with pytest.raises(ValueError, match="at most 6 nodes"):
        decoder.map(DAGScores.from_blocks([np.zeros((2, 2)), np.zeros((7, 7))]))
    big = DAGScores.from_blocks([np.zeros((7, 7))])
    np.testing.assert_array_equal(decoder.score_outputs(big, np.zeros(49, dtype=int)), [0.])
    with pytest.raises(ValueError, match="max_parents"):
        DAGDecoder(max_parents=-1).map(scores)
    with pytest.raises(ValueError, match="NaN"):
        DAGScores(np.full(4, np.nan), [2])
    with pytest.raises(ValueError, match="need"):
        DAGScores(np.zeros(5), [2])
    with pytest.raises(ValueError, match="n_nodes"):
        DAGScores(np.zeros(0), [0])
    with pytest.raises(ValueError, match="n_draws"):
        decoder.sample_uniform(scores, 0)
    with pytest.raises(ValueError, match="k must be"):
        decoder.neighbours(scores, np.zeros(9, dtype=int), k=0)
    with pytest.raises(TypeError, match="DAGScores"):
        decoder.map(np.zeros((3, 3)))


@pytest.mark.parametrize("max_parents", [1, 2])
def test_compiled_validation_accepts_exactly_the_dags(max_parents):
    """first_violation (the compiled check of every DAG input) passes exactly the 0/1
    matrices of the brute-force enumeration, and names the first bad example of a batch."""
    from skstruct.decoders._dag import kernels
    n = 4
    dags = {a.tobytes() for a in _all_dags(n, max_parents)}
    off = ~np.eye(n, dtype=bool)
    every = np.zeros((2 ** off.sum(), n, n), dtype=np.int64)
    every[:, off] = np.array(list(itertools.product((0, 1), repeat=int(off.sum()))))
    ones = np.ones(1, dtype=np.int64)
    accepted = [kernels.first_violation(a.ravel(), np.array([0, n * n]), n * ones,
                                        max_parents * ones)[1] == 0 for a in every]
    assert accepted == [a.tobytes() in dags for a in every]
    bad = next(a for a in every if a.tobytes() not in dags)
    batch = np.concatenate([_all_dags(n, max_parents)[5].ravel(), bad.ravel()])
    example, kind, _ = kernels.first_violation(batch, np.array([0, 16, 32]),
                                               np.array([n, n]), np.full(2, max_parents))
    assert example == 1 and kind in (2, 3)
