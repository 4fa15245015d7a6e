"""SparseMAP: a sparse combination of a few structures, from MAP calls only."""

import numpy as np

from ..utils._blocks import gather_ranges
from ..utils._parallel import threads_for
from . import _sparsemap_kernels as kernels
from ._base import check_capability

__all__ = ["sparsemap", "SparseMAPResult"]

_METHODS = {
    "active_set": kernels.ACTIVE_SET,
    "fw": kernels.VANILLA_FW,
    "away_fw": kernels.AWAY_FW,
    "pairwise_fw": kernels.PAIRWISE_FW,
}


def _block_index(offsets, rows):
    """Positions of the blocks ``offsets[r]:offsets[r + 1]`` of ``rows``, concatenated."""
    return gather_ranges(offsets[rows], offsets[rows + 1] - offsets[rows])


class _Growing:
    """An array that grows by appending, with amortized doubling (no copy per append)."""

    def __init__(self, dtype, initial=()):
        self._data = np.empty(max(16, len(initial)), dtype=dtype)
        self._size = len(initial)
        self._data[: self._size] = initial

    def extend(self, values):
        values = np.asarray(values)
        needed = self._size + values.shape[0]
        if needed > self._data.shape[0]:
            grown = np.empty(max(needed, 2 * self._data.shape[0]), dtype=self._data.dtype)
            grown[: self._size] = self._data[: self._size]
            self._data = grown
        self._data[self._size : needed] = values
        self._size = needed

    def view(self):
        return self._data[: self._size]


class _Pool:
    """Every structure the solver has seen: its sparse unary indicators, score and output.

    Structure ``s`` has unary entries ``idx/val[ptr[s]:ptr[s + 1]]`` (positions local to
    its example's unary block), score ``theta[s]`` and encoded output
    ``outputs[out_ptr[s]:out_ptr[s + 1]]``.
    """

    def __init__(self):
        self._ptr = _Growing(np.int64, [0])
        self._idx = _Growing(np.int64)
        self._val = _Growing(np.float64)
        self._theta = _Growing(np.float64)
        self._out, self._out_sizes = [], []
        self.output_tail = ()
        self.n = 0
        self._stacked = None

    def add(self, decoder, scores, y):
        """Add the outputs ``y`` of the examples of ``scores``; returns their ids."""
        parts = decoder.parts(scores, y)
        flat = np.asarray(parts.unary, dtype=np.float64).reshape(-1)
        block = np.asarray(parts.unary_offsets)
        nonzero = np.flatnonzero(flat)
        example = np.searchsorted(block, nonzero, side="right") - 1
        self._idx.extend(nonzero - block[example])
        self._val.extend(flat[nonzero])
        sizes = np.bincount(example, minlength=scores.n_examples)
        self._ptr.extend(self._ptr.view()[-1] + np.cumsum(sizes))
        self._theta.extend(np.asarray(decoder.score_outputs(scores, y), dtype=np.float64))
        y = np.asarray(y)
        self.output_tail = y.shape[1:] if y.ndim > 1 else ()
        self._out.append(y.reshape(-1))
        self._out_sizes.append(np.diff(scores.offsets))
        ids = self.n + np.arange(scores.n_examples)
        self.n += scores.n_examples
        self._stacked = None
        return ids

    def arrays(self):
        """(ptr, idx, val, theta) as contiguous arrays for the kernels (views)."""
        return self._ptr.view(), self._idx.view(), self._val.view(), self._theta.view()

    def outputs(self, ids):
        """The encoded outputs of structures ``ids``, stacked as a decoder batch."""
        if self._stacked is None:
            sizes = np.concatenate(self._out_sizes)
            self._stacked = (np.concatenate(([0], np.cumsum(sizes))), np.concatenate(self._out))
        ptr, outputs = self._stacked
        flat = outputs[_block_index(ptr, np.asarray(ids))]
        return flat.reshape((-1,) + self.output_tail)


class SparseMAPResult:
    """The solution of SparseMAP for a batch of examples.

    Attributes
    ----------
    unary : ndarray, shaped like ``scores.unary``
        u*, the unique unary marginals.
    marginals : part container
        μ* = [u*; v*] = Σ_s p_s a_s, laid out like the decoder's parts (for chains, the
        expected transition counts are the additional marginals v*).
    n_iter : ndarray of shape (n_examples,)
        Oracle (MAP) calls per example.
    gap : ndarray of shape (n_examples,)
        Final Frank–Wolfe gap max_s ⟨η − [u; 0], a_s − μ⟩ ≥ 0 (an upper bound on the
        distance to the optimum, in objective value).
    objective : ndarray of shape (n_examples,)
        ηᵀμ − ½‖u‖² per example.
    converged : ndarray of shape (n_examples,), bool
    support_size : ndarray of shape (n_examples,)
    method : str
        The solver that produced it.
    """

    def __init__(self, decoder, scores, pool, support, weights, n_active, lift, u, n_iter,
                 gap, objective, converged, method):
        self._decoder = decoder
        self._lift = lift
        self.method = method
        self._scores = scores
        self._pool = pool
        self._support = support
        self._weights = weights
        self.support_size = n_active
        self.unary = u.reshape(np.shape(scores.unary))
        self.n_iter = n_iter
        self.gap = gap
        self.objective = objective
        self.converged = converged
        self._marginals = None

    @property
    def n_examples(self):
        return self.support_size.shape[0]

    def combine(self, coefficients):
        """Σ_k coefficients[e, k] a_{s_k} over the support of every example, as parts."""
        total = None
        for k in range(int(self.support_size.max())):
            ids = np.where(k < self.support_size, self._support[:, k], self._support[:, 0])
            factor = np.where(k < self.support_size, coefficients[:, k], 0.0)
            parts = self._decoder.parts(self._scores, self._pool.outputs(ids))
            term = parts.scale(factor)
            total = term if total is None else total + term
        return total

    @property
    def marginals(self):
        if self._marginals is None:
            self._marginals = self.combine(self._weights)
        return self._marginals

    def distribution(self, i):
        """The support of example ``i``: its structures and their weights.

        Returns
        -------
        outputs : list of ndarray
            Encoded outputs, by decreasing weight.
        weights : ndarray of shape (support_size,)
            Positive, summing to one.
        """
        k = self.support_size[i]
        weights = self._weights[i, :k]
        order = np.argsort(-weights, kind="stable")
        outputs = self._pool.outputs(self._support[i, :k][order])
        if self._pool.output_tail:
            outputs = list(outputs)
        else:
            n_tokens = outputs.shape[0] // max(k, 1)
            outputs = [outputs[j * n_tokens : (j + 1) * n_tokens] for j in range(k)]
        return outputs, weights[order].copy()

    def vjp(self, grad_unary):
        """Backward pass: the gradient with respect to η of ⟨grad_unary, u*(η)⟩.

        By Proposition 1 of Niculae et al. (2018), on the final support I,
        ∂u/∂η = M_I D A_Iᵀ with D = Z − (Z1)(Z1)ᵀ / (1ᵀZ1) and Z = (M_IᵀM_I)⁻¹, so the
        vector–Jacobian product is A_I D (M_Iᵀ p), a combination of the support's part
        vectors. The unary block of the Jacobian is symmetric, so this is also the
        Jacobian–vector product for a direction on η_U.

        Parameters
        ----------
        grad_unary : ndarray shaped like ``unary``
            Upstream gradient p on u*.

        Returns
        -------
        part container
            [∂/∂η_U; ∂/∂η_V] of ⟨p, u*⟩, laid out like the decoder's parts.
        """
        if self.method != "active_set":
            raise ValueError(
                "The backward pass needs an active-set solution (its support is affinely "
                f"independent and solves the KKT system); this one comes from {self.method!r}."
                " Re-solve with sparsemap(..., init=result)."
            )
        if np.shape(grad_unary) != self.unary.shape:
            raise ValueError(
                f"grad_unary has shape {np.shape(grad_unary)}; expected {self.unary.shape}, "
                "the shape of the unary marginals."
            )
        upstream = np.ascontiguousarray(grad_unary, dtype=np.float64).reshape(-1)
        coefficients = np.zeros(self._weights.shape)
        ptr, idx, val, _ = self._pool.arrays()
        kernels.support_coefficients(
            self._support, self.support_size, self._lift, ptr, idx, val, upstream,
            np.asarray(self._scores.unary_offsets, dtype=np.int64), coefficients,
        )
        return self.combine(coefficients)


def sparsemap(decoder, scores, *, method="active_set", max_iter=100, tol=1e-9,
              max_inner=200, init=None):
    """SparseMAP: argmax_{μ=[u;v] ∈ M} η_Uᵀu + η_Vᵀv − ½‖u‖² for every example.

    Only MAP calls on the decoder are needed, so this works for every decoder with the
    ``"map"`` and ``"parts"`` operations, including a user's own. The unary marginals u*
    are unique; the solution is returned as a sparse convex combination of structures.

    Parameters
    ----------
    decoder : Decoder
        Must provide ``map`` and ``parts``. A user's decoder works as is when its score
        container has ``unary``, ``unary_offsets``, ``offsets`` (where each example's
        encoded output starts), ``replace(unary=...)``, ``take(indices)`` and
        ``n_examples``, and its part container has ``unary``, ``unary_offsets``,
        ``dot``, ``scale`` and ``+`` (see :ref:`architecture`).
    scores : score container
        Part scores η of a batch (its ``unary`` array is η_U; the rest is η_V).
    method : {"active_set", "fw", "away_fw", "pairwise_fw"}, default="active_set"
        The active-set method (Niculae et al. 2018, Algorithm 2), or vanilla, away-step or
        pairwise Frank–Wolfe (Algorithm 1), which converge more slowly and less sparsely.
    max_iter : int, default=100
        Most MAP calls per example.
    tol : float, default=1e-9
        Stop an example when its Frank–Wolfe gap is at most ``tol · ρ²``, with ρ² the
        squared norm of the example's first structure's unary vector (the scale of the
        problem; 1 if that is zero), or at rounding level (1e-13 · max(ρ², abs(τ)), τ the
        multiplier of the simplex constraint). The test does not change when a constant
        is added to every structure's score.
    max_inner : int, default=200
        Most minor (line-search) iterations per major iteration of the active-set method.
    init : SparseMAPResult, default=None
        Warm start: begin from the supports and weights of an earlier solution for the
        same examples (for instance at the previous scores of a training loop). Its
        structures are rescored under ``scores``; dependent ones are left out.

    Returns
    -------
    SparseMAPResult

    Notes
    -----
    Active set: keep a support I with weights p on the simplex; solve the equality
    constrained QP on I through its KKT system [[M_IᵀM_I, 1], [1ᵀ, 0]] [p; τ] = [θ_I; 1]
    with a Cholesky factor updated by one row (added structure) or one Givens sweep
    (removed structure); line search to the QP solution and drop the structures whose
    weight reaches zero; when the QP solution is feasible, ask MAP(η_U − u, η_V) for a
    structure s and stop when θ_s − m_sᵀu ≤ τ + tol (the KKT conditions). Every example of
    the batch is handled at once: one batched MAP call per major iteration for all
    unconverged examples, then one compiled update of all their active sets.

    Transition scores make the active m_s affinely dependent (M_IᵀM_I singular) more often
    than not; a naive solve then stalls. The factor is kept of the lifted Gram matrix
    M_IᵀM_I + ρ² 11ᵀ (ρ² the squared norm of the first structure), singular exactly on
    affine dependence, and a dependent new structure enters by an exchange step along the
    null direction, which raises the objective by (θ_s − θ_Iᵀc) times the step, so the
    method still reaches the optimum.

    References
    ----------
    Niculae, Martins, Blondel & Cardie (2018). SparseMAP: differentiable sparse structured
    inference. ICML.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.decoders import MulticlassDecoder, MulticlassScores, sparsemap
    >>> result = sparsemap(MulticlassDecoder(), MulticlassScores(np.array([[1.0, 0.5, -2.0]])))
    >>> result.unary  # sparsemax of the scores
    array([[0.75, 0.25, 0.  ]])
    """
    if method not in _METHODS:
        raise ValueError(f"method must be one of {sorted(_METHODS)}; got {method!r}.")
    max_iter = int(max_iter)
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1; got {max_iter}.")
    if not tol >= 0:
        raise ValueError(f"tol must be >= 0; got {tol}.")
    if int(max_inner) < 1:
        raise ValueError(f"max_inner must be >= 1; got {max_inner}.")
    if scores.n_examples == 0:
        raise ValueError("SparseMAP needs at least one example; the batch is empty.")
    check_capability(decoder, "map", "SparseMAP")
    check_capability(decoder, "parts", "SparseMAP")
    code = _METHODS[method]
    n = scores.n_examples
    flat = np.ascontiguousarray(scores.unary, dtype=np.float64).reshape(-1)
    if np.isnan(flat).any() or np.isposinf(flat).any():
        raise ValueError("The scores contain NaN or +inf (-inf forbids a part).")
    u_offsets = np.asarray(scores.unary_offsets, dtype=np.int64)
    u = np.zeros_like(flat)
    capacity = 8
    support = np.full((n, capacity), -1, dtype=np.int64)
    weights = np.zeros((n, capacity))
    chol = np.zeros((n, capacity, capacity)) if code == kernels.ACTIVE_SET else None
    n_active = np.zeros(n, dtype=np.int64)
    lift = np.ones(n)
    n_iter = np.zeros(n, dtype=np.int64)
    gap = np.full(n, np.inf)
    objective = np.zeros(n)
    tau = np.zeros(n)
    converged = np.zeros(n, dtype=bool)
    pool = _Pool()
    if init is not None:
        capacity = max(capacity, int(init.support_size.max()) + 2)
        support, weights, chol = _warm_start(decoder, scores, init, pool, capacity, code,
                                             n_active, lift, u, u_offsets, tau, objective,
                                             int(max_inner))
    for _ in range(max_iter):
        rows = np.flatnonzero(~converged)
        if rows.size == 0:
            break
        if n_active.max() + 2 > capacity:
            capacity *= 2
            support = _grow(support, capacity, -1)
            weights = _grow(weights, capacity, 0.0)
            if chol is not None:
                grown = np.zeros((n, capacity, capacity))
                grown[:, : chol.shape[1], : chol.shape[2]] = chol
                chol = grown
        sub = scores if rows.size == n else scores.take(rows)
        positions = _block_index(u_offsets, rows)
        corrected = sub.replace(unary=(flat[positions] - u[positions]).reshape(
            np.shape(sub.unary)))
        new_ids = pool.add(decoder, sub, decoder.map(corrected))
        ptr, idx, val, theta = pool.arrays()
        with threads_for(positions.shape[0] * 4):
            if code == kernels.ACTIVE_SET:
                kernels.active_set_step(
                    rows, new_ids, support, weights, n_active, chol, lift, u, u_offsets, ptr,
                    idx,
                    val, theta, tau, gap, converged, objective, float(tol), int(max_inner),
                )
            else:
                kernels.frank_wolfe_step(
                    code, rows, new_ids, support, weights, n_active, lift, u, u_offsets, ptr,
                    idx,
                    val, theta, gap, converged, objective, float(tol),
                )
        n_iter[rows] += 1
    return SparseMAPResult(decoder, scores, pool, support, weights, n_active, lift, u,
                           n_iter, gap, objective, converged, method)


def _warm_start(decoder, scores, init, pool, capacity, code, n_active, lift, u, u_offsets,
                tau, objective, max_inner):
    """Active sets from an earlier solution's supports, rescored under ``scores``."""
    n = scores.n_examples
    if not isinstance(init, SparseMAPResult):
        raise TypeError(f"init must be a SparseMAPResult; got {type(init).__name__}.")
    if init.n_examples != n or not (
            np.array_equal(init._scores.offsets, scores.offsets)
            and np.array_equal(init._scores.unary_offsets, scores.unary_offsets)):
        raise ValueError(
            "init must solve the same examples (the same sizes) as the scores; it has "
            f"{init.n_examples} examples, the scores {n}."
        )
    previous = init.support_size
    start = np.full((n, capacity), -1, dtype=np.int64)
    start_weights = np.zeros((n, capacity))
    for k in range(int(previous.max())):
        ids = np.where(k < previous, init._support[:, k], init._support[:, 0])
        new_ids = pool.add(decoder, scores, init._pool.outputs(ids))
        start[:, k] = np.where(k < previous, new_ids, -1)
        start_weights[:, k] = np.where(k < previous, init._weights[:, k], 0.0)
    ptr, idx, val, theta = pool.arrays()
    support = np.full((n, capacity), -1, dtype=np.int64)
    weights = np.zeros((n, capacity))
    chol = np.zeros((n, capacity, capacity)) if code == kernels.ACTIVE_SET else None
    kernels.warm_start(start, start_weights, code == kernels.ACTIVE_SET, support, weights,
                       n_active, chol if chol is not None else np.zeros((n, 1, 1)), lift, u,
                       u_offsets, ptr, idx, val, theta, tau, objective, max_inner)
    return support, weights, chol


def _grow(array, capacity, fill):
    grown = np.full((array.shape[0], capacity), fill, dtype=array.dtype)
    grown[:, : array.shape[1]] = array
    return grown
