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

    def intercept_positions(self):
        """The positions of the bias b in w, shape (n_outputs,), int64."""
        cut = self.n_features * self.n_outputs
        return np.arange(cut, cut + self.n_outputs, dtype=np.int64)

    def intercept_centring(self, mean):
        """The change of coordinates w = T v that centres the features at ``mean``
        (n_features,): W = W', b = b' − meanᵀ W', so that X W + b = (X − mean) W' + b'.
        With an unpenalized intercept it leaves the L2 term and the minimizer's W
        unchanged and decorrelates the intercept from the coefficients of uncentred
        features (an :class:`InterceptCentring`)."""
        return InterceptCentring(mean, self.n_features, self.n_outputs)

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


class InterceptCentring:
    """w = T v with W = W', b = b' − meanᵀ W' (the other parameters unchanged), for a
    parameter vector laid out as [vec W (n_features, n_outputs); b (n_outputs); ...].

    Parameters
    ----------
    mean : ndarray of shape (n_features,)
    n_features, n_outputs : int
    """

    def __init__(self, mean, n_features, n_outputs):
        self.mean = np.asarray(mean, dtype=np.float64).reshape(-1)
        self.n_features, self.n_outputs = int(n_features), int(n_outputs)
        self.cut = self.n_features * self.n_outputs
        if self.mean.shape != (self.n_features,):
            raise ValueError("the mean has the wrong number of features.")

    def _shift(self, v, sign):
        out = np.array(v, dtype=np.float64)
        W = out[:self.cut].reshape(self.n_features, self.n_outputs)
        out[self.cut:self.cut + self.n_outputs] += sign * (self.mean @ W)
        return out

    def forward(self, v):
        """w = T v."""
        return self._shift(v, -1.0)

    def inverse(self, w):
        """v = T⁻¹ w."""
        return self._shift(w, 1.0)

    def adjoint(self, gradient):
        """Tᵀ g: the gradient in v of a function whose gradient in w is ``gradient``."""
        out = np.array(gradient, dtype=np.float64)
        bias = out[self.cut:self.cut + self.n_outputs]
        out[:self.cut] -= np.outer(self.mean, bias).ravel()
        return out

    def curvature(self, squared, linear):
        """Σ_i c_ik (x_ij − mean_j)² for the W entries (and Σ_i c_ik for b) from
        ``squared`` = the transpose of c at the squared features (Σ_i c_ik x_ij², Σ_i c_ik)
        and ``linear`` = the transpose at the features (Σ_i c_ik x_ij), both laid out like w;
        negative rounding clipped to 0."""
        out = np.array(squared, dtype=np.float64)
        F, K, cut = self.n_features, self.n_outputs, self.cut
        counts = out[cut:cut + K]
        lin = np.asarray(linear, dtype=np.float64)[:cut].reshape(F, K)
        W = out[:cut].reshape(F, K)
        W += self.mean[:, None] * (self.mean[:, None] * counts[None, :] - 2.0 * lin)
        np.maximum(out, 0.0, out=out)
        return out
