"""Where numba caches skstruct's compiled kernels: never inside the installed package.

numba's default cache locator writes a kernel's cache files into the ``__pycache__``
directory next to its source whenever that directory is writable. For an installed
package those files are not in the wheel's ``RECORD``, so ``pip uninstall`` leaves them
behind, and a ``site-packages/skstruct`` folder holding only ``__pycache__`` directories
then shadows a later editable install (``import skstruct`` finds a namespace package).

:class:`KernelCacheLocator`, registered in front of numba's locators for the functions
defined in skstruct's own source files, sends every cache write elsewhere:

1. ``NUMBA_CACHE_DIR`` when it is set (the same sub-directories numba itself would use);
2. otherwise a per-user cache directory, ``$XDG_CACHE_HOME/skstruct/<version>/`` on Linux
   (``~/.cache/skstruct/<version>/`` without the variable; the platform's user cache
   directory elsewhere), one sub-directory per package directory;
3. when neither can be written, a private temporary directory of the process (mode 0700,
   removed at exit): the kernels are then compiled once per process, without error.

The kernels precompiled into the wheel by the build hook (``setup.py``) stay in the
package's ``__pycache__`` directories, listed in the wheel's ``RECORD``. They are read,
never written: the first time a kernel's cache is looked up, its index and data files are
copied from there into the directory above when that one has none or an older copy. A
read-only installation therefore loads the precompiled kernels and compiles the others
into the user's cache. numba checks the copied entries exactly as the originals (numba's
version, a stamp of the source file, the CPU, the bytecode), so a copy that does not
match is ignored and the kernel compiles as without it.

An index that cannot be read back (it names a class that has since moved, or it is
truncated) counts as a miss for skstruct's kernels: the kernel compiles again and its
index is rewritten, where numba alone would raise.

``SKSTRUCT_IN_TREE_KERNEL_CACHE=1`` turns the locator off (numba's own locators apply):
the build hook sets it to fill the package's ``__pycache__`` directories.
See doc/developers/compile_time.rst.
"""

import atexit
import os
import pickle
import shutil
import sys
import tempfile

from numba.core import caching, config

from ._version import __version__

__all__ = ["KernelCacheLocator", "kernel_cache_dir", "register"]

#: The directory of the skstruct package whose kernels the locator places.
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))

_ENV_IN_TREE = "SKSTRUCT_IN_TREE_KERNEL_CACHE"

_private_dir = None


def _in_package(py_file):
    """Whether ``py_file`` is a source file of this skstruct package."""
    path = os.path.abspath(py_file)
    return os.path.commonpath([path, PACKAGE_DIR]) == PACKAGE_DIR


def kernel_cache_dir():
    """The directory under which skstruct's kernels compiled at run time are cached.

    Returns
    -------
    path : str
        ``NUMBA_CACHE_DIR`` if set, else ``<user cache dir>/skstruct/<version>``
        (``$XDG_CACHE_HOME/skstruct/<version>`` on Linux). It may not exist yet.
    """
    if config.CACHE_DIR:
        return config.CACHE_DIR
    from numba.misc.appdirs import AppDirs

    return os.path.join(AppDirs(appname="skstruct", appauthor=False).user_cache_dir,
                        __version__)


def _private_cache_dir():
    """A directory of this process only (created on first use, removed at exit)."""
    global _private_dir
    if _private_dir is None:
        _private_dir = tempfile.mkdtemp(prefix="skstruct-kernels-")
        atexit.register(shutil.rmtree, _private_dir, True)
    return _private_dir


def _filename_base(py_func, py_file):
    """numba's name for a function's cache files, without the extension.

    ``<module file stem>.<qualname>-<first line>.py<major><minor><abiflags>`` (numba's
    ``CacheImpl.get_filename_base``): the index is ``<base>.nbi``, the data ``<base>.<n>.nbc``.
    """
    modname = os.path.splitext(os.path.basename(py_file))[0]
    qualname = getattr(py_func, "__qualname__", py_func.__name__)
    fullname = f"{modname}.{qualname}".replace("<", "").replace(">", "")
    return "%s-%d.py%d%d%s" % (fullname, py_func.__code__.co_firstlineno,
                               sys.version_info[0], sys.version_info[1],
                               getattr(sys, "abiflags", ""))


def _seed(bundled_dir, cache_dir, base):
    """Copy a function's precompiled cache files into ``cache_dir`` if newer there.

    The data files are copied before the index (each through a temporary name and an
    atomic rename), so a concurrent process never reads an index whose data is missing.
    Errors are ignored: the kernel then compiles.
    """
    index = os.path.join(bundled_dir, base + ".nbi")
    target = os.path.join(cache_dir, base + ".nbi")
    try:
        if not os.path.isfile(index):
            return
        if os.path.isfile(target) and os.stat(target).st_mtime >= os.stat(index).st_mtime:
            return
        names = [name for name in os.listdir(bundled_dir)
                 if name.startswith(base + ".") and name.endswith(".nbc")]
        for name in names + [base + ".nbi"]:
            temporary = os.path.join(cache_dir, f"{name}.tmp.{os.getpid()}")
            shutil.copy2(os.path.join(bundled_dir, name), temporary)
            os.replace(temporary, os.path.join(cache_dir, name))
    except OSError:
        pass


class KernelCacheLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """numba cache locator of skstruct's kernels: outside the package, seeded from it.

    Handles the functions defined in skstruct's source files (others: ``None``, so that
    numba's own locators apply). Source stamps and file names are numba's own, so the
    cache files are interchangeable with the ones numba writes in ``__pycache__``.
    """

    def __init__(self, py_func, py_file, cache_root):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = os.path.join(cache_root,
                                        self.get_suitable_cache_subpath(py_file))
        self._bundled_path = os.path.join(os.path.dirname(os.path.abspath(py_file)),
                                          "__pycache__")
        self._filename_base = _filename_base(py_func, py_file)

    def get_cache_path(self):
        return self._cache_path

    @classmethod
    def from_function(cls, py_func, py_file):
        if os.environ.get(_ENV_IN_TREE, "0") == "1":
            return None
        if not os.path.isfile(py_file) or not _in_package(py_file):
            return None
        for root in (kernel_cache_dir, _private_cache_dir):
            try:
                self = cls(py_func, py_file, root())
                self.ensure_cache_path()
            except OSError:
                continue
            _seed(self._bundled_path, self._cache_path, self._filename_base)
            return self
        return None


def _cache_impl_class():
    # numba >= 0.57 names it CacheImpl; keep older private names working.
    return getattr(caching, "CacheImpl", None) or caching._CacheImpl


def _ours(index_path):
    """Whether a cache index belongs to one of skstruct's kernels."""
    roots = [PACKAGE_DIR, kernel_cache_dir()] + ([_private_dir] if _private_dir else [])
    path = os.path.abspath(index_path)
    return any(os.path.commonpath([path, os.path.abspath(root)]) == os.path.abspath(root)
               for root in roots)


def _tolerant(load_index):
    """numba's index loader, reading an index it cannot unpickle as empty for our kernels."""
    def _load_index(self):
        try:
            return load_index(self)
        except (AttributeError, ImportError, EOFError, pickle.UnpicklingError):
            if not _ours(self._index_path):
                raise
            return {}

    _load_index.skstruct_tolerant = True
    return _load_index


def register():
    """Put :class:`KernelCacheLocator` first among numba's cache locators (idempotent).

    Must run before skstruct's kernels are defined: numba picks a kernel's locator when
    the ``@njit(cache=True)`` decorator runs. ``skstruct/__init__.py`` calls it first.
    Also makes an unreadable index of skstruct's kernels a cache miss (module docstring).
    """
    locators = _cache_impl_class()._locator_classes
    if KernelCacheLocator not in locators:
        locators.insert(0, KernelCacheLocator)
    index_file = caching.IndexDataCacheFile
    if not getattr(index_file._load_index, "skstruct_tolerant", False):
        index_file._load_index = _tolerant(index_file._load_index)


register()
