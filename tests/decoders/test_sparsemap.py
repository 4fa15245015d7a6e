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
from skstruct.decoders._core.checks import InfeasibleOutputError
from skstruct.decoders._sparsemap.sparsemap import (
    active_set_sparsemap,
    clip_sparsemap,
    sparsemap,
    sparsemax_sparsemap,
)
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


# --- closed forms against the active set ----------------------------------------------


def _support_table(result):
    """(n, K) weights of every example's support, in support order, zero-padded."""
    table = np.zeros((result.n_examples, int(result.support_size.max())))
    for i in range(result.n_examples):
        table[i, : result.support_size[i]] = result._support.weights[
            result._support.ptr[i] : result._support.ptr[i + 1]]
    return table


def _check_distributions(result, part_vector):
    """Every distribution sums to one, has positive weights and reproduces the marginals."""
    for i in range(result.n_examples):
        outputs, weights = result.distribution(i)
        assert len(outputs) == len(weights) == result.support_size[i]
        assert (weights > 0).all() and weights.sum() == pytest.approx(1.0, abs=1e-12)
        assert (np.diff(weights) <= 0).all()  # by decreasing weight
        mixture = sum(w * part_vector(o) for o, w in zip(outputs, weights, strict=True))
        np.testing.assert_allclose(mixture, result.unary[i], atol=1e-12)
    np.testing.assert_allclose(result.combine(_support_table(result)).unary, result.unary,
                               atol=1e-12)
    np.testing.assert_array_equal(result.marginals.unary, result.unary)


def _random_rows(rng, n, width, special):
    """Normal scores of several scales with -inf entries, ties and integer values."""
    z = rng.normal(size=(n, width)) * rng.choice([0.1, 1.0, 5.0], size=(n, 1))
    if special and width > 1:
        z[rng.random(z.shape) < 0.15] = -np.inf
        z[0] = 0.3  # all tied
        z[1, : (width + 1) // 2] = z[1, 0]  # a tie among the best
        z[2] = np.round(z[2])  # 0 and 1 exactly
        z[np.isinf(z).all(axis=1), 0] = 0.5  # every example keeps a feasible class
    return z


@pytest.mark.parametrize("width", [1, 2, 3, 7, 20])
def test_sparsemax_equals_the_active_set(width):
    rng = np.random.default_rng(width)
    for special in (False, True):
        scores = MulticlassScores(_random_rows(rng, 40, width, special))
        exact = sparsemax_sparsemap(MulticlassDecoder(), scores)
        generic = active_set_sparsemap(MulticlassDecoder(), scores)
        assert exact.method == "sparsemax" and generic.converged.all()
        assert exact.converged.all() and (exact.gap == 0).all()
        np.testing.assert_allclose(exact.unary, generic.unary, atol=1e-8)
        np.testing.assert_allclose(exact.objective, generic.objective, rtol=1e-8, atol=1e-8)
        np.testing.assert_array_equal(exact.support_size, (exact.unary > 0).sum(axis=1))
        np.testing.assert_array_equal(exact.support_size, generic.support_size)
        expected = np.array([sparsemax(np.where(np.isinf(row), -1e300, row))
                             for row in scores.unary])
        np.testing.assert_allclose(exact.unary, expected, atol=1e-12)
        _check_distributions(exact, lambda o: np.eye(width)[int(o[0])])
        upstream = rng.normal(size=scores.unary.shape)
        np.testing.assert_allclose(exact.vjp(upstream).unary,
                                   generic.vjp(upstream).unary, atol=1e-8)


def test_sparsemax_of_an_infeasible_example_is_the_decoders_error():
    scores = MulticlassScores(np.array([[0.0, 1.0], [-np.inf, -np.inf]]))
    with pytest.raises(InfeasibleOutputError):
        sparsemax_sparsemap(MulticlassDecoder(), scores)


def _objective(unary, u):
    finite = np.where(u > 0, unary, 0.0)
    return (finite * u - 0.5 * u * u).sum(axis=1)


@pytest.mark.parametrize("width", [1, 2, 3, 6, 9])
def test_clipping_equals_the_active_set(width):
    rng = np.random.default_rng(10 + width)
    for special in (False, True):
        unary = _random_rows(rng, 30, width, special)
        unary[3] = 0.0  # every label at 0: the empty labeling alone
        unary[4] = 1.0  # every label at 1: the full labeling alone
        scores = MultilabelScores(unary)
        exact = clip_sparsemap(MultilabelDecoder(), scores)
        generic = active_set_sparsemap(MultilabelDecoder(), scores, max_iter=500)
        assert exact.method == "clip" and generic.converged.all()
        np.testing.assert_allclose(exact.unary, generic.unary, atol=1e-8)
        np.testing.assert_array_equal(exact.unary, np.clip(unary, 0, 1))
        np.testing.assert_allclose(exact.objective, generic.objective, rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(exact.objective, _objective(unary, exact.unary),
                                   atol=1e-12)
        assert exact.support_size[3] == exact.support_size[4] == 1
        # the staircase: at most L + 1 nested labelings, one per distinct level of u
        for i in range(scores.n_examples):
            levels = np.unique(np.concatenate(([0.0, 1.0], exact.unary[i])))
            assert exact.support_size[i] == levels.size - 1 <= width + 1
            outputs, _ = exact.distribution(i)
            on = sorted(outputs, key=lambda o: o.sum())
            assert all(((a <= b).all() for a, b in zip(on, on[1:])))
        _check_distributions(exact, lambda o: o.astype(float))
        upstream = rng.normal(size=unary.shape)
        inside = (unary > 0) & (unary < 1)
        np.testing.assert_array_equal(exact.vjp(upstream).unary,
                                      np.where(inside, upstream, 0.0))
        if not special:  # distinct fractional values: the same Jacobian on any support
            np.testing.assert_allclose(exact.vjp(upstream).unary,
                                       generic.vjp(upstream).unary, atol=1e-8)


def test_clip_backward_matches_finite_differences():
    rng = np.random.default_rng(3)
    unary = rng.normal(0.5, 0.8, size=(20, 5))
    upstream = rng.normal(size=unary.shape)
    direction = rng.normal(size=unary.shape)
    gradient = clip_sparsemap(MultilabelDecoder(), MultilabelScores(unary)).vjp(upstream)
    eps = 1e-7

    def value(sign):
        moved = MultilabelScores(unary + sign * eps * direction)
        return np.sum(upstream * clip_sparsemap(MultilabelDecoder(), moved).unary)

    numeric = (value(1) - value(-1)) / (2 * eps)
    assert np.sum(gradient.unary * direction) == pytest.approx(numeric, rel=1e-6)


def test_the_decoders_solver_answers():
    multiclass = MulticlassScores(np.array([[1.0, 0.5, -2.0]]))
    multilabel = MultilabelScores(np.array([[1.5, 0.25, -2.0]]))
    assert sparsemap(MulticlassDecoder(), multiclass).method == "sparsemax"
    assert sparsemap(MultilabelDecoder(), multilabel).method == "clip"
    chain = random_chain(np.random.default_rng(0), 3, 2, 1.0)
    assert sparsemap(ChainDecoder(), chain).method == "active_set"

    class OwnSolver(MulticlassDecoder):
        def sparsemap(self, scores, **options):
            return ("own", options)

    assert sparsemap(OwnSolver(), multiclass, max_iter=7) == ("own", {"max_iter": 7})

    class NoOperation:
        """A user's decoder from before SparseMAP was an operation: the active set."""

        capabilities = frozenset({"map", "parts"})

        def __init__(self):
            self._inner = MulticlassDecoder()

        def map(self, scores):
            return self._inner.map(scores)

        def parts(self, scores, y):
            return self._inner.parts(scores, y)

        def score_outputs(self, scores, y):
            return self._inner.score_outputs(scores, y)

    result = sparsemap(NoOperation(), multiclass)
    assert result.method == "active_set"
    np.testing.assert_allclose(result.unary, [[0.75, 0.25, 0.0]])


@pytest.mark.parametrize("solve, decoder, scores", [
    (sparsemax_sparsemap, MulticlassDecoder(), MulticlassScores(np.array([[1.0, 0.6, 0.1]]))),
    (clip_sparsemap, MultilabelDecoder(), MultilabelScores(np.array([[0.3, 0.6, 1.2]]))),
])
def test_closed_forms_take_the_options_of_the_active_set(solve, decoder, scores):
    frank_wolfe = solve(decoder, scores, method="pairwise_fw", max_iter=3)
    assert frank_wolfe.method == "pairwise_fw" and frank_wolfe.n_iter[0] == 3
    for bad in ({"method": "newton"}, {"max_iter": 0}, {"tol": -1.0}, {"max_inner": 0}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            solve(decoder, scores, **bad)
    with pytest.raises(TypeError, match="init"):
        solve(decoder, scores, init="previous")
    with pytest.raises(ValueError, match="same examples"):
        solve(decoder, scores, init=solve(decoder, scores.take([0, 0])))
    with pytest.raises(ValueError, match="NaN"):
        solve(decoder, type(scores)(np.array([[np.nan, 1.0, 0.0]])))
    exact = solve(decoder, scores, init=solve(decoder, scores), max_iter=1)
    # the active set starts from a closed-form solution and stops at once
    warm = active_set_sparsemap(decoder, scores, init=exact)
    assert warm.n_iter[0] == 1
    np.testing.assert_allclose(warm.unary, exact.unary, atol=1e-12)
