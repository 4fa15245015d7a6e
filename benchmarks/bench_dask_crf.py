"""DaskCRF on a LocalCluster against the local CRF: CoNLL-2000 and a 10x replicated copy.

The CoNLL-2000 training set (8,936 sentences, 211,727 tokens) with the sklearn-crfsuite
tutorial features (vectorized once on the client), and a copy replicated ``--replicas``
times on the workers (each partition repeated, so the client holds the 1x data only).
For each number of worker processes in ``--workers`` (one thread each) and each copy, one
``DaskCRF`` fit of ``--iterations`` L-BFGS iterations (``tol=0``), and the local
``CRF`` fit of the same data and budget on this process (all kernel threads).

Reported: the time per L-BFGS iteration (from the callback's timestamps, the first
iteration excluded: it holds the line search's first trials), the setup time (reading
the partitions into shards on the workers, up to the first iteration), the objective
evaluations per iteration, the bytes sent per evaluation (client to workers: ``w`` once,
in the task the workers fetch it from, 8 bytes per parameter; sent by the workers, to
other workers and to the client: measured by the workers' ``transfer_outgoing_bytes_total`` over the whole fit,
divided by the evaluations), the overhead against the local fit, and a cost model

    t_iter(N, P) = a · N / min(P, cores) + b · log₂ P + c

(N tokens, P worker processes; ``cores`` the machine's, since more processes than cores
share them) fitted by least squares to the Dask measurements, then used to *predict* the
time per iteration of a 100x larger fit on 32 machines of one such core each
(a · 100 N / 32 + b · log₂ 32 + c), stated as a prediction: it assumes the communication
of a real network costs what the LocalCluster's loopback does per tree level, and the
same number of parameters.

Run: ``python benchmarks/bench_dask_crf.py`` (``--workers 1,2,4 --replicas 1,10
--iterations 10``); ``--quick``: 500 sentences, 1 and 2 workers, 1x and 2x, 4 iterations.
Writes ``results/dask_crf.md`` and ``.json`` next to this file.
"""

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _report import machine_summary, record_run  # noqa: E402

import skstruct  # noqa: E402
from skstruct import CRF  # noqa: E402
from skstruct.datasets import load_conll2000  # noqa: E402
from skstruct.preprocessing import SequenceVectorizer, sentences_to_features  # noqa: E402

RESULTS = Path(__file__).parent / "results"
STEM = "dask_crf"


class Clock:
    """A callback that timestamps the iterations."""

    def __init__(self):
        self.times = []
        self.n_params = None

    def __call__(self, n_iter, w, objective):
        self.times.append(time.perf_counter())
        self.n_params = len(w)

    def per_iteration(self):
        t = self.times
        return (t[-1] - t[0]) / (len(t) - 1) if len(t) > 1 else float("nan")


def _replicate(part, copies):
    return list(part) * copies


def transfer_bytes(client):
    counts = client.run(lambda dask_worker: dask_worker.transfer_outgoing_bytes_total)
    return sum(counts.values())


def fit_local(X, y, params):
    clock = Clock()
    tic = time.perf_counter()
    model = CRF(callback=clock, **params).fit(X, y)
    total = time.perf_counter() - tic
    return {"per_iteration": clock.per_iteration(), "total": total,
            "setup": clock.times[0] - tic, "n_iter": int(model.n_iter_),
            "objective": float(model.objective_curve_[-1]),
            "n_params": int(clock.n_params)}


def fit_dask(client, pairs, copies, n_partitions, params):
    import dask.bag as db
    from skstruct.dask import DaskCRF

    bag = db.from_sequence(pairs, npartitions=n_partitions)
    if copies > 1:
        bag = bag.map_partitions(_replicate, copies)
    clock = Clock()
    before = transfer_bytes(client)
    tic = time.perf_counter()
    model = DaskCRF(client=client, callback=clock, **params)
    model.fit(bag)
    total = time.perf_counter() - tic
    moved = transfer_bytes(client) - before
    return model, {"per_iteration": clock.per_iteration(), "total": total,
                   "setup": clock.times[0] - tic, "n_iter": int(model.n_iter_),
                   "n_evaluations": int(model.n_evaluations_),
                   "objective": float(model.objective_curve_[-1]),
                   "worker_to_worker_bytes": int(moved),
                   "worker_to_worker_bytes_per_evaluation":
                       int(moved / max(1, model.n_evaluations_))}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--replicas", default="1,10")
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--pairs", default="seen", choices=["seen", "all"])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--output", default=str(RESULTS))
    args = parser.parse_args(argv)
    from distributed import Client, LocalCluster

    workers = [int(p) for p in args.workers.split(",")]
    replicas = [int(r) for r in args.replicas.split(",")]
    iterations = args.iterations
    train = load_conll2000("train")
    words, pos, target = train.words, train.pos, train.target
    if args.quick:
        words, pos, target = words[:500], pos[:500], target[:500]
        workers, replicas, iterations = [1, 2], [1, 2], 4
    vectorizer = SequenceVectorizer()
    X = vectorizer.fit_transform(sentences_to_features(words, pos))
    y = [np.asarray(t) for t in target]
    n_tokens = int(sum(len(t) for t in y))
    params = dict(alpha=1.0 / len(y), max_iter=iterations, tol=0.0,
                  feature_label_pairs=args.pairs)
    warnings.simplefilter("ignore")
    cores = os.cpu_count()
    rows, local = [], {}
    fit_local(X[:50], y[:50], dict(params, max_iter=2))  # warm-up
    for copies in replicas:
        local[copies] = fit_local(X * copies, y * copies, params)
        print("local", copies, local[copies], flush=True)
    pairs = list(zip(X, y))
    for n_workers in workers:
        with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                          dashboard_address=None, silence_logs=40) as cluster, \
                Client(cluster) as client:
            fit_dask(client, pairs[:50], 1, n_workers, dict(params, max_iter=2))  # warm-up
            for copies in replicas:
                model, row = fit_dask(client, pairs, copies, n_workers, params)
                n_params = local[copies]["n_params"]
                row.update(workers=n_workers, copies=copies, tokens=n_tokens * copies,
                           partitions=n_workers,
                           client_to_workers_bytes_per_evaluation=8 * n_params,
                           workers_to_client_bytes_per_evaluation=8 * n_params,
                           overhead=row["per_iteration"] / local[copies]["per_iteration"],
                           objective_vs_local=abs(row["objective"] - local[copies]["objective"])
                           / abs(local[copies]["objective"]))
                rows.append(row)
                print(row, flush=True)
    # the cost model, from the Dask rows
    A = np.array([[r["tokens"] / min(r["workers"], cores), np.log2(r["workers"]), 1.0]
                  for r in rows])
    t = np.array([r["per_iteration"] for r in rows])
    (a, b, c), *_ = np.linalg.lstsq(A, t, rcond=None)
    fitted = A @ np.array([a, b, c])
    big_tokens = 100 * n_tokens
    prediction = a * big_tokens / 32 + b * np.log2(32) + c
    run = {"machine": machine_summary(), "skstruct": skstruct.__version__,
           "iterations": iterations, "pairs": args.pairs, "cores": cores,
           "n_tokens": n_tokens, "n_sequences": len(y), "local": local, "dask": rows,
           "model": {"a_seconds_per_token": a, "b_seconds_per_level": b, "c_seconds": c,
                     "fitted": fitted.tolist(),
                     "prediction_100x_32_machines_seconds_per_iteration": prediction,
                     "prediction_local_100x_one_core_seconds_per_iteration":
                         a * big_tokens + c}}
    output = Path(args.output)
    record_run(output / f"{STEM}.json", "latest", json.loads(json.dumps(run, default=float)))
    lines = [
        "# DaskCRF on a LocalCluster (CoNLL-2000)", "",
        f"`python benchmarks/bench_dask_crf.py{' --quick' if args.quick else ''}`; "
        f"{run['machine']['cpu']}, {cores} cores, Python {run['machine']['python']}; "
        f"{iterations} L-BFGS iterations (tol=0), feature_label_pairs={args.pairs!r}, "
        f"{len(y)} sentences, {n_tokens} tokens (1x), {local[replicas[0]]['n_params']:,} "
        "parameters; one thread per worker process, one partition per worker. Setup: "
        "from the call of fit to the first iteration (local: validation; Dask: reading "
        "the partitions into shards on the workers).", "",
        "| data | fit | s / iteration | evaluations | setup s | overhead vs local "
        "| client→workers B / eval | sent by workers B / eval | |ΔF| / F |",
        "|---|---|---|---|---|---|---|---|---|"]
    for copies in replicas:
        r = local[copies]
        lines.append(f"| {copies}x | local CRF (all threads) | {r['per_iteration']:.3f} | "
                     f"- | {r['setup']:.2f} | 1 | - | - | - |")
        for row in rows:
            if row["copies"] == copies:
                lines.append(
                    f"| {copies}x | DaskCRF, {row['workers']} workers | "
                    f"{row['per_iteration']:.3f} | {row['n_evaluations']} | "
                    f"{row['setup']:.2f} | {row['overhead']:.2f} | "
                    f"{row['client_to_workers_bytes_per_evaluation']:,} | "
                    f"{row['worker_to_worker_bytes_per_evaluation']:,} | "
                    f"{row['objective_vs_local']:.1e} |")
    lines += ["", "Cost model t = a·N/min(P, cores) + b·log₂P + c fitted to the Dask rows: "
              f"a = {a:.3e} s/token, b = {b:.3e} s/level, c = {c:.3e} s "
              f"(fitted {', '.join(f'{v:.3f}' for v in fitted)} s against measured "
              f"{', '.join(f'{v:.3f}' for v in t)} s).", "",
              f"**Prediction** (not a measurement): a 100x larger fit ({big_tokens:,} tokens) "
              f"on 32 machines of one such core each: {prediction:.2f} s per L-BFGS "
              f"iteration, against {a * big_tokens + c:.1f} s on one core; it assumes a "
              "tree level costs on a network what it costs on the loopback here and the "
              "same number of parameters."]
    (output / f"{STEM}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return run


if __name__ == "__main__":
    main()
