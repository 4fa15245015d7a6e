"""The risk of one batch of a stream, with the earlier batches summarized by a diagonal
quadratic: what ``partial_fit`` minimizes when its solver is a full-batch one."""

import numpy as np

from ._wrapped_risk import WrappedRisk

__all__ = ["StreamedRisk"]


class StreamedRisk(WrappedRisk):
    """G(w) = (n / N) F(w) + (1 / (2N)) Σ_p c_p (w_p − w̄_p)²: a batch's risk F beside a
    diagonal Laplace summary of the batches before it.

    The earlier batches' total data term Σ_{j<b} s_j ℓ_j(w) is replaced by its
    second-order expansion at the weights w̄ they left, with the gradient there taken as
    zero (w̄ minimized them) and the Hessian by its diagonal c (accumulated over the
    batches, each where its caller chose: PerturbedMAPClassifier takes it at the weights
    its call started from). With F the batch's weighted mean
    loss plus (λ N / (2n)) ‖w‖², G is, up to that expansion, the regularized risk of all
    N units of sample weight seen so far: (1/N) Σ_j s_j ℓ_j(w) + (λ/2) ‖w‖². The first
    batch (c = 0) is exactly a ``fit`` on it.

    Parameters
    ----------
    risk : RegularizedRisk
        F, the batch's risk, with L2 strength λ N / n.
    batch_weight : float
        n, the batch's total sample weight.
    center : ndarray of shape (n_params,)
        w̄.
    curvature : ndarray of shape (n_params,)
        c ≥ 0, the earlier batches' summed diagonal curvature (in units of sample weight).
    seen_weight : float
        The earlier batches' total sample weight; N = ``seen_weight`` + n.
    """

    def __init__(self, risk, batch_weight, center, curvature, seen_weight):
        super().__init__(risk)
        self.total_weight = float(seen_weight) + float(batch_weight)
        self.batch_share = float(batch_weight) / self.total_weight
        self.center = np.asarray(center, dtype=np.float64)
        self.curvature = np.asarray(curvature, dtype=np.float64)
        if self.center.shape != (risk.n_params,) or self.curvature.shape != (risk.n_params,):
            raise ValueError("the summary of the earlier batches has the wrong number of "
                             "parameters.")

    def value_and_gradient(self, w):
        """G(w) and ∇G(w)."""
        value, gradient = self.risk.value_and_gradient(w)
        offset = w - self.center
        pulled = self.curvature * offset / self.total_weight
        return (self.batch_share * value + 0.5 * float(offset @ pulled),
                self.batch_share * gradient + pulled)
