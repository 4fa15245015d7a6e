"""The LP-SparseMAP loss's kinks at zero PAIR scores: the spread of its subdifferential
(``SparseMAPLoss.values_gradients_and_spread``), and the learner that uses it."""

import warnings

import numpy as np
import pytest

from skstruct import SparseMAPClassifier
from skstruct.datasets import load_multilabel
from skstruct.decoders import FactorGraph, FactorGraphDecoder, FactorGraphScores
from skstruct.losses import SparseMAPLoss


def _problem(seed, n=6, n_labels=4):
    rng = np.random.default_rng(seed)
    graph = FactorGraph.pairwise(n_labels)
    decoder = FactorGraphDecoder(graph, tol=1e-13, max_iter=20000, decision="marginals")
    # unary scores near 0.5 so that most u are fractional; every second PAIR score zero
    unary = rng.uniform(0.1, 0.9, size=(n, n_labels))
    pair = rng.normal(size=(n, graph.n_pairs)) * 0.3
    pair[:, ::2] = 0.0
    y = (rng.random((n, n_labels)) < 0.5).astype(np.int64)
    return decoder, FactorGraphScores(unary, pair), y


def _losses(decoder, unary, pair, y):
    scores = FactorGraphScores(unary, pair)
    return SparseMAPLoss().values_gradients_and_spread(decoder, scores, y,
                                                     decoder.parts(scores, y))


@pytest.mark.parametrize("seed", range(4))
def test_spread_gives_the_one_sided_derivatives_at_a_zero_pair_score(seed):
    """Danskin: the loss's right and left derivatives in a PAIR score at zero are the
    gradient plus ``up`` and minus ``down`` (checked by one-sided differences), and the
    spread is zero wherever the score is not zero."""
    decoder, scores, y = _problem(seed)
    values, grad, (down, up) = _losses(decoder, scores.unary, scores.pair, y)
    at_zero = scores.pair == 0
    assert np.all(down.pair[~at_zero] == 0) and np.all(up.pair[~at_zero] == 0)
    assert np.all(down.unary == 0) and np.all(up.unary == 0)
    assert (down.pair + up.pair)[at_zero].max() > 0.05  # real kinks
    h = 1e-6
    checked = 0
    for i, f in zip(*np.nonzero(at_zero)):
        plus, minus = scores.pair.copy(), scores.pair.copy()
        plus[i, f], minus[i, f] = h, -h
        right = (_losses(decoder, scores.unary, plus, y)[0][i] - values[i]) / h
        left = (values[i] - _losses(decoder, scores.unary, minus, y)[0][i]) / h
        assert right == pytest.approx(grad.pair[i, f] + up.pair[i, f], abs=1e-4)
        assert left == pytest.approx(grad.pair[i, f] - down.pair[i, f], abs=1e-4)
        checked += 1
    assert checked >= 10


def test_call_returns_the_values_and_gradients_of_the_spread_form():
    decoder, scores, y = _problem(0)
    gold = decoder.parts(scores, y)
    values, grad = SparseMAPLoss()(decoder, scores, y, gold)
    values_s, grad_s, _ = SparseMAPLoss().values_gradients_and_spread(decoder, scores, y,
                                                                      gold)
    np.testing.assert_array_equal(values, values_s)
    np.testing.assert_array_equal(grad.pair, grad_s.pair)


def test_lp_sparsemap_learner_converges_on_yeast_at_its_defaults():
    """At its defaults the learner certifies its optimum (the least pseudo-gradient
    under its tolerance), where most PAIR scores sit exactly at their kink."""
    data = load_multilabel("yeast", "train")
    X, Y = data.data[:600], np.asarray(data.target)[:600]
    n_labels = Y.shape[1]
    model = SparseMAPClassifier(decoder=FactorGraphDecoder(
        FactorGraph.pairwise(n_labels), decision="marginals"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.fit(X, Y)
    assert model.n_iter_ < model.max_iter
    zero = np.sum(model.coupling_ == 0)
    assert 0 < zero < len(model.coupling_)
