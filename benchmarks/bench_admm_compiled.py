"""The batched LP-SparseMAP / LP-MAP ADMM: Python iteration loop against compiled loop.

:func:`skstruct.decoders._factor_graph.admm.admm_batch` (one compiled kernel call per factor group and
iteration, the loop and its bookkeeping in Python) against
:func:`skstruct.decoders._factor_graph.admm_compiled.admm_batch_compiled` (the whole loop compiled),
alternating in one process after a warm-up call of each (compilation excluded):

- *one 159-label graph*: fully connected (12,561 PAIR factors, bibtex's label count),
  unary scores ~ N(0, 1), couplings ~ N(0, 0.1²), ``--iterations`` (100) ADMM iterations
  with the stopping test off (tol = 0); for every one of ``--graphs`` (20) graphs the
  best wall and CPU time of ``--repeats`` (3) alternating calls of each variant, then the
  median over the graphs;
- *a batch of 159-label graphs*: ``--batch`` (100) such graphs in one call, 100
  iterations each (tol = 0);
- *scene-sized* and *yeast-sized* training sets: 1,211 examples of 6 labels and 1,500
  examples of 14 labels, fully connected (15 and 91 PAIR factors), unary scores
  ~ N(0, 1), couplings ~ N(0, 0.3²), the default stopping test (tol = 1e-6, at most
  1,000 iterations), LP-SparseMAP and LP-MAP;

every batch timed ``--rounds`` (5) times alternating the variants, the median reported.
Every comparison also reports the largest difference of the marginals u between the two
solvers and whether their iteration counts agree.

Writes ``results/admm_compiled.md`` and ``.json`` (run label ``latest``) next to this file.

Run: ``python benchmarks/bench_admm_compiled.py`` (``--quick`` for a smoke run).
"""

import argparse
import os
import time
from pathlib import Path

import numba
import numpy as np

import skstruct
from skstruct.decoders._factor_graph.admm import FlatFactorGraph, admm_batch
from skstruct.decoders._factor_graph.admm_compiled import admm_batch_compiled

from _report import code_version, command_line, format_time, machine_summary, record_run

STEM = "admm_compiled"
RESULTS = Path(__file__).resolve().parent / "results"


def pairwise_graph(n_labels):
    """A fully connected pairwise graph: one PAIR factor per pair of the labels."""
    first, second = np.triu_indices(n_labels, k=1)
    return FlatFactorGraph(n_vars=n_labels, pair_var=np.stack([first, second], axis=1))


def timed(function):
    """(wall, CPU) seconds of one call, and its result."""
    tic, tic_cpu = time.perf_counter(), time.process_time()
    result = function()
    return time.perf_counter() - tic, time.process_time() - tic_cpu, result


def alternate(variants, rounds):
    """Call the variants in turn ``rounds`` times after a warm-up call of each; the
    (wall, CPU) samples and the last result of every variant."""
    results = {name: function() for name, function in variants.items()}
    samples = {name: [] for name in variants}
    for _ in range(rounds):
        for name, function in variants.items():
            wall, cpu, results[name] = timed(function)
            samples[name].append((wall, cpu))
    return samples, results


def agreement(results, reference="admm_batch"):
    """Largest |u − u_reference| and whether n_iter agrees, for every other variant."""
    base = results[reference]
    return {name: {"max_abs_u_difference": float(np.max(np.abs(r.u - base.u))),
                   "same_n_iter": bool(np.array_equal(r.n_iter, base.n_iter))}
            for name, r in results.items() if name != reference}


def single_graph(args, rng):
    graph = pairwise_graph(159)
    per_graph = {name: [] for name in ("admm_batch", "compiled")}
    agree = []
    for _ in range(args.graphs):
        eta_u = rng.normal(size=(1, graph.n_vars))
        eta_pair = rng.normal(scale=0.1, size=(1, graph.n_pair))
        options = dict(max_iter=args.iterations, tol=0.0)
        variants = {
            "admm_batch": lambda: admm_batch(graph, eta_u, eta_pair, **options),
            "compiled": lambda: admm_batch_compiled(graph, eta_u, eta_pair, **options)}
        samples, results = alternate(variants, args.repeats)
        for name, s in samples.items():
            per_graph[name].append((min(w for w, _ in s), min(c for _, c in s)))
        agree.append(agreement(results))
    summary = {name: {"wall": float(np.median([w for w, _ in s])),
                      "cpu": float(np.median([c for _, c in s]))}
               for name, s in per_graph.items()}
    worst = {name: {"max_abs_u_difference": max(a[name]["max_abs_u_difference"]
                                                for a in agree),
                    "same_n_iter": all(a[name]["same_n_iter"] for a in agree)}
             for name in agree[0]}
    return {"labels": 159, "pair_factors": int(graph.n_pair), "graphs": args.graphs,
            "iterations": args.iterations, "repeats": args.repeats,
            "median_of_best": summary, "agreement": worst}


def batch_case(name, graph, eta_u, eta_pair, rounds, **options):
    variants = {
        "admm_batch": lambda: admm_batch(graph, eta_u, eta_pair, **options),
        "compiled": lambda: admm_batch_compiled(graph, eta_u, eta_pair, **options)}
    samples, results = alternate(variants, rounds)
    n_iter = results["admm_batch"].n_iter
    return {"case": name, "examples": int(eta_u.shape[0]), "labels": graph.n_vars,
            "pair_factors": int(graph.n_pair), "options": options, "rounds": rounds,
            "median": {k: {"wall": float(np.median([w for w, _ in s])),
                           "cpu": float(np.median([c for _, c in s]))}
                       for k, s in samples.items()},
            "samples": samples,
            "n_iter_min_median_max": [int(n_iter.min()), int(np.median(n_iter)),
                                      int(n_iter.max())],
            "converged": int(results["admm_batch"].converged.sum()),
            "agreement": agreement(results)["compiled"]}


def batches(args, rng):
    cases = []
    big = pairwise_graph(159)
    eta_u = rng.normal(size=(args.batch, big.n_vars))
    eta_pair = rng.normal(scale=0.1, size=(args.batch, big.n_pair))
    cases.append(batch_case(f"{args.batch} graphs of 159 labels, {args.iterations} "
                            f"iterations (tol 0)", big, eta_u, eta_pair,
                            args.batch_rounds, max_iter=args.iterations, tol=0.0))
    for name, n, labels in [("scene", 1211, 6), ("yeast", 1500, 14)]:
        n = max(1, n // args.shrink)
        graph = pairwise_graph(labels)
        eta_u = rng.normal(size=(n, labels))
        eta_pair = rng.normal(scale=0.3, size=(n, graph.n_pair))
        for map_mode in (False, True):
            solver = "LP-MAP" if map_mode else "LP-SparseMAP"
            cases.append(batch_case(f"{name}-sized: {n} x {labels} labels, {solver}",
                                    graph, eta_u, eta_pair, args.rounds,
                                    map_mode=map_mode))
    return cases


def report(run):
    single = run["single"]
    lines = [
        "# Batched LP-SparseMAP / LP-MAP ADMM: Python loop (admm_batch) against compiled "
        "loop (admm_batch_compiled)",
        "",
        f"`{run['command']}`",
        "",
        f"Code: {run['code']}; CPU: {run['machine']['cpu']}, {run['machine']['cores']} "
        f"cores, {run['machine']['numba_threads']} numba threads. Load average (1 min) "
        f"{run['load_average'][0]:.2f} before, {run['load_average'][1]:.2f} after. The "
        f"variants alternate in one process after a warm-up call of each.",
        "",
        f"## One graph: {single['labels']} labels, {single['pair_factors']:,} PAIR factors, "
        f"{single['iterations']} iterations (tol 0)",
        "",
        f"Median over {single['graphs']} graphs of every graph's best of "
        f"{single['repeats']} alternating calls.",
        "",
        "| variant | wall | CPU (all threads) | largest abs difference of u | same n_iter |",
        "|---|---|---|---|---|",
    ]
    for name, t in single["median_of_best"].items():
        a = single["agreement"].get(name)
        gap = "—" if a is None else f"{a['max_abs_u_difference']:.1e}"
        same = "—" if a is None else str(a["same_n_iter"])
        lines.append(f"| {name} | {format_time(t['wall'])} | {format_time(t['cpu'])} | "
                     f"{gap} | {same} |")
    lines += ["", "## Batches", "",
              "Median of the alternating rounds.", "",
              "| batch | iterations min / median / max | admm_batch wall (CPU) | "
              "compiled wall (CPU) | wall ratio | largest abs difference of u | "
              "same n_iter |",
              "|---|---|---|---|---|---|---|"]
    for case in run["batches"]:
        old, new = case["median"]["admm_batch"], case["median"]["compiled"]
        low, mid, high = case["n_iter_min_median_max"]
        lines.append(
            f"| {case['case']} | {low} / {mid} / {high} | {format_time(old['wall'])} "
            f"({format_time(old['cpu'])}) | {format_time(new['wall'])} "
            f"({format_time(new['cpu'])}) | {old['wall'] / new['wall']:.1f}x | "
            f"{case['agreement']['max_abs_u_difference']:.1e} | "
            f"{case['agreement']['same_n_iter']} |")
    lines += ["", "The compiled solver runs every example in one thread (chunks of "
              "examples handed to the threads one at a time)."]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", type=int, default=20)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--batch-rounds", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: 2 graphs, batches of 4 and of 1/50 the size")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    args.shrink = 1
    if args.quick:
        args.graphs, args.repeats, args.batch, args.batch_rounds, args.rounds = 2, 1, 4, 1, 1
        args.shrink = 50
    rng = np.random.default_rng(0)
    load_before = os.getloadavg()[0]
    single = single_graph(args, rng)
    cases = batches(args, rng)
    run = {"single": single, "batches": cases,
           "load_average": [load_before, os.getloadavg()[0]],
           "threads": numba.get_num_threads(), "machine": machine_summary(),
           "code": code_version(skstruct),
           "command": command_line("benchmarks/bench_admm_compiled.py")}
    text = report(run)
    print(text)
    if not args.quick:
        args.output.mkdir(parents=True, exist_ok=True)
        (args.output / f"{STEM}.md").write_text(text)
        record_run(args.output / f"{STEM}.json", "latest", run)
    return run


if __name__ == "__main__":
    main()
