"""The compiled SparseMAP of non-projective trees against the generic active set."""

import numpy as np
import pytest

from skstruct.decoders import TreeDecoder, TreeScores
from skstruct.decoders._sparsemap.sparsemap import active_set_sparsemap
from skstruct.decoders._tree.sparsemap import TreeSupport


def _random_scores(seed, n_sentences=40, longest=12, scale=2.0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, longest + 1, size=n_sentences)
    unary = scale * rng.normal(size=int((lengths ** 2).sum()))
    return TreeScores(unary, np.concatenate(([0], np.cumsum(lengths))))


def _assert_same_solution(fast, generic, rtol=1e-9):
    assert fast.n_examples == generic.n_examples
    np.testing.assert_allclose(fast.unary, generic.unary, rtol=rtol, atol=1e-11)
    np.testing.assert_allclose(fast.objective, generic.objective, rtol=rtol, atol=1e-11)
    np.testing.assert_array_equal(fast.converged, generic.converged)
    np.testing.assert_allclose(fast.marginals.unary, generic.marginals.unary, rtol=rtol,
                               atol=1e-11)


@pytest.mark.parametrize("single_root", [False, True])
def test_compiled_tree_solver_equals_the_generic_active_set(single_root):
    scores = _random_scores(1 + single_root)
    decoder = TreeDecoder(single_root=single_root)
    # a few iterations follow the generic method step by step (same MAP calls) ...
    fast = decoder.sparsemap(scores, max_iter=3)
    generic = active_set_sparsemap(decoder, scores, max_iter=3)
    assert isinstance(fast._support, TreeSupport)
    _assert_same_solution(fast, generic)
    np.testing.assert_array_equal(fast.n_iter, generic.n_iter)
    np.testing.assert_array_equal(fast.support_size, generic.support_size)
    # ... and to convergence both reach the unique optimum
    fast = decoder.sparsemap(scores, max_iter=500, tol=0.0)
    generic = active_set_sparsemap(decoder, scores, max_iter=500, tol=0.0)
    assert fast.converged.all() and generic.converged.all()
    _assert_same_solution(fast, generic, rtol=1e-7)


def test_compiled_tree_solver_warm_starts_from_either_solver():
    scores = _random_scores(3)
    moved = scores.replace(unary=scores.unary + 0.3 * np.random.default_rng(4).normal(
        size=scores.unary.shape))
    decoder = TreeDecoder()
    fast = decoder.sparsemap(scores, max_iter=2)
    generic = active_set_sparsemap(decoder, scores, max_iter=2)
    expected = active_set_sparsemap(decoder, moved, max_iter=2, init=generic)
    for init in (fast, generic):
        resumed = decoder.sparsemap(moved, max_iter=2, init=init)
        _assert_same_solution(resumed, expected)
        np.testing.assert_array_equal(resumed.n_iter, expected.n_iter)
    # a converged solution is its own warm start: one MAP call confirms it
    done = decoder.sparsemap(scores, max_iter=500, tol=0.0)
    again = decoder.sparsemap(scores, max_iter=500, tol=0.0, init=done)
    assert (again.n_iter == 1).all()
    np.testing.assert_allclose(again.unary, done.unary, atol=1e-12)


def test_compiled_tree_solver_support_and_backward_pass():
    scores = _random_scores(5, n_sentences=12, longest=6)
    decoder = TreeDecoder()
    fast = decoder.sparsemap(scores, max_iter=500, tol=0.0)
    generic = active_set_sparsemap(decoder, scores, max_iter=500, tol=0.0)
    upstream = np.random.default_rng(6).normal(size=scores.unary.shape)
    np.testing.assert_allclose(fast.vjp(upstream).unary, generic.vjp(upstream).unary,
                               rtol=1e-7, atol=1e-9)
    for i in range(scores.n_examples):
        trees, weights = fast.distribution(i)
        assert len(trees) == weights.shape[0] == fast.support_size[i]
        n = scores.lengths[i]
        rebuilt = np.zeros((n, n))
        for weight, tree in zip(weights, trees):
            assert tree.shape == (n,)
            rebuilt[np.arange(n), tree] += weight
        np.testing.assert_allclose(rebuilt, fast.marginals.block(i), atol=1e-12)


def test_other_tree_solvers_are_the_generic_ones():
    scores = _random_scores(7, n_sentences=6, longest=5)
    for decoder, options in ((TreeDecoder(projective=True), {}),
                             (TreeDecoder(), {"method": "pairwise_fw"})):
        result = decoder.sparsemap(scores, max_iter=4, **options)
        expected = active_set_sparsemap(decoder, scores, max_iter=4, **options)
        assert not isinstance(result._support, TreeSupport)
        np.testing.assert_array_equal(result.unary, expected.unary)

    class OwnMap(TreeDecoder):
        def map(self, scores, *, return_score=False):
            return super().map(scores, return_score=return_score)

    assert not isinstance(OwnMap().sparsemap(scores, max_iter=2)._support, TreeSupport)
    with pytest.raises(TypeError, match="unexpected"):
        TreeDecoder().sparsemap(scores, step_size=1.0)
