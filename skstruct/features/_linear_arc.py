"""The linear feature map of arc-factored structures (dependency trees)."""

import numpy as np
import scipy.sparse as sp

from ..utils._trees import ArcRows
from ._arc_products import arc_matvec, arc_rmatvec
from ._base import FeatureMap
from ._compiled import compiled_rows

__all__ = ["LinearArcFeatures"]


class LinearArcFeatures(FeatureMap):
    """Arc scores X @ w for arc-factored outputs, and the transpose.

    Every arc of every sentence has a feature row (see :class:`~skstruct.utils._trees.TreeBatch`
    for the layout); its score is the row times the weight vector w of shape
    (n_features,).

    The rows are a scipy CSR matrix (from a list of per-sentence matrices), an
    :class:`~skstruct.utils._trees.ArcRows` (from an
    :class:`~skstruct.utils._trees.ArcFeatureBatch`, maybe without values) or a dense
    array. Sparse rows are multiplied by the compiled parallel products of
    :mod:`skstruct.features._arc_products`, which never read the values of binary rows.

    Parameters
    ----------
    n_features : int
    scores_type : type
        Score container built as ``scores_type(unary, token_offsets)``, e.g.
        :class:`~skstruct.decoders.TreeScores`.
    """

    def __init__(self, n_features, scores_type):
        self.n_features = int(n_features)
        self.scores_type = scores_type

    @property
    def n_params(self):
        """Length of the parameter vector w."""
        return self.n_features

    def unpack(self, w):
        """The weights themselves, shape (n_features,)."""
        return w

    def pack(self, coef):
        """The inverse of :meth:`unpack`."""
        return np.ascontiguousarray(coef, dtype=np.float64).ravel()

    def scores(self, batch, w):
        """Arc scores of every sentence of ``batch``: s = X w."""
        w = np.asarray(w, dtype=np.float64)
        if isinstance(batch.X, np.ndarray):
            return self.scores_type(np.ascontiguousarray(batch.X @ w), batch.token_offsets)
        indices, indptr, data, binary, order = _csr_arrays(batch)
        return self.scores_type(arc_matvec(indices, indptr, data, binary, w, order),
                                batch.token_offsets)

    def zero_scores(self, batch):
        """The arc scores at w = 0 (zeros of the right shape), without a product."""
        return self.scores_type(np.zeros(batch.X.shape[0]), batch.token_offsets)

    def compiled_features(self, batch):
        """The map as arrays for the compiled engine: one row per arc, K = 1, no bias,
        no pair parameters.

        Returns
        -------
        CompiledFeatures
        """
        return compiled_rows(batch.X, batch.offsets, self.n_features, 1, False, 0)

    def transpose(self, batch, grad):
        """Gradient with respect to w from per-arc score gradients ``grad.unary``: Xᵀ g."""
        g = np.asarray(grad.unary, dtype=np.float64).reshape(-1)
        if isinstance(batch.X, np.ndarray):
            return batch.X.T @ g
        indices, indptr, data, binary, order = _csr_arrays(batch)
        return arc_rmatvec(indices, indptr, data, binary, g, self.n_features, order)

    def example_transpose(self, batch, grad):
        """Sparse gradient with respect to w for a batch of one sentence.

        Returns
        -------
        indices : ndarray of shape (n_touched,), int64
        values : ndarray of shape (n_touched,)
        """
        g = np.asarray(grad.unary, dtype=np.float64).reshape(-1)
        X = batch.X
        if not (sp.issparse(X) or isinstance(X, ArcRows)):
            return np.arange(X.shape[1]), np.asarray(X).T @ g
        # Stochastic solvers call this once per step on the same one-sentence batches:
        # the columns present and each entry's place among them are computed once.
        layout = getattr(batch, "_column_layout", None)
        if layout is None:
            rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
            columns, position = np.unique(X.indices, return_inverse=True)
            columns = columns.astype(np.int64)
            order = getattr(X, "column_order", None)
            if order is not None:  # positions to columns: sorted again
                columns = order[columns]
                permutation = np.argsort(columns)
                inverse = np.empty_like(permutation)
                inverse[permutation] = np.arange(permutation.shape[0])
                columns, position = columns[permutation], inverse[position]
            layout = (rows, columns, position)
            batch._column_layout = layout
        rows, columns, position = layout
        weights = g[rows] if X.data is None else X.data * g[rows]
        values = np.bincount(position, weights=weights, minlength=columns.shape[0])
        return columns, values


def _csr_arrays(batch):
    """(indices, indptr as int64, data or None, binary, column order or None) of the
    batch's sparse rows.

    Computed once per batch and kept on it: whether a CSR matrix is binary takes a pass
    over its values, and its int32 ``indptr`` is widened once.
    """
    arrays = getattr(batch, "_arc_csr_arrays", None)
    if arrays is not None and arrays[0] is batch.X:
        return arrays[1]
    X = batch.X
    if isinstance(X, ArcRows):
        binary = X.binary
        data = None if binary else X.data
    else:
        X = X.tocsr()  # duplicate entries add up in both products, as in scipy's
        binary = bool(np.all(X.data == 1.0))
        data = None if binary else X.data
    indices = X.indices
    if indices.dtype not in (np.int32, np.int64):
        indices = indices.astype(np.int64)
    result = (indices, np.ascontiguousarray(X.indptr, dtype=np.int64), data, binary,
              getattr(X, "column_order", None))
    batch._arc_csr_arrays = (batch.X, result)
    return result
