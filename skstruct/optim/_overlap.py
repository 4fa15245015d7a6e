"""Passes of an incremental solver with an objective evaluated after each.

An incremental solver alternates a pass over the examples (sequential, one thread) and a
batched evaluation at the pass's iterate (the primal objective, BCFW's duality gap): as
much work as a pass, for the curve and the stopping rule. With two or more compiled
threads and a large problem, :func:`drive_passes` evaluates pass k in a second thread
while pass k + 1 runs, on a snapshot taken after pass k. The values, the reports, the
stopping decisions and the returned iterate are those of the sequential order; when the
solver stops after pass k, the pass run ahead is discarded.
"""

from concurrent.futures import ThreadPoolExecutor

import numba

__all__ = ["OVERLAP_MIN_ENTRIES", "drive_passes", "overlap_threads"]

#: Stored feature entries (times the scores per row) from which the evaluation runs in a
#: second thread: below, a pass takes well under a millisecond and a thread hand-off
#: would cost more than it hides.
OVERLAP_MIN_ENTRIES = 1_000_000


def overlap_threads(problem):
    """Compiled threads for the evaluations when they may overlap the passes, else 0.

    Parameters
    ----------
    problem : CompiledProblem or None

    Returns
    -------
    int
        0 with no compiled problem, one thread, or a problem under
        ``OVERLAP_MIN_ENTRIES``; otherwise the threads left by the pass.
    """
    if problem is None:
        return 0
    features = problem.features
    if int(features.indptr[-1]) * features.n_unary < OVERLAP_MIN_ENTRIES:
        return 0
    return max(0, numba.get_num_threads() - 1)


class _Done:
    """A computed value with the interface of a future."""

    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


def drive_passes(run, next_order, snapshot, evaluate, on_value, max_iter, threads=0,
                 evaluate_after=None):
    """Run up to ``max_iter`` passes, evaluating each chosen one, until ``on_value`` says
    stop.

    Parameters
    ----------
    run : object
        With ``run_pass(order)``.
    next_order : callable
        ``next_order()`` gives the order of the next pass (drawn in pass order, whatever
        the overlap).
    snapshot : callable
        ``snapshot()`` copies what the evaluation and the result need after a pass.
    evaluate : callable
        ``evaluate(snap)``: the evaluation of a snapshot (compiled, releases the GIL).
    on_value : callable
        ``on_value(snap, value)`` records pass k (called in pass order, from this thread)
        and returns True to stop after it.
    max_iter : int
        At least 1.
    threads : int, default=0
        0 evaluates in turn after each pass; n > 0 evaluates in a second thread with n
        compiled threads while the next pass runs.
    evaluate_after : callable or None, default=None
        ``evaluate_after(n_pass)``, called right after every pass ``n_pass`` (in pass
        order, before any later pass runs), says whether to snapshot and evaluate it; the last
        pass (``max_iter``) is always evaluated. None: every pass. A pass not evaluated
        is not reported to ``on_value`` and no pass runs ahead of it.

    Returns
    -------
    snap
        The snapshot of the last pass reported.
    """
    pool = None
    if threads > 0 and max_iter > 1:
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="skstruct-objective")

    def in_worker(snap):
        numba.set_num_threads(threads)  # thread-local
        return evaluate(snap)

    def submit(snap):
        if pool is None:
            return _Done(evaluate(snap))
        return pool.submit(in_worker, snap)

    def wanted(n_pass):
        chosen = evaluate_after is None or bool(evaluate_after(n_pass))
        return chosen or n_pass == max_iter

    try:
        run.run_pass(next_order())
        n_pass = 1
        while True:
            pending = None
            if wanted(n_pass):
                snap = snapshot()
                pending = submit(snap)
            if pending is None:  # not evaluated, so not the last pass
                run.run_pass(next_order())
            else:
                last = n_pass == max_iter
                ahead = pool is not None and not last
                if ahead:
                    run.run_pass(next_order())
                if on_value(snap, pending.result()) or last:
                    return snap
                if not ahead:
                    run.run_pass(next_order())
            n_pass += 1
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
