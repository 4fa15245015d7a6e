"""Pairwise multilabel models: estimators with a FactorGraphDecoder."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from skstruct import CRF, SparseMAPClassifier, StructuredPerceptron, StructuredSVM
from skstruct.decoders import FactorGraph, FactorGraphDecoder


def _coupled_data(n=80, seed=0):
    """Labels 0 and 1 always together, label 2 never with label 0; label 3 free."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    on = X[:, 0] + 0.3 * rng.normal(size=n) > 0
    free = X[:, 1] > 0
    Y = np.stack([on, on, ~on, free], axis=1).astype(np.int64)
    return X, Y


def _fit(estimator, X, Y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return estimator.fit(X, Y)


def _marginals(decoder):
    """The decoder with the decision rule of the LP-SparseMAP loss's models."""
    return clone(decoder).set_params(decision="marginals")


ESTIMATORS = {
    "lp_sparsemap": lambda d: SparseMAPClassifier(alpha=1e-2, decoder=_marginals(d)),
    "m_lp_sparsemap": lambda d: SparseMAPClassifier(alpha=1e-2, decoder=_marginals(d),
                                                    cost="hamming"),
    "hinge_lp_map": lambda d: StructuredSVM(d, alpha=1e-2, solver="cutting_plane",
                                            max_iter=30),
    "perceptron": lambda d: StructuredPerceptron(d, max_iter=5, random_state=0),
}


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_learns_a_coupling_per_pair_and_predicts_valid_label_sets(name):
    X, Y = _coupled_data()
    decoder = FactorGraphDecoder(FactorGraph.pairwise(4, at_least_one=True), max_iter=300)
    model = _fit(ESTIMATORS[name](decoder), X, Y)
    assert model.coupling_.shape == (6,)
    assert model.coef_.shape == (4, 5) and model.intercept_.shape == (4,)
    pred = model.predict(X)
    assert pred.shape == Y.shape and set(np.unique(pred)) <= {0, 1}
    assert decoder.graph.feasible(pred).all()
    # subset accuracy well above that of the most frequent label set (0.2875)
    _, counts = np.unique(Y, axis=0, return_counts=True)
    assert model.score(X, Y) > 1.3 * counts.max() / len(Y)
    # pairs (0, 1) and (0, 2) are the first two: together always, never together
    assert model.coupling_[0] > model.coupling_[1]


def test_predict_marginals_are_lp_sparsemap_marginals_and_distribution_is_refused():
    X, Y = _coupled_data()
    decoder = FactorGraphDecoder(FactorGraph.pairwise(4))
    model = _fit(SparseMAPClassifier(alpha=1e-2, decoder=decoder, max_iter=30), X, Y)
    marginals = model.predict_marginals(X[:5])
    scores = model._scores(model._validate_prediction_data(X[:5]))
    np.testing.assert_allclose(marginals, decoder.sparsemap(scores).unary)
    assert marginals.shape == (5, 4)
    assert np.all((marginals >= 0) & (marginals <= 1))
    with pytest.raises(ValueError, match="local polytope"):
        model.predict_distribution(X[:2])


def test_pairwise_scores_enter_predictions():
    """Zeroing the learned couplings changes what the model predicts."""
    X, Y = _coupled_data()
    decoder = FactorGraphDecoder(FactorGraph.pairwise(4))
    model = _fit(StructuredPerceptron(decoder, max_iter=5, random_state=0), X, Y)
    assert np.abs(model.coupling_).max() > 0
    before = model.predict(X)
    model.coupling_ = np.zeros_like(model.coupling_)
    independent = (model.decision_function(X) > 0).astype(np.int64)
    np.testing.assert_array_equal(model.predict(X), independent)
    assert not np.array_equal(before, independent)


def test_crf_and_wrong_label_counts_give_clear_errors():
    X, Y = _coupled_data()
    decoder = FactorGraphDecoder(FactorGraph.pairwise(4))
    with pytest.raises(ValueError, match="CRF"):
        CRF(decoder=decoder).fit(X, Y)
    with pytest.raises(ValueError, match="factor graph has 4 variables"):
        SparseMAPClassifier(decoder=decoder).fit(X, Y[:, :3])
    graph = FactorGraph()
    graph.add_xor(graph.variables(4))
    with pytest.raises(ValueError, match="breaks a logic factor"):
        StructuredSVM(FactorGraphDecoder(graph)).fit(X, Y)


def test_warm_start_needs_the_same_structure_and_refit_drops_the_coupling():
    X, Y = _coupled_data()
    model = _fit(SparseMAPClassifier(alpha=1e-2, max_iter=10, warm_start=True), X, Y)
    assert not hasattr(model, "coupling_")
    model.set_params(decoder=FactorGraphDecoder(FactorGraph.pairwise(4)))
    with pytest.raises(ValueError, match="warm_start"):
        model.fit(X, Y)
    model.set_params(warm_start=False)
    _fit(model, X, Y)
    assert model.coupling_.shape == (6,)
    model.set_params(decoder=None)
    _fit(model, X, Y)
    assert not hasattr(model, "coupling_")


def test_clone_pickle_and_nested_decoder_parameters():
    X, Y = _coupled_data(n=40)
    model = StructuredSVM(FactorGraphDecoder(FactorGraph.pairwise(4)), alpha=1e-2,
                          solver="subgradient", max_iter=5)
    model.set_params(decoder__max_iter=50)
    copy = clone(model)
    assert copy.decoder.max_iter == 50 and copy.decoder.graph.n_pairs == 6
    _fit(model, X, Y)
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_array_equal(restored.predict(X), model.predict(X))


def test_grid_search_and_cross_validate_with_multilabel_scorers():
    from sklearn.model_selection import GridSearchCV, cross_validate

    from skstruct.metrics import example_f1_score, get_scorer, hamming_loss

    X, Y = _coupled_data(n=60)
    model = SparseMAPClassifier(decoder=FactorGraphDecoder(FactorGraph.pairwise(4)),
                                max_iter=15)
    scoring = {name: get_scorer(name) for name in
               ("example_f1", "neg_hamming_loss", "subset_accuracy", "micro_f1", "macro_f1")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        search = GridSearchCV(model, {"alpha": [1e-2, 1.0], "decoder__max_iter": [50, 200]},
                              scoring=scoring, refit="example_f1", cv=2).fit(X, Y)
        scores = cross_validate(model, X, Y, cv=3, scoring=scoring)
    assert len(search.cv_results_["params"]) == 4
    assert search.best_estimator_.coupling_.shape == (6,)
    assert search.best_estimator_.decoder_.max_iter in (50, 200)
    for name in scoring:
        assert scores[f"test_{name}"].shape == (3,)
    # the scorers score the predictions as the metrics do
    best = search.best_estimator_
    pred = best.predict(X)
    np.testing.assert_allclose(scoring["example_f1"](best, X, Y), example_f1_score(Y, pred))
    np.testing.assert_allclose(scoring["neg_hamming_loss"](best, X, Y), -hamming_loss(Y, pred))
