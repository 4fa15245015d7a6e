"""Compiled per-example smoothed structural hinges, for the compiled per-example engine.

For one example with part scores η (``unary`` rows and ``pair`` scores) and a task loss Δ
that decomposes over parts, write θ_y = ⟨η, a_y⟩ and z_y = θ_y + Δ(y_i, y) for the
cost-augmented score of output y. :func:`smoothed_oracle` returns the smoothed hinge

.. math::

    f_μ(η) = h_μ(z) − z_{y_i},
    \\qquad h_μ(z) = \\max_{q ∈ \\triangle} \\big[⟨q, z⟩ − μ ω(q)\\big],

and its gradient with respect to η, Σ_y q*_y a_y − a_{y_i}, for

* entropy smoothing (ω = −H): h_μ(z) = μ log Σ_y exp(z_y / μ), q* ∝ exp(z / μ) (the
  log-partition and marginals of the cost-augmented scores divided by μ);
* ℓ2 smoothing (ω = ½‖·‖²) restricted to the K best cost-augmented outputs:
  q* = the projection onto the simplex of their scores divided by μ
  (:func:`~skstruct.losses._smoothed.project_sorted_row`), certified exact when it
  leaves the K-th at zero weight or fewer than K outputs have a finite score.

z_{y_i} = θ_{y_i} + Δ(y_i, y_i) is the gold output scored with the same augmented scores,
as :class:`~skstruct.losses.EntropySmoothedHingeLoss` and
:class:`~skstruct.losses.L2SmoothedHingeLoss` score it; every built-in decomposable loss
has Δ(y_i, y_i) = 0, so this is max_μ[θ_y + Δ] − θ_{y_i}. These are the compiled
counterparts of those two losses, one example at a time, for the incremental solvers
(SVRG, Casimir-SVRG); with μ = 1, entropy smoothing and no costs (the oracle of plain
MAP, rescaling None) the value is the CRF loss log Z − θ_{y_i}.

The oracle reads the :class:`~skstruct.decoders._core.engine_protocol.CompiledOracle`
arrays that the decoders build for margin rescaling (or plain MAP, zero costs); each
family's smoothed oracle lives in its package (``_chain/smoothed.py``,
``_tabular/smoothed.py``, ``_tree/smoothed.py``), reached through the generated dispatcher
:func:`~skstruct.decoders._engine.dispatch.smoothed_oracle`:

* chain: the Hamming loss (plain, normalized, with class costs) from ``ints`` / ``floats``;
  entropy by the rescaled forward–backward
  (:func:`~skstruct.decoders._chain.kernels.scaled_forward_backward_one`), in log space
  when the transition or end scores divided by μ spread beyond
  ``SCALED_RANGE_LIMIT`` or forbid a part, as :class:`ChainDecoder` decides; ℓ2 by list
  Viterbi (:func:`~skstruct.decoders._chain.kernels.top_k_one`).
* multiclass: any loss (its matrix or mismatch values); softmax, or the K best classes.
* multilabel: per-label costs (``costs_i`` rows of 2 L values, off then on); independent
  sigmoids (the entropy over all 2^L label sets factorizes over labels), or the exact K
  best label sets (:func:`~skstruct.decoders._tabular.kernels.top_k_one`).
* tree: entropy only (matrix-tree / inside–outside marginals); trees have no top-K
  decoder, so ℓ2 raises.

:func:`supports_smoothed` tells a solver, in Python, whether a compiled oracle has a
smoothed form: it asks the family of the oracle's code (its registration's
``supports_smoothed``).
"""

from .._core.engine_protocol import MAP, MARGIN
from .._core.registry import family_of_code
from .._core.smoothing import ENTROPY, L2
from .dispatch import smoothed_oracle

__all__ = ["ENTROPY", "L2", "smoothed_oracle", "supports_smoothed"]


def supports_smoothed(compiled_oracle, smoothing):
    """Whether :func:`smoothed_oracle` serves ``compiled_oracle`` with ``smoothing``.

    Parameters
    ----------
    compiled_oracle : CompiledOracle or None
        From a decoder's ``compiled_oracle(task_loss, rescaling, y, y_offsets)``.
    smoothing : {0, 1} or {"entropy", "l2"}
        :data:`ENTROPY` or :data:`L2`.

    Returns
    -------
    bool
        True for margin rescaling with a loss that decomposes over parts as the family
        kernel adds it (chains: Hamming, normalized or with class costs; multiclass: any
        loss; multilabel: per-label costs; trees: arc costs, entropy only), and for plain
        MAP (no costs: the CRF loss); False for slack rescaling, count-statistic and 0/1
        losses on chains and multilabel outputs (Δ does not decompose over parts), ℓ2 on
        trees, and None.
    """
    smoothing = {"entropy": ENTROPY, "l2": L2}.get(smoothing, smoothing)
    if compiled_oracle is None or smoothing not in (ENTROPY, L2):
        return False
    if compiled_oracle.rescaling not in (MAP, MARGIN):
        return False
    family = family_of_code(compiled_oracle.code)
    if family is None or family.supports_smoothed is None:
        return False
    return bool(family.supports_smoothed(compiled_oracle, smoothing))
