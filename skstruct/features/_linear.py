"""The linear feature map of unstructured outputs (one score per class or per label)."""

import numpy as np

from ._base import FeatureMap
from ._compiled import compiled_rows
from ._linear_chain import _float_parts, _present_columns
from ._sparse import matmul, transpose_matmul

__all__ = ["LinearFeatures"]


class LinearFeatures(FeatureMap):
    """Part scores X @ W + b for multiclass or multilabel outputs, and the transpose.

    The parameter vector w concatenates W (n_features, n_outputs) and the bias b
    (n_outputs,). Row ``i`` of the unary scores holds the score of every class (multiclass)
    or of every label being on (multilabel) for example ``i``.

    Parameters
    ----------
    n_features : int
    n_outputs : int
        Number of classes or labels.
    scores_type : type
        The score container to build, e.g. ``MulticlassScores`` or ``MultilabelScores``;
        it is constructed from the unary scores alone.
    """

    def __init__(self, n_features, n_outputs, scores_type):
        self.n_features = int(n_features)
        self.n_outputs = int(n_outputs)
        self.scores_type = scores_type

    @property
    def n_params(self):
        """Length of the parameter vector w."""
        return (self.n_features + 1) * self.n_outputs

    def unpack(self, w):
        """Views of ``w``: (W (n_features, n_outputs), b (n_outputs,))."""
        cut = self.n_features * self.n_outputs
        return w[:cut].reshape(self.n_features, self.n_outputs), w[cut:]

    def pack(self, unary, bias):
        """The inverse of :meth:`unpack`."""
        return np.concatenate([np.ravel(unary), np.ravel(bias)])

    def scores(self, batch, w):
        """Part scores of every example of ``batch`` (one row of ``batch.X`` each)."""
        unary, bias = self.unpack(w)
        return self.scores_type(matmul(batch.X, unary) + bias)

    def scores_of_parts(self, batch, unary, bias):
        """:meth:`scores` from the parts :meth:`unpack` gives (a fitted model's
        ``coef_.T`` and ``intercept_``), without forming w; None when a part is not a
        float64 array of its shape there, or for a subclass that computes :meth:`scores`
        its own way."""
        if type(self).scores is not LinearFeatures.scores or not _float_parts((unary, (self.n_features, self.n_outputs)),
                            (bias, (self.n_outputs,))):
            return None
        return self.scores_type(matmul(batch.X, unary) + bias)

    def zero_scores(self, batch):
        """The part scores at w = 0 (zeros of the right shape), without a product."""
        return self.scores_type(np.zeros((batch.X.shape[0], self.n_outputs)))

    def compiled_features(self, batch):
        """The map as arrays for the compiled engine: one row per example,
        K = n_outputs, a bias, no pair parameters.

        Returns
        -------
        CompiledFeatures
        """
        return compiled_rows(batch.X, batch.offsets, self.n_features, self.n_outputs, True, 0)

    def transpose(self, batch, grad):
        """Gradient with respect to w from per-example part-score gradients ``grad``."""
        return self.pack(transpose_matmul(batch.X, grad.unary), grad.unary.sum(axis=0))

    def example_transpose(self, batch, grad):
        """Sparse gradient with respect to w for a batch of one example.

        Returns
        -------
        indices : ndarray of shape (n_touched,), int64
            Positions in w, without repetition.
        values : ndarray of shape (n_touched,)
        """
        columns, local = _present_columns(batch.X)
        unary = local.T @ grad.unary
        m = self.n_outputs
        indices = np.concatenate(
            [(columns[:, None] * m + np.arange(m)).ravel(), self.n_features * m + np.arange(m)]
        )
        return indices, np.concatenate([unary.ravel(), grad.unary.sum(axis=0)])
