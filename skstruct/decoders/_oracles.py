"""The compiled dispatchers of the per-example engine: one branch per oracle family.

The engine calls :func:`oracle` and :func:`add_parts` with the family code of a
decoder's :class:`~skstruct.decoders._engine_protocol.CompiledOracle` (codes, not
functions, so that everything stays cached: see :mod:`skstruct.decoders._engine_protocol`),
and they branch on it to the family kernels. The families build their ``CompiledOracle``
from the protocol module and do not import this one: only the dispatch knows every family.

Family kernels (one module per family; each takes the arguments of :func:`oracle` and
:func:`add_parts` without ``code``)::

    chain       _chain_oracle.chain_oracle,            _chain_oracle.chain_add_parts
    multiclass  _tabular_oracles.multiclass_oracle,    _tabular_oracles.multiclass_add_parts
    multilabel  _tabular_oracles.multilabel_oracle,    _tabular_oracles.multilabel_add_parts
    tree        _tree_oracles.tree_oracle,             _tree_oracles.tree_add_parts

Adding a built-in family is one code in ``_engine_protocol``, one branch in each
dispatcher here, and a ``compiled_oracle`` method on its decoder that builds the
``CompiledOracle``.
"""

from numba import njit

from ._chain_oracle import chain_add_parts, chain_oracle
from ._engine_protocol import CHAIN, MULTICLASS, MULTILABEL, TREE
from ._engine_protocol import CompiledOracle  # noqa: F401  (for numba's cache, see below)
from ._tabular_oracles import (
    multiclass_add_parts,
    multiclass_oracle,
    multilabel_add_parts,
    multilabel_oracle,
)
from ._tree_oracles import tree_add_parts, tree_oracle

__all__ = ["add_parts", "oracle"]

# CompiledOracle is importable from here for numba's on-disk cache alone: a cache index
# pickles the argument types of its kernel, the indexes written while the class was
# defined in this module name it as this module's, and numba raises on an index it cannot
# unpickle instead of compiling again.


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
        Its rows of :attr:`~skstruct.decoders._engine_protocol.CompiledOracle.costs`.
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
        return chain_oracle(rescaling, unary, pair, y_i, costs_i, ints, floats, yhat)
    if code == MULTICLASS:
        return multiclass_oracle(rescaling, unary, pair, y_i, costs_i, ints, floats, yhat)
    if code == MULTILABEL:
        return multilabel_oracle(rescaling, unary, pair, y_i, costs_i, ints, floats, yhat)
    if code == TREE:
        return tree_oracle(rescaling, unary, pair, y_i, costs_i, ints, floats, yhat)
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
        chain_add_parts(out, scale, unary_parts, pair_parts, ints)
    elif code == MULTICLASS:
        multiclass_add_parts(out, scale, unary_parts, pair_parts, ints)
    elif code == MULTILABEL:
        multilabel_add_parts(out, scale, unary_parts, pair_parts, ints)
    elif code == TREE:
        tree_add_parts(out, scale, unary_parts, pair_parts, ints)
    else:
        raise ValueError("unknown oracle family code")
