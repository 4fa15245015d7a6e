"""One progress reporter for every solver: the curve, the verbose lines, the callback."""

import time

from ..utils._compile_report import compile_seconds

__all__ = ["Progress", "format_seconds"]


def format_seconds(seconds):
    """A duration for a progress line: ``"12.34s"``, ``"3m05s"`` or ``"2h07m"``.

    Parameters
    ----------
    seconds : float
        Non-negative duration.

    Returns
    -------
    str

    Examples
    --------
    >>> format_seconds(1.5), format_seconds(185.2), format_seconds(7625.0)
    ('1.50s', '3m05s', '2h07m')
    """
    seconds = max(float(seconds), 0.0)
    if seconds < 60.0:
        return f"{seconds:.2f}s"
    minutes = int(seconds // 60)
    if minutes < 60:
        return f"{minutes}m{int(seconds - 60 * minutes):02d}s"
    return f"{minutes // 60}h{minutes % 60:02d}m"


class Progress:
    """Records the objective after each iteration, prints it, and runs the callback.

    With ``verbose`` positive every :meth:`report` prints one line: the iteration index,
    the objective, the extra columns, the time elapsed since the reporter was made and,
    when the solver gave its iteration budget ``max_iter``, an estimate of the time left
    to run all of it,

        left = (max_iter − n) · t̄,   t̄ = (t_n − t_1) / (n − 1)  (n ≥ 2;  t̄ = t_1 at n = 1),

    with t_k the elapsed time at the k-th report **less the seconds numba spent compiling
    since the reporter was made** (:func:`~skstruct.utils._compile_report.compile_seconds`):
    a kernel compiles once, so its minutes say nothing of the iterations to come. The
    first iteration is left out of t̄ once there is a second one, because it also pays
    for setting up. The estimate is an upper bound on the wait when the solver's
    tolerance stops it before ``max_iter``. A line whose elapsed time includes compiling
    says how much (``compiling 58.20s``).

    Parameters
    ----------
    verbose : int
        Print one line per iteration when positive.
    callback : callable or None
        ``callback(n_iter, w, objective)``; returning True asks the solver to stop.
    printer : callable, default=print
    unit : str, default="iter"
        What an iteration is called in the printed lines ("iter", "pass", "epoch").
    max_iter : int or None, default=None
        The solver's iteration budget; the lines show ``n/max_iter`` and the time left
        only when it is given.

    Attributes
    ----------
    curve : list of float
        The objective of every reported iteration.
    columns : dict of str to list
        The extra quantities of every reported iteration, by name.
    times : list of float
        Seconds elapsed at every report.
    compile_times : list of float
        Seconds of those spent compiling numba kernels, at every report.

    Examples
    --------
    >>> import numpy as np
    >>> progress = Progress(verbose=1, callback=None, unit="pass")
    >>> progress.report(np.zeros(2), 1.5, gap=0.25, printer_time=False)
    pass    1  objective  1.50000000e+00  gap 2.500e-01
    False
    >>> progress.curve
    [1.5]
    >>> progress = Progress(verbose=1, callback=None, unit="pass", max_iter=20)
    >>> progress.report(np.zeros(2), 1.5, printer_time=False)
    pass    1/20  objective  1.50000000e+00
    False
    >>> progress.remaining(elapsed=[2.0, 3.0, 4.0])  # 17 passes left at 1 s a pass
    17.0
    """

    def __init__(self, verbose, callback, printer=print, unit="iter", max_iter=None):
        if max_iter is not None and (isinstance(max_iter, bool) or int(max_iter) != max_iter
                                     or max_iter < 1):
            raise ValueError(f"max_iter must be a positive integer or None, got {max_iter!r}.")
        self.verbose, self.callback, self.printer, self.unit = verbose, callback, printer, unit
        self.max_iter = None if max_iter is None else int(max_iter)
        self.curve = []
        self.iterations = []
        self.columns = {}
        self.times = []
        self.compile_times = []
        self.start = time.perf_counter()
        self._compile_start = compile_seconds()

    @property
    def n_iter(self):
        """The index of the last iteration reported (the number of reports unless
        :meth:`report` was given ``iteration``)."""
        return self.iterations[-1] if self.iterations else 0

    @property
    def elapsed(self):
        """Seconds since the reporter was made."""
        return time.perf_counter() - self.start

    def remaining(self, elapsed=None):
        """Estimated seconds left until ``max_iter`` iterations are reported.

        Parameters
        ----------
        elapsed : sequence of float, default=None
            Seconds elapsed at each report so far, compile time excluded; None reads the
            recorded ``times`` less ``compile_times``.

        Returns
        -------
        float or None
            None without ``max_iter`` or before the first report; 0.0 once ``max_iter``
            iterations are reported.
        """
        if elapsed is None:
            elapsed = [t - c for t, c in zip(self.times, self.compile_times)]
        else:
            elapsed = list(elapsed)
        n = len(elapsed)
        if self.max_iter is None or n == 0:
            return None
        done = self.iterations[n - 1] if len(self.iterations) >= n else n
        first = self.iterations[0] if len(self.iterations) >= n else 1
        left = max(self.max_iter - done, 0)
        per_iter = (elapsed[0] / first if n == 1
                    else (elapsed[-1] - elapsed[0]) / max(done - first, 1))
        return left * max(per_iter, 0.0)

    def report(self, w, objective, *, printer_time=True, iteration=None, **columns):
        """Record one iteration; True when the callback asks to stop.

        Parameters
        ----------
        w : ndarray of shape (n_params,)
            The iterate the objective belongs to (passed to the callback).
        objective : float
        printer_time : bool, default=True
            Print the elapsed time (and, with ``max_iter``, the estimated time left).
        iteration : int or None, default=None
            The index of this iteration when the solver does not report every one
            (BCFW's passes without a duality gap); None: the one after the last reported.
        **columns : float or int
            Extra quantities to print and record (``gap=``, ``grad_norm=``, ``mistakes=``);
            each is appended to ``self.columns[name]``.

        Returns
        -------
        bool
        """
        self.curve.append(float(objective))
        self.iterations.append(self.n_iter + 1 if iteration is None else int(iteration))
        self.times.append(self.elapsed)
        self.compile_times.append(compile_seconds() - self._compile_start)
        for name, value in columns.items():
            self.columns.setdefault(name, []).append(value)
        if self.verbose:
            index = f"{self.n_iter:4d}"
            if self.max_iter is not None:
                index += f"/{self.max_iter}"
            parts = [f"{self.unit} {index}", f"objective {objective: .8e}"]
            for name, value in columns.items():
                parts.append(f"{name} {value:.3e}" if isinstance(value, float)
                             else f"{name} {value}")
            if printer_time:
                parts.append(f"time {format_seconds(self.times[-1]):>8s}")
                if self.compile_times[-1] >= 0.005:
                    parts.append(f"compiling {format_seconds(self.compile_times[-1]):>8s}")
                left = self.remaining()
                if left is not None and self.n_iter < self.max_iter:
                    parts.append(f"left ~{format_seconds(left):>8s}")
            self.printer("  ".join(parts))
        return self.callback is not None and bool(
            self.callback(self.n_iter, w, objective))
