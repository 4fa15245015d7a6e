"""SequenceVectorizer's table path gives exactly the matrices of the general path.

``SequenceVectorizer(backend="dict").transform`` looks every token's (key, value) pairs up
in a column table at C level (``skstruct.preprocessing._vectorizing``) and assembles the
per-sequence CSR blocks directly. These tests compare it, block by block and array by
array (values, column indices, row pointers, dtypes, shapes), with the general per-item
path (``SequenceVectorizer._lookup``) followed by scipy's constructor for every block, and
with scikit-learn's DictVectorizer.
"""

import pickle
import types
from collections import OrderedDict
from itertools import chain

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction import DictVectorizer

from skstruct.datasets import load_conll2000
from skstruct.preprocessing import SequenceVectorizer, _vectorizing, sentences_to_features


def general_path(vectorizer, X):
    """The blocks of the per-item path, each built by scipy's CSR constructor."""
    lengths = np.array([len(seq) for seq in X], dtype=np.int64)
    tokens = list(chain.from_iterable(X))
    matrix = vectorizer._lookup(tokens, len(tokens), vectorizer._index,
                                vectorizer.n_features_out_)
    matrix.eliminate_zeros()
    bounds = np.concatenate(([0], np.cumsum(lengths)))
    return [sp.csr_matrix(matrix[start:stop]) for start, stop in zip(bounds[:-1], bounds[1:])]


def dictvectorizer_blocks(vectorizer, X, dtype=np.float64):
    """DictVectorizer with the same vocabulary, its output split into sequences."""
    reference = DictVectorizer(dtype=dtype, sort=vectorizer.sort)
    reference.feature_names_ = vectorizer.feature_names_
    reference.vocabulary_ = vectorizer.vocabulary_
    tokens = list(chain.from_iterable(X))
    lengths = [len(seq) for seq in X]
    if not tokens:
        return [sp.csr_matrix((0, len(vectorizer.feature_names_)), dtype=dtype) for _ in X]
    matrix = reference.transform(tokens).tocsr()
    matrix.sum_duplicates()
    matrix.eliminate_zeros()
    bounds = np.concatenate(([0], np.cumsum(lengths)))
    return [matrix[start:stop] for start, stop in zip(bounds[:-1], bounds[1:])]


def assert_same_blocks(ours, expected, exact_index_dtypes=True):
    assert len(ours) == len(expected)
    for i, (a, b) in enumerate(zip(ours, expected)):
        assert type(a) is sp.csr_matrix, i
        assert a.shape == b.shape, i
        assert a.dtype == b.dtype, i
        a.check_format(full_check=True)
        assert a.has_sorted_indices, i
        if exact_index_dtypes:
            assert a.indices.dtype == b.indices.dtype and a.indptr.dtype == b.indptr.dtype, i
        b = b.copy()
        b.sum_duplicates()
        np.testing.assert_array_equal(a.indptr, b.indptr, err_msg=f"block {i}")
        np.testing.assert_array_equal(a.indices, b.indices, err_msg=f"block {i}")
        np.testing.assert_array_equal(a.data, b.data, err_msg=f"block {i}")


@pytest.fixture(scope="module")
def conll():
    train, test = load_conll2000("train"), load_conll2000("test")
    return (sentences_to_features(train.words[:400], train.pos[:400]),
            sentences_to_features(test.words[:300], test.pos[:300]))


@pytest.mark.parametrize("sort", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_conll_blocks_equal_general_path_and_dictvectorizer(conll, sort, dtype):
    X_train, X_test = conll
    vectorizer = SequenceVectorizer(sort=sort, dtype=dtype).fit(X_train)
    for X in (X_train, X_test):
        ours = vectorizer.transform(X)
        assert_same_blocks(ours, general_path(vectorizer, X))
        assert_same_blocks(ours, dictvectorizer_blocks(vectorizer, X, dtype),
                           exact_index_dtypes=False)
    assert_same_blocks(SequenceVectorizer(sort=sort, dtype=dtype).fit_transform(X_train),
                       general_path(vectorizer, X_train))


def test_conll_test_set_has_unseen_features_and_misses(conll):
    """The CoNLL comparison above exercises the missed items (unseen strings)."""
    X_train, X_test = conll
    vectorizer = SequenceVectorizer().fit(X_train)
    table, by_key = vectorizer._index
    tokens = list(chain.from_iterable(X_test))
    counts = np.array([len(token) for token in tokens], dtype=np.int64)
    codes, values = _vectorizing._codes(tokens, counts, table)
    assert len(codes) == len(values) == sum(map(len, tokens))
    assert (codes == _vectorizing.MISS).sum() > 100
    assert (codes == _vectorizing.DROP).sum() > 100  # booleans False
    assert (codes >= 0).sum() > 1000


def test_items_not_matching_the_counts_are_an_error():
    """The lookups are counted: a token dict that changed size between the passes (another
    thread writing to it) is an error, not a silently shifted matrix."""
    table = _vectorizing.column_table({"w": {"a": 0}}, {})
    tokens = [{"w": "a"}, {"w": "a"}]
    counts = np.array([1, 1], dtype=np.int64)
    with pytest.raises(RuntimeError, match="changed while"):
        _vectorizing._codes(tokens, counts - np.array([0, 1]), table)
    with pytest.raises(RuntimeError, match="changed while"):
        _vectorizing._codes(tokens, counts + np.array([0, 1]), table)


TRAIN = [
    [{"w": "the", "n": 2.5, "b": True, "bias": 1.0, 3: "int key", "i": 1}],
    [{"w": "cat", "b": False, "n": -1, "k=v": 1.0, "k": "v", "mixed": "s"},
     {"w": "sat", "mixed": 2.0, (1, 2): 4}],
]

EDGE_CASES = {
    "empty sentences": [[], [{"w": "the"}], [], []],
    "one token": [[{"w": "cat", "b": True}]],
    "empty token dict": [[{}, {"w": "the"}, {}]],
    "zeros and ones of every numeric type": [
        [{"n": 0, "b": 1, "i": 1.0, "bias": True},
         {"n": 0.0, "b": -0.0, "i": False, "bias": 1}]],
    "other numbers": [[{"n": 3, "b": 0.25, "i": -7.5, "bias": 2**40}]],
    "unseen keys and values": [[{"w": "dog", "new": "x", "newnum": 3.0, "newbool": True}]],
    "booleans on a string-only key": [[{"w": True, "k": False}]],
    "strings on a numeric-only key": [[{"n": "2.5", "b": "True"}]],
    "key both string and numeric in fit": [[{"mixed": "s"}, {"mixed": 2.0}, {"mixed": 1},
                                            {"mixed": "t"}, {"mixed": True}]],
    "one-hot name equal to a numeric key": [[{"k": "v", "k=v": 2.0}, {"k": "v", "k=v": 1}]],
    "non-string keys": [[{3: "int key", (1, 2): 4.0}, {3: "other", (1, 2): 1}]],
    "all tokens unseen": [[{"zzz": "q"}], [{"yyy": 5.0}]],
}


@pytest.mark.parametrize("case", EDGE_CASES)
def test_edge_cases_equal_general_path(case):
    X = EDGE_CASES[case]
    vectorizer = SequenceVectorizer(sort=False).fit(TRAIN)
    ours = vectorizer.transform(X)
    if sum(map(len, X)):
        assert_same_blocks(ours, general_path(vectorizer, X))
    assert [block.shape for block in ours] == [(len(seq), vectorizer.n_features_out_)
                                              for seq in X]


def test_edge_case_values():
    vectorizer = SequenceVectorizer(sort=False).fit(TRAIN)  # names mix str, int and tuple
    column = vectorizer.vocabulary_.__getitem__
    (zeros_and_ones,) = vectorizer.transform(EDGE_CASES["zeros and ones of every numeric type"])
    dense = zeros_and_ones.toarray()
    assert dense[0, column("b")] == dense[0, column("i")] == dense[0, column("bias")] == 1.0
    assert dense[0, column("n")] == 0 and dense[1].sum() == 1.0  # bias 1
    assert zeros_and_ones.nnz == 4
    (others,) = vectorizer.transform(EDGE_CASES["other numbers"])
    np.testing.assert_array_equal(
        others.toarray()[0, [column("n"), column("b"), column("i"), column("bias")]],
        [3.0, 0.25, -7.5, 2.0**40])
    (summed,) = vectorizer.transform(EDGE_CASES["one-hot name equal to a numeric key"])
    np.testing.assert_array_equal(summed.toarray()[:, column("k=v")], [3.0, 2.0])
    (unseen,) = vectorizer.transform(EDGE_CASES["unseen keys and values"])
    assert unseen.nnz == 0


def test_empty_sequences_between_non_empty_ones_keep_their_place():
    vectorizer = SequenceVectorizer(sort=False).fit(TRAIN)
    X = [[], [{"w": "the"}], [], [{"w": "cat"}, {"w": "sat"}], []]
    blocks = vectorizer.transform(X)
    assert [b.shape[0] for b in blocks] == [0, 1, 0, 2, 0]
    assert blocks[1].toarray()[0, vectorizer.vocabulary_["w=the"]] == 1
    cat, sat = vectorizer.vocabulary_["w=cat"], vectorizer.vocabulary_["w=sat"]
    np.testing.assert_array_equal(blocks[3].indices, [cat, sat])


@pytest.mark.parametrize("value", [np.float64(2.5), np.int64(3), np.float32(0.5)])
def test_numpy_numbers_take_the_general_path_with_the_same_result(value):
    vectorizer = SequenceVectorizer(sort=False).fit(TRAIN)
    X = [[{"n": value, "w": "the"}]]
    (ours,) = vectorizer.transform(X)
    assert_same_blocks([ours], general_path(vectorizer, X))
    assert ours.toarray()[0, vectorizer.vocabulary_["n"]] == float(value)


@pytest.mark.parametrize("value", [np.True_, complex(1, 0)])
def test_values_equal_to_one_but_not_numbers_are_still_rejected(value):
    """np.bool_ and complex values equal 1 (hence True): the table must not accept them."""
    vectorizer = SequenceVectorizer(sort=False).fit(TRAIN)
    with pytest.raises(TypeError, match="feature 'b' of sequence 0 token 0"):
        vectorizer.transform([[{"b": value}]])


def test_str_subclass_values_keep_the_general_path_behaviour():
    class Word(str):
        pass

    vectorizer = SequenceVectorizer(sort=False).fit(TRAIN + [[{"w": Word("the")}]])
    X = [[{"w": Word("the")}, {"w": "the"}]]
    assert_same_blocks(vectorizer.transform(X), general_path(vectorizer, X))


@pytest.mark.parametrize("wrap", [OrderedDict, types.MappingProxyType])
def test_other_mappings_give_the_same_blocks(wrap):
    vectorizer = SequenceVectorizer(sort=False).fit(TRAIN)
    X = [[{"w": "the", "n": 2.0}, {"w": "cat", "b": True}]]
    wrapped = [[wrap(token) for token in seq] for seq in X]
    assert_same_blocks(vectorizer.transform(wrapped), vectorizer.transform(X))


def test_nan_still_names_the_token():
    vectorizer = SequenceVectorizer(sort=False).fit(TRAIN)
    with pytest.raises(ValueError, match="feature 'n' of sequence 1 token 0 has value nan"):
        vectorizer.transform([[{"w": "the"}], [{"n": float("nan")}]])


def test_table_without_numeric_entries_gives_the_same_blocks(conll):
    """A table of string values only (numbers all missed) still gives the same blocks."""
    X_train, X_test = conll
    vectorizer = SequenceVectorizer().fit(X_train)
    expected = vectorizer.transform(X_test)
    table, by_key = vectorizer._index
    strings_only = {key: {v: c for v, c in inner.items() if type(v) is str}
                    for key, inner in table.items()}
    assert sum(map(len, strings_only.values())) < sum(map(len, table.values()))
    vectorizer._index = (strings_only, by_key)
    assert_same_blocks(vectorizer.transform(X_test), expected)


def test_split_rows_falls_back_to_the_constructor(conll, monkeypatch):
    X_train, X_test = conll
    vectorizer = SequenceVectorizer().fit(X_train)
    expected = vectorizer.transform(X_test)
    calls = []
    constructor = _vectorizing._csr_by_constructor

    def counting(*args):
        calls.append(1)
        return constructor(*args)

    monkeypatch.setattr(_vectorizing, "_csr_by_constructor", counting)
    monkeypatch.setattr(_vectorizing, "_CSR_ATTRIBUTES", frozenset({"not", "scipy's"}))
    assert_same_blocks(vectorizer.transform(X_test), expected)
    assert len(calls) == len(X_test)


def test_assembled_blocks_behave_as_csr_matrices(conll):
    X_train, X_test = conll
    vectorizer = SequenceVectorizer().fit(X_train)
    blocks = vectorizer.transform(X_test[:20])
    for block in blocks:
        assert sp.issparse(block) and block.format == "csr"
        assert (pickle.loads(pickle.dumps(block)) != block).nnz == 0
        assert (block.copy() != block).nnz == 0
        assert block.T.shape == block.shape[::-1]
    stacked = sp.vstack(blocks).tocsr()
    assert stacked.shape == (sum(map(len, X_test[:20])), vectorizer.n_features_out_)
    assert (stacked.sum(axis=1) > 0).all()


def test_fit_keeps_working_with_the_table(conll):
    X_train, _ = conll
    vectorizer = SequenceVectorizer().fit(X_train)
    table, by_key = vectorizer._index
    for key, column in by_key.items():
        assert table[key][True] == column and table[key][False] == _vectorizing.DROP
    assert pickle.loads(pickle.dumps(vectorizer))._index == vectorizer._index


def test_values_in_a_later_chunk_are_checked_and_resolved(conll):
    """Type check and missed numbers work in every chunk, not only the first."""
    X_train, X_test = conll
    vectorizer = SequenceVectorizer().fit(X_train + [[{"n": 1.0}]])
    late = [[{"n": 2.5, "w": "unseen-word"}, {"n": 0.0}]]
    blocks = vectorizer.transform(X_test + late)
    assert_same_blocks(blocks, general_path(vectorizer, X_test + late))
    assert blocks[-1].toarray()[0, vectorizer.vocabulary_["n"]] == 2.5
    with pytest.raises(TypeError, match=f"feature 'n' of sequence {len(X_test)} token 1"):
        vectorizer.transform(X_test + [[{"n": 2.5}, {"n": np.True_}]])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_long_rows_sorted_and_summed_like_the_general_path(dtype):
    """Rows with more items than the insertion sort handles are merge-sorted; numbers,
    zeros, unseen features and a one-hot name equal to a numeric key in every row."""
    rng = np.random.default_rng(0)
    keys = [f"f{i}" for i in range(120)]

    def token(n):
        chosen = rng.choice(keys, size=n, replace=False)
        values = [str(rng.integers(0, 3)) if i % 3 else float(rng.integers(-1, 3))
                  for i in range(n)]
        return {**dict(zip(chosen.tolist(), values)), "k": "v", "k=v": 2.5}

    X_train = [[token(120) for _ in range(4)]]
    X = [[token(n) for n in (1, 47, 48, 49, 110, 120)], [token(60)]]
    vectorizer = SequenceVectorizer(dtype=dtype).fit(X_train)
    blocks = vectorizer.transform(X)
    assert max(np.diff(blocks[0].indptr)) > _vectorizing._INSERTION_SORT_ITEMS
    assert_same_blocks(blocks, general_path(vectorizer, X))
    column = vectorizer.vocabulary_["k=v"]
    np.testing.assert_array_equal(blocks[1].toarray()[:, column], [3.5])
