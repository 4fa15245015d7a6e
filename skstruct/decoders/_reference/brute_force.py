"""Inference by enumeration: the reference every decoder is tested against."""

from numbers import Integral

from sklearn.utils._param_validation import Interval

from .._core.checks import check_feasible, check_k, check_task_loss_argument
from .._core.decoder import Decoder
from .._core.enumeration import loss_augmented_outputs
from .._core.registry import families, family_of_scores

__all__ = ["BruteForceDecoder"]


class BruteForceDecoder(Decoder):
    """Answers every inference question by enumerating all outputs.

    Exponential in the size of the output: meant for tiny instances, as the reference
    implementation that tests compare the compiled decoders with. It follows the same
    rules for -inf scores: an output with a part scored -inf is never returned or
    listed, ``log_partition`` is -inf for an example with no output of finite score, and
    ``map``, ``top_k``, ``marginals`` and ``loss_augmented_map`` raise
    :class:`~skstruct.decoders.InfeasibleOutputError` for it. Supports the score
    container of every registered family with an enumeration
    (:mod:`skstruct.decoders._core.registry`): chains, multiclass, multilabel, trees and
    matchings (for matchings, marginals are computed too: by enumeration the permanent is
    no harder).

    Parameters
    ----------
    projective : bool, default=False
        Trees: enumerate projective trees only.
    single_root : bool, default=False
        Trees: enumerate trees with one word attached to the root only.
    max_outputs : int >= 1, default=1_000_000
        Largest number of outputs to enumerate for one example. Before enumerating, an
        operation raises a ``ValueError`` naming the first example with more (a chain of
        L tokens and S states has S^L labelings, L labels 2^L vectors, an n-word sentence
        n^n head assignments to sift, an (r, c) matching max(r, c)! / (max(r, c) − min(r, c))! outputs)
        instead of running for ever. The decoder is the test oracle for tiny instances:
        raise the limit knowingly.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.decoders import BruteForceDecoder, ChainScores
    >>> scores = ChainScores(np.array([[1., 0.], [0., 2.]]), np.array([0, 2]),
    ...                      np.zeros((2, 2)), np.zeros(2), np.zeros(2))
    >>> BruteForceDecoder().map(scores)
    array([0, 1])
    """

    capabilities = frozenset({"map", "marginals", "top_k", "loss_augmented_map", "parts"})

    @property
    def score_types(self):
        """The score containers of the registered families that have an enumeration."""
        return tuple(family.scores for family in families() if family.enumeration)
    _parameter_constraints: dict = {
        "projective": ["boolean"],
        "single_root": ["boolean"],
        "max_outputs": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, projective=False, single_root=False, max_outputs=1_000_000):
        self.projective = projective
        self.single_root = single_root
        self.max_outputs = max_outputs

    def _enumeration(self, scores):
        family = family_of_scores(scores)
        if family is not None and family.enumeration is not None:
            return family.enumeration(self)
        raise TypeError(f"BruteForceDecoder does not know {type(scores).__name__}.")

    def _enumerate(self, scores):
        """Every labeling of every chain of ``scores``: (i, outputs, unary parts,
        pairwise parts, scores) per sequence, for tests that need the outputs."""
        return self._enumeration(scores).labelings(scores)

    def _arc_factored(self, scores):
        """Every tree or matching of ``scores``: (i, outputs, indicator rows) per
        example, for tests that need the outputs."""
        for i, outputs, indicators, _ in self._enumeration(scores)._examples(scores):
            yield i, outputs, indicators

    def _check_size(self, scores):
        """Check the scores, then raise a ``ValueError`` before enumerating when an
        example has more than ``max_outputs`` outputs; return their enumeration."""
        self._check_scores(scores)
        enumeration = self._enumeration(scores)
        largest = enumeration.size(scores)
        if largest is not None and scores.n_examples and largest[0] > self.max_outputs:
            count, i, what, example = largest
            raise ValueError(
                f"BruteForceDecoder would enumerate {count} outputs of {example} {i}: "
                f"{what}, more than max_outputs={self.max_outputs}. It enumerates every "
                f"output and is meant for tiny instances (the test oracle); use the "
                f"decoder of the family, or raise max_outputs."
            )
        return enumeration

    def map(self, scores, *, return_score=False):
        labels, best = self._check_size(scores).map(scores)
        check_feasible(best)
        return (labels, best) if return_score else labels

    def log_partition(self, scores):
        return self._check_size(scores).log_partition(scores)

    def marginals(self, scores):
        check_feasible(self.log_partition(scores))
        return self._enumeration(scores).marginals(scores)

    def top_k(self, scores, k):
        enumeration = self._check_size(scores)
        k = check_k(k)
        paths, top = enumeration.top_k(scores, k)
        check_feasible(top[:, 0])
        return paths, top

    def loss_augmented_map(self, scores, y_true, task_loss, rescaling="margin"):
        enumeration = self._check_size(scores)
        task_loss = check_task_loss_argument(task_loss)
        if rescaling not in ("margin", "slack"):
            raise ValueError(f"rescaling must be 'margin' or 'slack'; got {rescaling!r}.")
        y_true = scores._check_outputs(y_true, name="y_true")
        found = enumeration.loss_augmented(scores, y_true, task_loss, rescaling)
        return enumeration.stack(loss_augmented_outputs(found, rescaling))

    def parts(self, scores, y):
        self._check_scores(scores)
        y = scores._check_outputs(y)
        return self._enumeration(scores).parts(scores, y)

    def cost_augmented(self, scores, y_true, task_loss):
        """Scores η + c with ⟨c, a_y⟩ = Δ(y_true, y) up to a constant per example: those
        of the family's decoder (see its ``cost_augmented``)."""
        self._check_scores(scores)
        return self._enumeration(scores).family_decoder().cost_augmented(
            scores, y_true, task_loss)
