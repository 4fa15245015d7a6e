"""DaskSparseMAPClassifier (full-batch, as DaskCRF) and DaskStructuredPerceptron
(iterative parameter mixing) on a LocalCluster of 2 processes."""

import numpy as np
import pytest

from skstruct import SparseMAPClassifier, StructuredPerceptron

from _dask_cluster import local_cluster

db = pytest.importorskip("dask.bag")
pytest.importorskip("distributed")

from skstruct.dask import DaskSparseMAPClassifier, DaskStructuredPerceptron  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with local_cluster() as client:
        yield client


def _sequences(n=16, n_features=4, seed=0):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(n_features, 3))
    X, y = [], []
    for _ in range(n):
        x = rng.normal(size=(int(rng.integers(1, 6)), n_features))
        X.append(x)
        y.append(np.array(["A", "B", "C"])[np.argmax(x @ W + rng.normal(size=(len(x), 3)),
                                                     axis=1)])
    return X, y


@pytest.mark.parametrize("n_partitions", [1, 3])
def test_sparsemap_same_objective_and_model_as_local(client, n_partitions):
    X, y = _sequences()
    params = dict(alpha=0.05, tol=1e-8, max_iter=300)
    local = SparseMAPClassifier(**params).fit(X, y)
    model = DaskSparseMAPClassifier(client=client, **params).fit(
        db.from_sequence(list(zip(X, y)), npartitions=n_partitions))
    f = local.objective_curve_[-1]
    assert abs(model.objective_curve_[-1] - f) <= 1e-10 * abs(f)
    for name in ("coef_", "transition_", "start_transition_", "end_transition_"):
        np.testing.assert_allclose(getattr(model, name), getattr(local, name), rtol=0,
                                   atol=1e-8, err_msg=name)
    assert type(model.to_local()) is SparseMAPClassifier


def test_perceptron_mixing_is_deterministic_and_learns(client):
    X, y = _sequences(n=40, seed=1)
    bag = db.from_sequence(list(zip(X, y)), npartitions=3)
    params = dict(max_iter=5, random_state=0)
    first = DaskStructuredPerceptron(client=client, **params).fit(bag)
    second = DaskStructuredPerceptron(client=client, **params).fit(bag)
    np.testing.assert_array_equal(first.coef_, second.coef_)
    np.testing.assert_array_equal(first.transition_, second.transition_)
    other_seed = DaskStructuredPerceptron(client=client, max_iter=5, random_state=1).fit(bag)
    assert not np.array_equal(first.coef_, other_seed.coef_)
    assert first.n_partitions_ == 3 and 1 <= first.n_iter_ <= 5
    assert first.score(X, y) > 0.6
    assert type(first.to_local()) is StructuredPerceptron


def test_one_partition_without_shuffle_is_the_local_perceptron(client):
    # one partition, one epoch, no averaging: the mixing of one pass is that pass
    X, y = _sequences(n=25, seed=2)
    local = StructuredPerceptron(max_iter=1, shuffle=False, averaging=False).fit(X, y)
    model = DaskStructuredPerceptron(client=client, max_iter=1, shuffle=False,
                                     averaging=False).fit(
        db.from_sequence(list(zip(X, y)), npartitions=1))
    np.testing.assert_allclose(model.coef_, local.coef_, atol=1e-12)
    np.testing.assert_allclose(model.transition_, local.transition_, atol=1e-12)


def test_two_partitions_mix_uniformly(client):
    # one epoch without shuffling or averaging: w = (w_0 + w_1) / 2, each w_p the local
    # perceptron's pass over partition p from zero
    X, y = _sequences(n=20, seed=3)
    halves = [(X[:10], y[:10]), (X[10:], y[10:])]
    passes = [StructuredPerceptron(max_iter=1, shuffle=False, averaging=False)
              .partial_fit(Xp, yp, classes=["A", "B", "C"]) for Xp, yp in halves]
    model = DaskStructuredPerceptron(client=client, max_iter=1, shuffle=False,
                                     averaging=False).fit(
        db.from_sequence(list(zip(X, y)), npartitions=2))
    for name in ("coef_", "transition_", "start_transition_", "end_transition_"):
        np.testing.assert_allclose(getattr(model, name),
                                   (getattr(passes[0], name) + getattr(passes[1], name)) / 2,
                                   atol=1e-12, err_msg=name)
