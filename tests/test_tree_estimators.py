"""Estimators on dependency trees: fit, predict, score and the tree-specific outputs."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.model_selection import cross_validate

from skstruct import CRF, SparseMAPClassifier, StructuredSVM
from skstruct.datasets import load_ud_english_ewt
from skstruct.decoders import ChainDecoder, TreeDecoder, states_to_heads
from skstruct.decoders._tree.decoder import enumerate_trees
from skstruct.preprocessing import ArcVectorizer

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

PARSERS = [
    CRF(decoder=TreeDecoder(), alpha=1e-2, max_iter=40),
    StructuredSVM(decoder=TreeDecoder(), alpha=1e-2, max_iter=10, random_state=0),
    SparseMAPClassifier(decoder=TreeDecoder(), alpha=1e-2, max_iter=40),
    SparseMAPClassifier(decoder=TreeDecoder(), cost="hamming", alpha=1e-2, max_iter=40),
    CRF(decoder=TreeDecoder(projective=True, single_root=True), alpha=1e-2, max_iter=20),
]


def _ids(estimator):
    return f"{type(estimator).__name__}-{getattr(estimator, 'cost', None)}"


@pytest.fixture(scope="module")
def treebank():
    sentences = [s for s in load_ud_english_ewt("dev") if len(s["head"]) <= 12][:120]
    vectorizer = ArcVectorizer(n_features=2**16).fit(sentences)
    X = vectorizer.transform(sentences)
    y = [s["head"] for s in sentences]
    return X[:80], y[:80], X[80:], y[80:]


def _is_tree(heads, single_root=False):
    n = len(heads)
    roots = np.sum(heads == 0)
    if roots < 1 or (single_root and roots != 1):
        return False
    for m in range(1, n + 1):
        seen, node = set(), m
        while node != 0:
            if node in seen:
                return False
            seen.add(node)
            node = heads[node - 1]
    return True


@pytest.mark.parametrize("parser", PARSERS, ids=_ids)
def test_parsers_learn_trees(parser, treebank):
    X, y, X_test, y_test = treebank
    model = clone(parser).fit(X, y)
    assert model.output_kind_ == "tree"
    assert model.coef_.shape == (2**16,)
    predicted = model.predict(X_test)
    assert [len(p) for p in predicted] == [len(h) for h in y_test]
    single_root = model.decoder_.single_root
    assert all(_is_tree(p, single_root) for p in predicted)
    # Far better than attaching every word to its left neighbour (about 30 % here).
    assert model.score(X, y) > 0.8
    assert model.score(X_test, y_test) > 0.5
    blocks = model.decision_function(X_test[:3])
    assert [b.shape for b in blocks] == [(len(h), len(h)) for h in y_test[:3]]


def test_tree_marginals_and_distributions(treebank):
    X, y, X_test, y_test = treebank
    n_words = [len(h) for h in y_test[:5]]
    crf = clone(PARSERS[0]).fit(X, y)
    blocks = crf.predict_marginals(X_test[:5])
    assert [b.shape for b in blocks] == [(n, n) for n in n_words]
    for block in blocks:
        np.testing.assert_allclose(block.sum(axis=1), 1.0)
    sparse = clone(PARSERS[2]).fit(X, y)
    distributions = sparse.predict_distribution(X_test[:5])
    blocks = sparse.predict_marginals(X_test[:5])
    assert len(distributions) == len(blocks) == 5
    for (trees, weights), block, n in zip(distributions, blocks, n_words, strict=True):
        assert block.shape == (n, n)
        assert len(trees) == len(weights) >= 1
        assert weights.sum() == pytest.approx(1.0)
        assert all(_is_tree(t) and len(t) == n for t in trees)
        expected = np.zeros_like(block)
        for tree, weight in zip(trees, weights, strict=True):
            n = len(tree)
            states = np.where(tree == 0, np.arange(n), tree - 1)
            expected[np.arange(n), states] += weight
        np.testing.assert_allclose(block, expected, atol=1e-10)


def test_cross_validate_on_trees(treebank):
    X, y, _, _ = treebank
    parser = clone(PARSERS[0]).set_params(max_iter=10)
    parallel = cross_validate(parser, X, y, cv=2, n_jobs=2)
    serial = cross_validate(parser, X, y, cv=2, n_jobs=1)
    # Worker processes fit and score exactly what the parent process does.
    assert parallel["test_score"].shape == (2,)
    np.testing.assert_array_equal(parallel["test_score"], serial["test_score"])
    assert np.all(serial["test_score"] > 0.3)


def test_bad_tree_input(treebank):
    X, y, _, _ = treebank
    parser = CRF(decoder=TreeDecoder(), max_iter=2)
    with pytest.raises(ValueError, match="n \\* n arc rows"):
        parser.fit([sp.csr_matrix(np.ones((5, 3)))], [np.array([0, 1])])
    with pytest.raises(ValueError, match="CoNLL heads"):
        parser.fit(X[:1], [np.full(len(y[0]), len(y[0]) + 1)])
    with pytest.raises(ValueError, match="cycle"):
        parser.fit([sp.csr_matrix(np.ones((4, 3)))], [np.array([2, 1])])
    with pytest.raises(ValueError, match="decodes sequence outputs"):
        SparseMAPClassifier(decoder=ChainDecoder()).fit(np.ones((3, 2)), np.array([0, 1, 0]))
    projective = {tuple(t) for t in enumerate_trees(4, projective=True)}
    crossing = next(t for t in enumerate_trees(4) if tuple(t) not in projective)
    heads = states_to_heads(crossing, np.array([0, 4]))
    with pytest.raises(ValueError, match="not projective"):
        CRF(decoder=TreeDecoder(projective=True)).fit([sp.csr_matrix(np.ones((16, 3)))],
                                                     [heads])
    with pytest.raises(ValueError, match="heads itself"):
        parser.fit(X[:1], [np.arange(1, len(y[0]) + 1)])
    with pytest.raises(ValueError, match="tokens in X"):
        parser.fit(X[:2], [y[1], y[0]] if len(y[0]) != len(y[1]) else [y[0][:-1], y[1]])
    fitted = clone(PARSERS[0]).set_params(max_iter=2).fit(X[:5], y[:5])
    with pytest.raises(ValueError, match="features"):
        fitted.predict([sp.csr_matrix(np.ones((4, 7)))])
