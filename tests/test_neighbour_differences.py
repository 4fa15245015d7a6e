"""The decoders' compiled part differences of the Hamming-1 neighbours
(``neighbour_differences``) give the same difference matrices as listing the neighbours."""

import numpy as np
import pytest

from skstruct.decoders import ChainDecoder, ChainScores, MultilabelDecoder, MultilabelScores
from skstruct.losses._neighbourhood import NeighbourhoodDifferences


class _Listing:
    """A decoder without its ``neighbour_differences``: the listing path."""

    def __init__(self, decoder):
        self._decoder = decoder

    def __getattr__(self, name):
        if name == "neighbour_differences":
            raise AttributeError(name)
        return getattr(self._decoder, name)


def _assert_same(a, b):
    for mine, listed in ((a.matrix, b.matrix), (a.transposed, b.transposed)):
        assert mine.shape == listed.shape
        for name in ("indptr", "indices", "data"):
            np.testing.assert_array_equal(getattr(mine, name), getattr(listed, name))
    np.testing.assert_array_equal(a.row_offsets, b.row_offsets)
    np.testing.assert_array_equal(a.group_offsets, b.group_offsets)


def _random_chains(rng, forbid, gold_valid):
    n_states = rng.randint(1, 5)
    lengths = rng.randint(1, 6, size=rng.randint(1, 6))
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    n = offsets[-1]
    unary, trans = rng.randn(n, n_states), rng.randn(n_states, n_states)
    start, end = rng.randn(n_states), rng.randn(n_states)
    y = rng.randint(0, n_states, n)
    if forbid:
        for array in (unary, trans, start, end):
            array[rng.rand(*array.shape) < 0.2] = -np.inf
        if gold_valid:
            unary[np.arange(n), y] = 0.0
            trans[y[:-1], y[1:]] = 0.0
            start[y[offsets[:-1]]] = 0.0
            end[y[offsets[1:] - 1]] = 0.0
    return ChainScores(unary, offsets, transition=trans, start=start, end=end), y, offsets


@pytest.mark.parametrize("forbid, gold_valid", [(False, True), (True, True), (True, False)])
def test_chain_neighbour_differences_match_the_listing(forbid, gold_valid):
    rng = np.random.RandomState(0)
    for _ in range(25):
        scores, y, offsets = _random_chains(rng, forbid, gold_valid)
        compiled = NeighbourhoodDifferences.build(ChainDecoder(), scores, y, offsets, 1)
        listed = NeighbourhoodDifferences.build(_Listing(ChainDecoder()), scores, y,
                                                offsets, 1)
        _assert_same(compiled, listed)


def test_chain_neighbour_differences_merge_a_transition_entered_and_left():
    # relabeling the middle token of (1, 0, 1) to 1 turns the transitions (1, 0), (0, 1)
    # into (1, 1) twice: one entry of +2, none for the two removed ones' sum
    scores = ChainScores(np.zeros((3, 2)), [0, 3], transition=np.zeros((2, 2)),
                         start=np.zeros(2), end=np.zeros(2))
    counts, positions, entries = ChainDecoder().neighbour_differences(
        scores, np.array([1, 0, 1]))
    rows, flat, values = entries["transition"]
    middle = np.flatnonzero(positions == 1)[0]
    mine = rows == middle
    assert sorted(zip(flat[mine].tolist(), values[mine].tolist())) == [
        (1, -1.0), (2, -1.0), (3, 2.0)]


def test_multilabel_neighbour_differences_match_the_listing():
    rng = np.random.RandomState(1)
    for _ in range(20):
        m, n_labels = rng.randint(1, 6), rng.randint(1, 7)
        unary = rng.randn(m, n_labels)
        unary[rng.rand(m, n_labels) < 0.3] = -np.inf
        y = (rng.rand(m, n_labels) < 0.5).astype(int)
        y[unary == -np.inf] = 0
        scores, offsets = MultilabelScores(unary), np.arange(m + 1)
        _assert_same(
            NeighbourhoodDifferences.build(MultilabelDecoder(), scores, y, offsets, 1),
            NeighbourhoodDifferences.build(_Listing(MultilabelDecoder()), scores, y,
                                           offsets, 1))


def test_neighbour_differences_not_offered_past_k_1():
    scores = ChainScores(np.zeros((3, 2)), [0, 3], transition=np.zeros((2, 2)),
                         start=np.zeros(2), end=np.zeros(2))
    assert ChainDecoder().neighbour_differences(scores, np.array([1, 0, 1]), k=2) is None
    assert MultilabelDecoder().neighbour_differences(
        MultilabelScores(np.zeros((1, 3))), np.array([[1, 0, 0]]), k=2) is None


def test_neighbour_differences_check_the_memory_first():
    scores = ChainScores(np.zeros((3, 2)), [0, 3], transition=np.zeros((2, 2)),
                         start=np.zeros(2), end=np.zeros(2))
    with pytest.raises(MemoryError, match="more than the limit"):
        ChainDecoder().neighbour_differences(scores, np.array([1, 0, 1]), max_entries=3)
    with pytest.raises(MemoryError, match="max_memory"):
        NeighbourhoodDifferences.build(ChainDecoder(), scores, np.array([1, 0, 1]),
                                       np.array([0, 3]), 1, max_bytes=100)
