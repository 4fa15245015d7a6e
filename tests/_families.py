"""Every registered decoder family's tiny instances, for the generic decoder tests.

The decoder, loss, bad-score and smoothed-oracle tests read the families from the registry
(:mod:`skstruct.decoders._core.registry`) through this module, so that a new family's
registration brings it their tests: its tiny batches (``tiny_batch``), its decoder
configurations (``decoders``) and its slow reference (``enumeration``, served by
:class:`~skstruct.decoders.BruteForceDecoder`).
"""

import numpy as np

import skstruct.decoders  # noqa: F401  (registers the built-in families)
from skstruct.decoders import BruteForceDecoder
from skstruct.decoders._core.registry import families, family_of_scores


def family(name):
    """The registered family called ``name``."""
    for registered in families():
        if registered.name == name:
            return registered
    raise KeyError(name)


def family_names(*, enumerated=False, smoothed=False):
    """Names of the registered families (with a slow reference, with a smoothed oracle)."""
    return [f.name for f in families()
            if (not enumerated or f.enumeration is not None)
            and (not smoothed or (f.engine is not None and f.engine.smoothed is not None))]


def tiny(name, seed=0, **size):
    """A :class:`~skstruct.decoders._core.registry.TinyBatch` of family ``name``."""
    return family(name).tiny_batch(np.random.default_rng(seed), **size)


def instance(name, rng, **size):
    """(default decoder, scores, gold outputs) of a tiny batch of family ``name``."""
    registered = family(name)
    batch = registered.tiny_batch(rng, **size)
    return registered.decoders()[0], batch.scores, batch.y


def decoder_cases(*, with_reference=True):
    """(family name, decoder) for every configuration of every family, and the
    brute-force decoder for the families with a slow reference."""
    cases = []
    for registered in families():
        cases += [(registered.name, decoder) for decoder in registered.decoders()]
        if with_reference and registered.enumeration is not None:
            cases.append((registered.name, BruteForceDecoder()))
    return cases


def reference_for(decoder):
    """The brute-force decoder configured like ``decoder`` (the parameters they share,
    such as a tree decoder's ``projective`` and ``single_root``)."""
    shared = set(BruteForceDecoder().get_params()) & set(decoder.get_params())
    return BruteForceDecoder(**{name: decoder.get_params()[name] for name in shared})


def other_scores(scores):
    """A tiny batch of another family than that of ``scores``."""
    own = family_of_scores(scores)
    for registered in families():
        if registered is not own and not isinstance(tiny(registered.name).scores,
                                                    type(scores)):
            return tiny(registered.name).scores
    raise LookupError("only one family is registered")


def output_counts(scores):
    """The number of outputs of every example, by enumeration (tiny batches only)."""
    _, theta = BruteForceDecoder().top_k(scores, 100_000)
    return np.sum(theta > -np.inf, axis=1)
