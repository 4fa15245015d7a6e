"""LP-SparseMAP and LP-MAP on a factor graph by ADMM, and the LP-SparseMAP backward pass.

The problem
-----------
A :class:`FlatFactorGraph` has ``n_vars`` binary variables u and factors of four kinds
(linear-constraint factors, PAIR factors with one additional variable v_f each, OROut
factors, and structure factors: any decoder over a block of variables, with its
additional parts as additional variables, :mod:`skstruct.decoders._factor_graph.structure`), every factor
seeing some variables through its *entries*. The scores ``eta_pair`` of the solvers are
those of all additional variables: the PAIR factors', then the structure factors'
(``n_additional`` in all; ``n_pair`` without structure factors). Entry j of a factor
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
and halves when dual > 10 × primal, within [1e-3, 100] × δ̄; the solver stops when both
are below ``tol``. Start: u = 0.5, λ' = 0, ρ = ``rho`` × δ̄ (or a previous result:
``warm_start``), δ̄ the mean degree of the variables with entries.

*Why the penalty scales with the degrees.* A copy's penalty weight is ρ / deg_i, while
a factor's own scores (a PAIR coupling s_f, a constraint) act on its copies undivided.
With ρ = 0.1 on a fully connected pairwise graph of 159 variables (deg 158) the penalty
weight is 6e-4 against couplings ~ 0.1: every local solution is driven to a vertex far
from the consensus, the multipliers move by ρ (q − u) / deg per iteration, and the
residuals stay balanced (so the 10-iteration rule never raises ρ): 100 iterations were
0.5 away from the solution. ρ = rho × δ̄ makes the per-copy weight about ``rho`` (the
per-link penalty of AD3, which does not scale the copies): with rho = 1 that graph
converges to 1e-6 in about 45 iterations, and the sparse XOR / BUDGET / PAIR graphs of
the tests need 2× to over 100× fewer iterations than from ρ = 0.1.

Batches (:func:`admm_batch`) solve many examples of one template graph, every example
with its own ρ and stopping test; the examples still running sit in the first rows of
group-major entry arrays (the first m copies of the tiled graph), so every factor group
(:mod:`skstruct.decoders._factor_graph.groups`) is called once per iteration on all of them.

With one factor and w = 1 (deg = 1) the fixed point is the factor's SparseMAP: at
consensus the ρ terms of a and w cancel in the optimality conditions.

A variable in no factor (deg_i = 0) is solved alone: u_i = clip(η_i, 0, 1) for
LP-SparseMAP, u_i = 1 if η_i > 0 else 0 for LP-MAP.

Every iteration calls each factor group once (:class:`skstruct.decoders._factor_graph.groups.FactorGroup`, over
the kernels of :mod:`skstruct.decoders._factor_graph.linear_kernels` and :mod:`skstruct.decoders._factor_graph.pair_kernels`); the
per-entry bookkeeping is one compiled pass.

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
h_f = (1 + ρ) D ∂q_f/∂s_f (the groups' jvp / vjp). The iteration stops when the iterate
moves less than ``tol`` (per example in a batch: :func:`admm_batch_backward`).
"""

from dataclasses import dataclass, field
import warnings

import numpy as np
from numba import njit, prange
from sklearn.exceptions import ConvergenceWarning

from . import linear_kernels as _lin
from .groups import _tile_offsets, factor_groups
from .pair_pruning import pair_adjacency

__all__ = ["FlatFactorGraph", "ADMMResult", "BatchADMMResult", "admm_batch",
           "admm_batch_backward", "admm_sparsemap", "admm_backward"]

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
        :mod:`skstruct.decoders._factor_graph.linear_kernels`).
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
    structures : tuple of StructureFactor, default=()
        Decoder factors (:mod:`skstruct.decoders._factor_graph.structure`): each sees its block ``var``
        (row-major) and has ``n_extra`` additional variables, scored after the PAIR
        factors' (``n_additional`` scores in all).

    Attributes
    ----------
    entry_var : ndarray of shape (n_entries,), int64
        Variables of all entries: linear, then PAIR (row-major), then OROut, then the
        structure factors' blocks.
    degree : ndarray of shape (n_vars,), int64
        Number of entries on every variable.
    pair_adjacency : tuple of two ndarrays
        The PAIR factors at every variable (offsets, entries; see
        :func:`~skstruct.decoders._factor_graph.pair_pruning.pair_adjacency`).
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
    structures: tuple = ()
    entry_var: np.ndarray = field(init=False, repr=False)
    degree: np.ndarray = field(init=False, repr=False)
    pair_adjacency: tuple = field(init=False, repr=False)

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
        structures = tuple(self.structures)
        for factor in structures:
            if factor.var.size and (factor.var.min() < 0 or factor.var.max() >= n_vars):
                raise ValueError(f"structure factor variables must index variables "
                                 f"0..{n_vars - 1}.")
        put(self, "structures", structures)
        entry_var = np.concatenate([lin_var, self.pair_var.ravel(), orout_var]
                                   + [f.var.reshape(-1) for f in structures])
        put(self, "entry_var", entry_var)
        put(self, "degree", np.bincount(entry_var, minlength=n_vars).astype(np.int64))
        put(self, "pair_adjacency", pair_adjacency(self.pair_var, n_vars))

    @property
    def n_pair(self):
        return self.pair_var.shape[0]

    @property
    def n_additional(self):
        """Additional variables (and their scores, ``eta_pair`` of the solvers): the
        PAIR factors', then every structure factor's extra parts."""
        return self.n_pair + sum(f.n_extra for f in self.structures)

    def tile(self, n_copies):
        """The disjoint union of ``n_copies`` copies of this graph.

        Copy c's variables are ``c * n_vars .. (c + 1) * n_vars - 1``; every group's
        factors are copied in order, copy-major (so the first m copies of
        ``tile(n)`` are ``tile(m)``).

        Parameters
        ----------
        n_copies : int
            At least 1.

        Returns
        -------
        FlatFactorGraph
            With ``n_copies * n_vars`` variables.
        """
        n = int(n_copies)
        if n < 1:
            raise ValueError(f"n_copies must be >= 1; got {n_copies}.")
        shift = self.n_vars * np.arange(n, dtype=np.int64)

        def shifted(var):
            return (var[None] + shift.reshape((n,) + (1,) * var.ndim)).reshape(
                (-1,) + var.shape[1:])

        return FlatFactorGraph(
            n * self.n_vars, lin_var=shifted(self.lin_var),
            lin_offsets=_tile_offsets(self.lin_offsets, n),
            lin_kind=np.tile(self.lin_kind, n), lin_coef=np.tile(self.lin_coef, n),
            lin_bound=np.tile(self.lin_bound, n), lin_negated=np.tile(self.lin_negated, n),
            pair_var=shifted(self.pair_var), orout_var=shifted(self.orout_var),
            orout_offsets=_tile_offsets(self.orout_offsets, n),
            structures=tuple(f.shifted(self.n_vars * c) for c in range(n)
                             for f in self.structures))

    @property
    def n_entries(self):
        return self.entry_var.shape[0]


@dataclass(frozen=True)
class ADMMResult:
    """The outcome of :func:`admm_sparsemap`.

    Attributes
    ----------
    u : ndarray of shape (n_vars,)
        Variable marginals (the consensus: mean of the factors' copies).
    v : ndarray of shape (n_additional,)
        Additional marginals (PAIR, then structure factors' extra parts) from the
        last local solutions.
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
    s : ndarray of shape (n_additional,)
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


@dataclass(frozen=True)
class BatchADMMResult:
    """The outcome of :func:`admm_batch`: one row per example.

    Attributes
    ----------
    u : ndarray of shape (n_examples, n_vars)
    v : ndarray of shape (n_examples, n_additional)
    n_iter : ndarray of shape (n_examples,), int64
        Iterations every example ran (each stops on its own).
    primal_residual, dual_residual : ndarray of shape (n_examples,)
    converged : ndarray of shape (n_examples,), bool
    rho : ndarray of shape (n_examples,)
        Every example's final penalty (the one of its last local problems).
    map_mode : bool
    integral : ndarray of shape (n_examples,), bool, or None
        In map_mode, whether every u_i of the example is within 1e-6 of 0 or 1.
    lam, a, w, q : ndarray of shape (n_examples, n_entries)
        As in :class:`ADMMResult`, per example (template entry order).
    s : ndarray of shape (n_examples, n_additional)
    """

    u: np.ndarray
    v: np.ndarray
    n_iter: np.ndarray
    primal_residual: np.ndarray
    dual_residual: np.ndarray
    converged: np.ndarray
    rho: np.ndarray
    map_mode: bool
    integral: object
    lam: np.ndarray
    a: np.ndarray
    w: np.ndarray
    q: np.ndarray
    s: np.ndarray

    @property
    def n_examples(self):
        return self.u.shape[0]

    def example(self, i):
        """The :class:`ADMMResult` of example ``i``."""
        return ADMMResult(
            u=self.u[i].copy(), v=self.v[i].copy(), n_iter=int(self.n_iter[i]),
            primal_residual=float(self.primal_residual[i]),
            dual_residual=float(self.dual_residual[i]),
            converged=bool(self.converged[i]), rho=float(self.rho[i]),
            map_mode=self.map_mode,
            integral=None if self.integral is None else bool(self.integral[i]),
            lam=self.lam[i].copy(), a=self.a[i].copy(), w=self.w[i].copy(),
            q=self.q[i].copy(), s=self.s[i].copy())


# ------------------------------------------------------------------ compiled bookkeeping
# Entry arrays of a batch are group-major: group g's block holds n_slots rows of
# sizes[g] entries (template order), starting at n_slots * starts[g]; the running
# examples are the first rows of every block.

@njit(cache=True, nogil=True)
def _local_scores_one(k, eta_u, u, lam, entry_var, inv_degree, starts, sizes, n_slots,
                      rho, kappa, a, w):
    eta_k = eta_u[k]
    u_k = u[k]
    rho_k = rho[k]
    weight = kappa + rho_k
    for g in range(starts.shape[0]):
        base = n_slots * starts[g] + k * sizes[g]
        start = starts[g]
        for j in range(sizes[g]):
            i = entry_var[start + j]
            a[base + j] = (eta_k[i] + rho_k * u_k[i]) * inv_degree[i] + lam[base + j]
            w[base + j] = weight * inv_degree[i]


@njit(cache=True, nogil=True)
def _consensus_one(k, q, entry_var, inv_degree, starts, sizes, n_slots, rho, u, lam,
                   primal, dual):
    n_vars = u.shape[1]
    u_k = u[k]
    rho_k = rho[k]
    total = np.zeros(n_vars)
    for g in range(starts.shape[0]):
        base = n_slots * starts[g] + k * sizes[g]
        start = starts[g]
        for j in range(sizes[g]):
            total[entry_var[start + j]] += q[base + j]
    change = 0.0
    for i in range(n_vars):
        if inv_degree[i] > 0.0:
            new = total[i] * inv_degree[i]
            change += (new - u_k[i]) ** 2
            u_k[i] = new
    gap = 0.0
    for g in range(starts.shape[0]):
        base = n_slots * starts[g] + k * sizes[g]
        start = starts[g]
        for j in range(sizes[g]):
            i = entry_var[start + j]
            r = q[base + j] - u_k[i]
            step = r * inv_degree[i]
            gap += r * step
            lam[base + j] -= rho_k * step
    primal[k] = np.sqrt(gap)
    dual[k] = np.sqrt(change)


@njit(cache=True, nogil=True, parallel=True)
def _local_scores_parallel(eta_u, u, lam, entry_var, inv_degree, starts, sizes, n_slots,
                           rho, kappa, a, w):
    for k in prange(rho.shape[0]):
        _local_scores_one(k, eta_u, u, lam, entry_var, inv_degree, starts, sizes,
                          n_slots, rho, kappa, a, w)


@njit(cache=True, nogil=True, parallel=True)
def _consensus_parallel(q, entry_var, inv_degree, starts, sizes, n_slots, rho, u, lam,
                        primal, dual):
    for k in prange(rho.shape[0]):
        _consensus_one(k, q, entry_var, inv_degree, starts, sizes, n_slots, rho, u, lam,
                       primal, dual)


def _local_scores(eta_u, u, lam, entry_var, inv_degree, starts, sizes, n_slots, rho,
                  kappa, a, w):
    """a_j = (η_i + ρ u_i) / deg_i + λ'_j and w_j = (κ + ρ) / deg_i for every entry of
    the running examples (rho holds theirs); in parallel over examples when several."""
    if rho.shape[0] == 1:
        _local_scores_one(0, eta_u, u, lam, entry_var, inv_degree, starts, sizes,
                          n_slots, rho, kappa, a, w)
    else:
        _local_scores_parallel(eta_u, u, lam, entry_var, inv_degree, starts, sizes,
                               n_slots, rho, kappa, a, w)


def _consensus(q, entry_var, inv_degree, starts, sizes, n_slots, rho, u, lam, primal,
               dual):
    """u ← mean of the copies (variables with copies only), λ' update; the primal and
    dual residuals of every running example (one thread for a single example: a
    parallel region per call costs more than it saves there)."""
    if rho.shape[0] == 1:
        _consensus_one(0, q, entry_var, inv_degree, starts, sizes, n_slots, rho, u, lam,
                       primal, dual)
    else:
        _consensus_parallel(q, entry_var, inv_degree, starts, sizes, n_slots, rho, u, lam,
                            primal, dual)


class _Layout:
    """Group-major entry (and additional-variable) blocks of ``n_slots`` examples."""

    def __init__(self, graph, n_slots):
        self.groups = factor_groups(graph, n_slots)
        self.n_slots = n_slots
        self.starts = np.array([g.entry_start for g in self.groups], dtype=np.int64)
        self.sizes = np.array([g.size for g in self.groups], dtype=np.int64)
        extra = 0
        self.extra_starts = []
        for g in self.groups:
            self.extra_starts.append(extra)
            extra += g.n_extra

    def entry_blocks(self, flat):
        """(n_slots, size) views of every group's block of a group-major entry array."""
        n = self.n_slots
        return [flat[n * g.entry_start: n * (g.entry_start + g.size)].reshape(n, g.size)
                for g in self.groups]

    def extra_blocks(self, flat):
        n = self.n_slots
        return [flat[n * e: n * (e + g.n_extra)].reshape(n, g.n_extra)
                for g, e in zip(self.groups, self.extra_starts)]

    def entries_from_rows(self, rows):
        """Group-major flat array of an (n_slots, n_entries) template-order array."""
        parts = [rows[:, g.entry_start:g.entry_start + g.size].ravel() for g in self.groups]
        return np.concatenate(parts) if parts else np.zeros(0)

    def extras_from_rows(self, rows):
        parts = [rows[:, e:e + g.n_extra].ravel()
                 for g, e in zip(self.groups, self.extra_starts)]
        return np.concatenate(parts) if parts else np.zeros(0)

    def entry_views(self, flat, m):
        """Every group's first ``m`` rows of a group-major entry array, flat."""
        return [block[:m].reshape(-1) for block in self.entry_blocks(flat)]

    def extra_views(self, flat, m):
        return [block[:m].reshape(-1) for block in self.extra_blocks(flat)]

    def store_entries(self, flat, m, done, rows, target):
        """rows[target, group columns] = the ``done`` rows among the first ``m``."""
        for g, block in zip(self.groups, self.entry_blocks(flat)):
            rows[target, g.entry_start:g.entry_start + g.size] = block[:m][done]

    def store_extras(self, flat, m, done, rows, target):
        for g, e, block in zip(self.groups, self.extra_starts, self.extra_blocks(flat)):
            rows[target, e:e + g.n_extra] = block[:m][done]

    def compact(self, flat, m, keep, extra=False):
        """Move the ``keep`` rows among the first ``m`` of every block to its front."""
        blocks = self.extra_blocks(flat) if extra else self.entry_blocks(flat)
        for block in blocks:
            kept = block[:m][keep]
            block[:kept.shape[0]] = kept


def _mean_degree(graph):
    used = np.count_nonzero(graph.degree)
    return graph.n_entries / used if used else 1.0


def _check_batch_scores(graph, eta_u, eta_pair, names=("eta_u", "eta_pair")):
    eta_u = np.ascontiguousarray(eta_u, dtype=np.float64)
    if eta_u.ndim != 2 or eta_u.shape[1] != graph.n_vars:
        raise ValueError(f"{names[0]} must have shape (n_examples, {graph.n_vars}); "
                         f"got {eta_u.shape}.")
    n = eta_u.shape[0]
    eta_pair = np.ascontiguousarray(
        np.zeros((n, 0)) if eta_pair is None else eta_pair, dtype=np.float64)
    if eta_pair.shape != (n, graph.n_additional):
        raise ValueError(f"{names[1]} must have shape ({n}, {graph.n_additional}); "
                         f"got {eta_pair.shape}.")
    if not (np.all(np.isfinite(eta_u)) and np.all(np.isfinite(eta_pair))):
        raise ValueError(f"{names[0]} and {names[1]} must be finite.")
    return eta_u, eta_pair


def _check_options(graph, max_iter, tol, rho):
    if not isinstance(graph, FlatFactorGraph):
        raise TypeError(f"graph must be a FlatFactorGraph; got {type(graph).__name__}.")
    max_iter = int(max_iter)
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1; got {max_iter}.")
    if not tol >= 0:
        raise ValueError(f"tol must be >= 0; got {tol}.")
    if not rho > 0:
        raise ValueError(f"rho must be > 0; got {rho}.")
    return max_iter


def _group_views(layout, state, s, v, m):
    """(group, a, w, q, s, v) of the first m examples, flat views, per group."""
    return list(zip(layout.groups, *(layout.entry_views(state[k], m) for k in "awq"),
                    layout.extra_views(s, m), layout.extra_views(v, m)))


def _run(graph, eta_u, eta_pair, u0, lam0, rho0, max_iter, tol, adapt, map_mode):
    """The batched ADMM from the start (u0, lam0 (template order), rho0) of every
    example; returns a BatchADMMResult."""
    n, n_vars = eta_u.shape
    n_entries, n_pair = graph.n_entries, graph.n_additional
    layout = _Layout(graph, n)
    kappa = 0.0 if map_mode else 1.0
    degree = graph.degree
    alone = degree == 0
    inv_degree = np.zeros(n_vars)
    inv_degree[~alone] = 1.0 / degree[~alone]
    scale = _mean_degree(graph)
    rho_min, rho_max = RHO_MIN * scale, RHO_MAX * scale
    # outputs, example order
    out_u = np.array(u0, dtype=np.float64)
    out_v = np.zeros((n, n_pair))
    out = {name: np.zeros((n, n_entries)) for name in ("lam", "a", "w", "q")}
    out["lam"][:] = lam0
    n_iter = np.zeros(n, dtype=np.int64)
    out_primal = np.zeros(n)
    out_dual = np.zeros(n)
    converged = np.zeros(n, dtype=bool)
    out_rho = np.array(rho0, dtype=np.float64)
    if n_entries and n:
        # running state, slot order (slot k runs example order[k])
        order = np.arange(n)
        u = out_u.copy()
        eta = eta_u.copy()
        rho = out_rho.copy()
        state = {"lam": layout.entries_from_rows(out["lam"])}
        for name in ("a", "w", "q"):
            state[name] = np.empty(n * n_entries)
        s = layout.extras_from_rows(eta_pair)
        v = np.zeros(n * n_pair)
        primal = np.empty(n)
        dual = np.empty(n)
        entry_var = graph.entry_var
        m = n
        it = 0
        views = _group_views(layout, state, s, v, m)
        while m:
            it += 1
            _local_scores(eta, u, state["lam"], entry_var, inv_degree, layout.starts,
                          layout.sizes, n, rho[:m], kappa, state["a"], state["w"])
            for g, a_g, w_g, q_g, s_g, v_g in views:
                g.qp(a_g, w_g, s_g, q_g, v_g)
            _consensus(state["q"], entry_var, inv_degree, layout.starts, layout.sizes, n,
                       rho[:m], u, state["lam"], primal, dual)
            p, d = primal[:m], dual[:m]
            last = it >= max_iter
            if last or (p.min() < tol and d.min() < tol):
                done_ok = (p < tol) & (d < tol)
                done = done_ok | last
            else:
                done = None
            if adapt and it % ADAPT_EVERY == 0 and not last:
                r = rho[:m]
                running = np.ones(m, dtype=bool) if done is None else ~done
                up = running & (p > 100.0 * d)
                down = running & ~up & (d > 10.0 * p)
                r[up] = np.minimum(2.0 * r[up], rho_max)
                r[down] = np.maximum(0.5 * r[down], rho_min)
            if done is None or not done.any():
                continue
            target = order[:m][done]
            out_u[target] = u[:m][done]
            layout.store_extras(v, m, done, out_v, target)
            for name in ("lam", "a", "w", "q"):
                layout.store_entries(state[name], m, done, out[name], target)
            n_iter[target] = it
            out_primal[target] = primal[:m][done]
            out_dual[target] = dual[:m][done]
            converged[target] = done_ok[done]
            out_rho[target] = rho[:m][done]
            keep = ~done
            m_new = int(keep.sum())
            if m_new:
                for array in (order, u, eta, rho):
                    array[:m_new] = array[:m][keep]
                for name in ("lam",):
                    layout.compact(state[name], m, keep)
                layout.compact(s, m, keep, extra=True)
                for g in layout.groups:
                    g.compact(m, keep)
                views = _group_views(layout, state, s, v, m_new)
            m = m_new
    else:
        converged[:] = True
        out["q"][:] = 0.0
    eta_alone = eta_u[:, alone]
    if map_mode:
        out_u[:, alone] = (eta_alone > 0).astype(np.float64)
    else:
        out_u[:, alone] = np.clip(eta_alone, 0.0, 1.0)
    integral = None
    if map_mode:
        integral = np.all(np.minimum(np.abs(out_u), np.abs(1.0 - out_u)) <= 1e-6, axis=1)
    return BatchADMMResult(u=out_u, v=out_v, n_iter=n_iter, primal_residual=out_primal,
                           dual_residual=out_dual, converged=converged, rho=out_rho,
                           map_mode=bool(map_mode), integral=integral, lam=out["lam"],
                           a=out["a"], w=out["w"], q=out["q"], s=eta_pair.copy())


def admm_batch(graph, eta_u, eta_pair, *, max_iter=1000, tol=1e-6, rho=1.0, adapt=True,
               warm_start=None, map_mode=False):
    """Solve LP-SparseMAP (or LP-MAP) of many examples on one graph structure by ADMM.

    Every example is a copy of ``graph`` with its own scores, penalty ρ (adapted on its
    own residuals) and stopping test; the iterations call every factor group once over
    all examples still running, which sit in a prefix of the tiled graph (examples that
    stopped cost nothing afterwards).

    Parameters
    ----------
    graph : FlatFactorGraph
        The template.
    eta_u : array-like of shape (n_examples, n_vars)
        Unary scores.
    eta_pair : array-like of shape (n_examples, n_additional)
        Scores of the additional variables: PAIR couplings, then the structure
        factors' extra parts.
    max_iter : int, default=1000
    tol : float, default=1e-6
        An example stops when its primal and dual residuals are both below it (0: run
        max_iter).
    rho : float, default=1.0
        Initial penalty per copy: the scaled penalty starts at ρ = rho × mean degree
        (entries per variable with entries), so that the weight ρ / deg_i of the
        penalty on a copy is about ``rho`` whatever the degrees (module docstring).
        Ignored when warm-starting.
    adapt : bool, default=True
        Adapt every example's ρ every 10 iterations.
    warm_start : BatchADMMResult, optional
        Start from its u, multipliers and ρ (same template and number of examples).
    map_mode : bool, default=False
        Solve LP-MAP (no ½‖u‖² term) instead of LP-SparseMAP.

    Returns
    -------
    BatchADMMResult
    """
    max_iter = _check_options(graph, max_iter, tol, rho)
    eta_u, eta_pair = _check_batch_scores(graph, eta_u, eta_pair)
    n = eta_u.shape[0]
    if warm_start is not None:
        if not isinstance(warm_start, BatchADMMResult):
            raise TypeError("warm_start must be a BatchADMMResult.")
        if (warm_start.u.shape != (n, graph.n_vars)
                or warm_start.lam.shape != (n, graph.n_entries)):
            raise ValueError("warm_start does not match the graph and the number of "
                             "examples.")
        u0, lam0, rho0 = warm_start.u, warm_start.lam, warm_start.rho
    else:
        u0 = np.full((n, graph.n_vars), 0.5)
        lam0 = np.zeros((n, graph.n_entries))
        rho0 = np.full(n, float(rho) * _mean_degree(graph))
    return _run(graph, eta_u, eta_pair, u0, lam0, rho0, max_iter, tol, adapt, map_mode)


def admm_sparsemap(graph, eta_u, eta_pair, *, max_iter=1000, tol=1e-6, rho=1.0,
                   adapt=True, warm_start=None, map_mode=False):
    """Solve LP-SparseMAP (or LP-MAP) on ``graph`` by ADMM (module docstring):
    :func:`admm_batch` on one example.

    Parameters
    ----------
    graph : FlatFactorGraph
    eta_u : array-like of shape (n_vars,)
        Unary scores.
    eta_pair : array-like of shape (n_additional,)
        Scores of the additional variables: PAIR couplings, then the structure
        factors' extra parts.
    max_iter, tol, rho, adapt, map_mode
        As for :func:`admm_batch`.
    warm_start : ADMMResult, optional
        Start from this result's u, multipliers and ρ (same graph).

    Returns
    -------
    ADMMResult
    """
    max_iter = _check_options(graph, max_iter, tol, rho)
    eta_u, eta_pair = _check_scores(graph, eta_u, eta_pair)
    if warm_start is not None:
        if (warm_start.u.shape != (graph.n_vars,)
                or warm_start.lam.shape != (graph.n_entries,)):
            raise ValueError("warm_start does not match the graph.")
        u0, lam0, rho0 = warm_start.u[None], warm_start.lam[None], [warm_start.rho]
    else:
        u0 = np.full((1, graph.n_vars), 0.5)
        lam0 = np.zeros((1, graph.n_entries))
        rho0 = [float(rho) * _mean_degree(graph)]
    return _run(graph, eta_u[None], eta_pair[None], u0, lam0, rho0, max_iter, tol, adapt,
                map_mode).example(0)


def _check_scores(graph, eta_u, eta_pair):
    eta_u = np.ascontiguousarray(eta_u, dtype=np.float64)
    eta_pair = np.ascontiguousarray(
        np.zeros(0) if eta_pair is None else eta_pair, dtype=np.float64)
    if eta_u.shape != (graph.n_vars,):
        raise ValueError(f"eta_u must have shape ({graph.n_vars},); got {eta_u.shape}.")
    if eta_pair.shape != (graph.n_additional,):
        raise ValueError(f"eta_pair must have shape ({graph.n_additional},); "
                         f"got {eta_pair.shape}.")
    if not (np.all(np.isfinite(eta_u)) and np.all(np.isfinite(eta_pair))):
        raise ValueError("eta_u and eta_pair must be finite.")
    return eta_u, eta_pair


# ------------------------------------------------------------------ backward pass

class _Projector:
    """Gather y_i to the copies, P_S blockwise, average the copies back, on the first m
    slots of a group-major layout."""

    def __init__(self, graph, layout, result_rows):
        n = layout.n_slots
        self.layout, self.n_vars = layout, graph.n_vars
        degree = graph.degree
        d_var = np.zeros(graph.n_vars)
        d_var[degree > 0] = degree[degree > 0] ** -0.5
        self.inv_degree = np.where(degree > 0, 1.0 / np.maximum(degree, 1), 0.0)
        # per group: template variables and scales of its entries
        self.var = [graph.entry_var[g.entry_start:g.entry_start + g.size]
                    for g in layout.groups]
        self.scale = [d_var[var] for var in self.var]
        self.state = {name: layout.entries_from_rows(result_rows[name])
                      for name in ("a", "w", "q")}
        self.s = layout.extras_from_rows(result_rows["s"])
        self.factor = 1.0 + np.array(result_rows["rho"], dtype=np.float64)
        self.n = n

    def views(self, m):
        layout = self.layout
        return zip(layout.groups, self.var, self.scale,
                   *(layout.entry_views(self.state[k], m) for k in "awq"),
                   layout.extra_views(self.s, m))

    def average(self, parts, m):
        """(m, n_vars) means of the copies of every variable; parts (m, size) per group."""
        total = np.zeros((m, self.n_vars))
        for var, part in zip(self.var, parts):
            total += _scatter(var, part, self.n_vars)
        return total * self.inv_degree

    def apply(self, y, m):
        """P_R P_S of the copies of y (m, n_vars), averaged: (m, n_vars)."""
        parts = []
        for g, var, scale, a, w, q, s in self.views(m):
            gq = (scale * y[:, var]).reshape(-1)
            ga = np.empty_like(gq)
            g.vjp(a, w, s, q, gq, np.zeros(s.shape[0]), ga, np.empty(s.shape[0]))
            parts.append(ga.reshape(m, -1) * scale * self.factor[:m, None])
        return self.average(parts, m)

    def source(self, grad_u, grad_v, m):
        """x_0 = D C g_u + H g_v averaged (P_R x_0): (m, n_vars)."""
        parts = []
        for (g, var, scale, a, w, q, s), gv in zip(
                self.views(m), self.layout.extra_views(grad_v, m)):
            part = scale * grad_u[:m][:, var]
            if g.n_extra:
                dq = np.empty(a.shape[0])
                g.jvp(a, w, s, q, np.zeros(a.shape[0]), gv, dq, np.empty(s.shape[0]))
                part += dq.reshape(m, -1) * scale * self.factor[:m, None]
            parts.append(part)
        return self.average(parts, m)

    def pair_gradient(self, y, m):
        """(dη_pair) = h_fᵀ x_f with x = copies of y: (1 + ρ) ∂q/∂s ᵀ D x."""
        out = np.zeros(m * sum(g.n_extra for g in self.layout.groups))
        for (g, var, scale, a, w, q, s), gs in zip(self.views(m),
                                                   self.layout.extra_views(out, m)):
            if g.n_extra:
                gq = (scale * y[:, var]).reshape(-1)
                g.vjp(a, w, s, q, gq, np.zeros(s.shape[0]), np.empty_like(gq), gs)
                gs *= np.repeat(self.factor[:m], g.n_extra)
        return out

    def compact(self, m, keep):
        for name in ("a", "w", "q"):
            self.layout.compact(self.state[name], m, keep)
        self.layout.compact(self.s, m, keep, extra=True)
        self.factor[:int(keep.sum())] = self.factor[:m][keep]


def _scatter(var, part, n_vars):
    m = part.shape[0]
    index = (np.arange(m)[:, None] * n_vars + var[None, :]).ravel()
    return np.bincount(index, weights=part.ravel(), minlength=m * n_vars).reshape(m, n_vars)


def admm_batch_backward(graph, result, grad_u, grad_pair, *, max_iter=1000, tol=1e-10,
                        return_info=False):
    """Vector–Jacobian products of the LP-SparseMAP maps (η_U, η_pair) ↦ (u, v) of every
    example of :func:`admm_batch`.

    Alternating projections at every example's final state (module docstring), each
    example stopping on its own; one call per factor group and iteration over the
    examples still running.

    Parameters
    ----------
    graph : FlatFactorGraph
        The template of ``result``.
    result : BatchADMMResult
        Converged LP-SparseMAP (not map_mode) results.
    grad_u : array-like of shape (n_examples, n_vars)
    grad_pair : array-like of shape (n_examples, n_additional)
        Cotangents of u and v.
    max_iter : int, default=1000
        Cap on the fixed-point iterations.
    tol : float, default=1e-10
        An example stops when its iterate moves less than ``tol`` (max-norm).
    return_info : bool, default=False
        Also return ``{"n_iter": (n_examples,), "converged": (n_examples,)}``.

    Returns
    -------
    d_eta_u : ndarray of shape (n_examples, n_vars)
    d_eta_pair : ndarray of shape (n_examples, n_additional)
    info : dict, only with ``return_info``
    """
    if not isinstance(graph, FlatFactorGraph):
        raise TypeError(f"graph must be a FlatFactorGraph; got {type(graph).__name__}.")
    if result.map_mode:
        raise ValueError("admm_batch_backward needs LP-SparseMAP results "
                         "(map_mode=False); LP-MAP is piecewise constant.")
    grad_u, grad_pair = _check_batch_scores(graph, grad_u, grad_pair,
                                            ("grad_u", "grad_pair"))
    n = grad_u.shape[0]
    if result.u.shape != (n, graph.n_vars) or result.a.shape != (n, graph.n_entries):
        raise ValueError("result does not match the graph and the gradients' examples.")
    rows = {"a": result.a, "w": result.w, "q": result.q, "s": result.s,
            "rho": result.rho}
    d_eta_u, d_eta_pair, n_iter, converged = _backward(
        graph, rows, grad_u, grad_pair, result.u, int(max_iter), tol)
    if not converged.all():
        warnings.warn(f"admm_batch_backward did not converge in {max_iter} iterations "
                      f"on {int(np.sum(~converged))} examples.", ConvergenceWarning)
    if return_info:
        return d_eta_u, d_eta_pair, {"n_iter": n_iter, "converged": converged}
    return d_eta_u, d_eta_pair


def _backward(graph, rows, grad_u, grad_pair, u, max_iter, tol):
    n, n_vars = grad_u.shape
    degree = graph.degree
    alone = degree == 0
    layout = _Layout(graph, n)
    y_out = np.zeros((n, n_vars))
    n_iter = np.zeros(n, dtype=np.int64)
    converged = np.zeros(n, dtype=bool)
    if graph.n_entries and n:
        projector = _Projector(graph, layout, rows)
        grad_v = layout.extras_from_rows(grad_pair)
        y = projector.source(grad_u, grad_v, n)
        order = np.arange(n)
        m = n
        it = 0
        while m:
            it += 1
            y_new = projector.apply(y[:m], m)
            step = np.max(np.abs(y_new - y[:m]), axis=1) if n_vars else np.zeros(m)
            y[:m] = y_new
            done_ok = step < tol
            done = done_ok | (it >= max_iter)
            if not done.any():
                continue
            target = order[:m][done]
            y_out[target] = y[:m][done]
            n_iter[target] = it
            converged[target] = done_ok[done]
            keep = ~done
            m_new = int(keep.sum())
            if m_new:
                order[:m_new] = order[:m][keep]
                y[:m_new] = y[:m][keep]
                projector.compact(m, keep)
            m = m_new
        # the pair gradients of all examples at once, in example order
        final = _Projector(graph, layout, rows)
        d_eta_pair = np.concatenate(
            [block.reshape(n, -1) for block in layout.extra_blocks(
                final.pair_gradient(y_out, n))], axis=1) if graph.n_additional else \
            np.zeros((n, 0))
    else:
        converged[:] = True
        d_eta_pair = np.zeros((n, graph.n_additional))
    d_eta_u = np.sqrt(degree) * y_out
    d_eta_u[:, alone] = grad_u[:, alone] * ((0.0 < u[:, alone]) & (u[:, alone] < 1.0))
    return d_eta_u, d_eta_pair, n_iter, converged


def admm_backward(graph, result, grad_u, grad_pair, *, max_iter=1000, tol=1e-10,
                  return_info=False):
    """Vector–Jacobian product of the LP-SparseMAP map (η_U, η_pair) ↦ (u, v).

    Alternating projections at the final state of :func:`admm_sparsemap` (module
    docstring); needs no unrolling of the forward iterations.
    :func:`admm_batch_backward` on one example.

    Parameters
    ----------
    graph : FlatFactorGraph
    result : ADMMResult
        A converged LP-SparseMAP (not map_mode) result on ``graph``.
    grad_u : array-like of shape (n_vars,)
    grad_pair : array-like of shape (n_additional,)
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
    d_eta_pair : ndarray of shape (n_additional,)
    info : dict, only with ``return_info``
    """
    if not isinstance(graph, FlatFactorGraph):
        raise TypeError(f"graph must be a FlatFactorGraph; got {type(graph).__name__}.")
    if result.map_mode:
        raise ValueError("admm_backward needs an LP-SparseMAP result (map_mode=False); "
                         "LP-MAP is piecewise constant.")
    grad_u, grad_pair = _check_scores(graph, grad_u, grad_pair)
    rows = {"a": result.a[None], "w": result.w[None], "q": result.q[None],
            "s": result.s[None], "rho": [result.rho]}
    d_eta_u, d_eta_pair, n_iter, converged = _backward(
        graph, rows, grad_u[None], grad_pair[None], result.u[None], int(max_iter), tol)
    if not converged[0]:
        warnings.warn(f"admm_backward did not converge in {max_iter} iterations.",
                      ConvergenceWarning)
    if return_info:
        return d_eta_u[0], d_eta_pair[0], {"n_iter": int(n_iter[0]),
                                           "converged": bool(converged[0])}
    return d_eta_u[0], d_eta_pair[0]
