from collections import Counter, defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import BaseEstimator
from sklearn.model_selection import KFold, cross_validate

from skstruct.metrics import (
    extract_spans,
    get_scorer,
    span_classification_report,
    span_f1_score,
    span_f1_scorer,
    span_precision_recall_fscore,
    span_precision_score,
    span_precision_scorer,
    span_recall_score,
    span_recall_scorer,
    token_accuracy,
    token_accuracy_scorer,
)

# --- extract_spans ---------------------------------------------------------


@pytest.mark.parametrize(
    "tags, spans",
    [
        # IOB2
        (["B-NP", "I-NP", "O", "B-VP"], [("NP", 0, 2), ("VP", 3, 4)]),
        # IOB1: I starts a chunk after O or after another type
        (["I-NP", "I-NP", "O", "I-VP"], [("NP", 0, 2), ("VP", 3, 4)]),
        # IOB1: B separates adjacent chunks of the same type
        (["I-NP", "B-NP"], [("NP", 0, 1), ("NP", 1, 2)]),
        (["I-NP", "I-NP", "B-NP", "I-NP"], [("NP", 0, 2), ("NP", 2, 4)]),
        # a type change inside a chunk ends it and starts another
        (["B-NP", "I-VP", "I-VP"], [("NP", 0, 1), ("VP", 1, 3)]),
        (["B-NP", "B-VP"], [("NP", 0, 1), ("VP", 1, 2)]),
        # the end of the sequence closes the open chunk
        (["O", "B-NP", "I-NP"], [("NP", 1, 3)]),
        (["B-PP"], [("PP", 0, 1)]),
        # BIOES
        (["S-X", "B-X", "I-X", "E-X", "S-X", "O"],
         [("X", 0, 1), ("X", 1, 4), ("X", 4, 5)]),
        (["S-X", "S-X"], [("X", 0, 1), ("X", 1, 2)]),
        (["B-X", "E-X", "B-X", "E-X"], [("X", 0, 2), ("X", 2, 4)]),
        (["S-X", "I-X", "E-X"], [("X", 0, 1), ("X", 1, 3)]),
        # IOE1 / IOE2
        (["I-NP", "E-NP", "I-NP"], [("NP", 0, 2), ("NP", 2, 3)]),
        (["E-NP", "E-NP", "O"], [("NP", 0, 1), ("NP", 1, 2)]),
        # conlleval's one-token bracket chunks, and "." which never starts one
        (["O", "]-NP", "O"], [("NP", 1, 2)]),
        (["[-NP", "I-NP"], [("NP", 0, 1)]),
        (["B-NP", ".", "I-NP"], [("NP", 0, 1), ("NP", 2, 3)]),
        (["B-NP", ".-NP", "O"], [("NP", 0, 3)]),  # nothing ends a chunk after "."
        (["B-NP", "[-NP", "O"], [("NP", 0, 1), ("NP", 1, 2)]),  # start without end
        # untyped tags, hyphenated types, labels without a prefix
        (["B", "I", "O", "B"], [("", 0, 2), ("", 3, 4)]),
        (["B-A-B", "I-A-B", "I-A-C"], [("A-B", 0, 2), ("A-C", 2, 3)]),
        (["PER", "PER", "O"], []),
        ([], []),
    ],
)
def test_extract_spans(tags, spans):
    assert extract_spans(tags) == spans
    assert extract_spans(np.array(tags, dtype=object)) == spans


def test_extract_spans_schemes_only_validate():
    tags = ["S-X", "B-X", "E-X", "O"]
    assert extract_spans(tags, scheme="bioes") == extract_spans(tags)
    assert extract_spans(["I-X", "B-X"], scheme="iob1") == [("X", 0, 1), ("X", 1, 2)]
    for scheme in ("iob1", "iob2"):
        with pytest.raises(ValueError, match=r"'S-X' at position 0 has prefix 'S'"):
            extract_spans(tags, scheme=scheme)
    with pytest.raises(ValueError, match="prefix '\\['"):
        extract_spans(["O", "[-NP"], scheme="bioes")
    with pytest.raises(ValueError, match="Unknown scheme 'bio'"):
        extract_spans(tags, scheme="bio")
    with pytest.raises(ValueError, match="1-D sequence of tags"):
        extract_spans("B-NP")


# --- agreement with conlleval's counting loop ------------------------------

# conlleval's endOfChunk / startOfChunk tables (version 2004-01-26) as
# (previous, current) prefix pairs, and the pairs added by the BIOES-aware
# copies of conlleval. Chunks also end and start where the type changes.
CONLLEVAL_END = {"BB", "BO", "IB", "IO", "EE", "EI", "EO"}
CONLLEVAL_START = {"BB", "IB", "OB", "OI", "EE", "EI", "OE"}
BIOES_END = {"BS", "IS", "ES", "EB", "SE", "SI", "SO", "SS", "SB"}
BIOES_START = {"SB", "EB", "BS", "IS", "OS", "SS", "ES", "SI", "SE"}


def conlleval_counts(y_true, y_pred, bioes):
    """(correct, true, predicted) chunk counts of conlleval's scanning loop.

    Written for tags with prefixes B, I, E, S and O only.
    """
    end_pairs = CONLLEVAL_END | (BIOES_END if bioes else set())
    start_pairs = CONLLEVAL_START | (BIOES_START if bioes else set())

    def ends(last, cur):
        return last[0] + cur[0] in end_pairs or (last[0] != "O" and last[1] != cur[1])

    def starts(last, cur):
        return last[0] + cur[0] in start_pairs or (cur[0] != "O" and last[1] != cur[1])

    # conlleval reads one file; an empty line between sentences is an O token
    tokens = [pair for t, p in zip(y_true, y_pred) for pair in [*zip(t, p), ("O", "O")]]
    correct = n_true = n_pred = 0
    in_correct = False
    last_t = last_p = ("O", "")
    for t_tag, p_tag in tokens:
        t, p = t_tag.partition("-")[::2], p_tag.partition("-")[::2]
        if in_correct:
            end_t, end_p = ends(last_t, t), ends(last_p, p)
            if end_t and end_p and last_t[1] == last_p[1]:
                correct += 1
                in_correct = False
            elif end_t != end_p or t[1] != p[1]:
                in_correct = False
        start_t, start_p = starts(last_t, t), starts(last_p, p)
        in_correct |= start_t and start_p and t[1] == p[1]
        n_true += start_t
        n_pred += start_p
        last_t, last_p = t, p
    return correct + in_correct, n_true, n_pred


def tagged_pairs(prefixes):
    tags = st.sampled_from(
        ["O", "O-NP"] + [p + t for p in prefixes for t in ("-NP", "-VP", "")]
    )
    pair = st.integers(0, 8).flatmap(
        lambda n: st.tuples(*[st.lists(tags, min_size=n, max_size=n)] * 2)
    )
    return st.lists(pair, min_size=1, max_size=4)


@pytest.mark.parametrize(
    "prefixes, bioes", [("BI", False), ("IE", False), ("BIES", True)]
)
@settings(max_examples=300)
@given(data=st.data())
def test_correct_chunks_are_span_intersection(prefixes, bioes, data):
    y_true, y_pred = map(list, zip(*data.draw(tagged_pairs(prefixes))))
    correct, n_true, n_pred = conlleval_counts(y_true, y_pred, bioes)

    assert sum(len(extract_spans(seq)) for seq in y_true) == n_true
    assert sum(len(extract_spans(seq)) for seq in y_pred) == n_pred
    intersection = sum(
        len(set(extract_spans(t)) & set(extract_spans(p)))
        for t, p in zip(y_true, y_pred)
    )
    assert intersection == correct
    precision, recall, _, support = span_precision_recall_fscore(y_true, y_pred)
    assert support == n_true
    assert precision == (correct / n_pred if n_pred else 0.0)
    assert recall == (correct / n_true if n_true else 0.0)


def test_plain_conlleval_merges_bioes_chunks():
    # Why the BIOES pairs are needed: conlleval itself reads S-X S-X as one chunk.
    y = [["S-X", "S-X"]]
    assert conlleval_counts(y, y, bioes=False) == (1, 1, 1)
    assert conlleval_counts(y, y, bioes=True) == (2, 2, 2)
    assert len(extract_spans(y[0])) == 2


# --- span scores ------------------------------------------------------------

Y_TRUE = [
    ["B-NP", "I-NP", "O", "B-VP", "I-VP", "B-NP"],  # NP(0,2) VP(3,5) NP(5,6)
    ["I-NP", "B-NP", "O", "B-PP"],  # NP(0,1) NP(1,2) PP(3,4)
]
Y_PRED = [
    ["B-NP", "I-NP", "O", "B-VP", "B-VP", "B-NP"],  # NP ok, VP(3,4) VP(4,5), NP ok
    ["I-NP", "I-NP", "O", "B-NP"],  # NP(0,2), NP(3,4)
]
# true:    NP 4, VP 1, PP 1 -> 6
# pred:    NP 4, VP 2       -> 6
# correct: NP 2             -> 2


def test_span_scores_by_hand():
    p, r, f, s = span_precision_recall_fscore(Y_TRUE, Y_PRED, average=None)
    np.testing.assert_allclose(p, [2 / 4, 0, 0])  # NP, PP, VP
    np.testing.assert_allclose(r, [2 / 4, 0, 0])
    np.testing.assert_allclose(f, [0.5, 0, 0])
    np.testing.assert_array_equal(s, [4, 1, 1])

    assert span_precision_recall_fscore(Y_TRUE, Y_PRED) == (2 / 6, 2 / 6, 2 / 6, 6)
    assert span_precision_score(Y_TRUE, Y_PRED) == 2 / 6
    assert span_recall_score(Y_TRUE, Y_PRED) == 2 / 6
    assert span_f1_score(Y_TRUE, Y_PRED) == pytest.approx(2 / 6)

    p, r, f, s = span_precision_recall_fscore(Y_TRUE, Y_PRED, average="macro")
    assert (p, r, f, s) == pytest.approx((0.5 / 3, 0.5 / 3, 0.5 / 3, 6))
    p, r, f, s = span_precision_recall_fscore(Y_TRUE, Y_PRED, average="weighted")
    assert (p, r, f, s) == pytest.approx((2 / 6, 2 / 6, 2 / 6, 6))


def test_fbeta_and_unequal_precision_recall():
    y_true = [["B-NP", "O", "B-NP", "O", "B-VP"]]
    y_pred = [["B-NP", "O", "O", "O", "O"]]
    p, r, f1, _ = span_precision_recall_fscore(y_true, y_pred)
    assert (p, r) == (1.0, 1 / 3)
    assert f1 == pytest.approx(2 * p * r / (p + r))
    _, _, f2, _ = span_precision_recall_fscore(y_true, y_pred, beta=2.0)
    assert f2 == pytest.approx(5 * p * r / (4 * p + r))


def test_zero_division_gives_zero_like_conlleval():
    y_true = [["B-NP", "I-NP", "O"], ["B-VP"]]
    no_chunks = [["O", "O", "O"], ["O"]]
    assert span_precision_recall_fscore(y_true, no_chunks) == (0.0, 0.0, 0.0, 2)
    assert span_precision_recall_fscore(no_chunks, y_true) == (0.0, 0.0, 0.0, 0)
    assert span_precision_recall_fscore(no_chunks, no_chunks) == (0.0, 0.0, 0.0, 0)
    p, r, f, s = span_precision_recall_fscore(no_chunks, no_chunks, average=None)
    assert p.shape == r.shape == f.shape == s.shape == (0,)
    assert span_precision_recall_fscore(no_chunks, y_true, average="macro")[:3] == (
        0.0, 0.0, 0.0
    )


def test_perfect_prediction_and_scheme_argument():
    y = [["S-X", "B-Y", "E-Y"], ["B-X", "I-X", "E-X", "O"]]
    assert span_precision_recall_fscore(y, y, scheme="bioes") == (1.0, 1.0, 1.0, 3)
    with pytest.raises(ValueError, match="prefix 'S'"):
        span_f1_score(y, y, scheme="iob2")


def test_invalid_average():
    with pytest.raises(ValueError, match="average must be one of"):
        span_precision_recall_fscore(Y_TRUE, Y_PRED, average="samples")


# --- report -----------------------------------------------------------------


def test_classification_report_dict():
    report = span_classification_report(Y_TRUE, Y_PRED, output_dict=True)
    assert list(report) == [
        "NP", "PP", "VP", "micro avg", "macro avg", "weighted avg", "accuracy"
    ]
    assert report["NP"] == {"precision": 0.5, "recall": 0.5, "f1-score": 0.5, "support": 4}
    assert report["VP"] == {"precision": 0.0, "recall": 0.0, "f1-score": 0.0, "support": 1}
    assert report["micro avg"]["support"] == 6
    assert report["micro avg"]["f1-score"] == pytest.approx(2 / 6)
    assert report["accuracy"] == 7 / 10


def test_classification_report_text():
    text = span_classification_report(Y_TRUE, Y_PRED, digits=3)
    lines = text.splitlines()
    assert lines[0].split() == ["precision", "recall", "f1-score", "support"]
    assert lines[2].split() == ["NP", "0.500", "0.500", "0.500", "4"]
    assert lines[4].split() == ["VP", "0.000", "0.000", "0.000", "1"]
    assert lines[6].split() == ["micro", "avg", "0.333", "0.333", "0.333", "6"]
    assert lines[-1].split() == ["accuracy", "0.700", "10"]


# --- token accuracy ---------------------------------------------------------


def test_token_accuracy():
    # sequence 0 has 5 of 6 tokens right, sequence 1 has 2 of 4
    assert token_accuracy(Y_TRUE, Y_PRED) == 7 / 10
    assert token_accuracy(Y_TRUE, Y_PRED, sample_weight=[2, 1]) == (10 + 2) / (12 + 4)
    assert token_accuracy(Y_TRUE, Y_PRED, sample_weight=[0, 1]) == 2 / 4
    assert token_accuracy([[1, 2, 3]], [np.array([1, 2, 4])]) == 2 / 3
    assert token_accuracy([[]], [[]]) == 0.0
    with pytest.raises(ValueError, match=r"one weight per sequence, i.e. shape \(2,\)"):
        token_accuracy(Y_TRUE, Y_PRED, sample_weight=[1, 2, 3])


# --- input validation -------------------------------------------------------


@pytest.mark.parametrize("metric", [token_accuracy, span_f1_score, span_classification_report])
def test_validation_errors(metric):
    with pytest.raises(ValueError, match="y_true has 2 sequences but y_pred has 1"):
        metric(Y_TRUE, Y_PRED[:1])
    with pytest.raises(ValueError, match="Sequence 1 has 4 labels in y_true but 3 in y_pred"):
        metric(Y_TRUE, [Y_PRED[0], Y_PRED[1][:3]])
    with pytest.raises(ValueError, match="y_true must be a non-empty list of sequences"):
        metric([], [])
    with pytest.raises(ValueError, match="not a single flat sequence"):
        metric(["B-NP", "I-NP", "O"], ["B-NP", "I-NP", "O"])
    with pytest.raises(ValueError, match="not a single flat sequence"):
        metric(np.array(["B-NP", "O"]), np.array(["B-NP", "O"]))
    with pytest.raises(ValueError, match="y_pred must be a non-empty list of sequences"):
        metric(Y_TRUE, "B-NP")


def test_accepts_tuples_and_object_arrays():
    y_true = np.empty(2, dtype=object)
    y_true[:] = [np.array(seq) for seq in Y_TRUE]
    y_pred = tuple(tuple(seq) for seq in Y_PRED)
    assert span_f1_score(y_true, y_pred) == span_f1_score(Y_TRUE, Y_PRED)
    assert token_accuracy(y_true, y_pred) == token_accuracy(Y_TRUE, Y_PRED)


# --- scorers ----------------------------------------------------------------


class MostFrequentTagger(BaseEstimator):
    """Tags each word with its most frequent training tag."""

    def __init__(self, default="O"):
        self.default = default

    def fit(self, X, y):
        counts = defaultdict(Counter)
        for words, tags in zip(X, y):
            for word, tag in zip(words, tags):
                counts[word][tag] += 1
        self.tags_ = {word: c.most_common(1)[0][0] for word, c in counts.items()}
        return self

    def predict(self, X):
        return [np.array([self.tags_.get(w, self.default) for w in words]) for words in X]


SENTENCES = [
    (["the", "cat", "sat"], ["B-NP", "I-NP", "B-VP"]),
    (["a", "dog", "ran", "home"], ["B-NP", "I-NP", "B-VP", "B-NP"]),
    (["the", "dog", "sat"], ["B-NP", "I-NP", "B-VP"]),
    (["cats", "ran"], ["B-NP", "B-VP"]),
    (["a", "cat", "ran"], ["B-NP", "I-NP", "B-VP"]),
    (["the", "home", "sat"], ["B-NP", "I-NP", "B-VP"]),
]


def test_scorers_in_cross_validate():
    X = [words for words, _ in SENTENCES]
    y = [tags for _, tags in SENTENCES]
    cv = KFold(3)
    scoring = {
        "acc": token_accuracy_scorer,
        "f1": span_f1_scorer,
        "precision": span_precision_scorer,
        "recall": get_scorer("span_recall"),
    }
    results = cross_validate(MostFrequentTagger(), X, y, cv=cv, scoring=scoring)

    metrics = {
        "acc": token_accuracy,
        "f1": span_f1_score,
        "precision": span_precision_score,
        "recall": span_recall_score,
    }
    for fold, (train, test) in enumerate(cv.split(X)):
        tagger = MostFrequentTagger().fit([X[i] for i in train], [y[i] for i in train])
        y_pred = tagger.predict([X[i] for i in test])
        for name, metric in metrics.items():
            expected = metric([y[i] for i in test], y_pred)
            assert results[f"test_{name}"][fold] == pytest.approx(expected)
    # unseen words ("cats", "home" as a noun) make some folds imperfect
    assert 0 < results["test_f1"].min() < results["test_f1"].max() <= 1


def test_get_scorer():
    assert get_scorer("span_f1")._score_func is span_f1_score
    assert get_scorer("span_precision")._score_func is span_precision_score
    assert get_scorer("span_recall")._score_func is span_recall_score
    assert get_scorer("token_accuracy")._score_func is token_accuracy
    assert get_scorer("span_f1") is not span_f1_scorer
    assert get_scorer("accuracy")._score_func.__name__ == "accuracy_score"
    with pytest.raises(ValueError, match="not a valid scoring value"):
        get_scorer("span_f2")
