"""How many threads a compiled kernel may use for a batch of a given size."""

from contextlib import contextmanager

import numba

__all__ = ["threads_for"]

#: Below this much work per thread (in multiply-adds, about a millisecond), waking and
#: joining threads costs more than it saves; smaller batches use fewer threads.
MIN_WORK_PER_THREAD = 1_000_000


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
