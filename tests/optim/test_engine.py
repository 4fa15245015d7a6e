"""The compiled per-example engine gives the model of the Python loop, to 1e-9.

Every built-in decoder, with every task loss it supports, is fitted twice by each
incremental solver: once through the compiled passes (which must be offered) and once
through the Python loop that remains for user decoders (forced by making
``compiled_problem`` offer nothing). The final weights must agree to 1e-9.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import skstruct.optim._bcfw as bcfw_module
import skstruct.optim._cutting_plane as cutting_plane_module
import skstruct.optim._subgradient as subgradient_module
from skstruct import StructuredPerceptron, StructuredSVM
from skstruct.decoders import MulticlassDecoder, MultilabelDecoder, TreeDecoder
from skstruct.losses import (
    FBetaLoss,
    HammingLoss,
    IoULoss,
    LabelCountLoss,
    PrecisionLoss,
    RecallLoss,
    ZeroOneLoss,
)
from skstruct.optim import RegularizedRisk, minimize_bcfw, minimize_subgradient, perceptron
from skstruct.optim._engine import compiled_problem

SOLVER_MODULES = (bcfw_module, subgradient_module, cutting_plane_module)

CHAIN_LOSSES = {
    "hamming": lambda: "hamming",
    "weighted_hamming": lambda: HammingLoss(class_costs=[1.0, 2.5, 0.5]),
    "normalized_hamming": lambda: HammingLoss(normalize=True),
    "zero_one": lambda: "zero_one",
    "f1": lambda: "f1",
    "iou": lambda: IoULoss(),
    "precision": lambda: PrecisionLoss(),
    "recall": lambda: RecallLoss(),
    "label_count": lambda: LabelCountLoss(),
}
# the chain decoder's exact slack-rescaled inference handles unweighted mismatch counts
CHAIN_SLACK = ["hamming", "normalized_hamming", "zero_one", "f1", "iou", "precision",
               "recall", "label_count"]




class _Spy:
    """Wraps ``compiled_problem`` in the solver modules, recording what it offered."""

    def __init__(self, monkeypatch, python_loop):
        self.offers = []
        for module in SOLVER_MODULES:
            monkeypatch.setattr(module, "compiled_problem", self)
        self.python_loop = python_loop

    def __call__(self, risk, rescaling):
        if self.python_loop:
            self.offers.append(None)
            return None
        problem = compiled_problem(risk, rescaling)
        self.offers.append(problem)
        return problem


def _params(model):
    names = ("coef_", "intercept_", "transition_", "start_transition_", "end_transition_")
    return {name: np.asarray(getattr(model, name)) for name in names if hasattr(model, name)}


def _fit_both_ways(monkeypatch, make_model, X, y, sample_weight=None):
    """Fit through the compiled engine and through the Python loop; both models."""
    models = []
    for python_loop in (False, True):
        with monkeypatch.context() as patch:
            spy = _Spy(patch, python_loop)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # convergence in 3 passes is not the point
                models.append(make_model().fit(X, y, sample_weight=sample_weight))
            if not python_loop:
                assert len(spy.offers) == 1
                assert spy.offers[0] is not None, "the compiled engine was not offered"
    return models


def _assert_same_model(compiled, python):
    a, b = _params(compiled), _params(python)
    assert a.keys() == b.keys() and a
    for name in a:
        assert a[name].shape == b[name].shape, name
        scale = max(1.0, float(np.abs(b[name]).max(initial=0.0)))
        np.testing.assert_allclose(a[name], b[name], rtol=0, atol=1e-9 * scale, err_msg=name)


@pytest.mark.parametrize("solver,rescaling", [("subgradient", "margin"),
                                              ("subgradient", "slack"), ("bcfw", "margin")])
@pytest.mark.parametrize("loss", list(CHAIN_LOSSES))
def test_chain_compiled_equals_python(monkeypatch, sequences, loss, solver, rescaling):
    if rescaling == "slack" and loss not in CHAIN_SLACK:
        pytest.skip("the chain decoder has no exact slack-rescaled inference for it")
    X, y, weights = sequences

    def make_model():
        return StructuredSVM(loss=CHAIN_LOSSES[loss](), rescaling=rescaling, solver=solver,
                             alpha=0.05, max_iter=3, tol=0.0, random_state=0)

    _assert_same_model(*_fit_both_ways(monkeypatch, make_model, X, y, weights))


def test_chain_perceptron_compiled_equals_python(monkeypatch, sequences):
    X, y, weights = sequences

    def make_model():
        return StructuredPerceptron(max_iter=4, random_state=0)

    compiled, python = _fit_both_ways(monkeypatch, make_model, X, y, weights)
    _assert_same_model(compiled, python)


def test_chain_perceptron_averaging_off_and_warm_start(monkeypatch, sequences):
    X, y, _ = sequences
    models = []
    for python_loop in (False, True):
        with monkeypatch.context() as patch:
            _Spy(patch, python_loop)
            model = StructuredPerceptron(max_iter=2, averaging=False, random_state=1,
                                         warm_start=True).fit(X, y)
            models.append(model.fit(X, y))
    _assert_same_model(*models)


@pytest.mark.parametrize("solver,rescaling", [("subgradient", "margin"),
                                              ("subgradient", "slack"), ("bcfw", "margin")])
@pytest.mark.parametrize("loss", ["hamming", "zero_one", "weighted_hamming"])
def test_multiclass_compiled_equals_python(monkeypatch, tabular, loss, solver, rescaling):
    X, classes, _, weights = tabular
    task_loss = (HammingLoss(class_costs=[1.0, 2.0, 0.5, 3.0]) if loss == "weighted_hamming"
                 else loss)

    def make_model():
        return StructuredSVM(decoder=MulticlassDecoder(), loss=task_loss, rescaling=rescaling,
                             solver=solver, alpha=0.05, max_iter=3, tol=0.0, random_state=0)

    _assert_same_model(*_fit_both_ways(monkeypatch, make_model, X, classes, weights))


@pytest.mark.parametrize("solver,rescaling", [("subgradient", "margin"),
                                              ("subgradient", "slack"), ("bcfw", "margin")])
@pytest.mark.parametrize("loss", ["hamming", "zero_one", "f1", "recall"])
def test_multilabel_compiled_equals_python(monkeypatch, tabular, loss, solver, rescaling):
    X, _, labels, weights = tabular

    def make_model():
        return StructuredSVM(decoder=MultilabelDecoder(), loss=loss, rescaling=rescaling,
                             solver=solver, alpha=0.05, max_iter=3, tol=0.0, random_state=0)

    _assert_same_model(*_fit_both_ways(monkeypatch, make_model, X, labels, weights))


@pytest.mark.parametrize("decoder", [MulticlassDecoder, MultilabelDecoder])
def test_tabular_perceptron_compiled_equals_python(monkeypatch, tabular, decoder):
    X, classes, labels, weights = tabular
    y = classes if decoder is MulticlassDecoder else labels

    def make_model():
        return StructuredPerceptron(decoder=decoder(), max_iter=3, random_state=0)

    _assert_same_model(*_fit_both_ways(monkeypatch, make_model, X, y, weights))


@pytest.fixture(scope="module")
def treebank():
    rng = np.random.default_rng(2)
    X, y = [], []
    for n in rng.integers(1, 6, size=20):
        dense = rng.normal(size=(n * n, 5))
        X.append(sp.csr_matrix(np.where(dense > 0.0, dense, 0.0)))
        heads = np.array([rng.integers(0, m + 1) if m else 0 for m in range(n)])
        y.append(heads)  # each token's head precedes it: a tree
    return X, y, rng.uniform(0.5, 2.0, size=len(X))


@pytest.mark.parametrize("solver", ["subgradient", "bcfw"])
def test_tree_compiled_equals_python(monkeypatch, treebank, solver):
    X, y, weights = treebank

    def make_model():
        return StructuredSVM(decoder=TreeDecoder(), solver=solver, alpha=0.05, max_iter=3,
                             tol=0.0, random_state=0)

    _assert_same_model(*_fit_both_ways(monkeypatch, make_model, X, y, weights))


def test_tree_perceptron_compiled_equals_python(monkeypatch, treebank):
    X, y, weights = treebank

    def make_model():
        return StructuredPerceptron(decoder=TreeDecoder(), max_iter=3, random_state=0)

    _assert_same_model(*_fit_both_ways(monkeypatch, make_model, X, y, weights))


@pytest.fixture(scope="module")
def skewed_treebank(treebank):
    """The trees of ``treebank`` with 12 indicator columns of very unequal frequency, so
    that the engine keeps W's rows in an order other than the columns'."""
    _, y, weights = treebank
    rng = np.random.default_rng(6)
    density = np.linspace(0.02, 0.9, 12)  # the last columns are the most frequent
    X = [sp.csr_matrix((rng.random((len(heads) ** 2, 12)) < density).astype(np.float64))
         for heads in y]
    return X, y, weights


@pytest.mark.parametrize("solver", ["subgradient", "bcfw", "cutting_plane", "perceptron"])
def test_tree_engine_order_of_w_is_invisible(monkeypatch, skewed_treebank, solver):
    """Every solver returns, in column order, the model of the Python loop when the
    engine permutes the rows of W."""
    X, y, weights = skewed_treebank
    problem = compiled_problem(_tree_risk(X, y, weights), "margin")
    order = problem.features.column_order
    assert order.shape[0] == 12 and not np.array_equal(order, np.arange(12))

    def make_model():
        if solver == "perceptron":
            return StructuredPerceptron(decoder=TreeDecoder(), max_iter=3, random_state=0)
        return StructuredSVM(decoder=TreeDecoder(), solver=solver, alpha=0.05, max_iter=3,
                             tol=0.0, random_state=0)

    _assert_same_model(*_fit_both_ways(monkeypatch, make_model, X, y, weights))


@pytest.fixture(scope="module")
def indicator_treebank(treebank):
    X, y, weights = treebank
    return [sp.csr_matrix((x > 0.0).astype(np.float64)) for x in X], y, weights


@pytest.mark.parametrize("solver", ["subgradient", "bcfw"])
def test_tree_indicator_features_compiled_equals_python(monkeypatch, indicator_treebank,
                                                        solver):
    X, y, weights = indicator_treebank

    def make_model():
        return StructuredSVM(decoder=TreeDecoder(), solver=solver, alpha=0.05, max_iter=3,
                             tol=0.0, random_state=0)

    _assert_same_model(*_fit_both_ways(monkeypatch, make_model, X, y, weights))


def test_compiled_rows_are_binary_only_when_every_value_is_one():
    from skstruct.features._compiled import compiled_rows

    X = sp.csr_matrix(np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]))
    offsets = np.array([0, 2])
    assert compiled_rows(X, offsets, 3, 1, False, 0).binary
    assert compiled_rows(X.toarray(), offsets, 3, 1, False, 0).binary
    X.data[1] = 2.0
    assert not compiled_rows(X, offsets, 3, 1, False, 0).binary


@pytest.mark.parametrize("kind", ["values", "indicators"])
def test_hinge_values_do_not_depend_on_the_chunks(treebank, indicator_treebank, kind):
    from skstruct.optim import _engine_kernels as kernels
    X, y, weights = treebank if kind == "values" else indicator_treebank
    risk = _tree_risk(X, y, weights)
    problem = compiled_problem(risk, "margin")
    assert problem is not None
    assert problem.features.binary == (kind == "indicators")
    w = np.random.default_rng(0).normal(size=problem.n_params)
    n = problem.features.n_examples
    values = []
    for n_chunks in (1, 2, 3, 7, n, 4 * n):
        out = np.full(n, np.nan)
        kernels.hinge_values(problem.features, problem.oracle, *problem.blocks(w), out,
                             n_chunks)
        values.append(out)
    assert not np.isnan(values[0]).any() and (values[0] > 0).any()
    for out in values[1:]:
        np.testing.assert_array_equal(out, values[0])


def _tree_risk(X, y, weights):
    from skstruct.features import LinearArcFeatures
    from skstruct.losses import StructuredHingeLoss
    from skstruct.outputs._tree import TreeScores
    from skstruct.utils._trees import TreeBatch

    offsets = np.concatenate(([0], np.cumsum([x.shape[0] for x in X])))
    output_offsets = np.concatenate(([0], np.cumsum([len(h) for h in y])))
    batch = TreeBatch(sp.vstack(X).tocsr(), offsets, output_offsets)
    return RegularizedRisk(LinearArcFeatures(X[0].shape[1], TreeScores), batch, np.concatenate(y),
                           TreeDecoder(), StructuredHingeLoss("hamming", "margin"), 0.05,
                           weights)


def _chain_risk(loss, sequences):
    from skstruct.decoders import ChainDecoder
    from skstruct.features import LinearChainFeatures
    from skstruct.utils import SequenceBatch

    X, y, weights = sequences
    codes = {"O": 0, "A": 1, "B": 2}
    offsets = np.concatenate(([0], np.cumsum([x.shape[0] for x in X])))
    encoded = np.array([codes[s] for labels in y for s in labels])
    return RegularizedRisk(LinearChainFeatures(6, 3), SequenceBatch(sp.vstack(X).tocsr(),
                           offsets), encoded, ChainDecoder(), loss, 0.05, weights)


def test_solvers_compiled_equals_python_with_the_private_keyword(sequences):
    from skstruct.losses import PerceptronLoss, StructuredHingeLoss

    f1 = FBetaLoss().with_positive_states(np.array([False, True, True]))
    for loss, solve in [
        (PerceptronLoss(), lambda risk, **kw: perceptron(risk, max_iter=3, **kw)),
        (StructuredHingeLoss(f1, "slack"),
         lambda risk, **kw: minimize_subgradient(risk, max_iter=3, **kw)),
        (StructuredHingeLoss(ZeroOneLoss(), "margin"),
         lambda risk, **kw: minimize_bcfw(risk, max_iter=3, tol=0.0, **kw)),
    ]:
        risk = _chain_risk(loss, sequences)
        rescaling = getattr(loss, "rescaling", None)
        assert compiled_problem(risk, rescaling) is not None
        compiled = solve(risk, random_state=3)
        python = solve(risk, random_state=3, _force_python=True)
        assert compiled.n_evaluations == python.n_evaluations > 0
        np.testing.assert_allclose(compiled.w, python.w, rtol=0, atol=1e-9)
        np.testing.assert_allclose(compiled.objective_curve, python.objective_curve,
                                   rtol=1e-9, atol=1e-12)


def test_user_decoder_gets_the_python_loop(sequences):
    from skstruct.decoders import ChainDecoder
    from skstruct.losses import StructuredHingeLoss

    class MyChainDecoder(ChainDecoder):
        def loss_augmented_map(self, scores, y_true, task_loss, rescaling="margin"):
            return super().loss_augmented_map(scores, y_true, task_loss, rescaling)

    risk = _chain_risk(StructuredHingeLoss("hamming", "margin"), sequences)
    risk.decoder = MyChainDecoder()
    assert compiled_problem(risk, "margin") is None
    result = minimize_bcfw(risk, max_iter=2, tol=0.0, random_state=0)
    assert result.n_evaluations == 2 * risk.n_examples


def test_column_dictionary_scores_bit_identical_to_plain_rows():
    """K = 1 rows with repeated columns get a column dictionary (W's rows ordered by the
    number of examples a column appears in, each example's distinct rows ascending, each
    stored entry mapping back to its column), and scoring through it with W in that order
    gives exactly the plain scores."""
    from skstruct.features._compiled import compiled_rows
    from skstruct.optim._engine_kernels import _local_buffer, _score, score_example

    rng = np.random.default_rng(0)
    n_features, n_rows = 40, 60
    for binary in (True, False):
        X = sp.random(n_rows, n_features, density=0.4, random_state=rng, format="csr")
        if binary:
            X.data[:] = 1.0
        offsets = np.array([0, 7, 7, 30, 60])
        feats = compiled_rows(X, offsets, n_features, 1, True, 0)
        assert feats.binary == binary
        assert feats.local_slots.shape[0] == feats.indices.shape[0] > 0
        order = feats.column_order
        np.testing.assert_array_equal(np.sort(order), np.arange(n_features))
        appearances = np.zeros(n_features, dtype=np.int64)
        for i in range(feats.n_examples):
            start = feats.indptr[feats.row_offsets[i]]
            stop = feats.indptr[feats.row_offsets[i + 1]]
            base = feats.column_offsets[i]
            rows = feats.local_columns[base + feats.local_slots[start:stop]]
            np.testing.assert_array_equal(order[rows], feats.indices[start:stop])
            n_distinct = feats.column_offsets[i + 1] - base
            distinct = feats.local_columns[base:base + n_distinct]
            assert np.all(np.diff(distinct) > 0)
            assert n_distinct == np.unique(feats.indices[start:stop]).shape[0]
            appearances[np.unique(feats.indices[start:stop])] += 1
        assert np.all(np.diff(appearances[order]) <= 0)  # frequent columns first
        W = rng.standard_normal((n_features, 1))
        engine_W = W[feats.column_order]
        b = rng.standard_normal(1)
        pair = np.empty(0)
        local = _local_buffer(feats)
        for scale in (1.0, 0.37):
            for i in range(feats.n_examples):
                plain, through = np.empty((n_rows, 1)), np.empty((n_rows, 1))
                n = score_example(feats, W, b, pair, scale, i, plain, np.empty(0))
                assert _score(feats, engine_W, b, pair, scale, i, through, np.empty(0),
                              local) == n
                np.testing.assert_array_equal(through[:n], plain[:n])


@pytest.mark.parametrize("kind", ["values", "indicators"])
def test_bcfw_pass_through_the_column_dictionary_is_bit_identical(treebank, kind):
    """A BCFW pass that gathers A_iᵀ d by local slot (column dictionary, W in the
    engine's order) leaves w, its lazy average and the duals exactly as the pass over
    plain column indices does."""
    _, y, weights = treebank
    rng = np.random.default_rng(5)
    density = np.linspace(0.05, 0.9, 12)  # columns of unequal frequency
    X = []
    for heads in y:
        mask = rng.random((len(heads) ** 2, 12)) < density
        values = rng.normal(size=mask.shape) if kind == "values" else np.ones(mask.shape)
        X.append(sp.csr_matrix(np.where(mask, values, 0.0)))
    problem = compiled_problem(_tree_risk(X, y, weights), "margin")
    assert problem is not None and problem.features.local_slots.shape[0] > 0
    assert problem.features.binary == (kind == "indicators")
    plain = problem.features._replace(local_columns=np.empty(0, dtype=np.int32),
                                      column_offsets=np.zeros(1, dtype=np.int64),
                                      local_slots=np.empty(0, dtype=np.int32),
                                      column_order=np.empty(0, dtype=np.int64))
    runs = []
    for feats in (problem.features, plain):
        run = type(problem)(feats, problem.oracle).bcfw(weights / weights.sum(), 0.05, True)
        for seed in range(3):
            run.run_pass(np.random.default_rng(seed).permutation(feats.n_examples))
        runs.append(run)
    through, direct = runs
    assert through.step == direct.step == 3 * len(X)
    assert np.abs(through.w).max() > 0
    assert not np.array_equal(through.w, direct.w), "W is not in the engine's order"
    order = problem.features.column_order
    for name in ("w", "lazy"):
        np.testing.assert_array_equal(problem.to_user(getattr(through, name)),
                                      getattr(direct, name))
        np.testing.assert_array_equal(getattr(through, name)[:order.shape[0]],
                                      getattr(direct, name)[order])
    for name in ("dual_unary", "dual_pair", "ell", "sums"):
        np.testing.assert_array_equal(getattr(through, name), getattr(direct, name))
    np.testing.assert_array_equal(through.current()[0], direct.current()[0])


@pytest.mark.parametrize("n_features", [50, 2**21, 2**22 + 3])
def test_engine_rows_are_sorted_by_radix_and_by_comparison(n_features):
    """Both sorts of an example's engine rows (two radix passes below 2**22 rows, rows
    above 2**11 needing both; a comparison sort above) give ascending rows and slots
    that still point at them."""
    from skstruct.features._compiled import _to_engine_rows

    rng = np.random.default_rng(7)
    lengths = np.array([0, 1, 5, 30])
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    columns = np.concatenate([rng.choice(50, size=k, replace=False) for k in lengths])
    columns = columns.astype(np.int32)
    rank = rng.permutation(n_features).astype(np.int32)
    starts = np.concatenate(([0], np.cumsum(2 * lengths))).astype(np.int64)
    slots = np.concatenate([np.tile(np.arange(k), 2) for k in lengths]).astype(np.int32)
    before = [columns[offsets[i] + slots[starts[i]:starts[i + 1]]] for i in range(4)]
    _to_engine_rows(columns, offsets, slots, starts, rank,
                    np.array([0, 2, 4], dtype=np.int64))
    for i in range(4):
        rows = columns[offsets[i]:offsets[i + 1]]
        assert np.all(np.diff(rows) > 0)
        np.testing.assert_array_equal(rows[slots[starts[i]:starts[i + 1]]],
                                      rank[before[i]])
