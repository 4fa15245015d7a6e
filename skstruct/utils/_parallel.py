"""How many threads compiled kernels (and BLAS) may use."""

from contextlib import contextmanager

import numba
import numpy as np
from numba import njit

__all__ = ["dynamic_schedule", "entry_chunks", "longest_group", "n_jobs_threads",
           "single_threaded_blas", "threads_for", "token_chunks"]

#: Below this much work per thread (in multiply-adds, about a millisecond), waking and
#: joining threads costs more than it saves; smaller batches use fewer threads.
MIN_WORK_PER_THREAD = 1_000_000

_BLAS_CONTROLLER = None

#: Tokens per chunk of sequences in the kernels that run chunks of sequences in parallel:
#: large enough that a chunk costs far more than taking it from the queue (tens of
#: microseconds at 22 states), small enough that a batch of a few hundred thousand tokens
#: has a hundred chunks, so that a thread slowed down by another process takes fewer.
TOKENS_PER_CHUNK = 2048

#: Most chunks of one batch.
MAX_CHUNKS = 4096


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


@contextmanager
def dynamic_schedule():
    """Hand the iterations of the enclosed parallel kernels to the threads one at a time.

    numba's default cuts a parallel loop into one equal block per thread, so a region
    lasts as long as its slowest thread: on a machine where another process holds a core,
    the thread sharing that core finishes its block at half speed while the others wait.
    With a chunk size of 1, a thread takes the next iteration when it is done with its own,
    so the threads that run faster take more of them. Kernels written for this loop over
    chunks of work (:func:`token_chunks`), many more than threads. The setting is
    thread-local and restored on exit.

    Only for kernels whose one parallel loop is that loop over chunks: numba turns every
    whole-array expression of a ``parallel=True`` kernel (``np.zeros``, ``a[:] = 0``,
    ``a + b``) into a parallel loop of its own, which this schedule would cut into single
    elements (measured: a forward-backward with one ``np.zeros`` of its output went from
    0.14 s to 1.4 s).
    """
    with numba.parallel_chunksize(1):
        yield


def chunk_count(n_tokens, n_sequences):
    """Number of chunks of a batch: about ``TOKENS_PER_CHUNK`` tokens each, at most one per
    sequence, at least one. It depends on the batch only (never on the thread count), so
    sums taken chunk by chunk are the same on any number of threads."""
    return int(max(1, min(n_sequences, MAX_CHUNKS, n_tokens // TOKENS_PER_CHUNK)))


@njit(cache=True, nogil=True)
def token_chunks(offsets, n_chunks):
    """Cut sequences into ``n_chunks`` contiguous chunks of about equal numbers of tokens.

    Parameters
    ----------
    offsets : ndarray of shape (n_sequences + 1,), int64
        Sequence ``i`` owns tokens ``offsets[i]:offsets[i + 1]``.
    n_chunks : int
        At least 1 and at most ``n_sequences`` (when there are sequences).

    Returns
    -------
    bounds : ndarray of shape (n_chunks + 1,), int64
        Chunk ``c`` holds sequences ``bounds[c]:bounds[c + 1]``, never empty when
        ``n_chunks <= n_sequences``; ``bounds[0] = 0`` and ``bounds[-1] = n_sequences``.
        Chunk ``c`` starts at the first sequence that starts at or after ``c / n_chunks``
        of the tokens (and after the previous chunk's first sequence).
    """
    n_seq = offsets.shape[0] - 1
    n_chunks = max(1, min(n_chunks, n_seq)) if n_seq > 0 else 1
    bounds = np.empty(n_chunks + 1, dtype=np.int64)
    bounds[0] = 0
    total = offsets[n_seq] - offsets[0]
    seq = 0
    for c in range(1, n_chunks):
        target = offsets[0] + (total * c) // n_chunks
        while seq < n_seq and offsets[seq] < target:
            seq += 1
        # leave at least one sequence to this chunk and to each chunk after it
        seq = max(seq, bounds[c - 1] + 1)
        seq = min(seq, n_seq - (n_chunks - c))
        bounds[c] = seq
    bounds[n_chunks] = n_seq
    return bounds


@njit(cache=True, nogil=True)
def entry_chunks(offsets, entries_per_chunk):
    """Chunks of factors (or sequences) of about ``entries_per_chunk`` entries each.

    Parameters
    ----------
    offsets : ndarray of shape (n_groups + 1,), int64
        Group ``g`` owns entries ``offsets[g]:offsets[g + 1]``.
    entries_per_chunk : int

    Returns
    -------
    bounds : ndarray of shape (n_chunks + 1,), int64
        As :func:`token_chunks`; the number of chunks depends on the sizes only, never on
        the thread count.
    """
    n_groups = offsets.shape[0] - 1
    n_entries = offsets[n_groups] - offsets[0] if n_groups > 0 else 0
    return token_chunks(offsets, max(1, min(n_groups, n_entries // entries_per_chunk)))


@njit(cache=True, nogil=True)
def longest_group(offsets, first, last):
    """max(offsets[g + 1] - offsets[g]) over groups first <= g < last (0 when none): the
    scratch size of a chunk."""
    longest = 0
    for g in range(first, last):
        longest = max(longest, offsets[g + 1] - offsets[g])
    return longest
