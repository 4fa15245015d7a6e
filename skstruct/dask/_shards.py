"""What runs on the workers: one partition of a Dask collection validated once, kept in
the worker's memory as a shard, and evaluated at the weights the client sends.

Every function here takes and returns plain objects (numpy arrays, the package's own
classes) so that it runs in any worker process that can import skstruct. The client
(:mod:`skstruct.dask._estimators`) never receives a partition's features: only the
summaries of :func:`summarize`, the (feature, label) pairs of :func:`seen_pairs_of` and
the sums of :func:`value_and_gradient` and :func:`perceptron_epoch`.
"""

import sys

import numpy as np
import scipy.sparse as sp

from .._elastic_net import seen_pairs
from .._partial_fit import _encode
from ..optim import RegularizedRisk, run_solver
from ..utils._parallel import n_jobs_threads
from ..utils._sequences import check_sample_weight_sequences

__all__ = ["PartitionError", "RawShard", "Shard"]


class PartitionError(ValueError):
    """A partition of the training collection could not be read or trained on.

    The message names the partition (its index in the collection, from 0) and the
    error it raised, with that error's type; ``partition`` holds the index.
    """

    def __init__(self, message, partition=None):
        super().__init__(message)
        self.partition = partition

    def __reduce__(self):
        return (type(self), (str(self), self.partition))


def _named(index, n_partitions, what, error):
    return PartitionError(
        f"partition {index} (of {n_partitions}) of the training collection failed "
        f"{what}: {type(error).__name__}: {error}", index)


def _guard(what):
    """Run the wrapped worker function; any error becomes a PartitionError naming the
    partition (the function's second argument is its index, the third their number)."""
    def wrap(function):
        def run(first, index, n_partitions, *args, **kwargs):
            try:
                return function(first, index, n_partitions, *args, **kwargs)
            except PartitionError:
                raise
            except Exception as error:  # noqa: BLE001 - re-raised with the partition named
                raise _named(index, n_partitions, what, error) from error
        run.__name__ = run.__qualname__ = function.__name__
        run.__doc__ = function.__doc__
        return run
    return wrap


def _stack_rows(rows):
    if any(sp.issparse(row) for row in rows):
        return sp.vstack([sp.csr_matrix(row) for row in rows], format="csr")
    return np.vstack([np.asarray(row) for row in rows])


def _inputs(elements, paired):
    """The inputs of a partition's items: their first members when ``paired``."""
    elements = list(elements)
    if not paired:
        return elements
    pairs = [tuple(item) for item in elements]
    if any(len(pair) != 2 for pair in pairs):
        raise ValueError("the collection's items must be (x, y) pairs when y is not "
                         "given separately.")
    return [pair[0] for pair in pairs]


@_guard("the vocabulary pass")
def vocabulary_tokens(elements, index, n_partitions, paired):
    """The distinct features of a partition's token feature dicts, one small token per
    feature (``{key: value}`` for a string feature ``"key=value"``, ``{key: 1}`` for a
    numeric one), in the order of their first appearance in the partition.

    A :class:`~skstruct.preprocessing.SequenceVectorizer` fitted on these tokens of all
    partitions, concatenated in partition order, learns the vocabulary, and the columns,
    of one fitted on the whole collection (sorted, or with ``sort=False`` in order of
    first appearance).
    """
    from itertools import chain

    from ..preprocessing._sequence_vectorizer import _learn_vocabulary

    sequences = _inputs(elements, paired)
    _, by_value, by_key = _learn_vocabulary(chain.from_iterable(sequences), False)
    firsts = [(column, {key: value}) for key, inner in by_value.items()
              for value, column in inner.items()]
    firsts += [(column, {key: 1}) for key, column in by_key.items()]
    firsts.sort(key=lambda pair: pair[0])
    return [token for _, token in firsts]


def partition_data(elements, labels, weights, vectorizer):
    """(X, y, sample_weight) of one partition, in the forms a local ``fit`` takes.

    ``elements`` holds the partition's items: (x, y) pairs when ``labels`` is None,
    else the inputs alone, with ``labels`` the partition of the labels' collection.
    A 1-D ``x`` is a row of tabular data (the rows are stacked into a matrix, their
    labels into a 1-D array or, for 0/1 rows, an indicator matrix); anything else is one
    example of a list (a (n_tokens, n_features) sequence, a tree's arc features, ...).
    ``vectorizer`` (or None) turns sequences of token feature dicts into matrices.
    """
    elements = list(elements)
    if labels is None:
        pairs = [tuple(item) for item in elements]
        if any(len(pair) != 2 for pair in pairs):
            raise ValueError("the collection's items must be (x, y) pairs when y is not "
                             "given separately.")
        xs = [pair[0] for pair in pairs]
        ys = [pair[1] for pair in pairs]
    else:
        xs, ys = elements, list(labels)
        if len(xs) != len(ys):
            raise ValueError(f"the partition holds {len(xs)} inputs but {len(ys)} labels; "
                             "X and y must be partitioned alike.")
    if weights is not None:
        weights = list(weights)
        if len(weights) != len(xs):
            raise ValueError(f"the partition holds {len(xs)} examples but {len(weights)} "
                             "sample weights; X and sample_weight must be partitioned "
                             "alike.")
        weights = np.asarray(weights, dtype=np.float64)
    if vectorizer is not None:
        xs = vectorizer.transform(xs)
    if xs and np.ndim(xs[0]) == 1 and not sp.issparse(xs[0]):
        X = _stack_rows(xs)
        y = np.asarray(ys)
        return X, y, weights
    return xs, ys, weights


class RawShard:
    """One partition validated by the estimator's own checks, its labels not yet encoded
    (the classes are those of all partitions).

    Attributes
    ----------
    index : int
        The partition's position in the collection.
    kind : OutputKind
    batch : SequenceBatch
    labels : ndarray or None
        Kinds whose classes are labels: the label of every row, as given.
    found : ndarray or None
        Other kinds: the classes the outputs fix (multilabel: the label indices), or None.
    y_encoded : ndarray or None
        Other kinds: the outputs encoded.
    sample_weight : ndarray of shape (n_examples,)
    """

    def __init__(self, index, kind, batch, labels, found, y_encoded, sample_weight):
        self.index, self.kind, self.batch = index, kind, batch
        self.labels, self.found, self.y_encoded = labels, found, y_encoded
        self.sample_weight = sample_weight

    def __sizeof__(self):
        return _nbytes(self.batch.X) + _nbytes(self.labels) + _nbytes(self.y_encoded) + 256


def _nbytes(array):
    if array is None:
        return 0
    if sp.issparse(array):
        return int(array.data.nbytes + array.indices.nbytes + array.indptr.nbytes)
    return int(getattr(array, "nbytes", sys.getsizeof(array)))


@_guard("validation")
def read_partition(parts, index, n_partitions, estimator, vectorizer):
    """The :class:`RawShard` of one partition, or None when it is empty.

    ``parts`` is (items, labels, weights) of the partition (labels and weights None when
    not given separately); ``estimator`` an unfitted local estimator whose checks run.
    """
    elements, labels, weights = parts
    X, y, weights = partition_data(elements, labels, weights, vectorizer)
    if len(X) == 0 if isinstance(X, list) else X.shape[0] == 0:
        return None
    name = type(estimator).__name__
    kind = estimator._output_kind(X, y)
    weights = check_sample_weight_sequences(weights, len(X) if isinstance(X, list)
                                            else X.shape[0])
    if kind.classes_are_labels:
        batch, row_labels = kind.read_labels(X, y, name)
        return RawShard(index, kind, batch, np.asarray(row_labels), None, None,
                        np.asarray(weights, dtype=np.float64))
    batch, found, y_encoded = kind.check_training_data(X, y, name)
    return RawShard(index, kind, batch, None, found, y_encoded,
                    np.asarray(weights, dtype=np.float64))


def summarize(raw):
    """What the client learns of a partition: its kind, number of features and
    examples, total sample weight and classes (labels, or the classes its outputs fix)."""
    if raw is None:
        return None
    classes = np.unique(raw.labels) if raw.labels is not None else raw.found
    return {"kind": raw.kind.name, "n_features": raw.batch.n_features,
            "n_examples": raw.batch.n_sequences, "weight": float(raw.sample_weight.sum()),
            "classes": classes, "labels": raw.kind.classes_are_labels,
            "partitions": [raw.index]}


def merge_summaries(a, b):
    """Two summaries as one (a tree reduction's step); disagreements raise, naming the
    partitions."""
    if a is None or b is None:
        return b if a is None else a
    for key, what in (("kind", "kind of outputs"), ("n_features", "number of features")):
        if a[key] != b[key]:
            raise ValueError(
                f"partitions {a['partitions'][0]} and {b['partitions'][0]} disagree on the "
                f"{what}: {a[key]!r} and {b[key]!r}.")
    if a["classes"] is None or b["classes"] is None:
        classes = None if a["classes"] is None and b["classes"] is None else "mixed"
        if classes == "mixed":
            raise ValueError("some partitions have classes and others not.")
    elif a["labels"]:
        try:
            classes = np.union1d(a["classes"], b["classes"])
        except TypeError as error:
            raise ValueError(
                f"partitions {a['partitions'][0]} and {b['partitions'][0]} hold labels of "
                f"different types: {error}") from error
    else:
        if not np.array_equal(a["classes"], b["classes"]):
            raise ValueError(
                f"partitions {a['partitions'][0]} and {b['partitions'][0]} have outputs "
                f"of different classes: {a['classes'].tolist()} and "
                f"{b['classes'].tolist()}.")
        classes = a["classes"]
    return {"kind": a["kind"], "n_features": a["n_features"],
            "n_examples": a["n_examples"] + b["n_examples"],
            "weight": a["weight"] + b["weight"], "classes": classes,
            "labels": a["labels"], "partitions": a["partitions"] + b["partitions"]}


def _encoded(raw, classes, name):
    if raw.labels is not None:
        return _encode(raw.labels, classes, name)
    return raw.y_encoded


@_guard("the count of (feature, label) pairs")
def seen_pairs_of(raw, index, n_partitions, classes):
    """The (n_features, n_classes) boolean matrix of the pairs seen in the partition."""
    y = _encoded(raw, classes, "the estimator")
    return seen_pairs(raw.batch.X, y, len(classes), raw.kind)


def either(a, b):
    """Elementwise or of two seen-pair matrices (a tree reduction's step)."""
    return a | b


class Shard:
    """A partition ready to train on: its :class:`~skstruct.optim.RegularizedRisk`
    (the estimator's feature map, decoder and training loss; no L2 term) and its share
    ``scale`` = Σ_{i ∈ partition} s_i / Σ_i s_i of the total sample weight, so that the
    sum over partitions of ``scale * risk.value_and_gradient(w)`` is the data term of the
    whole collection."""

    def __init__(self, index, risk, scale):
        self.index, self.risk, self.scale = index, risk, scale

    def __sizeof__(self):
        return (_nbytes(self.risk.batch.X) + _nbytes(self.risk.y)
                + 8 * self.risk.n_examples + 256)


@_guard("building its training objective")
def make_shard(raw, index, n_partitions, spec):
    """The :class:`Shard` of a :class:`RawShard`: outputs encoded against the classes of
    all partitions, checked against the decoder, the risk built."""
    name = spec["name"]
    y = _encoded(raw, spec["classes"], name)
    decoder = spec["decoder"]
    decoder.check_outputs(y, raw.batch.output_offsets)
    decoder.check_training_memory(raw.batch.n_sequences)
    risk = RegularizedRisk(spec["features"], raw.batch, y, decoder, spec["loss"], 0.0,
                           raw.sample_weight)
    return Shard(index, risk, float(raw.sample_weight.sum()) / spec["total_weight"])


@_guard("evaluating the objective")
def value_and_gradient(shard, index, n_partitions, w, threads=None):
    """The partition's share of the data term and of its gradient at ``w``, its kernels
    on ``threads`` threads (None: numba's current number)."""
    with n_jobs_threads(threads):
        value, gradient = shard.risk.value_and_gradient(w)
    return shard.scale * value, shard.scale * gradient


def add(a, b):
    """The sum of two (value, gradient) pairs, or of two perceptron epochs' results."""
    return tuple(x + y for x, y in zip(a, b))


@_guard("its perceptron pass")
def perceptron_epoch(shard, index, n_partitions, w, seed, n_jobs, averaging, shuffle):
    """One perceptron pass over the partition from ``w`` (the solver ``"perceptron"`` of
    the local estimator, ``max_iter=1``): (raw iterate, averaged iterate of the pass,
    mistakes, examples), the iterates as the arrays the mixing sums."""
    result = run_solver("perceptron", shard.risk, w,
                        dict(max_iter=1, averaging=averaging, random_state=seed,
                             shuffle=shuffle, state={}), n_jobs=n_jobs)
    raw = np.asarray(result.extra["state"]["w"], dtype=np.float64)
    mistakes = float(result.objective_curve[0]) * shard.risk.n_examples
    return raw, np.asarray(result.w, dtype=np.float64), mistakes
