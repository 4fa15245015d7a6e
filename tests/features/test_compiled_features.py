"""What a feature map offers compiled code describes the map itself.

Scoring every example from ``compiled_features`` (the engine's ``score_example``) gives the
map's own part scores, the transpose of a part-space vector follows the documented layout
of w, and ``zero_scores`` are the scores at w = 0.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from skstruct.decoders import MulticlassScores, MultilabelScores, TreeScores
from skstruct.features import (
    CompiledFeatures,
    LinearArcFeatures,
    LinearChainFeatures,
    LinearFeatures,
)
from skstruct.optim._engine_kernels import score_example
from skstruct.utils import SequenceBatch
from skstruct.utils._trees import TreeBatch


def _chain(rng, sparse):
    offsets = np.array([0, 3, 4, 9])
    X = rng.normal(size=(9, 5))
    X = sp.csr_matrix(np.where(X > 0, X, 0.0)) if sparse else X
    return LinearChainFeatures(5, 3), SequenceBatch(X, offsets)


def _tabular(rng, sparse, scores_type):
    X = rng.normal(size=(6, 4))
    X = sp.csr_matrix(np.where(X > 0, X, 0.0)) if sparse else X
    return LinearFeatures(4, 3, scores_type), SequenceBatch(X, np.arange(7))


def _arcs(rng, sparse):
    lengths = np.array([1, 3, 2])
    rows = lengths**2
    X = rng.normal(size=(rows.sum(), 4))
    X = sp.csr_matrix(np.where(X > 0, X, 0.0)) if sparse else X
    return (LinearArcFeatures(4, TreeScores),
            TreeBatch(X, np.concatenate(([0], np.cumsum(rows))),
                      np.concatenate(([0], np.cumsum(lengths)))))


MAPS = {
    "chain": _chain,
    "multiclass": lambda rng, sparse: _tabular(rng, sparse, MulticlassScores),
    "multilabel": lambda rng, sparse: _tabular(rng, sparse, MultilabelScores),
    "arcs": _arcs,
}


def _blocks(compiled, w):
    cut = compiled.n_features * compiled.n_unary
    bias = compiled.n_unary if compiled.has_bias else 0
    return (w[:cut].reshape(compiled.n_features, compiled.n_unary), w[cut:cut + bias],
            w[cut + bias:])


def _unary(scores):
    return np.asarray(scores.unary).reshape(-1, 1) if scores.unary.ndim == 1 else scores.unary


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("kind", list(MAPS))
def test_compiled_rows_score_like_the_map(rng, kind, sparse):
    features, batch = MAPS[kind](rng, sparse)
    compiled = features.compiled_features(batch)
    assert isinstance(compiled, CompiledFeatures)
    assert compiled.n_params == features.n_params
    assert compiled.n_examples == batch.n_sequences
    w = rng.normal(size=features.n_params)
    expected = _unary(features.scores(batch, w))
    assert compiled.row_offsets[-1] == expected.shape[0]
    unary = np.empty((expected.shape[0], compiled.n_unary))
    pair = np.empty(compiled.n_pair)
    W, b, pair_params = _blocks(compiled, w)
    for i in range(compiled.n_examples):
        a, z = compiled.row_offsets[i], compiled.row_offsets[i + 1]
        n_rows = score_example(compiled, W, b, pair_params, 1.0, i, unary, pair)
        assert n_rows == z - a
        np.testing.assert_allclose(unary[:n_rows], expected[a:z], rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(pair, pair_params)


@pytest.mark.parametrize("kind", list(MAPS))
def test_transpose_follows_the_layout_of_w(rng, kind):
    features, batch = MAPS[kind](rng, True)
    compiled = features.compiled_features(batch)
    X = sp.csr_matrix((compiled.data, compiled.indices, compiled.indptr),
                      shape=(compiled.row_offsets[-1], compiled.n_features)).toarray()
    g = rng.normal(size=(X.shape[0], compiled.n_unary))
    w = rng.normal(size=features.n_params)
    # <A w, g> over the unary parts equals <w, A^T g> with A^T g laid out as documented
    # (a unary g reaches W and b only: the pair parameters are scores themselves)
    transposed = np.zeros(features.n_params)
    W, b, _ = _blocks(compiled, transposed)
    W += X.T @ g
    if compiled.has_bias:
        b += g.sum(axis=0)
    scores = _unary(features.scores(batch, w))
    np.testing.assert_allclose(float(np.sum(scores * g)), float(w @ transposed), rtol=1e-10)


@pytest.mark.parametrize("kind", list(MAPS))
def test_zero_scores_are_the_scores_at_zero(rng, kind):
    features, batch = MAPS[kind](rng, True)
    zero = features.zero_scores(batch)
    at_zero = features.scores(batch, np.zeros(features.n_params))
    assert type(zero) is type(at_zero)
    for name in ("unary", "transition", "start", "end", "offsets"):
        if hasattr(at_zero, name):
            np.testing.assert_array_equal(getattr(zero, name), getattr(at_zero, name))


def test_dense_rows_are_stored_once_as_csr(rng):
    features, batch = _chain(rng, sparse=False)
    compiled = features.compiled_features(batch)
    assert compiled.data.shape[0] == np.count_nonzero(batch.X)
    assert compiled.indptr.dtype == np.int64 and compiled.row_offsets.dtype == np.int64
