"""The slow reference of every family: inference by listing the outputs.

An :class:`Enumeration` answers every operation of one family on a batch of its
scores by enumerating each example's outputs; :class:`~skstruct.decoders.BruteForceDecoder`
checks the arguments and the feasibility of the answers. Families register theirs
(:class:`~skstruct.decoders._core.registry.DecoderFamily`).
"""

import numpy as np
from scipy.special import logsumexp

from .checks import check_feasible, check_slack_gold

__all__ = ['ArcFactoredEnumeration', 'Enumeration', 'ListedEnumeration', 'loss_augmented_best', 'loss_augmented_outputs', 'ranked', 'scores_of_indicators']


def scores_of_indicators(indicators, eta):
    """Scores of outputs from their part vectors: ``eta @ indicators.T``, where a part
    that is absent contributes 0 even when scored -inf.

    Parameters
    ----------
    indicators : ndarray of shape (n_outputs, n_parts)
    eta : ndarray of shape (n_parts,) or (n_examples, n_parts)

    Returns
    -------
    ndarray of shape (n_outputs,) or (n_examples, n_outputs)
    """
    finite = np.isfinite(eta)
    theta = np.where(finite, eta, 0.0) @ indicators.T
    if not finite.all():
        theta[(~finite).astype(np.float64) @ indicators.T > 0] = -np.inf
    return theta


def ranked(theta, k):
    """Indices of the (at most) ``k`` best outputs of finite score, best first."""
    order = np.argsort(-theta, kind="stable")[:k]
    return order[theta[order] > -np.inf]


def loss_augmented_best(outputs, theta, gold, task_loss, rescaling):
    """The output of finite score that maximizes the loss-augmented objective, the best
    finite score (-inf when there is none) and the score of ``gold``.

    ``outputs`` (n_outputs, ...) are scored as sequences of states against ``gold``.
    """
    tokens = outputs.reshape(len(outputs), -1)
    gold = np.reshape(gold, -1)
    offsets = np.arange(len(outputs) + 1) * tokens.shape[1]
    delta = task_loss(np.tile(gold, len(outputs)), tokens.ravel(), offsets)
    gold_theta = theta[np.flatnonzero((tokens == gold).all(axis=1))[0]]
    if rescaling == "margin":
        objective = theta + delta
    else:
        with np.errstate(invalid="ignore"):
            objective = delta * (1.0 + theta - gold_theta)
    objective = np.where(theta > -np.inf, objective, -np.inf)
    return outputs[np.argmax(objective)], theta.max(), gold_theta


def loss_augmented_outputs(found, rescaling):
    """The outputs of :func:`loss_augmented_best` per example, once all are known feasible
    (and, for slack rescaling, all gold outputs have a finite score)."""
    check_feasible(np.array([f[1] for f in found]))
    if rescaling != "margin":
        check_slack_gold(np.array([f[2] for f in found]))
    return [f[0] for f in found]


class Enumeration:
    """How :class:`BruteForceDecoder` enumerates the outputs of one score family.

    One subclass per family answers every operation on a batch of its scores; the
    decoder checks the arguments and the feasibility of the answers.
    """

    def __init__(self, decoder):
        self.decoder = decoder

    def size(self, scores):
        """(count, example, what, example name) of the example with the most outputs,
        or None for an empty batch."""
        raise NotImplementedError

    def labelings(self, scores):
        """Every labeling of every sequence with its parts and score, for tests: only
        the chain family lists them (a TypeError otherwise)."""
        raise TypeError(f"BruteForceDecoder does not know {type(scores).__name__}.")

    def stack(self, outputs):
        """The per-example outputs of a batch, stacked like the family's outputs."""
        return np.concatenate(outputs)


class ListedEnumeration(Enumeration):
    """The operations that read only each example's list of outputs and their scores:
    MAP, log-partition, top-k and loss-augmented MAP. A family lists them with
    :meth:`_listed`; outputs are rows of states (-1 for an absent part), stacked per
    example along ``scores.offsets``."""

    def _listed(self, scores):
        """Per example: ``(i, outputs (n_outputs, n_tokens_i), theta (n_outputs,))``."""
        raise NotImplementedError

    def map(self, scores):
        found = [(out[np.argmax(theta)], theta.max())
                 for _, out, theta in self._listed(scores)]
        return np.concatenate([f[0] for f in found]), np.array([f[1] for f in found])

    def log_partition(self, scores):
        return np.array([logsumexp(theta) for *_, theta in self._listed(scores)])

    def top_k(self, scores, k):
        offsets = scores.offsets
        paths = np.full((offsets[-1], k), -1, dtype=np.int64)
        top = np.full((len(offsets) - 1, k), -np.inf)
        for i, outputs, theta in self._listed(scores):
            order = ranked(theta, k)
            paths[offsets[i]:offsets[i + 1], :len(order)] = outputs[order].T
            top[i, :len(order)] = theta[order]
        return paths, top

    def loss_augmented(self, scores, y_true, task_loss, rescaling):
        offsets = scores.offsets
        return [loss_augmented_best(outputs, theta, y_true[offsets[i]:offsets[i + 1]],
                                    task_loss, rescaling)
                for i, outputs, theta in self._listed(scores)]


class ArcFactoredEnumeration(ListedEnumeration):
    """Trees and matchings: one block of pair scores per example; an output picks at
    most one pair per row."""

    def block_outputs(self, block):
        """Every output of an example with arc-score block ``block``."""
        raise NotImplementedError

    def parts_of(self, scores, unary):
        raise NotImplementedError

    def _examples(self, scores):
        """Per example: every output (n_outputs, n_tokens), its indicator rows
        (n_outputs, block size) and their scores."""
        flat = scores.unary
        for i in range(scores.n_examples):
            block = scores.block(i)
            outputs = self.block_outputs(block)
            indicators = np.zeros((outputs.shape[0],) + block.shape)
            rows = np.arange(outputs.shape[0])[:, None]
            tokens = np.arange(outputs.shape[1])[None, :]
            matched = outputs >= 0
            indicators[np.broadcast_to(rows, outputs.shape)[matched],
                       np.broadcast_to(tokens, outputs.shape)[matched], outputs[matched]] = 1
            indicators = indicators.reshape(outputs.shape[0], -1)
            a, b = scores.unary_offsets[i], scores.unary_offsets[i + 1]
            yield i, outputs, indicators, scores_of_indicators(indicators, flat[a:b])

    def _listed(self, scores):
        return ((i, outputs, theta) for i, outputs, _, theta in self._examples(scores))

    def marginals(self, scores):
        found = [(logsumexp(theta), np.exp(theta - logsumexp(theta)) @ ind)
                 for _, _, ind, theta in self._examples(scores)]
        unary = np.concatenate([f[1] for f in found])
        return np.array([f[0] for f in found]), self.parts_of(scores, unary)

    def parts(self, scores, y):
        unary = np.zeros_like(scores.unary)
        for i in range(scores.n_examples):
            a, b = scores.offsets[i], scores.offsets[i + 1]
            width = scores.block(i).shape[1]
            rows = np.flatnonzero(y[a:b] >= 0)
            unary[scores.unary_offsets[i] + rows * width + y[a:b][rows]] = 1.0
        return self.parts_of(scores, unary)
