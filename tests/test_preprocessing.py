import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import NotFittedError
from sklearn.svm import LinearSVC
from sklearn.pipeline import make_pipeline
from sklearn.utils import get_tags
from sklearn.utils._param_validation import InvalidParameterError

from skstruct.datasets import load_conll2000
from skstruct.preprocessing import SequenceVectorizer, sentences_to_features, word_features


@pytest.fixture(scope="module")
def conll():
    data = load_conll2000("train")
    return sentences_to_features(data.words[:300], data.pos[:300]), data.target[:300]


def same_matrices(A, B):
    return len(A) == len(B) and all(a.shape == b.shape and (a != b).nnz == 0 for a, b in zip(A, B))


TOKENS = [
    [{"w": "the", "n": 2.5, "up": False}, {"w": "Cat", "up": True, "bias": 1.0}],
    [],
    [{"w": "sat", "n": -1, "x": "y"}],
]


@pytest.mark.parametrize("backend", ["dict", "hash"])
def test_shapes_and_types(backend):
    vec = SequenceVectorizer(backend, n_features=64, dtype=np.float32)
    Xt = vec.fit_transform(TOKENS)
    n_out = 7 if backend == "dict" else 64
    assert vec.n_features_out_ == n_out
    assert [x.shape for x in Xt] == [(2, n_out), (0, n_out), (1, n_out)]
    assert all(sp.issparse(x) and x.format == "csr" and x.dtype == np.float32 for x in Xt)


def test_dict_backend_values():
    vec = SequenceVectorizer().fit(TOKENS)
    assert vec.feature_names_ == ["bias", "n", "up", "w=Cat", "w=sat", "w=the", "x=y"]
    assert vec.vocabulary_ == {name: i for i, name in enumerate(vec.feature_names_)}
    assert vec.get_feature_names_out().tolist() == vec.feature_names_
    Xt = vec.transform(TOKENS)
    np.testing.assert_array_equal(
        Xt[0].toarray(), [[0, 2.5, 0, 0, 0, 1, 0], [1, 0, 1, 1, 0, 0, 0]]
    )
    np.testing.assert_array_equal(Xt[2].toarray(), [[0, -1, 0, 0, 1, 0, 1]])


def test_backends_agree_on_nonzeros_per_token():
    dict_out = SequenceVectorizer("dict").fit_transform(TOKENS)
    hash_out = SequenceVectorizer("hash").fit_transform(TOKENS)
    # 'up': False is a zero value and is not stored by either backend.
    expected = [[2, 3], [], [3]]
    for d, h, nnz in zip(dict_out, hash_out, expected):
        np.testing.assert_array_equal(np.diff(d.indptr), nnz)
        np.testing.assert_array_equal(np.diff(h.indptr), nnz)
        np.testing.assert_array_equal(np.sort(d.data), np.sort(h.data))


def test_backends_agree_on_conll(conll):
    X, _ = conll
    dict_out = SequenceVectorizer("dict").fit_transform(X)
    hash_out = SequenceVectorizer("hash").fit_transform(X)
    dict_nnz = np.concatenate([np.diff(x.indptr) for x in dict_out])
    hash_nnz = np.concatenate([np.diff(x.indptr) for x in hash_out])
    expected = [sum(1 for v in token.values() if v is not False) for seq in X for token in seq]
    np.testing.assert_array_equal(dict_nnz, expected)
    # A hash collision inside one token merges two features; with 2**20 columns that is rare.
    assert np.mean(hash_nnz == dict_nnz) > 0.99


def test_unseen_features_are_ignored():
    vec = SequenceVectorizer().fit([[{"w": "a", "n": 1.0}]])
    (Xt,) = vec.transform([[{"w": "b", "new": 3.0}, {"w": "a", "n": 2.0}]])
    np.testing.assert_array_equal(Xt.toarray(), [[0, 0], [2, 1]])


def test_hash_alternate_sign_and_n_features():
    X = [[{"w": str(i)} for i in range(200)]]
    (plain,) = SequenceVectorizer("hash", n_features=8).fit_transform(X)
    (signed,) = SequenceVectorizer("hash", n_features=8, alternate_sign=True).fit_transform(X)
    assert plain.shape == (200, 8)
    assert (plain.data > 0).all()
    assert (signed.data < 0).any()
    np.testing.assert_array_equal(abs(signed).toarray(), plain.toarray())


@pytest.mark.parametrize("backend", ["dict", "hash"])
def test_fit_transform_equals_fit_then_transform(conll, backend):
    X, _ = conll
    vec = SequenceVectorizer(backend)
    assert same_matrices(vec.fit_transform(X), SequenceVectorizer(backend).fit(X).transform(X))


def test_transform_empty_sequences():
    vec = SequenceVectorizer().fit(TOKENS)
    assert [x.shape for x in vec.transform([[], []])] == [(0, 7), (0, 7)]


def test_clone_and_params():
    vec = SequenceVectorizer("hash", n_features=16, alternate_sign=True, sort=False)
    params = clone(vec).get_params()
    assert params == {
        "backend": "hash",
        "n_features": 16,
        "alternate_sign": True,
        "dtype": np.float64,
        "sort": False,
    }
    fitted = SequenceVectorizer().fit(TOKENS)
    assert not hasattr(clone(fitted), "vectorizer_")
    assert fitted.set_params(backend="hash").backend == "hash"


@pytest.mark.parametrize("backend", ["dict", "hash"])
def test_pickle(conll, backend):
    X, _ = conll
    vec = SequenceVectorizer(backend).fit(X)
    restored = pickle.loads(pickle.dumps(vec))
    assert same_matrices(restored.transform(X[:20]), vec.transform(X[:20]))


class TokenClassifier(BaseEstimator):
    """Minimal sequence labeller: classifies the tokens independently."""

    def fit(self, X, y):
        self.clf_ = LinearSVC().fit(sp.vstack(X), np.concatenate(y))
        return self

    def predict(self, X):
        predictions = self.clf_.predict(sp.vstack(X))
        return np.split(predictions, np.cumsum([x.shape[0] for x in X])[:-1])


def test_pipeline(conll):
    X, y = conll
    pipe = make_pipeline(SequenceVectorizer(), TokenClassifier()).fit(X[:250], y[:250])
    predictions = pipe.predict(X[250:])
    assert [len(p) for p in predictions] == [len(t) for t in y[250:]]
    accuracy = np.mean(np.concatenate(predictions) == np.concatenate(y[250:]))
    assert accuracy > 0.85


def test_tags():
    tags = get_tags(SequenceVectorizer())
    assert tags.input_tags.dict and not tags.input_tags.two_d_array


@pytest.mark.parametrize(
    "X, match",
    [
        ([{"w": "a"}, {"w": "b"}], "not a flat list of dicts"),
        ({"w": "a"}, "must be a list of sequences"),
        ([], "X is empty"),
        ([[], []], "no tokens"),
    ],
)
def test_bad_input(X, match):
    with pytest.raises(ValueError, match=match):
        SequenceVectorizer().fit(X)


def test_flat_list_rejected_by_transform():
    vec = SequenceVectorizer().fit(TOKENS)
    with pytest.raises(ValueError, match="pass a list of sequences"):
        vec.transform([{"w": "a"}])


@pytest.mark.parametrize("params", [{"backend": "tfidf"}, {"n_features": 0}, {"sort": "yes"}])
def test_invalid_params(params):
    with pytest.raises(InvalidParameterError):
        SequenceVectorizer(**params).fit(TOKENS)


def test_not_fitted():
    with pytest.raises(NotFittedError):
        SequenceVectorizer().transform(TOKENS)


def test_feature_names_unavailable_for_hash():
    vec = SequenceVectorizer("hash").fit(TOKENS)
    assert not hasattr(vec, "get_feature_names_out")
    with pytest.raises(AttributeError) as excinfo:
        vec.get_feature_names_out()
    assert "only available with backend='dict'" in str(excinfo.value.__cause__)


def test_word_features_exact():
    features = word_features(["He", "RAN", "42"], ["PRP", "VBD", "CD"])
    assert features == [
        {
            "bias": 1.0, "word.lower()": "he", "word[-3:]": "He", "word[-2:]": "He",
            "word.isupper()": False, "word.istitle()": True, "word.isdigit()": False,
            "postag": "PRP", "postag[:2]": "PR", "BOS": True,
            "+1:word.lower()": "ran", "+1:word.istitle()": False, "+1:word.isupper()": True,
            "+1:postag": "VBD", "+1:postag[:2]": "VB",
        },
        {
            "bias": 1.0, "word.lower()": "ran", "word[-3:]": "RAN", "word[-2:]": "AN",
            "word.isupper()": True, "word.istitle()": False, "word.isdigit()": False,
            "postag": "VBD", "postag[:2]": "VB",
            "-1:word.lower()": "he", "-1:word.istitle()": True, "-1:word.isupper()": False,
            "-1:postag": "PRP", "-1:postag[:2]": "PR",
            "+1:word.lower()": "42", "+1:word.istitle()": False, "+1:word.isupper()": False,
            "+1:postag": "CD", "+1:postag[:2]": "CD",
        },
        {
            "bias": 1.0, "word.lower()": "42", "word[-3:]": "42", "word[-2:]": "42",
            "word.isupper()": False, "word.istitle()": False, "word.isdigit()": True,
            "postag": "CD", "postag[:2]": "CD",
            "-1:word.lower()": "ran", "-1:word.istitle()": False, "-1:word.isupper()": True,
            "-1:postag": "VBD", "-1:postag[:2]": "VB", "EOS": True,
        },
    ]  # fmt: skip


def test_word_features_without_pos_and_wider_window():
    features = word_features(["a", "b", "c"], window=2)
    assert features[0] == {
        "bias": 1.0, "word.lower()": "a", "word[-3:]": "a", "word[-2:]": "a",
        "word.isupper()": False, "word.istitle()": False, "word.isdigit()": False, "BOS": True,
        "+1:word.lower()": "b", "+1:word.istitle()": False, "+1:word.isupper()": False,
        "+2:word.lower()": "c", "+2:word.istitle()": False, "+2:word.isupper()": False,
    }  # fmt: skip
    assert {k for k in features[2] if k[0] in "+-"} == {
        "-2:word.lower()", "-2:word.istitle()", "-2:word.isupper()",
        "-1:word.lower()", "-1:word.istitle()", "-1:word.isupper()",
    }  # fmt: skip
    assert "BOS" not in features[1] and "EOS" not in features[1]


def test_word_features_edge_cases():
    (single,) = word_features(["Go"], ["VB"], window=3)
    assert single["BOS"] is True and single["EOS"] is True
    assert not any(k[0] in "+-" for k in single)
    assert word_features([]) == []
    assert all(not any(k[0] in "+-" for k in t) for t in word_features(["a", "b"], window=0))
    with pytest.raises(ValueError, match="differ in length"):
        word_features(["a", "b"], ["DT"])
    with pytest.raises(ValueError, match="non-negative integer"):
        word_features(["a"], window=-1)


def tutorial_word2features(sent, i):
    """word2features from the sklearn-crfsuite CoNLL tutorial, verbatim."""
    word = sent[i][0]
    postag = sent[i][1]
    features = {
        "bias": 1.0,
        "word.lower()": word.lower(),
        "word[-3:]": word[-3:],
        "word[-2:]": word[-2:],
        "word.isupper()": word.isupper(),
        "word.istitle()": word.istitle(),
        "word.isdigit()": word.isdigit(),
        "postag": postag,
        "postag[:2]": postag[:2],
    }
    if i > 0:
        word1 = sent[i - 1][0]
        postag1 = sent[i - 1][1]
        features.update({
            "-1:word.lower()": word1.lower(),
            "-1:word.istitle()": word1.istitle(),
            "-1:word.isupper()": word1.isupper(),
            "-1:postag": postag1,
            "-1:postag[:2]": postag1[:2],
        })
    else:
        features["BOS"] = True
    if i < len(sent) - 1:
        word1 = sent[i + 1][0]
        postag1 = sent[i + 1][1]
        features.update({
            "+1:word.lower()": word1.lower(),
            "+1:word.istitle()": word1.istitle(),
            "+1:word.isupper()": word1.isupper(),
            "+1:postag": postag1,
            "+1:postag[:2]": postag1[:2],
        })
    else:
        features["EOS"] = True
    return features


def test_sentences_to_features_matches_tutorial():
    data = load_conll2000("test")
    words, pos = data.words[:200], data.pos[:200]
    sentences = [list(zip(w, p)) for w, p in zip(words, pos)]
    expected = [[tutorial_word2features(s, i) for i in range(len(s))] for s in sentences]
    assert sentences_to_features(words, pos) == expected


def test_sentences_to_features_without_pos_and_errors():
    X = sentences_to_features([["Hi", "there"], ["Bye"]], window=2)
    assert X == [word_features(["Hi", "there"], window=2), word_features(["Bye"], window=2)]
    with pytest.raises(ValueError, match="differ in length"):
        sentences_to_features([["a"], ["b"]], [["DT"]])


def test_fast_dict_transform_equals_dictvectorizer():
    from sklearn.feature_extraction import DictVectorizer

    train = [[{"w": "a", "n": 2.0, "b": True, "tags": ["x", "y"]}, {"w": "b", "b": False}],
             [{"w": "c", "n": 0.5, "k=v": "z"}]]
    test = [[{"w": "a", "n": 3, "b": True, "unseen": "q", "tags": ("y", "new")}],
            [{"w": "new", "b": True, "k=v": "z", "n": 0}]]
    vectorizer = SequenceVectorizer().fit(train)
    reference = DictVectorizer().fit([t for s in train for t in s])
    ours = sp.vstack(vectorizer.transform(test)).toarray()
    expected = reference.transform([t for s in test for t in s]).toarray()
    np.testing.assert_array_equal(ours, expected)


@pytest.mark.parametrize("sort", [True, False])
def test_vocabulary_equals_dictvectorizer(sort):
    from sklearn.feature_extraction import DictVectorizer

    train = [[{"w": "b", "n": 2.0, "b": True, "tags": ["y", "x"]}, {"w": "a", "b": False}],
             [{"w": "c", "n": 0.5, "k=v": "z", "k": "v=z"}]]
    vectorizer = SequenceVectorizer(sort=sort).fit(train)
    reference = DictVectorizer(sort=sort).fit([t for s in train for t in s])
    assert vectorizer.feature_names_ == reference.feature_names_
    assert vectorizer.vocabulary_ == reference.vocabulary_
    ours = sp.vstack(vectorizer.transform(train)).toarray()
    np.testing.assert_array_equal(ours, reference.transform([t for s in train for t in s]).toarray())
