"""word_features builds, for every sentence and window, the dicts of the token-by-token
reference below: same keys in the same order, same values of the same types."""

import random

import pytest

from skstruct.datasets import load_conll2000
from skstruct.preprocessing import sentences_to_features, word_features


def reference_word_features(words, pos, window):
    """Token by token: own features, left neighbours, BOS, right neighbours, EOS."""
    names = ("word.lower()", "word.istitle()", "word.isupper()")
    if pos is not None:
        names += ("postag", "postag[:2]")

    def context(j):
        word = words[j]
        values = (word.lower(), word.istitle(), word.isupper())
        return values if pos is None else values + (pos[j], pos[j][:2])

    features = []
    for i, word in enumerate(words):
        token = {"bias": 1.0, "word[-3:]": word[-3:], "word[-2:]": word[-2:],
                 "word.isdigit()": word.isdigit()}
        token.update(zip(names, context(i)))
        for d in range(-window, 0):
            if i + d >= 0:
                token.update(zip([f"{d:+d}:{name}" for name in names], context(i + d)))
        if i == 0:
            token["BOS"] = True
        for d in range(1, window + 1):
            if i + d < len(words):
                token.update(zip([f"{d:+d}:{name}" for name in names], context(i + d)))
        if i == len(words) - 1:
            token["EOS"] = True
        features.append(token)
    return features


def as_items(features):
    return [[(key, type(value), value) for key, value in token.items()] for token in features]


@pytest.mark.parametrize("window", [0, 1, 2, 3])
@pytest.mark.parametrize("with_pos", [True, False])
def test_random_sentences_match_the_reference_in_order_and_type(window, with_pos):
    rng = random.Random(window * 2 + with_pos)
    vocabulary = ["The", "cat", "SAT", "12", "on", "a", "Mat", "x", "", "é", "U.S."]
    tags = ["DT", "NN", "VBD", "CD", "IN", "N", ""]
    checked = 0
    for length in [0, 1, 2, 3, 4, 5, 6, 7, 8, 11] * 20:
        words = [rng.choice(vocabulary) for _ in range(length)]
        pos = [rng.choice(tags) for _ in range(length)] if with_pos else None
        ours = word_features(words, pos, window=window)
        expected = reference_word_features(words, pos, window)
        assert len(ours) == len(expected) == length
        assert as_items(ours) == as_items(expected)
        checked += length
    assert checked == 940


def test_conll_sentences_match_the_reference():
    data = load_conll2000("test")
    words, pos = data.words[:300], data.pos[:300]
    ours = sentences_to_features(words, pos)
    expected = [reference_word_features(w, p, 1) for w, p in zip(words, pos)]
    assert len(ours) == len(expected) == 300
    assert [as_items(x) for x in ours] == [as_items(x) for x in expected]
