"""The decoder families, one registration each.

A family is an output structure with its score container, its decoder and its slow
reference (an enumeration of every output). Each family package registers itself in its
``registration.py`` with a :class:`DecoderFamily`; everything that must know every family
reads this registry instead of a list of its own:

- :class:`~skstruct.decoders.BruteForceDecoder` answers for every registered score
  container through the family's ``enumeration``;
- the compiled engine's smoothed solvers ask the family of an oracle's code whether it
  serves a smoothing (``supports_smoothed``);
- the compiled dispatchers of :mod:`skstruct.decoders._engine` are generated from the
  families that declare an ``engine`` (:mod:`skstruct.decoders._engine.generate`);
- the generic decoder tests draw every family's tiny batches from ``tiny_batch`` and run
  on every configuration in ``decoders``.

Adding a family is its package, its output kind (:mod:`skstruct.outputs`) and one call of
:func:`register_family`.
"""

from dataclasses import dataclass, field
from typing import Callable, Optional

__all__ = ["DecoderFamily", "EngineHooks", "TinyBatch", "family_of_code", "family_of_scores",
           "families", "register_family"]


@dataclass(frozen=True)
class TinyBatch:
    """A tiny valid batch of one family, from named score arrays.

    Attributes
    ----------
    arrays : dict of str to ndarray
        The score arrays the container is built from (``"unary"`` first).
    build : callable
        ``build(arrays)`` returns the score container (it validates the arrays).
    y : ndarray
        Valid encoded gold outputs of the batch.
    """

    arrays: dict
    build: Callable
    y: object

    @property
    def scores(self):
        """The score container of :attr:`arrays`."""
        return self.build(self.arrays)


@dataclass(frozen=True)
class EngineHooks:
    """Where the compiled per-example engine finds a family's kernels.

    The engine dispatches on integer codes (numba caches no function passed as an
    argument), so its dispatchers are generated from these names.

    Attributes
    ----------
    code : int
        The family code of its ``CompiledOracle``
        (:mod:`skstruct.decoders._core.engine_protocol`).
    module : str
        The module holding the kernels, absolute (``"skstruct.decoders._chain.oracle"``).
    oracle, add_parts : str
        The loss-augmented oracle and the part accumulation; they take the arguments of
        :func:`skstruct.decoders._engine.dispatch.oracle` and ``add_parts`` without
        ``code``.
    smoothed_module, smoothed : str or None
        The module and name of the smoothed oracle.
    smoothed_args : str or None
        The arguments it takes, among those of
        :func:`skstruct.decoders._engine.dispatch.smoothed_oracle` (``"smoothing, mu,
        top_k, unary, y_i, ints, floats, d_unary"``).
    """

    code: int
    module: str
    oracle: str
    add_parts: str
    smoothed_module: Optional[str] = None
    smoothed: Optional[str] = None
    smoothed_args: Optional[str] = None


@dataclass(frozen=True)
class DecoderFamily:
    """One registered output family.

    Attributes
    ----------
    name : str
        ``"chain"``, ``"tree"``, ...
    scores : type
        Its score container. A subclass registered as a family of its own takes
        precedence (the lookup walks the container's MRO).
    decoders : callable
        ``decoders()`` returns the decoder configurations the generic tests run (the
        default configuration first).
    enumeration : type or None
        Its slow reference: a :class:`~skstruct.decoders._core.enumeration.Enumeration`
        subclass answering every operation by listing the outputs.
    tiny_batch : callable
        ``tiny_batch(rng, n_examples=3, size=3, scale=1.0)`` returns a :class:`TinyBatch`
        of ``n_examples`` examples of at most ``size`` tokens, labels or nodes each.
    score_names : dict of str to str
        The name each score array goes by in error messages (``"transition"``) to its key
        in :attr:`TinyBatch.arrays`.
    example_name : str
        What the family's examples are called in error messages (``"sequence"``).
    engine : EngineHooks or None
        Its compiled per-example engine support.
    supports_smoothed : callable or None
        ``supports_smoothed(compiled_oracle, smoothing_code)``: whether the family's
        smoothed oracle serves that oracle (its loss and rescaling) and smoothing.
    """

    name: str
    scores: type
    decoders: Callable
    enumeration: Optional[type]
    tiny_batch: Callable
    score_names: dict = field(default_factory=lambda: {"unary": "unary"})
    example_name: str = "example"
    engine: Optional[EngineHooks] = None
    supports_smoothed: Optional[Callable] = None


#: The registered families by name, in registration order.
_REGISTRY = {}


def register_family(family):
    """Register ``family`` (a :class:`DecoderFamily`); returns it.

    Raises
    ------
    ValueError
        When its name, score container or engine code is already taken by another family.
    """
    for other in _REGISTRY.values():
        if other.name == family.name:
            continue
        if other.scores is family.scores:
            raise ValueError(f"{family.scores.__name__} is already the score container of "
                             f"the {other.name!r} family.")
        if family.engine and other.engine and other.engine.code == family.engine.code:
            raise ValueError(f"Engine code {family.engine.code} is already the "
                             f"{other.name!r} family's.")
    _REGISTRY[family.name] = family
    return family


def families():
    """The registered families, in registration order (tuple of DecoderFamily)."""
    return tuple(_REGISTRY.values())


def family_of_scores(scores):
    """The family of a score container (or of its class), or None."""
    kind = scores if isinstance(scores, type) else type(scores)
    by_type = {family.scores: family for family in _REGISTRY.values()}
    for cls in kind.__mro__:
        if cls in by_type:
            return by_type[cls]
    return None


def family_of_code(code):
    """The family whose compiled oracle has engine code ``code``, or None."""
    for family in _REGISTRY.values():
        if family.engine is not None and family.engine.code == code:
            return family
    return None
