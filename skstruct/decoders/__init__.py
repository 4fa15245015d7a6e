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

Each family is a private sub-package (``_chain``, ``_tree``, ``_tabular``, ``_dag``,
``_matching``, ``_factor_graph``, ``_graph``) that registers itself
(:mod:`skstruct.decoders._core.registry`); ``_core`` holds what they share, ``_sparsemap``
the generic SparseMAP solvers, ``_engine`` the compiled dispatchers and ``_reference`` the
brute-force decoder. See the architecture page of the developers' guide.
"""

from ._chain import registration as _chain_registration  # noqa: F401
from ._core.checks import InfeasibleOutputError, check_capability
from ._core.decoder import Decoder
from ._dag import registration as _dag_registration  # noqa: F401
from ._factor_graph import registration as _factor_graph_registration  # noqa: F401
from ._graph import registration as _graph_registration  # noqa: F401
from ._matching import registration as _matching_registration  # noqa: F401
from ._reference.brute_force import BruteForceDecoder
from ._tabular import registration as _tabular_registration  # noqa: F401
from ._tree import registration as _tree_registration  # noqa: F401
from ._chain.decoder import ChainDecoder, ChainParts, ChainScores, chain_parts
from ._chain.constraints import ChainConstraints
from ._core.statistic_table import TableMemoryError
from ._dag.decoder import DAGDecoder, DAGParts, DAGScores
from ._factor_graph.graph import FactorGraph, Variables
from ._graph.decoder import GraphDecoder, GraphParts, GraphScores
from ._factor_graph.memory import FactorGraphMemoryError
from ._factor_graph.decoder import (
    FactorGraphDecoder,
    FactorGraphParts,
    FactorGraphScores,
    LPSparseMAPResult,
)
from ._tabular.multiclass import MulticlassDecoder, MulticlassParts, MulticlassScores
from ._matching.decoder import MatchingDecoder, MatchingParts, MatchingScores, matching_parts
from ._tabular.multilabel import MultilabelDecoder, MultilabelParts, MultilabelScores
from ._tabular.subset import SubsetDecoder
from ._sparsemap.sparsemap import (
    SparseMAPResult,
    active_set_sparsemap,
    clip_sparsemap,
    sparsemap,
    sparsemax_sparsemap,
)
from ._tree.decoder import (
    TreeDecoder,
    TreeParts,
    TreeScores,
    heads_to_states,
    states_to_heads,
    tree_parts,
)

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
    "FactorGraphMemoryError",
    "FactorGraphParts",
    "FactorGraphScores",
    "GraphDecoder",
    "GraphParts",
    "GraphScores",
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
