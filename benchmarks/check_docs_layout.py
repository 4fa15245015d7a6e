"""Check that the built documentation's tables, code and figures fit a 1280-px window.

Every HTML page of a built documentation (``python -m sphinx -b html doc DIR``) is copied,
given a small script, and loaded in headless Chromium at a 1280x900 window. After layout
the script looks at every ``pre``, ``table``, ``div.math`` and ``img`` inside
``div.body`` and reports those whose right edge passes the right edge of the body column
or whose content is wider than their box (``scrollWidth > clientWidth``, a hidden
scrollbar or cut-off content), and whether the page itself scrolls sideways. Displayed
math scrolls inside the column by design (doc/_static/skstruct.css), so a wide formula
is listed apart from the failures.

Usage::

    python -m sphinx -b html -D plot_gallery=0 doc /tmp/html
    python benchmarks/check_docs_layout.py /tmp/html

The report goes to benchmarks/results/docs_layout.md and .json; the exit status is 1
when an element other than displayed math overflows.
"""

import argparse
import concurrent.futures
import html
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _report import git_commit  # noqa: E402

WIDTH, HEIGHT = 1280, 900
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")

# Runs in the page once it has loaded (images included); writes its findings, as JSON,
# into the data-layout-report attribute of <body>, which --dump-dom then prints.
PROBE = r"""
<script>
(function () {
  function snippet(el) {
    var text = (el.tagName === "IMG") ? (el.getAttribute("src") || "")
                                      : (el.textContent || "");
    return text.replace(/\s+/g, " ").trim().slice(0, 100);
  }
  function probe() {
    var body = document.querySelector("div.body");
    var report = {innerWidth: window.innerWidth,
                  pageScrollWidth: document.documentElement.scrollWidth,
                  checked: 0, overflowing: [], math: []};
    if (!body) { report.nobody = true; }
    else {
      var column = body.getBoundingClientRect();
      report.bodyLeft = column.left; report.bodyRight = column.right;
      var els = body.querySelectorAll("pre, table, div.math, img");
      for (var i = 0; i < els.length; i++) {
        var el = els[i], rect = el.getBoundingClientRect();
        if (rect.width === 0 && rect.height === 0) { continue; }  // not displayed
        report.checked += 1;
        var pastEdge = rect.right - column.right;
        var hidden = el.scrollWidth - el.clientWidth;
        if (pastEdge > 0.5 || hidden > 1) {
          var entry = {tag: el.tagName.toLowerCase() +
                             (el.className ? "." + el.className.split(/\s+/).join(".") : ""),
                       right: Math.round(rect.right), pastEdge: Math.round(pastEdge),
                       hidden: hidden, width: Math.round(rect.width),
                       scrollWidth: el.scrollWidth, snippet: snippet(el)};
          var isMath = el.matches("div.math");
          (isMath ? report.math : report.overflowing).push(entry);
        }
      }
    }
    document.body.setAttribute("data-layout-report", JSON.stringify(report));
  }
  if (document.readyState === "complete") { probe(); }
  else { window.addEventListener("load", probe); }
})();
</script>
"""


def pages(root):
    """The HTML pages of the built documentation, as paths relative to ``root``."""
    found = []
    for directory, subdirs, files in os.walk(root):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith(("_", ".")))
        found += [os.path.relpath(os.path.join(directory, name), root)
                  for name in sorted(files) if name.endswith(".html")]
    return found


def inject(path):
    """Add the probe script before ``</body>`` of the page at ``path``."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    at = text.rfind("</body>")
    if at < 0:
        return False
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text[:at] + PROBE + text[at:])
    return True


def load(chromium, path, profile):
    """Load ``path`` in headless Chromium and return the probe's report, as a dict."""
    command = [chromium, "--headless", "--no-sandbox", "--disable-gpu",
               "--hide-scrollbars", f"--window-size={WIDTH},{HEIGHT}",
               f"--user-data-dir={profile}", "--virtual-time-budget=1000",
               "--dump-dom", "file://" + path]
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=60).stdout
    except subprocess.TimeoutExpired:
        return None
    marker = 'data-layout-report="'
    start = out.find(marker)
    if start < 0:
        return None
    start += len(marker)
    return json.loads(html.unescape(out[start:out.index('"', start)]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("html", help="directory of the built HTML documentation")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--output", default=os.path.join(RESULTS, "docs_layout"),
                        help="path of the report, without .md/.json")
    args = parser.parse_args()
    version = subprocess.run([args.chromium, "--headless", "--version"],
                             capture_output=True, text=True).stdout.strip().splitlines()
    started = time.time()
    with tempfile.TemporaryDirectory() as scratch:
        copy = os.path.join(scratch, "html")
        shutil.copytree(args.html, copy)
        names = [name for name in pages(copy) if inject(os.path.join(copy, name))]

        def run(item):
            index, name = item
            profile = os.path.join(scratch, f"profile-{index % args.jobs}-{index}")
            report = load(args.chromium, os.path.join(copy, name), profile)
            shutil.rmtree(profile, ignore_errors=True)
            print(f"{index + 1}/{len(names)} {name}", file=sys.stderr, flush=True)
            return name, report

        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            reports = dict(pool.map(run, enumerate(names)))
    elapsed = time.time() - started

    failed = sorted(name for name, report in reports.items() if report is None)
    checked = [r for r in reports.values() if r is not None]
    overflowing = [(name, e) for name, r in sorted(reports.items()) if r
                   for e in r["overflowing"]]
    math = [(name, e) for name, r in sorted(reports.items()) if r for e in r["math"]]
    sideways = sorted(name for name, r in reports.items()
                      if r and r["pageScrollWidth"] > r["innerWidth"])
    summary = {
        "command": " ".join(["python", *sys.argv]),
        "commit": git_commit(),
        "chromium": version[-1] if version else "",
        "window": f"{WIDTH}x{HEIGHT}",
        "inner_width": sorted({r["innerWidth"] for r in checked}),
        "body_column": sorted({(round(r["bodyLeft"]), round(r["bodyRight"]))
                               for r in checked if not r.get("nobody")}),
        "pages": len(names), "pages_without_report": failed,
        "pages_without_body": sorted(n for n, r in reports.items() if r and r.get("nobody")),
        "elements_checked": sum(r["checked"] for r in checked),
        "overflowing": [dict(page=n, **e) for n, e in overflowing],
        "math_scrolling": [dict(page=n, **e) for n, e in math],
        "pages_scrolling_sideways": sideways,
        "seconds": round(elapsed, 1), "load_average": os.getloadavg()[0],
    }
    with open(args.output + ".json", "w", encoding="utf-8") as handle:
        json.dump(summary, handle, indent=1)
        handle.write("\n")

    lines = [
        "# Documentation layout at a 1280-px window",
        "",
        "Every page of the built HTML documentation loaded in headless Chromium at a "
        f"{WIDTH}x{HEIGHT} window; every `pre`, `table`, `div.math` and `img` of the body "
        "column checked for a right edge past the column's or content wider than its box "
        "(`scrollWidth > clientWidth`). Displayed math scrolls inside the column by design "
        "and is listed apart.",
        "",
        f"- command: `{summary['command']}`",
        f"- commit: {summary['commit']}; {summary['chromium']}",
        f"- viewport width seen by the pages: {summary['inner_width']} px; body column "
        f"(left, right): {summary['body_column']} px",
        f"- pages checked: {len(names)} ({len(failed)} without a report"
        + (": " + ", ".join(failed) if failed else "") + f"; "
        f"{len(summary['pages_without_body'])} without a body column)",
        f"- elements checked: {summary['elements_checked']}",
        f"- overflowing (tables, code, figures): **{len(overflowing)}**",
        f"- displayed math scrolling inside the column: {len(math)}",
        f"- pages scrolling sideways: {len(sideways)}"
        + (" (" + ", ".join(sideways) + ")" if sideways else ""),
        f"- {elapsed:.0f} s wall, load average {summary['load_average']:.1f}",
        "",
    ]
    for title, rows in (("Overflowing elements", overflowing),
                        ("Displayed math that scrolls", math)):
        lines += [f"## {title}", ""]
        if not rows:
            lines += ["None.", ""]
            continue
        lines += ["| page | element | px past the column | hidden px | snippet |",
                  "|---|---|---|---|---|"]
        for name, e in rows:
            text = e["snippet"].replace("|", "\\|").replace("`", "'")
            lines.append(f"| {name} | {e['tag']} | {e['pastEdge']} | {e['hidden']} | "
                         f"{text} |")
        lines.append("")
    with open(args.output + ".md", "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines))
    print("\n".join(lines))
    return 1 if overflowing or failed else 0


if __name__ == "__main__":
    sys.exit(main())
