"""The compiled per-example smoothed hinges equal the Python smoothed losses.

For every family and smoothing, :func:`smoothed_oracle` called one example at a time on a
decoder's CompiledOracle gives the values and part gradients of
EntropySmoothedHingeLoss / L2SmoothedHingeLoss (or of enumeration), the ℓ2 certificate of
L2SmoothedHingeLoss.oracle, and the CRF loss for μ = 1 without costs.
"""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp, softmax

from _chain_data import random_chain_scores
from skstruct.decoders import (
    ChainDecoder,
    ChainScores,
    MulticlassDecoder,
    MulticlassScores,
    MultilabelDecoder,
    MultilabelScores,
    TreeDecoder,
    TreeScores,
)
from skstruct.decoders._engine.smoothed import ENTROPY, L2, smoothed_oracle, supports_smoothed
from skstruct.losses import (
    CRFLoss,
    EntropySmoothedHingeLoss,
    FBetaLoss,
    HammingLoss,
    L2SmoothedHingeLoss,
    TaskLoss,
    ZeroOneLoss,
)

SENTINEL = 7.25  # the d_unary rows beyond the example's must keep it


def _call(compiled, i, smoothing, mu, top_k, unary, pair, row_offsets):
    """smoothed_oracle on example i of a batch; (value, exact, d_unary rows, d_pair)."""
    a, b = row_offsets[i], row_offsets[i + 1]
    y_i = compiled.y[compiled.y_offsets[i]:compiled.y_offsets[i + 1]]
    costs_i = compiled.costs[a:b] if compiled.costs.shape[0] else compiled.costs
    d_unary = np.full((b - a + 2, unary.shape[1]), SENTINEL)
    d_pair = np.full(pair.shape[0], SENTINEL)
    value, exact = smoothed_oracle(
        compiled.code, smoothing, mu, top_k, np.ascontiguousarray(unary[a:b]), pair, y_i,
        costs_i, compiled.ints, compiled.floats, d_unary, d_pair)
    assert np.all(d_unary[b - a:] == SENTINEL), "wrote beyond the example's rows"
    return value, exact, d_unary[:b - a], d_pair


# --------------------------------------------------------------------------------------
# Chains

CHAIN_LOSSES = {
    "hamming": lambda S: HammingLoss(),
    "normalized": lambda S: HammingLoss(normalize=True),
    "class_costs": lambda S: HammingLoss(class_costs=np.arange(1.0, S + 1)),
}


def _chain_batch(rng, n_states, lengths, forbid, scale=1.0):
    """Random chain scores and gold labels; ``forbid`` sets some non-gold unary scores
    and transitions to -inf (the gold labeling stays feasible)."""
    scores = random_chain_scores(rng, lengths, n_states, scale)
    y = rng.integers(0, n_states, size=scores.unary.shape[0])
    if forbid:
        mask = rng.random(scores.unary.shape) < 0.25
        mask[np.arange(y.shape[0]), y] = False
        scores.unary[mask] = -np.inf
        used = np.zeros((n_states, n_states), dtype=bool)
        offsets = scores.offsets
        for s in range(len(lengths)):
            labels = y[offsets[s]:offsets[s + 1]]
            used[labels[:-1], labels[1:]] = True
        scores.transition[(rng.random(used.shape) < 0.3) & ~used] = -np.inf
    return scores, y


def _chain_pair(scores):
    return np.concatenate((scores.transition.ravel(), scores.start, scores.end))


def _chain_compiled(scores, y, task_loss, rescaling="margin"):
    return ChainDecoder().compiled_oracle(task_loss, rescaling, y, scores.offsets)


def _chain_gradient_rows(gradient, i):
    return np.concatenate((gradient.transition[i].ravel(), gradient.start[i],
                           gradient.end[i]))


def _check_chain(scores, y, compiled, smoothing, mu, top_k, values, gradient, exact=None):
    pair = _chain_pair(scores)
    offsets = scores.offsets
    n = offsets.shape[0] - 1
    assert values.shape == (n,)
    for i in range(n):
        value, flag, d_unary, d_pair = _call(compiled, i, smoothing, mu, top_k,
                                             scores.unary, pair, offsets)
        assert value == pytest.approx(values[i], rel=1e-9, abs=1e-9)
        np.testing.assert_allclose(d_unary, gradient.unary[offsets[i]:offsets[i + 1]],
                                   atol=1e-9)
        np.testing.assert_allclose(d_pair, _chain_gradient_rows(gradient, i), atol=1e-9)
        assert flag == (True if exact is None else exact[i])


@pytest.mark.parametrize("loss_name", sorted(CHAIN_LOSSES))
@pytest.mark.parametrize("forbid", [False, True])
def test_chain_entropy_equals_entropy_smoothed_hinge_loss(loss_name, forbid):
    rng = np.random.default_rng(1)
    for mu in (0.05, 0.5, 1.0, 3.0):
        n_states = int(rng.integers(1, 6))
        lengths = rng.integers(1, 7, size=4)
        scores, y = _chain_batch(rng, n_states, lengths, forbid, scale=2.0)
        task_loss = CHAIN_LOSSES[loss_name](n_states)
        loss = EntropySmoothedHingeLoss(task_loss, strength=mu)
        values, gradient = loss(ChainDecoder(), scores, y)
        _check_chain(scores, y, _chain_compiled(scores, y, task_loss), ENTROPY, mu, 1,
                     values, gradient)


@pytest.mark.parametrize("loss_name", sorted(CHAIN_LOSSES))
@pytest.mark.parametrize("forbid", [False, True])
def test_chain_l2_equals_l2_smoothed_hinge_loss_and_its_certificate(loss_name, forbid):
    rng = np.random.default_rng(2)
    flags = []
    for mu, top_k in ((0.05, 1), (0.3, 3), (1.0, 5), (4.0, 2), (10.0, 20)):
        n_states = int(rng.integers(2, 6))
        lengths = rng.integers(1, 7, size=4)
        scores, y = _chain_batch(rng, n_states, lengths, forbid)
        task_loss = CHAIN_LOSSES[loss_name](n_states)
        loss = L2SmoothedHingeLoss(task_loss, strength=mu, top_k=top_k)
        values, gradient, exact = loss.oracle(ChainDecoder(), scores, y)
        _check_chain(scores, y, _chain_compiled(scores, y, task_loss), L2, mu, top_k,
                     values, gradient, exact)
        flags.extend(exact)
    assert any(flags) and not all(flags), "both certificates must occur"


def test_chain_l2_with_k_beyond_the_feasible_labelings_is_exact():
    # start in 1 and the transition 0 -> 1 forbidden: 000 is the only feasible labeling
    scores = ChainScores(np.zeros((3, 2)), np.array([0, 3]),
                         np.array([[0.0, -np.inf], [0.1, 0.0]]),
                         np.array([0.0, -np.inf]), np.zeros(2))
    y = np.array([0, 0, 0])
    compiled = _chain_compiled(scores, y, HammingLoss())
    value, exact, d_unary, d_pair = _call(compiled, 0, L2, 100.0, 8, scores.unary,
                                          _chain_pair(scores), scores.offsets)
    # q = (1): value ⟨q, z⟩ − μ/2 − z_ȳ = −μ/2, zero gradient
    assert exact
    assert value == pytest.approx(-50.0)
    assert not d_unary.any() and not d_pair.any()
    loss = L2SmoothedHingeLoss("hamming", strength=100.0, top_k=8)
    values, _, flags = loss.oracle(ChainDecoder(), scores, y)
    assert values[0] == pytest.approx(value) and flags[0] == exact


def test_chain_entropy_falls_back_to_log_space_beyond_the_scaled_range():
    # every labeling crosses a transition e^-900 below the largest one: the rescaled
    # recursion underflows to "infeasible", the log-space one does not
    trans = np.array([[-900.0, -900.0], [-900.0, 0.0]])
    scores = ChainScores(np.random.default_rng(3).normal(size=(4, 2)), np.array([0, 4]),
                         trans, np.array([0.0, -np.inf]), np.zeros(2))
    y = np.array([0, 1, 1, 1])
    task_loss = HammingLoss()
    for mu in (0.5, 1.0):
        values, gradient = EntropySmoothedHingeLoss(task_loss, strength=mu)(
            ChainDecoder(), scores, y)
        assert np.isfinite(values).all()
        _check_chain(scores, y, _chain_compiled(scores, y, task_loss), ENTROPY, mu, 1,
                     values, gradient)


def test_chain_entropy_at_mu_one_without_costs_is_the_crf_loss():
    rng = np.random.default_rng(4)
    scores, y = _chain_batch(rng, 4, rng.integers(1, 8, size=5), forbid=True)
    values, gradient = CRFLoss()(ChainDecoder(), scores, y)
    compiled = _chain_compiled(scores, y, None, rescaling=None)
    assert supports_smoothed(compiled, ENTROPY)
    _check_chain(scores, y, compiled, ENTROPY, 1.0, 1, values, gradient)


def test_chain_infeasible_sequence_raises():
    scores = ChainScores(np.full((2, 2), -np.inf), np.array([0, 2]), np.zeros((2, 2)),
                         np.zeros(2), np.zeros(2))
    y = np.array([0, 0])
    compiled = _chain_compiled(scores, y, HammingLoss())
    for smoothing in (ENTROPY, L2):
        with pytest.raises(ValueError, match="finite score"):
            _call(compiled, 0, smoothing, 1.0, 3, scores.unary, _chain_pair(scores),
                  scores.offsets)


def test_supports_smoothed_chain_losses():
    rng = np.random.default_rng(5)
    scores, y = _chain_batch(rng, 3, [3, 2], forbid=False)
    hamming = _chain_compiled(scores, y, HammingLoss())
    assert supports_smoothed(hamming, ENTROPY) and supports_smoothed(hamming, "l2")
    assert not supports_smoothed(_chain_compiled(scores, y, HammingLoss(), "slack"),
                                 ENTROPY)
    assert not supports_smoothed(_chain_compiled(scores, y, ZeroOneLoss()), L2)
    f1 = FBetaLoss().with_positive_states(np.array([False, True, True]))
    assert not supports_smoothed(_chain_compiled(scores, y, f1), ENTROPY)
    assert not supports_smoothed(None, ENTROPY)
    assert not supports_smoothed(hamming, 2)
    with pytest.raises(ValueError, match="Hamming"):
        _call(_chain_compiled(scores, y, ZeroOneLoss()), 0, ENTROPY, 1.0, 1,
              scores.unary, _chain_pair(scores), scores.offsets)


# --------------------------------------------------------------------------------------
# Multiclass and multilabel

TABULAR_LOSSES = {
    "hamming": lambda C: HammingLoss(),
    "normalized": lambda C: HammingLoss(normalize=True),
    "class_cost_vector": lambda C: HammingLoss(class_costs=np.arange(1.0, C + 1)),
    "class_cost_matrix": lambda C: HammingLoss(
        class_costs=np.abs(np.subtract.outer(np.arange(C), np.arange(C))) * 0.7),
}


def _tabular_unary(rng, n_samples, width, y, forbid, scale=2.0):
    """Random scores; ``forbid`` sets some entries the gold output does not use to -inf
    (multiclass: other classes; multilabel: labels that are off in the gold vector)."""
    unary = scale * rng.normal(size=(n_samples, width))
    if forbid:
        mask = rng.random(unary.shape) < 0.3
        if y.ndim == 1:
            mask[np.arange(n_samples), y] = False
        else:
            mask &= y == 0
        unary[mask] = -np.inf
    return unary


def _check_tabular(compiled, unary, smoothing, mu, top_k, values, gradient, exact=None):
    n = unary.shape[0]
    assert values.shape == (n,) and gradient.shape == unary.shape
    offsets = np.arange(n + 1)
    for i in range(n):
        value, flag, d_unary, d_pair = _call(compiled, i, smoothing, mu, top_k, unary,
                                             np.zeros(0), offsets)
        assert value == pytest.approx(values[i], rel=1e-9, abs=1e-9)
        np.testing.assert_allclose(d_unary[0], gradient[i], atol=1e-9)
        assert d_pair.shape == (0,)
        assert flag == (True if exact is None else exact[i])


@pytest.mark.parametrize("loss_name", sorted(TABULAR_LOSSES))
@pytest.mark.parametrize("forbid", [False, True])
def test_multiclass_equals_the_smoothed_hinge_losses(loss_name, forbid):
    rng = np.random.default_rng(6)
    flags = []
    for mu, top_k in ((0.05, 1), (0.3, 2), (1.0, 5), (4.0, 3), (10.0, 9)):
        n_classes = int(rng.integers(2, 8))
        y = rng.integers(0, n_classes, size=6)
        unary = _tabular_unary(rng, 6, n_classes, y, forbid)
        task_loss = TABULAR_LOSSES[loss_name](n_classes)
        compiled = MulticlassDecoder().compiled_oracle(task_loss, "margin", y,
                                                       np.arange(7))
        assert supports_smoothed(compiled, ENTROPY) and supports_smoothed(compiled, L2)
        scores = MulticlassScores(unary)
        values, gradient = EntropySmoothedHingeLoss(task_loss, strength=mu)(
            MulticlassDecoder(), scores, y)
        _check_tabular(compiled, unary, ENTROPY, mu, 1, values, gradient.unary)
        values, gradient, exact = L2SmoothedHingeLoss(task_loss, strength=mu,
                                                      top_k=top_k).oracle(
            MulticlassDecoder(), scores, y)
        _check_tabular(compiled, unary, L2, mu, top_k, values, gradient.unary, exact)
        flags.extend(exact)
    assert any(flags) and not all(flags), "both certificates must occur"


def test_multiclass_zero_one_loss_equals_enumeration():
    # the 0/1 loss of one class is a loss matrix: smoothed by enumerating the classes
    rng = np.random.default_rng(7)
    n_classes, mu = 5, 0.7
    y = rng.integers(0, n_classes, size=8)
    unary = _tabular_unary(rng, 8, n_classes, y, forbid=True)
    compiled = MulticlassDecoder().compiled_oracle(ZeroOneLoss(), "margin", y,
                                                   np.arange(9))
    z = unary + (np.arange(n_classes) != y[:, None])
    gold = unary[np.arange(8), y]
    values = mu * logsumexp(z / mu, axis=1) - gold
    gradient = softmax(z / mu, axis=1) - np.eye(n_classes)[y]
    _check_tabular(compiled, unary, ENTROPY, mu, 1, values, gradient)


@pytest.mark.parametrize("loss_name", ["hamming", "normalized", "class_cost_vector"])
@pytest.mark.parametrize("forbid", [False, True])
def test_multilabel_equals_the_smoothed_hinge_losses(loss_name, forbid):
    rng = np.random.default_rng(8)
    flags = []
    for mu, top_k in ((0.05, 1), (0.3, 2), (1.0, 5), (4.0, 3), (10.0, 40)):
        n_labels = int(rng.integers(1, 7))
        y = rng.integers(0, 2, size=(6, n_labels))
        unary = _tabular_unary(rng, 6, n_labels, y, forbid)
        task_loss = TABULAR_LOSSES[loss_name](2)
        compiled = MultilabelDecoder().compiled_oracle(task_loss, "margin", y,
                                                       np.arange(7))
        assert supports_smoothed(compiled, ENTROPY) and supports_smoothed(compiled, L2)
        scores = MultilabelScores(unary)
        values, gradient = EntropySmoothedHingeLoss(task_loss, strength=mu)(
            MultilabelDecoder(), scores, y)
        _check_tabular(compiled, unary, ENTROPY, mu, 1, values, gradient.unary)
        values, gradient, exact = L2SmoothedHingeLoss(task_loss, strength=mu,
                                                      top_k=top_k).oracle(
            MultilabelDecoder(), scores, y)
        _check_tabular(compiled, unary, L2, mu, top_k, values, gradient.unary, exact)
        flags.extend(exact)
    assert any(flags) and not all(flags), "both certificates must occur"


def test_multilabel_entropy_equals_enumeration_of_every_label_set():
    rng = np.random.default_rng(9)
    n_labels, mu = 4, 0.6
    y = rng.integers(0, 2, size=(5, n_labels))
    unary = _tabular_unary(rng, 5, n_labels, y, forbid=True)
    task_loss = HammingLoss(class_costs=np.array([1.0, 2.5]))
    compiled = MultilabelDecoder().compiled_oracle(task_loss, "margin", y, np.arange(6))
    sets = np.array(list(itertools.product([0, 1], repeat=n_labels)))
    values, gradient = [], []
    for i in range(5):
        theta = np.where(sets, unary[i], 0.0).sum(axis=1)
        delta = np.where(sets != y[i], np.where(y[i] == 1, 2.5, 1.0), 0.0).sum(axis=1)
        z = theta + delta
        q = softmax(z / mu)
        values.append(mu * logsumexp(z / mu) - np.where(y[i], unary[i], 0.0).sum())
        gradient.append(q @ sets - y[i])
    _check_tabular(compiled, unary, ENTROPY, mu, 1, np.array(values), np.array(gradient))


@pytest.mark.parametrize("family", ["multiclass", "multilabel"])
def test_tabular_entropy_at_mu_one_without_costs_is_the_crf_loss(family):
    rng = np.random.default_rng(10)
    if family == "multiclass":
        decoder, y = MulticlassDecoder(), rng.integers(0, 4, size=6)
        scores = MulticlassScores(_tabular_unary(rng, 6, 4, y, forbid=True))
    else:
        decoder, y = MultilabelDecoder(), rng.integers(0, 2, size=(6, 4))
        scores = MultilabelScores(_tabular_unary(rng, 6, 4, y, forbid=True))
    values, gradient = CRFLoss()(decoder, scores, y)
    compiled = decoder.compiled_oracle(None, None, y, np.arange(7))
    assert supports_smoothed(compiled, ENTROPY)
    _check_tabular(compiled, scores.unary, ENTROPY, 1.0, 1, values, gradient.unary)


def test_supports_smoothed_tabular_losses():
    y = np.array([[0, 1, 1], [1, 0, 0]])
    f1 = MultilabelDecoder().compiled_oracle(FBetaLoss(), "margin", y, np.arange(3))
    zero_one = MultilabelDecoder().compiled_oracle(ZeroOneLoss(), "margin", y,
                                                   np.arange(3))
    slack = MultilabelDecoder().compiled_oracle(HammingLoss(), "slack", y, np.arange(3))
    for compiled in (f1, zero_one, slack):
        assert not supports_smoothed(compiled, ENTROPY)
        assert not supports_smoothed(compiled, L2)
    with pytest.raises(ValueError, match="per-label costs"):
        _call(f1, 0, ENTROPY, 1.0, 1, np.zeros((2, 3)), np.zeros(0), np.arange(3))
    classes = np.array([0, 2, 1])
    slack = MulticlassDecoder().compiled_oracle(HammingLoss(), "slack", classes,
                                                np.arange(4))
    assert not supports_smoothed(slack, ENTROPY)


# --------------------------------------------------------------------------------------
# Trees


class HeadDistance(TaskLoss):
    """A loss over arcs that decomposes over parts: a wrong head costs its distance."""

    decomposition = "parts"

    def __call__(self, y_true, y_pred, offsets):
        cost = np.abs(np.asarray(y_true) - np.asarray(y_pred)).astype(np.float64)
        return np.add.reduceat(cost, offsets[:-1])

    def unary_costs(self, y_true, offsets, n_states):
        return np.abs(np.arange(n_states)[None, :] - np.asarray(y_true)[:, None]) * 1.0


TREE_LOSSES = {
    "hamming": HammingLoss(),
    "normalized": HammingLoss(normalize=True),
    "head_distance": HeadDistance(),
}


def _tree_batch(rng, decoder, lengths, spread):
    """Random arc scores (some arcs at -spread: ruled out in effect, and beyond the
    linear-space range when ``spread`` is large) and gold trees the decoder allows."""
    blocks = []
    for n in lengths:
        block = 2.0 * rng.normal(size=(n, n))
        block[rng.random((n, n)) < 0.2] = -spread
        blocks.append(block)
    scores = TreeScores.from_blocks(blocks)
    y = decoder.map(TreeScores.from_blocks([rng.normal(size=(n, n)) for n in lengths]))
    return scores, y


def _check_tree(scores, compiled, mu, values, gradient):
    unary = scores.unary[:, None]
    row_offsets = scores.unary_offsets
    n = row_offsets.shape[0] - 1
    assert values.shape == (n,)
    for i in range(n):
        value, flag, d_unary, d_pair = _call(compiled, i, ENTROPY, mu, 1, unary,
                                             np.zeros(0), row_offsets)
        assert value == pytest.approx(values[i], rel=1e-9, abs=1e-9)
        np.testing.assert_allclose(d_unary[:, 0],
                                   gradient[row_offsets[i]:row_offsets[i + 1]], atol=1e-9)
        assert flag


@pytest.mark.parametrize("projective", [False, True])
@pytest.mark.parametrize("single_root", [False, True])
@pytest.mark.parametrize("loss_name", sorted(TREE_LOSSES))
def test_tree_entropy_equals_entropy_smoothed_hinge_loss(projective, single_root,
                                                         loss_name):
    rng = np.random.default_rng(11)
    decoder = TreeDecoder(projective=projective, single_root=single_root)
    task_loss = TREE_LOSSES[loss_name]
    for mu, spread in ((0.05, 5.0), (0.5, 30.0), (1.0, 1000.0), (3.0, 5.0)):
        scores, y = _tree_batch(rng, decoder, rng.integers(1, 7, size=3), spread)
        compiled = decoder.compiled_oracle(task_loss, "margin", y, scores.offsets)
        assert supports_smoothed(compiled, ENTROPY)
        values, gradient = EntropySmoothedHingeLoss(task_loss, strength=mu)(
            decoder, scores, y)
        _check_tree(scores, compiled, mu, values, gradient.unary)


@pytest.mark.parametrize("projective", [False, True])
def test_tree_entropy_at_mu_one_without_costs_is_the_crf_loss(projective):
    rng = np.random.default_rng(12)
    decoder = TreeDecoder(projective=projective)
    scores, y = _tree_batch(rng, decoder, [1, 4, 6], 1000.0)
    values, gradient = CRFLoss()(decoder, scores, y)
    compiled = decoder.compiled_oracle(None, None, y, scores.offsets)
    assert supports_smoothed(compiled, ENTROPY)
    _check_tree(scores, compiled, 1.0, values, gradient.unary)


def test_tree_l2_is_not_supported_and_raises():
    rng = np.random.default_rng(13)
    decoder = TreeDecoder()
    scores, y = _tree_batch(rng, decoder, [3], 5.0)
    compiled = decoder.compiled_oracle(HammingLoss(), "margin", y, scores.offsets)
    assert not supports_smoothed(compiled, L2)
    with pytest.raises(ValueError, match="top-K"):
        _call(compiled, 0, L2, 1.0, 5, scores.unary[:, None], np.zeros(0),
              scores.unary_offsets)


def test_tree_entropy_falls_back_to_log_space_beyond_the_linear_range():
    # every tree of these two tokens has one root arc, 1000 below the best arc into its
    # token: the linear-space elimination underflows, the log-space one does not
    block = np.array([[-1000.0, 0.0], [0.0, -1000.0]])
    scores = TreeScores.from_blocks([block])
    y = np.array([0, 0])
    decoder = TreeDecoder()
    compiled = decoder.compiled_oracle(HammingLoss(), "margin", y, scores.offsets)
    for mu in (0.5, 1.0):
        values, gradient = EntropySmoothedHingeLoss("hamming", strength=mu)(
            decoder, scores, y)
        assert np.isfinite(values).all()
        _check_tree(scores, compiled, mu, values, gradient.unary)
