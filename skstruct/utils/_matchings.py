"""Validation and batch-first storage of bipartite matching data.

An instance is a complete bipartite graph between ``n_rows`` rows and ``n_cols`` columns
(rectangular allowed) with one feature vector per (row, column) pair. Users give it as

- a 3-D array of shape (n_rows, n_cols, n_features): entry ``[j, k]`` holds the features
  of the pair "row j with column k"; or
- a tuple ``(pair_features, (n_rows, n_cols))`` with ``pair_features`` a dense or sparse
  (n_rows * n_cols, n_features) matrix, row-major: row ``j * n_cols + k`` holds the
  features of the pair (j, k). This is the form for sparse features.

``X`` is a list of instances (or a 4-D array of equal-shape instances). Its matching is
an integer array of length ``n_rows``: the column matched to every row, or -1 for a row
left unmatched. A matching pairs min(n_rows, n_cols) rows with distinct columns, so -1
appears only when n_rows > n_cols (exactly n_rows - n_cols times).

Stacked, the pair rows of all instances form one (Σ_i r_i c_i, n_features) matrix, the
layout of :class:`~skstruct.decoders.MatchingScores`; the matchings are stacked over the
rows (the encoded outputs of :class:`~skstruct.decoders.MatchingDecoder`).
"""

import numpy as np
import scipy.sparse as sp

from ._blocks import cumulative
from ._sequences import SequenceBatch, check_sequences

__all__ = ["MatchingBatch", "check_matchings", "looks_like_matchings"]

_FORMS = ("a 3-D (n_rows, n_cols, n_features) array of pair features or a tuple "
          "(pair_features, (n_rows, n_cols)) with a (n_rows * n_cols, n_features) "
          "row-major matrix")


class MatchingBatch(SequenceBatch):
    """Pair features of many matching instances, stacked batch-first.

    Parameters
    ----------
    X : ndarray or scipy.sparse CSR matrix of shape (Σ_i r_i c_i, n_features)
        Pair features of all instances, one instance after the other, each row-major
        (row ``j * c_i + k`` of instance ``i`` is the pair (j, k)).
    shapes : ndarray of shape (n_instances, 2), int
        (r_i, c_i) of every instance.

    Attributes
    ----------
    offsets : ndarray of shape (n_instances + 1,)
        Instance ``i`` owns pair rows ``offsets[i]:offsets[i + 1]`` (cumulative r_i c_i).
    output_offsets : ndarray of shape (n_instances + 1,)
        Instance ``i`` owns encoded outputs ``output_offsets[i]:output_offsets[i + 1]``,
        one per row (cumulative r_i).
    """

    def __init__(self, X, shapes):
        shapes = np.ascontiguousarray(shapes, dtype=np.int64).reshape(-1, 2)
        super().__init__(X, cumulative(shapes[:, 0] * shapes[:, 1]))
        self.shapes = shapes
        self._row_offsets = cumulative(shapes[:, 0])

    @property
    def output_offsets(self):
        """Row offsets: instance ``i`` owns outputs ``output_offsets[i]:output_offsets[i + 1]``."""
        return self._row_offsets

    def take(self, indices):
        """The sub-batch of the instances at ``indices``, in that order."""
        indices = np.asarray(indices, dtype=np.int64)
        pairs = super().take(indices)
        return MatchingBatch(pairs.X, self.shapes[indices])


def looks_like_matchings(X):
    """True when ``X`` has the form of matching instances (a list of 3-D arrays or of
    ``(pair_features, (n_rows, n_cols))`` tuples, or a 4-D array)."""
    if isinstance(X, np.ndarray) and X.dtype != object:
        return X.ndim == 4
    if sp.issparse(X) or not isinstance(X, (list, tuple, np.ndarray)) or len(X) == 0:
        return False
    first = X[0]
    if isinstance(first, tuple):
        return len(first) == 2 and np.ndim(first[1]) == 1 and np.size(first[1]) == 2
    if sp.issparse(first):
        return False
    try:
        return np.ndim(first) == 3
    except ValueError:  # ragged
        return False


def _as_instances(X, where):
    if isinstance(X, np.ndarray) and X.dtype != object:
        if X.ndim == 4:
            return list(X)
        raise TypeError(
            f"X must be a list of matching instances, each {_FORMS}; got an ndarray of "
            f"shape {X.shape}{where}. For a single instance pass [X]."
        )
    if sp.issparse(X) or isinstance(X, (str, bytes, dict)) or not hasattr(X, "__len__"):
        raise TypeError(
            f"X must be a list of matching instances, each {_FORMS}; got "
            f"{type(X).__name__}{where}."
        )
    return list(X)


def _instance_shape(shape, i, where):
    try:
        shape = np.asarray(shape)
    except ValueError:
        shape = np.zeros(0)
    if shape.shape != (2,) or not np.issubdtype(shape.dtype, np.integer):
        raise ValueError(
            f"Instance {i} of X is a tuple whose second item is not an (n_rows, n_cols) pair "
            f"of integers{where}; the sparse form of an instance is (pair_features, "
            "(n_rows, n_cols))."
        )
    return int(shape[0]), int(shape[1])


def _is_listed_pair(instance):
    """True for ``[pair_features, (n_rows, n_cols)]``: the tuple form given as a list."""
    if not isinstance(instance, list) or len(instance) != 2:
        return False
    features, shape = instance
    try:
        return (np.ndim(shape) == 1 and np.size(shape) == 2
                and (sp.issparse(features) or np.ndim(features) == 2))
    except ValueError:  # ragged
        return False


def _pair_matrix(instance, i, where):
    """One instance as its (r * c, n_features) pair matrix and its (r, c)."""
    if isinstance(instance, tuple):
        if len(instance) != 2:
            raise ValueError(
                f"Instance {i} of X is a tuple of {len(instance)} items{where}; the sparse "
                "form of an instance is (pair_features, (n_rows, n_cols))."
            )
        features, shape = instance
        r, c = _instance_shape(shape, i, where)
        if not sp.issparse(features):
            try:
                features = np.asarray(features)
            except ValueError as exc:
                raise ValueError(
                    f"Instance {i} of X has pair features that are not a rectangular "
                    f"matrix{where}: {exc}"
                ) from None
        if r < 1 or c < 1:
            raise ValueError(
                f"Instance {i} of X has shape ({r}, {c}); a matching needs at least one row "
                f"and one column{where}."
            )
        if features.ndim != 2 or features.shape[0] != r * c:
            raise ValueError(
                f"Instance {i} of X has pair features of shape {features.shape} for "
                f"(n_rows, n_cols) = ({r}, {c}); it needs a 2-D matrix of n_rows * n_cols = "
                f"{r * c} rows (row j * n_cols + k: row j with column k){where}."
            )
        return features, (r, c)
    if sp.issparse(instance):
        raise ValueError(
            f"Instance {i} of X is a sparse matrix, which does not say its (n_rows, n_cols)"
            f"{where}; pass sparse pair features as (pair_features, (n_rows, n_cols))."
        )
    if _is_listed_pair(instance):
        raise ValueError(
            f"Instance {i} of X is a list [pair_features, (n_rows, n_cols)]{where}; the "
            "sparse form of an instance is a tuple: (pair_features, (n_rows, n_cols))."
        )
    try:
        array = np.asarray(instance)
    except ValueError as exc:
        raise ValueError(f"Instance {i} of X is not a rectangular array{where}: {exc}") from None
    if array.ndim != 3:
        hint = (" For one feature per pair, add an axis: x[..., None]."
                if array.ndim == 2 else "")
        raise ValueError(
            f"Instance {i} of X has {array.ndim} dimension(s); each instance must be "
            f"{_FORMS}{where}.{hint}"
        )
    r, c, n_features = array.shape
    if r < 1 or c < 1:
        raise ValueError(
            f"Instance {i} of X has shape {array.shape}; a matching needs at least one row "
            f"and one column{where}."
        )
    return array.reshape(r * c, n_features), (r, c)


def check_matchings(X, y=None, *, n_features=None, estimator=None):
    """Validate matching data and stack it batch-first.

    Parameters
    ----------
    X : list of instances
        Each a 3-D array-like (n_rows, n_cols, n_features), or a tuple
        ``(pair_features, (n_rows, n_cols))`` with a dense or sparse row-major
        (n_rows * n_cols, n_features) matrix; a 4-D array is read as equal-shape
        instances. See the module docstring.
    y : list of array-like of shape (n_rows_i,), default=None
        The column matched to every row, -1 for an unmatched row; every instance's
        matching pairs min(n_rows, n_cols) rows with distinct columns.
    n_features : int, default=None
        Expected number of features.
    estimator : str, default=None
        Name used in error messages.

    Returns
    -------
    batch : MatchingBatch
    y_encoded : ndarray of shape (Σ_i r_i,), int64, or None
        The matchings of all instances, stacked over their rows.

    Raises
    ------
    ValueError
        On malformed instances (wrong dimensions, empty, pair rows that do not fit the
        shape), inconsistent numbers of features, NaN or infinite features, or a ``y``
        that is not a maximum-cardinality matching of its instance.
    TypeError
        When X is not a list of instances.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.utils._matchings import check_matchings
    >>> X = [np.ones((2, 2, 3)), (np.ones((3, 3)), (3, 1))]
    >>> batch, y = check_matchings(X, [np.array([1, 0]), np.array([-1, 0, -1])])
    >>> batch.X.shape, batch.shapes.tolist(), batch.output_offsets, y
    ((7, 3), [[2, 2], [3, 1]], array([0, 2, 5]), array([ 1,  0, -1,  0, -1]))
    """
    where = f" in {estimator}" if estimator else ""
    instances = _as_instances(X, where)
    if len(instances) == 0:
        raise ValueError(f"X contains no instances{where}; at least one is required.")
    blocks, shapes = zip(*(_pair_matrix(x, i, where) for i, x in enumerate(instances)))
    widths = np.array([b.shape[1] for b in blocks])
    if np.any(widths != widths[0]):
        bad = int(np.flatnonzero(widths != widths[0])[0])
        raise ValueError(
            f"Instance {bad} of X has {widths[bad]} features but instance 0 has "
            f"{widths[0]}{where}."
        )
    pairs, _ = check_sequences(list(blocks), n_features=n_features, estimator=estimator)
    batch = MatchingBatch(pairs.X, np.array(shapes, dtype=np.int64))
    if y is None:
        return batch, None
    return batch, _check_assignments(y, batch.shapes, where)


def _check_assignments(y, shapes, where):
    """The users' matchings checked against ``shapes`` and stacked over the rows."""
    if isinstance(y, np.ndarray) and y.dtype != object and y.ndim == 2:
        rows = list(y)
    elif sp.issparse(y) or isinstance(y, (str, bytes, dict)) or not hasattr(y, "__len__"):
        raise TypeError(
            f"y must be a list of integer arrays, one per instance (the column of every row, "
            f"-1 for an unmatched row); got {type(y).__name__}{where}."
        )
    else:
        rows = list(y)
    n = shapes.shape[0]
    if len(rows) != n:
        raise ValueError(f"X has {n} instances but y has {len(rows)}{where}.")
    rows = [np.asarray(row) for row in rows]
    for i, row in enumerate(rows):
        if row.shape != (shapes[i, 0],):
            raise ValueError(
                f"Instance {i} has {shapes[i, 0]} rows in X but y[{i}] has shape "
                f"{row.shape}{where}; y[{i}] holds the column of every row."
            )
        if row.size and not np.issubdtype(row.dtype, np.integer):
            raise ValueError(
                f"y[{i}] must hold column indices (integers, -1 for an unmatched row); got "
                f"dtype {row.dtype}{where}."
            )
    flat = np.concatenate(rows).astype(np.int64)
    instance = np.repeat(np.arange(n, dtype=np.int64), shapes[:, 0])
    n_cols = shapes[instance, 1]
    bad = np.flatnonzero((flat < -1) | (flat >= n_cols))
    if bad.size:
        i = instance[bad[0]]
        raise ValueError(
            f"y[{i}] must hold column indices in 0 .. {shapes[i, 1] - 1} (instance {i} has "
            f"{shapes[i, 1]} columns), or -1 for an unmatched row; got {flat[bad[0]]}{where}."
        )
    matched = flat >= 0
    col_offsets = cumulative(shapes[:, 1])
    uses = np.bincount(col_offsets[instance[matched]] + flat[matched],
                       minlength=int(col_offsets[-1]))
    if np.any(uses > 1):
        k = int(np.flatnonzero(uses > 1)[0])
        i = int(np.searchsorted(col_offsets, k, side="right") - 1)
        raise ValueError(
            f"y[{i}] matches column {k - col_offsets[i]} to {uses[k]} rows; a matching uses "
            f"every column at most once{where}."
        )
    n_matched = np.bincount(instance[matched], minlength=n)
    expected = shapes.min(axis=1)
    wrong = np.flatnonzero(n_matched != expected)
    if wrong.size:
        i = wrong[0]
        r, c = shapes[i]
        raise ValueError(
            f"y[{i}] matches {n_matched[i]} of its {r} rows, but a matching of an instance "
            f"of shape ({r}, {c}) pairs min(n_rows, n_cols) = {expected[i]} rows (every row "
            f"when n_rows <= n_cols, every column otherwise){where}."
        )
    return flat
