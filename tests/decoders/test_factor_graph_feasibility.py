"""Every output of FactorGraphDecoder.map satisfies the graph's factors, also when the LP
is fractional and the repairs of factors that share variables undo each other; and the
factor-graph declarations reject bad input with messages about the input."""

import itertools
import re
import warnings

import numpy as np
import pytest
from _factor_graph_data import LOGIC_KINDS, add_logic_factor, negated_block, satisfies_factors
from sklearn.exceptions import ConvergenceWarning

from skstruct import SparseMAPClassifier, StructuredPerceptron, StructuredSVM
from skstruct.decoders import (
    ChainDecoder,
    FactorGraph,
    FactorGraphDecoder,
    FactorGraphScores,
    InfeasibleOutputError,
)

def _random_graph(rng, n_vars, n_factors):
    """A graph with logic factors of every kind on overlapping random subsets (some
    inputs negated) and PAIR factors, with its plain spec; None when no output
    satisfies all the factors."""
    graph = FactorGraph()
    v = graph.variables(n_vars)
    spec = []
    for k in range(n_factors):
        kind = LOGIC_KINDS[k if k < len(LOGIC_KINDS) else rng.integers(len(LOGIC_KINDS))]
        size = int(rng.integers(2, min(4, n_vars) + 1))
        ids = rng.choice(n_vars, size=size, replace=False)
        negated = (rng.random(size) < 0.3) if kind != "or_out" else np.zeros(size, bool)
        block = negated_block(v[ids], negated)
        extra = None
        if kind == "budget":
            extra = int(rng.integers(1, size))
        elif kind == "knapsack":
            extra = (rng.uniform(0.5, 2.0, size), float(rng.uniform(0.5, 2.5)))
        add_logic_factor(graph, kind, block, extra)
        spec.append((kind, ids, negated, extra))
    first, second = np.triu_indices(n_vars, 1)
    keep = rng.random(first.shape[0]) < 0.3
    if keep.any():
        graph.add_pair(v[first[keep]], v[second[keep]])
    outputs = np.array(list(itertools.product((0, 1), repeat=n_vars)))
    if not any(satisfies_factors(spec, y) for y in outputs):
        return None, spec
    return graph, spec


def _fractional(u):
    return np.any(np.minimum(np.abs(u), np.abs(1.0 - u)) > 1e-6, axis=1)


@pytest.mark.parametrize("decision", ["map", "marginals"])
def test_every_output_satisfies_the_factors_of_random_graphs(decision):
    rng = np.random.default_rng(0)
    checked = fractional = broken_by_rounding = 0
    kinds_seen = set()
    for _ in range(60):
        n_vars = int(rng.integers(3, 9))
        graph, spec = _random_graph(rng, n_vars, int(rng.integers(3, n_vars + 2)))
        if graph is None:
            continue
        kinds_seen.update(kind for kind, *_ in spec)
        scores = FactorGraphScores(2 * rng.normal(size=(20, n_vars)),
                                   2 * rng.normal(size=(20, graph.n_pairs)))
        decoder = FactorGraphDecoder(graph, decision=decision, max_iter=2000)
        labels = decoder.map(scores)
        assert labels.shape == (20, n_vars) and labels.dtype == np.int64
        assert all(satisfies_factors(spec, y) for y in labels)
        assert graph.feasible(labels).all()
        u = (decoder.lp_map(scores).u if decision == "map"
             else decoder.sparsemap(scores).unary)
        fractional += _fractional(u).sum()
        broken_by_rounding += (~graph.feasible((u > 0.5).astype(np.int64))).sum()
        checked += 20
    assert kinds_seen == set(LOGIC_KINDS)
    # the LPs are fractional and their plain rounding breaks factors often enough
    assert checked >= 600 and fractional > 0.2 * checked
    assert broken_by_rounding > 0.1 * checked


def test_the_knapsack_that_forbids_the_xors_favourite_gets_the_only_feasible_output():
    graph = FactorGraph()
    y = graph.variables(2)
    graph.add_knapsack(y[[0]], [1.0], 0.6)
    graph.add_xor(y)
    scores = FactorGraphScores(np.array([[5.0, 0.0]]))
    assert not FactorGraphDecoder(graph).lp_map(scores).integral[0]
    for decision in ("map", "marginals"):
        decoder = FactorGraphDecoder(graph, decision=decision)
        np.testing.assert_array_equal(decoder.map(scores), [[0, 1]])
    np.testing.assert_array_equal(graph.round(np.array([[0.6, 0.4]])), [[0, 1]])


def test_rows_the_repairs_cannot_fix_take_the_exact_map_of_small_graphs():
    """On a graph of at most 16 variables, an example whose repairs fail takes the
    enumerated MAP (decision="map"), or the feasible output closest to the marginals
    (decision="marginals")."""
    rng = np.random.default_rng(4)
    unrepaired = 0
    for _ in range(60):
        n_vars = int(rng.integers(4, 9))
        graph, _ = _random_graph(rng, n_vars, n_vars + 1)
        if graph is None:
            continue
        scores = FactorGraphScores(2 * rng.normal(size=(20, n_vars)),
                                   2 * rng.normal(size=(20, graph.n_pairs)))
        decoder = FactorGraphDecoder(graph, max_iter=2000)
        _, failed = graph._repair(decoder.lp_map(scores).u)
        if failed.size:
            exact = FactorGraphDecoder(graph, map_method="enumerate").map(scores)
            np.testing.assert_array_equal(decoder.map(scores)[failed], exact[failed])
        u = FactorGraphDecoder(graph, max_iter=2000).sparsemap(scores).unary
        _, failed_marginals = graph._repair(u)
        if failed_marginals.size:
            outputs = graph.feasible_outputs()
            closest = outputs[np.argmax((u[failed_marginals] - 0.5) @ outputs.T, axis=1)]
            by_marginals = FactorGraphDecoder(graph, decision="marginals", max_iter=2000)
            np.testing.assert_array_equal(by_marginals.map(scores)[failed_marginals],
                                          closest)
        unrepaired += failed.size + failed_marginals.size
    assert unrepaired > 0


def _tag_grid(rng, n_tokens, n_tags):
    """One tag per token (XOR per row), BUDGETs on the tags' columns (which together
    leave room for every token), a KNAPSACK on the last column and PAIR factors
    between neighbouring tokens' tags."""
    graph = FactorGraph()
    tags = graph.variables((n_tokens, n_tags))
    graph.add_xor(tags, axis=1)
    for tag in range(n_tags - 1):
        graph.add_budget(tags[:, tag], int(rng.integers(n_tokens // (n_tags - 1) + 1,
                                                        n_tokens)))
    graph.add_knapsack(tags[:, -1], rng.uniform(0.5, 2.0, n_tokens),
                       float(rng.uniform(1.0, 3.0)))
    graph.add_pair(tags[:-1].ravel(), tags[1:].ravel())
    return graph


@pytest.mark.parametrize("decision", ["map", "marginals"])
def test_outputs_of_graphs_too_large_to_enumerate_satisfy_the_factors(decision):
    rng = np.random.default_rng(1)
    broken_by_rounding = 0
    for _ in range(12):
        graph = _tag_grid(rng, int(rng.integers(6, 10)), int(rng.integers(3, 6)))
        assert graph.n_vars > 16
        scores = FactorGraphScores(2 * rng.normal(size=(20, graph.n_vars)),
                                   2 * rng.normal(size=(20, graph.n_pairs)))
        decoder = FactorGraphDecoder(graph, decision=decision, max_iter=1000)
        assert graph.feasible(decoder.map(scores)).all()
        u = (decoder.lp_map(scores).u if decision == "map"
             else decoder.sparsemap(scores).unary)
        broken_by_rounding += (~graph.feasible((u > 0.5).astype(np.int64))).sum()
    assert broken_by_rounding > 20


def _trap(n_free):
    """Factors whose repairs undo each other from many roundings (the OROut factors
    turn back on what the BUDGET turns off), beside ``n_free`` unconstrained
    variables; its feasible outputs set variables 0-3 to 0000 or 0101."""
    graph = FactorGraph()
    v = graph.variables(4 + n_free)
    graph.add_or(negated_block(v[[1, 2, 0]], np.array([True, False, True])))
    graph.add_budget(v[[2, 1]], 1)
    graph.add_or_out(v[[2, 3, 0]], v[1])
    graph.add_or_out(v[[0, 1]], v[3])
    return graph


def test_rows_of_large_graphs_the_repairs_cannot_fix_are_repaired_from_perturbed_values():
    graph = _trap(16)
    u = np.random.default_rng(0).random((400, graph.n_vars))
    _, failed = graph._repair(u)
    assert failed.size > 20
    y = graph.round(u)
    assert graph.feasible(y).all()
    assert {tuple(row) for row in y[:, :4]} <= {(0, 0, 0, 0), (0, 1, 0, 1)}
    np.testing.assert_array_equal(graph.round(u), y)          # the same u, the same y
    ok = np.setdiff1d(np.arange(400), failed)
    np.testing.assert_array_equal(y[ok], graph._repair(u[ok])[0])


def test_structure_factors_with_budgets_give_feasible_outputs():
    rng = np.random.default_rng(2)
    n_examples, n_tokens, n_states = 10, 4, 3
    graph = FactorGraph()
    tags = graph.variables((n_tokens, n_states))
    graph.add_structure(ChainDecoder(), tags)
    graph.add_budget(tags[:, 0], 1)
    graph.add_knapsack(tags[:, 1], [1.0, 0.7, 1.3, 0.9], 1.5)
    graph.add_or(tags[:, 2])
    unary = rng.normal(size=(n_examples, graph.n_vars))
    unary[:, ::n_states] += 1.5                    # state 0 wanted on most tokens
    scores = FactorGraphScores(unary, extra=rng.normal(size=(n_examples, graph.n_extra)))
    for decision in ("map", "marginals"):
        # the ADMM of structure factors runs in Python: few iterations, fractional LPs
        decoder = FactorGraphDecoder(graph, decision=decision, max_iter=50)
        labels = decoder.map(scores)
        assert graph.feasible(labels).all()
        assert np.all(labels.reshape(n_examples, n_tokens, n_states).sum(axis=2) == 1)
        assert np.all(labels[:, ::n_states].sum(axis=1) <= 1)
    u = FactorGraphDecoder(graph, max_iter=50).lp_map(scores).u
    assert (~graph.feasible((u > 0.5).astype(np.int64))).sum() >= 3


def test_loss_augmented_map_and_the_cutting_plane_path_give_feasible_outputs():
    graph = _tag_grid(np.random.default_rng(3), 6, 3)
    rng = np.random.default_rng(3)
    scores = FactorGraphScores(2 * rng.normal(size=(30, graph.n_vars)),
                               2 * rng.normal(size=(30, graph.n_pairs)))
    y_true = FactorGraphDecoder(graph, map_method="admm").map(scores)
    decoder = FactorGraphDecoder(graph, loss_augmented="rounded")
    found = decoder.loss_augmented_map(scores, y_true, "hamming")
    assert graph.feasible(found).all()
    shared = decoder._map_shared_pairs(scores.unary, scores.pair[0], warm_start={})
    assert graph.feasible(shared).all()


def test_contradicting_factors_raise_naming_the_examples():
    # XOR and a budget of 0 on the same two variables: no output at all
    small = FactorGraph()
    y = small.variables(3)
    small.add_xor(y[:2])
    small.add_budget(y[:2], 0)
    with pytest.raises(InfeasibleOutputError, match="No feasible output"):
        FactorGraphDecoder(small).map(FactorGraphScores(np.zeros((2, 3))))
    large = FactorGraph()
    y = large.variables(20)
    large.add_xor(y[:2])
    large.add_budget(y[:2], 0)
    scores = FactorGraphScores(np.random.default_rng(0).normal(size=(3, 20)))
    for decision in ("map", "marginals"):
        with pytest.raises(InfeasibleOutputError,
                           match=r"FactorGraphDecoder: no feasible rounding of examples "
                                 r"0, 1, 2.*at most 16 variables; this one has 20") as error:
            FactorGraphDecoder(large, decision=decision, max_iter=200).map(scores)
        np.testing.assert_array_equal(error.value.examples, [0, 1, 2])
    with pytest.raises(InfeasibleOutputError, match="FactorGraph.round: .*row 0"):
        large.round(np.full((1, 20), 0.5))


def _label_data(n=60, seed=0):
    """One of labels 1-3 per example, and label 4 on with labels 1 and 3."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    Y = np.zeros((n, 5), dtype=np.int64)
    Y[np.arange(n), rng.integers(1, 4, n)] = 1
    Y[:, 4] = Y[:, [1, 3]].max(axis=1)
    return X, Y


def _label_graph():
    """A KNAPSACK that forbids label 0 alone (its relaxation lets u_0 reach 0.6),
    exactly one of labels 0-3, label 4 the OR of labels 1 and 3, and PAIR factors among
    labels 0-3."""
    graph = FactorGraph()
    labels = graph.variables(5)
    graph.add_knapsack(labels[[0]], [1.0], 0.6)
    graph.add_xor(labels[:4])
    graph.add_or_out(labels[[1, 3]], labels[4])
    graph.add_pair(labels[[0, 0, 1, 2]], labels[[1, 2, 3, 3]])
    return graph


ESTIMATORS = {
    "lp_sparsemap": lambda d: SparseMAPClassifier(alpha=1e-2, decoder=d, max_iter=20),
    "hinge": lambda d: StructuredSVM(d, alpha=1e-2, solver="cutting_plane", max_iter=5),
    "perceptron": lambda d: StructuredPerceptron(d, max_iter=3, random_state=0),
}


@pytest.mark.parametrize("decision", ["map", "marginals"])
@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_estimators_predict_feasible_outputs(name, decision):
    X, Y = _label_data()
    graph = _label_graph()
    assert graph.feasible(Y).all()
    decoder = FactorGraphDecoder(graph, decision=decision, max_iter=300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = ESTIMATORS[name](decoder).fit(X, Y)
    rng = np.random.default_rng(5)
    model.coef_ = 3 * rng.normal(size=model.coef_.shape)
    model.intercept_ = 3 * rng.normal(size=model.intercept_.shape)
    model.coupling_ = 3 * rng.normal(size=model.coupling_.shape)
    X_new = rng.normal(size=(200, 4))
    predicted = model.predict(X_new)
    assert graph.feasible(predicted).all()
    scores = model._scores(model._validate_prediction_data(X_new))
    u = (decoder.lp_map(scores).u if decision == "map"
         else decoder.sparsemap(scores).unary)
    assert (~graph.feasible((u > 0.5).astype(np.int64))).sum() > 5


# -- messages about the input -------------------------------------------------------


@pytest.mark.parametrize("shape", [2.5, None, "3", (2, 1.5), True])
def test_variables_of_a_shape_that_is_not_one_say_so(shape):
    with pytest.raises(ValueError, match=r"variables: shape must be a positive integer .*"
                                         r"got " + re.escape(repr(shape))):
        FactorGraph().variables(shape)


def test_knapsack_costs_that_are_not_numbers_say_so():
    graph = FactorGraph()
    y = graph.variables(2)
    with pytest.raises(ValueError, match=r"add_knapsack: costs must be numbers, one per "
                                         r"variable of the block \(shape \(2,\)\); got "
                                         r"\['a', 'b'\]"):
        graph.add_knapsack(y, ["a", "b"], 1.0)
    with pytest.raises(ValueError, match=r"costs must be finite and > 0; got -2.0 at "
                                         r"index \(1,\)"):
        graph.add_knapsack(y, [1.0, -2.0], 1.0)


@pytest.mark.parametrize("budget", [np.inf, float("inf")])
def test_infinite_budgets_say_the_factor_constrains_nothing(budget):
    graph = FactorGraph()
    y = graph.variables(3)
    with pytest.raises(ValueError, match=r"add_knapsack: budget must be a finite number "
                                         r">= 0.*got inf\. A KNAPSACK factor without a "
                                         r"finite bound constrains nothing"):
        graph.add_knapsack(y, [1.0, 1.0, 1.0], budget)
    with pytest.raises(ValueError, match=r"add_budget: budget must be an integer >= 0.*"
                                         r"got inf\. A BUDGET factor without a finite "
                                         r"bound constrains nothing"):
        graph.add_budget(y, budget)
    with pytest.raises(ValueError, match=r"add_knapsack: budget must be a finite number "
                                         r">= 0.*got nan"):
        graph.add_knapsack(y, [1.0, 1.0, 1.0], float("nan"))


def test_check_outputs_names_a_value_that_is_not_0_or_1():
    graph = FactorGraph()
    y = graph.variables(3)
    graph.add_at_most_one(y)
    decoder = FactorGraphDecoder(graph)
    with pytest.raises(ValueError, match=r"y\[1, 2\] = 2 \(variable 2 of example 1\) is "
                                         r"out of range: expected 0 or 1"):
        decoder.check_outputs(np.array([[0, 0, 1], [0, 0, 2]]), np.arange(3) * 3)
    with pytest.raises(ValueError, match="breaks a logic factor"):
        decoder.check_outputs(np.array([[0, 1, 1]]), np.arange(2) * 3)


def test_feasible_outputs_are_rebuilt_after_a_new_factor():
    graph = FactorGraph()
    y = graph.variables(3)
    graph.add_at_most_one(y)
    assert graph.feasible_outputs().shape == (4, 3)
    graph.add_or(y)
    np.testing.assert_array_equal(graph.feasible_outputs(),
                                  [[0, 0, 1], [0, 1, 0], [1, 0, 0]])
    graph.variables(16)
    with pytest.raises(ValueError, match="at most 16 variables; the graph has 19"):
        graph.feasible_outputs()
