"""The README and the docs' index page describe the package as it is.

Every public estimator, registered solver, decoder and compat facade is named in the
README's tour; the snippet the README and the index page share prints what the README says
it prints, without a warning.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

import skstruct
import skstruct.compat
import skstruct.decoders
from skstruct.decoders import Decoder
from skstruct.optim import LOSS_FAMILIES, solver_names

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.rst"
INDEX = ROOT / "doc" / "index.rst"

pytestmark = pytest.mark.skipif(not README.exists(),
                                reason="the README is not next to the tests")


def public_estimators():
    return sorted(name for name in skstruct.__all__ if not name.startswith("_"))


def public_decoders():
    """The decoder classes and SparseMAP solvers of :mod:`skstruct.decoders`."""
    names = []
    for name in skstruct.decoders.__all__:
        obj = getattr(skstruct.decoders, name)
        if isinstance(obj, type) and issubclass(obj, Decoder) and obj is not Decoder:
            names.append(name)
        elif callable(obj) and name.endswith("sparsemap"):
            names.append(name)
    return sorted(names)


def public_facades():
    return sorted(f"skstruct.compat.{name}" for name in skstruct.compat.__all__)


def literals(text):
    """The inline literals of a reST text (````name````), quotes kept."""
    return set(re.findall(r"``([^`]+)``", text))


def missing_names(text):
    """The public names the text does not mention as an inline literal."""
    found = literals(text)
    missing = [name for name in public_estimators() + public_decoders() + public_facades()
               if name not in found]
    missing += [f'"{name}"' for name in sorted(solver_names(*LOSS_FAMILIES))
                if f'"{name}"' not in found]
    return missing


def test_public_lists_are_not_empty():
    # The checks below mean something only if the lists they walk are found.
    assert "CRF" in public_estimators()
    assert {"ChainDecoder", "TreeDecoder", "sparsemap"} <= set(public_decoders())
    assert "skstruct.compat.sklearn_crfsuite" in public_facades()
    assert {"lbfgs", "bcfw"} <= solver_names(*LOSS_FAMILIES)


def test_readme_names_every_public_estimator_solver_decoder_and_facade():
    missing = missing_names(README.read_text(encoding="utf-8"))
    assert not missing, f"README.rst does not mention {missing}"


def test_missing_names_finds_a_name_taken_out():
    text = README.read_text(encoding="utf-8").replace("``TreeDecoder``", "trees")
    assert "TreeDecoder" in missing_names(text)


def snippet(path):
    """The first ``code-block:: python`` of a reST file, dedented."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = lines.index(".. code-block:: python") + 2
    code = []
    for line in lines[start:]:
        if line and not line.startswith("    "):
            break
        code.append(line[4:])
    return "\n".join(code).strip() + "\n"


def test_index_page_shows_the_readme_snippet():
    if not INDEX.exists():
        pytest.skip("the documentation sources are not next to the tests")
    assert snippet(INDEX) == snippet(README)


def test_readme_snippet_prints_what_the_readme_says_without_warnings():
    text = README.read_text(encoding="utf-8")
    claim = re.search(r"It prints ``([^`]+)``", text)
    assert claim, "the README does not say what its snippet prints"
    # Every warning is an error: a ConvergenceWarning fails the run.
    result = subprocess.run([sys.executable, "-W", "error", "-c", snippet(README)],
                            capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == claim.group(1)
    assert "Warning" not in result.stderr
