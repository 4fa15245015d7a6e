"""seqlearn's ``load_conll``: read a CoNLL column file into seqlearn's stacked form."""

from contextlib import nullcontext
from itertools import groupby

import numpy as np
from sklearn.feature_extraction import FeatureHasher

__all__ = ["load_conll"]


def load_conll(f, features, n_features=(2 ** 16), split=False):
    """Read a CoNLL file, extract token features and hash them (seqlearn's loader).

    Sequences are blocks of non-empty lines; the last whitespace-separated field of a
    line is its label, the rest its observation.

    Parameters
    ----------
    f : str, path-like or iterable of lines (a file, ``fileinput.input(...)``)
    features : callable
        ``features(observations, i)`` returns an iterable of the string features of
        token ``i`` of a sequence.
    n_features : int, default=2**16
        Columns of the hashed matrix (:class:`~sklearn.feature_extraction.FeatureHasher`).
    split : bool, default=False
        Split every observation on whitespace (for files with extra columns).

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_tokens, n_features)
    y : ndarray of str of shape (n_tokens,)
    lengths : ndarray of int32 of shape (n_sequences,)
    """
    hasher = FeatureHasher(n_features=n_features, input_type="string")
    labels, lengths = [], []
    opened = open(f) if isinstance(f, (str, bytes)) or hasattr(f, "__fspath__") \
        else nullcontext(f)
    with opened as lines:
        X = hasher.transform(_token_features(lines, features, labels, lengths, split))
    return X.tocsr(), np.asarray(labels), np.asarray(lengths, dtype=np.int32)


def _token_features(lines, features, labels, lengths, split):
    stripped = (line.strip() for line in lines)
    for nonempty, group in groupby(stripped, bool):
        if not nonempty:
            continue
        observations, tags = zip(*(line.rsplit(None, 1) for line in group))
        if split:
            observations = [obs.split() for obs in observations]
        labels.extend(tags)
        lengths.append(len(tags))
        for i in range(len(observations)):
            yield features(observations, i)
