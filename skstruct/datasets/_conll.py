"""Reader for CoNLL column files and the CoNLL-2000 chunking loader."""

import gzip
import os
import zlib
from contextlib import nullcontext
from importlib import resources
from pathlib import Path

import numpy as np
from sklearn.utils import Bunch

CONLL2000_DESCR = """\
CoNLL-2000 text chunking
------------------------

Sentences from the Wall Street Journal (Penn Treebank sections 15-18 for
training, section 20 for testing), one token per line with three columns:
the word, its part-of-speech tag and its chunk tag in the IOB2 scheme
(22 chunk tags such as ``B-NP``, ``I-VP`` and ``O`` in the training set).

=================  ==========  =========
subset             sentences   tokens
=================  ==========  =========
train              8,936       211,727
test               2,012       47,377
=================  ==========  =========

Reference: Tjong Kim Sang and Buchholz, "Introduction to the CoNLL-2000
Shared Task: Chunking", CoNLL 2000. Distributed freely for research.
"""


def _open_text(path_or_file, encoding):
    """Return a context manager giving the text stream, and the name used in errors."""
    if hasattr(path_or_file, "read"):
        return nullcontext(path_or_file), getattr(path_or_file, "name", "<stream>")
    path = os.fspath(path_or_file)
    opener = gzip.open if path.endswith(".gz") else open
    return opener(path, "rt", encoding=encoding), path


#: Leading bytes of binary formats that are mistaken for text files.
_MAGIC = (
    (b"\x1f\x8b", "it is gzip-compressed: give it a .gz name"),
    (b"PK\x03\x04", "it is a zip archive, such as a NumPy .npz file"),
    (b"\x93NUMPY", "it is a NumPy .npy file"),
)


def _sniff(path_or_file):
    """What a file that failed to decode looks like, for the error message."""
    if hasattr(path_or_file, "read"):
        return None
    try:
        with open(path_or_file, "rb") as file:
            head = file.read(8)
    except OSError:
        return None
    return next((what for magic, what in _MAGIC if head.startswith(magic)), None)


def _read_text(path_or_file, encoding, parse, kind):
    """``parse(lines, name)`` on the lines of a text file, plain or gzip-compressed.

    A file that is not text in ``encoding``, or a ``.gz`` file that is not valid gzip,
    raises a ValueError naming the file and saying what kind of file was expected.
    """
    stream, name = _open_text(path_or_file, encoding)
    try:
        with stream as lines:
            return parse(lines, name)
    except UnicodeDecodeError as exc:
        what = _sniff(path_or_file) or (
            f"it is not {encoding} text ({exc.reason}); pass encoding=... if it is text "
            "in another encoding"
        )
        raise ValueError(f"{name} is not a {kind} text file: {what}.") from exc
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise ValueError(
            f"{name} is not a {kind} text file: it is not a valid gzip file ({exc})."
        ) from exc


def _parse_conll(lines, name, n_fields, comment, sep):
    """Split the lines of a CoNLL file into fields, grouped by sentence."""
    sentences, rows = [], []
    for lineno, line in enumerate(lines, 1):
        if line.isspace():
            if rows:
                sentences.append(rows)
                rows = []
            continue
        if comment is not None and line.startswith(comment):
            continue
        fields = line.rstrip("\r\n").split(sep)
        if n_fields is None:
            n_fields = len(fields)
        elif len(fields) != n_fields:
            raise ValueError(
                f"{name}, line {lineno}: expected {n_fields} fields, "
                f"got {len(fields)}: {line.rstrip()!r}"
            )
        rows.append(fields)
    if rows:
        sentences.append(rows)
    return sentences


def read_conll(path_or_file, *, columns=None, comment="#", sep=None, encoding="utf-8"):
    """Read a CoNLL-style column file into a list of sentences.

    One token per line, one column per field, a blank line between sentences.

    Parameters
    ----------
    path_or_file : str, path-like or text file object
        Path to a plain or gzip-compressed (``.gz``) file, or an open text
        stream (which is not closed).
    columns : sequence of str, default=None
        Column names. When given, every token line must have exactly
        ``len(columns)`` fields; otherwise all token lines must have as many
        fields as the first one.
    comment : str or None, default="#"
        Lines starting with this prefix are skipped (CoNLL-U comments). Use
        ``None`` for files without comments whose tokens may start with the
        prefix, such as CoNLL-2000 (which has ``#`` tokens).
    sep : str, default=None
        Field separator; ``None`` splits on runs of whitespace. Use ``"\\t"``
        for CoNLL-U, whose fields may contain spaces.
    encoding : str, default="utf-8"
        Encoding used when opening a path.

    Returns
    -------
    sentences : list
        One item per sentence: a dict mapping each column name to the list of
        its values (length n_tokens_i) when ``columns`` is given, else a list
        of n_columns lists of length n_tokens_i.

    Raises
    ------
    ValueError
        If a token line has the wrong number of fields (the message names the
        file and the line number), or the file is not text in ``encoding`` or a
        ``.gz`` file is not gzip-compressed (the message names the file).

    Examples
    --------
    >>> import io
    >>> from skstruct.datasets import read_conll
    >>> text = "He PRP B-NP\\nran VBD B-VP\\n\\nStop VB B-VP\\n"
    >>> read_conll(io.StringIO(text), columns=["word", "pos", "chunk"])[1]
    {'word': ['Stop'], 'pos': ['VB'], 'chunk': ['B-VP']}
    >>> read_conll(io.StringIO(text))[0]
    [['He', 'ran'], ['PRP', 'VBD'], ['B-NP', 'B-VP']]
    """
    n_fields = None if columns is None else len(columns)
    sentences = _read_text(
        path_or_file,
        encoding,
        lambda lines, name: _parse_conll(lines, name, n_fields, comment, sep),
        "CoNLL",
    )
    transposed = (list(map(list, zip(*rows))) for rows in sentences)
    if columns is None:
        return list(transposed)
    return [dict(zip(columns, cols)) for cols in transposed]


def _conll2000_path(subset, path):
    if path is None:
        return resources.files(__package__) / "data" / f"conll2000-{subset}.txt.gz"
    path = Path(path)
    return path / f"{subset}.txt.gz" if path.is_dir() else path


def load_conll2000(subset="train", *, path=None):
    """Load the CoNLL-2000 chunking data set (word, POS tag, chunk tag).

    =================  ==========  =========
    subset             sentences   tokens
    =================  ==========  =========
    train              8,936       211,727
    test               2,012       47,377
    =================  ==========  =========

    Parameters
    ----------
    subset : {"train", "test"}, default="train"
        Which split to load.
    path : str or path-like, default=None
        Read this file (plain or ``.gz``) instead of the copy bundled with the
        package, or, if it is a directory such as ``shared/data/conll2000``,
        the file ``<subset>.txt.gz`` inside it.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        words : list of n_sentences lists of str
            The tokens of each sentence.
        pos : list of n_sentences lists of str
            The part-of-speech tags.
        chunks : list of n_sentences lists of str
            The IOB2 chunk tags.
        target : list of n_sentences ndarray of shape (n_tokens_i,), dtype=object
            The chunk tags as arrays, the labels for sequence learners.
        DESCR : str
            Description of the data set.

    Examples
    --------
    >>> from skstruct.datasets import load_conll2000
    >>> data = load_conll2000("test")
    >>> len(data.words)
    2012
    >>> list(zip(data.words[0], data.pos[0], data.chunks[0]))[:2]
    [('Rockwell', 'NNP', 'B-NP'), ('International', 'NNP', 'I-NP')]
    """
    if subset not in ("train", "test"):
        raise ValueError(f"subset must be 'train' or 'test', got {subset!r}")
    with resources.as_file(_conll2000_path(subset, path)) as file:
        sentences = read_conll(file, columns=("words", "pos", "chunks"), comment=None)
    if not sentences:
        raise ValueError(f"{file} contains no sentences.")
    words, pos, chunks = ([s[key] for s in sentences] for key in ("words", "pos", "chunks"))
    target = [np.array(c, dtype=object) for c in chunks]
    return Bunch(words=words, pos=pos, chunks=chunks, target=target, DESCR=CONLL2000_DESCR)
