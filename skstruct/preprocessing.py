"""Turn sequences of token feature dicts into per-sequence sparse matrices, and sentences
into arc feature matrices for dependency parsers."""

from collections.abc import Mapping
from itertools import chain, repeat
from numbers import Integral, Number

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.feature_extraction import DictVectorizer, FeatureHasher
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from ._dependency_features import ArcVectorizer

__all__ = ["ArcVectorizer", "SequenceVectorizer", "sentences_to_features", "word_features"]


def _check_sequences(X):
    """Validate a list of sequences of dicts and return the sequence lengths."""
    if isinstance(X, (str, Mapping)) or not hasattr(X, "__len__"):
        raise ValueError(
            "X must be a list of sequences, each a list of token feature dicts; "
            f"got {type(X).__name__}."
        )
    if len(X) == 0:
        raise ValueError("X is empty: pass at least one sequence.")
    if any(isinstance(seq, (str, Mapping)) for seq in X):
        raise ValueError(
            "X must be a list of sequences of token feature dicts, not a flat list "
            "of dicts: pass a list of sequences, e.g. [[{...}, {...}], [{...}]]."
        )
    return np.fromiter(map(len, X), dtype=np.intp, count=len(X))


def _split_rows(X, lengths):
    """Drop the stored zeros of CSR ``X`` and split its rows into blocks of ``lengths`` rows.

    The blocks are built from views of ``X.data`` and ``X.indices``, which is
    cheaper than slicing ``X[start:stop]`` for every block.
    """
    X.eliminate_zeros()
    bounds = np.zeros(len(lengths) + 1, dtype=np.intp)
    np.cumsum(lengths, out=bounds[1:])
    data, indices, indptr = X.data, X.indices, X.indptr
    n_features = X.shape[1]
    blocks = []
    for start, stop in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        lo, hi = indptr[start], indptr[stop]
        blocks.append(
            sp.csr_matrix(
                (data[lo:hi], indices[lo:hi], indptr[start : stop + 1] - lo),
                shape=(stop - start, n_features),
            )
        )
    return blocks


def _learn_vocabulary(tokens, sort):
    """One pass over the tokens: DictVectorizer's vocabulary, and a faster index into it.

    String values ``v`` of key ``k`` become features named ``"k=v"``, numbers (and None)
    the feature ``k``, iterables of strings one ``"k=item"`` feature per item, exactly as
    :class:`~sklearn.feature_extraction.DictVectorizer` names them.

    Returns
    -------
    names : list of str
        Feature names in column order (sorted if ``sort``, else by first appearance).
    by_value : dict of {key: {string value: column}}
    by_key : dict of {key: column}
    """
    vocabulary, by_value, by_key = {}, {}, {}

    def add_string(key, value):
        inner = by_value.get(key)
        if inner is None:
            inner = by_value[key] = {}
        if value not in inner:
            inner[value] = vocabulary.setdefault(f"{key}={value}", len(vocabulary))

    for token in tokens:
        for key, value in token.items():
            if type(value) is str:
                add_string(key, value)
            elif value is None or isinstance(value, Number):
                if key not in by_key:
                    by_key[key] = vocabulary.setdefault(key, len(vocabulary))
            else:
                for item in value:
                    add_string(key, item)
    names = list(vocabulary)
    if sort:
        order = sorted(range(len(names)), key=names.__getitem__)
        rank = np.empty(len(names), dtype=np.int64)
        rank[order] = np.arange(len(names))
        names = [names[i] for i in order]
        by_key = {key: int(rank[column]) for key, column in by_key.items()}
        by_value = {
            key: {value: int(rank[column]) for value, column in inner.items()}
            for key, inner in by_value.items()
        }
    return names, by_value, by_key


def _has_feature_names(estimator):
    if estimator.backend != "dict":
        raise AttributeError(
            "get_feature_names_out is only available with backend='dict': "
            f"hashed features (backend={estimator.backend!r}) have no names."
        )
    return True


class SequenceVectorizer(TransformerMixin, BaseEstimator, auto_wrap_output_keys=None):
    """Vectorize sequences of token feature dicts into per-sequence CSR matrices.

    Takes the sklearn-crfsuite input format: a list of sequences, each a list
    of tokens, each token a dict mapping feature names to values. A string
    value ``v`` of key ``k`` becomes the one-hot feature ``"k=v"`` with value
    1, numbers are kept as values and booleans become 1.0 or 0.0 (stored
    zeros are dropped). All tokens are vectorized in a single call, then the
    result is split into one matrix per sequence.

    Parameters
    ----------
    backend : {"dict", "hash"}, default="dict"
        ``"dict"`` learns a vocabulary with
        :class:`~sklearn.feature_extraction.DictVectorizer` (features unseen
        in fit are ignored by transform); ``"hash"`` is stateless and maps
        features to ``n_features`` columns with
        :class:`~sklearn.feature_extraction.FeatureHasher`.
    n_features : int, default=2**20
        Number of output columns of the hash backend.
    alternate_sign : bool, default=False
        Whether the hash backend gives features a pseudo-random sign to
        cancel out collisions on average.
    dtype : dtype, default=np.float64
        Type of the output values.
    sort : bool, default=True
        Whether the dict backend sorts the feature names.

    Attributes
    ----------
    vectorizer_ : DictVectorizer or FeatureHasher
        The fitted vectorizer applied to the flattened tokens.
    n_features_out_ : int
        Number of columns of the output matrices.
    feature_names_ : list of str
        The feature names, in column order (dict backend only).
    vocabulary_ : dict
        Mapping from feature name to column index (dict backend only).

    Examples
    --------
    >>> from skstruct.preprocessing import SequenceVectorizer
    >>> X = [[{"word": "the", "title": False}, {"word": "Cat", "title": True}],
    ...      [{"word": "sat", "title": False}]]
    >>> vec = SequenceVectorizer()
    >>> Xt = vec.fit_transform(X)
    >>> [x.shape for x in Xt]
    [(2, 4), (1, 4)]
    >>> vec.get_feature_names_out().tolist()
    ['title', 'word=Cat', 'word=sat', 'word=the']
    >>> Xt[0].toarray()
    array([[0., 0., 0., 1.],
           [1., 1., 0., 0.]])
    """

    _parameter_constraints: dict = {
        "backend": [StrOptions({"dict", "hash"})],
        "n_features": [Interval(Integral, 1, np.iinfo(np.int32).max, closed="both")],
        "alternate_sign": ["boolean"],
        "dtype": "no_validation",  # validation delegated to numpy
        "sort": ["boolean"],
    }

    def __init__(
        self,
        backend="dict",
        *,
        n_features=2**20,
        alternate_sign=False,
        dtype=np.float64,
        sort=True,
    ):
        self.backend = backend
        self.n_features = n_features
        self.alternate_sign = alternate_sign
        self.dtype = dtype
        self.sort = sort

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Learn the feature vocabulary (dict backend) or set up the hasher.

        Parameters
        ----------
        X : list of n_sequences lists of dict
            Token feature dicts, one list per sequence.
        y : None
            Ignored.

        Returns
        -------
        self : SequenceVectorizer
            The fitted vectorizer.
        """
        self._fit(X, transform=False)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_transform(self, X, y=None):
        """Fit on X and vectorize it, flattening the tokens only once.

        Parameters
        ----------
        X : list of n_sequences lists of dict
            Token feature dicts, one list per sequence.
        y : None
            Ignored.

        Returns
        -------
        Xt : list of n_sequences sparse matrices of shape (n_tokens_i, ``n_features_out_``)
            The CSR feature matrix of each sequence.
        """
        return self._fit(X, transform=True)

    def transform(self, X):
        """Vectorize sequences of token feature dicts.

        Parameters
        ----------
        X : list of n_sequences lists of dict
            Token feature dicts, one list per sequence.

        Returns
        -------
        Xt : list of n_sequences sparse matrices of shape (n_tokens_i, ``n_features_out_``)
            The CSR feature matrix of each sequence.
        """
        check_is_fitted(self)
        lengths = _check_sequences(X)
        if lengths.sum() == 0:
            return [sp.csr_matrix((0, self.n_features_out_), dtype=self.dtype) for _ in X]
        if self.backend == "hash":
            return _split_rows(self.vectorizer_.transform(chain.from_iterable(X)), lengths)
        return _split_rows(self._lookup(chain.from_iterable(X), lengths.sum()), lengths)

    @available_if(_has_feature_names)
    def get_feature_names_out(self, input_features=None):
        """Get the output feature names (dict backend only).

        Parameters
        ----------
        input_features : None
            Ignored; the names are learned from the token dicts.

        Returns
        -------
        feature_names_out : ndarray of shape (``n_features_out_``,), dtype=object
            The feature names, e.g. ``"word.lower()=the"`` or ``"bias"``.
        """
        check_is_fitted(self)
        return self.vectorizer_.get_feature_names_out()

    def _fit(self, X, transform):
        """Fit the vectorizer on all tokens; return the split output if ``transform``."""
        lengths = _check_sequences(X)
        if lengths.sum() == 0:
            raise ValueError("X contains no tokens: all sequences are empty.")
        tokens = chain.from_iterable(X)
        if self.backend == "hash":
            self.vectorizer_ = FeatureHasher(
                self.n_features,
                input_type="dict",
                dtype=self.dtype,
                alternate_sign=self.alternate_sign,
            )
            self.n_features_out_ = self.n_features
            return _split_rows(self.vectorizer_.transform(tokens), lengths) if transform else None
        names, by_value, by_key = _learn_vocabulary(tokens, self.sort)
        # A DictVectorizer fitted by its attributes, for users who want one.
        self.vectorizer_ = DictVectorizer(dtype=self.dtype, sort=self.sort)
        self.vectorizer_.feature_names_ = names
        self.vectorizer_.vocabulary_ = {name: column for column, name in enumerate(names)}
        self.feature_names_ = names
        self.vocabulary_ = self.vectorizer_.vocabulary_
        self.n_features_out_ = len(names)
        self._index = (by_value, by_key)
        if not transform:
            return None
        return _split_rows(self._lookup(chain.from_iterable(X), lengths.sum()), lengths)

    def _lookup(self, tokens, n_tokens):
        """CSR matrix of the tokens, columns looked up in the fitted vocabulary.

        Same output as ``DictVectorizer.transform``, several times faster: a string value
        is found with two dict lookups (key, then value) instead of building "key=value".
        """
        by_value, by_key = self._index
        empty = {}
        indices, data = [], []
        add_index, add_value = indices.append, data.append
        values_of, column_of_key = by_value.get, by_key.get
        indptr = np.empty(n_tokens + 1, dtype=np.int64)
        indptr[0] = 0
        for row, token in enumerate(tokens, start=1):
            for key, value in token.items():
                kind = type(value)
                if kind is str:
                    column = values_of(key, empty).get(value)
                    if column is not None:
                        add_index(column)
                        add_value(1.0)
                elif kind is bool or kind is float or kind is int or isinstance(value, Number):
                    column = column_of_key(key)
                    if column is not None and value:
                        add_index(column)
                        add_value(value)
                else:
                    for item in value:
                        column = values_of(key, empty).get(item)
                        if column is not None:
                            add_index(column)
                            add_value(1.0)
            indptr[row] = len(indices)
        matrix = sp.csr_matrix(
            (np.array(data, dtype=self.dtype), np.array(indices, dtype=np.int32), indptr),
            shape=(n_tokens, self.n_features_out_),
        )
        matrix.sum_duplicates()
        return matrix

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.dict = True
        tags.input_tags.two_d_array = False
        return tags


def _context_values(word, tag):
    values = (word.lower(), word.istitle(), word.isupper())
    return values if tag is None else values + (tag, tag[:2])


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
    if pos is not None and len(pos) != len(words):
        raise ValueError(f"words and pos differ in length: {len(words)} != {len(pos)}.")
    if not isinstance(window, Integral) or window < 0:
        raise ValueError(f"window must be a non-negative integer, got {window!r}.")
    names = ("word.lower()", "word.istitle()", "word.isupper()")
    if pos is not None:
        names += ("postag", "postag[:2]")
    tags = repeat(None) if pos is None else pos
    context = [_context_values(word, tag) for word, tag in zip(words, tags)]
    keys = {d: [f"{d:+d}:{name}" for name in names] for d in range(-window, window + 1)}
    n_tokens = len(words)
    features = []
    for i, word in enumerate(words):
        token = {
            "bias": 1.0,
            "word[-3:]": word[-3:],
            "word[-2:]": word[-2:],
            "word.isdigit()": word.isdigit(),
        }
        token.update(zip(names, context[i]))
        for d in range(max(-window, -i), 0):
            token.update(zip(keys[d], context[i + d]))
        if i == 0:
            token["BOS"] = True
        for d in range(1, min(window, n_tokens - 1 - i) + 1):
            token.update(zip(keys[d], context[i + d]))
        if i == n_tokens - 1:
            token["EOS"] = True
        features.append(token)
    return features


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
    if pos_list is None:
        pos_list = repeat(None, len(words_list))
    elif len(pos_list) != len(words_list):
        raise ValueError(
            f"words_list and pos_list differ in length: {len(words_list)} != {len(pos_list)}."
        )
    return [word_features(words, pos, window=window) for words, pos in zip(words_list, pos_list)]
