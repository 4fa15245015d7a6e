"""The linear feature map of arc-factored structures (dependency trees)."""

import numpy as np
import scipy.sparse as sp

from ._compiled import compiled_rows
from ._sparse import matmul, transpose_matmul

__all__ = ["LinearArcFeatures"]


class LinearArcFeatures:
    """Arc scores X @ w for arc-factored outputs, and the transpose.

    Every arc of every sentence has a feature row (see :class:`~skstruct.utils._trees.TreeBatch`
    for the layout); its score is the row times the weight vector w of shape
    (n_features,).

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
        """Arc scores of every sentence of ``batch``."""
        arcs = matmul(batch.X, np.asarray(w, dtype=np.float64)[:, None])[:, 0]
        return self.scores_type(arcs, batch.token_offsets)

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
        """Gradient with respect to w from per-arc score gradients ``grad.unary``."""
        return transpose_matmul(batch.X, np.asarray(grad.unary).reshape(-1, 1))[:, 0]

    def example_transpose(self, batch, grad):
        """Sparse gradient with respect to w for a batch of one sentence.

        Returns
        -------
        indices : ndarray of shape (n_touched,), int64
        values : ndarray of shape (n_touched,)
        """
        g = np.asarray(grad.unary, dtype=np.float64).reshape(-1)
        X = batch.X
        if not sp.issparse(X):
            return np.arange(X.shape[1]), np.asarray(X).T @ g
        # Stochastic solvers call this once per step on the same one-sentence batches:
        # the columns present and each entry's place among them are computed once.
        layout = getattr(batch, "_column_layout", None)
        if layout is None:
            rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
            columns, position = np.unique(X.indices, return_inverse=True)
            layout = (rows, columns.astype(np.int64), position)
            batch._column_layout = layout
        rows, columns, position = layout
        values = np.bincount(position, weights=X.data * g[rows], minlength=columns.shape[0])
        return columns, values
