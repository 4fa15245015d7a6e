"""The compact layout of feature_label_pairs="seen" on chains: the parameter vector holds
the seen (feature, label) pairs only, and gives the same objective, gradient and model as
all pairs with the unseen ones held at zero."""

import numba
import numpy as np
import pytest
import scipy.sparse as sp

from skstruct import CRF, SparseMAPClassifier
from skstruct._elastic_net import seen_pairs
from skstruct.decoders import ChainDecoder
from skstruct.features import LinearChainFeatures
from skstruct.features import _chain_crf
from skstruct.losses import CRFLoss
from skstruct.optim import RegularizedRisk, minimize_lbfgs, minimize_owlqn
from skstruct.utils._sequences import SequenceBatch


def _problem(rng, n_seq=200, n_features=60, n_states=7, binary=True):
    """Sparse tokens whose features come mostly with few labels; a few frequent features
    come with many, so that the layout has dense rows and sparse features."""
    lengths = rng.integers(1, 25, size=n_seq)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    n_tokens = int(offsets[-1])
    y = rng.integers(0, n_states, size=n_tokens)
    owner = rng.integers(0, n_states, size=n_features)
    rows, cols = [], []
    for t in range(n_tokens):
        own = np.flatnonzero(owner == y[t])
        picked = set(rng.choice(own, size=min(2, own.size), replace=False)) if own.size else set()
        if rng.random() < 0.03:  # now and then any feature
            picked.add(rng.integers(n_features))
        picked |= {0, 1} if rng.random() < 0.8 else set()  # two frequent features
        rows += [t] * len(picked)
        cols += sorted(picked)
    data = np.ones(len(rows)) if binary else rng.uniform(0.2, 2.0, size=len(rows))
    X = sp.csr_matrix((data, (rows, cols)), shape=(n_tokens, n_features))
    return SequenceBatch(X, offsets), y, n_states


def _risk(features, batch, y, alpha, sample_weight, compiled=True):
    risk = RegularizedRisk(features, batch, y, ChainDecoder(), CRFLoss(), alpha, sample_weight)
    if not compiled:
        risk._compiled_checked = True  # the generic composition only
    return risk


def _maps(batch, y, n_states):
    full = LinearChainFeatures(batch.n_features, n_states)
    seen = seen_pairs(batch.X, y, n_states, "sequence")
    return full, full.restricted(seen), seen


def _layout_has_both_kinds(objective):
    indptr = objective.rows[2]
    return (np.any(objective.split > indptr[:-1]) and np.any(objective.split < indptr[1:]))


@pytest.mark.parametrize("binary", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
def test_compact_objective_equals_the_masked_one(binary, weighted):
    rng = np.random.default_rng(0)
    batch, y, n_states = _problem(rng, binary=binary)
    full, compact, seen = _maps(batch, y, n_states)
    assert 0 < seen.sum() < seen.size
    weights = rng.uniform(0.1, 3.0, batch.n_sequences) if weighted else np.ones(
        batch.n_sequences)
    every = _risk(full, batch, y, 1e-3, weights)
    kept = _risk(compact, batch, y, 1e-3, weights)
    generic = _risk(compact, batch, y, 1e-3, weights, compiled=False)
    objective = kept.compiled_objective()
    assert objective.compact and objective.n_params == compact.n_params
    assert _layout_has_both_kinds(objective)
    for scale in (0.0, 0.3, 3.0):
        w_full = scale * rng.normal(size=full.n_params)
        unary, transition, start, end = full.unpack(w_full)
        unary[~seen] = 0.0
        w = compact.pack(unary, transition, start, end)
        assert w.shape == (compact.n_params,) == (seen.sum() + n_states ** 2 + 2 * n_states,)
        value, grad = kept.value_and_gradient(w)
        ref_value, ref_grad = every.value_and_gradient(w_full)
        np.testing.assert_allclose(value, ref_value, rtol=1e-12)
        np.testing.assert_allclose(grad, compact.pack(*full.unpack(ref_grad)), rtol=1e-10,
                                   atol=1e-13)
        # the generic composition through the compact map says the same
        gen_value, gen_grad = generic.value_and_gradient(w)
        np.testing.assert_allclose(gen_value, value, rtol=1e-12)
        np.testing.assert_allclose(gen_grad, grad, rtol=1e-10, atol=1e-13)


def test_compact_objective_is_the_same_on_one_and_two_threads():
    rng = np.random.default_rng(1)
    batch, y, n_states = _problem(rng, n_seq=1500, n_features=150)
    _, compact, _ = _maps(batch, y, n_states)
    risk = _risk(compact, batch, y, 1e-4, np.ones(batch.n_sequences))
    objective = risk.compiled_objective()
    assert objective.bounds.shape[0] - 1 > 4 and objective.lanes.shape[0] - 1 > 1
    w = 0.5 * rng.normal(size=compact.n_params)
    previous = numba.get_num_threads()
    results = []
    try:
        for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(threads)
            results.append(risk.value_and_gradient(w))
    finally:
        numba.set_num_threads(previous)
    assert len(results) == 2
    assert results[0][0] == results[1][0]
    np.testing.assert_array_equal(results[0][1], results[1][1])


@pytest.mark.parametrize("dense_row_labels", [0, 2, 100])
def test_every_split_between_dense_rows_and_sparse_features_gives_the_same_objective(
        monkeypatch, dense_row_labels):
    rng = np.random.default_rng(2)
    batch, y, n_states = _problem(rng, n_seq=80)
    _, compact, _ = _maps(batch, y, n_states)
    w = rng.normal(size=compact.n_params)
    reference = _risk(compact, batch, y, 1e-2, np.ones(batch.n_sequences)).value_and_gradient(w)
    monkeypatch.setattr(_chain_crf, "DENSE_ROW_LABELS", dense_row_labels)
    value, grad = _risk(compact, batch, y, 1e-2, np.ones(batch.n_sequences)
                        ).value_and_gradient(w)
    np.testing.assert_allclose(value, reference[0], rtol=1e-12)
    np.testing.assert_allclose(grad, reference[1], rtol=1e-10, atol=1e-13)


def test_compact_example_transpose_is_the_full_one_at_the_seen_pairs():
    rng = np.random.default_rng(3)
    batch, y, n_states = _problem(rng, n_seq=30)
    full, compact, _ = _maps(batch, y, n_states)
    w_full = rng.normal(size=full.n_params)
    w = compact.pack(*full.unpack(w_full))
    every = _risk(full, batch, y, 0.0, np.ones(batch.n_sequences))
    kept = _risk(compact, batch, y, 0.0, np.ones(batch.n_sequences))
    for i in (0, 7, 29):
        # the scores of example i are the same at w and at the full w with unseen zeroed
        unary, transition, start, end = full.unpack(w_full)
        unary[~compact.pairs] = 0.0
        value, indices, values = kept.example_value_and_gradient(i, w)
        ref_value, ref_indices, ref_values = every.example_value_and_gradient(
            i, full.pack(unary, transition, start, end))
        assert value == pytest.approx(ref_value, rel=1e-12)
        dense, ref_dense = np.zeros(compact.n_params), np.zeros(full.n_params)
        dense[indices] = values
        ref_dense[ref_indices] = ref_values
        assert len(np.unique(indices)) == len(indices)
        np.testing.assert_allclose(dense, compact.pack(*full.unpack(ref_dense)), atol=1e-14)


def _masked_fit(X, y, alpha, l1_ratio, tol):
    """The model of feature_label_pairs="seen" the long way: all pairs, unseen held at 0."""
    crf = CRF(alpha=alpha)
    kind, batch, classes, y_encoded, weights = crf._validate_training_data(X, y, None)
    full = kind.feature_map(batch.n_features, classes)
    risk = RegularizedRisk(full, batch, y_encoded, ChainDecoder(), CRFLoss(),
                           alpha * (1 - l1_ratio), weights)
    unseen = ~seen_pairs(batch.X, y_encoded, len(classes), "sequence")
    zeros = np.zeros(len(classes))
    fixed = full.pack(unseen, np.zeros((len(classes),) * 2), zeros, zeros).astype(bool)
    if l1_ratio > 0:
        result = minimize_owlqn(risk.value_and_gradient, np.zeros(full.n_params),
                                l1=alpha * l1_ratio, fixed=fixed, max_iter=2000, tol=tol)
    else:
        result = minimize_lbfgs(lambda w: _zero_at(risk.value_and_gradient(w), fixed),
                                np.zeros(full.n_params), max_iter=2000, tol=tol)
    return full.unpack(result.w)[0].T, unseen.T


def _zero_at(value_and_grad, fixed):
    value, grad = value_and_grad
    grad = grad.copy()
    grad[fixed] = 0.0
    return value, grad


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("l1_ratio", [0.0, 0.5])
def test_fitted_coef_is_the_masked_model(l1_ratio):
    rng = np.random.default_rng(4)
    batch, y, n_states = _problem(rng, n_seq=120, n_features=40, n_states=5)
    X = [batch.X[a:b] for a, b in zip(batch.offsets[:-1], batch.offsets[1:])]
    labels = np.array(list("ABCDE"))
    Y = [labels[y[a:b]] for a, b in zip(batch.offsets[:-1], batch.offsets[1:])]
    assert len(X) == len(Y) == 120
    crf = CRF(alpha=0.01, l1_ratio=l1_ratio, feature_label_pairs="seen", max_iter=2000,
              tol=1e-9).fit(X, Y)
    coef, unseen = _masked_fit(X, Y, 0.01, l1_ratio, 1e-9)
    assert unseen.any() and np.all(crf.coef_[unseen] == 0)
    np.testing.assert_allclose(crf.coef_, coef, atol=2e-5)
    if l1_ratio > 0:
        # L1 zeroes some seen pairs too, the same ones
        assert np.count_nonzero(crf.coef_) < (~unseen).sum()
        np.testing.assert_array_equal(crf.coef_ == 0, np.abs(coef) < 1e-8)
    # the solver ran on the seen pairs only
    seen_vectors = []
    CRF(alpha=0.01, l1_ratio=l1_ratio, feature_label_pairs="seen", max_iter=2,
        callback=lambda n, w, f: seen_vectors.append(w.shape[0])).fit(X, Y)
    assert seen_vectors and set(seen_vectors) == {(~unseen).sum() + 25 + 10}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_sparsemap_on_chains_keeps_only_the_seen_pairs():
    rng = np.random.default_rng(5)
    batch, y, n_states = _problem(rng, n_seq=40, n_features=20, n_states=4)
    X = [batch.X[a:b] for a, b in zip(batch.offsets[:-1], batch.offsets[1:])]
    Y = [y[a:b] for a, b in zip(batch.offsets[:-1], batch.offsets[1:])]
    clf = SparseMAPClassifier(alpha=0.01, feature_label_pairs="seen", max_iter=50).fit(X, Y)
    unseen = ~seen_pairs(batch.X, y, n_states, "sequence").T
    assert unseen.any() and np.all(clf.coef_[unseen] == 0)
    assert np.any(clf.coef_[~unseen] != 0)
