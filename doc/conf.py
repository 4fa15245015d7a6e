"""Sphinx configuration of the skstruct documentation.

Build with zero warnings, offline, against the installed package (see below)::

    pip install ".[docs]" && python -m sphinx -W --keep-going -b html doc doc/_build/html

``SKSTRUCT_DOCS_FROM_SOURCE=1`` builds from the source tree without installing it.
"""

import os
import sys
from datetime import date

# The documentation is built against the installed package (``pip install ".[docs]"``,
# or ``pip install -e ".[docs]"`` to document the source tree as you edit it): a regular
# install carries the kernels its wheel precompiled, so the gallery runs on them instead
# of compiling every kernel again (minutes of CPU and about 2 GB of memory). The checkout
# is taken off sys.path for that: ``python -m sphinx`` run from its root puts it first,
# and ``import skstruct`` would find the source tree. Set SKSTRUCT_DOCS_FROM_SOURCE=1 to
# document the source tree of this checkout without installing it; every kernel the
# gallery needs then compiles on first use (cached in ~/.cache/skstruct/<version>/).
ROOT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
FROM_SOURCE = os.environ.get("SKSTRUCT_DOCS_FROM_SOURCE") == "1"
if FROM_SOURCE:
    sys.path.insert(0, ROOT)
else:
    sys.path[:] = [entry for entry in sys.path
                   if os.path.realpath(entry or os.curdir) != ROOT]
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "_ext")))

# The gallery runs its examples inside this process. numba reads its thread count when it
# is first imported, so it is set here, before skstruct imports numba: two threads, the
# cores of a CI machine (more threads than cores only adds contention), unless the
# caller chose. The threading layer stays skstruct's choice (TBB, see
# skstruct/_threading.py), which is safe in a process that Sphinx may fork.
os.environ.setdefault("NUMBA_NUM_THREADS", str(min(2, os.cpu_count() or 1)))

try:
    import skstruct  # noqa: E402
except ImportError as error:
    raise ImportError(
        f"the documentation is built against the installed skstruct, which could not be "
        f"imported ({error}): install it with pip install \".[docs]\" (or pip install -e "
        f"\".[docs]\"), or set SKSTRUCT_DOCS_FROM_SOURCE=1 to use the source tree "
        f"{ROOT}") from error

# -- Project information -----------------------------------------------------------------

project = "skstruct"
author = "The skstruct developers"
copyright = f"{date.today().year}, {author}"
release = skstruct.__version__
version = ".".join(release.split(".")[:2])

# -- General configuration ---------------------------------------------------------------

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "mathml",  # doc/_ext: :math: and .. math:: as MathML, converted at build time
    "sphinx.ext.doctest",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "benchmark_pages",  # doc/_ext: a page per benchmarks/results/*.md
]
# Math renders offline: doc/_ext/mathml.py converts the TeX to MathML when the pages are
# built (latex2mathml, in the docs extra), which browsers display without MathJax's script
# from a CDN; a formula it cannot convert is a warning, so an error of the -W build.
html_math_renderer = "mathml"
# No sphinx.ext.intersphinx: the docs are built offline, so references to numpy, scipy
# and scikit-learn objects in docstrings render as plain literals.

templates_path = ["_templates"]
exclude_patterns = ["_build", "_ext", "Thumbs.db", ".DS_Store"]
root_doc = "index"
language = "en"
nitpicky = False
default_role = "literal"  # `x` in docstrings renders as code, never as a failed reference

# -- autodoc / autosummary ---------------------------------------------------------------

autosummary_generate = True  # stubs go to generated/ (the :toctree: of doc/api.rst)
autosummary_imported_members = False
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"  # types are in the numpydoc docstrings
autodoc_inherit_docstrings = True

# -- numpydoc ----------------------------------------------------------------------------

numpydoc_show_class_members = False  # members are listed by the autosummary class template
numpydoc_show_inherited_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False

# -- HTML output -------------------------------------------------------------------------

html_theme = "alabaster"
html_title = f"skstruct {release}"
html_theme_options = {
    "description": "Structured-output learners for scikit-learn",
    "fixed_sidebar": True,
    "show_relbars": True,
    # 1160 px (alabaster's default is 940): a 220-px sidebar and a body whose code blocks
    # hold 90-character lines; at a 1280-px window nothing is cut off (doc/_static/
    # skstruct.css wraps what is longer). Narrower windows get alabaster's one-column
    # layout.
    "page_width": "1160px",
}
# doc/_static/skstruct.css: wide tables and code blocks wrap inside the content column
# instead of running past the window's edge.
html_static_path = ["_static"]
html_css_files = ["skstruct.css"]
html_show_sourcelink = False

# -- example gallery ---------------------------------------------------------------------

# examples/gallery/plot_*.py run at build time on the bundled data sets (never a download)
# and their figures go into doc/auto_examples/ (generated, not committed). Each example
# trains on a small subset for a few passes, so that the whole gallery builds in about
# three minutes on two cores; the scripts in examples/ (outside the gallery) run the full
# experiments and are not run by the build.
sphinx_gallery_conf = {
    "examples_dirs": "../examples/gallery",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"__init__\.py",
    "abort_on_example_error": True,  # a failing example fails the build
    "plot_gallery": True,
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "min_reported_time": 0,
    "show_memory": False,
    "image_scrapers": ("matplotlib",),
    "reset_modules": ("matplotlib",),
    "first_notebook_cell": None,
}

# -- benchmark result pages --------------------------------------------------------------

# doc/_ext/benchmark_pages.py turns every benchmarks/results/*.md into
# doc/benchmark_results/<name>.rst when the build starts (generated, not committed);
# doc/benchmarks.rst links to them.
benchmark_results_dir = os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", "benchmarks", "results"))


# -- hooks -------------------------------------------------------------------------------


def _skip_metadata_request_methods(app, what, name, obj, skip, options):
    """Leave out scikit-learn's generated ``set_*_request`` methods (every one, whatever
    method gains a ``sample_weight``): their docstrings link to scikit-learn's own pages."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_metadata_request_methods)
