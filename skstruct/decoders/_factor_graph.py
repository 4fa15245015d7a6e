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
own polytopes on the shared variables (:mod:`._admm`).
"""

from numbers import Integral, Real

import numpy as np

from . import _factor_linear_kernels as _lin

__all__ = ["FactorGraph", "Variables"]


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


def _repeated(row):
    values, counts = np.unique(row, return_counts=True)
    return int(values[np.argmax(counts > 1)])


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
        self._flat = None

    @classmethod
    def pairwise(cls, n_labels, pairs="all", *, at_least_one=False, max_labels=None):
        """The graph of a pairwise multilabel model: one variable per label, one PAIR
        factor per coupled pair of labels, and optional logic factors.

        Parameters
        ----------
        n_labels : int >= 1
        pairs : "all" or array-like of shape (n_pairs, 2), default="all"
            Every pair of labels (i < j, in row-major order), or the pairs to couple.
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
        shape = (shape,) if isinstance(shape, Integral) else tuple(shape)
        if not shape or not all(isinstance(s, Integral) and s >= 1 for s in shape):
            raise ValueError(
                f"shape must be a positive integer or a tuple of positive integers; got "
                f"{shape!r}."
            )
        size = int(np.prod(shape))
        ids = np.arange(self._n_vars, self._n_vars + size, dtype=np.int64).reshape(shape)
        self._n_vars += size
        self._flat = None
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
        self._flat = None
        return np.arange(start, start + rows[0].size, dtype=np.int64)

    def _add_linear(self, kind, variables, axis, name, bound=1.0, costs=None):
        ids, negated = _factor_rows(self, variables, axis, name)
        if costs is None:
            coef = np.ones(ids.shape)
        else:
            costs = np.asarray(costs, dtype=np.float64)
            if costs.shape != variables.shape:
                raise ValueError(
                    f"{name}: costs must have the shape of the variables, {variables.shape}; "
                    f"got {costs.shape}."
                )
            coef = (costs.reshape(1, -1) if axis is None or costs.ndim == 0
                    else np.moveaxis(costs, axis, -1).reshape(ids.shape))
            if not (np.all(np.isfinite(coef)) and np.all(coef > 0)):
                raise ValueError(f"{name}: costs must be finite and > 0.")
        bound = np.full(ids.shape[0], float(bound))
        _lin.check_linear_factors(np.zeros(ids.size), np.ones(ids.size),
                                  np.arange(0, ids.size + 1, ids.shape[1]),
                                  np.full(ids.shape[0], kind), coef.ravel(), bound,
                                  negated.ravel())
        self._linear.append((kind, ids, negated, coef, bound))
        self._flat = None

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
            raise ValueError(f"add_budget: budget must be an integer >= 0; got {budget!r}.")
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
        if not isinstance(budget, Real) or isinstance(budget, bool) or not budget >= 0:
            raise ValueError(f"add_knapsack: budget must be a number >= 0; got {budget!r}.")
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
        self._flat = None

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
        factor's local problems by the decoder's SparseMAP (:mod:`._factor_structure`).

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
        from ._factor_structure import StructureFactor, check_structure_block

        ids = check_structure_block(self, decoder, variables)
        start = self.n_extra
        factor = StructureFactor(decoder, ids, start)
        self._structures.append(factor)
        self._flat = None
        return np.arange(start, start + factor.n_extra, dtype=np.int64)

    # -- solver form ---------------------------------------------------------------

    def flat(self):
        """The graph in the solver's flat form, built once (rebuilt after a change).

        Returns
        -------
        FlatFactorGraph
        """
        if self._flat is None:
            from ._admm import FlatFactorGraph

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
            total = (x * coef).sum(axis=2)
            if kind == _lin.XOR:
                good = total == 1
            elif kind == _lin.OR:
                good = total >= 1
            else:
                good = total <= bound + 1e-9
            ok &= good.all(axis=1)
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
        """0/1 outputs from fractional variable values, repairing broken factors.

        Every variable is rounded at 1/2; then, factor by factor (linear factors in the order
        they were added, then structure factors, then OROut), a broken XOR or OR turns on its input of largest value, a broken XOR,
        AtMostOne or BUDGET turns off its inputs of smallest value until it holds (an
        input is the variable or, negated, 1 − it), a broken KNAPSACK turns off its
        inputs in increasing order of value per cost, a broken structure factor takes its
        decoder's MAP at scores u − ½ on its block, and a broken OROut sets its output
        to the OR of its inputs. When factors share variables a later repair can break an
        earlier factor; :meth:`feasible` tells.

        Parameters
        ----------
        u : ndarray of shape (n, n_vars), values in [0, 1]

        Returns
        -------
        ndarray of shape (n, n_vars), int64
        """
        u = np.asarray(u, dtype=np.float64)
        y = (u > 0.5).astype(np.int64)
        for kind, ids, negated, coef, bound in self._linear:
            value = np.where(negated, 1.0 - u[:, ids], u[:, ids])   # (n, F, d)
            x = np.where(negated, 1 - y[:, ids], y[:, ids])
            total = (x * coef).sum(axis=2)
            if kind in (_lin.XOR, _lin.OR):
                missing = total < 1
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
            y[:, ids] = np.where(negated, 1 - x, x)
        for factor in self._structures:
            var = factor.var.reshape(-1)
            bad = np.flatnonzero(~factor.feasible(y[:, var]))
            if bad.size:
                q, _ = factor.map_parts(u[bad][:, var] - 0.5,
                                        np.zeros((bad.size, factor.n_extra)))
                y[np.ix_(bad, var)] = q.astype(np.int64)
        for entries in self._orouts:
            y[:, entries[-1]] = y[:, entries[:-1]].max(axis=1)
        return y

    def __repr__(self):
        extra = f", n_extra={self.n_extra}" if self._structures else ""
        return (f"FactorGraph(n_vars={self.n_vars}, n_factors={self.n_factors}, "
                f"n_pairs={self.n_pairs}{extra})")
