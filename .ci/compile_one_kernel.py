"""Compile a kernel specialization that no wheel precompiles; check where numba cached it.

Run by .ci/run before ``pip uninstall skstruct``: the cache files must be in the user's
kernel cache directory (skstruct._kernel_cache.kernel_cache_dir()), none in site-packages.
"""

import glob
import os
import sys
import time

import numpy as np

import skstruct
from skstruct._kernel_cache import kernel_cache_dir
from skstruct.utils._parallel import longest_group
from skstruct.warmup import CompileTimer

start = time.time() - 1
with CompileTimer() as timer:
    # int32 offsets: the warm-up and the estimators use int64, so this one is compiled here.
    assert longest_group(np.array([0, 2, 7, 8], dtype=np.int32), 0, 3) == 5
if not timer.compiled:
    sys.exit("expected a kernel to compile")
package = os.path.dirname(skstruct.__file__)
cached = glob.glob(os.path.join(kernel_cache_dir(), "**", "_parallel.longest_group-*.nbi"),
                   recursive=True)
written = [path for path in glob.glob(os.path.join(package, "**", "*"), recursive=True)
           if os.stat(path).st_mtime > start]
print(f"compiled {len(timer.compiled)} specialization(s); cached in {cached}")
if not cached or written:
    sys.exit(f"cache not in {kernel_cache_dir()}, or files written into the package: {written}")
