"""Run another library's example script with only its imports changed.

The scripts are read from the library's source distribution (pystruct 0.3.2, seqlearn
0.2), as the peers' set-up script keeps them (``$SKSTRUCT_PEERS_SDISTS``, by default
``~/.cache/skstruct-peers/peers-sdists``); tests that need one skip without it.
"""

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

SDISTS = Path(os.environ.get("SKSTRUCT_PEERS_SDISTS",
                             Path.home() / ".cache" / "skstruct-peers" / "peers-sdists"))
ROOT = Path(__file__).resolve().parent.parent


def read_example(sdist, member):
    """The text of ``member`` of the source distribution ``sdist`` (skip without it)."""
    path = SDISTS / sdist
    if not path.exists():
        pytest.skip(f"{path} is not there (bash ../shared/peers/setup_peers.sh)")
    with tarfile.open(path) as tar:
        text = tar.extractfile(member).read().decode("utf-8")
    return text.replace("\r\n", "\n")


def rewrite_imports(text, rewrites):
    """Replace whole import lines, and only those: every key must be an import line of
    ``text`` (an error otherwise), every value an import line or empty (removed)."""
    lines = text.split("\n")
    for old, new in rewrites.items():
        assert old.startswith(("import ", "from ")), old
        assert new == "" or new.startswith(("import ", "from ")), new
        hits = [i for i, line in enumerate(lines) if line.strip() == old]
        assert hits, f"{old!r} is not an import line of the example"
        for i in hits:
            indent = lines[i][:len(lines[i]) - len(lines[i].lstrip())]
            lines[i] = indent + new if new else indent + "pass"
    changed = "\n".join(lines)
    leftover = [line for line in changed.split("\n")
                if line.strip().startswith(("from pystruct", "import pystruct",
                                            "from seqlearn", "import seqlearn"))]
    assert not leftover, f"imports of the original library left: {leftover}"
    return changed


def run_script(text, cwd, timeout=900, allowed_error=None, args=()):
    """Run ``text`` as a script in ``cwd`` with skstruct importable (``args`` its
    command-line arguments); its stdout.

    ``allowed_error``: a message the script may end with (an error of the example
    itself under current versions of its other dependencies, which the original
    raises as well)."""
    script = Path(cwd) / "example.py"
    script.write_text(text, encoding="utf-8")
    env = dict(os.environ, MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, str(script), *args], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0 and allowed_error is not None:
        last = result.stderr.strip().split("\n")[-1]
        assert allowed_error in last, result.stderr[-3000:]
        return result.stdout
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout
