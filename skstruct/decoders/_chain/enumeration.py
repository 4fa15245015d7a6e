"""The chain family's slow reference: every labeling of every chain."""

import itertools

import numpy as np
from scipy.special import logsumexp

from .._core.enumeration import ListedEnumeration, scores_of_indicators
from .decoder import ChainDecoder, ChainParts

__all__ = ['ChainEnumeration', 'chain_outputs']


def chain_outputs(scores, i):
    """All labelings of chain ``i`` with their part vectors, by enumeration.

    Returns
    -------
    outputs : ndarray of shape (n_outputs, length)
    unary : ndarray of shape (n_outputs, length, n_states)
    pairwise : ndarray of shape (n_outputs, n_states * n_states + 2 * n_states)
        Transition counts, first-state and last-state indicators.
    """
    a, b = scores.offsets[i], scores.offsets[i + 1]
    n_states = scores.n_states
    outputs = np.array(list(itertools.product(range(n_states), repeat=b - a)))
    eye = np.eye(n_states)
    unary = eye[outputs]
    pairwise = np.zeros((len(outputs), n_states * n_states + 2 * n_states))
    for row, y in enumerate(outputs):
        for prev, cur in zip(y[:-1], y[1:]):
            pairwise[row, prev * n_states + cur] += 1
        pairwise[row, n_states * n_states + y[0]] += 1
        pairwise[row, n_states * n_states + n_states + y[-1]] += 1
    return outputs, unary, pairwise


def chain_theta(scores, i, unary, pairwise):
    a, b = scores.offsets[i], scores.offsets[i + 1]
    eta_pair = np.concatenate((scores.transition.ravel(), scores.start, scores.end))
    n_outputs = unary.shape[0]
    return scores_of_indicators(np.concatenate((unary.reshape(n_outputs, -1), pairwise), axis=1),
                   np.concatenate((scores.unary[a:b].ravel(), eta_pair)))


class ChainEnumeration(ListedEnumeration):
    def size(self, scores):
        lengths = scores.lengths
        if lengths.size == 0:
            return None
        i = int(np.argmax(lengths))
        n = int(lengths[i])
        return (scores.n_states**n, i, f"labelings ({n} tokens, {scores.n_states} states)",
                "sequence")

    def labelings(self, scores):
        """(i, outputs, unary parts, pairwise parts, scores) of every sequence."""
        return self._examples(scores)

    def _examples(self, scores):
        for i in range(scores.n_sequences):
            outputs, unary, pairwise = chain_outputs(scores, i)
            yield i, outputs, unary, pairwise, chain_theta(scores, i, unary, pairwise)

    def _listed(self, scores):
        return ((i, outputs, theta) for i, outputs, _, _, theta in self._examples(scores))

    def marginals(self, scores):
        n_states = scores.n_states
        log_z, unary, pairwise = [], [], []
        for _, _, unary_parts, pair_parts, theta in self._examples(scores):
            lz = logsumexp(theta)
            p = np.exp(theta - lz)
            log_z.append(lz)
            unary.append(np.einsum("n,nts->ts", p, unary_parts))
            pairwise.append(p @ pair_parts)
        pairwise = np.array(pairwise)
        s2 = n_states * n_states
        parts = ChainParts(
            np.concatenate(unary),
            pairwise[:, :s2].reshape(-1, n_states, n_states),
            pairwise[:, s2 : s2 + n_states],
            pairwise[:, s2 + n_states :],
            scores.offsets,
        )
        return np.array(log_z), parts

    def parts(self, scores, y):
        n_states = scores.n_states
        y = np.asarray(y)
        unary = np.eye(n_states)[y]
        n_seq = scores.n_sequences
        transition = np.zeros((n_seq, n_states, n_states))
        start = np.zeros((n_seq, n_states))
        end = np.zeros((n_seq, n_states))
        for i in range(n_seq):
            seq = y[scores.offsets[i] : scores.offsets[i + 1]]
            for prev, cur in zip(seq[:-1], seq[1:]):
                transition[i, prev, cur] += 1
            start[i, seq[0]] = 1
            end[i, seq[-1]] = 1
        return ChainParts(unary, transition, start, end, scores.offsets)

    def family_decoder(self):
        return ChainDecoder()
