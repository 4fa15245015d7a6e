"""Directed acyclic graphs: arc-factored graphs decoded by a :class:`DAGDecoder`."""

import numpy as np

from ..decoders import DAGDecoder, DAGScores
from ..features import LinearArcFeatures
from ..features._sparse import matmul
from ..metrics import token_accuracy
from ..utils._sequences import SequenceBatch, _as_sequence_list, _ranges, check_sequences
from ._base import PairScoredKind, split_blocks

__all__ = ["DAGBatch", "DAGKind", "LinearDAGFeatures", "check_dags"]


class DAGBatch(SequenceBatch):
    """Arc features of many graphs, stacked batch-first.

    Graph ``i`` of n_i nodes owns the n_i² rows ``offsets[i]:offsets[i + 1]``, parent-major:
    row ``p * n_i + c`` holds the features of the arc p -> c (the diagonal rows are never
    used). Its encoded output is its raveled 0/1 adjacency matrix, stacked like the rows
    (``output_offsets == offsets``), the layout of :class:`~skstruct.decoders.DAGScores`.

    Parameters
    ----------
    X : ndarray or scipy.sparse CSR matrix of shape (Σ_i n_i², n_features)
    offsets : ndarray of shape (n_graphs + 1,)
        Cumulative n_i² from 0.
    n_nodes : ndarray of shape (n_graphs,), int64
    """

    def __init__(self, X, offsets, n_nodes):
        super().__init__(X, offsets)
        self.n_nodes = np.ascontiguousarray(n_nodes, dtype=np.int64)

    def take(self, indices):
        """The sub-batch of the graphs at ``indices``, in that order."""
        indices = np.asarray(indices, dtype=np.int64)
        starts, stops = self.offsets[indices], self.offsets[indices + 1]
        return DAGBatch(self.X[_ranges(starts, stops)],
                        np.concatenate(([0], np.cumsum(stops - starts))),
                        self.n_nodes[indices])


def check_dags(X, y=None, *, n_features=None, estimator=None):
    """Validate DAG data and stack it batch-first.

    Parameters
    ----------
    X : list of array-like or sparse matrices of shape (n_i * n_i, n_features)
        Arc features of every graph, parent-major (row ``p * n_i + c``: the arc p -> c).
    y : list of array-like of shape (n_i, n_i) or (n_i * n_i,), default=None
        0/1 adjacency matrices (entry [p, c] = 1 for the arc p -> c) or their row-major
        ravels (the :class:`~skstruct.decoders.DAGDecoder` encoding). Acyclicity and the
        in-degree bound are the decoder's checks (``DAGDecoder.check_outputs``).
    n_features : int, default=None
        Expected number of features.
    estimator : str, default=None
        Name used in error messages.

    Returns
    -------
    batch : DAGBatch
    y_encoded : ndarray of shape (Σ_i n_i²,), int64, or None
        The raveled adjacency matrices, stacked.
    """
    where = f" in {estimator}" if estimator else ""
    batch, _ = check_sequences(X, n_features=n_features, estimator=estimator)
    rows = batch.lengths
    n_nodes = np.rint(np.sqrt(rows)).astype(np.int64)
    bad = np.flatnonzero(n_nodes * n_nodes != rows)
    if bad.size:
        raise ValueError(
            f"Graph {bad[0]} of X has {rows[bad[0]]} rows; a graph of n nodes needs n * n "
            f"arc rows (row p * n + c: the arc p -> c){where}."
        )
    dag_batch = DAGBatch(batch.X, batch.offsets, n_nodes)
    dag_batch.feature_names = batch.feature_names
    if y is None:
        return dag_batch, None
    graphs = [np.asarray(g) for g in _as_sequence_list(y, "y")]
    if len(graphs) != n_nodes.shape[0]:
        raise ValueError(f"X has {n_nodes.shape[0]} graphs but y has {len(graphs)}{where}.")
    flat = []
    for i, (graph, n) in enumerate(zip(graphs, n_nodes, strict=True)):
        if graph.shape not in ((n, n), (n * n,)):
            raise ValueError(
                f"Graph {i} has {n} nodes in X ({n * n} arc rows) but y[{i}] has shape "
                f"{graph.shape}; expected an ({n}, {n}) adjacency matrix or its ravel "
                f"({n * n},){where}."
            )
        if graph.size and not (np.issubdtype(graph.dtype, np.integer)
                               or np.issubdtype(graph.dtype, np.bool_)
                               or (np.issubdtype(graph.dtype, np.floating)
                                   and np.all(np.isin(graph, (0.0, 1.0))))):
            raise ValueError(f"y[{i}] must be a 0/1 adjacency matrix; got dtype "
                             f"{graph.dtype}{where}.")
        if np.any((graph != 0) & (graph != 1)):
            raise ValueError(f"y[{i}] must be a 0/1 adjacency matrix; it holds other "
                             f"values{where}.")
        flat.append(graph.reshape(-1).astype(np.int64))
    return dag_batch, np.concatenate(flat)


class LinearDAGFeatures(LinearArcFeatures):
    """Arc scores X @ w of DAGs, and the transposes (those of arc-factored trees).

    Graph ``i`` gets the (n_i, n_i) score matrix A_i[p, c] = x_{i,pc} · w, as
    :class:`~skstruct.decoders.DAGScores`.

    Parameters
    ----------
    n_features : int
    """

    def __init__(self, n_features, scores_type=DAGScores):
        super().__init__(n_features, scores_type)

    def scores(self, batch, w):
        """Arc scores of every graph of ``batch`` (a :class:`DAGBatch`)."""
        arcs = matmul(batch.X, np.asarray(w, dtype=np.float64)[:, None])[:, 0]
        return self.scores_type(np.ascontiguousarray(arcs), batch.n_nodes)

    def zero_scores(self, batch):
        """The arc scores at w = 0, without a product."""
        return self.scores_type(np.zeros(batch.X.shape[0]), batch.n_nodes)

    #: No compiled engine form: no compiled oracle decodes DAGs.
    compiled_features = None


def _off_diagonal(graphs):
    """Every graph's off-diagonal adjacency entries, raveled (for the arc score)."""
    out = []
    for graph in graphs:
        graph = np.asarray(graph)
        n = int(round(np.sqrt(graph.size)))
        if n * n != graph.size:
            raise ValueError(f"A graph must be an (n, n) adjacency matrix or its ravel; got "
                             f"shape {graph.shape}.")
        out.append(graph.reshape(n, n)[~np.eye(n, dtype=bool)])
    return out


class DAGKind(PairScoredKind):
    """Directed acyclic graphs with bounded in-degree.

    ``X`` is a list of (n_i * n_i, n_features) arc feature matrices, parent-major (row
    ``p * n_i + c`` for the arc p -> c; see :func:`check_dags`); ``y`` a list of 0/1
    (n_i, n_i) adjacency matrices (or their ravels). Chosen by the decoder (a
    :class:`~skstruct.decoders.DAGDecoder`, which checks that the gold graphs are acyclic
    and within its in-degree bound).

    Encoded outputs are the raveled adjacency matrices, stacked; there are no classes.
    Fitted attribute: ``coef_`` (n_features,), the arc p -> c scoring
    ``x_pc · coef_``. ``predict`` returns (n_i, n_i) int64 adjacency matrices;
    ``decision_function`` and marginals are one (n_i, n_i) matrix per graph. The default
    score is the fraction of ordered node pairs (p ≠ c) whose arc is predicted right
    (present or absent): 1 − the normalized Hamming distance, pooled over graphs.
    """

    name = "dag"
    form = ("X a list of (n * n, n_features) arc feature matrices, y a list of (n, n) 0/1 "
            "adjacency matrices")
    chosen_by_decoder = True
    example_noun = "graphs"

    def recognizes(self, X, y):
        if not isinstance(X, (list, tuple)) or not isinstance(y, (list, tuple)) or not X:
            return False
        if len(X) != len(y):
            return False
        for x, graph in zip(X, y):
            shape = getattr(graph, "shape", None) or np.shape(graph)
            rows = getattr(x, "shape", (None,))[0]
            if len(shape) != 2 or shape[0] != shape[1] or rows != shape[0] ** 2:
                return False
        return True

    def check_training_data(self, X, y, estimator):
        batch, y_encoded = check_dags(X, y, estimator=estimator)
        return batch, None, y_encoded

    def check_prediction_data(self, X, fitted):
        return check_dags(X, n_features=fitted.n_features_in_,
                          estimator=type(fitted).__name__)[0]

    def decode(self, encoded, batch, classes):
        blocks = np.split(np.asarray(encoded, dtype=np.int64), batch.offsets[1:-1])
        return [block.reshape(n, n) for block, n in zip(blocks, batch.n_nodes, strict=True)]

    def decode_one(self, encoded, classes):
        encoded = np.asarray(encoded, dtype=np.int64).reshape(-1)
        n = int(round(np.sqrt(encoded.size)))
        return encoded.reshape(n, n)

    def unary_to_user(self, unary, batch):
        return split_blocks(unary, batch.offsets, np.column_stack([batch.n_nodes] * 2))

    def default_decoder(self):
        return DAGDecoder()

    def feature_map(self, n_features, classes):
        return LinearDAGFeatures(n_features)

    def score(self, y, y_pred, sample_weight=None):
        y, y_pred = list(y), list(y_pred)
        if len(y) != len(y_pred):
            raise ValueError(f"y has {len(y)} graphs but y_pred has {len(y_pred)}.")
        return token_accuracy(_off_diagonal(y), _off_diagonal(y_pred),
                              sample_weight=sample_weight)
