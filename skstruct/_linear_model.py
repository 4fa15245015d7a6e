"""Fitted linear structured models: parameters stored as scikit-learn attributes."""

import warnings

import numpy as np
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted
from sklearn.exceptions import ConvergenceWarning

from ._structured_base import StructuredEstimator
from .decoders import check_capability
from .decoders._core.checks import check_k
from .features import decoder_feature_map, feature_map_hook
from .optim import RegularizedRisk, get_solver, run_solver
from .utils._compile_report import CompileNotice, estimated_compile_seconds

__all__ = ["LinearStructuredModel", "TrainingRun"]


class TrainingRun:
    """One call of :meth:`LinearStructuredModel._fit_sequence`: its data and the pieces
    built from them, which the hooks read.

    It has the attributes of :class:`~skstruct._partial_fit.PartialBatch`, so that the
    helpers of ``partial_fit`` take it as their batch. A hook may keep on it what a later
    hook reads.

    Attributes
    ----------
    partial_fit : bool
        Whether the call is one ``partial_fit`` pass.
    first : bool
        Whether the call starts the model (``fit``, or the first ``partial_fit``).
    kind : OutputKind
    batch : SequenceBatch
    classes : ndarray or None
    y_encoded : ndarray
    sample_weight : ndarray of shape (n_examples,)
    solver : str
        The registered solver's name.
    task_loss : TaskLoss or None
    loss : TrainingLoss
        The training loss (None until it is built).
    decoder : Decoder
        The decoder the model keeps (``decoder_``).
    training_decoder : Decoder
        The decoder the risk calls: ``decoder``, or a hook's wrapper of it.
    features : feature map
    w0 : ndarray of shape (n_params,)
        The solver's start.
    state : dict
        ``partial_fit``: the solver state the call continues from.
    """

    def __init__(self, partial_fit, first, kind, batch, classes, y_encoded, sample_weight):
        self.partial_fit, self.first = partial_fit, first
        self.kind, self.batch, self.classes = kind, batch, classes
        self.y_encoded, self.sample_weight = y_encoded, sample_weight
        self.solver = self.task_loss = self.loss = None
        self.decoder = self.training_decoder = self.features = None
        self.w0 = self.state = None


class LinearStructuredModel(StructuredEstimator):
    """A structured estimator whose part scores are linear in its parameters.

    Fitted attributes: ``coef_`` (n_outputs, n_features) for every kind; for sequences
    ``transition_`` (n_classes, n_classes), ``start_transition_`` and ``end_transition_``
    (n_classes,); for multiclass and multilabel ``intercept_`` (n_outputs,); for trees
    and matchings ``coef_`` alone, of shape (n_features,). The output kind
    (:mod:`skstruct.outputs`) stores and reads them.
    """

    def _make_decoder(self, kind, needs, y=None, batch=None, loss=None):
        """The decoder to use: ``self.decoder`` (cloned) or the default of ``kind``.

        With the training outputs ``y`` (encoded, stacked over ``batch.output_offsets``),
        also checks that the decoder can produce them (e.g. projective gold trees).
        """
        decoder = kind.default_decoder() if self.decoder is None else clone(self.decoder)
        decoder._validate_params()
        decoder = decoder.bind_classes(getattr(self, "_training_classes", None))
        for capability, use in needs:
            check_capability(decoder, capability, use)
        if y is not None:
            decoder.check_outputs(y, batch.output_offsets)
            decoder.check_training_memory(len(batch.output_offsets) - 1,
                                          solver=getattr(self, "solver", None), loss=loss,
                                          n_features=batch.n_features)
        return decoder

    def _validate_training_data(self, X, y, sample_weight):
        data = super()._validate_training_data(X, y, sample_weight)
        self._training_classes = data[2]  # for _make_decoder, which every fit calls next
        return data

    def _fit_sequence(self, X, y, sample_weight, classes=None, *, partial_fit=False,
                      loss=None):
        """Train on ``X`` and ``y``: the sequence every ``fit`` and ``partial_fit`` runs.

        The steps, and the hooks through which an estimator says what differs:

        1. the parameters are checked before the data are read
           (:meth:`_check_fit_parameters`);
        2. the data are validated and encoded (:meth:`_validate_training_data`;
           ``partial_fit``: :meth:`_check_partial_fit_data`, against the model of the
           previous calls) and the task loss is bound to the classes (:meth:`_task_loss`);
        3. the decoder, cloned and checked for :meth:`_decoder_needs`, and the feature map
           (:meth:`_training_features`; ``partial_fit``: those of the first call); a
           training loss with a cost is checked to enter the decoder's scores;
        4. the start ``w0`` (:meth:`_initial_params`; ``partial_fit``: the solver state
           the previous call left, :meth:`_solver_state`), then the checks and set-up
           the training needs once the model and its start are known
           (:meth:`_prepare_training`);
        5. :class:`~skstruct.optim.RegularizedRisk` of the training loss
           (:meth:`_training_loss`) with the L2 strength of :meth:`_penalty`, minimized by
           the solver :meth:`_solver_name` with :meth:`_training_options` and the
           penalty's options (:meth:`_run_solver`);
        6. ``fit`` only: warnings on the run (:meth:`_warn_after_training`, by default
           that it did not converge);
        7. the fitted attributes (:meth:`_finish_fit`, then :meth:`_store_results`) and
           the state a later ``partial_fit`` continues from
           (:meth:`_keep_training_state`).

        Nothing is stored before step 7, so a fit that fails leaves a fitted model as
        it was.

        Parameters
        ----------
        X, y, sample_weight
            As given to ``fit`` or ``partial_fit``.
        classes : array-like or None, default=None
            ``partial_fit``'s ``classes``.
        partial_fit : bool, default=False
            Run one ``partial_fit`` call: one pass of the solver over the batch,
            continuing from the previous calls
            (:class:`~skstruct._partial_fit.PartialFitMixin`).
        loss : TrainingLoss, default=None
            The training loss when the parameters alone fix it (built by ``fit`` before
            anything is checked); None: :meth:`_training_loss` builds it at step 5.

        Returns
        -------
        self
        """
        self._check_fit_parameters(partial_fit)
        # At verbose=1, a fit whose kernels numba must compile first says so before it
        # does (a kernel loaded from the cache sends no compile event: then it is silent).
        name = type(self).__name__
        try:
            solver = self._solver_name()
        except Exception:  # raised again, at its usual place, by the steps below
            solver = None
        notice = CompileNotice(self.get_params(deep=False).get("verbose", 0),
                               f"{name}(solver={solver!r})",
                               estimated_compile_seconds(name, solver))
        with notice:
            return self._fit_steps(X, y, sample_weight, classes, partial_fit, loss)

    def _fit_steps(self, X, y, sample_weight, classes, partial_fit, loss):
        """Steps 2–7 of :meth:`_fit_sequence`."""
        if partial_fit:
            part = self._check_partial_fit_data(X, y, classes, sample_weight)
            run = TrainingRun(True, part.first, part.kind, part.batch, part.classes,
                              part.y_encoded, part.sample_weight)
        else:
            data = self._validate_training_data(X, y, sample_weight)
            run = TrainingRun(False, True, *data)
        run.solver = self._solver_name(partial_fit)
        run.loss = loss
        run.task_loss = self._task_loss(run)
        needs = self._decoder_needs()
        if partial_fit:
            run.decoder, run.features = self._partial_model(run, needs)
        else:
            run.decoder = self._make_decoder(run.kind, needs, run.y_encoded, run.batch,
                                             loss=loss)
            run.features = self._training_features(run.kind, run.batch, run.y_encoded,
                                                   run.classes, run.decoder)
        if loss is not None and loss.cost is not None:
            _check_cost_enters_scores(loss.cost, run)
        if partial_fit:
            run.state = self._solver_state(run.solver, run.features, run)
            # a first call starts at zero, a later one from run.state
            run.w0 = np.zeros(run.features.n_params)
        else:
            run.w0 = self._initial_params(run.features, run.kind, run.classes,
                                          run.batch.n_features)
        run.training_decoder = run.decoder
        self._prepare_training(run)
        l2_strength, penalty_options = self._penalty(run.kind, run.features, run.batch,
                                                     run.y_encoded, run.classes)
        if run.loss is None:
            run.loss = self._training_loss(run)
        risk = RegularizedRisk(run.features, run.batch, run.y_encoded, run.training_decoder,
                               run.loss, l2_strength, run.sample_weight)
        options = self._training_options(run)
        options.update(penalty_options)
        result = self._run_solver(run, risk, options)
        del risk  # its evaluation buffers are freed before the coefficients are stored
        if not partial_fit:
            self._warn_after_training(run, result)
        self._finish_fit(run.kind, run.classes, run.batch, run.features, run.decoder,
                         result)
        self._store_results(run, result)
        self._keep_training_state(run, result)
        return self

    # -- the hooks of _fit_sequence; the defaults train as the quasi-Newton estimators do

    def _check_fit_parameters(self, partial_fit):
        """Checks of the parameters before the data are read (the solver registry's:
        :func:`~skstruct.optim.check_solver`): none here."""

    def _solver_name(self, partial_fit=False):
        """The registered solver that trains the model (``partial_fit``: one call of
        ``partial_fit``): ``solver`` here."""
        return self.solver

    def _decoder_needs(self):
        """The (capability, use) pairs the decoder must provide, for
        :func:`~skstruct.decoders.check_capability` and its messages."""
        raise NotImplementedError(f"{type(self).__name__} does not say what its decoder "
                                  "needs (_decoder_needs).")

    def _task_loss(self, run):
        """The task loss, bound to ``run.classes`` and checked against the outputs, or
        None (no task loss): None here."""
        return None

    def _prepare_training(self, run):
        """What the training needs once ``run.decoder``, ``run.features`` and ``run.w0``
        are set, before the risk is built: checks (the memory a fit takes), or a set-up
        the training loss reads (kept on ``run``; ``run.training_decoder`` may be
        replaced by a wrapper of ``run.decoder``). Nothing here."""

    def _training_loss(self, run):
        """The training loss :class:`~skstruct.optim.RegularizedRisk` averages, when
        ``fit`` did not pass one."""
        raise NotImplementedError(f"{type(self).__name__} has no training loss "
                                  "(_training_loss).")

    def _training_options(self, run):
        """The solver options of the run (:class:`~skstruct.optim._registry.SolverSpec`),
        before the penalty's: ``max_iter``, ``tol``, ``verbose``, ``callback`` and the
        parameters the solver declares (``learning_rate`` and ``random_state`` for
        ``"svrg"``) here."""
        options = dict(max_iter=self.max_iter, tol=self.tol, verbose=self.verbose,
                       callback=self.callback)
        options.update(get_solver(run.solver).options_from(self.get_params(deep=False)))
        return options

    def _run_solver(self, run, risk, options):
        """The solver's result on ``risk`` from ``run.w0``, on the threads of the
        estimator's ``n_jobs`` when it has one."""
        n_jobs = self.get_params(deep=False).get("n_jobs")
        return run_solver(run.solver, risk, run.w0, options, n_jobs=n_jobs)

    def _warn_after_training(self, run, result):
        """Warn about a finished ``fit``: here a ConvergenceWarning when the solver did
        not converge."""
        if not result.converged:
            warnings.warn(
                f"{type(self).__name__} did not converge in {self.max_iter} iterations "
                f"({result.message}); {result.advice()}.",
                ConvergenceWarning,
            )

    def _store_results(self, run, result):
        """Fitted attributes besides :meth:`_finish_fit`'s: none here."""

    def _keep_training_state(self, run, result):
        """Keep what a later call continues from (``partial_fit``'s state): nothing
        here."""

    def _training_features(self, kind, batch, y_encoded, classes, decoder):
        """The feature map the solver trains (its ``n_params`` is the solver's vector):
        :meth:`_feature_map`'s here. ``kind.store_coefficients`` and
        ``kind.coefficients`` go through it, so it may lay the parameters out
        differently."""
        return self._feature_map(kind, batch.n_features, classes, decoder)

    @staticmethod
    def _feature_map(kind, n_features, classes, decoder):
        """The decoder's own feature map when it scores parts of its own (a factor
        graph's PAIR factors: :func:`~skstruct.features.decoder_feature_map`), else the
        output kind's."""
        own = decoder_feature_map(decoder, n_features, classes)
        return kind.feature_map(n_features, classes) if own is None else own

    def _store_coefficients(self, kind, features, w):
        """Fitted attributes from ``w``: through the feature map when it stores its own
        (``coupling_`` of factor graphs), else through the output kind."""
        store = feature_map_hook(features, "store_coefficients")
        if store is not None:
            store(self, w)
            return
        for name in ("coupling_", "structure_coef_"):  # left by a fit with a factor graph
            if hasattr(self, name):
                delattr(self, name)
        kind.store_coefficients(self, features, w)

    @staticmethod
    def _read_coefficients(fitted, kind, features):
        if _owns_coefficients(features):
            return features.coefficients(fitted)
        return kind.coefficients(fitted, features)

    def _penalty(self, kind, features, batch, y_encoded, classes):
        """The L2 strength of the risk and any further solver options (an L1 strength,
        parameters held at zero): ``alpha`` and none here."""
        return self.alpha, {}

    def _finish_fit(self, kind, classes, batch, features, decoder, result):
        """Store the fitted state; called once the solver returned (never half-written)."""
        self.output_kind_ = kind.name
        self.classes_ = classes
        self.n_features_in_ = batch.n_features
        if batch.feature_names is not None:
            self.feature_names_in_ = batch.feature_names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self._store_coefficients(kind, features, result.w)
        self.decoder_ = decoder
        self.n_iter_ = result.n_iter
        self.objective_curve_ = np.asarray(result.objective_curve)

    def _features(self):
        return self._feature_map(self._fitted_kind(), self.n_features_in_, self.classes_,
                                 self.decoder_)

    def _params(self):
        return self._read_coefficients(self, self._fitted_kind(), self._features())

    def _initial_params(self, features, kind, classes, n_features):
        if not (self.warm_start and hasattr(self, "coef_")):
            return np.zeros(features.n_params)
        same_classes = (classes is None and self.classes_ is None) or (
            classes is not None and self.classes_ is not None
            and np.array_equal(classes, self.classes_))
        if (kind.name != self.output_kind_ or not same_classes
                or n_features != self.n_features_in_):
            previous = "" if self.classes_ is None else f"classes {self.classes_.tolist()}, "
            raise ValueError(
                "warm_start=True needs the same kind of outputs, classes and number of "
                f"features as the previous fit ({self.output_kind_} outputs, {previous}"
                f"{self.n_features_in_} features)."
            )
        return self._read_coefficients(self, kind, features)

    def _scores(self, batch):
        """The part scores of ``batch`` under the fitted attributes: read as the feature
        map's parts when both the kind and the map can (no copy of W per call), else
        from the packed parameter vector."""
        features = self._features()
        if not _owns_coefficients(features):
            parts = self._fitted_kind().coefficient_parts(self)
            scores = (None if parts is None else
                      feature_map_hook(features, "scores_of_parts")(batch, *parts))
            if scores is not None:
                return scores
        return features.scores(batch, self._params())

    def _decode(self, batch):
        return self.decoder_.map(self._scores(batch))

    def predict_top_k(self, X, k):
        """The ``k`` best outputs of every input, and their scores (n-best decoding).

        Parameters
        ----------
        X : as in :meth:`predict`
        k : int >= 1

        Returns
        -------
        outputs : list of length n_examples
            ``outputs[i]`` lists the best outputs of example ``i``, best first, each in
            the form :meth:`predict` gives one (a label array, a label, a 0/1 row, ...);
            fewer than ``k`` when the example has fewer outputs of finite score.
            ``outputs[i][0]`` is ``predict``'s output for example ``i`` (up to ties).
        scores : ndarray of shape (n_examples, k)
            Their scores θ_y = ⟨w, φ(x, y)⟩, non-increasing along each row; -inf beyond
            the outputs listed.

        Raises
        ------
        ValueError
            When the fitted decoder has no ``top_k`` (trees, matchings, factor graphs).
        """
        check_is_fitted(self)
        k = check_k(k)
        check_capability(self.decoder_, "top_k", f"{type(self).__name__}.predict_top_k")
        batch = self._validate_prediction_data(X)
        paths, top = self.decoder_.top_k(self._scores(batch), k)
        kind = self._fitted_kind()
        offsets = np.asarray(batch.output_offsets)
        n_examples = offsets.shape[0] - 1
        found = top > -np.inf
        listed = [[] for _ in range(n_examples)]
        for rank in range(k):
            if not found[:, rank].any():
                break
            # ranks an example does not reach hold -1: decode its best output there instead
            reached = np.repeat(found[:, rank], np.diff(offsets))
            reached = reached.reshape((-1,) + (1,) * (paths.ndim - 2))
            decoded = kind.decode(np.where(reached, paths[..., rank], paths[..., 0]), batch,
                                  self.classes_)
            for i in np.flatnonzero(found[:, rank]):
                listed[i].append(decoded[i])
        return listed, top

    def decision_function(self, X):
        """Unary scores: per class (multiclass), per label (multilabel), per token and
        class (sequences; transitions excluded), per arc (trees: an (n_i, n_i) matrix
        per sentence, entry [m, h] the score of head h for token m, the diagonal the
        root), or per pair (matchings: an (n_rows_i, n_cols_i) matrix per instance).

        Multiclass with two classes follows scikit-learn's binary convention: one score
        per sample, that of ``classes_[1]`` minus that of ``classes_[0]``, positive when
        ``classes_[1]`` is predicted (ties aside).

        Parameters
        ----------
        X : as in :meth:`predict`

        Returns
        -------
        ndarray of shape (n_samples, n_classes) (multiclass, three classes or more),
        (n_samples,) (multiclass, two classes) or (n_samples, n_labels) (multilabel, any
        number of labels); or list of ndarray of shape (n_tokens_i, n_classes) for
        sequences, of shape (n_i, n_i) for trees, or of shape (n_rows_i, n_cols_i) for
        matchings
        """
        batch = self._validate_prediction_data(X)
        return self._fitted_kind().unary_to_decision(self._scores(batch).unary, batch)


def _check_cost_enters_scores(cost, run):
    """Fail now, with the decoder's message, if ``cost`` cannot enter the scores."""
    batch = run.batch
    first = slice(batch.output_offsets[0], batch.output_offsets[1])
    probe = run.features.scores(batch.take([0]), np.zeros(run.features.n_params))
    run.decoder.cost_augmented(probe, run.y_encoded[first], cost)


def _owns_coefficients(features):
    """Whether the feature map stores and reads its fitted attributes itself (a factor
    graph's ``coupling_``), rather than through the output kind."""
    return (callable(feature_map_hook(features, "coefficients"))
            and feature_map_hook(features, "store_coefficients") is not None)
