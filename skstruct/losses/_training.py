"""Training losses: value and gradient with respect to part scores."""

from ..decoders._base import check_capability
from ._task import check_task_loss

__all__ = ["TrainingLoss", "CRFLoss"]


class TrainingLoss:
    """Base class of training losses.

    A training loss is called as ``loss(decoder, scores, y_true, gold=None)`` and returns
    the loss of every example, shape (n_examples,), and its gradient with respect to the
    part scores, per example, as a part container laid out like ``scores`` (for the
    Fenchel–Young losses, μ* − a_y: the maximizer minus the gold indicators). ``gold`` may
    pass the indicator parts ``decoder.parts(scores, y_true)`` when the caller has them
    already (they do not depend on the scores). ``required_capability`` is the decoder
    operation it calls.
    """

    required_capability = None

    def check_decoder(self, decoder):
        """Raise a clear error when ``decoder`` lacks the operation this loss calls."""
        check_capability(decoder, self.required_capability, type(self).__name__)

    def __call__(self, decoder, scores, y_true, gold=None):
        raise NotImplementedError


class CRFLoss(TrainingLoss):
    """Conditional random field log loss, or softmax-margin with a task loss.

    ℓ(η; ȳ) = log Σ_y exp(θ_y + Δ(ȳ, y)) − θ_ȳ, with gradient E_p[a_y] − a_ȳ under
    p(y) ∝ exp(θ_y + Δ(ȳ, y)). Without a cost (Δ = 0) this is the negative conditional
    log-likelihood −log p(ȳ | x).

    Parameters
    ----------
    cost : None, str or TaskLoss, default=None
        A task loss that decomposes over tokens (for instance ``"hamming"``) turns the log
        loss into the softmax-margin loss (Gimpel & Smith, 2010).

    References
    ----------
    Lafferty, McCallum & Pereira (2001). Conditional random fields: probabilistic models for
    segmenting and labeling sequence data. ICML.
    Gimpel & Smith (2010). Softmax-margin CRFs: training log-linear models with cost
    functions. NAACL.
    """

    required_capability = "marginals"

    def __init__(self, cost=None):
        self.cost = None if cost is None else check_task_loss(cost, "cost")
        if self.cost is not None and not hasattr(self.cost, "unary_costs"):
            raise ValueError(
                f"The softmax-margin cost must decompose over tokens; "
                f"{type(self.cost).__name__} does not."
            )

    def __call__(self, decoder, scores, y_true, gold=None):
        augmented = scores
        if self.cost is not None:
            costs = self.cost.unary_costs(y_true, scores.offsets, scores.n_states)
            augmented = scores.replace(unary=scores.unary + costs)
        log_z, expected = decoder.marginals(augmented)
        if gold is None:
            gold = decoder.parts(scores, y_true)
        values = log_z - gold.dot(scores)
        expected -= gold
        return values, expected
