"""Every formula of the documentation converts to MathML (doc/_ext/mathml.py).

The docs render math offline, converted to MathML at build time; a formula latex2mathml
cannot convert faithfully (an unknown command, an unbalanced brace, a stray ``&``) would
be a warning, hence an error, of the docs build. This test finds every ``:math:`` role and
``.. math::`` directive in ``doc/``, in the docstrings and comments of ``skstruct/`` and in
the gallery's examples, and converts each, without building the docs.
"""

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "doc"

pytestmark = pytest.mark.skipif(not (DOC / "_ext" / "mathml.py").exists(),
                                reason="the documentation sources are not next to the tests")

_ROLE = re.compile(r":math:`([^`]+)`")
_DIRECTIVE = re.compile(r"^(?P<indent>[ \t]*)\.\. math::[ \t]*(?P<argument>.*)$")


def _math_of_text(text):
    """The formulas of reStructuredText ``text``: (tex, display) pairs."""
    found = [(" ".join(m.group(1).split()), False) for m in _ROLE.finditer(text)]
    lines = text.splitlines()
    for i, line in enumerate(lines):
        match = _DIRECTIVE.match(line)
        if not match:
            continue
        indent = len(match.group("indent").expandtabs())
        body = [match.group("argument")] if match.group("argument").strip() else []
        for following in lines[i + 1:]:
            if following.strip() and len(following) - len(following.lstrip()) <= indent:
                break
            if following.strip().startswith(":") and not body:
                continue  # an option (:label:, :nowrap:) before the content
            body.append(following.strip())
        # Equations are separated by blank lines, as Sphinx reads the directive.
        paragraphs = "\n".join(body).strip().split("\n\n")
        found.extend(("\n".join(p.split("\n")).strip(), True) for p in paragraphs
                     if p.strip())
    return found


def _python_texts(path):
    """The string constants (docstrings) and comments of a Python file."""
    source = path.read_text(encoding="utf-8")
    texts = [node.value for node in ast.walk(ast.parse(source))
             if isinstance(node, ast.Constant) and isinstance(node.value, str)]
    comments = [line.strip()[1:].strip() for line in source.splitlines()
                if line.strip().startswith("#")]
    texts.append("\n".join(comments))
    return texts


def all_formulas():
    """(where, tex, display) for every formula of the documentation's sources."""
    formulas = []
    for path in sorted(DOC.rglob("*.rst")):
        if any(part in ("_build", "generated", "auto_examples", "benchmark_results")
               for part in path.relative_to(DOC).parts):
            continue  # written by the build
        for tex, display in _math_of_text(path.read_text(encoding="utf-8")):
            formulas.append((str(path.relative_to(ROOT)), tex, display))
    for folder in (ROOT / "skstruct", ROOT / "examples" / "gallery"):
        for path in sorted(folder.rglob("*.py")):
            for text in _python_texts(path):
                for tex, display in _math_of_text(text):
                    formulas.append((str(path.relative_to(ROOT)), tex, display))
    return formulas


@pytest.fixture(scope="module")
def mathml():
    pytest.importorskip("latex2mathml")
    sys.path.insert(0, str(DOC / "_ext"))
    try:
        import mathml as module
    finally:
        sys.path.remove(str(DOC / "_ext"))
    return module


def _equations(mathml, tex, display):
    if not display:
        return [tex]
    node = type("Node", (), {"astext": lambda self: tex})()
    return mathml._equations(node)


def test_every_formula_converts(mathml):
    formulas = all_formulas()
    # The sources have well over a hundred formulas; far fewer means the search broke.
    assert len(formulas) > 100, len(formulas)
    failures = []
    for where, tex, display in formulas:
        for equation in _equations(mathml, tex, display):
            try:
                out = mathml.tex_to_mathml(equation, display=display)
            except mathml.MathConversionError as error:
                failures.append(f"{where}: {equation!r}: {error}")
            else:
                assert out.startswith("<math")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("tex, message", [
    (r"\alpha + \notacommand", "unknown"),
    (r"\frac{a}{b", "unclosed"),
    (r"a}", "closing brace"),
    (r"a &= b", "'&'"),
    (r"\begin{aligned} a &= b \end{cases}", "does not close"),
])
def test_unfaithful_conversions_are_errors(mathml, tex, message):
    with pytest.raises(mathml.MathConversionError, match=message):
        mathml.tex_to_mathml(tex)


def test_conversions(mathml):
    assert "display=\"block\"" in mathml.tex_to_mathml(r"\sum_i x_i", display=True)
    assert "&#x003B1;" in mathml.tex_to_mathml(r"\alpha")  # α
    aligned = mathml.tex_to_mathml(r"\begin{aligned} a &= b \\ c &= d \end{aligned}")
    assert "<mtable" in aligned and "&</" not in aligned
