"""Factor graphs over binary variables, declared in the user's shapes.

A :class:`FactorGraph` holds binary variables, created in blocks of any shape by
:meth:`FactorGraph.variables`, and factors added on slices of them. A block is a
:class:`Variables` object: it slices like a NumPy array, and ``~v`` negates the
variables it holds for the factors that accept negated inputs (a negated input enters a
factor as 1 − u). The graph is a template: the same structure scores many examples, and
:class:`~skstruct.decoders.FactorGraphDecoder` solves a batch of them at once.

Factors (each is a set of feasible 0/1 configurations of the variables it sees):

================  ============================================  =======================
factor            feasible configurations                        added by
================  ============================================  =======================
PAIR              any (u, u'), with one more part v = u u'       :meth:`add_pair`
XOR               exactly one input on                           :meth:`add_xor`
AtMostOne         at most one input on                           :meth:`add_at_most_one`
OR                at least one input on                          :meth:`add_or`
BUDGET            at most B inputs on                            :meth:`add_budget`
KNAPSACK          Σ c_i u_i ≤ B (on the relaxation, as AD3)      :meth:`add_knapsack`
OROut             output = OR(inputs)                            :meth:`add_or_out`
structure         the block is an output of a decoder            :meth:`add_structure`
================  ============================================  =======================

A PAIR factor adds a part of its own, v = u u' (both variables on), scored by a *pair
score* of the score container; a structure factor (a chain, tree, matching, ... decoder
over a block of variables) adds its decoder's additional parts (a chain's transitions,
start and end), scored by its slice of the *extra scores*; the other factors only
constrain. LP-SparseMAP and LP-MAP
replace the marginal polytope by the local polytope, the intersection of the factors'
own polytopes on the shared variables (:mod:`skstruct.decoders._factor_graph.admm`).
"""

import reprlib
from numbers import Integral, Real

import numpy as np

from . import linear_kernels as _lin
from .._core.checks import InfeasibleOutputError

__all__ = ["FactorGraph", "Variables"]

#: Largest number of variables of a graph whose outputs are enumerated (2 ** 16 of them):
#: :meth:`FactorGraph.feasible_outputs`, the exact search of :meth:`FactorGraph.round`
#: and ``FactorGraphDecoder(map_method="enumerate")``.
MAX_ENUMERATED_VARS = 16

#: Most passes of :meth:`FactorGraph.round`'s repairs over all the factors.
MAX_REPAIR_PASSES = 10

#: On graphs too large to enumerate, how many times :meth:`FactorGraph.round` repairs
#: again, from values perturbed by Gaussian noise of standard deviation
#: ``PERTURBATION`` (a fixed seed), the rows whose repairs fail.
PERTURBED_REPAIRS = 5
PERTURBATION = 0.3

#: Scores the enumeration computes at once (examples × feasible outputs).
ENUMERATED_SCORES_PER_CHUNK = 1 << 22


class Variables:
    """A block of binary variables of a :class:`FactorGraph`, in the user's shape.

    Indexing returns a :class:`Variables` of the selected variables (NumPy rules:
    slices, integer and boolean arrays, ``...``); ``~v`` negates them, so that a factor
    sees 1 − u instead of u (XOR, AtMostOne, OR, BUDGET and KNAPSACK accept negated
    inputs).

    Attributes
    ----------
    ids : ndarray of int64
        The graph's indices of the variables, in the block's shape.
    negated : ndarray of bool
        Which of them are negated, same shape.
    """

    __slots__ = ("graph", "ids", "negated")

    def __init__(self, graph, ids, negated=None):
        self.graph = graph
        self.ids = np.asarray(ids, dtype=np.int64)
        self.negated = (np.zeros(self.ids.shape, dtype=bool) if negated is None
                        else np.asarray(negated, dtype=bool))

    @property
    def shape(self):
        """Shape of the block."""
        return self.ids.shape

    @property
    def size(self):
        """Number of variables in the block."""
        return self.ids.size

    @property
    def ndim(self):
        return self.ids.ndim

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, index):
        return Variables(self.graph, self.ids[index], self.negated[index])

    def __invert__(self):
        return Variables(self.graph, self.ids, ~self.negated)

    def ravel(self):
        """The block flattened (row-major)."""
        return Variables(self.graph, self.ids.ravel(), self.negated.ravel())

    def __repr__(self):
        return f"Variables(shape={self.shape}, ids={self.ids.tolist()!r})"


def _factor_rows(graph, variables, axis, name):
    """``variables`` as one row of entries per factor: (ids, negated) of shape
    (n_factors, degree)."""
    if not isinstance(variables, Variables):
        raise TypeError(
            f"{name} takes a Variables block of this graph (from graph.variables(shape), "
            f"sliced); got {type(variables).__name__}."
        )
    if variables.graph is not graph:
        raise ValueError(f"{name}: the variables belong to another FactorGraph.")
    ids, negated = variables.ids, variables.negated
    if ids.ndim == 0:
        ids, negated = ids[None], negated[None]
    if axis is None:
        ids, negated = ids.reshape(1, -1), negated.reshape(1, -1)
    else:
        if not isinstance(axis, Integral) or not -ids.ndim <= axis < ids.ndim:
            raise ValueError(
                f"{name}: axis must be None (one factor over all the variables) or an "
                f"axis of the block, which has shape {ids.shape}; got {axis!r}."
            )
        ids = np.moveaxis(ids, axis, -1).reshape(-1, ids.shape[axis])
        negated = np.moveaxis(negated, axis, -1).reshape(ids.shape)
    if ids.shape[1] == 0 or ids.shape[0] == 0:
        raise ValueError(f"{name}: a factor needs at least one variable; got none.")
    for row in ids:
        if np.unique(row).shape[0] != row.shape[0]:
            raise ValueError(
                f"{name}: a factor sees each variable at most once; variable "
                f"{_repeated(row)} appears twice."
            )
    return ids, negated


def _unbounded_hint(budget, kind):
    """What to do with an infinite budget, for the message that rejects it."""
    if isinstance(budget, Real) and budget == np.inf:
        return f" A {kind} factor without a finite bound constrains nothing: leave it out."
    return ""


def _repeated(row):
    values, counts = np.unique(row, return_counts=True)
    return int(values[np.argmax(counts > 1)])


def _linear_holds(kind, x, coef, bound):
    """Which linear factors of one kind hold, shape (n, n_factors), for their 0/1
    inputs ``x`` (n, n_factors, degree), negations applied."""
    total = (x * coef).sum(axis=2)
    if kind == _lin.XOR:
        return total == 1
    if kind == _lin.OR:
        return total >= 1
    return total <= bound + 1e-9


def _repair_linear(kind, x, value, coef, bound):
    """The greedy repair of the broken factors of one linear kind (:meth:`FactorGraph.round`).

    Parameters
    ----------
    kind : int
        The factors' kind (``_factor_graph.linear_kernels.XOR``, ...).
    x, value : ndarray of shape (n, n_factors, degree)
        The factors' 0/1 inputs (negations applied) and the inputs' values.
    coef : ndarray of shape (n_factors, degree)
    bound : ndarray of shape (n_factors,)

    Returns
    -------
    ndarray of shape (n, n_factors, degree), int64
        The inputs, with the broken factors repaired.
    """
    x = x.copy()
    if kind in (_lin.XOR, _lin.OR):
        missing = (x * coef).sum(axis=2) < 1
        best = np.argmax(np.where(x == 0, value, -np.inf), axis=2)
        n, f = np.nonzero(missing)
        x[n, f, best[n, f]] = 1
    if kind != _lin.OR:
        keep = 1.0 if kind in (_lin.XOR, _lin.AT_MOST_ONE) else bound[:, None]
        rank = value / coef if kind == _lin.KNAPSACK else value
        order = np.argsort(np.where(x == 1, -rank, np.inf), axis=2, kind="stable")
        ranked_cost = np.take_along_axis(x * coef, order, axis=2)
        within = np.cumsum(ranked_cost, axis=2) <= keep + 1e-9
        on = np.zeros_like(x)
        np.put_along_axis(on, order, within & (ranked_cost > 0), axis=2)
        x = np.where((x * coef).sum(axis=2, keepdims=True) > keep + 1e-9, on, x)
    return x


def _repair_or_out(x, value):
    """The repair of broken OROut factors (:meth:`FactorGraph.round`).

    Parameters
    ----------
    x, value : ndarray of shape (n, n_inputs + 1)
        The factor's variables (the inputs, then the output) and their values.

    Returns
    -------
    ndarray of shape (n, n_inputs + 1), int64
        The variables, with the broken factors repaired.
    """
    inputs, output = x[:, :-1], x[:, -1]
    any_on = inputs.max(axis=1)
    broken = any_on != output
    gain = value - 0.5       # of turning a variable on, in Σ (value − ½) y
    set_output = np.where(any_on == 1, gain[:, -1], -gain[:, -1])
    set_inputs = np.where(output == 1, gain[:, :-1].max(axis=1),
                          -(gain[:, :-1] * inputs).sum(axis=1))
    x = x.copy()
    by_inputs = broken & (set_inputs > set_output)
    x[broken & ~by_inputs, -1] = any_on[broken & ~by_inputs]
    turn_on = np.flatnonzero(by_inputs & (output == 1))
    x[turn_on, np.argmax(gain[turn_on, :-1], axis=1)] = 1
    x[by_inputs & (output == 0), :-1] = 0
    return x


def _commit(y, value, rows, ids, new):
    """Set ``y[rows][:, ids]`` to ``new`` (len(rows), len(ids)), in place, and the value
    of every variable that changes to 1.5 (turned on) or -0.5 (turned off): beyond any
    value in [0, 1], so that later repairs change it last."""
    i, j = np.nonzero(new != y[np.ix_(rows, ids)])
    changed_rows, changed_vars = rows[i], ids[j]
    value[changed_rows, changed_vars] = 2.0 * new[i, j] - 0.5
    y[changed_rows, changed_vars] = new[i, j]


def _unrepaired_error(examples, n_vars, caller, example):
    """The error for rows whose repaired rounding still breaks a factor and whose graph
    is too large to search exactly."""
    which = (f"{example} {examples[0]}" if examples.size == 1 else
             f"{example}s {', '.join(str(int(i)) for i in examples[:10])}"
             + (f" and {examples.size - 10} more" if examples.size > 10 else ""))
    return InfeasibleOutputError(
        f"{caller}: no feasible rounding of {which}: repairing the factors that rounding "
        "its variable values at 1/2 broke did not reach an output that satisfies them "
        "all (the repairs of factors that share variables undo each other), and the "
        f"exact search over the outputs takes graphs of at most {MAX_ENUMERATED_VARS} "
        f"variables; this one has {n_vars}. Check that the factors can all hold on one "
        "output (FactorGraph.feasible), or declare fewer logic factors on shared "
        "variables; when the LP-MAP has not converged (FactorGraphDecoder.lp_map(scores)"
        ".converged), a larger max_iter of the decoder leaves fewer fractional values.",
        examples,
    )


class FactorGraph:
    """A factor graph over binary variables, built by declaring variables and factors.

    Create variables in blocks of any shape with :meth:`variables`, then add factors on
    slices of them. The graph is a template for a batch of examples: a
    :class:`FactorGraphDecoder` scores every example's variables
    (``unary``, shape (n_examples, n_vars)) and PAIR parts (``pair``, shape
    (n_examples, n_pairs)) and solves them together.

    Examples
    --------
    Three labels, one PAIR factor per pair of labels, and at least one label on:

    >>> from skstruct.decoders import FactorGraph
    >>> graph = FactorGraph()
    >>> labels = graph.variables(3)
    >>> graph.add_pair(labels[[0, 0, 1]], labels[[1, 2, 2]])
    array([0, 1, 2])
    >>> graph.add_or(labels)
    >>> graph.n_vars, graph.n_pairs, graph.n_factors
    (3, 3, 4)

    One label per token of a 4-token sequence over 3 tags (a XOR per row):

    >>> graph = FactorGraph()
    >>> tags = graph.variables((4, 3))
    >>> graph.add_xor(tags, axis=1)
    >>> graph.n_factors
    4
    """

    def __init__(self):
        self._n_vars = 0
        self._linear = []   # (kind code, ids (n, d), negated (n, d), coef (n, d), bound (n,))
        self._pairs = []    # (n, 2) arrays
        self._orouts = []   # lists of 1-D id arrays, the last entry the output
        self._structures = []  # StructureFactor objects
        self._changed()

    @classmethod
    def pairwise(cls, n_labels, pairs="all", *, at_least_one=False, max_labels=None):
        """The graph of a pairwise multilabel model: one variable per label, one PAIR
        factor per coupled pair of labels, and optional logic factors.

        Parameters
        ----------
        n_labels : int >= 1
        pairs : "all", None or array-like of shape (n_pairs, 2), default="all"
            Every pair of labels (i < j, in row-major order; None means the same), or the
            pairs to couple.
        at_least_one : bool, default=False
            Add an OR factor: some label is on.
        max_labels : int, default=None
            Add a BUDGET factor: at most this many labels are on.

        Returns
        -------
        FactorGraph

        Examples
        --------
        >>> from skstruct.decoders import FactorGraph
        >>> FactorGraph.pairwise(4, at_least_one=True)
        FactorGraph(n_vars=4, n_factors=7, n_pairs=6)
        """
        if not isinstance(n_labels, Integral) or n_labels < 1:
            raise ValueError(f"n_labels must be an integer >= 1; got {n_labels!r}.")
        graph = cls()
        labels = graph.variables(n_labels)
        if pairs is None:
            pairs = "all"
        if isinstance(pairs, str):
            if pairs != "all":
                raise ValueError(f"pairs must be 'all' or an array of label pairs; got "
                                 f"{pairs!r}.")
            first, second = np.triu_indices(n_labels, 1)
        else:
            pairs = np.asarray(pairs)
            if pairs.ndim != 2 or pairs.shape[1] != 2 or not np.issubdtype(
                    pairs.dtype, np.integer):
                raise ValueError(
                    f"pairs must be an integer array of shape (n_pairs, 2); got shape "
                    f"{pairs.shape} and dtype {pairs.dtype}.")
            if pairs.size and (pairs.min() < 0 or pairs.max() >= n_labels):
                raise ValueError(f"pairs must hold labels 0 .. {n_labels - 1}.")
            first, second = pairs[:, 0], pairs[:, 1]
        if len(first):
            graph.add_pair(labels[first], labels[second])
        if at_least_one:
            graph.add_or(labels)
        if max_labels is not None:
            graph.add_budget(labels, max_labels)
        return graph

    # -- variables -----------------------------------------------------------------

    def variables(self, shape):
        """Create a block of new binary variables.

        Parameters
        ----------
        shape : int or tuple of int
            Shape of the block (every entry >= 1).

        Returns
        -------
        Variables
            Variables ``n_vars .. n_vars + prod(shape) - 1`` (before the call), in
            ``shape``, row-major.
        """
        given = shape
        if isinstance(shape, Integral):
            shape = (shape,)
        else:
            try:
                shape = tuple(shape)
            except TypeError:
                shape = None
        if not shape or not all(isinstance(s, Integral) and not isinstance(s, bool)
                                and s >= 1 for s in shape):
            raise ValueError(
                f"variables: shape must be a positive integer (the number of variables) or "
                f"a tuple of positive integers (the block's shape); got {given!r}."
            )
        size = int(np.prod(shape))
        ids = np.arange(self._n_vars, self._n_vars + size, dtype=np.int64).reshape(shape)
        self._n_vars += size
        self._changed()
        return Variables(self, ids)

    @property
    def n_vars(self):
        """Number of binary variables."""
        return self._n_vars

    @property
    def n_pairs(self):
        """Number of PAIR factors (and of pair scores per example)."""
        return sum(p.shape[0] for p in self._pairs)

    @property
    def n_factors(self):
        """Number of factors."""
        return (sum(ids.shape[0] for _, ids, *_ in self._linear) + self.n_pairs
                + len(self._orouts) + len(self._structures))

    @property
    def n_extra(self):
        """Number of extra scores per example: the additional parts of the structure
        factors (:meth:`add_structure`), factor after factor."""
        return sum(f.n_extra for f in self._structures)

    @property
    def structures(self):
        """The structure factors, in the order they were added (each has ``decoder``,
        ``var``, the block's variables, and ``extra_start`` / ``n_extra``, its slice
        of the extra scores)."""
        return tuple(self._structures)

    @property
    def pairs_only(self):
        """Whether every factor is a PAIR factor (no logic or structure factors)."""
        return not (self._linear or self._orouts or self._structures)

    @property
    def pairs(self):
        """The two variables of every PAIR factor, shape (n_pairs, 2), in the order of
        the pair scores."""
        if not self._pairs:
            return np.zeros((0, 2), dtype=np.int64)
        return np.concatenate(self._pairs)

    # -- factors -------------------------------------------------------------------

    def add_pair(self, first, second):
        """Add PAIR factors between the variables of two blocks of the same shape.

        Factor ``k`` couples ``first.ravel()[k]`` and ``second.ravel()[k]`` and adds the
        part v_k = u u' (both on), scored by the pair score of the factor: a positive
        score rewards the two variables being on together, a negative one penalizes it.

        Parameters
        ----------
        first, second : Variables
            Blocks of the same shape, not negated; a variable is never paired with
            itself.

        Returns
        -------
        ndarray of shape (first.size,), int64
            Positions of the new factors among the pair scores.
        """
        rows = []
        for block, name in ((first, "first"), (second, "second")):
            if not isinstance(block, Variables) or block.graph is not self:
                raise TypeError(f"add_pair: {name} must be a Variables block of this graph.")
            if block.negated.any():
                raise ValueError(
                    "add_pair: PAIR factors take variables, not negated inputs (the pair "
                    "part is u u'); score the pair of the variables instead."
                )
            rows.append(block.ids.reshape(-1))
        if rows[0].shape != rows[1].shape or first.shape != second.shape:
            raise ValueError(
                f"add_pair: first and second must have the same shape; got {first.shape} "
                f"and {second.shape}."
            )
        if rows[0].size == 0:
            raise ValueError("add_pair: the blocks are empty.")
        if np.any(rows[0] == rows[1]):
            k = int(np.argmax(rows[0] == rows[1]))
            raise ValueError(f"add_pair: factor {k} pairs variable {rows[0][k]} with itself.")
        start = self.n_pairs
        self._pairs.append(np.stack(rows, axis=1))
        self._changed()
        return np.arange(start, start + rows[0].size, dtype=np.int64)

    def _add_linear(self, kind, variables, axis, name, bound=1.0, costs=None):
        ids, negated = _factor_rows(self, variables, axis, name)
        if costs is None:
            coef = np.ones(ids.shape)
        else:
            try:
                costs = np.asarray(costs, dtype=np.float64)
            except (TypeError, ValueError):
                raise ValueError(
                    f"{name}: costs must be numbers, one per variable of the block (shape "
                    f"{variables.shape}); got {reprlib.repr(costs)}."
                ) from None
            if costs.shape != variables.shape:
                raise ValueError(
                    f"{name}: costs must have the shape of the variables, {variables.shape}; "
                    f"got {costs.shape}."
                )
            coef = (costs.reshape(1, -1) if axis is None or costs.ndim == 0
                    else np.moveaxis(costs, axis, -1).reshape(ids.shape))
            bad = ~(np.isfinite(costs) & (costs > 0))
            if bad.any():
                raise ValueError(
                    f"{name}: costs must be finite and > 0; got {float(costs[bad][0])} at "
                    f"index {tuple(int(i) for i in np.argwhere(bad)[0])} of the block."
                )
        bound = np.full(ids.shape[0], float(bound))
        _lin.check_linear_factors(np.zeros(ids.size), np.ones(ids.size),
                                  np.arange(0, ids.size + 1, ids.shape[1]),
                                  np.full(ids.shape[0], kind), coef.ravel(), bound,
                                  negated.ravel())
        self._linear.append((kind, ids, negated, coef, bound))
        self._changed()

    def add_xor(self, variables, axis=None):
        """Add XOR factors: exactly one input on.

        Parameters
        ----------
        variables : Variables
            The inputs (``~v`` for negated ones).
        axis : int, default=None
            None: one factor over all the variables of the block; an axis: one factor
            per position of the other axes, over the variables along ``axis``.
        """
        self._add_linear(_lin.XOR, variables, axis, "add_xor")

    def add_at_most_one(self, variables, axis=None):
        """Add AtMostOne factors: at most one input on (``axis`` as in :meth:`add_xor`)."""
        self._add_linear(_lin.AT_MOST_ONE, variables, axis, "add_at_most_one")

    def add_or(self, variables, axis=None):
        """Add OR factors: at least one input on (``axis`` as in :meth:`add_xor`)."""
        self._add_linear(_lin.OR, variables, axis, "add_or")

    def add_budget(self, variables, budget, axis=None):
        """Add BUDGET factors: at most ``budget`` inputs on.

        Parameters
        ----------
        variables : Variables
        budget : int >= 0
        axis : int, default=None
            As in :meth:`add_xor`.
        """
        if not isinstance(budget, Integral) or isinstance(budget, bool) or budget < 0:
            raise ValueError(
                f"add_budget: budget must be an integer >= 0, the most inputs on; got "
                f"{budget!r}.{_unbounded_hint(budget, 'BUDGET')}"
            )
        self._add_linear(_lin.BUDGET, variables, axis, "add_budget", bound=budget)

    def add_knapsack(self, variables, costs, budget, axis=None):
        """Add KNAPSACK factors: Σ_i costs_i u_i ≤ budget.

        The factor is defined on the relaxation [0, 1]ⁿ ∩ {Σ c_i u_i ≤ B} (as in AD3 and
        LP-SparseMAP), whose vertices may have one fractional entry; its local MAP is the
        exact best 0/1 vector (by enumeration, up to 20 inputs).

        Parameters
        ----------
        variables : Variables
        costs : array-like of the shape of ``variables``, > 0
        budget : float >= 0
        axis : int, default=None
            As in :meth:`add_xor`.
        """
        if (not isinstance(budget, Real) or isinstance(budget, bool)
                or not 0 <= budget < np.inf):
            raise ValueError(
                f"add_knapsack: budget must be a finite number >= 0, the largest total cost "
                f"of the inputs on; got {budget!r}.{_unbounded_hint(budget, 'KNAPSACK')}"
            )
        self._add_linear(_lin.KNAPSACK, variables, axis, "add_knapsack", bound=budget,
                         costs=costs)

    def add_or_out(self, inputs, output):
        """Add an OROut factor: ``output`` is on exactly when some input is on.

        Parameters
        ----------
        inputs : Variables
            At least one variable, not negated.
        output : Variables
            One variable, not among the inputs, not negated.
        """
        ids, negated = _factor_rows(self, inputs, None, "add_or_out")
        if not isinstance(output, Variables) or output.graph is not self:
            raise TypeError("add_or_out: output must be a Variables block of this graph.")
        if output.size != 1:
            raise ValueError(f"add_or_out: output must be one variable; got {output.size}.")
        if negated.any() or output.negated.any():
            raise ValueError("add_or_out: OROut takes variables, not negated inputs.")
        out = int(output.ids.reshape(-1)[0])
        if out in ids[0]:
            raise ValueError(f"add_or_out: the output variable {out} is also an input.")
        self._orouts.append(np.append(ids[0], out))
        self._changed()

    def add_structure(self, decoder, variables):
        """Add a factor whose feasible configurations are a decoder's outputs on a block.

        ==============================  ====================  ==========================
        decoder                         block shape           variable on when
        ==============================  ====================  ==========================
        ChainDecoder                    (n_tokens, n_states)  token t has state s
        TreeDecoder                     (n, n)                h heads m ([m, h]; [m, m]:
                                                              m is a root child)
        MatchingDecoder                 (n_rows, n_cols)      row j matched to column k
        Multilabel-, SubsetDecoder      (n_labels,)           label j is on
        ==============================  ====================  ==========================

        The factor's additional parts (a chain's transitions (n_states, n_states),
        start and end (n_states,), raveled and concatenated in that order; none for the
        other decoders) are scored by columns ``extra_start .. extra_start + n_extra``
        of the ``extra`` scores of :class:`FactorGraphScores`. LP-SparseMAP solves the
        factor's local problems by the decoder's SparseMAP (:mod:`skstruct.decoders._factor_graph.structure`).

        Parameters
        ----------
        decoder : ChainDecoder, TreeDecoder, MatchingDecoder, MultilabelDecoder or
            SubsetDecoder
        variables : Variables
            The block, not negated, each variable once.

        Returns
        -------
        ndarray of shape (n_extra,), int64
            Positions of the factor's extra scores among the graph's.
        """
        from .structure import StructureFactor, check_structure_block

        ids = check_structure_block(self, decoder, variables)
        start = self.n_extra
        factor = StructureFactor(decoder, ids, start)
        self._structures.append(factor)
        self._changed()
        return np.arange(start, start + factor.n_extra, dtype=np.int64)

    # -- solver form ---------------------------------------------------------------

    def flat(self):
        """The graph in the solver's flat form, built once (rebuilt after a change).

        Returns
        -------
        FlatFactorGraph
        """
        if self._flat is None:
            from .admm import FlatFactorGraph

            if self._linear:
                kinds, ids, negated, coef, bound = zip(*self._linear)
                degree = np.concatenate([np.full(i.shape[0], i.shape[1]) for i in ids])
                lin = dict(
                    lin_var=np.concatenate([i.ravel() for i in ids]),
                    lin_offsets=np.concatenate(([0], np.cumsum(degree))),
                    lin_kind=np.concatenate([np.full(i.shape[0], k)
                                             for k, i in zip(kinds, ids)]),
                    lin_coef=np.concatenate([c.ravel() for c in coef]),
                    lin_bound=np.concatenate(bound),
                    lin_negated=np.concatenate([n.ravel() for n in negated]),
                )
            else:
                lin = {}
            orout = {}
            if self._orouts:
                sizes = [o.shape[0] for o in self._orouts]
                orout = dict(orout_var=np.concatenate(self._orouts),
                             orout_offsets=np.concatenate(([0], np.cumsum(sizes))))
            self._flat = FlatFactorGraph(self._n_vars, pair_var=self.pairs, **lin, **orout,
                                         structures=tuple(self._structures))
        return self._flat

    def feasible(self, y):
        """Which 0/1 configurations satisfy every factor's constraint.

        Parameters
        ----------
        y : array-like of shape (n, n_vars), 0/1

        Returns
        -------
        ndarray of shape (n,), bool
        """
        y = np.asarray(y, dtype=np.int64)
        ok = np.ones(y.shape[0], dtype=bool)
        for kind, ids, negated, coef, bound in self._linear:
            x = np.where(negated, 1 - y[:, ids], y[:, ids])  # (n, n_factors, degree)
            ok &= _linear_holds(kind, x, coef, bound).all(axis=1)
        for entries in self._orouts:
            ok &= y[:, entries[:-1]].max(axis=1) == y[:, entries[-1]]
        for factor in self._structures:
            ok &= factor.feasible(y[:, factor.var.reshape(-1)])
        return ok

    def extra_parts(self, y):
        """The structure factors' extra parts of 0/1 outputs (those of the decoder's
        output on each block), shape (n, n_extra)."""
        y = np.asarray(y, dtype=np.int64)
        parts = [factor.block_parts(y[:, factor.var.reshape(-1)])[1]
                 for factor in self._structures]
        return np.concatenate(parts, axis=1) if parts else np.zeros((y.shape[0], 0))

    def round(self, u):
        """Feasible 0/1 outputs from fractional variable values.

        Every variable is rounded at 1/2, and the factors the rounding broke are
        repaired, in passes over all the factors (linear factors in the order they were
        added, then structure factors, then OROut) until every factor holds: a broken
        XOR or OR turns on its input of largest value, a broken XOR, AtMostOne or BUDGET
        turns off its inputs of smallest value until it holds (an input is the variable
        or, negated, 1 − it), a broken KNAPSACK turns off its inputs in increasing order
        of value per cost, a broken structure factor takes its decoder's MAP at scores
        u − ½ on its block, and a broken OROut sets its output to the OR of its inputs
        or, when Σ_i (u_i − ½) y_i loses less that way, makes its inputs agree with the
        output (turns on the input of largest value, or turns off the inputs that are
        on). A variable that a repair changes takes its new value, pushed beyond 0 or 1,
        in place of u_i, so that later repairs prefer the variables no repair has set
        yet. Rows that hold after the rounding are left as they are.

        When factors share variables their repairs can undo each other. A row whose
        repairs reach no feasible output in 10 passes (``MAX_REPAIR_PASSES``) takes the
        feasible output closest to u instead (the largest Σ_i (u_i − ½) y_i, by
        enumerating :meth:`feasible_outputs`) on graphs of at most 16 variables
        (``MAX_ENUMERATED_VARS``). On larger graphs it is repaired again from u
        perturbed by Gaussian noise, up to 5 times (``PERTURBED_REPAIRS``, standard
        deviation ``PERTURBATION`` = 0.3, a fixed seed: the same u always gives the same
        output), and ``round`` raises when none of these repairs holds.

        Parameters
        ----------
        u : ndarray of shape (n, n_vars), values in [0, 1]

        Returns
        -------
        ndarray of shape (n, n_vars), int64
            Outputs that satisfy every factor (:meth:`feasible`).

        Raises
        ------
        InfeasibleOutputError
            When the graph has no feasible output, or when every repair of a row fails
            and the graph has more than 16 variables (``MAX_ENUMERATED_VARS``); its
            ``examples`` lists the rows.
        """
        return self._round_feasible(np.asarray(u, dtype=np.float64))

    def _round_feasible(self, u, scores=None, *, caller="FactorGraph.round",
                        example="row"):
        """:meth:`round`; with ``scores`` (unary, pair, extra), the rows the repairs
        leave broken take their feasible output of largest θ instead of the closest to
        u. ``caller`` and ``example`` name the operation and a row in the messages."""
        y, unrepaired = self._repair(u)
        if unrepaired.size == 0:
            return y
        if self._n_vars > MAX_ENUMERATED_VARS:
            unrepaired = self._repair_perturbed(u, y, unrepaired)
            if unrepaired.size:
                raise _unrepaired_error(unrepaired, self._n_vars, caller, example)
            return y
        if scores is None:
            y[unrepaired] = self.best_feasible_outputs(u[unrepaired] - 0.5)
        else:
            unary, pair, extra = scores
            y[unrepaired] = self.best_feasible_outputs(
                unary[unrepaired], pair[unrepaired], extra[unrepaired])
        return y

    def _repair(self, u):
        """Round ``u`` at 1/2 and repair the broken factors pass after pass (:meth:`round`).

        Returns
        -------
        y : ndarray of shape (n, n_vars), int64
        unrepaired : ndarray of int64
            The rows of ``y`` that still break a factor: their last pass changed
            nothing (no variable, no value), or ``MAX_REPAIR_PASSES`` passes did not
            repair them.
        """
        y = (u > 0.5).astype(np.int64)
        rows = np.flatnonzero(~self.feasible(y))
        if rows.size == 0:
            return y, rows
        labels, values = y[rows], u[rows]
        live = np.arange(rows.size)
        stuck = []
        for _ in range(MAX_REPAIR_PASSES):
            x, value = labels[live], values[live]
            value_before = value.copy()
            self._repair_pass(x, value)
            labels[live], values[live] = x, value
            broken = ~self.feasible(x)
            moved = np.any(value != value_before, axis=1)
            stuck.append(live[broken & ~moved])
            live = live[broken & moved]
            if live.size == 0:
                break
        y[rows] = labels
        return y, rows[np.sort(np.concatenate(stuck + [live]))]

    def _repair_perturbed(self, u, y, rows):
        """Repair rows ``rows`` again from ``u`` perturbed by Gaussian noise (a fixed
        seed), up to ``PERTURBED_REPAIRS`` times, writing the feasible repairs into
        ``y``; return the rows none of them repaired."""
        rng = np.random.default_rng(0)
        for _ in range(PERTURBED_REPAIRS):
            if rows.size == 0:
                break
            noise = rng.normal(scale=PERTURBATION, size=(rows.size, self._n_vars))
            again, broken = self._repair(np.clip(u[rows] + noise, 0.0, 1.0))
            repaired = np.ones(rows.size, dtype=bool)
            repaired[broken] = False
            y[rows[repaired]] = again[repaired]
            rows = rows[~repaired]
        return rows

    def _repair_pass(self, y, value):
        """One pass of the repairs over every factor, in place on the outputs ``y`` and
        the variables' values ``value`` (n, n_vars)."""
        for kind, ids, negated, coef, bound in self._linear:
            x = np.where(negated, 1 - y[:, ids], y[:, ids])           # (n, F, d)
            bad = np.flatnonzero(~_linear_holds(kind, x, coef, bound).all(axis=1))
            if bad.size:
                inputs = value[bad][:, ids]
                x = _repair_linear(kind, x[bad], np.where(negated, 1.0 - inputs, inputs),
                                   coef, bound)
                _commit(y, value, bad, ids.reshape(-1),
                        np.where(negated, 1 - x, x).reshape(bad.size, -1))
        for factor in self._structures:
            var = factor.var.reshape(-1)
            bad = np.flatnonzero(~factor.feasible(y[:, var]))
            if bad.size:
                q, _ = factor.map_parts(value[bad][:, var] - 0.5,
                                        np.zeros((bad.size, factor.n_extra)))
                _commit(y, value, bad, var, q.astype(np.int64))
        for entries in self._orouts:
            bad = np.flatnonzero(y[:, entries[:-1]].max(axis=1) != y[:, entries[-1]])
            if bad.size:
                _commit(y, value, bad, entries,
                        _repair_or_out(y[np.ix_(bad, entries)], value[np.ix_(bad, entries)]))

    def _changed(self):
        """Forget what was built from the structure (after a new block or factor)."""
        self._flat = None
        self._feasible_outputs = None

    def feasible_outputs(self):
        """Every 0/1 output that satisfies all the factors, by enumeration.

        Built once (rebuilt after a change to the graph), for graphs of at most
        16 variables (``MAX_ENUMERATED_VARS``).

        Returns
        -------
        ndarray of shape (n_feasible, n_vars), int64, read-only
            In increasing binary order, variable 0 the most significant bit.
        """
        # graphs pickled by an earlier version have no _feasible_outputs
        if getattr(self, "_feasible_outputs", None) is None:
            n_vars = self._n_vars
            if n_vars > MAX_ENUMERATED_VARS:
                raise ValueError(
                    f"feasible_outputs enumerates the 2 ** n_vars outputs of the graph and "
                    f"takes at most {MAX_ENUMERATED_VARS} variables; the graph has "
                    f"{n_vars}."
                )
            outputs = (np.arange(2 ** n_vars)[:, None] >> np.arange(n_vars)[::-1]) & 1
            outputs = outputs[self.feasible(outputs)]
            outputs.setflags(write=False)
            self._feasible_outputs = outputs
        return self._feasible_outputs

    def best_feasible_outputs(self, unary, pair=None, extra=None):
        """The exact MAP of every example, by enumerating :meth:`feasible_outputs`.

        θ_y = ⟨unary, y⟩ + Σ_k pair_k y_{a_k} y_{b_k} + ⟨extra, e(y)⟩, with e(y) the
        structure factors' extra parts (:meth:`extra_parts`); ties go to the first
        output in :meth:`feasible_outputs`' order. For graphs of at most 16 variables
        (``MAX_ENUMERATED_VARS``).

        Parameters
        ----------
        unary : ndarray of shape (n, n_vars)
        pair : ndarray of shape (n, n_pairs), default=None
            None scores every PAIR part 0.
        extra : ndarray of shape (n, n_extra), default=None
            None scores every extra part 0.

        Returns
        -------
        ndarray of shape (n, n_vars), int64

        Raises
        ------
        InfeasibleOutputError
            When no output satisfies all the factors together.
        """
        outputs = self.feasible_outputs()
        n = unary.shape[0]
        if outputs.shape[0] == 0:
            raise InfeasibleOutputError(
                "No feasible output: no 0/1 vector over the graph's variables satisfies "
                "all of its factors together (FactorGraph.feasible is False for each of "
                "them). Remove or loosen the factors that contradict each other.",
                np.arange(n),
            )
        parts = [(unary, outputs.astype(np.float64))]
        pairs = self.pairs
        if pair is not None and pairs.shape[0]:
            parts.append((pair, (outputs[:, pairs[:, 0]]
                                 * outputs[:, pairs[:, 1]]).astype(np.float64)))
        if extra is not None and self.n_extra:
            parts.append((extra, self.extra_parts(outputs)))
        best = np.empty(n, dtype=np.int64)
        chunk = max(1, ENUMERATED_SCORES_PER_CHUNK // outputs.shape[0])
        for start in range(0, n, chunk):
            rows = slice(start, start + chunk)
            theta = sum(scores[rows] @ indicators.T for scores, indicators in parts)
            best[rows] = np.argmax(theta, axis=1)
        return outputs[best]

    def __repr__(self):
        extra = f", n_extra={self.n_extra}" if self._structures else ""
        return (f"FactorGraph(n_vars={self.n_vars}, n_factors={self.n_factors}, "
                f"n_pairs={self.n_pairs}{extra})")
