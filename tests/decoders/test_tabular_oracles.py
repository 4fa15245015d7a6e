"""The compiled per-example oracles of the multiclass and multilabel decoders give the
batched decoders' outputs, ties and -inf included, and the task loss of those outputs."""

import pickle

import numpy as np
import pytest

from skstruct.decoders import (
    MulticlassDecoder,
    MulticlassScores,
    MultilabelDecoder,
    MultilabelScores,
)
from skstruct.decoders._core import engine_protocol as _engine_protocol
from skstruct.decoders._engine import dispatch as _oracles
from skstruct.decoders._tabular.oracle import (
    multiclass_add_parts,
    multiclass_oracle,
    multilabel_add_parts,
    multilabel_oracle,
)
from skstruct.losses import (
    FBetaLoss,
    HammingLoss,
    IoULoss,
    LabelCountLoss,
    PrecisionLoss,
    RecallLoss,
    TaskLoss,
    ZeroOneLoss,
)

RESCALINGS = [None, "margin", "slack"]


class SquaredClassDistance(TaskLoss):
    """A user's loss with no declaration: Δ(a, b) = (a − b)² on one-token examples."""

    def __call__(self, y_true, y_pred, offsets):
        diff = (np.asarray(y_true) - np.asarray(y_pred)).astype(np.float64) ** 2
        return np.add.reduceat(diff, offsets[:-1])


def _scores(rng, n_samples, width, kind):
    """Random scores: continuous, small integers (ties), or with -inf entries."""
    if kind == "normal":
        return rng.normal(size=(n_samples, width))
    unary = rng.integers(-2, 3, size=(n_samples, width)).astype(np.float64)
    if kind == "ties_inf":
        unary[rng.random(unary.shape) < 0.2] = -np.inf
    return unary


def _run(oracle, compiled, unary, max_output):
    """Call a family oracle on every example; the outputs stacked and the Δ."""
    n = compiled.y_offsets.shape[0] - 1
    outputs, deltas = [], []
    for i in range(n):
        y_i = compiled.y[compiled.y_offsets[i] : compiled.y_offsets[i + 1]]
        costs_i = compiled.costs[i : i + 1] if compiled.costs.size else compiled.costs
        yhat = np.full(max_output + 2, -7, dtype=np.int64)
        delta = oracle(compiled.rescaling, np.ascontiguousarray(unary[i : i + 1]),
                       np.zeros(0), y_i, costs_i, compiled.ints, compiled.floats, yhat)
        assert np.all(yhat[y_i.shape[0] :] == -7), "wrote beyond the output"
        outputs.append(yhat[: y_i.shape[0]].copy())
        deltas.append(delta)
    assert len(outputs) == n
    return outputs, np.array(deltas)


# --------------------------------------------------------------------------------------
# Multiclass

MULTICLASS_LOSSES = {
    "hamming": lambda C: HammingLoss(),
    "hamming_normalized": lambda C: HammingLoss(normalize=True),
    "zero_one": lambda C: ZeroOneLoss(),
    "class_cost_vector": lambda C: HammingLoss(class_costs=np.arange(1.0, C + 1)),
    "class_cost_matrix": lambda C: HammingLoss(
        class_costs=np.abs(np.subtract.outer(np.arange(C), np.arange(C))) * 0.7),
    "f1": lambda C: FBetaLoss().with_positive_states(np.arange(C) > 0),
    "recall": lambda C: RecallLoss().with_positive_states(np.arange(C) % 2 == 0),
    "user": lambda C: SquaredClassDistance(),
}


def _multiclass_case(seed, kind, rescaling):
    rng = np.random.default_rng(seed)
    n_classes = int(rng.integers(1, 6))
    n_samples = 30
    unary = _scores(rng, n_samples, n_classes, kind)
    y = rng.integers(0, n_classes, size=n_samples)
    y[:n_classes] = np.arange(n_classes)  # every class occurs, as in a fitted estimator
    # an example needs a feasible class, and a finite gold score under slack rescaling
    unary[np.arange(n_samples), y] = np.where(
        np.isinf(unary[np.arange(n_samples), y]), 0.5, unary[np.arange(n_samples), y])
    return unary, y


@pytest.mark.parametrize("rescaling", RESCALINGS)
@pytest.mark.parametrize("loss_name", sorted(MULTICLASS_LOSSES))
def test_multiclass_oracle_matches_the_batched_decoder(loss_name, rescaling):
    decoder = MulticlassDecoder()
    checked = 0
    for seed in range(12):
        for kind in ("normal", "ties", "ties_inf"):
            unary, y = _multiclass_case(seed, kind, rescaling)
            n_classes = unary.shape[1]
            loss = MULTICLASS_LOSSES[loss_name](n_classes)
            compiled = decoder.compiled_oracle(loss, rescaling, y, np.arange(len(y) + 1))
            assert compiled.code == _engine_protocol.MULTICLASS and compiled.max_output == 1
            outputs, deltas = _run(multiclass_oracle, compiled, unary, 1)
            got = np.concatenate(outputs)
            scores = MulticlassScores(unary)
            if rescaling is None:
                expected = decoder.map(scores)
                np.testing.assert_array_equal(deltas, 0.0)
            else:
                expected = decoder.loss_augmented_map(scores, y, loss, rescaling)
                offsets = np.arange(len(y) + 1)
                np.testing.assert_allclose(deltas, loss(y, expected, offsets), atol=1e-12)
            np.testing.assert_array_equal(got, expected)
            checked += len(y)
    assert checked == 12 * 3 * 30


def test_multiclass_add_parts_are_the_decoder_parts():
    rng = np.random.default_rng(0)
    unary = rng.normal(size=(20, 4))
    y = rng.integers(0, 4, size=20)
    parts = MulticlassDecoder().parts(MulticlassScores(unary), y).unary
    for i in range(20):
        buffer = np.zeros((1, 4))
        multiclass_add_parts(y[i : i + 1], 2.5, buffer, np.zeros(0), np.zeros(2, np.int64))
        multiclass_add_parts(y[i : i + 1], -1.0, buffer, np.zeros(0), np.zeros(2, np.int64))
        np.testing.assert_array_equal(buffer[0], 1.5 * parts[i])


def test_multiclass_ties_go_to_the_lowest_class():
    unary = np.array([[1.0, 2.0, 2.0, 1.0]])
    compiled = MulticlassDecoder().compiled_oracle("hamming", "margin", np.array([1]),
                                                   np.array([0, 1]))
    outputs, deltas = _run(multiclass_oracle, compiled, unary, 1)
    # θ + Δ = [2, 2, 3, 2]: class 2; with θ = [1, 2, 1, 1] + Δ every other class ties
    assert outputs[0][0] == 2 and deltas[0] == 1.0
    outputs, _ = _run(multiclass_oracle, compiled, np.array([[1.0, 2.0, 1.0, 1.0]]), 1)
    assert outputs[0][0] == 0


def test_multiclass_callable_rescaling_has_no_compiled_form():
    compiled = MulticlassDecoder().compiled_oracle(
        "hamming", lambda F, *args: F, np.array([0]), np.array([0, 1]))
    assert compiled is None


# --------------------------------------------------------------------------------------
# Multilabel


def _on_positive(loss):
    return loss.with_positive_states(np.array([False, True]))


MULTILABEL_LOSSES = {
    "hamming": HammingLoss(),
    "hamming_normalized": HammingLoss(normalize=True),
    "hamming_class_costs": HammingLoss(class_costs=np.array([[0.0, 2.0], [0.5, 0.0]])),
    "zero_one": ZeroOneLoss(),
    "f1": _on_positive(FBetaLoss()),
    "f2": _on_positive(FBetaLoss(beta=2.0)),
    "iou": _on_positive(IoULoss()),
    "precision": _on_positive(PrecisionLoss()),
    "recall": _on_positive(RecallLoss()),
    "label_count": _on_positive(LabelCountLoss()),
}


def _multilabel_case(seed, kind, rescaling):
    rng = np.random.default_rng(seed)
    n_labels = int(rng.integers(1, 9))
    n_samples = 30
    unary = _scores(rng, n_samples, n_labels, kind)
    y = (rng.random((n_samples, n_labels)) < 0.4).astype(np.int64)
    # gold labels that are on score finitely (slack rescaling needs a finite gold score)
    unary = np.where((y == 1) & np.isinf(unary), 1.0, unary)
    return unary, y


@pytest.mark.parametrize("rescaling", RESCALINGS)
@pytest.mark.parametrize("loss_name", sorted(MULTILABEL_LOSSES))
def test_multilabel_oracle_matches_the_batched_decoder(loss_name, rescaling):
    decoder = MultilabelDecoder()
    loss = MULTILABEL_LOSSES[loss_name]
    checked = 0
    for seed in range(12):
        for kind in ("normal", "ties", "ties_inf"):
            unary, y = _multilabel_case(seed, kind, rescaling)
            n_samples, n_labels = y.shape
            offsets = np.arange(n_samples + 1) * n_labels
            # a multilabel batch has one output per example: its offsets count examples
            compiled = decoder.compiled_oracle(loss, rescaling, y, np.arange(n_samples + 1))
            assert compiled.code == _engine_protocol.MULTILABEL
            assert compiled.max_output == n_labels
            np.testing.assert_array_equal(compiled.y_offsets, offsets)
            np.testing.assert_array_equal(compiled.y, y.ravel())
            outputs, deltas = _run(multilabel_oracle, compiled, unary, n_labels)
            got = np.stack(outputs)
            scores = MultilabelScores(unary)
            if rescaling is None:
                expected = decoder.map(scores)
                np.testing.assert_array_equal(deltas, 0.0)
            else:
                expected = decoder.loss_augmented_map(scores, y, loss, rescaling)
                np.testing.assert_allclose(
                    deltas, loss(y.ravel(), expected.ravel(), offsets), atol=1e-12)
            np.testing.assert_array_equal(got, expected)
            checked += n_samples
    assert checked == 12 * 3 * 30


def test_multilabel_count_losses_break_ties_like_the_batched_decoder():
    # every label scores the same: which gold negatives turn on is decided by the tie rule
    unary = np.zeros((4, 6))
    y = np.array([[1, 0, 0, 1, 0, 0], [0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1],
                  [0, 1, 0, 0, 0, 1]])
    offsets = np.arange(5) * 6
    for loss in (MULTILABEL_LOSSES["f1"], MULTILABEL_LOSSES["iou"], HammingLoss()):
        for rescaling in ("margin", "slack"):
            compiled = MultilabelDecoder().compiled_oracle(loss, rescaling, y, offsets)
            outputs, _ = _run(multilabel_oracle, compiled, unary, 6)
            expected = MultilabelDecoder().loss_augmented_map(
                MultilabelScores(unary), y, loss, rescaling)
            np.testing.assert_array_equal(np.stack(outputs), expected)


def test_multilabel_add_parts_are_the_decoder_parts():
    rng = np.random.default_rng(1)
    y = (rng.random((15, 5)) < 0.5).astype(np.int64)
    parts = MultilabelDecoder().parts(MultilabelScores(np.zeros((15, 5))), y).unary
    for i in range(15):
        buffer = np.zeros((1, 5))
        multilabel_add_parts(y[i], -0.75, buffer, np.zeros(0), np.zeros(2, np.int64))
        np.testing.assert_array_equal(buffer[0], -0.75 * parts[i])


def test_multilabel_unsupported_combinations_have_no_compiled_form():
    y = np.array([[1, 0]])
    offsets = np.array([0, 2])
    decoder = MultilabelDecoder()
    assert decoder.compiled_oracle("f1", lambda F, *args: F, y, offsets) is None
    assert decoder.compiled_oracle(SquaredClassDistance(), "margin", y, offsets) is None


def test_the_dispatcher_reaches_both_families():
    unary = np.array([[0.5, -1.0, 2.0]])
    y = np.array([[1, 1, 0]])
    compiled = MultilabelDecoder().compiled_oracle("f1", "slack", y, np.array([0, 3]))
    yhat = np.zeros(3, dtype=np.int64)
    delta = _oracles.oracle(compiled.code, compiled.rescaling, unary, np.zeros(0),
                            compiled.y, compiled.costs[:1], compiled.ints, compiled.floats,
                            yhat)
    expected = MultilabelDecoder().loss_augmented_map(MultilabelScores(unary), y, "f1",
                                                      "slack")
    np.testing.assert_array_equal(yhat, expected[0])
    loss = MULTILABEL_LOSSES["f1"]
    assert delta == pytest.approx(loss(y.ravel(), yhat, np.array([0, 3]))[0])
    buffer = np.zeros((1, 3))
    _oracles.add_parts(compiled.code, yhat, 1.0, buffer, np.zeros(0), compiled.ints)
    np.testing.assert_array_equal(buffer[0], yhat)

    compiled = MulticlassDecoder().compiled_oracle("zero_one", "margin", np.array([0]),
                                                   np.array([0, 1]))
    delta = _oracles.oracle(compiled.code, compiled.rescaling, unary, np.zeros(0),
                            compiled.y, compiled.costs, compiled.ints, compiled.floats,
                            yhat)
    assert yhat[0] == 2 and delta == 1.0



@pytest.mark.parametrize("n_labels", [1, 5, 8, 14, 17, 128, 129, 300, 1000])
def test_gold_scores_are_summed_in_numpys_order(n_labels):
    from skstruct.decoders._tabular.kernels import numpy_row_sum

    rng = np.random.default_rng(n_labels)
    rows = rng.normal(size=(50, n_labels)) * np.exp(3 * rng.normal(size=(50, n_labels)))
    sums = rows.sum(axis=1)
    got = np.array([numpy_row_sum(row) for row in rows])
    np.testing.assert_array_equal(got, sums)
