"""The contract every registered decoder family keeps, checked on its tiny batches.

Parametrized by the registry (tests/_families.py): every configuration of every family
(``DecoderFamily.decoders``) on the family's tiny batches (``tiny_batch``), against its
slow reference (``enumeration``, through BruteForceDecoder) where it has one. A family
registered later, a user's included, gets these tests from its registration alone.
"""

import inspect

import numpy as np
import pytest

from _families import decoder_cases, family, other_scores, reference_for
from skstruct.losses import HammingLoss

SEEDS = (0, 1, 2)


def _case_id(family_name, decoder):
    defaults = {name: p.default for name, p in
                inspect.signature(type(decoder).__init__).parameters.items()
                if p.default is not inspect.Parameter.empty}
    changed = {k: v for k, v in decoder.get_params(deep=False).items()
               if k in defaults and v != defaults[k]}
    shown = ",".join(f"{k}={v}" for k, v in changed.items())
    return f"{family_name}-{type(decoder).__name__}({shown})"


def _cases(*, enumerated=False, capability=None):
    return [pytest.param(name, decoder, id=_case_id(name, decoder))
            for name, decoder in decoder_cases(with_reference=False)
            if (not enumerated or family(name).enumeration is not None)
            and (capability is None or capability in decoder.capabilities)]


def _batches(name):
    for seed in SEEDS:
        yield family(name).tiny_batch(np.random.default_rng(seed))


@pytest.mark.parametrize("name, decoder", _cases(enumerated=True, capability="map"))
def test_map_scores_the_best_output_of_the_reference(name, decoder):
    reference = reference_for(decoder)
    for batch in _batches(name):
        scores = batch.scores
        labels, best = decoder.map(scores, return_score=True)
        _, expected = reference.map(scores, return_score=True)
        np.testing.assert_allclose(best, expected, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(decoder.score_outputs(scores, labels), expected,
                                   rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name, decoder", _cases(enumerated=True, capability="marginals"))
def test_log_partition_and_marginals_equal_the_reference(name, decoder):
    reference = reference_for(decoder)
    for batch in _batches(name):
        scores = batch.scores
        np.testing.assert_allclose(decoder.log_partition(scores),
                                   reference.log_partition(scores), rtol=1e-9, atol=1e-9)
        (log_z, got), (_, expected) = decoder.marginals(scores), reference.marginals(scores)
        np.testing.assert_allclose(log_z, reference.log_partition(scores), rtol=1e-9,
                                   atol=1e-9)
        np.testing.assert_allclose(got.unary, expected.unary, rtol=1e-8, atol=1e-9)
        # every part, pair parts included: the expected score E[θ_y] = ⟨μ, η⟩
        np.testing.assert_allclose(got.dot(scores), expected.dot(scores), rtol=1e-8,
                                   atol=1e-9)


@pytest.mark.parametrize("name, decoder", _cases(enumerated=True, capability="top_k"))
def test_top_k_scores_equal_the_reference(name, decoder):
    reference = reference_for(decoder)
    for batch in _batches(name):
        _, top = decoder.top_k(batch.scores, 3)
        _, expected = reference.top_k(batch.scores, 3)
        np.testing.assert_allclose(top, expected, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name, decoder",
                         _cases(enumerated=True, capability="loss_augmented_map"))
def test_loss_augmented_map_reaches_the_reference_objective(name, decoder):
    reference, loss = reference_for(decoder), HammingLoss()
    for batch in _batches(name):
        scores, y = batch.scores, batch.y

        def objective(y_hat):
            # offsets: where each example's encoded output starts in the flattened y
            delta = loss(np.ravel(y), np.ravel(y_hat), scores.offsets)
            return decoder.score_outputs(scores, y_hat) + delta

        np.testing.assert_allclose(
            objective(decoder.loss_augmented_map(scores, y, loss)),
            objective(reference.loss_augmented_map(scores, y, loss)), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name, decoder", _cases(capability="parts"))
def test_parts_dotted_with_the_scores_are_the_output_scores(name, decoder):
    for batch in _batches(name):
        scores = batch.scores
        parts = decoder.parts(scores, batch.y)
        np.testing.assert_allclose(parts.dot(scores), decoder.score_outputs(scores, batch.y),
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", sorted({name for name, _ in decoder_cases()}))
@pytest.mark.parametrize("value", [np.nan, np.inf], ids=["nan", "posinf"])
def test_nan_and_posinf_scores_are_rejected_with_their_name(name, value):
    registered = family(name)
    shown = "NaN" if np.isnan(value) else r"\+inf"
    for label, key in registered.score_names.items():
        batch = registered.tiny_batch(np.random.default_rng(0))
        batch.arrays[key].reshape(-1)[-1] = value
        with pytest.raises(ValueError, match=rf"{label} scores.* contain {shown}"):
            batch.scores


@pytest.mark.parametrize("name, decoder", _cases(capability="map"))
def test_a_container_of_another_family_is_a_type_error(name, decoder):
    scores = family(name).tiny_batch(np.random.default_rng(0)).scores
    with pytest.raises(TypeError, match=f"{type(decoder).__name__} takes"):
        decoder.map(other_scores(scores))
    with pytest.raises(TypeError, match=f"{type(decoder).__name__} takes"):
        decoder.map(scores.unary)


@pytest.mark.parametrize("name", sorted({name for name, _ in decoder_cases()}))
@pytest.mark.parametrize("value", [np.nan, np.inf], ids=["nan", "posinf"])
def test_replace_rejects_nan_and_posinf(name, value):
    scores = family(name).tiny_batch(np.random.default_rng(0)).scores
    unary = scores.unary.copy()
    unary.reshape(-1)[0] = value
    with pytest.raises(ValueError, match="NaN|\\+inf"):
        scores.replace(unary=unary)


@pytest.mark.parametrize("name", sorted({name for name, _ in decoder_cases()}))
def test_a_sub_batch_holds_the_unary_scores_of_its_examples(name):
    scores = family(name).tiny_batch(np.random.default_rng(0)).scores
    part = scores.take([2, 0])
    assert part.n_examples == 2
    flat, own = np.ravel(scores.unary), np.ravel(part.unary)
    starts, ends = scores.unary_offsets[[2, 0]], scores.unary_offsets[[3, 1]]
    expected = np.concatenate([flat[a:b] for a, b in zip(starts, ends)])
    np.testing.assert_array_equal(own, expected)
