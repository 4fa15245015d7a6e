"""The graph family's registration (:mod:`skstruct.decoders._core.registry`)."""

import numpy as np

from .._core.registry import DecoderFamily, TinyBatch, register_family
from .decoder import GraphDecoder, GraphScores
from .enumeration import GraphEnumeration

__all__ = ["FAMILY"]


def tiny_batch(rng, n_examples=3, size=3, scale=1.0):
    """``n_examples`` graphs of 1 to ``size`` nodes with 3 states, each a random subset of
    the node pairs as edges (with ``size=3``, trees, paths and triangles), in random
    orientation; random gold labelings."""
    n_states = 3
    n_nodes = rng.integers(1, size + 1, size=n_examples)
    n_nodes[0] = size  # the first graph has every node pair: a cycle from 3 nodes on
    edges, counts = [], []
    for i, n in enumerate(n_nodes):
        pairs = np.array([(a, b) for a in range(n) for b in range(a + 1, n)],
                         dtype=np.int64).reshape(-1, 2)
        keep = np.ones(len(pairs), bool) if i == 0 else rng.random(len(pairs)) < 0.6
        chosen = pairs[keep]
        flip = rng.random(len(chosen)) < 0.5
        chosen[flip] = chosen[flip][:, ::-1]
        edges.append(chosen)
        counts.append(len(chosen))
    edges = np.concatenate(edges).reshape(-1, 2)
    offsets = np.concatenate(([0], np.cumsum(n_nodes)))
    edge_offsets = np.concatenate(([0], np.cumsum(counts)))
    arrays = dict(unary=scale * rng.normal(size=(int(offsets[-1]), n_states)),
                  pairwise=scale * rng.normal(size=(len(edges), n_states, n_states)))
    y = rng.integers(0, n_states, size=int(offsets[-1]))
    return TinyBatch(arrays, lambda a: GraphScores(a["unary"], offsets, edges,
                                                   edge_offsets, a["pairwise"]), y)


FAMILY = register_family(DecoderFamily(
    name="graph",
    scores=GraphScores,
    decoders=lambda: [GraphDecoder(), GraphDecoder(max_enumerated=0, max_iter=50)],
    enumeration=GraphEnumeration,
    tiny_batch=tiny_batch,
    score_names={"unary": "unary", "pairwise": "pairwise"},
    example_name="graph",
))
