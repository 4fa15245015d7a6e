"""The threading layer of the compiled kernels: fork-safe and thread-safe, chosen at import.

numba runs ``parallel=True`` kernels on one of three threading layers, picked the first
time a parallel kernel runs, in the order TBB, OpenMP, workqueue unless the user says
otherwise (``NUMBA_THREADING_LAYER``, ``NUMBA_THREADING_LAYER_PRIORITY`` or
``numba.config``):

- TBB is fork-safe and thread-safe;
- GNU OpenMP (Linux) is not fork-safe: a process forked after the layer started (joblib's
  ``multiprocessing`` backend, ``multiprocessing.Pool`` with the fork start method, Dask
  or Ray workers forked from a parent that had fitted a model) is terminated by numba at
  its first parallel kernel, and the pool waiting for it hangs;
- workqueue is not thread-safe: two Python threads in parallel kernels at once (joblib's
  ``threading`` backend) abort the process.

So skstruct wants TBB. numba looks for TBB's library by name only, and pip puts the
``tbb`` package's library in ``<prefix>/lib``, which the dynamic loader does not search
in a virtual environment: numba then silently takes OpenMP. Importing skstruct loads the
library from the installed ``tbb`` package by its path, before any kernel runs; numba's
own selection then finds it. Nothing else is changed, so a user's choice of layer or
priority is respected.

Where OpenMP runs anyway (a user's choice, no TBB for the platform, or a parallel numba
call made before skstruct was imported), a fork hook keeps the forked children alive: it
tells numba's OpenMP layer that the child now owns the runtime and limits the child to one
thread (the OpenMP thread pool was not copied by the fork; a one-thread region does not
use it). The children then run skstruct's kernels serially instead of being terminated.

See the user guide page on parallelism.
"""

import ctypes
import os
import sys
import warnings
from importlib import metadata

import numba
from numba.np.ufunc import parallel as _numba_parallel

__all__ = ["threading_layer_info"]

#: The name numba loads TBB's runtime by, per platform.
_TBB_LIBRARY = {"linux": "libtbb.so.12", "darwin": "libtbb.12.dylib", "win32": "tbb12.dll"}

_FORK_UNSAFE_MESSAGE = (
    "numba's parallel kernels were started on the GNU OpenMP threading layer before skstruct "
    "was imported, so skstruct could not choose TBB. GNU OpenMP is not fork-safe: processes "
    "forked from this one (joblib's 'multiprocessing' backend, multiprocessing with the "
    "fork start method) run skstruct's kernels on one thread. Import skstruct before running "
    "parallel numba code, or set NUMBA_THREADING_LAYER=tbb, to keep them parallel."
)


def _explicit_layer():
    """The threading layer the user asked numba for, or None for numba's default order."""
    layer = str(numba.config.THREADING_LAYER).lower()
    return None if layer == "default" else layer


def _load_tbb_from_package():
    """Load the ``tbb`` package's runtime by path so that numba's lookup by name finds it.

    Returns the path loaded, or None (package absent, or no library for this platform).
    A library already loaded under the same name is returned by the loader to every later
    lookup by that name, so this copy (a version numba accepts, since the package pins it)
    also takes precedence over an older system copy that numba would reject.
    """
    name = _TBB_LIBRARY.get(sys.platform)
    if name is None:
        return None
    try:
        files = metadata.files("tbb") or ()
    except metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.name == name:
            path = os.path.normpath(file.locate())
            try:
                ctypes.CDLL(path)
            except OSError:
                return None
            return path
    return None


def _gnu_openmp_running():
    """Whether numba's threading layer has started and is GNU OpenMP (not fork-safe)."""
    if not _numba_parallel._is_initialized or _numba_parallel._threading_layer != "omp":
        return False
    from numba.np.ufunc import omppool

    return getattr(omppool, "openmp_vendor", "GNU") == "GNU"


def _one_thread_after_fork():
    """In a child forked while GNU OpenMP runs, keep numba's kernels to one thread.

    numba terminates a forked child at its first parallel kernel if the layer was started
    by the parent (its check compares the recorded pid with the child's parent pid).
    Calling the layer's ``launch_threads`` again records the child's pid; the OpenMP
    runtime itself is already initialized, so nothing else happens. The thread pool
    GNU OpenMP keeps did not survive the fork, so the child must never ask it for more
    than one thread: the thread count is set to one and later requests are clamped.
    """
    if not _gnu_openmp_running():
        return
    try:
        from numba.np.ufunc import omppool

        ctypes.CFUNCTYPE(None, ctypes.c_int)(omppool.launch_threads)(1)
        set_threads = _numba_parallel._set_num_threads
        set_threads(1)
        _numba_parallel._set_num_threads = lambda n: set_threads(1)
    except Exception:  # noqa: BLE001 - numba internals moved: numba's own check applies
        pass


def threading_layer_info():
    """Report which threading layer numba uses, or will use, and why.

    Returns
    -------
    info : dict
        ``layer``: the running layer (``"tbb"``, ``"omp"``, ``"workqueue"``), or None
        when no parallel kernel has run yet; ``requested``: the user's
        ``NUMBA_THREADING_LAYER`` or None; ``tbb_library``: the path of the TBB runtime
        skstruct loaded, or None; ``fork_safe``: False when GNU OpenMP runs (forked
        children then run kernels on one thread).
    """
    layer = _numba_parallel._threading_layer if _numba_parallel._is_initialized else None
    return {
        "layer": layer,
        "requested": _explicit_layer(),
        "tbb_library": _TBB_PATH,
        "fork_safe": not _gnu_openmp_running(),
    }


_TBB_PATH = None
if not _numba_parallel._is_initialized:
    if _explicit_layer() not in ("omp", "workqueue"):
        _TBB_PATH = _load_tbb_from_package()
elif _gnu_openmp_running() and _explicit_layer() is None:
    warnings.warn(_FORK_UNSAFE_MESSAGE, RuntimeWarning, stacklevel=2)

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_one_thread_after_fork)
