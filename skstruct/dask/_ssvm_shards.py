"""What runs on the workers for :class:`~skstruct.dask.DaskStructuredSVM`: a shard's
structured-hinge risk, its share of the one-slack constraint at the weights the client
sends, one subgradient pass over it by the local solver, and its share of the objective.

Each function takes the shard, its partition's index and the number of partitions (so
that an error names the partition, :class:`~._shards.PartitionError`) and returns arrays
already multiplied by the shard's share ``scale`` of the total sample weight, so that a
tree of :func:`~._shards.add` gives the sums over the whole collection.
"""

import numpy as np

from ..optim import RegularizedRisk, run_solver
from ..optim._cutting_plane import LocalConstraintOracle
from ..optim._engine import compiled_problem, loss_rescaling
from ..utils._parallel import n_jobs_threads, single_threaded_blas
from ._shards import Shard, _encoded, _guard

__all__ = ["constraint_step", "hinge_term", "make_hinge_shard", "replay_cache", "subgradient_epoch"]


@_guard("building its training objective")
def make_hinge_shard(raw, index, n_partitions, spec):
    """The :class:`~._shards.Shard` of a :class:`~._shards.RawShard` for the structured
    SVM: outputs encoded against the classes of all partitions and checked against the
    decoder and the task loss (the local fit's checks), the risk of the hinge with the
    L2 strength ``spec["alpha"]`` (which the subgradient steps read; the constraints do
    not)."""
    y = _encoded(raw, spec["classes"], spec["name"])
    decoder, loss = spec["decoder"], spec["loss"]
    decoder.check_outputs(y, raw.batch.output_offsets)
    decoder.check_training_memory(raw.batch.n_sequences)
    raw.kind.check_task_loss(loss.task_loss, y, raw.batch, spec["classes"])
    raw.kind.check_training_memory(loss.task_loss, decoder, spec["features"], raw.batch, y,
                                   np.zeros(spec["features"].n_params))
    risk = RegularizedRisk(spec["features"], raw.batch, y, decoder, loss, spec["alpha"],
                           raw.sample_weight)
    return Shard(index, risk, float(raw.sample_weight.sum()) / spec["total_weight"])


def _oracle(shard, cache_size):
    """The shard's :class:`~skstruct.optim._cutting_plane.LocalConstraintOracle`, made
    on first use and kept with the shard (whichever copy of the shard a worker holds:
    the oracle depends on the shard alone; its cache is restored by each call)."""
    oracle = getattr(shard, "constraint_oracle", None)
    if oracle is None or shard.constraint_cache_size != cache_size:
        oracle = LocalConstraintOracle(shard.risk, cache_size)
        shard.constraint_oracle, shard.constraint_cache_size = oracle, cache_size
        shard.empty_cache = oracle.cache_state()
    return oracle


@_guard("finding its most violated constraint")
def constraint_step(shard, index, n_partitions, w, cache, cache_size, use_cache,
                    n_jobs=None):
    """The partition's share of the one-slack constraint at ``w``.

    Parameters
    ----------
    w : ndarray of shape (n_params,)
    cache : dict or None
        The partition's inference cache as the previous decoder call left it (a
        :meth:`~skstruct.optim._cutting_plane.LocalConstraintOracle.cache_state`), None
        before the first or without a cache.
    cache_size : int
    use_cache : bool
        Take each example's best cached output instead of calling the decoder.

    Returns
    -------
    sums : tuple
        scale × Σ_{i ∈ p} ω_i max(h_i, 0) (ω the weights normalized over the
        partition), scale × Δ̄_p (the loss of the partition's plane) and scale × ψ̄_p
        (ndarray of shape (n_params,)).
    cache : dict or None
        The cache after the call (the decoder's outputs added), None without one.

    The cache goes in and out of every call instead of staying with the shard, so that
    the constraints do not depend on which copy of a shard (Dask may hold several, or
    rebuild one after a lost worker) a task runs on.
    """
    oracle = _oracle(shard, cache_size)
    if cache_size:
        oracle.restore_cache(shard.empty_cache if cache is None else cache)
    with single_threaded_blas(), n_jobs_threads(n_jobs):
        hinge = oracle.evaluate(w, use_cache=bool(use_cache))
        plane, loss = oracle.constraint()
    scale = shard.scale
    sums = (scale * hinge, scale * loss, scale * np.asarray(plane, dtype=np.float64))
    return sums, (oracle.cache_state() if cache_size else None)


@_guard("rebuilding its inference cache")
def replay_cache(shard, index, n_partitions, history, cache_size, n_jobs=None):
    """The partition's inference cache after the decoder calls at the weights
    ``history`` (ndarray of shape (n_calls, n_params), in their order), from an empty
    one: the cache :func:`constraint_step` had left, rebuilt after it was lost with a
    worker (the decoder's outputs at given weights do not depend on the cache)."""
    oracle = _oracle(shard, cache_size)
    oracle.restore_cache(shard.empty_cache)
    with single_threaded_blas(), n_jobs_threads(n_jobs):
        for w in history:
            oracle.evaluate(np.ascontiguousarray(w), use_cache=False)
    return oracle.cache_state()


@_guard("evaluating the objective")
def hinge_term(shard, index, n_partitions, w, n_jobs=None):
    """The partition's share of the data term, scale × Σ_{i ∈ p} ω_i H_i(w), as the
    local subgradient solver evaluates it (one compiled pass, or the loss's values)."""
    risk = shard.risk
    with single_threaded_blas(), n_jobs_threads(n_jobs):
        known, rescaling = loss_rescaling(risk.loss)
        problem = compiled_problem(risk, rescaling) if known else None
        if problem is not None:
            return (shard.scale * problem.hinge_primal(w, risk.weights, 0.0),)
        scores = risk.features.scores(risk.batch, w)
        values = risk.loss.values(risk.decoder, scores, risk.y, risk.gold(scores),
                                  **risk._loss_options())
    return (shard.scale * float(risk.weights @ values),)


def _order_stream(shard, seed, epoch):
    """The random state whose next permutation is the partition's order in ``epoch``:
    ``RandomState(seed)`` after ``epoch`` permutations of the partition's examples,
    kept with the shard from one epoch to the next (replayed from the seed when the
    shard is new, e.g. rebuilt after a lost worker, or the epoch is redone)."""
    kept = getattr(shard, "order_stream", None)
    if kept is not None and kept[0] == seed and kept[1] == epoch:
        return kept[2]
    rng = np.random.RandomState(seed)
    for _ in range(epoch):
        rng.permutation(shard.risk.n_examples)
    return rng


@_guard("its subgradient pass")
def subgradient_epoch(shard, index, n_partitions, start, seed, epoch, options,
                      n_jobs=None):
    """One pass of the local solver ``"subgradient"`` over the partition from the mixed
    state ``start``.

    Parameters
    ----------
    start : dict
        ``{}`` on the first epoch (start from ``options["w0"]`` and
        ``options["first_step"]``), else the state the local solver continues from: the
        raw iterate ``w``, the average ``w_avg`` (or None), the step counter ``step``
        and ``first_step``.
    seed : int
        The partition's seed: its examples are visited in the order of the
        ``epoch``-th permutation of ``RandomState(seed)`` (0: the first).
    epoch : int
    options : dict
        ``averaging``, ``shuffle``, ``w0``, ``first_step``.

    Returns
    -------
    w, w_avg : ndarray of shape (n_params,)
        scale × the raw iterate and scale × the average after the pass (zeros without
        averaging).
    step : float
        scale × the step counter after the pass.
    """
    state = {key: (np.array(value, dtype=np.float64) if isinstance(value, np.ndarray)
                   else value) for key, value in start.items()}
    rng = _order_stream(shard, seed, epoch) if options["shuffle"] else None
    result = run_solver("subgradient", shard.risk, np.array(options["w0"], dtype=np.float64),
                        dict(max_iter=1, tol=0.0, averaging=options["averaging"],
                             random_state=rng, shuffle=options["shuffle"],
                             first_step=options["first_step"], state=state),
                        n_jobs=n_jobs)
    if rng is not None:
        shard.order_stream = (seed, epoch + 1, rng)
    after = result.extra["state"]
    scale = shard.scale
    raw = scale * np.asarray(after["w"], dtype=np.float64)
    average = (scale * np.asarray(after["w_avg"], dtype=np.float64) if options["averaging"]
               else np.zeros_like(raw))
    return raw, average, scale * float(after["step"])
