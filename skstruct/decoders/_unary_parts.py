"""Part vectors of outputs scored by one row of unary scores per example."""

import numpy as np

__all__ = ["UnaryParts"]


class UnaryParts:
    """Per-example part vectors held in one (n_samples, n_outputs) array.

    Subclasses name the family (multiclass: one-hot rows or class probabilities;
    multilabel: 0/1 rows or label probabilities); arithmetic keeps the subclass.

    Parameters
    ----------
    unary : ndarray of shape (n_samples, n_outputs)
    """

    def __init__(self, unary):
        self.unary = unary

    def _new(self, unary):
        return type(self)(unary)

    def __sub__(self, other):
        return self._new(self.unary - other.unary)

    def __add__(self, other):
        return self._new(self.unary + other.unary)

    def __mul__(self, factor):
        return self._new(self.unary * factor)

    __rmul__ = __mul__

    def __isub__(self, other):
        self.unary -= other.unary
        return self

    def example(self, i):
        """The parts of example ``i`` alone, as a view."""
        return self._new(self.unary[i : i + 1])

    def scale(self, weights):
        """Multiply the parts of example ``i`` by ``weights[i]``."""
        return self._new(self.unary * np.asarray(weights, dtype=np.float64)[:, None])

    def dot(self, scores):
        """Per-example inner products ⟨a_i, η_i⟩, shape (n_samples,)."""
        return np.einsum("ik,ik->i", self.unary, scores.unary)
