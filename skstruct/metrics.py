"""Evaluation metrics for sequence labelling and multilabel classification.

Sequence labels are given as lists of sequences: ``y_true`` and ``y_pred``
hold one 1-D array-like of tags per sequence (e.g.
``[["B-NP", "I-NP"], ["O"]]``), which is also what sequence estimators'
``predict`` returns. Chunk (span) metrics reproduce the CoNLL-2000
evaluation script ``conlleval``; see :func:`extract_spans` for how tags
delimit chunks.

Multilabel metrics (:func:`example_f1_score`, :func:`hamming_loss`,
:func:`subset_accuracy`, :func:`micro_f1_score`, :func:`macro_f1_score`)
take 0/1 label indicator matrices of shape (n_samples, n_labels), dense or
scipy sparse, which is what multilabel estimators' ``predict`` returns.
"""

import copy
import difflib
import warnings
from collections import Counter
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import get_scorer as _sklearn_get_scorer
from sklearn.metrics import get_scorer_names as _sklearn_get_scorer_names
from sklearn.metrics import make_scorer

from .utils._sequences import check_sample_weight_sequences

__all__ = [
    "example_f1_score",
    "example_f1_scorer",
    "extract_spans",
    "get_scorer",
    "hamming_loss",
    "macro_f1_score",
    "macro_f1_scorer",
    "micro_f1_score",
    "micro_f1_scorer",
    "neg_hamming_loss_scorer",
    "span_classification_report",
    "span_f1_score",
    "span_f1_scorer",
    "span_precision_recall_fscore",
    "span_precision_score",
    "span_precision_scorer",
    "span_recall_score",
    "span_recall_scorer",
    "subset_accuracy",
    "subset_accuracy_scorer",
    "token_accuracy",
    "token_accuracy_scorer",
]

_SCHEME_PREFIXES = {
    "auto": None,
    "iob1": {"B", "I", "O"},
    "iob2": {"B", "I", "O"},
    "bioes": {"B", "I", "E", "S", "O"},
}
# (previous prefix, current prefix) pairs of conlleval's endOfChunk and
# startOfChunk; ("E", "B") is the BIOES extension.
_END_PAIRS = {("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"),
              ("E", "E"), ("E", "I"), ("E", "O"), ("E", "B")}
_START_PAIRS = {("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"),
                ("E", "E"), ("E", "I"), ("O", "E"), ("E", "B")}
_AVERAGES = (None, "micro", "macro", "weighted")


def _check_sequences(y, name):
    """Return ``y`` as a list of 1-D arrays, rejecting flat label arrays."""
    try:
        seqs = [] if isinstance(y, str) else list(y)
    except TypeError:
        seqs = []
    if not seqs:
        raise ValueError(
            f"{name} must be a non-empty list of sequences, got {y!r}."
        )
    for i, seq in enumerate(seqs):
        if np.ndim(seq) != 1:
            raise ValueError(
                f"{name}[{i}] is {seq!r}, not a 1-D sequence of labels. "
                f"{name} must be a list of sequences such as "
                "[['B-NP', 'I-NP'], ['O']], not a single flat sequence."
            )
    return [np.asarray(seq, dtype=object) for seq in seqs]


def _check_pair(y_true, y_pred):
    """Validate ``y_true``/``y_pred`` and return them as lists of arrays."""
    y_true = _check_sequences(y_true, "y_true")
    y_pred = _check_sequences(y_pred, "y_pred")
    if len(y_true) != len(y_pred):
        raise ValueError(
            f"y_true has {len(y_true)} sequences but y_pred has {len(y_pred)}."
        )
    for i, (t, p) in enumerate(zip(y_true, y_pred)):
        if len(t) != len(p):
            raise ValueError(
                f"Sequence {i} has {len(t)} labels in y_true "
                f"but {len(p)} in y_pred."
            )
    return y_true, y_pred


def token_accuracy(y_true, y_pred, sample_weight=None):
    """Fraction of tokens whose predicted label equals the true label.

    All sequences are flattened into one list of tokens; this is the
    ``accuracy`` reported by ``conlleval`` [1]_.

    Parameters
    ----------
    y_true : list of array-like of shape (n_tokens_i,)
        True labels, one sequence per sample (``n_sequences`` in all).
    y_pred : list of array-like of shape (n_tokens_i,)
        Predicted labels, with the same lengths as ``y_true``.
    sample_weight : array-like of shape (n_sequences,), default=None
        Weight of each sequence, applied to every one of its tokens: finite,
        non-negative numbers (as for the estimators' ``fit``).

    Returns
    -------
    accuracy : float
        Weighted fraction of correctly labelled tokens, 0.0 when there are
        no tokens (or their total weight is zero).

    References
    ----------
    .. [1] E. F. Tjong Kim Sang and S. Buchholz, "Introduction to the
       CoNLL-2000 Shared Task: Chunking", CoNLL-2000. Evaluation script
       ``conlleval``: https://www.clips.uantwerpen.be/conll2000/chunking/

    Examples
    --------
    >>> from skstruct.metrics import token_accuracy
    >>> y_true = [["B-NP", "I-NP", "O"], ["B-VP"]]
    >>> y_pred = [["B-NP", "O", "O"], ["O"]]
    >>> token_accuracy(y_true, y_pred)
    0.5
    >>> token_accuracy(y_true, y_pred, sample_weight=[1, 3])
    0.333...
    """
    y_true, y_pred = _check_pair(y_true, y_pred)
    lengths = np.array([len(t) for t in y_true])
    correct = np.array([np.sum(t == p) for t, p in zip(y_true, y_pred)])
    sample_weight = check_sample_weight_sequences(
        sample_weight, len(y_true), allow_zero_sum=True
    )
    total = sample_weight @ lengths
    return float(sample_weight @ correct / total) if total else 0.0


def _check_scheme(scheme):
    if not isinstance(scheme, str) or scheme not in _SCHEME_PREFIXES:
        raise ValueError(
            f"Unknown scheme {scheme!r}; use one of {sorted(_SCHEME_PREFIXES)}."
        )


def _parse_tags(tags, scheme, where="tags"):
    """Split tags into (prefix, type) pairs the way conlleval does.

    ``where`` names the sequence in error messages, e.g. ``"y_true[3]"``.
    """
    _check_scheme(scheme)
    if isinstance(tags, str) or np.ndim(tags) != 1:
        raise ValueError(f"tags must be a 1-D sequence of tags, got {tags!r}.")
    allowed = _SCHEME_PREFIXES[scheme]
    parsed = []
    for i, tag in enumerate(tags):
        if not isinstance(tag, str):
            raise TypeError(
                f"Chunk tags must be strings such as 'B-NP', 'I-NP' or 'O'; {where}[{i}] is "
                f"{tag!r} of type {type(tag).__name__}. For labels that are not chunk tags "
                "use token_accuracy."
            )
        prefix, _, type_ = tag.partition("-")
        if allowed is not None and prefix not in allowed:
            raise ValueError(
                f"{where}: tag {tag!r} at position {i} has prefix {prefix!r}, which "
                f"scheme {scheme!r} does not use (allowed: "
                f"{', '.join(sorted(allowed))}). Use scheme='auto' to accept "
                "any tags as conlleval does."
            )
        parsed.append((prefix, type_))
    return parsed


def _boundary(prev, prev_type, cur, cur_type):
    """conlleval's (endOfChunk, startOfChunk) between two tags.

    BIOES extension: "S" acts as "B" when current and as "E" when previous.
    """
    prev = "E" if prev == "S" else prev
    cur = "B" if cur == "S" else cur
    ends = (
        (prev, cur) in _END_PAIRS
        or prev in ("[", "]")
        or (prev not in ("O", ".") and prev_type != cur_type)
    )
    starts = (
        (prev, cur) in _START_PAIRS
        or cur in ("[", "]")
        or (cur not in ("O", ".") and prev_type != cur_type)
    )
    return ends, starts


def extract_spans(tags, scheme="auto"):
    """Extract the chunks of one tag sequence, as ``conlleval`` delimits them.

    Tags are split at their first ``-`` into a prefix and a type
    (``"B-NP"`` -> ``("B", "NP")``); a tag without ``-`` is a prefix with an
    empty type, so ``"O"`` is ``("O", "")``. Following conlleval's
    ``startOfChunk`` and ``endOfChunk`` [1]_, a chunk starts

    - at ``B`` after ``B``, ``I``, ``O`` or ``E``;
    - at ``I`` after ``O`` or ``E`` (IOB1: a chunk may start with ``I``);
    - at ``E`` after ``E`` or ``O``;
    - at ``[`` and at ``]``;
    - where the type changes, unless the tag is ``O`` or ``.``;

    and a chunk ends

    - before ``B`` or ``O`` after ``B`` or ``I``;
    - before ``B``, ``E``, ``I`` or ``O`` after ``E``;
    - after ``[`` and after ``]``;
    - where the type changes after a tag other than ``O`` or ``.``;
    - where the next chunk starts, and at the end of the sequence.

    ``S`` counts as ``B`` where it is the current tag and as ``E`` where it
    is the previous one. These rules read IOB1, IOB2, IOE1, IOE2 and BIOES
    tags alike. A label without prefix such as ``"PER"`` has prefix
    ``"PER"`` and an empty type, so it starts no chunk after ``"O"``.

    Parameters
    ----------
    tags : array-like of shape (n_tokens,)
        Tags of one sequence, e.g. ``["B-NP", "I-NP", "O"]``.
    scheme : {"auto", "iob1", "iob2", "bioes"}, default="auto"
        ``"auto"`` accepts any tags, as conlleval does. The other schemes
        only check that every tag uses the scheme's prefixes (``B``, ``I``,
        ``O``, plus ``E`` and ``S`` for ``"bioes"``) and raise ``ValueError``
        otherwise; chunk boundaries are the same for all schemes.

    Returns
    -------
    spans : list of tuple (str, int, int)
        One ``(type, start, end)`` triple per chunk, in order, where
        ``tags[start:end]`` are the chunk's tokens and ``type`` is the type
        of its first tag.

    Notes
    -----
    conlleval (version 2004-01-26) predates BIOES: it has no rule for ``S``
    and none for ``E`` followed by ``B``, so it reads ``S-X S-X`` or
    ``B-X E-X B-X E-X`` as a single chunk. The rules for ``S`` and for ``E``
    followed by ``B`` above are those of the BIOES-aware copies of conlleval
    in common use. Sequences without ``S`` and without ``E`` directly
    followed by ``B`` (all IOB1, IOB2, IOE1 and IOE2 data) are split
    exactly as by conlleval. Other differences, all for tags outside these
    schemes: a chunk never continues into the next sequence; a start
    always closes the open chunk (after ``.``, ``[`` or ``]`` conlleval can
    start a chunk inside another one); and the type ``"0"`` is not turned
    into ``""`` by Perl's truth rules.

    References
    ----------
    .. [1] E. F. Tjong Kim Sang and S. Buchholz, "Introduction to the
       CoNLL-2000 Shared Task: Chunking", CoNLL-2000. Evaluation script
       ``conlleval``: https://www.clips.uantwerpen.be/conll2000/chunking/
    .. [2] E. F. Tjong Kim Sang and J. Veenstra, "Representing Text
       Chunks", EACL 1999.

    Examples
    --------
    >>> from skstruct.metrics import extract_spans
    >>> extract_spans(["B-NP", "I-NP", "O", "B-VP", "B-NP"])
    [('NP', 0, 2), ('VP', 3, 4), ('NP', 4, 5)]

    IOB1: ``I`` opens a chunk, ``B`` separates adjacent chunks of one type.

    >>> extract_spans(["I-NP", "I-NP", "B-NP", "O", "I-VP"])
    [('NP', 0, 2), ('NP', 2, 3), ('VP', 4, 5)]

    BIOES:

    >>> extract_spans(["S-PER", "B-ORG", "E-ORG", "S-ORG"], scheme="bioes")
    [('PER', 0, 1), ('ORG', 1, 3), ('ORG', 3, 4)]
    """
    return _extract_spans(tags, scheme, "tags")


def _extract_spans(tags, scheme, where):
    """:func:`extract_spans`, naming the sequence ``where`` in error messages."""
    parsed = _parse_tags(tags, scheme, where)
    spans = []
    prev, prev_type = "O", ""
    start = None
    for i, (cur, cur_type) in enumerate(parsed):
        ends, starts = _boundary(prev, prev_type, cur, cur_type)
        if start is not None and (ends or starts):
            spans.append((chunk_type, start, i))
            start = None
        if starts:
            start, chunk_type = i, cur_type
        prev, prev_type = cur, cur_type
    if start is not None:
        spans.append((chunk_type, start, len(parsed)))
    return spans


def _span_counts(y_true, y_pred, scheme):
    """Count true, predicted and correct chunks per type.

    Warns (:class:`~sklearn.exceptions.UndefinedMetricWarning`) when neither
    ``y_true`` nor ``y_pred`` has a chunk: the scores are then 0.0 as in
    conlleval, which for a perfect prediction usually means that the labels are
    not chunk tags.
    """
    _check_scheme(scheme)
    n_true, n_pred, n_correct = Counter(), Counter(), Counter()
    for i, (t, p) in enumerate(zip(y_true, y_pred)):
        true_spans = set(_extract_spans(t, scheme, f"y_true[{i}]"))
        pred_spans = set(_extract_spans(p, scheme, f"y_pred[{i}]"))
        n_true.update(s[0] for s in true_spans)
        n_pred.update(s[0] for s in pred_spans)
        n_correct.update(s[0] for s in true_spans & pred_spans)
    if not n_true and not n_pred:
        _warn_no_chunks(y_true, y_pred)
    return n_true, n_pred, n_correct


def _warn_no_chunks(y_true, y_pred):
    untyped = next(
        (tag for seq in (*y_true, *y_pred) for tag in seq
         if "-" not in tag and tag not in ("O", ".")),
        None,
    )
    hint = (
        f" Tags without a '-TYPE' part, such as {untyped!r}, start no chunk; are the "
        "labels chunk tags? For other labels use token_accuracy."
        if untyped is not None
        else ""
    )
    warnings.warn(
        "No chunks in y_true or y_pred, so chunk precision, recall and F-score are "
        "set to 0.0 (as conlleval does). Chunks are delimited by IOB/IOBES tags such "
        f"as 'B-NP', 'I-NP' and 'O'.{hint}",
        UndefinedMetricWarning,
        stacklevel=3,
    )


def _check_beta(beta):
    message = (
        "beta must be a finite number >= 0 (the weight of recall in the F-score; "
        f"1 for conlleval's FB1), got {beta!r}."
    )
    if isinstance(beta, (bool, np.bool_)) or not isinstance(beta, Real):
        raise TypeError(message)
    if not np.isfinite(beta) or beta < 0:
        raise ValueError(message)


def _check_digits(digits):
    message = f"digits must be an int >= 0, got {digits!r}."
    if isinstance(digits, (bool, np.bool_)) or not isinstance(digits, Integral):
        raise TypeError(message)
    if digits < 0:
        raise ValueError(message)


def _divide(numerator, denominator):
    """Elementwise division that returns 0.0 where the denominator is 0."""
    numerator = np.asarray(numerator, dtype=float)
    denominator = np.asarray(denominator, dtype=float)
    out = np.zeros(np.broadcast(numerator, denominator).shape)
    return np.divide(numerator, denominator, out=out, where=denominator != 0)


def _prf(n_true, n_pred, n_correct, beta):
    """Precision, recall and F-beta from (arrays of) chunk counts."""
    precision = _divide(n_correct, n_pred)
    recall = _divide(n_correct, n_true)
    fscore = _divide(
        (1 + beta**2) * precision * recall, beta**2 * precision + recall
    )
    return precision, recall, fscore


def span_precision_recall_fscore(
    y_true, y_pred, *, beta=1.0, average="micro", scheme="auto"
):
    """Chunk precision, recall, F-beta and support, as computed by conlleval.

    A predicted chunk is correct only if a true chunk has the same type,
    start and end (chunks are found by :func:`extract_spans`). Precision is
    the fraction of predicted chunks that are correct, recall the fraction
    of true chunks that are predicted, and F-beta their weighted harmonic
    mean; each is 0.0 when its denominator is zero, as in conlleval [1]_.

    Parameters
    ----------
    y_true : list of array-like of shape (n_tokens_i,)
        True tags, one sequence per sample.
    y_pred : list of array-like of shape (n_tokens_i,)
        Predicted tags, with the same lengths as ``y_true``.
    beta : float >= 0, default=1.0
        Weight of recall in the F-score (conlleval's FB1 is ``beta=1``).
    average : {"micro", "macro", "weighted"} or None, default="micro"
        ``"micro"`` pools the chunks of all types (conlleval's overall
        scores); ``"macro"`` is the unweighted mean of the per-type scores
        and ``"weighted"`` their mean weighted by support; ``None`` returns
        the per-type scores. Types are those of all true and predicted
        chunks, in sorted order.
    scheme : {"auto", "iob1", "iob2", "bioes"}, default="auto"
        Tagging scheme, see :func:`extract_spans`.

    Returns
    -------
    precision : float or ndarray of shape (n_types,)
        Precision in [0, 1]; an array of per-type values if ``average`` is
        None.
    recall : float or ndarray of shape (n_types,)
        Recall in [0, 1].
    fscore : float or ndarray of shape (n_types,)
        F-beta score in [0, 1].
    support : int or ndarray of shape (n_types,)
        Number of true chunks (per type if ``average`` is None).

    Raises
    ------
    TypeError
        If a tag is not a string (``None``, NaN, integer labels...).

    Warns
    -----
    UndefinedMetricWarning
        When neither ``y_true`` nor ``y_pred`` has a chunk (only ``"O"`` tags,
        or labels without a ``-TYPE`` part, which conlleval reads as no chunk):
        the scores are then 0.0 even for a perfect prediction.

    Notes
    -----
    conlleval counts a correct chunk while scanning both tag sequences
    together: a chunk is correct when both start a chunk of the same type
    at the same token, no tag in between ends one of them but not the
    other or has different types, and both end their chunk at the same
    token. For tags built from the prefixes ``B``, ``I``, ``E``, ``S`` and
    ``O`` this is the same as counting the ``(type, start, end)`` triples
    common to both sequences, which is what this function does (checked on
    random tag sequences in the test suite).

    References
    ----------
    .. [1] E. F. Tjong Kim Sang and S. Buchholz, "Introduction to the
       CoNLL-2000 Shared Task: Chunking", CoNLL-2000. Evaluation script
       ``conlleval``: https://www.clips.uantwerpen.be/conll2000/chunking/

    Examples
    --------
    >>> from skstruct.metrics import span_precision_recall_fscore
    >>> y_true = [["B-NP", "I-NP", "O", "B-VP"], ["B-NP", "B-NP"]]
    >>> y_pred = [["B-NP", "I-NP", "O", "O"], ["B-NP", "I-NP"]]
    >>> p, r, f, s = span_precision_recall_fscore(y_true, y_pred)
    >>> print(f"{p:.3f} {r:.3f} {f:.3f} {s}")
    0.500 0.250 0.333 4
    >>> p, r, f, s = span_precision_recall_fscore(y_true, y_pred, average=None)
    >>> p, r.round(3), s
    (array([0.5, 0. ]), array([0.333, 0.   ]), array([3, 1]))
    """
    if average not in _AVERAGES:
        raise ValueError(f"average must be one of {_AVERAGES}, got {average!r}.")
    _check_beta(beta)
    y_true, y_pred = _check_pair(y_true, y_pred)
    return _average(_span_counts(y_true, y_pred, scheme), beta, average)


def _average(counts, beta, average):
    """Scores of span_precision_recall_fscore from per-type chunk counts."""
    n_true, n_pred, n_correct = counts
    if average == "micro":
        totals = [sum(c.values()) for c in counts]
        precision, recall, fscore = map(float, _prf(*totals, beta))
        return precision, recall, fscore, totals[0]
    types = sorted(n_true | n_pred)
    support = np.array([n_true[t] for t in types], dtype=int)
    scores = _prf(
        support, [n_pred[t] for t in types], [n_correct[t] for t in types], beta
    )
    if average is None:
        return (*scores, support)
    weights = support if average == "weighted" else np.ones(len(types))
    precision, recall, fscore = (
        float(_divide(weights @ s, weights.sum())) for s in scores
    )
    return precision, recall, fscore, int(support.sum())


def span_precision_score(y_true, y_pred, *, scheme="auto"):
    """Micro-averaged chunk precision, as conlleval's overall precision.

    Parameters
    ----------
    y_true : list of array-like of shape (n_tokens_i,)
        True tags, one sequence per sample.
    y_pred : list of array-like of shape (n_tokens_i,)
        Predicted tags, with the same lengths as ``y_true``.
    scheme : {"auto", "iob1", "iob2", "bioes"}, default="auto"
        Tagging scheme, see :func:`extract_spans`.

    Returns
    -------
    precision : float
        Fraction of predicted chunks that are correct (0.0 if none).

    See Also
    --------
    span_precision_recall_fscore : Per-type and averaged scores.

    Examples
    --------
    >>> from skstruct.metrics import span_precision_score
    >>> span_precision_score([["B-NP", "I-NP", "O"]], [["B-NP", "B-NP", "O"]])
    0.0
    """
    return span_precision_recall_fscore(y_true, y_pred, scheme=scheme)[0]


def span_recall_score(y_true, y_pred, *, scheme="auto"):
    """Micro-averaged chunk recall, as conlleval's overall recall.

    Parameters
    ----------
    y_true : list of array-like of shape (n_tokens_i,)
        True tags, one sequence per sample.
    y_pred : list of array-like of shape (n_tokens_i,)
        Predicted tags, with the same lengths as ``y_true``.
    scheme : {"auto", "iob1", "iob2", "bioes"}, default="auto"
        Tagging scheme, see :func:`extract_spans`.

    Returns
    -------
    recall : float
        Fraction of true chunks that are predicted (0.0 if none).

    See Also
    --------
    span_precision_recall_fscore : Per-type and averaged scores.

    Examples
    --------
    >>> from skstruct.metrics import span_recall_score
    >>> span_recall_score([["B-NP", "B-NP", "O"]], [["B-NP", "O", "O"]])
    0.5
    """
    return span_precision_recall_fscore(y_true, y_pred, scheme=scheme)[1]


def span_f1_score(y_true, y_pred, *, scheme="auto"):
    """Micro-averaged chunk F1 score, as conlleval's overall FB1.

    Parameters
    ----------
    y_true : list of array-like of shape (n_tokens_i,)
        True tags, one sequence per sample.
    y_pred : list of array-like of shape (n_tokens_i,)
        Predicted tags, with the same lengths as ``y_true``.
    scheme : {"auto", "iob1", "iob2", "bioes"}, default="auto"
        Tagging scheme, see :func:`extract_spans`.

    Returns
    -------
    f1 : float
        Harmonic mean of chunk precision and recall (0.0 if both are 0).

    See Also
    --------
    span_precision_recall_fscore : Per-type and averaged scores.

    Examples
    --------
    >>> from skstruct.metrics import span_f1_score
    >>> span_f1_score([["B-NP", "B-NP", "O"]], [["B-NP", "O", "O"]])
    0.666...
    """
    return span_precision_recall_fscore(y_true, y_pred, scheme=scheme)[2]


def span_classification_report(
    y_true, y_pred, *, digits=2, output_dict=False, scheme="auto"
):
    """Per-type chunk precision, recall, F1 and support, plus averages.

    The layout follows :func:`sklearn.metrics.classification_report`: one
    row per chunk type (sorted), then the micro average (conlleval's
    overall scores), macro and support-weighted averages, and the token
    accuracy. Support counts true chunks (tokens for the accuracy row).

    Parameters
    ----------
    y_true : list of array-like of shape (n_tokens_i,)
        True tags, one sequence per sample.
    y_pred : list of array-like of shape (n_tokens_i,)
        Predicted tags, with the same lengths as ``y_true``.
    digits : int, default=2
        Number of digits of the scores in the text report.
    output_dict : bool, default=False
        Return a dict instead of text.
    scheme : {"auto", "iob1", "iob2", "bioes"}, default="auto"
        Tagging scheme, see :func:`extract_spans`.

    Returns
    -------
    report : str or dict
        Text report, or a dict mapping each type and ``"micro avg"``,
        ``"macro avg"``, ``"weighted avg"`` to a dict with keys
        ``"precision"``, ``"recall"``, ``"f1-score"`` and ``"support"``,
        and ``"accuracy"`` to the token accuracy.

    See Also
    --------
    span_precision_recall_fscore : The scores of the report.
    token_accuracy : The accuracy of the report.

    Examples
    --------
    >>> from skstruct.metrics import span_classification_report
    >>> y_true = [["B-NP", "I-NP", "O", "B-VP"], ["B-NP", "B-NP"]]
    >>> y_pred = [["B-NP", "I-NP", "O", "O"], ["B-NP", "I-NP"]]
    >>> print(span_classification_report(y_true, y_pred))
                  precision    recall  f1-score   support
    <BLANKLINE>
              NP       0.50      0.33      0.40         3
              VP       0.00      0.00      0.00         1
    <BLANKLINE>
       micro avg       0.50      0.25      0.33         4
       macro avg       0.25      0.17      0.20         4
    weighted avg       0.38      0.25      0.30         4
        accuracy                           0.67         6
    >>> span_classification_report(y_true, y_pred, output_dict=True)["NP"]
    {'precision': 0.5, 'recall': 0.333..., 'f1-score': 0.4, 'support': 3}
    """
    _check_digits(digits)
    y_true, y_pred = _check_pair(y_true, y_pred)
    counts = _span_counts(y_true, y_pred, scheme)
    types = sorted(counts[0] | counts[1])
    rows = dict(zip(types, zip(*_average(counts, 1.0, None))))
    for average in _AVERAGES[1:]:
        rows[f"{average} avg"] = _average(counts, 1.0, average)
    report = {
        name: {"precision": float(p), "recall": float(r), "f1-score": float(f),
               "support": int(s)}
        for name, (p, r, f, s) in rows.items()
    }
    report["accuracy"] = token_accuracy(y_true, y_pred)
    if output_dict:
        return report
    return _format_report(report, int(digits), sum(map(len, y_true)))


def _format_report(report, digits, n_tokens):
    """Render a report dict as text, like sklearn's classification_report."""
    rows = {name: row for name, row in report.items() if name != "accuracy"}
    width = max(map(len, rows))
    header = ("precision", "recall", "f1-score", "support")
    lines = [" " * (width + 1) + "".join(f"{h:>10}" for h in header), ""]
    for name, row in rows.items():
        if name == "micro avg":
            lines.append("")
        scores = "".join(f"{row[h]:>10.{digits}f}" for h in header[:3])
        lines.append(f"{name:>{width}} {scores}{row['support']:>10}")
    lines.append(
        f"{'accuracy':>{width}} {'':>20}"
        f"{report['accuracy']:>10.{digits}f}{n_tokens:>10}"
    )
    return "\n".join(lines)


# --------------------------------------------------------------------------- multilabel

_ZERO_DIVISIONS = (0.0, 1.0)
_INDICATOR_HINT = (
    "a 0/1 label indicator matrix of shape (n_samples, n_labels), dense or scipy "
    "sparse (what multilabel estimators' predict returns; a list of label sets such as "
    "[[0, 3], [1]] becomes one with sklearn.preprocessing.MultiLabelBinarizer)"
)


def _check_indicator(y, name):
    """Return ``y`` as a float64 2-D ndarray or CSR matrix holding only 0 and 1."""
    if sp.issparse(y):
        if y.ndim != 2:
            raise ValueError(f"{name} must be {_INDICATOR_HINT}; got a {y.ndim}-D matrix.")
        matrix = sp.csr_matrix(y)
        values = matrix.data
    else:
        if isinstance(y, (str, bytes)):
            raise TypeError(f"{name} must be {_INDICATOR_HINT}; got the string {y!r}.")
        try:
            matrix = np.asarray(y)
        except ValueError:  # ragged nesting
            raise ValueError(
                f"{name} must be {_INDICATOR_HINT}; got rows of different lengths."
            ) from None
        if matrix.ndim != 2:
            raise ValueError(
                f"{name} must be {_INDICATOR_HINT}; got an array of shape {matrix.shape}. "
                "For one label per sample (multiclass) use sklearn.metrics.accuracy_score "
                "or f1_score."
            )
        values = matrix
    if values.dtype.kind not in "biuf":
        raise TypeError(
            f"{name} must be {_INDICATOR_HINT}; got values of dtype {values.dtype}."
        )
    bad = (values != 0) & (values != 1)  # NaN is neither
    if bad.any():
        if sp.issparse(matrix):
            coo = matrix.tocoo()
            k = int(np.flatnonzero(bad)[0])
            where, value = (int(coo.row[k]), int(coo.col[k])), coo.data[k]
        else:
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            value = matrix[where]
        raise ValueError(
            f"{name} must hold only 0 and 1 (a label indicator matrix); "
            f"{name}[{where[0]}, {where[1]}] is {value.item()!r}."
        )
    if matrix.shape[0] == 0 or matrix.shape[1] == 0:
        raise ValueError(
            f"{name} has shape {matrix.shape}; it needs at least one sample and one label."
        )
    return matrix.astype(np.float64)


def _check_sample_weight_samples(sample_weight, n_samples):
    """Finite, non-negative weights of shape (n_samples,), not all zero."""
    if sample_weight is None:
        return np.ones(n_samples)
    message = f"sample_weight must be numbers, one per sample (shape ({n_samples},))"
    if isinstance(sample_weight, (str, bytes)):
        raise TypeError(f"{message}; got {sample_weight!r}.")
    try:
        array = np.asarray(sample_weight)
    except ValueError:
        raise ValueError(f"{message}; got a ragged sequence.") from None
    if array.dtype.kind not in "biuf":
        raise TypeError(f"{message}; got values of dtype {array.dtype}.")
    array = array.astype(np.float64)
    if array.shape != (n_samples,):
        raise ValueError(f"{message}; got shape {array.shape}.")
    bad = ~np.isfinite(array) | (array < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            "sample_weight must be finite and non-negative; the weight of sample "
            f"{i} is {float(array[i])!r}."
        )
    if array.sum() <= 0:
        raise ValueError("sample_weight must not be all zero.")
    return array


def _check_zero_division(zero_division):
    if isinstance(zero_division, (bool, np.bool_)) or zero_division not in _ZERO_DIVISIONS:
        raise ValueError(
            "zero_division must be 0.0 or 1.0 (the F1 score given where there is no true "
            f"and no predicted label), got {zero_division!r}."
        )
    return float(zero_division)


class _MultilabelCounts:
    """Label counts of a pair of indicator matrices.

    Attributes ``true``, ``pred`` and ``both`` are the per-sample counts of true,
    predicted and correctly predicted labels (ndarray of shape (n_samples,));
    ``label_true``, ``label_pred`` and ``label_both`` the per-label counts weighted by
    ``sample_weight`` (ndarray of shape (n_labels,)); ``weight`` the weights.
    """

    def __init__(self, y_true, y_pred, sample_weight):
        y_true = _check_indicator(y_true, "y_true")
        y_pred = _check_indicator(y_pred, "y_pred")
        if y_true.shape != y_pred.shape:
            raise ValueError(
                f"y_true has shape {y_true.shape} but y_pred has shape {y_pred.shape}; "
                "both must be indicator matrices of shape (n_samples, n_labels) with the "
                "same labels in the same columns."
            )
        if sp.issparse(y_true) or sp.issparse(y_pred):
            y_true, y_pred = sp.csr_matrix(y_true), sp.csr_matrix(y_pred)
            both = y_true.multiply(y_pred)
        else:
            both = y_true * y_pred
        self.n_labels = y_true.shape[1]
        self.weight = _check_sample_weight_samples(sample_weight, y_true.shape[0])
        for key, y in (("true", y_true), ("pred", y_pred), ("both", both)):
            setattr(self, key, np.asarray(y.sum(axis=1)).ravel())
            setattr(self, f"label_{key}", np.asarray(y.T @ self.weight).ravel())

    def mean(self, per_sample):
        """Weighted mean over samples."""
        return float(self.weight @ per_sample / self.weight.sum())


def _f1(both, true, pred, zero_division):
    """2 |T ∩ P| / (|T| + |P|) elementwise, ``zero_division`` where |T| + |P| = 0."""
    total = true + pred
    out = np.full(np.shape(total), zero_division, dtype=float)
    return np.divide(2.0 * both, total, out=out, where=total > 0)


def example_f1_score(y_true, y_pred, sample_weight=None, *, zero_division=1.0):
    """Example-based F1: the mean over samples of the F1 of each sample's label set.

    With T_i and P_i the sets of true and predicted labels of sample i and weights s_i::

        F1_ex = Σ_i s_i F_i / Σ_i s_i,   F_i = 2 |T_i ∩ P_i| / (|T_i| + |P_i|),

    and F_i = ``zero_division`` (1 by default) when T_i and P_i are both empty: an empty
    prediction for a sample without labels is a perfect one. This is the example-based
    F-measure of the multilabel literature [1]_ (MULAN's convention for the empty-empty
    case) and equals :func:`sklearn.metrics.f1_score` with ``average="samples"`` and the
    same ``zero_division``.

    Parameters
    ----------
    y_true : {array-like, sparse matrix} of shape (n_samples, n_labels)
        True labels, a 0/1 indicator matrix.
    y_pred : {array-like, sparse matrix} of shape (n_samples, n_labels)
        Predicted labels, a 0/1 indicator matrix.
    sample_weight : array-like of shape (n_samples,), default=None
        Finite, non-negative weights, not all zero.
    zero_division : {1.0, 0.0}, default=1.0
        F_i of a sample with no true and no predicted label.

    Returns
    -------
    f1 : float
        In [0, 1].

    References
    ----------
    .. [1] G. Tsoumakas, I. Katakis and I. Vlahavas, "Mining Multi-label Data",
       Data Mining and Knowledge Discovery Handbook, Springer, 2010.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.metrics import example_f1_score
    >>> y_true = np.array([[1, 1, 0], [0, 0, 1], [0, 0, 0]])
    >>> y_pred = np.array([[1, 0, 0], [0, 0, 1], [0, 0, 0]])
    >>> example_f1_score(y_true, y_pred)  # (2/3 + 1 + 1) / 3
    0.888...
    >>> example_f1_score(y_true, y_pred, zero_division=0.0)
    0.555...
    """
    counts = _MultilabelCounts(y_true, y_pred, sample_weight)
    zero_division = _check_zero_division(zero_division)
    return counts.mean(_f1(counts.both, counts.true, counts.pred, zero_division))


def hamming_loss(y_true, y_pred, sample_weight=None):
    """Fraction of wrong labels: (sample-weighted) mean of the symmetric differences::

        H = Σ_i s_i |T_i Δ P_i| / (n_labels Σ_i s_i),

    with T_i and P_i the true and predicted label sets of sample i. Equal to
    :func:`sklearn.metrics.hamming_loss` on indicator matrices. Lower is better; as a
    scorer (maximized) it is ``"neg_hamming_loss"``, see :func:`get_scorer`.

    Parameters
    ----------
    y_true : {array-like, sparse matrix} of shape (n_samples, n_labels)
        True labels, a 0/1 indicator matrix.
    y_pred : {array-like, sparse matrix} of shape (n_samples, n_labels)
        Predicted labels, a 0/1 indicator matrix.
    sample_weight : array-like of shape (n_samples,), default=None
        Finite, non-negative weights, not all zero.

    Returns
    -------
    loss : float
        In [0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.metrics import hamming_loss
    >>> y_true = np.array([[1, 1, 0], [0, 0, 1]])
    >>> y_pred = np.array([[1, 0, 0], [1, 1, 1]])
    >>> hamming_loss(y_true, y_pred)  # 3 wrong of 6
    0.5
    >>> hamming_loss(y_true, y_pred, sample_weight=[3, 1])  # (3 * 1 + 2) / (4 * 3)
    0.416...
    """
    counts = _MultilabelCounts(y_true, y_pred, sample_weight)
    return counts.mean(counts.true + counts.pred - 2 * counts.both) / counts.n_labels


def subset_accuracy(y_true, y_pred, sample_weight=None):
    """Fraction of samples whose predicted label set is exactly the true one.

        A = Σ_i s_i [P_i = T_i] / Σ_i s_i

    (the "exact match ratio"; 1 − A is the expected 0/1 subset loss). Equal to
    :func:`sklearn.metrics.accuracy_score` on indicator matrices.

    Parameters
    ----------
    y_true : {array-like, sparse matrix} of shape (n_samples, n_labels)
        True labels, a 0/1 indicator matrix.
    y_pred : {array-like, sparse matrix} of shape (n_samples, n_labels)
        Predicted labels, a 0/1 indicator matrix.
    sample_weight : array-like of shape (n_samples,), default=None
        Finite, non-negative weights, not all zero.

    Returns
    -------
    accuracy : float
        In [0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.metrics import subset_accuracy
    >>> y_true = np.array([[1, 1, 0], [0, 0, 1]])
    >>> y_pred = np.array([[1, 0, 0], [0, 0, 1]])
    >>> subset_accuracy(y_true, y_pred)
    0.5
    """
    counts = _MultilabelCounts(y_true, y_pred, sample_weight)
    return counts.mean(counts.true + counts.pred - 2 * counts.both == 0)


def micro_f1_score(y_true, y_pred, sample_weight=None, *, zero_division=1.0):
    """Micro-averaged F1: the F1 of all (sample, label) decisions pooled::

        F1_micro = 2 Σ_i s_i |T_i ∩ P_i| / Σ_i s_i (|T_i| + |P_i|),

    ``zero_division`` when no sample has a true or a predicted label. Equal to
    :func:`sklearn.metrics.f1_score` with ``average="micro"`` and the same
    ``zero_division``.

    Parameters
    ----------
    y_true : {array-like, sparse matrix} of shape (n_samples, n_labels)
        True labels, a 0/1 indicator matrix.
    y_pred : {array-like, sparse matrix} of shape (n_samples, n_labels)
        Predicted labels, a 0/1 indicator matrix.
    sample_weight : array-like of shape (n_samples,), default=None
        Finite, non-negative weights, not all zero.
    zero_division : {1.0, 0.0}, default=1.0
        The score when there is no true and no predicted label at all.

    Returns
    -------
    f1 : float
        In [0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.metrics import micro_f1_score
    >>> y_true = np.array([[1, 1, 0], [0, 0, 1], [0, 0, 0]])
    >>> y_pred = np.array([[1, 0, 0], [0, 0, 1], [0, 0, 0]])
    >>> micro_f1_score(y_true, y_pred)  # 2 * 2 / (3 + 2)
    0.8
    """
    counts = _MultilabelCounts(y_true, y_pred, sample_weight)
    zero_division = _check_zero_division(zero_division)
    return float(_f1(counts.label_both.sum(), counts.label_true.sum(),
                     counts.label_pred.sum(), zero_division))


def macro_f1_score(y_true, y_pred, sample_weight=None, *, zero_division=1.0):
    """Macro-averaged F1: the unweighted mean over labels of each label's F1::

        F1_macro = (1 / n_labels) Σ_j 2 TP_j / (|T^j| + |P^j|),

    with TP_j, ``|T^j|`` and ``|P^j|`` the (sample-weighted) numbers of samples that have label j
    in both, in the true and in the predicted set; a label that no sample has and none
    is predicted to have scores ``zero_division`` (1 by default: never predicting an
    absent label is right). Equal to :func:`sklearn.metrics.f1_score` with
    ``average="macro"`` and the same ``zero_division``.

    Parameters
    ----------
    y_true : {array-like, sparse matrix} of shape (n_samples, n_labels)
        True labels, a 0/1 indicator matrix.
    y_pred : {array-like, sparse matrix} of shape (n_samples, n_labels)
        Predicted labels, a 0/1 indicator matrix.
    sample_weight : array-like of shape (n_samples,), default=None
        Finite, non-negative weights, not all zero.
    zero_division : {1.0, 0.0}, default=1.0
        F1 of a label with no true and no predicted occurrence.

    Returns
    -------
    f1 : float
        In [0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.metrics import macro_f1_score
    >>> y_true = np.array([[1, 1, 0], [0, 0, 0], [1, 0, 0]])
    >>> y_pred = np.array([[1, 0, 0], [0, 0, 0], [1, 0, 0]])
    >>> macro_f1_score(y_true, y_pred)  # (1 + 0 + 1) / 3: label 2 never occurs
    0.666...
    >>> macro_f1_score(y_true, y_pred, zero_division=0.0)
    0.333...
    """
    counts = _MultilabelCounts(y_true, y_pred, sample_weight)
    zero_division = _check_zero_division(zero_division)
    return float(np.mean(_f1(counts.label_both, counts.label_true, counts.label_pred,
                             zero_division)))


token_accuracy_scorer = make_scorer(token_accuracy)
span_f1_scorer = make_scorer(span_f1_score)
span_precision_scorer = make_scorer(span_precision_score)
span_recall_scorer = make_scorer(span_recall_score)
example_f1_scorer = make_scorer(example_f1_score)
neg_hamming_loss_scorer = make_scorer(hamming_loss, greater_is_better=False)
subset_accuracy_scorer = make_scorer(subset_accuracy)
micro_f1_scorer = make_scorer(micro_f1_score)
macro_f1_scorer = make_scorer(macro_f1_score)

_SEQUENCE_SCORERS = {
    "token_accuracy": token_accuracy_scorer,
    "span_f1": span_f1_scorer,
    "span_precision": span_precision_scorer,
    "span_recall": span_recall_scorer,
}
_MULTILABEL_SCORERS = {
    "example_f1": example_f1_scorer,
    "neg_hamming_loss": neg_hamming_loss_scorer,
    "subset_accuracy": subset_accuracy_scorer,
    "micro_f1": micro_f1_scorer,
    "macro_f1": macro_f1_scorer,
}
_SCORERS = {**_SEQUENCE_SCORERS, **_MULTILABEL_SCORERS}


def get_scorer(scoring):
    """Get a scorer by name, including the sequence-labelling and multilabel scorers.

    Parameters
    ----------
    scoring : str or callable
        Label sequences: ``"token_accuracy"``, ``"span_f1"``, ``"span_precision"`` or
        ``"span_recall"``. Multilabel indicator matrices: ``"example_f1"``,
        ``"neg_hamming_loss"``, ``"subset_accuracy"``, ``"micro_f1"`` or ``"macro_f1"``
        (:func:`example_f1_score`, :func:`hamming_loss`, :func:`subset_accuracy`,
        :func:`micro_f1_score`, :func:`macro_f1_score` with their defaults). A scorer is
        maximized, so the Hamming loss is negated and named ``"neg_hamming_loss"``, as
        scikit-learn names its losses (``"neg_log_loss"``...); ``"hamming_loss"`` itself
        is refused. Anything else is passed to :func:`sklearn.metrics.get_scorer`.

    Returns
    -------
    scorer : callable
        Scorer with signature ``scorer(estimator, X, y)``, usable as
        ``scoring`` in :func:`~sklearn.model_selection.cross_validate` or
        :class:`~sklearn.model_selection.GridSearchCV` (which do not know
        these names themselves).

    Examples
    --------
    >>> from skstruct.metrics import get_scorer
    >>> get_scorer("span_f1")
    make_scorer(span_f1_score, response_method='predict')
    >>> get_scorer("neg_hamming_loss")
    make_scorer(hamming_loss, greater_is_better=False, response_method='predict')
    >>> get_scorer("accuracy")
    make_scorer(accuracy_score, response_method='predict')
    """
    if isinstance(scoring, str) and scoring in _SCORERS:
        return copy.deepcopy(_SCORERS[scoring])
    if isinstance(scoring, str) and scoring not in _sklearn_get_scorer_names():
        if scoring == "hamming_loss":
            raise ValueError(
                "'hamming_loss' is not a valid scoring value: scorers are maximized, so "
                "the Hamming loss is the scorer 'neg_hamming_loss' (minus the loss, as "
                "scikit-learn names its losses)."
            )
        close = difflib.get_close_matches(
            scoring, [*_SCORERS, *_sklearn_get_scorer_names()], n=3
        )
        hint = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
        raise ValueError(
            f"{scoring!r} is not a valid scoring value.{hint} skstruct's scorers for "
            f"label sequences are {', '.join(map(repr, _SEQUENCE_SCORERS))}; for "
            "multilabel indicator matrices "
            f"{', '.join(map(repr, _MULTILABEL_SCORERS))}; scikit-learn's "
            "scorers (for flat labels, not sequences) are listed by "
            "sklearn.metrics.get_scorer_names()."
        )
    return _sklearn_get_scorer(scoring)
