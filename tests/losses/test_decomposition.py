"""Task losses declare how they decompose, and decoders solve them from the declaration."""

import numpy as np
import pytest

from _families import instance

from skstruct.decoders import (
    BruteForceDecoder,
    ChainDecoder,
    Decoder,
    MulticlassDecoder,
    MulticlassScores,
    MultilabelDecoder,
    MultilabelScores,
    TreeDecoder,
)
from skstruct.losses import (
    CountingLoss,
    FBetaLoss,
    HammingLoss,
    IoULoss,
    LabelCountLoss,
    PrecisionLoss,
    RecallLoss,
    SparseMAPLoss,
    StructuredHingeLoss,
    TaskLoss,
    ZeroOneLoss,
)
from skstruct.losses._counting import BinaryErrorCosts, MismatchCount, mismatch_count_form


class AbsoluteDistance(TaskLoss):
    """Δ = Σ_t |y_t − y*_t|: a new loss that decomposes over parts, declared as such."""

    decomposition = "parts"

    def __call__(self, y_true, y_pred, offsets):
        distance = np.abs(np.asarray(y_true) - np.asarray(y_pred)).astype(np.float64)
        return np.add.reduceat(distance, offsets[:-1])

    def unary_costs(self, y_true, offsets, n_states):
        return np.abs(np.arange(n_states)[None, :] - np.asarray(y_true)[:, None]).astype(
            np.float64)


class WeightedMismatches(TaskLoss):
    """Δ = Σ_t w_t 1[y_t ≠ y*_t] with weights given per token position."""

    decomposition = "parts"

    def __init__(self, weight_of_position):
        self.weight_of_position = weight_of_position

    def _weights(self, offsets):
        lengths = np.diff(offsets)
        local = np.arange(offsets[-1]) - np.repeat(offsets[:-1], lengths)
        return self.weight_of_position(local, np.repeat(lengths, lengths))

    def __call__(self, y_true, y_pred, offsets):
        wrong = np.asarray(y_true) != np.asarray(y_pred)
        return np.add.reduceat(wrong * self._weights(offsets), offsets[:-1])

    def unary_costs(self, y_true, offsets, n_states):
        wrong = np.arange(n_states)[None, :] != np.asarray(y_true)[:, None]
        return wrong * self._weights(offsets)[:, None]

    def mismatch_weights(self, offsets):
        return self._weights(offsets)


def _twice(local, lengths):
    return np.full(local.shape, 2.0)


def _later_costs_more(local, lengths):
    return 1.0 + local


def _batch(kind, rng):
    """(decoder, scores, gold outputs) of a small random batch of one family."""
    return instance(kind, rng, n_examples=4, size=4)


# ---------------------------------------------------------------------------- declarations


def test_built_in_losses_declare_their_decomposition():
    assert HammingLoss.decomposition == "parts"
    assert ZeroOneLoss.decomposition is None and ZeroOneLoss.zero_one
    assert not HammingLoss.zero_one
    for loss in (FBetaLoss, IoULoss, PrecisionLoss, RecallLoss, LabelCountLoss,
                 MismatchCount, BinaryErrorCosts, CountingLoss):
        assert loss.decomposition == "counts", loss
    assert TaskLoss.decomposition is None


def test_a_loss_that_defines_unary_costs_is_part_decomposable_unless_it_says_otherwise():
    class Costs(TaskLoss):
        def unary_costs(self, y_true, offsets, n_states):
            return np.zeros((len(y_true), n_states))

    class Declared(TaskLoss):
        decomposition = None

        def unary_costs(self, y_true, offsets, n_states):
            return np.zeros((len(y_true), n_states))

    class Counting(FBetaLoss):
        def unary_costs(self, y_true, offsets, n_states):
            return np.zeros((len(y_true), n_states))

    assert Costs.decomposition == "parts"
    assert Declared.decomposition is None
    assert Counting.decomposition == "counts"


def test_an_unknown_decomposition_is_rejected_when_the_class_is_defined():
    with pytest.raises(TypeError, match=r"decomposition must be one of \('parts', 'counts', "
                                        r"None\); got 'tokens'"):
        class Bad(TaskLoss):  # noqa: F841
            decomposition = "tokens"


def test_mismatch_count_form():
    offsets = np.array([0, 2, 5])
    assert mismatch_count_form(ZeroOneLoss(), offsets).zero_one
    for loss in (HammingLoss(), HammingLoss(normalize=True), WeightedMismatches(_twice)):
        form = mismatch_count_form(loss, offsets)
        assert isinstance(form, MismatchCount) and not form.zero_one
    for loss in (HammingLoss(class_costs=[1.0, 2.0]), WeightedMismatches(_later_costs_more),
                 FBetaLoss(), AbsoluteDistance()):
        assert mismatch_count_form(loss, offsets) is None


@pytest.mark.parametrize("loss", [HammingLoss(), HammingLoss(normalize=True),
                                  HammingLoss(class_costs=[0.3, 2.0]),
                                  HammingLoss(normalize=True, class_costs=[[0, 1.5], [0.2, 0]])],
                         ids=repr)
def test_hamming_binary_counts_give_the_same_loss(rng, loss):
    n_samples, n_labels = 30, 6
    y_true = rng.integers(0, 2, size=(n_samples, n_labels))
    y_pred = rng.integers(0, 2, size=(n_samples, n_labels))
    offsets = np.arange(n_samples + 1) * n_labels
    counts = loss.binary_counts(n_labels).with_positive_states([False, True])
    np.testing.assert_allclose(counts(y_true.ravel(), y_pred.ravel(), offsets),
                               loss(y_true.ravel(), y_pred.ravel(), offsets), atol=1e-12)
    assert ZeroOneLoss().binary_counts(n_labels) is None


# --------------------------------------------------------------- the default and its hooks


@pytest.mark.parametrize("kind", ["chain", "multiclass", "multilabel", "tree"])
def test_a_new_part_decomposable_loss_works_with_every_decoder(rng, kind):
    loss = AbsoluteDistance()
    for _ in range(5):
        decoder, scores, y_true = _batch(kind, rng)
        expected = BruteForceDecoder().loss_augmented_map(scores, y_true, loss)
        got = decoder.loss_augmented_map(scores, y_true, loss)
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("kind", ["chain", "multilabel", "tree", "matching"])
def test_what_no_hook_answers_is_a_clear_error(rng, kind):
    decoder, scores, y_true = _batch(kind, rng)
    with pytest.raises(ValueError, match="loss-augmented MAP|rescaling"):
        decoder.loss_augmented_map(scores, y_true, AbsoluteDistance(), "slack")


@pytest.mark.parametrize("kind", ["tree", "matching"])
def test_losses_of_mismatch_weights_work_on_trees_and_matchings(rng, kind):
    loss = WeightedMismatches(_twice)
    for _ in range(5):
        decoder, scores, y_true = _batch(kind, rng)
        expected = BruteForceDecoder().loss_augmented_map(scores, y_true, loss)
        np.testing.assert_array_equal(decoder.loss_augmented_map(scores, y_true, loss),
                                      expected)


def test_weights_that_vary_within_an_example_work_on_trees_but_not_matchings(rng):
    loss = WeightedMismatches(_later_costs_more)
    for _ in range(5):
        decoder, scores, y_true = _batch("tree", rng)
        np.testing.assert_array_equal(
            decoder.loss_augmented_map(scores, y_true, loss),
            BruteForceDecoder().loss_augmented_map(scores, y_true, loss))
    decoder, scores, y_true = _batch("matching", rng)
    with pytest.raises(ValueError, match="one weight per example"):
        decoder.loss_augmented_map(scores, y_true, loss)


def test_chains_solve_uniform_mismatch_weights_under_slack_rescaling(rng):
    loss = WeightedMismatches(_twice)
    for _ in range(5):
        decoder, scores, y_true = _batch("chain", rng)
        np.testing.assert_array_equal(
            decoder.loss_augmented_map(scores, y_true, loss, "slack"),
            BruteForceDecoder().loss_augmented_map(scores, y_true, loss, "slack"))
    with pytest.raises(ValueError, match="no exact loss-augmented MAP"):
        decoder.loss_augmented_map(scores, y_true, WeightedMismatches(_later_costs_more),
                                   "slack")


class _OnlyMap(Decoder):
    """A user's decoder: MAP and parts of multiclass outputs, and nothing declared."""

    capabilities = frozenset({"map", "parts"})

    def map(self, scores, *, return_score=False):
        return MulticlassDecoder().map(scores, return_score=return_score)

    def parts(self, scores, y):
        return MulticlassDecoder().parts(scores, y)


def test_a_decoder_without_the_capability_keeps_its_not_implemented_error():
    scores = MulticlassScores(np.zeros((2, 3)))
    with pytest.raises(NotImplementedError, match="loss_augmented_map"):
        _OnlyMap().loss_augmented_map(scores, np.array([0, 1]), HammingLoss())


def test_a_decoder_that_declares_the_capability_gets_the_default(rng):
    class WithDefault(_OnlyMap):
        capabilities = frozenset({"map", "parts", "loss_augmented_map"})

    scores = MulticlassScores(rng.normal(size=(20, 4)))
    y_true = rng.integers(0, 4, size=20)
    for loss in (HammingLoss(), AbsoluteDistance()):
        np.testing.assert_array_equal(
            WithDefault().loss_augmented_map(scores, y_true, loss),
            MulticlassDecoder().loss_augmented_map(scores, y_true, loss))
    with pytest.raises(ValueError, match="WithDefault has no exact loss-augmented MAP"):
        WithDefault().loss_augmented_map(scores, y_true, ZeroOneLoss())


# ------------------------------------------------------------------ the other seams


@pytest.mark.parametrize("kind", ["chain", "multiclass", "tree"])
def test_hinge_values_equal_the_values_of_the_full_call(rng, kind):
    decoder, scores, y_true = _batch(kind, rng)
    for task_loss in (HammingLoss(), AbsoluteDistance()):
        loss = StructuredHingeLoss(task_loss)
        gold = decoder.parts(scores, y_true)
        np.testing.assert_allclose(loss.values(decoder, scores, y_true, gold),
                                   loss(decoder, scores, y_true)[0], atol=1e-12)
    assert ChainDecoder.exact_cost_augmentation and not Decoder.exact_cost_augmentation


def test_sparsemap_is_a_decoder_operation(rng):
    scores = MulticlassScores(rng.normal(size=(4, 5)))
    closed = MulticlassDecoder().sparsemap(scores)
    generic = Decoder.sparsemap(MulticlassDecoder(), scores)
    np.testing.assert_allclose(closed.unary, generic.unary, atol=1e-9)
    assert closed.method != generic.method

    class OwnParts(MulticlassDecoder):
        def parts(self, scores, y):
            return super().parts(scores, y)

    # a subclass that redefines the structures gets the generic solver, which reads them
    assert OwnParts().sparsemap(scores).method == generic.method
    labels = MultilabelScores(rng.normal(size=(3, 4)))
    np.testing.assert_allclose(MultilabelDecoder().sparsemap(labels).unary,
                               np.clip(labels.unary, 0.0, 1.0), atol=1e-12)


def test_sparsemap_loss_calls_the_decoders_operation(rng):
    calls = []

    class Recording(MulticlassDecoder):
        def sparsemap(self, scores, **options):
            calls.append(options)
            return super().sparsemap(scores, **options)

    scores = MulticlassScores(rng.normal(size=(4, 5)))
    y_true = rng.integers(0, 5, size=4)
    loss = SparseMAPLoss(cost="hamming", max_iter=7, tol=1e-6)
    warm = {}
    loss(Recording(), scores, y_true, warm_start=warm)
    loss(Recording(), scores, y_true, warm_start=warm)
    assert len(calls) == 2
    assert calls[0] == {"max_iter": 7, "tol": 1e-6, "init": None}
    assert calls[1]["init"] is not None


def test_compiled_oracle_is_offered_by_built_in_decoders_only():
    y, offsets = np.array([0, 1, 1]), np.array([0, 3])
    assert Decoder().compiled_oracle(HammingLoss(), "margin", y, offsets) is None
    assert _OnlyMap().compiled_oracle(HammingLoss(), "margin", y, offsets) is None
    offers = {ChainDecoder: (y, offsets), TreeDecoder: (y, offsets),
              MulticlassDecoder: (y, np.arange(4)),
              MultilabelDecoder: (np.array([0, 1, 1, 0]), np.array([0, 2, 4]))}
    for family, (gold, gold_offsets) in offers.items():
        assert family().compiled_oracle(HammingLoss(), "margin", gold, gold_offsets) is not None

        class OwnMap(family):
            def map(self, scores, *, return_score=False):
                return super().map(scores, return_score=return_score)

        class OwnHook(family):
            def _counting_form(self, scores, task_loss, rescaling):
                return super()._counting_form(scores, task_loss, rescaling)

        # the compiled path would bypass the redefined operations: the Python loop calls them
        for subclass in (OwnMap, OwnHook):
            assert subclass().compiled_oracle(HammingLoss(), "margin", gold,
                                              gold_offsets) is None


@pytest.mark.parametrize("declared, needed", [("parts", "unary_costs"),
                                              ("counts", "increments")])
def test_a_declaration_without_its_methods_is_an_error_at_class_definition(declared,
                                                                             needed):
    with pytest.raises(TypeError, match=needed):
        type("Declared", (TaskLoss,), {"decomposition": declared,
                                       "__call__": lambda self, a, b, offsets: None})
