"""The best neighbour of a start output by listing the neighbourhood (any decoder, any k).

``best_neighbour(scores, start, k)`` answers the scan of the proposal of
:class:`~skstruct.PerturbedMAPClassifier` (Algorithm 1 of Ghoshal & Honorio 2019): over the
valid outputs at Hamming distance 1 .. k from ``start``, in the decoder's documented
``neighbours`` order, keep y ← y' whenever θ(y') ≥ θ(y). The result is the last
neighbour of largest score when that score is at least θ(start), else the start.
:func:`best_neighbour_by_scan` computes it for every decoder with ``neighbours`` and
``score_outputs``; decoders with a compiled scan (chains, k = 1) give the same result
without listing the neighbourhood.
"""

import numpy as np

__all__ = ["best_neighbour_by_scan"]


def _select(mask, a, b, output_offsets):
    """Stacked outputs: example i's from ``a`` where ``mask[i]``, else from ``b``."""
    entries = np.repeat(mask, np.diff(output_offsets)).reshape((-1,) + (1,) * (a.ndim - 1))
    return np.where(entries, a, b)


def best_neighbour_by_scan(decoder, scores, start, k, output_offsets, start_scores=None):
    """The scan's result for every example, from ``decoder.neighbours`` and
    ``decoder.score_outputs``.

    Parameters
    ----------
    decoder : Decoder
        With ``neighbours`` and ``score_outputs``.
    scores : score container of the decoder
    start : ndarray
        Encoded start outputs, laid out like the decoder's outputs.
    k : int >= 1
        Hamming radius.
    output_offsets : ndarray of shape (n_examples + 1,)
        Example ``i`` owns ``start[output_offsets[i]:output_offsets[i + 1]]`` (first
        axis).
    start_scores : ndarray of shape (n_examples,), default=None
        θ(start), computed here when None.

    Returns
    -------
    outputs : ndarray like ``start``
    theta : ndarray of shape (n_examples,)
        θ of every result.

    Notes
    -----
    Memory O(n_entries × the largest neighbourhood): every neighbour is materialized
    and scored (one ``score_outputs`` call on all of them).
    """
    output_offsets = np.asarray(output_offsets)
    n_examples = output_offsets.shape[0] - 1
    if start_scores is None:
        start_scores = decoder.score_outputs(scores, start)
    neighbours, counts = decoder.neighbours(scores, start, k)
    n_layers = neighbours.shape[-1]
    if n_layers == 0:
        return start, start_scores
    valid = np.arange(n_layers)[:, None] < counts[None, :]       # (R, m)
    candidates = [_select(valid[j], neighbours[..., j], start, output_offsets)
                  for j in range(n_layers)]
    tiled = scores.take(np.tile(np.arange(n_examples), n_layers))
    candidate_scores = decoder.score_outputs(
        tiled, np.concatenate(candidates, axis=0)).reshape(n_layers, n_examples)
    candidate_scores = np.where(valid, candidate_scores, -np.inf)
    top = candidate_scores.max(axis=0)
    last = n_layers - 1 - np.argmax((candidate_scores == top)[::-1], axis=0)
    moves = top >= start_scores
    best = start
    for j in np.unique(last[moves]):
        best = _select(moves & (last == j), candidates[j], best, output_offsets)
    return best, np.where(moves, top, start_scores)
