"""The dual QP of the one-slack cutting-plane method, solved exactly by an active-set method.

With a working set of J cutting planes (averaged joint-feature differences ψ̄_j ∈ R^d,
averaged losses Δ̄_j), the one-slack structural SVM (Joachims, Finley & Yu 2009,
Algorithm 4) solves

    min_{w, ξ}  (λ/2) ‖w‖² + ξ   s.t.  ξ ≥ Δ̄_j − ⟨w, ψ̄_j⟩ for all j,  ξ ≥ 0,

whose dual only needs the Gram matrix G = Ψ̄ Ψ̄ᵀ and Δ̄:

    max_α  Δ̄ᵀα − (1 / (2λ)) αᵀ G α   s.t.  α ≥ 0,  Σ_j α_j ≤ 1,   w = (1/λ) Σ_j α_j ψ̄_j.
"""

from dataclasses import dataclass

import numpy as np
from numba import njit

__all__ = ["QPResult", "cutting_plane_primal_dual", "solve_capped_simplex_qp"]

# Eigenvalues of the reduced Hessian at most this fraction of the largest one are treated
# as zero curvature (duplicate or collinear planes give exact zeros, which rounding turns
# into ±1e-16 relative values).
_NULL_CURVATURE = 1e-10
# Consecutive unblocked steps on one free set before its stationarity is accepted as the
# numerical floor (one step is exact in exact arithmetic; more only refine rounding).
_MAX_REFINEMENTS = 5

@dataclass
class QPResult:
    """What :func:`solve_capped_simplex_qp` returns.

    Attributes
    ----------
    alpha : ndarray of shape (n_planes,)
        The dual solution: α ≥ 0, Σ α ≤ 1. Not unique when the Gram matrix is singular;
        ``G α`` (hence w) and the objective are.
    objective : float
        The dual objective Δ̄ᵀα − (scale/2) αᵀGα.
    primal_objective : float
        The primal objective of w(α) = scale · Ψ̄ᵀα over the working set,
        (scale/2) αᵀGα + ξ(α).
    slack : float
        ξ(α) = max(0, max_j Δ̄_j − scale · (Gα)_j), the one-slack variable at w(α).
    duality_gap : float
        ``primal_objective - objective`` ≥ 0, computed without cancellation as
        ξ(α) − Σ_j α_j r_j; zero certifies optimality on the working set.
    kkt_residual : float
        The largest violation of the optimality conditions, in units of Δ̄ (see Notes of
        :func:`solve_capped_simplex_qp`): zero at the optimum, and an upper bound of
        ``duality_gap``.
    n_iter : int
        Number of active-set iterations (steps plus releases of a bound).
    converged : bool
        False when ``max_iter`` was reached first.
    """

    alpha: np.ndarray
    objective: float
    primal_objective: float
    slack: float
    duality_gap: float
    kkt_residual: float
    n_iter: int
    converged: bool


def _validate(gram, linear, scale):
    gram = np.asarray(gram, dtype=np.float64)
    linear = np.asarray(linear, dtype=np.float64)
    if linear.ndim != 1:
        raise ValueError(f"linear must be 1-dimensional, got shape {linear.shape}")
    n_planes = linear.shape[0]
    if gram.shape != (n_planes, n_planes):
        raise ValueError(
            f"gram must have shape ({n_planes}, {n_planes}) to match linear, got {gram.shape}"
        )
    if not (np.all(np.isfinite(gram)) and np.all(np.isfinite(linear))):
        raise ValueError("gram and linear must be finite")
    if np.any(np.diag(gram) < 0):
        raise ValueError("gram must be positive semi-definite (it has a negative diagonal)")
    scale = float(scale)
    if not (np.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be positive and finite, got {scale}")
    return 0.5 * (gram + gram.T), linear, scale


def _certificate(gram, linear, scale, alpha, slack_weight=None):
    """Dual, primal, ξ, duality gap and KKT residual at a feasible α.

    ``slack_weight`` is the weight 1 − Σα of the implicit zero plane, when known exactly.
    """
    g_alpha = gram @ alpha
    quadratic = 0.5 * scale * float(alpha @ g_alpha)
    dual = float(linear @ alpha) - quadratic
    # r_j = Δ̄_j − ⟨w, ψ̄_j⟩: how much plane j is violated at w(α); the implicit zero plane
    # has r = 0.
    r = linear - scale * g_alpha
    slack = max(0.0, float(r.max())) if r.size else 0.0
    gap = max(0.0, slack - float(alpha @ r))
    if slack_weight is None:
        slack_weight = 1.0 - float(alpha.sum())
    support = alpha > 0
    lowest = float(r[support].min()) if np.any(support) else np.inf
    if slack_weight > 0:
        lowest = min(lowest, 0.0)
    kkt = max(0.0, slack - lowest) if np.isfinite(lowest) else 0.0
    return dual, quadratic + slack, slack, gap, kkt


def cutting_plane_primal_dual(gram, linear, scale, alpha):
    """Primal and dual objectives of the one-slack QP at a dual point α.

    Parameters
    ----------
    gram : array-like of shape (n_planes, n_planes)
        G = Ψ̄ Ψ̄ᵀ, the Gram matrix of the cutting planes ψ̄_j.
    linear : array-like of shape (n_planes,)
        Δ̄, the losses of the cutting planes.
    scale : float
        1/λ.
    alpha : array-like of shape (n_planes,)
        A feasible dual point: α ≥ 0, Σ α ≤ 1.

    Returns
    -------
    primal : float
        P(w) = (λ/2)‖w‖² + max(0, max_j Δ̄_j − ⟨w, ψ̄_j⟩) at w = scale · Ψ̄ᵀα, which is
        (scale/2) αᵀGα + max(0, max_j Δ̄_j − scale · (Gα)_j).
    dual : float
        D(α) = Δ̄ᵀα − (scale/2) αᵀGα.

    Notes
    -----
    Weak duality gives P(w(α)) ≥ P* = D* ≥ D(α) on the working set, so
    ``primal - dual`` bounds the suboptimality of both w(α) and α. Writing
    r_j = Δ̄_j − scale · (Gα)_j and ξ = max(0, max_j r_j), the gap is
    Σ_j α_j (ξ − r_j) + (1 − Σ_j α_j) ξ.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.optim._qp import cutting_plane_primal_dual
    >>> cutting_plane_primal_dual(np.eye(2), [1.0, 1.0], 1.0, [0.5, 0.5])
    (0.75, 0.75)
    """
    gram, linear, scale = _validate(gram, linear, scale)
    alpha = np.asarray(alpha, dtype=np.float64)
    if alpha.shape != linear.shape:
        raise ValueError(f"alpha must have shape {linear.shape}, got {alpha.shape}")
    dual, primal, _, _, _ = _certificate(gram, linear, scale, alpha)
    return primal, dual


def _starting_point(alpha0, n_planes):
    """Augmented start (zero plane first) from a warm start, padded with zeros."""
    x = np.zeros(n_planes + 1)
    if alpha0 is None:
        x[0] = 1.0
        return x
    alpha0 = np.asarray(alpha0, dtype=np.float64)
    if alpha0.ndim != 1 or alpha0.shape[0] > n_planes:
        raise ValueError(
            f"alpha0 must be 1-dimensional with at most {n_planes} entries, "
            f"got shape {alpha0.shape}"
        )
    if not np.all(np.isfinite(alpha0)):
        raise ValueError("alpha0 must be finite")
    start = np.maximum(alpha0, 0.0)
    total = start.sum()
    if total > 1.0:
        start /= total
        total = 1.0
    x[1 : start.shape[0] + 1] = start
    # A remainder at rounding level is the constraint Σα ≤ 1 being active.
    x[0] = 1.0 - total if 1.0 - total > 4 * np.finfo(float).eps * n_planes else 0.0
    return x


@njit(cache=True, nogil=True)
def _cholesky(matrix, threshold):
    """Lower Cholesky factor of a symmetric matrix, and False when a pivot (squared) is at
    most ``threshold``: then the matrix is treated as singular."""
    n = matrix.shape[0]
    factor = np.zeros((n, n))
    for j in range(n):
        pivot = matrix[j, j]
        for k in range(j):
            pivot -= factor[j, k] * factor[j, k]
        if not pivot > threshold:
            return factor, False
        root = np.sqrt(pivot)
        factor[j, j] = root
        for i in range(j + 1, n):
            value = matrix[i, j]
            for k in range(j):
                value -= factor[i, k] * factor[j, k]
            factor[i, j] = value / root
    return factor, True


@njit(cache=True, nogil=True)
def _cholesky_solve(factor, b):
    """Solve L Lᵀ y = b for the lower factor L."""
    n = b.shape[0]
    y = b.copy()
    for i in range(n):
        for k in range(i):
            y[i] -= factor[i, k] * y[k]
        y[i] /= factor[i, i]
    for i in range(n - 1, -1, -1):
        for k in range(i + 1, n):
            y[i] -= factor[k, i] * y[k]
        y[i] /= factor[i, i]
    return y


@njit(cache=True, nogil=True)
def _direction(hessian, grad, free, pivot_position, grad_tol):
    """Step on the free set F that keeps Σ x = 1, for the equality-constrained subproblem.

    The null space of 1ᵀ on F is spanned by e_j − e_p (p the pivot), which turns
    min ½ dᵀ H_FF d + g_Fᵀ d s.t. 1ᵀd = 0 into an unconstrained problem in y = d_{F∖p}
    with reduced Hessian M and reduced gradient b. Returns d_F: the Newton step −M⁺b when
    b lies in the range of M (the exact subproblem minimizer), else a direction of zero
    curvature along which the objective decreases linearly.
    """
    n_free = free.shape[0]
    pivot = free[pivot_position]
    rest = np.empty(n_free - 1, dtype=np.int64)
    k = 0
    for position in range(n_free):
        if position != pivot_position:
            rest[k] = free[position]
            k += 1
    m = n_free - 1
    reduced = np.empty((m, m))
    b = np.empty(m)
    top = 0.0
    for a in range(m):
        b[a] = grad[rest[a]] - grad[pivot]
        for c in range(m):
            reduced[a, c] = (hessian[rest[a], rest[c]] - hessian[rest[a], pivot]
                             - hessian[pivot, rest[c]] + hessian[pivot, pivot])
        top = max(top, reduced[a, a])
    solved = False
    y = np.zeros(m)
    if top > 0:
        # A Cholesky pivot that small means near-singular: use the eigendecomposition.
        factor, solved = _cholesky(reduced, _NULL_CURVATURE * top)
        if solved:
            y = -_cholesky_solve(factor, b)
    if not solved:
        values, vectors = np.linalg.eigh(reduced)
        biggest = values[m - 1]
        positive = values > _NULL_CURVATURE * biggest if biggest > 0 else values > np.inf
        null = vectors[:, ~positive]
        b_null = null.T @ b
        if b_null.size > 0 and np.abs(b_null).max() > grad_tol:
            y = -(null @ b_null)
        else:
            kept = vectors[:, positive]
            y = -(kept @ ((kept.T @ b) / values[positive]))
    step = np.empty(n_free)
    k = 0
    total = 0.0
    for position in range(n_free):
        if position != pivot_position:
            step[position] = y[k]
            total += y[k]
            k += 1
    step[pivot_position] = -total
    return step

def solve_capped_simplex_qp(gram, linear, scale, *, alpha0=None, tol=1e-10, max_iter=10_000):
    """Maximize Δ̄ᵀα − (scale/2) αᵀGα over {α ≥ 0, Σ α ≤ 1} exactly (active-set method).

    This is the dual of the one-slack structural SVM QP on a working set of J cutting
    planes (Joachims, Finley & Yu 2009, Algorithm 4), with scale = 1/λ:

    .. math::

        \\max_{\\alpha \\ge 0,\\ \\sum_j \\alpha_j \\le 1}
        \\bar\\Delta^\\top \\alpha - \\frac{1}{2\\lambda} \\alpha^\\top G \\alpha,
        \\qquad w = \\frac{1}{\\lambda} \\sum_j \\alpha_j \\bar\\psi_j,
        \\qquad G = \\bar\\Psi \\bar\\Psi^\\top.

    Parameters
    ----------
    gram : array-like of shape (n_planes, n_planes)
        G, symmetric positive semi-definite; may be singular (repeated or collinear
        planes). It is symmetrized as (G + Gᵀ)/2.
    linear : array-like of shape (n_planes,)
        Δ̄, the losses of the planes (any sign is accepted).
    scale : float
        1/λ > 0.
    alpha0 : array-like of shape (n_prev,), default=None
        Warm start, e.g. the solution for the previous working set: entries for the
        ``n_planes - n_prev`` planes added since are taken as zero. Negative entries are
        clipped and a sum above one is scaled down. Default: α = 0.
    tol : float, default=1e-10
        Optimality tolerance relative to the losses, in units of max_j abs(Δ̄_j): stop when
        the violations r_j = Δ̄_j − scale · (Gα)_j of the planes in the support agree,
        and no plane outside it exceeds them, up to ``tol`` times that size; the KKT
        residual, and the duality gap which it bounds, are then of that order. It is
        raised to the rounding error of r if that is larger,
        2 √(J + 1) ε · scale · max_j Σ_k abs(G_jk) α_k.
    max_iter : int, default=10000
        Maximum number of active-set iterations.

    Returns
    -------
    QPResult
        α, the dual and primal objectives, the one-slack ξ at w(α), the duality gap,
        the KKT residual, the number of iterations and whether it converged.

    Notes
    -----
    **Reformulation.** An implicit plane 0 with ψ̄_0 = 0 and Δ̄_0 = 0 takes the weight
    α_0 = 1 − Σ_j α_j, so the feasible set becomes the probability simplex in J + 1
    variables. With H = scale · G (plane 0 contributing a zero row and column) the problem
    is min f(x) = ½ xᵀHx − cᵀx over {x ≥ 0, 1ᵀx = 1}. Its KKT conditions, in terms of
    r = c − Hx (r_j = Δ̄_j − ⟨w, ψ̄_j⟩ is how much plane j is violated at w(α), r_0 = 0),
    are: r_j ≤ ξ for all j, with equality where x_j > 0. The multiplier ξ of 1ᵀx = 1 is
    the primal slack max(0, max_j r_j). The reported KKT residual is
    ``max_j r_j - min_{j: x_j > 0} r_j`` over the J + 1 planes (SMO's maximal violating
    pair), and the duality gap is Σ_j x_j (ξ − r_j), which it bounds.

    **Algorithm.** A primal active-set method (Nocedal & Wright 2006, Algorithm 16.3),
    chosen because it terminates with the exact optimum: each iteration solves the
    equality-constrained QP on the free set F = {j : x_j > 0} with 1ᵀx = 1, in the
    null-space basis e_j − e_p of 1ᵀ. If the step is blocked by a bound x_j ≥ 0, that
    bound joins the working set; at a stationary point, the bound with the most negative
    multiplier −(r_j − ξ) < 0 is released; when no multiplier is negative, x is optimal.
    Each step uses an exact line search along its direction, so f decreases strictly and
    rounding in the reduced solve cannot increase it. Working sets are the supports of
    the iterates, so their size F (not J) sets the cost: O(F³) per iteration for the
    reduced Cholesky factorization plus O(J²) for the gradient.

    **Singular G.** The reduced Hessian on F is singular when planes repeat or are
    collinear. It is then eigendecomposed: if the reduced gradient has a component in its
    null space, the objective decreases linearly along that direction until a bound
    blocks (the simplex is bounded, and a direction with zero sum has a negative entry),
    which shrinks F; otherwise the pseudo-inverse step reaches the subproblem minimum.
    Either way the method never fails on a singular G and stops at an optimum (α is then
    not unique, but G α and the objective are).

    **Warm starts.** The free set starts as the support of ``alpha0``, so after adding one
    plane to a solved working set, typically only a few iterations remain: the new
    plane's bound is released, a few steps re-balance the support.

    Coordinate methods (SMO-style pairwise updates) are exact per step but converge only
    linearly, slowly when G is ill-conditioned; the active-set method reaches the optimum
    in a finite number of steps, which is what an accurate inner solve asks for.

    References
    ----------
    Joachims, Finley & Yu (2009). Cutting-plane training of structural SVMs. Machine
    Learning 77(1), Algorithm 4.
    Nocedal & Wright (2006). Numerical Optimization, 2nd ed., Section 16.5.

    Examples
    --------
    Two orthogonal unit planes with unit loss and λ = 1: the constraint Σα ≤ 1 is active.

    >>> import numpy as np
    >>> from skstruct.optim._qp import solve_capped_simplex_qp
    >>> result = solve_capped_simplex_qp(np.eye(2), np.array([1.0, 1.0]), 1.0)
    >>> result.alpha
    array([0.5, 0.5])
    >>> result.objective, result.primal_objective, result.converged
    (0.75, 0.75, True)

    A duplicate plane makes G singular; adding a plane and warm starting from the
    previous solution takes fewer iterations:

    >>> psi = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    >>> first = solve_capped_simplex_qp(psi[:2] @ psi[:2].T, np.array([0.5, 0.5]), 1.0)
    >>> float(first.alpha.sum()), first.duality_gap
    (0.5, 0.0)
    >>> warm = solve_capped_simplex_qp(psi @ psi.T, np.array([0.5, 0.5, 1.0]), 1.0,
    ...                                alpha0=first.alpha)
    >>> cold = solve_capped_simplex_qp(psi @ psi.T, np.array([0.5, 0.5, 1.0]), 1.0)
    >>> bool(np.isclose(warm.objective, cold.objective)), warm.n_iter < cold.n_iter
    (True, True)
    """
    gram, linear, scale = _validate(gram, linear, scale)
    n_planes = linear.shape[0]
    if tol < 0:
        raise ValueError(f"tol must be non-negative, got {tol}")
    max_iter = int(max_iter)
    x = _starting_point(alpha0, n_planes)

    hessian = np.zeros((n_planes + 1, n_planes + 1))
    hessian[1:, 1:] = scale * gram
    c = np.concatenate(([0.0], linear))

    x, n_iter, converged = _active_set(hessian, c, x, float(tol), max_iter)
    alpha = x[1:].copy()
    total = float(alpha.sum())
    if total > 1.0:
        alpha /= total
    dual, primal, slack, gap, kkt = _certificate(gram, linear, scale, alpha, x[0])
    return QPResult(alpha, dual, primal, slack, gap, kkt, n_iter, converged)


@njit(cache=True, nogil=True)
def _active_set(hessian, c, x, tol, max_iter):
    """The active-set iterations on the simplex, from the feasible x (modified in place)."""
    n = x.shape[0]
    is_free = x > 0
    loss_tol = tol * np.abs(c).max()
    rounding = 2 * np.sqrt(n) * np.finfo(np.float64).eps
    grad = np.empty(n)
    n_iter, converged, refinements = 0, False, 0
    while True:
        largest = 0.0
        for i in range(n):
            value, size = -c[i], 0.0
            for j in range(n):
                if x[j] != 0.0:
                    value += hessian[i, j] * x[j]
                    size += abs(hessian[i, j]) * x[j]
            grad[i] = value  # = −r
            largest = max(largest, size)
        grad_tol = max(loss_tol, rounding * largest)
        free = np.flatnonzero(is_free)
        n_free = free.shape[0]
        level = 0.0
        for k in range(n_free):
            level += grad[free[k]]
        level /= n_free
        spread = 0.0
        for k in range(n_free):
            spread = max(spread, abs(grad[free[k]] - level))
        if n_free > 1 and spread > grad_tol and refinements < _MAX_REFINEMENTS:
            if n_iter == max_iter:
                break
            n_iter += 1
            pivot_position = 0
            for k in range(1, n_free):
                if x[free[k]] > x[free[pivot_position]]:
                    pivot_position = k
            step = _direction(hessian, grad, free, pivot_position, grad_tol)
            slope, curvature = 0.0, 0.0
            for a in range(n_free):
                slope += grad[free[a]] * step[a]
                for b in range(n_free):
                    curvature += step[a] * hessian[free[a], free[b]] * step[b]
            if slope >= 0:
                # Rounding floor: no descent left on this free set.
                refinements = _MAX_REFINEMENTS
                continue
            ratios = np.full(n_free, np.inf)
            t_block = np.inf
            for a in range(n_free):
                if step[a] < 0:
                    ratios[a] = x[free[a]] / -step[a]
                    t_block = min(t_block, ratios[a])
            t_min = -slope / curvature if curvature > 0 else np.inf
            t = min(t_block, t_min)
            if not np.isfinite(t):
                break  # Unbounded direction: impossible on a simplex unless G is not PSD.
            for a in range(n_free):
                x[free[a]] += t * step[a]
            if t_block <= t_min:
                for a in range(n_free):
                    if ratios[a] == t_block or x[free[a]] <= 0:
                        x[free[a]] = 0.0
                        is_free[free[a]] = False
                refinements = 0
            else:
                refinements += 1
            continue
        # Stationary on the free set: check the multipliers of the bounds x_j ≥ 0.
        refinements = 0
        release, lowest = -1, np.inf
        for j in range(n):
            if not is_free[j] and grad[j] - level < lowest:
                release, lowest = j, grad[j] - level
        if release < 0 or lowest >= -grad_tol:  # (always when f ≡ 0)
            converged = True
            break
        # Released: x_release is still 0 and the next step increases it, since its
        # multiplier is the slope of every feasible step, per unit of x_release.
        if n_iter == max_iter:
            break
        n_iter += 1
        is_free[release] = True

    return x, n_iter, converged
