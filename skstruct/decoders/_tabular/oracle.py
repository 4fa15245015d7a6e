"""Compiled per-example oracles of the multiclass and multilabel decoders.

The compiled engine (:mod:`skstruct.optim._engine`) runs incremental solvers one example
at a time inside compiled code. For every example it scores the parts, asks the family's
oracle for the (loss-augmented) MAP output and its loss Δ, and adds part vectors of
outputs to a buffer. This module gives those two operations for the multiclass and the
multilabel families, and the builders that package a task loss and a rescaling into the
:class:`~skstruct.decoders._core.engine_protocol.CompiledOracle` the engine dispatches on.

Both families score an example with one row of unary scores: ``unary`` has shape
(1, n_classes) or (1, n_labels); the pair scores are unused. The outputs are those of the
batched decoders, ties included:

* multiclass: the first class (lowest index) of best objective, as ``argmax``;
* multilabel: the per-example routines of :mod:`skstruct.decoders._tabular.kernels` that the batched
  kernels run, and θ of the gold vector summed in numpy's order.

Objectives, with θ the scores and y* the gold output: plain MAP maximizes θ_y; margin
rescaling θ_y + Δ(y*, y); slack rescaling Δ(y*, y) (1 + θ_y − θ_{y*}).

Parameter layout (``ints`` / ``floats`` of the CompiledOracle):

* multiclass: ``ints = [kind, n_classes]``; kind ``MISMATCH`` keeps
  ``floats = [Δ(a, a), Δ(a, b ≠ a)]`` (Hamming and 0/1 losses, any number of classes),
  kind ``MATRIX`` the row-major loss matrix Δ(a, b), shape (n_classes, n_classes).
* multilabel: ``ints = [method, n_labels, start_0, ..., start_L]``. Method ``COSTS``
  (margin rescaling of a loss with per-label costs) reads ``costs`` rows of 2 L values,
  the cost of every label off, then on; method ``GRID`` (count-statistic losses, and the
  Hamming loss under slack rescaling) reads the Δ(TP, FP) grid of an example with N* gold
  positives from ``floats[start_N*:]``, TP-major, (N* + 1) × (L − N* + 1) values;
  method ``ZERO_ONE`` compares the gold vector with the best other vector.
"""

import numpy as np
from numba import njit

from . import kernels
from .._core.checks import check_task_loss_argument
from .._core.engine_protocol import MULTICLASS, MULTILABEL, CompiledOracle

__all__ = [
    "compiled_multiclass_oracle",
    "compiled_multilabel_oracle",
    "multiclass_oracle",
    "multiclass_add_parts",
    "multilabel_oracle",
    "multilabel_add_parts",
]

_NJIT = dict(cache=True, nogil=True)

#: CompiledOracle.rescaling values.
PLAIN, MARGIN, SLACK = 0, 1, 2
_RESCALINGS = {None: PLAIN, "margin": MARGIN, "slack": SLACK}

#: Multiclass loss kinds (ints[0]).
MISMATCH, MATRIX = 0, 1

#: Multilabel methods (ints[0]).
MAP_ONLY, COSTS, GRID, ZERO_ONE = 0, 1, 2, 3

#: The count statistics that are functions of (TP, FP) and N* for binary labels.
_STATISTICS = frozenset({"tp", "fp", "pos", "err"})


# --------------------------------------------------------------------------------------
# Multiclass


@njit(**_NJIT)
def _class_loss(ints, floats, gold, k):
    """Δ(gold, k) from the multiclass loss parameters."""
    if ints[0] == MISMATCH:
        return floats[0] if gold == k else floats[1]
    return floats[gold * ints[1] + k]


@njit(**_NJIT)
def multiclass_oracle(rescaling, unary, pair, y_i, costs_i, ints, floats, yhat):
    """The (loss-augmented) MAP class of one example, into ``yhat[0]``; returns Δ.

    Parameters
    ----------
    rescaling : {PLAIN, MARGIN, SLACK}
    unary : ndarray of shape (1, n_classes)
        θ_k = unary[0, k]; -inf forbids a class.
    pair : ndarray of shape (0,)
        Unused.
    y_i : ndarray of shape (1,), int64
        The gold class (read unless ``rescaling`` is PLAIN).
    costs_i : ndarray
        Unused.
    ints, floats : ndarray
        The loss parameters (module docstring).
    yhat : ndarray of shape (>= 1,), int64
        Receives the class: the lowest index among the maximizers, as ``argmax``.

    Returns
    -------
    float
        Δ(y_i, yhat), or 0.0 under PLAIN.
    """
    row = unary[0]
    n_classes = row.shape[0]
    if rescaling == PLAIN:
        best, arg = row[0], 0
        for k in range(1, n_classes):
            if row[k] > best:
                best, arg = row[k], k
        yhat[0] = arg
        return 0.0
    if ints[0] == MATRIX and n_classes > ints[1]:
        raise ValueError("the scores have more classes than the task loss's loss matrix")
    gold_class = y_i[0]
    gold = row[gold_class]
    if rescaling == SLACK and gold == -np.inf:
        raise ValueError("slack rescaling needs a gold output of finite score")
    best, arg = -np.inf, 0
    for k in range(n_classes):
        if row[k] == -np.inf:
            value = -np.inf
        elif rescaling == MARGIN:
            value = row[k] + _class_loss(ints, floats, gold_class, k)
        else:
            value = _class_loss(ints, floats, gold_class, k) * (1.0 + row[k] - gold)
        if k == 0 or value > best:
            best, arg = value, k
    yhat[0] = arg
    return _class_loss(ints, floats, gold_class, arg)


@njit(**_NJIT)
def multiclass_add_parts(out, scale, unary_parts, pair_parts, ints):
    """Add ``scale`` times the one-hot parts of class ``out[0]`` to ``unary_parts[0]``."""
    unary_parts[0, out[0]] += scale


def _multiclass_loss(task_loss, y):
    """(kind, n_classes, floats) of a task loss, or None when it has no compiled form.

    Δ(a, b) of one-token examples is what the batched decoder evaluates too, by calling
    the loss. A loss that only counts mismatches (the 0/1 loss; a loss with
    ``mismatch_weights``, Hamming without class costs) needs two values for any number
    of classes; another loss needs its whole matrix, of the size that the loss gives (the
    shape of ``class_costs``, the states a count-statistic loss is bound to), or else
    ``max(y) + 1`` (every class occurs in the gold outputs of a fitted estimator).
    """
    if task_loss.zero_one or task_loss.mismatch_weights(np.array([0, 1])) is not None:
        values = task_loss(np.array([0, 0]), np.array([0, 1]), np.array([0, 1, 2]))
        return MISMATCH, 0, np.asarray(values, dtype=np.float64)
    n_classes = task_loss.n_classes
    if n_classes is None:
        n_classes = int(np.max(y, initial=0)) + 1
    gold = np.repeat(np.arange(n_classes), n_classes)
    pred = np.tile(np.arange(n_classes), n_classes)
    values = task_loss(gold, pred, np.arange(n_classes * n_classes + 1))
    return MATRIX, n_classes, np.asarray(values, dtype=np.float64)


def compiled_multiclass_oracle(decoder, task_loss, rescaling, y, y_offsets):
    """The compiled oracle of a :class:`MulticlassDecoder`, or None.

    Parameters
    ----------
    decoder : MulticlassDecoder
    task_loss : TaskLoss, str or None
        Unused when ``rescaling`` is None.
    rescaling : {None, "margin", "slack"}
        None is plain MAP (the perceptron).
    y : ndarray of shape (n_samples,), int
        Encoded gold classes.
    y_offsets : ndarray of shape (n_samples + 1,), int

    Returns
    -------
    CompiledOracle or None
        None for a rescaling other than these three (a callable).
    """
    if rescaling not in _RESCALINGS:
        return None
    if rescaling is None:
        kind, n_classes, floats = MISMATCH, 0, np.zeros(2)
    else:
        kind, n_classes, floats = _multiclass_loss(check_task_loss_argument(task_loss), y)
    ints = np.array([kind, n_classes], dtype=np.int64)
    return _compiled(MULTICLASS, rescaling, y, y_offsets, np.zeros((0, 0)), ints, floats, 1)


def _compiled(code, rescaling, y, y_offsets, costs, ints, floats, max_output):
    y_offsets = np.ascontiguousarray(y_offsets, dtype=np.int64)
    return CompiledOracle(
        code=code,
        rescaling=_RESCALINGS[rescaling],
        y=np.ascontiguousarray(y, dtype=np.int64).ravel(),
        y_offsets=y_offsets,
        costs=np.ascontiguousarray(costs, dtype=np.float64),
        ints=np.ascontiguousarray(ints, dtype=np.int64),
        floats=np.ascontiguousarray(floats, dtype=np.float64),
        max_output=int(max_output),
    )


# --------------------------------------------------------------------------------------
# Multilabel


@njit(**_NJIT)
def _gold_score(row, y_i, products):
    """θ of the gold vector as the batched decoder sums it (a label that is off adds 0)."""
    for j in range(row.shape[0]):
        products[j] = row[j] if y_i[j] != 0 else 0.0
    return kernels.numpy_row_sum(products)


@njit(**_NJIT)
def multilabel_oracle(rescaling, unary, pair, y_i, costs_i, ints, floats, yhat):
    """The (loss-augmented) MAP 0/1 vector of one example, into ``yhat[:L]``; returns Δ.

    Parameters
    ----------
    rescaling : {PLAIN, MARGIN, SLACK}
    unary : ndarray of shape (1, n_labels)
        θ_y = Σ_j unary[0, j] y_j.
    pair : ndarray of shape (0,)
        Unused.
    y_i : ndarray of shape (n_labels,), int64
        The gold 0/1 vector (read unless ``rescaling`` is PLAIN).
    costs_i : ndarray of shape (1, 2 n_labels)
        Method COSTS: the costs of every label off, then on; else unused.
    ints, floats : ndarray
        The method and its parameters (module docstring).
    yhat : ndarray of shape (>= n_labels,), int64
        Receives the vector.

    Returns
    -------
    float
        Δ(y_i, yhat), or 0.0 under PLAIN.

    Notes
    -----
    O(L) for MAP and per-label costs; O(L log L + N* (L − N*)) for the (TP, FP) grid,
    with one scratch allocation of 3 L + 2 floats; O(L log L) for the 0/1 loss.
    """
    row = unary[0]
    n_labels = row.shape[0]
    method = ints[0] if rescaling != PLAIN else MAP_ONLY
    if method == MAP_ONLY:
        for j in range(n_labels):
            yhat[j] = 1 if row[j] > 0 else 0
        return 0.0
    if method == COSTS:
        delta = 0.0
        for j in range(n_labels):
            off, on = costs_i[0, j], costs_i[0, n_labels + j]
            on_label = row[j] + (on - off) > 0
            yhat[j] = 1 if on_label else 0
            delta += on if on_label else off
        return delta
    if method == GRID:
        return _grid_oracle(rescaling, row, y_i, ints, floats, yhat)
    return _zero_one_oracle(rescaling, row, y_i, yhat)


@njit(**_NJIT)
def _grid_oracle(rescaling, row, y_i, ints, floats, yhat):
    n_labels = row.shape[0]
    scratch = np.empty(3 * n_labels + 2)
    ranked = scratch[:n_labels]
    prefix = scratch[n_labels : 2 * n_labels + 2]
    products = scratch[2 * n_labels + 2 :]
    n_pos = 0
    for j in range(n_labels):
        n_pos += y_i[j]
    start = ints[2 + n_pos]
    if start < 0:
        raise ValueError("no loss grid for this number of gold positives")
    gold = 0.0
    if rescaling == SLACK:
        gold = _gold_score(row, y_i, products)
        if gold == -np.inf:
            raise ValueError("slack rescaling needs a gold output of finite score")
    positives, negatives = kernels.rank_groups(row, y_i, ranked)
    labels = yhat[:n_labels]
    labels[:] = 0
    mode = kernels.MARGIN if rescaling == MARGIN else kernels.SLACK
    tp, fp = kernels.count_argmax_one(
        row, y_i, positives, negatives, floats, start, mode, gold, prefix, labels
    )
    return floats[start + tp * (n_labels - n_pos + 1) + fp]


@njit(**_NJIT)
def _zero_one_oracle(rescaling, row, y_i, yhat):
    """Both rescalings keep the gold vector unless the best other one y has θ_y + 1 > θ_y*."""
    n_labels = row.shape[0]
    products = np.empty(n_labels + 6)
    ints = np.empty(2 * n_labels + 12, dtype=np.int64)
    paths = ints[: 2 * n_labels].reshape((n_labels, 2))
    paths[:] = -1
    top = products[n_labels : n_labels + 2]
    top[:] = -np.inf
    total = products[n_labels + 2 :]
    base = 2 * n_labels
    kernels.top_k_one(row, 2, paths, top, total, ints[base : base + 4],
                      ints[base + 4 : base + 8], ints[base + 8 : base + 12])
    gold = _gold_score(row, y_i, products[:n_labels])
    if rescaling == SLACK and gold == -np.inf:
        raise ValueError("slack rescaling needs a gold output of finite score")
    best_is_gold = True
    for j in range(n_labels):
        if paths[j, 0] != y_i[j]:
            best_is_gold = False
    column = 1 if best_is_gold else 0
    if gold >= top[column] + 1.0:
        for j in range(n_labels):
            yhat[j] = y_i[j]
        return 0.0
    delta = 0.0
    for j in range(n_labels):
        yhat[j] = paths[j, column]
        if yhat[j] != y_i[j]:
            delta = 1.0
    return delta


@njit(**_NJIT)
def multilabel_add_parts(out, scale, unary_parts, pair_parts, ints):
    """Add ``scale`` times the indicator parts of the 0/1 vector ``out`` to ``unary_parts[0]``."""
    for j in range(unary_parts.shape[1]):
        if out[j] != 0:
            unary_parts[0, j] += scale


def _grid_tables(n_gold, n_labels, eta):
    """Δ on the (TP, FP) grid of every distinct N*, and where each grid starts.

    The statistics are built as the batched decoder builds them, so that η returns the
    same values bit for bit.

    Returns
    -------
    table : ndarray of shape (n_cells,)
    starts : ndarray of shape (n_labels + 1,), int64
        The start of the grid of N* = k, or -1 when no example has k gold positives.
    """
    present = np.unique(n_gold)
    width = n_labels - present + 1
    sizes = (present + 1) * width
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    owner = np.repeat(np.arange(len(present)), sizes)
    tp, fp = np.divmod(np.arange(offsets[-1]) - offsets[owner], width[owner])
    starts = np.full(n_labels + 1, -1, dtype=np.int64)
    starts[present] = offsets[:-1]
    return np.asarray(eta(tp, fp, present[owner]), dtype=np.float64), starts


def _statistics_eta(counting_loss):
    """η(TP, FP, N*) of a count-statistic loss of statistics among "tp", "fp", "pos", "err"."""
    names = counting_loss.statistic_names

    def eta(tp, fp, n_gold):
        counts = {"tp": tp, "fp": fp, "pos": tp + fp, "err": fp + n_gold - tp}
        return counting_loss.eta(np.stack([counts[name] for name in names], axis=-1), n_gold)

    return eta


def _counting_form(task_loss, rescaling, n_labels):
    """The count-statistic loss of (TP, FP) the decoder maximizes for ``task_loss``, or
    None: the loss itself when it declares counts, or under slack rescaling its form on
    binary labels (Hamming)."""
    counting = task_loss if task_loss.decomposition == "counts" else None
    if counting is None and rescaling == "slack":
        counting = task_loss.binary_counts(n_labels)
    if counting is not None and _STATISTICS.issuperset(counting.statistic_names):
        return counting
    return None


def compiled_multilabel_oracle(decoder, task_loss, rescaling, y, y_offsets):
    """The compiled oracle of a :class:`MultilabelDecoder`, or None.

    Follows :meth:`MultilabelDecoder.loss_augmented_map`: margin rescaling of a loss with
    per-label costs adds the costs; the Hamming loss under slack rescaling and the
    count-statistic losses of (TP, FP) search the grid of (TP, FP); the 0/1 loss compares
    the gold vector with the best other one.

    Parameters
    ----------
    decoder : MultilabelDecoder
    task_loss : TaskLoss, str or None
        Unused when ``rescaling`` is None.
    rescaling : {None, "margin", "slack"}
    y : ndarray of shape (n_samples, n_labels) or (n_samples * n_labels,), int
        Gold 0/1 vectors.
    y_offsets : ndarray of shape (n_samples + 1,), int
        Only its length is read: the oracle's ``y_offsets`` delimit the labels of every
        example, ``arange(n_samples + 1) * n_labels`` (a multilabel batch has one
        feature row and one output per example).

    Returns
    -------
    CompiledOracle or None
        None for a callable rescaling and for losses the decoder has no exact
        loss-augmented MAP for (the Python loop then raises the decoder's error).
    """
    if rescaling not in _RESCALINGS:
        return None
    n_samples = len(y_offsets) - 1
    y = np.ascontiguousarray(y, dtype=np.int64)
    n_labels = y.shape[1] if y.ndim == 2 else (y.size // n_samples if n_samples else 0)
    y = y.ravel()
    # the oracle's outputs are the labels of every example, whatever the batch counted
    y_offsets = np.arange(n_samples + 1, dtype=np.int64) * n_labels
    costs = np.zeros((0, 0))
    starts = np.full(n_labels + 1, -1, dtype=np.int64)
    floats = np.zeros(0)
    if rescaling is None:
        method = MAP_ONLY
    else:
        task_loss = check_task_loss_argument(task_loss)
        y_true = y.reshape(n_samples, n_labels)
        counting = None
        if rescaling == "margin" and task_loss.decomposition == "parts":
            method = COSTS
            label_costs = task_loss.unary_costs(
                y, np.arange(n_samples + 1) * n_labels, 2
            ).reshape(n_samples, n_labels, 2)
            costs = np.concatenate((label_costs[..., 0], label_costs[..., 1]), axis=1)
        else:
            counting = _counting_form(task_loss, rescaling, n_labels)
            if counting is not None:
                method = GRID
                floats, starts = _grid_tables(
                    y_true.sum(axis=1), n_labels, _statistics_eta(counting)
                )
            elif task_loss.zero_one:
                method = ZERO_ONE
            else:
                return None
    ints = np.concatenate(([method, n_labels], starts)).astype(np.int64)
    return _compiled(MULTILABEL, rescaling, y, y_offsets, costs, ints, floats, n_labels)
