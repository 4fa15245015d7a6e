"""The check that a decoder answers an operation, shared by decoders and training losses.

It lives outside :mod:`skstruct.decoders` so that the training losses, which call
decoders they are given, need not import the decoders package.
"""

__all__ = ["check_capability"]


def check_capability(decoder, capability, needed_by):
    """Raise a clear error when ``decoder`` cannot answer ``capability``.

    Parameters
    ----------
    decoder : Decoder
    capability : str
        One of the names listed in :class:`~skstruct.decoders.Decoder`: ``"map"``,
        ``"marginals"``, ``"top_k"``, ``"loss_augmented_map"``, ``"parts"``,
        ``"sample_uniform"`` or ``"neighbours"``.
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
