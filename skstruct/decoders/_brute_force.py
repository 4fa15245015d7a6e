"""Inference by enumeration: the reference every decoder is tested against."""

import itertools
import math
from numbers import Integral

import numpy as np
from scipy.special import logsumexp
from sklearn.utils._param_validation import Interval

from ._base import Decoder, check_feasible, check_k, check_slack_gold, check_task_loss_argument
from ._chain import ChainDecoder
from ._matching import MatchingDecoder
from ._multiclass import MulticlassDecoder
from ._multilabel import MultilabelDecoder
from ._tree import TreeDecoder
from ._chain import ChainParts, ChainScores
from ._multiclass import MulticlassParts, MulticlassScores
from ._matching import MatchingParts, MatchingScores, enumerate_matchings
from ._multilabel import MultilabelParts, MultilabelScores
from ._tree import TreeParts, TreeScores, enumerate_trees

__all__ = ["BruteForceDecoder"]

_INDEPENDENT = (MulticlassScores, MultilabelScores)
_ARC_FACTORED = (TreeScores, MatchingScores)


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


def _independent_outputs(scores):
    """All outputs of one multiclass or multilabel example, and their part vectors.

    Returns
    -------
    outputs : ndarray of shape (n_outputs,) or (n_outputs, n_labels)
        Every class, or every 0/1 vector.
    indicators : ndarray of shape (n_outputs, n_columns)
        Their part vectors: the scores of example ``i`` are ``indicators @ unary[i]``.
    parts_type : type
        The part container of the family.
    """
    if isinstance(scores, MulticlassScores):
        return np.arange(scores.n_states), np.eye(scores.n_states), MulticlassParts
    outputs = np.array(list(itertools.product((0, 1), repeat=scores.n_labels)))
    return outputs, outputs.astype(np.float64), MultilabelParts


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
    score_types = (ChainScores, MulticlassScores, MultilabelScores, TreeScores, MatchingScores)
    _parameter_constraints: dict = {
        "projective": ["boolean"],
        "single_root": ["boolean"],
        "max_outputs": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, projective=False, single_root=False, max_outputs=1_000_000):
        self.projective = projective
        self.single_root = single_root
        self.max_outputs = max_outputs

    def _check_size(self, scores):
        """Check the scores, then raise a ``ValueError`` before enumerating when an
        example has more than ``max_outputs`` outputs."""
        self._check_scores(scores)
        limit = self.max_outputs
        if isinstance(scores, MulticlassScores):
            count, i, what = scores.n_states, 0, f"{scores.n_states} classes"
            example = "example"
        elif isinstance(scores, MultilabelScores):
            count, i = 2**scores.n_labels, 0
            what, example = f"2^{scores.n_labels} 0/1 vectors of its labels", "example"
        elif isinstance(scores, MatchingScores):
            counts = [math.perm(int(max(r, c)), int(min(r, c))) for r, c in scores.shapes]
            i = int(np.argmax(counts)) if counts else 0
            count = counts[i] if counts else 0
            what, example = "matchings", "example"
            if counts:
                what = f"matchings (shape {tuple(int(n) for n in scores.shapes[i])})"
        else:
            lengths = scores.lengths
            if lengths.size == 0:
                return scores
            i = int(np.argmax(lengths))
            n = int(lengths[i])
            if isinstance(scores, TreeScores):
                count = n**n
                what, example = f"head assignments to sift ({n} words)", "sentence"
            else:
                count = scores.n_states**n
                what = f"labelings ({n} tokens, {scores.n_states} states)"
                example = "sequence"
        if scores.n_examples and count > limit:
            raise ValueError(
                f"BruteForceDecoder would enumerate {count} outputs of {example} {i}: "
                f"{what}, more than max_outputs={limit}. It enumerates every output and "
                f"is meant for tiny instances (the test oracle); use the decoder of the "
                f"family, or raise max_outputs."
            )
        return scores

    def _arc_factored(self, scores):
        """Per example: every output (n_outputs, n_tokens) and its indicator rows
        (n_outputs, block size), for trees and matchings."""
        for i in range(scores.n_examples):
            block = scores.block(i)
            if isinstance(scores, TreeScores):
                outputs = enumerate_trees(block.shape[0], self.projective, self.single_root)
            else:
                outputs = enumerate_matchings(*block.shape)
            indicators = np.zeros((outputs.shape[0],) + block.shape)
            rows = np.arange(outputs.shape[0])[:, None]
            tokens = np.arange(outputs.shape[1])[None, :]
            matched = outputs >= 0
            indicators[np.broadcast_to(rows, outputs.shape)[matched],
                       np.broadcast_to(tokens, outputs.shape)[matched], outputs[matched]] = 1
            yield i, outputs, indicators.reshape(outputs.shape[0], -1)

    def _arc_factored_parts(self, scores, unary):
        if isinstance(scores, TreeScores):
            return TreeParts(unary, scores.offsets)
        return MatchingParts(unary, scores.shapes)

    def _arc_factored_call(self, operation, scores, *args):
        flat = scores.unary
        results = []
        for i, outputs, indicators in self._arc_factored(scores):
            a, b = scores.unary_offsets[i], scores.unary_offsets[i + 1]
            results.append(operation(i, outputs, indicators, _scores(indicators, flat[a:b]),
                                     *args))
        return results

    def _independent_theta(self, scores):
        outputs, indicators, parts_type = _independent_outputs(scores)
        return outputs, indicators, parts_type, _scores(indicators, scores.unary)

    def _enumerate(self, scores):
        if not isinstance(scores, ChainScores):
            raise TypeError(f"BruteForceDecoder does not know {type(scores).__name__}.")
        for i in range(scores.n_sequences):
            outputs, unary, pairwise = _chain_outputs(scores, i)
            yield i, outputs, unary, pairwise, _chain_theta(scores, i, unary, pairwise)

    def map(self, scores, *, return_score=False):
        self._check_size(scores)
        if isinstance(scores, _ARC_FACTORED):
            found = self._arc_factored_call(
                lambda i, out, ind, theta: (out[np.argmax(theta)], theta.max()), scores)
            labels = np.concatenate([f[0] for f in found])
            best = np.array([f[1] for f in found])
        elif isinstance(scores, _INDEPENDENT):
            outputs, _, _, theta = self._independent_theta(scores)
            labels = outputs[theta.argmax(axis=1)]
            best = theta.max(axis=1)
        else:
            labels, best = [], []
            for _, outputs, _, _, theta in self._enumerate(scores):
                labels.append(outputs[np.argmax(theta)])
                best.append(theta.max())
            labels, best = np.concatenate(labels), np.array(best)
        check_feasible(best)
        return (labels, best) if return_score else labels

    def log_partition(self, scores):
        self._check_size(scores)
        if isinstance(scores, _ARC_FACTORED):
            return np.array(self._arc_factored_call(
                lambda i, out, ind, theta: logsumexp(theta), scores))
        if isinstance(scores, _INDEPENDENT):
            return logsumexp(self._independent_theta(scores)[3], axis=1)
        return np.array([logsumexp(theta) for *_, theta in self._enumerate(scores)])

    def marginals(self, scores):
        log_z = self.log_partition(scores)
        check_feasible(log_z)
        if isinstance(scores, _ARC_FACTORED):
            found = self._arc_factored_call(
                lambda i, out, ind, theta: (logsumexp(theta),
                                            np.exp(theta - logsumexp(theta)) @ ind), scores)
            unary = np.concatenate([f[1] for f in found])
            return np.array([f[0] for f in found]), self._arc_factored_parts(scores, unary)
        if isinstance(scores, _INDEPENDENT):
            _, indicators, parts_type, theta = self._independent_theta(scores)
            log_z = logsumexp(theta, axis=1)
            return log_z, parts_type(np.exp(theta - log_z[:, None]) @ indicators)
        n_states = scores.n_states
        log_z, unary, pairwise = [], [], []
        for _, _, unary_parts, pair_parts, theta in self._enumerate(scores):
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
        self._check_size(scores)
        k = check_k(k)
        if isinstance(scores, _ARC_FACTORED):
            paths = np.full((scores.offsets[-1], k), -1, dtype=np.int64)
            top = np.full((scores.n_examples, k), -np.inf)
            for i, outputs, _, theta in self._arc_factored_call(
                    lambda i, out, ind, theta: (i, out, ind, theta), scores):
                order = _ranked(theta, k)
                a, b = scores.offsets[i], scores.offsets[i + 1]
                paths[a:b, : len(order)] = outputs[order].T
                top[i, : len(order)] = theta[order]
        elif isinstance(scores, _INDEPENDENT):
            outputs, _, _, theta = self._independent_theta(scores)
            paths = np.full((scores.n_examples,) + outputs.shape[1:] + (k,), -1, dtype=np.int64)
            top = np.full((scores.n_examples, k), -np.inf)
            for i in range(scores.n_examples):
                order = _ranked(theta[i], k)
                paths[i, ..., : len(order)] = np.moveaxis(outputs[order], 0, -1)
                top[i, : len(order)] = theta[i, order]
        else:
            paths = np.full((scores.unary.shape[0], k), -1, dtype=np.int64)
            top = np.full((scores.n_sequences, k), -np.inf)
            for i, outputs, _, _, theta in self._enumerate(scores):
                order = _ranked(theta, k)
                a, b = scores.offsets[i], scores.offsets[i + 1]
                paths[a:b, : len(order)] = outputs[order].T
                top[i, : len(order)] = theta[order]
        check_feasible(top[:, 0])
        return paths, top

    def loss_augmented_map(self, scores, y_true, task_loss, rescaling="margin"):
        self._check_size(scores)
        task_loss = check_task_loss_argument(task_loss)
        if rescaling not in ("margin", "slack"):
            raise ValueError(f"rescaling must be 'margin' or 'slack'; got {rescaling!r}.")
        y_true = scores._check_outputs(y_true, name="y_true")
        if isinstance(scores, _INDEPENDENT):
            return self._independent_loss_augmented_map(scores, y_true, task_loss, rescaling)
        if isinstance(scores, _ARC_FACTORED):
            def best(i, outputs, _, theta):
                a, b = scores.offsets[i], scores.offsets[i + 1]
                return _loss_augmented(outputs, theta, y_true[a:b], task_loss, rescaling)

            found = self._arc_factored_call(best, scores)
        else:
            found = [
                _loss_augmented(outputs, theta, y_true[scores.offsets[i]:scores.offsets[i + 1]],
                                task_loss, rescaling)
                for i, outputs, _, _, theta in self._enumerate(scores)
            ]
        return np.concatenate(_loss_augmented_outputs(found, rescaling))

    def _independent_loss_augmented_map(self, scores, y_true, task_loss, rescaling):
        """Each output is scored as a sequence of states: one class, or n_labels bits."""
        outputs, _, _, thetas = self._independent_theta(scores)
        if isinstance(scores, MultilabelScores) and task_loss.decomposition == "counts":
            task_loss = task_loss.with_positive_states([False, True])
        found = [_loss_augmented(outputs, theta, y_true[i], task_loss, rescaling)
                 for i, theta in enumerate(thetas)]
        return np.array(_loss_augmented_outputs(found, rescaling))

    def parts(self, scores, y):
        self._check_scores(scores)
        y = scores._check_outputs(y)
        if isinstance(scores, _ARC_FACTORED):
            unary = np.zeros_like(scores.unary)
            for i in range(scores.n_examples):
                a, b = scores.offsets[i], scores.offsets[i + 1]
                width = scores.block(i).shape[1]
                rows = np.flatnonzero(y[a:b] >= 0)
                unary[scores.unary_offsets[i] + rows * width + y[a:b][rows]] = 1.0
            return self._arc_factored_parts(scores, unary)
        if isinstance(scores, _INDEPENDENT):
            _, indicators, parts_type = _independent_outputs(scores)
            if isinstance(scores, MulticlassScores):
                return parts_type(indicators[np.asarray(y)])
            return parts_type(np.asarray(y, dtype=np.float64))
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

    def cost_augmented(self, scores, y_true, task_loss):
        """Scores η + c with ⟨c, a_y⟩ = Δ(y_true, y) up to a constant per example: those
        of the family's decoder (see its ``cost_augmented``)."""
        self._check_scores(scores)
        return self._family_decoder(scores).cost_augmented(scores, y_true, task_loss)

    def _family_decoder(self, scores):
        if isinstance(scores, TreeScores):
            return TreeDecoder(projective=self.projective, single_root=self.single_root)
        for family, decoder in _FAMILY_DECODERS:
            if isinstance(scores, family):
                return decoder()
        raise TypeError(f"BruteForceDecoder does not know {type(scores).__name__}.")


_FAMILY_DECODERS = (
    (ChainScores, ChainDecoder),
    (MulticlassScores, MulticlassDecoder),
    (MultilabelScores, MultilabelDecoder),
    (MatchingScores, MatchingDecoder),
)
