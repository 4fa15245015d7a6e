"""feature_label_pairs="seen": only the (feature, label) pairs of the training data."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.utils._param_validation import InvalidParameterError

from skstruct import CRF, SparseMAPClassifier
from skstruct._elastic_net import seen_pairs
from skstruct.decoders import TreeDecoder
from skstruct.losses import CRFLoss
from skstruct.optim import RegularizedRisk

LABELS = np.array(["A", "B", "C"])


def make_sparse_sequences(rng, n_sequences=40, n_features=15):
    """Sparse binary token features, each feature drawn mostly under some labels only."""
    owner = rng.integers(3, size=n_features)  # the label a feature usually comes with
    X, y = [], []
    for _ in range(n_sequences):
        length = rng.integers(2, 7)
        states = rng.integers(3, size=length)
        rows = np.zeros((length, n_features))
        for t, state in enumerate(states):
            candidates = np.flatnonzero(owner == state)
            rows[t, rng.choice(candidates, size=2)] = 1.0
            if rng.random() < 0.2:  # now and then a feature of another label
                rows[t, rng.integers(n_features)] = 1.0
        X.append(sp.csr_matrix(rows))
        y.append(LABELS[states])
    return X, y


def seen_by_loops(X, y, n_features):
    seen = np.zeros((n_features, 3), dtype=bool)
    for features, labels in zip(X, y, strict=True):
        dense = features.toarray() if sp.issparse(features) else features
        for t, label in enumerate(labels):
            seen[dense[t] != 0, np.searchsorted(LABELS, label)] = True
    return seen


def test_seen_pairs_match_a_loop_over_tokens(rng):
    X, y = make_sparse_sequences(rng)
    stacked = sp.vstack(X).tocsr()
    stacked.data[::7] = 0.0  # explicit zeros do not count
    tokens = np.searchsorted(LABELS, np.concatenate(y))
    cut = np.cumsum([x.shape[0] for x in X])[:-1]
    expected = seen_by_loops(np.split(stacked.toarray(), cut), y, 15)
    got = seen_pairs(stacked, tokens, 3, "sequence")
    assert 0 < (~expected).sum() < expected.size
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(seen_pairs(stacked.toarray(), tokens, 3, "sequence"),
                                  expected)


def test_crf_keeps_unseen_pairs_at_zero_and_is_at_a_minimum_on_the_others(rng):
    X, y = make_sparse_sequences(rng)
    crf = CRF(alpha=0.01, feature_label_pairs="seen", max_iter=1000, tol=1e-8).fit(X, y)
    seen = seen_by_loops(X, y, 15).T  # (n_classes, n_features), like coef_
    assert np.all(crf.coef_[~seen] == 0)
    assert np.all(crf.coef_[seen] != 0)
    # the gradient of F vanishes on the free parameters (transitions included)
    kind, batch, classes, y_encoded, weights = crf._validate_training_data(X, y, None)
    features = kind.feature_map(batch.n_features, classes)
    risk = RegularizedRisk(features, batch, y_encoded, crf.decoder_, CRFLoss(), 0.01, weights)
    w = crf._params()
    _, grad = risk.value_and_gradient(w)
    free = w != 0
    assert np.max(np.abs(grad[free])) < 1e-6
    assert np.max(np.abs(grad[~free])) > 1e-3  # the held pairs would move if freed
    assert crf.n_nonzero_ == seen.sum() + 9 + 3 + 3


def test_seen_differs_from_all_and_has_a_higher_objective(rng):
    X, y = make_sparse_sequences(rng)
    every = CRF(alpha=0.01, feature_label_pairs="all", max_iter=1000, tol=1e-8).fit(X, y)
    seen = CRF(alpha=0.01, feature_label_pairs="seen", max_iter=1000, tol=1e-8).fit(X, y)
    assert seen.n_nonzero_ < every.n_nonzero_
    assert seen.objective_curve_[-1] > every.objective_curve_[-1]


def test_when_every_pair_is_seen_the_model_is_the_same_bit_for_bit(rng):
    X = [rng.normal(size=(rng.integers(2, 6), 5)) for _ in range(30)]
    y = [LABELS[rng.integers(3, size=x.shape[0])] for x in X]
    every = CRF(alpha=0.01, max_iter=60, feature_label_pairs="all").fit(X, y)
    seen = CRF(alpha=0.01, max_iter=60, feature_label_pairs="seen").fit(X, y)
    np.testing.assert_array_equal(seen.coef_, every.coef_)
    np.testing.assert_array_equal(seen.objective_curve_, every.objective_curve_)


@pytest.mark.parametrize("solver", ["lbfgs", "lbfgsb", "owlqn"])
def test_every_smooth_solver_holds_the_unseen_pairs(rng, solver):
    X, y = make_sparse_sequences(rng, n_sequences=20)
    crf = CRF(alpha=0.01, feature_label_pairs="seen", solver=solver, max_iter=200).fit(X, y)
    assert np.all(crf.coef_[~seen_by_loops(X, y, 15).T] == 0)


def test_with_l1_and_warm_start(rng):
    X, y = make_sparse_sequences(rng)
    unseen = ~seen_by_loops(X, y, 15).T
    crf = CRF(alpha=0.01, l1_ratio=0.5, feature_label_pairs="seen", max_iter=500,
              warm_start=True).fit(X, y)
    assert np.all(crf.coef_[unseen] == 0)
    # a warm start from a model with all pairs: the unseen ones go back to zero
    every = CRF(alpha=0.01, feature_label_pairs="all", warm_start=True,
                max_iter=200).fit(X, y)
    assert np.all(every.coef_[unseen] != 0)
    every.set_params(feature_label_pairs="seen").fit(X, y)
    assert np.all(every.coef_[unseen] == 0)


def test_sparsemap_classifier_multiclass_and_multilabel(rng):
    X = rng.random((120, 8)) * (rng.random((120, 8)) < 0.4)
    y = np.argmax(X[:, :3], axis=1)
    X[:, 6] *= y == 0  # a feature seen with class 0 only
    clf = SparseMAPClassifier(alpha=0.01, feature_label_pairs="seen", max_iter=100).fit(X, y)
    expected = seen_pairs(X, y, 3, "multiclass").T
    assert 0 < (~expected).sum()
    assert np.all(clf.coef_[~expected] == 0)
    Y = (X[:, :4] > 0.3).astype(int)
    X[:, 7] = Y.sum(axis=1) == 0  # a feature seen only with every label off
    multilabel = SparseMAPClassifier(alpha=0.01, feature_label_pairs="seen",
                                     max_iter=100).fit(X, Y)
    expected = seen_pairs(X, Y, 4, "multilabel").T
    assert 0 < (~expected).sum()
    assert np.all(multilabel.coef_[~expected] == 0)


def test_trees_say_seen_pairs_need_labels(rng):
    n = 3
    X = [rng.normal(size=(n * n, 4)) for _ in range(4)]
    y = [np.array([0, 1, 1]) for _ in range(4)]
    with pytest.raises(ValueError, match="feature_label_pairs='seen' needs outputs with "
                                         "labels.*tree outputs"):
        CRF(decoder=TreeDecoder(), feature_label_pairs="seen").fit(X, y)


@pytest.mark.parametrize("value", ["some", True, None, 1])
def test_bad_values_are_clear_errors(rng, value):
    X, y = make_sparse_sequences(rng, n_sequences=3)
    with pytest.raises(InvalidParameterError, match=r"'feature_label_pairs' parameter .* "
                                                    r"must be a str among"):
        CRF(feature_label_pairs=value).fit(X, y)
    assert clone(CRF(feature_label_pairs="seen")).feature_label_pairs == "seen"


def test_the_default_trains_the_seen_pairs_on_sequences(rng):
    X, y = make_sparse_sequences(rng)
    default = CRF(alpha=0.01, max_iter=1000, tol=1e-8).fit(X, y)
    seen = CRF(alpha=0.01, feature_label_pairs="seen", max_iter=1000, tol=1e-8).fit(X, y)
    assert default.feature_label_pairs == "auto"
    assert default.feature_label_pairs_ == "seen"
    unseen = ~seen_by_loops(X, y, 15).T
    assert unseen.any()
    assert np.all(default.coef_[unseen] == 0.0)
    np.testing.assert_array_equal(default.coef_, seen.coef_)
    assert CRF(feature_label_pairs="all").fit(X, y).feature_label_pairs_ == "all"


def test_the_default_trains_all_pairs_where_seen_pairs_do_not_apply(rng):
    X, y = make_sparse_sequences(rng, n_sequences=10)
    assert CRF(alpha=0.01, solver="svrg", max_iter=2, tol=0.0).fit(
        X, y).feature_label_pairs_ == "seen"
    tabular = sp.vstack(X).toarray()
    labels = np.concatenate(y)
    clf = CRF(alpha=0.01).fit(tabular, labels)
    assert clf.feature_label_pairs_ == "all"
    np.testing.assert_array_equal(
        clf.coef_, CRF(alpha=0.01, feature_label_pairs="all").fit(tabular, labels).coef_)
