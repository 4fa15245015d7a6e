"""Factor groups: every factor of one type in a (tiled) factor graph, solved in one call.

A :class:`FactorGroup` owns a contiguous block of *entries* (copies q_j of variables) of
every copy of a template graph and, for factor types with additional variables (PAIR's
v_f = E[u u']), a block of those. Copy c of the template owns entries
``c * size .. (c + 1) * size - 1`` of the group's block (``size`` the group's entries per
copy) and additional variables ``c * n_extra .. (c + 1) * n_extra - 1``. Every method
works on the first ``m`` copies, m inferred from the length of ``a`` (the ADMM keeps the
examples still running in a prefix; since the copies are identical, the first m copies of
n are the tiling of m).

The local problem of a factor f with entries j, scores a_j, weights w_j > 0 and
additional scores s_f is

.. math::

    \\max_{(q_f, v_f) \\in P_f} \\; \\sum_j a_j q_j - \\tfrac12 \\sum_j w_j q_j^2
    + s_f^\\top v_f,

P_f the factor's marginal polytope (local SparseMAP, :meth:`FactorGroup.qp`); its MAP
drops the quadratic term and maximizes over the vertices (:meth:`FactorGroup.map`). At
the solution of the last local problem the solution map (a, s) ↦ (q, v) is affine on a
piece; :meth:`FactorGroup.jvp` and :meth:`FactorGroup.vjp` are the products with the
Jacobian of that piece (w fixed), J and Jᵀ.

The groups delegate to the compiled kernels of :mod:`skstruct.decoders._factor_graph.linear_kernels` (XOR,
AtMostOne, OR, BUDGET, KNAPSACK, with negated inputs) and :mod:`skstruct.decoders._factor_graph.pair_kernels`
(PAIR, OROut), one call per group and method.
"""

import numpy as np

from . import linear_kernels as _lin
from . import pair_kernels as _pair

__all__ = ["FactorGroup", "LinearGroup", "PairGroup", "OROutGroup", "factor_groups"]


def _tile_offsets(offsets, n_copies):
    """Offsets of ``n_copies`` copies of a CSR offsets array, copy-major."""
    offsets = np.asarray(offsets, dtype=np.int64)
    per_copy = offsets[-1]
    tiled = (offsets[:-1][None, :] + per_copy * np.arange(n_copies)[:, None]).ravel()
    return np.append(tiled, per_copy * n_copies).astype(np.int64)


class FactorGroup:
    """All factors of one type of ``n_copies`` copies of a template graph.

    Parameters
    ----------
    entry_start : int
        Index of the group's first entry in the template's entry order.
    size : int
        Entries per copy.
    n_extra : int
        Additional variables per copy (0 for types without).
    n_copies : int
        Copies the group's structure arrays are tiled for (the most a call may use).

    Attributes
    ----------
    entry_start, size, n_extra, n_copies : int
    """

    def __init__(self, entry_start, size, n_extra, n_copies):
        self.entry_start = int(entry_start)
        self.size = int(size)
        self.n_extra = int(n_extra)
        self.n_copies = int(n_copies)

    def _copies(self, a):
        m = a.shape[0] // self.size if self.size else 0
        if m > self.n_copies:
            raise ValueError(f"{type(self).__name__} holds {self.n_copies} copies; "
                             f"got entries of {m}.")
        return m

    def qp(self, a, w, s, q_out, v_out):
        """Local SparseMAP of every factor: (q, v) = argmax over P_f of
        a·q − ½ Σ w_j q_j² + s·v.

        Parameters
        ----------
        a, w : ndarray of shape (m * size,), float64
            Scores and weights (w > 0) of the entries of the first m copies.
        s : ndarray of shape (m * n_extra,), float64
            Scores of the additional variables.
        q_out : ndarray of shape (m * size,), float64
            Output: the entries' solutions.
        v_out : ndarray of shape (m * n_extra,), float64
            Output: the additional variables' solutions.
        """
        raise NotImplementedError

    def map(self, a, s, q_out, v_out):
        """Local MAP of every factor: the vertex of P_f maximizing a·q + s·v.

        Parameters
        ----------
        a : ndarray of shape (m * size,), float64
        s : ndarray of shape (m * n_extra,), float64
        q_out, v_out
            Outputs, as for :meth:`qp` (0.0 or 1.0).
        """
        raise NotImplementedError

    def jvp(self, a, w, s, q, da, ds, dq_out, dv_out):
        """(dq, dv) = J (da, ds), J the Jacobian of (a, s) ↦ (q, v) of :meth:`qp` on the
        piece of its solution q at (a, w, s) (w fixed).

        Parameters
        ----------
        a, w, s, q
            The local problems and their solutions, as for :meth:`qp`.
        da : ndarray of shape (m * size,), float64
        ds : ndarray of shape (m * n_extra,), float64
        dq_out : ndarray of shape (m * size,), float64
        dv_out : ndarray of shape (m * n_extra,), float64
        """
        raise NotImplementedError

    def vjp(self, a, w, s, q, gq, gv, ga_out, gs_out):
        """(ga, gs) = Jᵀ (gq, gv), J as for :meth:`jvp`.

        Parameters
        ----------
        a, w, s, q
            The local problems and their solutions, as for :meth:`qp`.
        gq : ndarray of shape (m * size,), float64
        gv : ndarray of shape (m * n_extra,), float64
        ga_out : ndarray of shape (m * size,), float64
        gs_out : ndarray of shape (m * n_extra,), float64
        """
        raise NotImplementedError

    def compact(self, m, keep):
        """The solver kept the copies ``keep`` (bool, shape (m,)) of the first m and
        moved them to the front, in order: a group holding per-copy state (warm starts)
        renumbers it. Stateless groups do nothing."""


class LinearGroup(FactorGroup):
    """Linear-constraint factors (XOR, AtMostOne, OR, BUDGET, KNAPSACK; inputs may be
    negated, 1 − u): P_f = {q ∈ [0, 1]^n : Σ c_j q̃_j ⋚ b}, q̃_j = 1 − q_j on negated
    entries (:mod:`skstruct.decoders._factor_graph.linear_kernels`)."""

    def __init__(self, graph, entry_start, n_copies):
        super().__init__(entry_start, graph.lin_var.shape[0], 0, n_copies)
        self.n_factors = graph.lin_offsets.shape[0] - 1
        self.offsets = _tile_offsets(graph.lin_offsets, n_copies)
        self.kind = np.tile(graph.lin_kind, n_copies)
        self.coef = np.tile(graph.lin_coef, n_copies)
        self.bound = np.tile(graph.lin_bound, n_copies)
        self.negated = np.tile(graph.lin_negated, n_copies)

    def _structure(self, a):
        m = self._copies(a)
        k, n = m * self.n_factors, m * self.size
        return (self.offsets[: k + 1], self.kind[:k], self.coef[:n], self.bound[:k],
                self.negated[:n])

    def qp(self, a, w, s, q_out, v_out):
        offsets, kind, coef, bound, negated = self._structure(a)
        _lin.qp(a, w, offsets, kind, coef, bound, negated, q_out)

    def map(self, a, s, q_out, v_out):
        offsets, kind, coef, bound, negated = self._structure(a)
        _lin.map_(a, offsets, kind, coef, bound, negated, q_out)

    def jvp(self, a, w, s, q, da, ds, dq_out, dv_out):
        offsets, kind, coef, bound, negated = self._structure(a)
        _lin.jvp(q, a, w, offsets, kind, coef, bound, negated, da, dq_out)

    def vjp(self, a, w, s, q, gq, gv, ga_out, gs_out):
        offsets, kind, coef, bound, negated = self._structure(a)
        _lin.vjp(q, a, w, offsets, kind, coef, bound, negated, gq, ga_out)


class PairGroup(FactorGroup):
    """PAIR (Ising) factors: two entries and v_f = E[q_1 q_2], P_f the hull of
    (q_1, q_2, v) ∈ {(0,0,0), (1,0,0), (0,1,0), (1,1,1)} (:mod:`skstruct.decoders._factor_graph.pair_kernels`);
    entries row-major, (factor, 2)."""

    def __init__(self, graph, entry_start, n_copies):
        super().__init__(entry_start, 2 * graph.n_pair, graph.n_pair, n_copies)

    def qp(self, a, w, s, q_out, v_out):
        self._copies(a)
        _pair.pair_qp(a.reshape(-1, 2), w.reshape(-1, 2), s, q_out.reshape(-1, 2), v_out)

    def map(self, a, s, q_out, v_out):
        self._copies(a)
        _pair.pair_map(a.reshape(-1, 2), s, q_out.reshape(-1, 2), v_out)

    def jvp(self, a, w, s, q, da, ds, dq_out, dv_out):
        _pair.pair_jvp(a.reshape(-1, 2), w.reshape(-1, 2), s, da.reshape(-1, 2), ds,
                       dq_out.reshape(-1, 2), dv_out)

    def vjp(self, a, w, s, q, gq, gv, ga_out, gs_out):
        _pair.pair_vjp(a.reshape(-1, 2), w.reshape(-1, 2), s, gq.reshape(-1, 2), gv,
                       ga_out.reshape(-1, 2), gs_out)


class OROutGroup(FactorGroup):
    """OROut factors: the last entry is the OR of the others,
    P_f = conv{q ∈ {0, 1}^n : q_n = max(q_1, ..., q_{n-1})} (:mod:`skstruct.decoders._factor_graph.pair_kernels`)."""

    def __init__(self, graph, entry_start, n_copies):
        super().__init__(entry_start, graph.orout_var.shape[0], 0, n_copies)
        self.n_factors = graph.orout_offsets.shape[0] - 1
        self.offsets = _tile_offsets(graph.orout_offsets, n_copies)

    def _offsets(self, a):
        return self.offsets[: self._copies(a) * self.n_factors + 1]

    def qp(self, a, w, s, q_out, v_out):
        _pair.orout_qp(a, w, self._offsets(a), q_out)

    def map(self, a, s, q_out, v_out):
        _pair.orout_map(a, self._offsets(a), q_out)

    def jvp(self, a, w, s, q, da, ds, dq_out, dv_out):
        _pair.orout_jvp(a, w, self._offsets(a), da, dq_out)

    def vjp(self, a, w, s, q, gq, gv, ga_out, gs_out):
        _pair.orout_vjp(a, w, self._offsets(a), gq, ga_out)


def factor_groups(graph, n_copies):
    """The non-empty groups of a template :class:`~skstruct.decoders._factor_graph.admm.FlatFactorGraph`, tiled for
    ``n_copies`` copies, in the template's entry order (linear, PAIR, OROut, then one
    :class:`~skstruct.decoders._factor_graph.structure.StructureGroup` per structure factor).

    Returns
    -------
    list of FactorGroup
    """
    groups = []
    start = 0
    for cls in (LinearGroup, PairGroup, OROutGroup):
        group = cls(graph, start, n_copies)
        start += group.size
        if group.size:
            groups.append(group)
    # a structure factor builds its own group (its module imports this one)
    for factor in graph.structures:
        groups.append(factor.group(start, n_copies))
        start += factor.size
    return groups
