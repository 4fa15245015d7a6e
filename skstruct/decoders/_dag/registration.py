"""The DAG family's registration (:mod:`skstruct.decoders._core.registry`). Its decoder
enumerates parent sets itself; there is no separate slow reference."""

import numpy as np

from .._core.registry import DecoderFamily, TinyBatch, register_family
from .decoder import DAGDecoder, DAGScores

__all__ = ["FAMILY"]


def tiny_batch(rng, n_examples=3, size=3, scale=1.0):
    """``n_examples`` graphs of 1 to ``size`` nodes; the gold graphs are the best graphs of
    at most one parent per node of other random scores (valid for every configuration)."""
    n_nodes = rng.integers(1, size + 1, size=n_examples)
    unary = scale * rng.normal(size=int(np.sum(n_nodes**2)))
    y = DAGDecoder(max_parents=1).map(DAGScores(rng.normal(size=unary.shape[0]), n_nodes))
    return TinyBatch(dict(unary=unary), lambda a: DAGScores(a["unary"], n_nodes), y)


FAMILY = register_family(DecoderFamily(
    name="dag",
    scores=DAGScores,
    decoders=lambda: [DAGDecoder(), DAGDecoder(max_parents=1)],
    enumeration=None,
    tiny_batch=tiny_batch,
    score_names={"arc": "unary"},
))
