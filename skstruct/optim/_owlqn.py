"""Orthant-wise limited-memory quasi-Newton (OWL-QN) for a smooth function plus an L1 term.

Minimizes F(w) = f(w) + c ‖w‖₁ with f smooth: L-BFGS on the pseudo-gradient, directions
and line-search points kept in the orthant of the current iterate, so that coordinates
reach exactly zero and stay there while the L1 term holds them. It is the method CRFsuite
runs for ``c1 > 0``. The two-loop recursion and inner products are L-BFGS's
(:mod:`skstruct.optim._lbfgs`).
"""

from collections import deque

import numpy as np
from numba import njit

from ._lbfgs import (
    _CachedObjective,
    _inner,
    _remember_pair,
    _small_decrease,
    _two_loop,
    gradient_threshold,
)
from ._progress import Progress
from ._result import STOPPED_BY_CALLBACK, OptimizeResult

__all__ = ["minimize_owlqn", "pseudo_gradient"]


def pseudo_gradient(w, grad, l1):
    """The minimum-norm subgradient of f(w) + l1 ‖w‖₁, given ``grad`` = ∇f(w).

    Parameters
    ----------
    w, grad : ndarray of shape (n_params,)
    l1 : float
        The L1 strength c ≥ 0.

    Returns
    -------
    ndarray of shape (n_params,)
        ``grad + l1 * sign(w)`` where w ≠ 0; where w = 0, ``grad + l1`` if that is
        negative, ``grad - l1`` if that is positive, else 0 (zero is optimal along that
        coordinate). F is at a minimum exactly when it is zero.

    Examples
    --------
    >>> import numpy as np
    >>> pseudo_gradient(np.array([1.0, 0.0, 0.0, 0.0]), np.array([0.5, 0.5, 2.0, -2.0]), 1.0)
    array([ 1.5,  0. ,  1. , -1. ])
    """
    w = np.ascontiguousarray(w, dtype=np.float64)
    grad = np.ascontiguousarray(grad, dtype=np.float64)
    out = np.empty_like(grad)
    _pseudo_gradient_into(w, grad, float(l1), out)
    return out


@njit(cache=True, nogil=True)
def _pseudo_gradient_into(w, grad, l1, out):
    """``out`` = the pseudo-gradient; returns (max |out_j|, ‖out‖²) from the same pass.

    Written without branches on the signs (selects instead), which are unpredictable.
    """
    largest, squares = 0.0, 0.0
    for j in range(w.shape[0]):
        g, wj = grad[j], w[j]
        sign = (wj > 0.0) - (wj < 0.0)
        at_zero = max(g - l1, 0.0) + min(g + l1, 0.0)
        v = g + l1 * sign if wj != 0.0 else at_zero
        out[j] = v
        largest = max(largest, abs(v))
        squares += v * v
    return largest, squares


@njit(cache=True, nogil=True)
def _kinked_pseudo_gradient_into(w, grad, down, up, l1, out):
    """The pseudo-gradient where f itself may have kinks at zero.

    At w_j = 0, ∂f holds [g_j − down_j, g_j + up_j], so ∂F holds
    [g_j − down_j − l1, g_j + up_j + l1]; ``out`` is its element of least magnitude.
    Elsewhere it is g_j + l1 sign(w_j). Returns (max |out_j|, ‖out‖²).
    """
    largest, squares = 0.0, 0.0
    for j in range(w.shape[0]):
        g, wj = grad[j], w[j]
        if wj != 0.0:
            v = g + l1 * ((wj > 0.0) - (wj < 0.0))
        else:
            v = max(g - down[j] - l1, 0.0) + min(g + up[j] + l1, 0.0)
        out[j] = v
        largest = max(largest, abs(v))
        squares += v * v
    return largest, squares


@njit(cache=True, nogil=True)
def _orthant_gradient_difference(w_old, w_new, g_old, down_old, up_old, g_new, down_new,
                                 up_new, kinked, out):
    """y = ∇f(new) − ∇f(old) on the orthant the step went through.

    f is smooth on each orthant of the kinked coordinates, so a curvature pair must
    compare its gradients there: a kinked coordinate that leaves zero (or comes back to
    it) takes the one-sided derivative on the side of the step (g + up going up from
    zero or coming down to it, g − down the other way); one that did not move gives 0
    (the step holds no curvature along it). Other coordinates: g_new − g_old.
    """
    for j in range(w_old.shape[0]):
        if not kinked[j]:
            out[j] = g_new[j] - g_old[j]
            continue
        s = w_new[j] - w_old[j]
        if s == 0.0:
            out[j] = 0.0
            continue
        before = g_old[j]
        if w_old[j] == 0.0:
            before += up_old[j] if s > 0.0 else -down_old[j]
        after = g_new[j]
        if w_new[j] == 0.0:
            after += up_new[j] if s < 0.0 else -down_new[j]
        out[j] = after - before


@njit(cache=True, nogil=True)
def _keep_descent_coordinates(direction, pg):
    """Zero the entries of ``direction`` that do not descend along −pg (d_j pg_j ≥ 0)."""
    for j in range(direction.shape[0]):
        d = direction[j]
        direction[j] = d if d * pg[j] < 0.0 else 0.0


@njit(cache=True, nogil=True)
def _keep_descent_coordinates_of(direction, pg, mask):
    """:func:`_keep_descent_coordinates` on the coordinates of ``mask`` only."""
    for j in range(direction.shape[0]):
        if mask[j] and direction[j] * pg[j] >= 0.0:
            direction[j] = 0.0


@njit(cache=True, nogil=True)
def _orthant_point_of(w, direction, pg, step, mask, out):
    """``out`` = w + step d, projected on the orthant of w (sign(w_j), or sign(−pg_j) where
    w_j = 0) along the coordinates of ``mask``: those that leave it are zero. Returns
    ‖out‖₁ and pgᵀ(out − w), from the same pass."""
    norm, slope = 0.0, 0.0
    for j in range(w.shape[0]):
        wj, gj = w[j], pg[j]
        p = wj + step * direction[j]
        if mask[j]:
            # p stays when it has the sign of the orthant: of w_j, or of −pg_j at zero
            reference = wj if wj != 0.0 else -gj
            p = p if p * reference > 0.0 else 0.0
        out[j] = p
        norm += abs(p)
        slope += gj * (p - wj)
    return norm, slope


def _start(fun, w0, fixed, masking):
    """The starting point (a float copy of w0, zero at ``fixed``) and ``fun`` with the
    ``fixed`` coordinates' derivatives zeroed by ``masking`` (:func:`_masked` or
    :func:`_masked_kinked`)."""
    w = np.array(w0, dtype=np.float64)
    if fixed is None:
        return w, fun
    fixed = np.asarray(fixed, dtype=bool)
    if fixed.shape != w.shape:
        raise ValueError(f"fixed has shape {fixed.shape}; w0 has shape {w.shape}.")
    w[fixed] = 0.0
    return w, masking(fun, ~fixed)


def _masked(fun, free):
    """``fun`` with the gradient zeroed outside ``free`` (those coordinates never move)."""
    fixed = np.ascontiguousarray(~np.asarray(free, dtype=bool))

    def masked(w):
        value, grad = fun(w)
        grad = np.array(grad, dtype=np.float64)
        # NumPy, not a kernel: one here compiled at the first such fit of a fresh install
        grad[fixed] = 0.0
        return value, grad
    return masked


def minimize_owlqn(
    fun, w0, *, l1=0.0, fixed=None, kinked=None, max_iter=100, tol=1e-4,
    tol_scale="absolute", memory=10, verbose=0,
    callback=None, printer=print,
):
    """Minimize f(w) + l1 ‖w‖₁ with OWL-QN, f smooth.

    Parameters
    ----------
    fun : callable
        ``fun(w) -> (value, gradient)`` of the smooth part f.
    w0 : ndarray of shape (n_params,)
        Starting point.
    l1 : float, default=0.0
        L1 strength c ≥ 0. With 0 this is L-BFGS with a backtracking line search.
    fixed : ndarray of bool of shape (n_params,), default=None
        Coordinates held at zero (their entries of ``w0`` are set to zero and their
        gradient is ignored). None: all coordinates are free.
    kinked : ndarray of bool of shape (n_params,), default=None
        Coordinates along which f itself may have a kink at zero. ``fun(w)`` then
        returns ``(value, gradient, down, up)``: at a kinked w_j = 0, ∂f holds
        [g_j − down_j, g_j + up_j] (down, up ≥ 0; zero elsewhere). These coordinates
        are kept in their orthant as the L1 term's are, the pseudo-gradient is the
        element of least magnitude of ∂F, and the curvature pairs compare f's
        gradients on the orthant of each step. When they are all zero in ``w0``, they
        are held there until the other coordinates meet the tolerance (or decrease F
        by less than ``tol * 1e-3``), then released: a kink holds a coordinate at zero
        only where ∂f is wide, which it may not be at ``w0`` (LP-SparseMAP at w = 0:
        all marginals 0, no spread, every PAIR score pulled up and every variable
        made live). None: f is smooth.
    max_iter : int, default=100
        Maximum number of iterations.
    tol : float, default=1e-4
        Stop when the largest absolute entry of the pseudo-gradient (the minimum-norm
        subgradient of F, :func:`pseudo_gradient`) is at most ``tol``, or when the relative
        decrease of F over one iteration is below ``tol * 1e-3`` (L-BFGS's rules, with the
        pseudo-gradient in place of the gradient); with ``kinked``, over the last
        ``memory`` iterations.
    tol_scale : {"absolute", "initial"}, default="absolute"
        ``"initial"``: the pseudo-gradient test is relative to the largest absolute
        entry of the pseudo-gradient at ``w0`` (see :func:`minimize_lbfgs`).
    memory : int, default=10
        Number of correction pairs kept.
    verbose : int, default=0
        Print one line per iteration (objective, pseudo-gradient norm, nonzero count,
        time) when positive.
    callback : callable, default=None
        ``callback(n_iter, w, value)`` after each iteration; returning True stops.
    printer : callable, default=print

    Returns
    -------
    OptimizeResult
        ``objective_curve`` holds F = f + l1 ‖w‖₁; ``extra["n_nonzero"]`` the number of
        nonzero entries of the final w.

    Notes
    -----
    Each iteration (Andrew & Gao 2007):

    1. the pseudo-gradient v of F at w (:func:`pseudo_gradient`);
    2. the L-BFGS direction d = −H v from the pairs (s, y) of differences of iterates and
       of gradients of f (not of v); the first direction is scaled to unit length;
    3. d_j is set to 0 where it does not point downhill along −v_j (sign(d_j) ≠ sign(−v_j));
    4. the orthant ξ_j = sign(w_j), or sign(−v_j) where w_j = 0;
    5. backtracking from step 1, halving: the trial point w + t d is projected on the
       orthant (coordinates leaving it are set to zero) and accepted when
       F(new) ≤ F(w) + 10⁻⁴ vᵀ(new − w).

    The pair is kept when sᵀy > 10⁻¹⁰ ‖s‖ ‖y‖. Per iteration O(memory · n_params) besides
    the evaluations of f (usually one).

    References
    ----------
    Andrew & Gao (2007). Scalable training of L1-regularized log-linear models. ICML.

    Examples
    --------
    >>> import numpy as np
    >>> fun = lambda w: (0.5 * w @ w - w @ np.array([2.0, 0.5]), w - np.array([2.0, 0.5]))
    >>> result = minimize_owlqn(fun, np.zeros(2), l1=1.0, tol=1e-10)
    >>> np.round(result.w, 6).tolist()
    [1.0, 0.0]
    """
    l1 = float(l1)
    if not l1 >= 0:
        raise ValueError(f"l1 must be a non-negative float; got {l1!r}.")
    if kinked is not None:
        return _minimize_kinked(fun, w0, l1, fixed, kinked, max_iter, tol, tol_scale,
                                memory, verbose, callback, printer)
    w, fun = _start(fun, w0, fixed, _masked)
    objective = _CachedObjective(fun)
    progress = Progress(verbose, callback, printer, max_iter=max_iter)
    smooth, grad = objective.evaluate(w)
    value = smooth + l1 * float(np.abs(w).sum())
    pg = np.empty_like(w)
    pairs = deque(maxlen=memory)
    message, converged = "maximum number of iterations reached", False
    threshold = None
    for _ in range(max_iter):
        largest, squares = _pseudo_gradient_into(w, grad, l1, pg)
        if threshold is None:
            threshold = gradient_threshold(tol, pg, tol_scale)
        if largest <= threshold:
            message, converged = "pseudo-gradient below tol", True
            break
        direction = _two_loop(pg, pairs)
        if l1 > 0:
            _keep_descent_coordinates(direction, pg)
        if not pairs:
            direction /= max(1.0, np.sqrt(_inner(direction, direction)))
        found = _backtracking(objective, w, direction, pg, value, l1)
        if found is None:
            message, converged = "line search failed (the objective may be at its optimum)", True
            break
        w_new, new_value = found
        new_grad = objective.gradient(w_new)
        _remember_pair(pairs, w_new - w, new_grad - grad)
        previous_value, value, w, grad = value, new_value, w_new, new_grad
        columns = {"|pgrad|": float(np.sqrt(squares))}
        if l1 > 0:
            columns["nonzero"] = int(np.count_nonzero(w))
        if progress.report(w, value, **columns):
            message, converged = STOPPED_BY_CALLBACK, False
            break
        if _small_decrease(previous_value, value, tol):
            message, converged = "relative decrease below tol * 1e-3", True
            break
    return _result(w, progress, converged, message, objective)


def _result(w, progress, converged, message, objective, **extra):
    """The run's OptimizeResult; ``extra`` beside the number of nonzero entries of w."""
    return OptimizeResult(w=w, n_iter=progress.n_iter, converged=converged,
                          objective_curve=progress.curve, message=message,
                          n_evaluations=objective.n_evaluations,
                          extra={"n_nonzero": int(np.count_nonzero(w)), **extra})


def _backtracking(objective, w, direction, pg, value, l1, max_halvings=40, orthant=None):
    """The first orthant-projected point along ``direction`` that decreases F enough
    (projected on all coordinates with an L1 term, or on those of ``orthant``).

    Returns (point, F(point)), or None when no step of the 40 halvings is accepted.
    """
    step = 1.0
    if orthant is None:
        orthant = np.full(w.shape[0], l1 > 0)
    for _ in range(max_halvings):
        point = np.empty_like(w)
        norm, slope = _orthant_point_of(w, direction, pg, step, orthant, point)
        new_value = objective.value(point) + l1 * norm
        if new_value <= value + 1e-4 * slope:
            return point, new_value
        step *= 0.5
    return None


class _KinkedObjective(_CachedObjective):
    """``fun(w) -> (value, grad, down, up)`` evaluated once per w; :meth:`spread` gives
    the last point's (down, up)."""

    def evaluate(self, w):
        if self._w is None or not np.array_equal(w, self._w):
            self._value, self._grad, self._down, self._up = self.fun(w)
            self._w = w.copy()
            self.n_evaluations += 1
        return self._value, self._grad

    def spread(self, w):
        self.evaluate(w)
        return self._down, self._up


def _masked_kinked(fun, free):
    """:func:`_masked` for a ``fun`` that also returns the spread (zeroed alike)."""
    fixed = np.ascontiguousarray(~np.asarray(free, dtype=bool))

    def masked(w):
        value, grad, down, up = fun(w)
        grad, down, up = (np.array(a, dtype=np.float64) for a in (grad, down, up))
        for array in (grad, down, up):
            array[fixed] = 0.0
        return value, grad, down, up
    return masked


def _minimize_kinked(fun, w0, l1, fixed, kinked, max_iter, tol, tol_scale, memory,
                     verbose, callback, printer):
    """:func:`minimize_owlqn` with kinks of f at zero along ``kinked`` (its docstring)."""
    w, fun = _start(fun, w0, fixed, _masked_kinked)
    kinked = np.ascontiguousarray(kinked, dtype=bool)
    if kinked.shape != w.shape:
        raise ValueError(f"kinked has shape {kinked.shape}; w0 has shape {w.shape}.")
    # the coordinates kept in their orthant: the kinked ones, and all with an L1 term
    orthant = np.ones_like(kinked) if l1 > 0 else kinked
    objective = _KinkedObjective(fun)
    progress = Progress(verbose, callback, printer, max_iter=max_iter)
    smooth, grad = objective.evaluate(w)
    down, up = objective.spread(w)
    value = smooth + l1 * float(np.abs(w).sum())
    pg = np.empty_like(w)
    pairs = deque(maxlen=memory)
    message, converged = "maximum number of iterations reached", False
    threshold = None
    # From a start with every kinked coordinate at zero, they are held there until the
    # others have converged (see the docstring of minimize_owlqn)
    held = kinked.copy() if not np.any(w[kinked]) else None
    history = deque([value], maxlen=memory + 1)
    for _ in range(max_iter):
        largest, squares = _kinked_pseudo_gradient_into(w, grad, down, up, l1, pg)
        if held is not None:
            pg[held] = 0.0
            largest = float(np.max(np.abs(pg), initial=0.0))
            squares = _inner(pg, pg)
        if threshold is None:
            threshold = gradient_threshold(tol, pg, tol_scale)
        if largest <= threshold and held is not None:
            held = None
            largest, squares = _kinked_pseudo_gradient_into(w, grad, down, up, l1, pg)
        if largest <= threshold:
            message, converged = "pseudo-gradient below tol", True
            break
        direction = _two_loop(pg, pairs)
        _keep_descent_coordinates_of(direction, pg, orthant)
        if not pairs:
            direction /= max(1.0, np.sqrt(_inner(direction, direction)))
        found = _backtracking(objective, w, direction, pg, value, l1, orthant=orthant)
        if found is None:
            message = "line search failed (no step along the direction decreases F)"
            break
        w_new, new_value = found
        new_grad = objective.gradient(w_new)
        new_down, new_up = objective.spread(w_new)
        y = np.empty_like(w)
        _orthant_gradient_difference(w, w_new, grad, down, up, new_grad, new_down,
                                     new_up, kinked, y)
        _remember_pair(pairs, w_new - w, y)
        value, w, grad, down, up = new_value, w_new, new_grad, new_down, new_up
        largest = _kinked_pseudo_gradient_into(w, grad, down, up, l1, pg)[0]
        columns = {"max|pgrad|": float(largest), "at zero": int(np.sum(kinked & (w == 0)))}
        if progress.report(w, value, **columns):
            message, converged = STOPPED_BY_CALLBACK, False
            break
        history.append(value)
        if len(history) == history.maxlen and _small_decrease(history[0], value, tol):
            # over the last `memory` iterations: a single step may be short where a
            # coordinate comes to its kink
            if held is None:
                message, converged = "relative decrease below tol * 1e-3", True
                break
            held = None
            history.clear()
            history.append(value)
    largest = _kinked_pseudo_gradient_into(w, grad, down, up, l1, pg)[0]
    return _result(w, progress, converged, message, objective,
                   max_pseudo_gradient=float(largest),
                   n_kinked_at_zero=int(np.sum(kinked & (w == 0))))
