"""Parameter constraints shared by the estimators."""

from numbers import Integral

from sklearn.utils._param_validation import Interval

__all__ = ["N_JOBS_CONSTRAINT"]

#: ``n_jobs`` as joblib takes it: None, a positive count, or -1, -2, ... (all cores, all
#: but one, ...); 0 has no meaning and is rejected.
N_JOBS_CONSTRAINT = [
    None,
    Interval(Integral, None, -1, closed="right"),
    Interval(Integral, 1, None, closed="left"),
]
