"""The chain family of the compiled engine: per-example loss-augmented Viterbi.

:func:`compiled_chain_oracle` describes what :class:`~skstruct.decoders.ChainDecoder`
computes for a task loss and a rescaling as a
:class:`~skstruct.decoders._core.engine_protocol.CompiledOracle`; :func:`chain_oracle` and
:func:`chain_add_parts` are the compiled kernels the engine reaches through the dispatchers
of ``_engine/dispatch.py``. They share their per-sequence programs with the batched decoder, so
both break ties alike:

* plain MAP and margin rescaling of a loss that declares ``decomposition="parts"``:
  :func:`~skstruct.decoders._chain.kernels.viterbi_one` on unary + costs, the costs of
  a loss that only counts mismatches (its ``mismatch_weights``: Hamming, normalized or
  not) and of Hamming's class costs computed in the kernel, those of any other such loss
  (its ``unary_costs``) read from the oracle's ``costs`` rows;
* the 0/1 loss with margin rescaling: the better of the gold labeling and the best other
  one, from :func:`~skstruct.decoders._chain.kernels.top_k_one` with k = 2;
* count-statistic losses whose η the kernel knows (F_β, IoU, precision, recall, label
  count, and their subclasses that keep ``eta``) under either rescaling, and the
  mismatch-count form of unweighted Hamming and 0/1 under slack rescaling
  (:func:`~skstruct.losses._counting.mismatch_count_form`): constrained message
  passing, :func:`~skstruct.decoders._chain.counting_kernels.best_per_statistic_one` then
  :func:`~skstruct.decoders._chain.counting_kernels.best_with_statistic_one`.

Pair scores are laid out as the chain feature map stores them: ``pair[:S*S]`` the
transitions (row-major), then start, then end.

A decoder with :attr:`~skstruct.decoders.ChainDecoder.constraints` appends their additive
mask (0 where allowed, -inf where forbidden, laid out like ``pair``) to ``floats`` and
sets the :data:`CONSTRAINED` bit of ``ints[LOSS]``; :func:`chain_oracle` adds the mask to
the pair scores first (:func:`constrained_pair`). The smoothed oracles of
``_engine/smoothed.py`` do not read the mask, and the unknown loss code makes
``supports_smoothed`` decline such an oracle.
"""

import numpy as np
from numba import njit

from ...losses import (
    FBetaLoss,
    HammingLoss,
    IoULoss,
    LabelCountLoss,
    PrecisionLoss,
    RecallLoss,
)
from ...losses._base import check_task_loss_values
from ...losses._counting import mismatch_count_form
from .constraints import resolve_constraints
from .kernels import top_k_one, viterbi_one
from .counting_kernels import best_per_statistic_one, best_with_statistic_one
from .._core.engine_protocol import CHAIN, MAP, MARGIN, SLACK, CompiledOracle, rescaling_code

__all__ = ["chain_add_parts", "chain_oracle", "compiled_chain_oracle", "constrained_pair"]

_NJIT = dict(cache=True, nogil=True)

# How the maximizer is searched (ints[SEARCH]).
VITERBI, TOP_TWO, STATISTIC = 0, 1, 2
# What Δ of the maximizer is (ints[LOSS]).
NO_LOSS, HAMMING, ZERO_ONE, COUNTING, COSTS = 0, 1, 2, 3, 4
# η of a count statistic (ints[ETA]).
RECALL, PRECISION, F_BETA, IOU, LABEL_COUNT, MISMATCH, ANY_MISMATCH = range(7)
# Counters (ints[STATS:STATS + N_STATS]).
TP, FP, POS, ERR = 0, 1, 2, 3
_COUNTER_CODES = {"tp": TP, "fp": FP, "pos": POS, "err": ERR}
# Layout of ints: a fixed header, then the positive-state mask of count-statistic losses.
SEARCH, LOSS, NORMALIZE, CLASS_COSTS, ETA, N_STATS, STATS = 0, 1, 2, 3, 4, 5, 6
HEADER = 8
# Bit of ints[LOSS]: floats ends with the (S² + 2S,) mask of the decoder's constraints.
CONSTRAINED = 16

# The η the kernel computes, by the count-statistic loss method that defines it.
_ETA_OF = {RecallLoss.eta: RECALL, PrecisionLoss.eta: PRECISION, FBetaLoss.eta: F_BETA,
           IoULoss.eta: IOU, LabelCountLoss.eta: LABEL_COUNT}


def compiled_chain_oracle(decoder, task_loss, rescaling, y, y_offsets, n_states=None):
    """What ``decoder.loss_augmented_map`` (or ``map``) computes, for compiled code.

    The task loss is read by what it declares, in the order of
    :meth:`~skstruct.decoders.Decoder.loss_augmented_map`: its ``decomposition``, its
    ``mismatch_weights``, ``unary_costs`` and count statistics, and ``zero_one``.

    Parameters
    ----------
    decoder : ChainDecoder
        A chain decoder that computes what :class:`~skstruct.decoders.ChainDecoder`
        computes (its ``compiled_oracle`` checks that a subclass keeps the operations).
    task_loss : TaskLoss or None
        None with ``rescaling=None``.
    rescaling : {None, "margin", "slack"}
    y : ndarray of shape (n_tokens,), int
        Encoded gold labels, stacked.
    y_offsets : ndarray of shape (n_sequences + 1,)
    n_states : int, default=None
        The number of states of the scores the oracle will see; a loss whose per-token
        costs are read from its ``unary_costs`` needs it.

    Returns
    -------
    CompiledOracle or None
        None when the combination has no compiled form: a loss that declares none of
        the forms above (or one that is not computed in the kernel: a count-statistic
        loss with its own η, one not bound to its positive states), per-token costs
        without ``n_states`` or that the decoder would reject, weighted Hamming under
        slack rescaling (the decoder rejects it too).
    """
    code = rescaling_code(rescaling)
    if code is None or (code == MAP) != (task_loss is None and rescaling is None):
        return None
    y = np.ascontiguousarray(y, dtype=np.int64)
    y_offsets = np.ascontiguousarray(y_offsets, dtype=np.int64)
    header = np.zeros(HEADER, dtype=np.int64)
    floats = np.zeros(0)
    mask = np.zeros(0, dtype=np.int64)
    costs = np.zeros((0, 0))
    if code == MAP:
        header[SEARCH], header[LOSS] = VITERBI, NO_LOSS
    else:
        found = _loss_parameters(task_loss, code, y, y_offsets, n_states, header)
        if found is None:
            return None
        floats, mask, costs = found
    constraints = resolve_constraints(decoder.constraints)
    if constraints is not None and not constraints._free:
        header[LOSS] |= CONSTRAINED
        if floats.shape[0] == 0:
            floats = np.zeros(1)  # floats[0] is read as β² by the counting losses
        floats = np.concatenate([floats] + [p.ravel() for p in constraints._penalty])
    lengths = np.diff(y_offsets)
    return CompiledOracle(
        code=CHAIN, rescaling=code, y=y, y_offsets=y_offsets, costs=costs,
        ints=np.concatenate([header, mask]), floats=floats,
        max_output=int(lengths.max(initial=1)),
    )


def _loss_parameters(task_loss, code, y, offsets, n_states, header):
    """Fill ``header`` for a task loss under rescaling ``code``; (floats, mask, costs),
    or None when the loss has no compiled form."""
    nothing = np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros((0, 0))
    if code == MARGIN and task_loss.decomposition == "parts":
        header[SEARCH] = VITERBI
        header[ETA], header[N_STATS], header[STATS] = MISMATCH, 1, ERR
        normalize = _mismatch_scale(task_loss, offsets)
        if normalize is not None:
            header[LOSS], header[NORMALIZE] = HAMMING, normalize
            return nothing
        if type(task_loss).unary_costs is HammingLoss.unary_costs:
            # the class-cost matrix of Hamming's own unary_costs, read in the kernel
            n_classes = np.shape(task_loss.class_costs)[0]
            header[LOSS], header[NORMALIZE] = HAMMING, bool(task_loss.normalize)
            header[CLASS_COSTS] = n_classes
            return (np.ascontiguousarray(task_loss._cost_matrix(n_classes).ravel()),
                    nothing[1], nothing[2])
        token_costs = _token_costs(task_loss, y, offsets, n_states)
        if token_costs is None:
            return None
        header[LOSS] = COSTS
        return nothing[0], nothing[1], token_costs
    counting = task_loss if task_loss.decomposition == "counts" else None
    if counting is None and code == SLACK:
        counting = mismatch_count_form(task_loss, offsets)
        if counting is not None:
            header[SEARCH] = STATISTIC
            header[ETA], header[N_STATS], header[STATS] = (
                ANY_MISMATCH if counting.zero_one else MISMATCH), 1, ERR
            if task_loss.zero_one:
                header[LOSS] = ZERO_ONE
                return nothing
            normalize = _mismatch_scale(task_loss, offsets)
            if normalize is None:
                return None
            header[LOSS], header[NORMALIZE] = HAMMING, normalize
            return nothing
    if counting is not None:
        eta = _ETA_OF.get(getattr(type(counting), "eta", None))
        positive = getattr(counting, "positive_states_", None)
        names = counting.statistic_names
        if eta is None or positive is None or not set(names) <= set(_COUNTER_CODES):
            return None
        header[SEARCH], header[LOSS], header[ETA] = STATISTIC, COUNTING, eta
        header[N_STATS] = len(names)
        for k, name in enumerate(names):
            header[STATS + k] = _COUNTER_CODES[name]
        beta2 = float(counting.beta) ** 2 if eta == F_BETA else 0.0
        return np.array([beta2]), np.asarray(positive, dtype=np.int64), nothing[2]
    if code == MARGIN and task_loss.zero_one:
        header[SEARCH], header[LOSS] = TOP_TWO, ZERO_ONE
        header[ETA], header[N_STATS], header[STATS] = ANY_MISMATCH, 1, ERR
        return nothing
    return None


def _mismatch_scale(task_loss, offsets):
    """0 when the loss's ``mismatch_weights`` are 1 per token, 1 when they are 1 / length
    (the per-token scales of Hamming, plain and normalized), else None."""
    weights = task_loss.mismatch_weights(offsets)
    if weights is None:
        return None
    weights = np.asarray(weights, dtype=np.float64)
    lengths = np.diff(offsets)
    if np.array_equal(weights, np.ones(offsets[-1])):
        return 0
    if np.array_equal(weights, np.repeat(1.0 / lengths, lengths)):
        return 1
    return None


def _token_costs(task_loss, y, offsets, n_states):
    """The loss's ``unary_costs`` of every state, (n_tokens, n_states), or None without
    ``n_states`` or when the decoder would reject them (it then raises its error)."""
    if n_states is None:
        return None
    try:
        costs = task_loss.unary_costs(y, offsets, int(n_states))
        check_task_loss_values(costs, task_loss, "unary_costs",
                               shape=(y.shape[0], int(n_states)))
    except ValueError:
        return None
    return np.ascontiguousarray(costs, dtype=np.float64)


@njit(**_NJIT)
def chain_add_parts(out, scale, unary_parts, pair_parts, ints):
    """Add ``scale`` a_out of the labels ``out`` (length L) to (L, S) and (S² + 2S,)."""
    length, n_states = unary_parts.shape
    square = n_states * n_states
    for t in range(length):
        unary_parts[t, out[t]] += scale
    for t in range(1, length):
        pair_parts[out[t - 1] * n_states + out[t]] += scale
    pair_parts[square + out[0]] += scale
    pair_parts[square + n_states + out[length - 1]] += scale


@njit(**_NJIT)
def _score(unary, pair, labels):
    """θ of ``labels``, summed as ``ChainDecoder.score_outputs`` sums it."""
    length, n_states = unary.shape
    square = n_states * n_states
    total_unary = 0.0
    for t in range(length):
        total_unary += unary[t, labels[t]]
    total_pair = 0.0
    for t in range(1, length):
        total_pair += pair[labels[t - 1] * n_states + labels[t]]
    return (total_unary + total_pair + pair[square + labels[0]]
            + pair[square + n_states + labels[length - 1]])


@njit(**_NJIT)
def _hamming_cost(ints, floats, gold, state, scale):
    if ints[CLASS_COSTS] > 0:
        return floats[gold * ints[CLASS_COSTS] + state] * scale
    return (1.0 if gold != state else 0.0) * scale


@njit(**_NJIT)
def _eta(kind, stats, n_gold, beta2):
    """η of the counter values ``stats``, as the count-statistic losses compute it."""
    if kind == RECALL:
        return 1.0 - stats[0] / n_gold if n_gold > 0 else 0.0
    if kind == PRECISION:
        denominator = stats[0] + stats[1]
        return 1.0 - stats[0] / denominator if denominator > 0 else 0.0
    if kind == F_BETA:
        denominator = beta2 * n_gold + stats[0] + stats[1]
        return 1.0 - (1 + beta2) * stats[0] / denominator if denominator > 0 else 0.0
    if kind == IOU:
        denominator = n_gold + stats[1]
        return 1.0 - stats[0] / denominator if denominator > 0 else 0.0
    if kind == LABEL_COUNT:
        return float(abs(stats[0] - n_gold))
    if kind == MISMATCH:
        return float(stats[0])
    return 1.0 if stats[0] > 0 else 0.0


@njit(**_NJIT)
def _increment(counter, gold, state, positive):
    hit = state == gold
    if counter == TP:
        return 1 if hit and positive[state] != 0 else 0
    if counter == FP:
        return 1 if (not hit) and positive[state] != 0 else 0
    if counter == POS:
        return 1 if positive[state] != 0 else 0
    return 0 if hit else 1


@njit(**_NJIT)
def _statistic_search(rescaling, unary, trans, start, end, pair, y, ints, floats, yhat):
    """argmax_y H(θ_y, G(y)) by constrained message passing (one sequence).

    The counters, their caps and the boxes of reachable values are those the batched
    decoder builds (``_chain.counting._Counters``): true positives stop at N*, the others at
    the length.
    """
    length, n_states = unary.shape
    n_counters = ints[N_STATS]
    positive = ints[HEADER:]
    if positive.shape[0] == 0:
        positive = np.zeros(n_states, dtype=np.int64)
    n_gold = 0
    for t in range(length):
        if (ints[LOSS] & (CONSTRAINED - 1)) == COUNTING and positive[y[t]] != 0:
            n_gold += 1
    increments = np.empty((length, n_states, n_counters), dtype=np.int64)
    for t in range(length):
        for s in range(n_states):
            for k in range(n_counters):
                increments[t, s, k] = _increment(ints[STATS + k], y[t], s, positive)
    radix = np.empty(n_counters, dtype=np.int64)
    for k in range(n_counters):
        radix[k] = (n_gold if ints[STATS + k] == TP else length) + 1
    sum_low = np.empty((length, n_counters), dtype=np.int64)
    sum_high = np.empty((length, n_counters), dtype=np.int64)
    low = np.empty((length, n_counters), dtype=np.int64)
    high = np.empty((length, n_counters), dtype=np.int64)
    for k in range(n_counters):
        acc_low = 0
        acc_high = 0
        for t in range(length):
            smallest = increments[t, 0, k]
            largest = increments[t, 0, k]
            for s in range(1, n_states):
                smallest = min(smallest, increments[t, s, k])
                largest = max(largest, increments[t, s, k])
            acc_low += smallest
            acc_high += largest
            sum_low[t, k] = acc_low
            sum_high[t, k] = acc_high
            low[t, k] = min(acc_low, radix[k] - 1)
            high[t, k] = min(acc_high, radix[k] - 1)
    size = 1
    for k in range(n_counters):
        size *= radix[k]
    mu = np.full(size, -np.inf)
    best_per_statistic_one(unary, trans, start, end, increments, radix, low, high, mu)
    gold = _score(unary, pair, y) if rescaling == SLACK else 0.0
    strides = np.empty(n_counters, dtype=np.int64)
    stride = 1
    for k in range(n_counters - 1, -1, -1):
        strides[k] = stride
        stride *= radix[k]
    stats = np.empty(n_counters, dtype=np.int64)
    target = -1
    top = -np.inf
    for value in range(size):
        objective = -np.inf
        if np.isfinite(mu[value]):
            for k in range(n_counters):
                stats[k] = (value // strides[k]) % radix[k]
            eta = _eta(ints[ETA], stats, n_gold, floats[0] if floats.shape[0] else 0.0)
            if rescaling == MARGIN:
                objective = mu[value] + eta
            else:
                objective = (1.0 + mu[value] - gold) * eta
        if target < 0 or objective > top:
            target = value
            top = objective
    # the boxes narrowed to the values from which the target is still reachable
    saturates = False
    for k in range(n_counters):
        digit = (target // strides[k]) % radix[k]
        capped = sum_high[length - 1, k] > radix[k] - 1
        saturates = saturates or capped
        for t in range(length):
            rest_low = sum_low[length - 1, k] - sum_low[t, k]
            rest_high = sum_high[length - 1, k] - sum_high[t, k]
            low[t, k] = max(low[t, k], digit - rest_high)
            if not (capped and digit == radix[k] - 1):
                high[t, k] = min(high[t, k], digit - rest_low)
    best_with_statistic_one(unary, trans, start, end, increments, radix, low, high, target,
                            saturates, np.empty(0, dtype=np.int16),
                            np.empty(0, dtype=np.int32), yhat)
    for t in range(length):
        yhat[t] = max(yhat[t], 0)


@njit(**_NJIT)
def _top_two_search(unary, trans, start, end, pair, y, yhat):
    """0/1 loss, margin rescaling: the gold labeling unless the best other one scores at
    least its score + 1 (``ChainDecoder._zero_one_augmented_map``)."""
    length = unary.shape[0]
    paths = np.full((length, 2), -1, dtype=np.int64)
    scores = np.full(2, -np.inf)
    top_k_one(unary, trans, start, end, 2, paths, scores)
    best_is_gold = True
    for t in range(length):
        best_is_gold = best_is_gold and paths[t, 0] == y[t]
    column = 1 if best_is_gold else 0
    if _score(unary, pair, y) >= scores[column] + 1.0:
        yhat[:length] = y
    else:
        yhat[:length] = paths[:, column]


@njit(**_NJIT)
def constrained_pair(pair, ints, floats):
    """``pair`` (S² + 2S,) with the constraint mask at the end of ``floats`` added when
    ``ints[LOSS]`` has the :data:`CONSTRAINED` bit (a copy), else ``pair`` itself."""
    if (ints[LOSS] & CONSTRAINED) == 0:
        return pair
    n_pair = pair.shape[0]
    mask = floats[floats.shape[0] - n_pair:]
    out = np.empty(n_pair)
    for j in range(n_pair):
        out[j] = pair[j] + mask[j]
    return out


@njit(**_NJIT)
def chain_oracle(rescaling, unary, pair, y_i, costs_i, ints, floats, yhat):
    """The (loss-augmented) Viterbi output of one sequence and its task loss.

    Arguments as for :func:`skstruct.decoders._engine.dispatch.oracle` without ``code``; ``unary``
    is (L, S), ``pair`` (S² + 2S,).
    """
    length, n_states = unary.shape
    square = n_states * n_states
    pair = constrained_pair(pair, ints, floats)
    trans = pair[:square].reshape((n_states, n_states))
    start = pair[square:square + n_states]
    end = pair[square + n_states:square + 2 * n_states]
    out = yhat[:length]
    search = ints[SEARCH]
    loss = ints[LOSS] & (CONSTRAINED - 1)
    scale = 1.0 / length if ints[NORMALIZE] else 1.0
    if search == VITERBI:
        delta = np.empty((length, n_states))
        back = np.empty((length, n_states), dtype=np.int32)
        if loss == HAMMING:
            augmented = np.empty((length, n_states))
            for t in range(length):
                for s in range(n_states):
                    augmented[t, s] = unary[t, s] + _hamming_cost(ints, floats, y_i[t], s,
                                                                   scale)
            viterbi_one(augmented, trans, start, end, delta, back, out)
        elif loss == COSTS:
            augmented = np.empty((length, n_states))
            for t in range(length):
                for s in range(n_states):
                    augmented[t, s] = unary[t, s] + costs_i[t, s]
            viterbi_one(augmented, trans, start, end, delta, back, out)
        else:
            viterbi_one(unary, trans, start, end, delta, back, out)
    elif search == TOP_TWO:
        _top_two_search(unary, trans, start, end, pair, y_i, out)
    else:
        _statistic_search(rescaling, unary, trans, start, end, pair, y_i, ints, floats, out)
    if loss == NO_LOSS:
        return 0.0
    if loss == HAMMING:
        total = 0.0
        for t in range(length):
            total += _hamming_cost(ints, floats, y_i[t], out[t], scale)
        return total
    if loss == COSTS:
        total = 0.0
        for t in range(length):
            total += costs_i[t, out[t]]
        return total
    if loss == ZERO_ONE:
        for t in range(length):
            if out[t] != y_i[t]:
                return 1.0
        return 0.0
    # count statistics of the output, η as the loss computes it
    n_counters = ints[N_STATS]
    positive = ints[HEADER:]
    stats = np.zeros(n_counters, dtype=np.int64)
    n_gold = 0
    for t in range(length):
        if positive[y_i[t]] != 0:
            n_gold += 1
        for k in range(n_counters):
            stats[k] += _increment(ints[STATS + k], y_i[t], out[t], positive)
    return _eta(ints[ETA], stats, n_gold, floats[0])
