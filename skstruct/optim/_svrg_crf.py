"""SVRG on the CRF's negative log-likelihood (and softmax-margin), through the same epochs.

The CRF loss of example i, ℓ_i(w) = log Σ_y exp(θ_y + Δ(y_i, y)) − θ_{y_i} (Δ = 0 without
a cost), is the entropy smoothing of the max with μ = 1: the smoothed oracle of plain MAP
(no costs), or of margin rescaling with the cost as task loss, gives ℓ_i and its part
gradient E_p[a_y] − a_{y_i} exactly. The epochs of :class:`~._svrg.SmoothedProblem` then
minimize F(w) = Σ_i ω_i ℓ_i(w) + (λ/2)‖w‖², the CRF's objective.

The full-gradient pass that anchors epoch k + 1 at w_k computes Σ_i ω_i ℓ_i(w_k) and
∇F(w_k) exactly: F after each epoch, and the stopping rule of L-BFGS (max |∇F| ≤ tol),
cost no oracle call beyond the 2n of an epoch.
"""

import numpy as np
from sklearn.utils import check_random_state

from ..features._base import feature_map_hook
from ._engine import CompiledProblem
from ._progress import Progress
from ._result import OptimizeResult
from ._svrg import SMOOTHINGS, SmoothedProblem, _check_common, _supports, smoothness_estimate

__all__ = ["crf_problem", "minimize_svrg_crf"]


def crf_problem(risk, fixed=None):
    """The :class:`SmoothedProblem` (entropy, μ = 1) of a CRF risk, or a ValueError.

    Parameters
    ----------
    risk : RegularizedRisk
        With a :class:`~skstruct.losses.CRFLoss` (with or without a cost).
    fixed : ndarray of bool or None
        Parameters held at zero (``feature_label_pairs="seen"`` where the features cannot
        leave them out); not supported.

    Returns
    -------
    SmoothedProblem
    """
    if not risk.loss.is_softmax_margin:
        raise ValueError(f"solver='svrg' minimizes the CRF loss (CRF) among smooth losses; "
                         f"{type(risk.loss).__name__} has no compiled oracle for it: use "
                         "solver='lbfgs'.")
    if fixed is not None or feature_map_hook(risk.features, "pairs") is not None:
        raise ValueError("solver='svrg' trains the weights of all (feature, label) pairs; "
                         "use feature_label_pairs='all', or solver='lbfgs' for "
                         "feature_label_pairs='seen'.")
    if risk.alpha <= 0:
        raise ValueError("solver='svrg' needs a positive L2 strength (alpha > 0 and "
                         "l1_ratio < 1).")
    cost = risk.loss.cost
    offer_features = feature_map_hook(risk.features, "compiled_features")
    offer_oracle = getattr(risk.decoder, "compiled_oracle", None)
    problem = None
    if offer_oracle is not None:
        oracle = offer_oracle(cost, None if cost is None else "margin", risk.y,
                              risk.batch.output_offsets)
        if oracle is not None and _supports(oracle, "entropy"):
            features = offer_features(risk.batch)
            if features is not None and features.n_params == risk.features.n_params:
                problem = CompiledProblem(features, oracle)
    if problem is None:
        what = "" if cost is None else f" with the cost {type(cost).__name__}"
        raise ValueError(
            f"solver='svrg' needs the compiled per-example marginals of the decoder "
            f"{type(risk.decoder).__name__}{what}, which it does not offer (chains and "
            "trees with the built-in feature maps, costs that decompose over parts); use "
            "solver='lbfgs'.")
    return SmoothedProblem(problem, SMOOTHINGS["entropy"], 1, risk.weights, risk.alpha)


def minimize_svrg_crf(
    risk, w0=None, *, max_iter=50, tol=1e-4, learning_rate="auto", averaging=False,
    random_state=None, verbose=0, callback=None, printer=print, fixed=None,
):
    """A CRF (negative log-likelihood, or softmax-margin) by SVRG.

    Minimizes F(w) = Σ_i ω_i [log Σ_y exp(θ_y + Δ(y_i, y)) − θ_{y_i}] + (λ/2)‖w‖² with
    SVRG epochs: a full-gradient pass at the anchor w̃ (n oracle calls, parallel), then n
    steps w ← w − η [s_i A_iᵀ(d_i(w) − d_i(w̃)) + ḡ + λ w] on examples drawn uniformly
    (s_i = n ω_i), each touching only the example's rows of W (lazy dense updates).
    Epoch k + 1 is anchored at w_k, so its full-gradient pass gives F(w_k) and ∇F(w_k).

    Parameters
    ----------
    risk : RegularizedRisk
        With a :class:`~skstruct.losses.CRFLoss`, a compiled feature map and decoder.
    w0 : ndarray of shape (n_params,), default=None
        Starting point (zeros).
    max_iter : int, default=50
        Epochs (2n oracle calls each, plus n for the first anchor).
    tol : float, default=1e-4
        Stop when max |∇F(w_k)| ≤ ``tol`` (the rule of
        :func:`~skstruct.optim.minimize_lbfgs`).
    learning_rate : float or "auto", default="auto"
        The step η; "auto" is 1/(L + λ) with L =
        :func:`~skstruct.optim._svrg.smoothness_estimate` (μ = 1).
    averaging : bool, default=False
        An epoch's result is the average of its iterates instead of the last one.
    random_state : int, RandomState or None
        The examples drawn, n per epoch.
    verbose, callback, printer
        As for the other solvers: ``callback(epoch, w, F(w))``.
    fixed : None
        Parameters held at zero are not supported (ValueError).

    Returns
    -------
    OptimizeResult
        ``objective_curve``: F(w_k); ``n_evaluations``: oracle calls;
        ``extra["oracle_calls"]``: cumulative oracle calls after each epoch,
        ``extra["learning_rate"]``, ``extra["gradient_norm"]`` (max |∇F(w_k)| per epoch).

    References
    ----------
    Johnson & Zhang (2013). Accelerating stochastic gradient descent using predictive
    variance reduction. NeurIPS.
    """
    _check_common(max_iter, tol, 1.0, 1, learning_rate)
    sp = crf_problem(risk, fixed)
    problem = sp.problem
    rng = check_random_state(random_state)
    n, lam = risk.n_examples, risk.alpha
    if learning_rate == "auto":
        eta = 1.0 / (smoothness_estimate(problem, risk.weights) + lam)
    else:
        eta = float(learning_rate)
    w = problem.to_engine(np.zeros(problem.n_params) if w0 is None else w0)
    gbar, _ = sp.full_gradient(w, 1.0)
    progress = Progress(verbose, callback, printer, unit="epoch", max_iter=max_iter)
    message, converged = "maximum number of epochs reached", False
    calls, norms = [], []
    for _ in range(max_iter):
        w = sp.steps(w, gbar, 1.0, eta, 0.0, w, rng.randint(0, n, size=n), averaging)
        gbar, data = sp.full_gradient(w, 1.0)
        objective = data + 0.5 * lam * float(w @ w)
        norm = float(np.max(np.abs(gbar + lam * w), initial=0.0))
        calls.append(sp.oracle_calls)
        norms.append(norm)
        if progress.report(problem.to_user(w), objective, grad=norm):
            message, converged = "stopped by callback", True
            break
        if not np.isfinite(objective):
            message = "the objective is not finite (learning_rate too large)"
            break
        if norm <= tol:
            message, converged = "gradient below tol", True
            break
    return OptimizeResult(
        w=problem.to_user(w), n_iter=progress.n_iter, converged=converged,
        objective_curve=progress.curve, message=message, n_evaluations=sp.oracle_calls,
        extra={"oracle_calls": calls, "learning_rate": eta, "gradient_norm": norms,
               "t": sp.oracle_calls})
