"""Math as MathML, converted when the documentation is built: no script, no CDN.

``sphinx.ext.mathjax`` leaves the TeX of every ``:math:`` role and ``.. math::`` directive
in the page and loads MathJax from a CDN to typeset it in the browser, so offline (or
behind a proxy) the pages show raw TeX. This extension registers an HTML math renderer
that converts the TeX to MathML at build time with ``latex2mathml`` (pure Python, in the
``docs`` extra); browsers render MathML natively (Firefox, Safari, and Chromium since
version 109), without a script or a font download.

Why not ``sphinx.ext.imgmath``: it needs a LaTeX installation and ``dvipng`` or
``dvisvgm`` on the machine that builds the docs (CI installs from PyPI only), and its
images neither scale with the text nor can be copied as text.

latex2mathml does not reject what it does not know: an unknown command comes out as the
literal ``\\command``, an unbalanced brace is closed silently, and ``&`` outside an
environment that aligns becomes a character. :func:`tex_to_mathml` checks for each of
these and raises :class:`MathConversionError`; the renderer turns that into a Sphinx
warning at the formula's location, so the warnings-are-errors build fails on a formula
that would not render (``tests/test_docs_math.py`` runs the same check on every formula
of ``doc/``, the docstrings and the gallery without building).
"""

import re

# Sphinx and docutils are imported by the renderer only: tex_to_mathml needs neither (the
# tests import this module without them).

__all__ = ["MathConversionError", "tex_to_mathml", "setup"]

# An environment whose rows and columns latex2mathml lays out as a table (``&`` and
# ``\\`` are structure inside it).
_ALIGNING = ("matrix", "pmatrix", "bmatrix", "Bmatrix", "vmatrix", "Vmatrix", "cases",
             "array", "aligned", "align", "align*", "split", "substack")
_ENV = re.compile(r"\\(begin|end)\{([^}]*)\}")
# A token element (identifier, operator, text, number) whose content starts with a
# backslash: a command latex2mathml passed through unconverted.
_UNCONVERTED = re.compile(r"<(mi|mo|mn|mtext|ms)\b[^>]*>\s*(\\[A-Za-z]+|\\.)")
# MathML 2 named spaces (latex2mathml writes \! as one), which MathML Core, the MathML
# that Chromium renders, does not know: as lengths.
_NAMED_SPACES = {"negativethinmathspace": "-0.167em", "thinmathspace": "0.167em",
                 "mediummathspace": "0.222em", "thickmathspace": "0.278em"}
_NAMED_SPACE = re.compile(r'width="(%s)"' % "|".join(_NAMED_SPACES))
_STRAY_AMPERSAND = re.compile(r"<(mi|mo|mtext)\b[^>]*>\s*&(amp;)?\s*</")
# Sphinx's ``:label:`` becomes an anchor; a \label inside the TeX would be unknown.
_LABEL = re.compile(r"\\label\{[^}]*\}")
# What latex2mathml lacks, rewritten to what it has: \arg (as in \arg\max) is an
# operator name, and the ``aligned`` environment (the one Sphinx wraps multi-line
# equations in for MathJax) lays out as ``split`` does (right- and left-aligned columns),
# which latex2mathml turns into a table.
_REWRITES = (
    (re.compile(r"\\arg(?![A-Za-z])"), r"\\operatorname{arg}"),
    (re.compile(r"\\(begin|end)\{aligned\}"), r"\\\1{split}"),
)


class MathConversionError(ValueError):
    """A TeX formula that latex2mathml cannot convert faithfully."""


def _check_braces(tex):
    depth = 0
    i = 0
    while i < len(tex):
        char = tex[i]
        if char == "\\":  # \{ and \} are literal braces, \\ a line break
            i += 2
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth < 0:
                raise MathConversionError("a closing brace '}' without an opening one")
        i += 1
    if depth:
        raise MathConversionError(f"{depth} unclosed brace(s) '{{'")


def _check_environments(tex):
    """``&`` and ``\\\\`` only inside an environment that aligns; environments balanced."""
    stack = []
    pos = 0
    outside = []  # the text outside every aligning environment
    for match in _ENV.finditer(tex):
        if not stack:
            outside.append(tex[pos:match.start()])
        kind, name = match.groups()
        if kind == "begin":
            stack.append(name)
        else:
            if not stack or stack[-1] != name:
                opened = "\\begin{%s}" % stack[-1] if stack else "anything"
                raise MathConversionError(f"\\end{{{name}}} does not close {opened}")
            stack.pop()
        pos = match.end()
    if stack:
        raise MathConversionError(f"\\begin{{{stack[-1]}}} is not closed")
    outside.append(tex[pos:])
    for name in {m.group(2) for m in _ENV.finditer(tex)}:
        if name not in _ALIGNING:
            raise MathConversionError(f"environment {name!r} is not supported "
                                      f"(supported: {', '.join(_ALIGNING)})")
    rest = "".join(outside).replace(r"\&", "")
    if "&" in rest:
        raise MathConversionError("'&' outside an aligning environment "
                                  "(use \\begin{aligned} ... \\end{aligned})")


def tex_to_mathml(tex, display=False):
    """The MathML of a TeX formula, or :class:`MathConversionError` if it would not render.

    Parameters
    ----------
    tex : str
        The formula, without ``$`` delimiters (the content of a ``:math:`` role or of one
        equation of a ``.. math::`` directive).
    display : bool, default=False
        A displayed (block) formula rather than an inline one.

    Returns
    -------
    mathml : str
        A ``<math>`` element.
    """
    from latex2mathml.converter import convert

    tex = _LABEL.sub("", tex).strip()
    for pattern, replacement in _REWRITES:
        tex = pattern.sub(replacement, tex)
    if not tex:
        raise MathConversionError("empty formula")
    _check_braces(tex)
    _check_environments(tex)
    try:
        mathml = convert(tex, display="block" if display else "inline")
    except Exception as error:  # latex2mathml raises its own exception classes
        raise MathConversionError(f"latex2mathml: {type(error).__name__}: {error}") from error
    unconverted = sorted({m.group(2) for m in _UNCONVERTED.finditer(mathml)})
    if unconverted:
        raise MathConversionError(f"unknown to latex2mathml: {', '.join(unconverted)}")
    if _STRAY_AMPERSAND.search(mathml):
        raise MathConversionError("'&' rendered as a character")
    return _NAMED_SPACE.sub(lambda m: f'width="{_NAMED_SPACES[m.group(1)]}"', mathml)


def _equations(node):
    """The equations of a ``math_block``: paragraphs separated by blank lines, as MathJax
    and LaTeX builders read them; one with a ``\\\\`` line break is aligned."""
    parts = [part.strip() for part in node.astext().split("\n\n") if part.strip()]
    out = []
    for part in parts:
        if r"\\" in part and r"\begin" not in part:
            part = r"\begin{split}" + part + r"\end{split}"
        out.append(part)
    return out


def _convert_or_warn(translator, node, tex, display):
    from sphinx.util import logging

    try:
        return tex_to_mathml(tex, display=display)
    except MathConversionError as error:
        logging.getLogger(__name__).warning("math not converted to MathML (%s): %s", error, tex,
                       location=node, type="mathml", subtype="conversion")
        return f'<code class="math-error">{translator.encode(tex)}</code>'


def html_visit_math(self, node):
    self.body.append(self.starttag(node, "span", "", CLASS="math notranslate"))
    self.body.append(_convert_or_warn(self, node, node.astext(), display=False))
    self.body.append("</span>")
    from docutils import nodes

    raise nodes.SkipNode


def html_visit_displaymath(self, node):
    from sphinx.util.math import get_node_equation_number

    self.body.append(self.starttag(node, "div", CLASS="math notranslate"))
    if node.get("number"):
        number = get_node_equation_number(self, node)
        self.body.append(f'<span class="eqno">({number})')
        self.add_permalink_ref(node, "Link to this equation")
        self.body.append("</span>")
    if node.get("nowrap"):
        # Raw TeX meant for a LaTeX environment of its own: convert it as one formula.
        equations = [node.astext()]
    else:
        equations = _equations(node)
    for tex in equations:
        self.body.append(_convert_or_warn(self, node, tex, display=True))
    self.body.append("</div>\n")
    from docutils import nodes

    raise nodes.SkipNode


def setup(app):
    app.add_html_math_renderer("mathml", (html_visit_math, None),
                               (html_visit_displaymath, None))
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
