import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.linear_model import LogisticRegression

from skstruct import CRF
from skstruct.decoders import BruteForceDecoder, ChainDecoder, Decoder
from skstruct.losses import HammingLoss


def make_sequences(rng, n_sequences=30, n_features=4, labels=("B-NP", "I-NP", "O")):
    """Sequences whose label depends on the features and on the previous label."""
    X, y = [], []
    n_labels = len(labels)
    for _ in range(n_sequences):
        length = rng.integers(1, 7)
        states = [rng.integers(n_labels)]
        for _ in range(length - 1):
            states.append((states[-1] + rng.integers(0, 2)) % n_labels)
        states = np.array(states)
        features = rng.normal(size=(length, n_features))
        features[np.arange(length), states % n_features] += 2.0
        X.append(features)
        y.append(np.array(labels)[states])
    return X, y


def test_length_one_crf_equals_multinomial_logistic_regression(rng):
    """With one token, start + end act as an intercept penalized like a feature of value √2."""
    X = rng.normal(size=(200, 5))
    y = rng.integers(0, 3, size=200)
    alpha, n = 0.01, 200
    crf = CRF(alpha=alpha, tol=1e-10, max_iter=500).fit([x[None] for x in X], [[t] for t in y])
    augmented = np.hstack([X, np.full((n, 1), np.sqrt(2))])
    lr = LogisticRegression(C=1 / (n * alpha), fit_intercept=False, tol=1e-12, max_iter=10000)
    lr.fit(augmented, y)
    np.testing.assert_allclose(crf.coef_, lr.coef_[:, :5], atol=1e-6)
    np.testing.assert_allclose(crf.start_transition_ + crf.end_transition_,
                               lr.coef_[:, 5] * np.sqrt(2), atol=1e-6)
    probabilities = np.vstack(crf.predict_marginals([x[None] for x in X]))
    np.testing.assert_allclose(probabilities, lr.predict_proba(augmented), atol=1e-6)


def test_learns_transitions_and_round_trips_string_labels(rng):
    X, y = make_sequences(rng, n_sequences=80)
    crf = CRF(alpha=1e-3).fit(X, y)
    predictions = crf.predict(X)
    assert all(p.dtype == crf.classes_.dtype for p in predictions)
    assert set(np.concatenate(predictions)) <= {"B-NP", "I-NP", "O"}
    assert crf.score(X, y) > 0.9
    assert list(crf.classes_) == ["B-NP", "I-NP", "O"]
    assert crf.coef_.shape == (3, 4) and crf.transition_.shape == (3, 3)
    assert crf.start_transition_.shape == (3,) and crf.end_transition_.shape == (3,)
    # the data never goes from a label to the one before it
    impossible = [(1, 0), (2, 1), (0, 2)]
    possible = [(0, 0), (0, 1), (1, 1), (1, 2), (2, 2), (2, 0)]
    assert max(crf.transition_[i, j] for i, j in impossible) < min(
        crf.transition_[i, j] for i, j in possible)


def test_fitted_attributes_and_objective_curve(rng):
    X, y = make_sequences(rng)
    crf = CRF(alpha=1e-2).fit(X, y)
    assert crf.n_features_in_ == 4
    assert crf.n_iter_ == len(crf.objective_curve_) > 0
    assert np.all(np.diff(crf.objective_curve_) <= 1e-12)
    assert isinstance(crf.decoder_, ChainDecoder)


def test_objective_is_the_documented_one(rng):
    X, y = make_sequences(rng, n_sequences=10)
    alpha = 0.05
    crf = CRF(alpha=alpha, tol=1e-8, max_iter=300).fit(X, y)
    w = np.concatenate([crf.coef_.ravel(), crf.transition_.ravel(), crf.start_transition_,
                        crf.end_transition_])
    nll = -crf.predict_log_proba_sequences(X, y).mean()
    assert crf.objective_curve_[-1] == pytest.approx(nll + 0.5 * alpha * w @ w, rel=1e-10)


def test_marginals_match_brute_force(rng):
    X, y = make_sequences(rng, n_sequences=10)
    crf = CRF(alpha=1e-2).fit(X, y)
    fast = crf.predict_marginals(X)
    crf.decoder_ = BruteForceDecoder()
    slow = crf.predict_marginals(X)
    assert len(fast) == len(slow) == len(X)
    for a, b, x in zip(fast, slow, X, strict=True):
        assert a.shape == (x.shape[0], 3)
        np.testing.assert_allclose(a, b, atol=1e-10)
        np.testing.assert_allclose(a.sum(axis=1), 1.0)
    log_p = crf.predict_log_proba_sequences(X, y)
    assert np.all(log_p <= 0)


def test_sparse_and_dense_inputs_give_the_same_model(rng):
    X, y = make_sequences(rng)
    dense = CRF(alpha=1e-2).fit(X, y)
    sparse = CRF(alpha=1e-2).fit([sp.csr_matrix(x) for x in X], y)
    np.testing.assert_allclose(dense.coef_, sparse.coef_, atol=1e-8)
    np.testing.assert_allclose(dense.transition_, sparse.transition_, atol=1e-8)


def test_sample_weight_equals_repetition(rng):
    X, y = make_sequences(rng, n_sequences=12)
    weights = rng.integers(1, 4, size=12)
    weighted = CRF(alpha=1e-2, tol=1e-9, max_iter=300).fit(X, y, sample_weight=weights)
    repeated = CRF(alpha=1e-2, tol=1e-9, max_iter=300).fit(
        [x for x, k in zip(X, weights, strict=True) for _ in range(k)],
        [t for t, k in zip(y, weights, strict=True) for _ in range(k)],
    )
    np.testing.assert_allclose(weighted.coef_, repeated.coef_, atol=1e-5)
    np.testing.assert_allclose(weighted.transition_, repeated.transition_, atol=1e-5)


def test_the_default_tolerance_stops_repeated_data_at_the_same_iteration(rng):
    X, y = make_sequences(rng, n_sequences=40)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        once = CRF(alpha=1e-3).fit(X, y)
        twice = CRF(alpha=1e-3).fit(X + X, y + y)
    assert 1 < once.n_iter_ < once.max_iter
    assert twice.n_iter_ == once.n_iter_
    np.testing.assert_allclose(twice.objective_curve_, once.objective_curve_, rtol=1e-9)


def test_softmax_margin_cost(rng):
    X, y = make_sequences(rng)
    plain = CRF(alpha=1e-2).fit(X, y)
    margin = CRF(alpha=1e-2, cost="hamming").fit(X, y)
    assert not np.allclose(plain.coef_, margin.coef_)
    weighted = CRF(alpha=1e-2, cost=HammingLoss(class_costs=[1.0, 1.0, 1.0])).fit(X, y)
    np.testing.assert_allclose(weighted.coef_, margin.coef_, atol=1e-8)


def test_warm_start_continues_from_previous_solution(rng):
    X, y = make_sequences(rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        crf = CRF(alpha=1e-2, max_iter=3, warm_start=True).fit(X, y)
        first = crf.objective_curve_[-1]
        crf.fit(X, y)
    assert crf.objective_curve_[0] < first
    X_other = [x[:, :3] for x in X]
    with pytest.raises(ValueError, match="warm_start"):
        crf.fit(X_other, y)


def test_convergence_warning(rng):
    X, y = make_sequences(rng)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        CRF(max_iter=1).fit(X, y)


def test_verbose_prints_progress(rng, capsys):
    X, y = make_sequences(rng)
    CRF(alpha=1e-2, verbose=1).fit(X, y)
    out = capsys.readouterr().out
    assert "objective" in out and "|grad|" in out


def test_callback_can_stop_training(rng):
    X, y = make_sequences(rng)
    calls = []
    crf = CRF(alpha=1e-2, callback=lambda it, w, f: calls.append(f) or it >= 2).fit(X, y)
    assert crf.n_iter_ == 2 and len(calls) == 2


def test_pickle_round_trip_predicts_the_same(rng):
    X, y = make_sequences(rng)
    crf = CRF(alpha=1e-2).fit(X, y)
    clone = pickle.loads(pickle.dumps(crf))
    expected, actual = crf.predict(X), clone.predict(X)
    assert len(expected) == len(actual) == len(X)
    for a, b, x in zip(actual, expected, X, strict=True):
        assert a.dtype == b.dtype and a.shape == (x.shape[0],)
        np.testing.assert_array_equal(a, b, strict=True)


def test_decision_function_holds_the_unary_scores(rng):
    X, y = make_sequences(rng)
    crf = CRF(alpha=1e-2).fit(X, y)
    blocks = crf.decision_function(X)
    assert len(blocks) == len(X)
    for x, scores in zip(X, blocks, strict=True):
        np.testing.assert_allclose(scores, x @ crf.coef_.T, strict=True)


class NoMarginals(Decoder):
    capabilities = frozenset({"map"})


@pytest.mark.parametrize(
    "X, y, message",
    [
        ([np.ones((2, 3))], [["a", "b", "c"]], "2 tokens in X but 3 labels"),
        ([np.ones((2, 3)), np.ones((1, 3))], [["a", "b"]], "2 sequences but y has 1"),
        ([np.array([[1.0, np.nan]])], [["a"]], "NaN or infinity"),
        ([np.array([[1.0, np.inf]])], [["a"]], "NaN or infinity"),
        ([], [], "no sequences"),
        ([np.ones((0, 3))], [[]], "empty"),
        # tabular data (multiclass): a 2-D X with one label per row
        (np.ones((4, 3)), ["a"] * 3, "X has 4 samples but y has 3"),
        (np.ones((4, 3)), ["a"] * 4, "at least 2 classes"),
        (np.ones((4, 3)), np.ones((4, 2, 2)), "y must be"),
        ([np.ones((2, 3)), np.ones((2, 4))], [["a", "b"], ["a", "b"]], "4 features"),
        ([np.ones((2, 3))], [["a", "a"]], "at least 2 classes"),
    ],
)
def test_bad_training_input(X, y, message):
    with pytest.raises((ValueError, TypeError), match=message):
        CRF().fit(X, y)


def test_bad_parameters_and_decoders(rng):
    X, y = make_sequences(rng, n_sequences=5)
    with pytest.raises(ValueError, match="alpha"):
        CRF(alpha=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="solver"):
        CRF(solver="newton").fit(X, y)
    with pytest.raises(ValueError, match="'marginals'.*NoMarginals"):
        CRF(decoder=NoMarginals()).fit(X, y)
    with pytest.raises(ValueError, match="sample_weight"):
        CRF().fit(X, y, sample_weight=np.ones(3))


def test_prediction_errors(rng):
    X, y = make_sequences(rng, n_sequences=5)
    with pytest.raises(NotFittedError):
        CRF().predict(X)
    crf = CRF().fit(X, y)
    with pytest.raises(ValueError, match="X has 3 features, but CRF is expecting 4 features as input"):
        crf.predict([x[:, :3] for x in X])
    with pytest.raises(ValueError, match="NaN"):
        crf.predict([np.full((2, 4), np.nan)])


def test_failed_fit_keeps_the_previous_model(rng):
    X, y = make_sequences(rng)
    crf = CRF(alpha=1e-2).fit(X, y)
    coef = crf.coef_.copy()
    with pytest.raises(ValueError):
        crf.fit([np.full((2, 4), np.nan)], [["a", "b"]])
    np.testing.assert_array_equal(crf.coef_, coef)
    assert crf.predict(X)[0].shape == X[0].shape[:1]
