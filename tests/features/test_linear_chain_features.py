import numpy as np
import scipy.sparse as sp

from skstruct.decoders import ChainParts
from skstruct.features import LinearChainFeatures, csr_matmul
from skstruct.utils import SequenceBatch


def test_csr_matmul_matches_scipy(rng):
    matrix = sp.random(50, 30, density=0.1, format="csr", random_state=0)
    dense = rng.normal(size=(30, 4))
    np.testing.assert_allclose(csr_matmul(matrix, dense), matrix @ dense, atol=1e-12)


def test_transpose_is_the_adjoint_of_scores(rng):
    """⟨A w, g⟩ = ⟨w, Aᵀ g⟩ for dense and sparse inputs."""
    offsets = np.array([0, 3, 4, 8])
    n_features, n_states = 6, 3
    dense = rng.normal(size=(8, n_features))
    for X in (dense, sp.csr_matrix(np.where(dense > 0.3, dense, 0.0))):
        batch = SequenceBatch(X, offsets)
        features = LinearChainFeatures(n_features, n_states)
        w = rng.normal(size=features.n_params)
        grad = ChainParts(rng.normal(size=(8, n_states)), rng.normal(size=(3, n_states, n_states)),
                          rng.normal(size=(3, n_states)), rng.normal(size=(3, n_states)), offsets)
        lhs = grad.dot(features.scores(batch, w)).sum()
        rhs = w @ features.transpose(batch, grad)
        assert np.isclose(lhs, rhs, rtol=1e-12)


def test_pack_unpack_round_trip(rng):
    features = LinearChainFeatures(5, 3)
    w = rng.normal(size=features.n_params)
    np.testing.assert_array_equal(features.pack(*features.unpack(w)), w)


def test_csr_transpose_matmul_matches_scipy(rng, monkeypatch):
    from skstruct.features import _sparse

    matrix = sp.random(60, 25, density=0.1, format="csr", random_state=1)
    dense = rng.normal(size=(60, 3))
    expected = matrix.T @ dense
    np.testing.assert_allclose(_sparse.csr_transpose_matmul(matrix, dense), expected, atol=1e-12)
    # The rows are split into chunks that scatter into their own buffers, summed at the
    # end (one chunk per thread, so one chunk for a product this small): every split.
    for n_chunks in (1, 2, 3, 7, 59, 60, 61):
        chunked = _sparse._csr_transpose_matmul(matrix.data, matrix.indices, matrix.indptr,
                                                dense, matrix.shape[1], n_chunks)
        np.testing.assert_allclose(chunked, expected, atol=1e-12, err_msg=str(n_chunks))
    monkeypatch.setattr(_sparse, "_SCATTER_BUFFER_LIMIT", 0)
    np.testing.assert_allclose(_sparse.csr_transpose_matmul(matrix, dense), expected, atol=1e-12)


def test_linear_features_transpose_is_the_adjoint(rng):
    from skstruct.decoders import MulticlassParts, MulticlassScores
    from skstruct.features import LinearFeatures

    dense = rng.normal(size=(7, 5))
    for X in (dense, sp.csr_matrix(np.where(dense > 0, dense, 0.0))):
        batch = SequenceBatch(X, np.arange(8))
        features = LinearFeatures(5, 3, MulticlassScores)
        w = rng.normal(size=features.n_params)
        grad = MulticlassParts(rng.normal(size=(7, 3)))
        lhs = grad.dot(features.scores(batch, w)).sum()
        assert np.isclose(lhs, w @ features.transpose(batch, grad), rtol=1e-12)


def test_example_transpose_equals_the_dense_transpose(rng):
    from skstruct.decoders import MulticlassParts, MulticlassScores
    from skstruct.features import LinearFeatures

    dense = rng.normal(size=(4, 6))
    dense[:, [1, 4]] = 0.0
    for X in (dense, sp.csr_matrix(dense)):
        batch = SequenceBatch(X, np.array([0, 4]))
        chain = LinearChainFeatures(6, 3)
        grad = ChainParts(rng.normal(size=(4, 3)), rng.normal(size=(1, 3, 3)),
                          rng.normal(size=(1, 3)), rng.normal(size=(1, 3)), batch.offsets)
        dense_grad = chain.transpose(batch, grad)
        indices, values = chain.example_transpose(batch, grad)
        assert len(np.unique(indices)) == len(indices)
        rebuilt = np.zeros(chain.n_params)
        rebuilt[indices] = values
        np.testing.assert_allclose(rebuilt, dense_grad, atol=1e-12)
        one = SequenceBatch(X[:1], np.array([0, 1]))
        flat = LinearFeatures(6, 3, MulticlassScores)
        grad1 = MulticlassParts(rng.normal(size=(1, 3)))
        indices, values = flat.example_transpose(one, grad1)
        rebuilt = np.zeros(flat.n_params)
        rebuilt[indices] = values
        np.testing.assert_allclose(rebuilt, flat.transpose(one, grad1), atol=1e-12)
