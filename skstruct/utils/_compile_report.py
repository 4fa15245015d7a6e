"""Time spent compiling numba kernels, measured from numba's compile events.

numba broadcasts a ``"numba:compile"`` event around every compilation a dispatcher runs
(not around a load from its on-disk cache). A compilation can start others (a kernel calls
a kernel not compiled yet for those types, or numba compiles the implementation of a NumPy
function it uses); only the outermost ones are summed, so that no second is counted twice.
"""

import threading
import time

from numba.core import event

__all__ = ["CompileNotice", "CompileTimer", "compile_seconds", "estimated_compile_seconds"]


class CompileTimer(event.Listener):
    """Context manager summing the seconds numba spends compiling inside its block.

    Attributes
    ----------
    seconds : float
        Wall-clock seconds of the outermost compilations that ended inside the block.
    compiled : list of tuple (str, tuple)
        ``(qualified name, argument types)`` of each outermost compilation, in order.
    durations : list of float
        The seconds of each of them, in the same order.

    Examples
    --------
    >>> from skstruct.utils._compile_report import CompileTimer
    >>> with CompileTimer() as timer:
    ...     pass
    >>> timer.seconds, timer.compiled
    (0.0, [])
    """

    def __init__(self):
        self.seconds = 0.0
        self.compiled = []
        self.durations = []
        self._lock = threading.Lock()
        self._depth = 0
        self._start = None

    def on_start(self, event):
        with self._lock:
            if self._depth == 0:
                self._start = time.perf_counter()
            self._depth += 1

    def on_end(self, event):
        with self._lock:
            self._depth -= 1
            if self._depth == 0:
                seconds = time.perf_counter() - self._start
                self.seconds += seconds
                self.durations.append(seconds)
                dispatcher = event.data["dispatcher"]
                name = getattr(dispatcher.py_func, "__qualname__", repr(dispatcher))
                module = getattr(dispatcher.py_func, "__module__", "")
                self.compiled.append((f"{module}.{name}", tuple(event.data["args"])))

    def start(self):
        """Start counting; returns ``self``."""
        event.register("numba:compile", self)
        return self

    def stop(self):
        """Stop counting; returns ``self``."""
        event.unregister("numba:compile", self)
        return self

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()
        return False

    def summary(self):
        """One line: the compilations counted and their seconds."""
        return (f"numba compiled {len(self.compiled)} kernel specialization"
                f"{'' if len(self.compiled) == 1 else 's'} in {self.seconds:.1f} s")


class _Total(CompileTimer):
    """The process-wide counter behind :func:`compile_seconds`."""

    registered = False


_TOTAL = _Total()


def compile_seconds():
    """Seconds numba has spent compiling in this process since the first call of this.

    The first call starts a process-wide :class:`CompileTimer` (and returns 0.0); later
    calls return the seconds of the outermost compilations that ended since, so that the
    difference of two calls is the compile time in between (the progress lines subtract
    it from their time estimates).

    Returns
    -------
    float
    """
    with _TOTAL._lock:
        if not _Total.registered:
            _Total.registered = True
            event.register("numba:compile", _TOTAL)
        return _TOTAL.seconds + (time.perf_counter() - _TOTAL._start
                                 if _TOTAL._depth > 0 else 0.0)


#: Seconds a first fit spends compiling with an empty cache, by (estimator, solver), from
#: the kernels' compile seconds measured on the 2-core reference machine, unloaded
#: (``python -m skstruct.warmup`` with an empty ``NUMBA_CACHE_DIR``, which prints them;
#: doc/developers/compile_time.rst), rounded up. The engine's passes are shared by every
#: output kind, so tabular and tree fits of the same solver compile about as long;
#: ``"*"`` is any solver.
COMPILE_SECONDS = {
    ("CRF", "lbfgs"): 20,
    ("CRF", "owlqn"): 20,
    ("CRF", "svrg"): 20,
    ("StructuredSVM", "bcfw"): 60,
    ("StructuredSVM", "svrg"): 45,
    ("StructuredSVM", "casimir"): 45,
    ("StructuredSVM", "subgradient"): 25,
    ("StructuredSVM", "cutting_plane"): 25,
    ("StructuredPerceptron", "*"): 10,
    ("SparseMAPClassifier", "*"): 15,
    ("PerturbedMAPClassifier", "*"): 10,
}
_DEFAULT_SECONDS = 20


def estimated_compile_seconds(estimator, solver):
    """The seconds a first fit of ``estimator`` with ``solver`` compiles, from
    :data:`COMPILE_SECONDS` (20 s when the pair is not listed)."""
    return COMPILE_SECONDS.get((estimator, solver),
                               COMPILE_SECONDS.get((estimator, "*"), _DEFAULT_SECONDS))


class CompileNotice(event.Listener):
    """Context manager that says, before numba starts compiling inside its block, that it
    does, once, and for about how long.

    Nothing is printed when every kernel the block runs comes from numba's cache (a load
    sends no compile event) or when ``verbose`` is 0.

    Parameters
    ----------
    verbose : int
        Print the notice when positive.
    what : str
        What compiles, for the message (``"StructuredSVM(solver='bcfw')"``).
    seconds : float
        The estimate printed (:func:`estimated_compile_seconds`).
    printer : callable, default=print

    Attributes
    ----------
    printed : bool
        Whether the notice was printed.

    Examples
    --------
    >>> from numba import njit
    >>> @njit
    ... def plus_one(x):
    ...     return x + 1
    >>> with CompileNotice(1, "plus_one", 2):
    ...     plus_one(1)
    compiling plus_one once (its numba kernels are not cached yet), about 2 s; later runs load them from the cache
    2
    >>> with CompileNotice(1, "plus_one", 2):  # compiled: nothing to say
    ...     plus_one(2)
    3
    """

    def __init__(self, verbose, what, seconds, printer=print):
        self.verbose, self.what, self.seconds, self.printer = verbose, what, seconds, printer
        self.printed = False
        self._lock = threading.Lock()
        self._active = False

    def message(self):
        """The notice's text."""
        return (f"compiling {self.what} once (its numba kernels are not cached yet), about "
                f"{self.seconds:.0f} s; later runs load them from the cache")

    def on_start(self, event):
        with self._lock:
            if self.printed:
                return
            self.printed = True
        self.printer(self.message())

    def on_end(self, event):
        pass

    def __enter__(self):
        if self.verbose:
            event.register("numba:compile", self)
            self._active = True
        return self

    def __exit__(self, *exc_info):
        if self._active:
            event.unregister("numba:compile", self)
            self._active = False
        return False
