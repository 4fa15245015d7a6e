"""The batched LP-SparseMAP / LP-MAP ADMM of :func:`skstruct.decoders._factor_graph.admm.admm_batch` with its whole
iteration loop compiled.

:func:`admm_batch_compiled` runs the algorithm of :mod:`skstruct.decoders._factor_graph.admm` (unscaled copies, the
local problems a_j = (η_i + ρ u_i) / deg_i + λ'_j, w_j = (κ + ρ) / deg_i, consensus
u_i = mean of the copies, λ'_j ← λ'_j − ρ (q_j − u_i) / deg_i, every example with its own
penalty adapted every 10 iterations and its own stopping test) and returns the same
:class:`~skstruct.decoders._factor_graph.admm.BatchADMMResult`, state arrays included (for
:func:`~skstruct.decoders._factor_graph.admm.admm_batch_backward`). Only the loop differs: one compiled function runs
an example's ADMM from its start to its stop (:func:`_solve_one`: every factor solved by
the per-factor solvers of :mod:`skstruct.decoders._factor_graph.linear_kernels` and :mod:`skstruct.decoders._factor_graph.pair_kernels`,
the consensus and multiplier update in the same pass), in parallel over chunks of
examples handed to the threads one at a time
(:func:`~skstruct.utils._parallel.dynamic_schedule`), every chunk with its own scratch
(:func:`_solve_examples`).

Every local problem, solution, mean and multiplier is computed with the operations of
:mod:`skstruct.decoders._factor_graph.admm` in the same order, so the results are those of :func:`~skstruct.decoders._factor_graph.admm.admm_batch`
to the bit.

No Python runs per iteration or per example: on the 159-label fully connected pairwise
graph (12,561 PAIR factors) the loop of :mod:`skstruct.decoders._factor_graph.admm` spends about as long in its Python
bookkeeping as in its kernels (``benchmarks/bench_admm_compiled.py``).

All functions here are compiled with ``cache=True`` and call only the non-parallel
per-factor solvers of the kernel modules (``_qp_factor``, ``_pair_solve``,
``_orout_factor``), never their parallel batch entry points: a cached caller compiles
its callees into itself, so loading it from the cache in a new process needs nothing
else (tested in a fresh and in a warm cache, each in its own process).
"""

import numpy as np
from numba import njit, prange

from ...utils._parallel import dynamic_schedule
from .admm import (
    ADAPT_EVERY,
    RHO_MAX,
    RHO_MIN,
    BatchADMMResult,
    _check_batch_scores,
    _check_options,
    _mean_degree,
)
from .linear_kernels import _qp_factor
from .pair_kernels import _orout_factor, _pair_solve
from .pair_pruning import live_variables

__all__ = ["admm_batch_compiled"]

#: Examples per parallel chunk of :func:`_solve_examples` are chosen so that a chunk holds
#: about this many entries (and at least one example): a chunk then costs far more than
#: taking it from the queue.
ENTRIES_PER_CHUNK = 2048


# ------------------------------------------------------------------ one example, serial

@njit(cache=True, nogil=True)
def _local_problems(eta_k, u_k, lam_k, entry_var, inv_degree, rho, kappa, a_k, w_k):
    """a_j and w_j of every entry (template order) of one example."""
    weight = kappa + rho
    for j in range(entry_var.shape[0]):
        i = entry_var[j]
        a_k[j] = (eta_k[i] + rho * u_k[i]) * inv_degree[i] + lam_k[j]
        w_k[j] = weight * inv_degree[i]


@njit(cache=True, nogil=True)
def _solve_one(k, eta_u, eta_pair, entry_var, inv_degree, lin_offsets, lin_kind, lin_coef,
               lin_bound, lin_negated, orout_offsets, kappa, max_iter, tol, adapt,
               rho_min, rho_max, u, lam, rho, a_k, w_k, q_k, v, n_iter, primal, dual,
               converged, total, state, role, keys):
    """Run example k's ADMM from (u[k], lam[k], rho[k]) to its stop; write its final state
    into row k of u, lam, rho, v, its local problems and solutions into ``a_k``, ``w_k``,
    ``q_k`` (n_entries,: row k of the batch's state, or the caller's scratch when the
    state is not kept) and its n_iter, residuals and convergence.

    ``total`` (n_vars,), ``state`` (4, longest linear factor), ``role`` and ``keys``
    (longest OROut factor): the caller's scratch.
    """
    eta_k = eta_u[k]
    s_k = eta_pair[k]
    u_k = u[k]
    lam_k = lam[k]
    v_k = v[k]
    n_vars = u_k.shape[0]
    n_entries = entry_var.shape[0]
    n_lin = lin_offsets.shape[0] - 1
    n_lin_entries = lin_offsets[n_lin]
    n_pair = s_k.shape[0]
    pair_start = n_lin_entries
    orout_start = pair_start + 2 * n_pair
    n_orout = orout_offsets.shape[0] - 1
    r_k = rho[k]
    it = 0
    while True:
        it += 1
        _local_problems(eta_k, u_k, lam_k, entry_var, inv_degree, r_k, kappa, a_k, w_k)
        for f in range(n_lin):
            _qp_factor(a_k, w_k, lin_coef, lin_negated, lin_kind[f], lin_bound, q_k, f,
                       lin_offsets[f], lin_offsets[f + 1], state)
        for f in range(n_pair):
            j = pair_start + 2 * f
            u1, u2, vf = _pair_solve(a_k[j], a_k[j + 1], w_k[j], w_k[j + 1], s_k[f])
            q_k[j] = u1
            q_k[j + 1] = u2
            v_k[f] = vf
        for f in range(n_orout):
            _orout_factor(a_k, w_k, orout_start + orout_offsets[f],
                          orout_start + orout_offsets[f + 1], q_k, 0, role, keys)
        # consensus and multipliers, in the order of _admm._consensus_one
        for i in range(n_vars):
            total[i] = 0.0
        for j in range(n_entries):
            total[entry_var[j]] += q_k[j]
        change = 0.0
        for i in range(n_vars):
            if inv_degree[i] > 0.0:
                new = total[i] * inv_degree[i]
                change += (new - u_k[i]) ** 2
                u_k[i] = new
        gap = 0.0
        for j in range(n_entries):
            i = entry_var[j]
            r = q_k[j] - u_k[i]
            step = r * inv_degree[i]
            gap += r * step
            lam_k[j] -= r_k * step
        p = np.sqrt(gap)
        d = np.sqrt(change)
        last = it >= max_iter
        ok = p < tol and d < tol
        if ok or last:
            n_iter[k] = it
            primal[k] = p
            dual[k] = d
            converged[k] = ok
            rho[k] = r_k
            return
        if adapt and it % ADAPT_EVERY == 0:
            if p > 100.0 * d:
                r_k = min(2.0 * r_k, rho_max)
            elif d > 10.0 * p:
                r_k = max(0.5 * r_k, rho_min)


@njit(inline="always")
def _pair_at_corner(a1, a2, s):
    """Whether :func:`~skstruct.decoders._factor_graph.pair_kernels._pair_solve` returns
    exactly (0, 0, 0) at (a1, a2, s) whatever the weights w1, w2 > 0, by signs alone.

    s ≥ 0: a1 ≤ 0, a2 ≤ 0 and a1 + a2 + s ≤ 0 (the numerators of lo_1, lo_2 and t, summed
    as ``_pair_arguments`` sums them) make lo_1 = lo_2 = t = 0 after clipping, so both
    medians are 0 and v = min(u_1, u_2) = 0. s < 0: a1 ≤ 0 and a2 ≤ 0 make hi_1 = hi_2 = 0,
    so both medians are 0 and v = max(0, −1) = 0. Every condition is monotone: it still
    holds at any (a1', a2') ≤ (a1, a2).
    """
    if a1 > 0.0 or a2 > 0.0:
        return False
    return s < 0.0 or a1 + a2 + s <= 0.0


@njit(cache=True, nogil=True)
def _solve_one_pairs(k, eta_u, eta_pair, entry_var, inv_degree, kappa, max_iter, tol,
                     adapt, rho_min, rho_max, u, lam, rho, a_k, w_k, q_k, keep, v, n_iter,
                     primal, dual, converged, total, corner, dead):
    """:func:`_solve_one` on a graph of PAIR factors only (entries 2f, 2f + 1 of factor
    f): the local problems, the factor solutions and the sums of the consensus in one
    pass over the factors, the multipliers in a second, with the same operations in the
    same order (the same result to the bit). ``keep``: write the local problems a_k and
    w_k (the backward pass reads them; else they are not stored).

    *Factors at the all-off corner are skipped, exactly.* ``corner[f]`` (scratch,
    n_pair) records that factor f's last local problem passed
    :func:`_pair_at_corner`, so its solution was exactly (0, 0, 0); ``dead[i]`` (scratch,
    n_vars) that u_i = 0 exactly at the end of the last iteration. A factor with
    ``corner[f]`` whose two variables are dead is not solved: since it was solved, its
    copies were 0 and so were the consensus values of its variables at every iteration
    (they were dead), so its multiplier steps ρ (q_j − u_i) / deg_i were exactly 0 and
    its local scores a_j = (η_i + ρ u_i) / deg_i + λ'_j can only have decreased (u_i was
    ≥ 0 when it was solved and is 0 now); the corner test is monotone and independent of
    the weights w (ρ may have changed), so solving it would return (0, 0, 0) again. Its
    copies add 0 to the consensus sums and its multipliers change only where the
    consensus of one of its variables has become nonzero (q_j − u_i = −u_i), which the
    second pass applies. Every stored value is therefore the one the full iteration
    computes, to the bit, and an iteration costs O(factors with a live variable): with
    few labels on per example, a small part of the pairs. Not used when ``keep`` (the
    skipped factors' local problems would not be written).
    """
    eta_k = eta_u[k]
    s_k = eta_pair[k]
    u_k = u[k]
    lam_k = lam[k]
    v_k = v[k]
    n_vars = u_k.shape[0]
    n_pair = s_k.shape[0]
    r_k = rho[k]
    skip = not keep
    for f in range(n_pair):
        corner[f] = False
    it = 0
    while True:
        it += 1
        weight = kappa + r_k
        for i in range(n_vars):
            total[i] = 0.0
            dead[i] = u_k[i] == 0.0
        for f in range(n_pair):
            j = 2 * f
            i1 = entry_var[j]
            i2 = entry_var[j + 1]
            if skip and corner[f] and dead[i1] and dead[i2]:
                continue
            d1 = inv_degree[i1]
            d2 = inv_degree[i2]
            a1 = (eta_k[i1] + r_k * u_k[i1]) * d1 + lam_k[j]
            a2 = (eta_k[i2] + r_k * u_k[i2]) * d2 + lam_k[j + 1]
            w1 = weight * d1
            w2 = weight * d2
            u1, u2, vf = _pair_solve(a1, a2, w1, w2, s_k[f])
            if keep:
                a_k[j] = a1
                a_k[j + 1] = a2
                w_k[j] = w1
                w_k[j + 1] = w2
            corner[f] = skip and _pair_at_corner(a1, a2, s_k[f])
            q_k[j] = u1
            q_k[j + 1] = u2
            v_k[f] = vf
            total[i1] += u1
            total[i2] += u2
        change = 0.0
        for i in range(n_vars):
            if inv_degree[i] > 0.0:
                new = total[i] * inv_degree[i]
                change += (new - u_k[i]) ** 2
                u_k[i] = new
        gap = 0.0
        for f in range(n_pair):
            for j in range(2 * f, 2 * f + 2):
                i = entry_var[j]
                if corner[f]:
                    # q_j = 0 (solved or skipped): only a nonzero consensus moves λ'_j
                    if u_k[i] == 0.0:
                        continue
                    r = 0.0 - u_k[i]
                else:
                    r = q_k[j] - u_k[i]
                step = r * inv_degree[i]
                gap += r * step
                lam_k[j] -= r_k * step
        p = np.sqrt(gap)
        d = np.sqrt(change)
        last = it >= max_iter
        ok = p < tol and d < tol
        if ok or last:
            n_iter[k] = it
            primal[k] = p
            dual[k] = d
            converged[k] = ok
            rho[k] = r_k
            return
        if adapt and it % ADAPT_EVERY == 0:
            if p > 100.0 * d:
                r_k = min(2.0 * r_k, rho_max)
            elif d > 10.0 * p:
                r_k = max(0.5 * r_k, rho_min)


@njit(cache=True, nogil=True)
def _live_factors(names, entry_var, adj_offsets, adj_entry, live, s_k, out):
    """The PAIR factors with both variables live and a nonzero score, counted (and
    written into ``out`` when it has room), each once: at the variable of its first
    entry.

    A factor whose score is exactly zero leaves u* as it is: its v_f is absent from the
    objective, and for every (u_i, u_j) in the box some v_f (u_i u_j, say) satisfies its
    marginalization constraints. So it is left out of the solve."""
    count = 0
    for i in names:
        for e in range(adj_offsets[i], adj_offsets[i + 1]):
            j = adj_entry[e]
            if j % 2 == 0 and live[entry_var[j + 1]] and s_k[j // 2] != 0.0:
                if out.shape[0]:
                    out[count] = j // 2
                count += 1
    return count


@njit(cache=True, nogil=True)
def _solve_one_live(k, eta_u, eta_pair, entry_var, degree, adj_offsets, adj_entry, kappa,
                    max_iter, tol, adapt, rho0, cold, u, lam, rho, v, n_iter, primal, dual,
                    converged, bound, live, queue, local):
    """:func:`_solve_one_pairs` on example k's live variables alone (:mod:`.pair_pruning`):
    the variables that are off at the optimum are peeled off exactly, their u, their
    factors' v and multipliers set to 0, and the ADMM runs on the graph the others induce
    without its factors of score zero (:func:`_live_factors`; their v_f = u_i u_j, a
    maximizer), with its own degrees and penalty ``rho0`` × its mean degree from the cold
    start. A live variable without such a factor takes its closed form. ``cold``: start from
    u = 1/2, λ' = 0; else from row k of u, λ' (re-centred to sum 0 over every
    variable's live copies, as the consensus keeps them) and ρ.

    Same optimum as the whole graph's ADMM (LP-SparseMAP: the same u, to the tolerance;
    LP-MAP: an optimum of the same LP), in O(n_entries) for the peeling plus the
    iterations on the live part. ``bound``, ``live``, ``queue``, ``local`` (n_vars,):
    scratch.
    """
    eta_k = eta_u[k]
    s_k = eta_pair[k]
    n_vars = eta_k.shape[0]
    n_live = live_variables(eta_k, s_k, entry_var, degree, adj_offsets, adj_entry, bound,
                            live, queue)
    names = np.empty(n_live, dtype=np.int64)
    m = 0
    for i in range(n_vars):
        local[i] = -1
        if live[i]:
            local[i] = m
            names[m] = i
            m += 1
    n_factors = _live_factors(names, entry_var, adj_offsets, adj_entry, live, s_k,
                              np.empty(0, dtype=np.int64))
    factors = np.empty(n_factors, dtype=np.int64)
    _live_factors(names, entry_var, adj_offsets, adj_entry, live, s_k, factors)
    live_var = np.empty(2 * n_factors, dtype=np.int64)
    live_degree = np.zeros(n_live)
    s_live = np.empty((1, n_factors))
    for g in range(n_factors):
        f = factors[g]
        for t in range(2):
            a = local[entry_var[2 * f + t]]
            live_var[2 * g + t] = a
            live_degree[a] += 1.0
        s_live[0, g] = s_k[f]
    inv_degree = np.zeros(n_live)
    used = 0
    for a in range(n_live):
        if live_degree[a] > 0.0:
            inv_degree[a] = 1.0 / live_degree[a]
            used += 1
    eta_live = np.empty((1, n_live))
    u_live = np.empty((1, n_live))
    for a in range(n_live):
        eta_live[0, a] = eta_k[names[a]]
        if live_degree[a] == 0.0:
            eta = eta_k[names[a]]
            u_live[0, a] = (min(max(eta, 0.0), 1.0) if kappa > 0.0
                            else (1.0 if eta > 0.0 else 0.0))
        else:
            u_live[0, a] = 0.5 if cold else u[k, names[a]]
    lam_live = np.zeros((1, 2 * n_factors))
    if not cold:
        for g in range(n_factors):
            for t in range(2):
                lam_live[0, 2 * g + t] = lam[k, 2 * factors[g] + t]
        centre = np.zeros(n_live)
        for j in range(2 * n_factors):
            centre[live_var[j]] += lam_live[0, j]
        for j in range(2 * n_factors):
            lam_live[0, j] -= centre[live_var[j]] * inv_degree[live_var[j]]
    scale = 2.0 * n_factors / used if used else 1.0
    rho_min, rho_max = RHO_MIN * scale, RHO_MAX * scale
    rho_live = np.empty(1)
    rho_live[0] = rho0 * scale if cold else min(max(rho[k], rho_min), rho_max)
    v_live = np.zeros((1, n_factors))
    n_iter_live = np.zeros(1, dtype=np.int64)
    primal_live = np.zeros(1)
    dual_live = np.zeros(1)
    converged_live = np.ones(1, dtype=np.bool_)
    if n_factors:
        q_live = np.empty(2 * n_factors)
        _solve_one_pairs(0, eta_live, s_live, live_var, inv_degree, kappa, max_iter, tol,
                         adapt, rho_min, rho_max, u_live, lam_live, rho_live, q_live,
                         q_live, q_live, False, v_live, n_iter_live, primal_live,
                         dual_live, converged_live, np.empty(n_live),
                         np.empty(n_factors, dtype=np.bool_),
                         np.empty(n_live, dtype=np.bool_))
    u_k = u[k]
    lam_k = lam[k]
    v_k = v[k]
    u_k[:] = 0.0
    lam_k[:] = 0.0
    v_k[:] = 0.0
    for a in range(n_live):
        u_k[names[a]] = u_live[0, a]
    for a in range(n_live):
        i = names[a]
        for e in range(adj_offsets[i], adj_offsets[i + 1]):
            j = adj_entry[e]
            if j % 2 == 0 and live[entry_var[j + 1]] and s_k[j // 2] == 0.0:
                v_k[j // 2] = u_k[i] * u_k[entry_var[j + 1]]
    for g in range(n_factors):
        f = factors[g]
        v_k[f] = v_live[0, g]
        lam_k[2 * f] = lam_live[0, 2 * g]
        lam_k[2 * f + 1] = lam_live[0, 2 * g + 1]
    n_iter[k] = n_iter_live[0]
    primal[k] = primal_live[0]
    dual[k] = dual_live[0]
    converged[k] = converged_live[0]
    rho[k] = rho_live[0]


@njit(cache=True, nogil=True)
def _longest(offsets):
    longest = 0
    for f in range(offsets.shape[0] - 1):
        longest = max(longest, offsets[f + 1] - offsets[f])
    return longest


@njit(cache=True, nogil=True)
def _solve_chunk(first, last, order, eta_u, eta_pair, entry_var, inv_degree, lin_offsets,
                 lin_kind, lin_coef, lin_bound, lin_negated, orout_offsets, kappa,
                 max_iter, tol, adapt, rho_min, rho_max, u, lam, rho, a, w, q, v, n_iter,
                 primal, dual, converged, prune, cold, rho0, degree, adj_offsets,
                 adj_entry):
    """Examples order[first..last − 1], one after the other, with one scratch.

    When ``a`` has no rows (the state is not kept), the local problems and solutions of
    every example live in three scratch rows of the chunk. ``prune`` (graphs of PAIR
    factors only, state not kept): solve every example on its live variables
    (:func:`_solve_one_live`).
    """
    total = np.empty(u.shape[1])
    state = np.empty((4, _longest(lin_offsets)))
    longest_orout = _longest(orout_offsets)
    role = np.empty(longest_orout, dtype=np.int8)
    keys = np.empty(longest_orout)
    keep = a.shape[0] > 0
    n_entries = entry_var.shape[0]
    scratch = np.empty((0 if keep else 3, n_entries))
    pairs_only = (lin_offsets.shape[0] == 1 and orout_offsets.shape[0] <= 1
                  and n_entries == 2 * v.shape[1])
    corner = np.empty(v.shape[1] if pairs_only else 0, dtype=np.bool_)
    dead = np.empty(u.shape[1] if pairs_only else 0, dtype=np.bool_)
    live = pairs_only and prune and not keep
    n_scratch = u.shape[1] if live else 0
    bound = np.empty(n_scratch)
    is_live = np.empty(n_scratch, dtype=np.bool_)
    queue = np.empty(n_scratch, dtype=np.int64)
    local = np.empty(n_scratch, dtype=np.int64)
    for t in range(first, last):
        k = order[t]
        if live:
            _solve_one_live(k, eta_u, eta_pair, entry_var, degree, adj_offsets, adj_entry,
                            kappa, max_iter, tol, adapt, rho0, cold, u, lam, rho, v,
                            n_iter, primal, dual, converged, bound, is_live, queue, local)
            continue
        if keep:
            a_k, w_k, q_k = a[k], w[k], q[k]
        else:
            a_k, w_k, q_k = scratch[0], scratch[1], scratch[2]
        if pairs_only:
            _solve_one_pairs(k, eta_u, eta_pair, entry_var, inv_degree, kappa, max_iter,
                             tol, adapt, rho_min, rho_max, u, lam, rho, a_k, w_k, q_k,
                             keep, v, n_iter, primal, dual, converged, total, corner,
                             dead)
            continue
        _solve_one(k, eta_u, eta_pair, entry_var, inv_degree, lin_offsets, lin_kind,
                   lin_coef, lin_bound, lin_negated, orout_offsets, kappa, max_iter, tol,
                   adapt, rho_min, rho_max, u, lam, rho, a_k, w_k, q_k, v, n_iter, primal,
                   dual, converged, total, state, role, keys)


@njit(cache=True, nogil=True, parallel=True)
def _solve_examples(bounds, order, eta_u, eta_pair, entry_var, inv_degree, lin_offsets,
                    lin_kind, lin_coef, lin_bound, lin_negated, orout_offsets, kappa,
                    max_iter, tol, adapt, rho_min, rho_max, u, lam, rho, a, w, q, v, n_iter,
                    primal, dual, converged, prune, cold, rho0, degree, adj_offsets,
                    adj_entry):
    """The ADMM (:func:`_solve_one`) of examples ``order``, in parallel over the chunks
    ``order[bounds[c]:bounds[c + 1]]``."""
    for c in prange(bounds.shape[0] - 1):
        _solve_chunk(bounds[c], bounds[c + 1], order, eta_u, eta_pair, entry_var, inv_degree,
                     lin_offsets, lin_kind, lin_coef, lin_bound, lin_negated,
                     orout_offsets, kappa, max_iter, tol, adapt, rho_min, rho_max, u, lam,
                     rho, a, w, q, v, n_iter, primal, dual, converged, prune, cold, rho0,
                     degree, adj_offsets, adj_entry)


# ------------------------------------------------------------------ driver

def _even_bounds(n, per_chunk):
    """Bounds of ceil(n / per_chunk) chunks of 0..n − 1 of near-equal sizes (none if
    n = 0)."""
    n_chunks = -(-n // per_chunk) if n else 0
    return (n * np.arange(n_chunks + 1, dtype=np.int64)) // max(n_chunks, 1)


def admm_batch_compiled(graph, eta_u, eta_pair, *, max_iter=1000, tol=1e-6, rho=1.0,
                        adapt=True, warm_start=None, map_mode=False, keep_state=True,
                        retry_cold=False, prune=False):
    """:func:`~skstruct.decoders._factor_graph.admm.admm_batch` with the iteration loop compiled (module docstring).

    Solve LP-SparseMAP (or LP-MAP) of many examples on one graph structure by ADMM, every
    example with its own penalty ρ (adapted every 10 iterations on its own residuals) and
    stopping test. Same arguments, same result.

    Parameters
    ----------
    graph : FlatFactorGraph
        The template (linear-constraint, PAIR and OROut factors).
    eta_u : array-like of shape (n_examples, n_vars)
        Unary scores.
    eta_pair : array-like of shape (n_examples, n_pair)
        PAIR coupling scores.
    max_iter : int, default=1000
    tol : float, default=1e-6
        An example stops when its primal and dual residuals are both below it (0: run
        max_iter).
    rho : float, default=1.0
        Initial penalty per copy: ρ starts at rho × mean degree. Ignored when
        warm-starting.
    adapt : bool, default=True
        Adapt every example's ρ every 10 iterations.
    warm_start : BatchADMMResult, optional
        Start from its u, multipliers and ρ (same template and number of examples).
    map_mode : bool, default=False
        Solve LP-MAP (no ½‖u‖² term) instead of LP-SparseMAP.
    keep_state : bool, default=True
        Return the final local problems and solutions a, w, q and the scores s (what
        :func:`~skstruct.decoders._factor_graph.admm.admm_batch_backward` reads). When
        False they are returned with no columns and every parallel chunk of examples
        solves in three scratch rows instead: three n_examples × n_entries arrays fewer
        (u, λ' and ρ, all a warm start reads, are returned either way). Same u, v, λ'.
    retry_cold : bool, default=False
        With a ``warm_start``: solve the examples that did not converge from it again
        from the cold start, in place (their iteration counts add up), as if the hint
        had not been given them. No second batch of arrays is allocated.
    prune : bool, default=False
        On a graph of PAIR factors only, with ``keep_state=False``: solve every example
        on the variables that are not provably off at the optimum
        (:mod:`~skstruct.decoders._factor_graph.pair_pruning`), the others' u and v
        exactly 0. The same LP-SparseMAP solution (to the tolerance) and an LP-MAP
        optimum, at the cost of the live part; the iterates, ρ and multipliers are those
        of the smaller problem (not the whole graph's to the bit). Ignored elsewhere.

    Returns
    -------
    BatchADMMResult
        u (n_examples, n_vars), v (n_examples, n_pair), n_iter, residuals, converged,
        rho (n_examples,), integral (map_mode), and the final λ', a, w, q
        (n_examples, n_entries) in template entry order.
    """
    max_iter = _check_options(graph, max_iter, tol, rho)
    eta_u, eta_pair = _check_batch_scores(graph, eta_u, eta_pair)
    n = eta_u.shape[0]
    n_vars, n_entries, n_pair = graph.n_vars, graph.n_entries, graph.n_pair
    if warm_start is not None:
        if not isinstance(warm_start, BatchADMMResult):
            raise TypeError("warm_start must be a BatchADMMResult.")
        if (warm_start.u.shape != (n, n_vars)
                or warm_start.lam.shape != (n, n_entries)):
            raise ValueError("warm_start does not match the graph and the number of "
                             "examples.")
        u = np.array(warm_start.u, dtype=np.float64, order="C")
        lam = np.array(warm_start.lam, dtype=np.float64, order="C")
        rho_out = np.array(warm_start.rho, dtype=np.float64)
    else:
        u = np.full((n, n_vars), 0.5)
        lam = np.zeros((n, n_entries))
        rho_out = np.full(n, float(rho) * _mean_degree(graph))
    kappa = 0.0 if map_mode else 1.0
    degree = graph.degree
    alone = degree == 0
    inv_degree = np.zeros(n_vars)
    inv_degree[~alone] = 1.0 / degree[~alone]
    scale = _mean_degree(graph)
    rows = n if keep_state else 0
    a, w, q = (np.zeros((rows, n_entries)) for _ in range(3))
    v = np.zeros((n, n_pair))
    n_iter = np.zeros(n, dtype=np.int64)
    primal = np.zeros(n)
    dual = np.zeros(n)
    converged = np.zeros(n, dtype=bool)
    if n_entries and n:
        common = (graph.lin_offsets, graph.lin_kind, graph.lin_coef, graph.lin_bound,
                  graph.lin_negated)
        options = (kappa, max_iter, float(tol), bool(adapt), RHO_MIN * scale,
                   RHO_MAX * scale)
        outputs = (u, lam, rho_out, a, w, q, v, n_iter, primal, dual, converged)
        pruning = (bool(prune), warm_start is None, float(rho), degree,
                   *graph.pair_adjacency)
        per_chunk = max(1, ENTRIES_PER_CHUNK // n_entries)
        order = np.arange(n, dtype=np.int64)
        with dynamic_schedule():
            _solve_examples(_even_bounds(n, per_chunk), order, eta_u, eta_pair,
                            graph.entry_var, inv_degree, *common, graph.orout_offsets,
                            *options, *outputs, *pruning)
        stuck = (np.flatnonzero(~converged) if retry_cold and warm_start is not None
                 else order[:0])
        if stuck.size:
            warm_iter = n_iter[stuck]
            u[stuck] = 0.5
            lam[stuck] = 0.0
            rho_out[stuck] = float(rho) * scale
            with dynamic_schedule():
                _solve_examples(_even_bounds(stuck.size, per_chunk), stuck, eta_u,
                                eta_pair, graph.entry_var, inv_degree, *common,
                                graph.orout_offsets, *options, *outputs, pruning[0], True,
                                *pruning[2:])
            n_iter[stuck] += warm_iter
    else:
        converged[:] = True
    eta_alone = eta_u[:, alone]
    if map_mode:
        u[:, alone] = (eta_alone > 0).astype(np.float64)
    else:
        u[:, alone] = np.clip(eta_alone, 0.0, 1.0)
    integral = None
    if map_mode:
        integral = np.all(np.minimum(np.abs(u), np.abs(1.0 - u)) <= 1e-6, axis=1)
    return BatchADMMResult(u=u, v=v, n_iter=n_iter, primal_residual=primal,
                           dual_residual=dual, converged=converged, rho=rho_out,
                           map_mode=bool(map_mode), integral=integral, lam=lam, a=a, w=w,
                           q=q, s=eta_pair.copy() if keep_state else np.zeros((n, 0)))
