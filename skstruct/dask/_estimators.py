"""The Dask estimators: the local estimators' hooks, their training spread over the
partitions of a ``dask.bag``.

Each estimator is a subclass of the local one with two more parameters, ``client`` and
``vectorizer``. ``fit`` takes Dask collections and reads them on the workers
(:class:`~._cluster.DistributedData`); the model it learns is the local estimator's
fitted attributes, so ``predict`` on local data, pickling and :meth:`to_local` work as
for the local estimator, and ``predict`` on a ``dask.bag`` maps over its partitions.
"""

from types import SimpleNamespace

import numpy as np
from sklearn.base import _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import HasMethods
from sklearn.utils.validation import check_is_fitted

from .._crf import CRF
from .._elastic_net import check_label_pairs
from .._sparsemap import SparseMAPClassifier
from .._ssvm import StructuredPerceptron
from ..features import feature_map_hook
from ..losses import CRFLoss, PerceptronLoss, SparseMAPLoss
from ..optim import OptimizeResult, run_solver
from ..optim._result import STOPPED_BY_CALLBACK
from ..optim._progress import Progress
from ._cluster import (DistributedData, DistributedRisk, fit_vectorizer, get_client,
                       is_dask_collection, shard_threads, sum_over_shards)
from ._shards import perceptron_epoch

__all__ = ["DaskCRF", "DaskSparseMAPClassifier", "DaskStructuredPerceptron"]

#: The solvers that read the objective through ``value_and_gradient`` alone.
FULL_BATCH_SOLVERS = ("lbfgs", "lbfgsb", "owlqn")

#: Fitted attributes of the Dask estimators only, which the local model does not get.
_DASK_ATTRIBUTES = ("vectorizer_", "n_partitions_", "n_evaluations_")

_DASK_CONSTRAINTS = {"client": "no_validation",
                     "vectorizer": [None, HasMethods(["transform"])]}


def _predict_partition(elements, model, method, vectorizer):
    """``model.<method>`` on one partition's inputs; a list of one result per item."""
    elements = list(elements)
    if not elements:
        return []
    if vectorizer is not None:
        elements = vectorizer.transform(elements)
    if np.ndim(elements[0]) == 1 and not hasattr(elements[0], "tocsr"):
        return list(getattr(model, method)(np.vstack(elements)))
    return list(getattr(model, method)(elements))


class _DaskMixin:
    """What every Dask estimator shares: the client, the local model, prediction over a
    ``dask.bag``, pickling without the client."""

    #: The local estimator class (set by each subclass).
    _local_class = None

    def _get_client(self):
        return get_client(self.client)

    def _local_params(self):
        params = self.get_params(deep=False)
        params.pop("client")
        params.pop("vectorizer")
        return params

    def _local_estimator(self):
        """An unfitted local estimator of the same parameters (what the workers check
        the partitions with)."""
        return self._local_class(**self._local_params())

    def to_local(self):
        """The fitted model as the local estimator (same parameters, no ``client``).

        Returns
        -------
        estimator
            A :class:`~skstruct.CRF` (:class:`~skstruct.SparseMAPClassifier`,
            :class:`~skstruct.StructuredPerceptron`) with the fitted attributes; with a
            ``vectorizer``, it takes the vectorizer's output (``vectorizer.transform``
            or a pipeline).
        """
        check_is_fitted(self)
        local = self._local_estimator()
        for name, value in vars(self).items():
            if name in _DASK_ATTRIBUTES:
                continue
            if (name.endswith("_") and not name.startswith("__")) or name == "_partial_state":
                setattr(local, name, value)
        return local

    def __sklearn_clone__(self):
        """A clone that shares the client (a client cannot be copied)."""
        from sklearn.base import _clone_parametrized

        client, self.client = self.client, None
        try:
            cloned = _clone_parametrized(self)
        finally:
            self.client = client
        cloned.client = client
        return cloned

    def __getstate__(self):
        state = super().__getstate__()
        state["client"] = None  # a client belongs to one process; pickles carry none
        return state

    def _distributed_predict(self, X, method):
        import dask

        model = dask.delayed(self.to_local(), pure=True, traverse=False)
        return X.map_partitions(_predict_partition, model, method, self._vectorizer())

    def _vectorizer(self):
        """The fitted vectorizer (``vectorizer_``), or None without one."""
        return getattr(self, "vectorizer_", None) if self.vectorizer is not None else None

    def _local_input(self, X):
        vectorizer = self._vectorizer()
        return X if vectorizer is None else vectorizer.transform(X)

    def predict(self, X):
        """Predict the output of every input.

        Parameters
        ----------
        X : dask.bag.Bag, or as for the local estimator
            A bag of inputs (one item per example, in the form of ``fit``'s ``x``), or
            local data.

        Returns
        -------
        dask.bag.Bag of outputs (one per item, lazily), or the local estimator's result
        """
        if is_dask_collection(X):
            return self._distributed_predict(X, "predict")
        return super().predict(self._local_input(X))

    def _read(self, client, X, y, sample_weight):
        # the workers' copy checks the data only: no callback (which runs on the client
        # and may hold what does not pickle)
        checker = self._local_estimator().set_params(callback=None, verbose=0)
        vectorizer = fit_vectorizer(client, X, y is None, self.vectorizer)
        data = DistributedData(client, X, y, sample_weight, checker, vectorizer)
        data.vectorizer = vectorizer
        return data

    def _model_pieces(self, data):
        """kind, classes, n_features, decoder and feature map from the summary."""
        from ..outputs import get_output_kind

        summary = data.summary
        kind = get_output_kind(summary["kind"])
        classes = summary["classes"]
        if kind.classes_are_labels and len(classes) < 2:
            raise ValueError(
                f"{type(self).__name__} needs examples of at least 2 classes in the data, "
                f"but the collection contains only one class: {classes.tolist()}.")
        self._training_classes = classes
        decoder = self._make_decoder(kind, self._decoder_needs())
        features = self._feature_map(kind, summary["n_features"], classes, decoder)
        return kind, classes, summary["n_features"], decoder, features

    def _spec(self, classes, decoder, features, loss, data):
        return {"name": type(self).__name__, "classes": classes, "decoder": decoder,
                "features": features, "loss": loss,
                "total_weight": data.summary["weight"]}

    def _finish(self, kind, classes, n_features, features, decoder, result, data):
        batch = SimpleNamespace(n_features=n_features, feature_names=None)
        self._finish_fit(kind, classes, batch, features, decoder, result)
        self.n_partitions_ = data.n_partitions
        if data.vectorizer is not None:
            self.vectorizer_ = data.vectorizer
        elif hasattr(self, "vectorizer_"):
            del self.vectorizer_


class _NotDistributedPartialFit:
    """``partial_fit`` of a Dask estimator whose local class has one: refused, naming
    :meth:`to_local`."""

    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Not distributed: use :meth:`to_local` and the local ``partial_fit``."""
        raise NotImplementedError(f"{type(self).__name__}.partial_fit is not "
                                  "distributed; call to_local().partial_fit(...).")


class _DaskQuasiNewtonMixin(_DaskMixin):
    """Full-batch training: the local solver on the client, each evaluation of the
    objective a sum over the shards on the workers (:class:`~._cluster.DistributedRisk`)."""

    def _dask_loss(self):
        raise NotImplementedError

    def _fit_distributed(self, X, y, sample_weight):
        if self.solver not in FULL_BATCH_SOLVERS:
            raise ValueError(
                f"{type(self).__name__} trains with the full-batch solvers "
                f"{list(FULL_BATCH_SOLVERS)}; solver={self.solver!r} takes single "
                "examples, which stay on the workers.")
        self._check_fit_parameters(False)
        client = self._get_client()
        data = self._read(client, X, y, sample_weight)
        kind, classes, n_features, decoder, features = self._model_pieces(data)
        options = {}
        if self._pairs_choice(kind, features) == "seen":
            # as ElasticNetQuasiNewtonMixin._training_features and _penalty do, from the
            # seen pairs of all partitions
            check_label_pairs(kind)
            seen = data.seen_pairs(classes)
            if feature_map_hook(features, "restricted") is not None:
                features = features.restricted(seen)
            if feature_map_hook(features, "pairs") is None:
                options["fixed"] = np.asarray(kind.pack_unary(features, ~seen), dtype=bool)
        if self.alpha * self.l1_ratio > 0:
            options["l1"] = self.alpha * self.l1_ratio
        l2 = self.alpha if self.l1_ratio == 0 else self.alpha * (1 - self.l1_ratio)
        loss = self._dask_loss()
        shards = data.shards(self._spec(classes, decoder, features, loss, data))
        w0 = self._initial_params(features, kind, classes, n_features)
        risk = DistributedRisk(client, shards, data.indices, data.n_partitions, loss, l2,
                               features.n_params, data.summary["n_examples"])
        run = SimpleNamespace(solver=self.solver)
        solver_options = self._training_options(run)
        solver_options.update(options)
        result = run_solver(self.solver, risk, w0, solver_options)
        del shards, risk  # the workers release the shards
        self._warn_after_training(run, result)
        self._finish(kind, classes, n_features, features, decoder, result, data)
        self.n_evaluations_ = int(result.n_evaluations)
        return self

_FIT_DOC = """Fit the model on a Dask collection.

        Parameters
        ----------
        X : dask.bag.Bag
            One item per example: an (x, y) pair when ``y`` is None, else x alone. x is
            what the local estimator takes for one example: a (n_tokens, n_features)
            matrix (dense or sparse) of a sequence, a list of token feature dicts (with
            ``vectorizer``), a 1-D feature row (multiclass, multilabel), a tree's arc
            features; y its labels (a label array, a label, a 0/1 row, a head array).
        y : dask.bag.Bag, default=None
            The labels, partitioned as ``X``.
        sample_weight : dask.bag.Bag, default=None
            One weight per example, partitioned as ``X``.

        Returns
        -------
        self

        Raises
        ------
        skstruct.dask.PartitionError
            When a partition cannot be read or trained on: the message names it and the
            error it raised.
        """


class DaskCRF(_DaskQuasiNewtonMixin, CRF):
    """:class:`~skstruct.CRF` trained on a Dask cluster, full-batch.

    The partitions of the training ``dask.bag`` are read and compiled once on the
    workers and stay there; the solver (``"lbfgs"``, its orthant-wise form with an L1
    term, ``"owlqn"`` or ``"lbfgsb"``) runs on the client, and each evaluation of the
    objective sends the weights to the workers and sums the partitions' (value,
    gradient) pairs as a tree. The objective and the model are the local CRF's on the
    concatenated data (up to the order of the sums). See :doc:`/user_guide/cluster`.

    Parameters
    ----------
    client : distributed.Client, default=None
        The cluster's client; None uses the current one (``distributed.get_client()``).
    vectorizer : transformer, default=None
        Applied on the workers to each partition's inputs, e.g. a
        :class:`~skstruct.preprocessing.SequenceVectorizer` for bags of token feature
        dicts. Used as it is when fitted already; an unfitted one is fitted on the
        vocabulary of the whole collection, found by a distributed pass (the dict
        backend: the same columns as a fit on all the data) and kept as
        ``vectorizer_``; ``predict`` applies it too.
    **params
        The parameters of :class:`~skstruct.CRF`; ``solver`` is one of ``"lbfgs"``,
        ``"owlqn"``, ``"lbfgsb"``.

    Attributes
    ----------
    n_partitions_ : int
        Partitions of the training collection.
    n_evaluations_ : int
        Distributed evaluations of the objective (each one round trip to the workers).
    vectorizer_ : transformer
        With a ``vectorizer``: the fitted one (which :meth:`to_local`'s model takes the
        output of).
    The fitted attributes of :class:`~skstruct.CRF`.
    """

    _local_class = CRF
    _parameter_constraints = {**CRF._parameter_constraints, **_DASK_CONSTRAINTS}

    def __init__(self, alpha=1e-4, *, client=None, vectorizer=None, l1_ratio=0.0,
                 feature_label_pairs="auto", cost=None, decoder=None, solver="lbfgs",
                 max_iter=100, tol=2e-3, warm_start=False, verbose=0, callback=None,
                 learning_rate="auto", random_state=None):
        super().__init__(alpha, l1_ratio=l1_ratio, feature_label_pairs=feature_label_pairs,
                         cost=cost, decoder=decoder, solver=solver, max_iter=max_iter,
                         tol=tol, warm_start=warm_start, verbose=verbose,
                         callback=callback, learning_rate=learning_rate,
                         random_state=random_state)
        self.client = client
        self.vectorizer = vectorizer

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        return self._fit_distributed(X, y, sample_weight)

    fit.__doc__ = _FIT_DOC

    def _dask_loss(self):
        return CRFLoss(cost=self.cost)

    def predict_marginals(self, X):
        """Per-token label probabilities; a ``dask.bag`` of them for a bag of inputs
        (see :meth:`CRF.predict_marginals <skstruct.CRF.predict_marginals>`)."""
        if is_dask_collection(X):
            return self._distributed_predict(X, "predict_marginals")
        return super().predict_marginals(self._local_input(X))


class DaskSparseMAPClassifier(_DaskQuasiNewtonMixin, SparseMAPClassifier):
    """:class:`~skstruct.SparseMAPClassifier` trained on a Dask cluster, full-batch,
    as :class:`DaskCRF` is.

    Each shard keeps its examples' SparseMAP active sets from one evaluation to the next
    (as the local objective does), in the worker's memory: a shard rebuilt after a
    worker was lost starts its active sets over, which changes the inner solutions
    within ``sparsemap_tol``.

    Parameters
    ----------
    client, vectorizer
        As for :class:`DaskCRF`.
    **params
        The parameters of :class:`~skstruct.SparseMAPClassifier`.
    """

    _local_class = SparseMAPClassifier
    _parameter_constraints = {**SparseMAPClassifier._parameter_constraints,
                              **_DASK_CONSTRAINTS}

    def __init__(self, alpha=1e-4, *, client=None, vectorizer=None, l1_ratio=0.0,
                 feature_label_pairs="all", cost=None, decoder=None, solver="lbfgs",
                 max_iter=1000, tol=1e-4, sparsemap_max_iter=100, sparsemap_tol=1e-9,
                 warm_start=False, verbose=0, callback=None):
        super().__init__(alpha, l1_ratio=l1_ratio, feature_label_pairs=feature_label_pairs,
                         cost=cost, decoder=decoder, solver=solver, max_iter=max_iter,
                         tol=tol, sparsemap_max_iter=sparsemap_max_iter,
                         sparsemap_tol=sparsemap_tol, warm_start=warm_start,
                         verbose=verbose, callback=callback)
        self.client = client
        self.vectorizer = vectorizer

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        return self._fit_distributed(X, y, sample_weight)

    fit.__doc__ = _FIT_DOC

    def _dask_loss(self):
        return SparseMAPLoss(self.cost, max_iter=self.sparsemap_max_iter,
                             tol=self.sparsemap_tol)



def _epoch_seeds(entropy, epoch, n_partitions):
    """One seed per partition for one epoch, from the fit's entropy alone."""
    states = np.random.SeedSequence([entropy, epoch]).spawn(n_partitions)
    return [int(s.generate_state(1)[0]) for s in states]


class DaskStructuredPerceptron(_NotDistributedPartialFit, _DaskMixin, StructuredPerceptron):
    """:class:`~skstruct.StructuredPerceptron` trained on a Dask cluster by iterative
    parameter mixing (McDonald, Hall & Mann 2010).

    Every epoch e = 1, 2, ... starts from the mixed weights w⁽ᵉ⁻¹⁾ (w⁽⁰⁾ = 0, or the
    previous model with ``warm_start``). Each of the P non-empty partitions p runs one
    perceptron pass over its examples from w⁽ᵉ⁻¹⁾ (the local solver ``"perceptron"``,
    ``max_iter=1``; its examples in an order drawn from a seed of (``random_state``, e,
    p), or in their order with ``shuffle=False``), giving its last iterate w_p⁽ᵉ⁾ and the
    average a_p⁽ᵉ⁾ of its iterates during the pass. The mixing is uniform:
    w⁽ᵉ⁾ = (1/P) Σ_p w_p⁽ᵉ⁾, the next epoch's start. The fit stops after an epoch
    without a mistake on any partition, or after ``max_iter`` epochs. The model is
    w⁽ᴱ⁾ without ``averaging``; with it (the default) the average over the epochs of the
    mixed pass averages, (1/E) Σ_e (1/P) Σ_p a_p⁽ᵉ⁾: with equal partitions, the average
    of all the iterates of all the partitions. Sample weights scale the updates within a
    partition as they do locally (normalized over the partition).

    With an integer ``random_state`` the model depends on the partitioning and the seed
    alone (not on the number of workers or where the partitions run). With one
    partition it is the local perceptron's pass by pass, except for the seeds of the
    shuffles and the average (per epoch here, over all steps locally).

    Parameters
    ----------
    client, vectorizer
        As for :class:`DaskCRF`.
    **params
        The parameters of :class:`~skstruct.StructuredPerceptron` (``n_jobs``: the
        kernel threads of each worker's pass; None shares each worker's threads among
        the shards it holds, see :func:`~skstruct.dask._cluster.shard_threads`).

    Attributes
    ----------
    n_partitions_ : int
    objective_curve_ : ndarray of shape (``n_iter_``,)
        The fraction of examples mispredicted during each epoch, over all partitions.
    The other fitted attributes of :class:`~skstruct.StructuredPerceptron`.

    References
    ----------
    McDonald, Hall & Mann (2010). Distributed training strategies for the structured
    perceptron. NAACL-HLT.
    """

    _local_class = StructuredPerceptron
    _parameter_constraints = {**StructuredPerceptron._parameter_constraints,
                              **_DASK_CONSTRAINTS}

    def __init__(self, decoder=None, *, client=None, vectorizer=None, max_iter=10,
                 averaging=True, random_state=None, verbose=0, warm_start=False,
                 n_jobs=None, callback=None, shuffle=True):
        super().__init__(decoder, max_iter=max_iter, averaging=averaging,
                         random_state=random_state, verbose=verbose,
                         warm_start=warm_start, n_jobs=n_jobs, callback=callback,
                         shuffle=shuffle)
        self.client = client
        self.vectorizer = vectorizer


    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        client = self._get_client()
        data = self._read(client, X, y, sample_weight)
        kind, classes, n_features, decoder, features = self._model_pieces(data)
        shards = data.shards(self._spec(classes, decoder, features, PerceptronLoss(),
                                        data))
        w = np.asarray(self._initial_params(features, kind, classes, n_features),
                       dtype=np.float64)
        entropy = int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))
        n_shards, n_examples = len(shards), data.summary["n_examples"]
        progress = Progress(self.verbose, self.callback, print, unit="epoch",
                            max_iter=self.max_iter)
        average = np.zeros_like(w)
        threads = shard_threads(client, shards)
        message, converged, n_epochs = "maximum number of epochs reached", False, 0
        for epoch in range(self.max_iter):
            seeds = _epoch_seeds(entropy, epoch, data.n_partitions)
            (raw_sum, average_sum, mistakes), _ = sum_over_shards(
                client, perceptron_epoch, shards, data.indices, data.n_partitions, w,
                args=(self.averaging, self.shuffle),
                shard_args=[(seeds[i], threads if self.n_jobs is None else self.n_jobs)
                            for i, threads in zip(data.indices, threads)])
            w = raw_sum / n_shards
            average += average_sum / n_shards
            n_epochs += 1
            mistakes = int(round(mistakes))
            current = (average / n_epochs if self.averaging else w)
            if progress.report(current, mistakes / n_examples, mistakes=mistakes):
                message, converged = STOPPED_BY_CALLBACK, False
                break
            if mistakes == 0:
                message, converged = "no mistake in an epoch", True
                break
        del shards
        final = average / n_epochs if self.averaging else w
        result = OptimizeResult(w=final, n_iter=progress.n_iter, converged=converged,
                                objective_curve=progress.curve, message=message,
                                n_evaluations=n_epochs * n_examples)
        self._finish(kind, classes, n_features, features, decoder, result, data)
        self.t_ = n_epochs * n_examples
        self._reset_partial_state(np.array([data.summary["weight"]]))
        return self

    fit.__doc__ = _FIT_DOC
