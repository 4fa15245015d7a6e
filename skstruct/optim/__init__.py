"""Optimizers: plain functions over a regularized finite-sum objective."""

from ._bcfw import minimize_bcfw, structured_hinge_primal
from ._cutting_plane import minimize_cutting_plane
from ._lbfgs import OptimizeResult, minimize_lbfgs, minimize_lbfgsb
from ._objective import RegularizedRisk
from ._qp import QPResult, cutting_plane_primal_dual, solve_capped_simplex_qp
from ._subgradient import minimize_subgradient, perceptron

__all__ = [
    "OptimizeResult",
    "QPResult",
    "RegularizedRisk",
    "cutting_plane_primal_dual",
    "minimize_bcfw",
    "minimize_cutting_plane",
    "minimize_lbfgs",
    "minimize_lbfgsb",
    "minimize_subgradient",
    "perceptron",
    "solve_capped_simplex_qp",
    "structured_hinge_primal",
]
