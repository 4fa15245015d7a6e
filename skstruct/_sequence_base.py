"""What every sequence estimator shares: input checks, label encoding, scoring."""

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .utils._sequences import check_sample_weight_sequences, check_sequences, split_sequences

__all__ = ["SequenceEstimator"]


class SequenceEstimator(BaseEstimator):
    """Base class of estimators that label every token of a sequence.

    Subclasses implement ``fit`` and ``_decode(batch)`` (encoded labels of all tokens).
    ``X`` is a list of (n_tokens_i, n_features) arrays or sparse matrices, ``y`` a list of
    1-D label arrays of any hashable type.
    """

    def _validate_training_data(self, X, y, sample_weight):
        name = type(self).__name__
        batch, y_flat = check_sequences(X, y, estimator=name)
        if y_flat.dtype.kind == "f" and not np.all(np.isfinite(y_flat)):
            raise ValueError(f"y contains NaN or infinity in {name}.")
        classes, y_encoded = np.unique(y_flat, return_inverse=True)
        if classes.shape[0] < 2:
            raise ValueError(
                f"{name} needs at least 2 distinct labels in y; got {classes.tolist()}."
            )
        weights = check_sample_weight_sequences(sample_weight, batch.n_sequences)
        return batch, classes, y_encoded.astype(np.int64), weights

    def _validate_prediction_data(self, X):
        check_is_fitted(self)
        batch, _ = check_sequences(
            X, n_features=self.n_features_in_, estimator=type(self).__name__
        )
        return batch

    def _labels_to_user(self, encoded, offsets):
        return split_sequences(self.classes_[encoded], offsets)

    def predict(self, X):
        """Predict the label sequence of every input sequence.

        Parameters
        ----------
        X : list of array-like or sparse matrices of shape (n_tokens_i, n_features)

        Returns
        -------
        list of ndarray of shape (n_tokens_i,)
            Predicted labels, of the type of ``classes_``.
        """
        batch = self._validate_prediction_data(X)
        return self._labels_to_user(self._decode(batch), batch.offsets)

    def score(self, X, y, sample_weight=None):
        """Token accuracy of ``predict(X)`` against ``y``.

        Parameters
        ----------
        X : list of array-like or sparse matrices of shape (n_tokens_i, n_features)
        y : list of array-like of shape (n_tokens_i,)
        sample_weight : array-like of shape (n_sequences,), default=None
            Weight of every token of each sequence.

        Returns
        -------
        float
        """
        from .metrics import token_accuracy

        return token_accuracy(y, self.predict(X), sample_weight=sample_weight)
