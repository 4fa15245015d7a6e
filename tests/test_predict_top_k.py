"""n-best decoding at the estimator level: predict_top_k."""

import itertools

import numpy as np
import pytest

from skstruct import CRF, StructuredPerceptron, StructuredSVM
from skstruct.decoders import TreeDecoder


def _sequences(seed=0):
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(n, 3)) for n in (3, 1, 4)]
    y = [np.array(["B", "I", "O"])[rng.integers(0, 3, size=x.shape[0])] for x in X]
    return X, y


def _brute_force_sequences(model, x, k):
    """Every labeling of one sequence scored with the fitted weights, best first."""
    unary = x @ model.coef_.T
    labelings = list(itertools.product(range(len(model.classes_)), repeat=x.shape[0]))
    scores = []
    for lab in labelings:
        score = unary[np.arange(x.shape[0]), lab].sum() + model.start_transition_[lab[0]]
        score += model.end_transition_[lab[-1]]
        score += sum(model.transition_[a, b] for a, b in zip(lab[:-1], lab[1:]))
        scores.append(score)
    order = np.argsort(-np.array(scores), kind="stable")[:k]
    return [model.classes_[np.array(labelings[j])] for j in order], np.array(scores)[order]


def test_sequence_n_best_equals_enumeration_and_starts_with_predict():
    X, y = _sequences()
    model = CRF(alpha=1e-2, max_iter=20).fit(X, y)
    outputs, scores = model.predict_top_k(X, 5)
    assert len(outputs) == len(X) and scores.shape == (3, 5)
    predicted = model.predict(X)
    for i, x in enumerate(X):
        expected, expected_scores = _brute_force_sequences(model, x, 5)
        assert len(outputs[i]) == len(expected)
        np.testing.assert_allclose(scores[i, :len(expected)], expected_scores, atol=1e-9)
        np.testing.assert_array_equal(outputs[i][0], predicted[i])
        assert all(o.dtype == predicted[i].dtype for o in outputs[i])
    # the one-token sequence has only 3 labelings: the rest is -inf
    assert len(outputs[1]) == 3 and np.all(scores[1, 3:] == -np.inf)


def test_multiclass_and_multilabel_n_best_in_user_labels():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(20, 4))
    labels = np.array(["cat", "dog", "eel"])[rng.integers(0, 3, size=20)]
    model = StructuredPerceptron(random_state=0).fit(X, labels)
    outputs, scores = model.predict_top_k(X, 3)
    assert [sorted(o) for o in outputs] == [["cat", "dog", "eel"]] * 20
    np.testing.assert_array_equal([o[0] for o in outputs], model.predict(X))
    assert np.all(np.diff(scores, axis=1) <= 0)
    Y = (rng.random((20, 3)) < 0.5).astype(int)
    multilabel = StructuredSVM(max_iter=5, random_state=0).fit(X, Y)
    outputs, scores = multilabel.predict_top_k(X, 8)
    assert all(len(o) == 8 for o in outputs)
    assert all(len({tuple(r) for r in o}) == 8 for o in outputs)  # all 2**3 label sets
    np.testing.assert_array_equal(np.array([o[0] for o in outputs]), multilabel.predict(X))
    np.testing.assert_allclose(
        scores[:, 1],
        [multilabel.decision_function(X[i:i + 1])[0] @ outputs[i][1] for i in range(20)])


def test_no_top_k_and_bad_k_give_clear_errors():
    X, y = _sequences()
    model = CRF(max_iter=3).fit(X, y)
    with pytest.raises(ValueError, match="integer >= 1"):
        model.predict_top_k(X, 0)
    with pytest.raises(TypeError, match="integer >= 1"):
        model.predict_top_k(X, 2.5)
    rng = np.random.default_rng(0)
    arcs = [rng.normal(size=(n * n, 2)) for n in (2, 3)]
    heads = [np.array([0, 1]), np.array([2, 0, 2])]
    tree = StructuredPerceptron(TreeDecoder(), max_iter=2).fit(arcs, heads)
    with pytest.raises(ValueError, match="top_k"):
        tree.predict_top_k(arcs, 2)
