"""Random chain instances shared by the tests."""

import numpy as np
from hypothesis import strategies as st

from skstruct.decoders import ChainScores


def random_chain_scores(rng, lengths, n_states, scale=1.0, pairwise_scale=None):
    pairwise_scale = scale if pairwise_scale is None else pairwise_scale
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    return ChainScores(
        scale * rng.normal(size=(offsets[-1], n_states)),
        offsets,
        pairwise_scale * rng.normal(size=(n_states, n_states)),
        pairwise_scale * rng.normal(size=n_states),
        pairwise_scale * rng.normal(size=n_states),
    )


@st.composite
def chain_instances(draw, max_states=3, max_length=4, max_sequences=3):
    """(ChainScores, rng seed) with small shapes for enumeration."""
    n_states = draw(st.integers(1, max_states))
    lengths = draw(
        st.lists(st.integers(1, max_length), min_size=1, max_size=max_sequences)
    )
    seed = draw(st.integers(0, 2**32 - 1))
    scale = draw(st.sampled_from([0.1, 1.0, 10.0]))
    rng = np.random.default_rng(seed)
    return random_chain_scores(rng, lengths, n_states, scale)


def moved_chain_scores(scores, direction, step):
    """``scores + step * direction`` for two ChainScores of the same batch (all parts)."""
    return ChainScores(
        scores.unary + step * direction.unary,
        scores.offsets,
        scores.transition + step * direction.transition,
        scores.start + step * direction.start,
        scores.end + step * direction.end,
    )
