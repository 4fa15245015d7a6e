"""DaskCRF on a LocalCluster of 2 processes: the local CRF's objective and model for any
partitioning, predictions over bags, partition errors named, pickling."""

import pickle
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from skstruct import CRF

from _dask_cluster import local_cluster

db = pytest.importorskip("dask.bag")
pytest.importorskip("distributed")

from skstruct.dask import DaskCRF, PartitionError  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with local_cluster() as client:
        yield client


def _sequences(n=40, n_features=5, seed=0, sparse=False):
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n):
        length = int(rng.integers(1, 7))
        x = rng.normal(size=(length, n_features)) * (rng.random((length, n_features)) < 0.6)
        X.append(sp.csr_matrix(x) if sparse else x)
        y.append(np.array(["B", "I", "O"])[rng.integers(0, 3, size=length)])
    return X, y


def _same_model(distributed, local, X):
    """Objective to 1e-10 relative and parameters to 1e-8, at the solution and along the
    way."""
    f_local = local.objective_curve_[-1]
    assert abs(distributed.objective_curve_[-1] - f_local) <= 1e-10 * abs(f_local)
    assert distributed.n_iter_ == local.n_iter_
    np.testing.assert_allclose(distributed.objective_curve_, local.objective_curve_,
                               rtol=1e-10, atol=0)
    for name in ("coef_", "transition_", "start_transition_", "end_transition_",
                 "intercept_"):
        if hasattr(local, name):
            np.testing.assert_allclose(getattr(distributed, name), getattr(local, name),
                                       rtol=0, atol=1e-8, err_msg=name)
    np.testing.assert_array_equal(distributed.classes_, local.classes_)


PARAMS = dict(alpha=0.05, tol=1e-9, max_iter=300)


@pytest.mark.parametrize("n_partitions", [1, 2, 3])
def test_same_objective_and_model_as_the_local_crf(client, n_partitions):
    X, y = _sequences(sparse=True)
    local = CRF(**PARAMS).fit(X, y)
    bag = db.from_sequence(list(zip(X, y)), npartitions=n_partitions)
    model = DaskCRF(client=client, **PARAMS).fit(bag)
    assert model.n_partitions_ == n_partitions
    _same_model(model, local, X)


def test_l1_owlqn_seen_pairs_and_sample_weights(client):
    # unequal partitions (the weights' shares differ), labels and weights as own bags
    X, y = _sequences(n=31, seed=1)
    weights = np.random.default_rng(2).uniform(0.5, 2.0, size=len(X))
    params = dict(alpha=0.05, l1_ratio=0.5, feature_label_pairs="seen", tol=1e-9,
                  max_iter=300)
    local = CRF(**params).fit(X, y, sample_weight=weights)
    model = DaskCRF(client=client, **params).fit(
        db.from_sequence(X, npartitions=3), db.from_sequence(y, npartitions=3),
        sample_weight=db.from_sequence(weights.tolist(), npartitions=3))
    _same_model(model, local, X)
    assert model.n_nonzero_ == local.n_nonzero_


def test_a_partition_may_lack_labels_of_the_others(client):
    X, y = _sequences(n=20, seed=3)
    y[:10] = [np.full(len(labels), "O") for labels in y[:10]]  # partition 0: "O" alone
    local = CRF(**PARAMS).fit(X, y)
    model = DaskCRF(client=client, **PARAMS).fit(
        db.from_sequence(list(zip(X, y)), npartitions=2))
    _same_model(model, local, X)


def test_multilabel_rows(client):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(60, 4))
    Y = (X @ rng.normal(size=(4, 3)) + rng.normal(size=(60, 3)) > 0).astype(int)
    local = CRF(**PARAMS).fit(X, Y)
    model = DaskCRF(client=client, **PARAMS).fit(
        db.from_sequence(list(zip(X, Y)), npartitions=3))
    assert model.output_kind_ == "multilabel"
    _same_model(model, local, X)
    predicted = model.predict(db.from_sequence(list(X), npartitions=2)).compute()
    np.testing.assert_array_equal(np.array(predicted), local.predict(X))


def test_predict_on_a_bag_and_the_local_model(client):
    X, y = _sequences(n=24, seed=5)
    model = DaskCRF(client=client, **PARAMS).fit(db.from_sequence(list(zip(X, y)),
                                                                  npartitions=2))
    local = model.to_local()
    assert type(local) is CRF and "client" not in local.get_params()
    assert not hasattr(local, "n_partitions_") and model.n_partitions_ == 2
    cloned = clone(model)
    assert cloned.client is client and not hasattr(cloned, "coef_")
    assert cloned.get_params()["alpha"] == PARAMS["alpha"]
    bag = db.from_sequence(X, npartitions=3)
    predicted = model.predict(bag)
    assert isinstance(predicted, db.Bag)
    for got, want in zip(predicted.compute(), local.predict(X)):
        np.testing.assert_array_equal(got, want)
    for got, want in zip(model.predict_marginals(bag).compute(), local.predict_marginals(X)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    restored = pickle.loads(pickle.dumps(model))
    assert restored.client is None
    for got, want in zip(restored.predict(X), local.predict(X)):
        np.testing.assert_array_equal(got, want)
    for got, want in zip(pickle.loads(pickle.dumps(local)).predict(X), local.predict(X)):
        np.testing.assert_array_equal(got, want)


def test_a_partition_that_raises_fails_the_fit_and_is_named(client):
    X, y = _sequences(n=12, seed=6)
    X[9] = np.full_like(X[9], np.nan)  # in partition 2 of 3 (items 8 .. 11)
    with pytest.raises(PartitionError, match=r"partition 2 \(of 3\).*ValueError") as info:
        DaskCRF(client=client, **PARAMS).fit(db.from_sequence(list(zip(X, y)),
                                                              npartitions=3))
    assert info.value.partition == 2
    X, y = _sequences(n=12, seed=6)
    y[1] = y[1][:-1] if len(y[1]) > 1 else np.array(["B", "I"])  # wrong length, partition 0
    with pytest.raises(PartitionError, match=r"partition 0 \(of 3\)"):
        DaskCRF(client=client, **PARAMS).fit(db.from_sequence(list(zip(X, y)),
                                                              npartitions=3))


def test_inputs_the_dask_crf_refuses(client):
    X, y = _sequences(n=6)
    with pytest.raises(TypeError, match="dask.bag.Bag"):
        DaskCRF(client=client).fit(list(zip(X, y)))
    with pytest.raises(ValueError, match="full-batch"):
        DaskCRF(client=client, solver="svrg").fit(db.from_sequence(list(zip(X, y))))
    with pytest.raises(ValueError, match="partitioned alike|partitions"):
        DaskCRF(client=client).fit(db.from_sequence(X, npartitions=2),
                                   db.from_sequence(y, npartitions=3))


def test_importing_skstruct_and_skstruct_dask_does_not_import_dask():
    code = ("import sys, skstruct, skstruct.dask; "
            "print(any(m == 'dask' or m.startswith(('dask.', 'distributed')) "
            "for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_a_worker_killed_mid_fit_changes_nothing(client):
    """One worker process is killed after the third iteration: its shards are rebuilt
    from their inputs on the survivor (or the restarted worker) and the fit gives the
    local model."""
    import os
    import signal

    X, y = _sequences(n=30, seed=8)
    local = CRF(**PARAMS).fit(X, y)
    killed = []

    def kill_one(n_iter, w, objective):
        if n_iter == 3 and not killed:
            pids = client.run(os.getpid)
            address, pid = sorted(pids.items())[0]
            os.kill(pid, signal.SIGKILL)
            killed.append(address)

    model = DaskCRF(client=client, callback=kill_one, **PARAMS).fit(
        db.from_sequence(list(zip(X, y)), npartitions=4))
    assert killed
    _same_model(model, local, X)
    client.wait_for_workers(2, timeout=60)


def _token_dicts(n=30, seed=9):
    rng = np.random.default_rng(seed)
    words = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "fast", "home"]
    X, y = [], []
    for _ in range(n):
        sentence = [words[i] for i in rng.integers(0, len(words), size=rng.integers(1, 7))]
        X.append([{"w": w, "suffix": w[-2:], "length": len(w), "tags": [w[0], "x"]}
                  for w in sentence])
        y.append(np.array(["N" if w in ("cat", "mat", "dog", "home") else "O"
                           for w in sentence]))
    return X, y


@pytest.mark.parametrize("sort", [True, False])
def test_feature_dicts_with_a_vocabulary_learned_by_a_distributed_pass(client, sort):
    from skstruct.preprocessing import SequenceVectorizer

    X, y = _token_dicts()
    vectorizer = SequenceVectorizer(sort=sort).fit(X)
    local = CRF(**PARAMS).fit(vectorizer.transform(X), y)
    model = DaskCRF(client=client, vectorizer=SequenceVectorizer(sort=sort), **PARAMS).fit(
        db.from_sequence(list(zip(X, y)), npartitions=3))
    assert model.vectorizer_.feature_names_ == vectorizer.feature_names_
    assert not hasattr(model.vectorizer, "feature_names_")  # the parameter stays unfitted
    _same_model(model, local, X)
    for got, want in zip(model.predict(X), local.predict(vectorizer.transform(X))):
        np.testing.assert_array_equal(got, want)
    predicted = model.predict(db.from_sequence(X, npartitions=2)).compute()
    for got, want in zip(predicted, local.predict(vectorizer.transform(X))):
        np.testing.assert_array_equal(got, want)


def test_feature_dicts_hashed(client):
    from skstruct.preprocessing import SequenceVectorizer

    X, y = _token_dicts(seed=10)
    X = [[{k: v for k, v in token.items() if k != "tags"} for token in x] for x in X]
    hasher = SequenceVectorizer(backend="hash", n_features=64)
    local = CRF(**PARAMS).fit(hasher.fit_transform(X), y)
    model = DaskCRF(client=client, vectorizer=hasher, **PARAMS).fit(
        db.from_sequence(X, npartitions=2), db.from_sequence(y, npartitions=2))
    _same_model(model, local, X)


def _generated_examples(indices, n_features=100):
    """Examples made on the worker from their indices alone (the client never holds
    them): sequences of 4 tokens, dense features."""
    out = []
    for i in indices:
        rng = np.random.default_rng(int(i))
        x = rng.normal(size=(4, n_features))
        out.append((x, np.where(x[:, 0] > 0, "B", "I")))
    return out


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_the_client_memory_does_not_grow_with_the_data(client):
    """The peak of the client's allocations during a fit (tracemalloc, numpy's arrays
    included) is the same for 1,000 and 10,000 sequences (3.2 and 32 MB of features on
    the workers), and far below the data."""
    import tracemalloc

    def fit_peak(n):
        bag = db.range(n, npartitions=4).map_partitions(_generated_examples)
        tracemalloc.start()
        try:
            DaskCRF(client=client, alpha=0.1, max_iter=5, tol=0).fit(bag)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    fit_peak(200)  # first-use costs (imports, caches) out of the way
    small, large = fit_peak(1_000), fit_peak(10_000)
    data = 10_000 * 4 * 100 * 8
    assert large < 0.1 * data, (small, large)
    assert large < 1.5 * small + 500_000, (small, large)


def test_the_cluster_page_example_runs(tmp_path):
    """The LocalCluster example of doc/user_guide/cluster.rst runs as a script and
    prints what the page says."""
    import re
    import textwrap
    from pathlib import Path

    page = Path(__file__).resolve().parent.parent / "doc" / "user_guide" / "cluster.rst"
    if not page.exists():
        pytest.skip("the documentation sources are not next to the tests")
    block = re.search(r"\.\. code-block:: python\n\n((?:    .*\n|\n)+)", page.read_text())
    script = tmp_path / "example.py"
    script.write_text(textwrap.dedent(block.group(1))
                      + "        print(len(tags), type(crf).__name__)\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", "200", "CRF"], out.stdout


def test_shard_tasks_share_their_worker_threads(client):
    """A worker of one thread holding two shards runs each shard's kernels on one
    thread, not numba's default of one per core (the tasks would oversubscribe)."""
    import distributed
    import numba

    from skstruct.dask._cluster import shard_threads
    from skstruct.dask._shards import value_and_gradient

    futures = client.map(lambda i: np.zeros(3) + i, range(4), pure=False)
    distributed.wait(futures, timeout=60)
    assert shard_threads(client, futures) == [1, 1, 1, 1]

    class Probe:  # a shard whose objective is the kernels' thread count
        scale = 1.0

        class risk:
            @staticmethod
            def value_and_gradient(w):
                return float(numba.get_num_threads()), np.zeros_like(w)

    if numba.config.NUMBA_NUM_THREADS > 1:
        assert value_and_gradient(Probe, 0, 1, np.zeros(2), 1)[0] == 1.0
    default = numba.get_num_threads()
    assert value_and_gradient(Probe, 0, 1, np.zeros(2), None)[0] == default
    assert numba.get_num_threads() == default
