"""The regularized empirical risk that optimizers minimize."""

import numpy as np

__all__ = ["RegularizedRisk"]


class RegularizedRisk:
    """F(w) = (1 / Σ_i s_i) Σ_i s_i ℓ(A_i w; y_i) + (α / 2) ‖w‖².

    Composes a feature map (w → part scores A_i w and back), a decoder, and a training
    loss ℓ. A full-batch evaluation is one matrix product for all part scores, one batched
    decoder call, and one transposed product for the gradient.

    Parameters
    ----------
    features : feature map
        Provides ``scores(batch, w)``, ``transpose(batch, grad_parts)`` and ``n_params``.
    batch : SequenceBatch
        The training inputs.
    y : ndarray
        Encoded training outputs.
    decoder : Decoder
    loss : TrainingLoss
    alpha : float
        L2 regularization strength α ≥ 0.
    sample_weight : ndarray of shape (n_examples,)
        Non-negative example weights s_i; the data term is their weighted mean, so that an
        integer weight is the same as repeating the example.
    """

    def __init__(self, features, batch, y, decoder, loss, alpha, sample_weight):
        self.features = features
        self.batch = batch
        self.y = y
        self.decoder = decoder
        self.loss = loss
        self.alpha = float(alpha)
        self.sample_weight = np.asarray(sample_weight, dtype=np.float64)
        self._weights = self.sample_weight / self.sample_weight.sum()
        self._uniform = bool(np.all(self.sample_weight == self.sample_weight[0]))
        self._gold = None
        # Losses whose inner solver can start from its previous solution (SparseMAP's
        # active sets) get a place for it that lives as long as this objective.
        self._warm_start = {} if getattr(loss, "warm_startable", False) else None

    @property
    def n_params(self):
        """Length of the parameter vector w."""
        return self.features.n_params

    @property
    def n_examples(self):
        """Number of training examples."""
        return self.batch.n_sequences

    @property
    def weights(self):
        """Normalized example weights ω_i = s_i / Σ_j s_j, shape (n_examples,)."""
        return self._weights

    def gold(self, scores):
        """Indicator parts of the training outputs (computed once, laid out like scores)."""
        if self._gold is None:
            self._gold = self.decoder.parts(scores, self.y)
        return self._gold

    def example(self, i):
        """Inputs and encoded output of example ``i`` alone: (SequenceBatch, y_i)."""
        a, b = self.batch.output_offsets[i], self.batch.output_offsets[i + 1]
        return self.batch.take([i]), self.y[a:b]

    def _loss(self, scores):
        gold = self.gold(scores)
        if self._warm_start is None:
            return self.loss(self.decoder, scores, self.y, gold=gold)
        return self.loss(self.decoder, scores, self.y, gold=gold, warm_start=self._warm_start)

    def data_term(self, w):
        """Per-example losses ℓ_i and the weighted gradient of the data term."""
        scores = self.features.scores(self.batch, w)
        values, grad_parts = self._loss(scores)
        if self._uniform:
            grad = self.features.transpose(self.batch, grad_parts) * self._weights[0]
        else:
            grad = self.features.transpose(self.batch, grad_parts.scale(self._weights))
        return values, grad

    def value(self, w):
        """F(w) alone (skips the gradient; cheaper for losses that have ``values``)."""
        scores = self.features.scores(self.batch, w)
        gold = self.gold(scores)
        if hasattr(self.loss, "values"):
            values = self.loss.values(self.decoder, scores, self.y, gold)
        else:
            values = self._loss(scores)[0]
        return float(self._weights @ values) + 0.5 * self.alpha * float(w @ w)

    def value_and_gradient(self, w):
        """F(w) and ∇F(w).

        Parameters
        ----------
        w : ndarray of shape (n_params,)

        Returns
        -------
        value : float
        gradient : ndarray of shape (n_params,)
        """
        values, grad = self.data_term(w)
        value = float(self._weights @ values) + 0.5 * self.alpha * float(w @ w)
        return value, grad + self.alpha * w
