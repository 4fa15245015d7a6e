"""The synthetic experiment of Ghoshal & Honorio (2019), "Learning maximum-a-posteriori
perturbation models for structured prediction in polynomial time" (Section 5, Figure 1):
directed spanning trees on 6 nodes, DAGs on 5 nodes with at most 2 parents, and subsets of
4 of 15 elements, learned by CRF_RANDOM, CRF_ALL, SVM and SVM_RANDOM.

Setup (per structure and repeat):

- Parts: the 30 directed arcs h -> m of 6 nodes (trees), the 20 directed arcs p -> c of 5
  nodes (DAGs), the 15 elements (subsets). Outputs: the 7,776 directed spanning trees
  of 6 nodes (any root: ``TreeDecoder(single_root=True)`` on 6 tokens with the root arcs
  scored 0), the 13,956 DAGs (``DAGDecoder(max_parents=2)``), the 1,365 4-subsets
  (``SubsetDecoder(k=4)``).
- Features: x ~ Bernoulli(1/2)^p with p = ``--n-features`` (10) per example, and
  φ(x, y) = x ⊗ (y's part indicators): one weight per (feature, part), d = 10 × parts =
  300 (trees), 200 (DAGs), 150 (subsets). In the estimators' input this is per-part
  feature blocks: the arc-feature row of arc a holds x in a's block of 10 columns (root
  arcs of the trees hold zeros); for subsets the multilabel weights ``coef_`` (15, p) are
  the blocks themselves (the multilabel model also has ``intercept_``, one bias per
  element; SVM and SVM_RANDOM get the same biases as a constant feature).
- w* ∈ R^d: s = round(√d) nonzero entries ~ N(0, 100) at random places, the rest 0.
- y = f_{w*}(x) = argmax_y ⟨φ(x, y), w*⟩, the noiseless MAP, as the paper states (its
  equation (1), no noise). Many outputs tie (most parts have weight 0 when s = √d): ties
  go to the first output in enumeration order.
- 100 training and 100 test examples; ``--repeats`` repeats (the paper: 30).

Methods (all but CRF_NEIGHBOURHOOD: ℓ1 strength 0.01 by soft-thresholding after each
step, 20 iterations with steps 1/√t from w = 0, as the paper prescribes for every method):

``CRF_NEIGHBOURHOOD``
    ``PerturbedMAPClassifier(decoder, k=radius)`` with its defaults: T_i = {y_i} ∪
    N_k(y_i) listed once, the pseudo-likelihood over them (one softmax per changed
    position), (1/(2m)) ‖w / β‖², L-BFGS (at most 300 iterations), no ℓ1.

``CRF_RANDOM``
    ``PerturbedMAPClassifier(candidates="proposal", objective="pooled", l2=0)`` (Algorithm 1
    proposals: ⌈√m⌉ draws per example and
    iteration, α = min(1, ‖w‖₁/√m), β = 1/log((r − 1)(√m − 1))), Hamming-1
    neighbourhoods for trees and DAGs, Hamming-2 for subsets (``k=2``: two k-subsets
    differ in an even number of elements, so a Hamming-1 neighbourhood is empty, every
    candidate set is the gold output alone and the gradient is 0 at w = 0).
``CRF_ALL``
    ``PerturbedMAPClassifier(candidates="all", objective="pooled", l2=0)``: every output
    enumerated by ``top_k``,
    the exact CRF loss, same steps. ``TreeDecoder`` has no ``top_k``, so the trees use
    :class:`EnumeratedTreeDecoder` (below: ``top_k`` by scoring every tree of
    ``enumerate_trees``).
``SVM``
    Exact max-margin (Taskar et al. 2003): subgradient steps of the structured hinge
    max_y [Δ(y_i, y) + θ_y] − θ_{y_i} with the Hamming distance on parts, the
    loss-augmented MAP exact by the decoder's MAP on cost-augmented scores (θ + 1 − 2 y_i;
    Chu-Liu-Edmonds for trees, enumeration for DAGs, the 4 best for subsets); the
    same 20 steps and ℓ1 prox, in this script (``StructuredSVM`` has no ℓ1 penalty).
``SVM_RANDOM``
    Honorio & Jaakkola (2016): the same hinge maximized over a random set only, the gold
    output and ⌈√m⌉ = 10 uniform samples per example and iteration
    (``sample_uniform`` of the decoder: Wilson's algorithm for trees), same steps.

Reported per structure and method, mean and 95 % confidence interval (Student t) over the
repeats: the test CRF loss 1 − mean_i P(y_i | x_i) at temperature β (the learners' β;
the same formula for the SVMs), by enumerating every output; the test normalized Hamming
loss of the MAP prediction (argmax over the enumeration; the number of differing parts
over its largest possible value, 2 × the most parts an output has: 10 for trees, 14 for
DAGs, 8 for subsets); the training time, wall and CPU (``time.process_time``: the CPU
time of the process, every thread; on a shared machine it varies less than the wall
time), after a warm-up fit so numba compilation is not counted; and the ratios of
CRF_ALL's to CRF_RANDOM's and CRF_NEIGHBOURHOOD's mean times.

Writes ``results/map_perturbation_synthetic.md``, ``.json`` and ``.png``.

Run: ``nice -n 19 python benchmarks/bench_map_perturbation_synthetic.py`` (``--quick``
for a smoke run: 2 repeats, 30 / 30 examples, 3 iterations, no results written unless
``--output`` is given). To share the repeats among processes, run each with
``--first-repeat F --repeats R --output DIR`` (repeats F .. R − 1; repeat r draws the same
data in every process), then ``--merge DIR1/....json DIR2/....json [--notes FILE]`` writes
the combined results.
"""

import argparse
import itertools
import json
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import scipy.sparse as sp
from scipy.special import log_softmax
from scipy.stats import t as student_t

import skstruct
from _report import code_version, command_line, machine_summary, record_run
from skstruct import PerturbedMAPClassifier
from skstruct.decoders import (
    DAGDecoder,
    DAGScores,
    MultilabelScores,
    SubsetDecoder,
    TreeDecoder,
    TreeScores,
)
from skstruct.decoders._dag.decoder import enumerate_dags
from skstruct.decoders._tree.decoder import enumerate_trees

RESULTS = Path(__file__).parent / "results"
STEM = "map_perturbation_synthetic"
METHODS = ("CRF_NEIGHBOURHOOD", "CRF_RANDOM", "CRF_ALL", "SVM", "SVM_RANDOM")
#: Figure 1 of the paper: CRF_RANDOM's speed-up over CRF_ALL.
PAPER_SPEEDUP = {"trees": 20.0, "dags": 6.0, "subsets": 3.0}


class EnumeratedTreeDecoder(TreeDecoder):
    """:class:`TreeDecoder` with ``top_k`` by enumeration (every tree scored), for
    ``PerturbedMAPClassifier(candidates="all")`` on small sentences of one length."""

    @property
    def capabilities(self):
        return super().capabilities | {"top_k"}

    def top_k(self, scores, k):
        lengths = np.diff(scores.offsets)
        n = int(lengths[0])
        if np.any(lengths != n):
            raise ValueError("EnumeratedTreeDecoder.top_k takes sentences of one length.")
        trees = enumerate_trees(n, single_root=bool(self.single_root))      # (N, n)
        blocks = scores.unary.reshape(-1, n, n)
        theta = blocks[:, np.arange(n), trees].sum(axis=-1)                 # (S, N)
        k = int(k)
        order = np.argsort(-theta, axis=1, kind="stable")[:, :k]
        top = np.full((theta.shape[0], k), -np.inf)
        width = order.shape[1]
        top[:, :width] = np.take_along_axis(theta, order, axis=1)
        paths = np.full((blocks.shape[0], n, k), -1, dtype=np.int64)
        paths[:, :, :width] = np.moveaxis(trees[order], 1, 2)
        return paths.reshape(-1, k), top


@dataclass
class Structure:
    """One output family in the common part space of the experiment."""

    name: str
    n_parts: int
    outputs: np.ndarray                     # (N, n_parts) 0/1: every output's parts
    max_distance: int                       # largest Hamming distance between outputs
    learner_decoder: Callable               # () -> decoder for the estimators
    crf_all_decoder: Callable
    svm_decoder: Callable
    to_estimator: Callable                  # (x, parts) -> (X, y) in the estimator's form
    container: Callable                     # part scores (m, n_parts) -> decoder scores
    to_parts: Callable                      # encoded outputs -> (m, n_parts)
    bias: bool                              # the model has one bias per part
    radius: int = 1                         # Hamming radius of the proposal's scan


def _arc_structure(name, n, encode_rows, heads):
    """Trees or DAGs: parts are the off-diagonal entries of an (n, n) block, row-major."""
    off = ~np.eye(n, dtype=bool)
    rows = np.flatnonzero(off.ravel())
    select = sp.csr_matrix((np.ones(rows.size), (rows, np.arange(rows.size))),
                           shape=(n * n, rows.size))

    def to_estimator(x, parts):
        X = [sp.kron(select, sp.csr_matrix(xi[None, :]), format="csr") for xi in x]
        return X, [heads(p) for p in parts]

    def container(S):
        blocks = np.zeros((S.shape[0], n, n))
        blocks[:, off] = S
        return (TreeScores.from_blocks(list(blocks)) if name == "trees"
                else DAGScores.from_blocks(list(blocks)))

    def to_parts(encoded):
        return encode_rows(encoded)[:, off.ravel()]

    return to_estimator, container, to_parts


def tree_structure(n=6):
    trees = enumerate_trees(n, single_root=True)

    def block_rows(states):
        """(m, n * n) [modifier, head] one-hot rows of encoded trees (m * n,)."""
        states = np.asarray(states).reshape(-1, n)
        A = np.zeros((states.shape[0], n, n), dtype=np.int64)
        A[np.arange(states.shape[0])[:, None], np.arange(n), states] = 1
        return A.reshape(-1, n * n)

    def heads(parts):
        A = np.zeros((n, n), dtype=np.int64)
        A[~np.eye(n, dtype=bool)] = parts
        has = A.any(axis=1)
        return np.where(has, A.argmax(axis=1) + 1, 0)

    to_estimator, container, to_parts = _arc_structure("trees", n, block_rows, heads)
    outputs = to_parts(trees.ravel())
    return Structure("trees", n * (n - 1), outputs, 2 * (n - 1),
                     lambda: TreeDecoder(single_root=True),
                     lambda: EnumeratedTreeDecoder(single_root=True),
                     lambda: TreeDecoder(single_root=True),
                     to_estimator, container, to_parts, False)


def dag_structure(n=5, max_parents=2):
    dags = enumerate_dags(n, max_parents)

    def block_rows(encoded):
        return np.asarray(encoded).reshape(-1, n * n)

    def adjacency(parts):
        A = np.zeros((n, n), dtype=np.int64)
        A[~np.eye(n, dtype=bool)] = parts
        return A

    to_estimator, container, to_parts = _arc_structure("dags", n, block_rows, adjacency)
    outputs = to_parts(dags.reshape(-1))
    most = int(outputs.sum(axis=1).max())
    return Structure("dags", n * (n - 1), outputs, 2 * most,
                     lambda: DAGDecoder(max_parents=max_parents),
                     lambda: DAGDecoder(max_parents=max_parents),
                     lambda: DAGDecoder(max_parents=max_parents),
                     to_estimator, container, to_parts, False)


def subset_structure(n_labels=15, k=4):
    combos = np.array(list(itertools.combinations(range(n_labels), k)))
    outputs = np.zeros((combos.shape[0], n_labels), dtype=np.int64)
    outputs[np.arange(combos.shape[0])[:, None], combos] = 1
    return Structure("subsets", n_labels, outputs, 2 * k,
                     lambda: SubsetDecoder(k=k), lambda: SubsetDecoder(k=k),
                     lambda: SubsetDecoder(k=k),
                     lambda x, parts: (x.astype(np.float64), parts.astype(np.int64)),
                     MultilabelScores, lambda encoded: np.asarray(encoded), True, radius=2)


STRUCTURES = {"trees": tree_structure, "dags": dag_structure, "subsets": subset_structure}


# -- data ----------------------------------------------------------------------------------

def true_weights(rng, n_parts, n_features):
    """w* (n_parts, n_features): s = round(√d) entries ~ N(0, 100), the rest 0."""
    d = n_parts * n_features
    w = np.zeros(d)
    support = rng.choice(d, size=int(round(np.sqrt(d))), replace=False)
    w[support] = rng.normal(0.0, 10.0, size=support.size)
    return w.reshape(n_parts, n_features)


def map_outputs(structure, S):
    """argmax over the enumeration (first of the ties) of part scores S (m, n_parts)."""
    return np.argmax(S @ structure.outputs.T, axis=1)


def make_data(structure, rng, m, n_features, w_star):
    x = (rng.random((m, n_features)) < 0.5).astype(np.float64)
    index = map_outputs(structure, x @ w_star.T)
    return x, structure.outputs[index], index


# -- evaluation ----------------------------------------------------------------------------

def beta_of(structure, m):
    """The paper's β = 1 / log((r − 1)(√m − 1))."""
    r = structure.outputs.shape[0]
    return 1.0 / np.log((r - 1) * (np.sqrt(m) - 1.0))


def evaluate(structure, S, gold_index, beta):
    """Full CRF loss at β and normalized Hamming loss of the MAP, by enumeration."""
    theta = S @ structure.outputs.T
    log_q = log_softmax(theta / beta, axis=1)[np.arange(S.shape[0]), gold_index]
    predicted = structure.outputs[np.argmax(theta, axis=1)]
    gold = structure.outputs[gold_index]
    hamming = np.abs(predicted - gold).sum(axis=1) / structure.max_distance
    return 1.0 - float(np.mean(np.exp(log_q))), float(hamming.mean())


def learner_part_scores(structure, model, x, n_features):
    if structure.bias:
        return x @ model.coef_.T + model.intercept_
    return x @ model.coef_.reshape(structure.n_parts, n_features).T


# -- the max-margin methods (same steps and ℓ1 prox as the learner) ------------------------

def _soft_threshold(w, threshold):
    return np.sign(w) * np.maximum(np.abs(w) - threshold, 0.0)


def _with_bias(structure, x):
    return np.column_stack([x, np.ones(x.shape[0])]) if structure.bias else x


def fit_svm(structure, x, parts, *, randomized, n_iter, l1, rng):
    """Subgradient steps 1/√t on the mean structured hinge, then the ℓ1 prox.

    Exact: ŷ_i = argmax_y Δ(y_i, y) + θ_y by the decoder's MAP on θ + 1 − 2 y_i.
    Randomized: ŷ_i maximizes the same over {y_i} ∪ ⌈√m⌉ uniform samples.
    Returns W of shape (n_parts, n_features [+ 1 bias]).
    """
    decoder = structure.svm_decoder()
    xb = _with_bias(structure, x)
    m = x.shape[0]
    n_draws = int(np.ceil(np.sqrt(m)))
    W = np.zeros((structure.n_parts, xb.shape[1]))
    for t in range(1, n_iter + 1):
        S = xb @ W.T
        if randomized:
            draws = decoder.sample_uniform(structure.container(S), n_draws,
                                           random_state=int(rng.integers(2**31 - 1)))
            candidates = np.stack([structure.to_parts(draws[..., j])
                                   for j in range(n_draws)], axis=1)  # (m, D, n_parts)
            values = (np.abs(candidates - parts[:, None, :]).sum(axis=2)
                      + np.einsum("mdp,mp->md", candidates, S) - np.sum(S * parts, axis=1,
                                                                         keepdims=True))
            best = np.argmax(values, axis=1)
            worst = candidates[np.arange(m), best]
            worst = np.where((values[np.arange(m), best] > 0)[:, None], worst, parts)
        else:
            worst = structure.to_parts(decoder.map(structure.container(S + 1.0 - 2.0 * parts)))
        gradient = (worst - parts).T @ xb / m
        step = 1.0 / np.sqrt(t)
        W = _soft_threshold(W - step * gradient, step * l1)
    return W


# -- one repeat ----------------------------------------------------------------------------

def run_method(structure, method, data, args, seed):
    x, parts, _, _, _, _ = data
    rng = np.random.default_rng(seed)
    if method.startswith("CRF"):
        decoder = (structure.crf_all_decoder() if method == "CRF_ALL"
                   else structure.learner_decoder())
        if method == "CRF_NEIGHBOURHOOD":  # the estimator's defaults
            model = PerturbedMAPClassifier(decoder=decoder, k=structure.radius,
                                           max_outputs=structure.outputs.shape[0])
        else:
            model = PerturbedMAPClassifier(
                decoder=decoder, candidates="proposal" if method == "CRF_RANDOM" else "all",
                objective="pooled", k=structure.radius, l1=args.l1, l2=0.0,
                max_iter=args.iterations, random_state=seed,
                # the paper's steps 1/√t (over R², as before): the estimator's unit is
                # β² / R²
                learning_rate=1.0 / beta_of(structure, x.shape[0]) ** 2,
                max_outputs=structure.outputs.shape[0])
        X, y = structure.to_estimator(x, parts)
        start, cpu_start = time.perf_counter(), time.process_time()
        model.fit(X, y)
        seconds = time.perf_counter() - start
        cpu = time.process_time() - cpu_start
        return seconds, lambda z: learner_part_scores(structure, model, z, args.n_features), {
            "cpu_seconds": cpu, "beta": model.beta_, "map_calls": model.decoder_calls_["map"],
            # the loss the learner minimizes, before its last step: over T_i (CRF_RANDOM),
            # or the full CRF loss (CRF_ALL); and α = min(1, ‖w‖₁ / √m) at the end
            "train_objective": float(model.objective_curve_[-1]),
            "alpha": float(min(1.0, (np.abs(model.coef_).sum()
                                     + np.abs(getattr(model, "intercept_", 0.0)).sum())
                               / np.sqrt(x.shape[0])))}
    start, cpu_start = time.perf_counter(), time.process_time()
    W = fit_svm(structure, x, parts, randomized=method == "SVM_RANDOM",
                n_iter=args.iterations, l1=args.l1, rng=rng)
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    return seconds, lambda z: _with_bias(structure, z) @ W.T, {"cpu_seconds": cpu}


def run_structure(name, args):
    structure = STRUCTURES[name]()
    rng = np.random.default_rng(args.seed)
    beta = beta_of(structure, args.train)
    # warm-up: compile every method's kernels on a small problem
    w_star = true_weights(rng, structure.n_parts, args.n_features)
    x, parts, _ = make_data(structure, rng, 10, args.n_features, w_star)
    warm_args = argparse.Namespace(**{**vars(args), "iterations": 2})
    for method in args.methods:
        run_method(structure, method, (x, parts, None, None, None, None), warm_args, 0)
    per_method = {method: {"crf_loss": [], "hamming": [], "seconds": [], "cpu_seconds": [],
                           "train_crf_loss": []}
                  for method in args.methods}
    learner_extras = {method: {"train_objective": [], "alpha": []}
                      for method in args.methods if method.startswith("CRF")}
    for repeat in range(args.repeats):
        w_star = true_weights(rng, structure.n_parts, args.n_features)
        x, parts, index = make_data(structure, rng, args.train, args.n_features, w_star)
        x_test, _, index_test = make_data(structure, rng, args.test, args.n_features, w_star)
        if repeat < args.first_repeat:
            continue  # the data of the repeats another process runs (see --merge)
        data = (x, parts, index, x_test, None, index_test)
        for method in args.methods:
            if method in ("CRF_ALL", "CRF_RANDOM") and repeat >= args.all_repeats:
                continue
            seconds, part_scores, extra = run_method(structure, method, data, args,
                                                     1000 * args.seed + repeat)
            crf, hamming = evaluate(structure, part_scores(x_test), index_test, beta)
            train_crf, _ = evaluate(structure, part_scores(x), index, beta)
            if "beta" in extra:
                assert abs(extra["beta"] - beta) < 1e-9 * beta, (extra["beta"], beta)
            entry = per_method[method]
            entry["crf_loss"].append(crf)
            entry["hamming"].append(hamming)
            entry["seconds"].append(seconds)
            entry["cpu_seconds"].append(extra["cpu_seconds"])
            entry["train_crf_loss"].append(train_crf)
            for key, values in learner_extras.get(method, {}).items():
                values.append(extra[key])
        print(f"{name} repeat {repeat + 1}/{args.repeats}: " + ", ".join(
            f"{m} {per_method[m]['crf_loss'][-1]:.3f}/{per_method[m]['hamming'][-1]:.3f}/"
            f"{per_method[m]['seconds'][-1]:.2f}s/cpu {per_method[m]['cpu_seconds'][-1]:.2f}s" for m in args.methods
            if per_method[m]["seconds"]), flush=True)
    return structure_result(structure, args, beta, per_method, learner_extras)


def structure_result(structure, args, beta, per_method, learner_extras):
    """Summaries (mean and 95 % CI over the repeats) of one structure's per-repeat lists."""
    summary = {method: {key: summarize(values) for key, values in entry.items()}
               for method, entry in per_method.items()}
    result = {"n_outputs": int(structure.outputs.shape[0]), "n_parts": structure.n_parts,
              "n_repeats": {m: len(e["seconds"]) for m, e in per_method.items()},
              "d": structure.n_parts * args.n_features,
              "s": int(round(np.sqrt(structure.n_parts * args.n_features))),
              "beta": beta, "max_distance": structure.max_distance,
              "methods": summary, "per_repeat": per_method,
              "learners": {method: {key: summarize(values) for key, values in entry.items()}
                           for method, entry in learner_extras.items()},
              "learners_per_repeat": learner_extras}
    if "CRF_ALL" in summary and "CRF_RANDOM" in summary:
        a = np.array(per_method["CRF_ALL"]["seconds"])
        r = np.array(per_method["CRF_RANDOM"]["seconds"])[:a.size]  # the same repeats
        result["time_ratio_all_over_random"] = float(a.mean() / r.mean())
        result["time_ratio_median_per_repeat"] = float(np.median(a / r))
    if "CRF_ALL" in summary and "CRF_NEIGHBOURHOOD" in summary:
        a = np.array(per_method["CRF_ALL"]["seconds"])
        r = np.array(per_method["CRF_NEIGHBOURHOOD"]["seconds"])[:a.size]
        result["time_ratio_all_over_neighbourhood"] = float(a.mean() / r.mean())
    # the same ratios of CPU time (runs before the CPU time was recorded have none)
    if "CRF_ALL" in summary and per_method["CRF_ALL"].get("cpu_seconds"):
        a = np.array(per_method["CRF_ALL"]["cpu_seconds"])
        for method, key in (("CRF_RANDOM", "cpu_ratio_all_over_random"),
                            ("CRF_NEIGHBOURHOOD", "cpu_ratio_all_over_neighbourhood")):
            if method in summary and per_method[method].get("cpu_seconds"):
                r = np.array(per_method[method]["cpu_seconds"])[:a.size]
                result[key] = float(a.mean() / r.mean())
                result[key.replace("ratio", "ratio_median")] = float(np.median(a / r))
    return result


def merge_runs(parts):
    """One run from runs over disjoint repeats (``--first-repeat``): their per-repeat lists
    concatenated in the order given, the summaries recomputed."""
    run = {**parts[0], "structures": {},
           "command": " + ".join(part["command"] for part in parts)}
    for name in dict.fromkeys(n for part in parts for n in part["structures"]):
        found = [part["structures"][name] for part in parts if name in part["structures"]]
        per_method = {m: {k: sum((f["per_repeat"][m][k] for f in found), [])
                          for k in found[0]["per_repeat"][m]} for m in found[0]["per_repeat"]}
        extras = {m: {k: sum((f["learners_per_repeat"][m][k] for f in found), [])
                      for k in found[0]["learners_per_repeat"][m]}
                  for m in found[0]["learners_per_repeat"]}
        args = argparse.Namespace(n_features=parts[0]["n_features"])
        run["structures"][name] = structure_result(STRUCTURES[name](), args,
                                                   found[0]["beta"], per_method, extras)
    counts = [n for result in run["structures"].values()
              for n in result["n_repeats"].values()]
    run["repeats"] = max(counts)
    run["all_repeats"] = min(counts)
    return run


def summarize(values):
    values = np.asarray(values, dtype=np.float64)
    n = values.size
    half = (float(student_t.ppf(0.975, n - 1) * values.std(ddof=1) / np.sqrt(n))
            if n > 1 else None)
    return {"mean": float(values.mean()), "ci95": half}


# -- report --------------------------------------------------------------------------------

def _cell(entry, digits=3, unit=""):
    ci = "" if entry["ci95"] is None else f" ± {entry['ci95']:.{digits}f}"
    return f"{entry['mean']:.{digits}f}{ci}{unit}"


def report(runs):
    lines = ["# MAP-perturbation learning on synthetic structures (Ghoshal & Honorio 2019, "
             "Figure 1)", ""]
    for label, run in runs.items():
        lines += [f"## Run `{label}`", "",
                  f"- command: `{run['command']}`; code: {run['code']}",
                  f"- machine: {run['machine']['cpu']}, {run['machine']['cores']} cores, "
                  f"numba threads {run['machine']['numba_threads']} (shared, loaded machine)",
                  f"- {run['repeats']} repeats (CRF_ALL and CRF_RANDOM: the first "
                  f"{run['all_repeats']}), "
                  f"{run['train']} train / {run['test']} test "
                  f"examples, p = {run['n_features']} features per part, "
                  f"{run['iterations']} iterations, ℓ1 = {run['l1']}", "",
                  "Mean ± 95 % CI over the repeats (Student t). CRF loss: 1 − mean "
                  "P(y_i | x_i) at β on the test set; Hamming: normalized test Hamming "
                  "loss of the MAP prediction; time: training wall time; CPU: training "
                  "CPU time of the process (all its threads).", ""]
        for name, result in run["structures"].items():
            ratio = result.get("time_ratio_all_over_random")
            lines += [f"### {name}: {result['n_outputs']} outputs, {result['n_parts']} "
                      f"parts, d = {result['d']}, s = {result['s']}, "
                      f"β = {result['beta']:.4f}", "",
                      "| method | test CRF loss | test Hamming | train CRF loss | time | CPU |",
                      "|---|---|---|---|---|---|"]
            for method, entry in result["methods"].items():
                cpu = (_cell(entry["cpu_seconds"], 3, " s") if "cpu_seconds" in entry
                       else "not recorded")
                lines.append(f"| {method} | {_cell(entry['crf_loss'])} | "
                             f"{_cell(entry['hamming'])} | {_cell(entry['train_crf_loss'])} "
                             f"| {_cell(entry['seconds'], 3, ' s')} | {cpu} |")
            for method, entry in result.get("learners", {}).items():
                lines += ["", f"{method}: training objective before the last step "
                          f"{_cell(entry['train_objective'])} ("
                          + ({"CRF_RANDOM": "the randomized loss over the candidate sets T_i",
                              "CRF_NEIGHBOURHOOD": "the L-BFGS risk: pseudo-likelihood "
                              "over the neighbourhoods plus the L2 term"}.get(
                                  method, "the full CRF loss"))
                          + f"), final α = min(1, ‖w‖₁/√m) {_cell(entry['alpha'])}"]
            if result.get("time_ratio_all_over_neighbourhood") is not None:
                lines += ["", "CRF_ALL / CRF_NEIGHBOURHOOD time: "
                          f"{result['time_ratio_all_over_neighbourhood']:.1f}x (ratio of "
                          "means over the repeats both ran)"
                          + _cpu_ratio(result, "cpu_ratio_all_over_neighbourhood")]
            if ratio is not None:
                lines += ["", f"CRF_ALL / CRF_RANDOM time: {ratio:.1f}x (ratio of means; "
                          f"median per repeat {result['time_ratio_median_per_repeat']:.1f}x)"
                          + _cpu_ratio(result, "cpu_ratio_all_over_random")
                          + f"; the paper reports about {PAPER_SPEEDUP[name]:.0f}x."]
            lines.append("")
        if run.get("notes"):
            lines += ["### What holds of the paper's claims", "", run["notes"], ""]
    return "\n".join(lines)


def _cpu_ratio(result, key):
    """The CPU-time version of a time ratio, as text, or nothing when not recorded."""
    if result.get(key) is None:
        return ""
    median = result[key.replace("ratio", "ratio_median")]
    return f"; CPU time {result[key]:.1f}x (median per repeat {median:.1f}x)"


def plot(run, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install '.[benchmarks]')")
        return
    names = list(run["structures"])
    keys = [("crf_loss", "test CRF loss"), ("hamming", "test Hamming loss"),
            ("cpu_seconds", "training CPU time (s)")]
    fig, axes = plt.subplots(len(names), 3, figsize=(11, 2.8 * len(names)), squeeze=False)
    for row, name in enumerate(names):
        methods = run["structures"][name]["methods"]
        for col, (key, title) in enumerate(keys):
            ax = axes[row, col]
            means = [methods[m][key]["mean"] for m in methods]
            cis = [methods[m][key]["ci95"] or 0.0 for m in methods]
            ax.bar(range(len(methods)), means, yerr=cis, capsize=3,
                   color=[f"C{j}" for j in range(len(methods))])
            ax.set_xticks(range(len(methods)), list(methods), fontsize=7)
            if key == "cpu_seconds":
                ax.set_yscale("log")
            ax.set_title(f"{name}: {title}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--structures", nargs="+", choices=list(STRUCTURES),
                        default=list(STRUCTURES))
    parser.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--all-repeats", type=int, default=None,
                        help="run CRF_ALL and CRF_RANDOM on the first N repeats only "
                        "(default: all)")
    parser.add_argument("--train", type=int, default=100)
    parser.add_argument("--test", type=int, default=100)
    parser.add_argument("--n-features", type=int, default=10,
                        help="p, the features per part (d = p × parts)")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--l1", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--first-repeat", type=int, default=0,
                        help="skip the repeats before this one (their data is still drawn, "
                        "so repeat r is the same in every process): split a run over "
                        "processes, then --merge their .json files")
    parser.add_argument("--merge", nargs="+", default=None, metavar="JSON",
                        help="no training: combine the runs (label --label) of these files, "
                        "which ran disjoint repeats of the same settings, in the order given")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 2 repeats, 30 / 30 examples, 3 iterations; no "
                        "results written unless --output is given")
    parser.add_argument("--no-peer", action="store_true", help="(no peer library here)")
    parser.add_argument("--notes", default=None,
                        help="a file whose text goes under the tables (the discussion)")
    parser.add_argument("--label", default="latest", help="name of this run in the results")
    parser.add_argument("--output", default=None,
                        help=f"results folder (default: {RESULTS}; none with --quick)")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats, args.train, args.test = min(args.repeats, 2), 30, 30
        args.iterations = min(args.iterations, 3)
    if args.all_repeats is None:
        args.all_repeats = args.repeats
    output = Path(args.output) if args.output else (None if args.quick else RESULTS)
    if args.merge:
        run = merge_runs([json.loads(Path(f).read_text())["runs"][args.label]
                          for f in args.merge])
        if args.notes:
            run["notes"] = Path(args.notes).read_text().strip()
        runs = record_run(output / f"{STEM}.json", args.label, run)
        (output / f"{STEM}.md").write_text(report(runs))
        plot(run, output / f"{STEM}.png")
        print(report({args.label: run}))
        return run
    run = {"command": command_line("benchmarks/bench_map_perturbation_synthetic.py"),
           "code": code_version(skstruct), "machine": machine_summary(),
           "repeats": args.repeats, "all_repeats": min(args.all_repeats, args.repeats),
           "train": args.train, "test": args.test,
           "n_features": args.n_features, "iterations": args.iterations, "l1": args.l1,
           "seed": args.seed, "structures": {}}
    if args.notes:
        run["notes"] = Path(args.notes).read_text().strip()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for name in args.structures:
            run["structures"][name] = run_structure(name, args)
    runs = {args.label: run}
    if output is not None:
        runs = record_run(output / f"{STEM}.json", args.label, run)
        (output / f"{STEM}.md").write_text(report(runs))
        plot(run, output / f"{STEM}.png")
    print(report({args.label: run}))
    return run


if __name__ == "__main__":
    main()
