"""The generic SparseMAP solver: an active set (or Frank–Wolfe) over MAP calls."""

import numpy as np

from ...utils._blocks import cumulative, gather_ranges
from ...utils._parallel import threads_for
from . import kernels
from .pool import StructurePool
from .result import SparseMAPResult, check_init, check_options, check_scores

__all__ = ["active_set_sparsemap"]

_METHOD_CODES = {
    "active_set": kernels.ACTIVE_SET,
    "fw": kernels.VANILLA_FW,
    "away_fw": kernels.AWAY_FW,
    "pairwise_fw": kernels.PAIRWISE_FW,
}

#: Slots an example starts with; its block doubles whenever its support outgrows it.
INITIAL_CAPACITY = 4


def _block_index(offsets, rows):
    """Positions of the blocks ``offsets[r]:offsets[r + 1]`` of ``rows``, concatenated."""
    return gather_ranges(offsets[rows], offsets[rows + 1] - offsets[rows])


def _require(decoder, capability):
    capabilities = getattr(decoder, "capabilities", frozenset())
    if capability not in capabilities:
        raise ValueError(
            f"SparseMAP needs the decoder operation {capability!r}, which "
            f"{type(decoder).__name__} does not provide (it provides "
            f"{sorted(capabilities)})."
        )


class _ActiveSets:
    """Every example's active structures, weights and Cholesky factor, stored ragged.

    Example ``e`` owns ``capacity[e]`` slots ``support/weights[slot_ptr[e]:slot_ptr[e + 1]]``
    and a ``capacity[e]²`` factor block ``chol[chol_ptr[e]:chol_ptr[e + 1]]``. Memory is
    Σ_e capacity[e]² (capacity[e] < 2 · support_e + 4), not n_examples × max_e capacity[e]².
    """

    def __init__(self, capacity, factored):
        self.factored = factored
        self._allocate(np.asarray(capacity, dtype=np.int64))

    def _allocate(self, capacity):
        self.capacity = capacity
        self.slot_ptr = cumulative(capacity)
        self.support = np.full(self.slot_ptr[-1], -1, dtype=np.int64)
        self.weights = np.zeros(self.slot_ptr[-1])
        self.chol_ptr = cumulative(capacity * capacity if self.factored else 0 * capacity)
        self.chol = np.zeros(self.chol_ptr[-1])

    def make_room(self, rows, n_active):
        """Give every example of ``rows`` room for two more structures than it holds."""
        needed = n_active[rows] + 2
        short = needed > self.capacity[rows]
        if not short.any():
            return
        capacity = self.capacity.copy()
        grown = rows[short]
        capacity[grown] = np.maximum(needed[short], 2 * capacity[grown])
        old = (self.slot_ptr, self.support, self.weights, self.chol_ptr, self.chol)
        self._allocate(capacity)
        kernels.repack(*old, n_active, self.slot_ptr, self.support, self.weights,
                       self.chol_ptr, self.chol)

    def active(self, n_active):
        """Flat positions of every example's active slots, example by example."""
        return gather_ranges(self.slot_ptr[:-1], n_active)


class PoolSupport:
    """A support whose structures live in a :class:`StructurePool` (see
    :mod:`skstruct.decoders._sparsemap.result` for the interface)."""

    def __init__(self, decoder, scores, pool, ptr, ids, weights, lift):
        self._decoder = decoder
        self._scores = scores
        self._pool = pool
        self.ptr = ptr
        self.ids = ids
        self.weights = weights
        self._lift = lift

    def outputs(self, positions):
        return self._pool.outputs(self.ids[positions])

    def split(self, outputs, count):
        if self._pool.output_tail:
            return list(outputs)
        n_tokens = outputs.shape[0] // max(count, 1)
        return [outputs[j * n_tokens : (j + 1) * n_tokens] for j in range(count)]

    def combine(self, coefficients):
        sizes = np.diff(self.ptr)
        first = self.ptr[:-1]
        total = None
        for k in range(int(sizes.max())):
            present = k < sizes
            positions = first + np.where(present, k, 0)
            factor = np.where(present, coefficients[positions], 0.0)
            parts = self._decoder.parts(self._scores, self.outputs(positions))
            term = parts.scale(factor)
            total = term if total is None else total + term
        return total

    def marginals(self):
        return self.combine(self.weights)

    def check_backward(self, method):
        if method != "active_set":
            raise ValueError(
                "The backward pass needs an active-set solution (its support is affinely "
                f"independent and solves the KKT system); this one comes from {method!r}."
                " Re-solve with sparsemap(..., init=result)."
            )

    def vjp(self, upstream):
        coefficients = np.zeros(self.ids.shape[0])
        ptr, idx, val, _ = self._pool.arrays()
        kernels.support_coefficients(
            self.ptr, self.ids, self._lift, ptr, idx, val, upstream,
            np.asarray(self._scores.unary_offsets, dtype=np.int64), coefficients,
        )
        return self.combine(coefficients)


def active_set_sparsemap(decoder, scores, *, method="active_set", max_iter=100, tol=1e-9,
                         max_inner=200, init=None):
    """SparseMAP by the active-set method over MAP calls (the default of every decoder).

    argmax_{μ=[u;v] ∈ M} η_Uᵀu + η_Vᵀv − ½‖u‖² for every example. Only MAP calls on the
    decoder are needed, so this works for every decoder with the ``"map"`` and
    ``"parts"`` operations, including a user's own. Parameters, return value and method
    are those of :func:`~skstruct.decoders.sparsemap`, which calls this unless the decoder
    brings its own solver.

    Parameters
    ----------
    decoder : Decoder
    scores : score container
    method : {"active_set", "fw", "away_fw", "pairwise_fw"}, default="active_set"
    max_iter : int, default=100
    tol : float, default=1e-9
    max_inner : int, default=200
    init : SparseMAPResult, default=None

    Returns
    -------
    SparseMAPResult

    Notes
    -----
    Memory. Each example's active slots and Cholesky factor live in their own block of
    one flat array, sized by that example's support (doubled when outgrown), so the working
    arrays take O(Σ_e k_e²) for supports of k_e structures, not O(n · max_e k_e²). The
    structures the examples no longer use are dropped from the pool when they outnumber
    the used ones, so it stays O(Σ_e k_e) structures however many MAP calls were made.
    """
    max_iter, max_inner = check_options(method, max_iter, tol, max_inner)
    flat = check_scores(scores)
    _require(decoder, "map")
    _require(decoder, "parts")
    check_init(init, scores)
    code = _METHOD_CODES[method]
    factored = code == kernels.ACTIVE_SET
    n = scores.n_examples
    u_offsets = np.asarray(scores.unary_offsets, dtype=np.int64)
    u = np.zeros_like(flat)
    n_active = np.zeros(n, dtype=np.int64)
    lift = np.ones(n)
    n_iter = np.zeros(n, dtype=np.int64)
    gap = np.full(n, np.inf)
    objective = np.zeros(n)
    tau = np.zeros(n)
    converged = np.zeros(n, dtype=bool)
    pool = StructurePool()
    if init is None:
        sets = _ActiveSets(np.full(n, INITIAL_CAPACITY), factored)
    else:
        sets = _warm_start(decoder, scores, init, pool, factored, n_active, lift, u,
                           u_offsets, tau, objective, max_inner)
    for _ in range(max_iter):
        rows = np.flatnonzero(~converged)
        if rows.size == 0:
            break
        sets.make_room(rows, n_active)
        sub, labels = _oracle(decoder, scores, flat, u, u_offsets, rows)
        new_ids = pool.add(decoder, sub, labels)
        del labels
        ptr, idx, val, theta = pool.arrays()
        with threads_for(4 * int((u_offsets[rows + 1] - u_offsets[rows]).sum())):
            if factored:
                kernels.active_set_step(
                    rows, new_ids, sets.slot_ptr, sets.support, sets.weights, n_active,
                    sets.chol_ptr, sets.chol, lift, u, u_offsets, ptr, idx, val, theta, tau,
                    gap, converged, objective, float(tol), max_inner,
                )
            else:
                kernels.frank_wolfe_step(
                    code, rows, new_ids, sets.slot_ptr, sets.support, sets.weights, n_active,
                    lift, u, u_offsets, ptr, idx, val, theta, gap, converged, objective,
                    float(tol),
                )
        n_iter[rows] += 1
        _drop_unused(pool, sets, n_active, final=False)
    _drop_unused(pool, sets, n_active, final=True)
    active = sets.active(n_active)
    support = PoolSupport(decoder, scores, pool, cumulative(n_active), sets.support[active],
                          sets.weights[active], lift)
    return SparseMAPResult(decoder, scores, support, u, n_iter, gap, objective, converged,
                           method)


def _oracle(decoder, scores, flat, u, u_offsets, rows):
    """The scores of examples ``rows`` and their MAP outputs at (η_U − u, η_V)."""
    if rows.size == scores.n_examples:
        sub, adjusted = scores, flat - u
    else:
        sub = scores.take(rows)
        positions = _block_index(u_offsets, rows)
        adjusted = flat[positions] - u[positions]
    return sub, decoder.map(sub.replace(unary=adjusted.reshape(np.shape(sub.unary))))


def _drop_unused(pool, sets, n_active, final):
    """Drop the pooled structures no example uses when they are as many as the used ones
    (always when ``final``), and renumber the active slots."""
    active = sets.active(n_active)
    used = np.unique(sets.support[active])
    if used.shape[0] == pool.n or (not final and pool.n < 2 * used.shape[0] + 1024):
        return
    remap = pool.keep(used)
    sets.support[active] = remap[sets.support[active]]


def _warm_start(decoder, scores, init, pool, factored, n_active, lift, u, u_offsets, tau,
                objective, max_inner):
    """Active sets from an earlier solution's supports, rescored under ``scores``."""
    n = scores.n_examples
    previous = init._support
    sizes = np.diff(previous.ptr)
    start = np.empty(previous.ptr[-1], dtype=np.int64)
    for k in range(int(sizes.max())):
        rows = np.flatnonzero(sizes > k)
        positions = previous.ptr[rows] + k
        batch = scores if rows.size == n else scores.take(rows)
        start[positions] = pool.add(decoder, batch, previous.outputs(positions))
    sets = _ActiveSets(np.maximum(sizes + 2, INITIAL_CAPACITY), factored)
    kernels.warm_start(previous.ptr, start, previous.weights, factored, sets.slot_ptr,
                       sets.support, sets.weights, n_active, sets.chol_ptr, sets.chol, lift,
                       u, u_offsets, *pool.arrays(), tau, objective, max_inner)
    return sets
