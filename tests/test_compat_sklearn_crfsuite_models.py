"""The sklearn-crfsuite facade's algorithms, generators, compact pickles, tagger and
eli5 support."""

import itertools
import pickle

import numpy as np
import pytest
import scipy.sparse as sp

from skstruct import CRF as SkstructCRF
from skstruct import StructuredPerceptron, StructuredSVM
from skstruct.compat import sklearn_crfsuite
from skstruct.datasets import load_conll2000
from skstruct.preprocessing import SequenceVectorizer, sentences_to_features


@pytest.fixture(scope="module")
def conll():
    data = load_conll2000("train")
    X = sentences_to_features(data.words[:120], data.pos[:120])
    return X, [list(labels) for labels in data.target[:120]]


@pytest.mark.parametrize("algorithm, learner", [
    ("lbfgs", SkstructCRF), ("l2sgd", SkstructCRF), ("ap", StructuredPerceptron),
    ("pa", StructuredSVM)])
def test_algorithms_train_their_skstruct_learner(conll, algorithm, learner):
    X, y = conll
    crf = sklearn_crfsuite.CRF(algorithm=algorithm, max_iterations=20).fit(X, y)
    assert isinstance(crf.crf_, learner)
    assert crf.crf_.max_iter == 20
    assert crf.score(X, y) > 0.9  # it learned the training data
    marginals = crf.predict_marginals(X[:3])
    assert all(abs(sum(m.values()) - 1) < 1e-6 for seq in marginals for m in seq)


def test_algorithm_parameters_map_onto_the_learners(conll):
    X, y = conll
    n = len(X)
    pa = sklearn_crfsuite.CRF(algorithm="pa", c=0.5, max_iterations=3,
                              error_sensitive=False, averaging=False).fit(X, y)
    assert pa.crf_.solver == "bcfw" and pa.crf_.alpha == pytest.approx(1 / (0.5 * n))
    assert pa.crf_.loss == "zero_one" and pa.crf_.averaging is False
    sgd = sklearn_crfsuite.CRF(algorithm="l2sgd", c2=0.3, max_iterations=3).fit(X, y)
    assert sgd.crf_.solver == "svrg" and sgd.crf_.alpha == pytest.approx(2 * 0.3 / n)
    assert sklearn_crfsuite.CRF(algorithm="ap").fit(X[:5], y[:5]).crf_.max_iter == 100
    with pytest.raises(NotImplementedError, match="pa_type=2"):
        sklearn_crfsuite.CRF(algorithm="pa", pa_type=2).fit(X, y)


def test_generators_are_accepted_in_fit_and_predict(conll):
    X, y = conll
    from_lists = sklearn_crfsuite.CRF(max_iterations=10).fit(X, y)
    from_generators = sklearn_crfsuite.CRF(max_iterations=10).fit(
        (seq for seq in X), (labels for labels in y))
    np.testing.assert_array_equal(from_generators.crf_.coef_, from_lists.crf_.coef_)
    assert from_generators.predict(seq for seq in X[:7]) == from_lists.predict(X[:7])
    assert len(from_generators.predict_marginals(iter(X[:2]))) == 2


def test_pickle_stores_state_weights_sparse_and_round_trips(conll):
    X, y = conll
    crf = sklearn_crfsuite.CRF(max_iterations=20).fit(X, y)
    data = pickle.dumps(crf, protocol=pickle.HIGHEST_PROTOCOL)
    dense = crf.crf_.coef_.nbytes
    nonzero = np.count_nonzero(crf.crf_.coef_)
    assert nonzero < crf.crf_.coef_.size / 4  # the seen pairs are few
    # the dense array would not fit: only the nonzero weights (and their columns) are in
    assert len(data) < dense
    loaded = pickle.loads(data)
    np.testing.assert_array_equal(loaded.crf_.coef_, crf.crf_.coef_)
    assert loaded.predict(X[:10]) == crf.predict(X[:10])
    assert loaded.state_features_ == crf.state_features_
    # the fitted object is unchanged by pickling
    assert crf.crf_.coef_ is not None and crf.crf_.coef_.shape == loaded.crf_.coef_.shape
    assert crf.size_ == len(data)


def test_l2sgd_stores_the_seen_pairs_only(conll):
    """all_possible_states=False (the default): SVRG trains CRFsuite's parameter set, the
    weights of the seen (attribute, label) pairs and label bigrams; only those are
    nonzero and pickled."""
    X, y = conll
    crf = sklearn_crfsuite.CRF(algorithm="l2sgd", max_iterations=10).fit(X, y)
    model = crf.crf_
    assert model.solver == "svrg" and model.feature_label_pairs == "seen"
    Xv = sp.vstack(crf.vectorizer_.transform(X)).tocsr()
    labels = np.searchsorted(model.classes_, np.concatenate(y))
    seen = np.zeros(model.coef_.shape, dtype=bool)
    rows, columns = Xv.nonzero()
    seen[labels[rows], columns] = True
    nonzero = model.coef_ != 0
    assert np.all(~nonzero | seen)  # no weight outside the seen pairs
    assert nonzero.sum() > 0.95 * seen.sum()
    bigrams = np.zeros(model.transition_.shape, dtype=bool)
    for labels_i in y:
        index = np.searchsorted(model.classes_, labels_i)
        bigrams[index[:-1], index[1:]] = True
    assert np.all(model.transition_[~bigrams] == 0) and np.all(model.transition_[bigrams] != 0)
    assert not model.start_transition_.any() and not model.end_transition_.any()
    # the pickle holds the seen pairs' weights: far smaller than all pairs'
    every = sklearn_crfsuite.CRF(algorithm="l2sgd", max_iterations=10,
                                 all_possible_states=True).fit(X, y)
    assert np.count_nonzero(every.crf_.coef_) > 5 * nonzero.sum()
    assert crf.size_ < every.size_ / 3
    assert len(crf.state_features_) == nonzero.sum()


def test_vectorizer_pickles_its_index_only_and_rebuilds_the_names(conll):
    X, _ = conll
    vec = SequenceVectorizer().fit(X)
    data = pickle.dumps(vec)
    loaded = pickle.loads(data)
    assert loaded.feature_names_ == vec.feature_names_
    assert loaded.vocabulary_ == vec.vocabulary_
    assert loaded.vectorizer_.feature_names_ == vec.feature_names_
    assert (loaded.transform(X[:5])[0] != vec.transform(X[:5])[0]).nnz == 0
    with_names = pickle.dumps(vars(vec))
    assert len(data) < len(with_names) / 2


def test_tagger_probability_is_a_distribution_over_label_sequences():
    X = [[{"w": "a"}, {"w": "b"}, {"w": "a"}], [{"w": "b"}, {"w": "b"}]]
    y = [["X", "Y", "X"], ["Y", "Y"]]
    for algorithm in ("lbfgs", "ap"):
        crf = sklearn_crfsuite.CRF(algorithm=algorithm, c2=0.1).fit(X, y) \
            if algorithm == "lbfgs" else sklearn_crfsuite.CRF(algorithm=algorithm).fit(X, y)
        tagger = crf.tagger_
        assert tagger.labels() == ["X", "Y"]
        tagger.set(X[0])
        total = sum(tagger.probability(list(seq))
                    for seq in itertools.product(["X", "Y"], repeat=3))
        assert total == pytest.approx(1.0)
        best = tagger.tag()
        assert tagger.probability(best) == max(
            tagger.probability(list(seq)) for seq in itertools.product(["X", "Y"], repeat=3))
        # the marginal of a label at a position sums the sequences' probabilities
        marginal = sum(tagger.probability(list(seq))
                       for seq in itertools.product(["X", "Y"], repeat=3) if seq[1] == "Y")
        assert tagger.marginal("Y", 1) == pytest.approx(marginal)


def test_arow_and_model_files_say_what_to_use():
    X, y = [[{"w": "a"}]], [["A"]]
    with pytest.raises(NotImplementedError, match="arow.*'pa'.*'ap'"):
        sklearn_crfsuite.CRF(algorithm="arow").fit(X, y)
    crf = sklearn_crfsuite.CRF().fit([[{"w": "a"}, {"w": "b"}]], [["A", "B"]])
    with pytest.raises(NotImplementedError, match="pickle"):
        crf.tagger_.open("model.crfsuite")


def test_eli5_explains_the_facade_crf():
    eli5 = pytest.importorskip("eli5")
    X = [[{"w": "the"}, {"w": "cat"}], [{"w": "a"}, {"w": "dog"}, {"w": "ran"}]]
    y = [["DT", "NN"], ["DT", "NN", "VB"]]
    crf = sklearn_crfsuite.CRF(c2=0.01).fit(X, y)
    assert sklearn_crfsuite.ELI5_REGISTERED
    explanation = eli5.explain_weights(crf, top=5)
    assert {t.target for t in explanation.targets} == {"DT", "NN", "VB"}
    nn = next(t for t in explanation.targets if t.target == "NN")
    assert {w.feature for w in nn.feature_weights.pos} == {"w:cat", "w:dog"}
    coef = explanation.transition_features.coef
    names = explanation.transition_features.class_names
    assert coef[names.index("DT"), names.index("NN")] == pytest.approx(
        crf.transition_features_[("DT", "NN")])
