"""Bad scores and bad outputs given to decoders: clear errors, never a silent answer.

* NaN and +inf part scores are rejected by every operation of every decoder, with a
  message naming the scores (unary, transition, start, end, arc, pair) and saying that
  -inf is the way to forbid a part.
* -inf forbids a part. An example left without an output of finite score has
  log-partition -inf; map, top_k, marginals and loss-augmented MAP raise
  InfeasibleOutputError naming it; an output scored -inf is never returned or listed.
* Encoded outputs with states out of range, the wrong length or a non-integer dtype are
  rejected by parts, score_outputs, loss-augmented MAP and cost augmentation.
* TreeDecoder.check_outputs accepts exactly the trees the decoder can produce.
"""

import itertools
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _chain_data import chain_instances
from skstruct.decoders import (
    BruteForceDecoder,
    ChainDecoder,
    ChainScores,
    InfeasibleOutputError,
    MatchingDecoder,
    MatchingScores,
    MulticlassDecoder,
    MulticlassScores,
    MultilabelDecoder,
    MultilabelScores,
    TreeDecoder,
    TreeScores,
    chain_parts,
)
from skstruct.decoders._chain import kernels as chain_kernels
from skstruct.decoders._tree.decoder import enumerate_trees
from skstruct.losses import HammingLoss, ZeroOneLoss

brute = BruteForceDecoder()


# ----------------------------------------------------------------------------- families


@dataclass
class Family:
    """A small valid batch of one output family, built from named score arrays."""

    arrays: Callable  # () -> dict of the score arrays
    build: Callable  # dict -> score container
    y: np.ndarray  # valid encoded outputs of the batch
    kinds: dict  # score name in messages -> key in ``arrays``
    example: str  # what the last example is called in messages ("sequence 1")


def _rng():
    return np.random.default_rng(0)


FAMILIES = {
    "chain": Family(
        arrays=lambda: dict(unary=_rng().normal(size=(5, 3)),
                            transition=_rng().normal(size=(3, 3)),
                            start=_rng().normal(size=3), end=_rng().normal(size=3)),
        build=lambda a: ChainScores(a["unary"], [0, 2, 5], a["transition"], a["start"],
                                    a["end"]),
        y=np.array([0, 1, 2, 0, 1]),
        kinds={"unary": "unary", "transition": "transition", "start": "start", "end": "end"},
        example="sequence 1",
    ),
    "multiclass": Family(
        arrays=lambda: dict(unary=_rng().normal(size=(3, 4))),
        build=lambda a: MulticlassScores(a["unary"]),
        y=np.array([0, 3, 1]),
        kinds={"unary": "unary"},
        example="example 2",
    ),
    "multilabel": Family(
        arrays=lambda: dict(unary=_rng().normal(size=(3, 3))),
        build=lambda a: MultilabelScores(a["unary"]),
        y=np.array([[1, 0, 1], [0, 0, 0], [1, 1, 0]]),
        kinds={"unary": "unary"},
        example="example 2",
    ),
    "tree": Family(
        arrays=lambda: dict(unary=_rng().normal(size=4 + 9)),
        build=lambda a: TreeScores(a["unary"], [0, 2, 5]),
        y=np.array([1, 1, 0, 0, 1]),
        kinds={"arc": "unary"},
        example="sentence 1",
    ),
    "matching": Family(
        arrays=lambda: dict(unary=_rng().normal(size=4 + 6)),
        build=lambda a: MatchingScores(a["unary"], [[2, 2], [3, 2]]),
        y=np.array([1, 0, 0, -1, 1]),
        kinds={"pair": "unary"},
        example="example 1",
    ),
}

DECODERS = [
    ("chain", ChainDecoder()),
    ("chain", ChainDecoder(log_space=True)),
    ("chain", ChainDecoder(log_space=False)),
    ("chain", brute),
    ("multiclass", MulticlassDecoder()),
    ("multiclass", brute),
    ("multilabel", MultilabelDecoder()),
    ("multilabel", brute),
    ("tree", TreeDecoder()),
    ("tree", TreeDecoder(projective=True, single_root=True)),
    ("tree", brute),
    ("matching", MatchingDecoder()),
    ("matching", brute),
]


def _decoder_id(family, decoder):
    params = ",".join(f"{k}={v}" for k, v in decoder.get_params().items()
                      if v != type(decoder)().get_params()[k])
    return f"{family}-{type(decoder).__name__}({params})"


# --------------------------------------------------------------------------- operations

OPERATIONS = {
    "map": lambda d, s, y: d.map(s),
    "map_return_score": lambda d, s, y: d.map(s, return_score=True),
    "log_partition": lambda d, s, y: d.log_partition(s),
    "marginals": lambda d, s, y: d.marginals(s),
    "top_k": lambda d, s, y: d.top_k(s, 3),
    "loss_augmented_map_hamming_margin":
        lambda d, s, y: d.loss_augmented_map(s, y, HammingLoss()),
    "loss_augmented_map_zero_one_margin":
        lambda d, s, y: d.loss_augmented_map(s, y, ZeroOneLoss()),
    "loss_augmented_map_hamming_slack":
        lambda d, s, y: d.loss_augmented_map(s, y, HammingLoss(), "slack"),
    "cost_augmented": lambda d, s, y: d.cost_augmented(s, y, HammingLoss()),
    "score_outputs": lambda d, s, y: d.score_outputs(s, y),
    "parts": lambda d, s, y: d.parts(s, y),
    "map_with_label_count":
        lambda d, s, y: d.map_with_label_count(s, 1, np.array([False, True, True])),
    "map_with_min_distance": lambda d, s, y: d.map_with_min_distance(s, y[:, None]),
    "diverse_top_k": lambda d, s, y: d.diverse_top_k(s, 2),
}
#: Operations that must return an output or a distribution: they raise on infeasibility.
RAISING = ("map", "map_return_score", "marginals", "top_k",
           "loss_augmented_map_hamming_margin", "loss_augmented_map_zero_one_margin",
           "loss_augmented_map_hamming_slack")
#: Operations that take encoded outputs.
TAKING_OUTPUTS = ("loss_augmented_map_hamming_margin", "cost_augmented", "score_outputs",
                  "parts")


def _applies(family, decoder, operation):
    capabilities = decoder.capabilities
    arc_factored = family in ("tree", "matching")
    if operation.startswith("map_with") or operation == "diverse_top_k":
        return isinstance(decoder, ChainDecoder)
    if operation.startswith("map"):
        return "map" in capabilities
    if operation in ("log_partition", "marginals"):
        return "marginals" in capabilities
    if operation == "top_k":
        return "top_k" in capabilities
    if operation.startswith("loss_augmented_map"):
        native_arc = arc_factored and decoder is not brute
        return "loss_augmented_map" in capabilities and (
            not native_arc or operation == "loss_augmented_map_hamming_margin")
    if operation == "cost_augmented":  # the base class needs n_states
        return decoder is not brute or family in ("chain", "multiclass")
    return "parts" in capabilities


def _cases(operations=tuple(OPERATIONS)):
    return [
        pytest.param(family, decoder, operation,
                     id=f"{_decoder_id(family, decoder)}-{operation}")
        for family, decoder in DECODERS
        for operation in operations
        if _applies(family, decoder, operation)
    ]


# --------------------------------------------------------------- NaN and +inf are rejected


def _bad_cases():
    return [
        pytest.param(family, decoder, operation, kind, value,
                     id=f"{case.id}-{kind}-{label}")
        for case in _cases()
        for family, decoder, operation in [case.values]
        for kind in FAMILIES[family].kinds
        for value, label in ((np.nan, "nan"), (np.inf, "posinf"))
    ]


@pytest.mark.parametrize("family, decoder, operation, kind, value", _bad_cases())
def test_nan_and_posinf_scores_are_rejected_by_every_operation(family, decoder, operation,
                                                               kind, value):
    spec = FAMILIES[family]
    arrays = spec.arrays()
    arrays[spec.kinds[kind]].reshape(-1)[-1] = value
    shown = "NaN" if np.isnan(value) else r"\+inf"
    with pytest.raises(ValueError, match=rf"the {kind} scores.* contain {shown};") as info:
        OPERATIONS[operation](decoder, spec.build(arrays), spec.y)
    message = str(info.value)
    if family == "tree":
        assert "must be finite" in message
    else:
        assert "-inf forbids a part" in message
    if spec.kinds[kind] == "unary":
        assert spec.example in message  # the example holding the bad score


def test_minus_inf_scores_are_rejected_by_tree_scores():
    with pytest.raises(ValueError, match="arc scores of sentence 1 contain -inf.*finite"):
        TreeScores(np.array([0.0, 0.0, 0.0, 0.0, -np.inf]), [0, 1, 3])


# ------------------------------------------------------------------- infeasible examples


def _chain_infeasible(case):
    """Chain scores where some sequences have no labeling of finite score."""
    arrays = FAMILIES["chain"].arrays()
    if case == "token":  # every state of token 1 of sequence 1 is forbidden
        arrays["unary"][3] = -np.inf
        return arrays, [1]
    if case == "path":  # sequence 1 may only go 0 -> 1, which is forbidden
        arrays["unary"][2, 1:] = -np.inf
        arrays["unary"][3, [0, 2]] = -np.inf
        arrays["transition"][0, 1] = -np.inf
        return arrays, [1]
    arrays[case][...] = -np.inf  # every transition, first or last state is forbidden
    return arrays, [0, 1]


INFEASIBLE = {
    **{f"chain-{case}": ("chain", lambda case=case: _chain_infeasible(case))
       for case in ("token", "path", "transition", "start", "end")},
    "multiclass": ("multiclass", lambda: (
        dict(unary=np.array([[0.0, 1.0, 2.0, 3.0], [-np.inf] * 4, [0.0, -np.inf, 1.0, 2.0]])),
        [1])),
    "matching": ("matching", lambda: (  # row 0 of example 0 is forbidden
        dict(unary=np.array([-np.inf, -np.inf, 1.0, 2.0] + [0.0] * 6)), [0])),
    "matching-column": ("matching", lambda: (  # column 0 of example 1 is forbidden
        dict(unary=np.array([1.0, 2.0, 3.0, 4.0, -np.inf, 1.0, -np.inf, 2.0, -np.inf, 3.0])),
        [1])),
}


def _infeasible_cases(operations):
    return [
        pytest.param(name, decoder, operation,
                     id=f"{name}-{_decoder_id(family, decoder)}-{operation}")
        for name, (family, _) in INFEASIBLE.items()
        for fam, decoder in DECODERS if fam == family
        for operation in operations
        if _applies(family, decoder, operation)
    ]


def _infeasible(name):
    family, make = INFEASIBLE[name]
    arrays, infeasible = make()
    return FAMILIES[family], FAMILIES[family].build(arrays), infeasible


@pytest.mark.parametrize("name, decoder, operation", _infeasible_cases(RAISING))
def test_operations_raise_on_examples_without_feasible_output(name, decoder, operation):
    spec, scores, infeasible = _infeasible(name)
    with pytest.raises(InfeasibleOutputError, match="No feasible output") as info:
        OPERATIONS[operation](decoder, scores, spec.y)
    np.testing.assert_array_equal(info.value.examples, infeasible)
    assert f"{infeasible[0]}" in str(info.value)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("name, decoder, operation", _infeasible_cases(["log_partition"]))
def test_log_partition_is_minus_inf_without_feasible_output(name, decoder, operation):
    _, scores, infeasible = _infeasible(name)
    with np.errstate(all="raise"):  # no NaN produced on the way
        log_z = decoder.log_partition(scores)
    expected = np.zeros(scores.n_examples, dtype=bool)
    expected[infeasible] = True
    np.testing.assert_array_equal(log_z == -np.inf, expected)
    assert np.all(np.isfinite(log_z[~expected]))
    np.testing.assert_allclose(log_z, brute.log_partition(scores))


def test_infeasible_error_names_many_examples():
    unary = np.zeros((14, 2))
    unary[1:] = -np.inf
    with pytest.raises(InfeasibleOutputError, match="examples 1, 2, .*, 10 and 3 more"):
        MulticlassDecoder().map(MulticlassScores(unary))


def test_multilabel_examples_are_always_feasible():
    scores = MultilabelScores(np.array([[-np.inf, -np.inf], [1.0, -np.inf]]))
    decoder = MultilabelDecoder()
    np.testing.assert_array_equal(decoder.map(scores), [[0, 0], [1, 0]])
    np.testing.assert_array_equal(decoder.log_partition(scores), [0.0, np.log1p(np.e)])
    paths, top = decoder.top_k(scores, 4)
    np.testing.assert_array_equal(top, [[0.0, -np.inf, -np.inf, -np.inf],
                                        [1.0, 0.0, -np.inf, -np.inf]])
    assert np.all(paths[0, :, 1:] == -1) and np.all(paths[1, :, 2:] == -1)
    np.testing.assert_array_equal(paths[1, :, :2].T, [[1, 0], [0, 0]])


def test_all_transitions_forbidden_in_the_scaled_kernel():
    unary = np.zeros((3, 2))
    scores = ChainScores(unary, [0, 1, 3], np.full((2, 2), -np.inf), np.zeros(2), np.zeros(2))
    for decoder in (ChainDecoder(log_space=False), ChainDecoder(log_space=True)):
        np.testing.assert_array_equal(decoder.log_partition(scores), [np.log(2), -np.inf])


@pytest.mark.parametrize("case", ["token", "path", "transition", "start", "end"])
@pytest.mark.parametrize("kernel", ["forward_backward_scaled", "forward_backward_log"])
def test_forward_backward_kernels_give_minus_inf_and_no_nan(kernel, case):
    arrays, infeasible = _chain_infeasible(case)
    scores = FAMILIES["chain"].build(arrays)
    log_z, unary, transition = getattr(chain_kernels, kernel)(*scores._kernel_args(), True)
    assert not np.isnan(log_z).any()
    assert np.all(np.isfinite(unary)) and np.all(np.isfinite(transition))
    np.testing.assert_allclose(log_z, brute.log_partition(scores))
    feasible = np.setdiff1d(np.arange(scores.n_examples), infeasible)
    rows = np.isin(np.repeat(np.arange(scores.n_examples), scores.lengths), infeasible)
    assert np.all(unary[rows] == 0) and np.all(transition[infeasible] == 0)
    if feasible.size:
        _, ref = brute.marginals(scores.take(feasible))
        np.testing.assert_allclose(unary[~rows], ref.unary, atol=1e-12)
        np.testing.assert_allclose(transition[feasible], ref.transition, atol=1e-12)


# --------------------------------------------------- -inf forbids parts: agree with brute


def _forbid(rng, values, rate):
    values = values.copy()
    values[rng.random(values.shape) < rate] = -np.inf
    return values


@st.composite
def chains_with_forbidden_parts(draw):
    scores = draw(chain_instances())
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    rate = draw(st.sampled_from([0.2, 0.5]))
    return ChainScores(_forbid(rng, scores.unary, rate), scores.offsets,
                       _forbid(rng, scores.transition, rate), _forbid(rng, scores.start, rate),
                       _forbid(rng, scores.end, rate))


def _agree_with_brute(decoder, scores, k=5):
    """Every operation agrees with enumeration on scores with forbidden parts."""
    log_z = decoder.log_partition(scores)
    ref_log_z = brute.log_partition(scores)
    np.testing.assert_array_equal(log_z == -np.inf, ref_log_z == -np.inf)
    np.testing.assert_allclose(log_z, ref_log_z, rtol=1e-9, atol=1e-9)
    infeasible = np.flatnonzero(ref_log_z == -np.inf)
    if infeasible.size:
        for operation in ("map", "top_k") + (("marginals",) if "marginals" in
                                             decoder.capabilities else ()):
            with pytest.raises(InfeasibleOutputError) as info:
                OPERATIONS[operation](decoder, scores, None)
            np.testing.assert_array_equal(info.value.examples, infeasible)
        return
    _, best = decoder.map(scores, return_score=True)
    np.testing.assert_allclose(best, brute.map(scores, return_score=True)[1], atol=1e-9)
    paths, top = decoder.top_k(scores, k)
    ref_paths, ref_top = brute.top_k(scores, k)
    np.testing.assert_allclose(top, ref_top, atol=1e-9)
    np.testing.assert_array_equal(paths == -1, ref_paths == -1)
    assert np.all(np.isfinite(top) == np.isfinite(ref_top))
    if "marginals" in decoder.capabilities:
        _, marg = decoder.marginals(scores)
        _, ref = brute.marginals(scores)
        np.testing.assert_allclose(marg.unary, ref.unary, atol=1e-9)
    return paths, top


@pytest.mark.parametrize("decoder", [ChainDecoder(), ChainDecoder(log_space=True),
                                     ChainDecoder(log_space=False)],
                         ids=["auto", "log", "scaled"])
@settings(max_examples=60, deadline=None)
@given(scores=chains_with_forbidden_parts())
def test_chain_with_forbidden_parts_matches_enumeration(decoder, scores):
    found = _agree_with_brute(decoder, scores)
    if found is None:
        return
    paths, top = found
    for r in range(top.shape[1]):  # every listed path is allowed and scores its score
        listed = np.isfinite(top[:, r])
        for i in np.flatnonzero(listed):
            sub = scores.take([i])
            a, b = scores.offsets[i], scores.offsets[i + 1]
            np.testing.assert_allclose(decoder.score_outputs(sub, paths[a:b, r]), top[i, r])


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rate=st.sampled_from([0.2, 0.5, 0.9]))
def test_independent_and_matching_with_forbidden_parts_match_enumeration(seed, rate):
    rng = np.random.default_rng(seed)
    _agree_with_brute(MulticlassDecoder(),
                      MulticlassScores(_forbid(rng, rng.normal(size=(4, 3)), rate)))
    _agree_with_brute(MultilabelDecoder(),
                      MultilabelScores(_forbid(rng, rng.normal(size=(4, 3)), rate)), k=9)
    shapes = np.array([[2, 2], [3, 2], [2, 3]])
    scores = MatchingScores(_forbid(rng, rng.normal(size=16), rate), shapes)
    ref_log_z = brute.log_partition(scores)
    infeasible = np.flatnonzero(ref_log_z == -np.inf)
    if infeasible.size:
        with pytest.raises(InfeasibleOutputError) as info:
            MatchingDecoder().map(scores)
        np.testing.assert_array_equal(info.value.examples, infeasible)
    else:
        _, best = MatchingDecoder().map(scores, return_score=True)
        np.testing.assert_allclose(best, brute.map(scores, return_score=True)[1])


LOSSES = [(HammingLoss(), "margin"), (ZeroOneLoss(), "margin"), (HammingLoss(), "slack"),
          (ZeroOneLoss(), "slack")]


@pytest.mark.parametrize("task_loss, rescaling", LOSSES,
                         ids=["hamming-margin", "zero_one-margin", "hamming-slack",
                              "zero_one-slack"])
@pytest.mark.parametrize("family", ["chain", "multiclass", "multilabel"])
def test_loss_augmented_map_never_returns_a_forbidden_output(family, task_loss, rescaling):
    decoder = {"chain": ChainDecoder(), "multiclass": MulticlassDecoder(),
               "multilabel": MultilabelDecoder()}[family]
    spec = FAMILIES[family]
    rng = np.random.default_rng(1)
    for _ in range(30):
        arrays = {key: _forbid(rng, 3 * value, 0.4) for key, value in spec.arrays().items()}
        scores = spec.build(arrays)
        y_true = brute.top_k(scores, 1)[0][..., 0] if brute.log_partition(
            scores).min() > -np.inf else None
        if y_true is None:
            continue
        y_hat = decoder.loss_augmented_map(scores, y_true, task_loss, rescaling)
        ref = brute.loss_augmented_map(scores, y_true, task_loss, rescaling)
        assert np.all(decoder.score_outputs(scores, y_hat) > -np.inf)
        np.testing.assert_allclose(decoder.score_outputs(scores, y_hat),
                                   decoder.score_outputs(scores, ref))


@pytest.mark.parametrize("family", ["chain", "multiclass", "multilabel"])
@pytest.mark.parametrize("decoder_kind", ["native", "brute"])
def test_slack_rescaling_rejects_a_forbidden_gold_output(family, decoder_kind):
    spec = FAMILIES[family]
    arrays = spec.arrays()
    y = spec.y
    # forbid one part of the gold output of example 0; the example stays feasible
    if family == "chain":
        arrays["unary"][0, y[0]] = -np.inf
    elif family == "multiclass":
        arrays["unary"][0, y[0]] = -np.inf
    else:
        arrays["unary"][0, 0] = -np.inf  # label 0 is on in y[0]
    scores = spec.build(arrays)
    decoder = brute if decoder_kind == "brute" else dict(
        chain=ChainDecoder(), multiclass=MulticlassDecoder(),
        multilabel=MultilabelDecoder())[family]
    with pytest.raises(ValueError, match="slack rescaling.*undefined"):
        decoder.loss_augmented_map(scores, y, HammingLoss(), "slack")
    assert decoder.score_outputs(scores, y)[0] == -np.inf
    decoder.loss_augmented_map(scores, y, HammingLoss(), "margin")  # margin is defined


def test_scores_of_outputs_that_avoid_forbidden_parts_are_finite():
    scores = MultilabelScores(np.array([[-np.inf, 1.0]]))
    np.testing.assert_array_equal(MultilabelDecoder().score_outputs(scores, [[0, 1]]), [1.0])
    np.testing.assert_array_equal(MultilabelDecoder().score_outputs(scores, [[1, 1]]),
                                  [-np.inf])
    chain = ChainScores(np.array([[0.0, -np.inf]]), [0, 1], np.zeros((2, 2)), np.zeros(2),
                        np.zeros(2))
    np.testing.assert_array_equal(chain_parts([0], chain.offsets, 2).dot(chain), [0.0])


# ----------------------------------------------------------------------- bad outputs


def _bad_outputs(family, y):
    """(label, bad y, message pattern) for outputs that do not fit the scores."""
    flat = y.reshape(-1)
    above = {"chain": 3, "multiclass": 4, "multilabel": 2, "tree": 3, "matching": 2}[family]
    below = -2 if family == "matching" else -1
    cases = []
    for label, value in (("below_range", below), ("above_range", above)):
        bad = flat.copy()
        bad[-1] = value
        cases.append((label, bad.reshape(y.shape), r"\] = -?\d+ .* is out of range"))
    longer = np.concatenate((y, y[-1:]))
    cases.append(("too_long", longer, "has shape"))
    cases.append(("too_short", y[:-1], "has shape"))
    cases.append(("floats", y + 0.5, "integers"))
    return cases


def _bad_output_cases():
    return [
        pytest.param(family, decoder, operation, bad, pattern,
                     id=f"{case.id}-{label}")
        for case in _cases(TAKING_OUTPUTS)
        for family, decoder, operation in [case.values]
        for label, bad, pattern in _bad_outputs(family, FAMILIES[family].y)
    ]


@pytest.mark.parametrize("family, decoder, operation, y, pattern", _bad_output_cases())
def test_outputs_that_do_not_fit_the_scores_are_rejected(family, decoder, operation, y,
                                                         pattern):
    spec = FAMILIES[family]
    scores = spec.build(spec.arrays())
    OPERATIONS[operation](decoder, scores, spec.y)  # the valid outputs are accepted
    with pytest.raises(ValueError, match=pattern):
        OPERATIONS[operation](decoder, scores, y)


def test_out_of_range_message_names_the_token_and_the_sequence():
    spec = FAMILIES["chain"]
    scores = spec.build(spec.arrays())
    with pytest.raises(ValueError, match=r"y\[3\] = -1 \(token 1 of sequence 1\) is out of "
                                         r"range: expected a state 0 \.\. 2"):
        ChainDecoder().score_outputs(scores, np.array([0, 1, 2, -1, 1]))
    with pytest.raises(ValueError, match=r"y_true has shape \(4,\); expected \(5,\)"):
        ChainDecoder().loss_augmented_map(scores, np.zeros(4, dtype=int), HammingLoss())
    with pytest.raises(ValueError, match=r"others\[:, 0\]\[1\] = 3"):
        ChainDecoder().map_with_min_distance(scores, np.array([[0], [3], [0], [0], [0]]))
    with pytest.raises(ValueError, match="out of range"):
        chain_parts(np.array([0, 3]), np.array([0, 2]), 3)
    with pytest.raises(ValueError, match=r"positive_states has shape \(2,\); expected \(3,\)"):
        ChainDecoder().map_with_label_count(scores, 1, np.array([True, False]))


# ------------------------------------------------------------ TreeDecoder.check_outputs


@pytest.mark.parametrize("projective", [False, True])
@pytest.mark.parametrize("single_root", [False, True])
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_check_outputs_accepts_exactly_the_trees_of_the_decoder(n, projective, single_root):
    decoder = TreeDecoder(projective=projective, single_root=single_root)
    trees = {tuple(t) for t in enumerate_trees(n, projective, single_root)}
    assignments = np.array(list(itertools.product(range(n), repeat=n)))
    offsets = np.arange(len(assignments) + 1) * n
    accepted = []
    for heads in assignments:
        try:
            decoder.check_outputs(heads, np.array([0, n]))
            accepted.append(tuple(heads))
        except ValueError:
            pass
    assert set(accepted) == trees
    # a batch is rejected as a whole when one sentence is not a tree
    valid = np.array(sorted(trees))
    decoder.check_outputs(valid.ravel(), np.arange(len(valid) + 1) * n)
    if len(trees) < len(assignments):
        with pytest.raises(ValueError):
            decoder.check_outputs(assignments.ravel(), offsets)


def test_check_outputs_names_a_cycle():
    # sentence 1: tokens 0 and 1 head each other
    y = np.array([0, 1, 0, 2])
    with pytest.raises(ValueError, match="sentence 1.*cycle"):
        TreeDecoder().check_outputs(y, np.array([0, 1, 4]))
    with pytest.raises(ValueError, match="out of range"):
        TreeDecoder().check_outputs(np.array([0, 3]), np.array([0, 2]))
    with pytest.raises(ValueError, match="has shape"):
        TreeDecoder().check_outputs(np.array([0, 0, 0]), np.array([0, 2]))
