"""sklearn-crfsuite's scorers, for ``cross_val_score``, ``GridSearchCV``,
``RandomizedSearchCV``: ``flat_accuracy`` and ``sequence_accuracy``. ``make_scorer`` is
scikit-learn's, re-exported as sklearn-crfsuite does, so that
``make_scorer(metrics.flat_f1_score, average="weighted", labels=labels)`` works unchanged.
"""

from sklearn.metrics import make_scorer

from . import metrics

__all__ = ["flat_accuracy", "make_scorer", "sequence_accuracy"]

flat_accuracy = make_scorer(metrics.flat_accuracy_score)
sequence_accuracy = make_scorer(metrics.sequence_accuracy_score)
