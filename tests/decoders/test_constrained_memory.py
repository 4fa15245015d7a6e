"""The memory limit of constrained message passing (``ChainDecoder(max_table_memory=...)``)."""

import numba
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.exceptions import FitFailedWarning
from sklearn.model_selection import GridSearchCV
from sklearn.utils._param_validation import InvalidParameterError

from _chain_data import chain_instances, random_chain_scores
from skstruct import StructuredSVM
from skstruct.decoders import ChainDecoder
from skstruct.decoders._core.statistic_table import (
    DEFAULT_MAX_TABLE_MEMORY,
    TableMemoryError,
    _format_bytes,
)
from skstruct.decoders._chain.counting import (
    _Counters,
    _loss_counters,
    _threads,
    loss_table_memory,
)
from skstruct.losses import FBetaLoss, HammingLoss, RecallLoss


def _f1(n_states):
    return FBetaLoss().with_positive_states(np.arange(n_states) > 0)


def _batch(rng, lengths, n_states=5):
    scores = random_chain_scores(rng, lengths, n_states)
    y_true = rng.integers(0, n_states, size=scores.unary.shape[0])
    return scores, y_true


def test_default_limit_is_two_gib():
    assert ChainDecoder().max_table_memory == DEFAULT_MAX_TABLE_MEMORY == 2 * 1024**3


def test_a_sequence_over_the_limit_is_named_before_any_work(rng):
    scores, y_true = _batch(rng, [4, 60, 5])
    loss = _f1(scores.n_states)
    estimates = loss_table_memory(scores, y_true, loss)
    assert np.argmax(estimates) == 1
    limit = (estimates[0] + estimates[1]) / 2  # between the short ones and the long one
    decoder = ChainDecoder(max_table_memory=limit)
    with pytest.raises(TableMemoryError) as info:
        decoder.loss_augmented_map(scores, y_true, loss, "slack")
    message = str(info.value)
    assert "sequence 1 of the batch" in message
    assert "60 tokens" in message
    assert f"needs about {_format_bytes(estimates[1])}" in message
    assert "FBetaLoss" in message
    for advice in ("max_table_memory", "decoder__max_table_memory", "split",
                   "Hamming with margin rescaling"):
        assert advice in message
    assert isinstance(info.value, MemoryError) and isinstance(info.value, ValueError)


def test_just_under_the_limit_succeeds_just_over_fails(rng):
    scores, y_true = _batch(rng, [30])
    loss = _f1(scores.n_states)
    estimate = loss_table_memory(scores, y_true, loss)[0]
    reference = ChainDecoder(max_table_memory=None).loss_augmented_map(
        scores, y_true, loss, "margin")
    at_limit = ChainDecoder(max_table_memory=estimate).loss_augmented_map(
        scores, y_true, loss, "margin")
    np.testing.assert_array_equal(at_limit, reference)
    with pytest.raises(TableMemoryError, match="sequence 0 of the batch"):
        ChainDecoder(max_table_memory=estimate - 1).loss_augmented_map(
            scores, y_true, loss, "margin")


def test_several_sequences_over_the_limit_are_counted(rng):
    scores, y_true = _batch(rng, [40, 3, 50])
    with pytest.raises(TableMemoryError, match=r"sequence 2 .*\(1 other sequences"):
        ChainDecoder(max_table_memory=1e5).loss_augmented_map(
            scores, y_true, _f1(scores.n_states), "margin")


def test_the_estimate_depends_on_lengths_and_labels_only(rng):
    scores, y_true = _batch(rng, [20, 7])
    other, _ = _batch(np.random.default_rng(1), [20, 7])
    loss = _f1(scores.n_states)
    np.testing.assert_array_equal(loss_table_memory(scores, y_true, loss),
                                  loss_table_memory(other, y_true, loss))


def test_one_counter_losses_and_slack_hamming_are_limited_too(rng):
    scores, y_true = _batch(rng, [50])
    recall = RecallLoss().with_positive_states(np.arange(scores.n_states) > 0)
    decoder = ChainDecoder(max_table_memory=1e3)
    with pytest.raises(TableMemoryError, match="RecallLoss"):
        decoder.loss_augmented_map(scores, y_true, recall, "margin")
    with pytest.raises(TableMemoryError, match="MismatchCount"):
        decoder.loss_augmented_map(scores, y_true, HammingLoss(), "slack")
    # margin-rescaled Hamming decomposes over tokens: no table, no limit
    decoder.loss_augmented_map(scores, y_true, HammingLoss(), "margin")


def test_constrained_decoding_methods_are_limited(rng):
    scores, _ = _batch(rng, [40])
    decoder = ChainDecoder(max_table_memory=1e3)
    positive = np.arange(scores.n_states) > 0
    with pytest.raises(TableMemoryError, match="label count"):
        decoder.map_with_label_count(scores, 3, positive)
    others = decoder.top_k(scores, 2)[0]
    with pytest.raises(TableMemoryError, match="minimum distance"):
        decoder.map_with_min_distance(scores, others, 2)
    with pytest.raises(TableMemoryError):
        decoder.diverse_top_k(scores, 3, 2)


def test_parallel_sequences_share_the_limit(rng):
    scores, y_true = _batch(rng, [40, 40, 40, 40])
    counters = _Counters(scores, *_loss_counters(_f1(scores.n_states), y_true, scores))
    one = counters.memory().max()
    previous = numba.get_num_threads()
    with _threads(counters, 10**9, limit=1.5 * one):
        assert numba.get_num_threads() == 1
    assert numba.get_num_threads() == previous
    with _threads(counters, 10**9, limit=None):
        assert numba.get_num_threads() == previous
    # the whole call works under a limit that fits one sequence at a time
    reference = ChainDecoder(max_table_memory=None).loss_augmented_map(
        scores, y_true, _f1(scores.n_states))
    np.testing.assert_array_equal(
        ChainDecoder(max_table_memory=1.5 * one).loss_augmented_map(
            scores, y_true, _f1(scores.n_states)),
        reference)


def test_bad_limits_are_rejected(rng):
    scores, y_true = _batch(rng, [4])
    for bad in (0, -1.0, "2GB"):
        with pytest.raises(ValueError, match="max_table_memory"):
            ChainDecoder(max_table_memory=bad).loss_augmented_map(
                scores, y_true, _f1(scores.n_states))


def _sequences(rng, n=6, long=None):
    X, y = [], []
    for i in range(n):
        length = long if (long is not None and i == n - 1) else int(rng.integers(2, 6))
        states = rng.integers(0, 3, size=length)
        features = rng.normal(size=(length, 3)) * 0.5
        features[np.arange(length), states] += 1.0
        X.append(features)
        y.append(np.array(["O", "B", "C"])[states])
    return X, y


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("rescaling", ["margin", "slack"])
def test_the_estimator_uses_the_decoder_limit(rng, rescaling):
    X, y = _sequences(rng, long=80)
    model = StructuredSVM(decoder=ChainDecoder(max_table_memory=1e5), loss="f1",
                          rescaling=rescaling, solver="subgradient", max_iter=2)
    with pytest.raises(TableMemoryError, match="80 tokens"):
        model.fit(X, y)
    model.set_params(decoder__max_table_memory=None).fit(X, y)
    assert model.decoder_.max_table_memory is None


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.filterwarnings("ignore:One or more of the test scores are non-finite")
def test_the_limit_is_a_grid_search_parameter(rng):
    X, y = _sequences(rng, n=9, long=80)
    model = StructuredSVM(decoder=ChainDecoder(), loss="f1", solver="subgradient",
                          max_iter=2)
    assert "decoder__max_table_memory" in model.get_params()
    search = GridSearchCV(model, {"decoder__max_table_memory": [1e5, 1e9]}, cv=3,
                          error_score=np.nan)
    with pytest.warns(FitFailedWarning):  # fits on the long sequence hit the small limit
        search.fit(X, y)
    assert search.best_params_ == {"decoder__max_table_memory": 1e9}
    # the long sequence is the last one: the first two folds train on it
    assert np.isnan(search.cv_results_["split0_test_score"][0])
    assert np.isfinite(search.cv_results_["split0_test_score"][1])


def test_the_estimator_validates_the_limit(rng):
    X, y = _sequences(rng)
    model = StructuredSVM(decoder=ChainDecoder(max_table_memory=-5), loss="f1", max_iter=2)
    with pytest.raises(InvalidParameterError, match="max_table_memory"):
        model.fit(X, y)


@given(scores=chain_instances(max_states=3, max_length=6), seed=st.integers(0, 10**6))
def test_the_bound_covers_the_backtracking_pass_of_every_target(scores, seed):
    rng = np.random.default_rng(seed)
    n_counters = int(rng.integers(1, 3))
    increments = rng.integers(0, 3, size=scores.unary.shape + (n_counters,))
    caps = rng.integers(0, 6, size=(scores.n_sequences, n_counters))
    counters = _Counters(scores, increments, caps)
    bound = counters.back_pointer_bound()
    for target in range(int(counters.sizes.max())):
        low, high = counters.bounds_to(np.minimum(target, counters.sizes - 1))
        assert np.all(counters.back_pointers(high - low + 1) <= bound)


def test_the_bound_is_below_the_reachable_boxes_for_f1(rng):
    scores, y_true = _batch(rng, [200], n_states=9)
    counters = _Counters(scores, *_loss_counters(_f1(9), y_true, scores))
    reachable = counters.back_pointers(counters.high - counters.low + 1)
    assert counters.back_pointer_bound()[0] < 0.5 * reachable[0]


def test_a_failed_allocation_in_the_parallel_loop_is_an_error(rng, monkeypatch):
    """numba loses exceptions raised in a parallel loop: the kernels report which
    sequences finished, and a missing one is a TableMemoryError, not garbage labels."""
    from skstruct.decoders._chain import counting as _constrained

    scores, y_true = _batch(rng, [5, 6])
    real = _constrained.kernels.best_with_statistic

    def lost_second(*args):
        labels, done = real(*args)
        done[1] = False
        return labels, done

    monkeypatch.setattr(_constrained.kernels, "best_with_statistic", lost_second)
    with pytest.raises(TableMemoryError, match="could not allocate .* sequence 1"):
        ChainDecoder().loss_augmented_map(scores, y_true, _f1(scores.n_states))


def test_a_memory_error_reported_as_system_error_is_named(rng, monkeypatch):
    """numba may also report a failed allocation in a parallel loop as a chain of
    SystemError; one caused by a MemoryError becomes a TableMemoryError, others pass."""
    from skstruct.decoders._chain import counting as _constrained

    scores, y_true = _batch(rng, [5, 9])

    def failing(error):
        def kernel(*args):
            raise error
        return kernel

    def chained(cause):
        try:
            raise cause
        except Exception:
            try:
                raise SystemError("returned a result with an exception set")
            except SystemError as error:
                return error

    monkeypatch.setattr(_constrained.kernels, "best_per_statistic",
                        failing(chained(MemoryError("Allocation failed"))))
    with pytest.raises(TableMemoryError, match="could not allocate .* sequence 1 .*9 tokens"):
        ChainDecoder().loss_augmented_map(scores, y_true, _f1(scores.n_states))
    monkeypatch.setattr(_constrained.kernels, "best_per_statistic",
                        failing(chained(ZeroDivisionError())))
    with pytest.raises(SystemError):
        ChainDecoder().loss_augmented_map(scores, y_true, _f1(scores.n_states))
