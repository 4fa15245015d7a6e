"""Packaging: the version, where run-time kernel caches go, and what an install owns.

The kernels compiled at run time must be cached outside the installed package (else
``pip uninstall`` leaves them behind, see skstruct/_kernel_cache.py), the kernels
precompiled into the wheel must be read from it, and every file of an installed wheel must
be in its RECORD. .ci/run checks the same on a real wheel, installed read-only, and after
``pip uninstall``.
"""

import os
import pickle
import re
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path

import pytest
from numba.core import caching

import skstruct
from skstruct import _kernel_cache
from skstruct._kernel_cache import KernelCacheLocator, PACKAGE_DIR, kernel_cache_dir
from skstruct.utils._parallel import longest_group

ROOT = Path(__file__).resolve().parents[1]


def _under(path, directory):
    path, directory = os.path.abspath(path), os.path.abspath(directory)
    return os.path.commonpath([path, directory]) == directory


@pytest.fixture
def user_cache(tmp_path, monkeypatch):
    """No NUMBA_CACHE_DIR, and $XDG_CACHE_HOME in a temporary directory."""
    monkeypatch.setattr(_kernel_cache.config, "CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv(_kernel_cache._ENV_IN_TREE, raising=False)
    return tmp_path / "xdg"


def test_version_is_pep440_and_is_the_installed_metadata():
    # PEP 440 public version: N(.N)*, then optional aN/bN/rcN, .postN, .devN.
    pattern = r"\d+(\.\d+)*((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?"
    assert re.fullmatch(pattern, skstruct.__version__)
    try:
        assert metadata.version("skstruct") == skstruct.__version__
    except metadata.PackageNotFoundError:
        pytest.skip("skstruct is imported from a source tree that is not installed")


def test_locator_is_registered_first_and_kernels_are_cached_outside_the_package():
    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl
    assert impl._locator_classes[0] is KernelCacheLocator
    # A kernel defined at import: its cache directory was chosen by the locator then.
    cache_path = longest_group._cache.cache_path
    assert not _under(cache_path, PACKAGE_DIR)


def test_locator_uses_the_user_cache_directory_with_the_version(user_cache):
    locator = KernelCacheLocator.from_function(longest_group.py_func,
                                               longest_group.py_func.__code__.co_filename)
    assert kernel_cache_dir() == str(user_cache / "skstruct" / skstruct.__version__)
    assert _under(locator.get_cache_path(), kernel_cache_dir())
    assert os.path.isdir(locator.get_cache_path())


def test_locator_honours_numba_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(_kernel_cache.config, "CACHE_DIR", str(tmp_path / "numba"))
    monkeypatch.delenv(_kernel_cache._ENV_IN_TREE, raising=False)
    locator = KernelCacheLocator.from_function(longest_group.py_func,
                                               longest_group.py_func.__code__.co_filename)
    # The sub-directory numba's own locator would use under NUMBA_CACHE_DIR.
    expected = tmp_path / "numba" / locator.get_suitable_cache_subpath(
        longest_group.py_func.__code__.co_filename)
    assert locator.get_cache_path() == str(expected)


def test_locator_leaves_other_functions_and_the_build_hook_to_numba(user_cache, monkeypatch):
    def outside(x):
        return x

    assert KernelCacheLocator.from_function(outside, __file__) is None
    monkeypatch.setenv(_kernel_cache._ENV_IN_TREE, "1")
    assert KernelCacheLocator.from_function(
        longest_group.py_func, longest_group.py_func.__code__.co_filename) is None


def test_locator_falls_back_to_a_private_directory_when_no_cache_directory_is_writable(
        tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setattr(_kernel_cache.config, "CACHE_DIR", str(blocker / "numba"))
    monkeypatch.delenv(_kernel_cache._ENV_IN_TREE, raising=False)
    locator = KernelCacheLocator.from_function(longest_group.py_func,
                                               longest_group.py_func.__code__.co_filename)
    assert locator is not None
    assert _under(locator.get_cache_path(), _kernel_cache._private_cache_dir())
    assert not _under(locator.get_cache_path(), PACKAGE_DIR)


def test_seeding_copies_the_precompiled_files_when_the_copy_is_missing_or_older(tmp_path):
    bundled, target = tmp_path / "bundled", tmp_path / "target"
    bundled.mkdir()
    target.mkdir()
    base = "_mod.kernel-12.py311"
    for name, content in [(base + ".nbi", b"index"), (base + ".1.nbc", b"data"),
                          ("_mod.other-40.py311.nbi", b"other")]:
        (bundled / name).write_bytes(content)
    _kernel_cache._seed(str(bundled), str(target), base)
    assert sorted(os.listdir(target)) == [base + ".1.nbc", base + ".nbi"]
    # A copy that numba updated since (a newer index) is kept.
    (target / (base + ".nbi")).write_bytes(b"index with more entries")
    _kernel_cache._seed(str(bundled), str(target), base)
    assert (target / (base + ".nbi")).read_bytes() == b"index with more entries"
    # A newer precompiled index (a reinstalled wheel) replaces it.
    later = os.stat(target / (base + ".nbi")).st_mtime + 10
    os.utime(bundled / (base + ".nbi"), (later, later))
    _kernel_cache._seed(str(bundled), str(target), base)
    assert (target / (base + ".nbi")).read_bytes() == b"index"


def _package_caches():
    return {str(path): path.stat().st_mtime for path in Path(PACKAGE_DIR).rglob("*.nb[ic]")}


def test_kernel_compiled_at_run_time_is_cached_in_the_user_directory_only(tmp_path):
    before = _package_caches()
    env = {key: value for key, value in os.environ.items()
           if key not in ("NUMBA_CACHE_DIR", _kernel_cache._ENV_IN_TREE)}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    code = textwrap.dedent("""
        import numpy as np
        from skstruct.utils._parallel import longest_group
        assert longest_group(np.array([0, 3, 4], dtype=np.int32), 0, 2) == 3
    """)
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=tmp_path)
    cached = list((tmp_path / "skstruct").rglob("_parallel.longest_group-*.nbi"))
    assert len(cached) == 1
    assert _package_caches() == before


def test_an_index_that_cannot_be_unpickled_is_a_cache_miss(tmp_path):
    # numba pickles a kernel's argument types in its index; an index naming a class that
    # has moved since must compile the kernel again and rewrite the index, not raise
    env = {key: value for key, value in os.environ.items()
           if key not in ("NUMBA_CACHE_DIR", _kernel_cache._ENV_IN_TREE)}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    (tmp_path / "work").mkdir()
    code = textwrap.dedent("""
        import numpy as np
        from skstruct.utils._parallel import longest_group
        assert longest_group(np.array([0, 3, 4], dtype=np.int32), 0, 2) == 3
    """)
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=tmp_path / "work")
    index = next((tmp_path / "xdg" / "skstruct").rglob("_parallel.longest_group-*.nbi"))
    with open(index, "rb") as f:
        version = pickle.load(f)
    with open(index, "wb") as f:
        pickle.dump(version, f, protocol=-1)
        f.write(b"cskstruct.decoders._core.engine_protocol\nNoSuchClass\n.")
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=tmp_path / "work")
    with open(index, "rb") as f:
        assert pickle.load(f) == version
        _, overloads = pickle.loads(f.read())
    assert len(overloads) == 1


def test_other_libraries_unreadable_indexes_still_raise(tmp_path):
    index = tmp_path / "other.nbi"
    cache_file = caching.IndexDataCacheFile.__new__(caching.IndexDataCacheFile)
    cache_file._index_path = str(index)
    cache_file._version = "v"
    with open(index, "wb") as f:
        pickle.dump("v", f)
        f.write(b"cskstruct.decoders._core.engine_protocol\nNoSuchClass\n.")
    with pytest.raises(AttributeError):
        cache_file._load_index()


def _installed_files():
    """The files of the skstruct distribution if it is installed from a wheel, else None."""
    try:
        distribution = metadata.distribution("skstruct")
    except metadata.PackageNotFoundError:
        return None
    if distribution.read_text("RECORD") is None:
        return None  # metadata of a source tree (egg-info), not of an installed wheel
    located = {os.path.abspath(file.locate()) for file in distribution.files or ()}
    if os.path.abspath(skstruct.__file__) not in located:
        return None  # an editable install, or another copy than the one imported
    return located


def test_every_file_of_the_installed_package_is_in_the_record():
    located = _installed_files()
    if located is None:
        pytest.skip("skstruct is not installed from a wheel")
    present = {str(path) for path in Path(PACKAGE_DIR).rglob("*") if path.is_file()}
    assert sorted(present - located) == []
    # The precompiled kernels, when the wheel has them, are in the RECORD too.
    caches = [path for path in located if path.endswith(".nbi")]
    assert all(_under(path, PACKAGE_DIR) for path in caches)


def test_lower_bounds_are_the_pins_of_the_oldest_check_and_the_build_requirements():
    tomllib = pytest.importorskip("tomllib")
    pins = ROOT / ".ci" / "oldest-requirements.txt"
    if not pins.exists() or not (ROOT / "pyproject.toml").exists():
        pytest.skip("not run from a checkout")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    bounds = {}
    for requirement in project["project"]["dependencies"]:
        name, bound = re.match(r"([\w-]+)>=([\w.]+)", requirement).groups()
        bounds[name] = bound
    pinned = dict(re.match(r"([\w-]+)==([\w.]+)", line).groups()
                  for line in pins.read_text().splitlines()
                  if line.strip() and not line.startswith("#"))
    assert set(pinned) == set(bounds)
    for name, bound in bounds.items():
        assert pinned[name] == bound or pinned[name].startswith(bound + ".")
    assert sorted(project["build-system"]["requires"][1:]) == sorted(
        project["project"]["dependencies"])
