"""Decoders: inference over one family of structured outputs.

A decoder takes part scores and answers inference questions (MAP, log-partition and
marginals, top-K, loss-augmented MAP, SparseMAP). Loss-augmented MAP has one default built
on what the task loss declares (``TaskLoss.decomposition``) and family hooks; SparseMAP
(:func:`sparsemap`, which calls ``Decoder.sparsemap``) defaults to the active set, which
needs MAP alone. See :class:`Decoder` for the interface.

Part scores are real numbers or -inf, which forbids a part; the score containers reject
NaN and +inf. An example left with no output of finite score has log-partition -inf,
and the operations that must return an output or a distribution raise
:class:`InfeasibleOutputError`.

Every operation of a built-in decoder checks that it was given a container it reads
(``score_types``: a ``TypeError`` otherwise), that ``k`` is an integer >= 1 and that a
task loss is a :class:`~skstruct.losses.TaskLoss` or the name of one; decoders validate
their hyper-parameters at their first operation after a change.
"""

from ._base import Decoder, InfeasibleOutputError, check_capability
from ._brute_force import BruteForceDecoder
from ._chain import ChainDecoder, ChainParts, ChainScores, chain_parts
from ._chain_constraints import ChainConstraints
from ._constrained import TableMemoryError
from ._dag import DAGDecoder, DAGParts, DAGScores
from ._factor_graph import FactorGraph, Variables
from ._factor_graph_decoder import (
    FactorGraphDecoder,
    FactorGraphParts,
    FactorGraphScores,
    LPSparseMAPResult,
)
from ._multiclass import MulticlassDecoder, MulticlassParts, MulticlassScores
from ._matching import MatchingDecoder, MatchingParts, MatchingScores, matching_parts
from ._multilabel import MultilabelDecoder, MultilabelParts, MultilabelScores
from ._subset import SubsetDecoder
from ._sparsemap import (
    SparseMAPResult,
    active_set_sparsemap,
    clip_sparsemap,
    sparsemap,
    sparsemax_sparsemap,
)
from ._tree import TreeDecoder, TreeParts, TreeScores, heads_to_states, states_to_heads, tree_parts

__all__ = [
    "BruteForceDecoder",
    "ChainConstraints",
    "ChainDecoder",
    "ChainParts",
    "ChainScores",
    "DAGDecoder",
    "DAGParts",
    "DAGScores",
    "Decoder",
    "FactorGraph",
    "FactorGraphDecoder",
    "FactorGraphParts",
    "FactorGraphScores",
    "InfeasibleOutputError",
    "LPSparseMAPResult",
    "TableMemoryError",
    "MatchingDecoder",
    "MatchingParts",
    "MatchingScores",
    "MulticlassDecoder",
    "MulticlassParts",
    "MulticlassScores",
    "MultilabelDecoder",
    "MultilabelParts",
    "MultilabelScores",
    "SparseMAPResult",
    "SubsetDecoder",
    "TreeDecoder",
    "TreeParts",
    "TreeScores",
    "chain_parts",
    "check_capability",
    "matching_parts",
    "heads_to_states",
    "sparsemap",
    "active_set_sparsemap",
    "sparsemax_sparsemap",
    "clip_sparsemap",
    "states_to_heads",
    "tree_parts",
    "Variables",
]
