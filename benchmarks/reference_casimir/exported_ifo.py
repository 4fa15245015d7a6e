"""An incremental first-order oracle of the casimir reference code over skstruct's features.

The reference's optimizers (``casimir.optim``: SVRG, Casimir-SVRG, BCFW) see the training
set through an "IFO" object with ``function_value``, ``gradient``, ``batch_*`` and, for
BCFW, ``linear_minimization_oracle``. :class:`ExportedChainIfo` is that object for a
first-order chain with skstruct's parametrization, so that both libraries minimize the
same objective on the same features:

    w = [W (n_features, S) row by row, transition (S, S), start (S,), end (S,)]

(the layout of :class:`skstruct.features.LinearChainFeatures`), the score of a tag
sequence y of sentence i is start[y_0] + Σ_t X_t W[:, y_t] + Σ_t transition[y_{t−1}, y_t]
+ end[y_T], the task loss is the Hamming count, and the ℓ2-smoothed hinge uses the top-K
outputs of the reference's own top-K Viterbi and the non-smooth hinge and BCFW its Viterbi
(``viterbi_decode_top_k_tables`` and ``viterbi_decode_tables``, added by ``casimir.patch``:
the reference's dynamic programs, tie-breaking included, with the part scores read from
tables) and the reference's simplex projection ``determine_weights_l2``. Its methods follow the
reference's ``NamedEntityRecognitionIfo`` line by line, with features from tables.
"""

import numpy as np
import scipy.sparse as sp

from casimir.data.named_entity_recognition import viterbi
from casimir.optim import SmoothedIncrementalFirstOrderOracle

__all__ = ["ExportedChainIfo"]


class ExportedChainIfo(SmoothedIncrementalFirstOrderOracle):
    """The structured hinge of a linear chain over exported token features.

    Parameters
    ----------
    X : sparse matrix of shape (n_tokens, n_features)
        Token features, sentences one after the other.
    offsets : ndarray of shape (n_sentences + 1,)
        Sentence i is rows ``offsets[i]:offsets[i + 1]``.
    y : ndarray of shape (n_tokens,), int
        Gold tags, encoded 0 .. n_states − 1.
    n_states : int
    smoothing_coefficient : float or None
        μ of the ℓ2 smoothing (None: the non-smooth hinge).
    num_highest_scores : int, default=5
        K of the top-K oracle.
    """

    def __init__(self, X, offsets, y, n_states, smoothing_coefficient=None,
                 num_highest_scores=5):
        super().__init__(smoothing_coefficient)
        X = sp.csr_matrix(X, dtype=np.float64)
        self.n_features = X.shape[1]
        self.n_states = int(n_states)
        self.num_highest_scores = int(num_highest_scores)
        s = self.n_states
        self.dim = self.n_features * s + s * s + 2 * s
        offsets = np.asarray(offsets, dtype=np.int64)
        y = np.asarray(y, dtype=np.int64)
        self.rows = [X[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]
        self.gold = [np.ascontiguousarray(y[offsets[i]:offsets[i + 1]])
                     for i in range(len(offsets) - 1)]
        self._entries = []
        for rows in self.rows:
            counts = np.diff(rows.indptr)
            self._entries.append((rows.indices.astype(np.int64), rows.data,
                                  np.repeat(np.arange(rows.shape[0]), counts)))

    def __len__(self):
        return len(self.rows)

    def _tables(self, model, idx):
        f, s = self.n_features, self.n_states
        cut = f * s
        W = model[:cut].reshape(f, s)
        transition = model[cut:cut + s * s].reshape(s, s)
        start = model[cut + s * s:cut + s * s + s]
        end = model[cut + s * s + s:]
        unary = np.ascontiguousarray(self.rows[idx] @ W)
        return unary, np.ascontiguousarray(transition), np.ascontiguousarray(start), \
            np.ascontiguousarray(end)

    def feature_vector(self, idx, seq):
        """φ(x_i, seq), dense of shape (dim,)."""
        f, s = self.n_features, self.n_states
        seq = np.asarray(seq, dtype=np.int64)
        indices, data, token = self._entries[idx]
        phi = np.bincount(indices * s + seq[token], weights=data, minlength=self.dim)
        cut = f * s
        np.add.at(phi, cut + seq[:-1] * s + seq[1:], 1.0)
        phi[cut + s * s + seq[0]] += 1.0
        phi[cut + s * s + s + seq[-1]] += 1.0
        return phi

    def _score(self, model, idx, seq):
        return float(model @ self.feature_vector(idx, seq))

    def _top_k(self, model, idx, k):
        return viterbi.viterbi_decode_top_k_tables(k, *self._tables(model, idx),
                                                   self.gold[idx], use_loss=True)

    def _viterbi(self, model, idx):
        return viterbi.viterbi_decode_tables(*self._tables(model, idx), self.gold[idx],
                                             use_loss=True)

    def function_value(self, model, idx):
        gold_cost = self._score(model, idx, self.gold[idx])
        if self.smoothing_coefficient is not None:
            best_scores, _ = self._top_k(model, idx, self.num_highest_scores)
            weights = viterbi.determine_weights_l2(self.smoothing_coefficient, best_scores)
            k = np.count_nonzero(weights)
            return np.asarray([best_scores[0] - gold_cost,
                               np.dot(best_scores[:k], weights[:k]) - gold_cost])
        best_score, _ = self._viterbi(model, idx)
        return best_score - gold_cost

    def gradient(self, model, idx):
        gold_features = self.feature_vector(idx, self.gold[idx])
        if self.smoothing_coefficient is not None:
            best_scores, best_seqs = self._top_k(model, idx, self.num_highest_scores)
            weights = viterbi.determine_weights_l2(self.smoothing_coefficient, best_scores)
            k = np.count_nonzero(weights)
            weighted_sum = sum(self.feature_vector(idx, best_seqs[j]) * weights[j]
                               for j in range(k))
            return weighted_sum - gold_features
        _, best_seq = self._viterbi(model, idx)
        return self.feature_vector(idx, best_seq) - gold_features

    def linear_minimization_oracle(self, model, idx):
        _, best = self._viterbi(model, idx)
        w_s = self.feature_vector(idx, self.gold[idx]) - self.feature_vector(idx, best)
        return w_s, float(np.sum(best != self.gold[idx]))

    def evaluation_function(self, model):
        return np.nan
