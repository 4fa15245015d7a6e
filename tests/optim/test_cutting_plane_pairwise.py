"""The pairwise hinge's cutting plane (LP-MAP by ADMM) warm-starts every loss-augmented
inference from the ADMM state of the previous one: the fit is the one of cold starts, with
fewer ADMM iterations in all."""

import warnings

import numpy as np

from skstruct import StructuredSVM
from skstruct.decoders import FactorGraph, FactorGraphDecoder

_map_shared_pairs = FactorGraphDecoder._map_shared_pairs


def _data(seed=0, n=60, n_features=5, n_labels=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    W = rng.normal(size=(n_features, n_labels))
    shared = rng.normal(0.0, 1.5, (n, 1))
    Y = (X @ W + shared + rng.normal(0.0, 0.5, (n, n_labels)) > 0).astype(int)
    return X, Y


def _fit(monkeypatch, warm):
    calls = []

    def spy(self, unary, coupling, warm_start=None, **options):
        kept = None if warm_start is None else warm_start.get("admm")
        if not warm:
            warm_start = {}  # a fresh dict every call: cold starts, iterations still seen
        found = _map_shared_pairs(self, unary, coupling, warm_start=warm_start, **options)
        calls.append((kept, warm_start["admm"]))
        return found

    X, Y = _data()
    # a chain of pairs: a tree, whose local polytope is tight, so LP-MAP is integral and
    # its rounding not sensitive to the ADMM tolerance
    chain = np.column_stack([np.arange(Y.shape[1] - 1), np.arange(1, Y.shape[1])])
    decoder = FactorGraphDecoder(FactorGraph.pairwise(Y.shape[1], pairs=chain),
                                 max_iter=20000, tol=1e-10)
    with monkeypatch.context() as patch:
        patch.setattr(FactorGraphDecoder, "_map_shared_pairs", spy)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = StructuredSVM(decoder, solver="cutting_plane", alpha=0.1, tol=1e-3,
                                  max_iter=30).fit(X, Y)
    return model, calls


def test_warm_started_fit_equals_the_cold_one_in_fewer_admm_iterations(monkeypatch):
    warm_model, warm_calls = _fit(monkeypatch, warm=True)
    cold_model, cold_calls = _fit(monkeypatch, warm=False)
    assert len(warm_calls) == len(cold_calls) == warm_model.n_iter_ > 3
    # every call after the first started from the state the previous one left
    assert warm_calls[0][0] is None
    for (_, previous), (kept, _) in zip(warm_calls[:-1], warm_calls[1:]):
        assert kept is previous
    for (_, warm), (_, cold) in zip(warm_calls, cold_calls):
        assert warm.integral.all() and cold.integral.all()
        np.testing.assert_allclose(warm.u, cold.u, atol=1e-6)
    np.testing.assert_allclose(warm_model.coef_, cold_model.coef_, atol=1e-8)
    warm_iterations = sum(state.n_iter.sum() for _, state in warm_calls[1:])
    cold_iterations = sum(state.n_iter.sum() for _, state in cold_calls[1:])
    assert warm_iterations < 0.8 * cold_iterations
