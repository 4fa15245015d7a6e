"""The compiled walk over the token dicts gives the codes of the C-level passes.

``skstruct.preprocessing._dict_walk.dict_codes`` reads every token dict with CPython's
``PyDict_Next`` and looks items up with ``PyDict_GetItem`` from a numba kernel. These
tests compare its codes item by item with those of ``_vectorizing._codes`` (the C-level
passes it replaces), check that ``SequenceVectorizer.transform`` takes it by default on
the tutorial features, and that any other token, key or value type sends the call back
to the C-level passes with the same matrices.
"""

from itertools import chain

import numpy as np
import pytest

from skstruct.datasets import load_conll2000
from skstruct.preprocessing import SequenceVectorizer, _dict_walk, _vectorizing, \
    sentences_to_features

pytestmark = pytest.mark.skipif(not _dict_walk.available(),
                                reason="the compiled walk needs CPython's object layout")


@pytest.fixture(scope="module")
def conll():
    train, test = load_conll2000("train"), load_conll2000("test")
    return (sentences_to_features(train.words[:400], train.pos[:400]),
            sentences_to_features(test.words[:300], test.pos[:300]))


def walk_and_passes(vectorizer, X):
    table, _ = vectorizer._index
    tokens = list(chain.from_iterable(X))
    counts = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
    walked = _dict_walk.dict_codes(tokens, int(counts.sum()), table, _vectorizing.MISS)
    passes, values = _vectorizing._codes(tokens, counts, table)
    return walked, passes, values


def test_walk_codes_equal_the_c_level_passes_on_conll(conll):
    X_train, X_test = conll
    vectorizer = SequenceVectorizer().fit(X_train)
    for X in (X_train, X_test):
        walked, passes, _ = walk_and_passes(vectorizer, X)
        assert walked is not None
        np.testing.assert_array_equal(walked, passes)
    assert (passes == _vectorizing.MISS).sum() > 100  # unseen strings in the test set
    assert (passes >= 0).sum() > 1000 and (passes == _vectorizing.DROP).sum() > 100


def test_walk_marks_the_missed_numbers_only():
    """A number of a fitted key that the table misses is NUMBER (resolved from its
    token); a string, or any value of an unseen key, is MISS (dropped)."""
    vectorizer = SequenceVectorizer(sort=False).fit(
        [[{"n": 2.5, "b": True, "w": "the", "k": "v"}]])
    X = [[{"n": 3, "b": 0.25, "w": "dog", "k": 1.0, "new": 7.0, "z": "q", "b2": False}]]
    walked, passes, values = walk_and_passes(vectorizer, X)
    table, _ = vectorizer._index
    keys = list(chain.from_iterable(chain.from_iterable(X)))
    resolved = np.array([not isinstance(v, str) and k in table for k, v in zip(keys, values)])
    expected = np.where((passes == _vectorizing.MISS) & resolved, _dict_walk.NUMBER, passes)
    np.testing.assert_array_equal(walked, expected)
    assert (walked == _dict_walk.NUMBER).sum() == 3 and (walked == _vectorizing.MISS).sum() == 4
    (row,) = vectorizer.transform(X)
    column = vectorizer.vocabulary_.__getitem__
    assert row[0, column("n")] == 3 and row[0, column("b")] == 0.25 and row.nnz == 2


def test_transform_takes_the_walk_by_default(conll, monkeypatch):
    X_train, X_test = conll
    vectorizer = SequenceVectorizer().fit(X_train)
    expected = vectorizer.transform(X_test)

    def refused(*args, **kwargs):
        raise AssertionError("the C-level passes ran")

    monkeypatch.setattr(_vectorizing, "_codes", refused)
    for a, b in zip(vectorizer.transform(X_test), expected):
        np.testing.assert_array_equal(a.toarray(), b.toarray())


@pytest.mark.parametrize("token", [
    {"w": "the", 3: "int key"},  # a key that is not a str
    {"w": "the", "n": np.float64(2.0)},  # a numpy number
    {"w": "the", "m": ["a", "b"]},  # a multi-valued feature
    {"w": "the", "m": ("a", "b")},
])
def test_other_types_stop_the_walk_and_keep_the_same_result(token, monkeypatch):
    vectorizer = SequenceVectorizer(sort=False).fit([[{"w": "the", "n": 1.0, "m": "a"}]])
    X = [[{"w": "the"}, token]]
    table, _ = vectorizer._index
    tokens = list(chain.from_iterable(X))
    assert _dict_walk.dict_codes(tokens, sum(map(len, tokens)), table, -2) is None
    ours = vectorizer.transform(X)
    monkeypatch.setattr(_dict_walk, "_SETUP", None)  # the C-level passes
    for a, b in zip(ours, vectorizer.transform(X)):
        np.testing.assert_array_equal(a.toarray(), b.toarray())


def test_walk_counts_the_items():
    table = _vectorizing.column_table({"w": {"a": 0}}, {})
    tokens = [{"w": "a"}, {"w": "a"}]
    for n_items in (1, 3):
        with pytest.raises(RuntimeError, match="changed while"):
            _dict_walk.dict_codes(tokens, n_items, table, -2)


def test_a_column_that_is_not_an_int_stops_the_walk():
    """PyLong_AsSsize_t would fail on it: the walk must not read it."""
    table = _vectorizing.column_table({"w": {"a": np.int64(0)}}, {})
    assert _dict_walk.dict_codes([{"w": "a"}], 1, table, -2) is None
    table = _vectorizing.column_table({"w": {"a": 0}}, {})
    np.testing.assert_array_equal(_dict_walk.dict_codes([{"w": "a"}], 1, table, -2), [0])
