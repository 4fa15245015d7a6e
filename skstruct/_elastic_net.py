"""Elastic-net penalties and the seen (feature, label) pairs for quasi-Newton estimators.

The estimators trained by quasi-Newton on a smooth loss (:class:`~skstruct.CRF`,
:class:`~skstruct.SparseMAPClassifier`) minimize

    F(w) = (1 / Σ_i s_i) Σ_i s_i ℓ_i(w) + alpha (l1_ratio ‖w‖₁ + (1 − l1_ratio) / 2 ‖w‖²),

optionally with the weights of the (feature, label) pairs never seen in training held
at zero. The L2 part goes to :class:`~skstruct.optim.RegularizedRisk`, the L1 part to the
solver (``options["l1"]``). The unseen pairs are left out of the parameter vector when the
feature map can lay it out without them (``features.restricted(pairs)``, chains: the
solver's vector holds the seen pairs only), and otherwise held at zero by the solver
(``options["fixed"]``, a mask over all pairs).
"""

from numbers import Real

import numpy as np
import scipy.sparse as sp
from numba import njit
from sklearn.utils._param_validation import Interval, StrOptions

from .features import feature_map_hook
from .optim import check_solver
from .outputs import get_output_kind

__all__ = ["ElasticNetQuasiNewtonMixin", "seen_pairs"]

#: Parameter constraints of the two options, merged into an estimator's own.
ELASTIC_NET_CONSTRAINTS = {
    "l1_ratio": [Interval(Real, 0, 1, closed="both")],
    "feature_label_pairs": [StrOptions({"auto", "all", "seen"})],
}

#: Solvers that train the seen pairs in the compact layout of the chain feature map.
_SEEN_PAIR_SOLVERS = ("lbfgs", "lbfgsb", "owlqn", "svrg")


def seen_pairs(X, y_encoded, n_outputs, kind):
    """Which (feature, label) pairs occur in the training data.

    Parameters
    ----------
    X : ndarray or scipy.sparse matrix of shape (n_rows, n_features)
        Token (sequences) or sample (multiclass, multilabel) features.
    y_encoded : ndarray
        The encoded outputs of the rows (class indices; multilabel: the 0/1 indicator
        matrix).
    n_outputs : int
        Number of classes or labels.
    kind : OutputKind or str
        The output kind (or its registered name), whose
        :meth:`~skstruct.outputs.OutputKind.row_labels` reads ``y_encoded``.

    Returns
    -------
    ndarray of bool of shape (n_features, n_outputs)
        Entry [f, k] is True when some row with label k (multilabel: with label k on)
        has feature f nonzero. Explicitly stored zeros do not count.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [1.0, 2.0]])
    >>> seen_pairs(X, np.array([0, 1]), 2, "multiclass").tolist()
    [[True, True], [False, True]]
    """
    if isinstance(kind, str):
        kind = get_output_kind(kind)
    y_encoded = np.asarray(y_encoded)
    if sp.issparse(X) and X.format == "csr" and y_encoded.ndim == 1 and _class_rows(kind):
        seen = np.zeros((X.shape[1], n_outputs), dtype=bool)
        _mark_seen_pairs(X.data, X.indices, X.indptr,
                         np.ascontiguousarray(y_encoded, dtype=np.int64), seen)
        return seen
    if sp.issparse(X):
        present = sp.csr_matrix(X, copy=True)
        present.data = (present.data != 0).astype(np.float64)
    else:
        present = sp.csr_matrix((np.asarray(X) != 0).astype(np.float64))
    counts = (present.T @ kind.row_labels(y_encoded, n_outputs)).toarray()
    return counts > 0


def _class_rows(kind):
    """Whether each row of ``kind`` carries the one class its encoded output names."""
    return kind.name in ("sequence", "multiclass")


@njit(cache=True, nogil=True)
def _mark_seen_pairs(data, indices, indptr, labels, seen):
    """seen[f, labels[t]] = True for every stored nonzero x_tf of a CSR matrix."""
    for t in range(indptr.shape[0] - 1):
        label = labels[t]
        for p in range(indptr[t], indptr[t + 1]):
            if data[p] != 0:
                seen[indices[p], label] = True


def check_label_pairs(kind):
    """Raise unless the unary weights of ``kind`` are one per (feature, label) pair."""
    if not kind.has_label_pairs:
        raise ValueError(
            f"feature_label_pairs='seen' needs outputs with labels (sequences, multiclass, "
            f"multilabel); {kind.name} outputs have one weight per feature, all of which "
            "are kept. Use feature_label_pairs='all'.")


def unseen_pairs_mask(kind, features, batch, y_encoded, classes):
    """Boolean mask over the flat parameters: True for the unary weights of unseen pairs.

    Transitions, start and end scores and intercepts are never held.
    """
    check_label_pairs(kind)
    unseen = ~seen_pairs(batch.X, y_encoded, len(classes), kind)
    return np.asarray(kind.pack_unary(features, unseen), dtype=bool)


class ElasticNetQuasiNewtonMixin:
    """``l1_ratio`` and ``feature_label_pairs`` for the quasi-Newton estimators.

    Through the hooks of the fit sequence
    (:meth:`~skstruct._linear_model.LinearStructuredModel._fit_sequence`): the solver
    checked for the L1 strength and warm start before the data are read
    (``_check_fit_parameters``); with
    ``feature_label_pairs="seen"``, the feature map restricted to the seen pairs when it
    can be (``_training_features``), else the unseen pairs held by the solver; the L2
    strength ``alpha * (1 - l1_ratio)`` in the risk and the L1 strength
    ``alpha * l1_ratio`` passed to the solver (``_penalty``). With ``l1_ratio=0`` and
    all pairs the solver receives exactly what it received before these options existed.
    Sets ``n_nonzero_`` besides the base class's fitted attributes.
    """

    def _check_fit_parameters(self, partial_fit):
        check_solver(self.solver, "smooth", warm_start=self.warm_start,
                     l1=self.alpha * self.l1_ratio > 0)

    def _pairs_choice(self, kind, features):
        """``feature_label_pairs`` with ``"auto"`` resolved for ``kind`` and the feature
        map of the run: ``"seen"`` on sequences when the map lays out the seen pairs
        alone (:meth:`~skstruct.features.LinearChainFeatures.restricted`) and the
        solver is a quasi-Newton one or SVRG, else ``"all"``."""
        if self.feature_label_pairs != "auto":
            return self.feature_label_pairs
        compact = (feature_map_hook(features, "restricted") is not None
                   or feature_map_hook(features, "pairs") is not None)
        if kind.name == "sequence" and compact and self.solver in _SEEN_PAIR_SOLVERS:
            return "seen"
        return "all"

    def _training_features(self, kind, batch, y_encoded, classes, decoder):
        features = super()._training_features(kind, batch, y_encoded, classes, decoder)
        if (self._pairs_choice(kind, features) == "seen"
                and feature_map_hook(features, "restricted") is not None):
            check_label_pairs(kind)
            features = features.restricted(
                seen_pairs(batch.X, y_encoded, len(classes), kind))
        return features

    def _penalty(self, kind, features, batch, y_encoded, classes):
        options = {}
        if self.alpha * self.l1_ratio > 0:
            options["l1"] = self.alpha * self.l1_ratio
        if (self.feature_label_pairs == "seen"
                and feature_map_hook(features, "pairs") is None):
            options["fixed"] = unseen_pairs_mask(kind, features, batch, y_encoded, classes)
        l2_strength = self.alpha if self.l1_ratio == 0 else self.alpha * (1 - self.l1_ratio)
        return l2_strength, options

    def _finish_fit(self, kind, classes, batch, features, decoder, result):
        super()._finish_fit(kind, classes, batch, features, decoder, result)
        self.n_nonzero_ = int(np.count_nonzero(result.w))
        self.feature_label_pairs_ = self._pairs_choice(kind, features)
