"""The compiled per-sentence tree oracle gives the batched TreeDecoder's trees (ties
included), the task loss of those trees, and the decoder's arc indicators."""

import numpy as np
import pytest

from skstruct.decoders import TreeDecoder, TreeScores
from skstruct.decoders._core import engine_protocol as _engine_protocol
from skstruct.decoders._engine import dispatch as _oracles
from skstruct.decoders._tree import kernels
from skstruct.decoders._tree.oracle import tree_add_parts, tree_oracle
from skstruct.losses import HammingLoss, TaskLoss, ZeroOneLoss

DECODERS = [
    TreeDecoder(),
    TreeDecoder(single_root=True),
    TreeDecoder(projective=True),
    TreeDecoder(projective=True, single_root=True),
]
DECODER_IDS = ["cle", "cle_single_root", "eisner", "eisner_single_root"]


class HeadDistance(TaskLoss):
    """A user's loss over arcs: a wrong head costs its distance to the right one."""

    def __call__(self, y_true, y_pred, offsets):
        cost = np.abs(np.asarray(y_true) - np.asarray(y_pred)).astype(np.float64)
        return np.add.reduceat(cost, offsets[:-1])

    def unary_costs(self, y_true, offsets, n_states):
        return np.abs(np.arange(n_states)[None, :] - np.asarray(y_true)[:, None]) * 1.0


class FirstTokenWeighted(TaskLoss):
    """A mismatch count whose first token of every sentence weighs 3."""

    decomposition = "parts"

    def mismatch_weights(self, offsets):
        weights = np.ones(offsets[-1])
        weights[offsets[:-1]] = 3.0
        return weights

    def __call__(self, y_true, y_pred, offsets):
        wrong = (np.asarray(y_true) != np.asarray(y_pred)) * self.mismatch_weights(offsets)
        return np.add.reduceat(wrong, offsets[:-1])

    def unary_costs(self, y_true, offsets, n_states):
        wrong = np.arange(n_states)[None, :] != np.asarray(y_true)[:, None]
        return wrong * self.mismatch_weights(offsets)[:, None]


LOSSES = {
    "map": None,
    "hamming": HammingLoss(),
    "hamming_normalized": HammingLoss(normalize=True),
    "head_distance": HeadDistance(),
    "first_token_weighted": FirstTokenWeighted(),
}


def _batch(seed, kind):
    """Random sentences of 1-9 tokens with gold trees; continuous or tied scores."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 10, size=8)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    n_arcs = int(np.sum(lengths**2))
    unary = rng.normal(size=n_arcs) if kind == "normal" else (
        rng.integers(-1, 2, size=n_arcs).astype(np.float64))
    return TreeScores(unary, offsets), rng


def _gold_trees(decoder, scores, rng):
    """Gold trees the decoder can output: its MAP trees under other random scores."""
    other = scores.replace(unary=rng.normal(size=scores.unary.shape[0]))
    return decoder.map(other)


def _run(compiled, scores):
    outputs, deltas = [], []
    n = scores.n_examples
    for i in range(n):
        a, b = compiled.y_offsets[i], compiled.y_offsets[i + 1]
        u0, u1 = scores.unary_offsets[i], scores.unary_offsets[i + 1]
        costs_i = compiled.costs[u0:u1] if compiled.costs.size else compiled.costs
        yhat = np.full(compiled.max_output + 2, -7, dtype=np.int64)
        delta = tree_oracle(compiled.rescaling, scores.unary[u0:u1, None], np.zeros(0),
                            compiled.y[a:b], costs_i, compiled.ints, compiled.floats, yhat)
        assert np.all(yhat[b - a :] == -7), "wrote beyond the sentence"
        outputs.append(yhat[: b - a].copy())
        deltas.append(delta)
    assert len(outputs) == n
    return np.concatenate(outputs), np.array(deltas)


@pytest.mark.parametrize("loss_name", sorted(LOSSES))
@pytest.mark.parametrize("decoder", DECODERS, ids=DECODER_IDS)
def test_tree_oracle_matches_the_batched_decoder(decoder, loss_name):
    loss = LOSSES[loss_name]
    rescaling = None if loss is None else "margin"
    checked = 0
    for seed in range(10):
        for kind in ("normal", "ties"):
            scores, rng = _batch(seed, kind)
            y = _gold_trees(decoder, scores, rng)
            compiled = decoder.compiled_oracle(loss, rescaling, y, scores.offsets)
            assert compiled.code == _engine_protocol.TREE
            assert compiled.max_output == scores.lengths.max()
            got, deltas = _run(compiled, scores)
            if loss is None:
                expected = decoder.map(scores)
                np.testing.assert_array_equal(deltas, 0.0)
            else:
                expected = decoder.loss_augmented_map(scores, y, loss, "margin")
                np.testing.assert_allclose(deltas, loss(y, expected, scores.offsets),
                                           atol=1e-12)
            np.testing.assert_array_equal(got, expected)
            checked += scores.n_examples
    assert checked == 10 * 2 * 8


@pytest.mark.parametrize("decoder", DECODERS, ids=DECODER_IDS)
def test_all_equal_scores_give_the_batched_tie_break(decoder):
    scores = TreeScores.from_blocks([np.zeros((n, n)) for n in range(1, 8)])
    compiled = decoder.compiled_oracle(None, None, decoder.map(scores), scores.offsets)
    got, _ = _run(compiled, scores)
    np.testing.assert_array_equal(got, decoder.map(scores))


def test_tree_add_parts_are_the_decoder_parts():
    scores, rng = _batch(3, "normal")
    y = TreeDecoder().map(scores)
    parts = TreeDecoder().parts(scores, y)
    for i in range(scores.n_examples):
        a, b = scores.offsets[i], scores.offsets[i + 1]
        n = b - a
        buffer = np.zeros((n * n, 1))
        tree_add_parts(y[a:b], 0.5, buffer, np.zeros(0), np.zeros(3, np.int64))
        np.testing.assert_array_equal(buffer[:, 0], 0.5 * parts.block(i).ravel())


def test_the_dispatcher_reaches_the_tree_family():
    scores, rng = _batch(5, "normal")
    decoder = TreeDecoder()
    y = decoder.map(scores)
    compiled = decoder.compiled_oracle("hamming", "margin", y, scores.offsets)
    expected = decoder.loss_augmented_map(scores, y, "hamming")
    n = scores.lengths[0]
    yhat = np.zeros(compiled.max_output, dtype=np.int64)
    delta = _oracles.oracle(compiled.code, compiled.rescaling, scores.unary[: n * n, None],
                            np.zeros(0), y[:n], compiled.costs, compiled.ints,
                            compiled.floats, yhat)
    np.testing.assert_array_equal(yhat[:n], expected[:n])
    assert delta == np.sum(expected[:n] != y[:n])
    buffer = np.zeros((n * n, 1))
    _oracles.add_parts(compiled.code, yhat[:n], 1.0, buffer, np.zeros(0), compiled.ints)
    np.testing.assert_array_equal(buffer[:, 0],
                                  decoder.parts(scores, expected).block(0).ravel())


@pytest.mark.parametrize("loss, rescaling", [
    ("hamming", "slack"),
    (ZeroOneLoss(), "margin"),
    (HammingLoss(class_costs=np.ones(3) - np.eye(3)), "margin"),
    ("hamming", lambda F, *args: F),
])
def test_unsupported_combinations_have_no_compiled_form(loss, rescaling):
    y = np.array([1, 1, 1])
    assert TreeDecoder().compiled_oracle(loss, rescaling, y, np.array([0, 3])) is None


def test_per_sentence_routines_allocate_nothing_they_are_not_given():
    """Chu–Liu–Edmonds and Eisner read only the scratch they are handed: scratch full of
    garbage gives the same trees as fresh scratch."""
    rng = np.random.default_rng(7)
    for n in range(1, 12):
        arc = rng.normal(size=n * n)
        for routine, workspace in ((kernels.arborescence_one, kernels.cle_workspace),
                                   (kernels.eisner_one, kernels.eisner_workspace)):
            n_floats, n_ints = workspace(n)
            for single_root in (False, True):
                clean = np.empty(n, dtype=np.int64)
                routine(arc, n, single_root, clean, np.zeros(n_floats),
                        np.zeros(n_ints, dtype=np.int64))
                dirty = np.empty(n, dtype=np.int64)
                routine(arc, n, single_root, dirty, rng.normal(size=n_floats) * 1e6,
                        rng.integers(-5, 50, size=n_ints))
                np.testing.assert_array_equal(dirty, clean)
