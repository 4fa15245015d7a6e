"""Estimators on bipartite matchings: a synthetic assignment task learned by every
estimator that trains with MAP alone; the prediction form, the score, malformed input and
the CRF's refusal."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment
from sklearn.base import clone
from sklearn.model_selection import cross_validate

from skstruct import CRF, SparseMAPClassifier, StructuredPerceptron, StructuredSVM
from skstruct.decoders import ChainDecoder, MatchingDecoder

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

N_ENTITY_FEATURES = 3
#: Square, more rows than columns (unmatched rows), more columns than rows.
SHAPES = [(4, 4), (5, 5), (6, 4), (3, 5), (5, 3)]

LEARNERS = [
    StructuredSVM(decoder=MatchingDecoder(), alpha=1e-3, max_iter=10, random_state=0),
    StructuredSVM(decoder=MatchingDecoder(), alpha=1e-3, solver="subgradient", max_iter=10,
                  random_state=0),
    StructuredSVM(decoder=MatchingDecoder(), alpha=1e-3, solver="cutting_plane",
                  max_iter=50),
    StructuredPerceptron(decoder=MatchingDecoder(), max_iter=10, random_state=0),
    SparseMAPClassifier(decoder=MatchingDecoder(), alpha=1e-3, max_iter=50),
    SparseMAPClassifier(decoder=MatchingDecoder(), cost="hamming", alpha=1e-3, max_iter=50),
]


def _ids(estimator):
    params = estimator.get_params()
    return "-".join(str(v) for v in (type(estimator).__name__, params.get("solver"),
                                      params.get("cost")) if v is not None)


def pair_features(rows, cols):
    """Features of every (row, column) pair: |r_j - c_k| and r_j * c_k, per feature."""
    return np.concatenate([np.abs(rows[:, None, :] - cols[None, :, :]),
                           rows[:, None, :] * cols[None, :, :]], axis=2)


def make_assignments(rng, shapes, w):
    """Instances of the given shapes; gold matchings maximize the hidden score X @ w."""
    X, y = [], []
    for r, c in shapes:
        pairs = pair_features(rng.normal(size=(r, N_ENTITY_FEATURES)),
                              rng.normal(size=(c, N_ENTITY_FEATURES)))
        rows, cols = linear_sum_assignment(pairs @ w, maximize=True)
        matching = np.full(r, -1)
        matching[rows] = cols
        X.append(pairs)
        y.append(matching)
    return X, y


@pytest.fixture(scope="module")
def assignment_task():
    rng = np.random.default_rng(0)
    w = np.concatenate([-np.ones(N_ENTITY_FEATURES), 0.5 * rng.normal(size=N_ENTITY_FEATURES)])
    shapes = [SHAPES[i % len(SHAPES)] for i in range(50)]
    X_train, y_train = make_assignments(rng, shapes, w)
    X_test, y_test = make_assignments(rng, shapes, w)
    return X_train, y_train, X_test, y_test


def _is_matching(matching, r, c):
    matched = matching[matching >= 0]
    return (matching.shape == (r,) and np.all((-1 <= matching) & (matching < c))
            and len(set(matched.tolist())) == matched.size == min(r, c))


def _row_accuracy(y_true, y_pred):
    assert len(y_true) == len(y_pred)
    right = sum(int(np.sum(t == p)) for t, p in zip(y_true, y_pred, strict=True))
    return right / sum(len(t) for t in y_true)


@pytest.mark.parametrize("learner", LEARNERS, ids=_ids)
def test_learners_solve_the_assignment_task(learner, assignment_task):
    X, y, X_test, y_test = assignment_task
    model = clone(learner).fit(X, y)
    assert model.output_kind_ == "matching"
    assert model.classes_ is None
    assert model.coef_.shape == (2 * N_ENTITY_FEATURES,)
    predicted = model.predict(X_test)
    assert len(predicted) == len(X_test)
    for p, x in zip(predicted, X_test, strict=True):
        assert p.dtype == np.int64
        assert _is_matching(p, *x.shape[:2])
    # A random matching gets about a quarter of the rows right on these shapes.
    assert model.score(X, y) > 0.93
    assert model.score(X_test, y_test) > 0.9
    assert model.score(X_test, y_test) == pytest.approx(_row_accuracy(y_test, predicted))
    exact = np.mean([np.array_equal(p, t) for p, t in zip(predicted, y_test, strict=True)])
    assert exact > 0.7
    # Unmatched rows are predicted where the gold has them: rectangular instances work.
    tall = [i for i, x in enumerate(X_test) if x.shape[0] > x.shape[1]]
    assert tall and all(np.sum(predicted[i] == -1) == X_test[i].shape[0] - X_test[i].shape[1]
                        for i in tall)


def test_decision_function_holds_the_pair_scores(assignment_task):
    X, y, X_test, _ = assignment_task
    model = clone(LEARNERS[3]).fit(X, y)
    blocks = model.decision_function(X_test[:5])
    assert len(blocks) == 5
    for block, x in zip(blocks, X_test[:5], strict=True):
        assert block.shape == x.shape[:2]
        np.testing.assert_allclose(block, x @ model.coef_)
    # predict is the assignment that maximizes those scores.
    for block, p in zip(blocks, model.predict(X_test[:5]), strict=True):
        rows, cols = linear_sum_assignment(block, maximize=True)
        np.testing.assert_array_equal(p[rows], cols)


def test_sparsemap_marginals_and_distributions(assignment_task):
    X, y, X_test, _ = assignment_task
    model = clone(LEARNERS[4]).fit(X, y)
    blocks = model.predict_marginals(X_test[:5])
    distributions = model.predict_distribution(X_test[:5])
    assert len(blocks) == len(distributions) == 5
    for block, (matchings, weights), x in zip(blocks, distributions, X_test[:5], strict=True):
        r, c = x.shape[:2]
        assert block.shape == (r, c)
        assert weights.sum() == pytest.approx(1.0)
        expected = np.zeros((r, c))
        for matching, weight in zip(matchings, weights, strict=True):
            assert _is_matching(matching, r, c)
            expected[np.flatnonzero(matching >= 0), matching[matching >= 0]] += weight
        np.testing.assert_allclose(block, expected, atol=1e-10)
        # Every row (or column, when there are fewer) is matched with probability one.
        np.testing.assert_allclose(block.sum(axis=1 if r <= c else 0), 1.0)


def test_sparse_pair_features_give_the_dense_model(assignment_task):
    X, y, X_test, _ = assignment_task
    as_pairs = [(sp.csr_matrix(x.reshape(-1, x.shape[2])), x.shape[:2]) for x in X]
    dense = clone(LEARNERS[3]).fit(X, y)
    sparse = clone(LEARNERS[3]).fit(as_pairs, y)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-10, atol=1e-12)
    test_pairs = [(x.reshape(-1, x.shape[2]), x.shape[:2]) for x in X_test]
    for a, b in zip(sparse.predict(test_pairs), dense.predict(X_test), strict=True):
        np.testing.assert_array_equal(a, b)
    # A 4-D array of equal-shape instances is a list of them.
    square = [i for i, x in enumerate(X_test) if x.shape[:2] == (4, 4)]
    stacked = np.stack([X_test[i] for i in square])
    for a, i in zip(dense.predict(stacked), square, strict=True):
        np.testing.assert_array_equal(a, dense.predict([X_test[i]])[0])


def test_crf_refuses_matchings_and_says_why(assignment_task):
    X, y, _, _ = assignment_task
    with pytest.raises(ValueError, match="CRF cannot learn matching outputs.*'marginals'.*"
                                         "permanent.*#P-hard"):
        CRF(decoder=MatchingDecoder()).fit(X, y)
    # Also when the matching form of the data is recognized without a decoder.
    with pytest.raises(ValueError, match="CRF cannot learn matching outputs"):
        CRF().fit(X, y)


def test_matching_data_needs_the_matching_decoder(assignment_task):
    X, y, _, _ = assignment_task
    with pytest.raises(ValueError, match=r"look like matching data.*"
                                         r"StructuredSVM\(decoder=MatchingDecoder\(\)\)"):
        StructuredSVM().fit(X, y)
    with pytest.raises(ValueError, match="ChainDecoder, which decodes sequence outputs, but X "
                                         "and y look like matching data"):
        StructuredPerceptron(decoder=ChainDecoder()).fit(X, y)


def test_unsupported_losses_are_the_decoders_clear_errors(assignment_task):
    X, y, _, _ = assignment_task
    with pytest.raises(ValueError, match="Hamming loss only"):
        StructuredSVM(decoder=MatchingDecoder(), loss="zero_one", max_iter=1).fit(X, y)
    with pytest.raises(ValueError, match="rescaling='margin'"):
        StructuredSVM(decoder=MatchingDecoder(), rescaling="slack", solver="subgradient",
                      max_iter=1).fit(X, y)


MALFORMED = [
    # (X, y, message)
    ([np.ones((3, 3))], [np.array([0, 1, 2])], r"2 dimension\(s\).*x\[\.\.\., None\]"),
    ([np.ones((0, 3, 2))], [np.zeros(0, dtype=int)], "at least one row and one column"),
    ([np.ones((2, 2, 2)), np.ones((2, 2, 3))], [np.array([0, 1])] * 2,
     "Instance 1 of X has 3 features but instance 0 has 2"),
    ([sp.csr_matrix(np.ones((4, 2)))], [np.array([0, 1])], "sparse matrix.*n_rows, n_cols"),
    ([(np.ones((5, 2)), (2, 2))], [np.array([0, 1])], "needs a 2-D matrix of n_rows \\* "
                                                      "n_cols = 4 rows"),
    ([(np.ones((4, 2)), 2)], [np.array([0, 1])], r"not an \(n_rows, n_cols\) pair"),
    ([np.full((2, 2, 2), np.nan)], [np.array([0, 1])], "NaN or infinity"),
    ([np.ones((2, 2, 2))], [np.array([0, 1])] * 2, "X has 1 instances but y has 2"),
    ([np.ones((2, 2, 2))], [np.array([0, 1, 0])], r"2 rows in X but y\[0\] has shape \(3,\)"),
    ([np.ones((2, 2, 2))], [np.array([0.0, 1.0])], "column indices \\(integers"),
    ([np.ones((2, 2, 2))], [np.array([0, 2])], r"in 0 \.\. 1.*got 2"),
    ([np.ones((2, 2, 2))], [np.array([1, 1])], "matches column 1 to 2 rows"),
    ([np.ones((2, 3, 2))], [np.array([0, -1])], r"matches 1 of its 2 rows.*min\(n_rows, "
                                                r"n_cols\) = 2"),
    ([np.ones((3, 2, 2))], [np.array([0, -1, -1])], "matches 1 of its 3 rows"),
]


@pytest.mark.parametrize("X, y, message", MALFORMED)
def test_malformed_matching_input_is_a_clear_error(X, y, message):
    with pytest.raises(ValueError, match=message):
        StructuredPerceptron(decoder=MatchingDecoder(), max_iter=1).fit(X, y)


def test_prediction_input_is_checked(assignment_task):
    X, y, _, _ = assignment_task
    model = clone(LEARNERS[3]).fit(X[:5], y[:5])
    with pytest.raises(ValueError, match="expecting 6 features"):
        model.predict([np.ones((2, 2, 4))])
    with pytest.raises(TypeError, match="list of matching instances"):
        model.predict(np.ones((2, 2, 6)))


@pytest.mark.parametrize("learner", [LEARNERS[0], LEARNERS[1]], ids=_ids)
def test_threads_do_not_change_the_model(learner, assignment_task):
    X, y, _, _ = assignment_task
    one = clone(learner).set_params(n_jobs=1, max_iter=3).fit(X, y)
    two = clone(learner).set_params(n_jobs=2, max_iter=3).fit(X, y)
    np.testing.assert_array_equal(one.coef_, two.coef_)


def test_cross_validate_on_matchings(assignment_task):
    X, y, _, _ = assignment_task
    learner = clone(LEARNERS[3]).set_params(max_iter=3)
    parallel = cross_validate(learner, X, y, cv=2, n_jobs=2)
    serial = cross_validate(learner, X, y, cv=2, n_jobs=1)
    # Worker processes fit and score exactly what the parent process does.
    assert parallel["test_score"].shape == (2,)
    np.testing.assert_array_equal(parallel["test_score"], serial["test_score"])
    assert np.all(serial["test_score"] > 0.8)
