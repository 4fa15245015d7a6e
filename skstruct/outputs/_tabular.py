"""What the tabular kinds (multiclass, multilabel) share: X a 2-D matrix, one sample a row."""

import numpy as np
from sklearn.utils.validation import _get_feature_names, check_array

from ..utils._features import check_feature_names
from ..utils._matchings import looks_like_matchings
from ..utils._sequences import SequenceBatch
from ._sequence import is_sequence_input

__all__ = ["check_tabular_prediction", "tabular_batch"]


def tabular_batch(X, name):
    """A 2-D (n_samples, n_features) matrix as a batch of one-row examples."""
    if is_sequence_input(X):
        raise ValueError(
            f"{name} was fitted on tabular data (X a 2-D (n_samples, n_features) matrix), "
            "but X is a list of per-sequence matrices."
        )
    if looks_like_matchings(X):
        raise ValueError(
            f"{name} was fitted on tabular data (X a 2-D (n_samples, n_features) matrix), "
            "but X is a list of matching instances (pair features of rows and columns)."
        )
    feature_names = _get_feature_names(X)
    X = check_array(X, accept_sparse="csr", dtype=np.float64, estimator=name)
    batch = SequenceBatch(X, np.arange(X.shape[0] + 1))
    batch.feature_names = feature_names
    return batch


def check_tabular_prediction(X, fitted):
    """Prediction data of a model fitted on tabular data: column names and count."""
    name = type(fitted).__name__
    check_feature_names(fitted, X)
    batch = tabular_batch(X, name)
    if batch.n_features != fitted.n_features_in_:
        raise ValueError(
            f"X has {batch.n_features} features, but {name} is expecting "
            f"{fitted.n_features_in_} features as input."
        )
    return batch


class TabularKind:
    """Mixin of the tabular kinds: prediction data, coefficients and unary scores.

    Fitted attributes: ``coef_`` (n_outputs, n_features) and ``intercept_``
    (n_outputs,); ``decision_function`` returns the (n_samples, n_outputs) unary scores
    (multiclass with two classes: one (n_samples,) score, see
    :class:`~skstruct.outputs.MulticlassKind`), and the marginals are the
    (n_samples, n_outputs) probabilities of ``predict_proba``.
    """

    has_label_pairs = True
    tabular_probabilities = True
    example_noun = "samples"

    def check_prediction_data(self, X, fitted):
        return check_tabular_prediction(X, fitted)

    def unary_to_user(self, unary, batch):
        return unary

    def store_coefficients(self, fitted, features, w):
        unary, bias = features.unpack(w)
        fitted.intercept_ = bias.copy()
        fitted.coef_ = np.ascontiguousarray(unary).T

    def coefficients(self, fitted, features):
        return features.pack(*self.coefficient_parts(fitted))

    def pack_unary(self, features, unary):
        return features.pack(unary, np.zeros(np.shape(unary)[1]))

    def coefficient_parts(self, fitted):
        return fitted.coef_.T, fitted.intercept_
