"""Limited-memory BFGS (scipy's L-BFGS-B) with progress reporting."""

import time
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import minimize

__all__ = ["OptimizeResult", "minimize_lbfgs"]


@dataclass
class OptimizeResult:
    """What an optimizer returns.

    Attributes
    ----------
    w : ndarray of shape (n_params,)
        The final iterate.
    n_iter : int
        Number of iterations done.
    converged : bool
        Whether a stopping criterion other than ``max_iter`` was met.
    objective_curve : list of float
        Objective value after each iteration.
    message : str
    """

    w: np.ndarray
    n_iter: int
    converged: bool
    objective_curve: list = field(default_factory=list)
    message: str = ""


def minimize_lbfgs(
    fun, w0, *, max_iter=100, tol=1e-4, memory=10, verbose=0, callback=None, printer=print
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
        Stop when the largest absolute gradient entry is at most ``tol``, or when the
        relative decrease of the objective over one iteration is below ``tol * 1e-3``.
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
    """
    last = {}
    curve = []
    start = time.perf_counter()

    def evaluate(w):
        value, grad = fun(w)
        last["w"], last["value"], last["grad"] = w.copy(), value, grad
        return value, grad

    def after_iteration(intermediate_result):
        w, value = intermediate_result.x, intermediate_result.fun
        curve.append(float(value))
        if verbose:
            grad = last["grad"] if np.array_equal(last.get("w"), w) else None
            norm = np.linalg.norm(grad) if grad is not None else float("nan")
            elapsed = time.perf_counter() - start
            printer(
                f"iter {len(curve):4d}  objective {value: .8e}  |grad| {norm:.3e}  "
                f"time {elapsed:8.2f}s"
            )
        if callback is not None and callback(len(curve), w, value):
            raise StopIteration

    result = minimize(
        evaluate,
        np.asarray(w0, dtype=np.float64),
        jac=True,
        method="L-BFGS-B",
        callback=after_iteration,
        options=dict(
            maxiter=max_iter,
            maxfun=max(15000, 2 * max_iter),
            gtol=tol,
            ftol=tol * 1e-3,
            maxcor=memory,
        ),
    )
    converged = result.status == 0 or "callback" in str(result.message)
    return OptimizeResult(
        w=result.x,
        n_iter=int(result.nit),
        converged=bool(converged),
        objective_curve=curve,
        message=str(result.message),
    )
