"""Sequences of token feature dicts to per-sequence sparse matrices:
:class:`~skstruct.preprocessing.SequenceVectorizer`.

The dict backend learns its vocabulary itself and finds the columns of all tokens at once
through the column table of :mod:`._vectorizing` (``lookup_csr``), with a per-item lookup
for other mappings and value types; the hash backend is scikit-learn's
:class:`~sklearn.feature_extraction.FeatureHasher`. Either way the matrix of all tokens
is split into one block per sequence (``split_rows``), and bad input raises an error that
names the token.
"""

import math
from collections.abc import Iterable, Mapping
from itertools import chain
from numbers import Integral, Number

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.feature_extraction import DictVectorizer, FeatureHasher
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..utils._available import available_if_with_reason
from ._arc_vectorizer import _check_dtype
from ._vectorizing import column_table, lookup_csr, split_rows

__all__ = ["SequenceVectorizer"]


def _check_sequences(X):
    """Validate a list of sequences of dicts and return the sequence lengths."""
    if isinstance(X, (str, Mapping)) or not hasattr(X, "__len__"):
        raise ValueError(
            "X must be a list of sequences, each a list of token feature dicts; "
            f"got {type(X).__name__}."
        )
    if len(X) == 0:
        raise ValueError("X is empty: pass at least one sequence.")
    if not {list, tuple}.issuperset(map(type, X)) and any(
            isinstance(seq, (str, Mapping)) for seq in X):
        raise ValueError(
            "X must be a list of sequences of token feature dicts, not a flat list "
            "of dicts: pass a list of sequences, e.g. [[{...}, {...}], [{...}]]."
        )
    try:
        return np.fromiter(map(len, X), dtype=np.intp, count=len(X))
    except TypeError:
        i, seq = next((i, seq) for i, seq in enumerate(X) if not hasattr(seq, "__len__"))
        raise TypeError(
            "X must be a list of sequences, each a list of token feature dicts; "
            f"sequence {i} is {type(seq).__name__}."
        ) from None


def _string_items(value):
    """The items of a multi-valued feature (an iterable of strings); TypeError otherwise.

    Called only for values that are neither strings nor numbers, so it costs nothing
    on tokens without multi-valued features.
    """
    if isinstance(value, (Mapping, bytes, bytearray)):
        raise TypeError(f"unsupported feature value {value!r}")
    items = value if isinstance(value, (list, tuple)) else list(value)
    "".join(items)  # TypeError unless every item is a string, checked at C speed
    return items


def _value_problem(value, backend):
    """Why a token feature value is rejected (a phrase), or None if it is valid.

    Valid values are those of :class:`~sklearn.feature_extraction.DictVectorizer`:
    strings, finite real numbers (booleans included) and, with ``backend="dict"``,
    iterables of strings (one feature per string).
    """
    if isinstance(value, str):
        return None
    if value is None:
        return "has value None (a missing value: leave the key out of the token's dict)"
    if isinstance(value, Number) and not isinstance(value, complex):
        try:
            finite = math.isfinite(value)
        except (TypeError, ValueError):
            return f"has value {value!r} of type {type(value).__name__}, not a real number"
        return None if finite else f"has value {value!r}; values must be finite"
    if isinstance(value, Mapping):
        return "is a dict; nested dicts are not supported: flatten them into the token's dict"
    if isinstance(value, Iterable) and not isinstance(value, (bytes, bytearray)):
        if backend == "hash":
            return (
                f"is a {type(value).__name__}: backend='hash' takes string and number "
                "values only (multi-valued features need backend='dict')"
            )
        for item in value:
            if not isinstance(item, str):
                return (
                    f"is a {type(value).__name__} holding {item!r} of type "
                    f"{type(item).__name__}; a multi-valued feature must hold strings only"
                )
        return None
    return (
        f"has value {value!r} of type {type(value).__name__}; values must be strings, "
        "finite numbers or lists of strings"
    )


def _bad_token_error(X, backend):
    """The error describing the first invalid token or value of ``X``, or None.

    A scan run only once vectorizing has failed or produced non-finite values, so that
    valid input pays nothing for it.
    """
    for i, seq in enumerate(X):
        for j, token in enumerate(seq):
            if not isinstance(token, Mapping):
                return TypeError(
                    f"tokens must be feature dicts; sequence {i} token {j} is "
                    f"{type(token).__name__} (use sentences_to_features to build them "
                    "from words)."
                )
            for key, value in token.items():
                problem = _value_problem(value, backend)
                if problem is not None:
                    real = isinstance(value, Number) and not isinstance(value, complex)
                    kind = ValueError if real else TypeError  # NaN/inf, or a bad type
                    return kind(f"feature {key!r} of sequence {i} token {j} {problem}.")
    return None


def _learn_vocabulary(tokens, sort):
    """One pass over the tokens: DictVectorizer's vocabulary, and a faster index into it.

    String values ``v`` of key ``k`` become features named ``"k=v"``, numbers the feature
    ``k``, iterables of strings one ``"k=item"`` feature per item, exactly as
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
            elif isinstance(value, Number):
                if key not in by_key:
                    by_key[key] = vocabulary.setdefault(key, len(vocabulary))
            else:
                for item in _string_items(value):
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
    dtype : floating dtype, default=np.float64
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
        _check_dtype(self.dtype)
        lengths = _check_sequences(X)
        if lengths.sum() == 0:
            return [sp.csr_matrix((0, self.n_features_out_), dtype=self.dtype) for _ in X]
        return split_rows(self._vectorize(X, lengths), lengths)

    @available_if_with_reason(_has_feature_names)
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
        """Fit the vectorizer on all tokens; return the split output if ``transform``.

        ``fit`` vectorizes ``X`` too (and drops the result), so that it rejects every
        input that ``transform`` rejects. Nothing is stored unless ``X`` is valid.
        """
        _check_dtype(self.dtype)
        lengths = _check_sequences(X)
        if lengths.sum() == 0:
            raise ValueError("X contains no tokens: all sequences are empty.")
        if self.backend == "hash":
            fitted = {
                "vectorizer_": FeatureHasher(
                    self.n_features,
                    input_type="dict",
                    dtype=self.dtype,
                    alternate_sign=self.alternate_sign,
                ),
                "n_features_out_": self.n_features,
            }
        else:
            names, by_value, by_key = self._guarded(
                X, _learn_vocabulary, chain.from_iterable(X), self.sort
            )
            # A DictVectorizer fitted by its attributes, for users who want one.
            vectorizer = DictVectorizer(dtype=self.dtype, sort=self.sort)
            vectorizer.feature_names_ = names
            vectorizer.vocabulary_ = {name: column for column, name in enumerate(names)}
            fitted = {
                "vectorizer_": vectorizer,
                "feature_names_": names,
                "vocabulary_": vectorizer.vocabulary_,
                "n_features_out_": len(names),
                "_index": (column_table(by_value, by_key), by_key),
            }
        matrix = self._vectorize(X, lengths, fitted)
        for name in ("feature_names_", "vocabulary_", "_index"):
            self.__dict__.pop(name, None)
        self.__dict__.update(fitted)
        return split_rows(matrix, lengths) if transform else None

    def _vectorize(self, X, lengths, fitted=None):
        """CSR matrix of all tokens of ``X``, checked: an error names the bad token.

        ``fitted`` holds the fitted attributes to use instead of ``self``'s (``fit``
        sets them only once ``X`` has been vectorized without error).
        """
        fitted = vars(self) if fitted is None else fitted
        if self.backend == "hash":
            matrix = self._guarded(X, fitted["vectorizer_"].transform, chain.from_iterable(X))
        else:
            tokens = list(chain.from_iterable(X))
            table, by_key = fitted["_index"]
            matrix = None
            if set(map(type, tokens)) == {dict}:
                matrix = lookup_csr(tokens, table, by_key, fitted["n_features_out_"], self.dtype)
            if matrix is None:  # other mappings or value types, or bad input
                matrix = self._guarded(
                    X, self._lookup, tokens, len(tokens), fitted["_index"],
                    fitted["n_features_out_"],
                )
        if not np.isfinite(matrix.data).all():
            error = _bad_token_error(X, self.backend)
            raise error or ValueError("X contains NaN or infinite feature values.")
        return matrix

    def _guarded(self, X, function, *args):
        """``function(*args)``; if it fails on bad input, raise an error naming the token."""
        try:
            return function(*args)
        except (AttributeError, TypeError, ValueError) as exc:
            error = _bad_token_error(X, self.backend)
            if error is None:
                raise
            raise error from exc

    def _lookup(self, tokens, n_tokens, index, n_features_out):
        """CSR matrix of the tokens, columns looked up in the fitted vocabulary ``index``.

        Same output as ``DictVectorizer.transform``, several times faster: a string value
        is found with two dict lookups (key, then value) instead of building "key=value".
        """
        by_value, by_key = index
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
                    for item in _string_items(value):
                        column = values_of(key, empty).get(item)
                        if column is not None:
                            add_index(column)
                            add_value(1.0)
            indptr[row] = len(indices)
        matrix = sp.csr_matrix(
            (np.array(data, dtype=self.dtype), np.array(indices, dtype=np.int32), indptr),
            shape=(n_tokens, n_features_out),
        )
        matrix.sum_duplicates()
        return matrix

    def __getstate__(self):
        """The state to pickle: the dict backend keeps only its column index, from which
        the feature names, the vocabulary and the DictVectorizer are rebuilt on loading
        (they hold every name two or three times: 1.8 MB of a 2.4 MB pickle on
        CoNLL-2000's tutorial features, the index alone 0.5 MB)."""
        state = super().__getstate__()
        if "_index" in state:
            state = dict(state)
            for name in ("feature_names_", "vocabulary_", "vectorizer_"):
                state.pop(name, None)
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        if "_index" in state and "feature_names_" not in state:
            table, by_key = self._index
            names = [None] * self.n_features_out_
            for key, values in table.items():
                for value, column in values.items():
                    if isinstance(value, str):
                        names[column] = f"{key}={value}"
            for key, column in by_key.items():
                names[column] = key
            vectorizer = DictVectorizer(dtype=self.dtype, sort=self.sort)
            vectorizer.feature_names_ = names
            vectorizer.vocabulary_ = {name: column for column, name in enumerate(names)}
            self.vectorizer_ = vectorizer
            self.feature_names_ = names
            self.vocabulary_ = vectorizer.vocabulary_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.dict = True
        tags.input_tags.two_d_array = False
        return tags
