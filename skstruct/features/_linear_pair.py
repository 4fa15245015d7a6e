"""The linear feature map of bipartite matchings: one score per (row, column) pair."""

import numpy as np

from ._linear_arc import LinearArcFeatures
from ._sparse import matmul

__all__ = ["LinearPairFeatures"]


class LinearPairFeatures(LinearArcFeatures):
    """Pair scores X @ w for matchings, and the transpose.

    Every (row, column) pair of every instance has a feature row (the layout of
    :class:`~skstruct.utils._matchings.MatchingBatch`); its score is the row times the
    weight vector w of shape (n_features,), so instance ``i`` gets the (r_i, c_i) score
    matrix S_i[j, k] = x_{i,jk} · w. The transposes are those of arc-factored trees; only
    the score container differs (:class:`~skstruct.decoders.MatchingScores`, which
    needs every instance's (n_rows, n_cols)).

    Parameters
    ----------
    n_features : int
    scores_type : type
        Score container built as ``scores_type(unary, shapes)``, e.g.
        :class:`~skstruct.decoders.MatchingScores`.
    """

    def scores(self, batch, w):
        """Pair scores of every instance of ``batch`` (a ``MatchingBatch``)."""
        pairs = matmul(batch.X, np.asarray(w, dtype=np.float64)[:, None])[:, 0]
        return self.scores_type(pairs, batch.shapes)

    def zero_scores(self, batch):
        """The pair scores at w = 0, without a product."""
        return self.scores_type(np.zeros(batch.X.shape[0]), batch.shapes)
