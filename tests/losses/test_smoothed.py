"""The smoothed structural hinges against enumeration of every output.

References are computed from BruteForceDecoder's list of all outputs of an example with
their scores θ_y, the task loss called on every output, and an ℓ2 projection by bisection
(independent of the sorted projection the loss uses).
"""

import copy
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from _chain_data import random_chain_scores
from _families import instance, output_counts
from skstruct.decoders import (
    BruteForceDecoder,
    ChainDecoder,
    ChainScores,
    MatchingDecoder,
    MulticlassDecoder,
    MulticlassScores,
    MultilabelDecoder,
    MultilabelScores,
    TreeDecoder,
)
from skstruct.losses import (
    EntropySmoothedHingeLoss,
    FBetaLoss,
    HammingLoss,
    InexactTopKWarning,
    L2SmoothedHingeLoss,
    SmoothedHingeLoss,
    StructuredHingeLoss,
    TaskLoss,
    ZeroOneLoss,
)
from skstruct.losses._smoothed import project_sorted_onto_simplex, project_sorted_row

FAMILIES = ("chain", "multiclass", "multilabel")
STRENGTHS = (0.05, 0.3, 1.0, 4.0)


# -- instances -----------------------------------------------------------------------


def make_instance(family, rng, scale=1.0, n_examples=3, size=3):
    """(scores, y_true, n_outputs per example, family decoder) of a tiny batch."""
    decoder, scores, y = instance(family, rng, n_examples=n_examples, size=size,
                                  scale=scale)
    return scores, y, output_counts(scores), decoder


@st.composite
def instances(draw, families=FAMILIES):
    family = draw(st.sampled_from(families))
    seed = draw(st.integers(0, 2**32 - 1))
    scale = draw(st.sampled_from([0.1, 1.0, 5.0]))
    n_examples = draw(st.integers(1, 3))
    rng = np.random.default_rng(seed)
    return (family,) + make_instance(family, rng, scale, n_examples)


def enumerated(scores, y, task_loss, max_outputs):
    """Every output of finite score of every example: (paths, θ, z = θ + Δ, θ_ȳ).

    paths[..., j] is the j-th output of every example (-1 padded), θ and z have shape
    (n_examples, max_outputs) with -inf where an example has fewer outputs.
    """
    brute = BruteForceDecoder()
    paths, theta = brute.top_k(scores, int(max_outputs))
    delta = np.stack([
        task_loss(np.ravel(y), np.ravel(paths[..., j]), scores.offsets)
        for j in range(paths.shape[-1])
    ], axis=1)
    z = np.where(theta > -np.inf, theta + delta, -np.inf)
    gold = brute.parts(scores, y).dot(scores)
    return paths, theta, z, gold


def bisection_projection(v):
    """The projection of the finite entries of ``v`` onto the simplex, by bisection on
    the threshold τ of Σ max(0, v − τ) = 1 (zeros elsewhere)."""
    finite = v > -np.inf
    values = v[finite]
    low, high = values.max() - 1.0, values.max()
    for _ in range(200):
        tau = 0.5 * (low + high)
        if np.maximum(values - tau, 0.0).sum() > 1.0:
            low = tau
        else:
            high = tau
    q = np.zeros_like(v)
    q[finite] = np.maximum(values - 0.5 * (low + high), 0.0)
    return q


def l2_reference(z, gold, mu):
    """max_q [⟨q, z⟩ − μ/2 ‖q‖²] − θ_ȳ over every output, per example."""
    values = []
    for row, g in zip(z, gold, strict=True):
        q = bisection_projection(row / mu)
        finite = row > -np.inf
        values.append(q[finite] @ row[finite] - 0.5 * mu * q @ q - g)
    return np.array(values)


def shifted(scores, direction, step):
    """``scores + step * direction`` for two containers of one family (every float
    array of the container is a part-score array)."""
    moved = copy.copy(scores)
    for name, value in vars(scores).items():
        if isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.floating):
            setattr(moved, name, value + step * getattr(direction, name))
    return moved


def random_direction(scores, rng):
    direction = copy.copy(scores)
    for name, value in vars(scores).items():
        if isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.floating):
            setattr(direction, name, rng.normal(size=value.shape))
    return direction


def hinge_values(decoder, scores, y, task_loss):
    return StructuredHingeLoss(task_loss)(decoder, scores, y)[0]


# -- bounds and values against enumeration -------------------------------------------


@given(instance=instances(FAMILIES + ("tree",)), mu=st.sampled_from(STRENGTHS))
def test_entropy_value_and_bounds_match_enumeration(instance, mu):
    family, scores, y, sizes, decoder = instance
    task_loss = HammingLoss()
    loss = EntropySmoothedHingeLoss(task_loss, strength=mu)
    values, _ = loss(decoder, scores, y)
    brute_values, _ = loss(BruteForceDecoder(), scores, y)
    if sizes is None:  # trees: count them
        sizes = np.array([len(out) for _, out, _ in BruteForceDecoder()._arc_factored(scores)])
    _, theta, z, gold = enumerated(scores, y, task_loss, sizes.max())
    assert values.shape == (scores.n_examples,) == sizes.shape
    np.testing.assert_array_equal(np.sum(theta > -np.inf, axis=1), sizes)
    expected = mu * logsumexp(z / mu, axis=1) - gold
    hinge = z.max(axis=1) - gold
    np.testing.assert_allclose(values, expected, rtol=1e-10, atol=1e-10, strict=True)
    np.testing.assert_allclose(brute_values, expected, rtol=1e-10, atol=1e-10, strict=True)
    tol = 1e-10 * (1 + np.abs(hinge))
    assert np.all(hinge - tol <= values)
    assert np.all(values <= hinge + mu * np.log(sizes) + tol)
    np.testing.assert_allclose(hinge, hinge_values(decoder, scores, y, task_loss),
                               rtol=1e-12, atol=1e-12)


@given(instance=instances(), mu=st.sampled_from(STRENGTHS))
def test_l2_full_oracle_value_and_bounds_match_enumeration(instance, mu):
    """With K = |Y| (every output listed) the ℓ2 oracle is exact and certified."""
    family, scores, y, sizes, decoder = instance
    task_loss = HammingLoss()
    loss = L2SmoothedHingeLoss(task_loss, strength=mu, top_k=int(sizes.max()) + 1)
    values, _ = loss(decoder, scores, y)
    _, _, z, gold = enumerated(scores, y, task_loss, sizes.max())
    expected = l2_reference(z, gold, mu)
    hinge = z.max(axis=1) - gold
    assert values.shape == expected.shape == (scores.n_examples,)
    np.testing.assert_allclose(values, expected, rtol=1e-9, atol=1e-9, strict=True)
    tol = 1e-10 * (1 + np.abs(hinge))
    assert np.all(hinge - mu / 2 - tol <= values) and np.all(values <= hinge + tol)
    assert loss.exact_.all() and loss.n_inexact_ == 0


def _check_top_k_against_full_oracle(scores, y, sizes, decoder, mu, k):
    """The top-K oracle against the ℓ2 oracle over all outputs; returns the flags."""
    task_loss = HammingLoss()
    top = L2SmoothedHingeLoss(task_loss, strength=mu, top_k=k)
    full = L2SmoothedHingeLoss(task_loss, strength=mu, top_k=int(sizes.max()))
    values, gradient = top(decoder, scores, y)
    full_values, full_gradient = full(BruteForceDecoder(), scores, y)
    exact = top.exact_
    assert exact.shape == (scores.n_examples,) and top.n_inexact_ == np.sum(~exact)
    # the bounds hold for the top-K surrogate too: it keeps the best output
    _, _, z, gold = enumerated(scores, y, task_loss, sizes.max())
    hinge = z.max(axis=1) - gold
    tol = 1e-10 * (1 + np.abs(hinge))
    assert np.all(hinge - mu / 2 - tol <= values) and np.all(values <= hinge + tol)
    # certified examples: the same value and gradient (tested along random directions)
    np.testing.assert_allclose(values[exact], full_values[exact], rtol=1e-10, atol=1e-10)
    rng = np.random.default_rng(0)
    for _ in range(3):
        direction = random_direction(scores, rng)
        np.testing.assert_allclose(gradient.dot(direction)[exact],
                                   full_gradient.dot(direction)[exact],
                                   rtol=1e-9, atol=1e-9)
    # an example with fewer outputs than K is always certified
    assert np.all(exact[sizes < k])
    # the surrogate never beats the full oracle: it maximizes over fewer outputs
    assert np.all(values <= full_values + tol)
    return exact


@given(instance=instances(), mu=st.sampled_from(STRENGTHS), k=st.integers(1, 4))
def test_top_k_oracle_equals_full_oracle_when_certified(instance, mu, k):
    family, scores, y, sizes, decoder = instance
    _check_top_k_against_full_oracle(scores, y, sizes, decoder, mu, k)


@pytest.mark.parametrize("family", FAMILIES)
def test_top_k_oracle_check_meets_certified_and_uncertified_examples(family):
    """The same check over seeded instances, which must include both cases."""
    rng = np.random.default_rng(7)
    flags = []
    for mu in STRENGTHS:
        for k in (1, 2, 3):
            scores, y, sizes, decoder = make_instance(family, rng, n_examples=3)
            flags.extend(_check_top_k_against_full_oracle(scores, y, sizes, decoder, mu, k))
    assert len(flags) == 3 * 3 * len(STRENGTHS)
    assert 0 < sum(flags) < len(flags)


def test_exactness_is_certified_and_reported_on_constructed_cases():
    mu, k = 1.0, 3
    # example 0: the 3rd best is far below the two best -> zero weight, certified;
    # example 1: five classes within 0.1 -> all five deserve weight, not certified
    unary = np.array([[3.0, 2.8, -5.0, -6.0, -7.0],
                      [0.0, 0.1, 0.05, 0.02, 0.08]])
    scores = MulticlassScores(unary)
    y = np.array([4, 0])
    loss = L2SmoothedHingeLoss("hamming", strength=mu, top_k=k)
    values, gradient = loss(MulticlassDecoder(), scores, y)
    np.testing.assert_array_equal(loss.exact_, [True, False])
    assert loss.n_inexact_ == 1 and loss.n_inexact_total_ == 1
    assert loss.n_examples_total_ == 2
    full = L2SmoothedHingeLoss("hamming", strength=mu, top_k=5)
    full_values, full_gradient = full(MulticlassDecoder(), scores, y)
    assert full.exact_.all()
    assert values[0] == pytest.approx(full_values[0], abs=1e-12)
    np.testing.assert_allclose(gradient.unary[0], full_gradient.unary[0], atol=1e-12)
    # where it is reported, the surrogate is indeed off
    assert values[1] < full_values[1] - 1e-3
    assert np.count_nonzero(full_gradient.unary[1] > 0) == 4  # the gold class is 0
    # the paper's condition: μ <= Σ_{i<=K} (z_(i) − z_(K+1)) fails for example 1
    z = np.sort(unary[1] + (np.arange(5) != 0))[::-1]
    assert mu > np.sum(z[:k] - z[k])
    # counts accumulate over calls; a second batch that is all certified adds nothing
    loss(MulticlassDecoder(), scores.take([0]), y[:1])
    assert loss.n_inexact_ == 0 and loss.n_inexact_total_ == 1
    assert loss.n_examples_total_ == 3


def test_exactness_on_a_chain_matches_the_full_oracle():
    rng = np.random.default_rng(3)
    scores = random_chain_scores(rng, [3, 3, 2], n_states=3, scale=3.0)
    y = rng.integers(0, 3, size=8)
    seen = set()
    for mu in (0.01, 0.5, 5.0, 50.0):
        loss = L2SmoothedHingeLoss("hamming", strength=mu, top_k=4)
        values, _ = loss(ChainDecoder(), scores, y)
        full_values, _ = L2SmoothedHingeLoss("hamming", strength=mu, top_k=27)(
            BruteForceDecoder(), scores, y)
        exact = loss.exact_
        np.testing.assert_allclose(values[exact], full_values[exact], rtol=1e-12)
        assert np.all(values[~exact] <= full_values[~exact] + 1e-12)
        seen.update(exact.tolist())
    assert seen == {True, False}  # both cases were exercised


def test_inexact_oracle_warns_or_raises_on_request():
    scores = MulticlassScores(np.zeros((2, 4)))
    y = np.array([0, 1])
    with pytest.warns(InexactTopKWarning, match="2 of 2 examples"):
        L2SmoothedHingeLoss(strength=1.0, top_k=2, on_inexact="warn")(
            MulticlassDecoder(), scores, y)
    with pytest.raises(ValueError, match="not certified exact"):
        L2SmoothedHingeLoss(strength=1.0, top_k=2, on_inexact="raise")(
            MulticlassDecoder(), scores, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss = L2SmoothedHingeLoss(strength=1.0, top_k=2)
        loss(MulticlassDecoder(), scores, y)
        assert loss.n_inexact_ == 2
        # certified: no warning even when asked for one
        L2SmoothedHingeLoss(strength=1e-3, top_k=2, on_inexact="raise")(
            MulticlassDecoder(), MulticlassScores(np.eye(4)[:2] * 5), y)


def test_oracle_returns_flags_without_recording():
    scores = MulticlassScores(np.zeros((2, 4)))
    loss = L2SmoothedHingeLoss(strength=1.0, top_k=2)
    values, gradient, exact = loss.oracle(MulticlassDecoder(), scores, np.array([0, 1]))
    np.testing.assert_array_equal(exact, [False, False])
    assert loss.n_examples_total_ == 0 and loss.exact_.shape == (0,)
    called, _ = loss(MulticlassDecoder(), scores, np.array([0, 1]))
    np.testing.assert_array_equal(values, called)


@pytest.mark.parametrize("family", ["tree", "matching"])
@pytest.mark.parametrize("mu", [0.1, 1.0])
def test_both_losses_serve_every_family_the_brute_force_decoder_enumerates(family, mu):
    """Written once on the decoder operations: trees and matchings through
    BruteForceDecoder (their own decoders lack top_k, and matchings marginals)."""
    rng = np.random.default_rng(8)
    _, scores, y = instance(family, rng)
    brute = BruteForceDecoder()
    task_loss = HammingLoss()
    _, theta, z, gold = enumerated(scores, y, task_loss, output_counts(scores).max())
    sizes = np.sum(theta > -np.inf, axis=1)
    assert np.all(sizes >= 1)
    entropy, entropy_gradient = EntropySmoothedHingeLoss(task_loss, strength=mu)(
        brute, scores, y)
    np.testing.assert_allclose(entropy, mu * logsumexp(z / mu, axis=1) - gold, rtol=1e-10)
    loss = L2SmoothedHingeLoss(task_loss, strength=mu, top_k=int(sizes.max()) + 1)
    values, gradient = loss(brute, scores, y)
    np.testing.assert_allclose(values, l2_reference(z, gold, mu), rtol=1e-10, atol=1e-12)
    assert loss.exact_.all()
    for g in (entropy_gradient, gradient):
        assert np.all(np.isfinite(g.unary))
    _directional_check(loss, brute, scores, y, rng)
    _directional_check(EntropySmoothedHingeLoss(task_loss, strength=mu), brute, scores, y,
                       rng)


# -- gradients -----------------------------------------------------------------------


def _directional_check(loss, decoder, scores, y, rng, n_directions=3, eps=1e-6):
    _, gradient = loss(decoder, scores, y)
    for _ in range(n_directions):
        direction = random_direction(scores, rng)
        plus = loss(decoder, shifted(scores, direction, eps), y)[0]
        minus = loss(decoder, shifted(scores, direction, -eps), y)[0]
        numeric = (plus - minus) / (2 * eps)
        np.testing.assert_allclose(gradient.dot(direction), numeric, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("family", FAMILIES + ("tree",))
@pytest.mark.parametrize("mu", [0.2, 1.0, 3.0])
def test_entropy_gradient_matches_finite_differences(family, mu):
    rng = np.random.default_rng(1)
    scores, y, _, decoder = make_instance(family, rng)
    loss = EntropySmoothedHingeLoss(HammingLoss(normalize=True), strength=mu)
    _directional_check(loss, decoder, scores, y, rng)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("mu", [0.2, 1.0, 3.0])
@pytest.mark.parametrize("k", [1, 3, 8])
def test_l2_gradient_matches_finite_differences(family, mu, k):
    """The top-K surrogate is differentiable away from ties, certified or not."""
    rng = np.random.default_rng(2)
    scores, y, _, decoder = make_instance(family, rng)
    loss = L2SmoothedHingeLoss(HammingLoss(normalize=True), strength=mu, top_k=k)
    _directional_check(loss, decoder, scores, y, rng)


@pytest.mark.parametrize("loss", [EntropySmoothedHingeLoss(strength=0.5),
                                  L2SmoothedHingeLoss(strength=0.5, top_k=50)],
                         ids=["entropy", "l2"])
def test_chain_gradient_matches_finite_differences_coordinatewise(loss):
    rng = np.random.default_rng(4)
    scores = random_chain_scores(rng, [3, 1, 2], n_states=3)
    y = rng.integers(0, 3, size=6)
    decoder = ChainDecoder()
    _, gradient = loss(decoder, scores, y)
    fields = ("unary", "transition", "start", "end")
    eps = 1e-6
    checked = 0
    for field in fields:
        base = getattr(scores, field)
        for index in np.ndindex(base.shape):
            values = []
            for sign in (1, -1):
                arrays = {name: getattr(scores, name).copy() for name in fields}
                arrays[field][index] += sign * eps
                values.append(loss(decoder, ChainScores(offsets=scores.offsets, **arrays),
                                   y)[0].sum())
            numeric = (values[0] - values[1]) / (2 * eps)
            analytic = getattr(gradient, field)
            analytic = (analytic[index] if field == "unary"
                        else analytic[(slice(None),) + index].sum())
            assert numeric == pytest.approx(analytic, abs=1e-6)
            checked += 1
    assert checked == 6 * 3 + 9 + 3 + 3


# -- the limit μ → 0 ------------------------------------------------------------------


@given(instance=instances(), seed=st.integers(0, 1000))
@settings(max_examples=30)
def test_vanishing_smoothing_gives_the_hinge_and_a_subgradient(instance, seed):
    family, scores, y, sizes, decoder = instance
    task_loss = HammingLoss()
    mu = 1e-7
    hinge = StructuredHingeLoss(task_loss)
    hinge_at = hinge(decoder, scores, y)[0]
    rng = np.random.default_rng(seed)
    for loss in (EntropySmoothedHingeLoss(task_loss, strength=mu),
                 L2SmoothedHingeLoss(task_loss, strength=mu, top_k=3)):
        values, gradient = loss(decoder, scores, y)
        np.testing.assert_allclose(values, hinge_at, rtol=0,
                                   atol=mu * np.log(sizes.max()) + mu + 1e-9)
        # subgradient inequality: hinge(η') >= hinge(η) + <g, η' − η>
        for step in (1e-3, 0.1, 1.0):
            direction = random_direction(scores, rng)
            moved = hinge(decoder, shifted(scores, direction, step), y)[0]
            predicted = hinge_at + step * gradient.dot(direction)
            assert np.all(moved >= predicted - 1e-5 * (1 + np.abs(moved)))


def test_vanishing_smoothing_gives_the_hinge_gradient_at_a_unique_argmax():
    rng = np.random.default_rng(5)
    scores = random_chain_scores(rng, [4, 3], n_states=3, scale=2.0)
    y = rng.integers(0, 3, size=7)
    _, hinge_gradient = StructuredHingeLoss("hamming")(ChainDecoder(), scores, y)
    for loss in (EntropySmoothedHingeLoss(strength=1e-4),
                 L2SmoothedHingeLoss(strength=1e-4, top_k=2)):
        _, gradient = loss(ChainDecoder(), scores, y)
        for field in ("unary", "transition", "start", "end"):
            np.testing.assert_allclose(getattr(gradient, field), getattr(hinge_gradient, field),
                                       atol=1e-6)


# -- forbidden outputs (-inf scores) -------------------------------------------------


def test_l2_ignores_padded_and_forbidden_outputs():
    """K beyond the number of outputs of finite score: the padded and forbidden outputs
    take no weight, the oracle is certified and nothing is NaN."""
    unary = np.array([[0.0, -np.inf, 0.2, -np.inf], [1.0, 0.9, -np.inf, 0.95]])
    scores = MulticlassScores(unary)
    y = np.array([0, 1])
    loss = L2SmoothedHingeLoss("hamming", strength=10.0, top_k=6)
    values, gradient = loss(MulticlassDecoder(), scores, y)
    assert np.all(np.isfinite(values)) and np.all(np.isfinite(gradient.unary))
    np.testing.assert_array_equal(loss.exact_, [True, True])
    np.testing.assert_array_equal(gradient.unary[unary == -np.inf], 0.0)
    z = np.where(unary > -np.inf, unary + (np.arange(4) != y[:, None]), -np.inf)
    gold = unary[[0, 1], y]
    np.testing.assert_allclose(values, l2_reference(z, gold, 10.0), rtol=1e-10)
    assert loss.n_inexact_ == 0


def test_l2_ignores_forbidden_labels_of_multilabel_outputs():
    unary = np.array([[0.3, -np.inf, -0.2], [-np.inf, 1.0, -np.inf]])
    scores = MultilabelScores(unary)
    y = np.array([[1, 0, 0], [0, 1, 0]])
    loss = L2SmoothedHingeLoss("hamming", strength=5.0, top_k=8)
    values, gradient = loss(MultilabelDecoder(), scores, y)
    assert np.all(np.isfinite(values)) and np.all(np.isfinite(gradient.unary))
    np.testing.assert_array_equal(loss.exact_, [True, True])
    # a forbidden label is never on: its gradient is minus its gold indicator (0 here)
    np.testing.assert_array_equal(gradient.unary[unary == -np.inf], 0.0)
    _, _, z, gold = enumerated(scores, y, HammingLoss(), 8)
    np.testing.assert_allclose(values, l2_reference(z, gold, 5.0), rtol=1e-10)
    entropy, _ = EntropySmoothedHingeLoss("hamming", strength=5.0)(MultilabelDecoder(),
                                                                   scores, y)
    np.testing.assert_allclose(entropy, 5.0 * logsumexp(z / 5.0, axis=1) - gold, rtol=1e-10)


def test_l2_ignores_forbidden_chain_labelings():
    # start in state 1 and the transition 0 -> 1 are forbidden: 3 of the 8 labelings of
    # length 3 remain (000, 100, 110 are out: start 1; 001, 010, 011 have 0 -> 1...)
    scores = ChainScores(np.zeros((3, 2)), np.array([0, 3]),
                         np.array([[0.0, -np.inf], [0.1, 0.0]]),
                         np.array([0.0, -np.inf]), np.zeros(2))
    y = np.array([0, 0, 0])
    for decoder in (ChainDecoder(), BruteForceDecoder()):
        loss = L2SmoothedHingeLoss("hamming", strength=100.0, top_k=8)
        values, gradient = loss(decoder, scores, y)
        assert np.all(np.isfinite(values)) and np.all(np.isfinite(gradient.unary))
        assert np.all(np.isfinite(gradient.transition))
        assert loss.exact_.all()
        _, _, z, gold = enumerated(scores, y, HammingLoss(), 8)
        assert np.sum(z > -np.inf) == 1  # only 000 is feasible
        np.testing.assert_allclose(values, l2_reference(z, gold, 100.0), rtol=1e-12)
        np.testing.assert_array_equal(gradient.transition[0, 0, 1], 0.0)


# -- bad inputs ----------------------------------------------------------------------


@pytest.mark.parametrize("cls", [EntropySmoothedHingeLoss, L2SmoothedHingeLoss])
@pytest.mark.parametrize("strength, error", [(0.0, ValueError), (-1.0, ValueError),
                                             (np.inf, ValueError), (np.nan, ValueError),
                                             ("1", TypeError), (True, TypeError),
                                             (None, TypeError)])
def test_bad_strength_is_a_clear_error(cls, strength, error):
    with pytest.raises(error, match="strength"):
        cls(strength=strength)
    loss = cls(strength=1.0)
    with pytest.raises(error, match="strength"):
        loss.strength = strength
    assert loss.strength == 1.0


def test_strength_may_change_between_calls():
    scores = MulticlassScores(np.array([[1.0, 0.0, 0.5]]))
    loss = EntropySmoothedHingeLoss(strength=1.0)
    first, _ = loss(MulticlassDecoder(), scores, np.array([0]))
    loss.strength = 0.1
    second, _ = loss(MulticlassDecoder(), scores, np.array([0]))
    z = np.array([1.0, 1.0, 1.5])
    assert first[0] == pytest.approx(logsumexp(z) - 1.0)
    assert second[0] == pytest.approx(0.1 * logsumexp(z / 0.1) - 1.0)


@pytest.mark.parametrize("top_k, error", [(0, ValueError), (-2, ValueError),
                                          (1.5, TypeError), (True, TypeError),
                                          ("5", TypeError)])
def test_bad_top_k_is_a_clear_error(top_k, error):
    with pytest.raises(error, match="top_k"):
        L2SmoothedHingeLoss(top_k=top_k)


def test_bad_on_inexact_is_a_clear_error():
    with pytest.raises(ValueError, match="on_inexact"):
        L2SmoothedHingeLoss(on_inexact="ignore")


class _UserLoss(TaskLoss):
    def __call__(self, y_true, y_pred, offsets):
        return np.zeros(len(offsets) - 1)


@pytest.mark.parametrize("cls", [EntropySmoothedHingeLoss, L2SmoothedHingeLoss])
@pytest.mark.parametrize("task_loss", [ZeroOneLoss(), "zero_one", FBetaLoss(), "f1",
                                       _UserLoss()],
                         ids=["zero_one", "zero_one-name", "f1", "f1-name", "user"])
def test_task_loss_that_does_not_decompose_over_parts_is_a_clear_error(cls, task_loss):
    with pytest.raises(ValueError, match="decomposes over parts"):
        cls(task_loss=task_loss)


@pytest.mark.parametrize("cls", [EntropySmoothedHingeLoss, L2SmoothedHingeLoss])
def test_unknown_task_loss_is_a_clear_error(cls):
    with pytest.raises(ValueError, match="Unknown task_loss"):
        cls(task_loss="hammming")
    with pytest.raises(TypeError, match="TaskLoss"):
        cls(task_loss=3)


def test_decoders_without_the_operation_are_rejected_by_check_decoder():
    with pytest.raises(ValueError, match="'top_k'.*TreeDecoder"):
        L2SmoothedHingeLoss().check_decoder(TreeDecoder())
    with pytest.raises(ValueError, match="'marginals'.*MatchingDecoder"):
        EntropySmoothedHingeLoss().check_decoder(MatchingDecoder())
    for decoder in (ChainDecoder(), MulticlassDecoder(), MultilabelDecoder(),
                    BruteForceDecoder()):
        L2SmoothedHingeLoss().check_decoder(decoder)
        EntropySmoothedHingeLoss().check_decoder(decoder)
    EntropySmoothedHingeLoss().check_decoder(TreeDecoder())


# -- the protocol and the projection -------------------------------------------------


@pytest.mark.parametrize("loss", [EntropySmoothedHingeLoss(strength=0.7),
                                  L2SmoothedHingeLoss(strength=0.7, top_k=3)],
                         ids=["entropy", "l2"])
@pytest.mark.parametrize("family", FAMILIES)
def test_given_gold_parts_and_sub_batches_give_the_same_losses(loss, family):
    rng = np.random.default_rng(6)
    scores, y, _, decoder = make_instance(family, rng, n_examples=4)
    assert isinstance(loss, SmoothedHingeLoss)
    values, gradient = loss(decoder, scores, y)
    with_gold, gradient_gold = loss(decoder, scores, y, gold=decoder.parts(scores, y))
    np.testing.assert_array_equal(values, with_gold)
    np.testing.assert_array_equal(gradient.unary, gradient_gold.unary)
    offsets = scores.offsets
    per_example = [loss(decoder, scores.take([i]),
                        np.ravel(y)[offsets[i]:offsets[i + 1]].reshape((-1,) + y.shape[1:]))[0]
                   for i in range(scores.n_examples)]
    assert len(per_example) == 4
    np.testing.assert_allclose(np.concatenate(per_example), values, rtol=1e-12, atol=1e-12)


@given(values=st.lists(st.floats(-50, 50), min_size=1, max_size=8),
       n_invalid=st.integers(0, 3))
def test_sorted_projection_matches_bisection(values, n_invalid):
    row = np.sort(np.array(values))[::-1]
    row = np.concatenate((row, np.full(n_invalid, -np.inf)))[None, :]
    valid = row > -np.inf
    weights, threshold, support = project_sorted_onto_simplex(row, valid)
    expected = bisection_projection(row[0])
    np.testing.assert_allclose(weights[0], expected, atol=1e-9)
    assert weights.sum() == pytest.approx(1.0)
    assert support[0] == np.count_nonzero(weights[0] > 0) or np.any(
        np.isclose(row[0][valid[0]], threshold[0]))
    np.testing.assert_allclose(weights[0][valid[0]],
                               np.maximum(row[0][valid[0]] - threshold[0], 0.0), atol=1e-12)


@given(values=st.lists(st.floats(-50, 50), min_size=1, max_size=8),
       n_invalid=st.integers(0, 3))
def test_compiled_row_projection_matches_the_batch_projection(values, n_invalid):
    row = np.concatenate((np.sort(np.array(values))[::-1], np.full(n_invalid, -np.inf)))
    weights, threshold, support = project_sorted_onto_simplex(row[None, :], row[None, :] > -np.inf)
    compiled = np.full(row.shape, np.nan)
    tau, size = project_sorted_row(row, len(values), compiled)
    np.testing.assert_allclose(compiled, weights[0], rtol=0, atol=1e-12)
    assert size == support[0] and tau == pytest.approx(threshold[0], abs=1e-12)
