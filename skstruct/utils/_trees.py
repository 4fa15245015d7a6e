"""Validation and batch-first storage of dependency-tree data.

A sentence of n tokens is one (n * n, n_features) arc feature matrix, modifier-major: row
``m * n + h`` holds the features of the arc "token h heads token m" for h ≠ m, and row
``m * n + m`` those of the arc "the root heads token m". Its tree is an array of n CoNLL
heads: 0 for the root, otherwise the 1-based position of the head.
"""

import numpy as np

from ._sequences import SequenceBatch, _as_sequence_list, check_sequences

__all__ = ["TreeBatch", "check_trees"]


class TreeBatch(SequenceBatch):
    """Arc features of many sentences, stacked batch-first.

    Parameters
    ----------
    X : ndarray or scipy.sparse CSR matrix of shape (Σ_i n_i², n_features)
        Arc features of all sentences, one sentence after the other.
    offsets : ndarray of shape (n_sentences + 1,)
        Sentence ``i`` owns arc rows ``offsets[i]:offsets[i + 1]`` (n_i² of them).
    token_offsets : ndarray of shape (n_sentences + 1,)
        Sentence ``i`` owns tokens (and outputs) ``token_offsets[i]:token_offsets[i + 1]``.
    """

    def __init__(self, X, offsets, token_offsets):
        super().__init__(X, offsets)
        self.token_offsets = np.ascontiguousarray(token_offsets, dtype=np.int64)

    @property
    def output_offsets(self):
        """Sentence ``i`` owns encoded outputs ``output_offsets[i]:output_offsets[i + 1]``."""
        return self.token_offsets

    def take(self, indices):
        """The sub-batch of the sentences at ``indices``, in that order."""
        indices = np.asarray(indices, dtype=np.int64)
        arcs = super().take(indices)
        lengths = np.diff(self.token_offsets)[indices]
        return TreeBatch(arcs.X, arcs.offsets, np.concatenate(([0], np.cumsum(lengths))))


def check_trees(X, y=None, *, n_features=None, estimator=None):
    """Validate dependency-tree data and stack it batch-first.

    Parameters
    ----------
    X : list of array-like or sparse matrices of shape (n_i * n_i, n_features)
        Arc features of each sentence (see the module docstring for the row layout).
    y : list of array-like of shape (n_i,), default=None
        CoNLL heads of each sentence: integers in 0 .. n_i, 0 meaning the root.
    n_features : int, default=None
        Expected number of features.
    estimator : str, default=None
        Name used in error messages.

    Returns
    -------
    batch : TreeBatch
    heads : ndarray of shape (Σ_i n_i,), int64, or None
        The heads of all tokens, concatenated.
    """
    where = f" in {estimator}" if estimator else ""
    batch, _ = check_sequences(X, n_features=n_features, estimator=estimator)
    arcs = batch.lengths
    lengths = np.rint(np.sqrt(arcs)).astype(np.int64)
    bad = np.flatnonzero(lengths * lengths != arcs)
    if bad.size:
        raise ValueError(
            f"Sentence {bad[0]} of X has {arcs[bad[0]]} rows; a sentence of n tokens needs "
            f"n * n arc rows (row m * n + h: head h, modifier m; the diagonal holds the root "
            f"arcs){where}."
        )
    tree_batch = TreeBatch(batch.X, batch.offsets, np.concatenate(([0], np.cumsum(lengths))))
    if y is None:
        return tree_batch, None
    heads = [np.asarray(h) for h in _as_sequence_list(y, "y")]
    if len(heads) != lengths.shape[0]:
        raise ValueError(f"X has {lengths.shape[0]} sentences but y has {len(heads)}{where}.")
    for i, h in enumerate(heads):
        if h.ndim != 1 or h.shape[0] != lengths[i]:
            raise ValueError(
                f"Sentence {i} has {lengths[i]} tokens in X but y[{i}] has shape {h.shape}"
                f"{where}."
            )
    flat = np.concatenate(heads)
    sentence = np.repeat(np.arange(lengths.shape[0]), lengths)
    position = np.arange(flat.shape[0]) - tree_batch.token_offsets[sentence] + 1
    if flat.size and not np.issubdtype(flat.dtype, np.integer):
        raise ValueError(f"y must hold CoNLL heads (integers); got dtype {flat.dtype}{where}.")
    bad = np.flatnonzero((flat < 0) | (flat > lengths[sentence]))
    if bad.size:
        i = sentence[bad[0]]
        raise ValueError(
            f"y[{i}] must hold CoNLL heads, integers in 0 .. {lengths[i]} (0 = root)"
            f"{where}."
        )
    bad = np.flatnonzero(flat == position)
    if bad.size:
        raise ValueError(f"y[{sentence[bad[0]]}] has a token that heads itself{where}.")
    flat = flat.astype(np.int64)
    cyclic = _sentences_with_cycles(flat, tree_batch.token_offsets)
    if cyclic.size:
        raise ValueError(
            f"y[{cyclic[0]}] is not a tree: its heads form a cycle, so some words never "
            f"reach the root{where}."
        )
    return tree_batch, flat


def _sentences_with_cycles(heads, token_offsets):
    """Sentences whose heads do not all lead to the root, by pointer doubling.

    Every token points to its head's global position, the root to a sink; after
    ⌈log₂ n⌉ squarings every token of a tree points to the sink.

    Parameters
    ----------
    heads : ndarray of shape (n_tokens,), int64
        CoNLL heads, stacked: 0 for the root, else the head's 1-based id in 1 .. n_i.
    token_offsets : ndarray of shape (n_sentences + 1,), int64

    Returns
    -------
    ndarray of shape (n_cyclic,), int64
        The sentences with a cycle, in increasing order.
    """
    n_tokens = heads.shape[0]
    if n_tokens == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.repeat(token_offsets[:-1], np.diff(token_offsets))
    sink = n_tokens
    parent = np.append(np.where(heads == 0, sink, starts + heads - 1), sink)
    for _ in range(int(np.ceil(np.log2(max(2, np.diff(token_offsets).max())))) + 1):
        parent = parent[parent]
    stuck = np.flatnonzero(parent[:n_tokens] != sink)
    sentence = np.searchsorted(token_offsets, stuck, side="right") - 1
    return np.unique(sentence)
