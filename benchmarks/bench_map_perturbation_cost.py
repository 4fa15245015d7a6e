"""Cost of one training iteration of ``PerturbedMAPClassifier`` against the number of
outputs |Y|, beside the exact CRF over all outputs, on the synthetic structures of
Ghoshal & Honorio (2019): directed spanning trees of 5 .. 8 nodes, DAGs of 4 .. 6 nodes
(at most 2 parents), k-subsets from 2-of-10 to 4-of-20.

Data as in ``bench_map_perturbation_synthetic.py``: m = ``--train`` (100) examples,
x ~ Bernoulli(1/2)^p (p = 10), φ(x, y) = x ⊗ (y's part indicators), w* with round(√d)
nonzero entries ~ N(0, 100), y = the MAP under w* (the decoder's ``map``: no
enumeration, so the large structures can be built).

Learners (the time of an iteration is the median gap between consecutive callbacks of
one fit; the set-up before the first iteration, for instance listing the candidates, is
reported apart, and so is the whole fit; CPU seconds of the process, and wall seconds in
the JSON):

``neighbourhood``
    ``PerturbedMAPClassifier(decoder, k=radius)`` with its defaults (T_i = {y_i} ∪
    N_k(y_i), the pseudo-likelihood, L-BFGS), ``max_iter`` = ``--iterations``: an
    iteration is one or a few evaluations of two sparse products over the candidates'
    changed parts (Σ_i |N_k(y_i)| × the parts a neighbour changes).
``proposal``
    The paper's learner, ``candidates="proposal", objective="pooled", l1=0.01``: ⌈√m⌉
    proposal draws per example and iteration, each scanning the Hamming-k neighbourhood
    of its start (listed and scored).
``all``
    ``candidates="all", objective="pooled"`` (the paper's CRF_ALL): every output of every
    example, enumerated once (by ``top_k``) and kept as a sparse matrix of parts, two
    sparse products over (|Y| × m) rows per iteration; run only where |Y| × m is at most
    ``--max-enumerated`` (trees have no ``top_k``: enumerated by the synthetic
    benchmark's ``EnumeratedTreeDecoder``).

Writes ``results/map_perturbation_cost.md`` and ``.json``.

Run: ``nice -n 19 python benchmarks/bench_map_perturbation_cost.py`` (a few minutes).
"""

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).parent))

import skstruct  # noqa: E402
from _report import code_version, command_line, machine_summary, record_run  # noqa: E402
from bench_map_perturbation_synthetic import EnumeratedTreeDecoder  # noqa: E402
from skstruct import PerturbedMAPClassifier  # noqa: E402
from skstruct.decoders import (DAGDecoder, DAGScores, MultilabelScores,  # noqa: E402
                               SubsetDecoder, TreeDecoder, TreeScores)

RESULTS = Path(__file__).parent / "results"
NAME = "map_perturbation_cost"
SIZES = {"trees": [5, 6, 7, 8], "dags": [4, 5, 6],
         "subsets": [(10, 2), (15, 3), (15, 4), (20, 4)]}


def _arc_data(kind, n, rng, m, p):
    """Estimator inputs (X, y) and the output count for trees or DAGs on n nodes."""
    off = ~np.eye(n, dtype=bool)
    n_parts = n * (n - 1)
    rows = np.flatnonzero(off.ravel())
    select = sp.csr_matrix((np.ones(rows.size), (rows, np.arange(rows.size))),
                           shape=(n * n, rows.size))
    w = _true_weights(rng, n_parts, p)
    x = (rng.random((m, p)) < 0.5).astype(np.float64)
    S = x @ w.T
    blocks = np.zeros((m, n, n))
    blocks[:, off] = S
    X = [sp.kron(select, sp.csr_matrix(xi[None, :]), format="csr") for xi in x]
    if kind == "trees":
        heads = TreeDecoder(single_root=True).map(TreeScores.from_blocks(list(blocks)))
        heads = heads.reshape(m, n)
        tokens = np.arange(n)
        y = [np.where(h == tokens, 0, h + 1) for h in heads]
        return X, y, n ** (n - 1), TreeDecoder(single_root=True), \
            EnumeratedTreeDecoder(single_root=True)
    decoder = DAGDecoder(max_parents=2)
    y = list(decoder.map(DAGScores.from_blocks(list(blocks))).reshape(m, n, n))
    return X, y, None, decoder, decoder


def _subset_data(n_labels, k, rng, m, p):
    w = _true_weights(rng, n_labels, p)
    x = (rng.random((m, p)) < 0.5).astype(np.float64)
    y = SubsetDecoder(k=k).map(MultilabelScores(x @ w.T))
    return x, np.asarray(y, dtype=np.int64), math.comb(n_labels, k), SubsetDecoder(k=k), \
        SubsetDecoder(k=k)


def _true_weights(rng, n_parts, p):
    d = n_parts * p
    w = np.zeros(d)
    support = rng.choice(d, size=int(round(np.sqrt(d))), replace=False)
    w[support] = rng.normal(0.0, 10.0, size=support.size)
    return w.reshape(n_parts, p)


def _timed(model, X, y):
    """Fit; the set-up (fit start to the first callback, less one iteration), the median
    iteration time and the whole fit's time, each in CPU seconds of the process
    (``time.process_time``, every thread) and in wall seconds (``*_wall``)."""
    stamps = []
    model.set_params(callback=lambda *args: stamps.append(
        (time.process_time(), time.perf_counter())))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = (time.process_time(), time.perf_counter())
        model.fit(X, y)
        end = (time.process_time(), time.perf_counter())
    result = {"n_iter": int(model.n_iter_)}
    for clock, suffix in ((0, ""), (1, "_wall")):
        gaps = np.diff([stamp[clock] for stamp in stamps])
        per_iteration = float(np.median(gaps)) if gaps.size else float("nan")
        result.update({f"setup_seconds{suffix}": float(stamps[0][clock] - start[clock]
                                                       - per_iteration),
                       f"iteration_seconds{suffix}": per_iteration,
                       f"fit_seconds{suffix}": float(end[clock] - start[clock])})
    return result


def run_case(kind, size, args, rng):
    if kind == "subsets":
        X, y, n_outputs, decoder, all_decoder = _subset_data(*size, rng, args.train,
                                                             args.n_features)
        radius, label = 2, f"{size[1]}-of-{size[0]}"
    else:
        X, y, n_outputs, decoder, all_decoder = _arc_data(kind, size, rng, args.train,
                                                          args.n_features)
        radius, label = 1, f"{size} nodes"
    common = dict(k=radius, max_iter=args.iterations, random_state=0)
    neighbourhood = PerturbedMAPClassifier(decoder, **common)
    result = {"size": label, "neighbourhood": _timed(neighbourhood, X, y)}
    if n_outputs is None:  # DAGs: from β = 1 / log((r − 1)(√m − 1))
        n_outputs = int(round(1 + np.exp(1 / neighbourhood.beta_) /
                              (np.sqrt(args.train) - 1)))
    result["n_outputs"] = n_outputs
    result["neighbours_per_example"] = float(
        neighbourhood.decoder_calls_.get("neighbours", 0) and _mean_neighbours(
            neighbourhood, decoder, X, y))
    paper = PerturbedMAPClassifier(decoder, candidates="proposal", objective="pooled",
                                   l1=0.01, **common)
    result["proposal"] = _timed(paper, X, y)
    if n_outputs * args.train <= args.max_enumerated:
        exact = PerturbedMAPClassifier(all_decoder, candidates="all", objective="pooled",
                                       l1=0.01, max_outputs=n_outputs, **common)
        result["all"] = _timed(exact, X, y)
    print(kind, label, {k: (v if not isinstance(v, dict) else
                            {a: round(b, 5) for a, b in v.items()})
                        for k, v in result.items()}, flush=True)
    return result


def _mean_neighbours(model, decoder, X, y):
    """Mean |N_k(y_i)| at the fitted model's scores (the valid outputs do not depend on
    the scores' finite values)."""
    batch = model._validate_prediction_data(X)
    _, _, _, y_encoded, _ = model._validate_training_data(X, y, None)
    scores = model._features().scores(batch, model._params())
    _, counts = model.decoder_.neighbours(scores, y_encoded, model.k)
    return float(np.mean(counts))


def report(run):
    lines = [
        "# Cost of one iteration against the number of outputs",
        "",
        f"Command: `{run['command']}`; code {run['code']}; {run['machine']}; load average "
        f"{run['load_average']:.1f} at the start.",
        "",
        *[f"Rows of {', '.join(r['structures'])} re-timed by `{r['command']}`; code "
          f"{r['code']}; load average {r['load_average']:.1f} at the start.\n"
          for r in run.get("reruns", [])],
        f"m = {run['train']} examples, p = {run['n_features']} features per part, "
        f"{run['iterations']} iterations per fit (the neighbourhood learner's L-BFGS may "
        "stop earlier); times are CPU seconds of the process (`time.process_time`, all "
        "threads; the JSON also has wall seconds): an iteration is the median gap between "
        "two iterations' callbacks, the set-up the time before the first iteration, a fit "
        "the whole `fit` (set-up and every iteration). neighbourhood: the default learner; "
        "proposal: the paper's (⌈√m⌉ draws per example and iteration); all: every output "
        f"(CRF_ALL, exact), run where |Y| × m <= {run['max_enumerated']:,}.",
        "",
        "| structure | size | \\|Y\\| | mean \\|N_k(y_i)\\| | neighbourhood: set-up / "
        "iteration / fit | proposal: iteration / fit | all: set-up / iteration / fit "
        "| all / neighbourhood per iteration | all / proposal per iteration "
        "| all / proposal per fit |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for kind, cases in run["structures"].items():
        for case in cases:
            nb, pr, al = case["neighbourhood"], case["proposal"], case.get("all")
            exact = (f"{al['setup_seconds']:.3f} / {al['iteration_seconds']:.4f} / "
                     f"{al['fit_seconds']:.3f}" if al else "not run")
            ratio = (f"{al['iteration_seconds'] / nb['iteration_seconds']:.1f}x" if al
                     else "")
            ratio_p = (f"{al['iteration_seconds'] / pr['iteration_seconds']:.2f}x" if al
                       else "")
            ratio_f = f"{al['fit_seconds'] / pr['fit_seconds']:.2f}x" if al else ""
            lines.append(
                f"| {kind} | {case['size']} | {case['n_outputs']:,} | "
                f"{case['neighbours_per_example']:.1f} | {nb['setup_seconds']:.3f} / "
                f"{nb['iteration_seconds']:.4f} / {nb['fit_seconds']:.3f} | "
                f"{pr['iteration_seconds']:.4f} / {pr['fit_seconds']:.3f} | {exact} | "
                f"{ratio} | {ratio_p} | {ratio_f} |")
    if run.get("notes"):
        lines += ["", "## What the table shows", "", run["notes"]]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--structures", nargs="+", choices=list(SIZES), default=list(SIZES))
    parser.add_argument("--train", type=int, default=100)
    parser.add_argument("--n-features", type=int, default=10)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--max-enumerated", type=int, default=2_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--label", default="latest")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--notes", type=Path, default=None,
                        help="a file whose text goes under the table (the discussion)")
    parser.add_argument("--rerun", action="store_true",
                        help="re-time only --structures and put their rows into the stored "
                        "run --label (its other rows kept; the re-run's command, code and "
                        "load are recorded beside the run's)")
    parser.add_argument("--renotes", action="store_true",
                        help="no timing: rewrite the report of the stored run --label "
                        "with --notes")
    args = parser.parse_args(argv)
    if args.renotes:
        import json
        run = json.loads((args.output / f"{NAME}.json").read_text())["runs"][args.label]
        run["notes"] = args.notes.read_text().strip() if args.notes else None
        record_run(args.output / f"{NAME}.json", args.label, run)
        (args.output / f"{NAME}.md").write_text(report(run))
        return run
    import os
    rng = np.random.default_rng(args.seed)
    machine = machine_summary()
    run = {"command": command_line("benchmarks/bench_map_perturbation_cost.py"),
           "code": code_version(skstruct),
           "machine": ", ".join(f"{k} {v}" for k, v in machine.items()),
           "load_average": os.getloadavg()[0], "train": args.train,
           "n_features": args.n_features, "iterations": args.iterations,
           "max_enumerated": args.max_enumerated, "structures": {},
           "notes": args.notes.read_text().strip() if args.notes else None}
    # compile the kernels before timing
    for kind in args.structures:
        run_case(kind, SIZES[kind][0], argparse.Namespace(**{**vars(args), "train": 10,
                                                            "iterations": 2}), rng)
    structures = {kind: [run_case(kind, size, args, rng) for size in SIZES[kind]]
                  for kind in args.structures}
    if args.rerun:
        import json
        stored = json.loads((args.output / f"{NAME}.json").read_text())["runs"][args.label]
        stored.setdefault("reruns", []).append(
            {k: run[k] for k in ("command", "code", "machine", "load_average")}
            | {"structures": list(args.structures)})
        stored["structures"].update(structures)
        if args.notes:
            stored["notes"] = run["notes"]
        run = stored
    else:
        run["structures"] = structures
    record_run(args.output / f"{NAME}.json", args.label, run)
    (args.output / f"{NAME}.md").write_text(report(run))
    print(report(run))
    return run


if __name__ == "__main__":
    main()
