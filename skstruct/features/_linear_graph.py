"""Linear part scores of pairwise graphs: node features × states and edge potentials."""

import numpy as np

from ..decoders import GraphScores
from ._base import FeatureMap
from ._sparse import matmul, transpose_matmul

__all__ = ["LinearGraphFeatures"]


class LinearGraphFeatures(FeatureMap):
    """Node scores X U and edge scores Σ_f φ_ef V_f of a batch of graphs.

    Node v of features x_v scores x_v U[:, s] in state s; edge e of edge features φ_e
    (a constant 1 for graphs given without edge features) scores
    Σ_f φ_ef V_f[a, b] with its first node in state a and its second in state b.
    w concatenates U (n_node_features, n_states) and V (n_edge_features, n_states,
    n_states), both row-major.

    Parameters
    ----------
    n_node_features, n_edge_features, n_states : int
    """

    def __init__(self, n_node_features, n_edge_features, n_states):
        self.n_node_features = int(n_node_features)
        self.n_edge_features = int(n_edge_features)
        self.n_states = int(n_states)

    @property
    def n_params(self):
        k = self.n_states
        return self.n_node_features * k + self.n_edge_features * k * k

    def pack(self, unary, pairwise):
        """w from U (n_node_features, n_states) and V (n_edge_features, n_states, n_states)."""
        return np.concatenate([np.ravel(unary), np.ravel(pairwise)]).astype(np.float64)

    def unpack(self, w):
        """Views U and V of w."""
        k, f = self.n_states, self.n_node_features
        w = np.asarray(w, dtype=np.float64)
        return w[:f * k].reshape(f, k), w[f * k:].reshape(self.n_edge_features, k, k)

    def _check(self, batch):
        if batch.edge_features.shape[1] != self.n_edge_features:
            raise ValueError(f"The graphs have {batch.edge_features.shape[1]} edge "
                             f"features; the model was built for {self.n_edge_features}.")

    def scores(self, batch, w):
        """:class:`~skstruct.decoders.GraphScores` of every graph of ``batch``."""
        self._check(batch)
        unary_w, pair_w = self.unpack(w)
        return self.scores_of_parts(batch, unary_w, pair_w)

    def scores_of_parts(self, batch, unary_w, pair_w):
        k = self.n_states
        unary = matmul(batch.X, np.ascontiguousarray(unary_w))
        pairwise = (batch.edge_features @ np.reshape(pair_w, (-1, k * k))).reshape(-1, k, k)
        return GraphScores(unary, batch.offsets, batch.edges, batch.edge_offsets, pairwise)

    def zero_scores(self, batch):
        k = self.n_states
        return GraphScores(np.zeros((batch.X.shape[0], k)), batch.offsets, batch.edges,
                           batch.edge_offsets, np.zeros((batch.edges.shape[0], k, k)))

    def transpose(self, batch, grad):
        """∇_w from gradients with respect to the part scores (a GraphParts): Xᵀ g_unary
        and Φᵀ g_pairwise."""
        k = self.n_states
        unary = transpose_matmul(batch.X, np.ascontiguousarray(grad.unary, dtype=np.float64))
        pairwise = batch.edge_features.T @ np.reshape(grad.pairwise, (-1, k * k))
        return np.concatenate([np.ravel(unary), np.ravel(pairwise)])

    def example_transpose(self, batch, grad):
        """:meth:`transpose` for a batch of one graph, as (indices, values): the rows of
        U of the node features present in the graph and every entry of V."""
        k = self.n_states
        X = batch.X
        pairwise = (batch.edge_features.T @ np.reshape(grad.pairwise, (-1, k * k))).ravel()
        pair_index = self.n_node_features * k + np.arange(pairwise.shape[0])
        if isinstance(X, np.ndarray):
            unary = (X.T @ grad.unary).ravel()
            return (np.concatenate([np.arange(unary.shape[0]), pair_index]),
                    np.concatenate([unary, pairwise]))
        columns = np.unique(X.indices).astype(np.int64)
        sub = X[:, columns]
        unary = np.asarray(sub.T @ grad.unary).ravel()
        unary_index = (columns[:, None] * k + np.arange(k)).ravel()
        return (np.concatenate([unary_index, pair_index]),
                np.concatenate([unary, pairwise]))
