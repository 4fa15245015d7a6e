"""Bad files given to the CoNLL, CoNLL-U and letters loaders: errors that name the file."""

import gzip
import io
import re

import numpy as np
import pytest

from skstruct.datasets import (
    load_conll2000,
    load_letters,
    load_ud_english_ewt,
    read_conll,
    read_conllu,
)

CONLLU_LINE = "1\tGo\tgo\tVERB\tVB\t_\t0\troot\t_\t_\n"
LETTERS = dict(
    X=np.zeros((3, 128)), y=np.array([0, 1, 2]), word_idx=np.array([0, 0, 1]),
    position=np.array([0, 1, 0]), words=np.array(["ab", "c"]), word_fold=np.array([0, 1]),
)


@pytest.fixture
def npz_file(tmp_path):
    path = tmp_path / "data.npz"
    np.savez(path, a=np.arange(3))
    return path


def test_conll2000_names_a_binary_file_as_not_conll(npz_file):
    with pytest.raises(ValueError, match=re.escape(f"{npz_file} is not a CoNLL text file")
                       + ".*zip archive"):
        load_conll2000(path=npz_file)


def test_conllu_names_a_binary_file_as_not_conllu(npz_file):
    with pytest.raises(ValueError, match=re.escape(f"{npz_file} is not a CoNLL-U text file")):
        load_ud_english_ewt(path=npz_file)
    with pytest.raises(ValueError, match="is not a CoNLL-U text file"):
        read_conllu(npz_file)


def test_undecodable_text_suggests_the_encoding(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("caf\xe9 NN B-NP\n".encode("latin-1"))
    with pytest.raises(ValueError, match=re.escape(f"{path} is not a CoNLL text file: it is "
                                                   "not utf-8 text") + ".*encoding="):
        read_conll(path)
    assert read_conll(path, encoding="latin-1") == [[["caf\xe9"], ["NN"], ["B-NP"]]]


def test_gzip_content_without_gz_name_is_explained(tmp_path):
    path = tmp_path / "train.txt"
    path.write_bytes(gzip.compress(b"He PRP B-NP\n"))
    with pytest.raises(ValueError, match="it is gzip-compressed: give it a .gz name"):
        load_conll2000(path=path)


@pytest.mark.parametrize("reader", [read_conll, read_conllu])
def test_gz_file_that_is_not_gzip_names_the_file(tmp_path, reader):
    path = tmp_path / "data.txt.gz"
    path.write_text("He PRP B-NP\n")
    with pytest.raises(ValueError, match=re.escape(f"{path} is not a CoNLL")
                       + ".*not a valid gzip file"):
        reader(path)


def test_truncated_gzip_names_the_file(tmp_path):
    path = tmp_path / "data.conllu.gz"
    path.write_bytes(gzip.compress(CONLLU_LINE.encode() * 200)[:-20])
    with pytest.raises(ValueError, match=re.escape(str(path)) + ".*not a valid gzip file"):
        read_conllu(path)


def test_undecodable_stream_is_named_stream():
    stream = io.TextIOWrapper(io.BytesIO(b"\xff\xfe\x00 NN\n"), encoding="utf-8")
    with pytest.raises(ValueError, match="<stream> is not a CoNLL-U text file"):
        read_conllu(stream)


@pytest.mark.parametrize("loader", [load_conll2000, load_ud_english_ewt])
def test_loaders_reject_a_file_without_sentences(tmp_path, loader):
    path = tmp_path / "empty.txt"
    path.write_text("\n\n")
    with pytest.raises(ValueError, match=re.escape(f"{path} contains no sentences")):
        loader(path=path)


def test_conllu_errors_name_file_and_line(tmp_path):
    path = tmp_path / "bad.conllu"
    path.write_text("# text = Go\n" + CONLLU_LINE + "2\tnow\tnow\tADV\tRB\t_\tx\tadvmod\t_\t_\n")
    with pytest.raises(ValueError, match=re.escape(f"{path}, line 3: head 'x'")):
        load_ud_english_ewt(path=path)


def test_letters_rejects_a_text_file(tmp_path):
    path = tmp_path / "garbage.txt"
    path.write_text("hello\n")
    with pytest.raises(ValueError, match=re.escape(f"{path} is not a letters .npz file")):
        load_letters(path=path)


def test_letters_rejects_an_npy_file(tmp_path):
    path = tmp_path / "one.npy"
    np.save(path, np.zeros(3))
    with pytest.raises(ValueError, match="is not a letters .npz file: it holds a single array"):
        load_letters(path=path)


@pytest.mark.parametrize("missing", sorted(LETTERS))
def test_letters_names_a_missing_array(tmp_path, missing):
    path = tmp_path / "wrong.npz"
    np.savez(path, **{k: v for k, v in LETTERS.items() if k != missing})
    with pytest.raises(ValueError, match=re.escape(f"{path} lacks array {missing!r}")):
        load_letters(path=path)


@pytest.mark.parametrize("name, value, match", [
    ("y", np.array([0, 1]), "array 'y' has shape"),
    ("X", np.zeros(3), "array 'X' has shape"),
    ("word_fold", np.array([0]), "array 'word_fold' has shape"),
    ("word_idx", np.array([0, 0, 2]), "'word_idx' holds word numbers outside 0..1"),
    ("y", np.array([0, 1, 26]), "'y' holds labels outside 0..25"),
    ("position", np.array([0.0, 1.0, 0.0]), "'position' has dtype float64"),
    ("words", np.array(["ab", None], dtype=object), "is not a letters .npz file"),
])
def test_letters_checks_the_arrays(tmp_path, name, value, match):
    path = tmp_path / "bad.npz"
    np.savez(path, **{**LETTERS, name: value})
    with pytest.raises(ValueError, match=match):
        load_letters(path=path)


def test_letters_reads_a_valid_file(tmp_path):
    path = tmp_path / "ok.npz"
    np.savez(path, **LETTERS)
    data = load_letters(path=path)
    assert [x.shape for x in data.data] == [(2, 128), (1, 128)]
    assert [t.tolist() for t in data.target] == [[0, 1], [2]]


def test_missing_files_are_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_letters(path=tmp_path / "missing.npz")
    with pytest.raises(FileNotFoundError):
        load_conll2000(path=tmp_path / "missing.txt")
