"""Checks shared by every decoder: scores, offsets, outputs, ``k`` and task losses."""

from numbers import Integral
import numpy as np

from ...losses._base import TaskLoss, check_task_loss_values
from ...losses._task import _task_losses, check_task_loss
from ...utils._capabilities import check_capability

__all__ = [
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



def _trusted(cls, **attributes):
    """A score container of class ``cls`` with ``attributes`` already validated.

    For sub-batches of checked scores (``take``): no copy and no second check.
    """
    scores = cls.__new__(cls)
    scores.__dict__.update(attributes)
    return scores
