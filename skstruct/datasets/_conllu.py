"""Reader for CoNLL-U dependency treebanks and the UD English EWT loader."""

from importlib import resources
from pathlib import Path

import numpy as np

from ._conll import _read_text

__all__ = ["load_ud_english_ewt", "read_conllu"]

#: CoNLL-U columns: ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC.
_N_COLUMNS = 10
#: String columns kept before HEAD, with their index in a word line (DEPREL is 7).
_STRING_COLUMNS = (("form", 1), ("lemma", 2), ("upos", 3), ("xpos", 4))
_SUBSETS = ("train", "dev", "test")


def _sentence(rows, heads, ids, linenos, meta, name):
    """The dict of one sentence from its word lines (already split into fields)."""
    n_words = len(rows)
    for position, (word_id, head) in enumerate(zip(ids, heads), 1):
        if word_id != position:
            raise ValueError(
                f"{name}, line {linenos[position - 1]}: expected word id {position}, "
                f"got {word_id} (word ids must be 1, 2, ... in order)"
            )
        if not 0 <= head <= n_words:
            raise ValueError(
                f"{name}, line {linenos[position - 1]}: head {head} is outside 0..{n_words} "
                "(0 is the root, other heads are word ids of the same sentence)"
            )
    sentence = dict(meta)
    sentence["id"] = np.array(ids, dtype=np.int64)
    for key, index in _STRING_COLUMNS:
        sentence[key] = np.array([row[index] for row in rows], dtype=str)
    sentence["head"] = np.array(heads, dtype=np.int64)
    sentence["deprel"] = np.array([row[7] for row in rows], dtype=str)
    return sentence


def _parse_conllu(lines, name):
    sentences = []
    rows, heads, ids, linenos, meta = [], [], [], [], {}
    for lineno, line in enumerate(lines, 1):
        if not line or line.isspace():
            if rows:
                sentences.append(_sentence(rows, heads, ids, linenos, meta, name))
            rows, heads, ids, linenos, meta = [], [], [], [], {}
            continue
        if line.startswith("#"):
            key, sep, value = line[1:].partition("=")
            key = key.strip()
            if sep and key in ("sent_id", "text"):
                meta[key] = value.strip()
            continue
        fields = line.rstrip("\r\n").split("\t")
        if len(fields) != _N_COLUMNS:
            raise ValueError(
                f"{name}, line {lineno}: expected {_N_COLUMNS} tab-separated fields, "
                f"got {len(fields)}: {line.rstrip()!r}"
            )
        token_id = fields[0]
        if "-" in token_id or "." in token_id:
            continue  # multiword token range (3-4) or empty node (3.1)
        try:
            word_id = int(token_id)
        except ValueError:
            raise ValueError(
                f"{name}, line {lineno}: word id {token_id!r} is not an integer, "
                "a range such as 3-4 or a decimal such as 3.1"
            ) from None
        try:
            head = int(fields[6])
        except ValueError:
            raise ValueError(
                f"{name}, line {lineno}: head {fields[6]!r} is not an integer"
            ) from None
        rows.append(fields)
        heads.append(head)
        ids.append(word_id)
        linenos.append(lineno)
    if rows:
        sentences.append(_sentence(rows, heads, ids, linenos, meta, name))
    return sentences


def read_conllu(path_or_file, *, encoding="utf-8"):
    """Read a CoNLL-U dependency treebank into a list of sentences.

    One word per line with ten tab-separated fields (ID, FORM, LEMMA, UPOS,
    XPOS, FEATS, HEAD, DEPREL, DEPS, MISC), a blank line after each sentence.
    Multiword token lines (ids such as ``3-4``) and empty nodes (ids such as
    ``3.1``) are skipped, so a sentence holds its syntactic words only.
    Comment lines (starting with ``#``) are skipped, except that the values of
    ``# sent_id = ...`` and ``# text = ...`` are kept.

    Parameters
    ----------
    path_or_file : str, path-like or text file object
        Path to a plain or gzip-compressed (``.gz``) file, or an open text
        stream (which is not closed).
    encoding : str, default="utf-8"
        Encoding used when opening a path.

    Returns
    -------
    sentences : list of dict
        One dict per sentence of n words, with the keys

        id : ndarray of shape (n,), dtype=int64
            The word ids, ``1, ..., n``.
        form, lemma, upos, xpos, deprel : ndarray of shape (n,), dtype=str
            The word forms, lemmas, universal and language-specific
            part-of-speech tags and dependency relations (``"_"`` where the
            file leaves a field unspecified).
        head : ndarray of shape (n,), dtype=int64
            The head of each word as in the file: ``0`` for the root, else the
            1-based id of the head word.
        sent_id, text : str
            The sentence id and text, only if the file gives them.

    Raises
    ------
    ValueError
        If a word line does not have ten tab-separated fields, its id or head
        is not an integer, the ids of a sentence are not ``1, 2, ...`` in
        order, or a head is not a word of the sentence (the message names the
        file and the line number); or if the file is not text in ``encoding``
        or a ``.gz`` file is not gzip-compressed (the message names the file).

    Examples
    --------
    >>> import io
    >>> from skstruct.datasets import read_conllu
    >>> text = (
    ...     "# text = Don't go\\n"
    ...     "1-2\\tDon't\\t_\\t_\\t_\\t_\\t_\\t_\\t_\\t_\\n"
    ...     "1\\tDo\\tdo\\tAUX\\tVBP\\t_\\t3\\taux\\t_\\t_\\n"
    ...     "2\\tn't\\tnot\\tPART\\tRB\\t_\\t3\\tadvmod\\t_\\t_\\n"
    ...     "3\\tgo\\tgo\\tVERB\\tVB\\t_\\t0\\troot\\t_\\t_\\n"
    ... )
    >>> sentence = read_conllu(io.StringIO(text))[0]
    >>> sentence["form"].tolist(), sentence["head"].tolist(), sentence["text"]
    (['Do', "n't", 'go'], [3, 3, 0], "Don't go")
    """
    return _read_text(path_or_file, encoding, _parse_conllu, "CoNLL-U")


def _ud_english_ewt_path(subset, path):
    filename = f"en_ewt-ud-{subset}.conllu.gz"
    if path is None:
        return resources.files(__package__) / "data" / "ud_english_ewt" / filename
    path = Path(path)
    return path / filename if path.is_dir() else path


def load_ud_english_ewt(subset="train", *, path=None):
    """Load the Universal Dependencies English Web Treebank (UD EWT v2.15).

    Dependency trees of English web text (weblogs, newsgroups, emails,
    reviews and Yahoo! answers), with the standard split:

    =================  ==========  =========
    subset             sentences   words
    =================  ==========  =========
    train              12,544      204,577
    dev                2,001       25,147
    test               2,077       25,094
    =================  ==========  =========

    Words are syntactic words: multiword tokens and empty nodes are left out
    (see :func:`read_conllu`).

    The treebank is distributed under the Creative Commons
    Attribution-ShareAlike 4.0 International license (CC BY-SA 4.0), copyright
    2013-2021 The Board of Trustees of The Leland Stanford Junior University;
    the license and the treebank's README ship with the package in
    ``skstruct/datasets/data/ud_english_ewt/``. Source:
    https://github.com/UniversalDependencies/UD_English-EWT.

    Parameters
    ----------
    subset : {"train", "dev", "test"}, default="train"
        Which split to load.
    path : str or path-like, default=None
        Read the file ``en_ewt-ud-<subset>.conllu.gz`` in this directory
        instead of the copy bundled with the package; if ``path`` is a file,
        read that file.

    Returns
    -------
    sentences : list of dict
        One dict of arrays per sentence, as returned by :func:`read_conllu`
        (keys ``"id"``, ``"form"``, ``"lemma"``, ``"upos"``, ``"xpos"``,
        ``"head"``, ``"deprel"``, ``"sent_id"`` and ``"text"``).

    Examples
    --------
    >>> from skstruct.datasets import load_ud_english_ewt
    >>> sentences = load_ud_english_ewt("dev")
    >>> len(sentences), sum(len(s["form"]) for s in sentences)
    (2001, 25147)
    >>> sentences[0]["form"][:3].tolist(), sentences[0]["head"][:3].tolist()
    (['From', 'the', 'AP'], [3, 3, 4])
    """
    if subset not in _SUBSETS:
        raise ValueError(f"subset must be 'train', 'dev' or 'test', got {subset!r}")
    with resources.as_file(_ud_english_ewt_path(subset, path)) as file:
        sentences = read_conllu(file)
    if not sentences:
        raise ValueError(f"{file} contains no sentences.")
    return sentences
