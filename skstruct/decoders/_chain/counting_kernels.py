"""Statistic-augmented Viterbi: the best chain score for every value of a count statistic.

The statistic is a vector of K counters G = (G_1 .. G_K) with G_k = min(Σ_t g_tk(y_t),
cap_k): each token adds ``increments[t, s, k]`` (>= 0) to counter k when it takes state s,
and a counter stops at its cap (caps as large as the counter can grow never bind). The
counters of sequence i are flattened to one index l in mixed radix (cap_k + 1), most
significant first; the score rows ``(n_states, R)`` of the dynamic program use that layout,
R = Π_k (cap_k + 1).

After token t the program only visits the counter values inside a box
``low[t, k] <= G_k <= high[t, k]`` given by the caller: the values reachable from the
first token (prefix sums of the smallest and largest increments) for the table of every
value, narrowed to those from which the target value is still reachable for the
backtracking pass. The back-pointers of token t are stored only for that box, as the
previous state in the smallest integer type that holds it: when no counter can reach its
cap the previous counter value is the current one minus the increments of the current
state, so nothing else is needed; when a cap can bind (``saturates``) the previous value's
flat index is stored too.

Time O(Σ_t S² |box_t|) and memory O(S R) per sequence for the table; the backtracking pass
adds Σ_t S |box_t| back-pointers of one byte (S <= 128 states) to a few bytes.
"""

import numpy as np
from numba import njit, prange

_NJIT = dict(cache=True, nogil=True)


@njit
def _box_strides(low_t, high_t, strides):
    """Row-major strides of the box of one token; returns its size (0 when empty)."""
    size = 1
    for k in range(low_t.shape[0] - 1, -1, -1):
        strides[k] = size
        size *= max(high_t[k] - low_t[k] + 1, 0)
    return size


@njit
def _first_digits(low_t, high_t, digits):
    """Set every digit to the low end of the box; False when the box is empty.

    The leading K - 1 digits then run as an odometer (:func:`_next_digits`); the last one
    is the contiguous inner run of the loops.
    """
    for k in range(low_t.shape[0]):
        if high_t[k] < low_t[k]:
            return False
        digits[k] = low_t[k]
    return True


@njit
def _next_digits(low_t, high_t, digits):
    """Advance the odometer over the leading K - 1 counters; False after the last."""
    k = low_t.shape[0] - 2
    while k >= 0:
        digits[k] += 1
        if digits[k] <= high_t[k]:
            return True
        digits[k] = low_t[k]
        k -= 1
    return False


@njit
def _fill_box(rows, low_t, high_t, flat_strides, digits, value):
    """rows[:, l] = value for every l in the box."""
    last = low_t.shape[0] - 1
    if not _first_digits(low_t, high_t, digits):
        return
    while True:
        base = 0
        for k in range(last):
            base += digits[k] * flat_strides[k]
        for s in range(rows.shape[0]):
            for d in range(low_t[last], high_t[last] + 1):
                rows[s, base + d] = value
        if not _next_digits(low_t, high_t, digits):
            return


@njit
def _first_step(cur, unary_a, start, incr_a, radix, flat_strides, low_a, high_a, digits):
    _fill_box(cur, low_a, high_a, flat_strides, digits, -np.inf)
    for s in range(cur.shape[0]):
        index = 0
        inside = True
        for k in range(radix.shape[0]):
            d = min(incr_a[s, k], radix[k] - 1)
            inside = inside and low_a[k] <= d <= high_a[k]
            index += d * flat_strides[k]
        if inside:
            cur[s, index] = start[s] + unary_a[s]


@njit
def _best_predecessors(prev, trans, s, begin, n, top, arg):
    """top[j] = max_p prev[p, begin + j] + trans[p, s] and its argmax, j < n."""
    top[:n] = -np.inf
    for p in range(prev.shape[0]):
        weight = trans[p, s]
        # A slice and selects (no branch, no negative-index check) let LLVM vectorize.
        row = prev[p, begin : begin + n]
        for j in range(n):
            v = row[j] + weight
            t = top[j]
            better = v > t
            top[j] = v if better else t
            arg[j] = p if better else arg[j]


@njit
def _relax(dest, top, arg, gain, back_state, back_value, source, keep, keep_value):
    """dest[i] = max(dest[i], top[i] + gain), recording where it improved."""
    for i in range(dest.shape[0]):
        v = top[i] + gain
        c = dest[i]
        better = v > c
        dest[i] = v if better else c
        if keep:
            back_state[i] = arg[i] if better else back_state[i]
            if keep_value:
                back_value[i] = source + i if better else back_value[i]


@njit
def _step(prev, cur, unary_t, trans, incr_t, radix, flat_strides, low0, high0, low1, high1,
          digits, box_strides, top, arg, back_state, back_value, back_start):
    """One token of the program: scores of box 1 in ``cur`` from those of box 0 in ``prev``.

    Writes the back-pointers of box 1 from ``back_start`` when ``back_state`` is not
    empty (layout: state-major, then the box in row-major order).
    """
    n_states = prev.shape[0]
    last = radix.shape[0] - 1
    box1 = _box_strides(low1, high1, box_strides)
    _fill_box(cur, low1, high1, flat_strides, digits, -np.inf)
    if box1 == 0 or not _first_digits(low0, high0, digits):
        return
    keep = back_state.shape[0] > 0
    keep_value = back_value.shape[0] > 0
    run = high0[last] - low0[last] + 1
    cap = radix[last] - 1
    while True:
        base0 = 0
        for k in range(last):
            base0 += digits[k] * flat_strides[k]
        for s in range(n_states):
            base1 = 0
            box_base = back_start + s * box1
            inside = True
            for k in range(last):
                d = min(digits[k] + incr_t[s, k], radix[k] - 1)
                inside = inside and low1[k] <= d <= high1[k]
                base1 += d * flat_strides[k]
                box_base += (d - low1[k]) * box_strides[k]
            if not inside:
                continue
            _best_predecessors(prev, trans, s, base0 + low0[last], run, top, arg)
            step = incr_t[s, last]
            source = base0 + low0[last]
            # below the cap: j -> d = low0 + j + step, one to one
            first = max(0, low1[last] - low0[last] - step)
            stop = min(run, min(high1[last], cap - 1) - low0[last] - step + 1)
            if stop > first:
                d = low0[last] + first + step
                at = box_base + d - low1[last]
                n = stop - first
                _relax(cur[s, base1 + d : base1 + d + n], top[first:stop], arg[first:stop],
                       unary_t[s], back_state[at : at + n if keep else at],
                       back_value[at : at + n if keep_value else at], source + first, keep,
                       keep_value)
            # at the cap: every j from there on lands on it
            if low1[last] <= cap <= high1[last]:
                at = box_base + cap - low1[last]
                for j in range(max(0, cap - low0[last] - step), run):
                    _relax(cur[s, base1 + cap : base1 + cap + 1], top[j : j + 1],
                           arg[j : j + 1], unary_t[s], back_state[at : at + 1 if keep else at],
                           back_value[at : at + 1 if keep_value else at], source + j, keep,
                           keep_value)
        if not _next_digits(low0, high0, digits):
            return


@njit
def _flat_strides(radix):
    strides = np.empty(radix.shape[0], dtype=np.int64)
    size = 1
    for k in range(radix.shape[0] - 1, -1, -1):
        strides[k] = size
        size *= radix[k]
    return strides


@njit(**_NJIT)
def best_per_statistic(unary, offsets, trans, start, end, increments, radix, low, high,
                       table_offsets, bounds):
    """μ(l) = max {θ_y : G(y) = l} for every sequence and statistic value l.

    Parameters
    ----------
    increments : ndarray of shape (n_tokens, n_states, K), int64
    radix : ndarray of shape (n_sequences, K), int64
        cap + 1 of every counter of every sequence.
    low, high : ndarray of shape (n_tokens, K), int64
        The counter values reachable after each token.
    table_offsets : ndarray of shape (n_sequences + 1,)
        Cumulated Π_k radix[i, k].
    bounds : ndarray of shape (n_chunks + 1,), int64
        Contiguous chunks of sequences, one per parallel iteration (of about equal work,
        :func:`box_work`); the result does not depend on them.

    Returns
    -------
    mu : ndarray of shape (table_offsets[-1],)
        Sequence ``i`` owns entries ``table_offsets[i]:table_offsets[i + 1]``; -inf where no
        labeling reaches that value.
    done : ndarray of shape (n_sequences,), bool
        False for a sequence whose loop body did not finish: numba does not propagate
        exceptions raised in a parallel loop (a failed allocation), so the caller checks.
    """
    mu = np.full(table_offsets[-1], -np.inf)
    done = np.zeros(offsets.shape[0] - 1, dtype=np.bool_)
    _best_per_statistic_chunks(unary, offsets, trans, start, end, increments, radix, low,
                               high, table_offsets, bounds, mu, done)
    return mu, done


@njit(parallel=True, **_NJIT)
def _best_per_statistic_chunks(unary, offsets, trans, start, end, increments, radix, low,
                               high, table_offsets, bounds, mu, done):
    # the one parallel loop of best_per_statistic: no whole-array expression here, which
    # the dynamic schedule would cut into single elements
    for chunk in prange(bounds.shape[0] - 1):
        for seq in range(bounds[chunk], bounds[chunk + 1]):
            a, b = offsets[seq], offsets[seq + 1]
            best_per_statistic_one(unary[a:b], trans, start, end, increments[a:b],
                                   radix[seq], low[a:b], high[a:b],
                                   mu[table_offsets[seq]:table_offsets[seq + 1]])
            done[seq] = True


@njit(**_NJIT)
def box_work(offsets, low, high, n_states):
    """Work of the program over every sequence, cumulated: S² Σ_t |box_t| (int64,
    shape (n_sequences + 1,)), for cutting a batch into chunks of about equal work."""
    n_seq = offsets.shape[0] - 1
    work = np.empty(n_seq + 1, dtype=np.int64)
    work[0] = 0
    for seq in range(n_seq):
        total = 0
        for t in range(offsets[seq], offsets[seq + 1]):
            size = 1
            for k in range(low.shape[1]):
                size *= max(high[t, k] - low[t, k] + 1, 0)
            total += size
        work[seq + 1] = work[seq] + n_states * n_states * max(total, 1)
    return work


@njit(**_NJIT)
def best_per_statistic_one(unary, trans, start, end, increments, radix, low, high, mu):
    """μ(l) of one sequence (the rows of its tokens), written to ``mu`` (-inf beforehand).

    The per-sequence body of :func:`best_per_statistic`, also called by the per-example
    oracle of the compiled engine.
    """
    # the back-pointer types of the backtracking pass with up to 128 states: one
    # compilation of _forward serves both passes
    no_state = np.empty(0, dtype=np.int8)
    no_value = np.empty(0, dtype=np.int32)
    length = unary.shape[0]
    rows = _forward(unary, trans, start, increments, radix, low, high, 0, length,
                    no_state, no_value, np.zeros(length + 1, dtype=np.int64))
    _read_table(rows, end, low[length - 1], high[length - 1], _flat_strides(radix), mu)


@njit
def _forward(unary, trans, start, increments, radix, low, high, a, b, back_state, back_value,
             back_start):
    """The program over tokens ``a:b`` (one sequence): its score rows after token b - 1.

    Stores the back-pointers of token t from ``back_start[t - a]`` when ``back_state`` is
    not empty.
    """
    n_states = unary.shape[1]
    n_counters = radix.shape[0]
    strides = _flat_strides(radix)
    size = strides[0] * radix[0]
    digits = np.empty(n_counters, dtype=np.int64)
    box_strides = np.empty(n_counters, dtype=np.int64)
    top = np.empty(radix[n_counters - 1])
    arg = np.empty(radix[n_counters - 1], dtype=np.int64)
    prev = np.empty((n_states, size))
    cur = np.empty((n_states, size))
    _first_step(prev, unary[a], start, increments[a], radix, strides, low[a], high[a], digits)
    for t in range(a + 1, b):
        _step(prev, cur, unary[t], trans, increments[t], radix, strides, low[t - 1],
              high[t - 1], low[t], high[t], digits, box_strides, top, arg, back_state,
              back_value, back_start[t - a])
        prev, cur = cur, prev
    return prev


@njit
def _read_table(rows, end, low_t, high_t, flat_strides, out):
    """out[l] = max_s rows[s, l] + end[s] for l in the box (out is -inf elsewhere)."""
    last = low_t.shape[0] - 1
    digits = np.empty(low_t.shape[0], dtype=np.int64)
    if not _first_digits(low_t, high_t, digits):
        return
    while True:
        base = 0
        for k in range(last):
            base += digits[k] * flat_strides[k]
        for d in range(low_t[last], high_t[last] + 1):
            top = -np.inf
            for s in range(rows.shape[0]):
                top = max(top, rows[s, base + d] + end[s])
            out[base + d] = top
        if not _next_digits(low_t, high_t, digits):
            return


@njit
def _back_offsets(low, high, a, b, n_states):
    """Start of the back-pointers of every token of a sequence, and their total."""
    box_strides = np.empty(low.shape[1], dtype=np.int64)
    starts = np.zeros(b - a + 1, dtype=np.int64)
    for t in range(a + 1, b):
        starts[t - a + 1] = starts[t - a] + n_states * _box_strides(low[t], high[t],
                                                                     box_strides)
    return starts


@njit
def _box_index(value, radix, flat_strides, low_t, high_t, box_strides):
    """Position of a flat counter value inside the box of a token."""
    _box_strides(low_t, high_t, box_strides)
    at = 0
    for k in range(radix.shape[0]):
        at += ((value // flat_strides[k]) % radix[k] - low_t[k]) * box_strides[k]
    return at


@njit(**_NJIT)
def best_with_statistic(unary, offsets, trans, start, end, increments, radix, low, high,
                        targets, saturates, state_type, value_type, bounds):
    """The best labeling of every sequence among those whose statistic equals ``targets``.

    Parameters
    ----------
    increments, radix
        As for :func:`best_per_statistic`.
    low, high : ndarray of shape (n_tokens, K), int64
        The counter values after each token from which ``targets`` can still be reached.
    targets : ndarray of shape (n_sequences,), int64
        Flat statistic value to reach.
    saturates : ndarray of shape (n_sequences,), bool
        Whether a counter of the sequence can reach its cap: then the previous counter
        value is stored with every back-pointer.
    state_type, value_type : empty ndarrays
        Their dtypes are those of the stored previous states and previous values.
    bounds : ndarray of shape (n_chunks + 1,), int64
        As for :func:`best_per_statistic`.

    Returns
    -------
    labels : ndarray of shape (n_tokens,), int64
        -1 over sequences whose target no labeling reaches.
    done : ndarray of shape (n_sequences,), bool
        As for :func:`best_per_statistic`.
    """
    labels = np.empty(unary.shape[0], dtype=np.int64)
    done = np.zeros(offsets.shape[0] - 1, dtype=np.bool_)
    _best_with_statistic_chunks(unary, offsets, trans, start, end, increments, radix, low,
                                high, targets, saturates, state_type, value_type, bounds,
                                labels, done)
    return labels, done


@njit(parallel=True, **_NJIT)
def _best_with_statistic_chunks(unary, offsets, trans, start, end, increments, radix, low,
                                high, targets, saturates, state_type, value_type, bounds,
                                labels, done):
    # the one parallel loop of best_with_statistic (see _best_per_statistic_chunks)
    for chunk in prange(bounds.shape[0] - 1):
        for seq in range(bounds[chunk], bounds[chunk + 1]):
            a, b = offsets[seq], offsets[seq + 1]
            best_with_statistic_one(unary[a:b], trans, start, end, increments[a:b],
                                    radix[seq], low[a:b], high[a:b], targets[seq],
                                    saturates[seq], state_type, value_type, labels[a:b])
            done[seq] = True


@njit(**_NJIT)
def best_with_statistic_one(unary, trans, start, end, increments, radix, low, high, target,
                            saturates, state_type, value_type, labels):
    """The best labeling of one sequence whose statistic equals ``target``, into
    ``labels`` (-1 everywhere when none reaches it).

    The per-sequence body of :func:`best_with_statistic`, also called by the per-example
    oracle of the compiled engine.
    """
    length, n_states = unary.shape
    back_start = _back_offsets(low, high, 0, length, n_states)
    back_state = np.empty(back_start[-1], dtype=state_type.dtype)
    back_value = np.empty(back_start[-1] if saturates else 0, dtype=value_type.dtype)
    rows = _forward(unary, trans, start, increments, radix, low, high, 0, length,
                    back_state, back_value, back_start)
    _backtrack(rows, end, target, increments, radix, low, high, 0, length, back_state,
               back_value, back_start, labels)


@njit
def _backtrack(rows, end, value, increments, radix, low, high, a, b, back_state, back_value,
               back_start, labels):
    """Follow the back-pointers from the best last state at ``value``."""
    flat_strides = _flat_strides(radix)
    box_strides = np.empty(radix.shape[0], dtype=np.int64)
    state = -1
    top = -np.inf
    inside = True
    for k in range(radix.shape[0]):
        d = (value // flat_strides[k]) % radix[k]
        inside = inside and low[b - 1, k] <= d <= high[b - 1, k]
    if inside:
        for s in range(rows.shape[0]):
            v = rows[s, value] + end[s]
            if v > top:
                top = v
                state = s
    if state < 0:
        labels[a:b] = -1
        return
    labels[b - 1] = state
    for t in range(b - 1, a, -1):
        box_size = _box_strides(low[t], high[t], box_strides)
        at = back_start[t - a] + state * box_size + _box_index(
            value, radix, flat_strides, low[t], high[t], box_strides)
        previous = np.int64(back_state[at])
        if back_value.shape[0] > 0:
            value = np.int64(back_value[at])
        else:
            for k in range(radix.shape[0]):
                value -= increments[t, state, k] * flat_strides[k]
        state = previous
        labels[t - 1] = state
