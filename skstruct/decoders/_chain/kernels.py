"""Compiled dynamic programs over batches of first-order chains.

Every kernel takes the stacked unary scores ``unary`` (n_tokens, n_states), the sequence
``offsets`` (n_sequences + 1,), and the shared ``trans`` (n_states, n_states), ``start`` and
``end`` (n_states,) scores, and runs one sequence per parallel iteration.

Two forward-backward kernels compute the same quantities:

* ``forward_backward_scaled`` works with probabilities rescaled at every position
  (exponentials of the transition scores are taken once per batch, unary exponentials once
  per token). It is exact up to rounding whenever the spread of the transition scores and
  of the end scores is moderate (see ``SCALED_RANGE_LIMIT``), whatever the unary scores.
* ``forward_backward_log`` works in log space throughout and is stable for any finite
  scores, at the price of ``n_states ** 2`` exponentials per token.

A score of -inf forbids a part. A sequence with no labeling of finite score gets
log_z = -inf from every kernel (never NaN), zero marginals, -inf as its best score, and
-1 paths from ``top_k_viterbi``, which never lists a labeling of score -inf.
"""

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic

from ...utils._parallel import MAX_CHUNKS, TOKENS_PER_CHUNK, token_chunks
from .._core.sampling import alternative_value, first_change, next_change
from .simd import (LANES, add8, fma8, load8, mul8, select_greater8, splat8, store8,
                   store8_int32)

#: Largest spread (max - min) of transition or end scores for which the scaled kernel is
#: used. Intermediate quantities of the scaled recursions are bounded by exp(2 * spread),
#: far from overflow at this limit; beyond it the log-space kernel is used.
SCALED_RANGE_LIMIT = 200.0

#: Largest spread (max - min) of the finite transition and end scores for which the
#: scaled kernel is exact up to rounding, whatever the unary scores, when no transition
#: or end is forbidden. Every normalizer of its recursion is then at least exp(-spread), so
#: what it loses (values below exp(-708) before rescaling) weighs at most
#: exp(2 * spread - 708) (< 2^-53 here) in the log-partition and marginals.
#: ``ChainDecoder(log_space=False)`` raises beyond it.
SCALED_EXACT_SPREAD = 330.0

_NJIT = dict(cache=True, nogil=True)

#: Rows of the scaled forward-backward are padded to a multiple of this many states, so
#: that its loops over states run in whole vectors (no scalar remainder).
BLOCK = 8
# Reassociation lets the sums over states vectorize; no flag assumes finite values.
_FAST = {"reassoc", "contract", "arcp", "nsz"}
# Fused multiply-adds only: the scaled forward-backward's sums keep their order (the
# vectorized loops run over states, each sum over rows stays sequential).
_CONTRACT = {"contract"}


@njit(**_NJIT)
def viterbi_one(unary, trans, start, end, delta, back, labels):
    """Best label sequence of one chain: the Viterbi recursion every chain kernel shares.

    Parameters
    ----------
    unary : ndarray of shape (length, n_states)
        Unary scores of the sequence (length >= 1).
    trans : ndarray of shape (n_states, width), width >= n_states
        Transition scores; columns past ``n_states`` (padding) must be -inf.
    start, end : ndarray of shape (n_states,)
    delta : ndarray of shape (>= length, width), float64
        Scratch: best prefix scores.
    back : ndarray of shape (>= length, width), integer
        Scratch: back-pointers.
    labels : ndarray of shape (length,), int64
        Output: the best labels.

    Returns
    -------
    float
        The score of the best sequence (-inf when none has a finite score).

    Notes
    -----
    Ties go to the smallest previous state, and at the end to the smallest last state.
    The loop over previous states is outside the loop over current states, so the inner
    loop reads rows of ``trans`` and ``delta`` contiguously and vectorizes (selects, no
    branch); it visits the candidates in the same order as a scan over previous states
    with a strict ``>``, so the result is that scan's.
    """
    length, n_states = unary.shape
    width = trans.shape[1]
    for j in range(n_states):
        delta[0, j] = start[j] + unary[0, j]
    for j in range(n_states, width):
        delta[0, j] = -np.inf
    for t in range(1, length):
        top = delta[t]
        arg = back[t]
        previous = delta[t - 1]
        first = previous[0]
        row = trans[0]
        for j in range(width):
            top[j] = first + row[j]
            arg[j] = 0
        for i in range(1, n_states):
            d = previous[i]
            row = trans[i]
            for j in range(width):
                v = d + row[j]
                better = v > top[j]
                top[j] = v if better else top[j]
                arg[j] = i if better else arg[j]
        for j in range(n_states):
            top[j] += unary[t, j]
    arg_end = 0
    best = delta[length - 1, 0] + end[0]
    for j in range(1, n_states):
        v = delta[length - 1, j] + end[j]
        if v > best:
            best = v
            arg_end = j
    labels[length - 1] = arg_end
    for t in range(length - 1, 0, -1):
        labels[t - 1] = back[t, labels[t]]
    return best


#: Rows of the batch Viterbi are padded to a multiple of this many states.
VITERBI_BLOCK = LANES


@njit(parallel=True, **_NJIT)
def viterbi(unary, offsets, trans, start, end):
    """Best label sequence of every chain (:func:`viterbi_one`'s recursion, by
    :func:`viterbi_group`: a chunk's sequences longest first, ``GROUP`` at a time).

    Sequences run in chunks of about equal token counts, one chunk per parallel
    iteration (see :func:`forward_backward_scaled`), with scratch of the chunk's longest
    sequence; transitions padded with -inf columns to a multiple of ``VITERBI_BLOCK``.

    Returns
    -------
    labels : ndarray of shape (n_tokens,), int64
    best : ndarray of shape (n_sequences,)
        The score of each best sequence.
    """
    n_tokens, n_states = unary.shape
    n_seq = offsets.shape[0] - 1
    width = (n_states + VITERBI_BLOCK - 1) // VITERBI_BLOCK * VITERBI_BLOCK
    padded = _padded_transitions(trans, width)
    bounds = token_chunks(offsets, chunk_count_of(offsets))
    labels = np.empty(n_tokens, dtype=np.int64)
    best = np.empty(n_seq)
    for chunk in prange(bounds.shape[0] - 1):
        longest = 1
        for seq in range(bounds[chunk], bounds[chunk + 1]):
            longest = max(longest, offsets[seq + 1] - offsets[seq])
        delta = np.empty((longest, GROUP, width))
        back = np.empty((longest, GROUP, width), dtype=np.int32)
        firsts = np.empty(GROUP, dtype=np.int64)
        lengths = np.empty(GROUP, dtype=np.int64)
        group_best = np.empty(GROUP)
        order = group_order(offsets, bounds[chunk], bounds[chunk + 1])
        for head in range(0, order.shape[0], GROUP):
            n_group = min(GROUP, order.shape[0] - head)
            for g in range(n_group):
                seq = order[head + g]
                firsts[g] = offsets[seq]
                lengths[g] = offsets[seq + 1] - offsets[seq]
            viterbi_group(unary, firsts, lengths, n_group, padded, start, end, delta, back,
                          labels, group_best)
            for g in range(n_group):
                best[order[head + g]] = group_best[g]
    return labels, best


@njit(**_NJIT)
def _padded_transitions(trans, width):
    """``trans`` (n_states, n_states) with -inf columns up to ``width``."""
    n_states = trans.shape[0]
    padded = np.full((n_states, width), -np.inf)
    for i in range(n_states):
        for j in range(n_states):
            padded[i, j] = trans[i, j]
    return padded


@njit(inline="always")
def padded_width(n_states):
    """``n_states`` rounded up to a multiple of ``BLOCK``: the row length of the scaled
    forward-backward's work arrays."""
    return (n_states + BLOCK - 1) // BLOCK * BLOCK


@njit(**_NJIT)
def scaled_pairwise(trans, start, end, width):
    """The pairwise factors of the scaled forward-backward, padded to ``width`` states.

    Returns
    -------
    expo : ndarray of shape (width, width)
        exp(trans - trans_max); zero in the padding.
    expo_t : ndarray of shape (width, width)
        Its transpose (rows of it are the columns of ``expo``, read contiguously).
    start_padded : ndarray of shape (width,)
        ``start``, then -inf.
    exp_end : ndarray of shape (width,)
        exp(end - end_max), then zeros.
    trans_max, end_max : float
        The shifts (0 when a maximum is -inf), so that no exponential overflows.
    """
    n_states = trans.shape[0]
    trans_max = _finite_or_zero(trans.max())
    end_max = _finite_or_zero(end.max())
    expo = np.zeros((width, width))
    expo_t = np.zeros((width, width))
    for i in range(n_states):
        for j in range(n_states):
            e = np.exp(trans[i, j] - trans_max)
            expo[i, j] = e
            expo_t[j, i] = e
    start_padded = np.full(width, -np.inf)
    exp_end = np.zeros(width)
    for j in range(n_states):
        start_padded[j] = start[j]
        exp_end[j] = np.exp(end[j] - end_max)
    return expo, expo_t, start_padded, exp_end, trans_max, end_max


@intrinsic
def _bits_to_float(typingctx, bits):
    """The float64 whose IEEE bits are ``bits`` (int64)."""
    sig = types.float64(types.int64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return sig, codegen


_LOG2E = 1.4426950408889634
# ln 2 in two parts: k * _LN2_HI is exact for |k| < 2 ** 11
_LN2_HI = 0.6931471803691238
_LN2_LO = 1.9082149292705877e-10
#: Below this argument :func:`_exp_nonpositive` returns 0 (exp(-708) ~ 3e-308).
_EXP_FLOOR = -708.0


@njit(inline="always")
def _exp_nonpositive(x):
    """exp(x) for x <= 0 (or NaN), in straight-line arithmetic that vectorizes.

    exp(x) = 2^k exp(r), k = round(x / ln 2), r = x - k ln 2 (|r| <= ln 2 / 2, in two
    parts), exp(r) by its Taylor polynomial of degree 13 (truncation < 1e-17 relative)
    and 2^k built from its bits. Within one unit in the last place of ``np.exp`` (equal to
    it for most arguments); 0 below ``_EXP_FLOOR`` (where ``np.exp`` gives at most
    3e-308), 0 at -inf, NaN at NaN. ``np.exp`` is a call to libm per element, which
    the compiler cannot vectorize.
    """
    k = np.floor((x if x > _EXP_FLOOR else _EXP_FLOOR) * _LOG2E + 0.5)
    r = (x - k * _LN2_HI) - k * _LN2_LO
    p = 1.0 / 6227020800.0
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = p * r + 1.0
    p = p * r + 1.0
    v = p * _bits_to_float((np.int64(k) + 1023) << 52)
    return 0.0 if x < _EXP_FLOOR else v


@njit(inline="always")
def _row_max(matrix, r):
    """max(matrix[r]), in four interleaved maxima (row length a multiple of 4)."""
    m0 = m1 = m2 = m3 = -np.inf
    for o in range(0, matrix.shape[1], 4):
        m0 = max(m0, matrix[r, o])
        m1 = max(m1, matrix[r, o + 1])
        m2 = max(m2, matrix[r, o + 2])
        m3 = max(m3, matrix[r, o + 3])
    return max(max(m0, m1), max(m2, m3))


@njit(inline="always")
def _row_sum(matrix, r):
    """sum(matrix[r]), in four interleaved sums (row length a multiple of 4)."""
    s0 = s1 = s2 = s3 = 0.0
    for o in range(0, matrix.shape[1], 4):
        s0 += matrix[r, o]
        s1 += matrix[r, o + 1]
        s2 += matrix[r, o + 2]
        s3 += matrix[r, o + 3]
    return (s0 + s1) + (s2 + s3)


@njit(inline="always")
def _vector_matrix(coef, c_row, matrix, n_rows, out, o_row):
    """out[o_row] = Σ_i coef[c_row, i] * matrix[i] for i < n_rows, summed in the order of i.

    The loop over columns is innermost: it vectorizes (whole rows, stride 1).
    """
    width = out.shape[1]
    c = coef[c_row, 0]
    for j in range(width):
        out[o_row, j] = c * matrix[0, j]
    for i in range(1, n_rows):
        c = coef[c_row, i]
        for j in range(width):
            out[o_row, j] += c * matrix[i, j]


@njit(fastmath=_CONTRACT, **_NJIT)
def scaled_forward_backward_one(rows, first, length, n_states, expo, expo_t, start, exp_end,
                                trans_max, end_max, alpha, norm, beta, weight, labels, scale,
                                pair, with_marginals):
    """Log-partition and marginals of one chain by rescaled forward-backward, in place.

    The dynamic program every scaled forward-backward shares (the decoder's batches and
    the compiled CRF objective). Rows are ``width`` long (a multiple of ``BLOCK``). Every
    loop over states runs over whole rows with stride 1 innermost, so the compiler's loop
    vectorizer takes them all, the exponentials included (:func:`_exp_nonpositive`).

    Parameters
    ----------
    rows : ndarray of shape (>= first + length, width)
        In: the unary scores of the chain at rows ``first:first + length``, -inf in the
        columns ``n_states:width``. Out, with marginals: ``scale * (p(y_t = j) - [j ==
        labels[t]])`` (without the second term when ``labels`` is empty), 0 in the
        padding; without marginals: overwritten.
    first, length : int
        The chain's rows (length >= 1).
    n_states : int
    expo, expo_t, start, exp_end, trans_max, end_max
        From :func:`scaled_pairwise`.
    alpha : ndarray of shape (>= length, width)
        Scratch: the forward probabilities, each row summing to one.
    norm : ndarray of shape (>= length,)
        Scratch: the reciprocals 1 / n_t of the forward normalizers.
    beta, weight : ndarray of shape (1, width)
        Scratch.
    labels : ndarray of shape (length,) or (0,), int
        Gold labels whose indicators are subtracted from the marginals.
    scale : float
        Factor of the marginals and of ``pair``.
    pair : ndarray of shape (width, width)
        With marginals, ``scale * Σ_t alpha_{t-1}[i] * weight_t[j]`` is ADDED to it: the
        expected transition counts are ``expo * pair`` (elementwise), so the caller may sum
        many chains before that product.
    with_marginals : bool

    Returns
    -------
    float
        log Z, or -inf when no labeling has a finite score (the outputs are then
        meaningless: the caller zeroes them).

    Notes
    -----
    Forward: α̂_t ∝ (α̂_{t-1} expo) ⊙ φ_t with φ_t = exp(unary_t - max unary_t), each α̂_t
    normalized by its sum n_t; log Z adds the shifts and log n_t. Backward with the same
    normalizers: β̂_{L-1} = exp_end / c, β̂_{t-1} = expo (φ_t ⊙ β̂_t / n_t), and
    p(y_t = j) = α̂_t[j] β̂_t[j]. About 3 S² multiply-adds a token, none of them an
    exponential (S per token, vectorized).
    """
    width = rows.shape[1]
    top = -np.inf
    for j in range(width):
        v = start[j] + rows[first, j]
        rows[first, j] = v
        top = max(top, v)
    if top == -np.inf:
        return -np.inf
    for j in range(width):
        alpha[0, j] = _exp_nonpositive(rows[first, j] - top)
    total = _row_sum(alpha, 0)
    inv = 1.0 / total
    for j in range(width):
        alpha[0, j] *= inv
    log_z = top + np.log(total)
    for t in range(1, length):
        r = first + t
        top = _row_max(rows, r)
        if top == -np.inf:
            return -np.inf
        for j in range(width):
            rows[r, j] = _exp_nonpositive(rows[r, j] - top)
        _vector_matrix(alpha, t - 1, expo, n_states, alpha, t)
        for j in range(width):
            alpha[t, j] *= rows[r, j]
        total = _row_sum(alpha, t)
        if not total > 0.0:
            return -np.inf
        inv = 1.0 / total
        norm[t] = inv
        for j in range(width):
            alpha[t, j] *= inv
        log_z += top + trans_max + np.log(total)
    closing = 0.0
    for j in range(width):
        closing += alpha[length - 1, j] * exp_end[j]
    if not closing > 0.0:
        return -np.inf
    log_z += end_max + np.log(closing)
    if not with_marginals:
        return log_z
    inv = 1.0 / closing
    for j in range(width):
        beta[0, j] = exp_end[j] * inv
    for t in range(length - 1, 0, -1):
        r = first + t
        inv = norm[t]
        for j in range(width):
            weight[0, j] = rows[r, j] * beta[0, j] * inv
            rows[r, j] = scale * alpha[t, j] * beta[0, j]
        for i in range(n_states):
            c = scale * alpha[t - 1, i]
            for j in range(width):
                pair[i, j] += c * weight[0, j]
        _vector_matrix(weight, 0, expo_t, n_states, beta, 0)
    for j in range(width):
        rows[first, j] = scale * alpha[0, j] * beta[0, j]
    if labels.shape[0] > 0:
        for t in range(length):
            rows[first + t, labels[t]] -= scale
    return log_z


#: Sequences of a chunk run through the scaled forward-backward this many at a time, in
#: lockstep (:func:`scaled_forward_backward_group`).
GROUP = 4


@njit(inline="always")
def _vector_matrix_group(coef, c_row, matrix, n_rows, out, o_row, n_group):
    """out[o_row, g] = Σ_i coef[c_row, g, i] * matrix[i] for i < n_rows and g < n_group,
    each sum in the order of i (a chain of fused multiply-adds, as :func:`_vector_matrix`).

    By blocks of columns whose sums stay in registers over the whole sum over i
    (:mod:`.simd` vectors): a full group's four chains share each load of a block of
    ``matrix`` (:func:`_vector_matrix_four`); a partial group runs chain by chain, two
    blocks at a time.
    """
    if n_group == GROUP:
        _vector_matrix_four(coef, c_row, matrix, n_rows, out, o_row)
        return
    width = out.shape[2]
    n_cols = matrix.shape[1]
    for g in range(n_group):
        base = (o_row * GROUP + g) * width
        o = 0
        while o + 2 * LANES <= width:
            a = splat8(coef[c_row, g, 0])
            a0 = mul8(a, load8(matrix, o))
            a1 = mul8(a, load8(matrix, o + LANES))
            for i in range(1, n_rows):
                a = splat8(coef[c_row, g, i])
                a0 = fma8(a, load8(matrix, i * n_cols + o), a0)
                a1 = fma8(a, load8(matrix, i * n_cols + o + LANES), a1)
            store8(out, base + o, a0)
            store8(out, base + o + LANES, a1)
            o += 2 * LANES
        if o < width:
            a0 = mul8(splat8(coef[c_row, g, 0]), load8(matrix, o))
            for i in range(1, n_rows):
                a0 = fma8(splat8(coef[c_row, g, i]), load8(matrix, i * n_cols + o), a0)
            store8(out, base + o, a0)


@njit(inline="always")
def _vector_matrix_four(coef, c_row, matrix, n_rows, out, o_row):
    """:func:`_vector_matrix_group` of a full group (four chains): per pass over i, two
    blocks of ``LANES`` columns of the four chains (eight vector sums in registers; the
    last block of a row of an odd number of blocks alone, four sums), each row's block
    of ``matrix`` loaded once for the four chains and every ``coef`` broadcast."""
    width = out.shape[2]
    n_cols = matrix.shape[1]
    base = o_row * GROUP * width
    o = 0
    while o + 2 * LANES <= width:
        m = load8(matrix, o)
        n = load8(matrix, o + LANES)
        a, b = splat8(coef[c_row, 0, 0]), splat8(coef[c_row, 1, 0])
        c, d = splat8(coef[c_row, 2, 0]), splat8(coef[c_row, 3, 0])
        a0, b0, c0, d0 = mul8(a, m), mul8(b, m), mul8(c, m), mul8(d, m)
        a1, b1, c1, d1 = mul8(a, n), mul8(b, n), mul8(c, n), mul8(d, n)
        for i in range(1, n_rows):
            m = load8(matrix, i * n_cols + o)
            n = load8(matrix, i * n_cols + o + LANES)
            a, b = splat8(coef[c_row, 0, i]), splat8(coef[c_row, 1, i])
            c, d = splat8(coef[c_row, 2, i]), splat8(coef[c_row, 3, i])
            a0, b0, c0, d0 = fma8(a, m, a0), fma8(b, m, b0), fma8(c, m, c0), fma8(d, m, d0)
            a1, b1, c1, d1 = fma8(a, n, a1), fma8(b, n, b1), fma8(c, n, c1), fma8(d, n, d1)
        store8(out, base + o, a0)
        store8(out, base + o + LANES, a1)
        store8(out, base + width + o, b0)
        store8(out, base + width + o + LANES, b1)
        store8(out, base + 2 * width + o, c0)
        store8(out, base + 2 * width + o + LANES, c1)
        store8(out, base + 3 * width + o, d0)
        store8(out, base + 3 * width + o + LANES, d1)
        o += 2 * LANES
    if o < width:
        m = load8(matrix, o)
        a0 = mul8(splat8(coef[c_row, 0, 0]), m)
        b0 = mul8(splat8(coef[c_row, 1, 0]), m)
        c0 = mul8(splat8(coef[c_row, 2, 0]), m)
        d0 = mul8(splat8(coef[c_row, 3, 0]), m)
        for i in range(1, n_rows):
            m = load8(matrix, i * n_cols + o)
            a0 = fma8(splat8(coef[c_row, 0, i]), m, a0)
            b0 = fma8(splat8(coef[c_row, 1, i]), m, b0)
            c0 = fma8(splat8(coef[c_row, 2, i]), m, c0)
            d0 = fma8(splat8(coef[c_row, 3, i]), m, d0)
        store8(out, base + o, a0)
        store8(out, base + width + o, b0)
        store8(out, base + 2 * width + o, c0)
        store8(out, base + 3 * width + o, d0)


#: Positions whose transition sums the group kernel adds in one pass over ``pair``.
PAIR_STEPS = 4


@njit(inline="always")
def _add_pair_steps(alpha, weight, steps, n_steps, lengths, n_group, n_states, log_z, scales,
                    pair, shared_pair):
    """pair[g] (or pair[0]) += scales[g] * alpha[t - 1, g] ⊗ weight[k, g] for the buffered
    positions t = steps[k], k < n_steps (decreasing), each entry's additions in that order:
    the same sums as one position at a time, with a load and store of ``pair`` per
    ``n_steps`` multiply-adds. A chain shorter than t + 1 adds 0 for that position.

    By :mod:`.simd` vectors: two rows of ``pair`` at a time, each block of the buffered
    ``weight`` rows loaded once for both."""
    width = pair.shape[2]
    for g in range(n_group):
        if log_z[g] == -np.inf:
            continue
        p = 0 if shared_pair else g
        base = p * pair.shape[1] * width
        scale = scales[g]
        length = lengths[g]
        if n_steps == PAIR_STEPS:
            t0, t1, t2, t3 = steps[0], steps[1], steps[2], steps[3]
            w0 = g * width
            w1 = (GROUP + g) * width
            w2 = (2 * GROUP + g) * width
            w3 = (3 * GROUP + g) * width
            i = 0
            while i < n_states:
                two = i + 1 < n_states
                c0 = splat8(scale * alpha[t0 - 1, g, i] if t0 < length else 0.0)
                c1 = splat8(scale * alpha[t1 - 1, g, i] if t1 < length else 0.0)
                c2 = splat8(scale * alpha[t2 - 1, g, i] if t2 < length else 0.0)
                c3 = splat8(scale * alpha[t3 - 1, g, i] if t3 < length else 0.0)
                n = i + 1 if two else i
                e0 = splat8(scale * alpha[t0 - 1, g, n] if t0 < length else 0.0)
                e1 = splat8(scale * alpha[t1 - 1, g, n] if t1 < length else 0.0)
                e2 = splat8(scale * alpha[t2 - 1, g, n] if t2 < length else 0.0)
                e3 = splat8(scale * alpha[t3 - 1, g, n] if t3 < length else 0.0)
                r = base + i * width
                for o in range(0, width, LANES):
                    u0 = load8(weight, w0 + o)
                    u1 = load8(weight, w1 + o)
                    u2 = load8(weight, w2 + o)
                    u3 = load8(weight, w3 + o)
                    v = load8(pair, r + o)
                    v = fma8(c0, u0, v)
                    v = fma8(c1, u1, v)
                    v = fma8(c2, u2, v)
                    v = fma8(c3, u3, v)
                    store8(pair, r + o, v)
                    if two:
                        v = load8(pair, r + width + o)
                        v = fma8(e0, u0, v)
                        v = fma8(e1, u1, v)
                        v = fma8(e2, u2, v)
                        v = fma8(e3, u3, v)
                        store8(pair, r + width + o, v)
                i += 2
        else:
            for k in range(n_steps):
                t = steps[k]
                if not t < length:
                    continue
                wk = (k * GROUP + g) * width
                for i in range(n_states):
                    ck = splat8(scale * alpha[t - 1, g, i])
                    r = base + i * width
                    for o in range(0, width, LANES):
                        store8(pair, r + o, fma8(ck, load8(weight, wk + o), load8(pair, r + o)))


@njit(inline="always")
def _group_row_sum(matrix, r, g):
    """sum(matrix[r, g]), in four interleaved sums (as :func:`_row_sum`)."""
    s0 = s1 = s2 = s3 = 0.0
    for o in range(0, matrix.shape[2], 4):
        s0 += matrix[r, g, o]
        s1 += matrix[r, g, o + 1]
        s2 += matrix[r, g, o + 2]
        s3 += matrix[r, g, o + 3]
    return (s0 + s1) + (s2 + s3)


@njit(inline="always")
def _active(lengths, n_group, t):
    """How many sequences of a group (lengths decreasing) are longer than ``t``."""
    n = n_group
    while n > 0 and lengths[n - 1] <= t:
        n -= 1
    return n


@njit(fastmath=_CONTRACT, **_NJIT)
def scaled_forward_backward_group(rows, firsts, lengths, n_group, n_states, expo, expo_t,
                                  start, exp_end, trans_max, end_max, alpha, norm, beta,
                                  weight, labels, scales, pair, shared_pair, with_marginals,
                                  log_z, work, steps):
    """:func:`scaled_forward_backward_one` of up to ``GROUP`` chains in lockstep.

    Every chain goes through the same operations, in the same order, as in
    :func:`scaled_forward_backward_one`, so its log-partition, marginals and (with
    ``shared_pair`` False) transition sums are the same bits; position by position, the
    products of the group's chains with the transition factors are interleaved
    (:func:`_vector_matrix_group`), which keeps the core's multiply-add units busy where
    one chain's dependent sums would leave them waiting.

    Parameters
    ----------
    rows : ndarray of shape (n_rows, width)
        As in :func:`scaled_forward_backward_one`; chain g has rows ``firsts[g]:firsts[g]
        + lengths[g]``.
    firsts, lengths : ndarray of shape (>= n_group,), int64
        Lengths >= 1, in decreasing order.
    n_group : int
        At most ``GROUP``.
    alpha : ndarray of shape (>= longest, GROUP, width)
    norm : ndarray of shape (>= longest, GROUP)
    beta : ndarray of shape (1, GROUP, width)
        Scratch.
    weight : ndarray of shape (PAIR_STEPS, GROUP, width)
        Scratch.
    labels : ndarray of shape (n_rows,) or (0,), int
        Gold labels of the rows (``labels[firsts[g] + t]``), subtracted from the marginals.
    scales : ndarray of shape (>= n_group,)
        The factor of each chain's marginals and transition sums.
    pair : ndarray of shape (GROUP, width, width), or (1, >= width, width) with
        ``shared_pair``
        The transition sums are ADDED to ``pair[g]`` (one chain each), or all to
        ``pair[0]`` with ``shared_pair``, position by position with the chains in group
        order (so not in the order of chain after chain).
    log_z : ndarray of shape (>= n_group,)
        Output: log Z of each chain, -inf when no labeling has a finite score (its
        outputs are then meaningless and its transition sums untouched).
    work : ndarray of shape (2, GROUP)
        Scratch.
    steps : ndarray of shape (PAIR_STEPS,), int64
        Scratch.
    """
    width = rows.shape[1]
    tops = work[0]
    closing = work[1]
    for g in range(n_group):
        f = firsts[g]
        top = -np.inf
        for j in range(width):
            v = start[j] + rows[f, j]
            rows[f, j] = v
            top = max(top, v)
        if top == -np.inf:
            log_z[g] = -np.inf
            for j in range(width):
                alpha[0, g, j] = 0.0
            continue
        for j in range(width):
            alpha[0, g, j] = _exp_nonpositive(rows[f, j] - top)
        total = _group_row_sum(alpha, 0, g)
        inv = 1.0 / total
        for j in range(width):
            alpha[0, g, j] *= inv
        log_z[g] = top + np.log(total)
    longest = lengths[0]
    for t in range(1, longest):
        n_active = _active(lengths, n_group, t)
        for g in range(n_active):
            if log_z[g] == -np.inf:
                continue
            r = firsts[g] + t
            top = _row_max(rows, r)
            tops[g] = top
            if top == -np.inf:
                log_z[g] = -np.inf
                continue
            for j in range(width):
                rows[r, j] = _exp_nonpositive(rows[r, j] - top)
        _vector_matrix_group(alpha, t - 1, expo, n_states, alpha, t, n_active)
        for g in range(n_active):
            if log_z[g] > -np.inf:
                r = firsts[g] + t
                a = (t * GROUP + g) * width
                for o in range(0, width, LANES):
                    store8(alpha, a + o, mul8(load8(alpha, a + o), load8(rows, r * width + o)))
                total = _group_row_sum(alpha, t, g)
                if total > 0.0:
                    inv = 1.0 / total
                    norm[t, g] = inv
                    v_inv = splat8(inv)
                    for o in range(0, width, LANES):
                        store8(alpha, a + o, mul8(load8(alpha, a + o), v_inv))
                    log_z[g] += tops[g] + trans_max + np.log(total)
                    continue
                log_z[g] = -np.inf
            for j in range(width):
                alpha[t, g, j] = 0.0
    for g in range(n_group):
        if log_z[g] == -np.inf:
            continue
        last = lengths[g] - 1
        c = 0.0
        for j in range(width):
            c += alpha[last, g, j] * exp_end[j]
        if not c > 0.0:
            log_z[g] = -np.inf
            continue
        closing[g] = c
        log_z[g] += end_max + np.log(c)
    if not with_marginals:
        return
    n_buffered = 0
    for t in range(longest - 1, 0, -1):
        n_active = _active(lengths, n_group, t)
        k = n_buffered
        for g in range(n_active):
            if log_z[g] == -np.inf:
                for j in range(width):
                    weight[k, g, j] = 0.0
                continue
            if lengths[g] - 1 == t:
                inv = 1.0 / closing[g]
                for j in range(width):
                    beta[0, g, j] = exp_end[j] * inv
            r = firsts[g] + t
            inv = norm[t, g]
            scale = scales[g]
            v_inv, v_scale = splat8(inv), splat8(scale)
            a = (t * GROUP + g) * width
            b = g * width
            q = (k * GROUP + g) * width
            for o in range(0, width, LANES):
                u = load8(rows, r * width + o)
                v = load8(beta, b + o)
                store8(weight, q + o, mul8(mul8(u, v), v_inv))
                store8(rows, r * width + o, mul8(mul8(v_scale, load8(alpha, a + o)), v))
        for g in range(n_active, n_group):
            for j in range(width):
                weight[k, g, j] = 0.0
        steps[k] = t
        n_buffered += 1
        _vector_matrix_group(weight, k, expo_t, n_states, beta, 0, n_active)
        if n_buffered == PAIR_STEPS or t == 1:
            _add_pair_steps(alpha, weight, steps, n_buffered, lengths, n_group, n_states,
                            log_z, scales, pair, shared_pair)
            n_buffered = 0
    for g in range(n_group):
        if log_z[g] == -np.inf:
            continue
        if lengths[g] == 1:
            inv = 1.0 / closing[g]
            for j in range(width):
                beta[0, g, j] = exp_end[j] * inv
        f = firsts[g]
        scale = scales[g]
        for j in range(width):
            rows[f, j] = scale * alpha[0, g, j] * beta[0, g, j]
        if labels.shape[0] > 0:
            for t in range(lengths[g]):
                rows[f + t, labels[f + t]] -= scale


@njit(inline="always")
def group_order(offsets, first_seq, stop_seq):
    """The sequences ``first_seq:stop_seq``, longest first (ties in order): consecutive
    ``GROUP`` of them run in lockstep."""
    n = stop_seq - first_seq
    lengths = np.empty(n, dtype=np.int64)
    for k in range(n):
        lengths[k] = offsets[first_seq + k] - offsets[first_seq + k + 1]
    return np.argsort(lengths, kind="mergesort") + first_seq


def forward_backward_scaled(unary, offsets, trans, start, end, with_marginals):
    """Log-partition and marginals with per-position rescaling
    (:func:`scaled_forward_backward_group`, sequences of a chunk in groups of ``GROUP``).

    Sequences run in chunks of about equal token counts (``token_chunks``), one chunk
    per parallel iteration: under :func:`~skstruct.utils._parallel.dynamic_schedule` the
    threads take chunks as they finish. The kernel has no other parallel loop (no
    whole-array expression), so that schedule applies to the chunks only.

    The outputs are allocated by numpy, which asks the kernel for huge pages for large
    arrays: the marginals of a large batch then cost a few hundred page faults instead of
    one per 4 KiB (tens of milliseconds of system time for 200,000 tokens at 22 states).

    Returns
    -------
    log_z : ndarray of shape (n_sequences,)
    unary_marginals : ndarray of shape (n_tokens, n_states)
        Empty (0, n_states) when ``with_marginals`` is False.
    trans_marginals : ndarray of shape (n_sequences, n_states, n_states)
        Expected transition counts of each sequence; empty when ``with_marginals`` is False.
    """
    n_tokens, n_states = unary.shape
    n_seq = offsets.shape[0] - 1
    log_z = np.empty(n_seq)
    marg = np.empty((n_tokens if with_marginals else 0, n_states))
    trans_marg = np.empty((n_seq if with_marginals else 0, n_states, n_states))
    _forward_backward_scaled_into(unary, offsets, trans, start, end, with_marginals, log_z,
                                  marg, trans_marg)
    return log_z, marg, trans_marg


@njit(inline="always")
def _viterbi_step_four(delta, back, trans, t, n_states):
    """delta[t, g], back[t, g] before the unary scores, for the four chains of a full
    group: per block of ``LANES`` current states, the four chains' best scores and
    previous states stay in registers over the whole scan of previous states (candidates
    in increasing order, a later one taken only when strictly greater: the comparisons of
    :func:`viterbi_one`), each block of a row of ``trans`` loaded once for the four."""
    width = trans.shape[1]
    here = t * GROUP * width
    before = (t - 1) * GROUP * width
    for o in range(0, width, LANES):
        m = load8(trans, o)
        top0 = add8(splat8(delta.flat[before]), m)
        top1 = add8(splat8(delta.flat[before + width]), m)
        top2 = add8(splat8(delta.flat[before + 2 * width]), m)
        top3 = add8(splat8(delta.flat[before + 3 * width]), m)
        arg0 = arg1 = arg2 = arg3 = splat8(0.0)
        for i in range(1, n_states):
            m = load8(trans, i * width + o)
            state = splat8(float(i))
            v = add8(splat8(delta.flat[before + i]), m)
            arg0 = select_greater8(v, top0, state, arg0)
            top0 = select_greater8(v, top0, v, top0)
            v = add8(splat8(delta.flat[before + width + i]), m)
            arg1 = select_greater8(v, top1, state, arg1)
            top1 = select_greater8(v, top1, v, top1)
            v = add8(splat8(delta.flat[before + 2 * width + i]), m)
            arg2 = select_greater8(v, top2, state, arg2)
            top2 = select_greater8(v, top2, v, top2)
            v = add8(splat8(delta.flat[before + 3 * width + i]), m)
            arg3 = select_greater8(v, top3, state, arg3)
            top3 = select_greater8(v, top3, v, top3)
        store8(delta, here + o, top0)
        store8(delta, here + width + o, top1)
        store8(delta, here + 2 * width + o, top2)
        store8(delta, here + 3 * width + o, top3)
        store8_int32(back, here + o, arg0)
        store8_int32(back, here + width + o, arg1)
        store8_int32(back, here + 2 * width + o, arg2)
        store8_int32(back, here + 3 * width + o, arg3)


@njit(inline="always")
def _viterbi_step_one(delta, back, trans, t, g, n_states):
    """:func:`_viterbi_step_four` of chain ``g`` alone, two blocks at a time (then the
    last block of an odd number alone)."""
    width = trans.shape[1]
    here = (t * GROUP + g) * width
    before = ((t - 1) * GROUP + g) * width
    o = 0
    while o + 2 * LANES <= width:
        d = splat8(delta.flat[before])
        top0 = add8(d, load8(trans, o))
        top1 = add8(d, load8(trans, o + LANES))
        arg0 = arg1 = splat8(0.0)
        for i in range(1, n_states):
            d = splat8(delta.flat[before + i])
            state = splat8(float(i))
            v = add8(d, load8(trans, i * width + o))
            arg0 = select_greater8(v, top0, state, arg0)
            top0 = select_greater8(v, top0, v, top0)
            v = add8(d, load8(trans, i * width + o + LANES))
            arg1 = select_greater8(v, top1, state, arg1)
            top1 = select_greater8(v, top1, v, top1)
        store8(delta, here + o, top0)
        store8(delta, here + o + LANES, top1)
        store8_int32(back, here + o, arg0)
        store8_int32(back, here + o + LANES, arg1)
        o += 2 * LANES
    if o < width:
        top = add8(splat8(delta.flat[before]), load8(trans, o))
        arg = splat8(0.0)
        for i in range(1, n_states):
            v = add8(splat8(delta.flat[before + i]), load8(trans, i * width + o))
            arg = select_greater8(v, top, splat8(float(i)), arg)
            top = select_greater8(v, top, v, top)
        store8(delta, here + o, top)
        store8_int32(back, here + o, arg)


@njit(**_NJIT)
def viterbi_group(unary, firsts, lengths, n_group, trans, start, end, delta, back, labels,
                  best):
    """:func:`viterbi_one` of up to ``GROUP`` chains in lockstep: the same labels and
    scores, chain by chain (the same comparisons in the same order); position by
    position, a full group's four recursions share each block of a transition row
    (:func:`_viterbi_step_four`), their best scores and previous states kept in
    :mod:`.simd` registers over the whole scan of previous states, so their independent
    comparisons overlap.

    Parameters
    ----------
    unary : ndarray of shape (n_rows, n_states)
        Chain g has rows ``firsts[g]:firsts[g] + lengths[g]``.
    firsts, lengths : ndarray of shape (>= n_group,), int64
        Lengths >= 1, in decreasing order.
    n_group : int
        At most ``GROUP``.
    trans : ndarray of shape (n_states, width), width >= n_states
        Columns past ``n_states`` -inf.
    start, end : ndarray of shape (n_states,)
    delta : ndarray of shape (>= longest, GROUP, width), float64
    back : ndarray of shape (>= longest, GROUP, width), int32
        Scratch.
    labels : ndarray of shape (n_rows,), int64
        Output: the best labels of chain g at ``firsts[g]:firsts[g] + lengths[g]``.
    best : ndarray of shape (>= n_group,)
        Output: the best scores (-inf when no labeling has a finite score).
    """
    n_states = unary.shape[1]
    width = trans.shape[1]
    for g in range(n_group):
        f = firsts[g]
        for j in range(n_states):
            delta[0, g, j] = start[j] + unary[f, j]
        for j in range(n_states, width):
            delta[0, g, j] = -np.inf
    for t in range(1, lengths[0]):
        n_active = _active(lengths, n_group, t)
        # per chain and block of LANES current states, the best score and its previous
        # state stay in registers over the whole scan of previous states
        if n_active == GROUP:
            _viterbi_step_four(delta, back, trans, t, n_states)
        else:
            for g in range(n_active):
                _viterbi_step_one(delta, back, trans, t, g, n_states)
        for g in range(n_active):
            r = firsts[g] + t
            for j in range(n_states):
                delta[t, g, j] += unary[r, j]
    for g in range(n_group):
        last = lengths[g] - 1
        arg_end = 0
        top = delta[last, g, 0] + end[0]
        for j in range(1, n_states):
            v = delta[last, g, j] + end[j]
            if v > top:
                top = v
                arg_end = j
        best[g] = top
        f = firsts[g]
        labels[f + last] = arg_end
        for t in range(last, 0, -1):
            labels[f + t - 1] = back[t, g, labels[f + t]]


@njit(parallel=True, fastmath=_FAST, **_NJIT)
def _forward_backward_scaled_into(unary, offsets, trans, start, end, with_marginals, log_z,
                                  marg, trans_marg):
    """:func:`forward_backward_scaled` into given outputs (every entry is written)."""
    n_tokens, n_states = unary.shape
    width = padded_width(n_states)
    expo, expo_t, start_padded, exp_end, trans_max, end_max = scaled_pairwise(
        trans, start, end, width)
    bounds = token_chunks(offsets, chunk_count_of(offsets))
    no_labels = np.empty(0, dtype=np.int64)
    ones = np.empty(GROUP)
    for g in range(GROUP):
        ones[g] = 1.0
    for chunk in prange(bounds.shape[0] - 1):
        longest = 1
        for seq in range(bounds[chunk], bounds[chunk + 1]):
            longest = max(longest, offsets[seq + 1] - offsets[seq])
        rows = np.empty((GROUP * longest, width))
        alpha = np.empty((longest, GROUP, width))
        norm = np.empty((longest, GROUP))
        beta = np.empty((1, GROUP, width))
        weight = np.empty((PAIR_STEPS, GROUP, width))
        pair = np.empty((GROUP, width, width))
        firsts = np.empty(GROUP, dtype=np.int64)
        lengths = np.empty(GROUP, dtype=np.int64)
        group_log_z = np.empty(GROUP)
        work = np.empty((2, GROUP))
        steps = np.empty(PAIR_STEPS, dtype=np.int64)
        order = group_order(offsets, bounds[chunk], bounds[chunk + 1])
        for head in range(0, order.shape[0], GROUP):
            n_group = min(GROUP, order.shape[0] - head)
            for g in range(n_group):
                seq = order[head + g]
                a, b = offsets[seq], offsets[seq + 1]
                firsts[g] = g * longest
                lengths[g] = b - a
                for t in range(b - a):
                    for j in range(n_states):
                        rows[g * longest + t, j] = unary[a + t, j]
                    for j in range(n_states, width):
                        rows[g * longest + t, j] = -np.inf
                for i in range(width):
                    for j in range(width):
                        pair[g, i, j] = 0.0
            scaled_forward_backward_group(
                rows, firsts, lengths, n_group, n_states, expo, expo_t, start_padded,
                exp_end, trans_max, end_max, alpha, norm, beta, weight, no_labels, ones,
                pair, False, with_marginals, group_log_z, work, steps)
            for g in range(n_group):
                seq = order[head + g]
                a, b = offsets[seq], offsets[seq + 1]
                lz = group_log_z[g]
                log_z[seq] = lz
                if not with_marginals:
                    continue
                feasible = lz > -np.inf
                for t in range(b - a):
                    for j in range(n_states):
                        marg[a + t, j] = rows[g * longest + t, j] if feasible else 0.0
                for i in range(n_states):
                    for j in range(n_states):
                        trans_marg[seq, i, j] = expo[i, j] * pair[g, i, j] if feasible else 0.0


@njit(inline="always")
def chunk_count_of(offsets):
    """:func:`~skstruct.utils._parallel.chunk_count` of a batch, from compiled code."""
    n_seq = offsets.shape[0] - 1
    return max(1, min(n_seq, MAX_CHUNKS, (offsets[n_seq] - offsets[0]) // TOKENS_PER_CHUNK))


@njit(inline="always")
def _finite_or_zero(x):
    """``x``, or 0 when it is ±inf: a shift that keeps exp(score - shift) NaN-free."""
    return x if np.isfinite(x) else 0.0


@njit(inline="always")
def _logsumexp_into(values, n):
    top = values[0]
    for i in range(1, n):
        top = max(top, values[i])
    if top == -np.inf:
        return top
    s = 0.0
    for i in range(n):
        s += np.exp(values[i] - top)
    return top + np.log(s)


@njit(parallel=True, **_NJIT)
def forward_backward_log(unary, offsets, trans, start, end, with_marginals):
    """Log-partition and marginals computed in log space (any finite scores, and -inf).

    Same outputs as :func:`forward_backward_scaled`.
    """
    n_tokens, n_states = unary.shape
    n_seq = offsets.shape[0] - 1
    trans_t = _transposed(trans)
    log_alpha = np.empty((n_tokens, n_states))
    log_z = np.empty(n_seq)
    n_marg = n_tokens if with_marginals else 0
    log_beta = np.empty((n_marg, n_states))
    marg = np.empty((n_marg, n_states))
    # written in the loop (no whole-array expression: see forward_backward_scaled)
    trans_marg = np.empty((n_seq if with_marginals else 0, n_states, n_states))
    bounds = token_chunks(offsets, chunk_count_of(offsets))
    for chunk in prange(bounds.shape[0] - 1):
        for seq in range(bounds[chunk], bounds[chunk + 1]):
            forward_backward_log_one(unary, offsets, seq, trans, trans_t, start, end,
                                      with_marginals, log_alpha, log_beta, log_z, marg,
                                      trans_marg)
    return log_z, marg, trans_marg


@njit(**_NJIT)
def _transposed(matrix):
    """A C-contiguous copy of ``matrix.T``."""
    out = np.empty((matrix.shape[1], matrix.shape[0]))
    for i in range(matrix.shape[0]):
        for j in range(matrix.shape[1]):
            out[j, i] = matrix[i, j]
    return out


@njit(**_NJIT)
def forward_backward_log_one(unary, offsets, seq, trans, trans_t, start, end,
                              with_marginals, log_alpha, log_beta, log_z, marg, trans_marg):
    """Log-space forward-backward of sequence ``seq`` (see :func:`forward_backward_log`):
    any finite or -inf scores. ``log_alpha``, ``log_beta`` and ``marg`` are (n_tokens,
    n_states) rows indexed like ``unary``; ``log_z[seq]`` and ``trans_marg[seq]`` are
    written."""
    n_states = unary.shape[1]
    a, b = offsets[seq], offsets[seq + 1]
    if with_marginals:
        for i in range(n_states):
            for j in range(n_states):
                trans_marg[seq, i, j] = 0.0
    work = np.empty(n_states)
    for j in range(n_states):
        log_alpha[a, j] = start[j] + unary[a, j]
    for t in range(a + 1, b):
        for j in range(n_states):
            for i in range(n_states):
                work[i] = log_alpha[t - 1, i] + trans_t[j, i]
            log_alpha[t, j] = _logsumexp_into(work, n_states) + unary[t, j]
    for j in range(n_states):
        work[j] = log_alpha[b - 1, j] + end[j]
    lz = _logsumexp_into(work, n_states)
    log_z[seq] = lz
    if not with_marginals:
        return
    if lz == -np.inf:
        for t in range(a, b):
            for j in range(n_states):
                marg[t, j] = 0.0
        return
    for j in range(n_states):
        log_beta[b - 1, j] = end[j]
    for t in range(b - 1, a, -1):
        for i in range(n_states):
            for j in range(n_states):
                work[j] = trans[i, j] + unary[t, j] + log_beta[t, j]
                trans_marg[seq, i, j] += np.exp(log_alpha[t - 1, i] + work[j] - lz)
            log_beta[t - 1, i] = _logsumexp_into(work, n_states)
    for t in range(a, b):
        for j in range(n_states):
            marg[t, j] = np.exp(log_alpha[t, j] + log_beta[t, j] - lz)


#: Chains of at least this many states use the column-wise list Viterbi
#: (:func:`_top_k_columns`); fewer states, the merge per (position, state)
#: (:func:`_top_k_merge_each`), whose few short loops are faster there.
COLUMN_STATES = 8


@njit(inline="always")
def _or_minus_inf(x):
    """``x``, or -inf for NaN: a candidate of NaN score is never taken, as -inf."""
    return x if x > -np.inf else -np.inf


@njit(**_NJIT)
def _top_k_merge_each(unary, trans, start, end, k, paths, scores):
    """:func:`top_k_one` by one ``k``-way merge per (position, state), scanning the
    current head of every predecessor's list at each of the ``k`` steps."""
    length, n_states = unary.shape
    value = np.full((length, n_states, k), -np.inf)
    prev_state = np.zeros((length, n_states, k), dtype=np.int32)
    prev_rank = np.zeros((length, n_states, k), dtype=np.int32)
    count = np.zeros((length, n_states), dtype=np.int32)
    head = np.zeros(n_states, dtype=np.int32)
    for j in range(n_states):
        value[0, j, 0] = start[j] + unary[0, j]
        count[0, j] = 1 if value[0, j, 0] > -np.inf else 0
    for t in range(1, length):
        for j in range(n_states):
            if unary[t, j] == -np.inf:
                continue
            head[:] = 0
            for r in range(k):
                arg = -1
                top = -np.inf
                for i in range(n_states):
                    if head[i] < count[t - 1, i]:
                        v = value[t - 1, i, head[i]] + trans[i, j]
                        if v > top:
                            top = v
                            arg = i
                if arg < 0:
                    break
                value[t, j, r] = top + unary[t, j]
                prev_state[t, j, r] = arg
                prev_rank[t, j, r] = head[arg]
                head[arg] += 1
                count[t, j] = r + 1
    head[:] = 0
    for r in range(k):
        arg = -1
        top = -np.inf
        for j in range(n_states):
            if head[j] < count[length - 1, j]:
                v = value[length - 1, j, head[j]] + end[j]
                if v > top:
                    top = v
                    arg = j
        if arg < 0:
            break
        scores[r] = top
        state, rank = arg, head[arg]
        head[arg] += 1
        for t in range(length - 1, -1, -1):
            paths[t, r] = state
            if t > 0:
                state, rank = prev_state[t, state, rank], prev_rank[t, state, rank]


@njit(**_NJIT)
def _top_k_columns(unary, trans, start, end, k, paths, scores, value, back_state,
                   back_rank, cur, head, best, arg):
    """:func:`top_k_one` with the ``k`` merges of a position run side by side.

    At position t, ``cur[i, j]`` is the best prefix ending i -> j not taken yet, for all
    (i, j) at once; each of the ``k`` rounds takes, for every state j, the first i of
    largest ``cur[i, j]`` (a loop over i, vectorized over j) and replaces that entry by
    the next prefix of i's list.

    Parameters
    ----------
    value : ndarray of shape (length, k + 1, n_states)
        ``value[t, r, j]``: score of the r-th best prefix ending in state j at t; the
        entry after the last prefix is -inf, so a list is exhausted without a count.
    back_state, back_rank : ndarray of shape (length, k, n_states), int32
        Its predecessor: state and rank at t - 1.
    cur : ndarray of shape (n_states, width)
        ``width`` >= n_states, a multiple of 8; columns from n_states on stay -inf.
    head : ndarray of shape (n_states, width), int64
        Rank of ``cur[i, j]`` in i's list.
    best, arg : ndarray of shape (width,), float64 and int64
    """
    length, n_states = unary.shape
    width = cur.shape[1]
    for i in range(n_states):
        for j in range(n_states, width):
            cur[i, j] = -np.inf
    for j in range(n_states):
        value[0, 0, j] = start[j] + unary[0, j]
        value[0, 1, j] = -np.inf
    for t in range(1, length):
        for i in range(n_states):
            v = value[t - 1, 0, i]
            for j in range(n_states):
                cur[i, j] = _or_minus_inf(v + trans[i, j])
                head[i, j] = 0
        for j in range(n_states):
            if unary[t, j] == -np.inf:
                for i in range(n_states):
                    cur[i, j] = -np.inf
        n_out = 0
        while n_out < k:
            for j in range(width):
                best[j] = cur[0, j]
                arg[j] = 0
            for i in range(1, n_states - 1, 2):
                for j in range(width):
                    x = cur[i, j]
                    y = cur[i + 1, j]
                    b = best[j]
                    a = arg[j]
                    better = x > b
                    b = x if better else b
                    a = i if better else a
                    better = y > b
                    best[j] = y if better else b
                    arg[j] = i + 1 if better else a
            if n_states % 2 == 0:
                i = n_states - 1
                for j in range(width):
                    x = cur[i, j]
                    better = x > best[j]
                    best[j] = x if better else best[j]
                    arg[j] = i if better else arg[j]
            found = False
            for j in range(n_states):
                top = best[j]
                if top > -np.inf:
                    found = True
                    i = arg[j]
                    rank = head[i, j]
                    value[t, n_out, j] = top + unary[t, j]
                    back_state[t, n_out, j] = i
                    back_rank[t, n_out, j] = rank
                    head[i, j] = rank + 1
                    cur[i, j] = _or_minus_inf(value[t - 1, rank + 1, i] + trans[i, j])
                else:
                    value[t, n_out, j] = -np.inf
            if not found:
                break
            n_out += 1
        for j in range(n_states):
            value[t, n_out, j] = -np.inf
    # the k best complete sequences: one merge of the last position's lists
    for i in range(n_states):
        best[i] = _or_minus_inf(value[length - 1, 0, i] + end[i])
        arg[i] = 0
    for r in range(k):
        top = -np.inf
        last = 0
        for i in range(n_states):
            if best[i] > top:
                top = best[i]
                last = i
        if not top > -np.inf:
            break
        scores[r] = top
        rank = arg[last]
        state = last
        for t in range(length - 1, 0, -1):
            paths[t, r] = state
            state, rank = back_state[t, rank, state], back_rank[t, rank, state]
        paths[0, r] = state
        rank = arg[last] + 1
        arg[last] = rank
        best[last] = _or_minus_inf(value[length - 1, rank, last] + end[last])


@njit(**_NJIT)
def top_k_one(unary, trans, start, end, k, paths, scores):
    """The ``k`` best distinct label sequences of one chain (list Viterbi).

    Each (position, state) keeps its ``k`` best prefixes, merged from the predecessors'
    sorted lists. Ties are broken towards the smaller predecessor state, then its better
    prefix (at the end: the smaller last state): the order of a stable merge of the
    lists taken in state order. A prefix of score -inf (or NaN) is never extended.

    Parameters
    ----------
    unary : ndarray of shape (length, n_states)
    trans, start, end
        As for :func:`viterbi_one`.
    k : int
    paths : ndarray of shape (length, k), int64
        Output, filled with -1 beforehand: column ``r`` receives the ``r``-th best sequence.
    scores : ndarray of shape (k,)
        Output, filled with -inf beforehand.
    """
    length, n_states = unary.shape
    if length == 0:
        return
    if n_states < COLUMN_STATES:
        _top_k_merge_each(unary, trans, start, end, k, paths, scores)
        return
    width = (n_states + 7) // 8 * 8
    _top_k_columns(unary, trans, start, end, k, paths, scores,
                   np.empty((length, k + 1, n_states)),
                   np.empty((length, k, n_states), dtype=np.int32),
                   np.empty((length, k, n_states), dtype=np.int32),
                   np.empty((n_states, width)), np.empty((n_states, width), dtype=np.int64),
                   np.empty(width), np.empty(width, dtype=np.int64))


@njit(parallel=True, **_NJIT)
def top_k_viterbi(unary, offsets, trans, start, end, k):
    """The ``k`` best distinct label sequences of every chain (list Viterbi).

    Each (position, state) keeps its ``k`` best prefixes; the ``k`` best extensions into a
    state are a ``k``-way merge of the predecessors' sorted lists, O(k * n_states) each
    (run for all states of a position side by side, see :func:`top_k_one`). Only
    prefixes of finite score are kept, so a labeling with a part scored -inf is never
    listed. Chunks of sequences per parallel iteration, :func:`top_k_one` for each
    sequence.

    Returns
    -------
    paths : ndarray of shape (n_tokens, k), int64
        Column ``r`` holds the ``r``-th best sequence; -1 where fewer exist.
    scores : ndarray of shape (n_sequences, k)
        Sorted in decreasing order; -inf where fewer than ``k`` sequences exist.
    """
    n_tokens, n_states = unary.shape
    n_seq = offsets.shape[0] - 1
    # filled in the loop (no whole-array expression: see forward_backward_scaled)
    paths = np.empty((n_tokens, k), dtype=np.int64)
    scores = np.empty((n_seq, k))
    bounds = token_chunks(offsets, chunk_count_of(offsets))
    for chunk in prange(bounds.shape[0] - 1):
        for seq in range(bounds[chunk], bounds[chunk + 1]):
            a, b = offsets[seq], offsets[seq + 1]
            for t in range(a, b):
                for r in range(k):
                    paths[t, r] = -1
            for r in range(k):
                scores[seq, r] = -np.inf
            top_k_one(unary[a:b], trans, start, end, k, paths[a:b], scores[seq])
    return paths, scores


# Uniform sampling over the labelings of finite score, and Hamming-k neighbourhoods.


@njit(inline="always")
def _pick(weights, n, total, u):
    """The index drawn with probability weights[i] / total (inverse CDF at u in [0, 1));
    rounding never picks an index of weight 0."""
    target = u * total
    acc = 0.0
    last = -1
    for i in range(n):
        w = weights[i]
        if w > 0.0:
            acc += w
            last = i
            if acc > target:
                return i
    return last


@njit(**_NJIT)
def sample_uniform_one(unary, allowed, start, end, uniforms, alpha, weights, paths):
    """Uniform labelings of one chain: count forward, sample backward.

    With 0/1 indicators of the finite parts, α_t[s] is the number of valid prefixes that
    end in state s at position t (normalized to sum 1 at every position, so that no
    count overflows): α_0[s] = [start_s][unary_0s], α_t[s] = [unary_ts] Σ_i α_{t-1}[i]
    [trans_is]. A uniform labeling draws its last state with probability ∝ α_{L-1}[s]
    [end_s], then every earlier state given the next one s' with probability ∝ α_t[s]
    [trans_ss'].

    Parameters
    ----------
    unary : ndarray of shape (length, n_states)
    allowed : ndarray of shape (n_states, n_states), float64
        1.0 for a finite transition score, 0.0 for -inf.
    start, end : ndarray of shape (n_states,)
    uniforms : ndarray of shape (length, n_draws)
        Uniforms in [0, 1): ``uniforms[t, d]`` draws the state of token t of draw d.
    alpha : ndarray of shape (>= length, n_states)
        Scratch.
    weights : ndarray of shape (n_states,)
        Scratch.
    paths : ndarray of shape (length, n_draws), int64
        Output.

    Returns
    -------
    bool
        False when the chain has no labeling of finite score (paths left as they are).
    """
    length, n_states = unary.shape
    n_draws = uniforms.shape[1]
    total = 0.0
    for s in range(n_states):
        v = 1.0 if start[s] > -np.inf and unary[0, s] > -np.inf else 0.0
        alpha[0, s] = v
        total += v
    if total == 0.0:
        return False
    for s in range(n_states):
        alpha[0, s] /= total
    for t in range(1, length):
        for s in range(n_states):
            alpha[t, s] = 0.0
        for i in range(n_states):
            a = alpha[t - 1, i]
            if a > 0.0:
                for s in range(n_states):
                    alpha[t, s] += a * allowed[i, s]
        total = 0.0
        for s in range(n_states):
            if unary[t, s] == -np.inf:
                alpha[t, s] = 0.0
            total += alpha[t, s]
        if total == 0.0:
            return False
        for s in range(n_states):
            alpha[t, s] /= total
    total = 0.0
    for s in range(n_states):
        weights[s] = alpha[length - 1, s] if end[s] > -np.inf else 0.0
        total += weights[s]
    if total == 0.0:
        return False
    last_total = total
    for d in range(n_draws):
        for s in range(n_states):
            weights[s] = alpha[length - 1, s] if end[s] > -np.inf else 0.0
        state = _pick(weights, n_states, last_total, uniforms[length - 1, d])
        paths[length - 1, d] = state
        for t in range(length - 2, -1, -1):
            total = 0.0
            for s in range(n_states):
                weights[s] = alpha[t, s] * allowed[s, state]
                total += weights[s]
            state = _pick(weights, n_states, total, uniforms[t, d])
            paths[t, d] = state
    return True


@njit(parallel=True, **_NJIT)
def sample_uniform(unary, offsets, trans, start, end, uniforms):
    """Uniform labelings of finite score of every chain (:func:`sample_uniform_one`).

    Chunks of sequences per parallel iteration. The uniforms are given, so the draws do
    not depend on the number of threads.

    Parameters
    ----------
    uniforms : ndarray of shape (n_tokens, n_draws)

    Returns
    -------
    paths : ndarray of shape (n_tokens, n_draws), int64
        -1 for the chains without a labeling of finite score.
    feasible : ndarray of shape (n_sequences,), bool
    """
    n_tokens, n_states = unary.shape
    n_seq = offsets.shape[0] - 1
    n_draws = uniforms.shape[1]
    allowed = np.empty((n_states, n_states))
    for i in range(n_states):
        for j in range(n_states):
            allowed[i, j] = 1.0 if trans[i, j] > -np.inf else 0.0
    paths = np.empty((n_tokens, n_draws), dtype=np.int64)
    feasible = np.empty(n_seq, dtype=np.bool_)
    bounds = token_chunks(offsets, chunk_count_of(offsets))
    for chunk in prange(bounds.shape[0] - 1):
        longest = 1
        for seq in range(bounds[chunk], bounds[chunk + 1]):
            longest = max(longest, offsets[seq + 1] - offsets[seq])
        alpha = np.empty((longest, n_states))
        weights = np.empty(n_states)
        for seq in range(bounds[chunk], bounds[chunk + 1]):
            a, b = offsets[seq], offsets[seq + 1]
            ok = sample_uniform_one(unary[a:b], allowed, start, end, uniforms[a:b], alpha,
                                    weights, paths[a:b])
            feasible[seq] = ok
            if not ok:
                for t in range(a, b):
                    for d in range(n_draws):
                        paths[t, d] = -1
    return paths, feasible


@njit(inline="always")
def _label_at(t, y, j, positions, values):
    for i in range(j):
        if positions[i] == t:
            return values[i]
    return y[t]


@njit(inline="always")
def _forbidden_near(unary, trans, start, end, y, j, positions, values):
    """How many parts scored -inf touch the changed ``positions`` in the labeling y with
    ``values`` at them (each part counted once)."""
    length = y.shape[0]
    bad = 0
    for i in range(j):
        p = positions[i]
        v = _label_at(p, y, j, positions, values)
        if unary[p, v] == -np.inf:
            bad += 1
        if p == 0:
            if start[v] == -np.inf:
                bad += 1
        elif i == 0 or positions[i - 1] != p - 1:
            # the transition into p, unless it was counted as the one out of p − 1
            if trans[_label_at(p - 1, y, j, positions, values), v] == -np.inf:
                bad += 1
        if p == length - 1:
            if end[v] == -np.inf:
                bad += 1
        elif trans[v, _label_at(p + 1, y, j, positions, values)] == -np.inf:
            bad += 1
    return bad


@njit(**_NJIT)
def neighbours_one(unary, trans, start, end, y, k, paths, write):
    """The labelings of finite score at Hamming distance 1 .. k from ``y``, in the order
    of :mod:`skstruct.decoders._core.sampling`; written to ``paths`` (length, >= count) when
    ``write``. Returns their number.

    A candidate changes positions P to new values; it is valid when y has no forbidden
    part away from P and the candidate none touching P: O(k) per candidate after an
    O(length) count of y's forbidden parts.
    """
    length, n_states = unary.shape
    positions = np.empty(k, dtype=np.int64)
    alternatives = np.empty(k, dtype=np.int64)
    values = np.empty(k, dtype=np.int64)
    old = np.empty(k, dtype=np.int64)
    bad_y = 0
    for t in range(length):
        if unary[t, y[t]] == -np.inf:
            bad_y += 1
        if t > 0 and trans[y[t - 1], y[t]] == -np.inf:
            bad_y += 1
    if start[y[0]] == -np.inf:
        bad_y += 1
    if end[y[length - 1]] == -np.inf:
        bad_y += 1
    count = 0
    if n_states < 2:
        return 0
    for j in range(1, min(k, length) + 1):
        first_change(j, positions, alternatives)
        more = True
        while more:
            for i in range(j):
                old[i] = y[positions[i]]
                values[i] = alternative_value(alternatives[i], old[i])
            before = _forbidden_near(unary, trans, start, end, y, j, positions, old)
            after = _forbidden_near(unary, trans, start, end, y, j, positions, values)
            if bad_y - before + after == 0:
                if write:
                    for t in range(length):
                        paths[t, count] = y[t]
                    for i in range(j):
                        paths[positions[i], count] = values[i]
                count += 1
            more = next_change(j, positions, alternatives, length, n_states - 1)
    return count


@njit(parallel=True, **_NJIT)
def neighbours(unary, offsets, trans, start, end, y, k, paths, counts, write):
    """:func:`neighbours_one` for every chain: counts them (``write`` False) or writes
    them into ``paths`` (n_tokens, max count), filled with -1 beforehand, and their
    number into ``counts``. Chunks of sequences per parallel iteration."""
    bounds = token_chunks(offsets, chunk_count_of(offsets))
    for chunk in prange(bounds.shape[0] - 1):
        for seq in range(bounds[chunk], bounds[chunk + 1]):
            a, b = offsets[seq], offsets[seq + 1]
            counts[seq] = neighbours_one(unary[a:b], trans, start, end, y[a:b], k,
                                         paths[a:b], write)
