"""Check the file lists of the sdist and the wheel built by ``python -m build``.

Usage: ``python .ci/check_dists.py dist/skstruct-X.tar.gz dist/skstruct-X-py3-none-any.whl``

- the sdist has the sources, the build hook, the changelog, the tests and the bundled
  data, and no bytecode or kernel cache of a local run;
- the wheel has the bundled data and the precompiled kernel caches (``*.nbi``/``*.nbc``
  in ``skstruct/**/__pycache__``), every one of its files is listed in its RECORD (so
  ``pip uninstall`` removes them), and its version is ``skstruct/_version.py``'s.
"""

import csv
import io
import re
import sys
import tarfile
import zipfile


def main(sdist, wheel):
    errors = []
    with tarfile.open(sdist) as tar:
        names = [name.split("/", 1)[1] for name in tar.getnames() if "/" in name]
    for required in ("CHANGELOG.rst", "README.rst", "pyproject.toml", "setup.py",
                     "skstruct/_version.py", "skstruct/_kernel_cache.py",
                     "skstruct/datasets/data/conll2000-train.txt.gz",
                     "skstruct/datasets/data/ud_english_ewt/LICENSE.txt",
                     "tests/conftest.py", "doc/changelog.rst"):
        if required not in names:
            errors.append(f"sdist lacks {required}")
    stray = [name for name in names if re.search(r"(\.nbi|\.nbc|\.pyc)$|__pycache__", name)]
    if stray:
        errors.append(f"sdist has local build files: {stray[:5]}")

    with zipfile.ZipFile(wheel) as whl:
        files = set(whl.namelist())
        record_name = next(name for name in files if name.endswith(".dist-info/RECORD"))
        record = {row[0] for row in csv.reader(io.StringIO(whl.read(record_name).decode()))}
        metadata = whl.read(record_name.replace("RECORD", "METADATA")).decode()
    version = re.search(r'^__version__ = "(.+)"$',
                        open("skstruct/_version.py").read(), re.M).group(1)
    if f"\nVersion: {version}\n" not in metadata:
        errors.append(f"wheel metadata lacks Version: {version}")
    unlisted = sorted(files - record)
    if unlisted:
        errors.append(f"wheel files not in RECORD: {unlisted[:5]}")
    caches = [name for name in files if name.endswith((".nbi", ".nbc"))]
    if not any(name.endswith(".nbi") for name in caches):
        errors.append("wheel has no precompiled kernel cache (*.nbi)")
    if not any(name.startswith("skstruct/datasets/data/") for name in files):
        errors.append("wheel has no bundled data")
    print(f"sdist: {len(names)} files; wheel: {len(files)} files, {len(caches)} kernel "
          f"cache files, all listed in RECORD; version {version}")
    if errors:
        sys.exit("\n".join(errors))


if __name__ == "__main__":
    main(*sys.argv[1:3])
