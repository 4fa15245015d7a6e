"""Estimators take SequenceVectorizer's blocks without stacking them again, but only while
the list and its blocks are exactly as ``transform`` made them.

``SequenceVectorizer.transform`` returns a :class:`~skstruct.utils._sequences.SequenceBlocks`
(a list of CSR blocks that are row slices of one stacked matrix); ``check_sequences`` then
uses the stacked matrix. Every test compares the batch with the one the general path
stacks from a plain list of the same blocks, and checks which path was taken.
"""

import copy
import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from skstruct import CRF
from skstruct.preprocessing import SequenceVectorizer
from skstruct.utils import _sequences
from skstruct.utils._sequences import SequenceBlocks, check_sequences

WORDS = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran"]


def sentences(n, seed):
    rng = np.random.default_rng(seed)
    return [[{"w": str(rng.choice(WORDS)), "n": float(rng.integers(0, 3)),
              "t": bool(rng.integers(0, 2)), "bias": 1.0}
             for _ in range(int(rng.integers(1, 6)))] for _ in range(n)]


@pytest.fixture
def blocks():
    vectorizer = SequenceVectorizer().fit(sentences(30, 0))
    return vectorizer.transform(sentences(12, 1))


@pytest.fixture
def stack_calls(monkeypatch):
    """Number of times the general path stacked blocks."""
    calls = []
    stack = _sequences._stack_sparse

    def counting(*args):
        calls.append(1)
        return stack(*args)

    monkeypatch.setattr(_sequences, "_stack_sparse", counting)
    return calls


def assert_same_batch(ours, expected):
    assert ours.X.shape == expected.X.shape
    for name in ("data", "indices", "indptr"):
        a, b = getattr(ours.X, name), getattr(expected.X, name)
        assert a.dtype == b.dtype, name
        np.testing.assert_array_equal(a, b, err_msg=name)
    np.testing.assert_array_equal(ours.offsets, expected.offsets)
    assert ours.offsets.dtype == expected.offsets.dtype


def general(X, **kwargs):
    return check_sequences(list(X), **kwargs)[0]


def test_untouched_blocks_are_not_stacked_again(blocks, stack_calls):
    assert type(blocks) is SequenceBlocks
    expected = general(blocks)
    assert len(stack_calls) == 1
    batch, y = check_sequences(blocks, [np.zeros(b.shape[0]) for b in blocks])
    assert len(stack_calls) == 1  # the stacked matrix was reused
    assert_same_batch(batch, expected)
    assert y.shape == (batch.n_tokens,)


def test_in_place_values_are_seen_and_validated(blocks, stack_calls):
    blocks[2].data *= 3.0  # a view of the stacked matrix: still the fast path
    batch = check_sequences(blocks)[0]
    assert not stack_calls
    assert_same_batch(batch, general(blocks))
    blocks[3].data[0] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        check_sequences(blocks)
    assert len(stack_calls) == 1  # general(blocks) above


def test_in_place_column_indices_out_of_range_are_rejected(blocks, stack_calls):
    blocks[1].indices[0] = blocks[1].shape[1]
    with pytest.raises(ValueError, match="column indices outside"):
        check_sequences(blocks)
    assert not stack_calls
    with pytest.raises(ValueError, match="column indices outside"):  # general path too
        check_sequences(list(blocks))


def replace_block(X):
    X[1] = sp.csr_matrix(np.ones((2, X[1].shape[1])))


def reassign_data(X):
    X[0].data = X[0].data * 2.0


EDITS = {
    "block replaced": replace_block,
    "block appended": lambda X: X.append(X[0]),
    "block removed": lambda X: X.pop(),
    "reversed": lambda X: X.reverse(),
    "data reassigned": reassign_data,
    "shape changed": lambda X: X[3].resize((X[3].shape[0], X[3].shape[1] + 1)),
}


@pytest.mark.parametrize("edit", EDITS)
def test_edited_lists_take_the_general_path(blocks, stack_calls, edit):
    edited = blocks
    EDITS[edit](edited)
    if edit == "shape changed":
        with pytest.raises(ValueError, match="Sequence 3 of X has"):
            check_sequences(edited)
        return
    batch = check_sequences(edited)[0]
    assert len(stack_calls) == 1
    assert_same_batch(batch, general(edited))


def test_row_pointers_changed_in_place_take_the_general_path(blocks, stack_calls):
    block = next(b for b in blocks if b.shape[0] > 1 and b.nnz)
    block.indptr[1] = 0  # first row now empty, its entries moved to the second
    batch = check_sequences(blocks)[0]
    assert len(stack_calls) == 1
    assert_same_batch(batch, general(blocks))


@pytest.mark.parametrize("derive", [
    lambda X: X[2:], lambda X: X[:], list, copy.copy, copy.deepcopy,
    lambda X: pickle.loads(pickle.dumps(X)), lambda X: X + [],
])
def test_slices_copies_and_pickles_are_plain_lists(blocks, stack_calls, derive):
    derived = derive(blocks)
    assert type(derived) is list
    check_sequences(derived)
    assert len(stack_calls) == 1


def test_errors_of_the_general_path_are_kept(stack_calls):
    vectorizer = SequenceVectorizer().fit(sentences(30, 0))
    with_empty = vectorizer.transform([[{"w": "the"}], [], [{"w": "cat"}]])
    assert type(with_empty) is SequenceBlocks
    with pytest.raises(ValueError, match="Sequence 1 of X is empty"):
        check_sequences(with_empty)
    good = vectorizer.transform(sentences(3, 2))
    with pytest.raises(ValueError, match="expecting 3 features"):
        check_sequences(good, n_features=3)
    with pytest.raises(ValueError, match="X has 3 sequences but y has 2"):
        check_sequences(good, [np.zeros(len(s)) for s in sentences(2, 2)])


def test_crf_predicts_the_same_from_blocks_and_from_a_list():
    X, test = sentences(40, 3), sentences(15, 4)
    y = [np.array(["A" if t["w"] in WORDS[:4] else "B" for t in seq]) for seq in X]
    vectorizer = SequenceVectorizer().fit(X)
    crf = CRF(alpha=1e-2, max_iter=20).fit(vectorizer.transform(X), y)
    blocks = vectorizer.transform(test)
    for ours, expected in zip(crf.predict(blocks), crf.predict(list(blocks))):
        np.testing.assert_array_equal(ours, expected)
