"""Estimators on directed acyclic graphs (the "dag" output kind): a synthetic task learned
by StructuredSVM and PerturbedMAPClassifier, the CRF against a brute-force likelihood, the
prediction form, the score and bad input."""

import itertools
import warnings

import numpy as np
import pytest
from sklearn.base import clone

from skstruct import CRF, PerturbedMAPClassifier, StructuredSVM
from skstruct.decoders import DAGDecoder, DAGScores
from skstruct.outputs import get_output_kind

N_NODES, N_FEATURES = 4, 5

LEARNERS = [
    StructuredSVM(decoder=DAGDecoder(), alpha=1e-3, solver="cutting_plane", max_iter=50),
    PerturbedMAPClassifier(decoder=DAGDecoder(), max_iter=30, random_state=0),
    PerturbedMAPClassifier(decoder=DAGDecoder(), candidates="all", max_iter=6),
]


def _ids(estimator):
    return f"{type(estimator).__name__}-{estimator.get_params().get('candidates', '')}"


def make_graphs(rng, m, w, n=N_NODES):
    """Arc features x_pc ~ N(0, I); gold DAGs maximize Σ arcs x_pc · w (<= 2 parents)."""
    X = [rng.normal(size=(n * n, w.shape[0])) for _ in range(m)]
    scores = DAGScores(np.concatenate([x @ w for x in X]), np.full(m, n))
    y = DAGDecoder(max_parents=2).map(scores).reshape(m, n, n)
    return X, list(y)


@pytest.fixture(scope="module")
def dag_task():
    rng = np.random.default_rng(0)
    w = 2.0 * rng.normal(size=N_FEATURES)
    return make_graphs(rng, 40, w) + make_graphs(rng, 40, w)


def _is_dag(a, max_parents=2):
    a = np.asarray(a)
    if np.any(np.diag(a)) or np.any(a.sum(axis=0) > max_parents):
        return False
    return not np.any(np.linalg.matrix_power(a, a.shape[0]))


def _arc_accuracy(y_true, y_pred):
    off = ~np.eye(N_NODES, dtype=bool)
    return np.mean([np.mean(t[off] == p[off]) for t, p in zip(y_true, y_pred, strict=True)])


@pytest.mark.parametrize("learner", LEARNERS, ids=_ids)
def test_learners_learn_dags(learner, dag_task):
    X, y, X_test, y_test = dag_task
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = clone(learner).fit(X, y)
    assert model.output_kind_ == "dag"
    assert model.classes_ is None
    assert model.coef_.shape == (N_FEATURES,)
    predicted = model.predict(X_test)
    assert len(predicted) == len(X_test)
    assert all(p.shape == (N_NODES, N_NODES) and p.dtype == np.int64 and _is_dag(p)
               for p in predicted)
    # The empty graph gets about 0.75 of the ordered pairs right here (about 3 arcs of 12).
    assert model.score(X_test, y_test) > 0.9
    assert model.score(X_test, y_test) == pytest.approx(_arc_accuracy(y_test, predicted))
    if isinstance(model, PerturbedMAPClassifier):
        assert model.decoder_calls_["map"] == 0


def test_decision_function_and_predict_are_the_arc_scores_and_their_map(dag_task):
    X, y, X_test, _ = dag_task
    model = clone(LEARNERS[0]).fit(X, y)
    blocks = model.decision_function(X_test[:4])
    assert [b.shape for b in blocks] == [(N_NODES, N_NODES)] * 4
    for block, x in zip(blocks, X_test[:4], strict=True):
        np.testing.assert_allclose(block.ravel(), x @ model.coef_)
    expected = DAGDecoder().map(DAGScores.from_blocks(blocks))
    np.testing.assert_array_equal(np.concatenate([p.ravel() for p in model.predict(
        X_test[:4])]), expected)


def test_raveled_adjacency_matrices_give_the_same_model(dag_task):
    X, y, _, _ = dag_task
    square = clone(LEARNERS[0]).fit(X, y)
    raveled = clone(LEARNERS[0]).fit(X, [a.ravel() for a in y])
    np.testing.assert_array_equal(square.coef_, raveled.coef_)


def test_score_counts_ordered_pairs_off_the_diagonal():
    kind = get_output_kind("dag")
    gold = [np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]]), np.zeros((2, 2), dtype=int)]
    pred = [np.array([[0, 0, 0], [1, 0, 1], [0, 0, 0]]), np.array([[0, 1], [0, 0]])]
    # 4 of 6 pairs right in the first graph, 1 of 2 in the second
    assert kind.score(gold, pred) == pytest.approx(5 / 8)
    assert kind.score(gold, pred, sample_weight=[1, 0]) == pytest.approx(4 / 6)


def test_bad_dag_input(dag_task):
    X, y, _, _ = dag_task
    svm = clone(LEARNERS[0])
    cycle = np.zeros((N_NODES, N_NODES), dtype=int)
    cycle[0, 1] = cycle[1, 2] = cycle[2, 0] = 1
    with pytest.raises(ValueError, match="cycle"):
        svm.fit(X[:3], [y[0], cycle, y[2]])
    three_parents = np.zeros((N_NODES, N_NODES), dtype=int)
    three_parents[:3, 3] = 1
    with pytest.raises(ValueError, match="3 parents"):
        svm.fit(X[:2], [y[0], three_parents])
    with pytest.raises(ValueError, match="itself"):
        svm.fit(X[:2], [y[0], np.eye(N_NODES, dtype=int)])
    with pytest.raises(ValueError, match="n \\* n arc rows"):
        svm.fit([np.ones((5, N_FEATURES))], [np.zeros((2, 2), dtype=int)])
    with pytest.raises(ValueError, match="adjacency matrix or its ravel"):
        svm.fit(X[:2], [y[0], np.zeros((3, 3), dtype=int)])
    with pytest.raises(ValueError, match="0/1 adjacency"):
        svm.fit(X[:2], [y[0], 2 * y[1]])
    with pytest.raises(ValueError, match="graphs but y has"):
        svm.fit(X[:3], [a.ravel() for a in y[:2]])
    with pytest.raises(ValueError, match="decoder=DAGDecoder"):
        StructuredSVM().fit(X[:3], y[:3])
    fitted = clone(LEARNERS[0]).fit(X[:5], y[:5])
    with pytest.raises(ValueError, match="expecting 5 features"):
        fitted.predict([np.ones((16, 7))])


def _all_dags(n):
    """Every DAG on n nodes, by filtering all 0/1 matrices with a zero diagonal."""
    off = ~np.eye(n, dtype=bool)
    graphs = []
    for bits in itertools.product((0, 1), repeat=n * (n - 1)):
        a = np.zeros((n, n), dtype=int)
        a[off] = bits
        if not np.any(np.linalg.matrix_power(a, n)):
            graphs.append(a)
    return np.array(graphs)


def _brute_force_crf_objective(X, y, w, alpha):
    """The CRF's F(w) = mean_i [log Σ_y exp θ_y − θ_{y_i}] + alpha/2 ‖w‖², summing over
    every DAG, and its gradient."""
    n = y[0].shape[0]
    dags = _all_dags(n).reshape(-1, n * n).astype(float)
    value, grad = 0.5 * alpha * w @ w, alpha * w
    for x, gold in zip(X, y, strict=True):
        arc_scores = x @ w
        theta = dags @ arc_scores
        p = np.exp(theta - theta.max())
        p /= p.sum()
        value += (np.log(np.exp(theta - theta.max()).sum()) + theta.max()
                  - gold.ravel() @ arc_scores) / len(X)
        grad += x.T @ (p @ dags - gold.ravel()) / len(X)
    return value, grad


def test_crf_learns_dags_through_their_marginals():
    from scipy.optimize import minimize

    from skstruct.optim import RegularizedRisk
    from skstruct.losses import CRFLoss
    from skstruct.outputs._dag import LinearDAGFeatures, check_dags

    rng = np.random.default_rng(3)
    w_true = 2.0 * rng.normal(size=3)
    X, y = make_graphs(rng, 12, w_true, n=3)
    y[0] = np.ones((3, 3), dtype=int) - np.tril(np.ones((3, 3), dtype=int))  # off the MAP
    alpha = 1e-2
    # the objective CRF trains is the brute-force likelihood, gradient included
    batch, y_encoded = check_dags(X, y)
    risk = RegularizedRisk(LinearDAGFeatures(3), batch, y_encoded, DAGDecoder(),
                           CRFLoss(), alpha, np.ones(len(X)))
    w = rng.normal(size=3)
    value, grad = risk.value_and_gradient(w)
    expected_value, expected_grad = _brute_force_crf_objective(X, y, w, alpha)
    assert value == pytest.approx(expected_value, rel=1e-12)
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-10, atol=1e-12)
    step = 1e-6 * np.eye(3)
    finite = [(_brute_force_crf_objective(X, y, w + e, alpha)[0]
               - _brute_force_crf_objective(X, y, w - e, alpha)[0]) / 2e-6 for e in step]
    np.testing.assert_allclose(grad, finite, rtol=1e-6)
    # and the fit reaches the brute-force optimum
    crf = CRF(decoder=DAGDecoder(), alpha=alpha, tol=1e-10, max_iter=500).fit(X, y)
    optimum = minimize(lambda v: _brute_force_crf_objective(X, y, v, alpha), np.zeros(3),
                       jac=True, method="BFGS", options={"gtol": 1e-12})
    assert crf.output_kind_ == "dag"
    np.testing.assert_allclose(crf.coef_, optimum.x, atol=1e-6)
    assert crf.objective_curve_[-1] == pytest.approx(optimum.fun, rel=1e-10)
    marginals = crf.predict_marginals(X[:2])
    assert [m.shape for m in marginals] == [(3, 3)] * 2
    assert not hasattr(crf, "predict_proba")  # marginals of arcs, not of classes


def test_dag_parts_of_one_example_are_a_view():
    from skstruct.decoders import DAGParts

    parts = DAGParts(np.arange(4.0 + 9.0), np.array([2, 3]))
    second = parts.example(1)
    assert second.n_examples == 1
    np.testing.assert_array_equal(second.block(0), np.arange(4.0, 13.0).reshape(3, 3))
    second.unary[0] = -1.0
    assert parts.unary[4] == -1.0
