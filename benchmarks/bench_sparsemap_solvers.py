"""SparseMAP solvers compared on random non-projective dependency trees.

The comparison of Niculae et al. (2018), Figure 2: the active-set method against vanilla,
away-step and pairwise Frank-Wolfe, as a function of the number of MAP (Chu-Liu-Edmonds)
calls. For each sentence length n (``--lengths``, default 10 and 20), a batch of
``--n-sentences`` sentences (default 100) gets i.i.d. standard normal arc scores (seed
``[--seed, n]``), and for every method and every t in ``--iters`` (default 1, 2, 5, 10,
20, 50, 100, 200) ``sparsemap(TreeDecoder(), scores, method=..., max_iter=t, tol=0)`` is
run on the whole batch. The solvers are deterministic and ``tol=0`` stops an example only
at a gap of rounding size (1e-13 relative), so the run with ``max_iter=t`` is the first t
MAP calls of any longer run.

Measured, per method and t:

- suboptimality, the objective of the reference optimum minus the objective reached, per
  sentence, averaged over the batch; the reference is the active-set solution with
  ``max_iter=200, tol=1e-12`` (its convergence is checked and reported);
- the number of sentences whose suboptimality is below ``--threshold`` (1e-6);
- the support size (structures with positive weight), averaged over the batch;
- the wall time of the call for the whole batch, median of ``--repeats`` runs (after a
  warm-up call of every method, which compiles or loads the numba cache).

And per method: the median over sentences of the number of MAP calls needed to reach a
suboptimality below the threshold ("> max t" when fewer than half the sentences get
there within the largest t). The suboptimality of a sentence never increases with t (this
is checked), so the count of sentences below the threshold after t calls is monotone in t
and the median is found exactly by bisection on t, with full-batch runs.

Checks reported with the tables: the reference runs converged; no run beats the reference
by more than rounding; objectives never decrease with t; the objective and unary
marginals recomputed from the returned supports and weights match the reported ones; and,
independently of the package's solvers, on small sentences (n = 4 and 5, every tree
enumerated) the optimum found by non-negative least squares (scipy) over all trees
matches the active-set optimum.

Run: ``python benchmarks/bench_sparsemap_solvers.py`` (about 20 s on an idle 2-core machine).
Writes ``results/sparsemap_solvers.md`` next to this file.
"""

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numba
import numpy as np
from scipy.optimize import nnls

import skstruct
from skstruct.decoders import sparsemap
from skstruct.decoders._tree.decoder import TreeDecoder, TreeScores, enumerate_trees

from _report import cpu_name, format_time, git_commit

RESULTS = Path(__file__).parent / "results"
METHODS = ("active_set", "fw", "away_fw", "pairwise_fw")
METHOD_NAMES = {"active_set": "active set", "fw": "Frank-Wolfe",
                "away_fw": "away-step FW", "pairwise_fw": "pairwise FW"}
DECODER = TreeDecoder(projective=False)


def random_batch(n_sentences, length, seed):
    """TreeScores of ``n_sentences`` sentences of ``length`` tokens, i.i.d. N(0, 1)."""
    rng = np.random.default_rng([seed, length])
    offsets = np.arange(n_sentences + 1) * length
    return TreeScores(rng.standard_normal(n_sentences * length * length), offsets)


def timed(scores, method, max_iter, tol):
    tic = time.perf_counter()
    result = sparsemap(DECODER, scores, method=method, max_iter=max_iter, tol=tol)
    return result, time.perf_counter() - tic


def recompute(scores, result):
    """Largest errors of the reported objective and unary marginals, recomputed from the
    support and weights of every sentence, and of the weights' simplex constraints."""
    objective_error = unary_error = simplex_error = 0.0
    for i in range(scores.n_examples):
        trees, weights = result.distribution(i)
        block = scores.block(i)
        n = block.shape[0]
        indicators = np.zeros((len(trees), n * n))
        for k, tree in enumerate(trees):
            indicators[k, np.arange(n) * n + tree] = 1.0
        theta = np.array([block[np.arange(n), tree].sum() for tree in trees])
        u = weights @ indicators
        objective = weights @ theta - 0.5 * u @ u
        start, stop = scores.unary_offsets[i], scores.unary_offsets[i + 1]
        objective_error = max(objective_error, abs(objective - result.objective[i]))
        unary_error = max(unary_error, np.abs(u - result.unary[start:stop]).max())
        simplex_error = max(simplex_error, abs(weights.sum() - 1.0), -weights.min())
    return objective_error, unary_error, simplex_error


def enumeration_check(length, n_sentences, seed):
    """Active-set optimum vs non-negative least squares over every tree (small n).

    SparseMAP is the projection of η onto the convex hull of the trees' indicator vectors
    (ηᵀu − ½‖u‖² = ½‖η‖² − ½‖u − η‖²). NNLS on [M; λ1ᵀ] p ≈ [η; λ] (λ = 1e3) finds the
    optimal support without the package's solvers; the weights are then polished by the
    exact equality-constrained least squares on that support (KKT system, by lstsq). Also
    the optimality certificate of the active-set solution over every tree: the largest
    adjusted score θ_s − m_sᵀu over all trees minus the smallest over its support (≤ 0
    up to rounding at the optimum).
    """
    trees = np.asarray(enumerate_trees(length))
    indicators = np.zeros((len(trees), length * length))
    for k, tree in enumerate(trees):
        indicators[k, np.arange(length) * length + tree] = 1.0
    scores = random_batch(n_sentences, length, seed + 1)
    result = sparsemap(DECODER, scores, method="active_set", max_iter=200, tol=1e-12)
    lam = 1e3
    system = np.vstack([indicators.T, lam * np.ones(len(trees))])
    objective_gap = unary_gap = negative = certificate = 0.0
    for i in range(n_sentences):
        eta = scores.block(i).ravel()
        p, _ = nnls(system, np.concatenate([eta, [lam]]), maxiter=50 * len(trees))
        support = indicators[p > 0]
        k = support.shape[0]
        kkt = np.block([[support @ support.T, np.ones((k, 1))], [np.ones((1, k)), 0.0]])
        weights = np.linalg.lstsq(kkt, np.concatenate([support @ eta, [1.0]]),
                                  rcond=None)[0][:k]
        negative = max(negative, -weights.min())
        u = weights @ support
        objective = eta @ u - 0.5 * u @ u
        objective_gap = max(objective_gap, abs(objective - result.objective[i]))
        start, stop = scores.unary_offsets[i], scores.unary_offsets[i + 1]
        u_found = result.unary[start:stop]
        unary_gap = max(unary_gap, np.abs(u - u_found).max())
        adjusted = indicators @ (eta - u_found)
        found = np.array([np.arange(length) * length + tree
                          for tree in result.distribution(i)[0]])
        on_support = (eta - u_found)[found].sum(axis=1)
        certificate = max(certificate, adjusted.max() - on_support.min())
    return {"length": length, "n_sentences": n_sentences, "n_trees": len(trees),
            "objective_gap": objective_gap, "unary_gap": unary_gap,
            "negative_weight": negative, "certificate": certificate,
            "support": result.support_size.tolist()}


class Curve:
    """Full-batch runs of one method at any t, cached: suboptimality per sentence."""

    def __init__(self, scores, method, optimum):
        self.scores, self.method, self.optimum = scores, method, optimum
        self.runs = {}

    def run(self, t):
        if t not in self.runs:
            result, seconds = timed(self.scores, self.method, t, 0.0)
            self.runs[t] = {"result": result, "seconds": [seconds],
                            "suboptimality": self.optimum - result.objective}
        return self.runs[t]

    def below(self, t, threshold):
        return int(np.sum(self.run(t)["suboptimality"] < threshold))

    def first_reaching(self, k, threshold, max_t):
        """Smallest t at which at least ``k`` sentences are below the threshold (None when
        not within ``max_t``): the k-th smallest per-sentence number of MAP calls."""
        if self.below(max_t, threshold) < k:
            return None
        known = sorted(self.runs)
        lo = max([t for t in known if self.below(t, threshold) < k], default=0)
        hi = min(t for t in known if self.below(t, threshold) >= k)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.below(mid, threshold) >= k:
                hi = mid
            else:
                lo = mid
        return hi


def run_length(args, length):
    scores = random_batch(args.n_sentences, length, args.seed)
    reference, reference_seconds = timed(scores, "active_set", 200, 1e-12)
    optimum = reference.objective.copy()
    out = {"length": length, "reference": {
        "converged": int(reference.converged.sum()),
        "n_iter_median": float(np.median(reference.n_iter)),
        "n_iter_max": int(reference.n_iter.max()),
        "gap_max": float(reference.gap.max()),
        "support_mean": float(reference.support_size.mean()),
        "support_median": float(np.median(reference.support_size)),
        "support_min": int(reference.support_size.min()),
        "support_max": int(reference.support_size.max()),
        "objective_mean": float(optimum.mean()),
        "seconds": reference_seconds,
        "recompute": recompute(scores, reference),
    }, "methods": {}}
    max_t = max(args.iters)
    for method in METHODS:
        print(f"n = {length}, {method} ...", flush=True)
        curve = Curve(scores, method, optimum)
        for t in args.iters:
            run = curve.run(t)
            for _ in range(args.repeats - 1):
                run["seconds"].append(timed(scores, method, t, 0.0)[1])
        half = args.n_sentences // 2
        if args.n_sentences % 2:
            order = [curve.first_reaching(half + 1, args.threshold, max_t)] * 2
        else:
            order = [curve.first_reaching(k, args.threshold, max_t) for k in (half, half + 1)]
        median = None if None in order else 0.5 * (order[0] + order[1])
        evaluated = sorted(curve.runs)
        objectives = np.array([curve.runs[t]["result"].objective for t in evaluated])
        last = curve.runs[max_t]["result"]
        out["methods"][method] = {
            "cells": {t: {
                "suboptimality_mean": float(curve.runs[t]["suboptimality"].mean()),
                "suboptimality_median": float(np.median(curve.runs[t]["suboptimality"])),
                "below": curve.below(t, args.threshold),
                "support_mean": float(curve.runs[t]["result"].support_size.mean()),
                "seconds": float(np.median(curve.runs[t]["seconds"])),
                "calls_mean": float(curve.runs[t]["result"].n_iter.mean()),
            } for t in args.iters},
            "median_calls": median,
            "evaluated_t": evaluated,
            "largest_decrease": float(np.max(objectives[:-1] - objectives[1:]))
            if len(evaluated) > 1 else 0.0,
            "most_negative": float(min(curve.runs[t]["suboptimality"].min()
                                       for t in evaluated)),
            "stopped_early": int(last.converged.sum()),
            "recompute": recompute(scores, last),
        }
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-sentences", type=int, default=100)
    parser.add_argument("--lengths", type=int, nargs="+", default=[10, 20])
    parser.add_argument("--iters", type=int, nargs="+",
                        default=[1, 2, 5, 10, 20, 50, 100, 200])
    parser.add_argument("--threshold", type=float, default=1e-6)
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per cell")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-enumeration", dest="enumeration", action="store_false",
                        help="skip the check against NNLS over every tree (n = 4, 5)")
    args = parser.parse_args()
    args.iters = sorted(set(args.iters))
    started = time.perf_counter()
    load_before = os.getloadavg()
    warm = random_batch(2, 4, args.seed)
    for method in METHODS:  # compile, or load the numba cache
        sparsemap(DECODER, warm, method=method, max_iter=3, tol=0.0)
    results = {
        "args": vars(args),
        "lengths": [run_length(args, length) for length in args.lengths],
        "enumeration": [enumeration_check(n, 20, args.seed) for n in (4, 5)]
        if args.enumeration else [],
        "machine": machine(),
        "versions": {"skstruct": skstruct.__version__, "numba": numba.__version__,
                     "numpy": np.__version__, "python": platform.python_version()},
        "commit": git_commit(),
        "command": "python " + " ".join([os.path.relpath(sys.argv[0])] + sys.argv[1:]),
        "total_seconds": time.perf_counter() - started,
        "load_average_1min": {"before": load_before[0], "after": os.getloadavg()[0]},
    }
    RESULTS.mkdir(exist_ok=True)
    text = report(results)
    (RESULTS / "sparsemap_solvers.md").write_text(text)
    print(text)


def machine():
    cpu = cpu_name()
    return {"cpu": cpu, "cores": os.cpu_count(), "numba_threads": numba.get_num_threads()}


def _sub(x):
    return "< 1e-12" if abs(x) < 1e-12 else f"{x:.2e}"


def _negative(x):
    return "none (all ≥ 0)" if x <= 0 else f"{-x:.1e}"


def _decrease(x):
    return "none" if x <= 0 else f"{x:.1e}"


def _calls(x, max_t):
    return f"> {max_t}" if x is None else f"{x:g}"


def _table(iters, rows, key, fmt):
    lines = ["| method | " + " | ".join(f"t = {t}" for t in iters) + " |",
             "|---|" + "---|" * len(iters)]
    for method, row in rows.items():
        cells = " | ".join(fmt(row["cells"][t][key]) for t in iters)
        lines.append(f"| {METHOD_NAMES[method]} | {cells} |")
    return lines


def report(r):
    a, m = r["args"], r["machine"]
    iters, max_t, n_sent = a["iters"], max(a["iters"]), a["n_sentences"]
    thr = f"{a['threshold']:g}"
    lines = [
        "# SparseMAP solvers on random dependency trees (Niculae et al. 2018, Figure 2)",
        "",
        f"`sparsemap(TreeDecoder(projective=False), scores, method=..., max_iter=t, tol=0)` "
        f"on batches of {n_sent} sentences of n tokens, arc scores i.i.d. standard normal "
        f"(seed [{a['seed']}, n]); t is the number of MAP (Chu-Liu-Edmonds) calls per "
        "sentence. Suboptimality = objective of the reference optimum − objective reached "
        "(per sentence, ≥ 0 up to rounding; the objective is ηᵀμ − ½‖u‖²); the reference "
        "is the active-set solution with `max_iter=200, tol=1e-12`. Support size = "
        "structures with positive weight. Wall time: the whole call for the batch, median "
        f"of {a['repeats']} runs after a warm-up call of every method. "
        f"{m['cpu']}, {m['cores']} cores, {m['numba_threads']} numba threads; "
        f"skstruct {r['versions']['skstruct']} at {r['commit']}, numba "
        f"{r['versions']['numba']}, numpy {r['versions']['numpy']}, Python "
        f"{r['versions']['python']}. Total run time {r['total_seconds']:.0f} s; 1-minute "
        f"load average {r['load_average_1min']['before']:.2f} before the run, "
        f"{r['load_average_1min']['after']:.2f} after it.",
        "",
    ]
    if max(r["load_average_1min"].values()) > m["cores"] + 0.5:
        lines += ["**Other processes were using the CPU during this run** (load average "
                  "above): wall times are inflated and noisy; the objectives and support "
                  "sizes are not affected (deterministic).", ""]
    lines += [f"Produced by `{r['command']}`.", ""]
    for block in r["lengths"]:
        n, ref, rows = block["length"], block["reference"], block["methods"]
        lines += [
            f"## n = {n} tokens",
            "",
            f"Reference optimum (active set, `tol=1e-12`): {ref['converged']} of {n_sent} "
            f"sentences converged, after {ref['n_iter_median']:g} MAP calls (median; at "
            f"most {ref['n_iter_max']}), largest final gap {ref['gap_max']:.1e}; support "
            f"size mean {ref['support_mean']:.1f}, median {ref['support_median']:g}, range "
            f"{ref['support_min']}–{ref['support_max']} (the arc indicators of the trees of n "
            f"tokens lie in an affine space of dimension n² − n = {n * n - n}, one head "
            f"per token); mean optimal objective "
            f"{ref['objective_mean']:.3f}; {format_time(ref['seconds'])} for the batch.",
            "",
            f"### Mean suboptimality (n = {n})",
            "",
        ]
        lines += _table(iters, rows, "suboptimality_mean", _sub)
        lines += ["", f"### Median suboptimality (n = {n})", ""]
        lines += _table(iters, rows, "suboptimality_median", _sub)
        lines += ["", f"### Sentences with suboptimality < {thr} (of {n_sent}, n = {n})", ""]
        lines += _table(iters, rows, "below", str)
        lines += ["", f"### Mean support size (n = {n})", ""]
        lines += _table(iters, rows, "support_mean", lambda x: f"{x:.1f}")
        lines += ["| *reference optimum* | " + " | ".join(
            [f"{ref['support_mean']:.1f}"] * len(iters)) + " |"]
        lines += ["", f"### Wall time per call, batch of {n_sent} (n = {n})", ""]
        lines += _table(iters, rows, "seconds", format_time)
        lines += ["", f"### MAP calls made per sentence, mean (n = {n})", "",
                  "Less than t when a sentence stops early (a gap of rounding size with "
                  "`tol=0`, or, for the active set, MAP returning an active structure).",
                  ""]
        lines += _table(iters, rows, "calls_mean", lambda x: f"{x:.1f}")
        lines.append("")
    lines += [
        f"## MAP calls to reach a suboptimality below {thr}",
        "",
        f"Median over the {n_sent} sentences of the smallest t with suboptimality < {thr} "
        f"(exact, by bisection on t; \"> {max_t}\" when fewer than half the sentences get "
        f"there within {max_t} calls), and how many sentences get there within {max_t}.",
        "",
        "| method | " + " | ".join(
            f"n = {b['length']}: median calls | n = {b['length']}: reached within {max_t}"
            for b in r["lengths"]) + " |",
        "|---|" + "---|---|" * len(r["lengths"]),
    ]
    for method in METHODS:
        cells = []
        for b in r["lengths"]:
            row = b["methods"][method]
            cells += [_calls(row["median_calls"], max_t),
                      f"{row['cells'][max_t]['below']} / {n_sent}"]
        lines.append(f"| {METHOD_NAMES[method]} | " + " | ".join(cells) + " |")
    lines += ["", "## Checks", "",
              "| n | method | smallest suboptimality | largest objective decrease "
              "with t | objective recomputed from the support, max error | unary "
              "marginals recomputed, max error | weights off the simplex, max | t "
              "evaluated |",
              "|---|---|---|---|---|---|---|---|"]
    for b in r["lengths"]:
        ref = b["reference"]
        lines.append(f"| {b['length']} | *reference* | – | – | {ref['recompute'][0]:.1e} | "
                     f"{ref['recompute'][1]:.1e} | {ref['recompute'][2]:.1e} | – |")
        for method in METHODS:
            row = b["methods"][method]
            lines.append(
                f"| {b['length']} | {METHOD_NAMES[method]} | {row['most_negative']:.1e} | "
                f"{_decrease(row['largest_decrease'])} | {row['recompute'][0]:.1e} | "
                f"{row['recompute'][1]:.1e} | {row['recompute'][2]:.1e} | "
                f"{len(row['evaluated_t'])} |")
    lines += ["",
              "Smallest suboptimality: over every sentence and evaluated t; negative "
              "means above the reference. Objective decrease: largest drop of a "
              "sentence's objective from one evaluated t to the next (all t of the grid "
              "and of the bisection; \"none\" when the objective never drops). "
              "Recomputed values use `distribution(i)` at the largest t (for the "
              "reference, its own result).", ""]
    if r["enumeration"]:
        lines += ["Independent check of the reference solver on small sentences (every "
                  "tree enumerated): SparseMAP solved as non-negative least squares over "
                  "the simplex of all trees with scipy's `nnls`, weights polished by the "
                  "exact KKT solve on the NNLS support (most negative polished weight "
                  "shown), against the active-set result (`tol=1e-12`); and the active-set "
                  "solution's optimality certificate over every tree, max_s (θ_s − m_sᵀu) "
                  "− min over its support (≤ 0 up to rounding at the optimum).", "",
                  "| n | trees | sentences | max objective difference | max unary "
                  "difference | most negative polished weight | certificate, max | "
                  "active-set support sizes |", "|---|---|---|---|---|---|---|---|"]
        for c in r["enumeration"]:
            lines.append(f"| {c['length']} | {c['n_trees']} | {c['n_sentences']} | "
                         f"{c['objective_gap']:.1e} | {c['unary_gap']:.1e} | "
                         f"{_negative(c['negative_weight'])} | {c['certificate']:.1e} | "
                         f"{min(c['support'])}–{max(c['support'])} |")
        lines.append("")
    lines += reading(r)
    return "\n".join(lines) + "\n"


def reading(r):
    """The interpretation, with the numbers of this run."""
    a = r["args"]
    iters, max_t, n_sent = a["iters"], max(a["iters"]), a["n_sentences"]
    thr = f"{a['threshold']:g}"
    fws = [m for m in METHODS if m != "active_set"]
    lines = ["## Reading", ""]
    for b in r["lengths"]:
        n, rows = b["length"], b["methods"]
        act = rows["active_set"]
        best_fw = min(fws, key=lambda m: rows[m]["cells"][max_t]["suboptimality_mean"])
        lines.append(
            f"- n = {n}: the active set gets below {thr} after "
            f"{_calls(act['median_calls'], max_t)} MAP calls (median over sentences), "
            f"{act['cells'][max_t]['below']} / {n_sent} sentences within {max_t}; the best "
            f"Frank-Wolfe variant, {METHOD_NAMES[best_fw]}, needs "
            f"{_calls(rows[best_fw]['median_calls'], max_t)} "
            f"({rows[best_fw]['cells'][max_t]['below']} / {n_sent} within {max_t}, mean "
            f"suboptimality {_sub(rows[best_fw]['cells'][max_t]['suboptimality_mean'])} "
            f"at t = {max_t}); vanilla FW is still at "
            f"{_sub(rows['fw']['cells'][max_t]['suboptimality_mean'])} after {max_t} "
            f"calls. Support at t = {max_t}: active set "
            f"{act['cells'][max_t]['support_mean']:.1f} (= the optimal support found), "
            + ", ".join(f"{METHOD_NAMES[m]} {rows[m]['cells'][max_t]['support_mean']:.1f}"
                        for m in fws) + ".")
    # Is the active set ahead in objective at every t after the first two calls?
    behind = [(b["length"], t) for b in r["lengths"] for t in iters if t > 2
              and b["methods"]["active_set"]["cells"][t]["suboptimality_mean"]
              > min(b["methods"][m]["cells"][t]["suboptimality_mean"] for m in fws)]
    lines.append(
        "- Every method makes the same first two steps (the MAP tree; then the best point "
        "on the segment to the second tree, which the exact line search and the "
        "two-structure QP both find), so the rows agree at t = 1, 2. "
        + ("After that the active set does not always lead: at (n, t) = "
           + ", ".join(f"({n}, {t})" for n, t in behind)
           + " a Frank-Wolfe variant has a lower mean suboptimality." if behind else
           "After that, the active set has the lowest mean suboptimality at every t > 2 "
           "of the grid, for every length, and its lead grows with t: once its support "
           "holds the optimal trees it solves the QP on them exactly, while the "
           "Frank-Wolfe variants only move along one or two trees per call (in theory, "
           "linear convergence for away-step and pairwise FW on polytopes, sublinear for "
           "vanilla FW, whose iterates zig-zag when the optimum lies on a face)."))
    sparser = [(b["length"], t, b["methods"]["away_fw"]["cells"][t]["support_mean"],
                b["methods"]["active_set"]["cells"][t]["support_mean"])
               for b in r["lengths"] for t in iters
               if b["methods"]["away_fw"]["cells"][t]["support_mean"]
               < b["methods"]["active_set"]["cells"][t]["support_mean"] - 0.05]
    text = ("- Sparsity: every method adds at most one tree per MAP call, so up to "
            "t ≈ 10-20 all supports are about t. The active set's support then settles at "
            "the optimal support, while the Frank-Wolfe supports keep growing with t: "
            "vanilla FW adds every new tree MAP returns and drops one only when its weight "
            "vanishes; away-step and pairwise FW drop trees, but not as fast as they add "
            "them.")
    if sparser:
        text += (" At equal small t the away-step support is slightly *smaller* than the "
                 "active set's (" + ", ".join(f"n = {n}, t = {t}: {x:.1f} vs {y:.1f}"
                                             for n, t, x, y in sparser)
                 + "), but its iterate is then much further from the optimum (tables "
                 "above); sparser at convergence, not at every t.")
    lines.append(text)
    lines.append(
        "- So the paper's claim, faster convergence to a sparser solution for the active "
        "set, holds on these random instances. The optimal supports are not tiny here "
        "(mean " + ", ".join(f"{b['reference']['support_mean']:.1f} at n = {b['length']}"
                             for b in r["lengths"])
        + "): i.i.d. standard normal arc scores are flat, with no tree standing out, so "
        "the projection onto the tree polytope lands on a large face; still far below "
        "the Carathéodory bound n² − n + 1. Scores with a clear best tree (a trained "
        "parser's) should give smaller supports; that is not measured here, and these "
        "support sizes describe the random instances only.")
    tol_zero = []
    for b in r["lengths"]:
        cell = b["methods"]["active_set"]["cells"][max_t]
        tol_zero.append(
            f"n = {b['length']}: {cell['calls_mean']:.1f} calls per sentence on average "
            f"with `tol=0` and max_iter = {max_t}, {b['methods']['active_set']['stopped_early']}"
            f" / {n_sent} sentences stopping, vs a median of "
            f"{b['reference']['n_iter_median']:g} (max {b['reference']['n_iter_max']}) "
            f"with `tol=1e-12`; {format_time(cell['seconds'])} vs "
            f"{format_time(b['reference']['seconds'])} for the batch")
    lines.append(
        "- With `tol=0` the solvers stop an example when its gap is at rounding level "
        "(1e-13 relative): at the optimum, MAP can return a tree of the optimal face whose "
        "adjusted score exceeds τ by ~1e-14, which is not progress (" + "; ".join(tol_zero)
        + ").")
    lines.append(
        "- Wall time per call grows faster than t for the Frank-Wolfe variants: the cost "
        "of their step grows with the support, which keeps growing. Per MAP call, the "
        "methods cost about the same at small t.")
    return lines


if __name__ == "__main__":
    main()
