"""Turn sequences of token feature dicts into per-sequence sparse matrices, and sentences
into arc feature matrices for dependency parsers."""

from ..utils._trees import ArcFeatureBatch
from ._arc_vectorizer import ArcVectorizer
from ._sequence_vectorizer import SequenceVectorizer
from ._word_features import sentences_to_features, word_features

__all__ = ["ArcFeatureBatch", "ArcVectorizer", "SequenceVectorizer", "sentences_to_features", "word_features"]
