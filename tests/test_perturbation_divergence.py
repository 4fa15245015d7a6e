"""PerturbedMAPClassifier trains to finite weights on unscaled features, and says that
training diverged (naming learning_rate) when the weights or scores stop being finite."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from skstruct import PerturbedMAPClassifier
from skstruct._perturbation import _largest_squared_row_norm
from skstruct.losses._randomized import likelihood_weights as _likelihood_weights


def _one_label_per_example(n=300, n_features=20, n_labels=5, seed=0):
    """uint8 counts in 50 .. 255 (all positive, strongly correlated columns); every
    example has exactly one of ``n_labels`` labels on."""
    rng = np.random.default_rng(seed)
    X = rng.integers(50, 256, size=(n, n_features)).astype(np.uint8)
    centred = X - X.mean(axis=0)
    chosen = (centred @ rng.normal(size=(n_features, n_labels))).argmax(axis=1)
    return X, np.eye(n_labels, dtype=int)[chosen]


#: The paper's configuration: proposals drawn at every step, the pooled likelihood,
#: stochastic ascent with the l1 step.
PAPER = dict(candidates="proposal", objective="pooled", l1=0.01)

FORMS = {
    "float64": lambda X, scale: X.astype(np.float64) * scale,
    "sparse": lambda X, scale: sp.csr_matrix(X.astype(np.float64) * scale),
    "uint8": lambda X, scale: X,
    "int64 sparse": lambda X, scale: sp.csr_matrix(X.astype(np.int64)),
}


@pytest.mark.parametrize("scale", [1e-3, 1e-2, 0.1, 1.0, 10.0, 1e3])
@pytest.mark.parametrize("form", ["float64", "sparse"])
def test_default_fit_stays_finite_whatever_the_feature_scale(form, scale):
    X, Y = _one_label_per_example()
    Xs = FORMS[form](X, scale)
    model = PerturbedMAPClassifier(random_state=0).fit(Xs, Y)
    assert np.all(np.isfinite(model.coef_)) and np.all(np.isfinite(model.intercept_))
    assert np.all(np.isfinite(model.objective_curve_))
    assert model.predict(Xs).shape == Y.shape


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e3])
def test_one_step_moves_the_scores_by_a_bound_free_of_the_feature_scale(scale):
    """A part score moves by at most learning_rate * Σ|g| <= 2 learning_rate / β in a
    step (g its gradient in part-score space), at every feature scale."""
    X, Y = _one_label_per_example()
    Xs = X * scale
    model = PerturbedMAPClassifier(random_state=0, max_iter=1, l1=0.0).fit(Xs, Y)
    scores = Xs @ model.coef_.T + model.intercept_
    assert np.abs(scores).max() <= 2.0 / model.beta_ * (1 + 1e-12)
    assert np.abs(scores).max() > 0.01 / model.beta_  # and it does move them


@pytest.mark.parametrize("form", ["uint8", "int64 sparse"])
def test_default_fit_on_integer_counts_stays_finite(form):
    X, Y = _one_label_per_example()
    Xs = FORMS[form](X, 1.0)
    model = PerturbedMAPClassifier(random_state=0).fit(Xs, Y)
    assert np.all(np.isfinite(model.coef_)) and np.all(np.isfinite(model.intercept_))
    # the integer counts train the same model as the same values in float64 (up to the
    # rounding of sparse against dense products, which L-BFGS's iterations carry on)
    reference = PerturbedMAPClassifier(random_state=0).fit(X.astype(np.float64), Y)
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=0,
                               atol=1e-4 * np.abs(reference.coef_).max())
    np.testing.assert_array_equal(model.predict(Xs), reference.predict(X))


def test_a_step_that_leaves_every_gold_output_improbable_is_not_nan():
    # learning_rate=1e4 makes every gold output's probability underflow to 0 at one
    # iteration (randomized loss 1.0); the gradient weights then come from log q
    X, Y = _one_label_per_example()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        model = PerturbedMAPClassifier(random_state=0, learning_rate=1e8,
                                       **PAPER).fit(X, Y)
    assert np.max(model.objective_curve_) == 1.0
    assert np.all(np.isfinite(model.coef_))


def test_likelihood_weights_are_the_gradient_weights_and_survive_underflow():
    omega = np.array([0.5, 0.25, 0.25, 0.0])
    q = np.array([0.2, 0.6, 0.1, 0.9])
    beta = 0.3
    np.testing.assert_allclose(_likelihood_weights(omega, np.log(q), beta),
                               omega * q / (beta * (omega @ q)), rtol=1e-14)
    # every q_i below the smallest float: the weights go to the largest ω_i q_i
    log_q = np.array([-2000.0, -1000.0, -1001.0, -10.0])
    weights = _likelihood_weights(omega, log_q, beta)
    np.testing.assert_allclose(weights, [0.0, 1 / (1 + np.exp(-1)) / beta,
                                         np.exp(-1) / (1 + np.exp(-1)) / beta, 0.0],
                               rtol=1e-12, atol=1e-300)


def test_largest_squared_row_norm_of_every_storage():
    X = np.array([[3, 4], [1, 0], [0, 0]], dtype=np.uint8)  # 3² + 4² = 25, no overflow
    assert _largest_squared_row_norm(X) == 25.0
    assert _largest_squared_row_norm(sp.csr_matrix(X)) == 25.0
    pattern = sp.csr_matrix(X)
    pattern.data = None  # rows without values: every stored value is 1.0
    assert _largest_squared_row_norm(pattern) == 2.0


def test_diverging_training_raises_naming_learning_rate():
    X, Y = _one_label_per_example()
    model = PerturbedMAPClassifier(random_state=0, learning_rate=1e308, max_iter=5,
                                   **PAPER)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(ValueError, match=r"PerturbedMAPClassifier: training diverged "
                                             r"after \d+ step\(s\).*lower learning_rate "
                                             r"\(now 1e\+308\) or scale the features"):
            model.fit(X / 255.0, Y)


def test_features_whose_squared_norms_overflow_are_rejected():
    X, Y = _one_label_per_example()
    with pytest.raises(ValueError, match="PerturbedMAPClassifier: the squared norms.*"
                                         "scale the features"):
        PerturbedMAPClassifier(random_state=0).fit(X * 1e160, Y)


def _many_sparse_labels(n=100, n_features=40, n_labels=30, seed=0):
    """One label of 30 on per example: a uniform start holds about 15."""
    rng = np.random.default_rng(seed)
    X = (rng.random((n, n_features)) < 0.2).astype(np.float64)
    Y = np.zeros((n, n_labels), dtype=np.int64)
    Y[np.arange(n), rng.integers(0, n_labels, n)] = 1
    return X, Y


def test_objective_trouble_tells_rising_and_collapsed_curves():
    from skstruct._perturbation import objective_trouble
    falling = np.linspace(0.9, 0.2, 20)
    assert objective_trouble(falling, 5) == (False, False)
    assert objective_trouble(falling[::-1], 5) == (True, False)
    collapsed = np.r_[0.5, 0.9, np.zeros(5), np.linspace(0.3, 0.1, 13)]
    assert objective_trouble(collapsed, 5) == (False, True)
    assert objective_trouble(np.r_[0.5, 0.9, np.zeros(4), np.full(14, 0.2)], 5) == (
        False, False)
    assert objective_trouble(np.zeros(20), 5) == (False, True)


def test_collapsing_objective_of_the_proposals_warns_what_to_change():
    """Steps 1000 times the default: the proposals end far from the gold outputs, every
    q_i is 1 and the randomized loss is 0 for many iterations."""
    from sklearn.exceptions import ConvergenceWarning
    X, Y = _many_sparse_labels()
    with pytest.warns(ConvergenceWarning, match="collapsed to 0.*candidates='neighbourhood'"):
        model = PerturbedMAPClassifier(learning_rate=1e3, max_iter=30, random_state=0,
                                       **PAPER).fit(X, Y)
    assert np.sum(model.objective_curve_ == 0) >= 5


def test_rising_objective_warns_to_lower_the_learning_rate():
    from sklearn.exceptions import ConvergenceWarning
    X, Y = _many_sparse_labels()
    with pytest.warns(ConvergenceWarning, match="rose.*lower learning_rate"):
        PerturbedMAPClassifier(learning_rate=1e4, max_iter=30, random_state=0,
                               **PAPER).fit(X, Y)


def test_a_healthy_proposal_fit_does_not_warn():
    from sklearn.exceptions import ConvergenceWarning
    X, Y = _many_sparse_labels()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        PerturbedMAPClassifier(max_iter=20, random_state=0, **PAPER).fit(X, Y)
