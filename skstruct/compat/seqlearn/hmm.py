"""seqlearn's ``MultinomialHMM``: no skstruct equivalent."""

__all__ = ["MultinomialHMM"]


class MultinomialHMM:
    """seqlearn's first-order HMM: not available (constructing it raises).

    skstruct has discriminative chain models only: :class:`skstruct.CRF` on the same
    features is the discriminative model of the same chain, and
    :class:`skstruct.compat.seqlearn.perceptron.StructuredPerceptron` takes seqlearn's
    inputs.
    """

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(
            "seqlearn's MultinomialHMM has no skstruct equivalent: use skstruct.CRF (the "
            "discriminative model of the same chain; split X at the lengths, see the "
            "migrating page) or skstruct.compat.seqlearn.perceptron.StructuredPerceptron.")
