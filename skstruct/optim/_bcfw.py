"""Block-coordinate Frank–Wolfe on the dual of the structured SVM (margin rescaling)."""

import copy
import time

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from ..decoders import ChainDecoder
from ..features import LinearChainFeatures
from ._bcfw_chain import bcfw_chain_pass
from ._lbfgs import OptimizeResult

__all__ = ["minimize_bcfw", "structured_hinge_primal"]


def structured_hinge_primal(risk, w):
    """Primal objective λ/2 ‖w‖² + Σ_i ω_i H_i(w) and the hinge values H_i (batched)."""
    scores = risk.features.scores(risk.batch, w)
    values = risk.loss.values(risk.decoder, scores, risk.y, risk.gold(scores))
    return float(risk.weights @ values) + 0.5 * risk.alpha * float(w @ w), values


def minimize_bcfw(
    risk, *, max_iter=50, tol=1e-3, averaging=True, random_state=None, verbose=0,
    callback=None, printer=print,
):
    """Structured SVM by block-coordinate Frank–Wolfe on the dual.

    Minimizes P(w) = (λ/2) ‖w‖² + Σ_i ω_i H_i(w), H_i the margin-rescaled structured hinge
    of example i and ω_i its normalized weight (1/n by default). The dual variables of
    block i are kept in part space: w_i = (ω_i / λ) A_iᵀ c_i with c_i a convex combination
    of a_{y_i} − a_y, so memory is the size of the examples' parts, not n copies of w.

    Parameters
    ----------
    risk : RegularizedRisk
        With a :class:`~skstruct.losses.StructuredHingeLoss` with ``rescaling="margin"``
        and a feature map that has ``example_transpose``.
    max_iter : int, default=50
        Number of passes over the examples.
    tol : float, default=1e-3
        Stop when the duality gap P(w) − D(α), computed exactly after every pass with one
        batched loss-augmented inference, is at most ``tol``.
    averaging : bool, default=True
        Return the weighted average w̄_k = k/(k+2) w̄_{k−1} + 2/(k+2) w_k of the iterates
        (and its dual) instead of the last iterate. It is kept lazily, with sparse work
        per step: w̄_k = w_k − B_k / T_k with T_k = (k+1)(k+2)/2 and B_k the sum of
        m(m+1)/2 · Δw_m over the steps m ≤ k.
    random_state : int, RandomState or None
        Order of the examples in each pass.
    verbose, callback, printer
        As for :func:`~skstruct.optim.minimize_lbfgs`; the callback receives the pass
        number, w and the primal objective.

    Returns
    -------
    OptimizeResult
        ``objective_curve`` holds the primal objective and ``duality_gaps`` the gap after
        each pass.

    Notes
    -----
    One step on block i: ŷ = loss-augmented MAP, d = c_i − (a_{y_i} − a_ŷ),
    γ = clip([ω_i d·η_i − ℓ_i + ω_i Δ_i(ŷ)] / [(ω_i² / λ) ‖A_iᵀ d‖²], 0, 1),
    w ← w − γ (ω_i / λ) A_iᵀ d, c_i ← c_i − γ d, ℓ_i ← (1 − γ) ℓ_i + γ ω_i Δ_i(ŷ), with
    η_i = A_i w the part scores of example i. A_iᵀ d touches only the parameters of the
    features present in example i.

    References
    ----------
    Lacoste-Julien, Jaggi, Schmidt & Pletscher (2013). Block-coordinate Frank–Wolfe
    optimization for structural SVMs. ICML.
    """
    loss = risk.loss
    if getattr(loss, "rescaling", None) != "margin":
        raise ValueError("BCFW solves the structured SVM with margin rescaling only.")
    rng = check_random_state(random_state)
    features, decoder, lam = risk.features, risk.decoder, risk.alpha
    if lam <= 0:
        raise ValueError("BCFW needs a positive regularization strength alpha.")
    n = risk.n_examples
    omega = risk.weights
    w = np.zeros(features.n_params)
    lazy = np.zeros(features.n_params)
    zero_scores = features.scores(risk.batch, w)
    gold = risk.gold(zero_scores)
    duals = gold * 0.0  # c_i = 0 for all i: every block at its gold output
    ell = np.zeros(n)
    ell_avg_total = 0.0
    examples = [risk.example(i) for i in range(n)] if not _can_fuse(risk) else None
    curve, gaps = [], []
    start = time.perf_counter()
    step = 0
    message, converged = "maximum number of passes reached", False
    fused = _fused_pass(risk, w, lazy, duals, ell, averaging)
    primal_risk = _sparse_view(risk)
    ell_total = 0.0
    for _ in range(max_iter):
        order = rng.permutation(n)
        if fused is not None:
            step, ell_avg_total = fused(order, step, ell_avg_total)
        else:
            for i in order:
                batch_i, y_i = examples[i]
                scores_i = features.scores(batch_i, w)
                y_hat, delta = loss.loss_augmented(decoder, scores_i, y_i)
                c_i, gold_i = duals.example(i), gold.example(i)
                d = c_i - (gold_i - decoder.parts(scores_i, y_hat))
                indices, values = features.example_transpose(batch_i, d)
                curvature = omega[i] ** 2 / lam * float(values @ values)
                ell_s = omega[i] * float(delta[0])
                numerator = omega[i] * float(d.dot(scores_i)[0]) - ell[i] + ell_s
                gamma = min(max(numerator / curvature, 0.0), 1.0) if curvature > 0 else 0.0
                update = (gamma * omega[i] / lam) * values
                w[indices] -= update
                if averaging:
                    lazy[indices] -= (step + 1) * (step + 2) / 2.0 * update
                c_i -= d * gamma
                ell_total += gamma * (ell_s - ell[i])
                ell[i] += gamma * (ell_s - ell[i])
                step += 1
                ell_avg_total += (2.0 / (step + 2)) * (ell_total - ell_avg_total)
        w_avg = w - lazy / ((step + 1) * (step + 2) / 2.0)
        current, dual_sum = (w_avg, ell_avg_total) if averaging else (w, ell.sum())
        primal, _ = structured_hinge_primal(primal_risk, current)
        gap = primal - (dual_sum - 0.5 * lam * float(current @ current))
        curve.append(primal)
        gaps.append(gap)
        if verbose:
            printer(f"pass {len(curve):4d}  objective {primal: .8e}  gap {gap:.3e}  "
                    f"time {time.perf_counter() - start:8.2f}s")
        if callback is not None and callback(len(curve), current, primal):
            message, converged = "stopped by callback", True
            break
        if gap <= tol:
            message, converged = "duality gap below tol", True
            break
    result = OptimizeResult(
        w=w - lazy / ((step + 1) * (step + 2) / 2.0) if averaging else w.copy(),
        n_iter=len(curve), converged=converged,
        objective_curve=curve, message=message, n_evaluations=step,
    )
    result.duality_gaps = gaps
    return result


def _can_fuse(risk):
    return (
        isinstance(risk.features, LinearChainFeatures)
        and type(risk.decoder) is ChainDecoder
        and hasattr(risk.loss.task_loss, "unary_costs")
    )


def _fused_pass(risk, w, lazy, duals, ell, averaging):
    """The compiled pass for chains with token-decomposable losses, or None."""
    if not _can_fuse(risk):
        return None
    batch, features = risk.batch, risk.features
    X = batch.X if sp.issparse(batch.X) else sp.csr_matrix(batch.X)
    costs = risk.loss.task_loss.unary_costs(risk.y, batch.offsets, features.n_states)
    params, accumulator = features.unpack(w), features.unpack(lazy)
    avg_ell = np.zeros(1)

    def run(order, step, ell_avg_total):
        avg_ell[0] = ell_avg_total
        step = bcfw_chain_pass(
            X.data, X.indices, X.indptr, batch.offsets, risk.y, costs, *params,
            duals.unary, duals.transition, duals.start, duals.end, ell, risk.weights,
            risk.alpha, order, averaging, *accumulator, avg_ell, step,
        )
        return step, avg_ell[0]

    return run


def _sparse_view(risk):
    """The same objective on CSR features when dense features are mostly zeros.

    The duality gap needs the scores of all examples after every pass; with sparse
    pixels or indicator features the CSR product does a fraction of the work.
    """
    X = risk.batch.X
    if sp.issparse(X) or np.count_nonzero(X) > 0.5 * X.size:
        return risk
    view = copy.copy(risk)
    view.batch = risk.batch.with_features(sp.csr_matrix(X))
    return view
