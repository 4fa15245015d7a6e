"""Optimizers: plain functions over a regularized finite-sum objective."""

from ._bcfw import minimize_bcfw, structured_hinge_primal
from ._lbfgs import OptimizeResult, minimize_lbfgs, minimize_lbfgsb
from ._objective import RegularizedRisk
from ._subgradient import minimize_subgradient, perceptron

__all__ = [
    "OptimizeResult",
    "RegularizedRisk",
    "minimize_bcfw",
    "minimize_lbfgs",
    "minimize_lbfgsb",
    "minimize_subgradient",
    "perceptron",
    "structured_hinge_primal",
]
