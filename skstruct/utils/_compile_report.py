"""Time spent compiling numba kernels, measured from numba's compile events.

numba broadcasts a ``"numba:compile"`` event around every compilation a dispatcher runs
(not around a load from its on-disk cache). A compilation can start others (a kernel calls
a kernel not compiled yet for those types, or numba compiles the implementation of a NumPy
function it uses); only the outermost ones are summed, so that no second is counted twice.
"""

import threading
import time

from numba.core import event

__all__ = ["CompileTimer"]


class CompileTimer(event.Listener):
    """Context manager summing the seconds numba spends compiling inside its block.

    Attributes
    ----------
    seconds : float
        Wall-clock seconds of the outermost compilations that ended inside the block.
    compiled : list of tuple (str, tuple)
        ``(qualified name, argument types)`` of each outermost compilation, in order.

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
                self.seconds += time.perf_counter() - self._start
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
