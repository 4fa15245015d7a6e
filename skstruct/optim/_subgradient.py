"""Stochastic subgradient descent with iterate averaging (Pegasos steps)."""

import time

import numpy as np
from sklearn.utils import check_random_state

from ._lbfgs import OptimizeResult

__all__ = ["minimize_subgradient", "perceptron"]


def minimize_subgradient(
    risk, w0=None, *, max_iter=50, tol=0.0, averaging=True, random_state=None, verbose=0,
    callback=None, printer=print, first_step=0,
):
    """Minimize (λ/2) ‖w‖² + Σ_i ω_i ℓ_i(w) by stochastic subgradient steps.

    Each step takes one example i (a random permutation per pass) and moves along
    λ w + n ω_i ∂ℓ_i(w), an unbiased estimate of a subgradient of the objective, with
    Pegasos step sizes η_t = 1 / (λ (t + 2)).

    Parameters
    ----------
    risk : RegularizedRisk
        Its training loss gives per-example values and part-score subgradients (any loss:
        structured hinge with either rescaling, perceptron, CRF); its feature map must have
        ``example_transpose``.
    w0 : ndarray of shape (n_params,), default=None
        Starting point (zeros).
    max_iter : int, default=50
        Number of passes over the examples.
    tol : float, default=0.0
        Stop when the objective after a pass decreased by less than ``tol`` (relative to
        the previous pass); 0 runs all passes.
    averaging : bool, default=True
        Return the average of the iterates weighted by t (w̄ ← w̄ + 2/(t+2) (w − w̄)),
        which has the O(1/t) rate of strongly convex problems.
    random_state, verbose, callback, printer
        As for :func:`~skstruct.optim.minimize_bcfw`.
    first_step : int, default=0
        Step counter t to start from, to continue a previous run from ``w0`` with small
        steps.

    Returns
    -------
    OptimizeResult
        ``objective_curve`` holds the objective of the returned iterate after each pass;
        ``n_evaluations`` is the step counter reached.

    References
    ----------
    Shalev-Shwartz, Singer, Srebro & Cotter (2011). Pegasos: primal estimated sub-gradient
    solver for SVM. Mathematical Programming.
    Ratliff, Bagnell & Zinkevich (2007). (Approximate) subgradient methods for structured
    prediction. AISTATS.
    """
    rng = check_random_state(random_state)
    features, decoder, loss, lam = risk.features, risk.decoder, risk.loss, risk.alpha
    if lam <= 0:
        raise ValueError("The subgradient solver needs a positive regularization alpha.")
    n = risk.n_examples
    omega = risk.weights
    w = np.zeros(features.n_params) if w0 is None else np.array(w0, dtype=np.float64)
    w_avg = w.copy()
    gold = risk.gold(features.scores(risk.batch, w))
    examples = [risk.example(i) for i in range(n)]
    curve = []
    start = time.perf_counter()
    step = first_step
    message, converged = "maximum number of passes reached", False
    for _ in range(max_iter):
        for i in rng.permutation(n):
            batch_i, y_i = examples[i]
            scores_i = features.scores(batch_i, w)
            _, grad = loss(decoder, scores_i, y_i, gold=gold.example(i))
            eta = 1.0 / (lam * (step + 2))
            w *= 1.0 - eta * lam
            indices, values = features.example_transpose(batch_i, grad)
            w[indices] -= eta * n * omega[i] * values
            step += 1
            if averaging:
                w_avg += (2.0 / (step - first_step + 2)) * (w - w_avg)
        current = w_avg if averaging else w
        value = risk.value(current)
        curve.append(value)
        if verbose:
            printer(f"pass {len(curve):4d}  objective {value: .8e}  "
                    f"time {time.perf_counter() - start:8.2f}s")
        if callback is not None and callback(len(curve), current, value):
            message, converged = "stopped by callback", True
            break
        if tol > 0 and len(curve) > 1 and curve[-2] - value <= tol * abs(curve[-2]):
            message, converged = "relative decrease below tol", True
            break
    return OptimizeResult(
        w=(w_avg if averaging else w).copy(), n_iter=len(curve), converged=converged,
        objective_curve=curve, message=message, n_evaluations=step,
    )


def perceptron(risk, w0=None, *, max_iter=10, averaging=True, random_state=None, verbose=0,
               callback=None, printer=print):
    """The structured perceptron: w ← w − A_iᵀ(a_ŷ − a_{y_i}) after each mistake.

    Parameters
    ----------
    risk : RegularizedRisk
        With a :class:`~skstruct.losses.PerceptronLoss`; ``alpha`` is ignored and example
        weights scale the updates (an update of example i is multiplied by n ω_i).
    w0 : ndarray of shape (n_params,), default=None
    max_iter : int, default=10
        Number of passes.
    averaging : bool, default=True
        Return the uniform average of all iterates (the averaged perceptron).
    random_state, verbose, callback, printer
        As for :func:`minimize_subgradient`.

    Returns
    -------
    OptimizeResult
        ``objective_curve`` holds the fraction of examples mispredicted during each pass;
        ``converged`` is True when a pass made no mistake.

    References
    ----------
    Collins (2002). Discriminative training methods for hidden Markov models. EMNLP.
    """
    rng = check_random_state(random_state)
    features, decoder, loss = risk.features, risk.decoder, risk.loss
    n = risk.n_examples
    w = np.zeros(features.n_params) if w0 is None else np.array(w0, dtype=np.float64)
    w_avg = w.copy()
    gold = risk.gold(features.scores(risk.batch, w))
    examples = [risk.example(i) for i in range(n)]
    curve = []
    start = time.perf_counter()
    step = 0
    message, converged = "maximum number of passes reached", False
    for _ in range(max_iter):
        mistakes = 0
        for i in rng.permutation(n):
            batch_i, y_i = examples[i]
            value, grad = loss(decoder, features.scores(batch_i, w), y_i, gold=gold.example(i))
            if np.any(grad.unary != 0):
                mistakes += 1
                indices, values = features.example_transpose(batch_i, grad)
                w[indices] -= n * risk.weights[i] * values
            step += 1
            if averaging:
                w_avg += (w - w_avg) / (step + 1)
        curve.append(mistakes / n)
        current = w_avg if averaging else w
        if verbose:
            printer(f"pass {len(curve):4d}  mistakes {mistakes:6d}  "
                    f"time {time.perf_counter() - start:8.2f}s")
        if callback is not None and callback(len(curve), current, mistakes / n):
            message, converged = "stopped by callback", True
            break
        if mistakes == 0:
            message, converged = "no mistake in a pass", True
            break
    return OptimizeResult(
        w=(w_avg if averaging else w).copy(), n_iter=len(curve), converged=converged,
        objective_curve=curve, message=message, n_evaluations=step,
    )
