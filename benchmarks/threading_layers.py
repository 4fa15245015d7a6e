"""Speed of skstruct's kernels on each of numba's threading layers (TBB, OpenMP, workqueue).

skstruct runs its parallel kernels on TBB, the layer that is both fork-safe and thread-safe
(see ``skstruct/_threading.py``). This measures what that costs against GNU OpenMP (numba's
choice when TBB is not found, and skstruct's before) and the workqueue layer, on the full
CoNLL-2000 training set (8,936 sentences, 211,727 tokens, 23 chunk tags):

- *objective evaluation*: what one CRF objective and gradient evaluation does, with the
  weights of a 20-iteration fit: unary scores (sparse matmul), forward-backward, and the
  gradient (transposed sparse matmul);
- ``ChainDecoder.marginals`` and ``ChainDecoder.map`` on the same scores;
- ``CRF(max_iter=20, tol=0).fit``: 20 L-BFGS iterations end to end.

Each layer runs with 1 and 2 threads (``NUMBA_NUM_THREADS``), and with 2 threads while
another process keeps one core busy (``python -c "while True: pass"``). Whatever the layer,
numba cuts a ``prange`` loop into one equal chunk per thread (its default chunk size, 0), so
a thread that shares its core with another process holds the others up on every layer;
a work-stealing layer (TBB) could only balance smaller chunks
(``numba.set_parallel_chunksize``), which skstruct's kernels do not ask for.

The machine may be shared: for each condition the three layers run in three processes
started together, which take turns operation by operation (omp, tbb, workqueue, omp, ...),
so that a slow spell falls on all of them; each process first loads the data and runs every
operation once (compilation or cache loading excluded). Reported: for each layer the median
over ``--rounds`` calls (``--fit-rounds`` for the fit), and the median over rounds of the
per-round ratio tbb / omp.

Run: ``python benchmarks/threading_layers.py`` (about 10 minutes on an idle 2-core
machine). Writes ``results/threading_layers.md``.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

from _report import cpu_name, format_time, git_commit

RESULTS = Path(__file__).parent / "results"
LAYERS = ["omp", "tbb", "workqueue"]
CONDITIONS = [  # (label, NUMBA_NUM_THREADS, a busy process beside the benchmark)
    ("1 thread", 1, False),
    ("2 threads", 2, False),
    ("2 threads, one core busy", 2, True),
]
OPERATIONS = [
    ("objective evaluation", "objective"),
    ("ChainDecoder.marginals", "marginals"),
    ("ChainDecoder.map", "map"),
    ("CRF(max_iter=20).fit", "fit"),
]


def prepare(path):
    """Featurize and vectorize the training set once; store it for the worker processes."""
    import scipy.sparse as sp

    from skstruct.datasets import load_conll2000
    from skstruct.preprocessing import SequenceVectorizer, sentences_to_features

    train = load_conll2000("train")
    X = SequenceVectorizer().fit_transform(sentences_to_features(train.words, train.pos))
    stacked = sp.vstack(X, format="csr")
    offsets = np.r_[0, np.cumsum([x.shape[0] for x in X])]
    np.savez(path, data=stacked.data, indices=stacked.indices, indptr=stacked.indptr,
             shape=np.array(stacked.shape), offsets=offsets,
             y=np.concatenate(train.target).astype(str))
    return len(X), int(offsets[-1]), stacked.shape[1]


def worker(path):
    """Serve timing requests in this process (layer and threads set by the environment).

    Prints ``ready`` once warm, then for each operation name read from stdin runs it once
    and prints its time in seconds.
    """
    import numba
    import scipy.sparse as sp

    from skstruct import CRF
    from skstruct.decoders import ChainDecoder, ChainScores
    from skstruct.features import csr_matmul, csr_transpose_matmul

    stored = np.load(path)
    Xs = sp.csr_matrix((stored["data"], stored["indices"], stored["indptr"]),
                       shape=tuple(stored["shape"]))
    offsets, labels = stored["offsets"], stored["y"]
    X = [Xs[a:b] for a, b in zip(offsets[:-1], offsets[1:])]
    y = [labels[a:b] for a, b in zip(offsets[:-1], offsets[1:])]
    crf = CRF(max_iter=20, tol=0.0).fit(X, y)  # realistic weights; warms the fit
    decoder = ChainDecoder()

    def chain_scores():
        return ChainScores(csr_matmul(Xs, crf.coef_.T), offsets, crf.transition_,
                           crf.start_transition_, crf.end_transition_)

    def objective():
        _, parts = decoder.marginals(chain_scores())
        return csr_transpose_matmul(Xs, parts.unary)

    scores = chain_scores()
    operations = {
        "objective": objective,
        "marginals": lambda: decoder.marginals(scores),
        "map": lambda: decoder.map(scores),
        "fit": lambda: CRF(max_iter=20, tol=0.0).fit(X, y),
    }
    for name in ("objective", "marginals", "map"):
        operations[name]()
    print(json.dumps({"layer": numba.threading_layer(), "threads": numba.get_num_threads()}),
          flush=True)
    for line in sys.stdin:
        tic = time.perf_counter()
        operations[line.strip()]()
        print(time.perf_counter() - tic, flush=True)


def start_workers(path, n_threads):
    """One warm worker per layer, with ``n_threads`` threads."""
    workers = {}
    for layer in LAYERS:
        env = dict(os.environ, NUMBA_THREADING_LAYER=layer, NUMBA_NUM_THREADS=str(n_threads),
                   PYTHONWARNINGS="ignore")
        workers[layer] = subprocess.Popen(
            [sys.executable, __file__, "--worker", path], env=env, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    for layer, process in workers.items():
        ready = json.loads(process.stdout.readline())
        if ready != {"layer": layer, "threads": n_threads}:
            raise RuntimeError(f"asked for {layer} with {n_threads} threads, got {ready}")
    return workers


def measure(path, n_threads, busy, rounds, fit_rounds):
    """Times of every operation on every layer, the layers taking turns call by call."""
    workers = start_workers(path, n_threads)
    spinner = None
    if busy:
        spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        time.sleep(1.0)
    times = {layer: {key: [] for _, key in OPERATIONS} for layer in LAYERS}
    try:
        for _, key in OPERATIONS:
            for round_ in range(fit_rounds if key == "fit" else rounds):
                order = LAYERS[round_ % 3:] + LAYERS[:round_ % 3]
                for layer in order:
                    workers[layer].stdin.write(key + "\n")
                    workers[layer].stdin.flush()
                    times[layer][key].append(float(workers[layer].stdout.readline()))
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
        for process in workers.values():
            process.stdin.close()
            process.wait()
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="calls of each kernel")
    parser.add_argument("--fit-rounds", type=int, default=3, help="fits")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return

    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "conll2000_train.npz")
        n_sentences, n_tokens, n_features = prepare(path)
        runs = {}
        for label, n_threads, busy in CONDITIONS:
            runs[label] = measure(path, n_threads, busy, args.rounds, args.fit_rounds)
            for layer in LAYERS:
                print(f"{label}, {layer}: " + ", ".join(
                    f"{key} {format_time(np.median(runs[label][layer][key]))}"
                    for _, key in OPERATIONS), flush=True)
    medians = {label: {layer: {key: float(np.median(t)) for key, t in by_layer[layer].items()}
                       for layer in LAYERS} for label, by_layer in runs.items()}
    ratios = {label: {key: float(np.median(np.divide(by_layer["tbb"][key],
                                                     by_layer["omp"][key])))
                      for _, key in OPERATIONS} for label, by_layer in runs.items()}
    try:
        tbb_version = version("tbb")
    except PackageNotFoundError:
        tbb_version = "not installed"
    import numba

    results = {
        "data": {"sentences": n_sentences, "tokens": n_tokens, "features": n_features},
        "medians_seconds": medians,
        "ratio_tbb_omp": ratios,
        "rounds": args.rounds,
        "fit_rounds": args.fit_rounds,
        "machine": f"{cpu_name()}, {os.cpu_count()} cores",
        "load_average": {"before": load_before, "after": os.getloadavg()[0]},
        "versions": {"numba": numba.__version__, "tbb": tbb_version},
        "commit": git_commit(),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "threading_layers.md").write_text(report(results))
    print(report(results))


def report(r):
    m, ratio = r["medians_seconds"], r["ratio_tbb_omp"]
    lines = [
        "# skstruct's kernels on numba's threading layers",
        "",
        f"Full CoNLL-2000 training set ({r['data']['sentences']:,} sentences, "
        f"{r['data']['tokens']:,} tokens, {r['data']['features']:,} features, 23 tags). "
        f"{r['machine']}; numba {r['versions']['numba']}, tbb {r['versions']['tbb']}; "
        f"code {r['commit']}. Load average {r['load_average']['before']:.1f} before, "
        f"{r['load_average']['after']:.1f} after. Warm kernels; the layers take turns call "
        f"by call; medians of {r['rounds']} calls ({r['fit_rounds']} fits of 20 L-BFGS "
        "iterations). *tbb / omp*: median of the per-round ratios, below 1 when TBB is "
        "faster. Produced by `python benchmarks/threading_layers.py`.",
        "",
        "| condition | operation | omp | tbb | workqueue | tbb / omp |",
        "|---|---|---|---|---|---|",
    ]
    for label, _, _ in CONDITIONS:
        for name, key in OPERATIONS:
            t = {layer: m[label][layer][key] for layer in LAYERS}
            lines.append(f"| {label} | {name} | {format_time(t['omp'])} | "
                         f"{format_time(t['tbb'])} | {format_time(t['workqueue'])} | "
                         f"{ratio[label][key]:.2f} |")
    lines += [
        "",
        "Notes.",
        "",
        "- skstruct selects TBB (fork-safe and thread-safe); OpenMP is what numba picks when "
        "TBB is absent (GNU OpenMP on Linux: not fork-safe); workqueue is fork-safe but "
        "aborts when two Python threads run kernels at once, so it is shown for comparison "
        "only. See doc/user_guide/parallelism.rst.",
        "- *objective evaluation* is the work of one CRF objective and gradient evaluation "
        "(sparse matmul, forward-backward, transposed sparse matmul); the fit adds L-BFGS and "
        "the Python around it.",
        "- When the load average is above the number of cores, other processes share the "
        "cores: the absolute times, and 1 against 2 threads, then say little; the *tbb / "
        "omp* ratios, from calls that take turns, are the measure.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
