"""Decoders reject wrong containers, shapes, parameters and arguments with clear errors."""

import time

import numpy as np
import pytest

from skstruct.decoders import (
    BruteForceDecoder,
    ChainDecoder,
    ChainScores,
    MatchingScores,
    MulticlassDecoder,
    MulticlassScores,
    MultilabelDecoder,
    MultilabelScores,
    TreeDecoder,
    TreeScores,
)
from _families import family_names, instance, other_scores
from skstruct.decoders._core.checks import check_k, check_offsets
from skstruct.losses import HammingLoss, TaskLoss


def _chain(n_tokens=4, n_states=3, offsets=None):
    rng = np.random.default_rng(0)
    return ChainScores(rng.normal(size=(n_tokens, n_states)),
                       [0, n_tokens] if offsets is None else offsets,
                       rng.normal(size=(n_states, n_states)), rng.normal(size=n_states),
                       rng.normal(size=n_states))


def _family(kind):
    """(decoder, scores, gold outputs) of one family, tiny."""
    return instance(kind, np.random.default_rng(1), n_examples=2)


KINDS = family_names()


def _operations(decoder, scores, y):
    """Every public operation of ``decoder`` that takes scores, as callables."""
    ops = {"map": lambda s: decoder.map(s), "parts": lambda s: decoder.parts(s, y),
           "score_outputs": lambda s: decoder.score_outputs(s, y),
           "loss_augmented_map": lambda s: decoder.loss_augmented_map(s, y, HammingLoss()),
           "cost_augmented": lambda s: decoder.cost_augmented(s, y, HammingLoss())}
    if "marginals" in decoder.capabilities:
        ops["marginals"] = lambda s: decoder.marginals(s)
        ops["log_partition"] = lambda s: decoder.log_partition(s)
    if "top_k" in decoder.capabilities:
        ops["top_k"] = lambda s: decoder.top_k(s, 2)
    if isinstance(decoder, ChainDecoder):
        ops["diverse_top_k"] = lambda s: decoder.diverse_top_k(s, 2)
        ops["map_with_label_count"] = lambda s: decoder.map_with_label_count(
            s, 1, np.array([False, True, True]))
        ops["map_with_min_distance"] = lambda s: decoder.map_with_min_distance(
            s, y[:, None])
    return ops


# --------------------------------------------------------------------------- containers


@pytest.mark.parametrize("kind", KINDS)
def test_every_operation_rejects_a_container_of_another_family_with_a_type_error(kind):
    decoder, scores, y = _family(kind)
    other = other_scores(scores)
    expected = type(scores).__name__
    for name, operation in _operations(decoder, scores, y).items():
        operation(scores)  # the right container works
        for wrong in (other, np.zeros((4, 3)), scores.unary):
            with pytest.raises(TypeError, match=f"{type(decoder).__name__} takes "
                                                f"{expected}; got {type(wrong).__name__}"):
                operation(wrong)


@pytest.mark.parametrize("decoder", [MulticlassDecoder(), MultilabelDecoder()])
def test_independent_decoders_do_not_read_chain_scores_token_by_token(decoder):
    with pytest.raises(TypeError, match="takes Multi.*Scores; got ChainScores"):
        decoder.map(_chain())


def test_user_decoders_and_user_containers_are_not_restricted():
    class Doubled(MulticlassScores):
        pass

    class Custom:
        unary = np.array([[0.0, 1.0]])

    assert MulticlassDecoder().map(Doubled(np.array([[0.0, 1.0]])))[0] == 1
    from skstruct.decoders import Decoder

    class Mine(Decoder):
        def map(self, scores, *, return_score=False):
            return self._check_scores(scores).unary.argmax(axis=1)

    assert Mine().map(Custom())[0] == 1


@pytest.mark.parametrize("kind", family_names(enumerated=True))
def test_brute_force_reads_every_family(kind):
    _, scores, y = _family(kind)
    brute = BruteForceDecoder()
    brute.map(scores)
    brute.parts(scores, y)
    with pytest.raises(TypeError, match="BruteForceDecoder takes ChainScores or "):
        brute.map(np.zeros((3, 3)))


# -------------------------------------------------------------------------- score shapes


@pytest.mark.parametrize("offsets, message", [
    ([[0, 4]], "offsets must be 1-D"),
    ([], "offsets must be 1-D"),
    ([0, 3, 2, 4], r"offsets must be non-decreasing.*offsets\[1\] = 3 > offsets\[2\] = 2"),
    ([0.0, 2.5, 4.0], "offsets must be integers"),
    ([0.0, 4.0], "offsets must be integers"),
    ([1, 4], "offsets must start at 0"),
    ([0, 3], "end at the number of unary rows"),
    ([0, 2, 2, 4], "sequence 1 has none"),
])
def test_chain_scores_reject_bad_offsets(offsets, message):
    with pytest.raises(ValueError, match=message):
        _chain(offsets=offsets)


@pytest.mark.parametrize("offsets, message", [
    ([[0, 1, 3]], "offsets must be 1-D"),
    ([0, 3, 1], "non-decreasing"),
    ([0.0, 1.0, 3.0], "offsets must be integers"),
    ([0, 1, 1, 3], "empty sentence"),
])
def test_tree_scores_reject_bad_offsets(offsets, message):
    with pytest.raises(ValueError, match=message):
        TreeScores(np.zeros(5), offsets)


def test_offsets_helper_returns_int64_and_accepts_every_integer_dtype():
    for dtype in (np.int8, np.uint16, np.int32, np.int64):
        out = check_offsets(np.array([0, 2, 5], dtype=dtype), 5, owner="X")
        assert out.dtype == np.int64 and out.flags.c_contiguous
        np.testing.assert_array_equal(out, [0, 2, 5])
    with pytest.raises(ValueError, match="X: offsets must be integers"):
        check_offsets(np.array([0, 5], dtype=bool), owner="X")


@pytest.mark.parametrize("build, message", [
    (lambda: ChainScores(np.zeros(5), [0, 5], np.zeros((5, 5)), np.zeros(5), np.zeros(5)),
     r"unary must be 2-D \(n_tokens, n_states\)"),
    (lambda: ChainScores(np.zeros((1, 5, 1)), [0, 5], np.zeros((5, 5)), np.zeros(5),
                         np.zeros(5)), "unary must be 2-D"),
    (lambda: ChainScores(np.zeros((5, 2)), [0, 5], np.zeros(4), np.zeros(2), np.zeros(2)),
     "transition has shape"),
    (lambda: ChainScores(np.zeros((5, 2)), [0, 5], np.zeros((2, 2)), np.zeros((1, 2)),
                         np.zeros(2)), "start"),
    (lambda: MulticlassScores(np.zeros(5)), r"unary must be 2-D \(n_samples, n_classes\)"),
    (lambda: MultilabelScores(np.zeros((2, 2, 2))), r"must be 2-D \(n_samples, n_labels\)"),
    (lambda: TreeScores(np.zeros((2, 2)), [0, 2]), "unary must be 1-D"),
    (lambda: MatchingScores(np.zeros((2, 2)), [[2, 2]]), "unary must be 1-D"),
    (lambda: TreeScores.from_blocks([]), "no sentences"),
    (lambda: MatchingScores.from_blocks([]), "no examples"),
])
def test_score_containers_reject_wrong_shapes(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_score_containers_reject_non_numeric_and_complex_scores():
    with pytest.raises(TypeError, match="real numbers"):
        MulticlassScores(np.array([["a", "b"]]))
    with pytest.raises(TypeError, match="real numbers"):
        ChainScores(np.zeros((2, 2)) + 1j, [0, 2], np.zeros((2, 2)), np.zeros(2), np.zeros(2))


# ----------------------------------------------------------------------- k, min_distance


BAD_K = [("2", TypeError), (2.5, TypeError), (2.0, TypeError), (True, TypeError),
         (None, TypeError), (0, ValueError), (-1, ValueError)]


@pytest.mark.parametrize("decoder, kind", [
    (ChainDecoder(), "chain"), (MulticlassDecoder(), "multiclass"),
    (MultilabelDecoder(), "multilabel"), (BruteForceDecoder(), "chain"),
    (BruteForceDecoder(), "multiclass"), (BruteForceDecoder(), "multilabel"),
    (BruteForceDecoder(), "tree"), (BruteForceDecoder(), "matching"),
])
@pytest.mark.parametrize("k, error", BAD_K)
def test_top_k_takes_an_integer_k_of_at_least_one(decoder, kind, k, error):
    scores = _family(kind)[1]
    with pytest.raises(error, match="k must be an integer >= 1"):
        decoder.top_k(scores, k)


@pytest.mark.parametrize("k", [1, 2, np.int64(2), np.int32(3)])
def test_top_k_accepts_numpy_integers(k):
    paths, top = ChainDecoder().top_k(_chain(), k)
    assert paths.shape == (4, int(k)) and top.shape == (1, int(k))


@pytest.mark.parametrize("k, error", BAD_K)
def test_diverse_top_k_takes_an_integer_k_of_at_least_one(k, error):
    with pytest.raises(error, match="k must be an integer >= 1"):
        ChainDecoder().diverse_top_k(_chain(), k)


@pytest.mark.parametrize("distance, error", BAD_K)
def test_min_distance_is_an_integer_of_at_least_one(distance, error):
    scores = _chain()
    with pytest.raises(error, match="min_distance must be an integer >= 1"):
        ChainDecoder().diverse_top_k(scores, 2, distance)
    with pytest.raises(error, match="min_distance must be an integer >= 1"):
        ChainDecoder().map_with_min_distance(scores, np.zeros(4, dtype=int), distance)


def test_check_k_returns_a_python_int():
    assert check_k(np.int16(4)) == 4 and type(check_k(np.int16(4))) is int


# ------------------------------------------------------------------------ hyper-parameters


@pytest.mark.parametrize("decoder, call", [
    (ChainDecoder(log_space="yes"), lambda d: d.marginals(_chain())),
    (ChainDecoder(log_space="yes"), lambda d: d.map(_chain())),
    (TreeDecoder(projective="yes"), lambda d: d.map(_family("tree")[1])),
    (TreeDecoder(single_root=1.5), lambda d: d.marginals(_family("tree")[1])),
    (TreeDecoder(projective="yes"), lambda d: d.check_outputs(np.array([1, 1, 1]), [0, 3])),
    (BruteForceDecoder(projective="yes"), lambda d: d.map(_family("tree")[1])),
    (BruteForceDecoder(max_outputs=0), lambda d: d.map(_chain())),
])
def test_decoders_validate_their_hyper_parameters(decoder, call):
    with pytest.raises(ValueError, match="parameter"):
        call(decoder)


def test_hyper_parameters_are_validated_again_after_set_params():
    decoder, scores = ChainDecoder(), _chain()
    decoder.marginals(scores)
    decoder.set_params(log_space="yes")
    with pytest.raises(ValueError, match="log_space"):
        decoder.marginals(scores)
    decoder.log_space = True
    decoder.marginals(scores)
    decoder.log_space = "no"
    with pytest.raises(ValueError, match="log_space"):
        decoder.map(scores)


def test_validating_hyper_parameters_leaves_the_decoder_unchanged():
    decoder = TreeDecoder()
    before = dict(vars(decoder))
    decoder.map(_family("tree")[1])
    assert vars(decoder) == before


def test_argument_checks_cost_microseconds():
    decoder, scores = ChainDecoder(), _chain()
    decoder.map(scores)
    n = 2000
    start = time.perf_counter()
    for _ in range(n):
        decoder._check_scores(scores)
    assert (time.perf_counter() - start) / n < 20e-6


# ------------------------------------------------------------------------------ task losses


class GoodLoss(TaskLoss):
    """Plain Hamming, in ``__call__`` only."""

    def __call__(self, y_true, y_pred, offsets):
        return np.add.reduceat((np.asarray(y_true) != y_pred).astype(float), offsets[:-1])


class GoodLossWithCosts(GoodLoss):
    def unary_costs(self, y_true, offsets, n_states):
        return (np.asarray(y_true)[:, None] != np.arange(n_states)).astype(float)


@pytest.mark.parametrize("kind", KINDS)
def test_loss_augmented_map_accepts_loss_names(kind):
    decoder, scores, y = _family(kind)
    np.testing.assert_array_equal(decoder.loss_augmented_map(scores, y, "hamming"),
                                  decoder.loss_augmented_map(scores, y, HammingLoss()))
    augmented = decoder.cost_augmented(scores, y, "hamming")
    np.testing.assert_array_equal(augmented.unary,
                                  decoder.cost_augmented(scores, y, HammingLoss()).unary)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("loss", [3, None, HammingLoss])
def test_loss_augmented_map_rejects_what_is_not_a_task_loss(kind, loss):
    decoder, scores, y = _family(kind)
    with pytest.raises(TypeError, match="task_loss must be a TaskLoss or one of the names"):
        decoder.loss_augmented_map(scores, y, loss)
    with pytest.raises(TypeError, match="task_loss must be a TaskLoss or one of the names"):
        decoder.cost_augmented(scores, y, loss)


@pytest.mark.parametrize("kind", KINDS)
def test_unknown_loss_names_are_rejected(kind):
    decoder, scores, y = _family(kind)
    with pytest.raises(ValueError, match="Unknown task_loss 'hammming'"):
        decoder.loss_augmented_map(scores, y, "hammming")


@pytest.mark.parametrize("kind", ["chain", "multilabel", "tree"])
def test_an_unsupported_user_loss_is_told_what_to_implement(kind):
    decoder, scores, y = _family(kind)
    with pytest.raises(ValueError, match=r"GoodLoss\.unary_costs\(y_true, offsets, n_states\)"
                                         r".*BruteForceDecoder"):
        decoder.loss_augmented_map(scores, y, GoodLoss())


@pytest.mark.parametrize("kind", ["chain", "multilabel", "tree"])
def test_a_user_loss_with_unary_costs_gets_exact_loss_augmented_map(kind):
    decoder, scores, y = _family(kind)
    expected = BruteForceDecoder().loss_augmented_map(scores, y, GoodLoss())
    np.testing.assert_array_equal(decoder.loss_augmented_map(scores, y, GoodLossWithCosts()),
                                  expected)


@pytest.mark.parametrize("kind", ["chain", "multilabel"])
def test_an_unknown_rescaling_is_named(kind):
    decoder, scores, y = _family(kind)
    with pytest.raises(ValueError, match="rescaling must be 'margin', 'slack' or a callable"):
        decoder.loss_augmented_map(scores, y, GoodLoss(), rescaling="hinge")


# ----------------------------------------------------------------------------- brute force


@pytest.mark.parametrize("kind", family_names(enumerated=True))
def test_brute_force_cost_augmented_matches_the_family_decoder(kind):
    decoder, scores, y = _family(kind)
    got = BruteForceDecoder().cost_augmented(scores, y, HammingLoss())
    assert type(got) is type(scores)
    np.testing.assert_allclose(got.unary, decoder.cost_augmented(scores, y, HammingLoss()).unary)
    # the augmented scores rank outputs by θ_y + Δ(y_true, y)
    np.testing.assert_array_equal(BruteForceDecoder().map(got),
                                  decoder.loss_augmented_map(scores, y, HammingLoss()))


@pytest.mark.parametrize("build, message", [
    (lambda: ChainScores(np.zeros((40, 5)), [0, 40], np.zeros((5, 5)), np.zeros(5),
                         np.zeros(5)), r"9094947017729282379150390625 outputs of sequence 0"),
    (lambda: ChainScores(np.zeros((13, 3)), [0, 2, 13], np.zeros((3, 3)), np.zeros(3),
                         np.zeros(3)), r"177147 outputs of sequence 1"),
    (lambda: MultilabelScores(np.zeros((2, 21))), r"2097152 outputs of example 0"),
    (lambda: MatchingScores.from_blocks([np.zeros((2, 2)), np.zeros((8, 9))]),
     r"362880 outputs of example 1"),
])
@pytest.mark.parametrize("operation", ["map", "log_partition", "marginals", "top_k",
                                       "loss_augmented_map"])
def test_brute_force_refuses_to_enumerate_too_many_outputs(build, message, operation):
    scores = build()
    decoder = BruteForceDecoder(max_outputs=100_000)
    y = np.zeros(scores.unary.shape if isinstance(scores, MultilabelScores)
                 else scores.offsets[-1], dtype=np.int64)
    calls = {"map": lambda: decoder.map(scores),
             "log_partition": lambda: decoder.log_partition(scores),
             "marginals": lambda: decoder.marginals(scores),
             "top_k": lambda: decoder.top_k(scores, 2),
             "loss_augmented_map": lambda: decoder.loss_augmented_map(scores, y, "hamming")}
    start = time.perf_counter()
    with pytest.raises(ValueError, match=message + ".*more than max_outputs=100000"):
        calls[operation]()
    assert time.perf_counter() - start < 1.0


def test_brute_force_limit_is_a_parameter():
    scores = _chain(n_tokens=8, n_states=3)  # 6561 labelings
    with pytest.raises(ValueError, match="max_outputs=1000"):
        BruteForceDecoder(max_outputs=1000).map(scores)
    np.testing.assert_array_equal(BruteForceDecoder(max_outputs=6561).map(scores),
                                  ChainDecoder().map(scores))


@pytest.mark.parametrize("kind", ["tree", "matching"])
def test_losses_defined_on_classes_are_refused_by_trees_and_matchings(kind):
    decoder, scores, y = _family(kind)
    loss = HammingLoss(class_costs=[1.0, 2.0, 3.0])
    assert loss.n_classes == 3
    with pytest.raises(ValueError, match="defined on 3 classes .* Use a loss without classes"):
        decoder.loss_augmented_map(scores, y, loss)


def test_brute_force_lists_the_labelings_of_chains_only():
    _, scores, _ = _family("chain")
    assert sum(len(outputs) for _, outputs, *_ in BruteForceDecoder()._enumerate(scores)) > 0
    with pytest.raises(TypeError, match="BruteForceDecoder does not know TreeScores"):
        BruteForceDecoder()._enumerate(_family("tree")[1])
