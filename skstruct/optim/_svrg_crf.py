"""SVRG on the CRF's negative log-likelihood (and softmax-margin), through the same epochs.

The CRF loss of example i, ℓ_i(w) = log Σ_y exp(θ_y + Δ(y_i, y)) − θ_{y_i} (Δ = 0 without
a cost), is the entropy smoothing of the max with μ = 1: the smoothed oracle of plain MAP
(no costs), or of margin rescaling with the cost as task loss, gives ℓ_i and its part
gradient E_p[a_y] − a_{y_i} exactly. The epochs of :class:`~._svrg.SmoothedProblem` then
minimize F(w) = Σ_i ω_i ℓ_i(w) + (λ/2)‖w‖², the CRF's objective.

With ``feature_label_pairs="seen"`` (or parameters held at zero), the epochs run on the
compiled layout of all pairs, and ḡ and the steps leave the other pairs' weights at zero
(:class:`HeldProblem`): the same minimizer as L-BFGS on the map's compact vector of
the seen pairs, which is what the solver returns.

The full-gradient pass that anchors epoch k + 1 at w_k computes Σ_i ω_i ℓ_i(w_k) and
∇F(w_k) exactly: F after each epoch, and the stopping rule of L-BFGS (max |∇F| ≤ tol),
cost no oracle call beyond the 2n of an epoch.
"""

import numpy as np
from sklearn.utils import check_random_state

from ..features._base import feature_map_hook
from ._engine import CompiledProblem
from ._progress import Progress
from ._result import STOPPED_BY_CALLBACK, OptimizeResult
from ._svrg import SMOOTHINGS, SmoothedProblem, _check_common, _supports, smoothness_estimate

__all__ = ["HeldProblem", "crf_problem", "minimize_svrg_crf"]


def crf_problem(risk, fixed=None):
    """The :class:`SmoothedProblem` (entropy, μ = 1) of a CRF risk, or a ValueError.

    Parameters
    ----------
    risk : RegularizedRisk
        With a :class:`~skstruct.losses.CRFLoss` (with or without a cost).
    fixed : ndarray of bool of shape (n_params,) or None
        Parameters held at zero (``feature_label_pairs="seen"`` where the features cannot
        leave the unseen pairs out of w, and parameter sets such as CRFsuite's).

    Returns
    -------
    SmoothedProblem
        With the unseen pairs of a restricted map (its ``pairs``) and the ``fixed``
        parameters held at zero: the epochs run on the compiled layout of all pairs and
        write the other parameters only (:class:`HeldProblem`).
    """
    if not risk.loss.is_softmax_margin:
        raise ValueError(f"solver='svrg' minimizes the CRF loss (CRF) among smooth losses; "
                         f"{type(risk.loss).__name__} has no compiled oracle for it: use "
                         "solver='lbfgs'.")
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
            if features is not None:
                problem = _compiled_problem(risk.features, features, oracle, fixed)
    if problem is None:
        what = "" if cost is None else f" with the cost {type(cost).__name__}"
        raise ValueError(
            f"solver='svrg' needs the compiled per-example marginals of the decoder "
            f"{type(risk.decoder).__name__}{what}, which it does not offer (chains and "
            "trees with the built-in feature maps, costs that decompose over parts); use "
            "solver='lbfgs'.")
    free = problem.free if isinstance(problem, HeldProblem) else None
    return SmoothedProblem(problem, SMOOTHINGS["entropy"], 1, risk.weights, risk.alpha,
                           free=free)


def _compiled_problem(feature_map, features, oracle, fixed):
    """The :class:`CompiledProblem` of the map's parameter vector on the compiled
    ``features``: itself when both have the same layout and nothing is held, a
    :class:`HeldProblem` for the seen pairs of a restricted map or ``fixed``
    parameters, None when the layouts do not match."""
    n_params = feature_map.n_params
    if features.n_params == n_params:
        positions = np.arange(n_params)
    else:
        positions = seen_pair_positions(feature_map_hook(feature_map, "pairs"), features)
        if positions is None or positions.shape[0] != n_params:
            return None
    if fixed is None and positions.shape[0] == features.n_params:
        return CompiledProblem(features, oracle)
    return HeldProblem(features, oracle, positions, fixed)


def seen_pair_positions(pairs, features):
    """Where the parameters of a map restricted to ``pairs`` sit in the compiled layout of
    all pairs, or None.

    Parameters
    ----------
    pairs : ndarray of bool of shape (n_features, K) or None
        The map's (feature, label) pairs with a weight; its unary weights are those of
        the pairs feature by feature, labels increasing, followed by its other
        parameters in the compiled order (bias, pair parameters).
    features : CompiledFeatures
        The layout of all pairs.

    Returns
    -------
    ndarray of shape (n_params,), int64, or None
        None when ``pairs`` is None or not of W's shape.
    """
    if pairs is None:
        return None
    pairs = np.asarray(pairs, dtype=bool)
    if pairs.shape != (features.n_features, features.n_unary):
        return None
    cut = features.n_features * features.n_unary
    return np.concatenate([np.flatnonzero(pairs.ravel()),
                           np.arange(cut, features.n_params)]).astype(np.int64)


class HeldProblem(CompiledProblem):
    """A compiled problem over all pairs for a parameter vector that has some of them.

    The engine's vector has every (feature, label) pair of the compiled layout; the user's
    vector (what the map packs, and the solver's ``w0`` and result) has the parameters
    at ``positions``. The engine's other entries, and those of ``fixed``, are held at
    zero: ``free`` marks the rest, for the epochs' masked updates
    (:func:`~._svrg_kernels.svrg_epoch`).

    Parameters
    ----------
    features : CompiledFeatures
    oracle : CompiledOracle
    positions : ndarray of shape (n_params,), int64
        Position of each user parameter in the compiled vector (column order).
    fixed : ndarray of bool of shape (n_params,) or None
        User parameters held at zero.

    Attributes
    ----------
    free : ndarray of shape (features.n_params,), uint8
        1 for the trained parameters, in the engine's order.
    """

    def __init__(self, features, oracle, positions, fixed=None):
        super().__init__(features, oracle)
        self.positions = np.ascontiguousarray(positions, dtype=np.int64)
        self.kept = (np.ones(self.positions.shape[0], dtype=bool) if fixed is None
                     else ~np.asarray(fixed, dtype=bool))
        trained = np.zeros(features.n_params)
        trained[self.positions[self.kept]] = 1.0
        self.free = super().to_engine(trained, copy=False).astype(np.uint8)

    @property
    def n_params(self):
        """Length of the user's w."""
        return self.positions.shape[0]

    def to_engine(self, w, copy=True):
        """The engine's vector of all pairs from the user's ``w`` (a new array), zero at
        the held parameters."""
        full = np.zeros(self.features.n_params)
        full[self.positions] = np.where(self.kept, w, 0.0)
        return super().to_engine(full, copy=False)

    def to_user(self, engine, copy=True):
        """The user's w from the engine's vector (a new array)."""
        return super().to_user(engine, copy=False)[self.positions]


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
    fixed : ndarray of bool of shape (n_params,) or None
        Parameters held at zero (with the unseen pairs of a restricted map, see
        :func:`crf_problem`): they stay exactly zero, and the objective and the stopping
        rule are those of the other parameters.

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
            message, converged = STOPPED_BY_CALLBACK, False
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
