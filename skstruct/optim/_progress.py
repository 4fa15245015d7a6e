"""One progress reporter for every solver: the curve, the verbose lines, the callback."""

import time

__all__ = ["Progress"]


class Progress:
    """Records the objective after each iteration, prints it, and runs the callback.

    Parameters
    ----------
    verbose : int
        Print one line per iteration when positive.
    callback : callable or None
        ``callback(n_iter, w, objective)``; returning True asks the solver to stop.
    printer : callable, default=print
    unit : str, default="iter"
        What an iteration is called in the printed lines ("iter", "pass", "epoch").

    Examples
    --------
    >>> import numpy as np
    >>> progress = Progress(verbose=1, callback=None, unit="pass")
    >>> progress.report(np.zeros(2), 1.5, gap=0.25, printer_time=False)
    pass    1  objective  1.50000000e+00  gap 2.500e-01
    False
    >>> progress.curve
    [1.5]
    """

    def __init__(self, verbose, callback, printer=print, unit="iter"):
        self.verbose, self.callback, self.printer, self.unit = verbose, callback, printer, unit
        self.curve = []
        self.columns = {}
        self.start = time.perf_counter()

    @property
    def n_iter(self):
        """Iterations reported so far."""
        return len(self.curve)

    @property
    def elapsed(self):
        """Seconds since the reporter was made."""
        return time.perf_counter() - self.start

    def report(self, w, objective, *, printer_time=True, **columns):
        """Record one iteration; True when the callback asks to stop.

        Parameters
        ----------
        w : ndarray of shape (n_params,)
            The iterate the objective belongs to (passed to the callback).
        objective : float
        printer_time : bool, default=True
            Print the elapsed time.
        **columns : float or int
            Extra quantities to print and record (``gap=``, ``grad_norm=``, ``mistakes=``);
            each is appended to ``self.columns[name]``.

        Returns
        -------
        bool
        """
        self.curve.append(float(objective))
        for name, value in columns.items():
            self.columns.setdefault(name, []).append(value)
        if self.verbose:
            parts = [f"{self.unit} {len(self.curve):4d}", f"objective {objective: .8e}"]
            for name, value in columns.items():
                parts.append(f"{name} {value:.3e}" if isinstance(value, float)
                             else f"{name} {value}")
            if printer_time:
                parts.append(f"time {self.elapsed:8.2f}s")
            self.printer("  ".join(parts))
        return self.callback is not None and bool(
            self.callback(len(self.curve), w, objective))
