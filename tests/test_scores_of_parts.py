"""Prediction reads the fitted attributes as the feature map's parts (no packed copy of W
per call) and scores exactly as the packed parameter vector does."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from skstruct import CRF, StructuredSVM


def _quiet_fit(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(X, y)


def _sequences(seed=0, n=30, n_features=12, density=0.3):
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n):
        length = int(rng.integers(2, 8))
        labels = rng.integers(0, 3, size=length)
        features = (rng.random((length, n_features)) < density).astype(float)
        features[np.arange(length), labels] = 1.0
        X.append(sp.csr_matrix(features))
        y.append(np.array(["A", "B", "C"])[labels])
    return X, y


def _tabular(seed=0, n=60, multilabel=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    if multilabel:
        return X, (X[:, :3] + 0.3 * rng.normal(size=(n, 3)) > 0).astype(int)
    return X, np.array(["a", "b", "c"])[np.argmax(X[:, :3], axis=1)]


def _models():
    X, y = _sequences()
    yield "chain", _quiet_fit(CRF(max_iter=20), X, y), X
    X, y = _tabular()
    yield "multiclass", _quiet_fit(StructuredSVM(max_iter=10, random_state=0), X, y), X
    X, Y = _tabular(multilabel=True)
    yield "multilabel", _quiet_fit(CRF(max_iter=20), X, Y), X


def _packed_scores(model, X):
    batch = model._validate_prediction_data(X)
    return model._features().scores(batch, model._params())


def _arrays(scores):
    names = ("unary", "transition", "start", "end")
    return [getattr(scores, name) for name in names if hasattr(scores, name)]


@pytest.mark.parametrize("name, model, X", list(_models()), ids=["chain", "multiclass",
                                                                  "multilabel"])
def test_scores_of_the_attributes_equal_the_packed_scores(name, model, X, monkeypatch):
    batch = model._validate_prediction_data(X)
    expected = _arrays(_packed_scores(model, X))
    # the parts path never forms w: with _params unavailable, prediction still works
    monkeypatch.setattr(type(model), "_params", lambda self: 1 / 0)
    got = _arrays(model._scores(batch))
    assert len(got) == len(expected) > 0
    for mine, theirs in zip(got, expected):
        np.testing.assert_array_equal(mine, theirs)
    model.predict(X)


def test_changes_to_the_attributes_reach_prediction_and_writes_to_scores_do_not():
    X, y = _sequences(1)
    model = _quiet_fit(CRF(max_iter=20), X, y)
    batch = model._validate_prediction_data(X)
    transition = model.transition_.copy()
    scores = model._scores(batch)
    scores.transition[:] = 7.0
    scores.start[:] = 7.0
    np.testing.assert_array_equal(model.transition_, transition)
    model.coef_[1, :] += 5.0          # in place
    model.transition_ = np.zeros_like(transition)    # reassigned
    np.testing.assert_array_equal(_arrays(model._scores(batch))[0],
                                  _arrays(_packed_scores(model, X))[0])
    np.testing.assert_array_equal(model._scores(batch).transition, 0.0)


def test_attributes_of_another_dtype_take_the_packed_path():
    X, y = _sequences(2)
    model = _quiet_fit(CRF(max_iter=20), X, y)
    batch = model._validate_prediction_data(X)
    model.transition_ = model.transition_.astype(np.float32)   # not the map's dtype
    assert model._features().scores_of_parts(
        batch, *model._fitted_kind().coefficient_parts(model)) is None
    np.testing.assert_array_equal(model._scores(batch).transition,
                                  model.transition_.astype(np.float64))


def test_compact_pair_layouts_take_the_packed_path():
    from skstruct.features import LinearChainFeatures

    X, y = _sequences(3)
    model = _quiet_fit(CRF(max_iter=20), X, y)
    batch = model._validate_prediction_data(X)
    dense = model._features()
    mask = np.ones((dense.n_features, dense.n_states), bool)
    mask[0, 0] = False
    compact = LinearChainFeatures(dense.n_features, dense.n_states, pairs=mask)
    parts = model._fitted_kind().coefficient_parts(model)
    assert dense.scores_of_parts(batch, *parts) is not None
    assert compact.pairs is not None and compact.scores_of_parts(batch, *parts) is None
