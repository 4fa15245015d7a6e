"""Feature maps: linear maps from inputs and weights to part scores, and their transposes."""

from ._base import FeatureMap, feature_map_hook
from ._compiled import CompiledFeatures
from ._factor_graph import FactorGraphFeatures, decoder_feature_map
from ._linear import LinearFeatures
from ._linear_arc import LinearArcFeatures
from ._linear_chain import LinearChainFeatures
from ._linear_graph import LinearGraphFeatures
from ._sparse import csr_matmul, csr_transpose_matmul

__all__ = [
    "CompiledFeatures",
    "FactorGraphFeatures",
    "FeatureMap",
    "LinearArcFeatures",
    "LinearChainFeatures",
    "LinearGraphFeatures",
    "LinearFeatures",
    "csr_matmul",
    "csr_transpose_matmul",
    "decoder_feature_map",
    "feature_map_hook",
]
