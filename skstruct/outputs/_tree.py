"""Dependency trees: one head per token, decoded by a spanning-tree decoder."""

import numpy as np

from ..decoders import TreeDecoder, TreeScores, heads_to_states, states_to_heads
from ..features import LinearArcFeatures
from ..utils._sequences import split_sequences
from ..utils._trees import check_trees
from ._base import PairScoredKind, split_blocks

__all__ = ["TreeKind"]


class TreeKind(PairScoredKind):
    """Dependency trees: ``X`` a list of (n_i * n_i, n_features) arc feature matrices
    (see :mod:`skstruct.utils._trees`), ``y`` a list of CoNLL head arrays (0 for the
    root, else the 1-based head position).

    Chosen by the decoder (a :class:`~skstruct.decoders.TreeDecoder`): head arrays look
    like label sequences. Encoded outputs are the decoder's states (the head's 0-based
    index, a token's own index for the root). Fitted attribute: ``coef_``
    (n_features,). ``decision_function`` and marginals are one (n_i, n_i) matrix per
    sentence, entry [m, h] for head h of token m, the diagonal for the root. The default
    score is the attachment score (the fraction of tokens with the right head).
    """

    name = "tree"
    form = "X a list of (n * n, n_features) arc feature matrices, y a list of head arrays"
    chosen_by_decoder = True
    example_noun = "sentences"

    def check_training_data(self, X, y, estimator):
        batch, heads = check_trees(X, y, estimator=estimator)
        return batch, None, heads_to_states(heads, batch.token_offsets)

    def check_prediction_data(self, X, fitted):
        return check_trees(X, n_features=fitted.n_features_in_,
                           estimator=type(fitted).__name__)[0]

    def decode(self, encoded, batch, classes):
        heads = states_to_heads(encoded, batch.token_offsets)
        return split_sequences(heads, batch.token_offsets)

    def decode_one(self, encoded, classes):
        encoded = np.asarray(encoded)
        return states_to_heads(encoded, np.array([0, encoded.shape[0]]))

    def unary_to_user(self, unary, batch):
        lengths = np.diff(batch.token_offsets)
        return split_blocks(unary, batch.offsets, np.column_stack([lengths, lengths]))

    def default_decoder(self):
        return TreeDecoder()

    def feature_map(self, n_features, classes):
        return LinearArcFeatures(n_features, TreeScores)
