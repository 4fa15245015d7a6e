"""Bad input to SequenceVectorizer, word_features and sentences_to_features."""

import numpy as np
import pytest

from skstruct.preprocessing import SequenceVectorizer, sentences_to_features, word_features

GOOD = [[{"w": "a", "x": 1.0}, {"w": "b", "x": 0.5}], [{"w": "c"}]]
BACKENDS = ["dict", "hash"]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("method", ["fit", "fit_transform"])
def test_string_tokens_are_rejected_with_a_pointer_to_sentences_to_features(backend, method):
    with pytest.raises(TypeError, match=r"tokens must be feature dicts; sequence 1 token 0 is "
                                        r"str \(use sentences_to_features"):
        getattr(SequenceVectorizer(backend), method)([[{"w": "a"}], ["c"]])


def test_string_tokens_are_rejected_by_transform():
    vec = SequenceVectorizer().fit(GOOD)
    with pytest.raises(TypeError, match="sequence 0 token 1 is str"):
        vec.transform([[{"w": "a"}, "b"]])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("method", ["fit", "fit_transform"])
def test_none_value_is_rejected_naming_feature_and_token(backend, method):
    X = [[{"w": "a"}], [{"w": "b"}, {"w": None}]]
    with pytest.raises(TypeError, match="feature 'w' of sequence 1 token 1 has value None"):
        getattr(SequenceVectorizer(backend), method)(X)


def test_none_value_is_rejected_by_transform():
    vec = SequenceVectorizer().fit(GOOD)
    with pytest.raises(TypeError, match="feature 'x' of sequence 0 token 0 has value None"):
        vec.transform([[{"x": None}]])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf, np.float32("nan")])
def test_non_finite_values_are_rejected(backend, value):
    X = [[{"w": "a", "x": 1.0}, {"x": value}]]
    with pytest.raises(ValueError, match="feature 'x' of sequence 0 token 1 has value .*finite"):
        SequenceVectorizer(backend).fit_transform(X)
    with pytest.raises(ValueError, match="must be finite"):
        SequenceVectorizer(backend).fit(X)
    vec = SequenceVectorizer(backend).fit(GOOD)
    with pytest.raises(ValueError, match="must be finite"):
        vec.transform(X)


@pytest.mark.parametrize("backend", BACKENDS)
def test_nested_dict_values_are_rejected(backend):
    with pytest.raises(TypeError, match="feature 'w' of sequence 0 token 0 is a dict"):
        SequenceVectorizer(backend).fit_transform([[{"w": {"a": 1}}]])
    vec = SequenceVectorizer(backend).fit([[{"w": "a"}]])
    with pytest.raises(TypeError, match="is a dict"):
        vec.transform([[{"w": {"a": 1}}]])


@pytest.mark.parametrize("value", [[1, 2], ["a", None], b"ab", 1j, object()])
def test_other_unsupported_values_are_rejected(value):
    with pytest.raises(TypeError, match="feature 'w' of sequence 0 token 0"):
        SequenceVectorizer().fit_transform([[{"w": value}]])
    vec = SequenceVectorizer().fit([[{"w": "a"}, {"w": 1.0}]])  # "w=a" and "w" known
    with pytest.raises(TypeError, match="feature 'w' of sequence 0 token 0"):
        vec.transform([[{"w": value}]])


def test_multi_valued_string_features_keep_working_as_in_dictvectorizer():
    from sklearn.feature_extraction import DictVectorizer

    tokens = [{"w": ["a", "b"]}, {"w": ("b",), "x": 2}, {"w": {"c"}}]
    expected = DictVectorizer().fit_transform(tokens).toarray()
    vec = SequenceVectorizer()
    np.testing.assert_array_equal(vec.fit_transform([tokens])[0].toarray(), expected)
    np.testing.assert_array_equal(vec.transform([tokens])[0].toarray(), expected)


def test_hash_backend_names_its_lack_of_multi_valued_features():
    with pytest.raises(TypeError, match="backend='hash' takes string and number values only"):
        SequenceVectorizer("hash").fit_transform([[{"w": ["a", "b"]}]])


def test_failed_fit_keeps_the_previous_vocabulary():
    vec = SequenceVectorizer().fit([[{"w": "a"}]])
    with pytest.raises(TypeError):
        vec.fit([[{"w": "b"}, {"w": None}]])
    assert vec.feature_names_ == ["w=a"]
    assert vec.transform([[{"w": "a"}]])[0].toarray().tolist() == [[1.0]]


@pytest.mark.parametrize("dtype", [str, int, np.int32, object, "not a dtype"])
def test_dtype_must_be_floating(dtype):
    with pytest.raises(ValueError, match="dtype must be a floating type"):
        SequenceVectorizer(dtype=dtype).fit(GOOD)


@pytest.mark.parametrize("dtype", [np.float32, "float64"])
def test_floating_dtypes_are_accepted(dtype):
    assert SequenceVectorizer(dtype=dtype).fit_transform(GOOD)[0].dtype == np.dtype(dtype)


def test_feature_names_with_hash_backend_say_why():
    vec = SequenceVectorizer(backend="hash").fit(GOOD)
    with pytest.raises(AttributeError, match="only available with backend='dict'"):
        vec.get_feature_names_out()
    assert not hasattr(vec, "get_feature_names_out")


def test_sequence_that_is_not_a_list_is_named():
    with pytest.raises(TypeError, match="sequence 1 is int"):
        SequenceVectorizer().fit([[{"w": "a"}], 3])


@pytest.mark.parametrize("words_list", ["hello", ["The", "cat"], None, 3])
def test_sentences_to_features_needs_a_list_of_sentences(words_list):
    with pytest.raises(TypeError, match=r"words_list must be a list of sentences \(lists of"):
        sentences_to_features(words_list)


@pytest.mark.parametrize("sentence, bad", [([1, 2], "word 0 is 1 of type int"),
                                           (["a", None], "word 1 is None of type NoneType"),
                                           (["a", b"b"], "word 1 is b'b' of type bytes")])
def test_sentences_to_features_words_must_be_strings(sentence, bad):
    with pytest.raises(TypeError, match=f"words must be strings; sentence 1 {bad}"):
        sentences_to_features([["ok"], sentence])


def test_a_sentence_given_as_a_string_is_rejected():
    with pytest.raises(TypeError, match=r"words must be a list of strings \(sentence 1\), not str"):
        sentences_to_features([["ok"], "bad"])


@pytest.mark.parametrize("pos_list, match", [
    ([["NN"], [None]], "pos must be strings; sentence 1 tag 0 is None"),
    ([["NN"], [3]], "pos must be strings; sentence 1 tag 0 is 3"),
    ([["NN"], "N"], r"pos must be a list of strings \(sentence 1\), not str"),
    ("NN", "pos_list must be a list of sentences"),
    (["NN", "N"], "pos_list must be a list of sentences"),
])
def test_sentences_to_features_pos_must_be_lists_of_strings(pos_list, match):
    with pytest.raises(TypeError, match=match):
        sentences_to_features([["a"], ["b"]], pos_list)


def test_word_features_rejects_strings_for_words_and_pos():
    with pytest.raises(TypeError, match="pos must be a list of strings, not str 'NN'"):
        word_features(["a", "b"], "NN")
    with pytest.raises(TypeError, match="words must be a list of strings, not str"):
        word_features("ab")
    with pytest.raises(TypeError, match="words must be strings; word 1 is 2"):
        word_features(["a", 2])
    with pytest.raises(TypeError, match="pos must be strings; tag 0 is None"):
        word_features(["a"], [None])


@pytest.mark.parametrize("window", [-1, 1.5, True, "1"])
def test_window_must_be_a_non_negative_int(window):
    with pytest.raises(ValueError, match="window must be a non-negative integer"):
        sentences_to_features([["a"]], window=window)


def test_valid_input_forms_still_work():
    X = sentences_to_features([np.array(["The", "cat"]), ("sat",)], [["DT", "NN"], ("VBD",)])
    assert [len(x) for x in X] == [2, 1]
    assert X[0][1]["-1:postag"] == "DT"
    assert sentences_to_features([[]]) == [[]]


@pytest.mark.parametrize("dtype", [str, int, "not a dtype"])
def test_arc_vectorizer_dtype_must_be_floating(dtype):
    from skstruct.preprocessing import ArcVectorizer

    with pytest.raises(ValueError, match="dtype must be a floating type"):
        ArcVectorizer(dtype=dtype).fit([(["The", "dog"], ["DET", "NOUN"])])


@pytest.mark.parametrize("sentence, match", [
    ((["The", np.nan], ["DET", "NOUN"]), "all words must be strings; word 1 of sentence 0 is nan"),
    ((["The", "dog"], ["DET", 1]), "all tags must be strings; tag 1 of sentence 0 is 1"),
    ({"form": ["a", None], "upos": ["X", "Y"]}, "word 1 of sentence 0 is None"),
])
def test_arc_vectorizer_does_not_turn_non_strings_into_strings(sentence, match):
    from skstruct.preprocessing import ArcVectorizer

    with pytest.raises(ValueError, match=match):
        ArcVectorizer().fit([sentence])
