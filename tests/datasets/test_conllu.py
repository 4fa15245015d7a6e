import gzip
import io
import re
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from skstruct.datasets._conllu import load_ud_english_ewt, read_conllu

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
needs_shared = pytest.mark.skipif(
    not SHARED.is_dir(), reason=f"shared benchmark data folder {SHARED} not found"
)


def _line(*fields):
    return "\t".join(map(str, fields)) + "\n"


def _word(i, form, upos, head, deprel, lemma=None, xpos="_"):
    return _line(i, form, lemma or form.lower(), upos, xpos, "_", head, deprel, "_", "_")


# Two sentences: comments (kept and dropped), a multiword token, an empty node.
TEXT = (
    "# newdoc id = doc1\n"
    "# sent_id = s1\n"
    "# text = I can't go.\n"
    + _word(1, "I", "PRON", 4, "nsubj", xpos="PRP")
    + _line("2-3", "can't", "_", "_", "_", "_", "_", "_", "_", "_")
    + _word(2, "ca", "AUX", 4, "aux", lemma="can", xpos="MD")
    + _word(3, "n't", "PART", 4, "advmod", lemma="not", xpos="RB")
    + _word(4, "go", "VERB", 0, "root", xpos="VB")
    + _line("4.1", "went", "go", "VERB", "VBD", "_", "_", "_", "4:conj", "_")
    + _word(5, ".", "PUNCT", 4, "punct", xpos=".")
    + "\n"
    + "# a comment without a value\n"
    + _word(1, "Hi", "INTJ", 0, "root")
    + "\n"
)


def test_read_conllu_sentences():
    first, second = read_conllu(io.StringIO(TEXT))
    assert first["sent_id"] == "s1"
    assert first["text"] == "I can't go."
    assert first["id"].tolist() == [1, 2, 3, 4, 5]
    assert first["form"].tolist() == ["I", "ca", "n't", "go", "."]
    assert first["lemma"].tolist() == ["i", "can", "not", "go", "."]
    assert first["upos"].tolist() == ["PRON", "AUX", "PART", "VERB", "PUNCT"]
    assert first["xpos"].tolist() == ["PRP", "MD", "RB", "VB", "."]
    assert first["head"].tolist() == [4, 4, 4, 0, 4]
    assert first["deprel"].tolist() == ["nsubj", "aux", "advmod", "root", "punct"]
    assert first["head"].dtype == first["id"].dtype == np.int64
    assert all(first[key].dtype.kind == "U" for key in ("form", "lemma", "upos", "xpos", "deprel"))
    # No sent_id or text comment: no such keys.
    assert set(second) == {"id", "form", "lemma", "upos", "xpos", "head", "deprel"}
    assert second["form"].tolist() == ["Hi"]
    assert second["head"].tolist() == [0]


@pytest.mark.parametrize(
    "text",
    [
        TEXT.rstrip("\n") + "\n",  # no blank line after the last sentence
        TEXT.rstrip("\n"),  # not even a final newline
        "\n\n" + TEXT.replace("\n\n", "\n\n\n") + "\n\n",  # extra blank lines
        TEXT.replace("\n", "\r\n"),  # Windows line endings
    ],
)
def test_read_conllu_blank_lines_and_line_endings(text):
    sentences = read_conllu(io.StringIO(text))
    assert [s["form"].tolist() for s in sentences] == [["I", "ca", "n't", "go", "."], ["Hi"]]
    assert sentences[0]["text"] == "I can't go."
    assert sentences[1]["deprel"].tolist() == ["root"]


def test_read_conllu_fields_with_spaces():
    text = "# text = New York = NYC\n" + _word(1, "New York", "PROPN", 0, "root", lemma="New York")
    (sentence,) = read_conllu(io.StringIO(text))
    assert sentence["form"].tolist() == ["New York"]
    assert sentence["text"] == "New York = NYC"


def test_read_conllu_empty_input():
    assert read_conllu(io.StringIO("")) == []
    assert read_conllu(io.StringIO("# sent_id = 1\n\n\n")) == []


NINE_FIELDS = _line(2, "a", "a", "X", "_", "_", 1, "dep", "_")


@pytest.mark.parametrize(
    "line, message",
    [
        (NINE_FIELDS, "expected 10 tab-separated fields, got 9"),
        ("2 a a X _ _ 1 dep _ _\n", "expected 10 tab-separated fields, got 1"),
        (_line(2, "a", "a", "X", "_", "_", "_", "dep", "_", "_"), "head '_' is not an integer"),
        (_line(2, "a", "a", "X", "_", "_", "x1", "dep", "_", "_"), "head 'x1' is not an integer"),
        (_line("two", "a", "a", "X", "_", "_", 1, "dep", "_", "_"), "word id 'two' is not an"),
        (_line(2, "a", "a", "X", "_", "_", 5, "dep", "_", "_"), "head 5 is outside 0..2"),
        (_line(2, "a", "a", "X", "_", "_", -1, "dep", "_", "_"), "head -1 is outside 0..2"),
        (_line(3, "a", "a", "X", "_", "_", 1, "dep", "_", "_"), "expected word id 2, got 3"),
    ],
)
def test_read_conllu_malformed_line_names_line_number(line, message):
    text = "# sent_id = 1\n" + _word(1, "ok", "X", 0, "root") + "\n# sent_id = 2\n"
    text += _word(1, "b", "X", 0, "root") + line
    with pytest.raises(ValueError, match=re.escape(f"<stream>, line 6: {message}")):
        read_conllu(io.StringIO(text))


@pytest.mark.parametrize("name, opener", [("data.conllu", open), ("data.conllu.gz", gzip.open)])
def test_read_conllu_paths(tmp_path, name, opener):
    path = tmp_path / name
    with opener(path, "wt", encoding="utf-8") as f:
        f.write(_word(1, "naïve", "ADJ", 0, "root") + "\n")
        f.write(_word(1, "x", "X", 0, "root", lemma="y"))
    sentences = read_conllu(path)
    assert [s["form"].tolist() for s in sentences] == [["naïve"], ["x"]]
    assert [s["form"].tolist() for s in read_conllu(str(path))] == [["naïve"], ["x"]]
    with opener(path, "wt", encoding="utf-8") as f:
        f.write(_word(1, "ok", "X", 0, "root") + "1\tbad\n")
    with pytest.raises(ValueError, match=re.escape(f"{path}, line 2: expected 10")):
        read_conllu(path)


def test_read_conllu_leaves_stream_open():
    stream = io.StringIO(TEXT)
    read_conllu(stream)
    assert not stream.closed


@pytest.mark.parametrize(
    "subset, n_sentences, n_words",
    [("train", 12544, 204577), ("dev", 2001, 25147), ("test", 2077, 25094)],
)
def test_load_ud_english_ewt_counts(subset, n_sentences, n_words):
    sentences = load_ud_english_ewt(subset)
    assert len(sentences) == n_sentences
    lengths = np.array([len(s["form"]) for s in sentences])
    assert lengths.sum() == n_words
    for key in ("id", "lemma", "upos", "xpos", "head", "deprel"):
        assert [len(s[key]) for s in sentences] == lengths.tolist()
    # Every sentence is a tree over its words: one root, heads within the sentence.
    assert all((s["head"] == 0).sum() == 1 for s in sentences)
    assert all(s["head"].max() <= len(s["head"]) for s in sentences)
    assert all(s["id"].tolist() == list(range(1, len(s["id"]) + 1)) for s in sentences)
    assert all("sent_id" in s and "text" in s for s in sentences)
    tags = set(np.concatenate([s["upos"] for s in sentences]).tolist())
    assert tags <= {
        "ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART",
        "PRON", "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X",
    }  # fmt: skip


def test_load_ud_english_ewt_content():
    first = load_ud_english_ewt("train")[0]
    assert first["sent_id"].endswith("-0001")
    assert first["form"][:3].tolist() == ["Al", "-", "Zaman"]
    assert first["upos"][:3].tolist() == ["PROPN", "PUNCT", "PROPN"]
    assert first["head"][:4].tolist() == [0, 3, 1, 7]
    assert first["deprel"][0] == "root"


def test_ud_english_ewt_license_ships_with_data():
    folder = resources.files("skstruct.datasets") / "data" / "ud_english_ewt"
    license_text = (folder / "LICENSE.txt").read_text(encoding="utf-8")
    assert "Attribution-ShareAlike 4.0 International" in license_text
    assert "UD_English-EWT" in (folder / "README.md").read_text(encoding="utf-8")


def test_load_ud_english_ewt_bad_subset():
    with pytest.raises(ValueError, match="subset must be 'train', 'dev' or 'test'"):
        load_ud_english_ewt("validation")


@needs_shared
def test_load_ud_english_ewt_path():
    bundled = load_ud_english_ewt("test")
    folder = SHARED / "ud_english_ewt"
    for path in (folder, str(folder / "en_ewt-ud-test.conllu.gz")):
        loaded = load_ud_english_ewt("test", path=path)
        assert len(loaded) == len(bundled)
        assert all(
            a["form"].tolist() == b["form"].tolist() and (a["head"] == b["head"]).all()
            for a, b in zip(loaded, bundled)
        )
