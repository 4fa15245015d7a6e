"""Stochastic proximal ascent on the randomized likelihood of MAP-perturbation models."""

import numpy as np
from sklearn.utils import check_random_state

from ._progress import Progress
from ._result import STOPPED_BY_CALLBACK, OptimizeResult

__all__ = ["TrainingDivergedError", "perturbed_ascent"]


class TrainingDivergedError(ValueError):
    """A step made the weights or the part scores non-finite."""


def _soft_threshold(w, threshold):
    return np.sign(w) * np.maximum(np.abs(w) - threshold, 0.0)


def _diverged(t, what, learning_rate):
    return TrainingDivergedError(
        f"training diverged after {t} step(s) ({what}): lower learning_rate (now "
        f"{learning_rate:g}) or scale the features."
    )


def perturbed_ascent(risk, w0, *, max_iter=20, learning_rate=1.0, step_scale=1.0, l1=0.0,
                     random_state=None, verbose=0, callback=None, printer=print,
                     state=None):
    """Maximize log Σ_i ω_i q_i(w) (or Σ_i ω_i log q_i(w)) − (α / 2) ‖w‖² − ``l1`` ‖w‖₁
    by stochastic proximal ascent, α the risk's L2 strength.

    Each iteration t = 1 .. ``max_iter`` draws new candidate sets, takes the ascent
    direction g_t of the randomized likelihood on them
    (:meth:`~skstruct.losses._randomized.RandomizedLikelihoodLoss.ascent`, mapped to the
    parameters by the feature map's transpose) and steps

        w ← S(w + η_t g_t, η_t l1),   η_t = learning_rate / (step_scale √t),

    with S the soft-thresholding of the ℓ1 proximal operator.

    Parameters
    ----------
    risk : RegularizedRisk
        With a :class:`~skstruct.losses._randomized.RandomizedLikelihoodLoss`; its
        ``alpha`` is not used.
    w0 : ndarray of shape (n_params,)
        Starting point.
    max_iter : int, default=20
        Number of steps; there is no other stopping rule.
    learning_rate : float, default=1.0
        Step size at t = 1, in units of 1 / ``step_scale``.
    step_scale : float, default=1.0
        Divisor of every step (the estimator's bound on how much a unit of gradient
        moves a part score).
    l1 : float, default=0.0
        ℓ1 strength of the proximal step.
    random_state : int, RandomState or None, default=None
        The candidate draws.
    verbose : int, default=0
        Print one line per iteration: the randomized loss, the mean candidate-set size
        and the number of nonzero weights.
    callback : callable, default=None
        ``callback(n_iter, w, objective)`` after each step, with ``w`` after the step and
        ``objective`` the randomized loss of the step's candidate sets before it;
        returning True stops.
    printer : callable, default=print
    state : dict or None, default=None
        To continue on a new batch (``partial_fit``): the ``extra["state"]`` of the
        previous run, the weights ``w`` and the step counter ``t`` (the steps η_t
        continue to shrink from it); empty or None starts at ``w0`` with t = 0.

    Returns
    -------
    OptimizeResult
        ``objective_curve`` holds the randomized loss 1 − Σ_i ω_i q_i of every
        iteration's candidate sets, before its step; ``converged`` is True only when the
        callback stopped the run; ``extra["largest_candidate_set"]`` is the largest
        |T_i| drawn, ``extra["state"]`` the state to continue from.

    Raises
    ------
    TrainingDivergedError
        When a step makes the weights or the part scores non-finite, or the scores / β
        overflow the likelihood weights.
    """
    rng = check_random_state(random_state)
    loss, features, batch = risk.loss, risk.features, risk.batch
    state = dict(state or {})
    w = np.array(state.get("w", w0), dtype=np.float64)
    t0 = int(state.get("t", 0))
    progress = Progress(verbose, callback, printer, unit="iter", max_iter=max_iter)
    message, converged = "maximum number of iterations reached", False
    largest_set = 1
    for t in range(t0 + 1, t0 + max_iter + 1):
        try:
            scores = features.scores(batch, w)
        except ValueError as error:
            if t == t0 + 1:
                raise
            raise _diverged(t - 1, "the scores are no longer finite", learning_rate) \
                from error
        try:
            value, direction, set_sizes = loss.ascent(risk.decoder, scores, risk.y,
                                                      risk.weights, w, rng)
        except FloatingPointError as error:
            raise _diverged(t - 1, str(error), learning_rate) from error
        largest_set = max(largest_set, int(set_sizes.max()))
        step = learning_rate / (step_scale * np.sqrt(t))
        gradient = features.transpose(batch, direction)
        if risk.alpha:
            gradient = gradient - risk.alpha * w
        w = _soft_threshold(w + step * gradient, step * l1)
        if not np.all(np.isfinite(w)):
            raise _diverged(t, "the weights are no longer finite", learning_rate)
        if progress.report(w, value, candidates=float(np.mean(set_sizes)),
                           nonzero=int(np.count_nonzero(w))):
            message, converged = STOPPED_BY_CALLBACK, False
            break
    return OptimizeResult(
        w=w, n_iter=progress.n_iter, converged=converged, objective_curve=progress.curve,
        message=message, n_evaluations=progress.n_iter,
        extra={"t": t0 + progress.n_iter, "largest_candidate_set": largest_set,
               "state": {"w": w.copy(), "t": t0 + progress.n_iter}},
    )
