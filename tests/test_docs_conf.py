"""The docs build imports the installed skstruct unless SKSTRUCT_DOCS_FROM_SOURCE=1.

``python -m sphinx doc ...`` run from a checkout's root puts the checkout first on
sys.path, so without care ``import skstruct`` in doc/conf.py finds the source tree, whose
kernels are not precompiled: the gallery would compile every kernel again. The test runs
doc/conf.py as the build does, from the root of a fake checkout whose ``skstruct`` package
is a marker, and checks which skstruct it imported.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import skstruct

CONF = Path(__file__).resolve().parent.parent / "doc" / "conf.py"

pytestmark = pytest.mark.skipif(not CONF.exists(),
                                reason="the documentation sources are not next to the tests")

# conf.py is run as Sphinx runs it (executed as a file), by ``python -m`` from the root of
# the checkout: sys.path[0] is then that root.
PROBE = """
import runpy, sys
namespace = runpy.run_path("doc/conf.py")
print(namespace["skstruct"].__file__)
"""


@pytest.fixture
def checkout(tmp_path):
    (tmp_path / "doc").mkdir()
    shutil.copy(CONF, tmp_path / "doc" / "conf.py")
    (tmp_path / "skstruct").mkdir()
    (tmp_path / "skstruct" / "__init__.py").write_text('__version__ = "0.0.source"\n')
    (tmp_path / "probe.py").write_text(PROBE)
    return tmp_path


def _imported(checkout, from_source):
    env = {key: value for key, value in os.environ.items()
           if key != "SKSTRUCT_DOCS_FROM_SOURCE"}
    if from_source:
        env["SKSTRUCT_DOCS_FROM_SOURCE"] = "1"
    # The installed skstruct (the one this test imports) stays importable.
    installed = str(Path(skstruct.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [installed, env.get("PYTHONPATH")]))
    result = subprocess.run([sys.executable, "-m", "probe"], cwd=checkout, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return Path(result.stdout.strip().splitlines()[-1]).resolve()


def test_installed_package_by_default(checkout):
    imported = _imported(checkout, from_source=False)
    assert imported == Path(skstruct.__file__).resolve()
    assert checkout not in imported.parents


def test_source_tree_on_request(checkout):
    imported = _imported(checkout, from_source=True)
    assert imported == (checkout / "skstruct" / "__init__.py").resolve()
