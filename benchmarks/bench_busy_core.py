"""Compiled parallel kernels on a machine with one core kept busy by another process.

numba's default schedule cuts a parallel loop into one block per thread, so a loop lasts
as long as its slowest thread: when another process holds a core, the thread that shares
it runs at half speed and the parallel kernel can take longer than on one thread. The
kernels run over many chunks of work under ``dynamic_schedule`` instead, so that the
faster thread takes more chunks.

For every compiled parallel kernel of the package (through the Python function that calls
it, on an input of a realistic size), this times three machine states, alternating, the
median of ``--repeats`` runs each (compilation excluded by a warm-up call):

- ``idle, all``: all numba threads;
- ``one thread``: ``numba.set_num_threads(1)``;
- ``busy, all``: all threads while a subprocess this script starts spins on one core
  (stopped right after the measurement);
- ``busy, one``: one thread with the spinning subprocess, for reference (on a machine
  already loaded by other work, the spinner slows a one-thread run too).

It reports wall and CPU time (``time.process_time``, this process only), the ratio of
the busy-core wall time to the one-thread wall time (at most 1 means that running on all
threads never loses against one thread, even with a core taken), and the ratio of the two
busy-core states (all threads against one, both with the spinner). On a machine shared with
other work the wall times move with the load (printed before and after every kernel):
read the ratios with it.

Run::

    python benchmarks/bench_busy_core.py                  # --repeats, --only NAME,...
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numba
import numpy as np
import scipy.sparse as sp

import skstruct  # noqa: F401  (first: it picks numba's threading layer)
from _report import command_line, format_time, git_commit, machine_summary

RESULTS = Path(__file__).parent / "results"

#: Least wall time of one measurement: short kernels are called this long in a row.
MIN_SECONDS = 0.3

SPIN = "while True:\n    pass\n"


# ---------------------------------------------------------------------------------------
# Inputs of realistic sizes, and the call of each kernel through its Python caller.
# ---------------------------------------------------------------------------------------

def _chain_scores(rng, n_sequences, n_states, low=5, high=45):
    from skstruct.decoders import ChainScores

    lengths = rng.integers(low, high, size=n_sequences)
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    return ChainScores(rng.normal(size=(offsets[-1], n_states)), offsets,
                       rng.normal(size=(n_states, n_states)), rng.normal(size=n_states),
                       rng.normal(size=n_states))


def _token_matrix(rng, n_rows, n_features, per_row):
    """Rows of ``per_row`` indicator features drawn from a Zipf-like distribution."""
    columns = np.minimum(rng.zipf(1.3, size=n_rows * per_row) - 1, n_features - 1)
    indptr = np.arange(n_rows + 1, dtype=np.int64) * per_row
    matrix = sp.csr_matrix((np.ones(n_rows * per_row), columns, indptr),
                           shape=(n_rows, n_features))
    matrix.sum_duplicates()
    return matrix


def chain_viterbi(rng):
    """Reference: chunks of sequences (CoNLL-2000 size, 22 states)."""
    from skstruct.decoders import ChainDecoder

    scores = _chain_scores(rng, 8936, 22)
    return "8,936 sequences, 211k tokens, 22 states", lambda: ChainDecoder().map(scores)


def chain_forward_backward(rng):
    """Reference: chunks of sequences."""
    from skstruct.decoders import ChainDecoder

    scores = _chain_scores(rng, 8936, 22)
    return ("8,936 sequences, 22 states, marginals",
            lambda: ChainDecoder().marginals(scores))


def crf_objective(rng):
    """Reference: the compiled CRF objective (chunks of sequences)."""
    from skstruct.decoders import ChainDecoder
    from skstruct.features import LinearChainFeatures
    from skstruct.losses import CRFLoss
    from skstruct.optim import RegularizedRisk
    from skstruct.utils import SequenceBatch

    scores = _chain_scores(rng, 8936, 22)
    matrix = _token_matrix(rng, scores.unary.shape[0], 50000, 20)
    y = rng.integers(0, 22, size=matrix.shape[0])
    risk = RegularizedRisk(LinearChainFeatures(50000, 22),
                           SequenceBatch(matrix, scores.offsets), y, ChainDecoder(),
                           CRFLoss(), 0.01, np.ones(scores.n_sequences))
    w = rng.normal(scale=0.1, size=risk.n_params)
    return ("8,936 sequences, 22 states, 50,000 features (value and gradient)",
            lambda: risk.value_and_gradient(w))


def tree_eisner(rng):
    """Reference (``_tree.kernels``)."""
    from skstruct.decoders import TreeDecoder, TreeScores

    lengths = rng.integers(5, 40, size=2000)
    offsets = np.concatenate(([0], np.cumsum(lengths ** 2))).astype(np.int64)
    scores = TreeScores(rng.normal(size=offsets[-1]), np.concatenate(([0], np.cumsum(
        lengths))).astype(np.int64))
    return "2,000 sentences of 5-39 words, projective", lambda: TreeDecoder().map(scores)


def top_k_binary(rng):
    from skstruct.decoders import MultilabelDecoder, MultilabelScores

    scores = MultilabelScores(rng.normal(size=(21519, 22)))
    return ("21,519 examples (tmc2007 size), 22 labels, k = 20",
            lambda: MultilabelDecoder().top_k(scores, 20))


def count_loss_augmented_map(rng):
    from skstruct.decoders import MultilabelDecoder, MultilabelScores
    from skstruct.losses import FBetaLoss

    scores = MultilabelScores(rng.normal(size=(21519, 22)))
    y = (rng.random((21519, 22)) < 0.1).astype(np.int64)
    return ("21,519 examples, 22 labels, F1, margin",
            lambda: MultilabelDecoder().loss_augmented_map(scores, y, FBetaLoss()))


def constrained_message_passing(rng):
    from skstruct.decoders._chain.counting import best_with_statistic, statistic_table
    from skstruct.losses import FBetaLoss

    scores = _chain_scores(rng, 1000, 5, 5, 30)
    loss = FBetaLoss().with_positive_states(np.arange(5) > 0)
    y = rng.integers(0, 5, size=scores.unary.shape[0])
    increments = loss.increments(y, 5)
    caps = np.repeat(scores.lengths[:, None], increments.shape[2], axis=1)

    def run():
        table = statistic_table(scores, increments, caps)
        targets = np.array([np.argmax(table.best[a:b]) for a, b in
                            zip(table.table_offsets[:-1], table.table_offsets[1:])])
        return best_with_statistic(scores, increments, caps, targets)

    return "1,000 sequences of 5-29 tokens, 5 states, F1 statistic (table + backtrack)", run


def sparsemax(rng):
    from skstruct.decoders import MulticlassDecoder, MulticlassScores
    from skstruct.decoders._sparsemap.closed_forms import sparsemax_sparsemap

    scores = MulticlassScores(rng.normal(size=(200000, 26)))
    return ("200,000 examples, 26 classes",
            lambda: sparsemax_sparsemap(MulticlassDecoder(), scores))


def clip_staircase(rng):
    from skstruct.decoders import MultilabelDecoder, MultilabelScores
    from skstruct.decoders._sparsemap.closed_forms import clip_sparsemap

    scores = MultilabelScores(rng.normal(0.5, 0.5, size=(200000, 22)))
    coefficients = rng.random((200000, 23))

    def run():
        result = clip_sparsemap(MultilabelDecoder(), scores)
        return result.combine(coefficients[:, : result.support_size.max()])

    return "200,000 examples, 22 labels (clip, staircase, combine)", run


def csr_matmul(rng):
    from skstruct.features import csr_matmul as product

    matrix = _token_matrix(rng, 211727, 100000, 20)
    dense = rng.normal(size=(100000, 22))
    return "211,727 x 100,000 CSR (about 20 entries a row) @ (100,000, 22)", \
        lambda: product(matrix, dense)


def csr_transpose_matmul(rng):
    from skstruct.features import csr_transpose_matmul as product

    matrix = _token_matrix(rng, 211727, 20000, 20)
    dense = rng.normal(size=(211727, 22))
    return "(211,727 x 20,000 CSR).T @ (211,727, 22)", lambda: product(matrix, dense)


def lbfgs_two_loop(rng):
    from skstruct.optim._lbfgs import _two_loop

    n = 4_000_000
    pairs = [(rng.normal(size=n), rng.normal(size=n), 1.0 / (1.0 + k)) for k in range(10)]
    grad = rng.normal(size=n)
    return "4,000,000 parameters, 10 pairs", lambda: _two_loop(grad, pairs)


def column_dictionary(rng):
    from skstruct.features._compiled import column_dictionary as dictionary

    lengths = rng.integers(5, 40, size=1500)
    rows = lengths ** 2
    matrix = _token_matrix(rng, int(rows.sum()), 2**20, 30)
    row_offsets = np.concatenate(([0], np.cumsum(rows))).astype(np.int64)
    indptr = matrix.indptr.astype(np.int64)
    return (f"1,500 examples of arcs ({rows.sum() / 1e6:.2f}M rows, 30 entries each), "
            "2**20 columns",
            lambda: dictionary(matrix.indices, indptr, row_offsets, 2**20))


def arc_features(rng):
    from skstruct.datasets import load_ud_english_ewt
    from skstruct.preprocessing import ArcVectorizer

    train = load_ud_english_ewt("train")[:400]
    vectorizer = ArcVectorizer().fit(train)
    return "UD EWT, 400 training sentences (transform_batch)", \
        lambda: vectorizer.transform_batch(train)


def cutting_plane_pass(rng):
    from skstruct.decoders import ChainDecoder
    from skstruct.features import LinearChainFeatures
    from skstruct.losses import StructuredHingeLoss
    from skstruct.optim import RegularizedRisk
    from skstruct.optim._cutting_plane import _CompiledConstraints
    from skstruct.utils import SequenceBatch

    scores = _chain_scores(rng, 4000, 22)
    matrix = _token_matrix(rng, scores.unary.shape[0], 50000, 20)
    y = rng.integers(0, 22, size=matrix.shape[0])
    risk = RegularizedRisk(LinearChainFeatures(50000, 22),
                           SequenceBatch(matrix, scores.offsets), y, ChainDecoder(),
                           StructuredHingeLoss("hamming", "margin"), 0.01,
                           np.ones(scores.n_sequences))
    constraints = _CompiledConstraints.offer(risk, 0)
    w = rng.normal(scale=0.1, size=risk.n_params)
    return ("4,000 sequences (96k tokens), 22 states, 50,000 features, Hamming",
            lambda: constraints.evaluate(w, False))


KERNELS = {
    "chain viterbi (reference)": chain_viterbi,
    "chain forward-backward (reference)": chain_forward_backward,
    "CRF objective (reference)": crf_objective,
    "tree eisner (reference)": tree_eisner,
    "multilabel top-k": top_k_binary,
    "multilabel count-loss MAP": count_loss_augmented_map,
    "constrained message passing": constrained_message_passing,
    "sparsemax (closed-form SparseMAP)": sparsemax,
    "clip + staircase (closed-form SparseMAP)": clip_staircase,
    "CSR @ dense": csr_matmul,
    "CSR.T @ dense": csr_transpose_matmul,
    "L-BFGS two-loop": lbfgs_two_loop,
    "column dictionary": column_dictionary,
    "arc features": arc_features,
    "cutting-plane pass": cutting_plane_pass,
}


# ---------------------------------------------------------------------------------------
# Measurement.
# ---------------------------------------------------------------------------------------

class Spinner:
    """A subprocess that keeps one core busy while the context is open."""

    def __enter__(self):
        self.process = subprocess.Popen([sys.executable, "-c", SPIN])
        time.sleep(0.2)  # let it start and be scheduled
        return self

    def __exit__(self, *exc):
        self.process.kill()
        self.process.wait()


def _measure(run, calls, threads):
    previous = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        start, cpu = time.perf_counter(), time.process_time()
        for _ in range(calls):
            run()
        return ((time.perf_counter() - start) / calls, (time.process_time() - cpu) / calls)
    finally:
        numba.set_num_threads(previous)


def bench(run, repeats, all_threads):
    run()  # compile, or load from the cache
    start = time.perf_counter()
    run()
    calls = max(1, int(np.ceil(MIN_SECONDS / max(time.perf_counter() - start, 1e-6))))
    times = {"idle, all": [], "one thread": [], "busy, all": [], "busy, one": []}
    for _ in range(repeats):
        times["idle, all"].append(_measure(run, calls, all_threads))
        times["one thread"].append(_measure(run, calls, 1))
        with Spinner():
            times["busy, all"].append(_measure(run, calls, all_threads))
            times["busy, one"].append(_measure(run, calls, 1))
    out = {"calls": calls}
    for state, values in times.items():
        values = np.array(values)
        out[state] = {"wall": float(np.median(values[:, 0])),
                      "cpu": float(np.median(values[:, 1])),
                      "walls": values[:, 0].tolist(), "cpus": values[:, 1].tolist()}
    out["busy / one thread"] = out["busy, all"]["wall"] / out["one thread"]["wall"]
    out["idle all / one thread"] = out["idle, all"]["wall"] / out["one thread"]["wall"]
    out["busy all / busy one"] = out["busy, all"]["wall"] / out["busy, one"]["wall"]
    return out


def write_report(results, args, load_start, load_end):
    lines = [
        "# Compiled parallel kernels with one core kept busy",
        "",
        f"Command: `{command_line('python benchmarks/bench_busy_core.py')}`  ",
        f"Commit: {git_commit()} (skstruct {skstruct.__version__})  ",
        f"Machine: {machine_summary()['cpu']}, {os.cpu_count()} cores, "
        f"{numba.config.NUMBA_NUM_THREADS} numba threads "
        f"({numba.threading_layer()} layer)  ",
        f"Load average (1, 5, 15 min) at the start: {', '.join(f'{x:.2f}' for x in load_start)}"
        f"; at the end: {', '.join(f'{x:.2f}' for x in load_end)}",
        "",
        "Four states, alternating, medians of "
        f"{args.repeats}: all threads; one thread; all threads while a spinning subprocess "
        "holds a core (and, for reference, one thread with the spinner). Wall and CPU time "
        "(this process) per call. **busy / one** is the busy-core wall time over the "
        "one-thread wall time: at most 1 means that all threads never lose against one "
        "thread with a core taken; the last column compares the two busy states. The "
        "machine was shared with other "
        "work (the load averages above, and the load before each kernel in the table): wall "
        "times, hence the ratios, move with it.",
        "",
        "| kernel | input | load | idle, all: wall / CPU | one thread: wall / CPU | "
        "busy, all: wall / CPU | busy, one: wall / CPU | idle all / one | **busy / one** "
        "| busy all / busy one |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        cells = [f"{format_time(r[s]['wall'])} / {format_time(r[s]['cpu'])}"
                 for s in ("idle, all", "one thread", "busy, all", "busy, one")]
        lines.append(f"| {name} | {r['input']} | {r['load']:.1f} | " + " | ".join(cells)
                     + f" | {r['idle all / one thread']:.2f} | "
                     f"**{r['busy / one thread']:.2f}** | {r['busy all / busy one']:.2f} |")
    lines += ["", "Every measurement (wall seconds per call, in run order) is in "
              "`busy_core.json`.", ""]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "busy_core.md").write_text("\n".join(lines))
    (RESULTS / "busy_core.json").write_text(json.dumps(
        {"command": command_line("python benchmarks/bench_busy_core.py"),
         "commit": git_commit(), "machine": machine_summary(),
         "load_start": load_start, "load_end": load_end, "results": results},
        indent=2) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default=None,
                        help="comma-separated kernel names (substrings) to run")
    args = parser.parse_args()
    all_threads = numba.get_num_threads()
    if all_threads < 2:
        sys.exit("numba has one thread here: nothing to compare")
    load_start = list(os.getloadavg())
    print(f"load average {load_start}", flush=True)
    results = {}
    for name, make in KERNELS.items():
        if args.only and not any(part in name for part in args.only.split(",")):
            continue
        rng = np.random.default_rng(0)
        description, run = make(rng)
        load = os.getloadavg()[0]
        r = bench(run, args.repeats, all_threads)
        r.update(input=description, load=load)
        results[name] = r
        print(f"{name:42s} load {load:4.1f}  idle {format_time(r['idle, all']['wall']):>9s}"
              f"  one {format_time(r['one thread']['wall']):>9s}"
              f"  busy {format_time(r['busy, all']['wall']):>9s}"
              f"  busy/one {r['busy / one thread']:.2f}"
              f"  busy all/busy one {r['busy all / busy one']:.2f}", flush=True)
    write_report(results, args, load_start, list(os.getloadavg()))


if __name__ == "__main__":
    main()
