"""pystruct's data loaders, in pystruct's form, on the data bundled with skstruct."""

import numpy as np

from ...datasets import load_letters as _load_letters
from ...datasets import load_multilabel

__all__ = ["load_letters", "load_scene", "load_yeast"]


def _object_array(items):
    array = np.empty(len(items), dtype=object)
    array[:] = list(items)
    return array


def load_letters():
    """The OCR letters as pystruct's ``load_letters`` returns them.

    The same 6,877 words as pystruct's copy (skstruct bundles it).

    Returns
    -------
    letters : dict
        ``data``: object array of n_words (n_letters_i, 128) float arrays of 0/1 pixels;
        ``labels``: object array of n_words int arrays (0..25 = a..z); ``folds``: int
        array of shape (n_words,), the fold (0..9) of every word; ``words``: the words.
        The arrays of arrays are object arrays, so that ``np.array(letters["data"])``
        and boolean indexing work as pystruct's examples use them.
    """
    bunch = _load_letters()
    return {"data": _object_array(bunch.data), "labels": _object_array(bunch.target),
            "folds": np.asarray(bunch.folds), "words": np.asarray(bunch.words)}


def _multilabel(name, path):
    train = load_multilabel(name, "train", path=path)
    test = load_multilabel(name, "test", path=path)
    return {"X_train": train.data, "X_test": test.data, "y_train": train.target,
            "y_test": test.target}


def load_scene(path=None):
    """MULAN's scene data set as pystruct's ``load_scene`` returns it.

    skstruct does not bundle scene (yeast and emotions are bundled): pass ``path``, the
    folder of MULAN's ``scene-train.arff``, ``scene-test.arff`` and ``scene.xml``
    (compressed or not), or use :func:`load_yeast`.

    Parameters
    ----------
    path : str or path-like, default=None

    Returns
    -------
    scene : dict
        ``X_train``, ``X_test`` (n_samples, 294) and ``y_train``, ``y_test``
        (n_samples, 6) 0/1 arrays.
    """
    if path is None:
        raise FileNotFoundError(
            "skstruct does not bundle the scene data set: pass load_scene(path=...), the "
            "folder of MULAN's scene-train.arff and scene-test.arff, or use "
            "skstruct.compat.pystruct.datasets.load_yeast() (bundled).")
    return _multilabel("scene", path)


def load_yeast(path=None):
    """MULAN's yeast data set (bundled) in the form of pystruct's ``load_scene``.

    Parameters
    ----------
    path : str or path-like, default=None
        A folder of MULAN's yeast files instead of the bundled copy.

    Returns
    -------
    yeast : dict
        ``X_train`` (1500, 103), ``X_test`` (917, 103), ``y_train``, ``y_test`` (14 labels).
    """
    return _multilabel("yeast", path)

