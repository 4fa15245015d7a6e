"""The regularized empirical risk that optimizers minimize."""

import numpy as np

from ..features._base import feature_map_hook

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
        self._examples = None
        # Losses whose inner solver can start from its previous solution (SparseMAP's
        # active sets) get a place for it that lives as long as this objective.
        self._warm_start = {} if loss.warm_startable else None
        self._compiled = None
        self._compiled_checked = False
        self._chunks = None

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

    def gold_parts(self):
        """Indicator parts a_{y_i} of the training outputs, computed once.

        Parts depend only on the shapes of the part scores, not on their values, so they
        are laid out on the feature map's ``zero_scores(batch)`` (zeros built without a
        matrix product) when it offers them, else on the scores at w = 0.

        Returns
        -------
        Parts
            Laid out like ``features.scores(batch, w)``; ``gold_parts().example(i)`` is
            the part of example ``i``.
        """
        if self._gold is None:
            scores = feature_map_hook(self.features, "zero_scores")(self.batch)
            self._gold = self.decoder.parts(scores, self.y)
        return self._gold

    def gold(self, scores=None):
        """Indicator parts of the training outputs (computed once, laid out like scores).

        ``scores`` lays them out on the first call, which saves building zero scores when
        the caller has scores already; see :meth:`gold_parts`.
        """
        if self._gold is None and scores is not None:
            self._gold = self.decoder.parts(scores, self.y)
        return self.gold_parts()

    def example(self, i):
        """Inputs and encoded output of example ``i`` alone: (SequenceBatch, y_i)."""
        a, b = self.batch.output_offsets[i], self.batch.output_offsets[i + 1]
        return self.batch.take([i]), self.y[a:b]

    def examples(self, indices):
        """Inputs and encoded outputs of examples ``indices`` together, in that order:
        (SequenceBatch, y)."""
        offsets = self.batch.output_offsets
        rows = np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in indices])
        return self.batch.take(indices), self.y[rows]

    def _example(self, i):
        """:meth:`example`, kept for every example after the first request."""
        if self._examples is None:
            self._examples = [None] * self.n_examples
        if self._examples[i] is None:
            self._examples[i] = self.example(i)
        return self._examples[i]

    def example_value_and_gradient(self, i, w):
        """ℓ_i(w), the loss of example ``i`` alone, and its sparse gradient ∇ℓ_i(w).

        The gradient is A_iᵀ g_i, with g_i the loss's gradient with respect to the part
        scores η_i = A_i w of example ``i``; it touches only the parameters of the
        features present in the example (``features.example_transpose``). Neither the
        example weight ω_i nor the regularization enter: the objective is
        F(w) = Σ_i ω_i ℓ_i(w) + (α/2) ‖w‖².

        Parameters
        ----------
        i : int
            Index of the example, 0 <= i < n_examples.
        w : ndarray of shape (n_params,)

        Returns
        -------
        value : float
            ℓ_i(w).
        indices : ndarray of shape (n_touched,), int64
            Positions in w, without repetition.
        values : ndarray of shape (n_touched,)
            ∇ℓ_i(w) at those positions; zero elsewhere.
        """
        value, grad = self._example_loss(i, w)
        indices, values = self.features.example_transpose(self._example(i)[0], grad)
        return value, indices, values

    def example_gradient(self, i, w):
        """∇ℓ_i(w) as (indices, values); see :meth:`example_value_and_gradient`.

        The sparse form is what variance-reduced steps (SVRG) combine: the difference
        ∇ℓ_i(w) − ∇ℓ_i(w̃) at two points touches the union of two small index sets.
        """
        return self.example_value_and_gradient(i, w)[1:]

    def _example_loss(self, i, w):
        if not 0 <= i < self.n_examples:
            raise IndexError(f"example {i} out of range for {self.n_examples} examples")
        batch_i, y_i = self._example(i)
        scores_i = self.features.scores(batch_i, w)
        values, grad = self.loss(self.decoder, scores_i, y_i, gold=self.gold_parts().example(i))
        return float(np.asarray(values).ravel()[0]), grad

    def _loss_options(self):
        return {} if self._warm_start is None else {"warm_start": self._warm_start}

    def compiled_objective(self):
        """The feature map's compiled evaluation of this objective, or None.

        A feature map may offer ``compiled_objective(batch, y, decoder, loss, weights)``
        returning an object whose ``value_and_gradient(w, alpha)`` gives (ℓ_i, F, ∇F)
        exactly as the generic composition would, or None at a ``w`` it cannot handle
        (the generic composition then runs). Built on the first evaluation, kept after.
        """
        if not self._compiled_checked:
            factory = feature_map_hook(self.features, "compiled_objective")
            self._compiled = factory(self.batch, self.y, self.decoder, self.loss,
                                     self._weights)
            self._compiled_checked = True
        return self._compiled

    def _compiled_evaluation(self, w, alpha):
        compiled = self.compiled_objective()
        return None if compiled is None else compiled.value_and_gradient(w, alpha)

    def evaluation_chunks(self):
        """The chunks of examples an evaluation runs over, or None for the whole batch.

        A decoder whose arrays grow with the examples and the size of its outputs (the
        factor graph's ADMM) offers ``evaluation_chunk_size(n_examples)``: the examples
        per chunk that keep an evaluation's scores, solves and gradient parts within its
        budget, or None for all at once. Each chunk's scores, gold parts, losses and
        gradient are then computed and dropped in turn (the gradient summed over the
        chunks), and a warm-startable loss keeps one warm start per chunk.

        Returns
        -------
        list of (batch, y, start, stop) or None
            The sub-batch, its encoded outputs and its range of examples, built once.
        """
        if self._chunks is None:
            offer = getattr(self.decoder, "evaluation_chunk_size", None)
            size = None if offer is None else offer(self.n_examples)
            chunks = ()
            if size is not None and size < self.n_examples:
                offsets = self.batch.output_offsets
                bounds = list(range(0, self.n_examples, int(size))) + [self.n_examples]
                chunks = tuple(
                    (self.batch.take(np.arange(start, stop)),
                     self.y[offsets[start]:offsets[stop]], start, stop)
                    for start, stop in zip(bounds[:-1], bounds[1:]))
            self._chunks = chunks
        return self._chunks or None

    def _chunk_options(self, c):
        if self._warm_start is None:
            return {}
        return {"warm_start": self._warm_start.setdefault(("chunk", c), {})}

    def _evaluate_chunks(self, w, evaluate):
        """Run ``evaluate(batch, y, scores, gold, options, start, stop)`` on each chunk of
        examples at ``w`` (:meth:`evaluation_chunks`; the whole batch at once when the
        decoder asks for none), each chunk's scores and gold parts dropped before the
        next chunk's are computed; ``options`` are the loss's keyword arguments (its warm
        start)."""
        chunks = self.evaluation_chunks()
        if chunks is None:
            scores = self.features.scores(self.batch, w)
            evaluate(self.batch, self.y, scores, self.gold(scores), self._loss_options(),
                     0, self.n_examples)
            return
        for c, (batch, y, start, stop) in enumerate(chunks):
            scores = self.features.scores(batch, w)
            gold = self.decoder.parts(scores, y)
            evaluate(batch, y, scores, gold, self._chunk_options(c), start, stop)
            del scores, gold

    def _weighted_transpose(self, batch, parts, start, stop):
        """Σ_i w_i Φ_iᵀ parts_i over the examples ``start:stop``, shape (n_params,)."""
        if self._uniform:
            return self.features.transpose(batch, parts) * self._weights[0]
        return self.features.transpose(batch, parts.scale(self._weights[start:stop]))

    def loss_values(self, w):
        """The per-example losses ℓ_i(w) alone (the loss's ``values``: cheaper where it
        skips the gradient), shape (n_examples,); over chunks of examples when the
        decoder asks for them (:meth:`evaluation_chunks`)."""
        values = np.empty(self.n_examples)

        def evaluate(batch, y, scores, gold, options, start, stop):
            values[start:stop] = self.loss.values(self.decoder, scores, y, gold, **options)

        self._evaluate_chunks(w, evaluate)
        return values

    def data_term(self, w):
        """Per-example losses ℓ_i and the weighted gradient of the data term."""
        compiled = self._compiled_evaluation(w, 0.0)
        if compiled is not None:
            return compiled[0], compiled[2]
        values = np.empty(self.n_examples)
        grad = np.zeros(self.n_params)

        def evaluate(batch, y, scores, gold, options, start, stop):
            values[start:stop], parts = self.loss(self.decoder, scores, y, gold=gold,
                                                  **options)
            grad[:] += self._weighted_transpose(batch, parts, start, stop)

        self._evaluate_chunks(w, evaluate)
        return values, grad

    def kinked_parameters(self):
        """The parameters at which F may have a kink at zero, or None.

        Where the training loss gives the spread of its subdifferential around its
        gradient (LP-SparseMAP at a PAIR score of exactly zero: ``loss.
        values_gradients_and_spread``) and the feature map passes it on exactly
        (``features.kinked_parameters()``), the quasi-Newton solvers run orthant-wise
        on these coordinates with :meth:`value_gradient_and_spread`.

        Returns
        -------
        ndarray of bool of shape (n_params,) or None
            None when the loss (or the compiled evaluation) or the map offers nothing,
            or the map offers no such parameter.
        """
        compiled = self.compiled_objective()
        if compiled is not None:
            if getattr(compiled, "value_gradient_and_spread", None) is None:
                return None
        elif getattr(self.loss, "values_gradients_and_spread", None) is None:
            return None
        mask = feature_map_hook(self.features, "kinked_parameters")()
        return None if mask is None or not np.any(mask) else np.asarray(mask, dtype=bool)

    def value_gradient_and_spread(self, w):
        """F(w), a gradient g and the subdifferential's spread around it.

        Returns
        -------
        value : float
        gradient : ndarray of shape (n_params,)
        down, up : ndarray of shape (n_params,)
            Non-negative: at the parameters of :meth:`kinked_parameters` that are at
            zero, ∂F(w) holds [g − down, g + up] along that coordinate; zero elsewhere.
        """
        compiled = self.compiled_objective()
        if compiled is not None:
            return compiled.value_gradient_and_spread(w, self.alpha)[1:]
        values = np.empty(self.n_examples)
        grad, down, up = (np.zeros(self.n_params) for _ in range(3))

        def evaluate(batch, y, scores, gold, options, start, stop):
            values[start:stop], parts, spread = self.loss.values_gradients_and_spread(
                self.decoder, scores, y, gold, **options)
            grad[:] += self._weighted_transpose(batch, parts, start, stop)
            if spread is not None:
                down[:] += self._weighted_transpose(batch, spread[0], start, stop)
                up[:] += self._weighted_transpose(batch, spread[1], start, stop)

        self._evaluate_chunks(w, evaluate)
        value = float(self._weights @ values) + 0.5 * self.alpha * float(w @ w)
        at_zero = w == 0.0
        return value, grad + self.alpha * w, down * at_zero, up * at_zero

    def value(self, w):
        """F(w) alone (the loss's ``values``: cheaper where it skips the gradient)."""
        values = self.loss_values(w)
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
        compiled = self._compiled_evaluation(w, self.alpha)
        if compiled is not None:
            return compiled[1], compiled[2]
        values, grad = self.data_term(w)
        value = float(self._weights @ values) + 0.5 * self.alpha * float(w @ w)
        return value, grad + self.alpha * w
