"""A documentation page per benchmark results file (``benchmarks/results/*.md``).

The benchmark scripts write their results as Markdown next to them. When the build
starts, this extension converts every such file to reStructuredText in
``doc/benchmark_results/<name>.rst`` (generated, not committed), with the plots whose
names start with the file's name (``smoothed_svm_chunking.png`` goes with
``smoothed_svm.md``) shown at the end, so the pages follow the results without anyone
editing them. ``doc/benchmarks.rst``, written by hand, links to them.

Why a converter rather than a Markdown parser for Sphinx: the results files use a small,
stable subset of Markdown (headings, paragraphs, bullet lists with indented
continuations, pipe tables, fenced and indented code, ``code``, *emphasis*,
**bold** and links), and converting that takes a hundred lines and no new dependency of
the documentation build. Every character of running text that reStructuredText would
read as markup is escaped, so no results file can make the (warnings-are-errors) build
fail; a construct the converter does not know comes out as plain text.
"""

import os
import re
import shutil
from pathlib import Path

__all__ = ["markdown_to_rst", "setup"]

OUTPUT_DIR = "benchmark_results"
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_ORDERED = re.compile(r"^(\s*)\d+[.)]\s+(.*)$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$")
_INLINE = re.compile(
    r"(?P<code>`+)(?P<code_text>.+?)(?P=code)"  # `code`
    r"|\*\*(?P<bold>[^*\s](?:[^*]*[^*\s])?)\*\*"  # **bold**
    r"|(?<![\w*])\*(?P<em>[^*\s](?:[^*]*[^*\s])?)\*(?![\w*])"  # *emphasis*
    r"|\[(?P<link_text>[^\]]+)\]\((?P<link_url>[^)\s]+)\)"  # [text](url)
)
_ADORNMENTS = "=-~^\"'"
_SOLID = re.compile(r"[^\s.,;:!?()\[\]{}'\"/\-]")


def _escape(text):
    """Plain text with every character reStructuredText could read as markup escaped."""
    return re.sub(r"([\\`*_|\[\]<>:])", r"\\\1", text)


def _inline(text):
    """Markdown inline text to reStructuredText (escaped, with the known constructs)."""
    out, pos = [], 0
    for match in _INLINE.finditer(text):
        out.append(_escape(text[pos:match.start()]))
        if match.group("code") is not None:
            code = match.group("code_text").strip()
            markup = f":literal:`{_escape(code)}`" if code else ""
        elif match.group("bold") is not None:
            markup = f"**{_escape(match.group('bold'))}**"
        elif match.group("em") is not None:
            markup = f"*{_escape(match.group('em'))}*"
        else:
            url = match.group("link_url")
            if re.match(r"^[a-z]+://", url):
                markup = f"`{_escape(match.group('link_text'))} <{url}>`__"
            else:  # a relative link leads nowhere in the built pages: keep its text
                markup = _escape(match.group("link_text"))
        # inline markup must stand between spaces or punctuation: "\ " joins it to a word
        if markup and match.start() > 0 and _SOLID.match(text[match.start() - 1]):
            markup = "\\ " + markup
        if markup and match.end() < len(text) and _SOLID.match(text[match.end()]):
            markup += "\\ "
        out.append(markup)
        pos = match.end()
    out.append(_escape(text[pos:]))
    return "".join(out)


def _cells(line):
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|") and not line.endswith("\\|"):
        line = line[:-1]
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line)]


def _table(rows):
    """A pipe table (header row first, rule row removed) as a list-table."""
    width = max(len(row) for row in rows)
    out = [".. list-table::", "   :header-rows: 1", ""]
    for row in rows:
        row = row + [""] * (width - len(row))
        for j, cell in enumerate(row):
            text = _inline(cell.replace("\\|", "|")) or "\\"
            out.append(("   * - " if j == 0 else "     - ") + text)
    return out + [""]


def _literal(lines):
    body = [line.rstrip() for line in lines]
    while body and not body[-1]:
        body.pop()
    if not body:
        return []
    indent = min(len(line) - len(line.lstrip()) for line in body if line.strip())
    return [".. code-block:: text", ""] + [
        ("   " + line[indent:]) if line.strip() else "" for line in body] + [""]


def _title_levels(levels):
    """Markdown heading levels to section depths without jumps (depth 0 is the title)."""
    depths, previous = [], 0
    for level in levels:
        depth = max(1, min(level - 1, previous + 1))
        depths.append(depth)
        previous = depth
    return depths


def markdown_to_rst(markdown, title):
    """Convert one results file to a reStructuredText page.

    Parameters
    ----------
    markdown : str
        The file's text.
    title : str
        The page title, used when the file does not open with a single top heading.

    Returns
    -------
    str
    """
    lines = markdown.replace("\t", "    ").splitlines()
    headings = [i for i, line in enumerate(lines) if _HEADING.match(line)]
    top = [i for i in headings if _HEADING.match(lines[i]).group(1) == "#"]
    first_text = next((i for i, line in enumerate(lines) if line.strip()), None)
    if len(top) == 1 and top[0] == first_text:
        title = _HEADING.match(lines[top[0]]).group(2)
        lines = lines[:top[0]] + lines[top[0] + 1:]
        shift = 0
    else:
        shift = 1  # every heading of the file sits below the page title
    levels = [len(_HEADING.match(line).group(1)) + shift for line in lines
              if _HEADING.match(line)]
    depths = iter(_title_levels(levels))

    heading = _escape(title)
    out = [heading, "=" * len(heading), ""]
    i, n = 0, len(lines)
    paragraph = []

    def flush():
        if paragraph:
            out.extend([_inline(" ".join(part.strip() for part in paragraph)), ""])
            paragraph.clear()

    while i < n:
        line = lines[i]
        stripped = line.strip()
        if not stripped:
            flush()
            i += 1
        elif stripped.startswith("```") or stripped.startswith("~~~"):
            flush()
            fence, body, i = stripped[:3], [], i + 1
            while i < n and not lines[i].strip().startswith(fence):
                body.append(lines[i])
                i += 1
            out.extend(_literal(body))
            i += 1
        elif _HEADING.match(line):
            flush()
            text = _inline(_HEADING.match(line).group(2)) or "\\"
            depth = next(depths)
            out.extend([text, _ADORNMENTS[min(depth, len(_ADORNMENTS) - 1)] * len(text), ""])
            i += 1
        elif stripped.startswith("|") and i + 1 < n and _TABLE_RULE.match(lines[i + 1]):
            flush()
            rows, i = [_cells(line)], i + 2
            while i < n and lines[i].strip().startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            out.extend(_table(rows))
        elif _BULLET.match(line) or _ORDERED.match(line):
            flush()
            ordered = not _BULLET.match(line)
            items = []
            while i < n:
                item = _BULLET.match(lines[i]) if not ordered else _ORDERED.match(lines[i])
                if item and len(item.group(1)) < 2:
                    items.append([item.group(2)])
                elif lines[i].strip() and items and (lines[i].startswith(" ")
                                                     or not _HEADING.match(lines[i])):
                    if not lines[i].startswith(" ") and lines[i].strip().startswith("|"):
                        break
                    items[-1].append(lines[i].strip())
                else:
                    break
                i += 1
            for k, item in enumerate(items):
                bullet = f"{k + 1}. " if ordered else "- "
                out.append(bullet + _inline(" ".join(item)))
            out.append("")
        elif line.startswith("    ") and not paragraph:
            body = []
            while i < n and (lines[i].startswith("    ") or not lines[i].strip()):
                body.append(lines[i])
                i += 1
            out.extend(_literal(body))
        elif re.match(r"^\s*([-*_])(\s*\1){2,}\s*$", line):
            flush()  # a horizontal rule: dropped
            i += 1
        else:
            paragraph.append(line)
            i += 1
    flush()
    return "\n".join(out).rstrip() + "\n"


def _title_from_name(stem):
    return "Benchmark results: " + stem.replace("_", " ")


def write_pages(results_dir, out_dir):
    """Write one page per ``*.md`` of ``results_dir`` and copy its plots into ``out_dir``.

    Returns
    -------
    list of str
        The names (file stems) of the pages written, sorted.
    """
    results_dir, out_dir = Path(results_dir), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    sources = sorted(results_dir.glob("*.md"))
    stems = [path.stem for path in sources]
    plots = sorted(results_dir.glob("*.png"))
    for path in sources:
        page = markdown_to_rst(path.read_text(encoding="utf-8"),
                               _title_from_name(path.stem))
        # a plot goes with the longest results-file name it starts with
        own = [plot for plot in plots
               if max((s for s in stems if plot.stem == s or plot.stem.startswith(s + "_")),
                      key=len, default=None) == path.stem]
        if own:
            page += "\nPlots\n-----\n\n"
            for plot in own:
                target = out_dir / plot.name
                if not target.exists() or target.read_bytes() != plot.read_bytes():
                    shutil.copyfile(plot, target)
                page += f".. image:: {plot.name}\n   :alt: {plot.stem}\n\n"
        page += (f"\n*Generated from* :literal:`benchmarks/results/{path.name}` "
                 "*when the documentation was built.*\n")
        _write_if_changed(out_dir / f"{path.stem}.rst", page)
    index = ["All benchmark results", "=====================", "",
             "One page per file of ``benchmarks/results/``, generated when the "
             "documentation is built.", "", ".. toctree::", "   :maxdepth: 1", ""]
    index += [f"   {stem}" for stem in stems]
    _write_if_changed(out_dir / "index.rst", "\n".join(index) + "\n")
    keep = {f"{stem}.rst" for stem in stems} | {"index.rst"} | {
        plot.name for plot in plots}
    for stale in out_dir.iterdir():  # pages of results files since removed
        if stale.name not in keep:
            stale.unlink()
    return stems


def _write_if_changed(path, text):
    """Write ``text`` unless the file holds it already (keeps incremental builds short)."""
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def _builder_inited(app):
    results_dir = app.config.benchmark_results_dir
    if not results_dir or not os.path.isdir(results_dir):
        return
    write_pages(results_dir, os.path.join(app.srcdir, OUTPUT_DIR))


def setup(app):
    app.add_config_value("benchmark_results_dir", "", "env")
    app.connect("builder-inited", _builder_inited)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
