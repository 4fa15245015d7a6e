"""Bit-for-bit fingerprints of a fixed list of fits, to show that a change of the code's
layout leaves every fitted model unchanged.

A reorganization that only moves code (modules into sub-packages, names re-exported) must
not change a single bit of what the estimators learn. This script fits a fixed list of
small models, one per learner and kind of output, and fingerprints everything each fitted
estimator exposes:

- every public fitted attribute (a name ending in ``_``) that is a numeric numpy array
  (``coef_``, ``intercept_``, ``transition_``, ``start_transition_``,
  ``end_transition_``, ``objective_curve_``, ``duality_gaps_``, ``oracle_calls_``, ...):
  the SHA-256 of its bytes, its dtype and shape, summary numbers (sum, Euclidean norm,
  largest absolute value) and a sample of its entries (evenly spaced ones and the largest
  in absolute value, exact);
- every scalar, string, non-numeric array or dictionary of scalars among them
  (``n_iter_``, ``beta_``, ``classes_``, ``decoder_calls_``, ...), exactly;
- the final objective (the last entry of ``objective_curve_``) and the predictions on a
  few held-out examples (their SHA-256), so that the decoders' prediction paths are
  covered too.

Fits (:data:`FITS`; each a few seconds to a minute on one core with a warm numba cache):

``crf_conll2000``
    ``CRF`` (L-BFGS, exactly 30 iterations) on the first 1,000 training sentences of
    CoNLL-2000 chunking, the tutorial token features (``sentences_to_features`` +
    ``SequenceVectorizer``).
``ssvm_bcfw_letters``, ``ssvm_cutting_plane_letters``
    ``StructuredSVM`` on the OCR letters (fold 0, chain outputs): block-coordinate
    Frank-Wolfe with averaging, 30 passes (the gap after every pass), and the one-slack
    cutting plane, at most 50 iterations; ``random_state=0``.
``sparsemap_tree_ewt``
    ``SparseMAPClassifier(decoder=TreeDecoder())`` (30 L-BFGS iterations) on 300
    sentences of at most 20 words of UD English EWT (train), ``ArcVectorizer`` features
    hashed to 2**16.
``hinge_lp_map_pairwise_yeast``, ``lp_sparsemap_pairwise_yeast``
    The pairwise multilabel models of ``bench_multilabel_pairwise.py`` on the first 300
    training rows of yeast (standardized): ``StructuredSVM`` with a
    ``FactorGraphDecoder(FactorGraph.pairwise(14))`` (relaxed LP-MAP hinge, cutting
    plane, tol 0.01, at most 15 iterations) and ``SparseMAPClassifier`` with the same
    graph (LP-SparseMAP loss, 30 L-BFGS iterations).
``perturbed_map_yeast``
    ``PerturbedMAPClassifier`` with its default training (the pseudo-likelihood of the
    Hamming-1 neighbourhoods, preconditioned L-BFGS), exactly 20 iterations (``tol=0``),
    on the whole yeast training set (standardized).

Every run uses one thread: ``NUMBA_NUM_THREADS`` and the BLAS thread counts are set to 1
before numpy and numba are imported, so that the floating-point reductions happen in one
order and two runs of the same code give the same bits.

Usage::

    python benchmarks/check_fit_identity.py --write benchmarks/results/fit_identity.json
    python benchmarks/check_fit_identity.py --check benchmarks/results/fit_identity.json

``--write`` records the fingerprints (with ``--only``, updates those fits and keeps the
others); ``--check`` fits again and reports, per fit, ``identical`` or what differs (for an
array: the largest absolute difference over the recorded entries, and over all entries when
``--arrays`` names the ``.npz`` file that ``--write --arrays`` saved), and exits with status
1 when anything differs. ``--only NAME`` (repeatable) runs some of the fits, ``--list``
names them. To record the reference on a committed version of the package, run the script
with that version first on ``PYTHONPATH`` (``skstruct`` is imported from there; the JSON
file says which package was used).
"""

import os

# Before numpy and numba are imported: one thread everywhere, so that results are
# bit-for-bit reproducible.
for _variable in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                  "MKL_NUM_THREADS", "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
    os.environ[_variable] = "1"

import argparse  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from datetime import date  # noqa: E402
from functools import lru_cache  # noqa: E402
from importlib.metadata import version  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Callable  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

import skstruct  # noqa: E402
from skstruct import (  # noqa: E402
    CRF,
    PerturbedMAPClassifier,
    SparseMAPClassifier,
    StructuredSVM,
)
from skstruct.datasets import (  # noqa: E402
    load_conll2000,
    load_letters,
    load_multilabel,
    load_ud_english_ewt,
)
from skstruct.decoders import FactorGraph, FactorGraphDecoder, TreeDecoder  # noqa: E402
from skstruct.preprocessing import (  # noqa: E402
    ArcVectorizer,
    SequenceVectorizer,
    sentences_to_features,
)

sys.path.insert(0, str(Path(__file__).parent))
from _report import code_version, command_line, machine_summary  # noqa: E402

#: Entries of each array kept in the JSON file: this many evenly spaced ones and this many
#: of the largest absolute values.
N_SAMPLED = 16
#: Held-out examples whose predictions are fingerprinted.
N_PREDICTED = 50


def log(text):
    print(text, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- data

@lru_cache(maxsize=None)
def conll2000(n_train=1000):
    """Vectorized features and tags of the first ``n_train`` training sentences and of the
    first :data:`N_PREDICTED` test sentences."""
    train, test = load_conll2000("train"), load_conll2000("test")
    vectorizer = SequenceVectorizer()
    X = vectorizer.fit_transform(sentences_to_features(train.words[:n_train],
                                                       train.pos[:n_train]))
    X_test = vectorizer.transform(sentences_to_features(test.words[:N_PREDICTED],
                                                        test.pos[:N_PREDICTED]))
    return X, list(train.target[:n_train]), X_test


@lru_cache(maxsize=None)
def letters():
    """Fold 0 of the OCR letters (training) and the first words of fold 1 (held out)."""
    data = load_letters()
    X = [x for x, fold in zip(data.data, data.folds) if fold == 0]
    y = [t for t, fold in zip(data.target, data.folds) if fold == 0]
    X_test = [x for x, fold in zip(data.data, data.folds) if fold == 1][:N_PREDICTED]
    return X, y, X_test


@lru_cache(maxsize=None)
def treebank(n_train=300, max_words=20):
    """Arc features and heads of the first ``n_train`` EWT training sentences of at most
    ``max_words`` words, and of the first dev sentences of that length (held out)."""
    train = [s for s in load_ud_english_ewt("train") if len(s["head"]) <= max_words]
    dev = [s for s in load_ud_english_ewt("dev") if len(s["head"]) <= max_words]
    train, dev = train[:n_train], dev[:N_PREDICTED]
    vectorizer = ArcVectorizer(n_features=2**16).fit(train)
    heads = [s["head"] for s in train]
    return vectorizer.transform(train), heads, vectorizer.transform(dev)


@lru_cache(maxsize=None)
def yeast(n_train=None):
    """Standardized yeast features (the first ``n_train`` training rows, or all) and 0/1
    label matrices; the first test rows held out."""
    train, test = load_multilabel("yeast"), load_multilabel("yeast", "test")
    X, y = train.data[:n_train], np.asarray(train.target[:n_train], dtype=int)
    scaler = StandardScaler().fit(X)
    return scaler.transform(X), y, scaler.transform(test.data[:N_PREDICTED])


# --------------------------------------------------------------------------- fits

@dataclass
class Fit:
    """One fingerprinted fit.

    Parameters
    ----------
    name : str
        Key in the results (``--only``).
    label : str
        What it is, for the report.
    estimator : callable
        ``estimator() -> unfitted estimator``.
    data : callable
        ``data() -> (X, y, X_test)``: training inputs and outputs, held-out inputs.
    """

    name: str
    label: str
    estimator: Callable
    data: Callable


def _pairwise_decoder(n_labels, **kw):
    """All label pairs, the ADMM stopped at residuals 1e-4 or 200 iterations (as in
    ``bench_multilabel_pairwise.py``)."""
    return FactorGraphDecoder(FactorGraph.pairwise(n_labels), max_iter=200, tol=1e-4, **kw)


FITS = [
    Fit("crf_conll2000",
        "CRF, L-BFGS, 30 iterations (tol=0), alpha=1e-4, all (feature, label) pairs; "
        "CoNLL-2000, first 1,000 training sentences",
        lambda: CRF(alpha=1e-4, feature_label_pairs="all", max_iter=30, tol=0.0),
        conll2000),
    Fit("ssvm_bcfw_letters",
        "StructuredSVM, BCFW with averaging, 30 passes (tol=0), alpha=0.01, "
        "random_state=0, the duality gap after every pass (check_gap_every=1, so that "
        "the curves are those recorded before the parameter existed; the model does "
        "not depend on it); OCR letters fold 0 (626 words)",
        lambda: StructuredSVM(solver="bcfw", alpha=0.01, max_iter=30, tol=0.0,
                              random_state=0, check_gap_every=1),
        letters),
    Fit("ssvm_cutting_plane_letters",
        "StructuredSVM, one-slack cutting plane, at most 50 iterations, alpha=0.01, "
        "random_state=0; OCR letters fold 0 (626 words)",
        lambda: StructuredSVM(solver="cutting_plane", alpha=0.01, max_iter=50,
                              random_state=0),
        letters),
    Fit("sparsemap_tree_ewt",
        "SparseMAPClassifier(decoder=TreeDecoder()), L-BFGS, 30 iterations, alpha=1e-2; "
        "UD EWT train, 300 sentences of at most 20 words, ArcVectorizer(2**16)",
        lambda: SparseMAPClassifier(decoder=TreeDecoder(), alpha=1e-2, max_iter=30),
        treebank),
    Fit("hinge_lp_map_pairwise_yeast",
        "StructuredSVM(FactorGraphDecoder(FactorGraph.pairwise(14))), relaxed LP-MAP "
        "hinge, cutting plane, tol=0.01, at most 15 iterations, alpha=0.1; yeast, first "
        "300 training rows",
        lambda: StructuredSVM(_pairwise_decoder(14), solver="cutting_plane", alpha=0.1,
                              tol=0.01, max_iter=15),
        lambda: yeast(300)),
    Fit("lp_sparsemap_pairwise_yeast",
        "SparseMAPClassifier(decoder=FactorGraphDecoder(FactorGraph.pairwise(14), "
        "decision='marginals')), LP-SparseMAP loss, L-BFGS, 30 iterations, alpha=1e-3; "
        "yeast, first 300 training rows",
        lambda: SparseMAPClassifier(decoder=_pairwise_decoder(14, decision="marginals"),
                                    alpha=1e-3, max_iter=30),
        lambda: yeast(300)),
    Fit("perturbed_map_yeast",
        "PerturbedMAPClassifier (defaults: pseudo-likelihood, L-BFGS), 20 iterations, "
        "tol=0, random_state=0; yeast, all 1,500 training rows",
        lambda: PerturbedMAPClassifier(max_iter=20, tol=0.0, random_state=0),
        yeast),
]


# --------------------------------------------------------------------------- fingerprints

def _exact(value):
    """A JSON value that round-trips ``value`` exactly (floats by ``repr``, which Python's
    JSON writer uses; NaN and infinities as strings)."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if np.isfinite(value) else repr(value)
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return {str(k): _exact(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_exact(v) for v in value]
    raise TypeError(type(value).__name__)


def _is_plain(value):
    try:
        _exact(value)
        return True
    except TypeError:
        return False


def array_fingerprint(a):
    """SHA-256 of the bytes, dtype, shape, summary numbers and sampled exact entries of a
    numeric array."""
    a = np.ascontiguousarray(a)
    record = {"sha256": hashlib.sha256(a.tobytes()).hexdigest(), "dtype": a.dtype.str,
              "shape": list(a.shape)}
    flat = a.ravel().astype(np.float64)
    if flat.size:
        finite = flat[np.isfinite(flat)]
        record.update({"sum": _exact(finite.sum()), "norm": _exact(np.linalg.norm(finite)),
                       "max_abs": _exact(np.abs(finite).max() if finite.size else np.nan),
                       "n_nonzero": int(np.count_nonzero(flat)),
                       "n_nonfinite": int(flat.size - finite.size)})
        spaced = np.linspace(0, flat.size - 1, min(N_SAMPLED, flat.size)).astype(np.intp)
        largest = np.argsort(-np.abs(np.nan_to_num(flat)), kind="stable")[:N_SAMPLED]
        index = np.unique(np.concatenate([spaced, largest]))
        record["sample"] = {"index": index.tolist(),
                            "value": _exact(a.ravel()[index].tolist())}
    return record


def _is_numeric_array(value):
    return isinstance(value, np.ndarray) and value.dtype.kind in "biuf"


def fitted_attributes(model):
    """The public fitted attributes of ``model`` (names ending in ``_``), by name."""
    found = {}
    for name in sorted(dir(model)):
        if name.startswith("_") or not name.endswith("_") or name.endswith("__"):
            continue
        try:
            found[name] = getattr(model, name)
        except Exception:  # a property that does not apply to this fit
            continue
    return found


def predictions_fingerprint(predicted):
    """SHA-256 of the held-out predictions (one array per example, or one array)."""
    blocks = predicted if isinstance(predicted, list) else [predicted]
    digest = hashlib.sha256()
    for block in blocks:
        block = np.ascontiguousarray(np.asarray(block))
        if block.dtype.kind == "O":
            digest.update(json.dumps(block.tolist()).encode())
        else:
            digest.update(f"{block.dtype.str}{block.shape}".encode())
            digest.update(block.tobytes())
    return digest.hexdigest()


def fingerprint(model, X_test):
    """Arrays (fingerprinted), other attributes (exact) and predictions of a fitted model;
    also the arrays themselves, for ``--arrays``."""
    arrays, values, skipped, raw = {}, {}, [], {}
    for name, value in fitted_attributes(model).items():
        if _is_numeric_array(value):
            arrays[name], raw[name] = array_fingerprint(value), np.array(value)
        elif isinstance(value, np.ndarray):
            values[name] = {"dtype": value.dtype.str, "shape": list(value.shape),
                            "value": _exact(value.tolist())}
        elif _is_plain(value):
            values[name] = _exact(value)
        else:
            skipped.append(name)
    curve = getattr(model, "objective_curve_", None)
    final = _exact(np.asarray(curve)[-1]) if curve is not None and len(curve) else None
    predicted = model.predict(X_test)
    return {"arrays": arrays, "values": values, "final_objective": final,
            "n_iter": values.get("n_iter_"),
            "predictions_sha256": predictions_fingerprint(predicted),
            "not_compared": skipped}, raw


def run_fit(fit):
    """Fit one entry of :data:`FITS`; return its record and its arrays."""
    tic = time.perf_counter()
    X, y, X_test = fit.data()
    data_seconds = time.perf_counter() - tic
    model = fit.estimator()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        tic, cpu = time.perf_counter(), time.process_time()
        model.fit(X, y)
        seconds, cpu = time.perf_counter() - tic, time.process_time() - cpu
    record, raw = fingerprint(model, X_test)
    record.update({"label": fit.label, "estimator": repr(model), "n_train": len(y),
                   "fit_seconds": round(seconds, 3), "fit_cpu_seconds": round(cpu, 3),
                   "data_seconds": round(data_seconds, 3)})
    return record, raw


# --------------------------------------------------------------------------- comparison

def _sample_difference(reference, new_values):
    """Largest absolute difference over the recorded entries of an array."""
    index = np.asarray(reference["sample"]["index"], dtype=np.intp)
    old = np.array([float(v) for v in reference["sample"]["value"]])
    return float(np.max(np.abs(new_values.ravel()[index].astype(np.float64) - old)))


def compare(reference, record, raw, stored_arrays=None):
    """The differences between a recorded fit and a new one, as lines (empty: identical)."""
    problems = []
    old_arrays, new_arrays = reference["arrays"], record["arrays"]
    for name in sorted(set(old_arrays) | set(new_arrays)):
        if name not in new_arrays:
            problems.append(f"{name}: missing (recorded {old_arrays[name]['dtype']} "
                            f"{tuple(old_arrays[name]['shape'])})")
            continue
        if name not in old_arrays:
            problems.append(f"{name}: not in the reference (new attribute)")
            continue
        old, new = old_arrays[name], new_arrays[name]
        if (old["sha256"], old["dtype"], old["shape"]) == (new["sha256"], new["dtype"],
                                                          new["shape"]):
            continue
        if old["shape"] != new["shape"] or old["dtype"] != new["dtype"]:
            problems.append(f"{name}: dtype/shape {old['dtype']} {tuple(old['shape'])} -> "
                            f"{new['dtype']} {tuple(new['shape'])}")
            continue
        text = f"{name}: bytes differ"
        key = f"{reference['_name']}/{name}"
        if stored_arrays is not None and key in stored_arrays:
            full = np.max(np.abs(raw[name].astype(np.float64)
                                 - stored_arrays[key].astype(np.float64)))
            text += f", max abs difference {full:.3g} (all entries)"
        elif "sample" in old:
            text += (f", max abs difference {_sample_difference(old, raw[name]):.3g} over "
                     f"the {len(old['sample']['index'])} recorded entries")
        for summary in ("sum", "norm", "max_abs"):
            if old.get(summary) != new.get(summary):
                text += f"; {summary} {old.get(summary)!r} -> {new.get(summary)!r}"
        problems.append(text)
    old_values, new_values = reference["values"], record["values"]
    for name in sorted(set(old_values) | set(new_values)):
        if old_values.get(name) != new_values.get(name):
            problems.append(f"{name}: {_short(old_values.get(name))} -> "
                            f"{_short(new_values.get(name))}")
    if reference["predictions_sha256"] != record["predictions_sha256"]:
        problems.append("held-out predictions differ")
    return problems


def _short(value, width=100):
    text = json.dumps(value)
    return text if len(text) <= width else text[:width] + "..."


# --------------------------------------------------------------------------- main

def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Fit a fixed list of small models and record (--write) or compare "
                    "(--check) the SHA-256 of every fitted array.")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", metavar="JSON", type=Path,
                      help="record the fingerprints in this file")
    mode.add_argument("--check", metavar="JSON", type=Path,
                      help="fit again and compare with this file; exit 1 if any differs")
    mode.add_argument("--list", action="store_true", help="name the fits and stop")
    parser.add_argument("--only", metavar="NAME", action="append",
                        choices=[fit.name for fit in FITS],
                        help="run this fit only (repeatable)")
    parser.add_argument("--arrays", metavar="NPZ", type=Path,
                        help="with --write, also save the fitted arrays to this .npz file; "
                             "with --check, read them from it to report the largest "
                             "difference over all entries")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.list:
        for fit in FITS:
            print(f"{fit.name}: {fit.label}")
        return 0
    fits = [fit for fit in FITS if not args.only or fit.name in args.only]
    reference = None
    if args.check:
        reference = json.loads(args.check.read_text())
        missing = [fit.name for fit in fits if fit.name not in reference["fits"]]
        if missing:
            sys.exit(f"{args.check} has no record of {', '.join(missing)}")
    stored_arrays = None
    if args.check and args.arrays:
        stored_arrays = dict(np.load(args.arrays))

    log(f"skstruct {skstruct.__version__} from {Path(skstruct.__file__).parent}")
    records, arrays, differing = {}, {}, []
    total = time.perf_counter()
    for fit in fits:
        record, raw = run_fit(fit)
        records[fit.name] = record
        arrays.update({f"{fit.name}/{name}": value for name, value in raw.items()})
        status = ""
        if reference is not None:
            old = dict(reference["fits"][fit.name], _name=fit.name)
            problems = compare(old, record, raw, stored_arrays)
            if problems:
                differing.append(fit.name)
            status = (": identical" if not problems
                      else ": DIFFERS\n    " + "\n    ".join(problems))
        print(f"{fit.name} ({record['fit_seconds']:.1f} s, n_iter_={record['n_iter']})"
              f"{status}", flush=True)
    total = time.perf_counter() - total

    if args.write:
        previous = {}
        if args.only and args.write.exists():
            previous = json.loads(args.write.read_text()).get("fits", {})
        merged = {fit.name: records.get(fit.name, previous.get(fit.name)) for fit in FITS}
        output = {
            "description": "SHA-256 fingerprints of fitted models "
                           "(benchmarks/check_fit_identity.py)",
            "date": date.today().isoformat(),
            "command": command_line("benchmarks/check_fit_identity.py"),
            "code_version": code_version(skstruct),
            "skstruct": skstruct.__version__,
            "versions": {name: version(name) for name in ("numpy", "scipy", "numba",
                                                          "scikit-learn")},
            "machine": machine_summary(),
            "threads": {name: os.environ[name] for name in ("NUMBA_NUM_THREADS",
                                                            "OMP_NUM_THREADS",
                                                            "OPENBLAS_NUM_THREADS")},
            "total_seconds": round(total, 1),
            "fits": {name: record for name, record in merged.items() if record is not None},
        }
        args.write.parent.mkdir(parents=True, exist_ok=True)
        args.write.write_text(json.dumps(output, indent=1) + "\n")
        log(f"wrote {args.write} ({total:.1f} s)")
        if args.arrays:
            if args.only and args.arrays.exists():
                kept = {key: value for key, value in np.load(args.arrays).items()
                        if key.split("/")[0] not in args.only}
                arrays = {**kept, **arrays}
            np.savez_compressed(args.arrays, **arrays)
            log(f"wrote {args.arrays}")
        return 0

    print(f"{len(fits) - len(differing)} of {len(fits)} fits identical to {args.check} "
          f"(recorded at {reference.get('code_version')}); {total:.1f} s")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
