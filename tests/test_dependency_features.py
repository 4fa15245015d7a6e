import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from skstruct.datasets._conllu import load_ud_english_ewt
from skstruct.preprocessing import ArcVectorizer
from skstruct.preprocessing._arc_vectorizer import ARC_TEMPLATES

# ---------------------------------------------------------------------------------------
# A slow reference: the feature strings of every arc, hashed as documented.
# ---------------------------------------------------------------------------------------

MASK = 2**64 - 1
GOLDEN = 0x9E3779B97F4A7C15

# Template name -> the arc attributes it conjoins; "bp" is each distinct tag in between.
TEMPLATES = {
    "hw": ("hw",),
    "hp": ("hp",),
    "hw+hp": ("hw", "hp"),
    "mw": ("mw",),
    "mp": ("mp",),
    "mw+mp": ("mw", "mp"),
    "hw+hp+mw+mp": ("hw", "hp", "mw", "mp"),
    "hp+mw+mp": ("hp", "mw", "mp"),
    "hw+mw+mp": ("hw", "mw", "mp"),
    "hw+hp+mp": ("hw", "hp", "mp"),
    "hw+hp+mw": ("hw", "hp", "mw"),
    "hw+mw": ("hw", "mw"),
    "hp+mp": ("hp", "mp"),
    "hp+hp+1+mp-1+mp": ("hp", "hp+1", "mp-1", "mp"),
    "hp-1+hp+mp-1+mp": ("hp-1", "hp", "mp-1", "mp"),
    "hp+hp+1+mp+mp+1": ("hp", "hp+1", "mp", "mp+1"),
    "hp-1+hp+mp+mp+1": ("hp-1", "hp", "mp", "mp+1"),
    "hp+bp+mp": ("hp", "bp", "mp"),
    "bias": (),
}
WORD_SLOTS = {"hw", "mw"}


def fmix(x):
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def mix(h, value):
    return fmix(((h * GOLDEN) & MASK) ^ value)


def bucket(distance):
    return distance - 1 if distance <= 5 else 5 if distance <= 10 else 6


def arc_feature_strings(words, tags, known_words):
    """{(m, h): set of feature strings}; h == m is the root arc to m.

    Strings are ``"template=v1|v2|..."``, with ``"&dir:dist"`` appended for the
    conjunction with direction and distance bucket.
    """
    n = len(words)
    # The sentence "<root> w_1 ... w_n", positions 0..n, with "<s>"/"</s>" tags outside.
    vwords = ["<root>"] + [w.lower() if w.lower() in known_words else "<unk>" for w in words]
    vtags = ["<root>"] + list(tags)

    def tag(v):
        return "<s>" if v < 0 else "</s>" if v > n else vtags[v]

    features = {}
    for m in range(n):
        for h in range(n):
            hv, mv = (0 if h == m else h + 1), m + 1
            attributes = {
                "hw": vwords[hv], "hp": tag(hv), "mw": vwords[mv], "mp": tag(mv),
                "hp-1": tag(hv - 1), "hp+1": tag(hv + 1),
                "mp-1": tag(mv - 1), "mp+1": tag(mv + 1),
            }  # fmt: skip
            direction = "root" if h == m else "right" if hv < mv else "left"
            conjunction = f"&{direction}:{bucket(abs(hv - mv))}"
            between = {tag(v) for v in range(min(hv, mv) + 1, max(hv, mv))}
            strings = {"bias="}
            for name, slots in TEMPLATES.items():
                if name == "bias":
                    continue
                for bp in sorted(between) if "bp" in slots else [None]:
                    values = [bp if slot == "bp" else attributes[slot] for slot in slots]
                    string = f"{name}={'|'.join(values)}"
                    strings |= {string, string + conjunction}
            features[m, h] = strings
    return features


def hash_string(string, vectorizer):
    """Column of a feature string, hashed as ArcVectorizer documents."""
    body, _, conjunction = string.partition("&")
    name, _, values = body.partition("=")
    template = ARC_TEMPLATES.index(name)
    word_ids = {"<unk>": 0, "<root>": 1, **vectorizer.vocabulary_}
    tag_ids = {"<unk>": 0, "<root>": 1, "<s>": 2, "</s>": 3, **vectorizer.pos_vocabulary_}
    h = fmix(((template + 1) * GOLDEN) & MASK)
    for slot, value in zip(TEMPLATES[name], values.split("|") if values else []):
        h = mix(h, word_ids[value] if slot in WORD_SLOTS else tag_ids.get(value, 0))
    if conjunction:
        direction, distance = conjunction.split(":")
        h = mix(h, 8 * ["right", "left", "root"].index(direction) + int(distance))
    return h % vectorizer.n_features


def reference_columns(words, tags, vectorizer):
    """The sorted columns of every row of the sentence's arc matrix."""
    n = len(words)
    rows = [None] * (n * n)
    for (m, h), strings in arc_feature_strings(words, tags, set(vectorizer.vocabulary_)).items():
        rows[m * n + h] = sorted({hash_string(s, vectorizer) for s in strings})
    return rows


def assert_matches_reference(X, words, tags, vectorizer):
    n = len(words)
    assert X.shape == (n * n, vectorizer.n_features)
    assert X.has_canonical_format
    # The flag is true: a new matrix on the same arrays finds sorted, unique indices.
    assert sp.csr_matrix((X.data, X.indices, X.indptr), shape=X.shape).has_canonical_format
    assert X.data.tolist() == [1.0] * X.nnz
    columns = [X.indices[X.indptr[r] : X.indptr[r + 1]].tolist() for r in range(n * n)]
    assert columns == reference_columns(words, tags, vectorizer)


def _random_sentences(rng, n_sentences, max_len=16):
    vocab = np.array(["a", "B", "c", "Dd", "e", "f", "the", "The", "x"])
    tagset = np.array(["N", "V", "D", "A", "P", "."])
    out = []
    for _ in range(n_sentences):
        n = int(rng.integers(1, max_len + 1))
        out.append((rng.choice(vocab, n).tolist(), rng.choice(tagset, n).tolist()))
    return out


SENTENCE = (["The", "dog", "barks"], ["DET", "NOUN", "VERB"])
TRAIN = [SENTENCE, (["A", "dog", "sleeps", "."], ["DET", "NOUN", "VERB", "PUNCT"])]


# ---------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------


def test_reference_mixing_is_splitmix64():
    # SplitMix64 seeded with 0 first outputs fmix(GOLDEN): this pins the hash function.
    assert fmix(GOLDEN) == 0xE220A8397B1DCDAF


def test_templates():
    assert ARC_TEMPLATES == tuple(TEMPLATES)


def test_three_word_sentence_matches_reference():
    vec = ArcVectorizer(min_word_count=1, n_features=2**20).fit(TRAIN)
    (X,) = vec.transform([SENTENCE])
    assert X.shape == (9, 2**20)
    assert X.dtype == np.float64
    assert_matches_reference(X, *SENTENCE, vec)
    # Features of single arcs, by name: the root arc to "barks" (row 2*3+2) ...
    strings = arc_feature_strings(*SENTENCE, set(vec.vocabulary_))
    root_barks = strings[2, 2]
    assert {"hw=<root>", "hp=<root>", "mw=barks", "hp+bp+mp=<root>|DET|VERB",
            "hp+bp+mp=<root>|NOUN|VERB&root:2", "hp-1+hp+mp+mp+1=<s>|<root>|VERB|</s>",
            "hw+hp+mw+mp=<root>|<root>|barks|VERB&root:2"} <= root_barks  # fmt: skip
    assert len(root_barks) == 35 + 2 * 2
    # ... and "dog" -> "The" (row 0*3+1): adjacent, head to the right.
    assert {"hw+mw=dog|the&left:0", "hp+hp+1+mp-1+mp=NOUN|VERB|<root>|DET"} <= strings[0, 1]
    assert X.getnnz(axis=1).tolist() == [35, 35, 37, 35, 37, 35, 37, 35, 39]


@pytest.mark.parametrize("n_features", [2**20, 1000, 61, 7])
def test_random_sentences_match_reference(n_features):
    rng = np.random.default_rng(n_features)
    train = _random_sentences(rng, 30)
    test = _random_sentences(rng, 6) + [(["zzz"] * 13, ["Q"] * 13)]  # unseen word and tag
    vec = ArcVectorizer(n_features=n_features).fit(train)
    matrices = vec.transform(test)
    stacked, offsets = vec.transform_stacked(test)
    for (words, tags), X in zip(test, matrices):
        assert_matches_reference(X, words, tags, vec)
    assert offsets.tolist() == np.cumsum([0] + [len(w) for w, _ in test]).tolist()
    assert (stacked != sp.vstack(matrices)).nnz == 0
    assert stacked.indices.max() < n_features


def test_layout_rows_are_modifier_major():
    words, tags = ["x", "y", "z", "w"], ["A", "B", "C", "D"]
    vec = ArcVectorizer(min_word_count=1).fit([(words, tags)])
    (X,) = vec.transform([(words, tags)])
    n = len(words)

    def has(row, string):
        return X[row, hash_string(string, vec)] == 1

    for m in range(n):
        for h in range(n):
            row = m * n + h
            if h == m:
                assert has(row, "hw=<root>") and has(row, f"mw={words[m]}")
                assert has(row, f"mp={tags[m]}&root:{bucket(m + 1)}")
            else:
                assert has(row, f"hw={words[h]}") and has(row, f"mw={words[m]}")
                direction = "right" if h < m else "left"
                assert has(row, f"hw+mw={words[h]}|{words[m]}&{direction}:{abs(h - m) - 1}")
    # Scores of the arcs, as the tree decoder reads them: diagonal = root arcs.
    w = np.zeros(vec.n_features)
    w[hash_string("hw=<root>", vec)] = 1.0
    scores = (X @ w).reshape(n, n)
    np.testing.assert_array_equal(scores, np.eye(n))


def test_conllu_sentences_match_reference():
    dev = load_ud_english_ewt("dev")[:200]
    vec = ArcVectorizer().fit(dev)
    long = next(s for s in dev if len(s["form"]) >= 14)  # distances above 10
    (X,) = vec.transform([long])
    assert_matches_reference(X, long["form"], long["upos"], vec)
    tuples = [(s["form"], s["upos"]) for s in dev[:20]]
    for a, b in zip(vec.transform(dev[:20]), vec.transform(tuples)):
        assert (a != b).nnz == 0


def test_unknown_words_and_lowercasing():
    train = [(["The", "the", "cat", "dog", "Dog"], ["D", "D", "N", "N", "N"])]
    vec = ArcVectorizer().fit(train)  # min_word_count=2: "cat" is rare
    assert vec.vocabulary_ == {"dog": 2, "the": 3}
    assert vec.pos_vocabulary_ == {"D": 4, "N": 5}
    same = [(["THE", "cat"], ["D", "N"]), (["the", "never-seen"], ["D", "N"])]
    a, b = vec.transform(same)
    assert (a != b).nnz == 0
    (c,) = vec.transform([(["the", "dog"], ["D", "N"])])
    assert (a != c).nnz > 0
    # An unseen tag is unknown too, but differs from known tags.
    d, e = vec.transform([(["the", "cat"], ["D", "Z"]), (["the", "cat"], ["D", "Y"])])
    assert (d != e).nnz == 0 and (d != a).nnz > 0


def test_min_word_count():
    train = [(["a", "a", "b"], ["X", "X", "X"])]
    assert set(ArcVectorizer(min_word_count=1).fit(train).vocabulary_) == {"a", "b"}
    assert set(ArcVectorizer(min_word_count=2).fit(train).vocabulary_) == {"a"}
    assert ArcVectorizer(min_word_count=3).fit(train).vocabulary_ == {}


def test_deterministic():
    rng = np.random.default_rng(0)
    train = _random_sentences(rng, 40)
    test = _random_sentences(rng, 10)
    a = ArcVectorizer().fit(train).transform(test)
    b = ArcVectorizer().fit(train[::-1]).transform(test)  # order of fit data is irrelevant
    c = clone(ArcVectorizer()).fit_transform(train)
    d = ArcVectorizer().fit(train).transform(train)
    for x, y in list(zip(a, b)) + list(zip(c, d)):
        np.testing.assert_array_equal(x.indptr, y.indptr)
        np.testing.assert_array_equal(x.indices, y.indices)
    # Columns of a few features, fixed for good: the same on every run and platform.
    vec = ArcVectorizer(min_word_count=1).fit([SENTENCE])
    assert vec.vocabulary_ == {"barks": 2, "dog": 3, "the": 4}
    assert [hash_string(s, vec) for s in ("bias=", "hw=<root>", "mw=dog&left:0")] == [
        fmix((19 * GOLDEN) & MASK) % 2**22,
        mix(fmix(GOLDEN), 1) % 2**22,
        mix(mix(fmix((4 * GOLDEN) & MASK), 3), 8) % 2**22,
    ]
    (X,) = vec.transform([SENTENCE])
    assert fmix((19 * GOLDEN) & MASK) % 2**22 in X[0].indices
    assert X[0].indices[:6].tolist() == [283646, 339193, 773242, 848116, 895007, 1134436]
    assert X[8].indices[-3:].tolist() == [3699330, 3798177, 4130335]


@pytest.mark.parametrize("n_features", [1, 5, 2**10, 2**31 - 1])
def test_n_features_respected(n_features):
    vec = ArcVectorizer(n_features=n_features, min_word_count=1).fit(TRAIN)
    assert vec.n_features_out_ == n_features
    for X in vec.transform(TRAIN):
        assert X.shape[1] == n_features
        assert X.indices.max() < n_features
        assert X.has_canonical_format
        assert X.getnnz(axis=1).max() <= min(n_features, 35 + 2 * 3)
    if n_features == 1:
        assert vec.transform(TRAIN)[0].toarray().tolist() == [[1.0]] * 9


def test_dtype_and_empty_sentences():
    vec = ArcVectorizer(dtype=np.float32, min_word_count=1).fit(TRAIN)
    X = vec.transform([([], []), SENTENCE, (np.array([], dtype=str), np.array([]))])
    assert [x.shape for x in X] == [(0, 2**22), (9, 2**22), (0, 2**22)]
    assert all(x.dtype == np.float32 for x in X)
    stacked, offsets = vec.transform_stacked([([], [])])
    assert stacked.shape == (0, 2**22) and offsets.tolist() == [0, 0]


def test_list_output_is_built_in_batches(monkeypatch):
    import skstruct.preprocessing._arc_vectorizer as module

    rng = np.random.default_rng(1)
    sentences = _random_sentences(rng, 25)
    vec = ArcVectorizer().fit(sentences)
    expected = vec.transform(sentences)
    monkeypatch.setattr(module, "_BATCH_ROWS", 50)
    for x, y in zip(vec.transform(sentences), expected, strict=True):
        assert (x != y).nnz == 0


def test_64_bit_indices_for_large_outputs(monkeypatch):
    import skstruct.preprocessing._arc_vectorizer as module

    rng = np.random.default_rng(2)
    sentences = _random_sentences(rng, 10)
    vec = ArcVectorizer(n_features=97).fit(sentences)  # collisions: rows are compacted
    expected, _ = vec.transform_stacked(sentences)
    monkeypatch.setattr(module, "_MAX_INT32_NNZ", 10)
    stacked, _ = vec.transform_stacked(sentences)
    np.testing.assert_array_equal(stacked.indptr, expected.indptr)
    np.testing.assert_array_equal(stacked.indices, expected.indices)
    assert stacked.has_canonical_format


@pytest.mark.parametrize(
    "X, message",
    [
        ("a sentence", "X must be a list of sentences"),
        ({"form": ["a"], "upos": ["X"]}, "X must be a list of sentences"),
        (42, "X must be a list of sentences"),
        ([], "X is empty"),
        ([{"form": ["a"]}], "sentence 0 has no 'form' or no 'upos' key"),
        ([SENTENCE, ["a", "b"]], "sentence 1 must be a dict"),
        ([SENTENCE, "a b"], "sentence 1 must be a dict"),
        ([(["a", "b"], ["X"])], "sentence 0 has 2 words but 1 tags"),
        ([([1, 2], ["X", "Y"])], "the words of sentence 0 must be a 1-d sequence of strings"),
        ([(["a"], [["X"]])], "the tags of sentence 0 must be a 1-d sequence of strings"),
        ([(np.array(["a", 3], dtype=object), ["X", "Y"])], "all words must be strings"),
        ([(["a"], np.array([None], dtype=object))], "all tags must be strings"),
    ],
)
def test_bad_input(X, message):
    vec = ArcVectorizer().fit(TRAIN)
    with pytest.raises(ValueError, match=message):
        vec.transform(X)
    with pytest.raises(ValueError, match=message):
        ArcVectorizer().fit(X)


def test_fit_needs_words():
    with pytest.raises(ValueError, match="X contains no words"):
        ArcVectorizer().fit([([], [])])


def test_not_fitted():
    with pytest.raises(NotFittedError):
        ArcVectorizer().transform(TRAIN)
    with pytest.raises(NotFittedError):
        ArcVectorizer().transform_stacked(TRAIN)


@pytest.mark.parametrize(
    "params", [{"min_word_count": 0}, {"n_features": 0}, {"n_features": 2**31}, {"n_features": 1.5}]
)
def test_bad_params(params):
    with pytest.raises(ValueError, match="parameter of ArcVectorizer must be"):
        ArcVectorizer(**params).fit(TRAIN)


def test_sklearn_clone_and_params():
    vec = ArcVectorizer(min_word_count=3, n_features=2**10, dtype=np.float32)
    assert vec.get_params() == {"min_word_count": 3, "n_features": 2**10, "dtype": np.float32}
    vec.fit(TRAIN)
    copy = clone(vec)
    assert copy.get_params() == vec.get_params()
    assert not hasattr(copy, "vocabulary_")
    copy.set_params(min_word_count=1)
    assert copy.fit(TRAIN).vocabulary_ != vec.vocabulary_
    assert "ArcVectorizer(dtype=<class 'numpy.float32'>" in repr(vec)
    assert not hasattr(vec, "get_feature_names_out")
    assert vec.__sklearn_tags__().input_tags.two_d_array is False


def test_pickles_that_name_the_former_module_still_load():
    vec = ArcVectorizer(n_features=2**10).fit(TRAIN)
    # Protocol 2 names a class by a text line "c<module>\n<name>\n": rename its module to
    # skstruct._dependency_features, where the class was defined before.
    data = pickle.dumps(vec, protocol=2)
    here = f"c{ArcVectorizer.__module__}\nArcVectorizer\n".encode()
    assert data.count(here) == 1
    restored = pickle.loads(data.replace(here, b"cskstruct._dependency_features\nArcVectorizer\n"))
    assert type(restored) is ArcVectorizer and restored.vocabulary_ == vec.vocabulary_
    for x, y in zip(restored.transform(TRAIN), vec.transform(TRAIN), strict=True):
        assert (x != y).nnz == 0
