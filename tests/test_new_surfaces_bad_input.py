"""Bad and edge inputs to the matching data checks, the solver registry and the output-kind
registry: each is a clear error that says what to fix, or a correct result."""

import numpy as np
import pytest
import scipy.sparse as sp

from skstruct.optim._registry import (
    check_solver,
    get_solver,
    register_solver,
    run_solver,
    solver_names,
    unregister_solver,
)
from skstruct.outputs import OutputKind, register_output_kind, registered_output_kinds
from skstruct.utils._matchings import check_matchings


def _run(risk, w0, options):  # never called by these tests
    raise AssertionError("the solver should not run")


# ------------------------------------------------------------------ matching data


def test_the_tuple_form_given_as_a_list_says_to_pass_a_tuple():
    pair_features = np.ones((4, 3))
    for features in (pair_features, sp.csr_matrix(pair_features)):
        with pytest.raises(ValueError, match=r"Instance 0 of X is a list .*is a tuple"):
            check_matchings([[features, (2, 2)]])
    batch, _ = check_matchings([(pair_features, [2, 2])])  # a list as the shape is fine
    assert batch.shapes.tolist() == [[2, 2]]


def test_ragged_pair_features_name_the_instance():
    good = np.ones((2, 2, 2))
    with pytest.raises(ValueError, match=r"Instance 1 of X has pair features that are not "
                                         r"a rectangular matrix"):
        check_matchings([good, ([[1.0, 2.0], [1.0]], (1, 2))])


def test_ragged_dense_instance_names_the_instance():
    with pytest.raises(ValueError, match=r"Instance 0 of X is not a rectangular array"):
        check_matchings([[[[1.0]], [[1.0], [2.0]]]])


@pytest.mark.parametrize("y0, match", [
    (np.array([0, 0]), "matches column 0 to 2 rows"),
    (np.array([0, -1]), "matches 1 of its 2 rows"),
    (np.array([0, 2]), r"column indices in 0 \.\. 1"),
    (np.array([0.0, 1.0]), "got dtype float64"),
    (np.array([0, 1, 0]), r"y\[0\] has shape \(3,\)"),
])
def test_malformed_matchings_are_errors_naming_the_instance(y0, match):
    with pytest.raises(ValueError, match=match):
        check_matchings([np.ones((2, 2, 3))], [y0])


# ------------------------------------------------------------------ solver registry


@pytest.mark.parametrize("name", [3, None, "", ("a", "b")])
def test_a_solver_name_must_be_a_non_empty_string(name):
    before = set(solver_names("smooth"))
    with pytest.raises(TypeError, match="solver's name must be a non-empty string"):
        register_solver(name, _run, losses={"smooth"}, warm_start=True, description="x")
    assert set(solver_names("smooth")) == before


@pytest.mark.parametrize("losses", ["smooth", None, 3])
def test_losses_must_be_a_collection_of_families(losses):
    with pytest.raises(TypeError, match="losses must be a collection of loss families"):
        register_solver("bad_losses", _run, losses=losses, warm_start=True, description="x")
    with pytest.raises(ValueError, match="Unknown solver 'bad_losses'"):
        get_solver("bad_losses")


def test_warm_start_must_be_a_bool():
    with pytest.raises(TypeError, match="warm_start must be True or False"):
        register_solver("bad_warm", _run, losses={"smooth"}, warm_start="no",
                        description="x")


def test_unhashable_solver_name_is_the_unknown_solver_error():
    with pytest.raises(ValueError, match=r"Unknown solver \['bcfw'\]; registered solvers"):
        get_solver(["bcfw"])


def test_run_solver_with_an_unknown_name_names_the_registered_solvers():
    with pytest.raises(ValueError, match="Unknown solver 'nope'; registered solvers"):
        run_solver("nope", None, np.zeros(2), {})


def test_check_solver_with_an_unknown_family_names_the_known_ones():
    with pytest.raises(ValueError, match="Unknown loss family 'hinge'; known"):
        check_solver("subgradient", "hinge")


@pytest.fixture
def solver_registry(monkeypatch):
    """The solver registry as a copy that the test may edit: the whole registry is put
    back afterwards, whatever the test registers or removes."""
    from skstruct.optim import _registry

    monkeypatch.setattr(_registry, "_REGISTRY", dict(_registry._REGISTRY))
    return _registry._REGISTRY


def test_check_solver_says_when_no_solver_can_be_used(solver_registry):
    register_solver("only_perceptron", _run, losses={"perceptron"}, warm_start=False,
                    description="x")
    register_solver("only_smooth", _run, losses={"smooth"}, warm_start=False,
                    description="x")
    # a family some solver solves: those are named
    with pytest.raises(ValueError, match=r"use solver='lbfgs' or solver='lbfgsb'"):
        check_solver("only_perceptron", "smooth")
    # warm start asked of a family whose only other solvers cannot warm-start
    able = [n for n in solver_names("perceptron") if get_solver(n).warm_start]
    assert able == ["perceptron"]
    with pytest.raises(ValueError, match="use solver='perceptron' with warm_start=True"):
        check_solver("only_perceptron", "perceptron", warm_start=True)
    unregister_solver("perceptron")
    with pytest.raises(ValueError, match="no registered solver can be used with "
                                         "warm_start=True, or warm_start=False"):
        check_solver("only_perceptron", "perceptron", warm_start=True)


def test_the_solver_registry_fixture_restores_a_removed_solver_whole(solver_registry):
    # the registry the test edits is a copy; the conftest guard checks the real one is
    # back, partial_fit flag included, after this test
    unregister_solver("perceptron")
    assert "perceptron" not in solver_names("perceptron")


def test_the_perceptron_solver_keeps_its_partial_fit_flag():
    # whatever ran before in this process
    assert get_solver("perceptron").partial_fit


# ------------------------------------------------------------------ output kinds


def test_a_kind_that_needs_constructor_arguments_is_a_clear_error():
    class NeedsArgument(OutputKind):
        name = "needs_argument"

        def __init__(self, argument):
            self.argument = argument

    with pytest.raises(TypeError, match="instantiates NeedsArgument without arguments"):
        register_output_kind(NeedsArgument)
    assert "needs_argument" not in registered_output_kinds()


def test_registering_an_instance_or_a_duplicate_is_an_error():
    from skstruct.outputs import MatchingKind

    with pytest.raises(TypeError, match="takes a subclass of OutputKind"):
        register_output_kind(MatchingKind())
    with pytest.raises(ValueError, match="'matching' is already registered"):
        register_output_kind(MatchingKind)


@pytest.mark.parametrize("X", [
    [np.ones((4, 4, 3)), np.ones((6, 4, 3))],  # ragged: numpy's error before
    np.ones((2, 4, 4, 3)),
])
def test_a_tabular_model_given_matching_instances_says_so(X):
    from skstruct import StructuredPerceptron

    model = StructuredPerceptron(max_iter=2).fit(np.eye(3), [0, 1, 2])
    with pytest.raises(ValueError, match="fitted on tabular data .* matching instances"):
        model.predict(X)
