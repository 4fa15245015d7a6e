"""PerturbedMAPClassifier trains through the registered solver "perturbed_ascent": its
callback, verbose lines and result are the shared ones; ``uniform_start`` and the
deprecated ``alpha``."""

import re
import warnings

import numpy as np
import pytest
from sklearn.base import clone

from skstruct import PerturbedMAPClassifier
from skstruct.losses._randomized import RandomizedLikelihoodLoss
from skstruct.optim import get_solver, loss_family, solver_names
from skstruct.optim import _registry


def _multilabel_data(n=30, n_labels=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    Y = (X @ rng.normal(size=(5, n_labels)) * 2 + rng.normal(size=(n, n_labels)) > 0)
    return X, Y.astype(np.int64)


@pytest.fixture
def recorded_runs(monkeypatch):
    """The registry's "perturbed_ascent" wrapped: every run's options and result."""
    runs = []
    spec = get_solver("perturbed_ascent")

    def run(risk, w0, options):
        result = spec.run(risk, w0, options)
        runs.append((options, result))
        return result

    monkeypatch.setattr(_registry, "_REGISTRY", dict(_registry._REGISTRY))
    _registry.register_solver("perturbed_ascent", run, losses=spec.losses,
                              warm_start=spec.warm_start, description=spec.description,
                              l1=spec.l1, replace=True)
    return runs


def test_the_solver_is_registered_for_the_randomized_likelihood():
    spec = get_solver("perturbed_ascent")
    assert spec.losses == {"randomized_likelihood"}
    assert spec.l1 and spec.warm_start
    assert solver_names("randomized_likelihood") == {"perturbed_ascent"}
    assert loss_family(RandomizedLikelihoodLoss(candidates=None, beta=1.0)) == (
        "randomized_likelihood")


def test_fit_trains_through_the_registered_solver_and_stores_its_result(recorded_runs):
    X, Y = _multilabel_data()
    model = PerturbedMAPClassifier(candidates="proposal", max_iter=4, random_state=0, learning_rate=0.5,
                                   l1=0.02).fit(X, Y)
    assert len(recorded_runs) == 1
    options, result = recorded_runs[0]
    assert options["max_iter"] == 4 and options["learning_rate"] == 0.5
    assert options["l1"] == 0.02
    np.testing.assert_array_equal(model._params(), result.w)
    assert model.n_iter_ == result.n_iter == 4
    np.testing.assert_array_equal(model.objective_curve_, result.objective_curve)
    # no stopping rule but max_iter: not converged, said so
    assert not result.converged and result.message == "maximum number of iterations reached"


def test_callback_is_called_once_per_iteration_with_the_documented_arguments():
    X, Y = _multilabel_data()
    seen = []
    model = PerturbedMAPClassifier(
        max_iter=5, random_state=0,
        callback=lambda n_iter, w, objective: seen.append((n_iter, w.copy(), objective)),
    ).fit(X, Y)
    assert [n_iter for n_iter, _, _ in seen] == [1, 2, 3, 4, 5]
    # the objective is the iteration's randomized loss, as recorded in objective_curve_
    np.testing.assert_array_equal([objective for _, _, objective in seen],
                                  model.objective_curve_)
    # w is the flat parameter vector after the step: the last one is the fitted model
    np.testing.assert_array_equal(seen[-1][1], model._params())
    assert not np.array_equal(seen[0][1], seen[1][1])


def test_a_callback_returning_true_stops_after_that_iteration(recorded_runs):
    X, Y = _multilabel_data()
    stopped = PerturbedMAPClassifier(candidates="proposal", max_iter=10, random_state=0,
                                     callback=lambda n_iter, w, objective: n_iter == 3)
    stopped.fit(X, Y)
    assert stopped.n_iter_ == 3 and stopped.objective_curve_.shape == (3,)
    assert not recorded_runs[-1][1].converged
    assert recorded_runs[-1][1].message == "stopped by callback"
    # the same draws as a run of 3 iterations
    three = PerturbedMAPClassifier(candidates="proposal", max_iter=3, random_state=0).fit(X, Y)
    np.testing.assert_array_equal(stopped.coef_, three.coef_)


def test_verbose_prints_one_progress_line_per_iteration(capsys):
    X, Y = _multilabel_data()
    PerturbedMAPClassifier(candidates="proposal", max_iter=4, random_state=0, verbose=1).fit(X, Y)
    # where its kernels are not cached yet, the first fit says so first, on its own line
    lines = [line for line in capsys.readouterr().out.splitlines()
             if not line.startswith("compiling ")]
    assert len(lines) == 4
    for n, line in enumerate(lines, start=1):
        assert re.match(rf"iter\s+{n}/4  objective\s+\S+  candidates \S+  nonzero \d+  "
                        r"time\s+\S+", line), line


def test_uniform_start_is_the_probability_of_a_uniform_start():
    X, Y = _multilabel_data()
    params = dict(candidates="proposal", max_iter=4, random_state=0)
    never = PerturbedMAPClassifier(uniform_start=0.0, **params).fit(X, Y)
    always = PerturbedMAPClassifier(uniform_start=1.0, **params).fit(X, Y)
    assert never.decoder_calls_["sample_uniform"] == 0
    assert always.decoder_calls_["sample_uniform"] == 4
    assert not np.array_equal(never.coef_, always.coef_)
    with pytest.raises(ValueError, match="uniform_start"):
        PerturbedMAPClassifier(uniform_start=1.5).fit(X, Y)


@pytest.mark.parametrize("value", [0.5, "auto"])
def test_alpha_is_deprecated_and_fits_as_uniform_start(value):
    X, Y = _multilabel_data()
    params = dict(max_iter=5, random_state=0)
    with pytest.warns(FutureWarning, match="'alpha' was renamed 'uniform_start'"):
        old = PerturbedMAPClassifier(alpha=value, **params).fit(X, Y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        new = PerturbedMAPClassifier(uniform_start=value, **params).fit(X, Y)
    np.testing.assert_array_equal(old.coef_, new.coef_)
    np.testing.assert_array_equal(old.intercept_, new.intercept_)
    np.testing.assert_array_equal(old.objective_curve_, new.objective_curve_)
    # alpha wins over uniform_start when both are given
    with pytest.warns(FutureWarning):
        both = PerturbedMAPClassifier(alpha=value, uniform_start=0.0, **params).fit(X, Y)
    np.testing.assert_array_equal(both.coef_, new.coef_)


def test_alpha_sentinel_survives_get_params_and_clone():
    model = PerturbedMAPClassifier(uniform_start=0.25)
    assert model.get_params()["alpha"] == "deprecated"
    assert model.get_params()["uniform_start"] == 0.25
    old = clone(PerturbedMAPClassifier(alpha=0.25))
    assert old.alpha == 0.25 and old.uniform_start == "auto"
    with pytest.raises(ValueError, match="alpha"):
        PerturbedMAPClassifier(alpha=2.0).fit(*_multilabel_data())
