"""Casimir-SVRG: the Catalyst outer loop with a smoothing schedule around SVRG epochs."""

import math

import numpy as np
from sklearn.utils import check_random_state

from ._svrg import (MU_START, STEP_SCALE, EpochLog, _check_common, epoch_order,
                    scheduled_mu, smoothed_problem, smoothness_estimate, starting_point)

__all__ = ["SCHEDULES", "WARM_START_RULES", "catalyst_alpha_beta", "minimize_casimir"]

#: Smoothing and κ schedules.
SCHEDULES = ("decay", "const", "adapt")
#: Starting points of the inner SVRG epoch.
WARM_START_RULES = ("prox_center", "extrapolation", "prev_iterate")

#: The adaptive schedule's μ_k stops decreasing at this fraction of μ_0: the smoothing
#: bias is negligible there, and further down the oracles' scaling by 1/μ overflows.
MU_FLOOR = 1e-6

#: The paper's experimental settings per schedule (CoNLL-2003 NER): μ, warm start.
_DEFAULTS = {"decay": (MU_START, "prev_iterate"), "const": (1.0, "prev_iterate"),
             "adapt": (2.0, "extrapolation")}


def catalyst_alpha_beta(alpha_prev, q):
    """(α_k, β_k) of Catalyst with a constant κ, q = λ / (λ + κ).

    α_k ∈ (0, 1) solves α_k² = (1 − α_k) α_{k−1}² + q α_k (the recursion
    α_k² (κ + λ) = (1 − α_k) α_{k−1}² (κ + λ) + α_k λ divided by κ + λ), and
    β_k = α_{k−1} (1 − α_{k−1}) / (α_{k−1}² + α_k).
    """
    a2 = alpha_prev * alpha_prev
    linear = a2 - q
    alpha = 0.5 * (-linear + math.sqrt(linear * linear + 4.0 * a2))
    beta = alpha_prev * (1.0 - alpha_prev) / (a2 + alpha)
    return alpha, beta


def _mu_of(schedule, mu0, decay, k):
    """μ_k of outer iteration ``k`` under ``schedule``."""
    if schedule == "const":
        return mu0
    if schedule == "decay":
        return scheduled_mu(None, k) * mu0 / MU_START
    return mu0 * max(decay ** k, MU_FLOOR)


def minimize_casimir(
    risk, w0=None, *, max_iter=50, tol=0.0, smoothing="l2", mu=None, top_k=5,
    schedule="decay", kappa=None, warm_start_rule=None, learning_rate="auto",
    averaging=True, random_state=None, verbose=0, callback=None, printer=print,
    shuffle=True, state=None,
):
    """Structured SVM by Casimir-SVRG (Catalyst acceleration with smoothing).

    Outer iteration k (one SVRG epoch each) approximately minimizes the smoothed,
    proximally regularized objective

    .. math::

       w_k \\approx \\arg\\min_w \\sum_i \\omega_i h_{\\mu_k}(A_i^\\top w; i)
             + \\frac{\\lambda}{2}\\lVert w\\rVert^2
             + \\frac{\\kappa}{2}\\lVert w - z_{k-1}\\rVert^2

    by one SVRG epoch from a warm start, then extrapolates
    z_k = w_k + β_k (w_k − w_{k−1}) with β_k from Catalyst's α recursion
    (:func:`catalyst_alpha_beta`, α_0 = √q, q = λ / (λ + κ)). The non-smooth primal
    P(w_k) = (λ/2)‖w_k‖² + Σ_i ω_i H_i(w_k) is reported after every epoch.

    Parameters
    ----------
    risk : RegularizedRisk
        Structured hinge under margin rescaling, with a compiled smoothed oracle.
    w0 : ndarray of shape (n_params,), default=None
        Starting point and first prox center (zeros).
    max_iter : int, default=50
        Outer iterations (= SVRG epochs; each costs 2n oracle calls).
    tol : float, default=0.0
        Stop when an epoch changes P by at most ``tol`` relative to the previous value.
    smoothing : {"entropy", "l2"}, default="l2"
        ℓ2 with top-K is the paper's choice.
    mu : float, default=None
        μ_0 (``"decay"``, ``"adapt"``) or μ (``"const"``); None: 1.0 for ``"decay"``, the
        paper's 2.0 and 1.0 for the others.
    top_k : int, default=5
        K of the ℓ2 smoothing.
    schedule : {"decay", "const", "adapt"}, default="decay"
        ``"decay"``: μ_k = μ_0 · 0.95^k with the automatic step 2/(L_k + λ + κ) scaled with
        μ_k (L_k = :func:`~skstruct.optim._svrg.smoothness_estimate` / μ_k) and κ as for
        ``"const"`` at μ_0: the smoothing bias vanishes, so that the iterates approach the
        non-smooth optimum. ``"const"``: μ_k = μ and κ = L/(n + 1) − λ (L/(n + 1) when that is not positive),
        the value of the paper's complexity bound, with L the smoothness estimate, or
        the L for which a given ``learning_rate`` is 1/(L + λ + κ). ``"adapt"``: κ = λ and
        μ_k = μ_0 c^k with c = √(1 − √q / 2), so that the smoothing error decreases as
        fast as Catalyst's rate, down to ``MU_FLOOR`` μ_0 = 10⁻⁶ μ_0.
    kappa : float, default=None
        The weight κ of the proximal term (> 0); None: the schedule's value.
    warm_start_rule : {"prox_center", "extrapolation", "prev_iterate"}, default=None
        Where epoch k starts (and anchors): the prox center z_{k−1}; the extrapolation
        w_{k−1} + κ/(κ + λ) (z_{k−1} − z_{k−2}); or the previous iterate w_{k−1}. None:
        the paper's experimental choices, ``"prev_iterate"`` for ``"const"`` and
        ``"extrapolation"`` for ``"adapt"``.
    learning_rate : float or "auto", default="auto"
        SVRG's step η; "auto" is 1/(L + λ + κ) with
        L = :func:`~skstruct.optim._svrg.smoothness_estimate` / μ_0, the same for every
        epoch (as the paper's adaptive runs keep theirs fixed).
    averaging : bool, default=True
        An epoch's w_k is the average of its iterates.
    random_state : int, RandomState or None
    verbose, callback, printer
        As for the other solvers.
    shuffle : bool, default=True
        As for :func:`~skstruct.optim._svrg.minimize_svrg`.
    state : dict or None, default=None
        To continue on new examples (``partial_fit``): the previous run's
        ``extra["state"]``, or an empty dict for a first run. It holds the outer loop:
        w_{k−1}, z_{k−1}, z_{k−2}, α_{k−1}, the outer counter k (μ_k continues its
        schedule), κ and the step size fixed by the first run, and the oracle-call
        counter ``t``. Each outer iteration then runs on the examples at hand: Catalyst's
        accelerated rate is a statement about one fixed objective and does not carry
        across runs on different examples, where the extrapolation is a heuristic
        momentum.

    Returns
    -------
    OptimizeResult
        ``w``: the w_k of the smallest P(w_k), min(``objective_curve``) (the last one when
        continuing with ``state``); ``objective_curve``: P(w_k); ``n_evaluations``: smoothed oracle calls; ``extra``:
        ``mu`` per epoch, ``kappa``, ``learning_rate`` (last), ``oracle_calls``
        (cumulative smoothed oracle calls after each epoch, 2n per epoch; the primal's
        evaluation is not counted), ``inexact``, and with ``state`` the ``state`` to
        continue from.

    References
    ----------
    Pillutla, Roulet, Kakade & Harchaoui (2018). A smoother way to train structured
    prediction models. NeurIPS.
    Lin, Mairal & Harchaoui (2018). Catalyst acceleration for first-order convex
    optimization: from theory to practice. JMLR.
    """
    _check_common(max_iter, tol, mu, top_k, learning_rate)
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}.")
    if warm_start_rule is not None and warm_start_rule not in WARM_START_RULES:
        raise ValueError(f"warm_start_rule must be one of {WARM_START_RULES}, got "
                         f"{warm_start_rule!r}.")
    if kappa is not None and not (np.isfinite(kappa) and kappa > 0):
        raise ValueError(f"kappa must be positive, got {kappa!r}.")
    default_mu, default_rule = _DEFAULTS[schedule]
    mu0 = default_mu if mu is None else float(mu)
    rule = default_rule if warm_start_rule is None else warm_start_rule
    sp = smoothed_problem(risk, smoothing, top_k, "casimir")
    problem = sp.problem
    rng = check_random_state(random_state)
    n, lam = risk.n_examples, risk.alpha
    l_mu = smoothness_estimate(problem, risk.weights)
    if state and "kappa" in state:
        kappa = state["kappa"]
    if kappa is None:
        if schedule in ("const", "decay"):
            # L of the step 1/(L + λ + κ): the estimate, or the one a given step implies
            smooth = (l_mu / mu0 if learning_rate == "auto"
                      else (n + 1) / ((n + 2) * float(learning_rate)))
            kappa = smooth / (n + 1) - lam
            if kappa <= 0:
                kappa = smooth / (n + 1)
        else:
            kappa = lam
    kappa = float(kappa)
    q = lam / (lam + kappa)
    decay = math.sqrt(1.0 - 0.5 * math.sqrt(q))

    w = problem.to_engine(starting_point(w0, problem.n_params))
    w_prev = w.copy()       # w_{k−1}
    z = w.copy()            # z_{k−1}
    z_prev = w.copy()       # z_{k−2}
    alpha = math.sqrt(q)
    first = 0
    if state:
        w_prev, z, z_prev = (problem.to_engine(state.get(key, state["w_prev"]))
                             for key in ("w_prev", "z", "z_prev"))
        w = w_prev.copy()
        alpha, first = float(state.get("alpha", alpha)), int(state.get("k", 0))
    fixed_eta = state.get("learning_rate") if state else None
    log = EpochLog(sp, risk, tol, verbose, callback, printer)
    eta = None
    next_order = epoch_order(rng, n, shuffle)
    k = first - 1
    for k in range(first, first + max_iter):
        mu_k = _mu_of(schedule, mu0, decay, k)
        if learning_rate != "auto":
            eta = float(learning_rate)
        elif schedule == "decay":
            eta = min(STEP_SCALE / (l_mu / mu_k + lam + kappa), 0.5 / (lam + kappa))
        elif fixed_eta is not None:
            eta = float(fixed_eta)
        else:
            # held at μ_0's value: the paper's adaptive runs keep a fixed step, and a step
            # shrinking with μ_k would stall the iterates as μ_k decays
            eta = 1.0 / (l_mu / mu0 + lam + kappa)
        if rule == "prox_center":
            start = z
        elif rule == "prev_iterate":
            start = w_prev
        else:
            start = w_prev + kappa / (kappa + lam) * (z - z_prev)
        w, _ = sp.epoch(start, mu_k, eta, kappa, z, next_order(), averaging)
        alpha, beta = catalyst_alpha_beta(alpha, q)
        z_prev = z
        z = w + beta * (w - w_prev)
        w_prev = w
        if log.after_epoch(w, mu_k):
            break
    kept = {} if state is None else {"state": {
        "w_prev": problem.to_user(w_prev), "z": problem.to_user(z),
        "z_prev": problem.to_user(z_prev), "alpha": alpha, "k": k + 1, "kappa": kappa,
        "learning_rate": eta, "t": int(state.get("t", 0)) + sp.oracle_calls}}
    if state is not None:
        kept["t"] = kept["state"]["t"]
        return log.result(w, kappa=kappa, learning_rate=eta, **kept)
    return log.result(log.best(w), kappa=kappa, learning_rate=eta, **kept)
