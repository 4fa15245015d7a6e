"""PerturbedMAPClassifier's default: the (pseudo-)likelihood of every gold output within
its Hamming neighbourhood, minimized by preconditioned L-BFGS.

The data are small (the bundled yeast and emotions, random chains and label vectors), so
that the file runs in seconds."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.multiclass import OneVsRestClassifier

from skstruct import PerturbedMAPClassifier
from skstruct.datasets import load_multilabel
from skstruct.decoders import ChainDecoder, ChainScores, MultilabelDecoder, MultilabelScores
from skstruct.losses._neighbourhood import (NeighbourhoodDifferences,
                                            NeighbourhoodLikelihoodLoss)


def _chain_scores(seed=0, lengths=(3, 1, 5, 4), n_states=3):
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    scores = ChainScores(rng.normal(size=(offsets[-1], n_states)), offsets,
                         rng.normal(size=(n_states, n_states)), rng.normal(size=n_states),
                         rng.normal(size=n_states))
    y = rng.integers(0, n_states, size=offsets[-1])
    return scores, y, offsets


def _multilabel(seed=0, n=7, n_labels=5):
    rng = np.random.default_rng(seed)
    scores = MultilabelScores(rng.normal(size=(n, n_labels)))
    y = rng.integers(0, 2, size=(n, n_labels))
    return scores, y, np.arange(n + 1)


@pytest.mark.parametrize("case", ["chain", "multilabel"])
def test_relative_logits_are_the_score_differences_of_the_listed_neighbours(case):
    """(D η)_r = θ(neighbour r) − θ(gold), with the chain's shared transition scores
    matched to its per-sequence transition parts."""
    scores, y, offsets = _chain_scores() if case == "chain" else _multilabel()
    decoder = ChainDecoder() if case == "chain" else MultilabelDecoder()
    differences = NeighbourhoodDifferences.build(decoder, scores, y, offsets)
    paths, counts = decoder.neighbours(scores, y)
    gold = decoder.score_outputs(scores, y)
    expected = []
    for i in range(offsets.shape[0] - 1):
        for j in range(counts[i]):
            one = scores.take(np.array([i]))
            expected.append(decoder.score_outputs(one, paths[offsets[i]:offsets[i + 1],
                                                         ..., j])[0] - gold[i])
    z = differences.matrix @ differences.layout.flat_scores(scores)
    np.testing.assert_array_equal(np.diff(differences.row_offsets), counts)
    np.testing.assert_allclose(z, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("case", ["chain", "multilabel"])
def test_gradient_is_the_derivative_of_the_loss_along_any_direction(case, grouped):
    scores, y, offsets = _chain_scores(1) if case == "chain" else _multilabel(1)
    decoder = ChainDecoder() if case == "chain" else MultilabelDecoder()
    differences = NeighbourhoodDifferences.build(decoder, scores, y, offsets)
    loss = NeighbourhoodLikelihoodLoss(differences, beta=0.7, grouped=grouped)
    _, gradient = loss(decoder, scores, y)
    rng = np.random.default_rng(2)
    names = ("unary", "transition", "start", "end") if case == "chain" else ("unary",)
    direction = {name: rng.normal(size=np.shape(getattr(scores, name))) for name in names}

    def moved(step):
        if case == "chain":
            return ChainScores(scores.unary + step * direction["unary"], offsets,
                               *(getattr(scores, n) + step * direction[n]
                                 for n in ("transition", "start", "end")))
        return MultilabelScores(scores.unary + step * direction["unary"])

    eps = 1e-6
    numeric = (loss.values(decoder, moved(eps), y, None).sum()
               - loss.values(decoder, moved(-eps), y, None).sum()) / (2 * eps)
    analytic = float(np.sum(gradient.dot(moved(1.0))) - np.sum(gradient.dot(scores)))
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6)


def test_pseudo_likelihood_of_multilabel_vectors_is_the_sum_of_logistic_losses():
    scores, y, offsets = _multilabel(3)
    differences = NeighbourhoodDifferences.build(MultilabelDecoder(), scores, y, offsets)
    beta = 0.5
    values = NeighbourhoodLikelihoodLoss(differences, beta, grouped=True).values(
        None, scores, y, None)
    margin = (2 * y - 1) * scores.unary / beta       # log-odds of the gold state
    np.testing.assert_allclose(values, np.logaddexp(0, -margin).sum(axis=1), rtol=1e-12)
    # the one-softmax form over the whole neighbourhood is another, smaller loss
    whole = NeighbourhoodLikelihoodLoss(differences, beta).values(None, scores, y, None)
    np.testing.assert_allclose(whole, np.log1p(np.exp(-margin).sum(axis=1)), rtol=1e-12)


@pytest.mark.parametrize("name", ["yeast", "emotions"])
def test_default_fit_reaches_one_vs_rest_logistic_regression(name):
    """With its defaults (emotions' features unscaled, up to 237) the example-F1 is at
    least 0.95 times that of one-vs-rest logistic regression, without a MAP call."""
    train, test = load_multilabel(name), load_multilabel(name, "test")
    model = PerturbedMAPClassifier().fit(train.data, train.target)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        reference = OneVsRestClassifier(LogisticRegression()).fit(train.data, train.target)

    def f1(estimator):
        return f1_score(test.target, estimator.predict(test.data), average="samples",
                        zero_division=0)

    assert f1(model) >= 0.95 * f1(reference)
    assert model.decoder_calls_["map"] == 0
    assert model.n_iter_ == model.objective_curve_.shape[0] > 1
    assert np.all(np.diff(model.objective_curve_) <= 1e-12)  # L-BFGS descends


def test_preconditioner_leaves_the_minimizer_and_speeds_up_badly_scaled_features(
        monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 6)) * np.array([1e-3, 1e-1, 1.0, 10.0, 1e2, 1e3])
    Y = (X / X.std(axis=0) @ rng.normal(size=(6, 3)) > 0).astype(int)
    params = dict(max_iter=2000, tol=1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fast = PerturbedMAPClassifier(max_iter=60).fit(X, Y)
        plain_short = PerturbedMAPClassifier(max_iter=60)
        monkeypatch.setattr(PerturbedMAPClassifier, "_preconditioner",
                            lambda self, run, alpha, centring=None:
                            np.ones(run.features.n_params))
        plain_short.fit(X, Y)
        plain = PerturbedMAPClassifier(**params).fit(X, Y)
    monkeypatch.undo()
    reference = PerturbedMAPClassifier(**params).fit(X, Y)
    scale = np.abs(reference.coef_).max()
    # the same minimizer ...
    np.testing.assert_allclose(plain.coef_ * X.std(axis=0), reference.coef_ * X.std(axis=0),
                               atol=1e-3 * scale * X.std(axis=0).max())
    # ... which the preconditioned run nears in 60 iterations and the plain one does not
    gap = lambda model: np.abs((model.coef_ - reference.coef_) * X.std(axis=0)).max()
    assert gap(fast) < 0.1 * gap(plain_short)


def test_callback_sees_the_parameters_of_the_model_not_the_rescaled_ones():
    X, Y = load_multilabel("yeast").data[:200], load_multilabel("yeast").target[:200]
    seen = []
    model = PerturbedMAPClassifier(
        max_iter=5, callback=lambda n_iter, w, objective: seen.append(w.copy()))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, Y)
    assert len(seen) == model.n_iter_
    np.testing.assert_array_equal(seen[-1], model._params())


def test_chain_default_fit_learns_without_map():
    rng = np.random.default_rng(0)
    X, y = [], []
    for _ in range(60):
        length = rng.integers(2, 8)
        states = np.cumsum(rng.integers(0, 2, size=length)) % 3
        features = rng.normal(size=(length, 3)) * 0.5
        features[np.arange(length), states] += 1.0
        X.append(features)
        y.append(np.array(["A", "B", "C"])[states])
    model = PerturbedMAPClassifier().fit(X, y)
    assert model.decoder_calls_["map"] == 0
    accuracy = np.mean(np.concatenate(model.predict(X)) == np.concatenate(y))
    assert accuracy > 0.9


def test_memory_limit_is_checked_while_the_neighbourhoods_are_listed():
    train = load_multilabel("yeast")
    with pytest.raises(MemoryError, match=r"PerturbedMAPClassifier: .*more than the limit "
                                          r"of 0\.00 GB \(max_memory\)"):
        PerturbedMAPClassifier(max_memory=1e-6).fit(train.data, train.target)


def test_parameter_combinations_that_do_not_exist_are_refused():
    X, Y = load_multilabel("emotions").data[:50], load_multilabel("emotions").target[:50]
    with pytest.raises(ValueError, match="solver='lbfgs'"):
        PerturbedMAPClassifier(candidates="proposal", solver="lbfgs").fit(X, Y)
    with pytest.raises(ValueError, match="solver='perturbed_ascent' draws"):
        PerturbedMAPClassifier(solver="perturbed_ascent").fit(X, Y)
    with pytest.raises(ValueError, match="pseudo_likelihood"):
        PerturbedMAPClassifier(candidates="all", objective="pseudo_likelihood").fit(X, Y)
