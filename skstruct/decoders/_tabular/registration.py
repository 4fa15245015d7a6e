"""The registrations of one class per example and of independent labels
(:mod:`skstruct.decoders._core.registry`). k-subsets are a decoder of the multilabel
scores (:class:`~skstruct.decoders.SubsetDecoder`), not a family of their own."""

from .._core.engine_protocol import MULTICLASS, MULTILABEL
from .._core.registry import DecoderFamily, EngineHooks, TinyBatch, register_family
from .enumeration import MulticlassEnumeration, MultilabelEnumeration
from .multiclass import MulticlassDecoder, MulticlassScores
from .multilabel import MultilabelDecoder, MultilabelScores
from .smoothed import supports_multiclass_smoothed, supports_multilabel_smoothed

__all__ = ["MULTICLASS_FAMILY", "MULTILABEL_FAMILY"]


def tiny_multiclass(rng, n_examples=3, size=3, scale=1.0):
    """``n_examples`` examples of ``size + 1`` classes, random gold classes."""
    n_classes = size + 1
    return TinyBatch(dict(unary=scale * rng.normal(size=(n_examples, n_classes))),
                     lambda a: MulticlassScores(a["unary"]),
                     rng.integers(0, n_classes, size=n_examples))


def tiny_multilabel(rng, n_examples=3, size=3, scale=1.0):
    """``n_examples`` examples of ``size`` labels, random gold label sets."""
    return TinyBatch(dict(unary=scale * rng.normal(size=(n_examples, size))),
                     lambda a: MultilabelScores(a["unary"]),
                     rng.integers(0, 2, size=(n_examples, size)))


_PAIRLESS = "smoothing, mu, top_k, unary, y_i, ints, floats, d_unary"

MULTICLASS_FAMILY = register_family(DecoderFamily(
    name="multiclass",
    scores=MulticlassScores,
    decoders=lambda: [MulticlassDecoder()],
    enumeration=MulticlassEnumeration,
    tiny_batch=tiny_multiclass,
    engine=EngineHooks(
        code=MULTICLASS, module="skstruct.decoders._tabular.oracle",
        oracle="multiclass_oracle", add_parts="multiclass_add_parts",
        smoothed_module="skstruct.decoders._tabular.smoothed",
        smoothed="multiclass_smoothed", smoothed_args=_PAIRLESS),
    supports_smoothed=supports_multiclass_smoothed,
))

MULTILABEL_FAMILY = register_family(DecoderFamily(
    name="multilabel",
    scores=MultilabelScores,
    decoders=lambda: [MultilabelDecoder()],
    enumeration=MultilabelEnumeration,
    tiny_batch=tiny_multilabel,
    engine=EngineHooks(
        code=MULTILABEL, module="skstruct.decoders._tabular.oracle",
        oracle="multilabel_oracle", add_parts="multilabel_add_parts",
        smoothed_module="skstruct.decoders._tabular.smoothed",
        smoothed="multilabel_smoothed",
        smoothed_args="smoothing, mu, top_k, unary, y_i, costs_i, ints, d_unary"),
    supports_smoothed=supports_multilabel_smoothed,
))
