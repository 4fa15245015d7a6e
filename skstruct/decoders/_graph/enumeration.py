"""The graph family's slow reference: every labeling of every graph."""

import itertools

import numpy as np
from scipy.special import logsumexp

from .._core.enumeration import Enumeration, loss_augmented_best, ranked
from .decoder import GraphDecoder, GraphParts, graph_parts

__all__ = ["GraphEnumeration"]


class GraphEnumeration(Enumeration):
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

    def map(self, scores):
        found = [(out[np.argmax(theta)], theta.max())
                 for _, out, _, theta in self._examples(scores)]
        return np.concatenate([f[0] for f in found]), np.array([f[1] for f in found])

    def log_partition(self, scores):
        return np.array([logsumexp(theta) for *_, theta in self._examples(scores)])

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

    def top_k(self, scores, k):
        paths = np.full((scores.offsets[-1], k), -1, dtype=np.int64)
        top = np.full((scores.n_examples, k), -np.inf)
        for i, outputs, _, theta in self._examples(scores):
            order = ranked(theta, k)
            a, b = scores.offsets[i], scores.offsets[i + 1]
            paths[a:b, :len(order)] = outputs[order].T
            top[i, :len(order)] = theta[order]
        return paths, top

    def loss_augmented(self, scores, y_true, task_loss, rescaling):
        found = []
        for i, outputs, _, theta in self._examples(scores):
            a, b = scores.offsets[i], scores.offsets[i + 1]
            found.append(loss_augmented_best(outputs, theta, y_true[a:b], task_loss,
                                             rescaling))
        return found

    def parts(self, scores, y):
        return graph_parts(scores, y)

    def family_decoder(self):
        return GraphDecoder()
