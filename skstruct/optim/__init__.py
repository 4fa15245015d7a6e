"""Optimizers: plain functions over a regularized finite-sum objective, the result type
they share, their progress reporter, and the registry the estimators consult."""

from ._bcfw import minimize_bcfw, structured_hinge_primal
from ._cutting_plane import minimize_cutting_plane
from ._lbfgs import minimize_lbfgs, minimize_lbfgsb
from ._objective import RegularizedRisk
from ._owlqn import minimize_owlqn
from ._progress import Progress
from ._qp import QPResult, cutting_plane_primal_dual, solve_capped_simplex_qp
from ._registry import (
    LOSS_FAMILIES,
    SolverNames,
    SolverSpec,
    check_solver,
    get_solver,
    loss_family,
    register_solver,
    run_solver,
    solver_names,
)
from ._result import OptimizeResult
from ._subgradient import minimize_subgradient, perceptron
from . import _solvers  # noqa: F401  (registers the built-in solvers)

__all__ = [
    "LOSS_FAMILIES",
    "OptimizeResult",
    "Progress",
    "QPResult",
    "RegularizedRisk",
    "SolverNames",
    "SolverSpec",
    "check_solver",
    "cutting_plane_primal_dual",
    "get_solver",
    "loss_family",
    "minimize_bcfw",
    "minimize_cutting_plane",
    "minimize_lbfgs",
    "minimize_lbfgsb",
    "minimize_owlqn",
    "minimize_subgradient",
    "perceptron",
    "register_solver",
    "run_solver",
    "solve_capped_simplex_qp",
    "solver_names",
    "structured_hinge_primal",
]
