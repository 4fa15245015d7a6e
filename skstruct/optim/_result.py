"""What every optimizer returns."""

from dataclasses import dataclass, field

import numpy as np

__all__ = ["OptimizeResult"]


@dataclass
class OptimizeResult:
    """What an optimizer returns.

    Attributes
    ----------
    w : ndarray of shape (n_params,)
        The final iterate (the averaged one for solvers that average).
    n_iter : int
        Number of iterations (passes, for incremental solvers) done.
    converged : bool
        Whether a stopping criterion other than ``max_iter`` was met.
    objective_curve : list of float
        Objective value after each iteration.
    message : str
        Why the solver stopped.
    n_evaluations : int
        Number of objective evaluations (full-batch solvers) or single-example steps
        (incremental solvers).
    duality_gaps : list of float or None
        Duality gap after each iteration, for solvers that compute one.
    extra : dict
        Solver-specific state (step counters, working sets...).
    """

    w: np.ndarray
    n_iter: int
    converged: bool
    objective_curve: list = field(default_factory=list)
    message: str = ""
    n_evaluations: int = 0
    duality_gaps: list = None
    extra: dict = field(default_factory=dict)
