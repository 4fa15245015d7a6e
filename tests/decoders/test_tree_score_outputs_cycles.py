"""TreeDecoder.score_outputs accepts exactly the head arrays that check_outputs accepts as
trees: a cyclic head array has no tree score."""

import numpy as np
import pytest

from skstruct.decoders import TreeDecoder, TreeScores
from skstruct.decoders._tree.decoder import enumerate_trees


def _every_head_array(n):
    """All n^n encoded head arrays of one sentence of n tokens (cyclic ones included)."""
    grids = np.meshgrid(*[np.arange(n)] * n, indexing="ij")
    return np.stack([g.ravel() for g in grids], axis=1)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_score_outputs_rejects_every_cyclic_head_array_and_scores_every_tree(n):
    rng = np.random.default_rng(n)
    scores = TreeScores(rng.normal(size=n * n), [0, n])
    decoder = TreeDecoder()
    trees = {tuple(tree) for tree in enumerate_trees(n)}
    for heads in _every_head_array(n):
        if tuple(heads) in trees:
            arcs = scores.unary.reshape(n, n)[np.arange(n), heads]
            np.testing.assert_allclose(decoder.score_outputs(scores, heads), [arcs.sum()])
        else:
            with pytest.raises(ValueError, match="form a cycle"):
                decoder.score_outputs(scores, heads)


def test_score_outputs_and_check_outputs_give_the_same_error():
    # sentence 0 is a tree (token 1 on the root, token 0 under it); sentence 1 has the
    # cycle 0 -> 1 -> 0 beside a root word
    offsets = np.array([0, 2, 5])
    heads = np.array([1, 1, 1, 0, 2])
    scores = TreeScores(np.zeros(2 * 2 + 3 * 3), offsets)
    decoder = TreeDecoder()
    with pytest.raises(ValueError) as from_check:
        decoder.check_outputs(heads, offsets)
    with pytest.raises(ValueError) as from_score:
        decoder.score_outputs(scores, heads)
    assert str(from_score.value) == str(from_check.value)
    assert "sentence 1" in str(from_score.value) and "y holds 1 " in str(from_score.value)


def test_score_outputs_still_scores_a_batch_of_trees():
    offsets = np.array([0, 1, 3])
    unary = np.arange(1.0, 6.0)  # sentence 0: [1]; sentence 1: [[2, 3], [4, 5]]
    scores = TreeScores(unary, offsets)
    # sentence 1: token 0 on the root (2), token 1 under token 0 (4)
    np.testing.assert_allclose(TreeDecoder().score_outputs(scores, [0, 0, 0]), [1.0, 6.0])
