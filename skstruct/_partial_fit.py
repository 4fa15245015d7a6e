"""``partial_fit`` of the incremental learners: classes bookkeeping and the state that
carries from one call to the next.

A call validates one batch of examples, fixes on the first call what a model depends on
(the output kind, the classes, the number of features, the decoder and its feature map,
the task loss), runs one pass of the estimator's solver from the state the previous call
left (:class:`~skstruct.optim._registry.SolverSpec`: ``options["state"]``, or the
solver's declared ``initial_state`` after ``fit`` or another solver), and keeps the
state the solver returns for the next call. As in scikit-learn's
``SGDClassifier.partial_fit``, ``classes`` lists every label of the stream and is
required on the first call of the kinds whose classes are labels
(:attr:`~skstruct.outputs.OutputKind.classes_are_labels`: sequences, multiclass); a
batch may hold any subset of them. ``fit`` starts over; ``partial_fit``
after ``fit`` continues from the fitted model.
"""

import numpy as np

from ._structured_base import _check_container, _n_examples, _reject_token_dicts
from .optim import get_solver
from .utils._labels import check_label_types
from .utils._sequences import check_sample_weight_sequences

__all__ = ["PartialFitMixin", "PartialBatch"]


class PartialBatch:
    """One validated batch of ``partial_fit``.

    Attributes
    ----------
    first : bool
        Whether this call starts the model (no previous ``fit`` or ``partial_fit``).
    kind : OutputKind
    batch : SequenceBatch
    classes : ndarray or None
        The classes of the model (fixed by the first call).
    y_encoded : ndarray
        The outputs, encoded against ``classes``.
    sample_weight : ndarray of shape (n_examples,)
        The raw weights (ones by default); the solver normalizes them over the batch.
    """

    def __init__(self, first, kind, batch, classes, y_encoded, sample_weight):
        self.first, self.kind, self.batch = first, kind, batch
        self.classes, self.y_encoded, self.sample_weight = classes, y_encoded, sample_weight


def _as_classes(classes, name):
    """The sorted distinct labels of a ``classes`` argument (at least two)."""
    if isinstance(classes, (str, bytes)) or np.ndim(classes) != 1:
        raise ValueError(f"classes must be a 1-D array-like of labels in {name}.partial_fit;"
                         f" got {classes!r}.")
    check_label_types([classes], f" in the classes of {name}.partial_fit")
    unique = np.unique(np.asarray(classes))
    if unique.shape[0] < 2:
        raise ValueError(f"classes must hold at least 2 labels in {name}.partial_fit; got "
                         f"{unique.tolist()}.")
    return unique


def _encode(labels, classes, name):
    """Indices of ``labels`` in the sorted ``classes``; a ValueError names the labels
    outside them."""
    labels = np.asarray(labels)
    try:
        index = np.clip(np.searchsorted(classes, labels), 0, classes.shape[0] - 1)
        known = classes[index] == labels
    except TypeError:  # labels of another type than the classes
        index, known = None, np.zeros(labels.shape[0], dtype=bool)
    if not np.all(known):
        unseen = np.unique(labels[~np.asarray(known, dtype=bool)].astype(object)).tolist()
        raise ValueError(
            f"y contains labels {unseen[:10]} not in classes {classes.tolist()} of "
            f"{name}, fixed by the first call to partial_fit; pass every label of the "
            "stream as classes on the first call.")
    return index.astype(np.int64)


class PartialFitMixin:
    """``partial_fit`` plumbing for a :class:`~skstruct._linear_model.LinearStructuredModel`
    trained by a solver that continues on new data.

    The state a solver continues from lives in ``_partial_state``: a dict with the
    ``solver`` that left it, its ``state`` (see the solvers' ``state`` parameter) and
    ``seen_weight``, the total sample weight of the examples trained on so far. ``fit``
    sets it by :meth:`_reset_partial_state`; a solver change between calls continues
    from the current coefficients (:meth:`_solver_state`).
    """

    def _check_partial_fit_data(self, X, y, classes, sample_weight):
        """Validate one batch against the model of the previous calls.

        Returns
        -------
        PartialBatch
        """
        name = type(self).__name__
        first = not hasattr(self, "output_kind_")
        if y is None:
            raise ValueError(f"{name}.partial_fit requires y, but the target y is None.")
        if _n_examples(X) == 0:
            raise ValueError(f"X contains no examples in {name}.partial_fit; at least one "
                             "is required.")
        _check_container(X, "X", name)
        _check_container(y, "y", name)
        _reject_token_dicts(X, name)
        kind = self._output_kind(X, y)
        if not first:
            if kind.name != self.output_kind_:
                raise ValueError(
                    f"{name} was trained on {self.output_kind_} outputs, but the X and y "
                    f"given to partial_fit look like {kind.name} data ({kind.form}).")
            # the number of features and the column names, with scikit-learn's messages
            kind.check_prediction_data(X, self)
        if kind.classes_are_labels:
            batch, labels = kind.read_labels(X, y, name)
            if first:
                if classes is None:
                    raise ValueError(
                        f"classes must be passed on the first call to {name}.partial_fit: "
                        "every label of the stream (a batch may hold only some of them), "
                        "e.g. classes=np.unique(y_all).")
                model_classes = _as_classes(classes, name)
            else:
                model_classes = self.classes_
                _check_same_classes(classes, model_classes, name)
            y_encoded = _encode(labels, model_classes, name)
        else:
            batch, found, y_encoded = kind.check_training_data(X, y, name)
            model_classes = found if first else self.classes_
            _check_implicit_classes(kind, classes, found, model_classes, name)
        weights = check_sample_weight_sequences(sample_weight, batch.n_sequences)
        return PartialBatch(first, kind, batch, model_classes, y_encoded, weights)

    def _partial_model(self, part, needs):
        """(decoder, features): fixed by the first call (a new decoder from ``needs``,
        its feature map), else the fitted ones, checked against the batch's outputs."""
        if part.first:
            decoder = self._make_decoder(part.kind, needs, part.y_encoded, part.batch)
            return decoder, self._feature_map(part.kind, part.batch.n_features,
                                              part.classes, decoder)
        decoder = self.decoder_
        decoder.check_outputs(part.y_encoded, part.batch.output_offsets)
        decoder.check_training_memory(len(part.batch.output_offsets) - 1)
        return decoder, self._features()

    def _solver_state(self, solver, features, part):
        """The state ``solver`` continues from: the one the previous call left, else
        (first call, after ``fit``, or another solver before) one from the current
        coefficients."""
        if part.first:
            return {}
        kept = getattr(self, "_partial_state", None)
        if kept is not None and kept["solver"] == solver:
            return kept["state"]
        w = self._read_coefficients(self, part.kind, features)
        t = int(getattr(self, "t_", 0))
        return get_solver(solver).continue_from(
            w, t, 0.0 if kept is None else kept["seen_weight"])

    def _keep_partial_state(self, solver, result, part):
        seen = getattr(self, "_partial_state", None)
        seen = 0.0 if (part.first or seen is None) else seen["seen_weight"]
        self._partial_state = {"solver": solver, "state": result.extra["state"],
                               "seen_weight": seen + float(part.sample_weight.sum())}

    def _reset_partial_state(self, sample_weight):
        """After ``fit``: a later ``partial_fit`` continues from the fitted
        coefficients, weighing the fit's examples by their total weight."""
        self._partial_state = {"solver": None, "state": None,
                               "seen_weight": float(sample_weight.sum())}

    def _keep_training_state(self, run, result):
        """The hook of the fit sequence: ``partial_fit`` keeps the solver's state for the
        next call; ``fit`` starts the bookkeeping over."""
        if run.partial_fit:
            self._keep_partial_state(run.solver, result, run)
        else:
            self._reset_partial_state(run.sample_weight)


def _check_same_classes(classes, model_classes, name):
    if classes is None:
        return
    given = _as_classes(classes, name)
    if given.shape != model_classes.shape or not np.all(given == model_classes):
        raise ValueError(
            f"classes={given.tolist()} is not the same as on the first call to "
            f"{name}.partial_fit, which fixed {model_classes.tolist()}.")


def _check_implicit_classes(kind, classes, found, model_classes, name):
    """Kinds whose classes are not labels: none (trees, matchings; ``classes`` must be
    None) or fixed by the form of y (multilabel: the label columns)."""
    if found is None:
        if classes is not None:
            raise ValueError(f"{kind.name} outputs have no classes; pass classes=None to "
                             f"{name}.partial_fit.")
        return
    if classes is not None and not np.array_equal(np.asarray(classes), found):
        raise ValueError(
            f"classes must be None or the label indices {found.tolist()} for "
            f"{kind.name} outputs in {name}.partial_fit; got {classes!r}.")
    if model_classes is None or not np.array_equal(found, model_classes):
        raise ValueError(
            f"y has classes {found.tolist()} but {name} was trained on "
            f"{None if model_classes is None else model_classes.tolist()} by the first "
            "call to partial_fit.")
