"""Input validation and small shared helpers."""

from ._sequences import SequenceBatch, check_sequences, split_sequences

__all__ = ["SequenceBatch", "check_sequences", "split_sequences"]
