"""Graphs: one label per node of a pairwise graph given with every example."""

import numpy as np

from ..decoders import GraphDecoder
from ..features import LinearGraphFeatures
from ..metrics import token_accuracy
from ..utils._blocks import cumulative, gather_ranges
from ..utils._sequences import SequenceBatch, check_sequences
from ._base import LabelledRowsKind, check_task_loss_on_gold

__all__ = ["GraphBatch", "GraphFeatureCount", "GraphKind", "check_graphs"]


class GraphFeatureCount(int):
    """The number of features of graph data: node features plus edge features, an int
    that also says how it splits (``n_node_features``, ``n_edge_features``), so that a
    fitted model's ``n_features_in_`` rebuilds its feature map."""

    def __new__(cls, n_node_features, n_edge_features):
        count = super().__new__(cls, int(n_node_features) + int(n_edge_features))
        count.n_node_features = int(n_node_features)
        count.n_edge_features = int(n_edge_features)
        return count

    def __reduce__(self):
        return (GraphFeatureCount, (self.n_node_features, self.n_edge_features))

    def __repr__(self):
        return int.__repr__(self)


class GraphBatch(SequenceBatch):
    """Node features of many graphs stacked batch-first, with their edges.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_nodes, n_node_features)
    offsets : ndarray of shape (n_graphs + 1,)
    edges : ndarray of shape (n_edges, 2), int64
        Node pairs local to their graph.
    edge_offsets : ndarray of shape (n_graphs + 1,)
    edge_features : ndarray of shape (n_edges, n_edge_features)
    """

    def __init__(self, X, offsets, edges, edge_offsets, edge_features):
        super().__init__(X, offsets)
        self.edges = edges
        self.edge_offsets = edge_offsets
        self.edge_features = edge_features

    @property
    def n_features(self):
        return GraphFeatureCount(self.X.shape[1], self.edge_features.shape[1])

    def take(self, indices):
        indices = np.asarray(indices, dtype=np.int64)
        part = super().take(indices)
        n_edges = np.diff(self.edge_offsets)[indices]
        rows = gather_ranges(self.edge_offsets[indices], n_edges)
        batch = GraphBatch(part.X, part.offsets, self.edges[rows], cumulative(n_edges),
                           self.edge_features[rows])
        batch.feature_names = self.feature_names
        return batch


def _parts(x, i, where):
    if not isinstance(x, (tuple, list)) or len(x) not in (2, 3):
        raise ValueError(f"Graph {i} of X must be a (node_features, edges) pair or a "
                         f"(node_features, edges, edge_features) triple{where}.")
    return x


def check_graphs(X, y=None, *, n_features=None, estimator=None):
    """Validate graph data and stack it batch-first.

    Parameters
    ----------
    X : list of (node_features, edges) pairs or (node_features, edges, edge_features)
        triples
        ``node_features`` (n_nodes_i, n_node_features), dense or sparse; ``edges``
        (n_edges_i, 2) node indices of the graph (0 .. n_nodes_i - 1); ``edge_features``
        (n_edges_i, n_edge_features). Graphs given as pairs get one edge feature, a
        constant 1 (one pairwise potential shared by every edge). Either every graph has
        edge features or none has.
    y : list of array-like of shape (n_nodes_i,), default=None
        Node labels.
    n_features : GraphFeatureCount, default=None
        The fitted model's, at prediction.
    estimator : str, default=None

    Returns
    -------
    batch : GraphBatch
    y_flat : ndarray of shape (n_nodes,) or None
    """
    where = f" in {estimator}" if estimator else ""
    if not isinstance(X, (list, tuple)) or len(X) == 0:
        raise ValueError(f"X must be a non-empty list of graphs{where}.")
    X = [_parts(x, i, where) for i, x in enumerate(X)]
    sizes = {len(x) for x in X}
    if len(sizes) > 1:
        raise ValueError(f"Either every graph of X has edge features or none has{where}.")
    expected = None if n_features is None else n_features.n_node_features
    batch, y_flat = check_sequences([x[0] for x in X], y, n_features=expected,
                                    estimator=estimator)
    nodes = batch.lengths
    edges = []
    for i, x in enumerate(X):
        e = np.asarray(x[1])
        if e.size == 0:
            e = np.zeros((0, 2), dtype=np.int64)
        if e.ndim != 2 or e.shape[1] != 2 or not np.issubdtype(e.dtype, np.integer):
            raise ValueError(f"The edges of graph {i} must be an (n_edges, 2) integer "
                             f"array; got shape {e.shape} and dtype {e.dtype}{where}.")
        if e.size and (e.min() < 0 or e.max() >= nodes[i]):
            raise ValueError(f"Graph {i} has {nodes[i]} nodes but an edge joins nodes "
                             f"{e[np.argmax((e < 0).any(1) | (e >= nodes[i]).any(1))].tolist()}"
                             f"{where}.")
        if np.any(e[:, 0] == e[:, 1]):
            raise ValueError(f"Graph {i} has an edge from a node to itself{where}.")
        edges.append(e.astype(np.int64))
    counts = np.array([len(e) for e in edges], dtype=np.int64)
    if sizes == {3}:
        features = []
        for i, x in enumerate(X):
            f = np.asarray(x[2], dtype=np.float64)
            if f.ndim != 2 or f.shape[0] != counts[i]:
                raise ValueError(f"Graph {i} has {counts[i]} edges but edge features of "
                                 f"shape {f.shape}; expected ({counts[i]}, "
                                 f"n_edge_features){where}.")
            features.append(f)
        widths = {f.shape[1] for f in features}
        if len(widths) > 1:
            raise ValueError(f"The graphs have different numbers of edge features "
                             f"{sorted(widths)}{where}.")
        edge_features = np.concatenate(features)
        if not np.all(np.isfinite(edge_features)):
            raise ValueError(f"Edge features must be finite{where}.")
    else:
        edge_features = np.ones((int(counts.sum()), 1))
    if n_features is not None and edge_features.shape[1] != n_features.n_edge_features:
        raise ValueError(f"X has {edge_features.shape[1]} edge features, but "
                         f"{estimator or 'the model'} was fitted with "
                         f"{n_features.n_edge_features}.")
    graph_batch = GraphBatch(batch.X, batch.offsets, np.concatenate(edges).reshape(-1, 2),
                             cumulative(counts), np.ascontiguousarray(edge_features))
    graph_batch.feature_names = batch.feature_names
    return graph_batch, y_flat


def is_graph_input(X):
    """True when ``X`` is a list of (node_features, edges[, edge_features]) tuples."""
    if not isinstance(X, (list, tuple)) or len(X) == 0:
        return False
    for x in X:
        if not isinstance(x, (tuple, list)) or len(x) not in (2, 3):
            return False
        try:
            if np.ndim(x[0]) != 2 and not hasattr(x[0], "tocsr"):
                return False
            shape = np.shape(x[1])
        except ValueError:
            return False
        if len(shape) != 2 or shape[1] != 2:
            return False
    return True


class GraphKind(LabelledRowsKind):
    """Node labels of pairwise graphs: ``X`` a list of (node_features, edges) pairs or
    (node_features, edges, edge_features) triples, ``y`` a list of label arrays, one
    label per node; decoded by a :class:`~skstruct.decoders.GraphDecoder`.

    Encoded outputs are class indices of every node, stacked. The model scores node v in
    state s by x_v · ``coef_[s]`` and edge e = (a, b) with its nodes in states (s, t) by
    Σ_f φ_ef ``edge_coef_[f, s, t]``, with φ_e the edge's features (a constant 1 for
    graphs given as pairs). Edges are directed: (a, b) and (b, a) score the transposed
    matrices; for symmetric potentials list both orientations (their scores add up).
    Fitted attributes: ``coef_`` (n_classes, n_node_features) and ``edge_coef_``
    (n_edge_features, n_classes, n_classes). ``n_features_in_`` is the number of node
    features plus the number of edge features. The default score is node accuracy.
    """

    name = "graph"
    form = ("X a list of (node_features, edges) or (node_features, edges, edge_features) "
            "tuples, y a list of node label arrays")
    example_noun = "graphs"

    def recognizes(self, X, y):
        return is_graph_input(X)

    def read_labels(self, X, y, estimator):
        return check_graphs(X, y, estimator=estimator)

    def check_prediction_data(self, X, fitted):
        return check_graphs(X, n_features=fitted.n_features_in_,
                            estimator=type(fitted).__name__)[0]

    def default_decoder(self):
        return GraphDecoder()

    def feature_map(self, n_features, classes):
        return LinearGraphFeatures(n_features.n_node_features, n_features.n_edge_features,
                                   len(classes))

    def store_coefficients(self, fitted, features, w):
        unary, pairwise = features.unpack(w)
        fitted.coef_ = np.ascontiguousarray(unary.T)
        fitted.edge_coef_ = pairwise.copy()

    def coefficients(self, fitted, features):
        return features.pack(*self.coefficient_parts(fitted))

    def coefficient_parts(self, fitted):
        return fitted.coef_.T, fitted.edge_coef_

    def check_task_loss(self, task_loss, y, batch, classes):
        check_task_loss_on_gold(task_loss, y, batch.offsets, len(classes))

    def score(self, y, y_pred, sample_weight=None):
        return token_accuracy(y, y_pred, sample_weight=sample_weight)
