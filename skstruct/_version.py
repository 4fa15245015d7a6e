"""The version of skstruct: the one place it is written.

``pyproject.toml`` reads it for the package metadata (``[tool.setuptools.dynamic]``) and
``skstruct.__version__`` re-exports it, so the installed metadata, the import and the
documentation always agree. The scheme (PEP 440) is described in ``CHANGELOG.rst``:
``MAJOR.MINOR.PATCH`` for releases, ``.devN`` on ``main`` between releases.
"""

__version__ = "0.1.0.dev0"
