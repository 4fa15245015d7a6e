import gzip
import io
import re
from pathlib import Path

import numpy as np
import pytest

from skstruct.datasets import load_conll2000, read_conll

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
needs_shared = pytest.mark.skipif(
    not SHARED.is_dir(), reason=f"shared benchmark data folder {SHARED} not found"
)


@pytest.fixture(scope="module")
def train():
    return load_conll2000("train")


@pytest.mark.parametrize(
    "subset, n_sentences, n_tokens, n_tags",
    [("train", 8936, 211727, 22), ("test", 2012, 47377, 19)],
)
def test_load_conll2000_counts(subset, n_sentences, n_tokens, n_tags):
    data = load_conll2000(subset)
    assert len(data.words) == len(data.pos) == len(data.chunks) == len(data.target) == n_sentences
    lengths = [len(w) for w in data.words]
    assert sum(lengths) == n_tokens
    assert [len(p) for p in data.pos] == [len(c) for c in data.chunks] == lengths
    tags = {tag for chunks in data.chunks for tag in chunks}
    assert len(tags) == n_tags
    assert all(re.fullmatch(r"O|[BI]-[A-Z]+", tag) for tag in tags)
    assert "CoNLL-2000" in data.DESCR


def test_load_conll2000_content(train):
    assert list(zip(train.words[0], train.pos[0], train.chunks[0]))[:3] == [
        ("Confidence", "NN", "B-NP"),
        ("in", "IN", "B-PP"),
        ("the", "DT", "B-NP"),
    ]
    assert train.words[-1][-1] == "."
    # '#' is a token in the WSJ text, so it must not be read as a comment.
    assert sum(w.count("#") for w in train.words) > 0


def test_load_conll2000_target_mirrors_chunks(train):
    assert all(t.ndim == 1 and t.dtype == object for t in train.target)
    assert all(t.tolist() == c for t, c in zip(train.target, train.chunks))


@needs_shared
def test_load_conll2000_full_file_matches_bundled(train):
    full = load_conll2000("train", path=SHARED / "conll2000" / "train.txt.gz")
    assert (full.words, full.pos, full.chunks) == (train.words, train.pos, train.chunks)


@needs_shared
def test_load_conll2000_from_directory():
    bundled = load_conll2000("test")
    full = load_conll2000("test", path=str(SHARED / "conll2000"))
    assert (full.words, full.pos, full.chunks) == (bundled.words, bundled.pos, bundled.chunks)


def test_load_conll2000_bad_subset():
    with pytest.raises(ValueError, match="subset must be 'train' or 'test'"):
        load_conll2000("dev")


def test_read_conll_columns_and_comments():
    text = "# sent 1\nThe DT B-NP\ncat NN I-NP\n\n# sent 2\n# more\nSat VBD B-VP\n"
    sentences = read_conll(io.StringIO(text), columns=["word", "pos", "chunk"])
    assert sentences == [
        {"word": ["The", "cat"], "pos": ["DT", "NN"], "chunk": ["B-NP", "I-NP"]},
        {"word": ["Sat"], "pos": ["VBD"], "chunk": ["B-VP"]},
    ]
    assert read_conll(io.StringIO(text)) == [
        [["The", "cat"], ["DT", "NN"], ["B-NP", "I-NP"]],
        [["Sat"], ["VBD"], ["B-VP"]],
    ]


def test_read_conll_comment_none_keeps_hash_tokens():
    text = "# # B-NP\n5 CD I-NP\n"
    expected = [[["#", "5"], ["#", "CD"], ["B-NP", "I-NP"]]]
    assert read_conll(io.StringIO(text), comment=None) == expected
    assert read_conll(io.StringIO(text)) == [[["5"], ["CD"], ["I-NP"]]]


@pytest.mark.parametrize(
    "text",
    [
        "\n\na x\nb y\n\n\n\nc z\n\n\n",  # leading, repeated and trailing blank lines
        "a x\nb y\n \t\nc z",  # whitespace-only separator, no trailing newline
        "a x\r\nb y\r\n\r\nc z\r\n",  # Windows line endings
    ],
)
def test_read_conll_irregular_blank_lines(text):
    assert read_conll(io.StringIO(text), columns=["w", "t"]) == [
        {"w": ["a", "b"], "t": ["x", "y"]},
        {"w": ["c"], "t": ["z"]},
    ]


def test_read_conll_empty_input():
    assert read_conll(io.StringIO("")) == []
    assert read_conll(io.StringIO("\n\n# only a comment\n")) == []


def test_read_conll_sep_keeps_spaces_in_fields():
    text = "1\tNew York\tPROPN\n2\tis\tAUX\n"
    expected = [[["1", "2"], ["New York", "is"], ["PROPN", "AUX"]]]
    assert read_conll(io.StringIO(text), sep="\t") == expected
    with pytest.raises(ValueError, match="line 1: expected 3 fields, got 4"):
        read_conll(io.StringIO(text), columns=["id", "form", "upos"])


def test_read_conll_wrong_field_count_names_stream_and_line():
    text = "a x\nb y\n\nc z extra\n"
    with pytest.raises(ValueError, match=r"<stream>, line 4: expected 2 fields, got 3"):
        read_conll(io.StringIO(text))
    with pytest.raises(ValueError, match=r"line 1: expected 3 fields, got 2"):
        read_conll(io.StringIO(text), columns=["w", "p", "c"])


@pytest.mark.parametrize("name, opener", [("data.txt", open), ("data.txt.gz", gzip.open)])
def test_read_conll_paths(tmp_path, name, opener):
    path = tmp_path / name
    with opener(path, "wt", encoding="utf-8") as f:
        f.write("naïve JJ B-ADJP\n\nx NN B-NP\ny NN\n")
    with pytest.raises(ValueError, match=re.escape(f"{path}, line 4: expected 3 fields, got 2")):
        read_conll(path)
    with opener(path, "wt", encoding="utf-8") as f:
        f.write("naïve JJ B-ADJP\n\nx NN B-NP\n")
    expected = [[["naïve"], ["JJ"], ["B-ADJP"]], [["x"], ["NN"], ["B-NP"]]]
    assert read_conll(path) == read_conll(str(path)) == expected


def test_read_conll_leaves_stream_open():
    stream = io.StringIO("a b\n")
    read_conll(stream)
    assert not stream.closed


@needs_shared
def test_read_conll_conllu_file():
    path = SHARED / "ud_english_ewt" / "en_ewt-ud-dev.conllu.gz"
    sentences = read_conll(path, sep="\t")
    assert len(sentences) == 2001
    assert all(len(columns) == 10 for columns in sentences)
    # Word lines have integer ids; multiword-token (3-4) and empty-node (5.1) lines do not.
    n_words = sum(np.char.isdigit(np.array(columns[0])).sum() for columns in sentences)
    assert n_words == 25147
