"""The structured SVM on a Dask cluster: the one-slack cutting plane with its constraints
summed over the partitions, and the subgradient solver by iterative parameter mixing.

The client runs the local cutting-plane solver
(:func:`~skstruct.optim.minimize_cutting_plane`) unchanged: it reads its constraints
from :class:`DistributedConstraints`, which sends ``w`` to the workers and sums the
partitions' shares (:func:`~._ssvm_shards.constraint_step`) as a tree. The mixing loop
(:func:`mix_subgradient`) runs one local subgradient pass per partition per epoch
(:func:`~._ssvm_shards.subgradient_epoch`) and averages the results.
"""

from types import SimpleNamespace

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import StrOptions

from .._ssvm import StructuredSVM
from ..losses import StructuredHingeLoss
from ..optim import OptimizeResult, run_solver
from ..optim._result import STOPPED_BY_CALLBACK
from ..optim._progress import Progress
from ._cluster import send_weights, tree_reduce, with_retries
from ._estimators import (_DASK_CONSTRAINTS, _FIT_DOC, _DaskMixin,
                          _NotDistributedPartialFit)
from ._shards import add
from ._ssvm_shards import (constraint_step, hinge_term, make_hinge_shard, replay_cache,
                           subgradient_epoch)

__all__ = ["DaskStructuredSVM", "DistributedConstraints", "DistributedHingeRisk",
           "mix_subgradient"]

#: The solvers of DaskStructuredSVM: full-batch, and by parameter mixing.
DASK_SSVM_SOLVERS = ("cutting_plane", "subgradient")


class _Shards:
    """The futures of the shards on the workers, with their partitions' indices."""

    def __init__(self, client, shards, indices, n_partitions, retries=3):
        self.client, self.shards, self.indices = client, shards, indices
        self.n_partitions, self.retries = n_partitions, retries
        self.counter = {}

    def _submit(self, function, w, args, per_shard):
        sent = send_weights(self.client, w)
        return [self.client.submit(function, shard, i, self.n_partitions, sent,
                                   *(() if per_shard is None else (per_shard[i],)),
                                   *args, pure=False)
                for shard, i in zip(self.shards, self.indices)]

    def reduce(self, function, w, *args, per_shard=None):
        """The sum over the shards of ``function(shard, index, n_partitions, w, *args)``
        (with ``per_shard``, a dict by partition index: ``function(shard, index,
        n_partitions, w, per_shard[index], *args)``), tuples added by
        :func:`~._shards.add` as a tree, ``w`` sent once to every worker; redone after
        a lost worker (:func:`~._cluster.with_retries`)."""
        def run():
            parts = self._submit(function, w, args, per_shard)
            return tree_reduce(self.client, parts, add).result()
        return with_retries(run, self.retries, self.counter)

    def reduce_and_keep(self, function, w, *args, per_shard=None, before_redo=None):
        """As :meth:`reduce` for a ``function`` that returns (sums, kept): the sum of
        the sums, and the futures of each partition's ``kept`` (a dict by partition
        index), which stay on the workers. ``per_shard`` may be a callable, called for
        the dict at each attempt; ``before_redo`` is called before a redo."""
        from operator import getitem

        def run():
            steps = self._submit(function, w, args,
                                 per_shard() if callable(per_shard) else per_shard)
            sums = [self.client.submit(getitem, step, 0, pure=False) for step in steps]
            kept = {i: self.client.submit(getitem, step, 1, pure=False)
                    for i, step in zip(self.indices, steps)}
            return tree_reduce(self.client, sums, add).result(), kept
        return with_retries(run, self.retries, self.counter, before_redo)


class DistributedConstraints:
    """The cutting plane's oracle (the protocol of
    :class:`~skstruct.optim._cutting_plane.LocalConstraintOracle`) summed over shards.

    Each :meth:`evaluate` sends ``w`` to the workers; every shard p runs its local
    oracle on its examples (loss-augmented inference by the compiled pass where the
    local fit has it) and returns scale_p × (Σ_{i ∈ p} ω_i⁽ᵖ⁾ max(h_i, 0), Δ̄_p, ψ̄_p),
    with ω⁽ᵖ⁾ the weights normalized over the partition and scale_p its share of the
    total sample weight; the tree of sums is the constraint of all examples, with
    ω_i = scale_p ω_i⁽ᵖ⁾ the weights normalized over the collection.

    With an inference cache (``cache_size`` outputs per example), each partition's
    cache is a value on the workers that every decoder call turns into the next
    (:func:`~._ssvm_shards.constraint_step`): the client holds its futures, not its
    contents, and the weights of the decoder calls so far (one vector per call, as
    many as the working set's planes). When an evaluation is redone after a lost
    worker, every partition's cache is rebuilt by replaying those calls
    (:func:`~._ssvm_shards.replay_cache`), so that the constraints are the local fit's
    whatever the workers do.
    """

    compiled = False

    def __init__(self, shards, cache_size, n_jobs=None):
        self.shards, self.cache_size, self.n_jobs = shards, cache_size, n_jobs
        self.n_decoder_calls = 0
        self.n_evaluations = 0
        self._caches = {}
        self._history = []
        self._constraint = None

    @property
    def has_cache(self):
        return bool(self.cache_size) and self.n_decoder_calls > 0

    def evaluate(self, w, use_cache):
        w = np.ascontiguousarray(w, dtype=np.float64)
        (hinge, loss, plane), kept = self.shards.reduce_and_keep(
            constraint_step, w, self.cache_size, bool(use_cache), self.n_jobs,
            per_shard=lambda: {i: self._caches.get(i) for i in self.shards.indices},
            before_redo=self._replay_caches)
        self.n_evaluations += 1
        if not use_cache:
            self.n_decoder_calls += 1
            if self.cache_size:
                self._caches = kept
                self._history.append(w.copy())
        self._constraint = (np.asarray(plane, dtype=np.float64), float(loss))
        return float(hinge)

    def _replay_caches(self):
        """Every partition's cache rebuilt from the decoder calls so far (futures)."""
        if not self._history:
            self._caches = {}
            return
        shards = self.shards
        client = shards.client
        history = client.scatter([np.stack(self._history)], hash=False)[0]
        self._caches = {i: client.submit(replay_cache, shard, i, shards.n_partitions,
                                         history, self.cache_size, self.n_jobs,
                                         pure=False)
                        for shard, i in zip(shards.shards, shards.indices)}

    def constraint(self):
        return self._constraint


class DistributedHingeRisk:
    """The client's stand-in of :class:`~skstruct.optim.RegularizedRisk` for the
    cutting plane: ``alpha``, ``loss``, ``n_params``, ``n_examples`` and the oracle
    :meth:`cutting_plane_oracle`, so that ``run_solver("cutting_plane", ...)`` runs the
    local solver on the client."""

    def __init__(self, shards, loss, alpha, n_params, n_examples, n_jobs=None):
        self.shards, self.loss, self.alpha = shards, loss, float(alpha)
        self.n_params, self.n_examples, self.n_jobs = n_params, n_examples, n_jobs
        self.oracle = None

    def compiled_objective(self):
        """None: evaluated through the oracle."""
        return None

    def cutting_plane_oracle(self, cache_size):
        """A :class:`DistributedConstraints` with ``cache_size`` outputs per example."""
        self.oracle = DistributedConstraints(self.shards, cache_size, self.n_jobs)
        return self.oracle


def partition_seeds(random_state, indices):
    """The seed of each partition's orders: r + p (modulo 2³²) for partition p, r the
    integer ``random_state`` (or an integer drawn from it), so that one partition
    visits its examples in the orders of the local solver with the same seed."""
    if isinstance(random_state, (int, np.integer)):
        base = int(random_state)
    else:
        base = int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
    return {i: (base + i) % 2 ** 32 for i in indices}


def mix_subgradient(shards, w0, *, alpha, max_iter, tol, averaging, shuffle,
                    random_state, first_step, n_examples, verbose=0, callback=None,
                    n_jobs=None):
    """Iterative parameter mixing of the local subgradient solver.

    Epoch e = 1, 2, ... starts from the mixed state (w⁽ᵉ⁻¹⁾, w̄⁽ᵉ⁻¹⁾, t⁽ᵉ⁻¹⁾); every
    partition p runs one pass of the local ``"subgradient"`` solver over its examples
    from it (Pegasos steps η_t = 1 / (λ (t + 2)) continuing from t⁽ᵉ⁻¹⁾, the running
    average continuing from w̄⁽ᵉ⁻¹⁾), ending at (w_p, w̄_p, t_p); the mixed state is
    their mean weighted by the partitions' shares μ_p of the sample weight,
    w⁽ᵉ⁾ = Σ_p μ_p w_p, w̄⁽ᵉ⁾ = Σ_p μ_p w̄_p, t⁽ᵉ⁾ = round(Σ_p μ_p t_p). After each epoch
    the objective P of the model (w̄⁽ᵉ⁾ with averaging, else w⁽ᵉ⁾) over all examples
    is one more distributed pass; the loop stops when it decreased by at most
    ``tol`` × P (the local solver's rule) or after ``max_iter`` epochs.

    Returns
    -------
    OptimizeResult
        ``objective_curve`` the P of each epoch, ``n_evaluations`` and ``extra["t"]``
        the step counter reached, ``extra["oracle_calls"]`` n per epoch.
    """
    w0 = np.asarray(w0, dtype=np.float64)
    seeds = partition_seeds(random_state, shards.indices)
    options = {"averaging": averaging, "shuffle": shuffle, "w0": w0,
               "first_step": int(first_step)}
    progress = Progress(verbose, callback, print, unit="epoch", max_iter=max_iter)
    state = {}
    current = w0
    message, converged = "maximum number of epochs reached", False
    step = int(first_step)
    for epoch in range(max_iter):
        raw, average, steps = shards.reduce(subgradient_epoch, state, epoch, options,
                                            n_jobs, per_shard=seeds)
        step = int(round(steps))
        state = {"w": raw, "w_avg": average if averaging else None, "step": step,
                 "first_step": int(first_step)}
        current = average if averaging else raw
        (data,) = shards.reduce(hinge_term, current, n_jobs)
        value = float(data) + 0.5 * alpha * float(current @ current)
        if progress.report(current, value):
            message, converged = STOPPED_BY_CALLBACK, False
            break
        curve = progress.curve
        if tol > 0 and len(curve) > 1 and curve[-2] - value <= tol * abs(curve[-2]):
            message, converged = "relative decrease below tol", True
            break
    return OptimizeResult(
        w=np.array(current, dtype=np.float64), n_iter=progress.n_iter,
        converged=converged, objective_curve=progress.curve, message=message,
        n_evaluations=step,
        extra={"t": step, "oracle_calls": [n_examples * (k + 1)
                                           for k in range(progress.n_iter)]})


class DaskStructuredSVM(_NotDistributedPartialFit, _DaskMixin, StructuredSVM):
    """:class:`~skstruct.StructuredSVM` trained on a Dask cluster.

    ``solver="cutting_plane"`` (the default): the local one-slack cutting plane, run on
    the client, its most violated constraint found on the workers. Each iteration sends
    ``w`` to the workers; every partition runs loss-augmented inference on its shard
    (the local fit's compiled pass where it has one) and returns its share of the
    constraint, μ_p × (Σ_{i ∈ p} ω_i⁽ᵖ⁾ max(h_i, 0), Δ̄_p, ψ̄_p) (ω⁽ᵖ⁾ the weights
    normalized over the partition, μ_p = Σ_{i ∈ p} s_i / Σ_i s_i its share of the
    sample weight), summed as a tree; the client adds the plane to its working set and
    solves the QP by the local code. The constraints are those of the local fit on the
    concatenated data up to the order of the sums, and so are the iterates (near the
    optimum, the QP of an ill-conditioned working set may amplify that rounding into a
    few iterations more or fewer) and the model. The inference caches of slack
    rescaling and count losses stay on the workers (:class:`DistributedConstraints`).

    ``solver="subgradient"``: iterative parameter mixing (McDonald, Hall & Mann 2010)
    of the local subgradient solver. Epoch e starts from the mixed state (w⁽ᵉ⁻¹⁾, its
    running average w̄⁽ᵉ⁻¹⁾, the step counter t⁽ᵉ⁻¹⁾; zero at first, or the previous
    model and ``t_`` with ``warm_start``); each non-empty partition p makes one pass of
    Pegasos steps over its examples from it (the local solver, ``max_iter=1``: the
    partition's objective, its weights normalized over it), giving (w_p, w̄_p, t_p);
    the mixed state is their mean weighted by the partitions' shares of the total
    sample weight μ_p = Σ_{i ∈ p} s_i / Σ_i s_i (n_p / n without sample weights):
    w⁽ᵉ⁾ = Σ_p μ_p w_p, w̄⁽ᵉ⁾ = Σ_p μ_p w̄_p, t⁽ᵉ⁾ = round(Σ_p μ_p t_p). The model is
    w̄⁽ᴱ⁾ (``averaging=True``) or w⁽ᴱ⁾. After every epoch the objective of the model
    over all examples is evaluated on the workers, and the fit stops when an epoch
    decreased it by at most a relative ``tol``, or after ``max_iter`` epochs. Partition
    p visits its examples in the orders of successive permutations of
    ``numpy.random.RandomState(r + p)`` (r the integer ``random_state``, or one drawn
    from it), or in their order with ``shuffle=False``: the model depends on the
    partitioning and the seed only, and with one partition it is the local
    ``StructuredSVM(solver="subgradient")`` pass by pass (the same orders, steps and
    average).

    BCFW is not offered: its dual blocks belong to single examples and its iterate is
    their sum, which averaging the partitions' iterates would not keep.

    Parameters
    ----------
    client, vectorizer
        As for :class:`DaskCRF`.
    solver : {"cutting_plane", "subgradient"}, default="cutting_plane"
    **params
        The other parameters of :class:`~skstruct.StructuredSVM` (``n_jobs``: the
        kernel threads of each worker's task; ``max_iter``: decoder calls of the
        cutting plane, epochs of the mixing).

    Attributes
    ----------
    n_partitions_ : int
        Partitions of the training collection.
    n_evaluations_ : int
        Round trips to the workers: the constraints evaluated (``"cutting_plane"``,
        from the decoder or the cache), or two per epoch (``"subgradient"``: the pass
        and the objective).
    vectorizer_ : transformer
        With a ``vectorizer``: the fitted one.
    The fitted attributes of :class:`~skstruct.StructuredSVM`.

    References
    ----------
    Joachims, Finley & Yu (2009). Cutting-plane training of structural SVMs. Machine
    Learning 77(1).
    McDonald, Hall & Mann (2010). Distributed training strategies for the structured
    perceptron. NAACL-HLT.
    """

    _local_class = StructuredSVM
    _parameter_constraints = {**StructuredSVM._parameter_constraints,
                              "solver": [StrOptions(set(DASK_SSVM_SOLVERS))],
                              **_DASK_CONSTRAINTS}

    def __init__(self, decoder=None, *, client=None, vectorizer=None, loss="hamming",
                 rescaling="margin", alpha=1e-2, solver="cutting_plane", max_iter=100,
                 tol=1e-3, averaging=True, random_state=None, verbose=0,
                 warm_start=False, n_jobs=None, callback=None, shuffle=True):
        super().__init__(decoder, loss=loss, rescaling=rescaling, alpha=alpha,
                         solver=solver, max_iter=max_iter, tol=tol, averaging=averaging,
                         random_state=random_state, verbose=verbose,
                         warm_start=warm_start, n_jobs=n_jobs, callback=callback,
                         shuffle=shuffle)
        self.client = client
        self.vectorizer = vectorizer

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        self._check_fit_parameters(False)
        client = self._get_client()
        data = self._read(client, X, y, sample_weight)
        kind, classes, n_features, decoder, features = self._model_pieces(data)
        task_loss = kind.bind_task_loss(self.loss, classes)
        loss = StructuredHingeLoss(task_loss, self.rescaling)
        spec = self._spec(classes, decoder, features, loss, data)
        spec["alpha"] = self.alpha
        futures = data.shards(spec, build=make_hinge_shard)
        shards = _Shards(client, futures, data.indices, data.n_partitions)
        w0 = self._initial_params(features, kind, classes, n_features)
        n_examples = data.summary["n_examples"]
        if self.solver == "cutting_plane":
            risk = DistributedHingeRisk(shards, loss, self.alpha, features.n_params,
                                        n_examples, self.n_jobs)
            run = SimpleNamespace(solver=self.solver, partial_fit=False)
            result = run_solver(self.solver, risk, w0, self._training_options(run))
            n_evaluations = risk.oracle.n_evaluations
        else:
            result = mix_subgradient(
                shards, w0, alpha=self.alpha, max_iter=self.max_iter, tol=self.tol,
                averaging=self.averaging, shuffle=self.shuffle,
                random_state=self.random_state,
                first_step=getattr(self, "t_", 0) if self.warm_start else 0,
                n_examples=n_examples, verbose=self.verbose, callback=self.callback,
                n_jobs=self.n_jobs)
            n_evaluations = 2 * result.n_iter
        del futures, shards
        run = SimpleNamespace(solver=self.solver, partial_fit=False, task_loss=task_loss)
        self._warn_after_training(run, result)
        self._finish(kind, classes, n_features, features, decoder, result, data)
        self._store_results(run, result)
        self._reset_partial_state(np.array([data.summary["weight"]]))
        self.n_evaluations_ = int(n_evaluations)
        return self

    fit.__doc__ = _FIT_DOC

