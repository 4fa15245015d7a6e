"""The compiled CRF objective of chains equals the generic composition, on any number of
threads, and hands back to it where the rescaled recursion does not apply."""

import warnings

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

import skstruct._linear_model as linear_model
from skstruct import CRF
from skstruct._elastic_net import seen_pairs
from skstruct.decoders import ChainConstraints, ChainDecoder
from skstruct.decoders._chain import kernels
from skstruct.features import LinearChainFeatures
from skstruct.features._chain_crf import ChainCRFObjective
from skstruct.losses import CRFLoss
from skstruct.optim import RegularizedRisk
from skstruct.utils._parallel import chunk_count, dynamic_schedule, token_chunks
from skstruct.utils._sequences import SequenceBatch


def _problem(rng, n_seq=300, n_features=40, n_states=5, binary=True, max_length=30):
    lengths = rng.integers(1, max_length, size=n_seq)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    n_tokens = int(offsets[-1])
    X = sp.random(n_tokens, n_features, density=0.15, format="csr", random_state=rng)
    if binary:
        X.data[:] = 1.0
    y = rng.integers(0, n_states, size=n_tokens)
    return SequenceBatch(X, offsets), y, n_states


def _risks(batch, y, n_states, alpha, sample_weight):
    features = LinearChainFeatures(batch.n_features, n_states)
    make = lambda: RegularizedRisk(features, batch, y, ChainDecoder(), CRFLoss(),  # noqa: E731
                                   alpha, sample_weight)
    compiled, generic = make(), make()
    generic._compiled_checked = True  # never builds the compiled objective
    assert isinstance(compiled.compiled_objective(), ChainCRFObjective)
    return features, compiled, generic


@pytest.mark.parametrize("binary", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
def test_compiled_objective_equals_generic_composition(binary, weighted):
    rng = np.random.default_rng(0)
    batch, y, n_states = _problem(rng, binary=binary)
    weights = rng.uniform(0.1, 3.0, batch.n_sequences) if weighted else np.ones(
        batch.n_sequences)
    features, compiled, generic = _risks(batch, y, n_states, 1e-3, weights)
    for scale in (0.0, 0.3, 3.0):
        w = scale * rng.normal(size=features.n_params)
        value, grad = compiled.value_and_gradient(w)
        ref_value, ref_grad = generic.value_and_gradient(w)
        np.testing.assert_allclose(value, ref_value, rtol=1e-12)
        np.testing.assert_allclose(grad, ref_grad, rtol=1e-10, atol=1e-12)
        values, data_grad = compiled.data_term(w)
        ref_values, ref_data_grad = generic.data_term(w)
        assert values.shape == ref_values.shape == (batch.n_sequences,)
        np.testing.assert_allclose(values, ref_values, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(data_grad, ref_data_grad, rtol=1e-10, atol=1e-12)


def test_compiled_objective_is_the_same_on_one_and_two_threads():
    rng = np.random.default_rng(1)
    batch, y, n_states = _problem(rng, n_seq=2000, n_features=200, n_states=7)
    features, compiled, _ = _risks(batch, y, n_states, 1e-4, np.ones(batch.n_sequences))
    w = 0.5 * rng.normal(size=features.n_params)
    # the batch is large enough for several chunks, lanes and threads
    objective = compiled.compiled_objective()
    assert objective.bounds.shape[0] - 1 > 4 and objective.lanes.shape[0] - 1 > 1
    previous = numba.get_num_threads()
    results = []
    try:
        for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(threads)
            results.append(compiled.value_and_gradient(w))
    finally:
        numba.set_num_threads(previous)
    assert results[0][0] == results[1][0]
    np.testing.assert_array_equal(results[0][1], results[1][1])


def test_compiled_objective_hands_wide_transition_scores_to_the_generic_path():
    rng = np.random.default_rng(2)
    batch, y, n_states = _problem(rng, n_seq=40)
    features, compiled, generic = _risks(batch, y, n_states, 0.0, np.ones(batch.n_sequences))
    w = rng.normal(size=features.n_params)
    _, transition, _, _ = features.unpack(w)
    transition[0, 0] = 500.0  # spread above SCALED_RANGE_LIMIT: log space
    assert compiled.compiled_objective().value_and_gradient(w, 0.0) is None
    value, grad = compiled.value_and_gradient(w)
    ref_value, ref_grad = generic.value_and_gradient(w)
    assert value == ref_value
    np.testing.assert_array_equal(grad, ref_grad)


def test_compiled_objective_is_not_used_for_a_cost_or_a_log_space_decoder():
    rng = np.random.default_rng(3)
    batch, y, n_states = _problem(rng, n_seq=10)
    features = LinearChainFeatures(batch.n_features, n_states)
    weights = np.full(batch.n_sequences, 0.1)
    assert features.compiled_objective(batch, y, ChainDecoder(), CRFLoss("hamming"),
                                       weights) is None
    assert features.compiled_objective(batch, y, ChainDecoder(log_space=True), CRFLoss(),
                                       weights) is None
    dense = SequenceBatch(batch.X.toarray(), batch.offsets)
    assert features.compiled_objective(dense, y, ChainDecoder(), CRFLoss(), weights) is None


@pytest.mark.parametrize("n_chunks", [1, 2, 7, 50, 1000])
def test_token_chunks_cover_the_sequences_in_nonempty_balanced_chunks(n_chunks):
    rng = np.random.default_rng(4)
    lengths = rng.integers(1, 60, size=300)
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    bounds = token_chunks(offsets, n_chunks)
    expected = min(n_chunks, 300)
    assert bounds.shape == (expected + 1,)
    assert bounds[0] == 0 and bounds[-1] == 300
    assert np.all(np.diff(bounds) >= 1)
    tokens = np.diff(offsets[bounds])
    # every chunk within one longest sequence of its share
    assert np.all(np.abs(tokens - offsets[-1] / expected) <= lengths.max() + 1)


def test_chunk_count_depends_on_the_batch_only():
    assert chunk_count(0, 0) == 1
    assert chunk_count(10, 3) == 1
    assert chunk_count(211727, 8936) == 211727 // 2048
    assert chunk_count(10**9, 5) == 5


def test_scaled_forward_backward_over_many_chunks_matches_log_space():
    rng = np.random.default_rng(5)
    lengths = rng.integers(1, 50, size=3000)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    n_states = 22
    unary = 3 * rng.normal(size=(offsets[-1], n_states))
    trans, start, end = (rng.normal(size=(n_states, n_states)), rng.normal(size=n_states),
                         rng.normal(size=n_states))
    assert kernels.chunk_count_of(offsets) > 10
    with dynamic_schedule():
        scaled = kernels.forward_backward_scaled(unary, offsets, trans, start, end, True)
    logs = kernels.forward_backward_log(unary, offsets, trans, start, end, True)
    assert len(scaled) == len(logs) == 3
    for a, b in zip(scaled, logs):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-11)


# Constraints: five states B-X, I-X, B-Y, I-Y, O, BIO rules (I-X only after B-X or I-X,
# likewise Y; no I-* first), and no sequence may end in B-Y (a forbidden end state).
_ALLOWED_TRANSITION = np.array([
    [1, 1, 1, 0, 1],
    [1, 1, 1, 0, 1],
    [1, 0, 1, 1, 1],
    [1, 0, 1, 1, 1],
    [1, 0, 1, 0, 1],
], dtype=bool)
_ALLOWED_START = np.array([1, 0, 1, 0, 1], dtype=bool)
_ALLOWED_END = np.array([1, 1, 0, 1, 1], dtype=bool)


def _constraints():
    return ChainConstraints(_ALLOWED_TRANSITION, _ALLOWED_START, _ALLOWED_END)


def _valid_labels(rng, offsets):
    """A random labeling allowed by ``_constraints()``: random walks over the allowed
    transitions whose last state is an allowed end."""
    y = np.empty(offsets[-1], dtype=np.int64)
    for a, b in zip(offsets[:-1], offsets[1:]):
        allowed = _ALLOWED_START & (_ALLOWED_END if b - a == 1 else True)
        y[a] = rng.choice(np.flatnonzero(allowed))
        for t in range(a + 1, b):
            allowed = _ALLOWED_TRANSITION[y[t - 1]] & (_ALLOWED_END if t == b - 1 else True)
            y[t] = rng.choice(np.flatnonzero(allowed))
    assert not _constraints().violations(y, offsets)[0].any()
    return y


def _constrained_risks(rng, n_seq=40, alpha=1e-3, weighted=False, binary=True,
                       compact=False):
    batch, _, n_states = _problem(rng, n_seq=n_seq, binary=binary)
    y = _valid_labels(rng, batch.offsets)
    features = LinearChainFeatures(batch.n_features, n_states)
    if compact:
        features = features.restricted(seen_pairs(batch.X, y, n_states, "sequence"))
    weights = rng.uniform(0.1, 3.0, n_seq) if weighted else np.ones(n_seq)
    make = lambda: RegularizedRisk(  # noqa: E731
        features, batch, y, ChainDecoder(constraints=_constraints()), CRFLoss(), alpha,
        weights)
    compiled, generic = make(), make()
    generic._compiled_checked = True  # the decoder's own forward-backward
    objective = compiled.compiled_objective()
    assert isinstance(objective, ChainCRFObjective) and objective.constrained
    return features, compiled, generic, objective


def _forbidden_pairwise(features, w):
    """Masks of the forbidden transition, start and end entries of w."""
    n = features.n_unary
    forbidden = np.zeros(w.shape, dtype=bool)
    forbidden[n:] = ~np.concatenate(
        [m.ravel() for m in (_ALLOWED_TRANSITION, _ALLOWED_START, _ALLOWED_END)])
    return forbidden


@pytest.mark.parametrize("binary, weighted, compact",
                         [(True, False, False), (False, True, False), (True, True, True)])
def test_constrained_compiled_objective_equals_the_constrained_decoders_composition(
        binary, weighted, compact):
    rng = np.random.default_rng(6)
    alpha = 1e-3
    features, compiled, generic, objective = _constrained_risks(
        rng, alpha=alpha, weighted=weighted, binary=binary, compact=compact)
    for scale in (0.0, 0.3, 3.0):
        w = scale * rng.normal(size=features.n_params)
        forbidden = _forbidden_pairwise(features, w)
        # forbidden weights far outside SCALED_RANGE_LIMIT of the allowed ones: the range
        # is that of the allowed parts only, as in the decoder's "auto"
        w[forbidden] = rng.choice([-1e3, 1e3], size=forbidden.sum())
        assert objective.value_and_gradient(w, alpha) is not None  # the fused passes
        value, grad = compiled.value_and_gradient(w)
        ref_value, ref_grad = generic.value_and_gradient(w)
        np.testing.assert_allclose(value, ref_value, rtol=1e-10)
        np.testing.assert_allclose(grad, ref_grad, rtol=1e-10, atol=1e-12)
        # no labeling uses a forbidden part: its gradient is the penalty's alone
        np.testing.assert_allclose(grad[forbidden], alpha * w[forbidden], rtol=1e-14)
        values, data_grad = compiled.data_term(w)
        ref_values, ref_data_grad = generic.data_term(w)
        np.testing.assert_allclose(values, ref_values, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(data_grad, ref_data_grad, rtol=1e-10, atol=1e-12)
        assert np.all(data_grad[forbidden] == 0.0)


def test_constrained_compiled_objective_hands_back_where_the_decoder_takes_log_space(
        monkeypatch):
    """value_and_gradient is None exactly when the constrained decoder's "auto" runs the
    log-space kernel: allowed transitions or end scores spread above SCALED_RANGE_LIMIT,
    or unary scores above CONSTRAINED_UNARY_SPREAD; the objective is then the generic
    one."""
    rng = np.random.default_rng(7)
    features, compiled, generic, objective = _constrained_risks(rng, alpha=0.0)
    calls = []
    log_kernel = kernels.forward_backward_log
    monkeypatch.setattr(kernels, "forward_backward_log",
                        lambda *args: calls.append(1) or log_kernel(*args))
    base = 0.3 * rng.normal(size=features.n_params)
    n = features.n_unary
    cases = {"in range": base.copy()}
    wide = cases["allowed transition"] = base.copy()
    wide[n + 0 * 5 + 1] = 250.0  # B-X -> I-X, allowed
    wide = cases["allowed end"] = base.copy()
    wide[n + 25 + 5 + 4] = -250.0  # end in O, allowed
    wide = cases["unary"] = base.copy()
    # one feature gives O (allowed everywhere) 450: unary scores spread more than
    # CONSTRAINED_UNARY_SPREAD, though the rescaled recursion would not underflow
    wide[0 * 5 + 4] = 450.0
    wide = cases["forbidden only"] = base.copy()
    wide[_forbidden_pairwise(features, wide)] = 900.0
    for name, w in cases.items():
        calls.clear()
        generic.value_and_gradient(w)
        log_space = bool(calls)
        assert log_space == (name not in ("in range", "forbidden only")), name
        assert (objective.value_and_gradient(w, 0.0) is None) == log_space, name
        value, grad = compiled.value_and_gradient(w)
        ref_value, ref_grad = generic.value_and_gradient(w)
        np.testing.assert_allclose(value, ref_value, rtol=1e-10)
        np.testing.assert_allclose(grad, ref_grad, rtol=1e-10, atol=1e-12)


def test_constrained_compiled_objective_hands_forbidden_gold_parts_to_the_generic_path():
    """A gold labeling through a forbidden part (which fit rejects) has no finite loss: the
    fused passes hand back, and the generic path reports it."""
    rng = np.random.default_rng(8)
    batch, _, n_states = _problem(rng, n_seq=20)
    y = _valid_labels(rng, batch.offsets)
    y[batch.offsets[0]] = 1  # I-X first: a forbidden start
    features = LinearChainFeatures(batch.n_features, n_states)
    weights = np.full(batch.n_sequences, 1 / batch.n_sequences)
    objective = features.compiled_objective(
        batch, y, ChainDecoder(constraints=_constraints()), CRFLoss(), weights)
    assert objective.constrained
    assert objective.value_and_gradient(np.zeros(features.n_params), 0.0) is None


def test_compiled_objective_reads_the_decoders_constraints():
    rng = np.random.default_rng(9)
    batch, y, n_states = _problem(rng, n_seq=10)
    features = LinearChainFeatures(batch.n_features, n_states)
    weights = np.full(batch.n_sequences, 0.1)
    free = features.compiled_objective(batch, y, ChainDecoder(), CRFLoss(), weights)
    assert not free.constrained
    as_dict = features.compiled_objective(
        batch, y, ChainDecoder(constraints=dict(transition=_ALLOWED_TRANSITION,
                                                start=_ALLOWED_START, end=_ALLOWED_END)),
        CRFLoss(), weights)
    assert as_dict.constrained
    np.testing.assert_array_equal(
        as_dict._allowed, np.concatenate([_ALLOWED_TRANSITION.ravel(), _ALLOWED_START,
                                          _ALLOWED_END]))
    # constraints over another number of states: the generic path raises the decoder's error
    other = ChainConstraints(np.ones((3, 3), dtype=bool))
    assert features.compiled_objective(batch, y, ChainDecoder(constraints=other), CRFLoss(),
                                       weights) is None


def _constrained_crf_data(rng, n_seq=40):
    batch, _, _ = _problem(rng, n_seq=n_seq, max_length=15)
    y = _valid_labels(rng, batch.offsets)
    X = [batch.X[a:b] for a, b in zip(batch.offsets[:-1], batch.offsets[1:])]
    return X, [y[a:b] for a, b in zip(batch.offsets[:-1], batch.offsets[1:])]


def _fit_constrained_crf(X, y, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return CRF(decoder=ChainDecoder(constraints=_constraints()), **params).fit(X, y)


def test_constrained_crf_fits_the_model_of_the_generic_path(monkeypatch):
    rng = np.random.default_rng(10)
    X, y = _constrained_crf_data(rng)
    fused = _fit_constrained_crf(X, y, max_iter=40, tol=0.0)

    class GenericRisk(RegularizedRisk):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._compiled_checked = True  # the constrained decoder's composition

    monkeypatch.setattr(linear_model, "RegularizedRisk", GenericRisk)
    generic = _fit_constrained_crf(X, y, max_iter=40, tol=0.0)
    assert fused.n_iter_ == generic.n_iter_ == 40
    for name in ("coef_", "transition_", "start_transition_", "end_transition_"):
        np.testing.assert_allclose(getattr(fused, name), getattr(generic, name), rtol=1e-6,
                                   atol=1e-8, err_msg=name)
    np.testing.assert_allclose(fused.objective_curve_, generic.objective_curve_, rtol=1e-8)
    # the weights of the forbidden parts only decay (alpha w from w = 0): they stay 0
    assert np.all(fused.transition_[~_ALLOWED_TRANSITION] == 0.0)
    assert np.all(fused.start_transition_[~_ALLOWED_START] == 0.0)
    assert np.all(fused.end_transition_[~_ALLOWED_END] == 0.0)


def test_constrained_crf_trains_through_the_fused_objective(monkeypatch):
    rng = np.random.default_rng(11)
    X, y = _constrained_crf_data(rng, n_seq=20)
    results = []
    original = ChainCRFObjective.value_and_gradient

    def spy(self, w, alpha):
        result = original(self, w, alpha)
        results.append((self.constrained, result is not None))
        return result

    monkeypatch.setattr(ChainCRFObjective, "value_and_gradient", spy)
    _fit_constrained_crf(X, y, max_iter=5)
    assert results and all(constrained and fused for constrained, fused in results)
