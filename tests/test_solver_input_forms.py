"""Every solver × every output kind × dense, sparse and mostly-zero dense features.

A model fitted on mostly-zero dense features must equal the model fitted on the same
features as CSR (solvers may switch to a sparse view internally: the switch must keep
the batch's layout, e.g. a tree batch's token offsets).
"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from skstruct import CRF, SparseMAPClassifier, StructuredPerceptron, StructuredSVM
from skstruct.decoders import TreeDecoder

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

N_FEATURES = 6


def _dense_features(rng, n_rows, form):
    """(n_rows, N_FEATURES) features: Gaussian ("dense") or one nonzero per row, mostly
    zero. The nonzeros are not all 1.0: two identical rows can make two outputs score
    exactly the same, and models equal to the last bit may then break the tie apart."""
    if form == "dense":
        return rng.normal(size=(n_rows, N_FEATURES))
    X = np.zeros((n_rows, N_FEATURES))
    X[np.arange(n_rows), rng.integers(0, N_FEATURES, size=n_rows)] = rng.uniform(
        0.5, 1.5, size=n_rows)
    return X


def _heads(rng, n):
    """A random tree on n tokens with CoNLL heads (each token's head comes earlier)."""
    return np.array([0] + [int(rng.integers(1, m + 1)) for m in range(1, n)])


def make_data(kind, form, seed=0):
    """Training data of one output kind; ``form`` in {"dense", "sparse", "mostly_zero"}."""
    rng = np.random.default_rng(seed)
    base = "dense" if form == "dense" else "mostly_zero"
    if kind == "sequence":
        lengths = rng.integers(1, 6, size=12)
        X = [_dense_features(rng, n, base) for n in lengths]
        y = [rng.choice(np.array(["B", "I", "O"]), size=n) for n in lengths]
    elif kind == "tree":
        lengths = rng.integers(1, 5, size=10)
        X = [_dense_features(rng, n * n, base) for n in lengths]
        y = [_heads(rng, n) for n in lengths]
    elif kind == "multiclass":
        X = _dense_features(rng, 30, base)
        y = rng.choice(np.array(["a", "b", "c"]), size=30)
    else:
        X = _dense_features(rng, 30, base)
        y = (rng.random((30, 3)) < 0.4).astype(int)
        y[:3] = [[1, 1, 1], [0, 0, 0], [1, 0, 1]]
    if form == "sparse":
        X = [sp.csr_matrix(x) for x in X] if isinstance(X, list) else sp.csr_matrix(X)
    return X, y


KINDS = ["sequence", "multiclass", "multilabel", "tree"]
SOLVERS = {
    "ssvm-bcfw": StructuredSVM(alpha=0.1, max_iter=5, random_state=0),
    "ssvm-subgradient-margin": StructuredSVM(alpha=0.1, solver="subgradient", max_iter=5,
                                             random_state=0),
    "ssvm-subgradient-slack": StructuredSVM(alpha=0.1, solver="subgradient",
                                            rescaling="slack", max_iter=5, random_state=0),
    "ssvm-cutting-plane": StructuredSVM(alpha=0.1, solver="cutting_plane", max_iter=5),
    "perceptron": StructuredPerceptron(max_iter=3, random_state=0),
    "crf-lbfgs": CRF(alpha=0.1, max_iter=10),
    "crf-lbfgsb": CRF(alpha=0.1, solver="lbfgsb", max_iter=10),
    "sparsemap-lbfgs": SparseMAPClassifier(alpha=0.1, max_iter=10),
}


def _estimator(name, kind):
    estimator = clone(SOLVERS[name])
    if kind == "tree":
        estimator.set_params(decoder=TreeDecoder())
    return estimator


def _accepts(name, kind):
    """False where the combination is a documented clear error (tested below)."""
    if name.startswith("crf") and kind in ("multiclass", "multilabel"):
        return False
    return not (name.endswith("slack") and kind == "tree")


def _check_prediction_form(kind, X, y, predicted):
    if kind in ("sequence", "tree"):
        assert len(predicted) == len(y)
        for p, t in zip(predicted, y, strict=True):
            assert p.shape == np.shape(t)
            if kind == "sequence":
                assert set(p.tolist()) <= {"B", "I", "O"}
            else:
                assert np.all((0 <= p) & (p <= len(t)))
    else:
        assert np.shape(predicted) == np.shape(y)


@pytest.mark.parametrize("form", ["dense", "sparse", "mostly_zero"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(SOLVERS))
def test_every_solver_fits_every_kind_and_input_form(name, kind, form):
    if not _accepts(name, kind):
        pytest.skip("a clear error: test_unsupported_combinations_are_clear_errors")
    X, y = make_data(kind, form)
    model = _estimator(name, kind).fit(X, y)
    assert model.output_kind_ == kind
    assert np.all(np.isfinite(model.coef_))
    _check_prediction_form(kind, X, y, model.predict(X))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(SOLVERS))
def test_mostly_zero_dense_features_give_the_sparse_model(name, kind):
    if not _accepts(name, kind):
        pytest.skip("a clear error: test_unsupported_combinations_are_clear_errors")
    X_dense, y = make_data(kind, "mostly_zero")
    X_sparse, _ = make_data(kind, "sparse")
    dense = _estimator(name, kind).fit(X_dense, y)
    sparse = _estimator(name, kind).fit(X_sparse, y)
    np.testing.assert_allclose(dense.coef_, sparse.coef_, rtol=1e-7, atol=1e-9)
    for a, b in zip(dense.predict(X_dense), sparse.predict(X_sparse), strict=True):
        np.testing.assert_array_equal(a, b)


def test_tree_bcfw_on_one_mostly_zero_sentence():
    """The smallest case: one two-token sentence with identity-like arc features."""
    model = StructuredSVM(decoder=TreeDecoder()).fit([np.eye(4, 3)], [np.array([0, 1])])
    assert [h.tolist() for h in model.predict([np.eye(4, 3)])] == [[0, 1]]


def test_unsupported_combinations_are_clear_errors():
    X, y = make_data("tree", "dense")
    with pytest.raises(ValueError, match="rescaling='margin'"):
        _estimator("ssvm-subgradient-slack", "tree").fit(X, y)
