"""What every optimizer returns."""

from dataclasses import dataclass, field

import numpy as np

__all__ = ["OptimizeResult", "STOPPED_BY_CALLBACK"]

#: The message of a run its callback stopped; such a run has ``converged=False``.
STOPPED_BY_CALLBACK = "stopped by callback"


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
        Whether the solver's own stopping rule (its tolerance) was met: False when
        ``max_iter`` or the callback stopped it first.
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

    @property
    def stopped_by_callback(self):
        """Whether the callback stopped the run (before the solver's tolerance)."""
        return self.message.startswith(STOPPED_BY_CALLBACK)

    def advice(self):
        """What a ConvergenceWarning about this run tells the user to change."""
        if self.stopped_by_callback:
            return ("its callback stopped it before the tolerance; let it run longer to "
                    "converge")
        return "increase max_iter or tol"
