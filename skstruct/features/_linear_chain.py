"""The linear feature map of first-order chains."""

import numpy as np
import scipy.sparse as sp

from ..decoders._chain.decoder import ChainScores
from ._base import FeatureMap
from ._chain_crf import ChainCRFObjective
from ._compiled import compiled_rows
from ._sparse import matmul, transpose_matmul

__all__ = ["LinearChainFeatures"]


class LinearChainFeatures(FeatureMap):
    """Part scores of a linear-chain model, and the transpose of the map.

    The parameter vector w concatenates the unary weights W (n_features, n_states), the
    transition scores (n_states, n_states), and the start and end scores (n_states,). The
    unary scores of the tokens are X @ W; the pairwise scores are parameters themselves.

    With ``pairs``, only the (feature, label) pairs it marks are parameters: the unary part
    of w holds W[f, k] for the marked pairs, feature by feature and by increasing label
    (W's row-major order with the other entries left out), and the other entries of W are
    zero. :meth:`unpack` and :meth:`pack` convert to and from the whole W.

    Parameters
    ----------
    n_features : int
    n_states : int
    pairs : ndarray of bool of shape (n_features, n_states), default=None
        The (feature, label) pairs that have a weight; None: all.

    Attributes
    ----------
    pair_offsets : ndarray of shape (n_features + 1,), int64, or None
        With ``pairs``: feature ``f``'s weights are ``w[pair_offsets[f]:pair_offsets[f + 1]]``.
    pair_labels : ndarray of shape (n_pairs,), int64, or None
        With ``pairs``: the label of each of those weights.
    """

    def __init__(self, n_features, n_states, pairs=None):
        self.n_features = int(n_features)
        self.n_states = int(n_states)
        self.pairs = pairs
        if pairs is None:
            self.pair_offsets = self.pair_labels = self._pair_positions = None
            self.n_unary = self.n_features * self.n_states
            return
        pairs = np.asarray(pairs, dtype=bool)
        if pairs.shape != (self.n_features, self.n_states):
            raise ValueError(f"pairs has shape {pairs.shape}; expected "
                             f"({self.n_features}, {self.n_states}).")
        self.pairs = pairs
        self._pair_positions = np.flatnonzero(pairs)
        self.pair_labels = self._pair_positions % self.n_states
        self.pair_offsets = np.concatenate(([0], np.cumsum(pairs.sum(axis=1)))).astype(np.int64)
        self.n_unary = int(self._pair_positions.shape[0])

    def restricted(self, pairs):
        """The same map with only the (feature, label) ``pairs`` as unary parameters."""
        return LinearChainFeatures(self.n_features, self.n_states, pairs)

    @property
    def n_params(self):
        """Length of the parameter vector w."""
        s = self.n_states
        return self.n_unary + s * s + 2 * s

    def unpack(self, w):
        """(W (n_features, n_states), transition, start, end) from ``w``: views of it,
        but W is a new array with ``pairs``."""
        f, s = self.n_features, self.n_states
        cut = np.cumsum([self.n_unary, s * s, s])
        unary, transition, start, end = np.split(w, cut)
        if self.pairs is not None:
            dense = np.zeros(f * s, dtype=np.result_type(w.dtype, np.float64))
            dense[self._pair_positions] = unary
            unary = dense
        return unary.reshape(f, s), transition.reshape(s, s), start, end

    def pack(self, unary, transition, start, end):
        """The inverse of :meth:`unpack` (with ``pairs``: W's other entries are dropped)."""
        unary = np.ravel(unary)
        if self.pairs is not None:
            unary = unary[self._pair_positions]
        return np.concatenate(
            [unary, np.ravel(transition), np.ravel(start), np.ravel(end)]
        )

    def scores(self, batch, w):
        """Part scores of every sequence of ``batch``.

        Parameters
        ----------
        batch : SequenceBatch
        w : ndarray of shape (n_params,)

        Returns
        -------
        ChainScores
        """
        unary, transition, start, end = self.unpack(w)
        return ChainScores(matmul(batch.X, unary), batch.offsets, transition, start, end)

    def scores_of_parts(self, batch, unary, transition, start, end):
        """:meth:`scores` from the parts :meth:`unpack` gives (a fitted model's
        ``coef_.T``, ``transition_``, ...), without forming w: O(S²) work beside the
        product, where forming w copies W.

        Returns
        -------
        ChainScores or None
            None with ``pairs`` (W's entries outside the pairs do not count), when a
            part is not a float64 array of its shape in :meth:`unpack`, or for a
            subclass that computes :meth:`scores` its own way. The scores hold copies of
            the pair parts, so nothing written into them reaches the parts.
        """
        s = self.n_states
        if (self.pairs is not None or type(self).scores is not LinearChainFeatures.scores
                or not _float_parts(
                (unary, (self.n_features, s)), (transition, (s, s)), (start, (s,)),
                (end, (s,)))):
            return None
        return ChainScores(matmul(batch.X, unary), batch.offsets, transition.copy(),
                           start.copy(), end.copy())

    def zero_scores(self, batch):
        """The part scores at w = 0 (zeros of the right shapes), without a product."""
        s = self.n_states
        return ChainScores(np.zeros((batch.X.shape[0], s)), batch.offsets, np.zeros((s, s)),
                           np.zeros(s), np.zeros(s))

    def compiled_features(self, batch):
        """The map as arrays for the compiled engine: one row per token, K = n_states,
        no bias, S² + 2S pair parameters (transition, start, end).

        The layout of all pairs; with ``pairs`` it has more parameters than this map
        (unless every pair is kept, when the two layouts coincide), and the engine, which
        compares ``n_params``, does not use it.

        Returns
        -------
        CompiledFeatures
        """
        s = self.n_states
        return compiled_rows(batch.X, batch.offsets, self.n_features, s, False, s * s + 2 * s)

    def compiled_objective(self, batch, y, decoder, loss, weights):
        """The CRF objective of ``batch`` in two compiled passes, when it is exactly what
        ``loss`` and ``decoder`` compute: the loss is the plain CRF log-likelihood (its
        ``is_log_likelihood``), the decoder offers the rescaled chain forward-backward
        (its ``fused_crf_constraints``, which gives the constraints it applies), and the
        token features are sparse.

        Parameters
        ----------
        batch : SequenceBatch
        y : ndarray of shape (n_tokens,), int
            Encoded gold labels.
        decoder : Decoder
        loss : TrainingLoss
        weights : ndarray of shape (n_sequences,)
            Normalized example weights.

        Returns
        -------
        ChainCRFObjective or None
            None when the generic evaluation is needed.
        """
        if not (getattr(loss, "is_log_likelihood", False) and sp.issparse(batch.X)):
            return None
        offer = getattr(decoder, "fused_crf_constraints", None)
        allowed = NotImplemented if offer is None else offer(self.n_states)
        if allowed is NotImplemented:
            return None
        pairs = None if self.pairs is None else (self.pair_offsets, self.pair_labels)
        return ChainCRFObjective(batch.X, batch.offsets, y, self.n_states, weights, pairs,
                                 allowed)

    def transpose(self, batch, grad):
        """Gradient with respect to w from a gradient with respect to the part scores.

        Parameters
        ----------
        batch : SequenceBatch
        grad : ChainParts
            Per-example gradients with respect to the part scores.

        Returns
        -------
        ndarray of shape (n_params,)
        """
        return self.pack(
            transpose_matmul(batch.X, grad.unary),
            grad.transition.sum(axis=0),
            grad.start.sum(axis=0),
            grad.end.sum(axis=0),
        )

    def example_transpose(self, batch, grad):
        """Sparse gradient with respect to w for a batch of one sequence.

        Only the unary weights of the features present in the sequence, and the pairwise
        parameters, can be nonzero.

        Parameters
        ----------
        batch : SequenceBatch
            One sequence.
        grad : ChainParts
            Its gradient with respect to the part scores.

        Returns
        -------
        indices : ndarray of shape (n_touched,), int64
            Positions in w, without repetition.
        values : ndarray of shape (n_touched,)
        """
        columns, local = _present_columns(batch.X)
        unary = local.T @ grad.unary
        s = self.n_states
        base = self.n_unary
        if self.pairs is None:
            unary_indices = (columns[:, None] * s + np.arange(s)).ravel()
            unary_values = unary.ravel()
        else:
            kept = self.pairs[columns]  # (n_present, n_states)
            unary_values = unary[kept]
            # positions in w of the kept pairs of the present features, in the same order
            unary_indices = (np.repeat(self.pair_offsets[columns], kept.sum(axis=1))
                             + (np.cumsum(kept, axis=1) - 1)[kept])
        indices = np.concatenate([unary_indices, base + np.arange(s * s + 2 * s)])
        values = np.concatenate(
            [unary_values, grad.transition.sum(axis=0).ravel(), grad.start.sum(axis=0),
             grad.end.sum(axis=0)]
        )
        return indices, values


def _present_columns(X):
    """The columns with a nonzero entry, and X restricted to them as a dense array."""
    if sp.issparse(X):
        columns = np.unique(X.indices).astype(np.int64)
        return columns, X[:, columns].toarray()
    return np.arange(X.shape[1]), np.asarray(X)


def _float_parts(*parts):
    """Whether every ``(array, shape)`` pair is a float64 ndarray of that shape."""
    return all(isinstance(part, np.ndarray) and part.dtype == np.float64
               and part.shape == shape for part, shape in parts)
