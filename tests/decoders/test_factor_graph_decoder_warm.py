"""The cutting plane's LP-MAP fast path (FactorGraphDecoder._map_shared_pairs) warm-started
from the ADMM state of a previous call: the same solution as a cold start, in fewer ADMM
iterations; the state is kept only for LP-MAP by ADMM and is replaced when it does not
fit."""

import numpy as np

from skstruct.decoders import FactorGraph, FactorGraphDecoder, FactorGraphScores


def _problem(seed, n_examples=40, n_labels=8):
    rng = np.random.default_rng(seed)
    graph = FactorGraph.pairwise(n_labels)
    unary = rng.normal(0.0, 1.0, (n_examples, n_labels))
    # attractive couplings: the local polytope is tight, LP-MAP is integral (rounding
    # at 1/2 is then not sensitive to the ADMM tolerance)
    coupling = np.abs(rng.normal(0.0, 0.3, graph.n_pairs))
    return graph, unary, coupling, rng


def test_warm_start_gives_the_cold_solution_in_fewer_iterations():
    graph, unary, coupling, rng = _problem(0)
    decoder = FactorGraphDecoder(graph, max_iter=5000, tol=1e-9)
    # the next iterate of a training run: scores close to the previous ones
    unary_next = unary + rng.normal(0.0, 0.02, unary.shape)
    coupling_next = coupling + rng.normal(0.0, 0.01, coupling.shape)

    cold = {}
    labels_cold = decoder._map_shared_pairs(unary_next, coupling_next, warm_start=cold)
    warm = {}
    decoder._map_shared_pairs(unary, coupling, warm_start=warm)
    first_state = warm["admm"]
    labels_warm = decoder._map_shared_pairs(unary_next, coupling_next, warm_start=warm)

    assert warm["admm"] is not first_state
    np.testing.assert_array_equal(labels_warm, labels_cold)
    np.testing.assert_array_equal(labels_cold, decoder._map_shared_pairs(unary_next,
                                                                          coupling_next))
    np.testing.assert_allclose(warm["admm"].u, cold["admm"].u, atol=1e-6)
    assert warm["admm"].converged.all() and cold["admm"].converged.all()
    assert warm["admm"].n_iter.sum() < 0.7 * cold["admm"].n_iter.sum()


def test_the_kept_state_holds_what_a_warm_start_reads():
    graph, unary, coupling, _ = _problem(1, n_examples=5)
    decoder = FactorGraphDecoder(graph, max_iter=500, tol=1e-6)
    state = {}
    decoder._map_shared_pairs(unary, coupling, warm_start=state)
    kept = state["admm"]
    assert kept.u.shape == unary.shape
    assert kept.lam.shape == (5, graph.flat().n_entries)
    assert kept.rho.shape == (5,)
    assert kept.a.size == kept.w.size == kept.q.size == 0


def test_a_state_of_other_examples_is_replaced_not_used():
    graph, unary, coupling, _ = _problem(2)
    decoder = FactorGraphDecoder(graph, max_iter=5000, tol=1e-9)
    state = {}
    decoder._map_shared_pairs(unary[:7], coupling, warm_start=state)
    labels = decoder._map_shared_pairs(unary, coupling, warm_start=state)
    np.testing.assert_array_equal(labels, decoder._map_shared_pairs(unary, coupling))
    assert state["admm"].u.shape == unary.shape


def test_exact_map_ignores_the_warm_start():
    graph, unary, coupling, _ = _problem(3)
    decoder = FactorGraphDecoder(graph, map_method="exact")
    state = {}
    labels = decoder._map_shared_pairs(unary, coupling, warm_start=state)
    assert state == {}
    np.testing.assert_array_equal(labels, decoder._map_shared_pairs(unary, coupling))


def test_examples_that_a_far_warm_start_leaves_unconverged_are_solved_cold():
    """LP-SparseMAP warm-started from the solution of scores far from the new ones (a
    line search's long step): every example converges as a cold start does, to the cold
    solution; the re-solved examples report the iterations of both runs."""
    rng = np.random.default_rng(4)
    n, n_labels = 200, 30
    graph = FactorGraph.pairwise(n_labels)
    decoder = FactorGraphDecoder(graph, max_iter=200, tol=1e-4)
    reference = FactorGraphDecoder(graph, max_iter=20000, tol=1e-10)

    def scores(unary, coupling):
        return FactorGraphScores(unary, np.tile(coupling, (n, 1)))

    unary, coupling = rng.normal(-1, 1, (n, n_labels)), rng.normal(0, 0.3, graph.n_pairs)
    far = scores(unary + 10 * rng.normal(size=unary.shape),
                 coupling + 3 * rng.normal(size=coupling.shape))
    previous = decoder.sparsemap(scores(unary, coupling))
    cold, warm = decoder.sparsemap(far), decoder.sparsemap(far, init=previous)
    # the hint alone leaves many examples at the iteration cap
    from skstruct.decoders._factor_graph.admm_compiled import admm_batch_compiled

    hinted = admm_batch_compiled(graph.flat(), far.unary, far.pair, max_iter=200,
                                 tol=1e-4, warm_start=previous.admm, keep_state=False,
                                 prune=True)
    stuck = ~hinted.converged
    assert stuck.sum() >= 10
    assert cold.admm.converged.all() and warm.admm.converged.all()
    exact = reference.sparsemap(far).unary
    assert np.abs(warm.unary - exact).max() <= 2 * np.abs(cold.unary - exact).max() + 1e-9
    np.testing.assert_array_equal(warm.admm.n_iter[stuck],
                                  hinted.n_iter[stuck] + cold.admm.n_iter[stuck])
    np.testing.assert_array_equal(warm.admm.n_iter[~stuck], hinted.n_iter[~stuck])
