"""First-order linear chains: score and part containers and the chain decoder."""

from numbers import Real

import numpy as np
from sklearn.base import clone
from sklearn.utils._param_validation import Interval, StrOptions

from ...losses._counting import mismatch_count_form
from ...utils._parallel import dynamic_schedule, threads_for
from . import kernels
from .._core.decoder import Decoder
from .._core.checks import (
    _trusted,
    check_encoded_outputs,
    check_feasible,
    check_k,
    check_offsets,
    check_part_scores,
    check_score_array,
    keeps_operations,
    no_exact_loss_augmented_map,
)
from .constraints import ChainConstraints, check_constraints_spec, resolve_constraints
from .._core.statistic_table import DEFAULT_MAX_TABLE_MEMORY
from .counting import (
    diverse_top_k,
    loss_augmented_map_by_statistic,
    map_with_label_count,
    map_with_min_distance,
)
from .._core.sampling import (
    check_n_draws,
    check_neighbour_entries,
    check_neighbourhood_size,
    check_random_state,
)
from .._core.unary import _products

__all__ = ["ChainScores", "ChainParts", "ChainDecoder"]

#: With constraints, ``log_space="auto"`` rescales only when the unary scores spread at
#: most this much (besides the transition and end scores within ``SCALED_RANGE_LIMIT``):
#: then no normalizer of the rescaled recursion falls below exp(-600), far from underflow.
CONSTRAINED_UNARY_SPREAD = 400.0


def _finite_spread(values):
    """max - min of the finite entries (inf when there are none)."""
    finite = values[np.isfinite(values)] if not np.isfinite(values).all() else values
    return float(np.ptp(finite)) if finite.size else np.inf


def _check_scaled_spread(scores):
    """Raise when the transition and end scores spread beyond what the probability-space
    forward-backward computes exactly (``SCALED_EXACT_SPREAD``)."""
    # scores with no finite entry (every transition forbidden) have no spread to underflow
    spreads = [_finite_spread(x) for x in (scores.transition, scores.end)]
    spread = max((value for value in spreads if np.isfinite(value)), default=0.0)
    if spread > kernels.SCALED_EXACT_SPREAD:
        raise ValueError(
            f"ChainDecoder(log_space=False) cannot rescale these scores: the transition and "
            f"end scores spread {spread:.4g} (maximum minus minimum of the finite ones), "
            f"beyond the {kernels.SCALED_EXACT_SPREAD:g} up to which the probability-space "
            "forward-backward is exact. Its probabilities would underflow and the "
            "log-partition and marginals come out wrong or -inf. Use log_space=\"auto\" "
            "(log space when the scores need it) or log_space=True."
        )


def _check_no_underflow(scores, log_z):
    """Raise when the probability-space forward-backward gave -inf (or NaN) to a sequence
    that log space finds feasible: an underflow, not an infeasible sequence."""
    lost = np.flatnonzero(~(log_z > -np.inf))
    if not lost.size:
        return
    feasible = kernels.forward_backward_log(*scores.take(lost)._kernel_args(), False)[0]
    underflow = lost[feasible > -np.inf]
    if underflow.size:
        which = (f"sequence {underflow[0]} of the batch, which has" if underflow.size == 1
                 else f"{underflow.size} sequences of the batch (the first is sequence "
                 f"{underflow[0]}), which have")
        raise ValueError(
            "ChainDecoder(log_space=False): the probability-space forward-backward "
            f"underflows to a log-partition of -inf on {which} outputs of finite score "
            f"(log space gives {'it' if underflow.size == 1 else 'the first'} "
            f"{feasible[feasible > -np.inf][0]:.6g}): the scores "
            "spread too far for it (with forbidden transitions or end states, the unary "
            "scores count too). Use log_space=\"auto\" (log space when the scores need "
            "it) or log_space=True."
        )


class ChainScores:
    """Part scores η of a batch of first-order chains.

    The score of a label sequence y of length L is
    θ_y = start[y_0] + Σ_t unary[t, y_t] + Σ_{t≥1} transition[y_{t-1}, y_t] + end[y_{L-1}].

    Parameters
    ----------
    unary : ndarray of shape (n_tokens, n_states)
        Unary scores of all tokens of all sequences, stacked.
    offsets : ndarray of shape (n_sequences + 1,)
        Sequence ``i`` owns rows ``offsets[i]:offsets[i + 1]`` (at least one row).
    transition : ndarray of shape (n_states, n_states)
        ``transition[i, j]`` scores state ``i`` followed by state ``j``.
    start, end : ndarray of shape (n_states,)
        Scores of the first and of the last state of a sequence.

    Notes
    -----
    Scores are real numbers or -inf, which forbids a part (a state of a token, a
    transition, a first or last state); NaN and +inf are rejected here, once per
    container, so no decoder operation sees them.
    """

    def __init__(self, unary, offsets, transition, start, end):
        owner = "ChainScores"
        self.unary = check_score_array(unary, "unary", owner=owner, ndim=2,
                                       layout="(n_tokens, n_states)")
        n_states = self.unary.shape[1]
        if n_states < 1:
            raise ValueError(f"{owner}: unary has shape {self.unary.shape}; expected "
                             "(n_tokens, n_states) with n_states >= 1.")
        self.offsets = check_offsets(offsets, self.unary.shape[0], owner=owner,
                                     example="sequence", entries="unary rows (n_tokens)")
        self.transition = check_score_array(transition, "transition", owner=owner, ndim=2,
                                            layout="(n_states, n_states)")
        self.start = check_score_array(start, "start", owner=owner, ndim=1,
                                       layout="(n_states,)")
        self.end = check_score_array(end, "end", owner=owner, ndim=1, layout="(n_states,)")
        if self.transition.shape != (n_states, n_states):
            raise ValueError(
                f"transition has shape {self.transition.shape}; expected "
                f"({n_states}, {n_states}) for {n_states} states."
            )
        if self.start.shape != (n_states,) or self.end.shape != (n_states,):
            raise ValueError(
                f"start and end must have shape ({n_states},); got {self.start.shape} and "
                f"{self.end.shape}."
            )
        check_part_scores(self.unary, "unary", owner="ChainScores", offsets=self.unary_offsets,
                          example="sequence")
        for name in ("transition", "start", "end"):
            check_part_scores(getattr(self, name), name, owner="ChainScores")

    @property
    def n_states(self):
        """Number of states (labels)."""
        return self.unary.shape[1]

    @property
    def n_sequences(self):
        """Number of sequences in the batch."""
        return self.offsets.shape[0] - 1

    @property
    def n_examples(self):
        """Number of examples (sequences); the name every score container shares."""
        return self.n_sequences

    @property
    def lengths(self):
        """Length of every sequence, shape (n_sequences,)."""
        return np.diff(self.offsets)

    @property
    def unary_offsets(self):
        """Sequence ``i`` owns ``unary.ravel()[unary_offsets[i]:unary_offsets[i + 1]]``."""
        return self.offsets * self.n_states

    def take(self, indices):
        """The scores of sequences ``indices`` (in that order; pairwise scores shared)."""
        indices = np.asarray(indices, dtype=np.int64)
        starts, stops = self.offsets[indices], self.offsets[indices + 1]
        offsets = np.concatenate(([0], np.cumsum(stops - starts)))
        rows = np.arange(offsets[-1]) - np.repeat(offsets[:-1] - starts, stops - starts)
        return _trusted(ChainScores, unary=self.unary[rows], offsets=offsets,
                        transition=self.transition, start=self.start, end=self.end)

    def replace(self, *, unary=None):
        """A copy with the unary scores replaced (pairwise scores shared)."""
        return ChainScores(
            self.unary if unary is None else unary,
            self.offsets,
            self.transition,
            self.start,
            self.end,
        )

    def _kernel_args(self):
        return self.unary, self.offsets, self.transition, self.start, self.end

    def _restricted(self, transition, start, end):
        """A copy with the pairwise scores replaced by checked ones (real or -inf), the
        unary scores and offsets shared without a second check."""
        attributes = dict(self.__dict__)
        attributes.update(transition=transition, start=start, end=end)
        return _trusted(ChainScores, **attributes)

    def _check_outputs(self, y, name="y", low=0):
        """Encoded label sequences ``y`` (n_tokens,) checked against the batch, as int64."""
        return _check_labels(y, self.offsets, self.n_states, name, low)


def _check_labels(y, offsets, n_states, name="y", low=0):
    """Validate stacked encoded labels: one state 0 .. n_states - 1 per token."""
    return check_encoded_outputs(
        y, offsets, n_states - 1, low=low, name=name, example="sequence", unit="token",
        expected="a state {low} .. {high}" + f" (the scores have {n_states} states)",
    )


class ChainParts:
    """Part vectors a = [m; n] of a batch of chains: indicators or marginals.

    Parameters
    ----------
    unary : ndarray of shape (n_tokens, n_states)
        Unary parts m (one-hot rows for indicators, probabilities for marginals).
    transition : ndarray of shape (n_sequences, n_states, n_states)
        Transition counts of each sequence (expected counts for marginals).
    start, end : ndarray of shape (n_sequences, n_states)
        First and last state of each sequence (their probabilities for marginals).
    offsets : ndarray of shape (n_sequences + 1,)
    """

    def __init__(self, unary, transition, start, end, offsets):
        self.unary = unary
        self.transition = transition
        self.start = start
        self.end = end
        self.offsets = offsets

    def __sub__(self, other):
        return ChainParts(
            self.unary - other.unary,
            self.transition - other.transition,
            self.start - other.start,
            self.end - other.end,
            self.offsets,
        )

    def __add__(self, other):
        return ChainParts(
            self.unary + other.unary,
            self.transition + other.transition,
            self.start + other.start,
            self.end + other.end,
            self.offsets,
        )

    def __mul__(self, factor):
        return ChainParts(
            self.unary * factor,
            self.transition * factor,
            self.start * factor,
            self.end * factor,
            self.offsets,
        )

    __rmul__ = __mul__

    @property
    def unary_offsets(self):
        """Sequence ``i`` owns ``unary.ravel()[unary_offsets[i]:unary_offsets[i + 1]]``."""
        return self.offsets * self.unary.shape[1]

    def example(self, i):
        """The parts of sequence ``i`` alone, as views: writing to them writes here."""
        a, b = self.offsets[i], self.offsets[i + 1]
        return ChainParts(
            self.unary[a:b],
            self.transition[i : i + 1],
            self.start[i : i + 1],
            self.end[i : i + 1],
            np.array([0, b - a]),
        )

    def __isub__(self, other):
        self.unary -= other.unary
        self.transition -= other.transition
        self.start -= other.start
        self.end -= other.end
        return self

    def scale(self, weights):
        """Multiply the parts of example ``i`` by ``weights[i]``."""
        weights = np.asarray(weights, dtype=np.float64)
        per_token = np.repeat(weights, np.diff(self.offsets))
        return ChainParts(
            self.unary * per_token[:, None],
            self.transition * weights[:, None, None],
            self.start * weights[:, None],
            self.end * weights[:, None],
            self.offsets,
        )

    def dot(self, scores):
        """Per-example inner products ⟨a_i, η_i⟩ with a :class:`ChainScores`.

        Returns
        -------
        ndarray of shape (n_sequences,)
        """
        if not (np.isfinite(scores.unary).all() and np.isfinite(scores.transition).all()
                and np.isfinite(scores.start).all() and np.isfinite(scores.end).all()):
            # -inf forbids a part: parts that are absent contribute 0, not NaN.
            return (np.add.reduceat(_products(self.unary, scores.unary).sum(axis=1),
                                    self.offsets[:-1])
                    + _products(self.transition, scores.transition).sum(axis=(1, 2))
                    + _products(self.start, scores.start).sum(axis=1)
                    + _products(self.end, scores.end).sum(axis=1))
        per_token = np.einsum("ts,ts->t", self.unary, scores.unary)
        unary = np.add.reduceat(per_token, self.offsets[:-1])
        pairwise = np.einsum("nij,ij->n", self.transition, scores.transition)
        return unary + pairwise + self.start @ scores.start + self.end @ scores.end


def chain_parts(y, offsets, n_states):
    """Indicator parts of encoded label sequences.

    Parameters
    ----------
    y : ndarray of shape (n_tokens,), int
        Encoded labels of all tokens, stacked.
    offsets : ndarray of shape (n_sequences + 1,)
    n_states : int

    Returns
    -------
    ChainParts
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    y = _check_labels(y, offsets, n_states)
    n_tokens = y.shape[0]
    n_seq = offsets.shape[0] - 1
    unary = np.zeros((n_tokens, n_states))
    unary[np.arange(n_tokens), y] = 1.0
    seq_of_token = np.repeat(np.arange(n_seq), np.diff(offsets))
    follows = np.ones(n_tokens, dtype=bool)
    follows[offsets[:-1]] = False
    t = np.flatnonzero(follows)
    flat = (seq_of_token[t] * n_states + y[t - 1]) * n_states + y[t]
    transition = np.bincount(flat, minlength=n_seq * n_states * n_states).astype(np.float64)
    start = np.zeros((n_seq, n_states))
    start[np.arange(n_seq), y[offsets[:-1]]] = 1.0
    end = np.zeros((n_seq, n_states))
    end[np.arange(n_seq), y[offsets[1:] - 1]] = 1.0
    return ChainParts(
        unary, transition.reshape(n_seq, n_states, n_states), start, end, offsets
    )


class ChainDecoder(Decoder):
    """Exact inference on first-order linear chains.

    Viterbi for MAP, forward-backward for the log-partition and marginals, list Viterbi for
    the ``k`` best sequences. All operations run over a whole batch of sequences in one
    compiled call, one sequence per parallel iteration.

    Parameters
    ----------
    log_space : {"auto", True, False}, default="auto"
        How forward-backward guards against overflow. ``"auto"`` rescales probabilities
        at each position (fast) when the spread of the transition and end scores is below
        200, and works in log space otherwise; ``True`` always works in log space.
        ``False`` always rescales, which is exact up to rounding while the finite
        transition and end scores spread at most ``SCALED_EXACT_SPREAD`` (330), whatever
        the unary scores. Beyond that spread it raises ``ValueError`` rather than return
        an underflowed (wrong or -inf) log-partition; with forbidden transitions or end
        states no spread makes it exact, and it raises when a sequence underflows to -inf
        that log space finds feasible. Either error says to use ``"auto"`` or ``True``.
    max_table_memory : float or None, default=2 * 1024**3
        Largest memory in bytes (default 2 GiB) that constrained message passing
        (count-statistic losses such as F1 in :meth:`loss_augmented_map`, Hamming and 0/1
        under slack rescaling, :meth:`map_with_label_count`,
        :meth:`map_with_min_distance`, :meth:`diverse_top_k`) may use in one call. The
        memory of each sequence is estimated before anything is allocated; a sequence
        above the limit raises ``TableMemoryError`` (a ``MemoryError`` and a
        ``ValueError``) naming it, and sequences processed in parallel never exceed the
        limit together (fewer threads are used instead). ``None`` removes the limit.
    constraints : None, str, dict or ChainConstraints, default=None
        Which label sequences are valid (see :class:`ChainConstraints`): every operation
        then runs over the valid sequences only (MAP, marginals, top-K, loss-augmented
        MAP, sampling, neighbourhoods, the constrained searches), as if the forbidden
        transitions, first and last states were scored -inf. ``None`` allows every
        sequence. A :class:`ChainConstraints`, or a dict of its arguments
        ``{"transition": (n_states, n_states) bool, "start": (n_states,) bool, "end":
        (n_states,) bool}`` ("start" and "end" optional). ``"bio"`` (alias ``"iob2"``)
        or ``"bioes"`` (alias ``"iobes"``) read the constraints of that chunk tagging
        scheme from the tag names (``I-X`` only after ``B-X`` or ``I-X``, ...): an
        estimator binds its ``classes_`` at ``fit`` (:meth:`bind_classes`), and its
        ``decoder_`` holds the resulting :class:`ChainConstraints`. Estimators reject
        training sequences that break the constraints (:meth:`check_outputs`).

    Notes
    -----
    Time per sequence of length L with S states: O(L S²) for MAP, log-partition and
    marginals, O(L S² k) for the ``k`` best. Memory O(n_tokens · S) per batch.
    A score of -inf forbids a state of a token, a transition, or a first or last state.
    A sequence left with no labeling of finite score has log-partition -inf; ``map``,
    ``top_k``, ``marginals`` and ``loss_augmented_map`` raise
    :class:`~skstruct.decoders.InfeasibleOutputError` naming it, and the constrained
    searches (``map_with_label_count``, ``map_with_min_distance``, ``diverse_top_k``)
    return -1 labels for it. Forbidden transitions or end states make ``"auto"`` use
    log space, except those of :attr:`constraints`: their decoder rescales as long as
    the allowed transition and end scores spread at most 200 and the unary scores at
    most ``CONSTRAINED_UNARY_SPREAD`` (400), and redoes a batch in log space when a
    sequence comes out infeasible.
    Constrained message passing keeps one back-pointer (one byte up to 128 states) per
    state and statistic value of every token that is reachable and can reach the chosen
    value: at most about S N* L² / 12 bytes for F1 on a sequence with N* gold positives
    (0.25 GiB for L = 1,000, S = 17, N* = 180), usually much less.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.decoders import ChainDecoder, ChainScores
    >>> scores = ChainScores(unary=np.array([[1., 0.], [0., 2.], [3., 0.]]),
    ...                      offsets=np.array([0, 3]), transition=np.zeros((2, 2)),
    ...                      start=np.zeros(2), end=np.zeros(2))
    >>> ChainDecoder().map(scores)
    array([0, 1, 0])

    With the states B-NP, I-NP, O, the BIO constraints forbid I-NP first or after O:

    >>> from skstruct.decoders import ChainConstraints
    >>> bio = ChainConstraints.from_tags(["B-NP", "I-NP", "O"], "bio")
    >>> scores = ChainScores(unary=np.array([[0., 2., 1.], [0., 0., 1.], [0., 2., 0.]]),
    ...                      offsets=np.array([0, 3]), transition=np.zeros((3, 3)),
    ...                      start=np.zeros(3), end=np.zeros(3))
    >>> ChainDecoder().map(scores), ChainDecoder(constraints=bio).map(scores)
    (array([1, 2, 1]), array([2, 0, 1]))
    """

    output_kind = "sequence"
    capabilities = frozenset({"map", "marginals", "top_k", "loss_augmented_map", "parts",
                              "sample_uniform", "neighbours"})
    score_types = ChainScores
    exact_cost_augmentation = True
    _example_name = "sequence"

    _parameter_constraints = {
        "log_space": [StrOptions({"auto"}), "boolean"],
        "max_table_memory": [Interval(Real, 0, None, closed="neither"), None],
        "constraints": [None, str, dict, ChainConstraints],
    }

    def __init__(self, log_space="auto", max_table_memory=DEFAULT_MAX_TABLE_MEMORY,
                 constraints=None):
        self.log_space = log_space
        self.max_table_memory = max_table_memory
        self.constraints = constraints

    def _check_params(self):
        super()._check_params()
        check_constraints_spec(self.constraints)

    def _check_scores(self, scores):
        """Check ``scores`` (see :meth:`Decoder._check_scores`) and return them with the
        parts that :attr:`constraints` forbid scored -inf: every operation starts here,
        so every one of them sees the valid sequences only."""
        scores = super()._check_scores(scores)
        if self.constraints is None:
            return scores
        return resolve_constraints(self.constraints).restrict(scores)

    def bind_classes(self, classes):
        """This decoder for the states ``classes``: a copy whose :attr:`constraints` are
        a :class:`ChainConstraints` over them (read from the tag names for a scheme
        name), or ``self`` without constraints.

        Estimators call it at ``fit`` with their ``classes_`` (the fitted ``decoder_``
        holds the result).

        Parameters
        ----------
        classes : sequence of length n_states
            The label of every state, in state order.

        Returns
        -------
        ChainDecoder

        Raises
        ------
        ValueError
            When the tag names do not parse for a scheme name, or the constraints are
            over another number of states.
        """
        if self.constraints is None:
            return self
        self._check_params()
        bound = clone(self)
        bound.constraints = resolve_constraints(self.constraints, classes)
        return bound

    def check_outputs(self, y, offsets):
        """Raise a ``ValueError`` naming the gold sequences that :attr:`constraints`
        forbid (estimators call it at ``fit``: training on them would give infinite
        losses)."""
        if self.constraints is None:
            return
        self._check_params()
        constraints = resolve_constraints(self.constraints)
        offsets = np.asarray(offsets, dtype=np.int64)
        y = _check_labels(y, offsets, constraints.n_states)
        bad, reasons = constraints.violations(y, offsets)
        if bad.any():
            raise ValueError(
                f"{int(bad.sum())} of {bad.shape[0]} training sequences break the chain "
                f"constraints of the decoder ({'; '.join(reasons)}"
                f"{' ...' if bad.sum() > len(reasons) else ''}): fix the labels, or use "
                "constraints=None."
            )

    def map(self, scores, *, return_score=False):
        """Viterbi decoding.

        Parameters
        ----------
        scores : ChainScores
        return_score : bool, default=False

        Returns
        -------
        labels : ndarray of shape (n_tokens,), int64
            The best label sequences, stacked.
        best : ndarray of shape (n_sequences,)
            Their scores, when ``return_score`` is True.

        Raises
        ------
        InfeasibleOutputError
            When a sequence has no labeling with a finite score.
        """
        scores = self._check_scores(scores)
        with threads_for(scores.unary.size * scores.n_states), dynamic_schedule():
            labels, best = kernels.viterbi(*scores._kernel_args())
        check_feasible(best, "sequence")
        return (labels, best) if return_score else labels

    def _forward_backward(self, scores, with_marginals):
        scores = self._check_scores(scores)
        constrained = self.constraints is not None
        if self.log_space == "auto":
            pairwise = (scores.transition, scores.end)
            if constrained:
                # The masks' -inf are exact zeros for the rescaled recursion; what it
                # needs is that the allowed states of a token never all underflow
                # against its best state (which may be forbidden there): a bounded
                # spread of the allowed transitions, of the end and of the unary scores.
                spread = max(_finite_spread(x) for x in pairwise)
                log_space = not (spread <= kernels.SCALED_RANGE_LIMIT and
                                 _finite_spread(scores.unary) <= CONSTRAINED_UNARY_SPREAD)
            else:
                # a forbidden (-inf) transition or end has an infinite spread: log space
                spread = (max(np.ptp(x) for x in pairwise)
                          if all(np.isfinite(x).all() for x in pairwise) else np.inf)
                log_space = not spread <= kernels.SCALED_RANGE_LIMIT
        else:
            log_space = bool(self.log_space)
            if not log_space:
                _check_scaled_spread(scores)
        with threads_for(3 * scores.unary.size * scores.n_states):
            kernel = (kernels.forward_backward_log if log_space
                      else kernels.forward_backward_scaled)
            with dynamic_schedule():
                result = kernel(*scores._kernel_args(), with_marginals)
                if (constrained and self.log_space == "auto" and not log_space
                        and np.any(result[0] == -np.inf)):
                    # an infeasible sequence, or an underflow: log space tells them apart
                    result = kernels.forward_backward_log(*scores._kernel_args(),
                                                          with_marginals)
                elif self.log_space != "auto" and not log_space:
                    _check_no_underflow(scores, result[0])
        return result

    def log_partition(self, scores):
        """log Σ_y exp θ_y of every sequence.

        Returns
        -------
        ndarray of shape (n_sequences,)
            -inf for a sequence with no labeling of finite score.
        """
        return self._forward_backward(scores, False)[0]

    def marginals(self, scores):
        """Forward-backward: log-partition and marginals.

        Returns
        -------
        log_z : ndarray of shape (n_sequences,)
        marginals : ChainParts
            Unary marginals p(y_t = s) of shape (n_tokens, n_states), expected transition
            counts Σ_t p(y_{t-1} = i, y_t = j) per sequence, and the first and last state
            marginals. They are the gradient of ``log_z`` with respect to the scores.

        Raises
        ------
        InfeasibleOutputError
            When a sequence has no labeling with a finite score (``log_z`` = -inf).
        """
        log_z, unary, transition = self._forward_backward(scores, True)
        check_feasible(log_z, "sequence")
        offsets = scores.offsets
        parts = ChainParts(
            unary, transition, unary[offsets[:-1]], unary[offsets[1:] - 1], offsets
        )
        return log_z, parts

    def top_k(self, scores, k):
        """The ``k`` best distinct label sequences.

        Parameters
        ----------
        scores : ChainScores
        k : int >= 1

        Returns
        -------
        paths : ndarray of shape (n_tokens, k), int64
            Column ``r`` stacks the ``r``-th best sequences; -1 where a sequence has fewer
            than ``r + 1`` labelings of finite score (a labeling with a part scored -inf
            is never listed).
        path_scores : ndarray of shape (n_sequences, k)
            Non-increasing along each row; -inf where fewer exist.

        Raises
        ------
        InfeasibleOutputError
            When a sequence has no labeling with a finite score.
        """
        scores = self._check_scores(scores)
        k = check_k(k)
        with threads_for(scores.unary.size * scores.n_states * k), dynamic_schedule():
            paths, top = kernels.top_k_viterbi(*scores._kernel_args(), k)
        check_feasible(top[:, 0], "sequence")
        return paths, top

    def loss_augmented_map(self, scores, y_true, task_loss, rescaling="margin"):
        """argmax_y H(θ_y, Δ(y_true, y)) for every sequence, exactly.

        Margin rescaling maximizes θ_y + Δ(y_true, y); slack rescaling maximizes
        Δ(y_true, y) (1 + θ_y − θ_{y_true}). Losses that decompose over parts
        (``decomposition = "parts"``: ``unary_costs``) under margin rescaling add their
        per-token costs to the unary scores and run Viterbi. The 0/1 loss under margin
        rescaling takes the better of ``y_true`` and the best other sequence (top-2).
        Unweighted Hamming and 0/1 under slack rescaling (as mismatch counts), and
        count-statistic losses (``decomposition = "counts"``:
        :class:`~skstruct.losses.CountingLoss`, F_β, precision, recall, IoU, label count)
        use constrained message passing, for either rescaling or a user objective.

        Parameters
        ----------
        scores : ChainScores
        y_true : ndarray of shape (n_tokens,), int
            Encoded gold labels, stacked.
        task_loss : TaskLoss
            Count-statistic losses must be bound to their positive states.
        rescaling : {"margin", "slack"} or callable, default="margin"
            A callable ``H(F, stats, example, gold_scores, n_gold)`` must be non-decreasing
            in F; count-statistic losses only.

        Returns
        -------
        ndarray of shape (n_tokens,), int64

        Raises
        ------
        InfeasibleOutputError
            When a sequence has no labeling with a finite score.
        ValueError
            When ``y_true`` holds states out of range or has the wrong length, or under
            slack rescaling when ``y_true`` scores -inf.
        """
        return super().loss_augmented_map(self._check_scores(scores), y_true, task_loss,
                                          rescaling)

    def sparsemap(self, scores, *, max_iter=100, tol=1e-9, init=None, **options):
        """SparseMAP over the valid sequences (see :meth:`Decoder.sparsemap`)."""
        return super().sparsemap(self._check_scores(scores), max_iter=max_iter, tol=tol,
                                 init=init, **options)

    def sample_uniform(self, scores, n_draws, random_state=None):
        """Independent uniform draws from the labelings of finite score of every chain.

        Forward filtering with 0/1 indicators of the finite parts counts the valid
        prefixes ending in every state (normalized at every position); backward sampling
        then draws the last state, and every earlier state given the next one, with
        probabilities proportional to those counts (see
        :func:`~skstruct.decoders._chain.kernels.sample_uniform_one`). The values of the
        finite scores do not matter. O(L S²) per sequence, then O(L S) per draw.

        Parameters
        ----------
        scores : ChainScores
        n_draws : int >= 1
        random_state : None, int, numpy.random.Generator or numpy.random.RandomState
            Turned into a Generator by ``numpy.random.default_rng``; it draws one uniform
            per token and draw before the compiled kernel runs, so the draws do not
            depend on the number of threads.

        Returns
        -------
        paths : ndarray of shape (n_tokens, n_draws), int64
            Column d stacks the d-th draw of every sequence.

        Raises
        ------
        InfeasibleOutputError
            When a sequence has no labeling with a finite score.

        Examples
        --------
        >>> import numpy as np
        >>> from skstruct.decoders import ChainDecoder, ChainScores
        >>> scores = ChainScores(np.zeros((2, 2)), [0, 2], transition=[[0, -np.inf], [0, 0]],
        ...                      start=np.zeros(2), end=np.zeros(2))
        >>> paths = ChainDecoder().sample_uniform(scores, 1000, random_state=0)
        >>> paths.shape, np.unique(paths.T, axis=0).tolist()  # never 0 then 1
        ((2, 1000), [[0, 0], [1, 0], [1, 1]])
        """
        scores = self._check_scores(scores)
        n_draws = check_n_draws(n_draws)
        rng = check_random_state(random_state)
        uniforms = rng.random((scores.unary.shape[0], n_draws))
        with threads_for(scores.unary.size * (scores.n_states + n_draws)), \
                dynamic_schedule():
            paths, feasible = kernels.sample_uniform(*scores._kernel_args(), uniforms)
        check_feasible(np.where(feasible, 0.0, -np.inf), "sequence")
        return paths

    def neighbours(self, scores, y, k=1):
        """The labelings of finite score at Hamming distance 1 .. k from ``y``.

        A neighbour relabels between 1 and k tokens (L (S − 1) candidates for k = 1,
        Σ_{j ≤ k} C(L, j) (S − 1)^j in all) and is kept when its score is finite. Order:
        distance 1 first; within one distance the sets of relabeled tokens in
        lexicographic order, then their new labels in lexicographic order (each token's
        labels other than its own, increasing). O(k) per candidate.

        Parameters
        ----------
        scores : ChainScores
        y : ndarray of shape (n_tokens,), int
            Encoded label sequences, stacked (checked like ``y_true``).
        k : int >= 1, default=1

        Returns
        -------
        paths : ndarray of shape (n_tokens, max(counts)), int64
            Column r stacks the r-th neighbour of every sequence; -1 past its count.
        counts : ndarray of shape (n_sequences,), int64

        Raises
        ------
        ValueError
            When ``y`` does not fit the scores, or a sequence has more than
            :data:`~skstruct.decoders._core.sampling.MAX_NEIGHBOUR_CANDIDATES` candidates.

        Examples
        --------
        >>> import numpy as np
        >>> from skstruct.decoders import ChainDecoder, ChainScores
        >>> scores = ChainScores(np.zeros((2, 2)), [0, 2], transition=[[0, -np.inf], [0, 0]],
        ...                      start=np.zeros(2), end=np.zeros(2))
        >>> paths, counts = ChainDecoder().neighbours(scores, np.array([1, 1]), k=2)
        >>> paths.T, counts  # (0, 1) has the forbidden transition
        (array([[1, 0],
               [0, 0]]), array([2]))
        """
        scores = self._check_scores(scores)
        k = check_k(k)
        y = self._check_y_true(scores, y)
        check_neighbourhood_size(scores.lengths, np.full(scores.n_sequences,
                                                         scores.n_states), k, "sequence")
        counts = np.zeros(scores.n_sequences, dtype=np.int64)
        args = scores._kernel_args() + (y, k)
        with threads_for(scores.unary.size * scores.n_states * k), dynamic_schedule():
            kernels.neighbours(*args, np.empty((0, 0), dtype=np.int64), counts, False)
            check_neighbour_entries(y.shape[0], counts)
            width = int(counts.max()) if counts.size else 0
            paths = np.full((y.shape[0], width), -1, dtype=np.int64)
            kernels.neighbours(*args, paths, counts, True)
        return paths, counts

    def neighbour_differences(self, scores, y, k=1, max_entries=None):
        """The part differences a_{y'} − a_y of every neighbour y' of :meth:`neighbours`,
        without listing the neighbours, or None where this is not offered (k > 1, or a
        subclass that changes :meth:`neighbours` or :meth:`parts`).

        Relabeling token t from y_t to v changes at most six parts: the unary parts of
        (t, v) and (t, y_t) and the transitions (or start / end parts) into and out of
        t; a compiled kernel writes those of every valid neighbour, merged (a transition
        entered and left by the relabeled token) and without zeros: O(L S) per sequence
        of length L with S states, instead of the O(L² S) of listing every neighbour as
        a labeling and building its parts.

        Parameters
        ----------
        scores : ChainScores
        y : ndarray of shape (n_tokens,), int
            Encoded label sequences, stacked (checked like ``y_true``).
        k : int >= 1, default=1
        max_entries : int or None, default=None
            Raise ``MemoryError`` before allocating more entries than this.

        Returns
        -------
        None, or a tuple (counts, positions, entries)
            ``counts`` (n_sequences,): the neighbours of every sequence, as
            :meth:`neighbours` counts them; ``positions`` (sum of counts,): the token,
            within its sequence, that the neighbour relabels (rows in the order of
            :meth:`neighbours`); ``entries``: for every array of :meth:`parts`
            (``"unary"``, ``"transition"``, ``"start"``, ``"end"``) a tuple (rows, flat,
            values): the row of the neighbour, the flat index into that array of the
            batch's parts and the nonzero difference.

        Examples
        --------
        >>> import numpy as np
        >>> from skstruct.decoders import ChainDecoder, ChainScores
        >>> scores = ChainScores(np.zeros((2, 2)), [0, 2], transition=np.zeros((2, 2)),
        ...                      start=np.zeros(2), end=np.zeros(2))
        >>> counts, positions, entries = ChainDecoder().neighbour_differences(
        ...     scores, np.array([0, 0]))
        >>> counts, positions, entries["unary"][1]
        (array([2]), array([0, 1]), array([1, 0, 3, 2]))
        """
        scores = self._check_scores(scores)
        k = check_k(k)
        if k > 1 or not keeps_operations(self, ChainDecoder, ("neighbours", "parts")):
            return None
        y = np.ascontiguousarray(self._check_y_true(scores, y), dtype=np.int64)
        from . import neighbour_kernels as nk

        n_seq = scores.n_sequences
        rows = np.zeros(n_seq, dtype=np.int64)
        nonzeros = np.zeros(n_seq, dtype=np.int64)
        args = scores._kernel_args() + (y,)
        with threads_for(scores.unary.size), dynamic_schedule():
            nk.neighbour_difference_counts(*args, rows, nonzeros)
            row_offsets = np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)
            entry_offsets = np.concatenate([[0], np.cumsum(nonzeros)]).astype(np.int64)
            positions = np.empty(row_offsets[-1], dtype=np.int64)
            n_entries = int(entry_offsets[-1])
            if max_entries is not None and n_entries > max_entries:
                raise MemoryError(
                    f"the neighbours' part differences have {n_entries:,} entries, more "
                    f"than the limit of {int(max_entries):,}.")
            entry_rows = np.empty(n_entries, dtype=np.int64)
            codes = np.empty(n_entries, dtype=np.int8)
            flats = np.empty(n_entries, dtype=np.int64)
            values = np.empty(n_entries, dtype=np.float64)
            nk.neighbour_differences(*args, row_offsets, entry_offsets, positions,
                                     entry_rows, codes, flats, values)
        entries = {}
        for name, code in (("unary", nk.UNARY), ("start", nk.START),
                           ("transition", nk.TRANSITION), ("end", nk.END)):
            mine = codes == code
            entries[name] = (entry_rows[mine], flats[mine], values[mine])
        return rows, positions, entries

    def best_neighbour(self, scores, start, k=1, start_scores=None):
        """The result of scanning the Hamming-``k`` neighbourhood of ``start`` keeping
        y ← y' whenever θ(y') ≥ θ(y), for every sequence.

        The scan visits :meth:`neighbours` in its documented order, so the result is the
        last neighbour of largest score when that score is at least θ(start), else
        ``start`` (the proposal of :class:`~skstruct.PerturbedMAPClassifier`). For
        ``k = 1`` a compiled kernel compares the score differences of relabeling one
        token t to v, unary[t, v] + the transitions (or start / end scores) into and out
        of t minus those of y_t, without listing the neighbours: O(L S) per sequence of
        length L with S states (see
        :mod:`~skstruct.decoders._chain.neighbour_kernels`). Only valid neighbours
        (finite score) count; from a start of score -inf every valid neighbour is a
        move. For ``k > 1``, or for a subclass that changes :meth:`neighbours` or
        :meth:`score_outputs`, the neighbours are listed and scored
        (:func:`~skstruct.decoders._core.best_neighbour.best_neighbour_by_scan`).

        Parameters
        ----------
        scores : ChainScores
        start : ndarray of shape (n_tokens,), int
            Encoded start labelings, stacked (checked like ``y_true``).
        k : int >= 1, default=1
        start_scores : ndarray of shape (n_sequences,), default=None
            θ(start) from :meth:`score_outputs`, computed here when None.

        Returns
        -------
        outputs : ndarray of shape (n_tokens,), int64
        theta : ndarray of shape (n_sequences,)
            θ of every result: θ(start) plus the change of a move (equal to
            :meth:`score_outputs` of the result up to rounding).

        Notes
        -----
        Ties are decided on the score differences, which equal the differences of the
        full scores in exact arithmetic (for example with integer scores); with real
        scores two neighbours whose scores agree to rounding may be ordered differently
        from :meth:`score_outputs`.

        Examples
        --------
        >>> import numpy as np
        >>> from skstruct.decoders import ChainDecoder, ChainScores
        >>> scores = ChainScores(np.array([[0., 1.], [2., 0.], [0., 0.]]), [0, 3],
        ...                      transition=np.zeros((2, 2)), start=np.zeros(2),
        ...                      end=np.zeros(2))
        >>> ChainDecoder().best_neighbour(scores, np.array([0, 0, 0]))
        (array([1, 0, 0]), array([3.]))
        """
        scores = self._check_scores(scores)
        k = check_k(k)
        start = np.ascontiguousarray(scores._check_outputs(start, name="start"))
        if start_scores is None:
            start_scores = self.score_outputs(scores, start)
        start_scores = np.ascontiguousarray(start_scores, dtype=np.float64)
        if start_scores.shape != (scores.n_sequences,):
            raise ValueError(
                f"start_scores has shape {start_scores.shape}; expected "
                f"({scores.n_sequences},), one score per sequence."
            )
        if k > 1 or not keeps_operations(self, ChainDecoder,
                                         ("neighbours", "score_outputs")):
            from .._core.best_neighbour import best_neighbour_by_scan

            return best_neighbour_by_scan(self, scores, start, k, scores.offsets,
                                          start_scores)
        from .neighbour_kernels import best_neighbour

        outputs = np.empty(start.shape[0], dtype=np.int64)
        theta = np.empty(scores.n_sequences, dtype=np.float64)
        with threads_for(scores.unary.size), dynamic_schedule():
            best_neighbour(*scores._kernel_args(), start, start_scores, outputs, theta)
        return outputs, theta

    def _counting_form(self, scores, task_loss, rescaling):
        """A count-statistic loss, or under slack rescaling the mismatch-count form of
        the 0/1 loss and of Hamming without class costs (same argmax)."""
        counting = super()._counting_form(scores, task_loss, rescaling)
        if counting is None and rescaling == "slack":
            counting = mismatch_count_form(task_loss, scores.offsets)
        return counting

    def _count_augmented_map(self, scores, y_true, counting_loss, rescaling):
        """Constrained message passing over (state, statistics so far)."""
        if rescaling == "slack":
            self._check_slack_gold(scores, y_true)
        labels = loss_augmented_map_by_statistic(self, scores, y_true, counting_loss,
                                                 rescaling)
        check_feasible(self.score_outputs(scores, labels), "sequence")
        return labels

    def _unsupported_loss(self, task_loss, rescaling):
        return no_exact_loss_augmented_map(
            self, task_loss, rescaling,
            "losses with per-token costs (HammingLoss, or a loss with unary_costs) and "
            "ZeroOneLoss under margin rescaling, and unweighted Hamming, 0/1 and "
            "count-statistic losses (CountingLoss: F1, IoU, precision, recall, label "
            "count) under either rescaling",
            f"For a loss that is a sum over tokens, implement "
            f"{type(task_loss).__name__}.unary_costs(y_true, offsets, n_states) (the cost "
            "of every state of every token, shape (n_tokens, n_states)) and use "
            "rescaling='margin'; for a function of count statistics, subclass "
            "CountingLoss.",
        )

    def compiled_oracle(self, task_loss, rescaling, y, y_offsets, n_unary=None):
        """The compiled per-sequence oracle of chains (see :meth:`Decoder.compiled_oracle`):
        ``n_unary`` is the number of states, which a loss that declares
        ``decomposition="parts"`` beyond Hamming needs for its ``unary_costs``."""
        if not keeps_operations(self, ChainDecoder):
            return None
        from .oracle import compiled_chain_oracle

        return compiled_chain_oracle(self, task_loss, rescaling, y, y_offsets, n_unary)

    def fused_crf_constraints(self, n_states):
        """The constraints a fused CRF objective applies (see
        :meth:`Decoder.fused_crf_constraints`): this decoder keeps the chain's own
        forward-backward and rescales (``log_space`` "auto" or False); NotImplemented
        otherwise, and for constraints over another number of states (the generic path
        raises the decoder's own error)."""
        if not (keeps_operations(self, ChainDecoder)
                and type(self)._forward_backward is ChainDecoder._forward_backward
                and (self.log_space == "auto" or self.log_space is False)):
            return NotImplemented
        if self.constraints is None:
            return None
        # the masks the decoder applies (raises as the decoder would, e.g. for a scheme
        # name without the tag names)
        constraints = resolve_constraints(self.constraints)
        if constraints.n_states != n_states:
            return NotImplemented
        return constraints.transition, constraints.start, constraints.end

    def map_with_label_count(self, scores, count, positive_states):
        """Best labeling with exactly ``count`` tokens in ``positive_states``.

        Parameters
        ----------
        scores : ChainScores
        count : int or ndarray of shape (n_sequences,)
        positive_states : ndarray of shape (n_states,), bool

        Returns
        -------
        labels : ndarray of shape (n_tokens,), int64
            -1 for sequences where no labeling has that count.
        best : ndarray of shape (n_sequences,)
            Their scores, -inf where none exists.

        Notes
        -----
        Constrained message passing over (state, count so far): O(L² S²) per sequence.
        """
        scores = self._check_scores(scores)
        positive_states = np.asarray(positive_states)
        if positive_states.shape != (scores.n_states,):
            raise ValueError(
                f"positive_states has shape {positive_states.shape}; expected "
                f"({scores.n_states},), one flag per state."
            )
        return map_with_label_count(scores, count, positive_states, self.max_table_memory)

    def map_with_min_distance(self, scores, others, min_distance=1):
        """Best labeling at Hamming distance >= ``min_distance`` from each of ``others``.

        Parameters
        ----------
        scores : ChainScores
        others : ndarray of shape (n_tokens, K), int
            Labelings to avoid, stacked (for instance ``top_k`` paths); -1 columns impose
            nothing. ``min_distance=1`` excludes them exactly.
        min_distance : int >= 1, default=1

        Returns
        -------
        labels : ndarray of shape (n_tokens,), int64
            -1 where no labeling qualifies.
        best : ndarray of shape (n_sequences,)

        Notes
        -----
        O(L S² (min_distance + 1)^K K) per sequence of length L.
        """
        scores = self._check_scores(scores)
        min_distance = check_k(min_distance, "min_distance")
        others = np.asarray(others)
        if others.ndim == 1:
            others = others[:, None]
        if others.ndim != 2:
            raise ValueError(
                f"others has shape {others.shape}; expected (n_tokens, K), K labelings "
                "stacked as columns."
            )
        for column in range(others.shape[1]):
            scores._check_outputs(others[:, column], name=f"others[:, {column}]", low=-1)
        return map_with_min_distance(scores, others, min_distance, self.max_table_memory)

    def diverse_top_k(self, scores, k, min_distance=1):
        """``k`` labelings, each the best at distance >= ``min_distance`` from the previous.

        With ``min_distance=1`` this equals :meth:`top_k` (slower); larger distances give
        diverse lists. Same outputs as :meth:`top_k`.

        Parameters
        ----------
        scores : ChainScores
        k : int >= 1
        min_distance : int >= 1, default=1
            Hamming distance (in tokens) from every labeling chosen before.
        """
        scores = self._check_scores(scores)
        k = check_k(k)
        min_distance = check_k(min_distance, "min_distance")
        return diverse_top_k(scores, k, min_distance, self.max_table_memory)

    def parts(self, scores, y):
        """Indicator parts of the encoded label sequences ``y`` (n_tokens,).

        Raises ``ValueError`` when ``y`` holds states out of range or has the wrong length.
        """
        scores = self._check_scores(scores)
        return chain_parts(y, scores.offsets, scores.n_states)

    def score_outputs(self, scores, y):
        """θ_y of every sequence for encoded labels ``y`` of shape (n_tokens,).

        Returns
        -------
        ndarray of shape (n_sequences,)
            -inf for a labeling with a part scored -inf.
        """
        scores = self._check_scores(scores)
        y = scores._check_outputs(y)
        offsets = scores.offsets
        first, last = y[offsets[:-1]], y[offsets[1:] - 1]
        unary = np.add.reduceat(scores.unary[np.arange(y.shape[0]), y], offsets[:-1])
        pair = scores.transition[y[:-1], y[1:]]
        pair[offsets[1:-1] - 1] = 0.0
        pairwise = np.add.reduceat(np.concatenate((pair, [0.0])), offsets[:-1])
        return unary + pairwise + scores.start[first] + scores.end[last]
