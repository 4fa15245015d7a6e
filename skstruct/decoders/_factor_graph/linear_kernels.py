"""Compiled local solvers of the LP-SparseMAP factors with one linear constraint.

A factor of this family sees ``n`` binary variables and accepts the 0/1 vectors ``x`` that
satisfy one linear constraint on ``x̃``, where ``x̃_i = 1 − x_i`` for a *negated* entry
and ``x̃_i = x_i`` otherwise:

=============  ====================  ======================================
kind           constraint            polytope ``P`` the QP is solved over
=============  ====================  ======================================
XOR            Σ x̃_i = 1             [0, 1]ⁿ ∩ {Σ ũ_i = 1}
AT_MOST_ONE    Σ x̃_i ≤ 1             [0, 1]ⁿ ∩ {Σ ũ_i ≤ 1}
OR             Σ x̃_i ≥ 1             [0, 1]ⁿ ∩ {Σ ũ_i ≥ 1}
BUDGET         Σ x̃_i ≤ B (integer)   [0, 1]ⁿ ∩ {Σ ũ_i ≤ B}
KNAPSACK       Σ c_i x̃_i ≤ B         [0, 1]ⁿ ∩ {Σ c_i ũ_i ≤ B}  (relaxation)
=============  ====================  ======================================

For the first four kinds the constraint matrix is totally unimodular and the bound an
integer, so ``P`` is exactly the convex hull of the feasible 0/1 vectors (the factor's
marginal polytope). For KNAPSACK with general costs c_i > 0 it is not: the hull of the
feasible 0/1 vectors is in general strictly smaller. The KNAPSACK factor is *defined* on
the relaxation ``P = [0, 1]ⁿ ∩ {Σ c_i ũ_i ≤ B}``, as in AD3 (Martins et al. 2015) and
LP-SparseMAP (Niculae & Martins 2020, App. D.2.3); its vertices may have one fractional
entry. Its :func:`map_` is nevertheless the exact best 0/1 vector (by enumeration, up to
:data:`MAX_KNAPSACK_MAP_DEGREE` entries), which may score below max over ``P``.

The local problem (the contract)
--------------------------------
For one factor with entries i = 1..n, scores a_i and weights w_i > 0, :func:`qp` solves

.. math::

    u^\\star = \\arg\\max_{u \\in P} \\sum_i a_i u_i - \\tfrac12 \\sum_i w_i u_i^2,

the w-weighted projection of a / w onto ``P`` (in LP-SparseMAP a = d θ and w = d², with
d_i = deg_i^(-1/2); with w = 1 it is plain SparseMAP of the factor, and XOR is
sparsemax).

*Negated entries* are removed by the change of variables v_i = 1 − u_i: since
a u − ½ w u² = (w − a) v − ½ w v² + (a − ½ w), the problem in v has scores
a'_i = w_i − a_i on negated entries (a'_i = a_i elsewhere), the same weights, and the
un-negated constraint Σ c_i v_i (=, ≤, ≥) B; then u_i = 1 − v_i.

*Solution* (in v): v_i(τ) = clip((a'_i − τ c_i) / w_i, 0, 1), with c_i = 1 except for
KNAPSACK. g(τ) = Σ c_i v_i(τ) is continuous, piecewise linear and non-increasing. If the
constraint holds at τ = 0 (plain clipping) and is an inequality, τ = 0. Otherwise it is
active (sifting lemma) and τ solves g(τ) = B, found by variable fixing (Bitran & Hax
1981; Kiwiel 2008) rather than by sorting the 2n breakpoints (Pardalos & Kovoor 1990):
with F_1 the entries fixed at 1 and S the free ones (initially all),

.. math::

    \\tau = \\frac{\\sum_{S} c_i a'_i / w_i - (B - \\sum_{F_1} c_i)}{\\sum_S c_i^2 / w_i}

solves the equation with S unclipped; clipping at that τ overshoots the free entries
above 1 by Σ c_i (x_i − 1) and below 0 by Σ c_i (−x_i). The larger side tells on which
side of τ the root lies, and g's monotonicity then fixes that side's entries (all
x_i ≥ 1 at 1, or all x_i ≤ 0 at 0) for good; when the two agree, τ is the root. Each
pass is O(n) and fixes at least one entry, so at most n passes, two or three in
practice: 1.2-1.7x faster than the sorted-breakpoint search at degrees 5 and 50.
The last τ is exact up to rounding.

*Jacobian* (:func:`jvp`, :func:`vjp`) of the map a ↦ u (w fixed) at a solution, on its
support S = {i : 0 < u_i < 1} (the generalized Jacobian of the active piece, as
SparseMAP's backward pass): with s_i = −1 on negated entries and +1 elsewhere,

.. math::

    du_i = \\frac{da_i - s_i c_i \\delta}{w_i} \\ (i \\in S), \\qquad du_i = 0 \\ (i \\notin S),
    \\qquad \\delta = \\frac{\\sum_{j \\in S} s_j c_j da_j / w_j}{\\sum_{j \\in S} c_j^2 / w_j}

when the constraint is active (always for XOR; for the others when plain clipping
violates it, the test :func:`qp` makes), δ = 0 otherwise (and when S is empty). That is
J = W_S⁻¹ − W_S⁻¹ (s c)_S (s c)_Sᵀ W_S⁻¹ / (c_Sᵀ W_S⁻¹ c_S): the free entries' move
W_S⁻¹ da projected onto Σ c_i dũ_i = 0 in the w-metric. J is symmetric, so
:func:`vjp` applies the same formula. With w = 1, XOR gives the sparsemax Jacobian
du_S = da_S − mean(da_S).

*MAP* (:func:`map_`): argmax of Σ a_i x_i over the feasible 0/1 vectors, ties broken
towards the lexicographically smallest x (first entry most significant, 0 before 1;
e.g. an XOR tie goes to the *last* tied entry). Ties are exact equalities of the scores
(or, for KNAPSACK, of the sums Σ a_i x_i taken in entry order). For the cardinality
kinds, the best vector turns on (in v) the k best entries for the best count k in the
allowed range; KNAPSACK enumerates all 2ⁿ vectors, n ≤ :data:`MAX_KNAPSACK_MAP_DEGREE`
(ValueError beyond: exact MAP of a knapsack is NP-hard).

Layout (all kernels): factor f owns entries ``offsets[f]:offsets[f + 1]`` of the flat
per-entry arrays (a, w, coef, negated, u, da, du); ``kind`` and ``bound`` are per factor.
``coef`` is read for KNAPSACK factors only (1 elsewhere) and ``bound`` for BUDGET and
KNAPSACK only (1 elsewhere); :func:`check_linear_factors` validates a batch. Factors are
solved in parallel over contiguous chunks of about :data:`ENTRIES_PER_CHUNK` entries (one
parallel loop, no whole-array expression: fit for
:func:`~skstruct.utils._parallel.dynamic_schedule`); each factor is solved alone, so the
results do not depend on the chunks or the thread count.
"""

import numpy as np
from numba import njit, prange

from ...utils._parallel import entry_chunks, longest_group
from .._tabular.kernels import _sort

__all__ = ["XOR", "AT_MOST_ONE", "OR", "BUDGET", "KNAPSACK", "KIND_NAMES",
           "MAX_KNAPSACK_MAP_DEGREE", "check_linear_factors", "qp", "map_", "jvp", "vjp"]

XOR, AT_MOST_ONE, OR, BUDGET, KNAPSACK = 0, 1, 2, 3, 4

#: Name of every kind code.
KIND_NAMES = ("XOR", "AT_MOST_ONE", "OR", "BUDGET", "KNAPSACK")

#: Largest KNAPSACK factor whose exact MAP :func:`map_` computes (2ⁿ vectors).
MAX_KNAPSACK_MAP_DEGREE = 20

#: Entries per parallel chunk: a factor of degree 5 takes about 0.1 µs per entry, so a
#: chunk costs far more than taking it from the queue.
ENTRIES_PER_CHUNK = 4096

_NJIT = dict(cache=True, nogil=True)

@njit(inline="always")
def _coef(coef, kind, i):
    return coef[i] if kind == KNAPSACK else 1.0


@njit(inline="always")
def _bound(bound, kind, f):
    return bound[f] if kind == BUDGET or kind == KNAPSACK else 1.0


@njit(inline="always")
def _score(a, w, negated, i):
    """a'_i: the score of entry i in the un-negated variable v."""
    return w[i] - a[i] if negated[i] else a[i]


@njit(inline="always")
def _clip01(x):
    return min(max(x, 0.0), 1.0)


@njit(**_NJIT)
def _g(a, w, coef, negated, kind, lo, hi, tau):
    """Σ c_i clip((a'_i − τ c_i) / w_i, 0, 1) over entries lo..hi − 1."""
    total = 0.0
    for i in range(lo, hi):
        c = _coef(coef, kind, i)
        total += c * _clip01((_score(a, w, negated, i) - tau * c) / w[i])
    return total


@njit(**_NJIT)
def _constraint_active(a, w, coef, negated, kind, bound, f, lo, hi):
    """Whether plain clipping (τ = 0) violates the constraint (always for XOR)."""
    if kind == XOR:
        return True
    total = _g(a, w, coef, negated, kind, lo, hi, 0.0)
    if kind == OR:
        return total < 1.0
    return total > _bound(bound, kind, f)


@njit(**_NJIT)
def _solve_active(a, w, coef, negated, kind, lo, hi, target, state):
    """v with Σ c_i v_i = target, v_i = clip((a'_i − τ c_i) / w_i, 0, 1), by variable
    fixing; ``state`` rows: s = a'/w, r = c/w, c, and 1 (fixed at 1), 0 (fixed at 0) or
    −1 (free); the solution is written into row 0."""
    n = hi - lo
    for k in range(n):
        i = lo + k
        c = _coef(coef, kind, i)
        state[0, k] = _score(a, w, negated, i) / w[i]
        state[1, k] = c / w[i]
        state[2, k] = c
        state[3, k] = -1.0
    tau = 0.0
    for _ in range(n):
        numerator = -target
        denominator = 0.0
        for k in range(n):
            if state[3, k] < 0.0:
                numerator += state[2, k] * state[0, k]
                denominator += state[2, k] * state[1, k]
        if denominator <= 0.0:
            break
        tau = numerator / denominator
        above = 0.0
        below = 0.0
        for k in range(n):
            if state[3, k] < 0.0:
                x = state[0, k] - tau * state[1, k]
                if x > 1.0:
                    above += state[2, k] * (x - 1.0)
                elif x < 0.0:
                    below -= state[2, k] * x
        if above == below:
            break
        # Clipping at τ gives Σ c v = target + below − above: the root τ* is below τ
        # when above > below, so every v_k(τ) ≥ 1 stays at 1 (and symmetrically).
        fix = 1.0 if above > below else 0.0
        for k in range(n):
            if state[3, k] < 0.0:
                x = state[0, k] - tau * state[1, k]
                if (fix == 1.0 and x >= 1.0) or (fix == 0.0 and x <= 0.0):
                    state[3, k] = fix
                    target -= fix * state[2, k]
    for k in range(n):
        if state[3, k] < 0.0:
            state[0, k] = _clip01(state[0, k] - tau * state[1, k])
        else:
            state[0, k] = state[3, k]


@njit(**_NJIT)
def _qp_factor(a, w, coef, negated, kind, bound, u, f, lo, hi, state):
    if _constraint_active(a, w, coef, negated, kind, bound, f, lo, hi):
        _solve_active(a, w, coef, negated, kind, lo, hi, _bound(bound, kind, f), state)
        for k in range(hi - lo):
            v = state[0, k]
            u[lo + k] = 1.0 - v if negated[lo + k] else v
    else:
        for i in range(lo, hi):
            v = _clip01(_score(a, w, negated, i) / w[i])
            u[i] = 1.0 - v if negated[i] else v


@njit(**_NJIT)
def _chunks(offsets):
    return entry_chunks(offsets, ENTRIES_PER_CHUNK)


@njit(cache=True, nogil=True, parallel=True)
def qp(a, w, offsets, kind, coef, bound, negated, u):
    """Solve every factor's local QP: u = argmax_{u ∈ P} Σ a_i u_i − ½ Σ w_i u_i².

    Parameters
    ----------
    a, w : ndarray of shape (n_entries,), float64
        Scores and weights (w > 0) of the entries.
    offsets : ndarray of shape (n_factors + 1,), int64
        Factor f owns entries ``offsets[f]:offsets[f + 1]``.
    kind : ndarray of shape (n_factors,), int64
        XOR, AT_MOST_ONE, OR, BUDGET or KNAPSACK.
    coef : ndarray of shape (n_entries,), float64
        Costs c_i > 0 of KNAPSACK entries (not read for other kinds).
    bound : ndarray of shape (n_factors,), float64
        B of BUDGET (an integer ≥ 0) and KNAPSACK (≥ 0) factors (not read otherwise).
    negated : ndarray of shape (n_entries,), bool
        Entries entering the constraint as 1 − u_i.
    u : ndarray of shape (n_entries,), float64
        Output: the solutions.
    """
    bounds = _chunks(offsets)
    for chunk in prange(bounds.shape[0] - 1):
        first = bounds[chunk]
        last = bounds[chunk + 1]
        state = np.empty((4, longest_group(offsets, first, last)))
        for f in range(first, last):
            _qp_factor(a, w, coef, negated, kind[f], bound, u, f, offsets[f],
                       offsets[f + 1], state)


@njit(**_NJIT)
def _jvp_factor(u, a, w, coef, negated, kind, bound, f, lo, hi, da, du):
    delta = 0.0
    if _constraint_active(a, w, coef, negated, kind, bound, f, lo, hi):
        numerator = 0.0
        denominator = 0.0
        for i in range(lo, hi):
            if 0.0 < u[i] < 1.0:
                c = _coef(coef, kind, i)
                sc = -c if negated[i] else c
                numerator += sc * da[i] / w[i]
                denominator += c * c / w[i]
        if denominator > 0.0:
            delta = numerator / denominator
    for i in range(lo, hi):
        if 0.0 < u[i] < 1.0:
            c = _coef(coef, kind, i)
            sc = -c if negated[i] else c
            du[i] = (da[i] - sc * delta) / w[i]
        else:
            du[i] = 0.0


@njit(cache=True, nogil=True, parallel=True)
def jvp(u, a, w, offsets, kind, coef, bound, negated, da, du):
    """Jacobian-vector product du = J da of the map a ↦ u at the solution ``u`` of
    :func:`qp` for scores ``a`` (w fixed); see the module docstring for J.

    Parameters
    ----------
    u : ndarray of shape (n_entries,), float64
        The solution :func:`qp` returned for ``a``.
    a, w, offsets, kind, coef, bound, negated
        As for :func:`qp` (``a`` decides whether the constraint is active).
    da : ndarray of shape (n_entries,), float64
        Direction in the scores.
    du : ndarray of shape (n_entries,), float64
        Output: J da.
    """
    bounds = _chunks(offsets)
    for chunk in prange(bounds.shape[0] - 1):
        for f in range(bounds[chunk], bounds[chunk + 1]):
            _jvp_factor(u, a, w, coef, negated, kind[f], bound, f, offsets[f],
                        offsets[f + 1], da, du)


def vjp(u, a, w, offsets, kind, coef, bound, negated, du, da):
    """Vector-Jacobian product da = Jᵀ du of the map a ↦ u at the solution ``u`` of
    :func:`qp` for scores ``a``; J is symmetric, so this is the formula of :func:`jvp`.

    Parameters
    ----------
    u, a, w, offsets, kind, coef, bound, negated
        As for :func:`jvp`.
    du : ndarray of shape (n_entries,), float64
        Cotangent of the solution.
    da : ndarray of shape (n_entries,), float64
        Output: Jᵀ du, the cotangent of the scores.
    """
    jvp(u, a, w, offsets, kind, coef, bound, negated, du, da)


@njit(**_NJIT)
def _map_cardinality(a, negated, kind, bound, x, f, lo, hi, ranked):
    """Best 0/1 vector of a factor with unit costs: in v, the k best entries for the best
    count k of [low, high], ties to the lexicographically smallest x."""
    n = hi - lo
    low = 0 if kind == AT_MOST_ONE or kind == BUDGET else 1
    if kind == OR:
        high = n
    elif kind == BUDGET:
        high = min(n, int(bound[f]))
    else:
        high = 1
    positive = 0
    zero = 0
    for i in range(lo, hi):
        b = -a[i] if negated[i] else a[i]
        ranked[i - lo] = -b
        positive += b > 0.0
        zero += b == 0.0
    # Σ of the k best scores is concave in k, flat on [positive, positive + zero].
    k_low = min(max(positive, low), high)
    k_high = min(max(positive + zero, low), high)
    if k_high == 0:
        for i in range(lo, hi):
            x[i] = 1.0 if negated[i] else 0.0
        return
    _sort(ranked[:n])
    tie = 0.0 if k_low < k_high else -ranked[k_low - 1]
    above = 0
    tied = 0
    for i in range(lo, hi):
        b = -a[i] if negated[i] else a[i]
        above += b > tie
        tied += b == tie
    # Any k_low − above .. k_high − above of the tied entries may be on; greedily keep
    # x_i = 0 (v_i = 1 on negated entries) while a completion remains feasible.
    need_low = k_low - above
    need_high = k_high - above
    on = 0
    for i in range(lo, hi):
        b = -a[i] if negated[i] else a[i]
        if b > tie:
            v = 1
        elif b < tie:
            v = 0
        else:
            tied -= 1
            v = 1 if negated[i] else 0
            if not (on + v <= need_high and on + v + tied >= need_low):
                v = 1 - v
            on += v
        x[i] = float(1 - v) if negated[i] else float(v)


@njit(**_NJIT)
def _map_knapsack(a, coef, negated, bound, x, f, lo, hi):
    """Best feasible 0/1 vector by enumeration in increasing lexicographic order."""
    n = hi - lo
    best = -np.inf
    best_mask = 0
    for mask in range(1 << n):
        value = 0.0
        cost = 0.0
        for i in range(lo, hi):
            bit = (mask >> (n - 1 - (i - lo))) & 1
            if bit == 1:
                value += a[i]
            if (bit == 1) != negated[i]:
                cost += coef[i]
        if cost <= bound[f] and value > best:
            best = value
            best_mask = mask
    for i in range(lo, hi):
        x[i] = float((best_mask >> (n - 1 - (i - lo))) & 1)


@njit(cache=True, nogil=True, parallel=True)
def map_(a, offsets, kind, coef, bound, negated, x):
    """Every factor's MAP: x = argmax of Σ a_i x_i over its feasible 0/1 vectors.

    Ties go to the lexicographically smallest x (first entry most significant). KNAPSACK
    factors are solved exactly by enumeration, at most
    :data:`MAX_KNAPSACK_MAP_DEGREE` entries (ValueError beyond).

    Parameters
    ----------
    a : ndarray of shape (n_entries,), float64
    offsets, kind, coef, bound, negated
        As for :func:`qp`.
    x : ndarray of shape (n_entries,), float64
        Output: the best vectors (0.0 or 1.0).

    Returns
    -------
    value : ndarray of shape (n_factors,), float64
        Σ a_i x_i of every factor's best vector, summed in entry order.
    """
    n_factors = offsets.shape[0] - 1
    # raised here: an exception inside the parallel loop does not reach the caller
    for f in range(n_factors):
        if kind[f] == KNAPSACK and offsets[f + 1] - offsets[f] > MAX_KNAPSACK_MAP_DEGREE:
            raise ValueError("map_: a KNAPSACK factor has more entries than "
                             "MAX_KNAPSACK_MAP_DEGREE")
    value = np.empty(n_factors)
    bounds = _chunks(offsets)
    for chunk in prange(bounds.shape[0] - 1):
        first = bounds[chunk]
        last = bounds[chunk + 1]
        ranked = np.empty(longest_group(offsets, first, last))
        for f in range(first, last):
            lo = offsets[f]
            hi = offsets[f + 1]
            if kind[f] == KNAPSACK:
                _map_knapsack(a, coef, negated, bound, x, f, lo, hi)
            else:
                _map_cardinality(a, negated, kind[f], bound, x, f, lo, hi, ranked)
            total = 0.0
            for i in range(lo, hi):
                if x[i] != 0.0:
                    total += a[i]
            value[f] = total
    return value


def _as_1d(name, array, dtype, length=None):
    array = np.ascontiguousarray(array)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}.")
    if length is not None and array.shape[0] != length:
        raise ValueError(f"{name} has {array.shape[0]} entries; expected {length}.")
    if dtype is bool:
        if array.dtype != np.bool_:
            raise ValueError(f"{name} must be boolean, got dtype {array.dtype}.")
        return array
    converted = array.astype(dtype, copy=False)
    if dtype is np.float64 and not np.all(np.isfinite(converted)):
        raise ValueError(f"{name} must be finite.")
    if dtype is np.int64 and not np.array_equal(converted, array):
        raise ValueError(f"{name} must hold integers.")
    return converted


def check_linear_factors(a, w, offsets, kind, coef, bound, negated, *, for_map=False):
    """Validate a batch of linear-constraint factors for the kernels of this module.

    Parameters
    ----------
    a, w : array-like of shape (n_entries,)
        Finite scores and positive finite weights.
    offsets : array-like of shape (n_factors + 1,), integer
        Non-decreasing, from 0 to n_entries.
    kind : array-like of shape (n_factors,), integer
        Codes XOR, AT_MOST_ONE, OR, BUDGET, KNAPSACK. XOR and OR factors need an entry.
    coef : array-like of shape (n_entries,)
        Positive finite costs; 1 on the entries of factors other than KNAPSACK.
    bound : array-like of shape (n_factors,)
        1 for XOR, AT_MOST_ONE and OR; an integer ≥ 0 for BUDGET; finite ≥ 0 for
        KNAPSACK.
    negated : array-like of shape (n_entries,), bool
    for_map : bool, default=False
        Also require KNAPSACK factors of at most :data:`MAX_KNAPSACK_MAP_DEGREE` entries
        (for :func:`map_`).

    Returns
    -------
    a, w, offsets, kind, coef, bound, negated : ndarray
        Contiguous float64, float64, int64, int64, float64, float64 and bool arrays.

    Raises
    ------
    ValueError
        On mismatched lengths, unknown kinds or invalid values, naming the argument.
    """
    offsets = _as_1d("offsets", offsets, np.int64)
    if offsets.shape[0] < 1:
        raise ValueError("offsets needs at least one entry (n_factors + 1).")
    n_factors = offsets.shape[0] - 1
    a = _as_1d("a", a, np.float64)
    n_entries = a.shape[0]
    w = _as_1d("w", w, np.float64, n_entries)
    coef = _as_1d("coef", coef, np.float64, n_entries)
    negated = _as_1d("negated", negated, bool, n_entries)
    kind = _as_1d("kind", kind, np.int64, n_factors)
    bound = _as_1d("bound", bound, np.float64, n_factors)
    if offsets[0] != 0 or offsets[-1] != n_entries or np.any(np.diff(offsets) < 0):
        raise ValueError(f"offsets must be non-decreasing from 0 to len(a) = {n_entries}.")
    if np.any(w <= 0.0):
        raise ValueError("w must be positive.")
    if np.any(coef <= 0.0):
        raise ValueError("coef must be positive.")
    if np.any((kind < 0) | (kind > KNAPSACK)):
        raise ValueError(f"kind must hold codes 0..{KNAPSACK} ({', '.join(KIND_NAMES)}).")
    degree = np.diff(offsets)
    if np.any(degree[(kind == XOR) | (kind == OR)] == 0):
        raise ValueError("XOR and OR factors need at least one entry.")
    entry_kind = np.repeat(kind, degree)
    if np.any(coef[entry_kind != KNAPSACK] != 1.0):
        raise ValueError("coef must be 1 on the entries of factors other than KNAPSACK.")
    unit = (kind == XOR) | (kind == AT_MOST_ONE) | (kind == OR)
    if np.any(bound[unit] != 1.0):
        raise ValueError("bound must be 1 for XOR, AT_MOST_ONE and OR factors.")
    budget = bound[kind == BUDGET]
    if np.any((budget < 0) | (budget != np.floor(budget))):
        raise ValueError("bound of a BUDGET factor must be an integer >= 0.")
    if np.any(bound[kind == KNAPSACK] < 0):
        raise ValueError("bound of a KNAPSACK factor must be >= 0.")
    if for_map and np.any(degree[kind == KNAPSACK] > MAX_KNAPSACK_MAP_DEGREE):
        raise ValueError(f"map_ enumerates KNAPSACK factors of at most "
                         f"{MAX_KNAPSACK_MAP_DEGREE} entries.")
    return a, w, offsets, kind, coef, bound, negated
