"""Multilabel classification on five MULAN data sets: independent-label models, skstruct's
pairwise factor-graph models and pystruct's pairwise model beside them.

Run from the peers' virtual environment, where skstruct and pystruct both import::

    bash ../shared/peers/setup_peers.sh
    ~/.cache/skstruct-peers/peers-venv/bin/pip install -e .
    ~/.cache/skstruct-peers/peers-venv/bin/python benchmarks/bench_multilabel_pairwise.py

(``--datasets`` and ``--methods`` to run some of them: each run updates only its own
(data set, method) cells of the results, so pystruct's long fit on yeast can run on its
own; ``--quick`` for a smoke run on slices of emotions; ``--no-peer`` to skip pystruct.)
Outside the peers' environment the pystruct rows are left out and say why.

Data: bibtex, yeast, scene, emotions and tmc2007 (tmc2007-500), published train/test
splits (``skstruct.datasets.load_multilabel``; yeast and emotions bundled, the others
read from ``../shared/data/multilabel`` or ``--data``). The dense sets (yeast, scene,
emotions) are standardized on the training set; bibtex and tmc2007 have binary features
and stay sparse (CSR), as they are.

Methods, one entry each of :data:`METHODS`, a table of (name, factory, ...):

``ovr_logreg``
    scikit-learn's ``OneVsRestClassifier(LogisticRegression(C))``: one independent
    logistic regression per label.
``ssvm_hamming_bcfw``
    ``StructuredSVM(loss="hamming", rescaling="margin", solver="bcfw")`` with skstruct's
    default ``MultilabelDecoder`` (independent labels).
``sparsemap_independent``
    ``SparseMAPClassifier()`` with the default ``MultilabelDecoder`` (independent
    labels; L-BFGS on the SparseMAP loss).
``pystruct_pairwise_ad3``
    pystruct 0.3.2 ``OneSlackSSVM(MultiLabelClf(edges=all label pairs,
    inference_method="ad3"), C=0.1, tol=0.01, inference_cache=50)``, the settings of
    pystruct's ``multi_label.py`` example (with AD3 for the unavailable QPBO) and of
    ``bench_ssvm_pystruct.py``; a constant feature appended. yeast and scene only.

``hinge_lp_map_pairwise``
    ``StructuredSVM(FactorGraphDecoder(FactorGraph.pairwise(n_labels)),
    solver="cutting_plane", tol=0.01)``: one learned coupling per pair of labels,
    structured hinge with LP-MAP loss-augmented inference (ADMM; Hamming, margin
    rescaling), relaxed: the cutting planes come from the fractional LP solution
    (``FactorGraphDecoder(loss_augmented="relaxed")``, the default). All data sets.
``hinge_lp_map_rounded``
    The same with the LP solution rounded at 1/2 (``loss_augmented="rounded"``; the
    ``hinge_lp_map_pairwise`` rows before the relaxed hinge existed were this model).
``hinge_exact_pairwise``
    The same model with exact loss-augmented MAP (``map_method="exact"``: compiled
    branch and bound). yeast, scene, emotions, tmc2007.
``lp_sparsemap_pairwise``
    ``SparseMAPClassifier(decoder=FactorGraphDecoder(FactorGraph.pairwise(n_labels),
    decision="marginals"))``: the LP-SparseMAP loss, L-BFGS; predicts the LP-SparseMAP
    variable marginals rounded at 1/2. All data sets.
``lp_sparsemap_pairwise_map``
    The same model predicting the LP-MAP output (``decision="map"``). yeast, scene,
    emotions.
``hinge_lp_map_cooccurring``, ``lp_sparsemap_cooccurring``
    ``hinge_lp_map_rounded`` and ``lp_sparsemap_pairwise`` with PAIR factors only on the
    pairs of labels that are both on in some training example
    (``FactorGraph.pairwise(n_labels, pairs=...)``; 3,506 of bibtex's 12,561 pairs): an
    additional variant, the all-pairs rows stay. bibtex only (its one-value grid: the
    pairs come from the whole training set, no held-out selection to leak into).

The pairwise models stop the ADMM at residuals 1e-4 or 200 iterations. On bibtex and
tmc2007 they have one value of alpha and their fits stop after ``--time-cap`` seconds
(the result says whether they did). Each method has a small grid of its regularization: with more than one
value, the value is chosen by the example-based F1 on a held-out 25 % of the training set
(``train_test_split(random_state=0)``; ties to the first value), then refit on all of
it. Timed: that final fit (wall and process CPU time), once; the selection fits, or a
warm-up fit on 50 samples (skstruct, pystruct), come first so numba compilation is not
counted. Reported on
the test set: example-based F1, Hamming loss, subset accuracy, micro- and macro-F1
(``skstruct.metrics``; F1 of an empty true and empty predicted set = 1).

Writes ``results/multilabel_pairwise.md`` and ``.json``.
"""

import argparse
import itertools
import json
import sys
import time
import warnings
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Callable

import numpy as np
import scipy.sparse as sp
import sklearn
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.multiclass import OneVsRestClassifier
from sklearn.preprocessing import StandardScaler

import skstruct
from skstruct import SparseMAPClassifier, StructuredSVM
from skstruct.datasets import load_multilabel
from skstruct.decoders import FactorGraph, FactorGraphDecoder
from skstruct.metrics import (
    example_f1_score,
    hamming_loss,
    macro_f1_score,
    micro_f1_score,
    subset_accuracy,
)

sys.path.insert(0, str(Path(__file__).parent))
from _compare import load_average, peer_import, timed  # noqa: E402
from _report import code_version, command_line, machine_summary, record_run  # noqa: E402

RESULTS = Path(__file__).parent / "results"
STEM = "multilabel_pairwise"
MULTILABEL_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "multilabel"
DATASETS = ("bibtex", "yeast", "scene", "emotions", "tmc2007")
BUNDLED = ("yeast", "emotions")
#: Data sets whose pairwise fits run under ``--time-cap`` with a one-value grid.
LARGE = ("bibtex", "tmc2007")
#: Stopping tolerance of the pairwise hinge's cutting plane: pystruct's ``tol`` (the
#: violation of the most violated constraint, in mean-hinge units as ours).
PAIRWISE_HINGE_TOL = 0.01
# Example F1 (%) on bibtex of the LP-SparseMAP paper (Niculae & Martins 2020, Table 3),
# with an MLP encoder where this benchmark's models are linear.
PAPER_BIBTEX = {"LP-SparseMAP loss": 43.43, "structured hinge (LP-MAP)": 37.70,
                "independent labels": 42.28}
# Figures quoted for pystruct's pairwise one-slack SSVM with AD3 (same settings).
PYSTRUCT_REFERENCE = {"yeast": {"fit_seconds": 419.0, "example_f1": 0.621},
                      "scene": {"fit_seconds": 28.4, "example_f1": 0.618}}


def log(text):
    print(text, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- methods

@dataclass
class Method:
    """One row of the benchmark.

    Parameters
    ----------
    name : str
        Key in the results.
    label : str
        What the report calls it.
    factory : callable
        ``factory(value, n_labels, args) -> estimator`` with ``fit(X, Y)`` and
        ``predict(X)`` on 0/1 indicator matrices ``Y`` of shape (n_samples, n_labels).
    param : str
        Name of the hyperparameter ``value`` sets.
    grid : list
        Its values; with more than one, chosen on held-out data.
    datasets : tuple of str or None
        Data sets it runs on (None: all).
    large_grid : list or None
        Its grid on the data sets of :data:`LARGE` (None: ``grid``).
    library : {"skstruct", "sklearn", "pystruct"}
        Who implements it; "pystruct" rows need pystruct and get dense inputs with a
        constant column appended.
    """

    name: str
    label: str
    factory: Callable
    param: str
    grid: list
    datasets: tuple = None
    library: str = "skstruct"
    notes: str = field(default="")
    large_grid: list = None


def _pairwise_decoder(n_labels, map_method="admm", decision="map", pairs="all",
                      loss_augmented="relaxed"):
    """All label pairs (or ``pairs``); the ADMM stopped at residuals 1e-4 or 200
    iterations."""
    return FactorGraphDecoder(FactorGraph.pairwise(n_labels, pairs), max_iter=200,
                              tol=1e-4, map_method=map_method, decision=decision,
                              loss_augmented=loss_augmented)


def cooccurring_pairs(Y):
    """The pairs (i < j) of labels both on in some row of the 0/1 matrix ``Y``, shape
    (n_pairs, 2), in row-major order."""
    Y = np.asarray(Y, dtype=np.float64)
    counts = Y.T @ Y
    first, second = np.triu_indices(Y.shape[1], 1)
    keep = counts[first, second] > 0
    return np.column_stack([first[keep], second[keep]]).astype(np.int64)


class TimeCap:
    """A solver callback that stops the fit after ``seconds`` of wall time (None: never);
    ``hit`` records whether it did."""

    def __init__(self, seconds):
        self.seconds, self.start, self.hit = seconds, time.perf_counter(), False

    def __call__(self, n_iter, w, objective):
        if self.seconds is not None and time.perf_counter() - self.start > self.seconds:
            self.hit = True
        return self.hit


def _capped(args):
    """The time cap of a pairwise model's fit on the large data sets."""
    return TimeCap(args.time_cap if args.dataset in LARGE else None)


def _pairs(cooccurring, args):
    return args.cooccurring_pairs if cooccurring else "all"


def _pairwise_hinge(map_method, cooccurring=False, loss_augmented="relaxed"):
    def factory(alpha, n_labels, args):
        return StructuredSVM(
            _pairwise_decoder(n_labels, map_method, pairs=_pairs(cooccurring, args),
                              loss_augmented=loss_augmented),
            solver="cutting_plane", alpha=alpha, tol=PAIRWISE_HINGE_TOL,
            max_iter=args.cutting_plane_iter, callback=_capped(args))
    return factory


def _pairwise_sparsemap(decision, cooccurring=False):
    def factory(alpha, n_labels, args):
        return SparseMAPClassifier(
            decoder=_pairwise_decoder(n_labels, decision=decision,
                                      pairs=_pairs(cooccurring, args)),
            alpha=alpha, max_iter=args.lbfgs_iter, callback=_capped(args))
    return factory


def _pystruct_model(C, n_labels, args):
    learners, models = peer_import("pystruct.learners")[0], peer_import("pystruct.models")[0]
    edges = np.array(list(itertools.combinations(range(n_labels), 2)))
    model = models.MultiLabelClf(edges=edges, inference_method="ad3")
    return learners.OneSlackSSVM(model, C=C, tol=0.01, inference_cache=50)


METHODS = [
    Method("ovr_logreg", "one-vs-rest logistic regression (scikit-learn, lbfgs)",
           lambda C, n_labels, args: OneVsRestClassifier(
               LogisticRegression(C=C, max_iter=2000)),
           "C", [0.01, 0.1, 1.0], library="sklearn"),
    Method("ssvm_hamming_bcfw", "StructuredSVM, Hamming loss, margin rescaling, BCFW, "
           "independent labels (MultilabelDecoder)",
           lambda alpha, n_labels, args: StructuredSVM(
               loss="hamming", rescaling="margin", solver="bcfw", alpha=alpha,
               max_iter=args.passes, random_state=0, check_gap_every=1),
           "alpha", [0.1, 0.01, 0.001]),
    Method("sparsemap_independent", "SparseMAPClassifier, independent labels "
           "(MultilabelDecoder), L-BFGS",
           lambda alpha, n_labels, args: SparseMAPClassifier(
               alpha=alpha, max_iter=args.lbfgs_iter),
           "alpha", [1e-2, 1e-3, 1e-4]),
    # Pairwise factor-graph models of skstruct: one PAIR factor per pair of labels, the
    # couplings learned beside the per-label weights. On bibtex (12,561 pairs) and
    # tmc2007 (231 pairs, 21,519 examples) one value of alpha, the fit stopped by
    # --time-cap (reported).
    Method("hinge_lp_map_pairwise", "StructuredSVM, pairwise factor graph, LP-MAP "
           "loss-augmented inference (ADMM; the relaxed hinge, fractional LP solutions "
           "kept; Hamming, margin), one-slack cutting plane", _pairwise_hinge("admm"),
           "alpha", [1.0, 0.1, 0.01], large_grid=[0.01]),
    Method("hinge_lp_map_rounded", "StructuredSVM, pairwise factor graph, LP-MAP "
           "loss-augmented inference (ADMM, rounded at 1/2; Hamming, margin), one-slack "
           "cutting plane", _pairwise_hinge("admm", loss_augmented="rounded"), "alpha",
           [1.0, 0.1, 0.01], large_grid=[0.01]),
    Method("hinge_exact_pairwise", "StructuredSVM, pairwise factor graph, exact MAP "
           "loss-augmented inference (branch and bound; Hamming, margin), one-slack "
           "cutting plane", _pairwise_hinge("exact"), "alpha", [1.0, 0.1, 0.01],
           datasets=("yeast", "scene", "emotions", "tmc2007"), large_grid=[0.01]),
    Method("lp_sparsemap_pairwise", "SparseMAPClassifier, pairwise factor graph, "
           "LP-SparseMAP loss, L-BFGS; predicts the LP-SparseMAP marginals rounded at 1/2",
           _pairwise_sparsemap("marginals"), "alpha", [1e-2, 1e-3, 1e-4],
           large_grid=[1e-3]),
    Method("lp_sparsemap_pairwise_map", "SparseMAPClassifier, pairwise factor graph, "
           "LP-SparseMAP loss, L-BFGS; predicts the LP-MAP output (rounded)",
           _pairwise_sparsemap("map"), "alpha", [1e-2, 1e-3, 1e-4],
           datasets=("yeast", "scene", "emotions")),
    # The pairwise models with PAIR factors on the label pairs that co-occur in the
    # training set only: an additional variant beside the all-pairs rows.
    Method("hinge_lp_map_cooccurring", "StructuredSVM, PAIR factors on the label pairs "
           "co-occurring in training only, LP-MAP loss-augmented inference (ADMM, rounded; "
           "Hamming, margin), one-slack cutting plane",
           _pairwise_hinge("admm", cooccurring=True, loss_augmented="rounded"), "alpha",
           [0.01],
           datasets=("bibtex",)),
    Method("lp_sparsemap_cooccurring", "SparseMAPClassifier, PAIR factors on the label "
           "pairs co-occurring in training only, LP-SparseMAP loss, L-BFGS; predicts the "
           "LP-SparseMAP marginals rounded at 1/2",
           _pairwise_sparsemap("marginals", cooccurring=True), "alpha", [1e-3],
           datasets=("bibtex",)),
    Method("pystruct_pairwise_ad3", "pystruct OneSlackSSVM, MultiLabelClf with all label "
           "pairs, AD3 (C = 0.1, tol = 0.01, inference_cache = 50)",
           _pystruct_model, "C", [0.1], datasets=("yeast", "scene"), library="pystruct"),
]


# --------------------------------------------------------------------------- data

def load_data(name, args):
    """Standardized dense or raw sparse features and 0/1 label matrices of one data set."""
    path = None if name in BUNDLED and args.data is None else (args.data or MULTILABEL_DATA)
    train = load_multilabel(name, path=path)
    test = load_multilabel(name, "test", path=path)
    X, y = train.data, np.asarray(train.target, dtype=int)
    X_test, y_test = test.data, np.asarray(test.target, dtype=int)
    if args.quick:
        X, y, X_test, y_test = X[:150], y[:150], X_test[:100], y_test[:100]
    if not sp.issparse(X):
        scaler = StandardScaler().fit(X)
        X, X_test = scaler.transform(X), scaler.transform(X_test)
    return X, y, X_test, y_test


def pystruct_inputs(X):
    """pystruct's layout: dense rows with a constant feature (its models have no bias)."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    return np.hstack([X, np.ones((X.shape[0], 1))])


# --------------------------------------------------------------------------- runs

def quiet_fit(model, X, y):
    """Fit; return (model, wall seconds, CPU seconds, whether it converged)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        model, seconds, cpu = timed(model.fit, X, y)
    converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
    return model, seconds, cpu, converged


def predict(model, X):
    return np.asarray(model.predict(X), dtype=int)


def scores(y_true, y_pred):
    return {
        "example_f1": example_f1_score(y_true, y_pred),
        "hamming_loss": hamming_loss(y_true, y_pred),
        "subset_accuracy": subset_accuracy(y_true, y_pred),
        "micro_f1": micro_f1_score(y_true, y_pred),
        "macro_f1": macro_f1_score(y_true, y_pred),
        "mean_predicted_labels": float(y_pred.sum(axis=1).mean()),
    }


def run_method(method, X, y, X_test, y_test, args):
    """Select the hyperparameter, time the final fit, score the test set."""
    if method.library == "pystruct":
        X, X_test = pystruct_inputs(X), pystruct_inputs(X_test)
    n_labels = y.shape[1]
    grid = method.grid
    if args.dataset in LARGE and method.large_grid is not None:
        grid = method.large_grid
    grid = grid[:1] if args.quick else grid
    selection = {}
    if len(grid) > 1:
        X_fit, X_val, y_fit, y_val = train_test_split(X, y, test_size=0.25, random_state=0)
        for value in grid:
            model, seconds, _, converged = quiet_fit(
                method.factory(value, n_labels, args), X_fit, y_fit)
            selection[value] = example_f1_score(y_val, predict(model, X_val))
            log(f"  {method.param}={value:g}: held-out example F1 {selection[value]:.4f} "
                f"({seconds:.1f} s{'' if converged else ', not converged'})")
    elif method.library != "sklearn":  # warm-up: numba compilation, pystruct's imports
        quiet_fit(method.factory(grid[0], n_labels, args), X[:50], y[:50])
    best = max(grid, key=lambda v: (selection.get(v, 0.0), -grid.index(v)))
    load_before = load_average()
    estimator = method.factory(best, n_labels, args)
    model, seconds, cpu, converged = quiet_fit(estimator, X, y)
    cap = getattr(estimator, "callback", None)
    time_capped = bool(getattr(cap, "hit", False))
    load_during = load_average()
    predict_start = time.perf_counter()
    y_pred = predict(model, X_test)
    predict_seconds = time.perf_counter() - predict_start
    result = {
        "label": method.label, "library": method.library, "param": method.param,
        "value": best, "grid": grid,
        "selection_example_f1": {str(v): s for v, s in selection.items()},
        "fit_seconds": seconds, "fit_cpu_seconds": cpu,
        "converged": converged and not time_capped, "time_capped": time_capped,
        "time_cap_seconds": args.time_cap if isinstance(cap, TimeCap) and cap.seconds
        else None,
        "predict_seconds": predict_seconds,
        **scores(y_test, y_pred),
        "load_average_1min": {"before": load_before, "after": load_during},
        "commit": code_version(skstruct),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": command_line("benchmarks/bench_multilabel_pairwise.py"),
        "quick": args.quick,
    }
    if hasattr(model, "duality_gaps_") and len(model.duality_gaps_):
        result["final_duality_gap"] = float(model.duality_gaps_[-1])
    if time_capped:  # how far the capped fit got
        for attribute in ("objective_curve_", "duality_gaps_"):
            if hasattr(model, attribute):
                result[attribute.rstrip("_")] = [float(v) for v in getattr(model, attribute)]
    for attribute in ("n_iter_",):
        if hasattr(model, attribute):
            result["n_iter"] = int(getattr(model, attribute))
    if method.library == "pystruct":
        result["decoder_iterations"] = len(model.objective_curve_)
        result["pystruct_version"] = version("pystruct")
    log(f"  -> {method.param}={best:g}: example F1 {result['example_f1']:.4f}, Hamming "
        f"{result['hamming_loss']:.4f}, subset accuracy {result['subset_accuracy']:.4f}, "
        f"micro F1 {result['micro_f1']:.4f}, fit {seconds:.1f} s")
    return result


def run_dataset(name, methods, args, pystruct_missing):
    args.dataset = name
    X, y, X_test, y_test = load_data(name, args)
    args.cooccurring_pairs = cooccurring_pairs(y)
    entry = {"n_train": int(y.shape[0]), "n_test": int(y_test.shape[0]),
             "n_features": int(X.shape[1]), "n_labels": int(y.shape[1]),
             "sparse_features": bool(sp.issparse(X)),
             "cardinality_train": float(y.sum(axis=1).mean()),
             "n_label_pairs": n_labels_pairs(y.shape[1]),
             "n_cooccurring_pairs": int(args.cooccurring_pairs.shape[0]), "methods": {}}
    for method in methods:
        if method.datasets is not None and name not in method.datasets:
            continue
        if method.library == "pystruct" and pystruct_missing:
            entry["methods"][method.name] = {"label": method.label, "library": "pystruct",
                                             "skipped": pystruct_missing}
            continue
        log(f"{name}: {method.label}")
        try:
            entry["methods"][method.name] = run_method(method, X, y, X_test, y_test, args)
        except Exception as error:  # noqa: BLE001 - recorded in the results
            if args.raise_errors:
                raise
            log(f"  failed: {type(error).__name__}: {error}")
            entry["methods"][method.name] = {"label": method.label,
                                             "library": method.library,
                                             "error": f"{type(error).__name__}: {error}"}
    return entry


def n_labels_pairs(n_labels):
    return int(n_labels * (n_labels - 1) // 2)


def merge_stored(path, label, run):
    """Keep the stored (data set, method) cells that this run did not redo."""
    if not path.exists():
        return run
    stored = json.loads(path.read_text()).get("runs", {}).get(label, {})
    order = [m.name for m in METHODS]
    for name, entry in run.get("datasets", {}).items():
        old = stored.get("datasets", {}).get(name, {}).get("methods", {})
        methods = {**old, **entry["methods"]}
        entry["methods"] = dict(sorted(methods.items(), key=lambda item: (
            order.index(item[0]) if item[0] in order else len(order))))
    datasets = {**stored.get("datasets", {}), **run.get("datasets", {})}
    run["datasets"] = {name: datasets[name] for name in DATASETS if name in datasets}
    return run


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", choices=DATASETS, default=list(DATASETS))
    parser.add_argument("--methods", nargs="+", choices=[m.name for m in METHODS],
                        default=None, help="default: all")
    parser.add_argument("--passes", type=int, default=50, help="BCFW passes (max_iter)")
    parser.add_argument("--lbfgs-iter", type=int, default=100,
                        help="max_iter of SparseMAPClassifier's L-BFGS")
    parser.add_argument("--cutting-plane-iter", type=int, default=500,
                        help="max_iter of the pairwise hinge's cutting plane (decoder "
                        "calls)")
    parser.add_argument("--time-cap", type=float, default=900.0,
                        help="wall seconds after which the pairwise fits on bibtex and "
                        "tmc2007 are stopped (the result says so)")
    parser.add_argument("--data", default=None,
                        help=f"MULAN folder (default: {MULTILABEL_DATA}; yeast and emotions "
                        "bundled)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: emotions, 150 train / 100 test samples, the first "
                        "grid value, 3 passes or iterations; no results written unless "
                        "--output is given")
    parser.add_argument("--no-peer", action="store_true", help="skip pystruct")
    parser.add_argument("--raise-errors", action="store_true",
                        help="stop at the first failing method instead of recording it")
    parser.add_argument("--label", default="latest", help="name of this run in the results")
    parser.add_argument("--report-only", action="store_true",
                        help="rewrite the .md from the stored .json (no fit)")
    parser.add_argument("--output", default=None,
                        help=f"results folder (default: {RESULTS}; none with --quick)")
    args = parser.parse_args(argv)
    if args.report_only:
        path = (Path(args.output) if args.output else RESULTS) / f"{STEM}.json"
        runs = json.loads(path.read_text())["runs"]
        path.with_suffix(".md").write_text(report(runs))
        print(report(runs))
        return runs
    if args.quick:
        args.datasets = ["emotions"]
        args.passes, args.lbfgs_iter = min(args.passes, 3), min(args.lbfgs_iter, 3)
        args.cutting_plane_iter = min(args.cutting_plane_iter, 3)
    output = Path(args.output) if args.output else (None if args.quick else RESULTS)
    methods = [m for m in METHODS if args.methods is None or m.name in args.methods]

    pystruct_missing = "--no-peer" if args.no_peer else (
        peer_import("pystruct.learners")[1] or peer_import("pystruct.models")[1]
        if any(m.library == "pystruct" for m in methods) else None)
    pystruct_version = None if peer_import("pystruct")[0] is None else version("pystruct")
    run = {"datasets": {}}
    for name in args.datasets:
        run["datasets"][name] = run_dataset(name, methods, args, pystruct_missing)
        run.update({
            "passes": args.passes, "lbfgs_iter": args.lbfgs_iter,
            "cutting_plane_iter": args.cutting_plane_iter, "time_cap": args.time_cap,
            "machine": machine_summary(),
            "versions": {"skstruct": skstruct.__version__,
                         "scikit-learn": sklearn.__version__, "numba": version("numba"),
                         "numpy": np.__version__,
                         "pystruct": pystruct_version},
        })
        if output is not None:  # after every data set: a long run stopped early keeps them
            path = output / f"{STEM}.json"
            runs = record_run(path, args.label, merge_stored(path, args.label, run))
            (output / f"{STEM}.md").write_text(report(runs))
    print(report(runs) if output is not None else report({args.label: run}))
    return run


# --------------------------------------------------------------------------- report

def speedups(name, methods):
    """Lines comparing the pairwise models with pystruct.

    The side by side in two rows (equal regularization; each side tuned by the same
    held-out grid; one process, alternating) is ``bench_pystruct_pairwise_rows.py``'s:
    its stored rows are quoted when they exist. This benchmark's own pystruct row (C
    fixed at 0.1 beside skstruct's held-out choices, timed once) and the quoted
    reference fit (another run's time) are one row only: no speed ratio is drawn from
    them."""
    ref = PYSTRUCT_REFERENCE[name]
    lines = [f"Quoted figure for pystruct's pairwise SSVM (AD3) on {name}: example F1 "
             f"{ref['example_f1']:.3f} (its quoted fit time, {ref['fit_seconds']:g} s, "
             "comes from another run: no ratio is drawn from it). Example F1 of this "
             "table's pairwise models: " + ", ".join(
                 f"{key} {methods[key]['example_f1']:.4f}"
                 for key in ("hinge_exact_pairwise", "hinge_lp_map_pairwise",
                             "lp_sparsemap_pairwise")
                 if "example_f1" in methods.get(key, {})) + "."]
    rows = _pystruct_rows(name)
    if rows is None:
        lines.append(f"Speed against pystruct: not measured side by side on {name} "
                     "(`bench_pystruct_pairwise_rows.py --dataset "
                     f"{name}` measures it).")
        return lines
    lines += ["", f"Side by side in two rows (`pystruct_pairwise_rows_{name}.md`, "
              "`bench_pystruct_pairwise_rows.py`; one process, alternating; ratios: "
              "pystruct's time over skstruct's):", "",
              "| row | learner | regularization | example F1 | fit wall / CPU (s) | "
              "pystruct / skstruct, wall | pystruct / skstruct, CPU |",
              "|---|---|---|---|---|---|---|"]
    for row in rows:
        for side, r in row["sides"].items():
            reg = (f"C = {r['value']:g}" if side == "pystruct"
                   else f"alpha = {r['value']:.4g}")
            ratio = row["ratios"].get(side)
            ratios = (f"{ratio['wall']:.1f}x | {ratio['cpu']:.1f}x" if ratio else " | ")
            lines.append(f"| {row['row'].split(':')[0]} | {side} | {reg} | "
                         f"{r['example_f1']:.4f} | {r['wall_median']:.2f} / "
                         f"{r['cpu_median']:.2f} | {ratios} |")
    return lines


def _pystruct_rows(name):
    """The stored two-row comparison with pystruct on ``name`` (None when there is
    none), rows stored before the LP-SparseMAP learner read as the hinge's."""
    path = RESULTS / f"pystruct_pairwise_rows_{name}.json"
    if not path.exists():
        return None
    rows = []
    for run in json.loads(path.read_text()).get("runs", []):
        for row in run["rows"]:
            if "alone" in row:
                continue
            if "sides" not in row:
                row = {"row": row["row"],
                       "sides": {"hinge_lp_map_pairwise": row["skstruct"],
                                 "pystruct": row["pystruct"]},
                       "ratios": {"hinge_lp_map_pairwise": {"wall": row["wall_ratio"],
                                                            "cpu": row["cpu_ratio"]}}}
            else:
                names = {"hinge": "hinge_lp_map_pairwise",
                         "lp_sparsemap": "lp_sparsemap_pairwise"}
                row = {"row": row["row"],
                       "sides": {names.get(k, k): v for k, v in row["sides"].items()},
                       "ratios": {names.get(k, k): v for k, v in row["ratios"].items()}}
            rows.append(row)
    return rows or None


def report(runs):
    lines = [
        "# Multilabel classification: independent-label and pairwise models, beside "
        "pystruct's pairwise SSVM",
        "",
        "MULAN data sets, published train/test splits; dense features standardized on the "
        "training set, sparse binary ones (bibtex, tmc2007) as they are. Each method's "
        "regularization is chosen from its grid by the example-based F1 on a held-out 25 % "
        "of the training set (one-value grids: fixed), then refit on all of it; the time "
        "of that final fit, once, after the selection fits (or a warm-up fit), so numba "
        "compilation is not counted. Test-set measures from `skstruct.metrics`. Run from "
        "the peers' virtual environment: `~/.cache/skstruct-peers/peers-venv/bin/python "
        "benchmarks/bench_multilabel_pairwise.py` (the exact command of each row is in "
        "the notes). The machine (2 cores) was shared with other processes; the load "
        "averages are in the JSON file.",
        "",
    ]
    for label, run in runs.items():
        lines += [f"## {label}", ""]
        commands = {}
        for name, d in run.get("datasets", {}).items():
            lines += [
                f"### {name}: {d['n_train']} train / {d['n_test']} test, {d['n_features']} "
                f"{'sparse ' if d['sparse_features'] else ''}features, {d['n_labels']} "
                f"labels (cardinality {d['cardinality_train']:.2f})",
                "",
                "| method | chosen | example F1 | Hamming loss | subset accuracy | micro F1 "
                "| macro F1 | labels predicted per sample | fit, wall (s) | fit, CPU (s) "
                "| converged |",
                "|---|---|---|---|---|---|---|---|---|---|---|",
            ]
            for key, m in d["methods"].items():
                if "skipped" in m or "error" in m:
                    why = m.get("skipped") or m["error"]
                    kind = "not run" if "skipped" in m else "failed"
                    lines.append(f"| {m['label']} | {kind}: `{why[:120]}` "
                                 "| | | | | | | | | |")
                    continue
                commands.setdefault(m["command"], []).append(f"{name}/{key}")
                converged = "yes" if m["converged"] else "no"
                if m.get("time_capped"):
                    converged = f"no (stopped at the {m['time_cap_seconds']:g} s cap"
                    if "n_iter" in m:
                        converged += f" after {m['n_iter']} iterations"
                    if "final_duality_gap" in m:
                        converged += f", gap {m['final_duality_gap']:.2g}"
                    converged += ")"
                elif "n_iter" in m and "final_duality_gap" in m:
                    converged += (f" ({m['n_iter']} iterations, gap "
                                  f"{m['final_duality_gap']:.2g})")
                if "decoder_iterations" in m:
                    converged += f" ({m['decoder_iterations']} iterations)"
                lines.append(
                    f"| {m['label']} | {m['param']} = {m['value']:g} | {m['example_f1']:.4f} "
                    f"| {m['hamming_loss']:.4f} | {m['subset_accuracy']:.4f} | "
                    f"{m['micro_f1']:.4f} | {m['macro_f1']:.4f} | "
                    f"{m['mean_predicted_labels']:.2f} | {m['fit_seconds']:.1f} | "
                    f"{m['fit_cpu_seconds']:.1f} | {converged} |")
            if name in PYSTRUCT_REFERENCE:
                lines += [""] + speedups(name, d["methods"])
            capped = []
            for key, m in d["methods"].items():
                curve = m.get("objective_curve")
                if m.get("time_capped") and curve:
                    text = (f"- {key}, stopped at the {m['time_cap_seconds']:g} s cap: "
                            f"{len(curve)} iterations, objective from {curve[0]:.4g} to "
                            f"{curve[-1]:.4g} (smallest {min(curve):.4g})")
                    gaps = m.get("duality_gaps")
                    if gaps:
                        text += (f", duality gap last {gaps[-1]:.2g} (smallest "
                                 f"{min(gaps):.2g})")
                    capped.append(text + ".")
            if capped:
                lines += [""] + capped
            if "n_cooccurring_pairs" in d and any("cooccurring" in k
                                                  for k in d["methods"]):
                lines += ["", f"PAIR factors: all {d['n_label_pairs']:,} pairs of labels; "
                          f"the co-occurring rows {d['n_cooccurring_pairs']:,} (the pairs "
                          "both on in some training example)."]
            if name == "bibtex":
                lines += ["", "The LP-SparseMAP paper's bibtex figures (example F1, %; an "
                          "MLP encoder, ours linear): " + ", ".join(
                              f"{k} {v:.2f}" for k, v in PAPER_BIBTEX.items()) + "."]
            lines.append("")
        lines += [
            "Notes.",
            "",
            "- Example F1: mean over test samples of 2|T∩P| / (|T| + |P|), 1 when both "
            "sets are empty; Hamming loss: fraction of wrong (sample, label) entries; "
            "subset accuracy: fraction of samples with every label right; micro F1: F1 "
            "of all entries pooled; macro F1: mean of the per-label F1 (1 for a label "
            "neither true nor predicted on the test set).",
            f"- Grids: C in {{0.01, 0.1, 1}} (logistic regression), alpha in "
            f"{{0.1, 0.01, 0.001}} (SSVM, {run.get('passes')} BCFW passes, tol 1e-3), "
            f"alpha in {{0.01, 0.001, 0.0001}} (SparseMAP, at most {run.get('lbfgs_iter')} "
            "L-BFGS iterations, tol 1e-4); pystruct fixed at C = 0.1 (its example's "
            "value). Pairwise models: the hinge's alpha in {1, 0.1, 0.01}, cutting plane "
            f"with tol {PAIRWISE_HINGE_TOL:g} (pystruct's) and at most "
            f"{run.get('cutting_plane_iter')} decoder calls; the LP-SparseMAP loss's "
            "alpha in {0.01, 0.001, 0.0001}; on bibtex and tmc2007 one value (hinge "
            "0.01, LP-SparseMAP 0.001), each fit stopped after `--time-cap` seconds of "
            "wall time (said in the table, with the cap of that row, when it was; the "
            "objective and duality-gap curves of a capped fit are in the JSON file). "
            "*converged*: no ConvergenceWarning in the final fit, with the number of "
            "cutting-plane iterations and the last duality gap (pystruct: number of "
            "iterations of its cutting plane, cached and fresh).",
            "- The structured hinge with LP-MAP trains on the fractional LP solutions "
            "(the relaxed hinge, `hinge_lp_map_pairwise`) since skstruct's "
            "`FactorGraphDecoder` has had `loss_augmented=\"relaxed\"` as its default; "
            "the `hinge_lp_map_rounded` rows (LP solutions rounded at 1/2) measured "
            "before that came from commands that named `hinge_lp_map_pairwise`, which "
            "then meant the rounded model.",
            "- Commands: " + "; ".join(
                f"`{c}` ({', '.join(rows)})" for c, rows in commands.items()) + ".",
        ]
        loads = [m["load_average_1min"]["before"] for d in run.get("datasets", {}).values()
                 for m in d["methods"].values()
                 if (m.get("load_average_1min") or {}).get("before") is not None]
        if loads:
            lines.append(
                f"- The 1-minute load average of the 2-core machine before the timed fits "
                f"ranged from {min(loads):.1f} to {max(loads):.1f} (per row in the JSON "
                "file): at a load of 20 a niced process gets a small share of a core, so "
                "wall times are up to 20x the CPU times; the CPU times are the fairer "
                "comparison between rows measured at different loads.")
        versions = run.get("versions", {})
        machine = run.get("machine", {})
        lines += [
            f"- {machine.get('cpu')}, {machine.get('numba_threads')} numba threads. "
            f"Versions: {', '.join(f'{k} {v}' for k, v in versions.items() if v)}.",
            "",
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
