"""Any decoder of the library as a factor of a factor graph (LP-SparseMAP's generic factor).

A *structure factor* sees a block of the graph's binary variables as the unary parts of
a decoder's outputs: a :class:`~skstruct.decoders.ChainDecoder` over a (n_tokens,
n_states) block (variable [t, s]: token t has state s), a
:class:`~skstruct.decoders.TreeDecoder` over an (n, n) block of arcs (modifier-major,
the diagonal the root arcs), a :class:`~skstruct.decoders.MatchingDecoder` over an
(n_rows, n_cols) block, a :class:`~skstruct.decoders.MultilabelDecoder` or
:class:`~skstruct.decoders.SubsetDecoder` over a 1-D block of labels. The factor's own
additional parts (a chain's transitions, start and end; none for the others) are its
*extra* parts, scored by its slice of the ``extra`` scores of
:class:`~skstruct.decoders.FactorGraphScores`.

The local problem
-----------------
With q the block's unary marginals, v its extra marginals, a, s their scores and w > 0
the entries' weights (:mod:`skstruct.decoders._factor_graph.admm`: w_j = (κ + ρ) / deg_i), the factor solves

.. math::

    \\max_{(q, v) \\in M_f} \\; a^\\top q + s^\\top v - \\tfrac12 \\sum_j w_j q_j^2

over the decoder's marginal polytope M_f = conv{(m_y, n_y)}. Writing (q, v) = Σ_y p_y
(m_y, n_y) on the simplex, this is max_p θᵀp − ½ pᵀ M W Mᵀ p with θ_y = aᵀm_y + sᵀn_y.

- *Constant weights* (w_j = c on the whole block: every variable of the block has the
  same degree, the common case) make it c times the decoder's SparseMAP at (a / c,
  s / c): :meth:`Decoder.sparsemap`, warm-started from the previous ADMM iteration's
  result when the same copies are solved together.
- *Varying weights* (a block whose variables have different degrees, e.g. a chain with a
  BUDGET on one tag's column) are solved exactly by a weighted active set
  (:func:`weighted_active_set`): the active set of Niculae et al. (2018) with the Gram
  matrix M_I W M_Iᵀ and linear-maximization oracle MAP at (a − W q, s).

The Jacobian of (a, s) ↦ (q, v) on the final support I (w fixed) is Aᵀ D A, with A the
support's part vectors [m_y, n_y] (rows) and D the top-left block of the inverse of the
KKT matrix [[M_I W M_Iᵀ, 1], [1ᵀ, 0]] (Niculae et al. 2018, Proposition 1, weighted);
the backward pass of :mod:`skstruct.decoders._factor_graph.admm` uses it through :meth:`StructureGroup.vjp` and
:meth:`StructureGroup.jvp`. It is built from the weighted active set at the final local
problem in both cases (the same support, the decoder's SparseMAP's when w is constant).

LP-MAP (κ = 0) solves the same QP with w = ρ / deg (no SparseMAP term): the decoder's
own polytope, as the linear factors do.

Notes
-----
The supported decoders' outputs are determined by their unary parts (a chain's states
fix its transitions), so a 0/1 block is an output when the decoder's MAP at scores
x − ½ returns it (:meth:`StructureFactor.feasible`), and its extra parts are that
output's (:meth:`StructureFactor.block_parts`).
"""

import numpy as np

from .groups import FactorGroup

__all__ = ["StructureFactor", "StructureGroup", "weighted_active_set"]


# ------------------------------------------------------------------ decoder adapters

class _Adapter:
    """Scores and parts of a decoder family as (m, size) unary and (m, n_extra) extra
    arrays, for a block of one shape."""

    ndim = None
    layout = ""

    def __init__(self, decoder, shape):
        self.decoder = decoder
        self.shape = shape
        self.size = int(np.prod(shape))

    @classmethod
    def check_shape(cls, decoder, shape):
        if len(shape) != cls.ndim:
            raise ValueError(
                f"add_structure: a {type(decoder).__name__} sees a {cls.ndim}-D block of "
                f"variables, {cls.layout}; got a block of shape {shape}.")

    n_extra = 0

    def extra_arrays(self, parts, m):
        return np.zeros((m, 0))

    def arrays(self, parts, m):
        """(unary (m, size), extra (m, n_extra)) of a part container of m examples."""
        return (np.asarray(parts.unary, dtype=np.float64).reshape(m, self.size),
                self.extra_arrays(parts, m))


class _ChainAdapter(_Adapter):
    ndim = 2
    layout = "(n_tokens, n_states): variable [t, s] is on when token t has state s"

    def __init__(self, decoder, shape):
        super().__init__(decoder, shape)
        n_states = shape[1]
        self.n_extra = n_states * n_states + 2 * n_states

    def scores(self, unary, extra):
        from .._chain.decoder import ChainScores

        m = unary.shape[0]
        n_tokens, n_states = self.shape
        k = n_states * n_states
        return ChainScores(unary.reshape(m * n_tokens, n_states),
                           np.arange(m + 1) * n_tokens, extra[:k].reshape(n_states, n_states),
                           extra[k:k + n_states], extra[k + n_states:])

    def extra_arrays(self, parts, m):
        return np.concatenate([parts.transition.reshape(m, -1), parts.start, parts.end],
                              axis=1)


class _TreeAdapter(_Adapter):
    ndim = 2
    layout = ("(n, n) of arcs, modifier-major: [m, h] is on when h heads m, [m, m] when "
              "m is a root child")

    @classmethod
    def check_shape(cls, decoder, shape):
        super().check_shape(decoder, shape)
        if shape[0] != shape[1]:
            raise ValueError(f"add_structure: a TreeDecoder sees a square (n, n) block of "
                             f"arc variables; got shape {shape}.")

    def scores(self, unary, extra):
        from .._tree.decoder import TreeScores

        m = unary.shape[0]
        return TreeScores(unary.reshape(-1), np.arange(m + 1) * self.shape[0])


class _MatchingAdapter(_Adapter):
    ndim = 2
    layout = "(n_rows, n_cols): [j, k] is on when row j is matched to column k"

    def scores(self, unary, extra):
        from .._matching.decoder import MatchingScores

        m = unary.shape[0]
        return MatchingScores(unary.reshape(-1), np.tile(np.array(self.shape), (m, 1)))


class _LabelAdapter(_Adapter):
    ndim = 1
    layout = "(n_labels,): variable j is on when label j is"

    def scores(self, unary, extra):
        from .._tabular.multilabel import MultilabelScores

        return MultilabelScores(unary)


def _adapter_class(decoder):
    from .._chain.decoder import ChainDecoder
    from .._matching.decoder import MatchingDecoder
    from .._tabular.multilabel import MultilabelDecoder
    from .._tabular.subset import SubsetDecoder
    from .._tree.decoder import TreeDecoder

    for cls, adapter in ((ChainDecoder, _ChainAdapter), (TreeDecoder, _TreeAdapter),
                         (MatchingDecoder, _MatchingAdapter),
                         (MultilabelDecoder, _LabelAdapter), (SubsetDecoder, _LabelAdapter)):
        if isinstance(decoder, cls):
            return adapter
    raise TypeError(
        "add_structure takes a ChainDecoder, TreeDecoder, MatchingDecoder, "
        f"MultilabelDecoder or SubsetDecoder; got {type(decoder).__name__}.")


class StructureFactor:
    """One decoder factor of a template graph: the decoder, its block and extra parts.

    Parameters
    ----------
    decoder : Decoder
        A ChainDecoder, TreeDecoder, MatchingDecoder, MultilabelDecoder or SubsetDecoder.
    var : ndarray of int64, the block's shape
        The graph's variables of the block.
    extra_start : int
        First column of the factor's extra scores in ``FactorGraphScores.extra``.

    Attributes
    ----------
    shape : tuple
    size, n_extra, extra_start : int
    """

    def __init__(self, decoder, var, extra_start=0):
        var = np.asarray(var, dtype=np.int64)
        adapter = _adapter_class(decoder)
        adapter.check_shape(decoder, var.shape)
        self.decoder = decoder
        self.var = var
        self.shape = var.shape
        self.adapter = adapter(decoder, var.shape)
        self.size = self.adapter.size
        self.n_extra = self.adapter.n_extra
        self.extra_start = int(extra_start)
        self._max_problem = None

    def group(self, entry_start, n_copies):
        """The ADMM group solving this factor over ``n_copies`` tiled examples."""
        return StructureGroup(self, entry_start, n_copies)

    def shifted(self, shift, extra_shift=0):
        """The same factor on variables ``var + shift``."""
        return StructureFactor(self.decoder, self.var + shift,
                               self.extra_start + extra_shift)

    # -- batched MAP ----------------------------------------------------------------

    def map_parts(self, unary, extra):
        """The decoder's MAP of m problems and its parts.

        Parameters
        ----------
        unary : ndarray of shape (m, size)
        extra : ndarray of shape (m, n_extra)
            Examples with equal rows are solved in one decoder call.

        Returns
        -------
        q : ndarray of shape (m, size), v : ndarray of shape (m, n_extra)
        """
        m = unary.shape[0]
        q = np.empty((m, self.size))
        v = np.empty((m, self.n_extra))
        for rows, row in _same_rows(extra):
            scores = self.adapter.scores(np.ascontiguousarray(unary[rows]), row)
            labels = self.decoder.map(scores)
            q[rows], v[rows] = self.adapter.arrays(self.decoder.parts(scores, labels),
                                                   rows.shape[0])
        return q, v

    def block_parts(self, x):
        """Whether every 0/1 block x is an output, and its extra parts.

        Parameters
        ----------
        x : ndarray of shape (n, size), 0/1

        Returns
        -------
        ok : ndarray of shape (n,), bool
        extra : ndarray of shape (n, n_extra)
            The extra parts of the output (of the closest one where not ok).
        """
        x = np.asarray(x, dtype=np.float64).reshape(-1, self.size)
        if x.shape[0] == 0:
            return np.zeros(0, bool), np.zeros((0, self.n_extra))
        q, v = self.map_parts(x - 0.5, np.zeros((x.shape[0], self.n_extra)))
        return np.all(q == x, axis=1), v

    def feasible(self, x):
        return self.block_parts(x)[0]


def _same_rows(extra):
    """(row indices, the row) of every distinct row of ``extra`` (m, n_extra)."""
    m = extra.shape[0]
    if extra.shape[1] == 0 or m == 1 or np.all(extra == extra[0]):
        return [(np.arange(m), extra[0].copy() if m else extra.reshape(-1))]
    rows, inverse = np.unique(extra, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    return [(np.flatnonzero(inverse == k), rows[k]) for k in range(rows.shape[0])]


# ------------------------------------------------------------------ weighted active set

class _Support:
    """An active set of one local problem: structures (rows of M, N) and weights p."""

    __slots__ = ("M", "N", "p")

    def __init__(self, M, N, p):
        self.M, self.N, self.p = M, N, p

    def kkt(self, w):
        k = self.p.shape[0]
        K = np.zeros((k + 1, k + 1))
        K[:k, :k] = (self.M * w) @ self.M.T
        K[:k, k] = K[k, :k] = 1.0
        return K

    def drop(self, keep):
        self.M, self.N, self.p = self.M[keep], self.N[keep], self.p[keep]

    def jacobian(self, w):
        """Aᵀ D A, the Jacobian of (a, s) ↦ (q, v) on this support (w fixed)."""
        k = self.p.shape[0]
        D = np.linalg.pinv(self.kkt(w))[:k, :k]
        A = np.concatenate([self.M, self.N], axis=1)
        return A.T @ D @ A


def _solve_on_support(sup, a, w, s, max_inner=1000):
    """The equality-constrained QP on the support with line searches (dropping the
    structures whose weight reaches 0) and exchange steps along affinely dependent
    directions, in place."""
    for _ in range(max_inner):
        k = sup.p.shape[0]
        theta = sup.M @ a + sup.N @ s
        K = sup.kkt(w)
        if k > 1:
            _, sv, vt = np.linalg.svd(K)
            if sv[-1] <= 1e-11 * sv[0]:
                # affinely dependent: move along the null direction (the quadratic is
                # flat there), towards a better θ, until a weight reaches 0
                d = vt[-1, :k]
                if theta @ d < 0:
                    d = -d
                neg = d < -1e-15
                if not neg.any():
                    d, neg = -d, d > 1e-15
                step = np.min(sup.p[neg] / -d[neg])
                blocking = np.flatnonzero(neg)[np.argmin(sup.p[neg] / -d[neg])]
                sup.p = np.maximum(sup.p + step * d, 0.0)
                sup.p[blocking] = 0.0
                sup.drop(sup.p > 0)
                sup.p /= sup.p.sum()
                continue
        rhs = np.append(theta, 1.0)
        p_hat = np.linalg.solve(K, rhs)[:k]
        if np.all(p_hat >= 0.0):
            keep = p_hat > 0.0
            sup.p = p_hat
            if not keep.all():
                sup.drop(keep)
                sup.p /= sup.p.sum()
            return
        d = p_hat - sup.p
        neg = d < 0
        ratios = sup.p[neg] / -d[neg]
        step = min(1.0, float(np.min(ratios)))
        sup.p = sup.p + step * d
        sup.p[np.flatnonzero(neg)[np.argmin(ratios)]] = 0.0
        sup.p[sup.p < 0] = 0.0
        sup.drop(sup.p > 0)
        sup.p /= sup.p.sum()
    raise RuntimeError("the weighted active set's inner loop did not finish.")


def weighted_active_set(factor, a, w, s, supports=None, *, max_iter=200, tol=1e-12):
    """argmax over the factor's marginal polytope of aᵀq + sᵀv − ½ Σ_j w_j q_j², by an
    active set over the decoder's MAP (module docstring), for m problems.

    Parameters
    ----------
    factor : StructureFactor
    a, w : ndarray of shape (m, size)
        Scores and weights (> 0) of the block's unary parts.
    s : ndarray of shape (m, n_extra)
        Scores of the extra parts.
    supports : list of _Support or None, default=None
        Warm start (a previous solution's supports, one per problem; None entries
        start from the MAP).
    max_iter : int, default=200
        Most oracle (MAP) calls per problem.
    tol : float, default=1e-12
        Stop when the oracle's structure improves the linearized objective by at most
        ``tol`` × (1 + |θ|) over the best active structure.

    Returns
    -------
    q : ndarray of shape (m, size)
    v : ndarray of shape (m, n_extra)
    supports : list of _Support
    """
    m = a.shape[0]
    supports = list(supports) if supports is not None else [None] * m
    cold = np.array([sup is None for sup in supports], dtype=bool)
    supports = [None if sup is None else _Support(sup.M, sup.N, sup.p.copy())
                for sup in supports]
    if cold.any():
        rows = np.flatnonzero(cold)
        M, N = factor.map_parts(a[rows], s[rows])
        for r, k in enumerate(rows):
            supports[k] = _Support(M[r:r + 1], N[r:r + 1], np.ones(1))
    running = np.arange(m)
    for _ in range(max_iter):
        if running.size == 0:
            break
        for k in running:
            _solve_on_support(supports[k], a[k], w[k], s[k])
        q = np.stack([supports[k].p @ supports[k].M for k in running])
        adjusted = a[running] - w[running] * q
        M_new, N_new = factor.map_parts(adjusted, s[running])
        still = []
        for r, k in enumerate(running):
            sup = supports[k]
            best_in = np.max(sup.M @ adjusted[r] + sup.N @ s[k])
            gain = M_new[r] @ adjusted[r] + N_new[r] @ s[k] - best_in
            if gain > tol * (1.0 + abs(best_in)):
                sup.M = np.concatenate([sup.M, M_new[r:r + 1]])
                sup.N = np.concatenate([sup.N, N_new[r:r + 1]])
                sup.p = np.append(sup.p, 0.0)
                still.append(k)
        running = np.array(still, dtype=np.int64)
    q = np.stack([sup.p @ sup.M for sup in supports])
    v = np.stack([sup.p @ sup.N for sup in supports])
    return q, v, supports


# ------------------------------------------------------------------ the factor group

class StructureGroup(FactorGroup):
    """One structure factor of every copy of a template graph (:class:`FactorGroup`).

    :meth:`qp` solves the m copies' local problems: copies with constant weights by the
    decoder's SparseMAP at (a / c, s / c) (copies with equal extra scores s / c in one
    call, warm-started from the previous call on the same copies), the others by
    :func:`weighted_active_set` (warm-started from their previous supports).
    :meth:`jvp` and :meth:`vjp` use the Jacobian Aᵀ D A of the weighted active set's
    support at the given local problems (computed once per distinct problem).
    """

    def __init__(self, factor, entry_start, n_copies):
        super().__init__(entry_start, factor.size, factor.n_extra, n_copies)
        self.factor = factor
        self._results = {}          # copy indices (tuple) -> SparseMAPResult
        self._supports = {}         # copy index -> _Support (weighted problems)
        self._jacobians = {}        # bytes of a copy's (a, w, s) -> Jacobian

    def _split(self, a, w, s):
        m = self._copies(a)
        return (a.reshape(m, self.size), w.reshape(m, self.size),
                s.reshape(m, self.n_extra), m)

    def compact(self, m, keep):
        """The ADMM kept copies ``keep`` (bool, m) of the first m, moved to the front."""
        keep = np.asarray(keep, dtype=bool)
        new_index = np.cumsum(keep) - 1
        self._supports = {int(new_index[k]): sup for k, sup in self._supports.items()
                          if k < m and keep[k]}
        self._results = {}

    def qp(self, a, w, s, q_out, v_out):
        A, W, S, m = self._split(a, w, s)
        Q, V = q_out.reshape(m, self.size), v_out.reshape(m, self.n_extra)
        c = W[:, 0]
        constant = np.all(np.abs(W - c[:, None]) <= 1e-12 * c[:, None], axis=1)
        if constant.any():
            rows_c = np.flatnonzero(constant)
            results = {}
            for sub, _ in _same_rows(S[rows_c] / c[rows_c, None]):
                rows = rows_c[sub]
                key = tuple(rows.tolist())
                scale = c[rows][:, None]
                scores = self.factor.adapter.scores(A[rows] / scale, S[rows[0]] / scale[0])
                init = self._results.get(key)
                result = self.factor.decoder.sparsemap(scores, init=init, tol=1e-12)
                Q[rows], V[rows] = self.factor.adapter.arrays(result.marginals, rows.size)
                results[key] = result
            self._results = results
        weighted = np.flatnonzero(~constant)
        if weighted.size:
            q, v, sups = weighted_active_set(
                self.factor, A[weighted], W[weighted], S[weighted],
                [self._supports.get(int(k)) for k in weighted])
            Q[weighted], V[weighted] = q, v
            for k, sup in zip(weighted, sups):
                self._supports[int(k)] = sup

    def map(self, a, s, q_out, v_out):
        m = self._copies(a)
        q, v = self.factor.map_parts(a.reshape(m, self.size), s.reshape(m, self.n_extra))
        q_out[:] = q.reshape(-1)
        v_out[:] = v.reshape(-1)

    def _jacobian_stack(self, a, w, s):
        A, W, S, m = self._split(a, w, s)
        keys = [A[k].tobytes() + W[k].tobytes() + S[k].tobytes() for k in range(m)]
        missing = [k for k in range(m) if keys[k] not in self._jacobians]
        if missing:
            rows = np.array(missing)
            _, _, sups = weighted_active_set(self.factor, A[rows], W[rows], S[rows])
            for k, sup in zip(missing, sups):
                self._jacobians[keys[k]] = sup.jacobian(W[k])
        return np.stack([self._jacobians[key] for key in keys])

    def _apply(self, a, w, s, dq, dv, q_out, v_out):
        m = self._copies(a)
        J = self._jacobian_stack(a, w, s)
        x = np.concatenate([dq.reshape(m, self.size), dv.reshape(m, self.n_extra)], axis=1)
        y = np.einsum("kij,kj->ki", J, x)
        q_out[:] = y[:, :self.size].reshape(-1)
        v_out[:] = y[:, self.size:].reshape(-1)

    def jvp(self, a, w, s, q, da, ds, dq_out, dv_out):
        self._apply(a, w, s, da, ds, dq_out, dv_out)

    def vjp(self, a, w, s, q, gq, gv, ga_out, gs_out):
        # the Jacobian Aᵀ D A is symmetric
        self._apply(a, w, s, gq, gv, ga_out, gs_out)


def check_structure_block(graph, decoder, variables):
    """The ids of a block for :meth:`FactorGraph.add_structure`, checked."""
    _adapter_class(decoder)
    # a Variables block of this graph (not imported: the graph module imports this one)
    if getattr(variables, "graph", None) is not graph or not hasattr(variables, "negated"):
        raise TypeError("add_structure: variables must be a Variables block of this graph "
                        "(from graph.variables(shape), sliced).")
    if variables.negated.any():
        raise ValueError("add_structure: a decoder factor takes variables, not negated "
                         "inputs.")
    ids = variables.ids
    if ids.size == 0:
        raise ValueError("add_structure: the block is empty.")
    if np.unique(ids).size != ids.size:
        raise ValueError("add_structure: the block holds a variable twice.")
    capabilities = getattr(decoder, "capabilities", frozenset())
    if not {"map", "parts"} <= set(capabilities):
        raise ValueError(f"add_structure: the decoder needs the 'map' and 'parts' "
                         f"operations; {type(decoder).__name__} has {sorted(capabilities)}.")
    return ids
