"""LP-SparseMAP solver speed on fully connected pairwise graphs.

One graph: ``--labels`` binary variables (159: bibtex's label count) and one PAIR factor per
pair of them (12,561 at 159), unary scores ~ N(0, 1), couplings ~ N(0, 0.1²). Reported:

- one ADMM solve of ``--iterations`` iterations (100; the stopping test off, so that every
  solve runs them all), on each of ``--graphs`` graphs (20): the median over the graphs of
  each graph's best wall and CPU time of ``--repeats`` solves, compilation excluded (one
  warm-up solve first);
- how far those marginals are from a ``--reference-iterations`` (1,000) solve of the same
  graph: the largest absolute difference of the marginals u and v, per graph (median and
  largest), with the reference's own residuals;
- a batch: ``--batch`` (100) graphs in one call (every graph with its own penalty), the
  same iterations: graphs per second; and the same batch with the stopping test on
  (tol 1e-6, every graph stopping on its own).

Every solve goes through :func:`admm_batch_compiled`, the solver
:class:`~skstruct.decoders.FactorGraphDecoder` uses for graphs of built-in factors (one
graph is a batch of one).

``--rho`` is the initial penalty per copy (the solver's ``rho``; ρ starts at rho × mean
degree).

Writes ``results/lp_sparsemap_solver.md`` and ``.json`` next to this file.

Run: ``python benchmarks/bench_lp_sparsemap_solver.py``.
"""

import argparse
import json
import os
import platform
import subprocess
import time
from pathlib import Path

import numba
import numpy as np

from skstruct.decoders._factor_graph.admm import FlatFactorGraph
from skstruct.decoders._factor_graph.admm_compiled import admm_batch_compiled

RESULTS = Path(__file__).parent / "results"
STEM = "lp_sparsemap_solver"


def pairwise_graph(n_labels, n_copies=1):
    """``n_copies`` disjoint fully connected pairwise graphs of ``n_labels`` variables."""
    first, second = np.triu_indices(n_labels, k=1)
    graph = FlatFactorGraph(n_vars=n_labels, pair_var=np.stack([first, second], axis=1))
    return graph.tile(n_copies) if n_copies > 1 else graph


def random_scores(rng, n_vars, n_pair):
    return rng.normal(size=n_vars), rng.normal(scale=0.1, size=n_pair)


def timed(function, repeats):
    """Best wall and best CPU time of ``repeats`` calls, and the last result."""
    wall, cpu, result = np.inf, np.inf, None
    for _ in range(repeats):
        tic, tic_cpu = time.perf_counter(), time.process_time()
        result = function()
        wall = min(wall, time.perf_counter() - tic)
        cpu = min(cpu, time.process_time() - tic_cpu)
    return wall, cpu, result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=159)
    parser.add_argument("--graphs", type=int, default=20)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--reference-iterations", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--rho", type=float, default=1.0)
    parser.add_argument("--output", default=str(RESULTS))
    args = parser.parse_args(argv)

    graph = pairwise_graph(args.labels)
    n_pair = graph.pair_var.shape[0]
    rng = np.random.default_rng(0)
    scores = [random_scores(rng, args.labels, n_pair) for _ in range(args.graphs)]

    def solve(eta_u, eta_pair, iterations):
        return admm_batch_compiled(graph, eta_u[None], eta_pair[None], max_iter=iterations,
                                   tol=0.0, rho=args.rho)

    solve(*scores[0], args.iterations)  # compilation
    load_before = os.getloadavg()[0]
    walls, cpus, gaps, v_gaps, reference_residuals = [], [], [], [], []
    for eta_u, eta_pair in scores:
        wall, cpu, result = timed(lambda: solve(eta_u, eta_pair, args.iterations),
                                  args.repeats)
        reference = solve(eta_u, eta_pair, args.reference_iterations)
        walls.append(wall)
        cpus.append(cpu)
        gaps.append(float(np.max(np.abs(result.u - reference.u))))
        v_gaps.append(float(np.max(np.abs(result.v - reference.v))))
        reference_residuals.append((float(reference.primal_residual[0]),
                                    float(reference.dual_residual[0])))

    batch_u = rng.normal(size=(args.batch, args.labels))
    batch_pair = rng.normal(scale=0.1, size=(args.batch, n_pair))

    def solve_batch(tol=0.0):
        return admm_batch_compiled(graph, batch_u, batch_pair, max_iter=args.iterations,
                                   tol=tol, rho=args.rho)

    solve_batch()
    batch_wall, batch_cpu, _ = timed(solve_batch, args.repeats)
    stop_wall, stop_cpu, stopped = timed(lambda: solve_batch(1e-6), args.repeats)
    load_after = os.getloadavg()[0]

    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, cwd=Path(__file__).parent).stdout.strip()
    except OSError:
        commit = "unknown"
    results = {
        "labels": args.labels,
        "pair_factors": int(n_pair),
        "graphs": args.graphs,
        "iterations": args.iterations,
        "reference_iterations": args.reference_iterations,
        "repeats": args.repeats,
        "solve_wall_seconds": walls,
        "solve_cpu_seconds": cpus,
        "median_wall_ms": 1e3 * float(np.median(walls)),
        "median_cpu_ms": 1e3 * float(np.median(cpus)),
        "rho": args.rho,
        "max_abs_u_difference": gaps,
        "max_abs_v_difference": v_gaps,
        "reference_residuals": reference_residuals,
        "batch": args.batch,
        "batch_wall_seconds": batch_wall,
        "batch_cpu_seconds": batch_cpu,
        "batch_graphs_per_second": args.batch / batch_wall,
        "stopping_batch_wall_seconds": stop_wall,
        "stopping_batch_cpu_seconds": stop_cpu,
        "stopping_batch_graphs_per_second": args.batch / stop_wall,
        "stopping_batch_iterations": [int(np.min(stopped.n_iter)),
                                      int(np.median(stopped.n_iter)),
                                      int(np.max(stopped.n_iter))],
        "stopping_batch_converged": int(np.sum(stopped.converged)),
        "threads": numba.get_num_threads(),
        "load_average": [load_before, load_after],
        "machine": platform.processor() or platform.machine(),
        "commit": commit,
        "command": "python benchmarks/bench_lp_sparsemap_solver.py",
    }
    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    (output / f"{STEM}.json").write_text(json.dumps(results, indent=2) + "\n")
    (output / f"{STEM}.md").write_text(report(results))
    print(report(results))
    return results


def report(r):
    gaps = np.array(r["max_abs_u_difference"])
    v_gaps = np.array(r["max_abs_v_difference"])
    primal = np.array([p for p, _ in r["reference_residuals"]])
    dual = np.array([d for _, d in r["reference_residuals"]])
    low, mid, high = r["stopping_batch_iterations"]
    return f"""# LP-SparseMAP solver: fully connected pairwise graphs

Command: `{r['command']}` at {r['commit']}; {r['machine']}, {r['threads']} numba threads; load
average {r['load_average'][0]:.2f} before, {r['load_average'][1]:.2f} after.

Graph: {r['labels']} binary variables, {r['pair_factors']:,} PAIR factors (every pair),
unary scores ~ N(0, 1), couplings ~ N(0, 0.1²); {r['graphs']} graphs. Initial penalty per
copy rho = {r['rho']:g} (ρ starts at rho × mean degree, adapted every 10 iterations).

| measure | value |
|---|---|
| one solve, {r['iterations']} ADMM iterations: median over the graphs of the best of {r['repeats']}, wall | {r['median_wall_ms']:.1f} ms |
| the same, CPU (all threads) | {r['median_cpu_ms']:.1f} ms |
| largest abs difference of u from a {r['reference_iterations']}-iteration solve: median over the graphs | {np.median(gaps):.2e} |
| the same, largest over the graphs | {gaps.max():.2e} |
| largest abs difference of v: median / largest over the graphs | {np.median(v_gaps):.2e} / {v_gaps.max():.2e} |
| the {r['reference_iterations']}-iteration reference's primal / dual residuals (median) | {np.median(primal):.1e} / {np.median(dual):.1e} |
| {r['batch']} graphs in one call, {r['iterations']} iterations each, wall (best of {r['repeats']}) | {1e3 * r['batch_wall_seconds']:.0f} ms ({r['batch_graphs_per_second']:.0f} graphs/s) |
| the same, CPU | {1e3 * r['batch_cpu_seconds']:.0f} ms |
| the same batch stopping at tol 1e-6 (each graph on its own), wall | {1e3 * r['stopping_batch_wall_seconds']:.0f} ms ({r['stopping_batch_graphs_per_second']:.0f} graphs/s) |
| its iterations: min / median / max; graphs converged | {low} / {mid} / {high}; {r['stopping_batch_converged']} of {r['batch']} |

Solver: `admm_batch_compiled`, the factor-graph decoder's solver for graphs of built-in
factors: the iterations are compiled, and the examples of a batch are split over the
threads (every graph has its own penalty and stopping test).
"""


if __name__ == "__main__":
    main()
