"""Optimizers: plain functions over a regularized finite-sum objective."""

from ._lbfgs import OptimizeResult, minimize_lbfgs, minimize_lbfgsb
from ._objective import RegularizedRisk

__all__ = ["OptimizeResult", "RegularizedRisk", "minimize_lbfgs", "minimize_lbfgsb"]
