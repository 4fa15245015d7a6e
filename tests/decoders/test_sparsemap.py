"""SparseMAP against a QP over enumerated structures, sparsemax, and finite differences."""

import itertools

import numpy as np
import pytest
from _chain_data import moved_chain_scores, random_chain_scores

from skstruct.decoders import (
    BruteForceDecoder,
    ChainDecoder,
    ChainScores,
    MulticlassDecoder,
    MulticlassScores,
    MatchingDecoder,
    MatchingScores,
    MultilabelDecoder,
    MultilabelScores,
    TreeDecoder,
    TreeScores,
    chain_parts,
)
from skstruct.decoders._sparsemap import sparsemap
from skstruct.optim._qp import solve_capped_simplex_qp


def sparsemax(z):
    """Martins & Astudillo (2016), by sorting."""
    z_sorted = np.sort(z)[::-1]
    cumulative = np.cumsum(z_sorted) - 1.0
    k = np.arange(1, z.size + 1)
    support = z_sorted - cumulative / k > 0
    rho = k[support][-1]
    return np.maximum(z - cumulative[rho - 1] / rho, 0.0)


def reference_objective(unary_vertices, theta):
    """max_{p ∈ simplex} θᵀp − ½‖Σ_s p_s m_s‖², by a generic QP over all vertices.

    The capped-simplex solver maximizes over Σp ≤ 1; a constant added to every θ_s makes
    Σp = 1 optimal without changing the maximizer on the simplex.
    """
    gram = unary_vertices @ unary_vertices.T
    shift = 10.0 * (np.abs(gram).sum(axis=1).max() + np.ptp(theta) + 1.0)
    result = solve_capped_simplex_qp(gram, theta - theta.max() + shift, 1.0, tol=1e-13)
    p = result.alpha
    assert abs(p.sum() - 1.0) < 1e-9
    u = p @ unary_vertices
    return float(p @ theta - 0.5 * u @ u)


def chain_vertices(scores):
    """Unary indicator vectors and scores of all labelings of a one-sequence batch."""
    length, n_states = scores.unary.shape
    outputs = np.array(list(itertools.product(range(n_states), repeat=length)))
    offsets = np.arange(len(outputs) + 1) * length
    stacked = ChainScores(np.tile(scores.unary, (len(outputs), 1)), offsets,
                          scores.transition, scores.start, scores.end)
    parts = chain_parts(outputs.ravel(), offsets, n_states)
    theta = parts.dot(stacked)
    return parts.unary.reshape(len(outputs), -1), theta


def random_chain(rng, length, n_states, scale):
    return random_chain_scores(rng, [length], n_states, scale)


@pytest.mark.parametrize("scale", [0.01, 0.1, 1.0, 10.0, 100.0])
def test_active_set_reaches_the_enumerated_qp_optimum_on_chains(scale):
    # Transition scores make active sets affinely dependent (M_IᵀM_I singular); the
    # solver must still reach the optimum of the QP over all structures.
    rng = np.random.default_rng(int(scale * 100))
    for trial in range(12):
        length, n_states = [(3, 3), (4, 2), (2, 4), (5, 2), (3, 4)][trial % 5]
        scores = random_chain(rng, length, n_states, scale)
        result = sparsemap(ChainDecoder(), scores, max_iter=500)
        assert result.converged.all()
        vertices, theta = chain_vertices(scores)
        expected = reference_objective(vertices, theta)
        assert result.objective[0] == pytest.approx(expected, rel=1e-8, abs=1e-10)
        # The reported objective is that of the returned combination.
        u = result.unary.ravel()
        combined = result.marginals.dot(scores)[0] - 0.5 * u @ u
        assert combined == pytest.approx(expected, rel=1e-8, abs=1e-10)


def test_batched_solution_equals_per_example_solutions():
    rng = np.random.default_rng(3)
    singles = [random_chain(rng, length, 3, 1.0) for length in (1, 4, 2, 5)]
    stacked = ChainScores(
        np.vstack([s.unary for s in singles]),
        np.concatenate(([0], np.cumsum([s.unary.shape[0] for s in singles]))),
        singles[0].transition, singles[0].start, singles[0].end,
    )
    batch = sparsemap(ChainDecoder(), stacked)
    for i, single in enumerate(singles):
        alone = sparsemap(ChainDecoder(), single.replace(unary=single.unary) if i == 0 else
                          ChainScores(single.unary, single.offsets, stacked.transition,
                                      stacked.start, stacked.end))
        assert batch.objective[i] == pytest.approx(alone.objective[0], rel=1e-10)
        a, b = stacked.offsets[i], stacked.offsets[i + 1]
        np.testing.assert_allclose(batch.unary[a:b], alone.unary, atol=1e-10)


def test_multiclass_is_sparsemax_exactly():
    rng = np.random.default_rng(0)
    z = rng.normal(size=(50, 6)) * rng.uniform(0.1, 5, size=(50, 1))
    result = sparsemap(MulticlassDecoder(), MulticlassScores(z))
    expected = np.array([sparsemax(row) for row in z])
    np.testing.assert_allclose(result.unary, expected, atol=1e-12)
    np.testing.assert_array_equal(result.support_size, (expected > 0).sum(axis=1))


def test_multiclass_jacobian_is_the_sparsemax_jacobian():
    rng = np.random.default_rng(1)
    z = rng.normal(size=(20, 5))
    scores = MulticlassScores(z)
    result = sparsemap(MulticlassDecoder(), scores)
    for i in range(z.shape[0]):
        s = (result.unary[i] > 0).astype(float)
        jacobian = np.diag(s) - np.outer(s, s) / s.sum()
        for j in range(z.shape[1]):
            upstream = np.zeros_like(z)
            upstream[i, j] = 1.0
            row = result.vjp(upstream).unary[i]
            np.testing.assert_allclose(row, jacobian[j], atol=1e-12)


def test_vjp_matches_finite_differences_on_chains():
    rng = np.random.default_rng(7)
    decoder = ChainDecoder()
    for _ in range(5):
        scores = random_chain(rng, 4, 3, 1.0)
        result = sparsemap(decoder, scores)
        upstream = rng.normal(size=scores.unary.shape)
        gradient = result.vjp(upstream)
        direction = random_chain(rng, 4, 3, 1.0)
        eps = 1e-6

        def moved(sign):
            shifted = moved_chain_scores(scores, direction, sign * eps)
            return np.sum(upstream * sparsemap(decoder, shifted).unary)

        numeric = (moved(1) - moved(-1)) / (2 * eps)
        assert gradient.dot(direction)[0] == pytest.approx(numeric, rel=1e-5, abs=1e-7)


def test_properties_scale_shift_and_vertex_optimality():
    rng = np.random.default_rng(11)
    decoder = ChainDecoder()
    scores = random_chain(rng, 4, 3, 1.0)
    # Large scores: the solution is the MAP vertex.
    big = ChainScores(scores.unary * 1e4, scores.offsets, scores.transition * 1e4,
                      scores.start * 1e4, scores.end * 1e4)
    result = sparsemap(decoder, big)
    assert result.support_size[0] == 1
    np.testing.assert_array_equal(result.unary.argmax(axis=1), decoder.map(big))
    # A constant added to every structure's score leaves u unchanged.
    shifted = ChainScores(scores.unary, scores.offsets, scores.transition,
                          scores.start + 3.0, scores.end)
    np.testing.assert_allclose(sparsemap(decoder, shifted).unary,
                               sparsemap(decoder, scores).unary, atol=1e-10)
    # y = e_s* is optimal iff θ_s* − θ_s ≥ m_s*ᵀ(m_s* − m_s) for all s ≠ s*. Over chains of
    # several shapes and scales, both sides of the "iff" must occur (and be checked) often.
    n_vertex = n_interior = 0
    for trial in range(48):
        length, n_states = [(3, 3), (4, 2), (2, 4), (4, 3)][trial % 4]
        scale = [0.3, 1.0, 3.0, 10.0][(trial // 4) % 4]
        instance = random_chain(rng, length, n_states, scale)
        out = sparsemap(decoder, instance, max_iter=500)
        vertices, theta = chain_vertices(instance)
        gram = vertices @ vertices.T
        slack = theta[:, None] - theta[None, :] - (np.diag(gram)[:, None] - gram)
        np.fill_diagonal(slack, np.inf)
        margin = slack.min(axis=1)
        s_star = int(np.argmax(margin))
        if margin[s_star] > 1e-9:
            n_vertex += 1
            assert out.support_size[0] == 1
            np.testing.assert_allclose(out.unary.ravel(), vertices[s_star], atol=1e-10)
        else:
            assert margin[s_star] < -1e-9  # no instance sits on the boundary
            n_interior += 1
            assert out.support_size[0] > 1
            assert np.abs(vertices - out.unary.ravel()).max(axis=1).min() > 1e-6
    assert n_vertex >= 15 and n_interior >= 15


def test_multilabel_against_enumeration():
    rng = np.random.default_rng(5)
    unary = rng.normal(size=(6, 4)) * 2
    scores = MultilabelScores(unary)
    result = sparsemap(MultilabelDecoder(), scores)
    outputs = np.array(list(itertools.product((0, 1), repeat=4)), dtype=float)
    for i in range(unary.shape[0]):
        expected = reference_objective(outputs, outputs @ unary[i])
        assert result.objective[i] == pytest.approx(expected, rel=1e-8, abs=1e-10)
    # Independent labels: u is the clipped scores (the box projection of η_U... per label,
    # argmax η u − u²/2 over conv{0,1}, i.e. clip(η, 0, 1)).
    np.testing.assert_allclose(result.unary, np.clip(unary, 0, 1), atol=1e-10)


@pytest.mark.parametrize("method", ["fw", "away_fw", "pairwise_fw"])
def test_frank_wolfe_variants_approach_the_optimum(method):
    rng = np.random.default_rng(2)
    scores = random_chain(rng, 4, 3, 1.0)
    exact = sparsemap(ChainDecoder(), scores)
    approx = sparsemap(ChainDecoder(), scores, method=method, max_iter=2000, tol=1e-7)
    assert approx.objective[0] <= exact.objective[0] + 1e-12
    assert approx.objective[0] == pytest.approx(exact.objective[0], abs=1e-4)


def test_warm_start_resumes_from_an_earlier_solution():
    rng = np.random.default_rng(4)
    scores = random_chain(rng, 6, 3, 1.0)
    cold = sparsemap(ChainDecoder(), scores)
    again = sparsemap(ChainDecoder(), scores, init=cold)
    assert again.n_iter[0] == 1
    np.testing.assert_allclose(again.unary, cold.unary, atol=1e-10)
    moved = scores.replace(unary=scores.unary + 0.05 * rng.normal(size=scores.unary.shape))
    warm = sparsemap(ChainDecoder(), moved, init=cold)
    fresh = sparsemap(ChainDecoder(), moved)
    assert warm.objective[0] == pytest.approx(fresh.objective[0], rel=1e-10)
    np.testing.assert_allclose(warm.unary, fresh.unary, atol=1e-8)


def test_distribution_lists_the_support():
    scores = MulticlassScores(np.array([[1.0, 0.5, -2.0]]))
    outputs, weights = sparsemap(MulticlassDecoder(), scores).distribution(0)
    assert [int(o[0]) for o in outputs] == [0, 1]
    np.testing.assert_allclose(weights, [0.75, 0.25])


def test_bad_arguments():
    scores = MulticlassScores(np.zeros((1, 2)))
    with pytest.raises(ValueError, match="method"):
        sparsemap(MulticlassDecoder(), scores, method="newton")
    with pytest.raises(ValueError, match="max_iter"):
        sparsemap(MulticlassDecoder(), scores, max_iter=0)

    class NoParts(BruteForceDecoder):
        capabilities = frozenset({"map"})

    with pytest.raises(ValueError, match="parts"):
        sparsemap(NoParts(), scores)


def _arc_factored_reference(decoder, scores, i):
    """Indicator rows and scores of every structure of example ``i`` (by enumeration)."""
    brute = BruteForceDecoder(projective=getattr(decoder, "projective", False),
                              single_root=getattr(decoder, "single_root", False))
    (_, outputs, indicators), = [t for t in brute._arc_factored(scores) if t[0] == i]
    a, b = scores.unary_offsets[i], scores.unary_offsets[i + 1]
    return indicators, indicators @ scores.unary[a:b]


@pytest.mark.parametrize("projective", [False, True])
@pytest.mark.parametrize("single_root", [False, True])
@pytest.mark.parametrize("scale", [0.1, 1.0, 10.0])
def test_trees_against_the_enumerated_qp(projective, single_root, scale):
    rng = np.random.default_rng(int(10 * scale) + 2 * projective + single_root)
    lengths = np.array([1, 2, 3, 4])
    scores = TreeScores(scale * rng.normal(size=int((lengths ** 2).sum())),
                        np.concatenate(([0], np.cumsum(lengths))))
    decoder = TreeDecoder(projective=projective, single_root=single_root)
    result = sparsemap(decoder, scores, max_iter=500)
    assert result.converged.all()
    for i in range(scores.n_examples):
        vertices, theta = _arc_factored_reference(decoder, scores, i)
        expected = reference_objective(vertices, theta)
        assert result.objective[i] == pytest.approx(expected, rel=1e-8, abs=1e-10)


@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (3, 3), (2, 4), (4, 2), (3, 4)])
def test_matchings_against_the_enumerated_qp(shape):
    rng = np.random.default_rng(shape[0] * 10 + shape[1])
    shapes = np.array([shape, shape[::-1]])
    scores = MatchingScores(rng.normal(size=2 * shape[0] * shape[1]), shapes)
    result = sparsemap(MatchingDecoder(), scores, max_iter=500)
    assert result.converged.all()
    for i in range(2):
        vertices, theta = _arc_factored_reference(MatchingDecoder(), scores, i)
        expected = reference_objective(vertices, theta)
        assert result.objective[i] == pytest.approx(expected, rel=1e-8, abs=1e-10)


def test_tree_decoder_agrees_with_the_brute_force_decoder():
    rng = np.random.default_rng(9)
    lengths = np.array([1, 3, 4, 2])
    scores = TreeScores(rng.normal(size=int((lengths ** 2).sum())),
                        np.concatenate(([0], np.cumsum(lengths))))
    for projective in (False, True):
        fast = TreeDecoder(projective=projective)
        brute = BruteForceDecoder(projective=projective)
        np.testing.assert_allclose(fast.map(scores, return_score=True)[1],
                                   brute.map(scores, return_score=True)[1])
        np.testing.assert_allclose(fast.log_partition(scores), brute.log_partition(scores))
        np.testing.assert_allclose(fast.marginals(scores)[1].unary,
                                   brute.marginals(scores)[1].unary, atol=1e-10)


def test_minus_infinity_forbids_parts():
    scores = MatchingScores(np.array([1.0, -np.inf, 0.2, 0.3]), np.array([[2, 2]]))
    result = sparsemap(MatchingDecoder(), scores)
    np.testing.assert_allclose(result.unary, [1.0, 0.0, 0.0, 1.0])
    multiclass = sparsemap(MulticlassDecoder(), MulticlassScores(np.array([[1, 0.5, -np.inf]])))
    np.testing.assert_allclose(multiclass.unary, [[0.75, 0.25, 0.0]])
    with pytest.raises(ValueError, match="NaN"):
        sparsemap(MulticlassDecoder(), MulticlassScores(np.array([[1, np.nan]])))


def test_scale_of_the_part_vectors_does_not_matter():
    # A decoder whose part vectors are c times the one-hot vectors: u/c must not depend
    # on c (at scores scaled by c too).
    class Scaled(MulticlassDecoder):
        def __init__(self, c=1.0):
            self.c = c

        def parts(self, scores, y):
            parts = super().parts(scores, y)
            return type(parts)(parts.unary * self.c)

        def score_outputs(self, scores, y):
            return self.parts(scores, y).dot(scores)

    z = np.array([[1.0, 0.6, 0.0, 0.45]])
    expected = sparsemap(MulticlassDecoder(), MulticlassScores(z)).unary
    for c in (1e-5, 1e-3, 1e3):
        for tol in (1e-9, 0.0):
            result = sparsemap(Scaled(c), MulticlassScores(c * z), tol=tol)
            np.testing.assert_allclose(result.unary / c, expected, atol=1e-8)


def test_backward_pass_checks_its_input():
    scores = MulticlassScores(np.array([[1.0, 0.5, -2.0], [0.0, 0.1, 0.2]]))
    with pytest.raises(ValueError, match="shape"):
        sparsemap(MulticlassDecoder(), scores).vjp(np.ones(2))
    with pytest.raises(ValueError, match="active-set"):
        sparsemap(MulticlassDecoder(), scores, method="pairwise_fw").vjp(np.ones((2, 3)))
    with pytest.raises(ValueError, match="max_inner"):
        sparsemap(MulticlassDecoder(), scores, max_inner=0)
    with pytest.raises(ValueError, match="same examples"):
        sparsemap(MulticlassDecoder(), scores.take([0]), init=sparsemap(MulticlassDecoder(),
                                                                          scores))


def test_adding_a_constant_to_every_score_changes_nothing():
    rng = np.random.default_rng(12)
    z = rng.normal(size=(30, 6))
    base = sparsemap(MulticlassDecoder(), MulticlassScores(z))
    shifted = sparsemap(MulticlassDecoder(), MulticlassScores(z + 1e6))
    np.testing.assert_allclose(shifted.unary, base.unary, atol=1e-9)
