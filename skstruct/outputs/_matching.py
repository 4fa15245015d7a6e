"""Bipartite matchings: every row matched to at most one column, and vice versa."""

import numpy as np

from ..decoders import MatchingDecoder, MatchingScores
from ..features._linear_pair import LinearPairFeatures
from ..utils._matchings import check_matchings, looks_like_matchings
from ..utils._sequences import split_sequences
from ._base import PairScoredKind, split_blocks

__all__ = ["MatchingKind"]

_PERMANENT = (
    "the partition function of bipartite matchings, Σ_M exp θ_M, is the permanent of "
    "exp(scores), which is #P-hard to compute, so no decoder of matchings has marginals. "
    "StructuredSVM, StructuredPerceptron and SparseMAPClassifier learn matchings with MAP "
    "alone"
)


class MatchingKind(PairScoredKind):
    """Maximum-cardinality bipartite matchings (assignments).

    ``X`` is a list of instances, each a 3-D (n_rows, n_cols, n_features) array of pair
    features or a tuple ``(pair_features, (n_rows, n_cols))`` with a dense or sparse
    row-major (n_rows * n_cols, n_features) matrix (see
    :mod:`skstruct.utils._matchings`); ``y`` a list of integer arrays of length n_rows:
    the column matched to every row, -1 for an unmatched row (only when
    n_rows > n_cols). Chosen by the decoder (a
    :class:`~skstruct.decoders.MatchingDecoder`).

    Encoded outputs are the stacked ``y`` itself; there are no classes. Fitted
    attribute: ``coef_`` (n_features,), the pair (j, k) of an instance scoring
    ``x_jk · coef_``. ``decision_function`` and SparseMAP marginals are one (n_rows, n_cols)
    matrix per instance. The default score is the fraction of rows given their right
    column (-1 included).
    """

    name = "matching"
    form = ("X a list of (n_rows, n_cols, n_features) pair feature arrays, y a list of "
            "matched-column arrays (-1: unmatched row)")
    chosen_by_decoder = True
    example_noun = "instances"
    intractable_operations = {"marginals": _PERMANENT, "log_partition": _PERMANENT}

    def recognizes(self, X, y):
        return looks_like_matchings(X)

    def check_training_data(self, X, y, estimator):
        batch, y_encoded = check_matchings(X, y, estimator=estimator)
        return batch, None, y_encoded

    def check_prediction_data(self, X, fitted):
        return check_matchings(X, n_features=fitted.n_features_in_,
                               estimator=type(fitted).__name__)[0]

    def decode(self, encoded, batch, classes):
        return split_sequences(np.asarray(encoded, dtype=np.int64), batch.output_offsets)

    def decode_one(self, encoded, classes):
        return np.asarray(encoded, dtype=np.int64).reshape(-1)

    def unary_to_user(self, unary, batch):
        return split_blocks(unary, batch.offsets, batch.shapes)

    def default_decoder(self):
        return MatchingDecoder()

    def feature_map(self, n_features, classes):
        return LinearPairFeatures(n_features, MatchingScores)
