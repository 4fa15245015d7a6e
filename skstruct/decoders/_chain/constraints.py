"""Allowed transitions, first and last states of linear chains (BIO / BIOES tagging).

A :class:`ChainConstraints` says which label sequences a
:class:`~skstruct.decoders.ChainDecoder` may return: y = (y_0, ..., y_{L-1}) is valid
when ``start[y_0]``, ``transition[y_{t-1}, y_t]`` for every t ≥ 1 and ``end[y_{L-1}]``
are all True. The decoder scores the forbidden parts -inf (:meth:`ChainConstraints.
restrict`) before every operation, so each one (MAP, marginals, top-K, loss-augmented
MAP, sampling, neighbourhoods...) runs over the valid sequences only.

:meth:`ChainConstraints.from_tags` builds the constraints of a chunk tagging scheme from
the tag names:

``"bio"`` (also ``"iob2"``)
    Tags ``B-X`` (begins a chunk of type X), ``I-X`` (continues it) and ``O``. ``I-X``
    may only follow ``B-X`` or ``I-X`` (same type X), so no sequence starts with ``I-X``.
``"bioes"`` (also ``"iobes"``)
    Adds ``E-X`` (ends a chunk of several tokens) and ``S-X`` (a chunk of one token).
    ``B-X`` and ``I-X`` must be followed by ``I-X`` or ``E-X`` (same type), which may
    only follow them; a sequence cannot start with ``I-X`` or ``E-X`` nor end with
    ``B-X`` or ``I-X``.

IOB1 (where ``I-X`` may begin a chunk) constrains nothing that way and has no string.
"""

import numpy as np

__all__ = ["ChainConstraints", "SCHEMES", "check_constraints_spec", "resolve_constraints"]

#: Scheme names understood by :meth:`ChainConstraints.from_tags` (aliases included).
SCHEMES = {"bio": "bio", "iob2": "bio", "bioes": "bioes", "iobes": "bioes"}

_PREFIXES = {"bio": ("B", "I"), "bioes": ("B", "I", "E", "S")}


class ChainConstraints:
    """Boolean masks of the allowed parts of a linear chain.

    Parameters
    ----------
    transition : array-like of bool, shape (n_states, n_states)
        ``transition[i, j]``: state ``j`` may follow state ``i``.
    start : array-like of bool, shape (n_states,), default=None
        States a sequence may begin with; None allows every state.
    end : array-like of bool, shape (n_states,), default=None
        States a sequence may end with; None allows every state.
    state_names : sequence of length n_states, default=None
        The label of every state, in the order of the masks' rows and columns (all
        different). An estimator matches the constraints to its ``classes_`` by these
        names, whatever their order; without names, the masks follow ``classes_``
        (the sorted labels). Error messages name the states by them.

    Raises
    ------
    TypeError
        When a mask is not boolean (0/1 integers are not accepted: pass ``mask == 1``).
    ValueError
        When the shapes disagree, when two state names are equal, or when no state may
        both begin and end a sequence (no valid sequence of length 1).

    Notes
    -----
    Applying the constraints is adding -inf to the forbidden transition, start and end
    scores (:meth:`restrict`): O(S²) per batch, whatever its length. Longer sequences may
    still have no valid labeling (e.g. with every transition forbidden); the decoder
    then raises :class:`~skstruct.decoders.InfeasibleOutputError` naming them.

    Examples
    --------
    >>> from skstruct.decoders import ChainConstraints
    >>> c = ChainConstraints.from_tags(["B-NP", "I-NP", "O"], "bio")
    >>> c.transition.astype(int).tolist(), c.start.tolist()
    ([[1, 1, 1], [1, 1, 1], [1, 0, 1]], [True, False, True])
    """

    def __init__(self, transition, start=None, end=None, state_names=None):
        transition = _boolean(transition, "transition", 2, "(n_states, n_states)")
        n_states = transition.shape[0]
        if transition.shape != (n_states, n_states) or n_states < 1:
            raise ValueError(
                f"ChainConstraints: transition has shape {transition.shape}; expected a "
                "square (n_states, n_states) boolean matrix with n_states >= 1."
            )
        start = (np.ones(n_states, dtype=bool) if start is None
                 else _boolean(start, "start", 1, "(n_states,)"))
        end = (np.ones(n_states, dtype=bool) if end is None
               else _boolean(end, "end", 1, "(n_states,)"))
        for name, mask in (("start", start), ("end", end)):
            if mask.shape != (n_states,):
                raise ValueError(
                    f"ChainConstraints: {name} has shape {mask.shape}; expected "
                    f"({n_states},), one flag per state of the ({n_states}, {n_states}) "
                    "transition matrix."
                )
        if not np.any(start & end):
            raise ValueError(
                "ChainConstraints leave no valid sequence of length 1: no state is allowed "
                "both as a first state (start) and as a last state (end)."
            )
        if state_names is not None:
            state_names = list(state_names)
            if len(state_names) != n_states:
                raise ValueError(f"ChainConstraints: {len(state_names)} state_names for "
                                 f"{n_states} states.")
            repeated = _repeated(state_names)
            if repeated:
                raise ValueError(f"ChainConstraints: state_names must all differ; "
                                 f"{repeated[:5]} appear more than once.")
        self.transition = transition
        self.start = start
        self.end = end
        self.state_names = state_names
        # the additive masks: 0 where allowed, -inf where forbidden
        self._penalty = tuple(np.where(m, 0.0, -np.inf) for m in (transition, start, end))
        self._free = bool(transition.all() and start.all() and end.all())

    @property
    def n_states(self):
        """Number of states."""
        return self.transition.shape[0]

    def __repr__(self):
        allowed = int(self.transition.sum())
        return (f"ChainConstraints(n_states={self.n_states}, allowed transitions "
                f"{allowed}/{self.n_states ** 2}, start {int(self.start.sum())}, "
                f"end {int(self.end.sum())})")

    @classmethod
    def from_tags(cls, tags, scheme="bio"):
        """The constraints of the chunk tagging ``scheme`` over the states ``tags``.

        Parameters
        ----------
        tags : sequence of str, length n_states
            The name of every state, in state order (an estimator's ``classes_``):
            ``"O"`` or ``"<P>-<TYPE>"`` with a prefix P of the scheme (``B``, ``I``; with
            BIOES also ``E``, ``S``) and any type (possibly empty: ``"B-"``).
        scheme : {"bio", "iob2", "bioes", "iobes"}, default="bio"

        Returns
        -------
        ChainConstraints

        Raises
        ------
        ValueError
            For an unknown scheme, or a tag that is not ``O`` nor prefix-type with a
            prefix of the scheme.
        """
        if not isinstance(scheme, str) or scheme.lower() not in SCHEMES:
            raise ValueError(f"Unknown chunk tagging scheme {scheme!r}; expected one of "
                             f"{sorted(SCHEMES)}.")
        scheme = SCHEMES[scheme.lower()]
        prefixes, types = _parse_tags(tags, scheme)
        inside = np.isin(prefixes, ("B", "I"))      # a chunk continues after them
        continues = np.isin(prefixes, ("I", "E"))   # they continue a chunk
        same = types[:, None] == types[None, :]
        transition = np.where(inside[:, None], continues[None, :] & same,
                              ~continues[None, :])
        start = ~continues
        end = ~inside if scheme == "bioes" else np.ones(len(prefixes), dtype=bool)
        if scheme == "bio":
            # B-X and I-X may be followed by anything but I-Y of another type Y
            transition = np.where(inside[:, None], ~continues[None, :] | same, transition)
        return cls(transition, start, end, state_names=[str(t) for t in tags])

    def for_states(self, classes):
        """These constraints over the states ``classes``, in that order.

        With :attr:`state_names`, the masks are reordered so that state ``i`` is
        ``classes[i]``; without, the masks are taken to follow ``classes`` already and
        the copy is only named by them.

        Parameters
        ----------
        classes : sequence of length n_states
            The label of every state, in state order (an estimator's ``classes_``).

        Returns
        -------
        ChainConstraints
            With ``state_names`` equal to ``classes``.

        Raises
        ------
        ValueError
            When the number of states differs, or when names and ``classes`` are not the
            same set (the message lists the names that do not match).

        Examples
        --------
        >>> import numpy as np
        >>> from skstruct.decoders import ChainConstraints
        >>> c = ChainConstraints(np.ones((3, 3), bool), start=np.array([True, False, True]),
        ...                      state_names=["O", "I-NP", "B-NP"])
        >>> c.for_states(["B-NP", "I-NP", "O"]).start.tolist()
        [True, False, True]
        >>> c.for_states(["I-NP", "B-NP", "O"]).start.tolist()
        [False, True, True]
        """
        classes = [_key(c) for c in classes]
        if len(classes) != self.n_states:
            raise ValueError(
                f"The chain constraints are over {self.n_states} states; the training "
                f"labels have {len(classes)} classes ({classes[:10]})."
            )
        if self.state_names is None:
            order = np.arange(self.n_states)
        else:
            position = _positions(self.state_names)
            missing = [c for c in classes if c not in position]
            if missing:
                unused = sorted(set(position) - set(classes), key=str)
                raise ValueError(
                    f"The chain constraints name the states {self.state_names[:10]}; the "
                    f"training labels {missing[:5]} are not among them (and the names "
                    f"{unused[:5]} are not training labels). Give state_names equal to "
                    "the labels, or masks without names in the order of classes_."
                )
            order = np.array([position[c] for c in classes], dtype=np.intp)
        return ChainConstraints(self.transition[np.ix_(order, order)], self.start[order],
                                self.end[order], state_names=classes)

    def restrict(self, scores):
        """``scores`` with the forbidden transition, start and end scores set to -inf.

        Parameters
        ----------
        scores : ChainScores
            With ``n_states`` states.

        Returns
        -------
        ChainScores
            Shares the unary scores and offsets of ``scores`` (no copy, no second check).
        """
        if scores.n_states != self.n_states:
            raise ValueError(
                f"The chain constraints are over {self.n_states} states; the scores have "
                f"{scores.n_states}."
            )
        if self._free:
            return scores
        transition, start, end = self._penalty
        return scores._restricted(scores.transition + transition, scores.start + start,
                                  scores.end + end)

    def is_valid(self, sequences):
        """Whether each label sequence is allowed.

        Parameters
        ----------
        sequences : list of array-like of shape (n_tokens_i,)
            Labels named as :attr:`state_names` (tag names, as ``predict`` returns
            them) when the constraints have names, else states 0 .. n_states - 1.

        Returns
        -------
        ndarray of shape (n_sequences,), bool

        Raises
        ------
        ValueError
            For a label that is not a state, or an empty sequence.
        """
        sequences = [np.asarray(s).ravel() for s in sequences]
        lengths = np.array([s.shape[0] for s in sequences], dtype=np.int64)
        if lengths.size == 0:
            return np.zeros(0, dtype=bool)
        if lengths.min() < 1:
            raise ValueError("is_valid takes non-empty label sequences.")
        labels = np.concatenate(sequences)
        if self.state_names is not None:
            position = _positions(self.state_names)
            labels = labels.tolist()
            unknown = [t for t in dict.fromkeys(labels) if t not in position]
            if unknown:
                raise ValueError(f"Labels {unknown[:5]} are not among the states "
                                 f"{self.state_names}.")
            labels = np.array([position[t] for t in labels], dtype=np.int64)
        elif not (np.issubdtype(labels.dtype, np.integer)
                  and labels.min() >= 0 and labels.max() < self.n_states):
            raise ValueError(f"Constraints without state_names take states 0 .. "
                             f"{self.n_states - 1}.")
        bad, _ = self.violations(labels, np.concatenate(([0], np.cumsum(lengths))))
        return ~bad

    def violations(self, y, offsets):
        """The sequences of the stacked labels ``y`` that the constraints forbid.

        Parameters
        ----------
        y : ndarray of shape (n_tokens,), int
            Encoded labels (states 0 .. n_states - 1), stacked.
        offsets : ndarray of shape (n_sequences + 1,)

        Returns
        -------
        bad : ndarray of shape (n_sequences,), bool
        reasons : list of str
            A description of the first forbidden part of each of the first few bad
            sequences (at most 5).
        """
        y = np.asarray(y, dtype=np.int64)
        offsets = np.asarray(offsets, dtype=np.int64)
        n_seq = offsets.shape[0] - 1
        first, last = y[offsets[:-1]], y[offsets[1:] - 1]
        follows = np.ones(y.shape[0], dtype=bool)
        follows[offsets[:-1]] = False
        t = np.flatnonzero(follows)
        bad_pair = np.zeros(y.shape[0], dtype=bool)
        bad_pair[t] = ~self.transition[y[t - 1], y[t]]
        owner = np.repeat(np.arange(n_seq), np.diff(offsets))
        bad = (~self.start[first] | ~self.end[last]
               | (np.bincount(owner, weights=bad_pair, minlength=n_seq) > 0))
        name = (lambda s: repr(self.state_names[s])) if self.state_names else str
        reasons = []
        for i in np.flatnonzero(bad)[:5]:
            a, b = offsets[i], offsets[i + 1]
            if not self.start[y[a]]:
                reasons.append(f"sequence {i} starts with {name(y[a])}")
            elif (bad_pair[a + 1:b]).any():
                j = a + 1 + int(np.argmax(bad_pair[a + 1:b]))
                reasons.append(f"sequence {i} has {name(y[j])} after {name(y[j - 1])} at "
                               f"token {j - a}")
            else:
                reasons.append(f"sequence {i} ends with {name(y[b - 1])}")
        return bad, reasons


def _key(name):
    """A state name as a dict key: numpy scalars as their Python values (np.str_("O")
    and "O", np.int64(2) and 2 name the same state)."""
    return name.item() if isinstance(name, np.generic) else name


def _positions(names):
    return {_key(name): s for s, name in enumerate(names)}


def _repeated(names):
    seen, repeated = set(), []
    for name in names:
        key = _key(name)
        try:
            if key in seen and key not in repeated:
                repeated.append(key)
            seen.add(key)
        except TypeError:
            raise TypeError(f"ChainConstraints: state names must be hashable labels; got "
                            f"{name!r}.") from None
    return repeated


def _boolean(values, name, ndim, layout):
    array = np.asarray(values)
    if array.dtype != np.bool_:
        raise TypeError(f"ChainConstraints: {name} must be a boolean array of shape "
                        f"{layout} (True where allowed); got dtype {array.dtype}.")
    if array.ndim != ndim:
        raise ValueError(f"ChainConstraints: {name} has shape {array.shape}; expected "
                         f"{layout}.")
    return np.array(array, dtype=bool)  # a private copy: later edits do not leak in


def _parse_tags(tags, scheme):
    """Prefixes and types of the tag names; ValueError naming the tags that do not
    parse."""
    prefixes, types, bad = [], [], []
    allowed = _PREFIXES[scheme]
    for tag in tags:
        if not isinstance(tag, (str, np.str_)):
            bad.append(tag)
            continue
        if tag == "O":
            prefixes.append("O")
            types.append("")
            continue
        prefix, dash, kind = str(tag).partition("-")
        if not dash or prefix not in allowed:
            bad.append(tag)
            continue
        prefixes.append(prefix)
        types.append(kind)
    if bad:
        shown = ", ".join(repr(t) for t in bad[:5])
        raise ValueError(
            f"constraints={scheme!r} reads the tag names as {scheme.upper()} tags ('O' or "
            f"'<prefix>-<type>' with a prefix in {list(allowed)}); these do not parse: "
            f"{shown}{' ...' if len(bad) > 5 else ''}."
        )
    return np.array(prefixes), np.array(types, dtype=object)


def check_constraints_spec(spec):
    """TypeError / ValueError for a ``constraints`` value that is not None, a scheme
    name, a :class:`ChainConstraints` or a dict of its arguments."""
    if spec is None or isinstance(spec, ChainConstraints):
        return
    if isinstance(spec, str):
        if spec.lower() not in SCHEMES:
            raise ValueError(f"Unknown constraints {spec!r}; expected None, one of "
                             f"{sorted(SCHEMES)}, a ChainConstraints or a dict with keys "
                             "'transition', 'start', 'end'.")
        return
    if isinstance(spec, dict):
        unknown = set(spec) - {"transition", "start", "end"}
        if unknown or "transition" not in spec:
            raise ValueError(
                "A dict of chain constraints needs the key 'transition' (a boolean "
                "(n_states, n_states) matrix) and may have 'start' and 'end' (boolean "
                f"(n_states,)); got keys {sorted(spec, key=str)}."
            )
        return
    raise TypeError(
        "constraints must be None, a scheme name ('bio', 'iob2', 'bioes', 'iobes'), a "
        "ChainConstraints or a dict with keys 'transition', 'start', 'end'; got "
        f"{type(spec).__name__}."
    )


def resolve_constraints(spec, classes=None):
    """The :class:`ChainConstraints` of a ``constraints`` value, or None.

    Parameters
    ----------
    spec : None, str, dict or ChainConstraints
    classes : sequence or None
        The state labels in state order (an estimator's ``classes_``); needed by a scheme
        name. Constraints with ``state_names`` are matched to them by name
        (:meth:`ChainConstraints.for_states`).

    Raises
    ------
    ValueError
        For a scheme name without ``classes``, when the constraints are over another
        number of states than ``classes`` has, or name other states.
    """
    check_constraints_spec(spec)
    if spec is None:
        return None
    if isinstance(spec, str):
        if classes is None:
            raise ValueError(
                f"constraints={spec!r} is read from the tag names, which this decoder does "
                "not know: estimators bind them at fit; a decoder used on its own needs "
                f"bind_classes(tag_names) or ChainConstraints.from_tags(tag_names, "
                f"{spec!r})."
            )
        return ChainConstraints.from_tags(classes, spec)
    constraints = spec if isinstance(spec, ChainConstraints) else ChainConstraints(**spec)
    return constraints if classes is None else constraints.for_states(classes)
