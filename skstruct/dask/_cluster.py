"""The client's side of a distributed fit: the training collection turned into shards
kept on the workers, tree reductions over them, and the objective the local solvers
minimize.

Nothing here holds a partition's features: the client sends tasks and weight vectors
and receives summaries, seen-pair matrices and (value, gradient) sums.
"""

import numpy as np

from ._shards import (PartitionError, add, either, make_shard, merge_summaries,
                      read_partition, seen_pairs_of, summarize, value_and_gradient,
                      vocabulary_tokens)

__all__ = ["DistributedData", "fit_vectorizer", "DistributedRisk", "get_client", "is_dask_collection",
           "send_weights", "shard_threads", "sum_over_shards", "tree_reduce",
           "with_retries"]


def is_dask_collection(X):
    """Whether ``X`` is a Dask collection (without importing Dask for other inputs)."""
    return callable(getattr(X, "__dask_graph__", None))


def get_client(client):
    """``client``, or the current ``dask.distributed`` client when None."""
    if client is not None:
        return client
    from distributed import get_client as current
    try:
        return current()
    except ValueError:
        raise ValueError("No dask.distributed client: pass client=Client(...) or create "
                         "one first (Client() makes it the default).") from None


def _partitions(collection, what):
    import dask.bag as db

    if not isinstance(collection, db.Bag):
        raise TypeError(f"{what} must be a dask.bag.Bag (one item per example); got "
                        f"{type(collection).__name__}. Turn a list into one with "
                        "dask.bag.from_sequence(items, npartitions=...).")
    return collection.to_delayed(optimize_graph=True)


def tree_reduce(client, futures, function):
    """The future of ``function`` applied pairwise over ``futures``, as a binary tree:
    ⌈log₂ n⌉ levels, each task on the workers; the pairing (and so the order of the
    sums) depends on the number of futures only."""
    futures = list(futures)
    if not futures:
        raise ValueError("nothing to reduce")
    while len(futures) > 1:
        paired = [client.submit(function, futures[i], futures[i + 1], pure=False)
                  for i in range(0, len(futures) - 1, 2)]
        if len(futures) % 2:
            paired.append(futures[-1])
        futures = paired
    return futures[0]


def fit_vectorizer(client, X, paired, vectorizer):
    """``vectorizer`` fitted for the collection ``X``: as it is when fitted already; an
    unfitted :class:`~skstruct.preprocessing.SequenceVectorizer` (or any vectorizer of
    token feature dicts) fitted on the distinct features of every partition, found by a
    distributed pass (:func:`~._shards.vocabulary_tokens`: the client receives the
    vocabulary, not the data) and concatenated in partition order."""
    import dask
    from sklearn.base import clone
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    if vectorizer is None:
        return None
    try:
        check_is_fitted(vectorizer)
        return vectorizer
    except NotFittedError:
        pass
    parts = _partitions(X, "X")
    n = len(parts)
    task = dask.delayed(vocabulary_tokens, pure=False)
    found = client.compute([task(parts[i], i, n, paired) for i in range(n)], sync=True)
    tokens = [token for part in found for token in part]
    if not tokens:
        raise ValueError("The training collection holds no token features.")
    return clone(vectorizer).fit([tokens])


class DistributedData:
    """A training collection read on the workers: one :class:`~._shards.RawShard` per
    non-empty partition, kept there, and the summary of all of them.

    Parameters
    ----------
    client : distributed.Client
    X : dask.bag.Bag
        (x, y) pairs, or the inputs alone when ``y`` is given.
    y, sample_weight : dask.bag.Bag or None
        Partitioned as ``X``.
    estimator : an unfitted local estimator
        Whose checks validate each partition (on the workers).
    vectorizer : transformer or None
        Applied to each partition's inputs on the workers.
    """

    def __init__(self, client, X, y, sample_weight, estimator, vectorizer):
        import dask

        self.client = client
        parts = _partitions(X, "X")
        n = len(parts)
        labels = [None] * n if y is None else _partitions(y, "y")
        weights = ([None] * n if sample_weight is None
                   else _partitions(sample_weight, "sample_weight"))
        for other, what in ((labels, "y"), (weights, "sample_weight")):
            if len(other) != n:
                raise ValueError(f"X has {n} partitions but {what} has {len(other)}; they "
                                 "must be partitioned alike.")
        read = dask.delayed(read_partition, pure=False)
        self.n_partitions = n
        raws = client.compute([read((parts[i], labels[i], weights[i]), i, n, estimator,
                                    vectorizer) for i in range(n)])
        summary = tree_reduce(client, client.map(summarize, raws, pure=False),
                              merge_summaries).result()
        if summary is None:
            raise ValueError("The training collection holds no examples.")
        self.summary = summary
        kept = set(summary["partitions"])
        self.indices = [i for i in range(n) if i in kept]
        self.raws = [raws[i] for i in self.indices]

    def seen_pairs(self, classes):
        """The (feature, label) pairs seen in any partition, as one boolean matrix."""
        n = self.n_partitions
        seen = [self.client.submit(seen_pairs_of, raw, i, n, classes, pure=False)
                for raw, i in zip(self.raws, self.indices)]
        return tree_reduce(self.client, seen, either).result()

    def shards(self, spec, build=make_shard):
        """Futures of the :class:`~._shards.Shard` of every non-empty partition (built
        by ``build(raw, index, n_partitions, spec)``, and waited for, on the workers);
        the raw shards are released."""
        from distributed import wait

        n = self.n_partitions
        shards = [self.client.submit(build, raw, i, n, spec, pure=False)
                  for raw, i in zip(self.raws, self.indices)]
        wait(shards)
        for shard in shards:
            if shard.status == "error":
                shard.result()  # raises the partition's error
        self.raws = None
        return shards


def shard_threads(client, shards):
    """The kernel threads of each shard's task: its worker's threads shared among the
    shards of the fit it holds, at least one.

    Dask runs a worker's tasks on its threads at once, so kernels that took every core
    of the machine in each task would multiply the threads by the tasks: a worker of
    ``nthreads`` threads holding ``k`` shards gives each ``max(1, nthreads // k)``
    (one for the workers of ``LocalCluster(threads_per_worker=1)``).
    """
    holders = client.who_has(shards)
    nthreads = client.nthreads()
    per_worker = {}
    for shard in shards:
        for worker in holders.get(shard.key, ())[:1]:
            per_worker[worker] = per_worker.get(worker, 0) + 1
    threads = []
    for shard in shards:
        worker = next(iter(holders.get(shard.key, ())), None)
        if worker is None or worker not in nthreads:
            threads.append(1)
        else:
            threads.append(max(1, nthreads[worker] // per_worker[worker]))
    return threads


def _weights(w):
    return w


def send_weights(client, w):
    """The future of the weight vector ``w`` for the tasks of one iteration.

    ``w`` travels inside a task (held by one worker, fetched by the others that need
    it), not as scattered data: the scheduler recomputes a task from its inputs when the
    worker holding its result is lost, where broadcasting scattered data to a worker
    that has just died can wait forever.
    """
    import dask

    with dask.config.set({"distributed.admin.large-graph-warning-threshold": "4GB"}):
        return client.submit(_weights, w, pure=False)


def with_retries(call, retries, counter, before_redo=None):
    """``call()``, redone up to ``retries`` times when it fails for a reason other than
    a partition's own error (a lost worker, whose shards Dask rebuilds from their
    inputs), after ``before_redo()`` when given; ``counter`` (a dict) counts the redos
    under ``"redone"``. A :class:`~._shards.PartitionError` is raised at once."""
    for attempt in range(retries + 1):
        try:
            return call()
        except PartitionError:
            raise
        except Exception:  # noqa: BLE001 - a lost worker or connection: redo
            if attempt == retries:
                raise
            counter["redone"] = counter.get("redone", 0) + 1
            if before_redo is not None:
                before_redo()


def sum_over_shards(client, function, shards, indices, n_partitions, w, args=(),
                    shard_args=None, retries=3):
    """Σ_k ``function(shards[k], indices[k], n_partitions, w, *shard_args[k], *args)``,
    summed by :func:`tree_reduce` on the workers, and the number of attempts redone
    (:func:`with_retries`)."""
    if shard_args is None:
        shard_args = [()] * len(shards)

    def run():
        sent = send_weights(client, w)
        parts = [client.submit(function, shard, i, n_partitions, sent, *own, *args,
                               pure=False)
                 for shard, i, own in zip(shards, indices, shard_args)]
        return tree_reduce(client, parts, add).result()

    counter = {}
    total = with_retries(run, retries, counter)
    return total, counter.get("redone", 0)


class DistributedRisk:
    """F(w) = Σ_p scale_p F_p(w) + (α / 2) ‖w‖², the sum over shards on the workers.

    The client-side stand-in of :class:`~skstruct.optim.RegularizedRisk` for the
    full-batch solvers, which read ``value_and_gradient``, ``loss``, ``n_params``,
    ``n_examples`` and ``compiled_objective`` only: a local solver (the registry's
    ``"lbfgs"``, ``"owlqn"``, ``"lbfgsb"``) runs on the client unchanged. Each
    evaluation sends ``w`` (:func:`send_weights`), runs one
    task per shard (its kernels on :func:`shard_threads` threads) and sums their (value, gradient) pairs by :func:`tree_reduce`; an
    evaluation that fails for a reason other than a partition's own error (a worker lost,
    its shards rebuilt by Dask from their inputs) is redone, up to ``retries`` times.
    """

    def __init__(self, client, shards, indices, n_partitions, loss, alpha, n_params,
                 n_examples, retries=3):
        self.client, self.shards, self.indices = client, shards, indices
        self.threads = shard_threads(client, shards)
        self.n_partitions = n_partitions
        self.loss, self.alpha = loss, float(alpha)
        self.n_params, self.n_examples = n_params, n_examples
        self.retries = retries
        self.n_evaluations = 0
        self.n_redone = 0

    def compiled_objective(self):
        """None: evaluated through :meth:`value_and_gradient`."""
        return None

    def data_term(self, w):
        """Σ_p scale_p (value_p, gradient_p): the weighted mean loss and its gradient."""
        w = np.ascontiguousarray(w, dtype=np.float64)
        (value, gradient), redone = sum_over_shards(
            self.client, value_and_gradient, self.shards, self.indices, self.n_partitions,
            w, shard_args=[(threads,) for threads in self.threads], retries=self.retries)
        self.n_evaluations += 1
        self.n_redone += redone
        return float(value), np.asarray(gradient, dtype=np.float64)

    def value_and_gradient(self, w):
        """F(w) and ∇F(w), as :meth:`RegularizedRisk.value_and_gradient
        <skstruct.optim.RegularizedRisk.value_and_gradient>` computes them from the
        data term."""
        w = np.ascontiguousarray(w, dtype=np.float64)
        value, gradient = self.data_term(w)
        return value + 0.5 * self.alpha * float(w @ w), gradient + self.alpha * w
