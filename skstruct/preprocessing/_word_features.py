"""Token feature dicts of sentences, as in the sklearn-crfsuite tutorial:
:func:`~skstruct.preprocessing.word_features` and
:func:`~skstruct.preprocessing.sentences_to_features`.

Their output is the input of :class:`~skstruct.preprocessing.SequenceVectorizer` (and of
sklearn-crfsuite).
"""

from collections.abc import Mapping
from itertools import chain, repeat
from numbers import Integral
from operator import add

__all__ = ["sentences_to_features", "word_features"]


def _check_strings(values, name, item, sentence=None):
    """Raise TypeError naming the first item of ``values`` that is not a string.

    ``"".join`` checks the types of all items at C speed; only a failure is examined
    item by item. ``sentence`` is the index of the sentence in a list of sentences.
    """
    where = "" if sentence is None else f" (sentence {sentence})"
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        got = f" {values!r}" if isinstance(values, (str, bytes)) else ""
        raise TypeError(
            f"{name} must be a list of strings{where}, not {type(values).__name__}{got}."
        )
    try:
        "".join(values)
    except TypeError:
        i, value = next((i, v) for i, v in enumerate(values) if not isinstance(v, str))
        at = f"{item} {i}" if sentence is None else f"sentence {sentence} {item} {i}"
        raise TypeError(
            f"{name} must be strings; {at} is {value!r} of type {type(value).__name__}."
        ) from None


def _word_features(words, pos, window):
    """:func:`word_features` without input validation.

    A token's dict is ``dict(zip(keys, values))``: its own values, then its left
    neighbours', ``BOS``, its right neighbours', ``EOS``. The keys depend only on which
    neighbours the token has, so the tokens at least ``window`` away from both ends share
    one key tuple and their values are concatenations of per-token tuples, built at C
    level (``map``); the at most ``2 * window`` others are built one by one.
    """
    names = ("word.lower()", "word.istitle()", "word.isupper()")
    if pos is None:
        context = [(word.lower(), word.istitle(), word.isupper()) for word in words]
    else:
        names += ("postag", "postag[:2]")
        context = [
            (word.lower(), word.istitle(), word.isupper(), tag, tag[:2])
            for word, tag in zip(words, pos)
        ]
    own_names = ("bias", "word[-3:]", "word[-2:]", "word.isdigit()") + names
    own = [
        (1.0, word[-3:], word[-2:], word.isdigit()) + ctx for word, ctx in zip(words, context)
    ]
    n_tokens = len(words)
    offset_names = {
        d: tuple(f"{d:+d}:{name}" for name in names) for d in range(-window, window + 1)
    }

    def layout(lo, hi, first, last):
        """Keys of a token with neighbours at offsets lo..-1 and 1..hi."""
        left = tuple(chain.from_iterable(offset_names[d] for d in range(lo, 0)))
        right = tuple(chain.from_iterable(offset_names[d] for d in range(1, hi + 1)))
        return own_names + left + ("BOS",) * first + right + ("EOS",) * last

    def values(i, lo, hi):
        """Values of token ``i``, in the order of ``layout(lo, hi, ...)``."""
        left = tuple(chain.from_iterable(context[i + lo:i]))
        right = tuple(chain.from_iterable(context[i + 1:i + hi + 1]))
        return own[i] + left + (True,) * (i == 0) + right + (True,) * (i == n_tokens - 1)

    first_inner, stop_inner = window, n_tokens - window
    n_inner = stop_inner - first_inner
    if window == 0 or n_inner <= 0:
        inner, first_inner, stop_inner = [], n_tokens, n_tokens
    else:
        rows = own[first_inner:stop_inner]
        for k in range(window):  # left neighbours, farthest first
            rows = list(map(add, rows, context[k:k + n_inner]))
        for k in range(window + 1, 2 * window + 1):  # right neighbours
            rows = list(map(add, rows, context[k:k + n_inner]))
        inner = list(map(dict, map(zip, repeat(layout(-window, window, False, False)), rows)))
    features = []
    for i in chain(range(first_inner), range(stop_inner, n_tokens)):
        lo, hi = max(-window, -i), min(window, n_tokens - 1 - i)
        features.append(dict(zip(layout(lo, hi, i == 0, i == n_tokens - 1), values(i, lo, hi))))
    return features[:first_inner] + inner + features[first_inner:]


def _check_sentence(words, pos, sentence=None):
    """Check the words and (if given) tags of one sentence (number ``sentence``)."""
    _check_strings(words, "words", "word", sentence)
    if pos is not None:
        _check_strings(pos, "pos", "tag", sentence)
        if len(pos) != len(words):
            where = "" if sentence is None else f" (sentence {sentence})"
            raise ValueError(
                f"words and pos differ in length{where}: {len(words)} != {len(pos)}."
            )


def _check_window(window):
    if isinstance(window, bool) or not isinstance(window, Integral) or window < 0:
        raise ValueError(f"window must be a non-negative integer, got {window!r}.")


def word_features(words, pos=None, *, window=1):
    """Token feature dicts of one sentence, as in the sklearn-crfsuite tutorial.

    Every token gets ``'bias'``, ``'word.lower()'``, ``'word[-3:]'``,
    ``'word[-2:]'``, ``'word.isupper()'``, ``'word.istitle()'``,
    ``'word.isdigit()'`` and, when ``pos`` is given, ``'postag'`` and
    ``'postag[:2]'``. For each offset ``d`` in ``-window..-1, 1..window``
    that stays inside the sentence it also gets the neighbour's
    ``'{d:+d}:word.lower()'``, ``'{d:+d}:word.istitle()'``,
    ``'{d:+d}:word.isupper()'`` and, with ``pos``, ``'{d:+d}:postag'`` and
    ``'{d:+d}:postag[:2]'`` (e.g. ``'-1:word.lower()'``). The first token has
    ``'BOS': True`` and the last ``'EOS': True``.

    Parameters
    ----------
    words : sequence of str of length n_tokens
        The tokens of the sentence.
    pos : sequence of str of length n_tokens, default=None
        Their part-of-speech tags.
    window : int, default=1
        Number of neighbours on each side whose features are added.

    Returns
    -------
    features : list of n_tokens dict
        The feature dict of each token, the input of
        :class:`SequenceVectorizer` and sklearn-crfsuite.

    Examples
    --------
    >>> from skstruct.preprocessing import word_features
    >>> feats = word_features(["He", "ran"], ["PRP", "VBD"])
    >>> feats[1]["-1:word.lower()"], feats[1]["postag[:2]"], feats[1]["EOS"]
    ('he', 'VB', True)
    >>> sorted(feats[0])  # doctest: +NORMALIZE_WHITESPACE
    ['+1:postag', '+1:postag[:2]', '+1:word.istitle()', '+1:word.isupper()',
     '+1:word.lower()', 'BOS', 'bias', 'postag', 'postag[:2]', 'word.isdigit()',
     'word.istitle()', 'word.isupper()', 'word.lower()', 'word[-2:]', 'word[-3:]']
    """
    _check_window(window)
    _check_sentence(words, pos)
    return _word_features(words, pos, window)


def sentences_to_features(words_list, pos_list=None, *, window=1):
    """Apply :func:`word_features` to many sentences.

    Parameters
    ----------
    words_list : list of n_sentences sequences of str
        The tokens of each sentence.
    pos_list : list of n_sentences sequences of str, default=None
        The part-of-speech tags of each sentence.
    window : int, default=1
        Number of neighbours on each side whose features are added.

    Returns
    -------
    features : list of n_sentences lists of dict
        The token feature dicts of each sentence.

    Examples
    --------
    >>> from skstruct.preprocessing import sentences_to_features
    >>> X = sentences_to_features([["Hi"], ["Go", "on"]])
    >>> [len(x) for x in X], X[0][0]["BOS"], X[0][0]["EOS"]
    ([1, 2], True, True)
    """
    _check_window(window)
    _check_sentence_list(words_list, "words_list", "words")
    if pos_list is None:
        pos_list = repeat(None, len(words_list))
    else:
        _check_sentence_list(pos_list, "pos_list", "tags")
        if len(pos_list) != len(words_list):
            raise ValueError(
                f"words_list and pos_list differ in length: {len(words_list)} != "
                f"{len(pos_list)}."
            )
    features = []
    for i, (words, pos) in enumerate(zip(words_list, pos_list)):
        _check_sentence(words, pos, i)
        features.append(_word_features(words, pos, window))
    return features


def _check_sentence_list(sentences, name, items):
    """Reject a single sentence (or a string) where a list of sentences is expected."""
    if isinstance(sentences, (str, bytes, Mapping)) or not hasattr(sentences, "__len__"):
        raise TypeError(
            f"{name} must be a list of sentences (lists of {items}), got "
            f"{type(sentences).__name__}."
        )
    first = next(iter(sentences), None)
    if isinstance(first, (str, bytes)):
        raise TypeError(
            f"{name} must be a list of sentences (lists of {items}), not a list of "
            f"strings: for one sentence pass [{name[:-5]}] or use word_features."
        )
