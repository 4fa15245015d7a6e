"""Where :class:`~skstruct.preprocessing.ArcVectorizer` was defined before
:mod:`skstruct.preprocessing` became a package: the pickles of those ArcVectorizer
objects name this module, which hands them the class."""

from .preprocessing._arc_vectorizer import ArcVectorizer

__all__ = ["ArcVectorizer"]
