"""The graph family's slow reference: every labeling of every graph."""

import itertools

import numpy as np
from scipy.special import logsumexp

from .._core.enumeration import ListedEnumeration
from .decoder import GraphDecoder, GraphParts, graph_parts

__all__ = ["GraphEnumeration"]


class GraphEnumeration(ListedEnumeration):
    """Lists the n_states ** n_i labelings of every graph (tiny graphs only)."""

    def size(self, scores):
        if scores.n_examples == 0:
            return None
        nodes = np.diff(scores.offsets)
        i = int(np.argmax(nodes))
        return (scores.n_states ** int(nodes[i]), i,
                f"labelings ({nodes[i]} nodes of {scores.n_states} states)", "graph")

    def _examples(self, scores):
        """Per graph: its labelings (n_labelings, n_i), their parts and their scores."""
        k = scores.n_states
        for i in range(scores.n_examples):
            one = scores.take([i])
            n = int(one.offsets[-1])
            outputs = np.array(list(itertools.product(range(k), repeat=n)),
                               dtype=np.int64).reshape(-1, n)
            many = one.take(np.zeros(len(outputs), dtype=np.int64))
            parts = graph_parts(many, outputs.reshape(-1))
            yield i, outputs, parts, parts.dot(many)

    def stack(self, outputs):
        return np.concatenate(outputs)

    def _listed(self, scores):
        return ((i, outputs, theta) for i, outputs, _, theta in self._examples(scores))

    def marginals(self, scores):
        log_z, unary, pairwise = [], [], []
        for _, out, parts, theta in self._examples(scores):
            z = logsumexp(theta)
            p = np.exp(theta - z)
            n, m = out.shape[1], parts.pairwise.shape[0] // len(out)
            k = scores.n_states
            log_z.append(z)
            unary.append(np.tensordot(p, parts.unary.reshape(len(out), n, k), axes=1))
            pairwise.append(np.tensordot(p, parts.pairwise.reshape(len(out), m, k, k),
                                         axes=1))
        return np.array(log_z), GraphParts(np.concatenate(unary),
                                           np.concatenate(pairwise), scores.offsets,
                                           scores.edge_offsets)

    def parts(self, scores, y):
        return graph_parts(scores, y)

    def family_decoder(self):
        return GraphDecoder()
