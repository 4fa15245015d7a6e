"""ChainDecoder(log_space=False) raises where its probability-space forward-backward
would underflow, instead of returning a wrong or -inf log-partition."""

import numpy as np
import pytest
from scipy.special import logsumexp

from skstruct.decoders import ChainConstraints, ChainDecoder, ChainScores
from skstruct.decoders._chain import kernels
from skstruct.decoders._core.checks import InfeasibleOutputError

SCALED = ChainDecoder(log_space=False)
LOG = ChainDecoder(log_space=True)


def _lost_path_chain(spread, gap):
    """Two states, three tokens, every transition scored -spread but 1 -> 1 (0).

    The path (0, 1, 1) is the best one whenever gap < spread, but its prefix (0, 1) scores
    -spread - gap: the probability-space recursion drops it when that is below the
    smallest float (about exp(-745)) and keeps only the paths through state 0.
    """
    unary = np.array([[0.0, -800.0], [0.0, -gap], [0.0, 0.0]])
    transition = np.array([[-spread, -spread], [-spread, 0.0]])
    return ChainScores(unary, np.array([0, 3]), transition, np.zeros(2), np.zeros(2))


def _brute_log_partition(scores):
    unary, transition = scores.unary, scores.transition
    length, n_states = unary.shape
    values = []
    for flat in range(n_states ** length):
        y = np.unravel_index(flat, (n_states,) * length)
        values.append(scores.start[y[0]] + scores.end[y[-1]]
                      + sum(unary[t, y[t]] for t in range(length))
                      + sum(transition[y[t - 1], y[t]] for t in range(1, length)))
    return logsumexp(values)


def test_transition_spread_of_1e4_raises_and_names_log_space_auto():
    rng = np.random.default_rng(0)
    n_states, length, n_sequences = 5, 20, 50
    scores = ChainScores(rng.normal(size=(length * n_sequences, n_states)) * 2500,
                         np.arange(0, length * n_sequences + 1, length),
                         rng.normal(size=(n_states, n_states)) * 2500,
                         np.zeros(n_states), np.zeros(n_states))
    for operation in (SCALED.log_partition, SCALED.marginals):
        with pytest.raises(ValueError, match=r'log_space=False.*log_space="auto"') as info:
            operation(scores)
        assert not isinstance(info.value, InfeasibleOutputError)
    log_z = ChainDecoder(log_space="auto").log_partition(scores)
    assert np.all(np.isfinite(log_z))
    np.testing.assert_allclose(log_z, LOG.log_partition(scores), rtol=1e-12)


def test_a_spread_that_loses_the_best_path_raises_instead_of_a_wrong_log_partition():
    # rescaled, the path (0, 1, 1) of score -760 is lost: log Z would come out -839.3
    scores = _lost_path_chain(spread=420.0, gap=340.0)
    expected = _brute_log_partition(scores)
    np.testing.assert_allclose(LOG.log_partition(scores), [expected], rtol=1e-12)
    with pytest.raises(ValueError, match=r"spread 420 .*beyond the 330"):
        SCALED.log_partition(scores)


@pytest.mark.parametrize("gap", [380.0, 420.0, 720.0])
def test_scaled_kernel_is_exact_up_to_the_limit(gap):
    """At the limit the dropped prefix weighs at most exp(2 * 330 - 708) of the result."""
    spread = kernels.SCALED_EXACT_SPREAD
    scores = _lost_path_chain(spread=spread, gap=gap)
    np.testing.assert_allclose(SCALED.log_partition(scores),
                               [_brute_log_partition(scores)], rtol=1e-14)
    rng = np.random.default_rng(1)
    n_states, length, n_sequences = 4, 12, 200
    transition = rng.uniform(size=(n_states, n_states))
    transition = (transition - transition.min()) / np.ptp(transition) * spread
    unary = rng.uniform(size=(length * n_sequences, n_states)) * 3 * spread
    batch = ChainScores(unary, np.arange(0, length * n_sequences + 1, length), transition,
                        np.zeros(n_states), rng.uniform(size=n_states) * spread)
    log_z, marginals = SCALED.marginals(batch)
    ref_log_z, ref = LOG.marginals(batch)
    np.testing.assert_allclose(log_z, ref_log_z, rtol=1e-12)
    np.testing.assert_allclose(marginals.unary, ref.unary, atol=1e-9)
    np.testing.assert_allclose(marginals.transition, ref.transition, atol=1e-9)


def _stay_in_state_chain():
    """Two sequences over two states that can never change state: sequence 0 scores
    -800 whichever state it stays in; sequence 1 (one token) is plain."""
    unary = np.array([[0.0, -800.0], [-800.0, 0.0], [0.0, 1.0]])
    transition = np.array([[0.0, -np.inf], [-np.inf, 0.0]])
    return ChainScores(unary, np.array([0, 2, 3]), transition, np.zeros(2), np.zeros(2))


@pytest.mark.parametrize("forbidden_by", ["scores", "constraints"])
def test_underflow_with_forbidden_transitions_raises_naming_the_sequence(forbidden_by):
    scores = _stay_in_state_chain()
    constraints = None
    if forbidden_by == "constraints":
        constraints = ChainConstraints(transition=np.eye(2, dtype=bool))
        scores = ChainScores(scores.unary, scores.offsets, np.zeros((2, 2)), scores.start,
                             scores.end)
    decoder = ChainDecoder(log_space=False, constraints=constraints)
    reference = ChainDecoder(log_space=True, constraints=constraints)
    np.testing.assert_allclose(reference.log_partition(scores),
                               [-800.0 + np.log(2.0), 1.0 + np.log1p(np.exp(-1.0))])
    for operation in (decoder.log_partition, decoder.marginals):
        with pytest.raises(ValueError, match=r"sequence 0 of the batch.*-799\.307") as info:
            operation(scores)
        assert not isinstance(info.value, InfeasibleOutputError)


def test_infeasible_sequences_are_still_infeasible_not_underflows():
    # sequence 1 must change state once, which no transition allows
    unary = np.array([[0.0, 1.0], [0.0, 0.0], [0.0, -np.inf], [-np.inf, 0.0]])
    transition = np.array([[0.0, -np.inf], [-np.inf, 0.0]])
    scores = ChainScores(unary, np.array([0, 2, 4]), transition, np.zeros(2), np.zeros(2))
    log_z = SCALED.log_partition(scores)
    np.testing.assert_allclose(log_z, LOG.log_partition(scores))
    assert np.isfinite(log_z[0]) and log_z[1] == -np.inf
    with pytest.raises(InfeasibleOutputError) as info:
        SCALED.marginals(scores)
    np.testing.assert_array_equal(info.value.examples, [1])


def test_large_unary_spread_without_forbidden_parts_still_rescales():
    rng = np.random.default_rng(2)
    scores = ChainScores(rng.normal(size=(30, 3)) * 1e4, np.array([0, 10, 30]),
                         rng.normal(size=(3, 3)), rng.normal(size=3), rng.normal(size=3))
    np.testing.assert_allclose(SCALED.log_partition(scores), LOG.log_partition(scores),
                               rtol=1e-12)
