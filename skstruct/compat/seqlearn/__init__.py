"""seqlearn's interface on skstruct's estimators.

seqlearn stacks the tokens of all sequences in one (n_tokens, n_features) matrix, with
flat labels and the sequence ``lengths``. Its modules have counterparts here, with the
same names and signatures: :mod:`.perceptron` (``StructuredPerceptron``, trained by
:class:`skstruct.StructuredPerceptron`), :mod:`.evaluation` (``bio_f_score``,
``whole_sequence_accuracy``), :mod:`.datasets` (``load_conll``) and :mod:`.hmm`, whose
``MultinomialHMM`` has no equivalent (it raises and names :class:`skstruct.CRF`).
Replace ``from seqlearn.perceptron import StructuredPerceptron`` with
``from skstruct.compat.seqlearn.perceptron import StructuredPerceptron``, and so on.
"""

from . import datasets, evaluation, hmm, perceptron

__all__ = ["datasets", "evaluation", "hmm", "perceptron"]
