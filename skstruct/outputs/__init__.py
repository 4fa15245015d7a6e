"""Output kinds: how estimators read, check, encode and return each kind of output.

An :class:`OutputKind` owns everything the estimators do differently per kind of
output: recognizing ``X`` and ``y``, validating and encoding ``y``, decoding back to the
user's form, the default decoder and feature map, the fitted coefficients, the user's
form of unary scores and marginals, binding a task loss to the classes, and the default
``score``. Estimators store the kind's name in ``output_kind_`` and look it up here.

Built-in kinds, in order of registration:

=================  =============================================================
``"multiclass"``   :class:`MulticlassKind`: 2-D ``X``, 1-D labels
``"multilabel"``   :class:`MultilabelKind`: 2-D ``X``, 0/1 indicator matrix
``"sequence"``     :class:`SequenceKind`: lists of token matrices and label arrays
``"tree"``         :class:`TreeKind`: arc features and CoNLL heads (by ``TreeDecoder``)
``"matching"``     :class:`MatchingKind`: pair features and matched columns (by
                   ``MatchingDecoder``)
``"dag"``          :class:`DAGKind`: arc features and 0/1 adjacency matrices (by
                   ``DAGDecoder``)
``"graph"``        :class:`GraphKind`: (node features, edges[, edge features]) tuples
                   and node labels
=================  =============================================================

A decoder whose ``output_kind`` names a kind chosen by decoders (trees, matchings)
picks that kind. Otherwise the kind is read from the data: the registered kinds are
asked, newest registration first, whether they recognize ``X`` and ``y`` (multiclass,
registered first, is the fallback of 2-D ``X``); data recognized as a decoder-chosen
kind is an error that names the decoder to pass. Adding a kind is one subclass of
:class:`OutputKind` and ``register_output_kind(MyKind)``.
"""

from ._base import (
    OutputKind,
    get_output_kind,
    infer_output_kind,
    register_output_kind,
    registered_output_kinds,
)
from ._dag import DAGKind
from ._graph import GraphKind
from ._matching import MatchingKind
from ._multiclass import MulticlassKind
from ._multilabel import MultilabelKind
from ._sequence import SequenceKind
from ._tree import TreeKind

__all__ = [
    "DAGKind",
    "GraphKind",
    "MatchingKind",
    "MulticlassKind",
    "MultilabelKind",
    "OutputKind",
    "SequenceKind",
    "TreeKind",
    "get_output_kind",
    "infer_output_kind",
    "register_output_kind",
    "registered_output_kinds",
]

for _kind in (MulticlassKind, MultilabelKind, SequenceKind, TreeKind, MatchingKind):
    register_output_kind(_kind)
del _kind
register_output_kind(DAGKind)
register_output_kind(GraphKind)
