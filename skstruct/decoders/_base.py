"""The interface every decoder implements."""

import numpy as np
from sklearn.base import BaseEstimator

__all__ = [
    "Decoder",
    "InfeasibleOutputError",
    "check_capability",
    "check_encoded_outputs",
    "check_feasible",
    "check_slack_gold",
    "check_part_scores",
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
    """

    #: The operations this decoder answers (a subset of the names above).
    capabilities = frozenset()
    #: The kind of outputs it decodes, as estimators name them ("sequence", "multiclass",
    #: "multilabel", "tree", "matching"); None for decoders of several families.
    output_kind = None
    _parameter_constraints: dict = {}

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
        """argmax_y H(θ_y, Δ(y_true, y)) for every example (margin or slack rescaling)."""
        self._unsupported("loss_augmented_map")

    def parts(self, scores, y):
        """Part indicators a_y of the outputs ``y`` (laid out like ``scores``)."""
        self._unsupported("parts")

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
        or any loss that also scores the gold output with the augmented scores.

        Parameters
        ----------
        scores : score container
        y_true : ndarray
            Encoded gold outputs.
        task_loss : TaskLoss
            Must provide ``unary_costs(y_true, offsets, n_states)``.

        Returns
        -------
        score container, like ``scores``
        """
        if not hasattr(task_loss, "unary_costs"):
            raise ValueError(
                f"{type(self).__name__} can add a task loss to the scores only when it "
                f"decomposes over tokens (such as HammingLoss); {type(task_loss).__name__} "
                "does not."
            )
        if hasattr(scores, "_check_outputs"):
            y_true = scores._check_outputs(y_true, name="y_true")
        costs = task_loss.unary_costs(np.ravel(y_true), scores.offsets, scores.n_states)
        return scores.replace(unary=scores.unary + costs.reshape(scores.unary.shape))


def check_capability(decoder, capability, needed_by):
    """Raise a clear error when ``decoder`` cannot answer ``capability``.

    Parameters
    ----------
    decoder : Decoder
    capability : str
        One of the names listed in :class:`Decoder`.
    needed_by : str
        What needs it (a training loss, an estimator method), for the message.
    """
    capabilities = getattr(decoder, "capabilities", frozenset())
    if capability not in capabilities:
        raise ValueError(
            f"{needed_by} needs the decoder operation {capability!r}, which "
            f"{type(decoder).__name__} does not provide (it provides "
            f"{sorted(capabilities)})."
        )
