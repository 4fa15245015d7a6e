"""Inference by enumeration: the reference every decoder is tested against."""

import itertools
import math
from numbers import Integral

import numpy as np
from scipy.special import logsumexp
from sklearn.utils._param_validation import Interval

from ._base import Decoder, check_feasible, check_k, check_slack_gold, check_task_loss_argument
from ._chain import ChainDecoder, ChainParts, ChainScores
from ._matching import MatchingDecoder, MatchingParts, MatchingScores, enumerate_matchings
from ._multiclass import MulticlassDecoder, MulticlassParts, MulticlassScores
from ._multilabel import MultilabelDecoder, MultilabelParts, MultilabelScores
from ._tree import TreeDecoder, TreeParts, TreeScores, enumerate_trees

__all__ = ["BruteForceDecoder"]

def _chain_outputs(scores, i):
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


def _scores(indicators, eta):
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


def _chain_theta(scores, i, unary, pairwise):
    a, b = scores.offsets[i], scores.offsets[i + 1]
    eta_pair = np.concatenate((scores.transition.ravel(), scores.start, scores.end))
    n_outputs = unary.shape[0]
    return _scores(np.concatenate((unary.reshape(n_outputs, -1), pairwise), axis=1),
                   np.concatenate((scores.unary[a:b].ravel(), eta_pair)))


def _ranked(theta, k):
    """Indices of the (at most) ``k`` best outputs of finite score, best first."""
    order = np.argsort(-theta, kind="stable")[:k]
    return order[theta[order] > -np.inf]


def _loss_augmented(outputs, theta, gold, task_loss, rescaling):
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


def _loss_augmented_outputs(found, rescaling):
    """The outputs of :func:`_loss_augmented` per example, once all are known feasible
    (and, for slack rescaling, all gold outputs have a finite score)."""
    check_feasible(np.array([f[1] for f in found]))
    if rescaling != "margin":
        check_slack_gold(np.array([f[2] for f in found]))
    return [f[0] for f in found]


class _Enumeration:
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

    def stack(self, outputs):
        """The per-example outputs of a batch, stacked like the family's outputs."""
        return np.concatenate(outputs)


class _ChainEnumeration(_Enumeration):
    def size(self, scores):
        lengths = scores.lengths
        if lengths.size == 0:
            return None
        i = int(np.argmax(lengths))
        n = int(lengths[i])
        return (scores.n_states**n, i, f"labelings ({n} tokens, {scores.n_states} states)",
                "sequence")

    def _examples(self, scores):
        for i in range(scores.n_sequences):
            outputs, unary, pairwise = _chain_outputs(scores, i)
            yield i, outputs, unary, pairwise, _chain_theta(scores, i, unary, pairwise)

    def map(self, scores):
        labels, best = [], []
        for _, outputs, _, _, theta in self._examples(scores):
            labels.append(outputs[np.argmax(theta)])
            best.append(theta.max())
        return np.concatenate(labels), np.array(best)

    def log_partition(self, scores):
        return np.array([logsumexp(theta) for *_, theta in self._examples(scores)])

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

    def top_k(self, scores, k):
        paths = np.full((scores.unary.shape[0], k), -1, dtype=np.int64)
        top = np.full((scores.n_sequences, k), -np.inf)
        for i, outputs, _, _, theta in self._examples(scores):
            order = _ranked(theta, k)
            a, b = scores.offsets[i], scores.offsets[i + 1]
            paths[a:b, : len(order)] = outputs[order].T
            top[i, : len(order)] = theta[order]
        return paths, top

    def loss_augmented(self, scores, y_true, task_loss, rescaling):
        return [
            _loss_augmented(outputs, theta, y_true[scores.offsets[i]:scores.offsets[i + 1]],
                            task_loss, rescaling)
            for i, outputs, _, _, theta in self._examples(scores)
        ]

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


class _IndependentEnumeration(_Enumeration):
    """Multiclass and multilabel outputs: every example has the same outputs, whose
    part vectors are the rows of one indicator matrix."""

    parts_type = None

    def outputs(self, scores):
        """Every output of one example, shape (n_outputs,) or (n_outputs, n_labels), and
        the indicator matrix (n_outputs, n_columns) of their part vectors."""
        raise NotImplementedError

    def _theta(self, scores):
        outputs, indicators = self.outputs(scores)
        return outputs, indicators, _scores(indicators, scores.unary)

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
            order = _ranked(theta[i], k)
            paths[i, ..., : len(order)] = np.moveaxis(outputs[order], 0, -1)
            top[i, : len(order)] = theta[i, order]
        return paths, top

    def _bound(self, task_loss):
        return task_loss

    def loss_augmented(self, scores, y_true, task_loss, rescaling):
        """Each output is scored as a sequence of states: one class, or n_labels bits."""
        outputs, _, thetas = self._theta(scores)
        task_loss = self._bound(task_loss)
        return [_loss_augmented(outputs, theta, y_true[i], task_loss, rescaling)
                for i, theta in enumerate(thetas)]


class _MulticlassEnumeration(_IndependentEnumeration):
    parts_type = MulticlassParts

    def size(self, scores):
        return scores.n_states, 0, f"{scores.n_states} classes", "example"

    def outputs(self, scores):
        return np.arange(scores.n_states), np.eye(scores.n_states)

    def parts(self, scores, y):
        return MulticlassParts(np.eye(scores.n_states)[np.asarray(y)])

    def family_decoder(self):
        return MulticlassDecoder()


class _MultilabelEnumeration(_IndependentEnumeration):
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


class _ArcFactoredEnumeration(_Enumeration):
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
            yield i, outputs, indicators, _scores(indicators, flat[a:b])

    def map(self, scores):
        found = [(out[np.argmax(theta)], theta.max())
                 for _, out, _, theta in self._examples(scores)]
        return np.concatenate([f[0] for f in found]), np.array([f[1] for f in found])

    def log_partition(self, scores):
        return np.array([logsumexp(theta) for *_, theta in self._examples(scores)])

    def marginals(self, scores):
        found = [(logsumexp(theta), np.exp(theta - logsumexp(theta)) @ ind)
                 for _, _, ind, theta in self._examples(scores)]
        unary = np.concatenate([f[1] for f in found])
        return np.array([f[0] for f in found]), self.parts_of(scores, unary)

    def top_k(self, scores, k):
        paths = np.full((scores.offsets[-1], k), -1, dtype=np.int64)
        top = np.full((scores.n_examples, k), -np.inf)
        for i, outputs, _, theta in self._examples(scores):
            order = _ranked(theta, k)
            a, b = scores.offsets[i], scores.offsets[i + 1]
            paths[a:b, : len(order)] = outputs[order].T
            top[i, : len(order)] = theta[order]
        return paths, top

    def loss_augmented(self, scores, y_true, task_loss, rescaling):
        found = []
        for i, outputs, _, theta in self._examples(scores):
            a, b = scores.offsets[i], scores.offsets[i + 1]
            found.append(_loss_augmented(outputs, theta, y_true[a:b], task_loss, rescaling))
        return found

    def parts(self, scores, y):
        unary = np.zeros_like(scores.unary)
        for i in range(scores.n_examples):
            a, b = scores.offsets[i], scores.offsets[i + 1]
            width = scores.block(i).shape[1]
            rows = np.flatnonzero(y[a:b] >= 0)
            unary[scores.unary_offsets[i] + rows * width + y[a:b][rows]] = 1.0
        return self.parts_of(scores, unary)


class _TreeEnumeration(_ArcFactoredEnumeration):
    def size(self, scores):
        lengths = scores.lengths
        if lengths.size == 0:
            return None
        i = int(np.argmax(lengths))
        n = int(lengths[i])
        return n**n, i, f"head assignments to sift ({n} words)", "sentence"

    def block_outputs(self, block):
        return enumerate_trees(block.shape[0], self.decoder.projective,
                               self.decoder.single_root)

    def parts_of(self, scores, unary):
        return TreeParts(unary, scores.offsets)

    def family_decoder(self):
        return TreeDecoder(projective=self.decoder.projective,
                           single_root=self.decoder.single_root)


class _MatchingEnumeration(_ArcFactoredEnumeration):
    def size(self, scores):
        counts = [math.perm(int(max(r, c)), int(min(r, c))) for r, c in scores.shapes]
        if not counts:
            return None
        i = int(np.argmax(counts))
        shape = tuple(int(n) for n in scores.shapes[i])
        return counts[i], i, f"matchings (shape {shape})", "example"

    def block_outputs(self, block):
        return enumerate_matchings(*block.shape)

    def parts_of(self, scores, unary):
        return MatchingParts(unary, scores.shapes)

    def family_decoder(self):
        return MatchingDecoder()


#: The enumeration of every score family BruteForceDecoder reads.
_ENUMERATIONS = (
    (ChainScores, _ChainEnumeration),
    (MulticlassScores, _MulticlassEnumeration),
    (MultilabelScores, _MultilabelEnumeration),
    (TreeScores, _TreeEnumeration),
    (MatchingScores, _MatchingEnumeration),
)


class BruteForceDecoder(Decoder):
    """Answers every inference question by enumerating all outputs.

    Exponential in the size of the output: meant for tiny instances, as the reference
    implementation that tests compare the compiled decoders with. It follows the same
    rules for -inf scores: an output with a part scored -inf is never returned or
    listed, ``log_partition`` is -inf for an example with no output of finite score, and
    ``map``, ``top_k``, ``marginals`` and ``loss_augmented_map`` raise
    :class:`~skstruct.decoders.InfeasibleOutputError` for it. Supports the score
    containers of the chain, multiclass, multilabel, tree and matching families (for
    matchings, marginals are computed too: by enumeration the permanent is no harder).

    Parameters
    ----------
    projective : bool, default=False
        Trees: enumerate projective trees only.
    single_root : bool, default=False
        Trees: enumerate trees with one word attached to the root only.
    max_outputs : int >= 1, default=1_000_000
        Largest number of outputs to enumerate for one example. Before enumerating, an
        operation raises a ``ValueError`` naming the first example with more (a chain of
        L tokens and S states has S^L labelings, L labels 2^L vectors, an n-word sentence
        n^n head assignments to sift, an (r, c) matching max(r, c)! / (max(r, c) − min(r, c))! outputs)
        instead of running for ever. The decoder is the test oracle for tiny instances:
        raise the limit knowingly.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.decoders import BruteForceDecoder, ChainScores
    >>> scores = ChainScores(np.array([[1., 0.], [0., 2.]]), np.array([0, 2]),
    ...                      np.zeros((2, 2)), np.zeros(2), np.zeros(2))
    >>> BruteForceDecoder().map(scores)
    array([0, 1])
    """

    capabilities = frozenset({"map", "marginals", "top_k", "loss_augmented_map", "parts"})
    score_types = tuple(family for family, _ in _ENUMERATIONS)
    _parameter_constraints: dict = {
        "projective": ["boolean"],
        "single_root": ["boolean"],
        "max_outputs": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, projective=False, single_root=False, max_outputs=1_000_000):
        self.projective = projective
        self.single_root = single_root
        self.max_outputs = max_outputs

    def _enumeration(self, scores):
        for family, enumeration in _ENUMERATIONS:
            if isinstance(scores, family):
                return enumeration(self)
        raise TypeError(f"BruteForceDecoder does not know {type(scores).__name__}.")

    def _enumerate(self, scores):
        """Every labeling of every chain of ``scores``: (i, outputs, unary parts,
        pairwise parts, scores) per sequence, for tests that need the outputs."""
        if not isinstance(scores, ChainScores):
            raise TypeError(f"BruteForceDecoder does not know {type(scores).__name__}.")
        return _ChainEnumeration(self)._examples(scores)

    def _arc_factored(self, scores):
        """Every tree or matching of ``scores``: (i, outputs, indicator rows) per
        example, for tests that need the outputs."""
        for i, outputs, indicators, _ in self._enumeration(scores)._examples(scores):
            yield i, outputs, indicators

    def _check_size(self, scores):
        """Check the scores, then raise a ``ValueError`` before enumerating when an
        example has more than ``max_outputs`` outputs; return their enumeration."""
        self._check_scores(scores)
        enumeration = self._enumeration(scores)
        largest = enumeration.size(scores)
        if largest is not None and scores.n_examples and largest[0] > self.max_outputs:
            count, i, what, example = largest
            raise ValueError(
                f"BruteForceDecoder would enumerate {count} outputs of {example} {i}: "
                f"{what}, more than max_outputs={self.max_outputs}. It enumerates every "
                f"output and is meant for tiny instances (the test oracle); use the "
                f"decoder of the family, or raise max_outputs."
            )
        return enumeration

    def map(self, scores, *, return_score=False):
        labels, best = self._check_size(scores).map(scores)
        check_feasible(best)
        return (labels, best) if return_score else labels

    def log_partition(self, scores):
        return self._check_size(scores).log_partition(scores)

    def marginals(self, scores):
        check_feasible(self.log_partition(scores))
        return self._enumeration(scores).marginals(scores)

    def top_k(self, scores, k):
        enumeration = self._check_size(scores)
        k = check_k(k)
        paths, top = enumeration.top_k(scores, k)
        check_feasible(top[:, 0])
        return paths, top

    def loss_augmented_map(self, scores, y_true, task_loss, rescaling="margin"):
        enumeration = self._check_size(scores)
        task_loss = check_task_loss_argument(task_loss)
        if rescaling not in ("margin", "slack"):
            raise ValueError(f"rescaling must be 'margin' or 'slack'; got {rescaling!r}.")
        y_true = scores._check_outputs(y_true, name="y_true")
        found = enumeration.loss_augmented(scores, y_true, task_loss, rescaling)
        return enumeration.stack(_loss_augmented_outputs(found, rescaling))

    def parts(self, scores, y):
        self._check_scores(scores)
        y = scores._check_outputs(y)
        return self._enumeration(scores).parts(scores, y)

    def cost_augmented(self, scores, y_true, task_loss):
        """Scores η + c with ⟨c, a_y⟩ = Δ(y_true, y) up to a constant per example: those
        of the family's decoder (see its ``cost_augmented``)."""
        self._check_scores(scores)
        return self._enumeration(scores).family_decoder().cost_augmented(
            scores, y_true, task_loss)
