"""Compiled local solvers of the LP-SparseMAP PAIR (Ising) and OR-output factors.

Every kernel solves a batch of factors of one type in one call, in parallel over
contiguous chunks of factors (one parallel loop, no whole-array expression: fit for
:func:`~skstruct.utils._parallel.dynamic_schedule`); each factor is solved alone, so the
results do not depend on the chunks or the thread count.

The local problem (the contract)
--------------------------------
A factor has entries i with scores a_i and weights w_i > 0; a PAIR factor also has the
score s of its additional variable v (the coupling), which enters linearly. Its local
problem is

.. math::

    \\max_{(u, v) \\in P} \\; \\sum_i a_i u_i - \\tfrac12 \\sum_i w_i u_i^2 + s v

over the factor's marginal polytope ``P`` (no v term for OROut). In LP-SparseMAP
a = d θ and w = d², with d_i = deg_i^(-1/2); with w = 1 it is plain SparseMAP of the
factor (Niculae & Martins 2020, App. D.3 and D.2).

PAIR
----
Two binary variables and v = E[u_1 u_2]:
P = {v ≥ 0, v ≤ u_1, v ≤ u_2, v ≥ u_1 + u_2 − 1} (which implies 0 ≤ u ≤ 1), the hull of
(u_1, u_2, v) ∈ {(0,0,0), (1,0,0), (0,1,0), (1,1,1)}. With clip(x) = min(max(x, 0), 1):

*s ≥ 0*: v is as large as feasible, v = min(u_1, u_2), and the problem in u is
f_1(u_1) + f_2(u_2) + s min(u_1, u_2) over the box. With lo_i = clip(a_i/w_i),
hi_i = clip((a_i + s)/w_i) and t = clip((a_1 + a_2 + s)/(w_1 + w_2)), its optimum is

- A: u = (hi_1, lo_2) if hi_1 ≤ lo_2; v = u_1;
- B: u = (lo_1, hi_2) if hi_2 ≤ lo_1; v = u_2;
- C: u_1 = u_2 = v = t otherwise.

(A: the objective is at most f_1 + f_2 + s u_1, with equality where u_1 ≤ u_2, so the box
maximizer of that bound solves the problem when it has u_1 ≤ u_2; B likewise; if neither,
an optimum with u_1 ≠ u_2 would be the unique maximizer of one of the bounds, so
u_1 = u_2.) Before clipping, t is the w-weighted mean of (a_1 + s)/w_1 and a_2/w_2, and
of a_1/w_1 and (a_2 + s)/w_2, so it lies between each pair: the three cases are
u_i = median(lo_i, t, hi_i), which the kernels compute without branches.

*s < 0*: the change of variables u_2' = 1 − u_2, v' = u_1 − v maps P onto itself and
gives the scores (a_1 + s, w_2 − a_2, −s); solving that problem as above and mapping back
gives, with lo_i = clip((a_i + s)/w_i), hi_i = clip(a_i/w_i) and
t = clip((a_1 − a_2 + w_2)/(w_1 + w_2)),

- A': u = (hi_1, hi_2) if hi_1 + hi_2 ≤ 1; v = 0;
- B': u = (lo_1, lo_2) if lo_1 + lo_2 ≥ 1; v = u_1 + u_2 − 1;
- C': u = (t, 1 − t) otherwise; v = 0;

that is u_1 = median(lo_1, t, hi_1), u_2 = median(lo_2, 1 − t, hi_2),
v = max(0, u_1 + u_2 − 1).

u is always unique (the objective is strictly concave in u). v is unique unless s = 0
and 0 < u_1, u_2 < 1: any v in [max(0, u_1 + u_2 − 1), min(u_1, u_2)] is then optimal.
*Rule*: s = 0 (and −0.0) takes the s ≥ 0 form, so v = min(u_1, u_2), the largest optimal
v (the limit s → 0⁺); u is then (clip(a_1/w_1), clip(a_2/w_2)), two independent clips.

*Jacobian* of (a_1, a_2, s) ↦ (u_1, u_2, v) on the piece the solution takes (the
derivative of the active affine piece, as SparseMAP's backward pass uses): du_i is
the derivative of the argument its median selects (t when t is within [lo_i, hi_i], ties
included), with g(x) = 1 if 0 < x < 1 else 0 for the argument x of that clip,
q_i = g / w_i and q = g / (w_1 + w_2):

==============  ===================================  ==================================
u_i selects     s ≥ 0                                s < 0
==============  ===================================  ==================================
lo_i            q_i da_i                             q_i (da_i + ds)
hi_i            q_i (da_i + ds)                      q_i da_i
t               q (da_1 + da_2 + ds)                 ± q (da_1 − da_2) (+ for u_1)
==============  ===================================  ==================================

and dv = du_1 if u_1 ≤ u_2 else du_2 (s ≥ 0); dv = du_1 + du_2 if u_1 + u_2 > 1 else 0
(s < 0). So the pieces A, B, C, A', B', C' have

=====  =================================  ==============  ================
piece  du_1                               du_2            dv
=====  =================================  ==============  ================
A      q_1 (da_1 + ds)                    q_2 da_2        du_1
B      q_1 da_1                           q_2 (da_2 + ds) du_2
C      q (da_1 + da_2 + ds)               du_1            du_1
A'     q_1 da_1                           q_2 da_2        0
B'     q_1 (da_1 + ds)                    q_2 (da_2 + ds) du_1 + du_2
C'     q (da_1 − da_2)                    −du_1           0
=====  =================================  ==============  ================

Every piece's matrix is symmetric (it is the Hessian of the convex value function
max_P ⋯ on that piece); :func:`pair_vjp` applies the transposed matrix. At s = 0 the
map is discontinuous in v (v jumps from max(0, u_1 + u_2 − 1) to min(u_1, u_2)) and the
Jacobian is that of the s ≥ 0 form.

*MAP* (:func:`pair_map`): the best of the four vertices for Σ a_i u_i + s v, ties to the
lexicographically smallest (u_1, u_2, v) (first entry most significant, 0 before 1):
(0,0,0), then (0,1,0), then (1,0,0), then (1,1,1).

OROut
-----
Inputs u_1..u_d and the output y = u_{d+1} = OR(u_1..u_d):
P = {y ≥ u_i (all i), y ≤ Σ_i u_i, 0 ≤ u ≤ 1}, the hull of the feasible 0/1 vectors
(checked by vertex enumeration in the tests). With c_i = a_i / w_i (i ≤ d), the solution
is found by sifting (a constraint violated by the maximizer of a relaxation is tight at
the optimum; Niculae & Martins 2020, App. D.2):

1. *clip*: u_i = clip(c_i), y = clip(a_y / w_y); done if u_i ≤ y for all i and y ≤ Σ u_i.
2. *drop y ≤ Σ u*: for a fixed y, u_i = clip(c_i, 0, y); the optimal y maximizes the
   concave ψ(y) = a_y y − ½ w_y y² + Σ_i max_{x ≤ y} (a_i x − ½ w_i x²), whose derivative
   a_y − w_y y + Σ_{i : c_i > y} (a_i − w_i y) is continuous and decreasing. With the c_i
   sorted decreasingly, the root is y_k = (a_y + Σ_{j<k} a_(j)) / (w_y + Σ_{j<k} w_(j))
   for the first k with y_k ≥ c_(k) (or k = d), and y = clip(y_k). Done if y ≤ Σ u_i.
3. *y = Σ u*: then u_i ≤ y always holds and y ≤ 1 is Σ u_i ≤ 1, so (u, y' = 1 − y) lies
   on the simplex, with scores b = (a_1..a_d, w_y − a_y) and the same weights: x_j =
   max(0, (b_j − τ)/w_j), τ = (Σ_{j∈S} b_j/w_j − 1)/(Σ_{j∈S} 1/w_j) over the top-k
   entries S by b for the first k with τ_k ≥ b_(k+1) (a weighted sparsemax); y = 1 − x_y'.

O(d log d) per factor (a sort only in steps 2 and 3), exact up to rounding.

*Jacobian* of a ↦ u (w fixed) on the piece found: step 1: du_i = g(c_i) da_i / w_i (and
g(a_y/w_y) da_y / w_y for y). Step 2: the inputs with 0 < c_i < y move freely,
du_i = da_i / w_i; if 0 < y < 1 the output and the inputs capped at y (c_i ≥ y) form a
group G moving together, du_G = Σ_G da_j / Σ_G w_j; every other entry is constant.
Step 3: on the support S of x (inputs with u_i > 0, and the output when y < 1), with
σ = +1 on inputs and −1 on the output, du_j = (da_j − σ_j δ)/w_j,
δ = Σ_S σ_j da_j / w_j / Σ_S 1/w_j; zero elsewhere. All are symmetric.

*MAP* (:func:`orout_map`): the best feasible 0/1 vector for Σ a_i u_i + a_y y, ties to
the lexicographically smallest vector (first entry most significant, 0 before 1): y = 0
unless a_y + Σ_i max(a_i, 0) > 0 (when no a_i > 0: a_y + max_i a_i > 0); with y = 1 the
inputs of positive score are on, and if there are none, the *last* input of maximal
score.
"""

import numpy as np
from numba import njit, prange

from ...utils._parallel import entry_chunks, longest_group

__all__ = ["FACTORS_PER_CHUNK", "ENTRIES_PER_CHUNK", "pair_qp", "pair_map", "pair_jvp",
           "pair_vjp", "pair_spread", "orout_qp", "orout_map", "orout_jvp", "orout_vjp"]

#: Factors per parallel chunk of the PAIR kernels (a factor takes a few nanoseconds).
FACTORS_PER_CHUNK = 4096

#: Entries per parallel chunk of the OROut kernels.
ENTRIES_PER_CHUNK = 4096

#: OROut entry roles on the solution's piece: constant, free (du = da / w), in the group
#: tied to the output (step 2), on the simplex support (step 3).
CONSTANT, FREE, GROUP, SIMPLEX = 0, 1, 2, 3

_NJIT = dict(cache=True, nogil=True)


@njit(inline="always")
def _clip01(x):
    return min(max(x, 0.0), 1.0)


@njit(inline="always")
def _inside(x):
    return 1.0 if 0.0 < x < 1.0 else 0.0


@njit(inline="always")
def _pair_arguments(a1, a2, w1, w2, s):
    """The unclipped arguments of lo_1, hi_1, lo_2, hi_2 and t of one PAIR factor."""
    negative = s < 0.0
    down = s if negative else 0.0
    up = 0.0 if negative else s
    t = (a1 - a2 + w2 if negative else a1 + a2 + s) / (w1 + w2)
    return ((a1 + down) / w1, (a1 + up) / w1, (a2 + down) / w2, (a2 + up) / w2, t)


@njit(inline="always")
def _median(lo, t, hi):
    return min(max(t, lo), hi)


@njit(inline="always")
def _pair_solve(a1, a2, w1, w2, s):
    """(u_1, u_2, v) of one PAIR factor, without branches."""
    lo1, hi1, lo2, hi2, t = _pair_arguments(a1, a2, w1, w2, s)
    t = _clip01(t)
    negative = s < 0.0
    u1 = _median(_clip01(lo1), t, _clip01(hi1))
    u2 = _median(_clip01(lo2), 1.0 - t if negative else t, _clip01(hi2))
    v = max(0.0, u1 + u2 - 1.0) if negative else min(u1, u2)
    return u1, u2, v


@njit(inline="always")
def _pair_row(lo, t, hi, gate_t, sign, w, i, negative, total):
    """The row (∂/∂a_1, ∂/∂a_2, ∂/∂s) of u_i (i = 0, 1) on its median's piece."""
    lo_c = _clip01(lo)
    hi_c = _clip01(hi)
    if t < lo_c or t > hi_c:
        picked_lo = t < lo_c
        q = _inside(lo if picked_lo else hi) / w
        ds = q if picked_lo == negative else 0.0
        return (q if i == 0 else 0.0), (q if i == 1 else 0.0), ds
    q = gate_t / total
    if negative:
        return sign * q, -sign * q, 0.0
    return q, q, q


@njit(inline="always")
def _pair_jacobian(a1, a2, w1, w2, s):
    """The 3 × 3 Jacobian of (a_1, a_2, s) ↦ (u_1, u_2, v), row by row."""
    lo1, hi1, lo2, hi2, t_arg = _pair_arguments(a1, a2, w1, w2, s)
    t = _clip01(t_arg)
    gate = _inside(t_arg)
    negative = s < 0.0
    total = w1 + w2
    j11, j12, j13 = _pair_row(lo1, t, hi1, gate, 1.0, w1, 0, negative, total)
    j21, j22, j23 = _pair_row(lo2, 1.0 - t if negative else t, hi2, gate, -1.0, w2, 1,
                              negative, total)
    u1, u2, _ = _pair_solve(a1, a2, w1, w2, s)
    if negative:
        if u1 + u2 > 1.0:
            j31, j32, j33 = j11 + j21, j12 + j22, j13 + j23
        else:
            j31, j32, j33 = 0.0, 0.0, 0.0
    elif u1 <= u2:
        j31, j32, j33 = j11, j12, j13
    else:
        j31, j32, j33 = j21, j22, j23
    return j11, j12, j13, j21, j22, j23, j31, j32, j33


@njit(**_NJIT)
def _pair_chunks(n_factors):
    n_chunks = max(1, n_factors // FACTORS_PER_CHUNK)
    bounds = np.empty(n_chunks + 1, dtype=np.int64)
    for c in range(n_chunks + 1):
        bounds[c] = (n_factors * c) // n_chunks
    return bounds


@njit(cache=True, nogil=True, parallel=True)
def pair_qp(a, w, s, u, v):
    """Solve every PAIR factor's local QP (closed form, see the module docstring).

    Parameters
    ----------
    a, w : ndarray of shape (n_factors, 2), float64
        Scores and weights (w > 0) of the two variables.
    s : ndarray of shape (n_factors,), float64
        Scores of the additional variable v (the couplings).
    u : ndarray of shape (n_factors, 2), float64
        Output: the variables' solutions.
    v : ndarray of shape (n_factors,), float64
        Output: the additional variables' solutions (v = min(u_1, u_2) when s = 0).
    """
    bounds = _pair_chunks(s.shape[0])
    for chunk in prange(bounds.shape[0] - 1):
        for f in range(bounds[chunk], bounds[chunk + 1]):
            u1, u2, vf = _pair_solve(a[f, 0], a[f, 1], w[f, 0], w[f, 1], s[f])
            u[f, 0] = u1
            u[f, 1] = u2
            v[f] = vf


@njit(cache=True, nogil=True, parallel=True)
def pair_map(a, s, u, v):
    """Every PAIR factor's MAP: the best of (u_1, u_2, v) ∈ {(0,0,0), (0,1,0), (1,0,0),
    (1,1,1)} for a_1 u_1 + a_2 u_2 + s v, ties to the first in that order (the
    lexicographically smallest).

    Parameters
    ----------
    a : ndarray of shape (n_factors, 2), float64
    s : ndarray of shape (n_factors,), float64
    u : ndarray of shape (n_factors, 2), float64
        Output: the best vertices' u (0.0 or 1.0).
    v : ndarray of shape (n_factors,), float64
        Output: their v.

    Returns
    -------
    value : ndarray of shape (n_factors,), float64
        The best values: 0, a_2, a_1 or (a_1 + a_2) + s.
    """
    n_factors = s.shape[0]
    value = np.empty(n_factors)
    bounds = _pair_chunks(n_factors)
    for chunk in prange(bounds.shape[0] - 1):
        for f in range(bounds[chunk], bounds[chunk + 1]):
            best = 0.0
            u1 = 0.0
            u2 = 0.0
            if a[f, 1] > best:
                best = a[f, 1]
                u2 = 1.0
            if a[f, 0] > best:
                best = a[f, 0]
                u1 = 1.0
                u2 = 0.0
            both = (a[f, 0] + a[f, 1]) + s[f]
            if both > best:
                best = both
                u1 = 1.0
                u2 = 1.0
            u[f, 0] = u1
            u[f, 1] = u2
            v[f] = u1 * u2
            value[f] = best
    return value


@njit(cache=True, nogil=True, parallel=True)
def pair_jvp(a, w, s, da, ds, du, dv):
    """Jacobian-vector product (du, dv) = J (da, ds) of the map (a, s) ↦ (u, v) of
    :func:`pair_qp` (w fixed), on the piece its solution takes (module docstring).

    Parameters
    ----------
    a, w, s
        As for :func:`pair_qp` (they decide the piece).
    da : ndarray of shape (n_factors, 2), float64
    ds : ndarray of shape (n_factors,), float64
        Direction in the scores.
    du : ndarray of shape (n_factors, 2), float64
    dv : ndarray of shape (n_factors,), float64
        Output: J (da, ds).
    """
    bounds = _pair_chunks(s.shape[0])
    for chunk in prange(bounds.shape[0] - 1):
        for f in range(bounds[chunk], bounds[chunk + 1]):
            j11, j12, j13, j21, j22, j23, j31, j32, j33 = _pair_jacobian(
                a[f, 0], a[f, 1], w[f, 0], w[f, 1], s[f])
            d1 = da[f, 0]
            d2 = da[f, 1]
            d3 = ds[f]
            du[f, 0] = j11 * d1 + j12 * d2 + j13 * d3
            du[f, 1] = j21 * d1 + j22 * d2 + j23 * d3
            dv[f] = j31 * d1 + j32 * d2 + j33 * d3


@njit(cache=True, nogil=True, parallel=True)
def pair_vjp(a, w, s, gu, gv, ga, gs):
    """Vector-Jacobian product (ga, gs) = Jᵀ (gu, gv) of the map (a, s) ↦ (u, v) of
    :func:`pair_qp` (w fixed): the transpose of the matrix :func:`pair_jvp` applies.

    Parameters
    ----------
    a, w, s
        As for :func:`pair_qp`.
    gu : ndarray of shape (n_factors, 2), float64
    gv : ndarray of shape (n_factors,), float64
        Cotangent of the solution.
    ga : ndarray of shape (n_factors, 2), float64
    gs : ndarray of shape (n_factors,), float64
        Output: Jᵀ (gu, gv), the cotangent of the scores.
    """
    bounds = _pair_chunks(s.shape[0])
    for chunk in prange(bounds.shape[0] - 1):
        for f in range(bounds[chunk], bounds[chunk + 1]):
            j11, j12, j13, j21, j22, j23, j31, j32, j33 = _pair_jacobian(
                a[f, 0], a[f, 1], w[f, 0], w[f, 1], s[f])
            e1 = gu[f, 0]
            e2 = gu[f, 1]
            e3 = gv[f]
            ga[f, 0] = j11 * e1 + j21 * e2 + j31 * e3
            ga[f, 1] = j12 * e1 + j22 * e2 + j32 * e3
            gs[f] = j13 * e1 + j23 * e2 + j33 * e3


@njit(**_NJIT)
def _orout_factor(a, w, lo, hi, u, shift, role, keys):
    """Solve one OROut factor (entries lo..hi − 1, the last the output): u[i − shift] for
    its entries i, and the role of entry i on the solution's piece in role[i − lo];
    keys: scratch of at least hi − lo."""
    out = hi - 1
    d = out - lo
    cy = a[out] / w[out]
    y = _clip01(cy)
    total = 0.0
    feasible = True
    for i in range(lo, out):
        c = a[i] / w[i]
        x = _clip01(c)
        u[i - shift] = x
        role[i - lo] = FREE if 0.0 < c < 1.0 else CONSTANT
        total += x
        if x > y:
            feasible = False
    if feasible and y <= total:
        u[out - shift] = y
        role[d] = FREE if 0.0 < cy < 1.0 else CONSTANT
        return
    # step 2: the root of ψ', the inputs taken by decreasing c
    for i in range(lo, out):
        keys[i - lo] = -a[i] / w[i]
    order = np.argsort(keys[:d])
    numerator = a[out]
    denominator = w[out]
    root = numerator / denominator
    for k in range(d):
        j = lo + order[k]
        if root >= a[j] / w[j]:
            break
        numerator += a[j]
        denominator += w[j]
        root = numerator / denominator
    y = _clip01(root)
    grouped = 0.0 < y < 1.0
    total = 0.0
    for i in range(lo, out):
        c = a[i] / w[i]
        if c <= 0.0:
            x = 0.0
            role[i - lo] = CONSTANT
        elif c < y:
            x = c
            role[i - lo] = FREE
        else:
            x = y
            role[i - lo] = GROUP if grouped else CONSTANT
        u[i - shift] = x
        total += x
    if y <= total:
        u[out - shift] = y
        role[d] = GROUP if grouped else CONSTANT
        return
    # step 3: weighted sparsemax of b = (a_1..a_d, w_y − a_y) on the simplex
    for i in range(lo, out):
        keys[i - lo] = -a[i]
    keys[d] = a[out] - w[out]
    order = np.argsort(keys[:d + 1])
    ratio = 0.0
    inverse = 0.0
    tau = 0.0
    for k in range(d + 1):
        j = lo + order[k]
        b = -keys[order[k]]
        if k > 0 and tau >= b:
            break
        ratio += b / w[j]
        inverse += 1.0 / w[j]
        tau = (ratio - 1.0) / inverse
    for i in range(lo, out):
        x = (a[i] - tau) / w[i]
        if x > 0.0:
            u[i - shift] = x
            role[i - lo] = SIMPLEX
        else:
            u[i - shift] = 0.0
            role[i - lo] = CONSTANT
    x = (w[out] - a[out] - tau) / w[out]
    if x > 0.0:
        u[out - shift] = 1.0 - x
        role[d] = SIMPLEX
    else:
        u[out - shift] = 1.0
        role[d] = CONSTANT


@njit(**_NJIT)
def _orout_apply(w, lo, hi, role, da, du):
    """du = J da on one factor's piece, role as :func:`_orout_factor` left it (J is
    symmetric, so this is also Jᵀ)."""
    out = hi - 1
    group_num = 0.0
    group_den = 0.0
    simplex_num = 0.0
    simplex_den = 0.0
    for i in range(lo, hi):
        r = role[i - lo]
        if r == GROUP:
            group_num += da[i]
            group_den += w[i]
        elif r == SIMPLEX:
            sign = -1.0 if i == out else 1.0
            simplex_num += sign * da[i] / w[i]
            simplex_den += 1.0 / w[i]
    group = group_num / group_den if group_den > 0.0 else 0.0
    delta = simplex_num / simplex_den if simplex_den > 0.0 else 0.0
    for i in range(lo, hi):
        r = role[i - lo]
        if r == FREE:
            du[i] = da[i] / w[i]
        elif r == GROUP:
            du[i] = group
        elif r == SIMPLEX:
            sign = -1.0 if i == out else 1.0
            du[i] = (da[i] - sign * delta) / w[i]
        else:
            du[i] = 0.0


@njit(**_NJIT)
def _orout_chunks(offsets):
    return entry_chunks(offsets, ENTRIES_PER_CHUNK)


@njit(cache=True, nogil=True, parallel=True)
def orout_qp(a, w, offsets, u):
    """Solve every OROut factor's local QP (module docstring): u = argmax over P of
    Σ a_i u_i − ½ Σ w_i u_i².

    Parameters
    ----------
    a, w : ndarray of shape (n_entries,), float64
        Scores and weights (w > 0) of the entries.
    offsets : ndarray of shape (n_factors + 1,), int64
        Factor f owns entries ``offsets[f]:offsets[f + 1]`` (at least one); the last is
        its output y, the others its inputs.
    u : ndarray of shape (n_entries,), float64
        Output: the solutions.
    """
    bounds = _orout_chunks(offsets)
    for chunk in prange(bounds.shape[0] - 1):
        first = bounds[chunk]
        last = bounds[chunk + 1]
        degree = longest_group(offsets, first, last)
        keys = np.empty(degree)
        role = np.empty(degree, dtype=np.int8)
        for f in range(first, last):
            _orout_factor(a, w, offsets[f], offsets[f + 1], u, 0, role, keys)


@njit(cache=True, nogil=True, parallel=True)
def orout_jvp(a, w, offsets, da, du):
    """Jacobian-vector product du = J da of the map a ↦ u of :func:`orout_qp` (w fixed),
    on the piece its solution takes (module docstring); solves the factors again to find
    the piece.

    Parameters
    ----------
    a, w, offsets
        As for :func:`orout_qp`.
    da : ndarray of shape (n_entries,), float64
        Direction in the scores.
    du : ndarray of shape (n_entries,), float64
        Output: J da.
    """
    bounds = _orout_chunks(offsets)
    for chunk in prange(bounds.shape[0] - 1):
        first = bounds[chunk]
        last = bounds[chunk + 1]
        degree = longest_group(offsets, first, last)
        keys = np.empty(degree)
        solution = np.empty(degree)
        role = np.empty(degree, dtype=np.int8)
        for f in range(first, last):
            lo = offsets[f]
            hi = offsets[f + 1]
            _orout_factor(a, w, lo, hi, solution, lo, role, keys)
            _orout_apply(w, lo, hi, role, da, du)


def orout_vjp(a, w, offsets, gu, ga):
    """Vector-Jacobian product ga = Jᵀ gu of the map a ↦ u of :func:`orout_qp`; J is
    symmetric on every piece, so this applies the formula of :func:`orout_jvp`.

    Parameters
    ----------
    a, w, offsets
        As for :func:`orout_qp`.
    gu : ndarray of shape (n_entries,), float64
        Cotangent of the solution.
    ga : ndarray of shape (n_entries,), float64
        Output: Jᵀ gu.
    """
    orout_jvp(a, w, offsets, gu, ga)


@njit(cache=True, nogil=True, parallel=True)
def orout_map(a, offsets, u):
    """Every OROut factor's MAP: the best feasible 0/1 vector for Σ a_i u_i (y = OR of the
    inputs), ties to the lexicographically smallest (module docstring).

    Parameters
    ----------
    a : ndarray of shape (n_entries,), float64
    offsets
        As for :func:`orout_qp`.
    u : ndarray of shape (n_entries,), float64
        Output: the best vectors (0.0 or 1.0).

    Returns
    -------
    value : ndarray of shape (n_factors,), float64
        Their values: 0, or a_y + Σ of the inputs that are on (in entry order).
    """
    n_factors = offsets.shape[0] - 1
    value = np.empty(n_factors)
    bounds = _orout_chunks(offsets)
    for chunk in prange(bounds.shape[0] - 1):
        for f in range(bounds[chunk], bounds[chunk + 1]):
            lo = offsets[f]
            out = offsets[f + 1] - 1
            positive = 0.0
            n_positive = 0
            last_max = -1
            for i in range(lo, out):
                if a[i] > 0.0:
                    positive += a[i]
                    n_positive += 1
                if last_max < 0 or a[i] >= a[last_max]:
                    last_max = i
            if n_positive > 0:
                on = a[out] + positive
            elif last_max >= 0:
                on = a[out] + a[last_max]
            else:
                on = 0.0
            if on > 0.0:
                for i in range(lo, out):
                    u[i] = 1.0 if (a[i] > 0.0 if n_positive > 0 else i == last_max) else 0.0
                u[out] = 1.0
                value[f] = on
            else:
                for i in range(lo, out + 1):
                    u[i] = 0.0
                value[f] = 0.0
    return value


@njit(cache=True, nogil=True, parallel=True)
def pair_spread(u, v, s, pair_var, down, up):
    """How far the maximizers' v_f reach below and above v at the PAIR factors whose
    score is exactly zero: v_f is then free in [max(0, u_i + u_j − 1), min(u_i, u_j)]
    (u clipped to [0, 1]); zero elsewhere.

    Parameters
    ----------
    u : ndarray of shape (n_examples, n_vars)
    v, s : ndarray of shape (n_examples, n_pair)
        The returned PAIR marginals and their scores.
    pair_var : ndarray of shape (n_pair, 2), int
    down, up : ndarray of shape (n_examples, n_pair)
        Output, non-negative.
    """
    n, n_pair = v.shape
    for k in prange(n):
        for f in range(n_pair):
            if s[k, f] != 0.0:
                down[k, f] = 0.0
                up[k, f] = 0.0
                continue
            a = _clip01(u[k, pair_var[f, 0]])
            b = _clip01(u[k, pair_var[f, 1]])
            down[k, f] = max(v[k, f] - max(a + b - 1.0, 0.0), 0.0)
            up[k, f] = max(min(a, b) - v[k, f], 0.0)
