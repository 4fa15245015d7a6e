"""Column names of tabular inputs, checked at prediction as scikit-learn does."""

__all__ = ["check_feature_names"]


def check_feature_names(estimator, X):
    """Check the column names of ``X`` against ``estimator.feature_names_in_``.

    Raises scikit-learn's ``ValueError`` when a DataFrame's columns are renamed or
    reordered since ``fit``, and warns when names are present at only one of ``fit`` and
    ``predict``.
    """
    try:
        from sklearn.utils.validation import _check_feature_names
    except ImportError:  # scikit-learn < 1.6: a method of BaseEstimator
        estimator._check_feature_names(X, reset=False)
    else:
        _check_feature_names(estimator, X, reset=False)
