"""Fitted linear structured models: parameters stored as scikit-learn attributes."""

import warnings

import numpy as np
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted
from sklearn.exceptions import ConvergenceWarning

from ._structured_base import StructuredEstimator
from .decoders import check_capability
from .decoders._core.checks import check_k
from .features import decoder_feature_map
from .optim import RegularizedRisk, get_solver, run_solver

__all__ = ["LinearStructuredModel"]


class LinearStructuredModel(StructuredEstimator):
    """A structured estimator whose part scores are linear in its parameters.

    Fitted attributes: ``coef_`` (n_outputs, n_features) for every kind; for sequences
    ``transition_`` (n_classes, n_classes), ``start_transition_`` and ``end_transition_``
    (n_classes,); for multiclass and multilabel ``intercept_`` (n_outputs,); for trees
    and matchings ``coef_`` alone, of shape (n_features,). The output kind
    (:mod:`skstruct.outputs`) stores and reads them.
    """

    def _make_decoder(self, kind, needs, y=None, batch=None):
        """The decoder to use: ``self.decoder`` (cloned) or the default of ``kind``.

        With the training outputs ``y`` (encoded, stacked over ``batch.output_offsets``),
        also checks that the decoder can produce them (e.g. projective gold trees).
        """
        decoder = kind.default_decoder() if self.decoder is None else clone(self.decoder)
        decoder._validate_params()
        bind = getattr(decoder, "bind_classes", None)
        if bind is not None:  # decoders that read the class names (chain constraints)
            decoder = bind(getattr(self, "_training_classes", None))
        for capability, use in needs:
            check_capability(decoder, capability, use)
        if y is not None:
            decoder.check_outputs(y, batch.output_offsets)
        return decoder

    def _validate_training_data(self, X, y, sample_weight):
        data = super()._validate_training_data(X, y, sample_weight)
        self._training_classes = data[2]  # for _make_decoder, which every fit calls next
        return data

    def _fit_quasi_newton(self, X, y, sample_weight, loss, needs):
        """Minimize the regularized mean ``loss`` with (L-)BFGS, for any output kind.

        ``needs`` lists the (capability, use) pairs the decoder must provide. Uses the
        estimator's ``alpha``, ``solver``, ``max_iter``, ``tol``, ``warm_start``,
        ``verbose`` and ``callback``, and the parameters the solver declares
        (``learning_rate`` and ``random_state`` for ``"svrg"``).
        """
        kind, batch, classes, y_encoded, weights = self._validate_training_data(
            X, y, sample_weight
        )
        decoder = self._make_decoder(kind, needs, y_encoded, batch)
        features = self._training_features(kind, batch, y_encoded, classes, decoder)
        cost = loss.cost
        if cost is not None:
            # Fail now, with the decoder's message, if the cost cannot enter the scores.
            first = slice(batch.output_offsets[0], batch.output_offsets[1])
            probe = features.scores(batch.take([0]), np.zeros(features.n_params))
            decoder.cost_augmented(probe, y_encoded[first], cost)
        w0 = self._initial_params(features, kind, classes, batch.n_features)
        l2_strength, solver_options = self._penalty(kind, features, batch, y_encoded, classes)
        risk = RegularizedRisk(features, batch, y_encoded, decoder, loss, l2_strength, weights)
        options = dict(max_iter=self.max_iter, tol=self.tol, verbose=self.verbose,
                       callback=self.callback)
        options.update(get_solver(self.solver).options_from(self.get_params(deep=False)))
        options.update(solver_options)
        result = run_solver(self.solver, risk, w0, options)
        if not result.converged:
            warnings.warn(
                f"{type(self).__name__} did not converge in {self.max_iter} iterations "
                f"({result.message}); increase max_iter or tol.",
                ConvergenceWarning,
            )
        self._finish_fit(kind, classes, batch, features, decoder, result)
        return self

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
        store = getattr(features, "store_coefficients", None)
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
        score_parts = getattr(features, "scores_of_parts", None)
        if score_parts is not None and not _owns_coefficients(features):
            parts = self._fitted_kind().coefficient_parts(self)
            scores = None if parts is None else score_parts(batch, *parts)
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


def _owns_coefficients(features):
    """Whether the feature map stores and reads its fitted attributes itself (a factor
    graph's ``coupling_``), rather than through the output kind."""
    return callable(getattr(features, "coefficients", None)) and hasattr(
        features, "store_coefficients")
