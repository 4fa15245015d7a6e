"""The interface every decoder implements."""

import numpy as np
from sklearn.base import BaseEstimator

__all__ = ["Decoder", "check_capability"]


class Decoder(BaseEstimator):
    """Base class of decoders: inference over one family of structured outputs.

    A decoder knows one output family (chains, multilabel sets, trees, ...) and nothing
    about features. It receives *part scores* in the family's score container and answers
    inference questions about the distribution or the argmax they define. The operations a
    decoder supports are listed in its ``capabilities``:

    ``"map"``
        :meth:`map`: the highest-scoring output of every example.
    ``"marginals"``
        :meth:`log_partition` and :meth:`marginals`: log Σ_y exp θ_y and the expected part
        indicators E_p[a_y] under p(y) ∝ exp θ_y.
    ``"top_k"``
        :meth:`top_k`: the ``k`` best distinct outputs, sorted by score.
    ``"loss_augmented_map"``
        :meth:`loss_augmented_map`: argmax_y θ_y + Δ(y_true, y) for a task loss Δ (margin
        rescaling) or argmax_y Δ(y_true, y) (1 + θ_y − θ_{y_true}) (slack rescaling).
    ``"parts"``
        :meth:`parts` and :meth:`score_outputs`: the indicator vector a_y of given outputs
        and their scores θ_y = ⟨η, a_y⟩.

    Outputs are *encoded*: integer states ``0 .. n_states - 1``, stacked batch-first.
    Decoders are scikit-learn estimators only so that their hyper-parameters are reachable
    with ``get_params`` / ``set_params`` (``decoder__param`` in a grid search); they hold
    no fitted state.
    """

    #: The operations this decoder answers (a subset of the names above).
    capabilities = frozenset()
    #: The kind of outputs it decodes, as estimators name them ("sequence", "multiclass",
    #: "multilabel", "tree", "matching"); None for decoders of several families.
    output_kind = None
    _parameter_constraints: dict = {}

    def _unsupported(self, capability):
        raise NotImplementedError(
            f"{type(self).__name__} does not implement {capability!r}; its capabilities are "
            f"{sorted(self.capabilities)}."
        )

    def map(self, scores, *, return_score=False):
        """Highest-scoring output of every example."""
        self._unsupported("map")

    def log_partition(self, scores):
        """log Σ_y exp θ_y for every example."""
        self._unsupported("marginals")

    def marginals(self, scores):
        """Log-partition and expected part indicators of every example."""
        self._unsupported("marginals")

    def top_k(self, scores, k):
        """The ``k`` best distinct outputs of every example."""
        self._unsupported("top_k")

    def loss_augmented_map(self, scores, y_true, task_loss, rescaling="margin"):
        """argmax_y H(θ_y, Δ(y_true, y)) for every example (margin or slack rescaling)."""
        self._unsupported("loss_augmented_map")

    def parts(self, scores, y):
        """Part indicators a_y of the outputs ``y`` (laid out like ``scores``)."""
        self._unsupported("parts")

    def score_outputs(self, scores, y):
        """Scores θ_y = ⟨η, a_y⟩ of the outputs ``y``, one per example."""
        return self.parts(scores, y).dot(scores)

    def check_outputs(self, y, offsets):
        """Raise a clear ``ValueError`` if the encoded outputs ``y`` (stacked over
        ``offsets``) are not outputs this decoder can produce; estimators call it on the
        gold outputs before training. The base class accepts every output."""

    def cost_augmented(self, scores, y_true, task_loss):
        """Scores η + c with ⟨c, a_y⟩ = Δ(y_true, y) up to a constant per example.

        For a task loss that decomposes over the unary parts (Hamming), the cost-augmented
        scores turn MAP into margin-rescaled loss-augmented MAP and marginals into
        softmax-margin marginals. The per-example constant does not change any maximizer
        or any loss that also scores the gold output with the augmented scores.

        Parameters
        ----------
        scores : score container
        y_true : ndarray
            Encoded gold outputs.
        task_loss : TaskLoss
            Must provide ``unary_costs(y_true, offsets, n_states)``.

        Returns
        -------
        score container, like ``scores``
        """
        if not hasattr(task_loss, "unary_costs"):
            raise ValueError(
                f"{type(self).__name__} can add a task loss to the scores only when it "
                f"decomposes over tokens (such as HammingLoss); {type(task_loss).__name__} "
                "does not."
            )
        costs = task_loss.unary_costs(np.ravel(y_true), scores.offsets, scores.n_states)
        return scores.replace(unary=scores.unary + costs.reshape(scores.unary.shape))


def check_capability(decoder, capability, needed_by):
    """Raise a clear error when ``decoder`` cannot answer ``capability``.

    Parameters
    ----------
    decoder : Decoder
    capability : str
        One of the names listed in :class:`Decoder`.
    needed_by : str
        What needs it (a training loss, an estimator method), for the message.
    """
    capabilities = getattr(decoder, "capabilities", frozenset())
    if capability not in capabilities:
        raise ValueError(
            f"{needed_by} needs the decoder operation {capability!r}, which "
            f"{type(decoder).__name__} does not provide (it provides "
            f"{sorted(capabilities)})."
        )
