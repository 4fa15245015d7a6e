"""The batch chain kernels run a chunk's sequences four at a time in lockstep
(``scaled_forward_backward_group``, ``viterbi_group``); each sequence must get exactly
the bits of the one-sequence dynamic programs (``scaled_forward_backward_one``,
``viterbi_one``), whatever its place in a group: groups of sequences of different
lengths, incomplete last groups, -inf scores, chains with no labeling of finite score,
ties."""

import numpy as np
import pytest

from skstruct.decoders._chain import kernels
from skstruct.decoders._chain.kernels import (
    VITERBI_BLOCK,
    _padded_transitions,
    padded_width,
    scaled_forward_backward_one,
    scaled_pairwise,
    viterbi_one,
)


def _batch(rng, n_states, n_seq, ties):
    lengths = rng.integers(1, 30, size=n_seq)
    # runs of equal lengths, so that full groups of four occur too
    lengths[5:13] = 7
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    n = int(offsets[-1])
    if ties:  # few distinct values: many ties among candidates
        unary = rng.integers(-2, 3, size=(n, n_states)).astype(float)
        trans = rng.integers(-2, 3, size=(n_states, n_states)).astype(float)
    else:
        unary = 3.0 * rng.normal(size=(n, n_states))
        trans = rng.normal(size=(n_states, n_states))
    unary[rng.random(size=(n, n_states)) < 0.05] = -np.inf
    trans[rng.random(size=(n_states, n_states)) < 0.1] = -np.inf
    start, end = rng.normal(size=n_states), rng.normal(size=n_states)
    if n_seq > 20:
        unary[offsets[9]:offsets[10]] = -np.inf  # no labeling of finite score
        unary[offsets[16] + 1, :] = -np.inf
    return unary, offsets, trans, start, end


def _one_by_one_forward_backward(unary, offsets, trans, start, end):
    n_tokens, n_states = unary.shape
    width = padded_width(n_states)
    expo, expo_t, start_padded, exp_end, trans_max, end_max = scaled_pairwise(
        trans, start, end, width)
    n_seq = offsets.shape[0] - 1
    log_z = np.empty(n_seq)
    marg = np.empty((n_tokens, n_states))
    trans_marg = np.empty((n_seq, n_states, n_states))
    for seq in range(n_seq):
        a, b = offsets[seq], offsets[seq + 1]
        rows = np.full((b - a, width), -np.inf)
        rows[:, :n_states] = unary[a:b]
        pair = np.zeros((width, width))
        lz = scaled_forward_backward_one(
            rows, 0, b - a, n_states, expo, expo_t, start_padded, exp_end, trans_max,
            end_max, np.empty((b - a, width)), np.empty(b - a), np.empty((1, width)),
            np.empty((1, width)), np.empty(0, dtype=np.int64), 1.0, pair, True)
        log_z[seq] = lz
        feasible = lz > -np.inf
        marg[a:b] = rows[:, :n_states] if feasible else 0.0
        trans_marg[seq] = expo[:n_states, :n_states] * pair[:n_states, :n_states] \
            if feasible else 0.0
    return log_z, marg, trans_marg


@pytest.mark.parametrize("n_states", [1, 3, 9, 22, 45])
@pytest.mark.parametrize("n_seq", [1, 3, 4, 6, 41])
def test_group_forward_backward_gives_every_sequence_the_bits_of_one_at_a_time(
        n_states, n_seq, rng):
    unary, offsets, trans, start, end = _batch(rng, n_states, n_seq, ties=False)
    got = kernels.forward_backward_scaled(unary, offsets, trans, start, end, True)
    want = _one_by_one_forward_backward(unary, offsets, trans, start, end)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        assert np.array_equal(g, w)
    log_z, _, _ = kernels.forward_backward_scaled(unary, offsets, trans, start, end, False)
    assert np.array_equal(log_z, want[0])


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("n_states", [1, 2, 3, 9, 22, 45])
@pytest.mark.parametrize("n_seq", [1, 3, 4, 6, 41])
def test_group_viterbi_gives_every_sequence_the_labels_of_one_at_a_time(
        n_states, n_seq, ties, rng):
    unary, offsets, trans, start, end = _batch(rng, n_states, n_seq, ties)
    labels, best = kernels.viterbi(unary, offsets, trans, start, end)
    width = (n_states + VITERBI_BLOCK - 1) // VITERBI_BLOCK * VITERBI_BLOCK
    padded = _padded_transitions(trans, width)
    for seq in range(offsets.shape[0] - 1):
        a, b = offsets[seq], offsets[seq + 1]
        want = np.empty(b - a, dtype=np.int64)
        score = viterbi_one(unary[a:b], padded, start, end, np.empty((b - a, width)),
                            np.empty((b - a, width), dtype=np.int32), want)
        assert best[seq] == score or (np.isnan(score) and np.isnan(best[seq]))
        if score > -np.inf:
            assert np.array_equal(labels[a:b], want)
