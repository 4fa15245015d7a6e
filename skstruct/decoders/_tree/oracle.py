"""Compiled per-sentence oracle of the tree decoder, for the compiled per-example engine.

A sentence of n tokens has n² feature rows, one per arc, modifier-major (row m n + h
scores head h for token m, row m n + m the root), and one unary score per row: ``unary``
has shape (n², 1). Plain MAP and margin-rescaled loss-augmented MAP run the same
per-sentence Chu–Liu–Edmonds (non-projective) or Eisner (projective) routine as the
batched :class:`TreeDecoder`, on scores augmented by the costs exactly as
:meth:`TreeDecoder.cost_augmented` adds them, so ties go the same way.

Parameter layout (``ints`` of the CompiledOracle): ``[projective, single_root,
cost_kind]``. Cost kinds:

* ``UNIT``: Δ counts the tokens with a wrong head (Hamming): arc (m, h) costs
  1[h ≠ y_m];
* ``PER_LENGTH``: the same divided by the sentence length (normalized Hamming);
* ``ARC_COSTS``: any other loss that decomposes over arcs; ``costs`` holds the cost of
  every arc, rows stacked like the feature rows, shape (Σ n², 1).

Slack rescaling has no exact solver for trees (the decoder raises), so it has no
compiled form either.
"""

import numpy as np
from numba import njit

from . import kernels
from .._core.checks import check_task_loss_argument
from .._core.engine_protocol import MAP as MAP_CODE
from .._core.engine_protocol import MARGIN as MARGIN_CODE
from .._core.engine_protocol import TREE, CompiledOracle

__all__ = ["compiled_tree_oracle", "tree_oracle", "tree_add_parts"]

_NJIT = dict(cache=True, nogil=True)

PLAIN, MARGIN, SLACK = 0, 1, 2

#: Cost kinds (ints[2]).
NO_COSTS, UNIT, PER_LENGTH, ARC_COSTS = 0, 1, 2, 3


@njit(**_NJIT)
def _arc_cost(kind, costs_i, y_i, n, m, h):
    """The cost of arc (m, h) added to its score under margin rescaling."""
    if kind == ARC_COSTS:
        return costs_i[m * n + h, 0]
    if h == y_i[m]:
        return 0.0
    return 1.0 if kind == UNIT else 1.0 / n


@njit(**_NJIT)
def tree_oracle(rescaling, unary, pair, y_i, costs_i, ints, floats, yhat):
    """The (loss-augmented) MAP tree of one sentence, into ``yhat[:n]``; returns Δ.

    Parameters
    ----------
    rescaling : {PLAIN, MARGIN}
    unary : ndarray of shape (n * n, 1)
        Arc scores, modifier-major.
    pair : ndarray of shape (0,)
        Unused.
    y_i : ndarray of shape (n,), int64
        The gold tree (encoded states; read unless ``rescaling`` is PLAIN).
    costs_i : ndarray of shape (n * n, 1) or (0, 0)
        Arc costs for cost kind ARC_COSTS.
    ints : ndarray
        ``[projective, single_root, cost_kind]``.
    floats : ndarray
        Unused.
    yhat : ndarray of shape (>= n,), int64
        Receives the encoded tree.

    Returns
    -------
    float
        Δ(y_i, yhat) = Σ_m cost of arc (m, yhat_m), or 0.0 under PLAIN.

    Notes
    -----
    One scratch allocation per call (the arc scores and the routine's workspace):
    O(n²) memory, O(n²) time for Chu–Liu–Edmonds without cycles, O(n³) for Eisner.
    """
    n = y_i.shape[0]
    projective = ints[0] != 0
    single_root = ints[1] != 0
    kind = ints[2] if rescaling != PLAIN else NO_COSTS
    if rescaling == SLACK:
        raise ValueError("trees have no exact slack-rescaled loss-augmented MAP")
    if projective:
        size = n + 1
        n_floats, n_ints = 6 * size * size, 3 * size * size + 3 * (4 * size + 4)
    else:
        size = 2 * n + 1
        n_floats, n_ints = size * size, 3 * size * size + 9 * size
    floats_scratch = np.empty(n * n + n_floats)
    ints_scratch = np.empty(n_ints, dtype=np.int64)
    arc = floats_scratch[: n * n]
    for m in range(n):
        for h in range(n):
            score = unary[m * n + h, 0]
            arc[m * n + h] = score if kind == NO_COSTS else score + _arc_cost(
                kind, costs_i, y_i, n, m, h)
    states = yhat[:n]
    if projective:
        kernels.eisner_one(arc, n, single_root, states, floats_scratch[n * n :],
                           ints_scratch)
    else:
        kernels.arborescence_one(arc, n, single_root, states, floats_scratch[n * n :],
                                 ints_scratch)
    if kind == NO_COSTS:
        return 0.0
    delta = 0.0
    for m in range(n):
        delta += _arc_cost(kind, costs_i, y_i, n, m, states[m])
    return delta


@njit(**_NJIT)
def tree_add_parts(out, scale, unary_parts, pair_parts, ints):
    """Add ``scale`` times the arc indicators of the tree ``out`` (n,) to ``unary_parts``
    (n * n, 1)."""
    n = out.shape[0]
    for m in range(n):
        unary_parts[m * n + out[m], 0] += scale


def _valid(values):
    return bool(np.all(np.isfinite(values)) and not np.any(values < 0))


def _margin_costs(task_loss, y, offsets):
    """(cost kind, arc costs) of a loss under margin rescaling, as
    :meth:`TreeDecoder.cost_augmented` adds them, or None when the decoder has no exact
    solver or rejects the loss's values (the Python loop then raises its error).

    Returns
    -------
    kind : {UNIT, PER_LENGTH, ARC_COSTS}
    costs : ndarray of shape (Σ n², 1) for ARC_COSTS, else (0, 0)
    """
    if task_loss.decomposition != "parts":
        return None
    lengths = np.diff(offsets)
    weights = task_loss.mismatch_weights(offsets)
    if weights is not None:
        weights = np.asarray(weights, dtype=np.float64)
        if weights.shape != (offsets[-1],) or not _valid(weights):
            return None
        if np.array_equal(weights, np.ones(offsets[-1])):
            return UNIT, np.zeros((0, 0))
        if np.array_equal(weights, np.repeat(1.0 / lengths, lengths)):
            return PER_LENGTH, np.zeros((0, 0))
        costs = np.repeat(weights, np.repeat(lengths, lengths))
        sentence = np.repeat(np.arange(lengths.shape[0]), lengths)
        local = np.arange(offsets[-1]) - offsets[sentence]
        starts = np.concatenate(([0], np.cumsum(lengths**2)))
        costs[starts[sentence] + local * lengths[sentence] + y] = 0.0
        return ARC_COSTS, costs[:, None]
    if task_loss.n_classes is not None:  # costs of classes, which heads are not
        return None
    width = int(lengths.max()) if lengths.size else 0
    token_costs = np.asarray(task_loss.unary_costs(y, offsets, width), dtype=np.float64)
    if token_costs.shape != (y.shape[0], width) or not _valid(token_costs):
        return None
    # the arcs of token m are its sentence's row m: stacked token by token, in order
    heads = np.arange(width) < np.repeat(lengths, lengths)[:, None]
    return ARC_COSTS, token_costs[heads][:, None]


def compiled_tree_oracle(decoder, task_loss, rescaling, y, y_offsets):
    """The compiled oracle of a :class:`TreeDecoder`, or None.

    Parameters
    ----------
    decoder : TreeDecoder
    task_loss : TaskLoss, str or None
        Unused when ``rescaling`` is None.
    rescaling : {None, "margin"}
        None is plain MAP (the perceptron). Slack rescaling returns None.
    y : ndarray of shape (n_tokens,), int
        Encoded gold trees, stacked.
    y_offsets : ndarray of shape (n_sentences + 1,), int
        Token offsets.

    Returns
    -------
    CompiledOracle or None
        None for slack or callable rescaling and for losses the decoder does not solve
        exactly (Hamming with class costs, losses that do not decompose over arcs).
    """
    if rescaling not in (None, "margin"):
        return None
    y = np.ascontiguousarray(y, dtype=np.int64).ravel()
    y_offsets = np.ascontiguousarray(y_offsets, dtype=np.int64)
    lengths = np.diff(y_offsets)
    costs = np.zeros((0, 0))
    kind = NO_COSTS
    if rescaling == "margin":
        task_loss = check_task_loss_argument(task_loss)
        found = _margin_costs(task_loss, y, y_offsets)
        if found is None:
            return None
        kind, costs = found
    ints = np.array([bool(decoder.projective), bool(decoder.single_root), kind],
                    dtype=np.int64)
    return CompiledOracle(
        code=TREE,
        rescaling=MAP_CODE if rescaling is None else MARGIN_CODE,
        y=y,
        y_offsets=y_offsets,
        costs=np.ascontiguousarray(costs, dtype=np.float64),
        ints=ints,
        floats=np.zeros(0),
        max_output=int(lengths.max()) if lengths.size else 0,
    )
