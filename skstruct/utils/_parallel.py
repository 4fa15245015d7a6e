"""How many threads compiled kernels (and BLAS) may use."""

from contextlib import contextmanager

import numba

__all__ = ["n_jobs_threads", "single_threaded_blas", "threads_for"]

#: Below this much work per thread (in multiply-adds, about a millisecond), waking and
#: joining threads costs more than it saves; smaller batches use fewer threads.
MIN_WORK_PER_THREAD = 1_000_000

_BLAS_CONTROLLER = None


@contextmanager
def threads_for(n_work):
    """Run the enclosed kernels with at most one thread per ``MIN_WORK_PER_THREAD`` of work.

    Uses :func:`numba.set_num_threads`, which is thread-local, so concurrent callers do not
    interfere; the previous setting is restored on exit.
    """
    previous = numba.get_num_threads()
    numba.set_num_threads(max(1, min(previous, int(n_work) // MIN_WORK_PER_THREAD)))
    try:
        yield
    finally:
        numba.set_num_threads(previous)


def n_jobs_threads_count(n_jobs):
    """Threads for an estimator's ``n_jobs``: None keeps the current number; a positive n
    is n (at most the threads numba started); a negative n is all but |n| − 1.

    Examples
    --------
    >>> import numba
    >>> n_jobs_threads_count(1)
    1
    >>> n_jobs_threads_count(-1) == numba.config.NUMBA_NUM_THREADS
    True
    """
    if n_jobs is None:
        return numba.get_num_threads()
    available = numba.config.NUMBA_NUM_THREADS
    n = n_jobs if n_jobs > 0 else max(1, available + 1 + n_jobs)
    return min(n, available)


@contextmanager
def n_jobs_threads(n_jobs):
    """Let compiled kernels use ``n_jobs`` threads (None: unchanged, i.e. all unless a
    caller limited them; negative: all but |n| − 1); restored on exit.

    ``n_jobs=0`` is rejected by the estimators' parameter validation, as in joblib.
    """
    previous = numba.get_num_threads()
    if n_jobs is not None:
        numba.set_num_threads(n_jobs_threads_count(n_jobs))
    try:
        yield
    finally:
        numba.set_num_threads(previous)


def single_threaded_blas():
    """Context limiting BLAS to one thread.

    For solvers whose BLAS calls are small (products with a few hundred cutting planes,
    factorizations a few hundred wide) and alternate with numba's parallel kernels: BLAS
    threads then cost far more than they save, as idle OpenBLAS threads keep spinning on
    the cores numba's threads need (measured on 2 cores: 13 ms instead of under 1 ms for a
    250 x 4,000 matrix-vector product between two numba kernels).
    """
    global _BLAS_CONTROLLER
    if _BLAS_CONTROLLER is None:
        from threadpoolctl import ThreadpoolController

        _BLAS_CONTROLLER = ThreadpoolController()
    return _BLAS_CONTROLLER.limit(limits=1, user_api="blas")
