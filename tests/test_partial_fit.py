"""partial_fit of the structured perceptron and the structured SVM's stochastic solvers."""

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_blobs
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import estimator_checks
from sklearn.utils.estimator_checks import (
    check_dataframe_column_names_consistency,
    check_estimators_partial_fit_n_features,
    check_n_features_in_after_fitting,
)

from skstruct import PerturbedMAPClassifier, StructuredPerceptron, StructuredSVM
from skstruct.losses import StructuredHingeLoss
from skstruct.optim import RegularizedRisk, structured_hinge_primal


def _blobs(n=240, seed=0):
    X, y = make_blobs(n, centers=4, n_features=5, cluster_std=2.5, random_state=seed)
    return X, np.array(["a", "b", "c", "d"])[y]


def _sequences(n_seq, seed, n_labels=3, n_features=8):
    """Tagging data: a Markov chain of labels, noisy one-hot features of each label."""
    rng = np.random.default_rng(seed)
    stay = 0.6
    X, y = [], []
    for _ in range(n_seq):
        length = int(rng.integers(3, 10))
        labels = [int(rng.integers(n_labels))]
        for _ in range(length - 1):
            labels.append(labels[-1] if rng.random() < stay else int(rng.integers(n_labels)))
        labels = np.array(labels)
        features = rng.normal(scale=1.0, size=(length, n_features))
        features[np.arange(length), labels] += 1.5
        X.append(features)
        y.append(np.array(["B", "I", "O"])[labels])
    return X, y


def _halves(X, y):
    half = len(y) // 2
    return (X[:half], y[:half]), (X[half:], y[half:])


def _quiet(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args, **kwargs)


def _params(model):
    return model._params()


# --- (a) partial fits equal one pass of fit where the algorithm guarantees it -----------

@pytest.mark.parametrize("averaging", [True, False])
@pytest.mark.parametrize("data", ["multiclass", "sequence"])
def test_perceptron_halves_equal_one_pass_of_fit(averaging, data):
    X, y = _blobs() if data == "multiclass" else _sequences(60, 0)
    (X1, y1), (X2, y2) = _halves(X, y)
    labels = np.unique(np.concatenate([np.ravel(v) for v in y]))
    full = StructuredPerceptron(max_iter=1, shuffle=False, averaging=averaging).fit(X, y)
    model = StructuredPerceptron(shuffle=False, averaging=averaging)
    model.partial_fit(X1, y1, classes=labels)
    model.partial_fit(X2, y2)
    np.testing.assert_array_equal(_params(model), _params(full))
    assert np.any(_params(model) != 0)


@pytest.mark.parametrize("averaging", [True, False])
@pytest.mark.parametrize("data", ["multiclass", "sequence"])
def test_subgradient_halves_equal_one_pass_of_fit(averaging, data):
    X, y = _blobs() if data == "multiclass" else _sequences(60, 1)
    (X1, y1), (X2, y2) = _halves(X, y)
    labels = np.unique(np.concatenate([np.ravel(v) for v in y]))
    kwargs = dict(solver="subgradient", alpha=0.05, shuffle=False, averaging=averaging)
    full = _quiet(StructuredSVM(max_iter=1, **kwargs).fit, X, y)
    model = StructuredSVM(**kwargs)
    model.partial_fit(X1, y1, classes=labels)
    model.partial_fit(X2, y2)
    # the same steps; only the rescaling of w = a v between passes rounds differently
    np.testing.assert_allclose(_params(model), _params(full), rtol=1e-12, atol=1e-12)
    assert model.t_ == full.t_ == len(y)


def test_perceptron_three_calls_equal_one_pass_with_weights_of_one():
    X, y = _sequences(45, 2)
    full = StructuredPerceptron(max_iter=1, shuffle=False).fit(X, y)
    model = StructuredPerceptron(shuffle=False)
    for start in range(0, 45, 15):
        model.partial_fit(X[start:start + 15], y[start:start + 15],
                          classes=["B", "I", "O"], sample_weight=np.ones(15))
    np.testing.assert_array_equal(_params(model), _params(full))


# --- (b) where it does not (BCFW across batches): continue sensibly ----------------------

def _training_objective(model, X, y):
    """(alpha / 2) ||w||^2 + mean structured hinge of ``model`` on (X, y)."""
    kind = model._fitted_kind()
    batch, classes, y_encoded = kind.check_training_data(X, y, "test")
    assert np.array_equal(classes, model.classes_)
    risk = RegularizedRisk(model._features(), batch, y_encoded, model.decoder_,
                           StructuredHingeLoss(model.loss_, "margin"), model.alpha,
                           np.ones(batch.n_sequences))
    return structured_hinge_primal(risk, _params(model))[0]


@pytest.mark.parametrize("solver", ["bcfw", "svrg", "casimir"])
def test_stochastic_svm_second_half_lowers_the_training_objective(solver):
    X, y = _blobs(480, seed=3)
    X_train, y_train, X_test, y_test = X[:320], y[:320], X[320:], y[320:]
    (X1, y1), (X2, y2) = _halves(X_train, y_train)
    model = StructuredSVM(solver=solver, alpha=0.01, random_state=0)
    model.partial_fit(X1, y1, classes=np.unique(y))
    after_first = _training_objective(model, X_train, y_train)
    model.partial_fit(X2, y2)
    after_both = _training_objective(model, X_train, y_train)
    assert after_both < after_first
    full = _quiet(StructuredSVM(solver=solver, alpha=0.01, max_iter=2,
                                random_state=0).fit, X_train, y_train)
    # one pass over each half against two passes of fit: held-out accuracy within 5 points
    assert model.score(X_test, y_test) >= full.score(X_test, y_test) - 0.05


def test_bcfw_minibatches_of_sentences_reach_the_accuracy_of_fit():
    X, y = _sequences(300, 4)
    X_train, y_train, X_test, y_test = X[:200], y[:200], X[200:], y[200:]
    full = _quiet(StructuredSVM(alpha=0.01, max_iter=3, random_state=0).fit,
                  X_train, y_train)
    model = StructuredSVM(alpha=0.01, random_state=0)
    for epoch in range(3):
        for start in range(0, 200, 25):
            model.partial_fit(X_train[start:start + 25], y_train[start:start + 25],
                              classes=["B", "I", "O"])
    assert not hasattr(model, "duality_gaps_")
    assert model.n_iter_ == 1 and model.objective_curve_.shape == (1,)
    assert model.t_ == 3 * 200
    # token accuracy of three passes of mini-batches within 2 points of three passes of fit
    assert model.score(X_test, y_test) >= full.score(X_test, y_test) - 0.02
    assert model.score(X_test, y_test) > 0.7


def test_perceptron_minibatches_of_sentences_reach_the_accuracy_of_fit():
    X, y = _sequences(300, 5)
    X_train, y_train, X_test, y_test = X[:200], y[:200], X[200:], y[200:]
    full = StructuredPerceptron(max_iter=3, random_state=0).fit(X_train, y_train)
    model = StructuredPerceptron(random_state=0)
    for epoch in range(3):
        for start in range(0, 200, 20):
            model.partial_fit(X_train[start:start + 20], y_train[start:start + 20],
                              classes=["B", "I", "O"])
    assert model.score(X_test, y_test) >= full.score(X_test, y_test) - 0.02


def test_a_batch_with_one_class_of_many():
    X, y = _blobs()
    model = StructuredSVM(solver="subgradient", random_state=0)
    keep = y == "a"
    model.partial_fit(X[keep], y[keep], classes=["a", "b", "c", "d"])
    model.partial_fit(X[~keep], y[~keep])
    assert model.classes_.tolist() == ["a", "b", "c", "d"]
    assert model.score(X, y) > 0.5


def test_multilabel_classes_are_implicit():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    Y = (X[:, :3] > 0).astype(int)
    model = StructuredSVM(random_state=0)
    model.partial_fit(X[:30], Y[:30])
    model.partial_fit(X[30:], Y[30:], classes=np.arange(3))
    assert model.classes_.tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match="label indices"):
        model.partial_fit(X[30:], Y[30:], classes=["x", "y", "z"])


# --- fit after partial_fit starts over; partial_fit after fit continues -----------------

def test_fit_after_partial_fit_starts_over():
    X, y = _blobs()
    fresh = StructuredPerceptron(random_state=0).fit(X, y)
    model = StructuredPerceptron(random_state=0)
    model.partial_fit(X[:50], y[:50], classes=np.unique(y))
    model.fit(X, y)
    np.testing.assert_array_equal(_params(model), _params(fresh))
    np.testing.assert_array_equal(model.objective_curve_, fresh.objective_curve_)


@pytest.mark.parametrize("solver", ["bcfw", "subgradient"])
def test_partial_fit_after_fit_continues_from_the_fitted_model(solver):
    X, y = _blobs()
    model = _quiet(StructuredSVM(solver=solver, max_iter=5, random_state=0).fit, X, y)
    t_fit, before = model.t_, _params(model).copy()
    model.partial_fit(X[:40], y[:40])
    assert model.t_ == t_fit + 40
    after = _params(model)
    # a small move from the fitted model, not a restart from zero
    assert 0 < np.linalg.norm(after - before) < 0.5 * np.linalg.norm(before)


# --- (c) errors --------------------------------------------------------------------------

@pytest.mark.parametrize("model", [StructuredPerceptron(), StructuredSVM(),
                                   PerturbedMAPClassifier()])
def test_first_call_without_classes_is_an_error(model):
    X, y = _blobs(40)
    with pytest.raises(ValueError, match="classes must be passed on the first call"):
        clone(model).partial_fit(X, y)
    X, y = _sequences(5, 0)
    with pytest.raises(ValueError, match="classes must be passed on the first call"):
        clone(model).partial_fit(X, y)


@pytest.mark.parametrize("model", [StructuredPerceptron(), StructuredSVM(),
                                   PerturbedMAPClassifier()])
def test_changed_classes_and_unseen_labels_are_errors(model):
    X, y = _blobs(40)
    model = clone(model).partial_fit(X, y, classes=["a", "b", "c", "d"])
    with pytest.raises(ValueError, match="not the same as on the first call"):
        model.partial_fit(X, y, classes=["a", "b", "c"])
    y_bad = y.copy()
    y_bad[3] = "z"
    with pytest.raises(ValueError, match=r"labels \['z'\] not in classes"):
        model.partial_fit(X, y_bad)
    with pytest.raises(ValueError, match=r"not in classes"):
        model.partial_fit(X, np.arange(40) % 4)
    with pytest.raises(ValueError, match="at least 2 labels"):
        clone(model).partial_fit(X, y, classes=["a"])
    X_seq, y_seq = _sequences(6, 1)
    seq = clone(model).partial_fit(X_seq, y_seq, classes=["B", "I", "O"])
    y_seq[2] = np.where(y_seq[2] == "O", "X", y_seq[2])
    y_seq[2][0] = "X"
    with pytest.raises(ValueError, match=r"labels \['X'\] not in classes"):
        seq.partial_fit(X_seq, y_seq)


@pytest.mark.parametrize("model", [StructuredPerceptron(), StructuredSVM(),
                                   PerturbedMAPClassifier()])
def test_changed_number_of_features_is_an_error(model):
    X, y = _blobs(40)
    model = clone(model).partial_fit(X, y, classes=np.unique(y))
    with pytest.raises(ValueError, match="X has 4 features, but .* is expecting 5"):
        model.partial_fit(X[:, :4], y)
    X_seq, y_seq = _sequences(6, 1)
    with pytest.raises(ValueError, match="trained on multiclass outputs"):
        model.partial_fit(X_seq, y_seq)
    seq = clone(model).partial_fit(X_seq, y_seq, classes=["B", "I", "O"])
    with pytest.raises(ValueError, match="features"):
        seq.partial_fit([x[:, :5] for x in X_seq], y_seq)


@pytest.mark.parametrize("solver, rescaling", [("cutting_plane", "margin"),
                                               ("cutting_plane", "slack"),
                                               ("bcfw", "slack")])
def test_a_solver_that_cannot_continue_has_no_partial_fit(solver, rescaling):
    X, y = _blobs(40)
    model = StructuredSVM(solver=solver, rescaling=rescaling)
    assert not hasattr(model, "partial_fit")
    with pytest.raises(AttributeError, match="has no attribute 'partial_fit': "
                                             "solver=.*use solver="):
        model.partial_fit(X, y, classes=np.unique(y))
    # the solvers that can, can
    assert hasattr(StructuredSVM(solver="subgradient", rescaling=rescaling), "partial_fit")


def test_a_failed_call_keeps_the_model():
    X, y = _blobs(40)
    model = StructuredPerceptron(shuffle=False).partial_fit(X, y, classes=np.unique(y))
    before = _params(model).copy()
    with pytest.raises(ValueError):
        model.partial_fit(X[:, :4], y)
    model.partial_fit(X, y)
    again = StructuredPerceptron(shuffle=False).partial_fit(X, y, classes=np.unique(y))
    again.partial_fit(X, y)
    np.testing.assert_array_equal(_params(model), _params(again))
    assert np.any(_params(model) != before)


@pytest.mark.parametrize("averaging", [True, False])
@pytest.mark.parametrize("model", [StructuredPerceptron(shuffle=False),
                                   StructuredSVM(solver="subgradient", shuffle=False),
                                   StructuredSVM(solver="bcfw", shuffle=False)],
                         ids=["perceptron", "subgradient", "bcfw"])
def test_later_calls_leave_the_arrays_of_earlier_results_alone(model, averaging):
    # the solvers take the kept state's arrays over instead of copying them: the
    # coefficients a call returned must not be among them
    X, y = _sequences(60, 2)
    thirds = [(X[i::3], y[i::3]) for i in range(3)]
    labels = np.unique(np.concatenate([np.ravel(v) for v in y]))
    model = clone(model).set_params(averaging=averaging)
    _quiet(model.partial_fit, *thirds[0], classes=labels)
    held = {name: getattr(model, name) for name in ("coef_", "transition_")}
    copies = {name: value.copy() for name, value in held.items()}
    for X_part, y_part in thirds[1:]:
        _quiet(model.partial_fit, X_part, y_part)
    for name, value in held.items():
        np.testing.assert_array_equal(value, copies[name], err_msg=name)
    assert not np.array_equal(model.coef_, copies["coef_"])


# --- (d) scikit-learn's checks of partial_fit --------------------------------------------
# scikit-learn passes ``classes`` to the first partial_fit of classifiers only; these
# estimators are not tagged classifiers (they learn sequences, trees...), so the checks
# run here with ``is_classifier`` answering True for them.

@pytest.mark.parametrize("model", [StructuredPerceptron(random_state=0),
                                   StructuredSVM(random_state=0),
                                   StructuredSVM(solver="subgradient", random_state=0),
                                   PerturbedMAPClassifier(max_iter=10, random_state=0)])
@pytest.mark.parametrize("check", [check_estimators_partial_fit_n_features,
                                   check_n_features_in_after_fitting,
                                   check_dataframe_column_names_consistency])
def test_scikit_learn_partial_fit_checks(model, check, monkeypatch):
    monkeypatch.setattr(estimator_checks, "is_classifier", lambda estimator: True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(type(model).__name__, model)


# --- the Python fallback (a user's decoder) continues the same state -------------------

def _risk(X, y, loss, alpha):
    from skstruct.outputs import get_output_kind

    kind = get_output_kind("multiclass")
    batch, classes, y_encoded = kind.check_training_data(X, y, "test")
    return RegularizedRisk(kind.feature_map(batch.n_features, classes), batch, y_encoded,
                           kind.default_decoder(), loss, alpha, np.ones(batch.n_sequences))


@pytest.mark.parametrize("solver", ["perceptron", "subgradient", "bcfw"])
def test_python_fallback_continues_as_the_compiled_passes(solver):
    from skstruct.losses import PerceptronLoss
    from skstruct.optim import minimize_bcfw, minimize_subgradient, perceptron

    X, y = _blobs(80)
    halves = _halves(X, y)
    if solver == "perceptron":
        loss, run = PerceptronLoss(), perceptron
    else:
        loss = StructuredHingeLoss(rescaling="margin")
        run = minimize_subgradient if solver == "subgradient" else minimize_bcfw
    models = []
    for force in (False, True):
        state = {}
        for X_half, y_half in halves:
            result = _quiet(run, _risk(X_half, y_half, loss, 0.1), max_iter=1,
                            shuffle=False, state=state, _force_python=force)
            state = result.extra["state"]
        models.append(result.w)
    np.testing.assert_allclose(models[1], models[0], rtol=1e-9, atol=1e-12)
    assert np.any(models[0] != 0)


def test_trees_need_no_classes():
    from skstruct.datasets import load_ud_english_ewt
    from skstruct.decoders import TreeDecoder
    from skstruct.preprocessing import ArcVectorizer

    sentences = [s for s in load_ud_english_ewt("dev") if len(s["head"]) <= 10][:60]
    X = ArcVectorizer(n_features=2**12).fit(sentences).transform(sentences)
    y = [s["head"] for s in sentences]
    parser = StructuredSVM(decoder=TreeDecoder(), alpha=1e-2, random_state=0)
    for epoch in range(2):
        for start in range(0, 60, 20):
            parser.partial_fit(X[start:start + 20], y[start:start + 20])
    assert parser.classes_ is None and parser.t_ == 120
    assert parser.score(X, y) > 0.6
    with pytest.raises(ValueError, match="have no classes"):
        parser.partial_fit(X[:5], y[:5], classes=[0, 1])


def test_user_guide_partial_fit_example_runs():
    import doctest
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "doc" / "user_guide"
            / "structured_svm.rst")
    if not page.exists():
        pytest.skip("the documentation sources are not next to the tests")
    result = doctest.testfile(str(page), module_relative=False,
                              optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


# --- a solver registered from outside: its declarations reach the estimator -----------

@pytest.fixture
def toy_solver(monkeypatch):
    """A gradient-step solver registered for one test with partial_fit, its own
    ``learning_rate`` and a duality-gap stopping rule; ``calls`` records what it got."""
    from skstruct.optim import OptimizeResult, register_solver
    from skstruct.optim import _registry

    monkeypatch.setattr(_registry, "_REGISTRY", dict(_registry._REGISTRY))
    calls = []

    def run(risk, w0, options):
        state = options.get("state")
        calls.append({"state": state, "learning_rate": options.get("learning_rate"),
                      "smoothing": options.get("smoothing")})
        w = w0 if not state else state["w"]
        t = state["t"] if state else options.get("first_step", 0)
        w = w - options["learning_rate"] * risk.value_and_gradient(w)[1]
        return OptimizeResult(w=w, n_iter=1, converged=False,
                              objective_curve=[risk.value(w)],
                              extra={"t": t + 1, "oracle_calls": [risk.n_examples],
                                     "state": {"w": w, "t": t + 1}})

    register_solver("toy_step", run, losses={"hinge_margin"}, warm_start=False,
                    partial_fit=True, parameters={"learning_rate"},
                    initial_state=lambda w, t, seen: {"w": w, "t": t, "seen": seen},
                    stops_on_duality_gap=True, description="one gradient step")
    return calls


def test_a_registered_solver_trains_and_continues_through_its_registration(toy_solver):
    calls = toy_solver
    X, y = _blobs(60)
    model = StructuredSVM(solver="toy_step", learning_rate=0.5, max_iter=1, tol=0.0)
    # its stopping rule is a duality gap, so stopping at max_iter warns even with tol=0
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        model.fit(X, y)
    assert calls[-1] == {"state": None, "learning_rate": 0.5, "smoothing": None}
    fitted = _params(model).copy()
    # partial_fit after fit starts from the state the solver declares for coefficients
    model.partial_fit(X[:20], y[:20])
    state = calls[-1]["state"]
    assert state["seen"] == 60.0 and state["t"] == model.t_ - 1
    np.testing.assert_array_equal(state["w"], fitted)
    # and a later call from the state the previous call returned
    after_first = _params(model).copy()
    model.partial_fit(X[20:40], y[20:40])
    assert "seen" not in calls[-1]["state"]
    np.testing.assert_array_equal(calls[-1]["state"]["w"], after_first)
