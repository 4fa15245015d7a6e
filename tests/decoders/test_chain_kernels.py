"""Chain kernels: the compiled exponential of the rescaled forward-backward
(``_exp_nonpositive``) and the list Viterbi (``top_k_one``)."""

import numpy as np
import pytest
from numba import njit

from skstruct.decoders._chain.kernels import (
    _EXP_FLOOR,
    COLUMN_STATES,
    _exp_nonpositive,
    top_k_one,
)


@njit
def _exp_all(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = _exp_nonpositive(x[i])
    return out


def test_exp_is_within_one_unit_in_the_last_place_of_numpy(rng):
    x = np.concatenate([-rng.exponential(3.0, size=20000),
                        rng.uniform(_EXP_FLOOR, 0.0, size=20000),
                        -np.logspace(-300, 0, 200), [0.0, -0.0, _EXP_FLOOR]])
    got, want = _exp_all(x), np.exp(x)
    assert got.shape == want.shape
    assert np.all(np.abs(got - want) <= np.spacing(want))


def test_exp_of_minus_inf_and_below_the_floor_is_zero_and_nan_stays_nan():
    x = np.array([-np.inf, _EXP_FLOOR - 1e-9, -745.0, -1e300, np.nan])
    got = _exp_all(x)
    assert np.array_equal(got[:4], np.zeros(4))
    assert np.isnan(got[4])


# ------------------------------------------------------------ list Viterbi (top_k_one)
@njit
def _reference_top_k_one(unary, trans, start, end, k, paths, scores):
    """List Viterbi as first written: at each (position, state), ``k`` scans of the
    current head of every predecessor's list (kept here as the reference order)."""
    length, n_states = unary.shape
    value = np.full((length, n_states, k), -np.inf)
    prev_state = np.zeros((length, n_states, k), dtype=np.int32)
    prev_rank = np.zeros((length, n_states, k), dtype=np.int32)
    count = np.zeros((length, n_states), dtype=np.int32)
    head = np.zeros(n_states, dtype=np.int32)
    for j in range(n_states):
        value[0, j, 0] = start[j] + unary[0, j]
        count[0, j] = 1 if value[0, j, 0] > -np.inf else 0
    for t in range(1, length):
        for j in range(n_states):
            if unary[t, j] == -np.inf:
                continue
            head[:] = 0
            for r in range(k):
                arg = -1
                top = -np.inf
                for i in range(n_states):
                    if head[i] < count[t - 1, i]:
                        v = value[t - 1, i, head[i]] + trans[i, j]
                        if v > top:
                            top = v
                            arg = i
                if arg < 0:
                    break
                value[t, j, r] = top + unary[t, j]
                prev_state[t, j, r] = arg
                prev_rank[t, j, r] = head[arg]
                head[arg] += 1
                count[t, j] = r + 1
    head[:] = 0
    for r in range(k):
        arg = -1
        top = -np.inf
        for j in range(n_states):
            if head[j] < count[length - 1, j]:
                v = value[length - 1, j, head[j]] + end[j]
                if v > top:
                    top = v
                    arg = j
        if arg < 0:
            break
        scores[r] = top
        state, rank = arg, head[arg]
        head[arg] += 1
        for t in range(length - 1, -1, -1):
            paths[t, r] = state
            if t > 0:
                state, rank = prev_state[t, state, rank], prev_rank[t, state, rank]


def _list_viterbi(kernel, unary, trans, start, end, k):
    paths = np.full((unary.shape[0], k), -1, dtype=np.int64)
    scores = np.full(k, -np.inf)
    kernel(unary, trans, start, end, k, paths, scores)
    return paths, scores


def _tied_chain(rng, n_states, length):
    """Scores with many ties (small integers, zeros of either sign) and -inf parts."""
    parts = [rng.integers(-2, 3, size=shape).astype(float)
             for shape in ((length, n_states), (n_states, n_states), (n_states,),
                           (n_states,))]
    forbidden = rng.choice([0.0, 0.1, 0.4, 0.8])
    for part in parts:
        part[part == 0.0] = rng.choice([0.0, -0.0], size=int((part == 0.0).sum()))
        part[rng.random(part.shape) < forbidden] = -np.inf
    return parts


@pytest.mark.parametrize("n_states", [1, 2, 3, COLUMN_STATES - 1, COLUMN_STATES, 9, 17])
def test_top_k_one_lists_the_same_paths_and_scores_as_the_reference(rng, n_states):
    compared = 0
    for _ in range(150):
        length = int(rng.integers(1, 6))
        k = int(rng.choice([1, 2, 3, 5, 8, 40]))
        parts = _tied_chain(rng, n_states, length)
        if rng.random() < 0.3:
            parts = [np.where(np.isfinite(p), p + rng.normal(size=p.shape), p)
                     for p in parts]
        got_paths, got_scores = _list_viterbi(top_k_one, *parts, k)
        ref_paths, ref_scores = _list_viterbi(_reference_top_k_one, *parts, k)
        assert got_paths.shape == ref_paths.shape and got_scores.shape == ref_scores.shape
        assert np.array_equal(got_paths, ref_paths)
        # bit for bit: -0.0 and 0.0 differ
        assert np.array_equal(got_scores.view(np.int64), ref_scores.view(np.int64))
        compared += 1
    assert compared == 150


def test_top_k_one_never_lists_a_forbidden_path(rng):
    n_states, length, k = 12, 4, 30
    listed = 0
    for _ in range(40):
        unary, trans, start, end = _tied_chain(rng, n_states, length)
        paths, scores = _list_viterbi(top_k_one, unary, trans, start, end, k)
        n_listed = int(np.isfinite(scores).sum())
        assert np.all(scores[n_listed:] == -np.inf)
        assert np.all(paths[:, n_listed:] == -1)
        for r in range(n_listed):
            y = paths[:, r]
            total = (start[y[0]] + unary[np.arange(length), y].sum()
                     + trans[y[:-1], y[1:]].sum() + end[y[-1]])
            assert total == scores[r]
            listed += 1
    assert listed > 0
