"""What a decoder offers the compiled per-example engine: a family oracle behind a code.

numba cannot cache a function that receives another compiled function as an argument, so
the engine never passes functions around. A decoder describes its loss-augmented MAP as a
:class:`CompiledOracle`: a family ``code``, a rescaling code and plain arrays. The family
modules (``_chain.oracle``, ``_tabular.oracle``, ``_tree.oracle``) build it from the
codes of this module; the compiled dispatchers of :mod:`skstruct.decoders._engine.dispatch` branch
on the family code to their kernels. This module imports no family.
"""

from typing import NamedTuple

import numpy as np

__all__ = [
    "CHAIN",
    "MARGIN",
    "MAP",
    "MULTICLASS",
    "MULTILABEL",
    "SLACK",
    "TREE",
    "CompiledOracle",
    "rescaling_code",
]

#: Family codes.
CHAIN = 0
MULTICLASS = 1
MULTILABEL = 2
TREE = 3

#: Rescaling codes: plain MAP (the perceptron), margin and slack rescaling.
MAP = 0
MARGIN = 1
SLACK = 2


def rescaling_code(rescaling):
    """The code of ``rescaling`` (None, "margin" or "slack"); None for anything else."""
    return {None: MAP, "margin": MARGIN, "slack": SLACK}.get(
        rescaling if rescaling is None or isinstance(rescaling, str) else object())


class CompiledOracle(NamedTuple):
    """A decoder's (loss-augmented) MAP for the gold outputs of a batch, for compiled code.

    Attributes
    ----------
    code : int
        The family (:data:`CHAIN`, :data:`MULTICLASS`, :data:`MULTILABEL`, :data:`TREE`).
    rescaling : int
        :data:`MAP` (0), :data:`MARGIN` (1) or :data:`SLACK` (2).
    y : ndarray of shape (n_outputs,), int64
        The encoded gold outputs, stacked.
    y_offsets : ndarray of shape (n_examples + 1,), int64
        Example ``i`` owns ``y[y_offsets[i]:y_offsets[i + 1]]``.
    costs : ndarray of shape (n_rows, K) or (0, 0), float64
        Per-row costs of a margin-rescaled decomposable loss, rows stacked like the
        feature rows; (0, 0) when the family kernel computes its costs itself.
    ints : ndarray of shape (n_ints,), int64
        Family parameters (loss id, positive-state mask, ...).
    floats : ndarray of shape (n_floats,), float64
        Family parameters (β², class costs, ...).
    max_output : int
        Length of the longest single output (size of the engine's output buffers).
    """

    code: int
    rescaling: int
    y: np.ndarray
    y_offsets: np.ndarray
    costs: np.ndarray
    ints: np.ndarray
    floats: np.ndarray
    max_output: int
