"""The interface every decoder implements."""

from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator

from ..losses._base import TaskLoss, check_task_loss_values
from ..losses._task import _task_losses, check_task_loss
from ..utils._capabilities import check_capability

__all__ = [
    "Decoder",
    "InfeasibleOutputError",
    "check_capability",
    "check_encoded_outputs",
    "check_feasible",
    "check_k",
    "check_offsets",
    "check_score_array",
    "check_slack_gold",
    "check_part_scores",
    "check_task_loss_argument",
    "keeps_operations",
    "no_exact_loss_augmented_map",
]


class InfeasibleOutputError(ValueError):
    """Some examples of a batch have no feasible output: every output scores -inf.

    A part score of -inf forbids the part. When the forbidden parts leave an example
    with no output of finite score (a chain token whose states all score -inf, a row
    of a matching whose every pair is forbidden, ...), ``log_partition`` returns -inf
    for it and the operations that must return an output or a distribution (``map``,
    ``top_k``, ``marginals``, ``loss_augmented_map``) raise this error.

    Attributes
    ----------
    examples : ndarray of shape (n_infeasible,), int64
        Indices, within the batch, of the examples without a feasible output.
    """

    def __init__(self, message, examples):
        super().__init__(message)
        self.examples = np.asarray(examples, dtype=np.int64)


def _list_indices(indices, limit=10):
    shown = ", ".join(str(int(i)) for i in indices[:limit])
    return shown + (f" and {indices.size - limit} more" if indices.size > limit else "")


def check_feasible(best, example="example"):
    """Raise :class:`InfeasibleOutputError` for the examples whose best score is -inf.

    Parameters
    ----------
    best : ndarray of shape (n_examples,)
        The best output score (or the log-partition) of every example of a batch.
    example : str, default="example"
        What an example is called ("sequence", "sentence"), for the message.
    """
    infeasible = np.flatnonzero(np.asarray(best) == -np.inf)
    if infeasible.size:
        which = (f"{example} {infeasible[0]} of the batch has" if infeasible.size == 1 else
                 f"{example}s {_list_indices(infeasible)} of the batch have")
        raise InfeasibleOutputError(
            f"No feasible output: {which} no output with a finite score (every output "
            "contains a part scored -inf). log_partition returns -inf for it; drop it or "
            "give some of its forbidden parts a finite score.",
            infeasible,
        )


def check_slack_gold(gold, example="example"):
    """Raise a clear ``ValueError`` when slack rescaling meets a gold output scored -inf.

    Slack rescaling weighs Δ(y_true, y) by 1 + θ_y − θ_{y_true}, which is undefined when
    y_true contains a forbidden part.

    Parameters
    ----------
    gold : ndarray of shape (n_examples,)
        θ_{y_true} of every example.
    example : str, default="example"
    """
    bad = np.flatnonzero(np.asarray(gold) == -np.inf)
    if bad.size:
        raise ValueError(
            f"y_true of {example} {bad[0]} contains a part scored -inf (a forbidden part), "
            "so its score is -inf and slack rescaling, which weighs the loss by "
            "1 + θ_y − θ_{y_true}, is undefined; use rescaling='margin' or give the gold "
            "parts a finite score."
        )


def check_part_scores(values, name, *, owner, offsets=None, example="example",
                      allow_minus_inf=True):
    """Raise a clear ``ValueError`` when part scores hold NaN or +inf.

    -inf forbids a part and is accepted unless ``allow_minus_inf`` is False. One
    vectorized reduction in the common case (``max`` propagates NaN).

    Parameters
    ----------
    values : ndarray of float64
        Scores of one kind (unary, transition, arc, ...).
    name : str
        Their name in the message ("unary", "transition", "arc", ...).
    owner : str
        The container, for the message.
    offsets : ndarray of shape (n_examples + 1,), default=None
        When given, example ``i`` owns ``values.ravel()[offsets[i]:offsets[i + 1]]`` and
        the message names the first example with a bad score.
    example : str, default="example"
        What an example is called, for the message.
    allow_minus_inf : bool, default=True
    """
    if values.size == 0:
        return
    if allow_minus_inf:
        if values.max() < np.inf:
            return
    elif np.isfinite(values).all():
        return
    flat = values.reshape(-1)
    kinds = [("NaN", np.isnan(flat)), ("+inf", np.isposinf(flat))]
    if not allow_minus_inf:
        kinds.append(("-inf", np.isneginf(flat)))
    found = [kind for kind, mask in kinds if mask.any()]
    first = int(np.argmax(np.logical_or.reduce([mask for _, mask in kinds])))
    if offsets is not None:
        where = f" of {example} {np.searchsorted(offsets, first, side='right') - 1}"
    elif values.ndim > 1:
        index = tuple(int(i) for i in np.unravel_index(first, values.shape))
        where = f" (first at index {index})"
    else:
        where = f" (first at index {first})"
    rule = ("-inf forbids a part; NaN and +inf are not allowed" if allow_minus_inf else
            "they must be finite: use a large negative score to rule a part out")
    raise ValueError(
        f"{owner}: the {name} scores{where} contain {' and '.join(found)}; part scores "
        f"are real numbers or -inf ({rule})."
    )


def check_encoded_outputs(y, offsets, high, *, low=0, shape=None, name="y",
                          example="example", unit=None, expected="a state {low} .. {high}",
                          whole_floats=False):
    """Validate encoded outputs stacked over ``offsets``; return them as int64.

    The one check of outputs given to a decoder (``parts``, ``score_outputs``, the
    ``y_true`` of loss-augmented MAP and cost augmentation): the shape matches the
    scores, the values are integers, and every entry lies in ``low .. high``.

    Parameters
    ----------
    y : array-like
        Encoded outputs.
    offsets : ndarray of shape (n_examples + 1,), int
        Example ``i`` owns entries ``y.ravel()[offsets[i]:offsets[i + 1]]``.
    high : int or ndarray of shape (offsets[-1],)
        The largest valid value, overall or per entry.
    low : int, default=0
        The smallest valid value.
    shape : tuple, default=None
        Expected shape of ``y``; ``(offsets[-1],)`` by default.
    name : str, default="y"
    example : str, default="example"
        What an example is called, for the messages.
    unit : str, default=None
        What an entry is called within its example ("token", "row"), for the messages.
    expected : str, default="a state {low} .. {high}"
        What a valid entry is; formatted with ``low`` and the entry's ``high``.
    whole_floats : bool, default=False
        Accept a float array whose values are whole numbers.

    Returns
    -------
    ndarray of int64, of shape ``shape``
    """
    y = np.asarray(y)
    n_entries = int(offsets[-1])
    shape = (n_entries,) if shape is None else tuple(shape)
    n_examples = offsets.shape[0] - 1
    if y.shape != shape:
        per = f"one per {unit} of" if unit else "one per"
        raise ValueError(
            f"{name} has shape {y.shape}; expected {shape}: {per} the {n_examples} "
            f"{example}{'' if n_examples == 1 else 's'} of the scores ({n_entries} in all), "
            "stacked."
        )
    if y.size and not (np.issubdtype(y.dtype, np.integer) or y.dtype == bool):
        whole = whole_floats and np.issubdtype(y.dtype, np.floating) and np.all(
            np.isfinite(y) & (y == np.round(y)))
        if not whole:
            raise ValueError(
                f"{name} must hold encoded outputs (integers); got dtype {y.dtype}."
            )
    y = y.astype(np.int64)
    flat = y.reshape(-1)
    if flat.size == 0 or (flat.min() >= low and np.all(flat <= high)):
        return y
    bad = np.flatnonzero((flat < low) | (flat > high))
    t = int(bad[0])
    i = int(np.searchsorted(offsets, t, side="right") - 1)
    index = ", ".join(str(int(j)) for j in np.unravel_index(t, shape))
    where = f"{unit} {t - offsets[i]} of {example} {i}" if unit else f"{example} {i}"
    top = high if np.ndim(high) == 0 else np.asarray(high).reshape(-1)[t]
    raise ValueError(
        f"{name}[{index}] = {flat[t]} ({where}) is out of range: expected "
        f"{expected.format(low=low, high=top)}."
    )


def check_score_array(values, name, *, owner, ndim, layout):
    """``values`` as a C-contiguous float64 array of ``ndim`` dimensions, or a clear error.

    Parameters
    ----------
    values : array-like
        Part scores given to a score container.
    name : str
        Their name ("unary", "transition", ...), for the message.
    owner : str
        The container, for the message.
    ndim : int
        The number of dimensions they must have.
    layout : str
        What the dimensions are ("(n_tokens, n_states)"), for the message.
    """
    try:
        array = np.asarray(values)
        if np.iscomplexobj(array):
            raise TypeError
        array = np.ascontiguousarray(array, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            f"{owner}: {name} scores must be an array of real numbers {layout}; got "
            f"{type(values).__name__}"
            f"{' of dtype ' + str(np.asarray(values).dtype) if hasattr(values, 'dtype') else ''}."
        ) from None
    if array.ndim != ndim:
        raise ValueError(
            f"{owner}: {name} has shape {array.shape}, but {name} must be {ndim}-D "
            f"{layout}."
        )
    return array


def check_offsets(offsets, n_entries=None, *, owner, example="example", unit="token",
                  entries="unary rows"):
    """Validate the offsets of a batch: 1-D integers from 0, increasing; return int64.

    Example ``i`` owns entries ``offsets[i]:offsets[i + 1]``: at least one, so offsets
    strictly increase. Every score container with offsets checks them here.

    Parameters
    ----------
    offsets : array-like of shape (n_examples + 1,)
    n_entries : int, default=None
        When given, the last offset must equal it (the offsets cover every entry).
    owner : str
        The container or function, for the message.
    example, unit : str
        What an example and an entry are called ("sequence", "token"), for the messages.
    entries : str
        What ``n_entries`` counts, for the message.

    Returns
    -------
    ndarray of shape (n_examples + 1,), int64
    """
    array = np.asarray(offsets)
    if array.ndim != 1 or array.shape[0] < 1:
        raise ValueError(
            f"{owner}: offsets must be 1-D, of shape (n_{example}s + 1,): {example} i owns "
            f"{unit}s offsets[i]:offsets[i + 1]; got shape {array.shape}."
        )
    if not np.issubdtype(array.dtype, np.integer):
        raise ValueError(
            f"{owner}: offsets must be integers (the first {unit} of every {example}, "
            f"then the total); got dtype {array.dtype}."
        )
    array = np.ascontiguousarray(array, dtype=np.int64)
    if array[0] != 0:
        raise ValueError(f"{owner}: offsets must start at 0; got {array[0]}.")
    steps = np.diff(array)
    if steps.size and steps.min() <= 0:
        i = int(np.argmax(steps <= 0))
        if steps.min() < 0:
            i = int(np.argmax(steps < 0))
            raise ValueError(
                f"{owner}: offsets must be non-decreasing (cumulative {example} lengths); "
                f"offsets[{i}] = {array[i]} > offsets[{i + 1}] = {array[i + 1]}."
            )
        raise ValueError(
            f"{owner}: every {example} needs at least one {unit}; {example} {i} has none "
            f"(empty {example}: offsets[{i}] = offsets[{i + 1}] = {array[i]})."
        )
    if n_entries is not None and array[-1] != n_entries:
        raise ValueError(
            f"{owner}: offsets must start at 0 and end at the number of {entries} "
            f"({n_entries}); the last offset is {array[-1]}."
        )
    return array


def check_k(k, name="k"):
    """``k`` as an int, or a clear error unless it is an integer >= 1 (not a bool, a
    string or a float)."""
    if isinstance(k, Integral) and not isinstance(k, (bool, np.bool_)) and k >= 1:
        return int(k)
    if isinstance(k, Integral) and not isinstance(k, (bool, np.bool_)):
        raise ValueError(f"{name} must be an integer >= 1; got {k}.")
    raise TypeError(f"{name} must be an integer >= 1; got {k!r} ({type(k).__name__}).")


def check_task_loss_argument(task_loss):
    """The :class:`~skstruct.losses.TaskLoss` a decoder operation was given, by object or
    by name (``"hamming"``, ...), or a ``TypeError`` naming what is accepted."""
    if isinstance(task_loss, TaskLoss):
        return task_loss
    if isinstance(task_loss, str):
        return check_task_loss(task_loss, name="task_loss")
    raise TypeError(
        f"task_loss must be a TaskLoss or one of the names {sorted(_task_losses())}; got "
        f"{type(task_loss).__name__}."
    )


def no_exact_loss_augmented_map(decoder, task_loss, rescaling, supported, remedy):
    """The ``ValueError`` of a decoder with no exact loss-augmented MAP for a task loss.

    Parameters
    ----------
    decoder : Decoder
    task_loss : TaskLoss
    rescaling : str or callable
    supported : str
        What the decoder supports, for the message.
    remedy : str
        What to implement for the loss to be supported, for the message.
    """
    name = type(decoder).__name__
    if not (callable(rescaling) or rescaling in ("margin", "slack")):
        return ValueError(
            f"{name} has no exact loss-augmented MAP for {type(task_loss).__name__} with "
            f"rescaling={rescaling!r}: rescaling must be 'margin', 'slack' or a callable."
        )
    return ValueError(
        f"{name} has no exact loss-augmented MAP for {type(task_loss).__name__} with "
        f"rescaling={rescaling!r}. It supports {supported}. {remedy} Or use "
        "BruteForceDecoder, which enumerates every output, on tiny problems."
    )


#: The operations that define a family's outputs and its loss-augmented MAP: a compiled
#: or closed-form solver of the family answers for them, so a subclass that redefines one
#: of them gets the generic path instead (see :func:`keeps_operations`).
FAMILY_OPERATIONS = ("map", "parts", "score_outputs", "top_k", "loss_augmented_map",
                     "cost_augmented", "_cost_augmented", "_counting_form",
                     "_count_augmented_map", "_zero_one_augmented_map")


def keeps_operations(decoder, family, names=FAMILY_OPERATIONS):
    """Whether ``decoder`` (an instance of ``family`` or of a subclass) keeps the
    ``family``'s own ``names`` operations: a family's fast solver may answer for it.

    Parameters
    ----------
    decoder : Decoder
    family : type
        The built-in decoder class whose solver would answer.
    names : tuple of str, default=FAMILY_OPERATIONS
    """
    kind = type(decoder)
    return all(getattr(kind, name, None) is getattr(family, name, None) for name in names)


#: The class and parameter values last validated, by decoder id (the decoder's state is
#: left alone). Validity depends on the class and the values only, and the values are
#: held here, so an id reused by another decoder with the very same values is valid too.
_VALIDATED = {}


def _trusted(cls, **attributes):
    """A score container of class ``cls`` with ``attributes`` already validated.

    For sub-batches of checked scores (``take``): no copy and no second check.
    """
    scores = cls.__new__(cls)
    scores.__dict__.update(attributes)
    return scores


class Decoder(BaseEstimator):
    """Base class of decoders: inference over one family of structured outputs.

    A decoder knows one output family (chains, multilabel sets, trees, ...) and nothing
    about features. It receives *part scores* in the family's score container and answers
    inference questions about the distribution or the argmax they define. The operations a
    decoder supports are listed in its ``capabilities``:

    ``"map"``
        :meth:`map`: the highest-scoring output of every example.
    ``"marginals"``
        :meth:`log_partition` and :meth:`marginals`: log Σ_y exp θ_y and the expected part
        indicators E_p[a_y] under p(y) ∝ exp θ_y.
    ``"top_k"``
        :meth:`top_k`: the ``k`` best distinct outputs, sorted by score.
    ``"loss_augmented_map"``
        :meth:`loss_augmented_map`: argmax_y θ_y + Δ(y_true, y) for a task loss Δ (margin
        rescaling) or argmax_y Δ(y_true, y) (1 + θ_y − θ_{y_true}) (slack rescaling).
    ``"parts"``
        :meth:`parts` and :meth:`score_outputs`: the indicator vector a_y of given outputs
        and their scores θ_y = ⟨η, a_y⟩.
    ``"sample_uniform"``
        :meth:`sample_uniform`: independent draws from the uniform distribution over the
        valid outputs of every example (the outputs of finite score).
    ``"neighbours"``
        :meth:`neighbours`: the valid outputs at Hamming distance 1 .. k from given
        outputs (the positions of the encoded output whose value differs).

    Outputs are *encoded*: integer states ``0 .. n_states - 1``, stacked batch-first.
    Decoders are scikit-learn estimators only so that their hyper-parameters are reachable
    with ``get_params`` / ``set_params`` (``decoder__param`` in a grid search); they hold
    no fitted state.

    Part scores are real numbers or -inf, which forbids a part: an output that contains
    a forbidden part scores -inf and is never returned by ``map``, listed by ``top_k``
    or chosen by ``loss_augmented_map``. The built-in score containers reject NaN and
    +inf when they are built (:func:`check_part_scores`), so every operation is covered.
    An example whose outputs all score -inf has ``log_partition`` -inf, and ``map``,
    ``top_k``, ``marginals`` and ``loss_augmented_map`` raise
    :class:`InfeasibleOutputError` naming it (:func:`check_feasible`). Encoded outputs
    given to ``parts``, ``score_outputs``, ``cost_augmented`` and ``loss_augmented_map``
    must fit the scores: the right shape, integers, every state in range
    (:func:`check_encoded_outputs`).

    Loss-augmented MAP has one default, :meth:`loss_augmented_map`, built on what the
    task loss declares (:attr:`~skstruct.losses.TaskLoss.decomposition`): a family
    implements only the hooks it can answer exactly (``_cost_augmented``,
    ``_counting_form``, ``_count_augmented_map``, ``_zero_one_augmented_map``,
    ``_unsupported_loss``), never a check of the loss's type. :meth:`sparsemap` (the
    active set by default) and :meth:`compiled_oracle` (None by default) are operations a
    family may replace with its own solver.
    """

    #: The operations this decoder answers (a subset of the names above).
    capabilities = frozenset()
    #: The kind of outputs it decodes, as estimators name them ("sequence", "multiclass",
    #: "multilabel", "tree", "matching"); None for decoders of several families.
    output_kind = None
    #: The score containers it reads (a class or a tuple of classes); None accepts any.
    #: Every public operation of a built-in decoder checks its scores against them.
    score_types = None
    #: True when :meth:`cost_augmented` scores every output exactly θ_y + Δ(y_true, y)
    #: (no constant per example), so that the margin-rescaled hinge of a
    #: part-decomposable loss is one MAP score (``StructuredHingeLoss.values``).
    exact_cost_augmentation = False
    #: What an example is called in messages ("sequence", "sentence", ...).
    _example_name = "example"
    _parameter_constraints: dict = {}

    def _check_params(self):
        """Validate the hyper-parameters once per parameter state (about 1 µs after the
        first call; ``set_params`` or an assignment is validated at the next operation)."""
        constraints = self._parameter_constraints
        if not constraints:
            return
        attributes = self.__dict__
        seen = _VALIDATED.get(id(self))
        if seen is not None and seen[0] is type(self):
            for name, value in seen[1]:
                if attributes.get(name) is not value:
                    break
            else:
                return
        self._validate_params()
        if len(_VALIDATED) >= 1024:
            _VALIDATED.clear()
        _VALIDATED[id(self)] = (type(self), tuple(
            (name, attributes.get(name)) for name in constraints))

    def _check_scores(self, scores):
        """Raise a ``TypeError`` unless ``scores`` is a container this decoder reads, and
        validate the hyper-parameters; return ``scores``. Called by every public
        operation: a few microseconds at most."""
        types = self.score_types
        if types is not None and not isinstance(scores, types):
            if isinstance(types, type):
                types = (types,)
            expected = " or ".join(t.__name__ for t in types)
            raise TypeError(
                f"{type(self).__name__} takes {expected}; got {type(scores).__name__}."
            )
        self._check_params()
        return scores

    def _unsupported(self, capability):
        raise NotImplementedError(
            f"{type(self).__name__} does not implement {capability!r}; its capabilities are "
            f"{sorted(self.capabilities)}."
        )

    def map(self, scores, *, return_score=False):
        """Highest-scoring output of every example."""
        self._unsupported("map")

    def log_partition(self, scores):
        """log Σ_y exp θ_y for every example."""
        self._unsupported("marginals")

    def marginals(self, scores):
        """Log-partition and expected part indicators of every example."""
        self._unsupported("marginals")

    def top_k(self, scores, k):
        """The ``k`` best distinct outputs of every example."""
        self._unsupported("top_k")

    def loss_augmented_map(self, scores, y_true, task_loss, rescaling="margin"):
        """argmax_y H(θ_y, Δ(y_true, y)) for every example, exactly.

        Margin rescaling maximizes θ_y + Δ(y_true, y); slack rescaling maximizes
        Δ(y_true, y) (1 + θ_y − θ_{y_true}). The default reads the loss's declaration
        (:attr:`~skstruct.losses.TaskLoss.decomposition`) and asks the family's hooks:

        1. a loss that decomposes over parts, under margin rescaling: MAP on
           :meth:`cost_augmented` scores (every family with ``map`` and
           ``cost_augmented``);
        2. a loss that has a count-statistic form for this family and rescaling
           (:meth:`_counting_form`): :meth:`_count_augmented_map`, if the family
           implements it;
        3. the 0/1 loss (``task_loss.zero_one``): :meth:`_zero_one_augmented_map`, the
           better of ``y_true`` and the best other output (needs ``top_k``);
        4. otherwise a ``ValueError`` naming what the decoder supports
           (:meth:`_unsupported_loss`).

        Parameters
        ----------
        scores : score container
        y_true : ndarray
            Encoded gold outputs, stacked like the outputs of :meth:`map`.
        task_loss : TaskLoss or str
        rescaling : {"margin", "slack"} or callable, default="margin"
            A callable ``H(F, stats, example, gold_scores, n_gold)``, non-decreasing in
            F, is accepted by the families whose count hook takes it.

        Returns
        -------
        ndarray, encoded outputs like those of :meth:`map`

        Raises
        ------
        NotImplementedError
            When ``"loss_augmented_map"`` is not among the decoder's ``capabilities``.
        InfeasibleOutputError
            When an example has no output with a finite score.
        ValueError
            When ``y_true`` does not fit the scores, when the decoder has no exact
            solver for the loss and rescaling, or under slack rescaling when ``y_true``
            scores -inf.
        """
        if "loss_augmented_map" not in self.capabilities:
            self._unsupported("loss_augmented_map")
        self._check_scores(scores)
        task_loss = check_task_loss_argument(task_loss)
        y_true = self._check_y_true(scores, y_true)
        if rescaling == "margin" and task_loss.decomposition == "parts":
            return self.map(self._cost_augmented(scores, y_true, task_loss))
        counting = self._counting_form(scores, task_loss, rescaling)
        if counting is not None:
            labels = self._count_augmented_map(scores, y_true, counting, rescaling)
            if labels is not NotImplemented:
                return labels
        if task_loss.zero_one:
            labels = self._zero_one_augmented_map(scores, y_true, rescaling)
            if labels is not NotImplemented:
                return labels
        raise self._unsupported_loss(task_loss, rescaling)

    # Hooks of loss-augmented MAP: a family implements those it can answer exactly.

    def _check_y_true(self, scores, y_true):
        """The gold outputs checked against the scores (the container's own check)."""
        if hasattr(scores, "_check_outputs"):
            return scores._check_outputs(y_true, name="y_true")
        return y_true

    def _counting_form(self, scores, task_loss, rescaling):
        """The count-statistic loss that :meth:`_count_augmented_map` maximizes in place
        of ``task_loss`` (with the same argmax under ``rescaling``), or None.

        The default is the loss itself when it declares ``decomposition = "counts"``.
        Families override it to also read a loss under slack rescaling as counts (chains:
        mismatch counts; multilabel: true and false positives).
        """
        return task_loss if task_loss.decomposition == "counts" else None

    def _count_augmented_map(self, scores, y_true, counting_loss, rescaling):
        """argmax_y H(θ_y, G(y)) for a count-statistic loss, or ``NotImplemented``.

        Parameters
        ----------
        scores : score container
        y_true : ndarray
            Checked gold outputs.
        counting_loss : CountingLoss
        rescaling : {"margin", "slack"} or callable

        Returns
        -------
        ndarray or NotImplemented
            NotImplemented (the default) when the family has no exact solver for it.
        """
        return NotImplemented

    def _zero_one_augmented_map(self, scores, y_true, rescaling):
        """Loss-augmented MAP of the 0/1 loss from the two best outputs.

        Both rescalings prefer the best output y ≠ y_true iff θ_y + 1 > θ_{y_true}
        (ties keep ``y_true``). Needs ``top_k``; ``NotImplemented`` without it or for
        another rescaling.
        """
        if "top_k" not in self.capabilities or rescaling not in ("margin", "slack"):
            return NotImplemented
        if rescaling == "slack":
            self._check_slack_gold(scores, y_true)
        paths, top = self.top_k(scores, 2)
        gold = self.score_outputs(scores, y_true)
        lengths = np.diff(scores.offsets)
        n_examples = lengths.shape[0]
        owner = np.repeat(np.arange(n_examples), lengths)
        first, second = paths[..., 0], paths[..., 1]
        differ = np.bincount(owner, weights=(first != y_true).reshape(-1),
                             minlength=n_examples)
        best_is_gold = differ == 0
        other = np.where(np.repeat(best_is_gold, lengths).reshape(y_true.shape), second, first)
        other_score = np.where(best_is_gold, top[:, 1], top[:, 0])
        keep_gold = gold >= other_score + 1.0
        return np.where(np.repeat(keep_gold, lengths).reshape(y_true.shape), y_true, other)

    def _check_slack_gold(self, scores, y_true):
        """Slack rescaling needs θ_{y_true} > -inf; an infeasible example is reported
        first."""
        gold = self.score_outputs(scores, y_true)
        if np.any(gold == -np.inf):
            self.map(scores)
            check_slack_gold(gold, self._example_name)

    def _unsupported_loss(self, task_loss, rescaling):
        """The ``ValueError`` for a loss and rescaling no hook answers."""
        return no_exact_loss_augmented_map(
            self, task_loss, rescaling,
            "losses that decompose over parts (HammingLoss, or a loss with unary_costs) "
            "under margin rescaling",
            f"For a loss that is a sum over tokens, implement "
            f"{type(task_loss).__name__}.unary_costs(y_true, offsets, n_states) (the cost "
            "of every state of every token, shape (n_tokens, n_states)) and use "
            "rescaling='margin'.",
        )

    def sparsemap(self, scores, *, max_iter=100, tol=1e-9, init=None, **options):
        """SparseMAP: argmax_{μ ∈ M} ηᵀμ − ½‖u‖² for every example.

        The default is the active set
        (:func:`~skstruct.decoders._sparsemap.active_set_sparsemap`), which needs only
        :meth:`map` and :meth:`parts`; a family with a closed form or its own solver
        overrides it. :func:`~skstruct.decoders.sparsemap` and
        :class:`~skstruct.losses.SparseMAPLoss` call this method.

        Parameters
        ----------
        scores : score container
        max_iter : int, default=100
            Most MAP calls per example.
        tol : float, default=1e-9
            Stopping tolerance on the Frank–Wolfe gap.
        init : SparseMAPResult, default=None
            A previous solution on the same examples, to start from its active sets.
        **options
            Further options of the solver (``method``, ``max_inner``: see
            :func:`~skstruct.decoders.sparsemap`).

        Returns
        -------
        SparseMAPResult
        """
        from ._sparsemap import active_set_sparsemap

        return active_set_sparsemap(self, scores, max_iter=max_iter, tol=tol, init=init,
                                    **options)

    def compiled_oracle(self, task_loss, rescaling, y, y_offsets):
        """This decoder's compiled fast path for per-example solvers, or None.

        A built-in decoder returns a ``CompiledOracle`` (see
        ``skstruct/decoders/_engine_protocol.py``) that the compiled per-example engine
        calls for every example, with no Python in its loop; None (the default, and a
        user's decoder) makes the solvers keep their Python loop over examples. A
        built-in decoder offers it only when the decoder keeps the family's operations
        (:func:`keeps_operations`): a subclass that redefines ``map``, ``parts`` or a
        loss-augmented MAP hook gets the Python loop, which calls them.

        Parameters
        ----------
        task_loss : TaskLoss
        rescaling : None, "margin" or "slack"
            None for plain MAP (the perceptron).
        y : ndarray
            Encoded gold outputs of the training set, stacked.
        y_offsets : ndarray of shape (n_examples + 1,)
            Example ``i`` owns ``y[y_offsets[i]:y_offsets[i + 1]]``.

        Returns
        -------
        CompiledOracle or None
        """
        return None

    def parts(self, scores, y):
        """Part indicators a_y of the outputs ``y`` (laid out like ``scores``)."""
        self._unsupported("parts")

    def sample_uniform(self, scores, n_draws, random_state=None):
        """Independent draws from the uniform distribution over the valid outputs.

        The valid outputs Y(x) of an example are those of finite score: a part scored
        -inf forbids the outputs that contain it; the values of the finite scores do not
        matter. Every draw is y ~ Uniform(Y(x)), independently of the others.

        Parameters
        ----------
        scores : score container
        n_draws : int >= 1
            Draws per example.
        random_state : None, int, numpy.random.Generator or numpy.random.RandomState
            Turned into a ``numpy.random.Generator`` by ``numpy.random.default_rng`` (a
            RandomState gives it one seed; see
            :func:`skstruct.decoders._sampling.check_random_state`). All random numbers
            are drawn from it before the compiled kernels run, so the same seed gives
            the same draws whatever the number of threads.

        Returns
        -------
        paths : ndarray, int64
            Laid out like the paths of :meth:`top_k`: the encoded outputs stacked as
            :meth:`map` returns them, with a trailing axis of length ``n_draws`` (chains
            and trees: (n_tokens, n_draws); multilabel: (n_samples, n_labels, n_draws)).

        Raises
        ------
        NotImplementedError
            When ``"sample_uniform"`` is not among the decoder's ``capabilities``.
        InfeasibleOutputError
            When an example has no valid output.
        """
        self._unsupported("sample_uniform")

    def neighbours(self, scores, y, k=1):
        """The valid outputs at Hamming distance 1 .. k from the outputs ``y``.

        The Hamming distance counts the positions of the encoded output whose value
        differs (tokens whose label differs, labels that differ, tokens whose head
        differs). A neighbour must be valid (of finite score, and an output of the
        decoder under its options); ``y`` itself need not be. The order is
        deterministic: distance 1 first, then 2, ... k; within one distance, the sets of
        changed positions in lexicographic order, then the new values in lexicographic
        order (:mod:`skstruct.decoders._sampling`).

        Parameters
        ----------
        scores : score container
        y : ndarray
            Encoded outputs, stacked like the outputs of :meth:`map`; checked like the
            ``y_true`` of :meth:`loss_augmented_map`.
        k : int >= 1, default=1

        Returns
        -------
        paths : ndarray, int64
            Laid out like the paths of :meth:`top_k`, with a trailing axis of length
            ``max(counts)``: column r of example i is its r-th neighbour for
            r < counts[i], -1 beyond.
        counts : ndarray of shape (n_examples,), int64
            The number of neighbours of every example.

        Raises
        ------
        NotImplementedError
            When ``"neighbours"`` is not among the decoder's ``capabilities``.
        ValueError
            When ``y`` does not fit the scores, or when a neighbourhood would be too
            large to enumerate (see :data:`skstruct.decoders._sampling.MAX_NEIGHBOUR_CANDIDATES`).
        """
        self._unsupported("neighbours")

    def score_outputs(self, scores, y):
        """Scores θ_y = ⟨η, a_y⟩ of the outputs ``y``, one per example."""
        return self.parts(scores, y).dot(scores)

    def check_outputs(self, y, offsets):
        """Raise a clear ``ValueError`` if the encoded outputs ``y`` (stacked over
        ``offsets``) are not outputs this decoder can produce; estimators call it on the
        gold outputs before training. The base class accepts every output."""

    def cost_augmented(self, scores, y_true, task_loss):
        """Scores η + c with ⟨c, a_y⟩ = Δ(y_true, y) up to a constant per example.

        For a task loss that decomposes over the unary parts (Hamming), the cost-augmented
        scores turn MAP into margin-rescaled loss-augmented MAP and marginals into
        softmax-margin marginals. The per-example constant does not change any maximizer
        or any loss that also scores the gold output with the augmented scores (it is
        zero for the decoders that declare ``exact_cost_augmentation``).

        Parameters
        ----------
        scores : score container
        y_true : ndarray
            Encoded gold outputs.
        task_loss : TaskLoss
            Must decompose over parts (``decomposition = "parts"``: it provides
            ``unary_costs(y_true, offsets, n_states)``).

        Returns
        -------
        score container, like ``scores``
        """
        self._check_scores(scores)
        task_loss = check_task_loss_argument(task_loss)
        return self._cost_augmented(scores, self._check_y_true(scores, y_true), task_loss)

    def _cost_augmented(self, scores, y_true, task_loss):
        """:meth:`cost_augmented` on checked gold outputs: the unary costs of the loss
        added to the unary scores, which the family's containers lay out one row per
        token with one column per state. Families with another layout override it."""
        if task_loss.decomposition != "parts":
            raise ValueError(
                f"{type(self).__name__} can add a task loss to the scores only when it "
                f"decomposes over tokens (such as HammingLoss); {type(task_loss).__name__} "
                "does not: implement its unary_costs(y_true, offsets, n_states), the cost "
                "of every state of every token."
            )
        costs = task_loss.unary_costs(np.ravel(y_true), scores.offsets, scores.n_states)
        check_task_loss_values(costs, task_loss, "unary_costs")
        return scores.replace(unary=scores.unary + np.reshape(costs, scores.unary.shape))
