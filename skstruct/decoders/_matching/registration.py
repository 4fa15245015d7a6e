"""The matching family's registration (:mod:`skstruct.decoders._core.registry`)."""

import numpy as np

from .._core.registry import DecoderFamily, TinyBatch, register_family
from .decoder import MatchingDecoder, MatchingScores, enumerate_matchings
from .enumeration import MatchingEnumeration

__all__ = ["FAMILY"]


def tiny_batch(rng, n_examples=3, size=3, scale=1.0):
    """``n_examples`` bipartite graphs of 1 to ``size`` nodes a side, random gold
    matchings."""
    shapes = rng.integers(1, size + 1, size=(n_examples, 2))
    unary = scale * rng.normal(size=int(np.sum(shapes[:, 0] * shapes[:, 1])))
    gold = []
    for r, c in shapes:
        matchings = enumerate_matchings(int(r), int(c))
        gold.append(matchings[rng.integers(len(matchings))])
    return TinyBatch(dict(unary=unary), lambda a: MatchingScores(a["unary"], shapes),
                     np.concatenate(gold))


FAMILY = register_family(DecoderFamily(
    name="matching",
    scores=MatchingScores,
    decoders=lambda: [MatchingDecoder()],
    enumeration=MatchingEnumeration,
    tiny_batch=tiny_batch,
    score_names={"pair": "unary"},
))
