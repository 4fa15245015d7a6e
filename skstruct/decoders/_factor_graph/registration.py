"""The factor-graph family's registration (:mod:`skstruct.decoders._core.registry`).

The decoder is built on one graph template, so the generic tests run on a fixed small
template: three labels coupled by all three PAIR factors. There is no separate slow
reference here; ``map_method="enumerate"`` is the family's own.
"""


from .._core.registry import DecoderFamily, TinyBatch, register_family
from .decoder import FactorGraphDecoder, FactorGraphScores
from .graph import FactorGraph

__all__ = ["FAMILY"]

#: The template of the generic tests.
TEMPLATE = FactorGraph.pairwise(3)


def tiny_batch(rng, n_examples=3, size=3, scale=1.0):
    """``n_examples`` examples of :data:`TEMPLATE` (``size`` is not used: the template
    is fixed), random gold label sets."""
    arrays = dict(unary=scale * rng.normal(size=(n_examples, TEMPLATE.n_vars)),
                  pair=scale * rng.normal(size=(n_examples, TEMPLATE.n_pairs)))
    return TinyBatch(arrays, lambda a: FactorGraphScores(a["unary"], a["pair"]),
                     rng.integers(0, 2, size=(n_examples, TEMPLATE.n_vars)))


FAMILY = register_family(DecoderFamily(
    name="factor_graph",
    scores=FactorGraphScores,
    decoders=lambda: [FactorGraphDecoder(TEMPLATE),
                      FactorGraphDecoder(TEMPLATE, map_method="enumerate")],
    enumeration=None,
    tiny_batch=tiny_batch,
    score_names={"unary": "unary", "pair": "pair"},
))
