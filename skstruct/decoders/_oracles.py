"""What a decoder offers the compiled per-example engine: a family oracle behind a code.

numba cannot cache a function that receives another compiled function as an argument, so
the engine never passes functions around. A decoder describes its loss-augmented MAP as a
:class:`CompiledOracle` (a family ``code`` and plain arrays), and the engine calls the two
compiled dispatchers of this module, which branch on the code to the family kernels.

Family kernels (one module per family; each takes the arguments of :func:`oracle` and
:func:`add_parts` without ``code``)::

    chain       _chain_oracle.chain_oracle,            _chain_oracle.chain_add_parts
    multiclass  _tabular_oracles.multiclass_oracle,    _tabular_oracles.multiclass_add_parts
    multilabel  _tabular_oracles.multilabel_oracle,    _tabular_oracles.multilabel_add_parts
    tree        _tree_oracles.tree_oracle,             _tree_oracles.tree_add_parts

Adding a built-in family is one code below, one branch in each dispatcher, and a
``compiled_oracle`` method on its decoder that builds the :class:`CompiledOracle`.
"""

import sys
import types
from typing import NamedTuple

import numpy as np
from numba import njit

__all__ = [
    "CHAIN",
    "MARGIN",
    "MAP",
    "MULTICLASS",
    "MULTILABEL",
    "SLACK",
    "TREE",
    "CompiledOracle",
    "add_parts",
    "oracle",
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


def _missing_family(name):
    """A stand-in module for a family whose kernels are not part of this build."""
    @njit(cache=False)
    def missing_oracle(rescaling, unary, pair, y_i, costs_i, ints, floats, yhat):
        raise NotImplementedError("no compiled oracle for this family")

    @njit(cache=False)
    def missing_add_parts(out, scale, unary_parts, pair_parts, ints):
        raise NotImplementedError("no compiled oracle for this family")

    module = types.ModuleType(name)
    for family in ("multiclass", "multilabel", "tree"):
        setattr(module, f"{family}_oracle", missing_oracle)
        setattr(module, f"{family}_add_parts", missing_add_parts)
    return module


def _family(name):
    """The family module ``name`` (imported last: the families import this module)."""
    full = f"{__package__}.{name}"
    try:
        __import__(full)
    except ModuleNotFoundError as error:
        if error.name != full:
            raise
        return _missing_family(full)
    return sys.modules[full]


_chain = _family("_chain_oracle")
_tabular = _family("_tabular_oracles")
_tree = _family("_tree_oracles")


@njit(cache=True, nogil=True)
def oracle(code, rescaling, unary, pair, y_i, costs_i, ints, floats, yhat):
    """The (loss-augmented) MAP output of one example, and its task loss.

    Parameters
    ----------
    code, rescaling : int
        Family and rescaling codes.
    unary : ndarray of shape (n_rows_i, K)
        The part scores of the example's rows.
    pair : ndarray of shape (n_pair,)
        The pair scores.
    y_i : ndarray of shape (n_outputs_i,), int64
        Its gold output.
    costs_i : ndarray of shape (n_rows_i, K) or (0, 0)
        Its rows of :attr:`CompiledOracle.costs`.
    ints, floats : ndarray
        The family parameters.
    yhat : ndarray of shape (>= n_outputs_i,), int64
        Output: the maximizer, in ``yhat[:n_outputs_i]``.

    Returns
    -------
    float
        Δ(y_i, ŷ) (0 for plain MAP). Margin rescaling maximizes θ_y + Δ(y_i, y), slack
        rescaling Δ(y_i, y) (1 + θ_y − θ_{y_i}); ties are broken as the batched decoder
        breaks them.
    """
    if code == CHAIN:
        return _chain.chain_oracle(rescaling, unary, pair, y_i, costs_i, ints, floats, yhat)
    if code == MULTICLASS:
        return _tabular.multiclass_oracle(rescaling, unary, pair, y_i, costs_i, ints, floats,
                                          yhat)
    if code == MULTILABEL:
        return _tabular.multilabel_oracle(rescaling, unary, pair, y_i, costs_i, ints, floats,
                                          yhat)
    if code == TREE:
        return _tree.tree_oracle(rescaling, unary, pair, y_i, costs_i, ints, floats, yhat)
    raise ValueError("unknown oracle family code")


@njit(cache=True, nogil=True)
def add_parts(code, out, scale, unary_parts, pair_parts, ints):
    """Add ``scale`` times the indicator parts a_out of output ``out`` to the buffers.

    Parameters
    ----------
    code : int
    out : ndarray of shape (n_outputs_i,), int64
    scale : float
    unary_parts : ndarray of shape (n_rows_i, K)
        Laid out like the unary scores of the example.
    pair_parts : ndarray of shape (n_pair,)
    ints : ndarray
        The family parameters.
    """
    if code == CHAIN:
        _chain.chain_add_parts(out, scale, unary_parts, pair_parts, ints)
    elif code == MULTICLASS:
        _tabular.multiclass_add_parts(out, scale, unary_parts, pair_parts, ints)
    elif code == MULTILABEL:
        _tabular.multilabel_add_parts(out, scale, unary_parts, pair_parts, ints)
    elif code == TREE:
        _tree.tree_add_parts(out, scale, unary_parts, pair_parts, ints)
    else:
        raise ValueError("unknown oracle family code")
