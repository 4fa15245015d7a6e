"""Compiled steps of the SparseMAP solvers, batched over examples.

Every structure seen by the solver lives in a *pool*: its unary indicator vector m_s as
sorted sparse entries (``pool_idx[pool_ptr[s]:pool_ptr[s + 1]]``, ``pool_val[...]``; an
empty ``pool_val`` means that every value is 1, as for indicator vectors; local
to its example's unary block) and its score θ_s. Example ``e`` keeps ``n_active[e]``
active structures in its own slots ``support[slot_ptr[e]:slot_ptr[e + 1]]`` (the first
``n_active[e]`` are used) with weights in the same positions of ``weights``; its unary
marginals u = Σ_k weights[k] m_k are stored densely in ``u[u_offsets[e]:u_offsets[e + 1]]``.
Storage is ragged: example ``e`` has capacity c_e = slot_ptr[e + 1] − slot_ptr[e] and its
Cholesky factor is the c_e × c_e block ``chol[chol_ptr[e]:chol_ptr[e + 1]]`` (row-major), so
memory follows Σ_e c_e², not n_examples × (max_e c_e)²; :func:`repack` moves the blocks of
examples whose support outgrew them into larger ones.

The active-set method keeps a Cholesky factor ``chol[e]`` of the Gram matrix of the
*lifted* vectors m̃_s = [m_s; ρ]: G̃ = M_IᵀM_I + ρ² 11ᵀ. On the simplex the extra term is
the constant ρ²/2, so the equality-constrained QP is unchanged (its multiplier shifts by
ρ²), and G̃ is singular exactly when the active m_s are *affinely* dependent — the
degeneracy that transition scores cause. A new structure that is affinely dependent on
the active ones is brought in by an exchange step along the null direction (the quadratic
term is flat there, the linear term rises), which keeps the factored set independent.
"""

import numpy as np
from numba import njit, prange

#: The lift ρ² of an example (see the module docstring) is the squared norm of its first
#: structure's unary vector (1 if that is zero), so that the factor, the dependence test
#: and the stopping test do not depend on the scale of the part vectors.
#: A new lifted vector whose component orthogonal to the active ones has squared norm
#: below this fraction of its own squared norm counts as affinely dependent.
DEPENDENCE_TOL = 1e-9

#: Gaps below this (relative to max(ρ², |τ|)) are rounding: a solver at the optimum may
#: find a structure that "improves" by a few ulps, so tol=0 must still stop.
ROUNDING = 1e-13

ACTIVE_SET, VANILLA_FW, AWAY_FW, PAIRWISE_FW = 0, 1, 2, 3


@njit(cache=True, nogil=True, inline="always")
def _value(pool_val, p):
    """Entry ``p``'s value: 1 when the pool stores indicator vectors (no values)."""
    return pool_val[p] if pool_val.shape[0] > 0 else 1.0


@njit(cache=True, nogil=True)
def _lift(pool_ptr, pool_idx, pool_val, s):
    """ρ² for an example whose first structure is ``s``."""
    norm = _gram(pool_ptr, pool_idx, pool_val, s, s, 0.0)
    return norm if norm > 0.0 else 1.0


@njit(cache=True, nogil=True)
def _gram(pool_ptr, pool_idx, pool_val, a, b, lift):
    """⟨m̃_a, m̃_b⟩ = ⟨m_a, m_b⟩ + ρ², by merging the two sorted index lists."""
    i, i_end = pool_ptr[a], pool_ptr[a + 1]
    j, j_end = pool_ptr[b], pool_ptr[b + 1]
    total = 0.0
    while i < i_end and j < j_end:
        if pool_idx[i] == pool_idx[j]:
            total += _value(pool_val, i) * _value(pool_val, j)
            i += 1
            j += 1
        elif pool_idx[i] < pool_idx[j]:
            i += 1
        else:
            j += 1
    return total + lift


@njit(cache=True, nogil=True)
def _same_structure(pool_ptr, pool_idx, pool_val, pool_theta, a, b):
    """Whether structures ``a`` and ``b`` have equal unary vectors and scores."""
    if pool_theta[a] != pool_theta[b]:
        return False
    length = pool_ptr[a + 1] - pool_ptr[a]
    if pool_ptr[b + 1] - pool_ptr[b] != length:
        return False
    for q in range(length):
        if (pool_idx[pool_ptr[a] + q] != pool_idx[pool_ptr[b] + q]
                or _value(pool_val, pool_ptr[a] + q) != _value(pool_val, pool_ptr[b] + q)):
            return False
    return True


@njit(cache=True, nogil=True)
def _dot_dense(pool_ptr, pool_idx, pool_val, s, dense, base):
    """⟨m_s, dense[base:]⟩."""
    total = 0.0
    for p in range(pool_ptr[s], pool_ptr[s + 1]):
        total += _value(pool_val, p) * dense[base + pool_idx[p]]
    return total


@njit(cache=True, nogil=True)
def _forward(chol, k, rhs, out):
    for i in range(k):
        acc = rhs[i]
        for j in range(i):
            acc -= chol[i, j] * out[j]
        out[i] = acc / chol[i, i]


@njit(cache=True, nogil=True)
def _backward(chol, k, rhs, out):
    for i in range(k - 1, -1, -1):
        acc = rhs[i]
        for j in range(i + 1, k):
            acc -= chol[j, i] * out[j]
        out[i] = acc / chol[i, i]


@njit(cache=True, nogil=True)
def _solve(chol, k, rhs, out):
    """out = G̃⁻¹ rhs from the factor."""
    work = np.empty(k)
    _forward(chol, k, rhs, work)
    _backward(chol, k, work, out)


@njit(cache=True, nogil=True)
def _solve_kkt(chol, k, theta, y_hat, lift):
    """Solve G y + τ 1 = θ, 1ᵀy = 1 on the active set; returns τ (for the unlifted G)."""
    a = np.empty(k)
    b = np.empty(k)
    _solve(chol, k, theta, a)
    _solve(chol, k, np.ones(k), b)
    shift = (a.sum() - 1.0) / b.sum()
    for i in range(k):
        y_hat[i] = a[i] - shift * b[i]
    return shift + lift


@njit(cache=True, nogil=True)
def _remove_slot(chol, support, weights, k, r):
    """Delete active slot ``r`` of ``k``: shift the slots and re-triangularize the factor."""
    for i in range(r, k - 1):
        support[i] = support[i + 1]
        weights[i] = weights[i + 1]
        for j in range(k):
            chol[i, j] = chol[i + 1, j]
    for j in range(r, k - 1):
        a, b = chol[j, j], chol[j, j + 1]
        h = np.hypot(a, b)
        c, s = a / h, b / h
        for i in range(j, k - 1):
            x, z = chol[i, j], chol[i, j + 1]
            chol[i, j] = c * x + s * z
            chol[i, j + 1] = -s * x + c * z
    for j in range(k):
        chol[k - 1, j] = 0.0
        chol[j, k - 1] = 0.0
    support[k - 1] = -1
    weights[k - 1] = 0.0


@njit(cache=True, nogil=True)
def _try_append(chol, support, k, s, pool_ptr, pool_idx, pool_val, coef, lift):
    """Append structure ``s`` to the factor if affinely independent of the ``k`` active.

    Returns True when appended; otherwise leaves the factor alone and writes into ``coef``
    the coefficients c with m̃_s = Σ_j c_j m̃_j (they sum to one).
    """
    column = np.empty(k)
    for j in range(k):
        column[j] = _gram(pool_ptr, pool_idx, pool_val, support[j], s, lift)
    diag = _gram(pool_ptr, pool_idx, pool_val, s, s, lift)
    row = np.empty(k)
    _forward(chol, k, column, row)
    residual = diag
    for j in range(k):
        residual -= row[j] * row[j]
    if residual > DEPENDENCE_TOL * diag:
        for j in range(k):
            chol[k, j] = row[j]
        chol[k, k] = np.sqrt(residual)
        support[k] = s
        return True
    _backward(chol, k, row, coef)
    return False


@njit(cache=True, nogil=True)
def _add_structure(chol, support, weights, k, s, pool_ptr, pool_idx, pool_val, lift):
    """Bring ``s`` into the active set (weight 0, or by an exchange step when dependent).

    Returns the new number of active structures, or -1 when ``s`` cannot improve the
    objective (dependent, with no weight to move).
    """
    if k == 0:
        chol[0, 0] = np.sqrt(_gram(pool_ptr, pool_idx, pool_val, s, s, lift))
        support[0] = s
        weights[0] = 1.0
        return 1
    coef = np.empty(k)
    if _try_append(chol, support, k, s, pool_ptr, pool_idx, pool_val, coef, lift):
        weights[k] = 0.0
        return k + 1
    # Exchange: move along e_s − c, on which M y and 1ᵀy are constant, until a weight
    # with c_j > 0 reaches zero; that structure leaves and s enters.
    step, leaving = np.inf, -1
    for j in range(k):
        if coef[j] > 1e-12:
            ratio = weights[j] / coef[j]
            if ratio < step:
                step, leaving = ratio, j
    if leaving < 0:
        return -1
    for j in range(k):
        weights[j] = max(weights[j] - step * coef[j], 0.0)
    _remove_slot(chol, support, weights, k, leaving)
    k -= 1
    if not _try_append(chol, support, k, s, pool_ptr, pool_idx, pool_val, coef, lift):
        return -1
    weights[k] = step
    return k + 1


@njit(cache=True, nogil=True)
def _stabilize(chol, support, weights, k, pool_theta, max_inner, lift):
    """Minor iterations: solve the KKT system on the active set, line search toward its
    solution and drop the structures whose weight reaches zero, until the solution is
    feasible. Returns (k, τ)."""
    y_hat = np.empty(k)
    theta = np.empty(k)
    tau = 0.0
    for _ in range(max_inner):
        for j in range(k):
            theta[j] = pool_theta[support[j]]
        tau = _solve_kkt(chol, k, theta[:k], y_hat[:k], lift)
        feasible = True
        for j in range(k):
            if y_hat[j] < 0.0:
                feasible = False
        if feasible:
            for j in range(k):
                weights[j] = y_hat[j]
            # A structure at exactly zero weight leaves; the others' solution is the same.
            for j in range(k - 1, -1, -1):
                if weights[j] <= 0.0 and k > 1:
                    _remove_slot(chol, support, weights, k, j)
                    k -= 1
            break
        step, blocking = 1.0, -1
        for j in range(k):
            if y_hat[j] < weights[j]:
                ratio = weights[j] / (weights[j] - y_hat[j])
                if ratio < step:
                    step, blocking = ratio, j
        for j in range(k):
            weights[j] = (1.0 - step) * weights[j] + step * y_hat[j]
        if blocking >= 0:
            weights[blocking] = 0.0
        for j in range(k - 1, -1, -1):
            if weights[j] <= 0.0 and k > 1:
                _remove_slot(chol, support, weights, k, j)
                k -= 1
    return k, tau


@njit(cache=True, nogil=True)
def _write_unary(u, base, size, support, weights, k, pool_ptr, pool_idx, pool_val):
    for p in range(base, base + size):
        u[p] = 0.0
    for j in range(k):
        s = support[j]
        for p in range(pool_ptr[s], pool_ptr[s + 1]):
            u[base + pool_idx[p]] += weights[j] * _value(pool_val, p)


@njit(cache=True, nogil=True)
def _objective(u, base, size, support, weights, k, pool_theta):
    value = 0.0
    for j in range(k):
        value += weights[j] * pool_theta[support[j]]
    for p in range(base, base + size):
        value -= 0.5 * u[p] * u[p]
    return value


@njit(cache=True, nogil=True)
def _slots(slot_ptr, e):
    return slot_ptr[e], slot_ptr[e + 1]


@njit(cache=True, nogil=True)
def _factor_of(chol, chol_ptr, slot_ptr, e):
    """Example ``e``'s c_e × c_e factor block, as a view."""
    capacity = slot_ptr[e + 1] - slot_ptr[e]
    return chol[chol_ptr[e]:chol_ptr[e + 1]].reshape((capacity, capacity))


@njit(cache=True, nogil=True)
def major_iteration(e, s, slots, slot_weights, factor, n_active, lift, u, base, size,
                    pool_ptr, pool_idx, pool_val, pool_theta, tau, gap, converged, objective,
                    tol, max_inner):
    """One major iteration of the active-set method for example ``e`` (its slots, weights
    and factor given as views), whose MAP oracle returned structure ``s``: see
    :func:`active_set_step`."""
    k = n_active[e]
    if k > 0:
        excess = pool_theta[s] - _dot_dense(pool_ptr, pool_idx, pool_val, s, u, base)
        excess -= tau[e]
        gap[e] = max(excess, 0.0)
        if excess <= tol * lift[e] + ROUNDING * max(lift[e], abs(tau[e])):
            converged[e] = True
            return
        for j in range(k):
            if _same_structure(pool_ptr, pool_idx, pool_val, pool_theta, slots[j], s):
                converged[e] = True
                return
    else:
        lift[e] = _lift(pool_ptr, pool_idx, pool_val, s)
    k = _add_structure(factor, slots, slot_weights, k, s, pool_ptr, pool_idx, pool_val,
                       lift[e])
    if k < 0:
        converged[e] = True
        return
    k, tau[e] = _stabilize(factor, slots, slot_weights, k, pool_theta, max_inner, lift[e])
    n_active[e] = k
    _write_unary(u, base, size, slots, slot_weights, k, pool_ptr, pool_idx, pool_val)
    objective[e] = _objective(u, base, size, slots, slot_weights, k, pool_theta)


@njit(cache=True, nogil=True, parallel=True)
def active_set_step(rows, new_ids, slot_ptr, support, weights, n_active, chol_ptr, chol,
                    lift, u, u_offsets, pool_ptr, pool_idx, pool_val, pool_theta, tau, gap,
                    converged, objective, tol, max_inner):
    """One major iteration of the active-set method for the examples ``rows``.

    ``new_ids[p]`` is the structure the MAP oracle returned for example ``rows[p]`` under
    the scores (η_U − u, η_V). If its adjusted score θ_s − m_sᵀu exceeds τ by more than
    ``tol · ρ²`` (plus rounding) it enters the active set and the minor iterations
    restore the KKT conditions on the new set; otherwise the example has converged.
    Every example in ``rows`` must have room for two more structures than it holds.
    """
    for p in prange(rows.shape[0]):
        e = rows[p]
        first, stop = _slots(slot_ptr, e)
        base = u_offsets[e]
        major_iteration(e, new_ids[p], support[first:stop], weights[first:stop],
                        _factor_of(chol, chol_ptr, slot_ptr, e), n_active, lift, u, base,
                        u_offsets[e + 1] - base, pool_ptr, pool_idx, pool_val, pool_theta,
                        tau, gap, converged, objective, tol, max_inner)


@njit(cache=True, nogil=True, parallel=True)
def repack(old_slot_ptr, old_support, old_weights, old_chol_ptr, old_chol, n_active,
           slot_ptr, support, weights, chol_ptr, chol):
    """Copy every example's active slots and factor into its (larger) new blocks.

    The new blocks must be at least as large as the old ones; the new arrays must be
    filled beforehand (support with -1, weights and chol with 0).
    """
    for e in prange(n_active.shape[0]):
        old_first = old_slot_ptr[e]
        first = slot_ptr[e]
        for j in range(n_active[e]):
            support[first + j] = old_support[old_first + j]
            weights[first + j] = old_weights[old_first + j]
        if old_chol.shape[0] == 0:
            continue
        old_factor = _factor_of(old_chol, old_chol_ptr, old_slot_ptr, e)
        factor = _factor_of(chol, chol_ptr, slot_ptr, e)
        for i in range(n_active[e]):
            for j in range(i + 1):
                factor[i, j] = old_factor[i, j]


@njit(cache=True, nogil=True)
def warm_start_one(e, start, start_weights, factored, slots, slot_weights, factor,
                   n_active, lift, u, base, size, pool_ptr, pool_idx, pool_val, pool_theta,
                   tau, objective, max_inner):
    """Example ``e``'s initial active set from structures ``start`` with weights
    ``start_weights`` (its slots, weights and factor given as views): see
    :func:`warm_start`."""
    k = 0
    total = 0.0
    coef = np.empty(start.shape[0])
    for j in range(start.shape[0]):
        s = start[j]
        if k == 0:
            lift[e] = _lift(pool_ptr, pool_idx, pool_val, s)
        if factored:
            if k == 0:
                factor[0, 0] = np.sqrt(_gram(pool_ptr, pool_idx, pool_val, s, s, lift[e]))
                slots[0] = s
            elif not _try_append(factor, slots, k, s, pool_ptr, pool_idx, pool_val, coef,
                                 lift[e]):
                continue
        slots[k] = s
        slot_weights[k] = start_weights[j]
        total += start_weights[j]
        k += 1
    for j in range(k):
        slot_weights[j] = slot_weights[j] / total if total > 0 else 1.0 / k
    if factored:
        k, tau[e] = _stabilize(factor, slots, slot_weights, k, pool_theta, max_inner, lift[e])
    n_active[e] = k
    _write_unary(u, base, size, slots, slot_weights, k, pool_ptr, pool_idx, pool_val)
    objective[e] = _objective(u, base, size, slots, slot_weights, k, pool_theta)


@njit(cache=True, nogil=True, parallel=True)
def warm_start(start_ptr, start, start_weights, factored, slot_ptr, support, weights,
               n_active, chol_ptr, chol, lift, u, u_offsets, pool_ptr, pool_idx, pool_val,
               pool_theta, tau, objective, max_inner):
    """Initial active sets from given structures and weights (an earlier solution).

    Example ``e`` starts from structures ``start[start_ptr[e]:start_ptr[e + 1]]`` with
    weights ``start_weights[...]``; its slots must hold at least as many. With ``factored``
    (active set), structures affinely dependent on the earlier ones are left out and the
    minor iterations restore the KKT conditions; the weights are renormalized to the
    simplex either way.
    """
    for e in prange(n_active.shape[0]):
        first, stop = _slots(slot_ptr, e)
        factor = _factor_of(chol, chol_ptr, slot_ptr, e) if factored else np.zeros((1, 1))
        base = u_offsets[e]
        lo, hi = start_ptr[e], start_ptr[e + 1]
        warm_start_one(e, start[lo:hi], start_weights[lo:hi], factored,
                       support[first:stop], weights[first:stop], factor, n_active, lift,
                       u, base, u_offsets[e + 1] - base, pool_ptr, pool_idx, pool_val,
                       pool_theta, tau, objective, max_inner)


@njit(cache=True, nogil=True)
def _combination(size, s, t, ws, wt, pool_ptr, pool_idx, pool_val):
    """The dense vector ws·m_s + wt·m_t (a negative id leaves its term out)."""
    out = np.zeros(size)
    if s >= 0:
        for p in range(pool_ptr[s], pool_ptr[s + 1]):
            out[pool_idx[p]] += ws * _value(pool_val, p)
    if t >= 0:
        for p in range(pool_ptr[t], pool_ptr[t + 1]):
            out[pool_idx[p]] += wt * _value(pool_val, p)
    return out


@njit(cache=True, nogil=True, parallel=True)
def frank_wolfe_step(method, rows, new_ids, slot_ptr, support, weights, n_active, lift, u,
                     u_offsets, pool_ptr, pool_idx, pool_val, pool_theta, gap, converged,
                     objective, tol):
    """One iteration of vanilla, away-step or pairwise Frank–Wolfe for ``rows``.

    The linear oracle returned ``new_ids`` under (η_U − u, η_V). Directions live in the
    convex-combination weights: forward d = a_s − μ, away d = μ − a_v and pairwise
    d = a_s − a_v, with v the active structure of LOWEST adjusted score θ − mᵀu. The step
    is the exact line search γ = clip(⟨∇, d⟩ / ‖d_u‖², 0, γ_max).
    """
    for p in prange(rows.shape[0]):
        e = rows[p]
        s = new_ids[p]
        k = n_active[e]
        base = u_offsets[e]
        size = u_offsets[e + 1] - base
        first, stop = _slots(slot_ptr, e)
        slots = support[first:stop]
        slot_weights = weights[first:stop]
        if k == 0:
            lift[e] = _lift(pool_ptr, pool_idx, pool_val, s)
            slots[0] = s
            slot_weights[0] = 1.0
            n_active[e] = 1
            _write_unary(u, base, size, slots, slot_weights, 1, pool_ptr, pool_idx,
                         pool_val)
            objective[e] = _objective(u, base, size, slots, slot_weights, 1, pool_theta)
            continue
        mean_adjusted = 0.0
        away, away_score, slot_s = -1, np.inf, -1
        for j in range(k):
            t = slots[j]
            adjusted = pool_theta[t] - _dot_dense(pool_ptr, pool_idx, pool_val, t, u, base)
            mean_adjusted += slot_weights[j] * adjusted
            if adjusted < away_score:
                away_score, away = adjusted, j
            if _same_structure(pool_ptr, pool_idx, pool_val, pool_theta, t, s):
                slot_s = j
        s_adjusted = pool_theta[s] - _dot_dense(pool_ptr, pool_idx, pool_val, s, u, base)
        forward_gap = s_adjusted - mean_adjusted
        gap[e] = max(forward_gap, 0.0)
        if forward_gap <= tol * lift[e] + ROUNDING * max(lift[e], abs(mean_adjusted)):
            converged[e] = True
            continue
        # Direction in the weights: add `delta` to the weights (over slots, plus s).
        if method == PAIRWISE_FW:
            slope = s_adjusted - away_score
            step_max = slot_weights[away]
            direction = _combination(size, s, slots[away], 1.0, -1.0, pool_ptr,
                                     pool_idx, pool_val)
            use_away = False
            pairwise = True
        else:
            away_gap = mean_adjusted - away_score
            use_away = method == AWAY_FW and away_gap > forward_gap and k > 1
            pairwise = False
            if use_away:
                slope = away_gap
                w_away = slot_weights[away]
                step_max = w_away / (1.0 - w_away)
                direction = _combination(size, -1, slots[away], 0.0, -1.0, pool_ptr,
                                         pool_idx, pool_val)
                for q in range(size):
                    direction[q] += u[base + q]
            else:
                slope = forward_gap
                step_max = 1.0
                direction = _combination(size, s, -1, 1.0, 0.0, pool_ptr, pool_idx, pool_val)
                for q in range(size):
                    direction[q] -= u[base + q]
        norm = 0.0
        for q in range(size):
            norm += direction[q] * direction[q]
        step = step_max if norm <= 0.0 else min(max(slope / norm, 0.0), step_max)
        if slot_s < 0 and not use_away:
            slot_s = k
            slots[k] = s
            slot_weights[k] = 0.0
            k += 1
        if pairwise:
            slot_weights[slot_s] += step
            slot_weights[away] -= step
        elif use_away:
            for j in range(k):
                slot_weights[j] *= 1.0 + step
            slot_weights[away] -= step
        else:
            for j in range(k):
                slot_weights[j] *= 1.0 - step
            slot_weights[slot_s] += step
        for j in range(k - 1, -1, -1):
            if slot_weights[j] <= 1e-15 and k > 1:
                for i in range(j, k - 1):
                    slots[i] = slots[i + 1]
                    slot_weights[i] = slot_weights[i + 1]
                slots[k - 1] = -1
                slot_weights[k - 1] = 0.0
                k -= 1
        n_active[e] = k
        for q in range(size):
            u[base + q] += step * direction[q]
        objective[e] = _objective(u, base, size, slots, slot_weights, k, pool_theta)


@njit(cache=True, nogil=True, parallel=True)
def support_coefficients(support_ptr, support, lift, pool_ptr, pool_idx, pool_val, upstream,
                         u_offsets, out):
    """Backward pass: the coefficients D M_Iᵀ p of every example's support, for the
    upstream gradient p on u, written to ``out[support_ptr[e]:support_ptr[e + 1]]``.

    D = Z − (Z1)(Z1)ᵀ / (1ᵀZ1) with Z = G̃⁻¹ on the final active set (the lift does not
    change D, the Jacobian of the KKT solution's weights with respect to θ_I).
    """
    for e in prange(support_ptr.shape[0] - 1):
        first = support_ptr[e]
        k = support_ptr[e + 1] - first
        slots = support[first:first + k]
        base = u_offsets[e]
        chol = np.zeros((k, k))
        column = np.empty(k)
        for i in range(k):
            # Rebuild the factor of the final set (small: k is the support size).
            for j in range(i):
                column[j] = _gram(pool_ptr, pool_idx, pool_val, slots[j], slots[i],
                                  lift[e])
            diag = _gram(pool_ptr, pool_idx, pool_val, slots[i], slots[i], lift[e])
            row = np.empty(i)
            _forward(chol, i, column[:i], row)
            residual = diag
            for j in range(i):
                chol[i, j] = row[j]
                residual -= row[j] * row[j]
            chol[i, i] = np.sqrt(max(residual, 1e-300))
        projected = np.empty(k)
        for j in range(k):
            projected[j] = _dot_dense(pool_ptr, pool_idx, pool_val, slots[j], upstream,
                                      base)
        z_p = np.empty(k)
        z_1 = np.empty(k)
        _solve(chol, k, projected, z_p)
        _solve(chol, k, np.ones(k), z_1)
        ratio = z_1.sum()
        along = z_p.sum() / ratio if ratio != 0.0 else 0.0
        for j in range(k):
            out[first + j] = z_p[j] - along * z_1[j]


@njit(cache=True, nogil=True)
def gather_blocks(source, ptr, ids, out):
    """Concatenate the blocks ``source[ptr[s]:ptr[s + 1]]`` of structures ``ids`` into
    ``out`` (sized to their total), without an index array of that total."""
    position = 0
    for s in ids:
        for q in range(ptr[s], ptr[s + 1]):
            out[position] = source[q]
            position += 1


@njit(cache=True, nogil=True)
def count_nonzero_blocks(values, offsets, counts):
    """counts[i] = number of nonzero entries of block ``values[offsets[i]:offsets[i + 1]]``."""
    for i in range(offsets.shape[0] - 1):
        total = 0
        for p in range(offsets[i], offsets[i + 1]):
            if values[p] != 0.0:
                total += 1
        counts[i] = total


@njit(cache=True, nogil=True)
def sparse_blocks(values, offsets, idx, val):
    """The nonzero entries of every block, in order: positions local to the block into
    ``idx``, values into ``val`` (when it is not empty)."""
    q = 0
    for i in range(offsets.shape[0] - 1):
        for p in range(offsets[i], offsets[i + 1]):
            if values[p] != 0.0:
                idx[q] = p - offsets[i]
                if val.shape[0] > 0:
                    val[q] = values[p]
                q += 1
