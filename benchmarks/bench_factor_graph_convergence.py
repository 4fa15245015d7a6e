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

``--defaults``: the decoder's and the learner's default settings (``StructuredSVM``:
BCFW, alpha 1e-2, duality-gap tolerance 1e-3; ``SparseMAPClassifier``: alpha 1e-4,
1000 L-BFGS iterations, pseudo-gradient tolerance 1e-4, the ADMM run to 1e-7 in
training; ``FactorGraphDecoder``: ADMM 1000 iterations, tol 1e-6, ``max_memory`` 2
GiB), ``--alpha`` aside. Every row records the
callback's trace (iteration, CPU and wall seconds, objective), the load averages and
the peak resident size of the whole process (data and compiled kernels included).
"""

import argparse
import contextlib
import io
import json
import os
import re
import resource
import subprocess
import sys
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


class _Tee(io.StringIO):
    """Keeps what is printed and passes it on."""

    def __init__(self, out):
        super().__init__()
        self._out = out

    def write(self, text):
        self._out.write(text)
        self._out.flush()
        return super().write(text)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--learner", choices=("lp_sparsemap", "hinge_lp_map",
                                              "hinge_bcfw"),
                        required=True)
    parser.add_argument("--defaults", action="store_true",
                        help="the learner's and the decoder's default settings (ADMM "
                             "max_iter=1000, tol=1e-6, max_memory=2 GiB; the learner's "
                             "alpha, solver, max_iter and tol) except --alpha if given")
    parser.add_argument("--pairs", choices=("all", "cooccurring"), default="all")
    parser.add_argument("--alpha", type=float, default=None)
    parser.add_argument("--cap", type=float, default=600.0)
    parser.add_argument("--admm-tol", type=float, default=1e-4)
    parser.add_argument("--admm-max-iter", type=int, default=200)
    parser.add_argument("--max-memory", type=float, default=None)
    args = parser.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=Path(__file__).parent).stdout.strip()
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
    trace = []

    def cap(n_iter, w, objective):
        trace.append((int(n_iter), time.process_time() - start[1],
                      time.perf_counter() - start[0], float(objective)))
        return time.process_time() - start[1] > 2 * args.cap

    if args.defaults:
        decoder = FactorGraphDecoder(graph, **limit)
        options = {} if args.alpha is None else {"alpha": args.alpha}
        if args.learner == "lp_sparsemap":
            decoder.set_params(decision="marginals")
            model = SparseMAPClassifier(decoder=decoder, callback=cap, **options)
        elif args.learner == "hinge_bcfw":
            model = StructuredSVM(decoder, callback=cap, **options)
        else:
            model = StructuredSVM(decoder, solver="cutting_plane", callback=cap, **options)
        alpha = model.alpha
    elif args.learner == "lp_sparsemap":
        decoder = FactorGraphDecoder(graph, max_iter=args.admm_max_iter, tol=args.admm_tol,
                                     decision="marginals", **limit)
        alpha = 1e-3 if args.alpha is None else args.alpha
        model = SparseMAPClassifier(alpha=alpha, decoder=decoder, max_iter=1000,
                                    callback=cap)
    else:
        decoder = FactorGraphDecoder(graph, max_iter=args.admm_max_iter, tol=args.admm_tol,
                                     **limit)
        alpha = 1e-2 if args.alpha is None else args.alpha
        solver = "bcfw" if args.learner == "hinge_bcfw" else "cutting_plane"
        model = StructuredSVM(decoder, alpha=alpha, solver=solver,
                              tol=0.01 if solver == "cutting_plane" else 1e-3,
                              max_iter=10000, callback=cap,
                              **({"check_gap_every": 1} if solver == "bcfw" else {}))
    model.set_params(verbose=1)
    lines = _Tee(sys.stdout)
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(lines):
        warnings.simplefilter("always")
        start[0], start[1] = time.perf_counter(), time.process_time()
        model.fit(X, Y)
        wall, cpu = time.perf_counter() - start[0], time.process_time() - start[1]
    # the largest absolute (pseudo-)gradient entry after each L-BFGS iteration (what its
    # stopping test compares with tol), read from the verbose lines: "max|grad|", or
    # "max|pgrad|" where the solver runs orthant-wise on the LP-SparseMAP loss's kinks
    max_grad = [float(m.group(1)) for m in
                re.finditer(r"max\|p?grad\| (\S+)", lines.getvalue())]
    capped = cpu > 2 * args.cap
    prediction = model.predict(test.data)
    truth = np.asarray(test.target)
    row = dict(learner=args.learner, pairs=args.pairs, n_pairs=graph.n_pairs,
               defaults=bool(args.defaults), alpha=alpha,
               admm_tol=decoder.tol, admm_max_iter=decoder.max_iter,
               training_admm_tol=(decoder.for_gradients(model.tol).tol
                                  if args.learner == "lp_sparsemap" else decoder.tol),
               max_memory=decoder.max_memory, solver=getattr(model, "solver", "lbfgs"),
               tol=model.tol, max_iter=model.max_iter,
               load_before=os.getloadavg(),
               cap=args.cap, capped=capped, n_iter=int(model.n_iter_),
               converged=not capped and not any("converge" in str(w.message)
                                                for w in caught),
               warnings=[str(w.message)[:300] for w in caught],
               objective_last=float(model.objective_curve_[-1]),
               objective_min=float(np.min(model.objective_curve_)),
               wall=wall, cpu=cpu,
               example_f1=float(example_f1_score(truth, prediction)),
               hamming=float(hamming_loss(truth, prediction)),
               duality_gaps=[float(g) for g in getattr(model, "duality_gaps_", [])],
               max_abs_gradients=max_grad,
               commit=commit,
               trace=trace, load_after=os.getloadavg(),
               peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
    print(json.dumps(row))
    RESULTS.mkdir(exist_ok=True)
    with open(RESULTS / "factor_graph_convergence.jsonl", "a") as out:
        out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
