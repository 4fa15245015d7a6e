"""sklearn-crfsuite's metrics: scikit-learn's classification metrics on flattened labels.

Every ``flat_*`` function concatenates the label sequences of ``y_true`` and ``y_pred``
(lists of sequences of labels, e.g. what ``CRF.predict`` returns) and passes the two
flat lists to the scikit-learn function of the same name, with the other arguments
unchanged. Chunk-level (span) scores, as conlleval computes them, are in
:mod:`skstruct.metrics` (:func:`~skstruct.metrics.span_f1_score`).
"""

from functools import wraps
from itertools import chain

from sklearn import metrics as _sk

__all__ = [
    "flat_accuracy_score",
    "flat_classification_report",
    "flat_f1_score",
    "flat_fbeta_score",
    "flat_precision_score",
    "flat_recall_score",
    "sequence_accuracy_score",
]


def _flatten(y, name):
    """The labels of all sequences of ``y``, one after the other."""
    if isinstance(y, (str, bytes)) or not hasattr(y, "__iter__"):
        raise TypeError(f"{name} must be a list of label sequences, got {type(y).__name__}.")
    try:
        return list(chain.from_iterable(y))
    except TypeError:
        raise TypeError(
            f"{name} must be a list of label sequences (e.g. [['B-NP', 'I-NP'], ['O']]); "
            "one of its items is not a sequence."
        ) from None


def _flattens_y(function):
    @wraps(function)
    def wrapper(y_true, y_pred, *args, **kwargs):
        return function(_flatten(y_true, "y_true"), _flatten(y_pred, "y_pred"),
                        *args, **kwargs)
    return wrapper


@_flattens_y
def flat_accuracy_score(y_true, y_pred):
    """Fraction of tokens labelled correctly (all sequences flattened).

    Parameters
    ----------
    y_true, y_pred : list of sequences of labels
        True and predicted labels, the same lengths.

    Returns
    -------
    float

    Examples
    --------
    >>> from skstruct.compat.sklearn_crfsuite.metrics import flat_accuracy_score
    >>> flat_accuracy_score([["B", "I"], ["O"]], [["B", "O"], ["O"]])
    0.666...
    """
    return _sk.accuracy_score(y_true, y_pred)


@_flattens_y
def flat_precision_score(y_true, y_pred, **kwargs):
    """:func:`sklearn.metrics.precision_score` of the flattened labels (``kwargs``: its
    ``labels``, ``average``, ...)."""
    return _sk.precision_score(y_true, y_pred, **kwargs)


@_flattens_y
def flat_recall_score(y_true, y_pred, **kwargs):
    """:func:`sklearn.metrics.recall_score` of the flattened labels."""
    return _sk.recall_score(y_true, y_pred, **kwargs)


@_flattens_y
def flat_f1_score(y_true, y_pred, **kwargs):
    """:func:`sklearn.metrics.f1_score` of the flattened labels.

    Examples
    --------
    >>> from skstruct.compat.sklearn_crfsuite.metrics import flat_f1_score
    >>> flat_f1_score([["B", "I"], ["O"]], [["B", "O"], ["O"]], average="macro",
    ...               labels=["B", "I"])
    0.5
    """
    return _sk.f1_score(y_true, y_pred, **kwargs)


@_flattens_y
def flat_fbeta_score(y_true, y_pred, beta, **kwargs):
    """:func:`sklearn.metrics.fbeta_score` of the flattened labels."""
    return _sk.fbeta_score(y_true, y_pred, beta=beta, **kwargs)


@_flattens_y
def flat_classification_report(y_true, y_pred, labels=None, **kwargs):
    """:func:`sklearn.metrics.classification_report` of the flattened labels."""
    return _sk.classification_report(y_true, y_pred, labels=labels, **kwargs)


def sequence_accuracy_score(y_true, y_pred):
    """Fraction of sequences whose every label is right.

    sklearn-crfsuite's version compares object arrays, which counts tokens rather than
    sequences when all sequences have the same length; this one compares sequence by
    sequence. 0 for no sequences, as there.

    Parameters
    ----------
    y_true, y_pred : list of sequences of labels

    Returns
    -------
    float

    Examples
    --------
    >>> from skstruct.compat.sklearn_crfsuite.metrics import sequence_accuracy_score
    >>> sequence_accuracy_score([["B", "I"], ["O"]], [["B", "O"], ["O"]])
    0.5
    """
    y_true, y_pred = list(y_true), list(y_pred)
    if len(y_true) != len(y_pred):
        raise ValueError(
            f"y_true has {len(y_true)} sequences and y_pred {len(y_pred)}; they must match.")
    if not y_true:
        return 0
    matches = sum(list(t) == list(p) for t, p in zip(y_true, y_pred))
    return matches / len(y_true)
