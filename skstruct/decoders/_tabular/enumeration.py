"""The slow reference of one class per example and of independent labels."""

import itertools

import numpy as np
from scipy.special import logsumexp

from .._core.enumeration import Enumeration, loss_augmented_best, ranked, scores_of_indicators
from .multiclass import MulticlassDecoder, MulticlassParts
from .multilabel import MultilabelDecoder, MultilabelParts

__all__ = ['MulticlassEnumeration', 'MultilabelEnumeration']


class IndependentEnumeration(Enumeration):
    """Multiclass and multilabel outputs: every example has the same outputs, whose
    part vectors are the rows of one indicator matrix."""

    parts_type = None

    def outputs(self, scores):
        """Every output of one example, shape (n_outputs,) or (n_outputs, n_labels), and
        the indicator matrix (n_outputs, n_columns) of their part vectors."""
        raise NotImplementedError

    def _theta(self, scores):
        outputs, indicators = self.outputs(scores)
        return outputs, indicators, scores_of_indicators(indicators, scores.unary)

    def stack(self, outputs):
        return np.array(outputs)

    def map(self, scores):
        outputs, _, theta = self._theta(scores)
        return outputs[theta.argmax(axis=1)], theta.max(axis=1)

    def log_partition(self, scores):
        return logsumexp(self._theta(scores)[2], axis=1)

    def marginals(self, scores):
        _, indicators, theta = self._theta(scores)
        log_z = logsumexp(theta, axis=1)
        return log_z, self.parts_type(np.exp(theta - log_z[:, None]) @ indicators)

    def top_k(self, scores, k):
        outputs, _, theta = self._theta(scores)
        paths = np.full((scores.n_examples,) + outputs.shape[1:] + (k,), -1, dtype=np.int64)
        top = np.full((scores.n_examples, k), -np.inf)
        for i in range(scores.n_examples):
            order = ranked(theta[i], k)
            paths[i, ..., : len(order)] = np.moveaxis(outputs[order], 0, -1)
            top[i, : len(order)] = theta[i, order]
        return paths, top

    def _bound(self, task_loss):
        return task_loss

    def loss_augmented(self, scores, y_true, task_loss, rescaling):
        """Each output is scored as a sequence of states: one class, or n_labels bits."""
        outputs, _, thetas = self._theta(scores)
        task_loss = self._bound(task_loss)
        return [loss_augmented_best(outputs, theta, y_true[i], task_loss, rescaling)
                for i, theta in enumerate(thetas)]


class MulticlassEnumeration(IndependentEnumeration):
    parts_type = MulticlassParts

    def size(self, scores):
        return scores.n_states, 0, f"{scores.n_states} classes", "example"

    def outputs(self, scores):
        return np.arange(scores.n_states), np.eye(scores.n_states)

    def parts(self, scores, y):
        return MulticlassParts(np.eye(scores.n_states)[np.asarray(y)])

    def family_decoder(self):
        return MulticlassDecoder()


class MultilabelEnumeration(IndependentEnumeration):
    parts_type = MultilabelParts

    def size(self, scores):
        return (2**scores.n_labels, 0, f"2^{scores.n_labels} 0/1 vectors of its labels",
                "example")

    def outputs(self, scores):
        outputs = np.array(list(itertools.product((0, 1), repeat=scores.n_labels)))
        return outputs, outputs.astype(np.float64)

    def _bound(self, task_loss):
        # a label that is on is a positive, whatever a count-statistic loss is bound to
        if task_loss.decomposition == "counts":
            return task_loss.with_positive_states([False, True])
        return task_loss

    def parts(self, scores, y):
        return MultilabelParts(np.asarray(y, dtype=np.float64))

    def family_decoder(self):
        return MultilabelDecoder()
