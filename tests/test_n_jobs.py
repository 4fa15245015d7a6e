"""``n_jobs=2`` gives the model of ``n_jobs=1`` (compiled kernels on 1 or 2 threads).

Small batches run on one thread whatever ``n_jobs`` says (``MIN_WORK_PER_THREAD``); the
tests lower that threshold so that two threads really run.
"""

import numba
import numpy as np
import pytest
from sklearn.base import clone

from skstruct import SparseMAPClassifier, StructuredPerceptron, StructuredSVM
from skstruct.decoders import TreeDecoder
from skstruct.utils import _parallel

from test_solver_input_forms import make_data

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

MODELS = {
    "ssvm-bcfw": StructuredSVM(alpha=0.1, max_iter=4, random_state=0),
    "ssvm-subgradient-slack-f1": StructuredSVM(alpha=0.1, loss="f1", rescaling="slack",
                                               solver="subgradient", max_iter=4,
                                               random_state=0),
    "ssvm-cutting-plane": StructuredSVM(alpha=0.1, solver="cutting_plane", max_iter=4),
    "perceptron": StructuredPerceptron(max_iter=3, random_state=0),
}


@pytest.fixture
def many_threads(monkeypatch):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has a single thread here")
    monkeypatch.setattr(_parallel, "MIN_WORK_PER_THREAD", 1)


def _fit_with_threads(estimator, n_jobs, X, y):
    model = clone(estimator).set_params(n_jobs=n_jobs).fit(X, y)
    return model, model.predict(X)


@pytest.mark.parametrize("kind", ["sequence", "multiclass", "multilabel", "tree"])
@pytest.mark.parametrize("name", list(MODELS))
def test_two_threads_give_the_one_thread_model(name, kind, many_threads):
    if kind == "tree" and "slack" in name:
        pytest.skip("slack rescaling has no exact loss-augmented inference on trees")
    estimator = clone(MODELS[name])
    if kind == "tree":
        estimator.set_params(decoder=TreeDecoder())
    X, y = make_data(kind, "sparse", seed=3)
    one, predicted_one = _fit_with_threads(estimator, 1, X, y)
    two, predicted_two = _fit_with_threads(estimator, 2, X, y)
    np.testing.assert_allclose(two.coef_, one.coef_, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(two.objective_curve_, one.objective_curve_, rtol=1e-12)
    assert len(predicted_one) == len(predicted_two)
    for a, b in zip(predicted_one, predicted_two, strict=True):
        np.testing.assert_array_equal(a, b)


def test_sparsemap_classifier_is_thread_count_independent(many_threads):
    X, y = make_data("sequence", "sparse", seed=3)
    models = []
    for n_threads in (1, 2):
        previous = numba.get_num_threads()
        numba.set_num_threads(n_threads)
        try:
            models.append(SparseMAPClassifier(alpha=0.1, max_iter=10).fit(X, y))
        finally:
            numba.set_num_threads(previous)
    np.testing.assert_allclose(models[1].coef_, models[0].coef_, rtol=1e-10, atol=1e-12)
