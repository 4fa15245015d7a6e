"""The solver registry: names per loss family, checks, adapters and the thread count."""

import numba
import numpy as np
import pytest

from skstruct.decoders import ChainDecoder, MulticlassDecoder, MulticlassScores
from skstruct.features import LinearChainFeatures, LinearFeatures
from skstruct.losses import CRFLoss, PerceptronLoss, StructuredHingeLoss
from skstruct.optim import (
    LOSS_FAMILIES,
    OptimizeResult,
    RegularizedRisk,
    check_solver,
    get_solver,
    loss_family,
    minimize_bcfw,
    minimize_cutting_plane,
    minimize_lbfgs,
    minimize_subgradient,
    perceptron,
    register_solver,
    run_solver,
    solver_names,
)
from skstruct.optim._casimir import minimize_casimir
from skstruct.optim._registry import unregister_solver
from skstruct.optim._solvers import CUTTING_PLANE_CACHE_SIZE, cutting_plane_cache_size
from skstruct.optim._svrg import minimize_svrg
from skstruct.utils import SequenceBatch
from skstruct.utils._parallel import n_jobs_threads, n_jobs_threads_count


def _chain_risk(rng, loss, alpha=0.1):
    offsets = np.array([0, 3, 5, 9, 12, 14])
    X = rng.normal(size=(14, 4))
    y = rng.integers(0, 3, size=14)
    return RegularizedRisk(LinearChainFeatures(4, 3), SequenceBatch(X, offsets), y,
                           ChainDecoder(), loss, alpha, np.ones(5))


OPTIONS = dict(max_iter=4, tol=0.0, averaging=True, random_state=0, verbose=0,
               callback=None)


def test_names_per_family():
    assert solver_names("hinge_margin", "hinge_slack") == {
        "bcfw", "subgradient", "cutting_plane", "svrg", "casimir"}
    assert solver_names("hinge_margin") == {"bcfw", "subgradient", "cutting_plane",
                                            "svrg", "casimir"}
    assert solver_names("hinge_slack") == {"subgradient", "cutting_plane"}
    assert solver_names("perceptron") == {"perceptron"}
    assert solver_names("smooth") == {"lbfgs", "lbfgsb", "owlqn", "svrg"}
    with pytest.raises(ValueError, match="Unknown loss families"):
        solver_names("hinge")


def test_every_solver_has_a_description_and_known_families():
    names = solver_names(*LOSS_FAMILIES)
    assert names == {"bcfw", "subgradient", "cutting_plane", "svrg", "casimir",
                     "perceptron", "lbfgs", "lbfgsb", "owlqn", "perturbed_ascent"}
    for name in names:
        spec = get_solver(name)
        assert spec.name == name
        assert spec.description and "\n" not in spec.description
        assert spec.losses <= set(LOSS_FAMILIES)


def test_loss_family():
    assert loss_family(StructuredHingeLoss("hamming", "margin")) == "hinge_margin"
    assert loss_family(StructuredHingeLoss("hamming", "slack")) == "hinge_slack"
    assert loss_family(PerceptronLoss()) == "perceptron"
    assert loss_family(CRFLoss()) == "smooth"


def test_check_solver_messages():
    with pytest.raises(ValueError, match="margin rescaling only; use solver='cutting_plane' "
                                         "or solver='subgradient' for slack rescaling"):
        check_solver("bcfw", "hinge_slack")
    for name in ("bcfw", "cutting_plane"):
        with pytest.raises(ValueError, match=f"solver='{name}' cannot warm-start .* use "
                                             "solver='subgradient' with warm_start=True"):
            check_solver(name, "hinge_margin", warm_start=True)
    assert check_solver("subgradient", "hinge_slack", warm_start=True).warm_start
    with pytest.raises(ValueError, match="Unknown solver 'newton'"):
        get_solver("newton")


def test_register_a_new_solver_and_run_it(rng):
    calls = []

    def run(risk, w0, options):
        calls.append((options["max_iter"], numba.get_num_threads()))
        return minimize_lbfgs(risk.value_and_gradient, w0, max_iter=options["max_iter"])

    register_solver("test_lbfgs", run, losses={"smooth"}, warm_start=True,
                    description="L-BFGS, registered by a test")
    try:
        assert "test_lbfgs" in solver_names("smooth")
        with pytest.raises(ValueError, match="registered already"):
            register_solver("test_lbfgs", run, losses={"smooth"}, warm_start=True,
                            description="again")
        risk = _chain_risk(rng, CRFLoss())
        result = run_solver("test_lbfgs", risk, np.zeros(risk.n_params), OPTIONS, n_jobs=1)
        assert isinstance(result, OptimizeResult)
        assert calls == [(4, 1)]
        with pytest.raises(ValueError, match="solves smooth losses only"):
            run_solver("test_lbfgs", _chain_risk(rng, PerceptronLoss()),
                       np.zeros(risk.n_params), OPTIONS)
    finally:
        unregister_solver("test_lbfgs")
    assert "test_lbfgs" not in solver_names("smooth")


def test_register_rejects_unknown_families():
    with pytest.raises(ValueError, match="subset of"):
        register_solver("x", lambda *a: None, losses={"hinge"}, warm_start=False,
                        description="")
    with pytest.raises(TypeError, match="callable"):
        register_solver("x", None, losses={"smooth"}, warm_start=False, description="")


def _same(a, b):
    assert a.n_iter == b.n_iter and a.converged == b.converged
    np.testing.assert_array_equal(a.w, b.w)
    np.testing.assert_array_equal(a.objective_curve, b.objective_curve)


@pytest.mark.parametrize("rescaling", ["margin", "slack"])
def test_adapters_call_the_solvers_with_the_estimator_options(rng, rescaling):
    loss = StructuredHingeLoss("hamming", rescaling)
    risk = _chain_risk(rng, loss)
    w0 = np.zeros(risk.n_params)
    sgd = run_solver("subgradient", risk, w0, OPTIONS)
    _same(sgd, minimize_subgradient(risk, w0, **OPTIONS))
    assert sgd.extra["t"] == sgd.n_evaluations == 4 * risk.n_examples
    plane = run_solver("cutting_plane", risk, w0, OPTIONS)
    _same(plane, minimize_cutting_plane(
        risk, max_iter=4, tol=0.0, cache_size=0 if rescaling == "margin" else 3))
    assert plane.duality_gaps is not None and len(plane.duality_gaps) == plane.n_iter
    if rescaling == "margin":
        bcfw = run_solver("bcfw", risk, w0, OPTIONS)
        _same(bcfw, minimize_bcfw(risk, **OPTIONS))
        assert len(bcfw.duality_gaps) == bcfw.n_iter == 4
        smoothed = dict(smoothing="entropy", mu=0.5, top_k=3, learning_rate=0.01)
        options = dict(OPTIONS, **smoothed, schedule="adapt", kappa=0.2,
                       warm_start_rule="prox_center")
        _same(run_solver("svrg", risk, w0, options),
              minimize_svrg(risk, **OPTIONS, **smoothed))
        _same(run_solver("casimir", risk, w0, options),
              minimize_casimir(risk, **OPTIONS, **smoothed, schedule="adapt", kappa=0.2,
                               warm_start_rule="prox_center"))
        # mu=None is each solver's default
        _same(run_solver("svrg", risk, w0, dict(OPTIONS, mu=None)),
              minimize_svrg(risk, **OPTIONS))
    else:
        for name in ("svrg", "casimir"):
            with pytest.raises(ValueError, match="use solver='cutting_plane' or "
                                                 "solver='subgradient' for slack rescaling"):
                run_solver(name, risk, w0, OPTIONS)


def test_subgradient_warm_start_continues_the_step_counter(rng):
    risk = _chain_risk(rng, StructuredHingeLoss("hamming", "margin"))
    first = run_solver("subgradient", risk, np.zeros(risk.n_params), OPTIONS)
    options = dict(OPTIONS, first_step=first.extra["t"])
    second = run_solver("subgradient", risk, first.w, options)
    _same(second, minimize_subgradient(risk, first.w, first_step=first.extra["t"],
                                       **OPTIONS))
    assert second.extra["t"] == 2 * first.extra["t"]


def test_perceptron_and_quasi_newton_adapters(rng):
    risk = _chain_risk(rng, PerceptronLoss())
    w0 = np.zeros(risk.n_params)
    _same(run_solver("perceptron", risk, w0, OPTIONS),
          perceptron(risk, w0, max_iter=4, averaging=True, random_state=0))
    crf = _chain_risk(rng, CRFLoss())
    _same(run_solver("lbfgs", crf, w0, OPTIONS),
          minimize_lbfgs(crf.value_and_gradient, w0, max_iter=4, tol=0.0))


def test_cutting_plane_cache_rule():
    assert cutting_plane_cache_size(StructuredHingeLoss("hamming", "margin")) == 0
    assert cutting_plane_cache_size(
        StructuredHingeLoss("hamming", "slack")) == CUTTING_PLANE_CACHE_SIZE
    assert cutting_plane_cache_size(
        StructuredHingeLoss("f1", "margin")) == CUTTING_PLANE_CACHE_SIZE
    assert cutting_plane_cache_size(
        StructuredHingeLoss("zero_one", "margin")) == CUTTING_PLANE_CACHE_SIZE


def test_n_jobs_threads_restores_the_thread_count():
    before = numba.get_num_threads()
    with n_jobs_threads(1):
        assert numba.get_num_threads() == 1
    assert numba.get_num_threads() == before
    with n_jobs_threads(None):
        assert numba.get_num_threads() == before
    assert n_jobs_threads_count(-1) == numba.config.NUMBA_NUM_THREADS
    assert n_jobs_threads_count(10_000) == numba.config.NUMBA_NUM_THREADS


def test_multiclass_runs_through_the_registry(rng):
    X = rng.normal(size=(12, 3))
    y = rng.integers(0, 3, size=12)
    risk = RegularizedRisk(LinearFeatures(3, 3, MulticlassScores),
                           SequenceBatch(X, np.arange(13)), y, MulticlassDecoder(),
                           StructuredHingeLoss("hamming", "margin"), 0.1, np.ones(12))
    for name in sorted(solver_names("hinge_margin")):
        result = run_solver(name, risk, np.zeros(risk.n_params), OPTIONS)
        assert result.w.shape == (risk.n_params,)


def test_svrg_adapter_on_smooth_losses(rng):
    from skstruct.losses import SparseMAPLoss
    from skstruct.optim._svrg_crf import minimize_svrg_crf
    risk = _chain_risk(rng, CRFLoss())
    w0 = np.zeros(risk.n_params)
    options = dict(OPTIONS, learning_rate=0.05, mu=0.5, smoothing="l2")
    result = run_solver("svrg", risk, w0, options)
    _same(result, minimize_svrg_crf(risk, w0, max_iter=4, tol=0.0, learning_rate=0.05,
                                    random_state=0))
    assert result.extra["oracle_calls"] == [(1 + 2 * k) * 5 for k in range(1, 5)]
    with pytest.raises(ValueError, match="minimizes the CRF loss"):
        run_solver("svrg", _chain_risk(rng, SparseMAPLoss()), w0, OPTIONS)
    # fixed parameters are taken (held at zero); holding none changes nothing
    held_none = run_solver("svrg", risk, w0,
                           dict(options, fixed=np.zeros(risk.n_params, bool)))
    np.testing.assert_array_equal(held_none.w, result.w)


# -- what a registration declares -----------------------------------------------------

def test_partial_fit_solvers_declare_their_initial_state():
    for name in solver_names(*LOSS_FAMILIES):
        spec = get_solver(name)
        assert callable(spec.initial_state) == spec.partial_fit, name
    run = get_solver("subgradient").run
    with pytest.raises(TypeError, match="partial_fit=True declares initial_state"):
        register_solver("x", run, losses={"smooth"}, warm_start=False, description="",
                        partial_fit=True)
    with pytest.raises(TypeError, match="initial_state is the state of partial_fit"):
        register_solver("x", run, losses={"smooth"}, warm_start=False, description="",
                        initial_state=lambda w, t, seen: {})
    assert "x" not in solver_names("smooth")


@pytest.mark.parametrize("name", ["bcfw", "subgradient", "svrg", "casimir", "perceptron"])
def test_the_initial_state_of_a_solver_is_what_its_pass_continues_from(rng, name):
    """The declared state of coefficients w has the layout of the state the solver
    returns, and a pass from it starts at w (it differs from a pass from w = 0)."""
    loss = PerceptronLoss() if name == "perceptron" else StructuredHingeLoss()
    risk = _chain_risk(rng, loss)
    spec = get_solver(name)
    options = dict(OPTIONS, max_iter=1, shuffle=False, state={})
    first = spec.run(risk, np.zeros(risk.n_params), options)
    w = first.extra["state"].get("w", first.extra["state"].get("w_prev"))
    state = spec.continue_from(w, 7, 3.0)
    assert state is not first.extra["state"]
    assert set(state) <= set(first.extra["state"]) | {"first_step", "seen_weight"}
    np.testing.assert_array_equal(state.get("w", state.get("w_prev")), w)
    again = spec.run(risk, np.zeros(risk.n_params), dict(options, state=state))
    from_zero = spec.run(risk, np.zeros(risk.n_params), dict(
        options, state=spec.continue_from(np.zeros_like(w), 7, 3.0)))
    assert np.all(np.isfinite(again.w)) and not np.array_equal(again.w, from_zero.w)


def test_solver_parameters_are_declared_in_the_registration():
    assert get_solver("bcfw").parameters == {"check_gap_every"}
    assert get_solver("svrg").parameters == {"learning_rate", "random_state", "smoothing",
                                             "mu", "top_k"}
    assert get_solver("casimir").parameters == get_solver("svrg").parameters | {
        "schedule", "kappa", "warm_start_rule"}
    params = {"learning_rate": 0.1, "random_state": 0, "alpha": 1.0, "smoothing": "l2"}
    assert get_solver("svrg").options_from(params) == {
        "learning_rate": 0.1, "random_state": 0, "smoothing": "l2"}
    assert get_solver("lbfgs").options_from(params) == {}
    assert [name for name in sorted(solver_names(*LOSS_FAMILIES))
            if get_solver(name).stops_on_duality_gap] == ["bcfw"]
    with pytest.raises(TypeError, match="parameters must be a collection"):
        register_solver("x", get_solver("lbfgs").run, losses={"smooth"}, warm_start=True,
                        description="", parameters="learning_rate")


def test_the_estimators_pass_the_parameters_their_solver_declares():
    from skstruct import StructuredSVM

    casimir = StructuredSVM(solver="casimir", schedule="adapt", kappa=2.0)._solver_options()
    assert casimir["schedule"] == "adapt" and casimir["kappa"] == 2.0
    assert "schedule" not in StructuredSVM(solver="svrg")._solver_options()
    assert "smoothing" not in StructuredSVM(solver="bcfw")._solver_options()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_solver_choices_follow_the_registry(monkeypatch):
    from skstruct.optim import SolverNames, _registry

    monkeypatch.setattr(_registry, "_REGISTRY", dict(_registry._REGISTRY))
    names = SolverNames("smooth")
    assert "late" not in names
    register_solver("late", get_solver("lbfgs").run, losses={"smooth"}, warm_start=True,
                    description="registered after the estimators")
    assert "late" in names and list(names) == sorted(solver_names("smooth"))
    from skstruct import CRF

    CRF(solver="late", max_iter=3).fit(np.eye(4), np.array([0, 1, 0, 1]))


@pytest.mark.parametrize("loss, name", [
    (StructuredHingeLoss("hamming", "margin"), name)
    for name in ("bcfw", "subgradient", "cutting_plane", "svrg", "casimir")
] + [(CRFLoss(), name) for name in ("lbfgs", "lbfgsb", "owlqn", "svrg")]
  + [(PerceptronLoss(), "perceptron")])
def test_a_run_stopped_by_its_callback_is_not_converged(rng, loss, name):
    risk = _chain_risk(rng, loss)
    calls = []

    def stop_at_once(n_iter, w, value):
        calls.append(n_iter)
        return True

    options = dict(OPTIONS, max_iter=50, callback=stop_at_once)
    result = run_solver(name, risk, np.zeros(risk.n_params), options)
    # the first call stops the run (BCFW calls back after the passes whose gap it computes)
    assert len(calls) == 1 and result.n_iter == calls[0]
    assert not result.converged and result.stopped_by_callback
    assert "callback stopped it" in result.advice()
