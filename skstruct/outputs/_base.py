"""The output-kind interface and the registry the estimators consult."""

import numpy as np
import scipy.sparse as sp

from ..losses import CountingLoss, check_task_loss
from ..losses._base import check_task_loss_values
from ..metrics import token_accuracy
from ..utils._sequences import split_sequences

__all__ = [
    "LabelledRowsKind",
    "OutputKind",
    "get_output_kind",
    "infer_output_kind",
    "registered_output_kinds",
    "register_output_kind",
]


class OutputKind:
    """What the estimators need to know about one kind of structured output.

    An output kind turns the user's ``X`` and ``y`` into a batch and encoded outputs
    (and back), names the default decoder and feature map, stores and reads the fitted
    coefficients, shapes unary scores for the user and gives the default ``score``. The
    estimators keep the kind's :attr:`name` in ``output_kind_`` and look the kind up in
    the registry (:func:`get_output_kind`); they never switch on the name.

    Subclasses set :attr:`name` and :attr:`form` and implement the methods that raise
    ``NotImplementedError``; a kind is then available to every estimator once registered
    with :func:`register_output_kind`. See :doc:`/developers/output_kinds`.

    Methods take the estimator's name (for messages) or the fitted estimator itself
    (for its fitted attributes); a kind keeps no state.
    """

    #: The name estimators store in ``output_kind_``, e.g. ``"sequence"``.
    name = None
    #: The forms of ``X`` and ``y``, for error messages.
    form = ""
    #: True when the kind is chosen only by a decoder whose ``output_kind`` is this
    #: kind's name (trees: head arrays look like label sequences); False when
    #: :meth:`recognizes` picks it from the data when ``decoder=None``.
    chosen_by_decoder = False
    #: The ``output_kind`` a decoder must declare to decode this kind (default: its
    #: :attr:`name`); a kind that reuses another kind's decoders names that kind.
    decoder_kind = None
    #: Decoder operations that no decoder of this kind can provide, with the reason
    #: (an estimator whose training needs one of them rejects the kind saying why).
    intractable_operations = {}
    #: Whether ``classes_`` holds the labels found in ``y`` (sorted), which
    #: :meth:`read_labels` reads as given: ``partial_fit`` then needs every label of the
    #: stream on its first call. False for kinds without classes (trees) and for kinds
    #: whose classes the form of ``y`` fixes (multilabel: the label columns).
    classes_are_labels = False
    #: Whether the unary weights are one per (feature, label) pair (``coef_`` of shape
    #: (n_outputs, n_features)), so that ``feature_label_pairs="seen"`` can keep only the
    #: pairs that occur in training (:meth:`row_labels`, :meth:`pack_unary`).
    has_label_pairs = False
    #: Whether the marginals of the unary parts form one (n_samples, n_outputs) array,
    #: the form of scikit-learn's ``predict_proba`` (tabular kinds); otherwise they are
    #: one array per example (``predict_marginals``).
    tabular_probabilities = False
    #: What one example of this kind is called in messages, plural ("sequences").
    example_noun = "examples"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "decoder_kind" not in cls.__dict__ and "name" in cls.__dict__:
            cls.decoder_kind = cls.name

    def __repr__(self):
        return f"{type(self).__name__}()"

    # -- recognizing -----------------------------------------------------------------

    def recognizes(self, X, y):
        """True when ``X`` and ``y`` have this kind's form.

        Data-chosen kinds are tried newest registration first, so a new kind can claim a
        form that an older kind would otherwise take. A decoder-chosen kind may
        recognize its data too, so that ``decoder=None`` says which decoder to pass.
        """
        return False

    def check_data_form(self, X, y, estimator):
        """Raise a ``ValueError`` saying what to change when ``X`` and ``y`` were recognized
        as this kind but do not fit together (called before any other check)."""

    # -- data ------------------------------------------------------------------------

    def check_training_data(self, X, y, estimator):
        """Validate and encode training data.

        Parameters
        ----------
        X, y
            As given to ``fit``.
        estimator : str
            The estimator's name, for messages.

        Returns
        -------
        batch : SequenceBatch
            The features stacked batch-first; ``batch.output_offsets`` delimits every
            example's encoded outputs.
        classes : ndarray or None
            The sorted labels (or label indices), None for kinds without classes.
        y_encoded : ndarray
            The encoded outputs, as the decoder reads them.
        """
        raise NotImplementedError

    def read_labels(self, X, y, estimator):
        """Validate training data of a kind whose classes are labels, without encoding it.

        Called instead of :meth:`check_training_data` where the classes come from
        elsewhere (``partial_fit``'s ``classes``), so that ``y`` may hold a single class.
        Only kinds with :attr:`classes_are_labels` implement it.

        Returns
        -------
        batch : SequenceBatch
        labels : ndarray of shape (n_rows,)
            The label of every row of ``batch.X``, as given in ``y``.
        """
        raise NotImplementedError(
            f"{type(self).__name__} has no labels to read: its classes_are_labels is False."
        )

    def check_prediction_data(self, X, fitted):
        """Validate ``X`` against the fitted estimator ``fitted``; return the batch."""
        raise NotImplementedError

    def decode(self, encoded, batch, classes):
        """The encoded outputs of ``batch`` in the user's form (what ``predict`` returns)."""
        raise NotImplementedError

    def decode_one(self, encoded, classes):
        """One example's encoded output in the user's form."""
        raise NotImplementedError

    def unary_to_user(self, unary, batch):
        """Unary scores or marginals of ``batch`` in the user's form
        (``decision_function``, ``predict_marginals``)."""
        raise NotImplementedError

    def unary_to_decision(self, unary, batch):
        """What ``decision_function`` returns from the unary scores of ``batch``.

        The default is :meth:`unary_to_user`; a kind overrides it when its decision
        function is not the unary scores themselves (multiclass with two classes: one
        score per sample). Marginals and probabilities keep :meth:`unary_to_user`.
        """
        return self.unary_to_user(unary, batch)

    # -- model -----------------------------------------------------------------------

    def default_decoder(self):
        """The decoder used when ``decoder=None``."""
        raise NotImplementedError

    def feature_map(self, n_features, classes):
        """The linear feature map from weights to this kind's part scores."""
        raise NotImplementedError

    def store_coefficients(self, fitted, features, w):
        """Set the fitted coefficient attributes (``coef_``, ...) of ``fitted`` from the
        flat parameters ``w``."""
        raise NotImplementedError

    def coefficients(self, fitted, features):
        """The flat parameter vector from the fitted attributes of ``fitted``."""
        raise NotImplementedError

    def coefficient_parts(self, fitted):
        """The fitted attributes as the parts of ``features.unpack(w)``, in its order, for
        ``features.scores_of_parts`` (prediction without forming w); None when the kind
        has no such reading (the default)."""
        return None

    def row_labels(self, y_encoded, n_outputs):
        """Which outputs every feature row carries, for the kinds with
        :attr:`has_label_pairs`.

        Parameters
        ----------
        y_encoded : ndarray
            The encoded outputs of the training data.
        n_outputs : int
            Number of classes or labels.

        Returns
        -------
        scipy.sparse matrix of shape (n_rows, n_outputs)
            Entry [r, k] is 1 when row r of ``batch.X`` has label k, else 0.
        """
        raise NotImplementedError(
            f"{type(self).__name__} has no (feature, label) pairs: its has_label_pairs is "
            "False."
        )

    def pack_unary(self, features, unary):
        """The flat parameters of ``features`` with unary weights ``unary``
        (n_features, n_outputs) and every other part (transitions, intercepts) zero,
        for the kinds with :attr:`has_label_pairs`."""
        raise NotImplementedError(
            f"{type(self).__name__} has no (feature, label) pairs: its has_label_pairs is "
            "False."
        )

    def log_marginals(self, decoder, scores):
        """The logarithm of the unary marginals (``predict_log_proba``).

        The default takes the log of ``decoder.marginals``; a kind overrides it where a
        closed form avoids the underflow (multiclass: θ_k − log Z).
        """
        with np.errstate(divide="ignore"):
            return np.log(decoder.marginals(scores)[1].unary)

    # -- task losses and scoring -----------------------------------------------------

    def bind_task_loss(self, loss, classes):
        """The task loss ``loss`` (a name or a TaskLoss) ready for this kind's outputs.

        The default checks it and binds a counting loss to the classes (all classes but
        its ``outside_label`` are positive).
        """
        task_loss = check_task_loss(loss, "loss")
        if isinstance(task_loss, CountingLoss):
            return task_loss.bind(classes)
        return task_loss

    def check_task_loss(self, task_loss, y, batch, classes):
        """Checks of a task loss on the gold outputs before training (default: none)."""

    def check_training_memory(self, task_loss, decoder, features, batch, y, w):
        """Raise before training when loss-augmented inference on some training example
        would not fit in memory (default: no check)."""

    def score(self, y, y_pred, sample_weight=None):
        """The default ``score`` of estimators: a float, higher is better."""
        raise NotImplementedError


_REGISTRY = {}


def register_output_kind(kind, *, replace=False):
    """Make an output kind available to every estimator.

    Parameters
    ----------
    kind : subclass of OutputKind
        The class; one instance is registered under ``kind.name``.
    replace : bool, default=False
        Replace a kind registered under the same name (keeping its place in the order
        in which kinds recognize data) instead of raising.

    Returns
    -------
    kind
        The class itself, so that this works as a class decorator.
    """
    if not (isinstance(kind, type) and issubclass(kind, OutputKind)):
        raise TypeError(
            f"register_output_kind takes a subclass of OutputKind; got {kind!r}."
        )
    if not isinstance(kind.name, str) or not kind.name:
        raise ValueError(f"{kind.__name__}.name must be a non-empty string; got {kind.name!r}.")
    if kind.name in _REGISTRY and not replace:
        raise ValueError(
            f"An output kind named {kind.name!r} is already registered "
            f"({type(_REGISTRY[kind.name]).__name__}); pass replace=True to replace it."
        )
    try:
        instance = kind()
    except TypeError as exc:
        raise TypeError(
            f"register_output_kind instantiates {kind.__name__} without arguments (a kind "
            f"keeps no state), which failed: {exc}"
        ) from None
    _REGISTRY[kind.name] = instance  # a replaced kind keeps its place in the order
    return kind


def registered_output_kinds():
    """The names of the registered output kinds, in order of registration."""
    return tuple(_REGISTRY)


def get_output_kind(name):
    """The registered output kind named ``name``.

    Raises
    ------
    ValueError
        When no kind of that name is registered.
    """
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"No output kind named {name!r} is registered (registered: "
            f"{', '.join(_REGISTRY)}); import the module that registers it with "
            "skstruct.outputs.register_output_kind."
        ) from None


def infer_output_kind(X, y):
    """The output kind whose form ``X`` and ``y`` have, newest registration first.

    Returns
    -------
    OutputKind or None
    """
    for kind in reversed(_REGISTRY.values()):
        if kind.recognizes(X, y):
            return kind
    return None


class PairScoredKind(OutputKind):
    """A kind whose parts (arcs, row-column pairs) are scored by one weight vector.

    Fitted attribute ``coef_`` (n_features,): a part with features x scores x · coef_.
    The default score is the fraction of tokens (rows) given their right head (column).
    """

    def store_coefficients(self, fitted, features, w):
        fitted.coef_ = np.array(features.unpack(w), dtype=np.float64)

    def coefficients(self, fitted, features):
        return features.pack(fitted.coef_)

    def score(self, y, y_pred, sample_weight=None):
        return token_accuracy(y, y_pred, sample_weight=sample_weight)


def encode_labels(y_flat, estimator):
    """Sorted classes and int64 class indices of labels; at least two classes."""
    classes, y_encoded = np.unique(y_flat, return_inverse=True)
    if classes.shape[0] < 2:
        raise ValueError(
            f"{estimator} needs samples of at least 2 classes in the data, but the data "
            f"contains only one class: {classes.tolist()}."
        )
    return classes, y_encoded.astype(np.int64)


def class_index_rows(y_encoded, n_outputs):
    """The (n_rows, n_outputs) sparse one-hot matrix of class indices, one per row
    (:meth:`OutputKind.row_labels` of the kinds with one class per token or sample)."""
    y_encoded = np.asarray(y_encoded, dtype=np.int64)
    n_rows = y_encoded.shape[0]
    return sp.csr_matrix((np.ones(n_rows), (np.arange(n_rows), y_encoded)),
                         shape=(n_rows, n_outputs))


def check_task_loss_on_gold(task_loss, y, offsets, n_states):
    """Δ(y, y) = 0 and non-negative per-token costs, checked once before training.

    Catches a user's loss that breaks Δ ≥ 0 before any solver relies on it (the solvers
    also check every Δ they compute). Outputs are one class per token (sequences,
    multiclass).
    """
    if task_loss.decomposition == "parts":  # first: it checks class costs against n_states
        check_task_loss_values(task_loss.unary_costs(y, offsets, n_states), task_loss,
                               "unary_costs", shape=(y.shape[0], n_states))
    n_examples = offsets.shape[0] - 1
    on_gold = task_loss(y, y, offsets)
    check_task_loss_values(on_gold, task_loss, "values on the gold outputs",
                           shape=(n_examples,))
    if np.any(on_gold != 0):
        raise ValueError(f"{task_loss!r} is not 0 on the gold outputs; Δ(y, y) must be 0.")
    if n_examples == y.shape[0] and task_loss.decomposition != "counts":
        # Multiclass: one token an example, so Δ(a, b) for every pair of classes is cheap.
        gold = np.repeat(np.arange(n_states), n_states)
        pred = np.tile(np.arange(n_states), n_states)
        check_task_loss_values(task_loss(gold, pred, np.arange(n_states**2 + 1)),
                               task_loss, "values", shape=(n_states**2,))


def split_blocks(unary, offsets, shapes):
    """Split a stacked flat array into one ``shapes[i]`` matrix per example.

    Parameters
    ----------
    unary : ndarray of shape (Σ_i r_i c_i,) (any shape; it is raveled)
    offsets : ndarray of shape (n_examples + 1,)
        Cumulative r_i c_i.
    shapes : ndarray of shape (n_examples, 2)

    Returns
    -------
    list of ndarray of shape (r_i, c_i)
    """
    blocks = np.split(np.asarray(unary).reshape(-1), offsets[1:-1])
    return [block.reshape(r, c) for block, (r, c) in zip(blocks, shapes, strict=True)]


class LabelledRowsKind(OutputKind):
    """A kind with one label per row, the rows of every example stacked (sequences,
    graphs): ``classes_`` are the labels found in ``y``, read by :meth:`read_labels` and
    encoded by :func:`encode_labels`; outputs and unary scores go back to the user as one
    array per example."""

    classes_are_labels = True

    def check_training_data(self, X, y, estimator):
        batch, labels = self.read_labels(X, y, estimator)
        classes, y_encoded = encode_labels(labels, estimator)
        return batch, classes, y_encoded

    def decode(self, encoded, batch, classes):
        return split_sequences(classes[encoded], batch.offsets)

    def decode_one(self, encoded, classes):
        return classes[np.asarray(encoded)]

    def unary_to_user(self, unary, batch):
        return split_sequences(unary, batch.offsets)
