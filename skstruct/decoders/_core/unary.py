"""Score and part containers of outputs scored by one row of unary scores per example."""

import numpy as np

from .checks import _trusted, check_part_scores, check_score_array

__all__ = ["UnaryScores", "UnaryParts", "PartsArithmetic", "BlockParts"]


class UnaryScores:
    """Per-example part scores held in one (n_samples, n_outputs) array.

    Subclasses say what a row means (class scores, label-on scores) and how examples map
    to stacked "tokens" for task losses (``offsets``).

    Parameters
    ----------
    unary : ndarray of shape (n_samples, n_outputs)
        Real numbers or -inf (which forbids the output, or the label); NaN and +inf are
        rejected.
    """

    _output_name = "n_outputs"

    def __init__(self, unary):
        name = self._output_name
        unary = check_score_array(unary, "unary", owner=type(self).__name__, ndim=2,
                                  layout=f"(n_samples, {name})")
        if unary.shape[1] < 1:
            raise ValueError(
                f"unary has shape {unary.shape}; expected (n_samples, {name}) with {name} >= 1."
            )
        check_part_scores(unary, "unary", owner=type(self).__name__,
                          offsets=np.arange(unary.shape[0] + 1) * unary.shape[1])
        self.unary = unary

    @property
    def n_examples(self):
        """Number of examples in the batch."""
        return self.unary.shape[0]

    @property
    def unary_offsets(self):
        """Example ``i`` owns ``unary.ravel()[unary_offsets[i]:unary_offsets[i + 1]]``."""
        return np.arange(self.n_examples + 1) * self.unary.shape[1]

    def replace(self, *, unary=None):
        """A copy with the unary scores replaced."""
        return type(self)(self.unary if unary is None else unary)

    def take(self, indices):
        """The scores of examples ``indices`` (in that order)."""
        return _trusted(type(self), unary=self.unary[np.asarray(indices, dtype=np.int64)])


def _products(parts, scores):
    """parts * scores with 0 wherever a part is 0: a score of -inf forbids a part, and a
    part that is absent must not turn the score into NaN."""
    if np.isfinite(scores).all():
        return parts * scores
    with np.errstate(invalid="ignore"):
        product = parts * scores
    product[parts == 0] = 0.0
    return product


class PartsArithmetic:
    """Linear-space operations of part containers whose only array is ``unary``.

    Subclasses implement ``_new(unary)``: a container like ``self`` with other values.
    """

    def _new(self, unary):
        raise NotImplementedError

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


class BlockParts(PartsArithmetic):
    """Part vectors stored as one flat block per example (trees, matchings).

    Example ``i`` owns ``unary[unary_offsets[i]:unary_offsets[i + 1]]``; subclasses give
    ``unary_offsets`` and ``_new``.
    """

    @property
    def n_examples(self):
        """Number of examples in the batch."""
        return self.unary_offsets.shape[0] - 1

    def scale(self, weights):
        """Multiply the parts of example ``i`` by ``weights[i]``."""
        weights = np.asarray(weights, dtype=np.float64)
        return self._new(self.unary * np.repeat(weights, np.diff(self.unary_offsets)))

    def dot(self, scores):
        """Per-example inner products ⟨a_i, η_i⟩, shape (n_examples,)."""
        if self.n_examples == 0:
            return np.zeros(0)
        return np.add.reduceat(_products(self.unary, scores.unary), self.unary_offsets[:-1])


class UnaryParts(PartsArithmetic):
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

    @property
    def unary_offsets(self):
        """Example ``i`` owns ``unary.ravel()[unary_offsets[i]:unary_offsets[i + 1]]``."""
        return np.arange(self.unary.shape[0] + 1) * self.unary.shape[1]

    def example(self, i):
        """The parts of example ``i`` alone, as a view."""
        return self._new(self.unary[i : i + 1])

    def scale(self, weights):
        """Multiply the parts of example ``i`` by ``weights[i]``."""
        return self._new(self.unary * np.asarray(weights, dtype=np.float64)[:, None])

    def dot(self, scores):
        """Per-example inner products ⟨a_i, η_i⟩, shape (n_samples,)."""
        return _products(self.unary, scores.unary).sum(axis=1)
