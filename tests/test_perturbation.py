"""The randomized MAP-perturbation learner."""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import chisquare

from skstruct import PerturbedMAPClassifier
from skstruct.decoders import MultilabelDecoder, SubsetDecoder


def _multilabel_data(n=40, n_labels=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    W = rng.normal(size=(6, n_labels)) * 2
    Y = (X @ W + rng.normal(size=(n, n_labels)) > 0).astype(np.int64)
    return X, Y


def _all_label_sets(n_labels):
    return np.array(list(itertools.product((0, 1), repeat=n_labels)))


def _exact_crf_loss(model, X, Y):
    """1 − mean_i P(y_i | x_i) at temperature β, from every label set (enumerated)."""
    theta = model.decision_function(X) @ _all_label_sets(Y.shape[1]).T / model.beta_
    gold = np.sum(model.decision_function(X) * Y, axis=1) / model.beta_
    return 1.0 - np.mean(np.exp(gold - logsumexp(theta, axis=1)))


def test_training_calls_no_map_and_counts_the_decoder_operations():
    X, Y = _multilabel_data()
    model = PerturbedMAPClassifier(candidates="proposal", max_iter=5,
                                   random_state=0).fit(X, Y)
    calls = model.decoder_calls_
    assert calls["map"] == 0 and calls["top_k"] == 0 and calls["loss_augmented_map"] == 0
    assert calls["neighbours"] == 5 * int(np.ceil(np.sqrt(40)))
    assert calls["parts"] > 0 and calls["score_outputs"] > 0
    assert model.predict(X).shape == Y.shape
    assert model.objective_curve_.shape == (5,)


def test_all_candidates_loss_is_the_crf_loss():
    X, Y = _multilabel_data()
    model = PerturbedMAPClassifier(max_iter=8, random_state=0).fit(X, Y)
    np.testing.assert_allclose(model.randomized_loss(X, Y, candidates="all"),
                               _exact_crf_loss(model, X, Y), rtol=1e-10)
    # and training on all candidates records that loss before each step
    exact = PerturbedMAPClassifier(candidates="all", objective="pooled", max_iter=1,
                                   l1=0.0).fit(X, Y)
    np.testing.assert_allclose(exact.objective_curve_[0], 1.0 - 1.0 / 2 ** Y.shape[1])


def test_randomized_loss_never_exceeds_the_full_loss():
    X, Y = _multilabel_data(seed=1)
    model = PerturbedMAPClassifier(max_iter=10, random_state=0).fit(X, Y)
    full = model.randomized_loss(X, Y, candidates="all")
    losses = [model.randomized_loss(X, Y, random_state=seed) for seed in range(15)]
    assert len(losses) == 15
    assert all(loss <= full + 1e-12 for loss in losses)
    assert min(losses) < full  # the candidate sets are strict subsets somewhere


def test_all_candidates_step_is_the_gradient_of_the_log_likelihood_of_the_data():
    """From w = 0 one step of size 1 without ℓ1 moves w to ∇ log (1/m) Σ_i q_i(0)."""
    X, Y = _multilabel_data(n=12, n_labels=3)
    # steps are learning_rate β² / R²
    unit_step = (1.0 + np.max(np.sum(X ** 2, axis=1))) / 0.7 ** 2
    model = PerturbedMAPClassifier(candidates="all", objective="pooled", max_iter=1,
                                   l1=0.0, l2=0.0, beta=0.7,
                                   learning_rate=unit_step).fit(X, Y)
    w1 = model._params()
    features = model._features()
    outputs = _all_label_sets(3)

    def log_u(w):
        unary, bias = features.unpack(w)
        scores = (X @ unary + bias) / 0.7
        gold = np.sum(scores * Y, axis=1)
        return np.log(np.mean(np.exp(gold - logsumexp(scores @ outputs.T, axis=1))))

    w0 = np.zeros_like(w1)
    eps = 1e-6
    numeric = np.array([(log_u(w0 + eps * e) - log_u(w0 - eps * e)) / (2 * eps)
                        for e in np.eye(w0.size)])
    np.testing.assert_allclose(w1, numeric, atol=1e-7)


def test_reproducible_under_random_state():
    X, Y = _multilabel_data(seed=2)
    fits = [PerturbedMAPClassifier(candidates="proposal", max_iter=8, random_state=seed,
                                   uniform_start=0.5)
            .fit(X, Y) for seed in (3, 3, 4)]
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
    assert not np.array_equal(fits[0].coef_, fits[2].coef_)


def test_gumbel_max_samples_follow_the_gibbs_distribution():
    X, Y = _multilabel_data(n=20, n_labels=3)
    model = PerturbedMAPClassifier(max_iter=5, random_state=0).fit(X, Y)
    n_draws = 4000
    draws = np.stack(model.sample(X[:1], n_samples=n_draws, random_state=0))[:, 0]
    outputs = _all_label_sets(3)
    index = draws @ (2 ** np.arange(3)[::-1])
    observed = np.bincount(index, minlength=8)
    theta = model.decision_function(X[:1])[0] @ outputs.T / model.beta_
    expected = n_draws * np.exp(theta - logsumexp(theta))
    assert chisquare(observed, expected).pvalue > 1e-3
    assert len(set(index.tolist())) > 1


def test_subset_decoder_learns_k_subsets_without_map():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(30, 5))
    scores = X @ rng.normal(size=(5, 6))
    Y = np.zeros((30, 6), dtype=np.int64)
    np.put_along_axis(Y, np.argsort(-scores, axis=1)[:, :2], 1, axis=1)
    model = PerturbedMAPClassifier(SubsetDecoder(k=2), k=2, max_iter=15,
                                   random_state=0).fit(X, Y)
    assert model.decoder_calls_["map"] == 0
    pred = model.predict(X)
    assert (pred.sum(axis=1) == 2).all()
    assert np.mean(pred == Y) > 0.7


def test_bad_parameters_and_inputs():
    X, Y = _multilabel_data(n=10)
    with pytest.raises(ValueError, match="k"):
        PerturbedMAPClassifier(k=0).fit(X, Y)
    with pytest.raises(ValueError, match="max_outputs"):
        PerturbedMAPClassifier(candidates="all", max_outputs=4).fit(X, Y)
    model = PerturbedMAPClassifier(max_iter=1).fit(X, Y)
    with pytest.raises(ValueError, match="n_samples"):
        model.sample(X, n_samples=0)
    with pytest.raises(ValueError, match="candidates"):
        model.randomized_loss(X, Y, candidates="some")
    assert isinstance(model.decoder_, MultilabelDecoder)


def test_n_jobs_does_not_change_the_result():
    X, Y = _multilabel_data(seed=3)
    params = dict(max_iter=6, random_state=0, uniform_start=0.5)
    one = PerturbedMAPClassifier(n_jobs=1, **params).fit(X, Y)
    two = PerturbedMAPClassifier(n_jobs=2, **params).fit(X, Y)
    np.testing.assert_array_equal(one.coef_, two.coef_)
    with pytest.raises(ValueError, match="n_jobs"):
        PerturbedMAPClassifier(n_jobs=0).fit(X, Y)


def test_multiclass_uniform_draws_and_neighbours():
    from skstruct.decoders import MulticlassDecoder, MulticlassScores

    unary = np.array([[0.0, -np.inf, 1.0, 2.0], [5.0, 1.0, -np.inf, -np.inf]])
    decoder = MulticlassDecoder()
    draws = decoder.sample_uniform(MulticlassScores(unary), 3000, random_state=0)
    assert draws.shape == (2, 3000)
    counts = np.bincount(draws[0], minlength=4)
    assert counts[1] == 0 and chisquare(counts[[0, 2, 3]]).pvalue > 1e-3
    assert set(np.unique(draws[1])) == {0, 1}
    paths, n = decoder.neighbours(MulticlassScores(unary), np.array([2, 0]))
    np.testing.assert_array_equal(n, [2, 1])
    np.testing.assert_array_equal(paths, [[0, 3], [1, -1]])


def test_multiclass_model_without_map():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)  # fixed 1/sqrt(t) steps need scaled features
    model = PerturbedMAPClassifier(max_iter=20, random_state=0).fit(X, y)
    assert model.decoder_calls_["map"] == 0
    assert model.score(X, y) > 0.6
    assert list(model.classes_) == [0, 1, 2]


def test_sample_weight_zero_drops_an_example_from_the_exact_steps():
    X, Y = _multilabel_data(n=12, n_labels=3)
    weights = np.ones(12)
    weights[:4] = 0.0
    model = dict(candidates="all", max_iter=3, beta=0.7, l1=0.0, l2=0.0)
    weighted = PerturbedMAPClassifier(**model).fit(X, Y, sample_weight=weights)
    dropped = PerturbedMAPClassifier(**model).fit(X[4:], Y[4:])
    np.testing.assert_allclose(weighted.coef_, dropped.coef_, atol=1e-12)
    np.testing.assert_allclose(weighted.objective_curve_, dropped.objective_curve_)


def test_chain_best_neighbour_kernel_gives_the_fit_of_listing_the_neighbours():
    from skstruct.decoders import ChainDecoder

    class ListingChainDecoder(ChainDecoder):
        best_neighbour = None  # the proposal lists and scores the neighbourhood

    rng = np.random.default_rng(0)
    X, y = [], []
    for _ in range(30):
        length = rng.integers(2, 7)
        states = np.cumsum(rng.integers(0, 2, size=length)) % 3
        features = rng.normal(size=(length, 3)) * 0.5
        features[np.arange(length), states] += 1.0
        X.append(features)
        y.append(np.array(["A", "B", "C"])[states])
    params = dict(candidates="proposal", max_iter=8, random_state=0, uniform_start=0.5,
                  learning_rate=0.5)
    direct = PerturbedMAPClassifier(ChainDecoder(), **params).fit(X, y)
    listing = PerturbedMAPClassifier(ListingChainDecoder(), **params).fit(X, y)
    assert direct.decoder_calls_["best_neighbour"] == 8 * 6
    assert direct.decoder_calls_["neighbours"] == 0
    assert listing.decoder_calls_["neighbours"] == 8 * 6
    np.testing.assert_allclose(direct.coef_, listing.coef_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(direct.transition_, listing.transition_, rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(direct.objective_curve_, listing.objective_curve_,
                               rtol=1e-10)
    assert np.abs(direct.coef_).sum() > 0


def test_empty_neighbourhoods_warn_that_nothing_was_learned():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(20, 3))
    Y = np.zeros((20, 5), dtype=np.int64)
    Y[:, :2] = 1
    with pytest.warns(UserWarning, match="k >= 2"):
        model = PerturbedMAPClassifier(SubsetDecoder(k=2), k=1, max_iter=3,
                                       candidates="proposal", random_state=0).fit(X, Y)
    assert not np.any(model.coef_)
    with pytest.warns(UserWarning, match="k >= 2"):
        model = PerturbedMAPClassifier(SubsetDecoder(k=2), k=1).fit(X, Y)
    assert not np.any(model.coef_)


def _dag_data(m=12, n=4, seed=0):
    from skstruct.decoders import DAGDecoder, DAGScores
    rng = np.random.default_rng(seed)
    w = 2.0 * rng.normal(size=3)
    X = [rng.normal(size=(n * n, 3)) for _ in range(m)]
    scores = DAGScores(np.concatenate([x @ w for x in X]), np.full(m, n))
    return X, list(DAGDecoder(max_parents=2).map(scores).reshape(m, n, n))


def test_dag_fits_never_enumerate_the_dags(monkeypatch):
    """Neither the default fit nor the paper's proposal fit on DAGs calls an operation
    that enumerates every DAG (|Y| counted by ``log_count``, neighbourhoods generated,
    uniform draws by rejection); β is the one of the enumerated count."""
    from skstruct.decoders import DAGDecoder
    from skstruct.decoders._dag import kernels
    X, Y = _dag_data()
    reference = PerturbedMAPClassifier(DAGDecoder(max_parents=2), max_iter=2).fit(X, Y)

    def enumerating(*args, **kwargs):
        raise AssertionError("a DAG enumeration was called")
    for name in ("best", "top_k", "log_partition", "neighbours", "enumerate_dags"):
        monkeypatch.setattr(kernels, name, enumerating)
    for params in ({}, dict(candidates="proposal", objective="pooled", l1=0.01)):
        model = PerturbedMAPClassifier(DAGDecoder(max_parents=2), max_iter=2,
                                       random_state=0, **params).fit(X, Y)
        assert model.decoder_calls_["log_partition"] == 0
        assert model.beta_ == pytest.approx(1 / np.log(442 * (np.sqrt(12) - 1)))
        assert model.beta_ == pytest.approx(reference.beta_)


@pytest.mark.parametrize("case", ["multilabel", "subsets", "dags"])
def test_all_candidates_enumerated_once_give_the_per_iteration_fit(case, monkeypatch):
    """The exact path (every output's parts once per fit, one sparse product per step)
    gives the loss curve and weights of re-enumerating and scoring every output at
    every iteration (``_enumerate`` returning None)."""
    from skstruct.decoders import DAGDecoder
    if case == "multilabel":
        (X, Y), decoder = _multilabel_data(n=15), None
    elif case == "subsets":
        X, Y = _multilabel_data(n=15, n_labels=5, seed=3)
        Y = np.zeros_like(Y)
        Y[np.arange(15), np.arange(15) % 5] = Y[np.arange(15), (np.arange(15) + 2) % 5] = 1
        decoder = SubsetDecoder(k=2)
    else:
        (X, Y), decoder = _dag_data(), DAGDecoder(max_parents=2)
    params = dict(decoder=decoder, candidates="all", max_iter=4, l1=0.01)
    fast = PerturbedMAPClassifier(**params).fit(X, Y)
    monkeypatch.setattr(PerturbedMAPClassifier, "_enumerate", lambda *args: None)
    slow = PerturbedMAPClassifier(**params).fit(X, Y)
    # enumerated once (and maybe once more to count the outputs) against every step
    assert fast.decoder_calls_["top_k"] <= 2 and slow.decoder_calls_["top_k"] >= 4
    assert np.ptp(slow.objective_curve_) > 1e-3  # it learned something to compare
    np.testing.assert_allclose(fast.objective_curve_, slow.objective_curve_, rtol=0,
                               atol=1e-10)
    np.testing.assert_allclose(fast._params(), slow._params(), rtol=0, atol=1e-10)


def test_output_fingerprints_tell_apart_outputs_with_equal_position_sums():
    """Outputs with the same parts count and the same sum of part positions (arcs {0, 3}
    against {1, 2}; states 1 0 0 1 against 0 1 1 0) get different prints; equal ones
    equal prints."""
    from skstruct._perturbation import _hashes
    salt = np.random.default_rng(0).integers(1, 2**62, size=1).astype(np.uint64) | 1
    outputs = np.array([1, 0, 0, 1, 0, 1, 1, 0, 1, 0, 0, 1, 2, 0, 0, 0])
    prints = _hashes(outputs, np.array([0, 4, 8, 12, 16]), salt)
    assert prints[0] != prints[1] and prints[0] == prints[2] and prints[3] != prints[0]
    rng = np.random.default_rng(1)
    many = np.unique(rng.integers(0, 2, size=(500, 10)), axis=0)
    offsets = np.arange(many.shape[0] + 1) * 10
    assert np.unique(_hashes(many.ravel(), offsets, salt)).size == many.shape[0]
