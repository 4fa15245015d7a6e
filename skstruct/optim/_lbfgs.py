"""Limited-memory BFGS with a strong-Wolfe line search.

The two-loop recursion is written here (it costs a few passes over w per iteration); the
line search is scipy's. scipy's own L-BFGS-B spends about 0.2 s per iteration on its
bound-constraint machinery at a million parameters, more than a whole CRF gradient on
CoNLL-2000, so it is offered as ``solver="lbfgsb"`` but not used by default.
"""

import warnings
from collections import deque

import numpy as np
from numba import njit, prange
from scipy.optimize import line_search, minimize

from ..utils._parallel import dynamic_schedule, threads_for
from ._progress import Progress
from ._result import STOPPED_BY_CALLBACK, OptimizeResult

__all__ = ["minimize_lbfgs", "minimize_lbfgsb"]


class _StopEarly(Exception):
    """Raised by the L-BFGS-B callback when :class:`Progress` asks to stop."""


class _CachedObjective:
    """``fun(w) -> (value, grad)`` split into value and gradient calls, evaluated once per w."""

    def __init__(self, fun):
        self.fun = fun
        self.n_evaluations = 0
        self._w = None

    def evaluate(self, w):
        if self._w is None or not np.array_equal(w, self._w):
            self._value, self._grad = self.fun(w)
            self._w = w.copy()
            self.n_evaluations += 1
        return self._value, self._grad

    def value(self, w):
        return self.evaluate(w)[0]

    def gradient(self, w):
        return self.evaluate(w)[1]


#: Elements per chunk of the parallel inner products (about 50 µs each). The chunks
#: depend on the length only and their sums are added in chunk order, so the products
#: are the same on any number of threads.
_CHUNK = 65_536


@njit(parallel=True, cache=True, nogil=True)
def _dot(a, b):
    """a · b, summed chunk by chunk (:data:`_CHUNK` elements), the chunks in order."""
    n = a.shape[0]
    n_chunks = max(1, (n + _CHUNK - 1) // _CHUNK)
    partial = np.empty(n_chunks)
    for c in prange(n_chunks):
        total = 0.0
        for i in range(c * _CHUNK, min(n, (c + 1) * _CHUNK)):
            total += a[i] * b[i]
        partial[c] = total
    return _sum_in_order(partial)


@njit(parallel=True, cache=True, nogil=True)
def _axpy_dot(q, alpha, y, other):
    """q += alpha * y in place, and return other · q (one pass instead of two), summed as
    in :func:`_dot`."""
    n = q.shape[0]
    n_chunks = max(1, (n + _CHUNK - 1) // _CHUNK)
    partial = np.empty(n_chunks)
    for c in prange(n_chunks):
        total = 0.0
        for i in range(c * _CHUNK, min(n, (c + 1) * _CHUNK)):
            value = q[i] + alpha * y[i]
            q[i] = value
            total += other[i] * value
        partial[c] = total
    return _sum_in_order(partial)


@njit(cache=True, nogil=True)
def _sum_in_order(values):
    total = 0.0
    for c in range(values.shape[0]):
        total += values[c]
    return total


def _inner(a, b):
    with threads_for(a.shape[0]), dynamic_schedule():
        return _dot(a, b)


def _two_loop(grad, pairs):
    """-H g for the L-BFGS inverse Hessian approximation H built from (s, y, 1/sᵀy).

    Each pass over the vectors fuses an update of q with the next inner product.
    """
    with threads_for(grad.shape[0]), dynamic_schedule():
        return _two_loop_kernels(grad, pairs)


def _two_loop_kernels(grad, pairs):
    q = grad.copy()
    k = len(pairs)
    if k == 0:
        return -q
    alphas = np.empty(k)
    alphas[k - 1] = pairs[k - 1][2] * _dot(pairs[k - 1][0], q)
    for i in range(k - 1, 0, -1):
        alphas[i - 1] = pairs[i - 1][2] * _axpy_dot(q, -alphas[i], pairs[i][1], pairs[i - 1][0])
    s, y, _ = pairs[k - 1]
    gamma = _dot(s, y) / _dot(y, y)
    beta = pairs[0][2] * gamma * _axpy_dot(q, -alphas[0], pairs[0][1], pairs[0][1])
    q *= gamma
    for i in range(k - 1):
        beta = pairs[i + 1][2] * _axpy_dot(q, alphas[i] - beta, pairs[i][0], pairs[i + 1][1])
    _axpy_dot(q, alphas[k - 1] - beta, pairs[k - 1][0], pairs[k - 1][0])
    return -q


def _remember_pair(pairs, s, y):
    """Append the curvature pair (s, y, 1 / sᵀy) to ``pairs`` (a deque bounded by the
    memory) when sᵀy is safely positive, which keeps the inverse-Hessian estimate
    positive definite."""
    sy = _inner(s, y)
    if sy > 1e-10 * np.sqrt(_inner(s, s) * _inner(y, y)):
        pairs.append((s, y, 1.0 / sy))


def _small_decrease(previous_value, value, tol):
    """The stopping test of the quasi-Newton solvers: a relative decrease of the
    objective of at most ``tol * 1e-3``."""
    return previous_value - value <= tol * 1e-3 * max(abs(previous_value), abs(value), 1.0)


def gradient_threshold(tol, gradient, tol_scale):
    """The largest absolute gradient entry at which a quasi-Newton solver stops:
    ``tol`` (``tol_scale="absolute"``), or ``tol`` times the largest absolute entry of
    ``gradient``, the gradient at the starting point (``"initial"``)."""
    if tol_scale == "absolute":
        return tol
    if tol_scale == "initial":
        return tol * float(np.max(np.abs(gradient), initial=0.0))
    raise ValueError(f"tol_scale must be 'absolute' or 'initial', got {tol_scale!r}.")


def _backtracking(objective, w, direction, value, slope):
    """Armijo backtracking, the fallback when the Wolfe search fails."""
    step = 1.0
    for _ in range(40):
        new_value = objective.value(w + step * direction)
        if new_value <= value + 1e-4 * step * slope:
            return step
        step *= 0.5
    return None


def minimize_lbfgs(
    fun, w0, *, max_iter=100, tol=1e-4, tol_scale="absolute", memory=10, verbose=0,
    callback=None, printer=print
):
    """Minimize a smooth function with L-BFGS.

    Parameters
    ----------
    fun : callable
        ``fun(w) -> (value, gradient)``.
    w0 : ndarray of shape (n_params,)
        Starting point.
    max_iter : int, default=100
        Maximum number of iterations (each needs one or more evaluations of ``fun``).
    tol : float, default=1e-4
        Stop when the largest absolute gradient entry is at most ``tol`` (times the
        largest absolute entry of the gradient at ``w0`` with ``tol_scale="initial"``),
        or when the relative decrease of the objective over one iteration is below
        ``tol * 1e-3``.
    tol_scale : {"absolute", "initial"}, default="absolute"
        What the gradient test compares with: ``tol`` itself, or ``tol`` relative to
        the gradient at the starting point (a test unchanged when the objective is
        multiplied by a constant).
    memory : int, default=10
        Number of correction pairs kept.
    verbose : int, default=0
        Print one line per iteration (objective, gradient norm, time) when positive.
    callback : callable, default=None
        ``callback(n_iter, w, value)`` after each iteration; returning True stops.
    printer : callable, default=print

    Returns
    -------
    OptimizeResult

    Notes
    -----
    Directions come from the two-loop recursion with the usual initial scaling
    sᵀy / yᵀy; steps satisfy the strong Wolfe conditions (c1 = 1e-4, c2 = 0.9), found by
    :func:`scipy.optimize.line_search`, with Armijo backtracking as a fallback. The first
    step is scaled to unit length. Per iteration: O(memory · n_params) besides the
    evaluations of ``fun``.

    References
    ----------
    Nocedal & Wright (2006). Numerical Optimization, 2nd ed., Algorithms 7.4 and 7.5.
    """
    objective = _CachedObjective(fun)
    progress = Progress(verbose, callback, printer, max_iter=max_iter)
    w = np.array(w0, dtype=np.float64)
    value, grad = objective.evaluate(w)
    threshold = gradient_threshold(tol, grad, tol_scale)
    pairs = deque(maxlen=memory)
    previous_value = None
    message, converged = "maximum number of iterations reached", False
    for _ in range(max_iter):
        if np.max(np.abs(grad)) <= threshold:
            message, converged = "gradient below tol", True
            break
        direction = _two_loop(grad, pairs)
        if not pairs:
            direction /= max(1.0, np.sqrt(_inner(direction, direction)))
        slope = _inner(grad, direction)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The line search algorithm")
            step = line_search(
                objective.value, objective.gradient, w, direction, grad, value,
                previous_value, c1=1e-4, c2=0.9, maxiter=20,
            )[0]
        if step is None:
            step = _backtracking(objective, w, direction, value, slope)
        if step is None:
            message, converged = "line search failed (the objective may be at its optimum)", True
            break
        w_new = w + step * direction
        new_value, new_grad = objective.evaluate(w_new)
        _remember_pair(pairs, w_new - w, new_grad - grad)
        previous_value, value, w, grad = value, new_value, w_new, new_grad
        if progress.report(w, value, **{"|grad|": float(np.sqrt(_inner(grad, grad))),
                                        "max|grad|": float(np.max(np.abs(grad)))}):
            message, converged = STOPPED_BY_CALLBACK, False
            break
        if _small_decrease(previous_value, value, tol):
            message, converged = "relative decrease below tol * 1e-3", True
            break
    return OptimizeResult(
        w=w,
        n_iter=progress.n_iter,
        converged=converged,
        objective_curve=progress.curve,
        message=message,
        n_evaluations=objective.n_evaluations,
    )


def minimize_lbfgsb(
    fun, w0, *, max_iter=100, tol=1e-4, tol_scale="absolute", memory=10, verbose=0,
    callback=None, printer=print
):
    """Minimize a smooth function with scipy's L-BFGS-B (no bounds).

    Same parameters, stopping rules and result as :func:`minimize_lbfgs`.
    """
    objective = _CachedObjective(fun)
    progress = Progress(verbose, callback, printer, max_iter=max_iter)
    stopped = []
    w0 = np.asarray(w0, dtype=np.float64)
    gtol = (tol if tol_scale == "absolute"
            else gradient_threshold(tol, objective.gradient(w0), tol_scale))

    def after_iteration(intermediate_result):
        # scipy >= 1.11 passes an OptimizeResult, older versions the iterate itself; an
        # early stop is an exception of our own, which both let through
        w = getattr(intermediate_result, "x", intermediate_result)
        value, gradient = objective.evaluate(w)
        grad_norm = float(np.linalg.norm(gradient))
        if progress.report(w, value, **{"|grad|": grad_norm}):
            stopped.append(np.array(w, dtype=np.float64))
            raise _StopEarly

    try:
        result = minimize(
            objective.evaluate,
            w0,
            jac=True,
            method="L-BFGS-B",
            callback=after_iteration,
            options=dict(
                maxiter=max_iter,
                maxfun=max(15000, 2 * max_iter),
                gtol=gtol,
                ftol=tol * 1e-3,
                maxcor=memory,
            ),
        )
        w, converged, message = result.x, result.status == 0, str(result.message)
    except _StopEarly:
        w, converged, message = stopped[-1], False, STOPPED_BY_CALLBACK
    return OptimizeResult(
        w=w,
        n_iter=progress.n_iter,
        converged=converged,
        objective_curve=progress.curve,
        message=message,
        n_evaluations=objective.n_evaluations,
    )
