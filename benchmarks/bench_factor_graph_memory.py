"""Peak memory of the pairwise factor-graph fits beside their estimate.

For every (data set, learner) one child process loads the data, warms the kernels up on
a few examples, resets its peak resident set size (``/proc/self/clear_refs``), fits, and
reports the growth of the peak (``VmHWM`` minus the resident size before the fit) beside
``FactorGraphDecoder.estimate_memory``. The fits are short (``--max-iter`` solver
iterations): the peak is reached at the first warm-started solve, so longer fits hold no
more.

Data sets:

``bibtex_all``
    bibtex's training set (4,880 examples, 1,836 sparse features, 159 labels) with all
    12,561 label pairs.
``bibtex_cooccurring``
    The same with the 3,506 label pairs that co-occur in training.
``synthetic400``
    400 labels, 4,500 examples, 100 dense features: every example draws one of 40
    topics of 10 labels (two topics with probability 0.1) and 1 to 4 labels from each; the PAIR factors are the label
    pairs that co-occur (a set of the size of a 374-label image-annotation set with its
    4,133 co-occurring pairs).

Learners: the structured hinge with LP-MAP (relaxed) by the one-slack cutting plane and
by BCFW, and the LP-SparseMAP loss by L-BFGS (``SparseMAPClassifier``).

    PYTHONPATH=. python benchmarks/bench_factor_graph_memory.py [--datasets ...]

Writes ``results/factor_graph_memory.md`` and ``.json`` (``--output STEM``: ``STEM.md``
and ``STEM.json`` instead). Beside the estimate, every row gives the measured peak per
example and per example and factor (the peak over n_examples, and over n_factors).
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).parent / "results"
STEM = "factor_graph_memory"
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "multilabel"
DATASETS = ("bibtex_all", "bibtex_cooccurring", "synthetic400")
LEARNERS = ("hinge_cutting_plane", "hinge_bcfw", "lp_sparsemap_lbfgs")


def synthetic400(seed=0, n=4500, n_labels=400, n_topics=40, n_features=100):
    """The synthetic 400-label set (module docstring): X (n, n_features), Y (n, 400)."""
    rng = np.random.default_rng(seed)
    size = n_labels // n_topics
    centers = rng.normal(size=(n_topics, n_features))
    X = np.empty((n, n_features))
    Y = np.zeros((n, n_labels), dtype=np.int64)
    for i in range(n):
        topics = rng.choice(n_topics, size=1 + (rng.random() < 0.1), replace=False)
        X[i] = centers[topics].sum(axis=0) + rng.normal(scale=1.0, size=n_features)
        for t in topics:
            labels = t * size + rng.choice(size, size=rng.integers(1, 5), replace=False)
            Y[i, labels] = 1
    return X, Y


def load(name):
    if name == "synthetic400":
        return synthetic400()
    from skstruct.datasets import load_multilabel

    data = load_multilabel("bibtex", subset="train", path=DATA)
    return data.data, np.asarray(data.target)


def cooccurring_pairs(Y):
    both = (Y.T @ Y) > 0
    rows, cols = np.nonzero(np.triu(both, k=1))
    return np.column_stack([rows, cols])


def _status(field):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def child(name, learner, max_iter, max_memory, default_decoder=False):
    """Run one fit in this process and print its measures as JSON."""
    import warnings

    from skstruct import SparseMAPClassifier, StructuredSVM
    from skstruct.decoders import FactorGraph, FactorGraphDecoder
    from skstruct.losses import SparseMAPLoss

    X, Y = load(name)
    n_labels = Y.shape[1]
    pairs = None if name == "bibtex_all" else cooccurring_pairs(Y)
    graph = (FactorGraph.pairwise(n_labels) if pairs is None
             else FactorGraph.pairwise(n_labels, pairs=pairs))
    if default_decoder:
        decoder = FactorGraphDecoder(graph)     # ADMM 1000 / 1e-6, max_memory 2 GiB
    else:
        decoder = FactorGraphDecoder(graph, max_iter=200, tol=1e-4, max_memory=max_memory)

    def model(iters):
        if learner == "lp_sparsemap_lbfgs":
            return SparseMAPClassifier(alpha=1e-3, decoder=decoder, max_iter=iters)
        solver = "cutting_plane" if learner == "hinge_cutting_plane" else "bcfw"
        return StructuredSVM(decoder, alpha=1e-2, solver=solver, max_iter=iters)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model(2).fit(X[:20], Y[:20])              # compile the kernels
        import ctypes
        import gc

        gc.collect()
        ctypes.CDLL(None).malloc_trim(0)          # freed memory back to the system
        Path("/proc/self/clear_refs").write_text("5")
        before = _status("VmRSS")
        start, cpu = time.perf_counter(), time.process_time()
        model(max_iter).fit(X, Y)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    process_peak = _status("VmHWM")           # whole process, since the reset
    peak = process_peak - before
    solver = "cutting_plane" if learner == "hinge_cutting_plane" else None
    # the LP-SparseMAP loss (no cost, PAIR factors only) runs the fused evaluation,
    # which the estimate counts when it is given the loss
    loss = SparseMAPLoss() if learner == "lp_sparsemap_lbfgs" else None
    report = decoder.estimate_memory(X.shape[0], solver=solver, loss=loss,
                                     n_features=X.shape[1])
    settings = (f"ADMM max_iter={decoder.max_iter}, tol={decoder.tol:g}, "
                f"max_memory={decoder.max_memory!r}")
    print(json.dumps(dict(dataset=name, learner=learner, n_examples=X.shape[0],
                          n_labels=n_labels, n_pairs=graph.n_pairs, max_iter=max_iter,
                          decoder=settings, peak_bytes=peak, before_bytes=before,
                          process_peak_bytes=process_peak,
                          peak_per_example=peak / X.shape[0],
                          peak_per_factor=peak / X.shape[0] / report["n_factors"],
                          wall=wall, cpu=cpu, **report)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--learners", nargs="+", default=list(LEARNERS))
    parser.add_argument("--max-iter", type=int, default=3)
    parser.add_argument("--max-memory", type=float, default=None,
                        help="the decoder's max_memory (default: no limit, to measure)")
    parser.add_argument("--default-decoder", action="store_true",
                        help="FactorGraphDecoder(graph) with its defaults (ADMM "
                             "max_iter=1000, tol=1e-6, max_memory=2 GiB)")
    parser.add_argument("--output", type=Path, default=RESULTS / STEM,
                        help="stem of the .md and .json written")
    parser.add_argument("--child", nargs=2)
    args = parser.parse_args()
    if args.child:
        child(*args.child, args.max_iter, args.max_memory, args.default_decoder)
        return
    rows = []
    for name in args.datasets:
        for learner in args.learners:
            limit = [] if args.max_memory is None else ["--max-memory",
                                                         str(args.max_memory)]
            if args.default_decoder:
                limit.append("--default-decoder")
            load_before = " ".join(Path("/proc/loadavg").read_text().split()[:3])
            out = subprocess.run([sys.executable, __file__, "--child", name, learner,
                                  "--max-iter", str(args.max_iter), *limit],
                                 capture_output=True, text=True)
            if out.returncode:
                print(out.stderr, file=sys.stderr)
                rows.append(dict(dataset=name, learner=learner,
                                 error=out.stderr.strip().splitlines()[-1]))
                continue
            rows.append(dict(json.loads(out.stdout.strip().splitlines()[-1]),
                             load_before=load_before))
            print(rows[-1], file=sys.stderr, flush=True)
    load = Path("/proc/loadavg").read_text().split()[:3]
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.with_suffix(".json").write_text(json.dumps(rows, indent=1))
    mib = 1024**2
    lines = [
        "# Peak memory of the pairwise factor-graph fits and its estimate", "",
        "One child process per row: data loaded, kernels warmed up on 20 examples, peak "
        "resident size reset, then a fit of `max_iter` solver iterations; peak = growth "
        "of VmHWM over the resident size before the fit (whole process: VmHWM itself, "
        "the data and the compiled kernels included). Estimate = "
        "`FactorGraphDecoder.estimate_memory(n_examples, solver, loss, n_features)['fit_bytes']`, what "
        "the fit compares with `max_memory` (default 2 GiB) before allocating. "
        + ("Decoder: `FactorGraphDecoder(graph)`, its defaults (ADMM max_iter=1000, "
           "tol=1e-6, max_memory=2 GiB: a fit over the limit raises)."
           if args.default_decoder else
           "Decoder: ADMM max_iter=200, tol=1e-4, "
           + ("no memory limit (to measure)." if args.max_memory is None else
              f"max_memory={args.max_memory:.10g} (a fit over it raises).")), "",
        "Command: `PYTHONPATH=. python benchmarks/bench_factor_graph_memory.py "
        + " ".join(sys.argv[1:]) + "`", "",
        f"Date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; 1-, 5- and "
        "15-minute load averages before the rows: "
        + "; ".join(r.get("load_before", "?") for r in rows)
        + f"; after the runs: {' '.join(load)}.", "",
        "| data set | learner | examples | labels | PAIR factors | peak (MiB) | whole "
        "process (MiB) | peak per "
        "example (KiB) | peak per example and factor (bytes) | estimate (MiB) | "
        "estimate / peak | estimate per example (KiB) | estimate per example and factor "
        "(bytes) | fit wall / CPU (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['dataset']} | {r['learner']} | error: {r['error']} "
                         "| | | | | | | | | | | |")
            continue
        lines.append(
            f"| {r['dataset']} | {r['learner']} | {r['n_examples']} | {r['n_labels']} | "
            f"{r['n_pairs']} | {r['peak_bytes'] / mib:.0f} | "
            f"{r['process_peak_bytes'] / mib:.0f} | "
            f"{r['peak_per_example'] / 1024:.1f} | {r['peak_per_factor']:.1f} | "
            f"{r['fit_bytes'] / mib:.0f} | "
            f"{r['fit_bytes'] / max(r['peak_bytes'], 1):.2f} | "
            f"{r['per_example'] / 1024:.1f} | {r['per_factor']:.1f} | "
            f"{r['wall']:.1f} / {r['cpu']:.1f} |")
    args.output.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
