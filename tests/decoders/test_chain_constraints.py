"""Chain constraints: every ChainDecoder operation runs over the valid sequences only.

The reference is enumeration: the brute-force decoder on scores where the test itself
sets the forbidden transition, start and end scores to -inf, and plain itertools
enumeration of the sequences that satisfy the boolean masks.
"""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _chain_data import random_chain_scores
from skstruct.decoders import (
    BruteForceDecoder,
    ChainConstraints,
    ChainDecoder,
    ChainScores,
    InfeasibleOutputError,
)
from skstruct.decoders._chain.oracle import chain_oracle, compiled_chain_oracle
from skstruct.losses import (
    FBetaLoss,
    HammingLoss,
    IoULoss,
    LabelCountLoss,
    PrecisionLoss,
    RecallLoss,
    ZeroOneLoss,
)

brute = BruteForceDecoder()
FEW = settings(max_examples=12, deadline=None)


@st.composite
def constrained_instances(draw, max_states=3, max_length=4, max_sequences=3):
    """(ChainScores, ChainConstraints): random masks with one state s0 allowed first,
    last and after itself, so every length has a valid sequence."""
    n_states = draw(st.integers(2, max_states))
    lengths = draw(st.lists(st.integers(1, max_length), min_size=1,
                            max_size=max_sequences))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    scores = random_chain_scores(rng, lengths, n_states, draw(st.sampled_from([0.3, 3.0])))
    transition = rng.random((n_states, n_states)) < 0.6
    start, end = rng.random(n_states) < 0.6, rng.random(n_states) < 0.6
    s0 = rng.integers(n_states)
    transition[s0, s0] = start[s0] = end[s0] = True
    return scores, ChainConstraints(transition, start, end)


def _masked(scores, c):
    """The scores with the forbidden parts at -inf, built here independently."""
    return ChainScores(scores.unary, scores.offsets,
                       np.where(c.transition, scores.transition, -np.inf),
                       np.where(c.start, scores.start, -np.inf),
                       np.where(c.end, scores.end, -np.inf))


def _is_valid(c, seq):
    return (c.start[seq[0]] and c.end[seq[-1]]
            and all(c.transition[a, b] for a, b in zip(seq[:-1], seq[1:])))


def _valid_sequences(c, length):
    return [s for s in itertools.product(range(c.n_states), repeat=length) if _is_valid(c, s)]


def _all_valid(c, labels, offsets):
    return all(_is_valid(c, labels[a:b]) for a, b in zip(offsets[:-1], offsets[1:]))


def _random_valid(c, offsets, rng):
    return np.concatenate([np.array(_valid_sequences(c, b - a))[
        rng.integers(len(_valid_sequences(c, b - a)))] for a, b in zip(offsets[:-1],
                                                                        offsets[1:])])


@FEW
@given(case=constrained_instances())
def test_map_marginals_log_partition_and_top_k_equal_enumeration_over_valid_sequences(case):
    scores, c = case
    decoder, masked = ChainDecoder(constraints=c), _masked(scores, c)
    labels, best = decoder.map(scores, return_score=True)
    _, ref_best = brute.map(masked, return_score=True)
    np.testing.assert_allclose(best, ref_best, atol=1e-9)
    assert _all_valid(c, labels, scores.offsets)
    np.testing.assert_allclose(decoder.score_outputs(scores, labels), ref_best, atol=1e-9)
    ref_log_z, ref = brute.marginals(masked)
    for log_space in ("auto", True, False):
        log_z, marg = decoder.set_params(log_space=log_space).marginals(scores)
        np.testing.assert_allclose(log_z, ref_log_z, atol=1e-9)
        np.testing.assert_allclose(decoder.log_partition(scores), ref_log_z, atol=1e-9)
        for name in ("unary", "transition", "start", "end"):
            np.testing.assert_allclose(getattr(marg, name), getattr(ref, name), atol=1e-9)
    decoder.set_params(log_space="auto")
    paths, top = decoder.top_k(scores, 5)
    ref_paths, ref_top = brute.top_k(masked, 5)
    np.testing.assert_allclose(top, ref_top, atol=1e-9)
    for r in range(5):
        found = np.repeat(np.isfinite(top[:, r]), scores.lengths)
        assert np.all(paths[~found, r] == -1)
        for i, (a, b) in enumerate(zip(scores.offsets[:-1], scores.offsets[1:])):
            if np.isfinite(top[i, r]):
                assert _is_valid(c, paths[a:b, r])


LOSSES = {
    "hamming": (HammingLoss(), ("margin", "slack")),
    "normalized_hamming": (HammingLoss(normalize=True), ("margin", "slack")),
    "class_costs": (HammingLoss(class_costs=[[0, 1, 2], [1, 0, 1], [3, 1, 0]]), ("margin",)),
    "zero_one": (ZeroOneLoss(), ("margin", "slack")),
    "f1": (FBetaLoss(), ("margin", "slack")),
    "iou": (IoULoss(), ("margin", "slack")),
    "precision": (PrecisionLoss(), ("margin",)),
    "recall": (RecallLoss(), ("slack",)),
    "label_count": (LabelCountLoss(), ("margin",)),
}


def _bound(loss, n_states):
    if loss.decomposition != "counts":
        return loss
    positive = np.ones(n_states, dtype=bool)
    positive[0] = False
    return loss.with_positive_states(positive)


def _objective(masked, y_true, y, loss, rescaling):
    """H(θ_y, Δ(y_true, y)) of every sequence, the forbidden parts at -inf."""
    theta = brute.score_outputs(masked, y)
    delta = loss(y_true, y, masked.offsets)
    if rescaling == "margin":
        return theta + delta
    return delta * (1.0 + theta - brute.score_outputs(masked, y_true))


@pytest.mark.parametrize("name", list(LOSSES))
@FEW
@given(case=constrained_instances(max_states=3), seed=st.integers(0, 1000))
def test_loss_augmented_map_and_the_compiled_oracle_equal_enumeration(name, case, seed):
    scores, c = case
    base, rescalings = LOSSES[name]
    if name == "class_costs" and scores.n_states != 3:
        return
    loss = _bound(base, scores.n_states)
    rng = np.random.default_rng(seed)
    y_true = _random_valid(c, scores.offsets, rng)
    decoder, masked = ChainDecoder(constraints=c), _masked(scores, c)
    offsets = scores.offsets
    pair = np.concatenate([scores.transition.ravel(), scores.start, scores.end])
    for rescaling in rescalings:
        y_hat = decoder.loss_augmented_map(scores, y_true, loss, rescaling)
        ref = brute.loss_augmented_map(masked, y_true, loss, rescaling)
        assert _all_valid(c, y_hat, offsets)
        np.testing.assert_allclose(_objective(masked, y_true, y_hat, loss, rescaling),
                                   _objective(masked, y_true, ref, loss, rescaling),
                                   atol=1e-9)
        # the compiled per-sequence oracle of the engine: the decoder's outputs and Δ
        oracle = compiled_chain_oracle(decoder, loss, rescaling, y_true, offsets)
        assert oracle is not None
        for i, (a, b) in enumerate(zip(offsets[:-1], offsets[1:])):
            out = np.full(b - a, -7, dtype=np.int64)
            delta = chain_oracle(oracle.rescaling, np.ascontiguousarray(scores.unary[a:b]),
                                 pair, y_true[a:b], oracle.costs, oracle.ints,
                                 oracle.floats, out)
            assert _is_valid(c, out)
            sub = np.array([0, b - a])
            one = ChainScores(masked.unary[a:b], sub, masked.transition, masked.start,
                              masked.end)
            np.testing.assert_allclose(
                _objective(one, y_true[a:b], out, loss, rescaling),
                _objective(one, y_true[a:b], y_hat[a:b], loss, rescaling), atol=1e-9)
            assert delta == pytest.approx(float(loss(y_true[a:b], out, sub)[0]))
    # plain MAP (the perceptron's oracle)
    oracle = compiled_chain_oracle(decoder, None, None, y_true, offsets)
    labels = decoder.map(scores)
    for a, b in zip(offsets[:-1], offsets[1:]):
        out = np.empty(b - a, dtype=np.int64)
        chain_oracle(oracle.rescaling, np.ascontiguousarray(scores.unary[a:b]), pair,
                     y_true[a:b], oracle.costs, oracle.ints, oracle.floats, out)
        np.testing.assert_array_equal(out, labels[a:b])


@pytest.mark.parametrize("smoothing, top_k", [("entropy", 1), ("l2", 3)])
@pytest.mark.parametrize("with_loss", [False, True])
def test_constrained_smoothed_oracles_equal_the_masked_scores(smoothing, top_k, with_loss):
    """The smoothed oracles (SVRG, Casimir) read the constraints: the value and gradient
    equal those of the unconstrained oracle on the scores with forbidden parts at -inf,
    and the gradient of a forbidden part is 0."""
    from skstruct.decoders._core.engine_protocol import CHAIN
    from skstruct.decoders._engine.smoothed import (
        ENTROPY,
        L2,
        smoothed_oracle,
        supports_smoothed,
    )

    c = ChainConstraints.from_tags(["B-X", "I-X", "B-Y", "I-Y", "O"])
    rng = np.random.default_rng(3)
    lengths = [1, 4, 6]
    scores = random_chain_scores(rng, lengths, 5, 2.0)
    y = np.concatenate([_random_valid(c, np.array([0, n]), rng) for n in lengths])
    offsets = scores.offsets
    loss, rescaling = (HammingLoss(), "margin") if with_loss else (None, None)
    free = ChainDecoder().compiled_oracle(loss, rescaling, y, offsets)
    bound = ChainDecoder(constraints=c).compiled_oracle(loss, rescaling, y, offsets)
    assert supports_smoothed(bound, smoothing)
    code = {"entropy": ENTROPY, "l2": L2}[smoothing]
    masked = _masked(scores, c)
    pair = np.concatenate((scores.transition.ravel(), scores.start, scores.end))
    masked_pair = np.concatenate((masked.transition.ravel(), masked.start, masked.end))
    forbidden = ~np.isfinite(masked_pair)
    assert forbidden.any()
    for i in range(len(lengths)):
        a, b = offsets[i], offsets[i + 1]
        unary = np.ascontiguousarray(scores.unary[a:b])
        results = []
        for oracle, p in ((bound, pair), (free, masked_pair)):
            assert oracle.code == CHAIN
            y_i = oracle.y[oracle.y_offsets[i]:oracle.y_offsets[i + 1]]
            costs_i = oracle.costs[a:b] if oracle.costs.shape[0] else oracle.costs
            d_unary, d_pair = np.zeros_like(unary), np.zeros_like(p)
            value, exact = smoothed_oracle(oracle.code, code, 0.7, top_k, unary, p, y_i,
                                           costs_i, oracle.ints, oracle.floats,
                                           d_unary, d_pair)
            results.append((value, exact, d_unary, d_pair))
        (value, exact, d_unary, d_pair), reference = results
        assert value == pytest.approx(reference[0], rel=1e-12, abs=1e-12)
        assert exact == reference[1]
        np.testing.assert_allclose(d_unary, reference[2], atol=1e-12)
        np.testing.assert_allclose(d_pair[~forbidden], reference[3][~forbidden], atol=1e-12)
        np.testing.assert_array_equal(d_pair[forbidden], 0.0)


def test_samples_and_neighbourhoods_are_the_valid_sequences():
    rng = np.random.default_rng(0)
    c = ChainConstraints(rng.random((3, 3)) < 0.6, [True, False, True], [True, True, False])
    scores = random_chain_scores(rng, [3, 2], 3)
    decoder = ChainDecoder(constraints=c)
    paths = decoder.sample_uniform(scores, 2000, random_state=0)
    for i, (a, b) in enumerate(zip(scores.offsets[:-1], scores.offsets[1:])):
        valid = _valid_sequences(c, b - a)
        drawn, counts = np.unique(paths[a:b].T, axis=0, return_counts=True)
        assert sorted(map(tuple, drawn)) == sorted(valid)  # every valid one, nothing else
        assert counts.min() > 0.5 * 2000 / len(valid)      # roughly uniform
    y = np.array([1, 1, 1, 0, 2])  # invalid itself; its neighbours must be valid
    for k in (1, 2):
        paths, counts = decoder.neighbours(scores, y, k=k)
        for i, (a, b) in enumerate(zip(scores.offsets[:-1], scores.offsets[1:])):
            listed = {tuple(paths[a:b, r]) for r in range(counts[i])}
            expected = {s for s in _valid_sequences(c, b - a)
                        if 1 <= sum(u != v for u, v in zip(s, y[a:b])) <= k}
            assert listed == expected
    outputs, theta = decoder.best_neighbour(scores, y)
    for i, (a, b) in enumerate(zip(scores.offsets[:-1], scores.offsets[1:])):
        one = _masked(ChainScores(scores.unary[a:b], [0, b - a], scores.transition,
                                  scores.start, scores.end), c)
        best = max((brute.score_outputs(one, np.array(s))[0]
                    for s in _valid_sequences(c, b - a)
                    if sum(u != v for u, v in zip(s, y[a:b])) == 1), default=-np.inf)
        start = brute.score_outputs(one, y[a:b])[0]
        assert theta[i] == pytest.approx(max(best, start))
        assert _is_valid(c, outputs[a:b]) or best == start == -np.inf


@FEW
@given(case=constrained_instances(max_states=3, max_length=4), count=st.integers(0, 3))
def test_constrained_searches_equal_enumeration_over_valid_sequences(case, count):
    scores, c = case
    decoder = ChainDecoder(constraints=c)
    positive = np.arange(scores.n_states) > 0
    labels, best = decoder.map_with_label_count(scores, count, positive)
    masked = _masked(scores, c)
    for i, (a, b) in enumerate(zip(scores.offsets[:-1], scores.offsets[1:])):
        one = _masked(ChainScores(scores.unary[a:b], [0, b - a], scores.transition,
                                  scores.start, scores.end), c)
        valid = [s for s in _valid_sequences(c, b - a) if sum(positive[list(s)]) == count]
        expected = max((brute.score_outputs(one, np.array(s))[0] for s in valid),
                       default=-np.inf)
        assert best[i] == pytest.approx(expected)
        if valid:
            assert _is_valid(c, labels[a:b])
    paths, top = decoder.diverse_top_k(scores, 3)
    np.testing.assert_allclose(top, brute.top_k(masked, 3)[1], atol=1e-9)
    others = decoder.map(scores)[:, None]
    labels, best = decoder.map_with_min_distance(scores, others)
    np.testing.assert_allclose(best, brute.top_k(masked, 2)[1][:, 1], atol=1e-9)


def test_sparsemap_support_is_valid_sequences():
    from skstruct.decoders import sparsemap

    rng = np.random.default_rng(3)
    c = ChainConstraints.from_tags(["B-X", "I-X", "O"])
    scores = random_chain_scores(rng, [4, 3], 3, 0.3)
    result = sparsemap(ChainDecoder(constraints=c), scores)
    free = sparsemap(ChainDecoder(), scores)
    assert not np.allclose(result.marginals.transition[:, 2, 1], free.marginals.transition[:, 2, 1])
    np.testing.assert_allclose(result.marginals.transition[:, 2, 1], 0.0)  # O -> I-X
    np.testing.assert_allclose(result.marginals.start[:, 1], 0.0)          # starts with I-X


def _bio_rule(prev, cur):
    """I-X only after B-X or I-X: the rule written out, tag by tag."""
    return not cur.startswith("I-") or prev in ("B-" + cur[2:], cur)


def _bioes_rule(prev, cur):
    opens = prev is not None and prev[:2] in ("B-", "I-")
    if opens:
        return cur[:2] in ("I-", "E-") and cur[2:] == prev[2:]
    return cur[:2] not in ("I-", "E-")


@pytest.mark.parametrize("scheme", ["bio", "iob2", "BIOES", "iobes"])
def test_tag_schemes_follow_their_rules(scheme):
    bioes = scheme.lower() in ("bioes", "iobes")
    tags = ["B-NP", "B-VP", "I-NP", "I-VP", "O"] + (["E-NP", "S-VP", "E-VP"] if bioes else [])
    c = ChainConstraints.from_tags(tags, scheme)
    rule = _bioes_rule if bioes else _bio_rule
    for i, prev in enumerate(tags):
        for j, cur in enumerate(tags):
            assert c.transition[i, j] == rule(prev, cur), (prev, cur)
    assert c.start.tolist() == [rule(None, t) if bioes else not t.startswith("I-")
                                for t in tags]
    expected_end = [not t[:2] in ("B-", "I-") if bioes else True for t in tags]
    assert c.end.tolist() == expected_end


def test_scheme_names_are_bound_to_the_class_names():
    tags = np.array(["B-NP", "I-NP", "O"], dtype=object)
    scores = ChainScores(np.array([[0., 2., 1.], [0., 0., 1.], [0., 2., 0.]]), [0, 3],
                         np.zeros((3, 3)), np.zeros(3), np.zeros(3))
    decoder = ChainDecoder(constraints="bio")
    with pytest.raises(ValueError, match="bind_classes"):
        decoder.map(scores)
    bound = decoder.bind_classes(tags)
    assert decoder.constraints == "bio" and isinstance(bound.constraints, ChainConstraints)
    assert bound.map(scores).tolist() == [2, 0, 1]
    as_dict = ChainDecoder(constraints={"transition": bound.constraints.transition,
                                        "start": bound.constraints.start})
    assert as_dict.map(scores).tolist() == [2, 0, 1]
    assert ChainDecoder().bind_classes(tags).map(scores).tolist() == [1, 2, 1]


@pytest.mark.parametrize("make,error,match", [
    (lambda: ChainConstraints(np.ones((2, 3), bool)), ValueError, "square"),
    (lambda: ChainConstraints(np.ones((2, 2), bool), [True]), ValueError, r"\(2,\)"),
    (lambda: ChainConstraints(np.ones((2, 2))), TypeError, "boolean"),
    (lambda: ChainConstraints(np.ones((2, 2), bool), [1, 0]), TypeError, "boolean"),
    (lambda: ChainConstraints(np.ones((2, 2), bool), [True, False], [False, True]),
     ValueError, "length 1"),
    (lambda: ChainConstraints.from_tags(["B-X", "O"], "iob1"), ValueError, "scheme"),
    (lambda: ChainConstraints.from_tags(["B-X", "X", "O"], "bio"), ValueError, "'X'"),
    (lambda: ChainConstraints.from_tags(["B-X", "E-X", "O"], "bio"), ValueError, "'E-X'"),
    (lambda: ChainConstraints.from_tags([0, 1], "bio"), ValueError, "parse"),
    (lambda: ChainDecoder(constraints="bilou").bind_classes(["O"]), ValueError, "bilou"),
    (lambda: ChainDecoder(constraints=3).bind_classes(["O"]), TypeError, "constraints"),
    (lambda: ChainDecoder(constraints={"start": [True]}).bind_classes(["O"]), ValueError,
     "transition"),
    (lambda: ChainDecoder(constraints=ChainConstraints(np.ones((2, 2), bool))).bind_classes(
        ["B-X", "I-X", "O"]), ValueError, "3 classes"),
])
def test_bad_constraints_are_rejected(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_bad_uses_are_rejected():
    c = ChainConstraints(np.ones((2, 2), bool))
    scores = ChainScores(np.zeros((2, 3)), [0, 2], np.zeros((3, 3)), np.zeros(3), np.zeros(3))
    with pytest.raises(ValueError, match="over 2 states"):
        ChainDecoder(constraints=c).map(scores)
    # every transition forbidden: length 1 is fine, length 2 has no valid sequence
    none = ChainDecoder(constraints=ChainConstraints(np.zeros((2, 2), bool)))
    two = ChainScores(np.zeros((2, 2)), [0, 1, 2], np.zeros((2, 2)), np.zeros(2),
                      np.zeros(2))
    assert none.map(two).tolist() == [0, 0]
    with pytest.raises(InfeasibleOutputError, match="sequence"):
        none.map(ChainScores(np.zeros((2, 2)), [0, 2], np.zeros((2, 2)), np.zeros(2),
                             np.zeros(2)))
    bio = ChainDecoder(constraints="bio").bind_classes(["B-X", "I-X", "O"])
    with pytest.raises(ValueError, match=r"1 of 2 training sequences.*'I-X' after 'O'"):
        bio.check_outputs(np.array([0, 1, 2, 1]), np.array([0, 2, 4]))
    bio.check_outputs(np.array([0, 1, 2, 0]), np.array([0, 2, 4]))


@pytest.mark.parametrize("gap", [340.0, 1000.0])
def test_forward_backward_is_exact_when_the_best_state_is_forbidden(gap):
    """Rescaling (gap within CONSTRAINED_UNARY_SPREAD) and log space (beyond) both give
    the enumeration when a token's best state is forbidden where it stands."""
    c = ChainConstraints.from_tags(["B-X", "I-X", "O"])
    unary = np.zeros((4, 3))
    unary[0, 1] = unary[2, 1] = gap     # I-X first, and I-X after O, are forbidden
    unary[1, 2] = 2.0
    scores = ChainScores(unary, [0, 1, 4], np.zeros((3, 3)), np.zeros(3), np.zeros(3))
    masked = _masked(scores, c)
    ref_log_z, ref = brute.marginals(masked)
    log_z, marg = ChainDecoder(constraints=c).marginals(scores)
    np.testing.assert_allclose(log_z, ref_log_z, rtol=1e-12)
    np.testing.assert_allclose(marg.unary, ref.unary, atol=1e-9)
    np.testing.assert_allclose(marg.transition, ref.transition, atol=1e-9)


def test_infeasible_sequences_under_constraints_are_named_by_every_path():
    none = ChainDecoder(constraints=ChainConstraints(np.zeros((2, 2), bool)))
    scores = ChainScores(np.zeros((3, 2)), [0, 1, 3], np.zeros((2, 2)), np.zeros(2),
                         np.zeros(2))
    np.testing.assert_array_equal(none.log_partition(scores), [np.log(2), -np.inf])
    for operation in (none.marginals, none.map, lambda s: none.top_k(s, 2)):
        with pytest.raises(InfeasibleOutputError, match="sequence 1"):
            operation(scores)


def test_is_valid_reads_tag_names_or_states():
    bio = ChainConstraints.from_tags(["B-NP", "I-NP", "O"])
    sequences = [np.array(["O", "B-NP", "I-NP"], dtype=object), ["I-NP"], ["O", "I-NP"],
                 ["B-NP", "I-NP", "I-NP", "O"]]
    np.testing.assert_array_equal(bio.is_valid(sequences), [True, False, False, True])
    with pytest.raises(ValueError, match="'B-VP'"):
        bio.is_valid([["B-VP"]])
    plain = ChainConstraints(bio.transition, bio.start, bio.end)
    np.testing.assert_array_equal(plain.is_valid([[2, 0, 1], [2, 1]]), [True, False])
    with pytest.raises(ValueError, match="states 0 .. 2"):
        plain.is_valid([[3]])
