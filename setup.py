"""Build hook: compile the most used kernels into the wheel (everything else: pyproject.toml).

After ``build_py`` has copied the package to the build directory, ``python -m
skstruct.warmup`` runs there, without ``NUMBA_CACHE_DIR``, so numba writes its cache into
the ``__pycache__`` directories next to the copied sources; the wheel takes them along.
numba keys that cache by a hash of each source file's content (not its path or time), the
numba version and the CPU, so it is valid where the wheel is installed on the machine that
built it, and ignored (the kernels compile on first use, as without it) anywhere else.
See doc/developers/compile_time.rst. ``SKSTRUCT_KERNEL_CACHE=0`` turns the hook off.
"""

import glob
import os
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py


class build_py_with_kernel_cache(build_py):
    def run(self):
        super().run()
        if self.editable_mode or os.environ.get("SKSTRUCT_KERNEL_CACHE", "1") == "0":
            return
        package = os.path.join(self.build_lib, "skstruct")
        # The build directory is reused between builds: drop the entries of older sources.
        for pattern in ("*.nbi", "*.nbc"):
            for path in glob.glob(os.path.join(package, "**", "__pycache__", pattern),
                                  recursive=True):
                os.remove(path)
        env = {key: value for key, value in os.environ.items()
               if key not in ("NUMBA_CACHE_DIR", "NUMBA_DISABLE_JIT")}
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [os.path.abspath(self.build_lib), env.get("PYTHONPATH")]))
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        # skstruct's cache locator (skstruct/_kernel_cache.py) would write to the user's
        # cache directory: here the cache goes next to the copied sources, into the wheel.
        env["SKSTRUCT_IN_TREE_KERNEL_CACHE"] = "1"
        try:
            subprocess.run([sys.executable, "-m", "skstruct.warmup"], env=env, check=True,
                           cwd=self.build_lib)
        except (OSError, subprocess.CalledProcessError) as error:
            # The package works without the cache; say so and build it anyway.
            print(f"skstruct: kernels not precompiled ({error}); they compile on first use",
                  file=sys.stderr)


setup(cmdclass={"build_py": build_py_with_kernel_cache})
