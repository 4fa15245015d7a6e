"""Data set loaders and readers for structured-output learning."""

from ._conll import load_conll2000, read_conll
from ._conllu import load_ud_english_ewt, read_conllu
from ._letters import load_letters
from ._multilabel import load_multilabel

__all__ = [
    "load_conll2000",
    "load_letters",
    "load_multilabel",
    "load_ud_english_ewt",
    "read_conll",
    "read_conllu",
]
