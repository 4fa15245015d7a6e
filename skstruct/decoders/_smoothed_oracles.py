"""Compiled per-example smoothed structural hinges, for the compiled per-example engine.

For one example with part scores η (``unary`` rows and ``pair`` scores) and a task loss Δ
that decomposes over parts, write θ_y = ⟨η, a_y⟩ and z_y = θ_y + Δ(y_i, y) for the
cost-augmented score of output y. :func:`smoothed_oracle` returns the smoothed hinge

.. math::

    f_μ(η) = h_μ(z) − z_{y_i},
    \\qquad h_μ(z) = \\max_{q ∈ \\triangle} \\big[⟨q, z⟩ − μ ω(q)\\big],

and its gradient with respect to η, Σ_y q*_y a_y − a_{y_i}, for

* entropy smoothing (ω = −H): h_μ(z) = μ log Σ_y exp(z_y / μ), q* ∝ exp(z / μ) (the
  log-partition and marginals of the cost-augmented scores divided by μ);
* ℓ2 smoothing (ω = ½‖·‖²) restricted to the K best cost-augmented outputs:
  q* = the projection onto the simplex of their scores divided by μ
  (:func:`~skstruct.losses._smoothed.project_sorted_row`), certified exact when it
  leaves the K-th at zero weight or fewer than K outputs have a finite score.

z_{y_i} = θ_{y_i} + Δ(y_i, y_i) is the gold output scored with the same augmented scores,
as :class:`~skstruct.losses.EntropySmoothedHingeLoss` and
:class:`~skstruct.losses.L2SmoothedHingeLoss` score it; every built-in decomposable loss
has Δ(y_i, y_i) = 0, so this is max_μ[θ_y + Δ] − θ_{y_i}. These are the compiled
counterparts of those two losses, one example at a time, for the incremental solvers
(SVRG, Casimir-SVRG); with μ = 1, entropy smoothing and no costs (the oracle of plain
MAP, rescaling None) the value is the CRF loss log Z − θ_{y_i}.

The oracle reads the :class:`~skstruct.decoders._engine_protocol.CompiledOracle` arrays
that the decoders build for margin rescaling (or plain MAP, zero costs), family by family:

* chain: the Hamming loss (plain, normalized, with class costs) from ``ints`` / ``floats``;
  entropy by the rescaled forward–backward
  (:func:`~skstruct.decoders._chain_kernels.scaled_forward_backward_one`), in log space
  when the transition or end scores divided by μ spread beyond
  ``SCALED_RANGE_LIMIT`` or forbid a part, as :class:`ChainDecoder` decides; ℓ2 by list
  Viterbi (:func:`~skstruct.decoders._chain_kernels.top_k_one`).
* multiclass: any loss (its matrix or mismatch values); softmax, or the K best classes.
* multilabel: per-label costs (``costs_i`` rows of 2 L values, off then on); independent
  sigmoids (the entropy over all 2^L label sets factorizes over labels), or the exact K
  best label sets (:func:`~skstruct.decoders._independent_kernels.top_k_one`).
* tree: entropy only (matrix-tree / inside–outside marginals); trees have no top-K
  decoder, so ℓ2 raises.

:func:`supports_smoothed` tells a solver, in Python, whether a compiled oracle has a
smoothed form.
"""

import numpy as np
from numba import njit

from ._chain_kernels import (
    SCALED_RANGE_LIMIT,
    forward_backward_log_one,
    padded_width,
    scaled_forward_backward_one,
    scaled_pairwise,
    top_k_one,
)
from ._chain_oracle import (
    CONSTRAINED,
    HAMMING,
    LOSS,
    NO_LOSS,
    NORMALIZE,
    SEARCH,
    VITERBI,
    _hamming_cost,
    chain_add_parts,
    constrained_pair,
)
from ._engine_protocol import CHAIN, MAP, MARGIN, MULTICLASS, MULTILABEL, TREE
from ._independent_kernels import top_k_one as binary_top_k_one
from ._tabular_oracles import COSTS as _ML_COSTS
from ._tabular_oracles import MAP_ONLY as _ML_MAP_ONLY
from ._tabular_oracles import MATRIX as _MC_MATRIX
from ._tabular_oracles import _class_loss
from ._tree_kernels import (
    LINEAR_SPREAD_LIMIT,
    _eisner_inside_outside,
    _matrix_tree_linear,
    _matrix_tree_log,
    max_row_spread,
)
from ._tree_oracles import NO_COSTS as _TREE_NO_COSTS
from ._tree_oracles import _arc_cost
from ..losses._smoothed import project_sorted_row

__all__ = ["ENTROPY", "L2", "smoothed_oracle", "supports_smoothed"]

_NJIT = dict(cache=True, nogil=True)

#: Smoothing codes.
ENTROPY = 0
L2 = 1

# The chain's parts are laid out by its shape alone: add_parts reads no parameters.
_NO_INTS = np.zeros(0, dtype=np.int64)


def supports_smoothed(compiled_oracle, smoothing):
    """Whether :func:`smoothed_oracle` serves ``compiled_oracle`` with ``smoothing``.

    Parameters
    ----------
    compiled_oracle : CompiledOracle or None
        From a decoder's ``compiled_oracle(task_loss, rescaling, y, y_offsets)``.
    smoothing : {0, 1} or {"entropy", "l2"}
        :data:`ENTROPY` or :data:`L2`.

    Returns
    -------
    bool
        True for margin rescaling with a loss that decomposes over parts as the family
        kernel adds it (chains: Hamming, normalized or with class costs; multiclass: any
        loss; multilabel: per-label costs; trees: arc costs, entropy only), and for plain
        MAP (no costs: the CRF loss); False for slack rescaling, count-statistic and 0/1
        losses on chains and multilabel outputs (Δ does not decompose over parts), ℓ2 on
        trees, and None.
    """
    smoothing = {"entropy": ENTROPY, "l2": L2}.get(smoothing, smoothing)
    if compiled_oracle is None or smoothing not in (ENTROPY, L2):
        return False
    if compiled_oracle.rescaling not in (MAP, MARGIN):
        return False
    code, ints = compiled_oracle.code, compiled_oracle.ints
    if code == CHAIN:
        loss = ints[LOSS] & (CONSTRAINED - 1)  # a decoder's constraints are served too
        return bool(loss == NO_LOSS or (loss == HAMMING and ints[SEARCH] == VITERBI))
    if code == MULTICLASS:
        return True
    if code == MULTILABEL:
        return compiled_oracle.rescaling == MAP or bool(ints[0] == _ML_COSTS)
    if code == TREE:
        return smoothing == ENTROPY
    return False


@njit(**_NJIT)
def smoothed_oracle(code, smoothing, mu, top_k, unary, pair, y_i, costs_i, ints, floats,
                    d_unary, d_pair):
    """Value and part gradient of the smoothed structural hinge of one example.

    Parameters
    ----------
    code : int
        The family (:data:`~skstruct.decoders._engine_protocol.CHAIN`, ``MULTICLASS``,
        ``MULTILABEL``, ``TREE``).
    smoothing : int
        :data:`ENTROPY` (0) or :data:`L2` (1).
    mu : float > 0
        The smoothing strength μ.
    top_k : int >= 1
        K, the number of best cost-augmented outputs of ℓ2 smoothing (unused by entropy).
    unary : ndarray of shape (n_rows, K_parts)
        The part scores of the example's rows; -inf forbids a part.
    pair : ndarray of shape (n_pair,)
        The pair scores (chains: transitions row-major, start, end; empty otherwise).
    y_i : ndarray of shape (n_outputs_i,), int64
        The gold output.
    costs_i : ndarray of shape (n_rows, K_costs) or (0, 0)
        The example's rows of :attr:`CompiledOracle.costs` (multilabel: off then on
        costs; tree: arc costs), (0, 0) when the family computes its costs from ``ints``
        / ``floats``.
    ints, floats : ndarray
        The family parameters of the CompiledOracle (margin rescaling, or plain MAP for
        zero costs).
    d_unary : ndarray of shape (>= n_rows, K_parts)
        Output: rows ``:n_rows`` are overwritten with the unary part of
        Σ_y q*_y a_y − a_{y_i}; the other rows are not touched.
    d_pair : ndarray of shape (n_pair,)
        Output: overwritten with the pair part of that gradient.

    Returns
    -------
    value : float
        f_μ = h_μ(z) − z_{y_i}, z_y = θ_y + Δ(y_i, y) (module docstring). Entropy: in
        [ℓ, ℓ + μ log |Y|] with ℓ the structural hinge, so ≥ 0 up to rounding; +inf when
        the gold output has a forbidden part. ℓ2 (over the K best outputs): in
        [ℓ − μ/2, ℓ] when exact, so it may be negative (down to −μ/2); the top-K value
        is never above the exact one.
    exact : bool
        True unless ℓ2 smoothing's projection gives the K-th best output a positive
        weight (then outputs beyond the K-th might deserve weight too), the certificate
        of :class:`~skstruct.losses.L2SmoothedHingeLoss`; always True for entropy.

    Raises
    ------
    ValueError
        When no output has a finite score, for an unknown family or smoothing, for a
        loss without a smoothed form (see :func:`supports_smoothed`), and for ℓ2 on
        trees.
    """
    if smoothing != ENTROPY and smoothing != L2:
        raise ValueError("smoothing must be 0 (entropy) or 1 (l2)")
    if not mu > 0.0:
        raise ValueError("the smoothing strength mu must be > 0")
    if smoothing == L2 and top_k < 1:
        raise ValueError("top_k must be >= 1")
    if code == CHAIN:
        return chain_smoothed(smoothing, mu, top_k, unary, pair, y_i, ints, floats,
                              d_unary, d_pair)
    if code == MULTICLASS:
        return multiclass_smoothed(smoothing, mu, top_k, unary, y_i, ints, floats, d_unary)
    if code == MULTILABEL:
        return multilabel_smoothed(smoothing, mu, top_k, unary, y_i, costs_i, ints,
                                   d_unary)
    if code == TREE:
        return tree_smoothed(smoothing, mu, unary, y_i, costs_i, ints, d_unary)
    raise ValueError("no compiled smoothed oracle for this family")


# --------------------------------------------------------------------------------------
# Chains


@njit(**_NJIT)
def _chain_augmented(unary, y_i, ints, floats):
    """z's unary scores: unary + the Hamming cost of every (token, state)."""
    length, n_states = unary.shape
    augmented = np.empty((length, n_states))
    loss = ints[LOSS] & (CONSTRAINED - 1)
    if loss != NO_LOSS and not (loss == HAMMING and ints[SEARCH] == VITERBI):
        raise ValueError("the smoothed chain oracle needs a Hamming loss under margin "
                         "rescaling (or no loss)")
    scale = 1.0 / length if ints[NORMALIZE] else 1.0
    for t in range(length):
        for s in range(n_states):
            cost = 0.0 if loss == NO_LOSS else _hamming_cost(ints, floats, y_i[t], s, scale)
            augmented[t, s] = unary[t, s] + cost
    return augmented


@njit(**_NJIT)
def _chain_gold(augmented, pair, y_i):
    """z_{y_i}: the gold labels scored with the augmented unary scores."""
    length, n_states = augmented.shape
    square = n_states * n_states
    total = pair[square + y_i[0]] + pair[square + n_states + y_i[length - 1]]
    for t in range(length):
        total += augmented[t, y_i[t]]
    for t in range(1, length):
        total += pair[y_i[t - 1] * n_states + y_i[t]]
    return total


@njit(**_NJIT)
def chain_smoothed(smoothing, mu, top_k, unary, pair, y_i, ints, floats, d_unary, d_pair):
    """:func:`smoothed_oracle` of one chain (``unary`` (L, S), ``pair`` (S² + 2S,)).

    A decoder's constraints (the :data:`CONSTRAINED` bit of ``ints[LOSS]``) score the
    forbidden transitions, first and last states -inf; their gradient entries are 0.
    """
    pair = constrained_pair(pair, ints, floats)
    augmented = _chain_augmented(unary, y_i, ints, floats)
    gold = _chain_gold(augmented, pair, y_i)
    if smoothing == ENTROPY:
        return _chain_entropy(augmented, pair, y_i, mu, d_unary, d_pair) - gold, True
    value, exact = _chain_l2(augmented, pair, y_i, mu, top_k, d_unary, d_pair)
    return value - gold, exact


@njit(**_NJIT)
def _scaled_range_ok(values):
    """Whether ``values`` are finite with a spread within ``SCALED_RANGE_LIMIT``."""
    low = np.inf
    high = -np.inf
    for v in values:
        if not np.isfinite(v):
            return False
        low = min(low, v)
        high = max(high, v)
    return high - low <= SCALED_RANGE_LIMIT


@njit(**_NJIT)
def _chain_entropy(augmented, pair, y_i, mu, d_unary, d_pair):
    """μ log Z(z / μ); marginals minus the gold indicators into d. Returns μ log Z."""
    length, n_states = augmented.shape
    square = n_states * n_states
    inv_mu = 1.0 / mu
    scaled_pair = np.empty(square + 2 * n_states)
    for j in range(scaled_pair.shape[0]):
        scaled_pair[j] = pair[j] * inv_mu
    trans = scaled_pair[:square].reshape((n_states, n_states))
    start = scaled_pair[square:square + n_states]
    end = scaled_pair[square + n_states:]
    if not (_scaled_range_ok(scaled_pair[:square]) and _scaled_range_ok(end)):
        log_z = _log_forward_backward(augmented, inv_mu, trans, start, end, y_i, d_unary,
                                      d_pair)
        if log_z == -np.inf:
            raise ValueError("no labeling of the sequence has a finite score")
        return mu * log_z
    width = padded_width(n_states)
    expo, expo_t, start_padded, exp_end, trans_max, end_max = scaled_pairwise(
        trans, start, end, width)
    rows = np.empty((length, width))
    for t in range(length):
        for s in range(n_states):
            rows[t, s] = augmented[t, s] * inv_mu
        for s in range(n_states, width):
            rows[t, s] = -np.inf
    alpha = np.empty((length, width))
    norm = np.empty(length)
    beta = np.empty((1, width))
    weight = np.empty((1, width))
    counts = np.zeros((width, width))
    log_z = scaled_forward_backward_one(
        rows, 0, length, n_states, expo, expo_t, start_padded, exp_end, trans_max, end_max,
        alpha, norm, beta, weight, y_i, 1.0, counts, True)
    if log_z == -np.inf:
        raise ValueError("no labeling of the sequence has a finite score")
    for t in range(length):
        for s in range(n_states):
            d_unary[t, s] = rows[t, s]
    for i in range(n_states):
        for j in range(n_states):
            d_pair[i * n_states + j] = expo[i, j] * counts[i, j]
    for t in range(1, length):
        d_pair[y_i[t - 1] * n_states + y_i[t]] -= 1.0
    # rows 0 and L - 1 already hold p(y_0 = j) − [j = y_0] and p(y_{L-1} = j) − [...]
    for j in range(n_states):
        d_pair[square + j] = rows[0, j]
        d_pair[square + n_states + j] = rows[length - 1, j]
    return mu * log_z


@njit(**_NJIT)
def _log_forward_backward(augmented, inv_mu, trans, start, end, y_i, d_unary, d_pair):
    """The decoder's log-space forward–backward (:func:`forward_backward_log_one`) of the
    scores (augmented * inv_mu, trans, start, end), any finite or -inf scores; marginals
    minus the gold indicators into d. Returns log Z (-inf when no labeling has a finite
    score; d is then left as it is)."""
    length, n_states = augmented.shape
    square = n_states * n_states
    scaled = np.empty((length, n_states))
    for t in range(length):
        for j in range(n_states):
            scaled[t, j] = augmented[t, j] * inv_mu
    log_z = np.empty(1)
    marg = np.empty((length, n_states))
    trans_marg = np.empty((1, n_states, n_states))
    forward_backward_log_one(scaled, np.array([0, length]), 0, trans, trans.T.copy(), start,
                             end, True, np.empty((length, n_states)),
                             np.empty((length, n_states)), log_z, marg, trans_marg)
    if log_z[0] == -np.inf:
        return log_z[0]
    for t in range(length):
        for j in range(n_states):
            d_unary[t, j] = marg[t, j]
        d_unary[t, y_i[t]] -= 1.0
    for i in range(n_states):
        for j in range(n_states):
            d_pair[i * n_states + j] = trans_marg[0, i, j]
    for t in range(1, length):
        d_pair[y_i[t - 1] * n_states + y_i[t]] -= 1.0
    for j in range(n_states):
        d_pair[square + j] = d_unary[0, j]
        d_pair[square + n_states + j] = d_unary[length - 1, j]
    return log_z[0]


@njit(**_NJIT)
def _project_listed(scores, mu, top_k):
    """The weights of the listed scores (sorted, -inf beyond them), the ℓ2 part of the
    value ⟨q, z⟩ − (μ/2)‖q‖², and the certificate. Raises when nothing is listed."""
    n_listed = 0
    while n_listed < top_k and scores[n_listed] > -np.inf:
        n_listed += 1
    if n_listed == 0:
        raise ValueError("no output of the example has a finite score")
    values = np.empty(top_k)
    for r in range(n_listed):
        values[r] = scores[r] / mu
    weights = np.empty(top_k)
    _, support = project_sorted_row(values, n_listed, weights)
    value = 0.0
    for r in range(n_listed):
        value += weights[r] * (scores[r] - 0.5 * mu * weights[r])
    return weights, n_listed, value, support < top_k


@njit(**_NJIT)
def _chain_l2(augmented, pair, y_i, mu, top_k, d_unary, d_pair):
    """⟨q, z⟩ − (μ/2)‖q‖² over the K best labelings; Σ q_r a_r − a_{y_i} into d."""
    length, n_states = augmented.shape
    square = n_states * n_states
    trans = pair[:square].reshape((n_states, n_states))
    start = pair[square:square + n_states]
    end = pair[square + n_states:square + 2 * n_states]
    paths = np.full((length, top_k), -1, dtype=np.int64)
    scores = np.full(top_k, -np.inf)
    top_k_one(augmented, trans, start, end, top_k, paths, scores)
    weights, n_listed, value, exact = _project_listed(scores, mu, top_k)
    d_unary[:length] = 0.0
    d_pair[:] = 0.0
    labels = np.empty(length, dtype=np.int64)
    for r in range(n_listed):
        if weights[r] > 0.0:
            for t in range(length):
                labels[t] = paths[t, r]
            chain_add_parts(labels, weights[r], d_unary[:length], d_pair, _NO_INTS)
    chain_add_parts(y_i, -1.0, d_unary[:length], d_pair, _NO_INTS)
    return value, exact



# --------------------------------------------------------------------------------------
# Multiclass


@njit(**_NJIT)
def multiclass_smoothed(smoothing, mu, top_k, unary, y_i, ints, floats, d_unary):
    """:func:`smoothed_oracle` of one multiclass example (``unary`` (1, C)).

    z_k = θ_k + Δ(y_i, k); entropy: softmax of z / μ; ℓ2: the K best classes (the
    lowest index first among ties, as ``MulticlassDecoder.top_k``).
    """
    row = unary[0]
    n_classes = row.shape[0]
    if ints[0] == _MC_MATRIX and n_classes > ints[1]:
        raise ValueError("the scores have more classes than the task loss's loss matrix")
    gold_class = y_i[0]
    z = np.empty(n_classes)
    top = -np.inf
    for k in range(n_classes):
        z[k] = row[k] + _class_loss(ints, floats, gold_class, k)
        top = max(top, z[k])
    if top == -np.inf:
        raise ValueError("no output of the example has a finite score")
    d = d_unary[0]
    if smoothing == ENTROPY:
        total = 0.0
        for k in range(n_classes):
            d[k] = np.exp((z[k] - top) / mu)
            total += d[k]
        for k in range(n_classes):
            d[k] /= total
        d[gold_class] -= 1.0
        return top + mu * np.log(total) - z[gold_class], True
    listed = np.empty(top_k, dtype=np.int64)
    scores = np.full(top_k, -np.inf)
    for r in range(top_k):
        arg = -1
        best = -np.inf
        for k in range(n_classes):
            if z[k] > best:
                taken = False
                for q in range(r):
                    taken = taken or listed[q] == k
                if not taken:
                    best, arg = z[k], k
        if arg < 0:
            break
        listed[r] = arg
        scores[r] = best
    weights, n_listed, value, exact = _project_listed(scores, mu, top_k)
    d[:] = 0.0
    for r in range(n_listed):
        d[listed[r]] += weights[r]
    d[gold_class] -= 1.0
    return value - z[gold_class], exact


# --------------------------------------------------------------------------------------
# Multilabel


@njit(inline="always")
def _softplus(x):
    """log(1 + e^x), without overflow; 0 at -inf."""
    if x > 0.0:
        return x + np.log1p(np.exp(-x))
    return np.log1p(np.exp(x))


@njit(**_NJIT)
def multilabel_smoothed(smoothing, mu, top_k, unary, y_i, costs_i, ints, d_unary):
    """:func:`smoothed_oracle` of one multilabel example (``unary`` (1, L)).

    With s_j = θ_j + c_j(on) − c_j(off), z_y = Σ_j s_j y_j up to a constant that cancels.
    Entropy: the 2^L label sets factorize, μ log Σ_y exp(z_y / μ) = μ Σ_j log(1 +
    exp(s_j / μ)) with marginals σ(s_j / μ); ℓ2: the exact K best label sets
    (:func:`~skstruct.decoders._independent_kernels.top_k_one`).
    """
    row = unary[0]
    n_labels = row.shape[0]
    method = ints[0]
    if method != _ML_MAP_ONLY and method != _ML_COSTS:
        raise ValueError("the smoothed multilabel oracle needs per-label costs under "
                         "margin rescaling (or no loss)")
    s = np.empty(n_labels)
    gold = 0.0
    for j in range(n_labels):
        s[j] = row[j]
        if method == _ML_COSTS:
            s[j] += costs_i[0, n_labels + j] - costs_i[0, j]
        if y_i[j] != 0:
            gold += s[j]
    d = d_unary[0]
    if smoothing == ENTROPY:
        value = 0.0
        for j in range(n_labels):
            x = s[j] / mu
            value += _softplus(x)
            d[j] = 1.0 / (1.0 + np.exp(-x)) - y_i[j]
        return mu * value - gold, True
    paths = np.full((n_labels, top_k), -1, dtype=np.int64)
    scores = np.full(top_k, -np.inf)
    total = np.empty(2 * top_k)
    scratch = np.empty(6 * top_k, dtype=np.int64)
    binary_top_k_one(s, top_k, paths, scores, total, scratch[:2 * top_k],
                     scratch[2 * top_k:4 * top_k], scratch[4 * top_k:])
    weights, n_listed, value, exact = _project_listed(scores, mu, top_k)
    for j in range(n_labels):
        d[j] = -float(y_i[j])
    for r in range(n_listed):
        if weights[r] > 0.0:
            for j in range(n_labels):
                if paths[j, r] != 0:
                    d[j] += weights[r]
    return value - gold, exact


# --------------------------------------------------------------------------------------
# Trees


@njit(**_NJIT)
def tree_log_partition_one(block, projective, single_root, marg):
    """log Z of one sentence's arc scores ``block`` (n, n), block[m, h] the score of h
    heading m (the root on the diagonal), and the arc marginals into ``marg`` (n, n):
    what ``TreeDecoder.marginals`` computes for one sentence (inside–outside for
    projective trees, the matrix-tree elimination in linear space when every token's
    scores spread less than ``LINEAR_SPREAD_LIMIT``, in log space otherwise)."""
    if projective:
        return _eisner_inside_outside(block, single_root, True, marg, False)
    if max_row_spread(block) <= LINEAR_SPREAD_LIMIT:
        return _matrix_tree_linear(block, single_root, True, marg)
    return _matrix_tree_log(block, single_root, True, marg)


@njit(**_NJIT)
def tree_smoothed(smoothing, mu, unary, y_i, costs_i, ints, d_unary):
    """:func:`smoothed_oracle` of one sentence (``unary`` (n², 1), modifier-major).

    Entropy only: μ log Z and the arc marginals of the cost-augmented arc scores
    divided by μ. Trees have no top-K decoder, so ℓ2 smoothing raises.
    """
    if smoothing != ENTROPY:
        raise ValueError("trees have no compiled l2-smoothed oracle (no top-K trees): "
                         "use entropy smoothing")
    n = y_i.shape[0]
    kind = ints[2]
    block = np.empty((n, n))
    gold = 0.0
    for m in range(n):
        for h in range(n):
            z = unary[m * n + h, 0]
            if kind != _TREE_NO_COSTS:
                z += _arc_cost(kind, costs_i, y_i, n, m, h)
            block[m, h] = z / mu
            if h == y_i[m]:
                gold += z
    marg = np.zeros((n, n))
    log_z = tree_log_partition_one(block, ints[0] != 0, ints[1] != 0, marg)
    if log_z == -np.inf:
        raise ValueError("no tree of the sentence has a finite score")
    for m in range(n):
        for h in range(n):
            d_unary[m * n + h, 0] = marg[m, h] - (1.0 if h == y_i[m] else 0.0)
    return mu * log_z - gold, True
