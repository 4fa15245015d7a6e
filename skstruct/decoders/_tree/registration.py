"""The tree family's registration (:mod:`skstruct.decoders._core.registry`)."""

import numpy as np

from .._core.engine_protocol import TREE
from .._core.registry import DecoderFamily, EngineHooks, TinyBatch, register_family
from .decoder import TreeDecoder, TreeScores
from .enumeration import TreeEnumeration
from .smoothed import supports_smoothed

__all__ = ["FAMILY"]


def tiny_batch(rng, n_examples=3, size=3, scale=1.0):
    """``n_examples`` sentences of 1 to ``size`` words; the gold trees are the best
    projective single-root trees of other random scores (valid for every configuration)."""
    lengths = rng.integers(1, size + 1, size=n_examples)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    unary = scale * rng.normal(size=int(np.sum(lengths**2)))
    gold = TreeDecoder(projective=True, single_root=True)
    y = gold.map(TreeScores(rng.normal(size=unary.shape[0]), offsets))
    return TinyBatch(dict(unary=unary), lambda a: TreeScores(a["unary"], offsets), y)


FAMILY = register_family(DecoderFamily(
    name="tree",
    scores=TreeScores,
    decoders=lambda: [TreeDecoder(), TreeDecoder(projective=True),
                      TreeDecoder(single_root=True),
                      TreeDecoder(projective=True, single_root=True)],
    enumeration=TreeEnumeration,
    tiny_batch=tiny_batch,
    score_names={"arc": "unary"},
    example_name="sentence",
    engine=EngineHooks(
        code=TREE, module="skstruct.decoders._tree.oracle", oracle="tree_oracle",
        add_parts="tree_add_parts", smoothed_module="skstruct.decoders._tree.smoothed",
        smoothed="tree_smoothed",
        smoothed_args="smoothing, mu, unary, y_i, costs_i, ints, d_unary"),
    supports_smoothed=supports_smoothed,
))
