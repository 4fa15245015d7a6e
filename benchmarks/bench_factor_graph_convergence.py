"""Do the pairwise factor-graph fits converge on bibtex within a time budget?

One fit per run, capped at ``--cap`` seconds on 2 cores: the callback stops it when the
process has used 2 × ``--cap`` seconds of CPU time (on a machine shared with other
processes the wall time measures the others too): the
LP-SparseMAP loss (``SparseMAPClassifier``, L-BFGS, gradient tolerance ``tol``) or the
structured hinge with relaxed LP-MAP (``StructuredSVM``, one-slack cutting plane,
tolerance 0.01), on bibtex's training set with all 12,561 label pairs or the 3,506 that
co-occur. Reports whether the solver reached its tolerance, its iterations, the wall and
CPU time, and the test example-F1 and Hamming loss. Appends one JSON line per run to
``results/factor_graph_convergence.jsonl``.

    PYTHONPATH=. python benchmarks/bench_factor_graph_convergence.py \\
        --learner lp_sparsemap --pairs cooccurring --cap 600
"""

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

from skstruct import SparseMAPClassifier, StructuredSVM
from skstruct.datasets import load_multilabel
from skstruct.decoders import FactorGraph, FactorGraphDecoder
from skstruct.metrics import example_f1_score, hamming_loss

RESULTS = Path(__file__).parent / "results"
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "multilabel"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--learner", choices=("lp_sparsemap", "hinge_lp_map"),
                        required=True)
    parser.add_argument("--pairs", choices=("all", "cooccurring"), default="all")
    parser.add_argument("--alpha", type=float, default=None)
    parser.add_argument("--cap", type=float, default=600.0)
    parser.add_argument("--admm-tol", type=float, default=1e-4)
    parser.add_argument("--admm-max-iter", type=int, default=200)
    parser.add_argument("--max-memory", type=float, default=None)
    args = parser.parse_args()
    train = load_multilabel("bibtex", "train", path=DATA)
    test = load_multilabel("bibtex", "test", path=DATA)
    X, Y = train.data, np.asarray(train.target)
    n_labels = Y.shape[1]
    if args.pairs == "all":
        graph = FactorGraph.pairwise(n_labels)
    else:
        rows, cols = np.nonzero(np.triu((Y.T @ Y) > 0, k=1))
        graph = FactorGraph.pairwise(n_labels, pairs=np.column_stack([rows, cols]))
    limit = {} if args.max_memory is None else {"max_memory": args.max_memory}
    if args.max_memory == 0:
        limit = {"max_memory": None}
    start = [0.0, 0.0]

    def cap(n_iter, w, objective):
        return time.process_time() - start[1] > 2 * args.cap

    if args.learner == "lp_sparsemap":
        decoder = FactorGraphDecoder(graph, max_iter=args.admm_max_iter, tol=args.admm_tol,
                                     decision="marginals", **limit)
        alpha = 1e-3 if args.alpha is None else args.alpha
        model = SparseMAPClassifier(alpha=alpha, decoder=decoder, max_iter=1000,
                                    callback=cap)
    else:
        decoder = FactorGraphDecoder(graph, max_iter=args.admm_max_iter, tol=args.admm_tol,
                                     **limit)
        alpha = 1e-2 if args.alpha is None else args.alpha
        model = StructuredSVM(decoder, alpha=alpha, solver="cutting_plane", tol=0.01,
                              max_iter=10000, callback=cap)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start[0], start[1] = time.perf_counter(), time.process_time()
        model.fit(X, Y)
        wall, cpu = time.perf_counter() - start[0], time.process_time() - start[1]
    capped = cpu > 2 * args.cap
    prediction = model.predict(test.data)
    truth = np.asarray(test.target)
    row = dict(learner=args.learner, pairs=args.pairs, n_pairs=graph.n_pairs,
               alpha=alpha, admm_tol=args.admm_tol, admm_max_iter=args.admm_max_iter,
               cap=args.cap, capped=capped, n_iter=int(model.n_iter_),
               converged=not capped and not any("converge" in str(w.message)
                                                for w in caught),
               warnings=[str(w.message)[:300] for w in caught],
               objective_last=float(model.objective_curve_[-1]),
               objective_min=float(np.min(model.objective_curve_)),
               wall=wall, cpu=cpu,
               example_f1=float(example_f1_score(truth, prediction)),
               hamming=float(hamming_loss(truth, prediction)))
    print(json.dumps(row))
    RESULTS.mkdir(exist_ok=True)
    with open(RESULTS / "factor_graph_convergence.jsonl", "a") as out:
        out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
