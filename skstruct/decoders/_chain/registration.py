"""The chain family's registration (:mod:`skstruct.decoders._core.registry`)."""

import numpy as np

from .._core.engine_protocol import CHAIN
from .._core.registry import DecoderFamily, EngineHooks, TinyBatch, register_family
from .decoder import ChainDecoder, ChainScores
from .enumeration import ChainEnumeration
from .smoothed import supports_smoothed

__all__ = ["FAMILY"]


def tiny_batch(rng, n_examples=3, size=3, scale=1.0):
    """``n_examples`` chains of 1 to ``size`` tokens over 3 states, random gold labels."""
    lengths = rng.integers(1, size + 1, size=n_examples)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    n_states = 3
    arrays = dict(unary=scale * rng.normal(size=(offsets[-1], n_states)),
                  transition=scale * rng.normal(size=(n_states, n_states)),
                  start=scale * rng.normal(size=n_states),
                  end=scale * rng.normal(size=n_states))

    def build(a):
        return ChainScores(a["unary"], offsets, a["transition"], a["start"], a["end"])

    return TinyBatch(arrays, build, rng.integers(0, n_states, size=offsets[-1]))


FAMILY = register_family(DecoderFamily(
    name="chain",
    scores=ChainScores,
    decoders=lambda: [ChainDecoder(), ChainDecoder(log_space=True),
                      ChainDecoder(log_space=False)],
    enumeration=ChainEnumeration,
    tiny_batch=tiny_batch,
    score_names={"unary": "unary", "transition": "transition", "start": "start",
                 "end": "end"},
    example_name="sequence",
    engine=EngineHooks(
        code=CHAIN, module="skstruct.decoders._chain.oracle", oracle="chain_oracle",
        add_parts="chain_add_parts", smoothed_module="skstruct.decoders._chain.smoothed",
        smoothed="chain_smoothed",
        smoothed_args="smoothing, mu, top_k, unary, pair, y_i, ints, floats, d_unary, d_pair"),
    supports_smoothed=supports_smoothed,
))
