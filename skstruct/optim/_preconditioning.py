"""A smooth risk seen in diagonally rescaled coordinates, so that a quasi-Newton solver's
progress does not depend on the scale of each feature."""

import numpy as np

from ._wrapped_risk import WrappedRisk

__all__ = ["DiagonallyPreconditionedRisk", "run_preconditioned"]


class DiagonallyPreconditionedRisk(WrappedRisk):
    """G(v) = F(D v) for a diagonal D > 0: the same minimizer w* = D v*, in coordinates
    in which the curvature of every parameter is about 1.

    With D_p = 1 / sqrt(h_p), h_p an estimate of ∂²F / ∂w_p², a feature 1000 times
    larger than another no longer makes the problem 10⁶ times worse conditioned: L-BFGS
    starts from a scalar multiple of the identity, which fits G, not F, when the
    features' scales differ.

    Parameters
    ----------
    risk : RegularizedRisk
        The risk F; only ``value_and_gradient``, ``loss`` and ``n_examples`` are read.
    scale : ndarray of shape (n_params,)
        D, positive and finite.
    """

    def __init__(self, risk, scale):
        scale = np.asarray(scale, dtype=np.float64)
        if scale.shape != (risk.n_params,) or not np.all(np.isfinite(scale)) \
                or np.any(scale <= 0):
            raise ValueError("the preconditioner must hold one positive finite entry per "
                             "parameter.")
        super().__init__(risk)
        self.scale = scale

    def value_and_gradient(self, v):
        """G(v) and ∇G(v) = D ∇F(D v)."""
        value, gradient = self.risk.value_and_gradient(self.scale * v)
        return value, self.scale * gradient

    def compiled_objective(self):
        """None: the rescaled risk is evaluated through ``value_and_gradient``."""
        return None


def run_preconditioned(run, risk, w0, scale, options):
    """``run(risk', v0, options')`` on the rescaled risk, with v0 = w0 / D, the callback
    given w = D v, and the result's ``w`` mapped back to the original coordinates."""
    rescaled = DiagonallyPreconditionedRisk(risk, scale)
    options = dict(options)
    callback = options.get("callback")
    if callback is not None:
        options["callback"] = lambda n_iter, v, *args: callback(n_iter, scale * v, *args)
    result = run(rescaled, np.asarray(w0, dtype=np.float64) / scale, options)
    result.w = scale * result.w
    return result
