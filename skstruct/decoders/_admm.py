"""LP-SparseMAP and LP-MAP on a factor graph by ADMM, and the LP-SparseMAP backward pass.

The problem
-----------
A :class:`FlatFactorGraph` has ``n_vars`` binary variables u and factors of three groups
(linear-constraint factors, PAIR factors with one additional variable v_f each, OROut
factors), every factor seeing some variables through its *entries*. Entry j of a factor
is a copy q_j of variable i(j); deg_i is the number of entries on variable i. LP-SparseMAP
(Niculae & Martins 2020) is

.. math::

    \\max_u \\; \\eta_U^\\top u + \\eta_{pair}^\\top v - \\tfrac12 \\|u\\|^2
    \\quad \\text{s.t. } (C_f u, v_f) \\in P_f \\text{ for every factor } f,

the local-polytope relaxation; LP-MAP (AD3, Martins et al. 2015) drops the ½‖u‖² term.

The ADMM (ALGORITHMS.md section 3, Algorithm 1), in unscaled copies
----------------------------------------------------------------------
Algorithm 1 works with the scaled copies μ̃_j = d_j q_j and ū_i = d_i u_i, d_i =
deg_i^(-1/2), multipliers λ_j, penalty ρ, and η̃_j = d_j η_i. Factor f maximizes its part
of the augmented Lagrangian

.. math::

    (\\tilde\\eta_f + \\lambda_f + \\rho C_f \\bar u)^\\top \\tilde\\mu_f
    - \\tfrac{\\kappa + \\rho}{2} \\|\\tilde\\mu_f\\|^2 + \\eta_{pair,f} v_f,

with κ = 1 for LP-SparseMAP (dividing by 1 + ρ gives Algorithm 1's θ_f) and κ = 0 for
LP-MAP (no ½‖u‖² term, only the penalty's quadratic). Substituting μ̃_j = d_j q_j gives
the factor kernels' local problem max_{q ∈ P_f} Σ a_j q_j − ½ Σ w_j q_j² + s_f v_f with

.. math::

    a_j = \\frac{\\eta_i + \\rho u_i}{\\deg_i} + \\lambda'_j, \\qquad
    w_j = \\frac{\\kappa + \\rho}{\\deg_i}, \\qquad s_f = \\eta_{pair, f},

where i = i(j), u = the current consensus and λ'_j = d_j λ_j the multiplier in unscaled
units. The consensus ū_i = mean of the μ̃ copies is u_i = mean_j q_j (Algorithm 1's
output u_i = sqrt(deg_i) ū_i), and λ_j ← λ_j − ρ (μ̃_j − ū_i) reads
λ'_j ← λ'_j − ρ (q_j − u_i) / deg_i; the copies' multipliers of a variable sum to zero.
Since λ' is not divided by ρ, changing ρ needs no rescaling of λ'. Residuals (scaled, as
Algorithm 1): primal ‖μ̃ − C ū‖ = sqrt(Σ_j (q_j − u_i)² / deg_i), dual
‖C(ū − ū_prev)‖ = ‖u − u_prev‖. Every 10 iterations ρ doubles when primal > 100 × dual
and halves when dual > 10 × primal, within [1e-3, 100]; the solver stops when both are
below ``tol``. Start: u = 0.5, λ' = 0 (or a previous result: ``warm_start``).

With one factor and w = 1 (deg = 1) the fixed point is the factor's SparseMAP: at
consensus the ρ terms of a and w cancel in the optimality conditions.

A variable in no factor (deg_i = 0) is solved alone: u_i = clip(η_i, 0, 1) for
LP-SparseMAP, u_i = 1 if η_i > 0 else 0 for LP-MAP.

Every iteration calls each group's batched kernel once (:mod:`._factor_linear_kernels`,
:mod:`._factor_pair_kernels`); the per-entry bookkeeping is one compiled pass.

Backward pass
-------------
At the solution each factor sits on an affine piece of its local solution map; in scaled
coordinates the Jacobian of θ ↦ μ̃ on that piece is the orthogonal projector P_S onto the
piece's tangent space S (restricted to the support), and on a PAIR piece v_f is affine in
μ̃_f with gradient g_f. The optimality conditions of the global problem give, for a
direction (dη, dη_pair), dμ̃ = Π (D C dη + H dη_pair) with Π the orthogonal projector on
S ∩ R, R = range(C) the consensus subspace, and H's column f the vector h_f = P_S g_f on
factor f's entries. So the Jacobian of (η, η_pair) ↦ (u, v) is the symmetric Bᵀ Π B,
B = [D C, H], and its vector–Jacobian product is

.. math::

    x_0 = D C g_u + H g_v, \\quad x = \\Pi x_0 = \\lim_k (P_R P_S)^k P_R x_0, \\quad
    (d\\eta)_i = \\sqrt{\\deg_i}\\, x_i, \\quad (d\\eta_{pair})_f = h_f^\\top x_f

(alternating projections, von Neumann; P_R averages the copies of each variable). P_S is
(1 + ρ) D J D with J the kernels' Jacobian at the final local problem (a, w, s) and
h_f = (1 + ρ) D ∂q_f/∂s_f. The iteration stops when the iterate moves less than ``tol``.
"""

from dataclasses import dataclass, field
import warnings

import numpy as np
from numba import njit
from sklearn.exceptions import ConvergenceWarning

from . import _factor_linear_kernels as _lin
from . import _factor_pair_kernels as _pair

__all__ = ["FlatFactorGraph", "ADMMResult", "admm_sparsemap", "admm_backward"]

RHO_MIN, RHO_MAX = 1e-3, 100.0
ADAPT_EVERY = 10


def _index_array(name, values, n_vars, shape_tail=()):
    array = np.ascontiguousarray(values if values is not None else
                                 np.zeros((0,) + shape_tail), dtype=np.int64)
    if array.shape[1:] != shape_tail:
        raise ValueError(f"{name} must have shape (n, {', '.join(map(str, shape_tail))})"
                         if shape_tail else f"{name} must be one-dimensional.")
    if array.size and (array.min() < 0 or array.max() >= n_vars):
        raise ValueError(f"{name} must index variables 0..{n_vars - 1}.")
    return array


@dataclass(frozen=True)
class FlatFactorGraph:
    """A factor graph over binary variables, flat by factor group.

    Parameters
    ----------
    n_vars : int
        Number of binary variables.
    lin_var : ndarray of shape (n_lin_entries,), int
        Variable of every entry of the linear-constraint factors.
    lin_offsets : ndarray of shape (n_lin + 1,), int
        Linear factor f owns entries ``lin_offsets[f]:lin_offsets[f + 1]``.
    lin_kind : ndarray of shape (n_lin,), int
        XOR, AT_MOST_ONE, OR, BUDGET or KNAPSACK (codes of
        :mod:`._factor_linear_kernels`).
    lin_coef : ndarray of shape (n_lin_entries,), float
        KNAPSACK costs (1 on other kinds' entries). Default: ones.
    lin_bound : ndarray of shape (n_lin,), float
        BUDGET / KNAPSACK bound (1 for other kinds). Default: ones.
    lin_negated : ndarray of shape (n_lin_entries,), bool
        Entries entering the constraint as 1 − u. Default: none.
    pair_var : ndarray of shape (n_pair, 2), int
        The two variables of every PAIR factor (its additional variable v_f = E[u u']).
    orout_var : ndarray of shape (n_orout_entries,), int
        Variable of every OROut entry; the last entry of a factor is the output.
    orout_offsets : ndarray of shape (n_orout + 1,), int
        OROut factor f owns entries ``orout_offsets[f]:orout_offsets[f + 1]``.

    Attributes
    ----------
    entry_var : ndarray of shape (n_entries,), int64
        Variables of all entries: linear, then PAIR (row-major), then OROut.
    degree : ndarray of shape (n_vars,), int64
        Number of entries on every variable.
    """

    n_vars: int
    lin_var: np.ndarray = None
    lin_offsets: np.ndarray = None
    lin_kind: np.ndarray = None
    lin_coef: np.ndarray = None
    lin_bound: np.ndarray = None
    lin_negated: np.ndarray = None
    pair_var: np.ndarray = None
    orout_var: np.ndarray = None
    orout_offsets: np.ndarray = None
    entry_var: np.ndarray = field(init=False, repr=False)
    degree: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        n_vars = int(self.n_vars)
        if n_vars < 0:
            raise ValueError("n_vars must be >= 0.")
        put = object.__setattr__
        put(self, "n_vars", n_vars)
        lin_var = _index_array("lin_var", self.lin_var, n_vars)
        n_lin_entries = lin_var.shape[0]
        offsets = (np.zeros(1, np.int64) if self.lin_offsets is None
                   else self.lin_offsets)
        kind = np.zeros(0, np.int64) if self.lin_kind is None else self.lin_kind
        n_lin = np.asarray(offsets).shape[0] - 1
        coef = np.ones(n_lin_entries) if self.lin_coef is None else self.lin_coef
        bound = np.ones(n_lin) if self.lin_bound is None else self.lin_bound
        negated = (np.zeros(n_lin_entries, bool) if self.lin_negated is None
                   else self.lin_negated)
        _, _, offsets, kind, coef, bound, negated = _lin.check_linear_factors(
            np.zeros(n_lin_entries), np.ones(n_lin_entries), offsets, kind, coef, bound,
            negated)
        for name, value in [("lin_var", lin_var), ("lin_offsets", offsets),
                            ("lin_kind", kind), ("lin_coef", coef), ("lin_bound", bound),
                            ("lin_negated", negated)]:
            put(self, name, value)
        put(self, "pair_var", _index_array("pair_var", self.pair_var, n_vars, (2,)))
        orout_var = _index_array("orout_var", self.orout_var, n_vars)
        orout_offsets = np.ascontiguousarray(
            np.zeros(1) if self.orout_offsets is None else self.orout_offsets,
            dtype=np.int64)
        if (orout_offsets.ndim != 1 or orout_offsets[0] != 0
                or orout_offsets[-1] != orout_var.shape[0]
                or np.any(np.diff(orout_offsets) < 1)):
            raise ValueError("orout_offsets must increase strictly from 0 to "
                             "len(orout_var).")
        put(self, "orout_var", orout_var)
        put(self, "orout_offsets", orout_offsets)
        entry_var = np.concatenate([lin_var, self.pair_var.ravel(), orout_var])
        put(self, "entry_var", entry_var)
        put(self, "degree", np.bincount(entry_var, minlength=n_vars).astype(np.int64))

    @property
    def n_pair(self):
        return self.pair_var.shape[0]

    @property
    def n_entries(self):
        return self.entry_var.shape[0]

    def _slices(self):
        n_lin = self.lin_var.shape[0]
        n_pair_entries = 2 * self.n_pair
        return (slice(0, n_lin), slice(n_lin, n_lin + n_pair_entries),
                slice(n_lin + n_pair_entries, self.n_entries))


@dataclass(frozen=True)
class ADMMResult:
    """The outcome of :func:`admm_sparsemap`.

    Attributes
    ----------
    u : ndarray of shape (n_vars,)
        Variable marginals (the consensus: mean of the factors' copies).
    v : ndarray of shape (n_pair,)
        PAIR additional marginals from the last local solutions.
    n_iter : int
    primal_residual, dual_residual : float
        Of the last iteration (scaled, as in the module docstring).
    converged : bool
        Both residuals below ``tol``.
    rho : float
        The final penalty (the one of the last local problems).
    map_mode : bool
    integral : bool or None
        In map_mode, whether every u_i is within 1e-6 of 0 or 1; None otherwise.
    lam : ndarray of shape (n_entries,)
        Unscaled multipliers λ' (linear, PAIR row-major, OROut entries).
    a, w : ndarray of shape (n_entries,)
        The last local problems' scores and weights (kernel units).
    q : ndarray of shape (n_entries,)
        The last local solutions (copies).
    s : ndarray of shape (n_pair,)
        The PAIR scores s_f = η_pair of the local problems.
    """

    u: np.ndarray
    v: np.ndarray
    n_iter: int
    primal_residual: float
    dual_residual: float
    converged: bool
    rho: float
    map_mode: bool
    integral: object
    lam: np.ndarray
    a: np.ndarray
    w: np.ndarray
    q: np.ndarray
    s: np.ndarray


@njit(cache=True, nogil=True)
def _local_scores(eta_u, u, lam, entry_var, inv_degree, rho, kappa, a, w):
    for j in range(entry_var.shape[0]):
        i = entry_var[j]
        a[j] = (eta_u[i] + rho * u[i]) * inv_degree[i] + lam[j]
        w[j] = (kappa + rho) * inv_degree[i]


@njit(cache=True, nogil=True)
def _consensus(q, entry_var, inv_degree, rho, u, lam):
    """u ← mean of the copies (variables with copies only), λ' update; returns the
    primal and dual residuals."""
    n_vars = u.shape[0]
    total = np.zeros(n_vars)
    for j in range(entry_var.shape[0]):
        total[entry_var[j]] += q[j]
    dual = 0.0
    for i in range(n_vars):
        if inv_degree[i] > 0.0:
            new = total[i] * inv_degree[i]
            dual += (new - u[i]) ** 2
            u[i] = new
    primal = 0.0
    for j in range(entry_var.shape[0]):
        i = entry_var[j]
        r = q[j] - u[i]
        primal += r * r * inv_degree[i]
        lam[j] -= rho * r * inv_degree[i]
    return np.sqrt(primal), np.sqrt(dual)


def _solve_groups(graph, a, w, s, q, v):
    """One call of every group's kernel on the flat entry arrays."""
    lin, pair, orout = graph._slices()
    if lin.stop > lin.start:
        _lin.qp(a[lin], w[lin], graph.lin_offsets, graph.lin_kind, graph.lin_coef,
                graph.lin_bound, graph.lin_negated, q[lin])
    if graph.n_pair:
        _pair.pair_qp(a[pair].reshape(-1, 2), w[pair].reshape(-1, 2), s,
                      q[pair].reshape(-1, 2), v)
    if orout.stop > orout.start:
        _pair.orout_qp(a[orout], w[orout], graph.orout_offsets, q[orout])


def _check_scores(graph, eta_u, eta_pair):
    eta_u = np.ascontiguousarray(eta_u, dtype=np.float64)
    eta_pair = np.ascontiguousarray(
        np.zeros(0) if eta_pair is None else eta_pair, dtype=np.float64)
    if eta_u.shape != (graph.n_vars,):
        raise ValueError(f"eta_u must have shape ({graph.n_vars},); got {eta_u.shape}.")
    if eta_pair.shape != (graph.n_pair,):
        raise ValueError(f"eta_pair must have shape ({graph.n_pair},); "
                         f"got {eta_pair.shape}.")
    if not (np.all(np.isfinite(eta_u)) and np.all(np.isfinite(eta_pair))):
        raise ValueError("eta_u and eta_pair must be finite.")
    return eta_u, eta_pair


def admm_sparsemap(graph, eta_u, eta_pair, *, max_iter=1000, tol=1e-6, rho=0.1,
                   adapt=True, warm_start=None, map_mode=False):
    """Solve LP-SparseMAP (or LP-MAP) on ``graph`` by ADMM (module docstring).

    Parameters
    ----------
    graph : FlatFactorGraph
    eta_u : array-like of shape (n_vars,)
        Unary scores.
    eta_pair : array-like of shape (n_pair,)
        PAIR coupling scores (the scores of the additional variables).
    max_iter : int, default=1000
    tol : float, default=1e-6
        Stop when the primal and dual residuals are both below it (0: run max_iter).
    rho : float, default=0.1
        Initial penalty (ignored when warm-starting: the previous result's is used).
    adapt : bool, default=True
        Adapt ρ every 10 iterations.
    warm_start : ADMMResult, optional
        Start from this result's u, multipliers and ρ (same graph).
    map_mode : bool, default=False
        Solve LP-MAP (no ½‖u‖² term) instead of LP-SparseMAP.

    Returns
    -------
    ADMMResult
    """
    if not isinstance(graph, FlatFactorGraph):
        raise TypeError("graph must be a FlatFactorGraph.")
    eta_u, eta_pair = _check_scores(graph, eta_u, eta_pair)
    max_iter = int(max_iter)
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1; got {max_iter}.")
    if not tol >= 0:
        raise ValueError(f"tol must be >= 0; got {tol}.")
    if not rho > 0:
        raise ValueError(f"rho must be > 0; got {rho}.")
    kappa = 0.0 if map_mode else 1.0
    degree = graph.degree
    alone = degree == 0
    inv_degree = np.zeros(graph.n_vars)
    inv_degree[~alone] = 1.0 / degree[~alone]
    n_entries = graph.n_entries
    if warm_start is not None:
        if (warm_start.u.shape != (graph.n_vars,)
                or warm_start.lam.shape != (n_entries,)):
            raise ValueError("warm_start does not match the graph.")
        u = warm_start.u.copy()
        lam = warm_start.lam.copy()
        rho = float(warm_start.rho)
    else:
        u = np.full(graph.n_vars, 0.5)
        lam = np.zeros(n_entries)
        rho = float(rho)
    a = np.empty(n_entries)
    w = np.empty(n_entries)
    q = np.empty(n_entries)
    v = np.zeros(graph.n_pair)
    primal = dual = np.inf
    converged = False
    n_iter = 0
    if n_entries:
        for n_iter in range(1, max_iter + 1):
            _local_scores(eta_u, u, lam, graph.entry_var, inv_degree, rho, kappa, a, w)
            _solve_groups(graph, a, w, eta_pair, q, v)
            primal, dual = _consensus(q, graph.entry_var, inv_degree, rho, u, lam)
            if primal < tol and dual < tol:
                converged = True
                break
            # never after the last solve: result.rho is the ρ of the final local problems
            if adapt and n_iter % ADAPT_EVERY == 0 and n_iter < max_iter:
                if primal > 100.0 * dual:
                    rho = min(2.0 * rho, RHO_MAX)
                elif dual > 10.0 * primal:
                    rho = max(0.5 * rho, RHO_MIN)
    else:
        primal = dual = 0.0
        converged = True
    if map_mode:
        u[alone] = (eta_u[alone] > 0).astype(np.float64)
    else:
        u[alone] = np.clip(eta_u[alone], 0.0, 1.0)
    integral = None
    if map_mode:
        integral = bool(np.all(np.minimum(np.abs(u), np.abs(1.0 - u)) <= 1e-6))
    return ADMMResult(u=u, v=v, n_iter=n_iter, primal_residual=float(primal),
                      dual_residual=float(dual), converged=converged, rho=rho,
                      map_mode=bool(map_mode), integral=integral, lam=lam, a=a, w=w,
                      q=q, s=eta_pair)


def _project_pieces(graph, result, x, scale, out, scratch_pair):
    """out = P_S x, P_S = (1 + ρ) D J D blockwise (J the kernels' Jacobians at the last
    local problems); ``scale`` is d per entry."""
    a, w = result.a, result.w
    lin, pair, orout = graph._slices()
    y = scale * x
    if lin.stop > lin.start:
        _lin.vjp(result.q[lin], a[lin], w[lin], graph.lin_offsets, graph.lin_kind,
                 graph.lin_coef, graph.lin_bound, graph.lin_negated, y[lin], out[lin])
    if graph.n_pair:
        gv, gs = scratch_pair
        gv[:] = 0.0
        _pair.pair_vjp(a[pair].reshape(-1, 2), w[pair].reshape(-1, 2), result.s,
                       y[pair].reshape(-1, 2), gv, out[pair].reshape(-1, 2), gs)
    if orout.stop > orout.start:
        _pair.orout_vjp(a[orout], w[orout], graph.orout_offsets, y[orout], out[orout])
    out *= (1.0 + result.rho) * scale


def admm_backward(graph, result, grad_u, grad_pair, *, max_iter=1000, tol=1e-10,
                  return_info=False):
    """Vector–Jacobian product of the LP-SparseMAP map (η_U, η_pair) ↦ (u, v).

    Alternating projections at the final state of :func:`admm_sparsemap` (module
    docstring); needs no unrolling of the forward iterations.

    Parameters
    ----------
    graph : FlatFactorGraph
    result : ADMMResult
        A converged LP-SparseMAP (not map_mode) result on ``graph``.
    grad_u : array-like of shape (n_vars,)
    grad_pair : array-like of shape (n_pair,)
        Cotangents of u and v.
    max_iter : int, default=1000
        Cap on the fixed-point iterations.
    tol : float, default=1e-10
        Stop when the iterate moves less than ``tol`` (max-norm over variables).
    return_info : bool, default=False
        Also return ``{"n_iter": ..., "converged": ...}``.

    Returns
    -------
    d_eta_u : ndarray of shape (n_vars,)
    d_eta_pair : ndarray of shape (n_pair,)
    info : dict, only with ``return_info``
    """
    if result.map_mode:
        raise ValueError("admm_backward needs an LP-SparseMAP result (map_mode=False); "
                         "LP-MAP is piecewise constant.")
    grad_u, grad_pair = _check_scores(graph, grad_u, grad_pair)
    degree = graph.degree
    alone = degree == 0
    d_var = np.zeros(graph.n_vars)
    d_var[~alone] = degree[~alone] ** -0.5
    entry_var = graph.entry_var
    scale = d_var[entry_var]
    n_entries = graph.n_entries
    lin, pair, orout = graph._slices()
    n_pair = graph.n_pair
    scratch = (np.zeros(n_pair), np.zeros(n_pair))
    # h_f = (1 + ρ) D ∂q_f/∂s_f (zero outside PAIR entries)
    h = np.zeros(n_entries)
    if n_pair:
        dq = np.zeros((n_pair, 2))
        _pair.pair_jvp(result.a[pair].reshape(-1, 2), result.w[pair].reshape(-1, 2),
                       result.s, np.zeros((n_pair, 2)), np.ones(n_pair), dq,
                       np.zeros(n_pair))
        h[pair] = (1.0 + result.rho) * scale[pair] * dq.ravel()
    x0 = scale * grad_u[entry_var]
    if n_pair:
        x0[pair] += h[pair] * np.repeat(grad_pair, 2)
    inv_degree = np.zeros(graph.n_vars)
    inv_degree[~alone] = 1.0 / degree[~alone]

    def average(x):
        return np.bincount(entry_var, weights=x, minlength=graph.n_vars) * inv_degree

    y = average(x0)
    z = np.empty(n_entries)
    converged = n_entries == 0
    n_iter = 0
    for n_iter in range(1, max_iter + 1 if n_entries else 1):
        _project_pieces(graph, result, y[entry_var], scale, z, scratch)
        y_new = average(z)
        step = np.max(np.abs(y_new - y)) if y.size else 0.0
        y = y_new
        if step < tol:
            converged = True
            break
    if not converged:
        warnings.warn(f"admm_backward did not converge in {max_iter} iterations.",
                      ConvergenceWarning)
    d_eta_u = np.sqrt(degree) * y
    d_eta_u[alone] = grad_u[alone] * ((0.0 < result.u[alone]) & (result.u[alone] < 1.0))
    x = y[entry_var]
    d_eta_pair = (h[pair] * x[pair]).reshape(-1, 2).sum(axis=1)
    if return_info:
        return d_eta_u, d_eta_pair, {"n_iter": n_iter, "converged": converged}
    return d_eta_u, d_eta_pair
