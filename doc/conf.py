"""Sphinx configuration of the skstruct documentation.

Build with zero warnings, offline::

    python -m sphinx -W --keep-going -b html doc doc/_build/html
"""

import os
import sys
from datetime import date

# The package is normally installed (``pip install -e .``); fall back on the source tree.
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))

import skstruct  # noqa: E402

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
    "sphinx.ext.mathjax",
    "sphinx.ext.doctest",
    "numpydoc",
]
# No sphinx.ext.intersphinx: the docs are built offline, so references to numpy, scipy
# and scikit-learn objects in docstrings render as plain literals.

templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
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
}
html_static_path = []
html_show_sourcelink = False
