"""seqlearn's ``StructuredPerceptron`` on :class:`skstruct.StructuredPerceptron`."""

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics import accuracy_score
from sklearn.utils.validation import check_is_fitted

from ..._ssvm import StructuredPerceptron as _SkstructPerceptron
from ._lengths import split_sequences

__all__ = ["StructuredPerceptron"]


class StructuredPerceptron(BaseEstimator, ClassifierMixin):
    """seqlearn's averaged structured perceptron for sequences.

    Takes seqlearn's parameters and its stacked input (one (n_tokens, n_features)
    matrix, dense or sparse, flat labels and the sequence ``lengths``) and trains
    :class:`skstruct.StructuredPerceptron` (averaged, Viterbi, the sequences shuffled
    each pass) on one block per sequence.

    Parameters
    ----------
    decode : {"viterbi", "bestfirst"}, default="viterbi"
        Both decode exactly by Viterbi (seqlearn's "bestfirst" is a greedy
        approximation of it).
    lr_exponent : float, default=0.1
        Accepted for the signature: skstruct's perceptron takes unit steps, the
        averaged perceptron of Collins (2002), and does not depend on it.
    max_iter : int, default=10
        Passes over the data (skstruct stops after a pass without mistakes).
    random_state : int, RandomState or None, default=None
        Order of the sequences.
    trans_features : bool, default=False
        Only ``False``: features on transitions have no skstruct equivalent.
    verbose : int, default=0

    Attributes
    ----------
    classes_ : ndarray
    coef_ : ndarray of shape (n_classes, n_features)
    intercept_init_, intercept_final_ : ndarray of shape (n_classes,)
        The start and end scores.
    intercept_trans_ : ndarray of shape (n_classes, n_classes)
        The transition scores.
    estimator_ : skstruct.StructuredPerceptron
    """

    def __init__(self, decode="viterbi", lr_exponent=.1, max_iter=10, random_state=None,
                 trans_features=False, verbose=0):
        self.decode = decode
        self.lr_exponent = lr_exponent
        self.max_iter = max_iter
        self.random_state = random_state
        self.trans_features = trans_features
        self.verbose = verbose

    def fit(self, X, y, lengths):
        """Fit to a set of sequences.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_tokens, n_features)
        y : array-like of shape (n_tokens,)
        lengths : array-like of int of shape (n_sequences,)
            Lengths of the sequences, which follow each other in ``X`` and ``y``.

        Returns
        -------
        self : StructuredPerceptron
        """
        if self.decode not in ("viterbi", "bestfirst"):
            raise ValueError(f"Unknown decoder {self.decode!r}")
        if self.trans_features:
            raise NotImplementedError(
                "trans_features=True (features on transitions) has no skstruct "
                "equivalent; skstruct's chains score transitions by one weight per label "
                "pair.")
        X_list, y_list = split_sequences(X, lengths, y)
        estimator = _SkstructPerceptron(max_iter=self.max_iter, averaging=True,
                                        random_state=self.random_state,
                                        verbose=self.verbose)
        estimator.fit(X_list, y_list)
        self.estimator_ = estimator
        self.classes_ = estimator.classes_
        self.coef_ = estimator.coef_
        self.intercept_init_ = estimator.start_transition_
        self.intercept_final_ = estimator.end_transition_
        self.intercept_trans_ = estimator.transition_
        return self

    def predict(self, X, lengths=None):
        """Predict the labels of the tokens of ``X``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_tokens, n_features)
        lengths : array-like of int of shape (n_sequences,), default=None
            None: ``X`` is one sequence.

        Returns
        -------
        y : ndarray of shape (n_tokens,)
        """
        check_is_fitted(self, "estimator_")
        X_list, _ = split_sequences(X, lengths)
        return np.concatenate(self.estimator_.predict(X_list))

    def score(self, X, y, lengths=None):
        """Token accuracy, as seqlearn's.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_tokens, n_features)
        y : array-like of shape (n_tokens,)
        lengths : array-like of int, default=None

        Returns
        -------
        accuracy : float
        """
        return accuracy_score(y, self.predict(X, lengths))
