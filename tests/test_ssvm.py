import itertools
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC

from skstruct import StructuredPerceptron, StructuredSVM
from skstruct.decoders import (
    ChainScores,
    MulticlassDecoder,
    MulticlassScores,
    MultilabelScores,
)
from skstruct.features import LinearFeatures
from skstruct.losses import StructuredHingeLoss
from skstruct.optim import RegularizedRisk, structured_hinge_primal
from skstruct.utils import SequenceBatch

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")




def _primal(X, y, alpha, coef, intercept):
    features = LinearFeatures(X.shape[1], coef.shape[0], MulticlassScores)
    risk = RegularizedRisk(features, SequenceBatch(X, np.arange(len(X) + 1)), y,
                           MulticlassDecoder(), StructuredHingeLoss(), alpha, np.ones(len(X)))
    return structured_hinge_primal(risk, features.pack(coef.T, intercept))[0]


def _sequences(rng, n=40):
    X, y = [], []
    for _ in range(n):
        length = rng.integers(2, 6)
        states = np.cumsum(rng.integers(0, 2, size=length)) % 3
        features = rng.normal(size=(length, 3)) * 0.5
        features[np.arange(length), states] += 1.0
        X.append(features)
        y.append(np.array(["A", "B", "C"])[states])
    return X, y


def test_multiclass_ssvm_reaches_the_crammer_singer_optimum(rng):
    X = rng.normal(size=(60, 4))
    y = np.digitize(X[:, 0] + 0.5 * rng.normal(size=60), [-0.5, 0.5])
    alpha = 0.05
    ours = StructuredSVM(alpha=alpha, max_iter=300, tol=1e-5, random_state=0).fit(X, y)
    gap = ours.duality_gaps_[-1]
    assert gap <= 1e-3 * ours.objective_curve_[-1]
    # the bias is penalized like a constant feature
    augmented = np.hstack([X, np.ones((60, 1))])
    svc = LinearSVC(multi_class="crammer_singer", C=1 / (alpha * 60), fit_intercept=False,
                    tol=1e-10, max_iter=200_000).fit(augmented, y)
    ours_value = _primal(X, y, alpha, ours.coef_, ours.intercept_)
    svc_value = _primal(X, y, alpha, svc.coef_[:, :4], svc.coef_[:, 4])
    # the gap bounds our suboptimality; liblinear's solution is optimal to ~1e-8
    assert svc_value - 1e-6 <= ours_value <= svc_value + gap
    assert ours.objective_curve_[-1] == pytest.approx(ours_value, rel=1e-12)


def test_solvers_reach_the_same_optimum(rng):
    X, y = _sequences(rng, n=25)
    bcfw = StructuredSVM(alpha=0.1, max_iter=200, tol=1e-5, random_state=0).fit(X, y)
    sgd = StructuredSVM(alpha=0.1, solver="subgradient", max_iter=200, tol=0.0,
                        random_state=0).fit(X, y)
    gap = bcfw.duality_gaps_[-1]
    assert gap <= 5e-3 * bcfw.objective_curve_[-1]
    # P(sgd) >= P* >= P(bcfw) - gap, and the subgradient method gets close to P*
    assert sgd.objective_curve_[-1] >= bcfw.objective_curve_[-1] - gap
    assert sgd.objective_curve_[-1] == pytest.approx(bcfw.objective_curve_[-1], rel=1e-2)


def test_duality_gap_certifies_the_primal(rng):
    X, y = _sequences(rng, n=20)
    model = StructuredSVM(alpha=0.2, max_iter=30, tol=0.0, random_state=0,
                          check_gap_every=1).fit(X, y)
    gaps = model.duality_gaps_
    assert np.all(gaps >= -1e-10)
    assert gaps[-1] < gaps[0]
    assert model.score(X, y) > 0.8


@pytest.mark.parametrize("loss", ["hamming", "f1", "iou", "zero_one"])
def test_slack_rescaling_with_subgradient_decreases_the_objective(rng, loss):
    X, y = _sequences(rng, n=30)
    model = StructuredSVM(loss=loss, rescaling="slack", solver="subgradient", alpha=0.1,
                          max_iter=30, tol=0.0, random_state=0).fit(X, y)
    curve = model.objective_curve_
    assert curve[-1] < curve[0]
    assert model.score(X, y) > 0.6


def test_bcfw_rejects_slack_rescaling(rng):
    X, y = _sequences(rng, n=5)
    with pytest.raises(ValueError, match="margin rescaling only"):
        StructuredSVM(rescaling="slack").fit(X, y)


def test_perceptron_separates_separable_data(rng):
    X = rng.normal(size=(80, 3))
    y = np.where(X[:, 0] + X[:, 1] > 0, "pos", "neg")
    model = StructuredPerceptron(max_iter=100, random_state=0).fit(X, y)
    assert model.objective_curve_[-1] == 0
    assert model.score(X, y) == 1.0
    Xs, ys = _sequences(rng)
    seq = StructuredPerceptron(max_iter=20, random_state=0).fit(Xs, ys)
    assert seq.score(Xs, ys) > 0.8
    assert seq.transition_.shape == (3, 3)


def test_fitted_attributes_by_kind(rng):
    X, y = _sequences(rng, n=10)
    model = StructuredSVM(max_iter=3).fit(X, y)
    assert model.output_kind_ == "sequence" and model.coef_.shape == (3, 3)
    assert not hasattr(model, "intercept_")
    Xm = rng.normal(size=(30, 5))
    ym = rng.integers(0, 4, size=30)
    multi = StructuredSVM(max_iter=3).fit(Xm, ym)
    assert multi.output_kind_ == "multiclass"
    assert multi.coef_.shape == (4, 5) and multi.intercept_.shape == (4,)
    np.testing.assert_allclose(multi.decision_function(Xm), Xm @ multi.coef_.T + multi.intercept_)
    assert multi.n_iter_ == len(multi.objective_curve_) == len(multi.duality_gaps_)


def test_warm_start_subgradient(rng):
    X, y = _sequences(rng, n=20)
    model = StructuredSVM(solver="subgradient", max_iter=5, tol=0.0, warm_start=True,
                          random_state=0).fit(X, y)
    first = model.objective_curve_[-1]
    model.fit(X, y)
    assert model.objective_curve_[0] <= first * 1.05


def _f1_loss_of_tags(gold, predicted, positive):
    """1 − F1 over the tokens whose label is positive (0 when neither side has one)."""
    tp = np.sum((predicted == gold) & positive[gold], axis=-1)
    fp = np.sum((predicted != gold) & positive[predicted], axis=-1)
    denominator = positive[gold].sum() + tp + fp
    return np.where(denominator > 0, 1.0 - 2.0 * tp / np.maximum(denominator, 1), 0.0)


def test_f1_loss_binds_the_outside_label(rng):
    X, y = _sequences(rng, n=10)
    y = [np.where(labels == "A", "O", labels) for labels in y]
    model = StructuredSVM(loss="f1", max_iter=3).fit(X, y)
    assert list(model.classes_) == ["B", "C", "O"]
    np.testing.assert_array_equal(model.loss_.positive_states_, [True, True, False])
    # The fitted model's loss-augmented MAP maximizes θ_y + Δ(y) with Δ = 1 − F1 over the
    # tokens not labeled "O", found here by enumerating every labeling of each sequence.
    positive = model.classes_ != "O"
    blocks = model.decision_function(X)
    offsets = np.concatenate(([0], np.cumsum([len(b) for b in blocks])))
    scores = ChainScores(np.vstack(blocks), offsets, model.transition_,
                         model.start_transition_, model.end_transition_)
    gold = np.searchsorted(model.classes_, np.concatenate(y))
    found = model.decoder_.loss_augmented_map(scores, gold, model.loss_, "margin")
    assert found.shape == gold.shape
    n_distinguished = 0
    for i, x in enumerate(X):
        a, b = offsets[i], offsets[i + 1]
        outputs = np.array(list(itertools.product(range(3), repeat=b - a)))
        theta = (blocks[i][np.arange(b - a), outputs].sum(axis=1)
                 + model.start_transition_[outputs[:, 0]]
                 + model.transition_[outputs[:, :-1], outputs[:, 1:]].sum(axis=1)
                 + model.end_transition_[outputs[:, -1]])
        augmented = theta + _f1_loss_of_tags(gold[a:b], outputs, positive)
        index = np.flatnonzero((outputs == found[a:b]).all(axis=1))
        assert index.shape == (1,)
        assert augmented[index[0]] == pytest.approx(augmented.max(), rel=1e-12, abs=1e-12)
        # Counting "O" as positive too would maximize something else on some sequences.
        everything = theta + _f1_loss_of_tags(gold[a:b], outputs, np.ones(3, dtype=bool))
        n_distinguished += augmented[np.argmax(everything)] < augmented.max() - 1e-9
    assert n_distinguished >= 1


@pytest.mark.parametrize("rescaling", ["margin", "slack"])
def test_cutting_plane_reaches_the_optimum(rng, rescaling):
    X, y = _sequences(rng, n=25)
    loss = "f1" if rescaling == "slack" else "hamming"
    y = [np.where(labels == "A", "O", labels) for labels in y]
    plane = StructuredSVM(loss=loss, rescaling=rescaling, solver="cutting_plane", alpha=0.1,
                          max_iter=300, tol=1e-6).fit(X, y)
    assert plane.duality_gaps_[-1] <= 1e-5
    assert np.all(plane.duality_gaps_ >= -1e-9)
    sgd = StructuredSVM(loss=loss, rescaling=rescaling, solver="subgradient", alpha=0.1,
                        max_iter=200, tol=0.0, random_state=0).fit(X, y)
    final = plane.objective_curve_[-1]
    assert sgd.objective_curve_[-1] >= final - 1e-5
    assert sgd.objective_curve_[-1] == pytest.approx(final, rel=2e-2)
    if rescaling == "margin":
        bcfw = StructuredSVM(alpha=0.1, max_iter=200, tol=1e-5, random_state=0).fit(X, y)
        assert bcfw.objective_curve_[-1] == pytest.approx(final, rel=5e-3)


@pytest.mark.parametrize("sparse", [False, True])
def test_compiled_bcfw_pass_equals_the_generic_steps(rng, sparse):
    import scipy.sparse as sps

    from skstruct.decoders import ChainDecoder
    from skstruct.losses import HammingLoss

    class PlainChainDecoder(ChainDecoder):
        """Same inference, but not the exact type the compiled pass is written for."""

    X, y = _sequences(rng, n=15)
    if sparse:
        X = [sps.csr_matrix(np.where(x > 0.3, x, 0.0)) for x in X]
    weights = rng.uniform(0.5, 2.0, size=15)
    for loss in ("hamming", HammingLoss(normalize=True, class_costs=[1.0, 2.0, 0.5])):
        fused = StructuredSVM(loss=loss, alpha=0.1, max_iter=4, tol=0.0, random_state=3)
        generic = StructuredSVM(PlainChainDecoder(), loss=loss, alpha=0.1, max_iter=4,
                                tol=0.0, random_state=3)
        fused.fit(X, y, sample_weight=weights)
        generic.fit(X, y, sample_weight=weights)
        for name in ("coef_", "transition_", "start_transition_", "end_transition_",
                     "duality_gaps_", "objective_curve_"):
            np.testing.assert_allclose(getattr(fused, name), getattr(generic, name),
                                       rtol=1e-9, atol=1e-12, err_msg=name)


def _multilabel(rng, n=80, n_labels=4):
    X = rng.normal(size=(n, 5))
    W = rng.normal(size=(5, n_labels))
    Y = (X @ W + 0.3 * rng.normal(size=(n, n_labels)) > 0.3).astype(int)
    return X, Y


def test_multilabel_solvers_agree_and_predict_indicators(rng):
    X, Y = _multilabel(rng)
    bcfw = StructuredSVM(alpha=0.05, max_iter=300, tol=1e-5, random_state=0).fit(X, Y)
    plane = StructuredSVM(alpha=0.05, solver="cutting_plane", max_iter=300, tol=1e-6).fit(X, Y)
    assert bcfw.output_kind_ == "multilabel"
    assert plane.objective_curve_[-1] == pytest.approx(bcfw.objective_curve_[-1], rel=5e-3)
    predicted = bcfw.predict(X)
    assert predicted.shape == Y.shape and set(np.unique(predicted)) <= {0, 1}
    assert bcfw.score(X, Y) == np.mean(np.all(predicted == Y, axis=1))


def test_multilabel_f1_slack_binds_labels_that_are_on(rng):
    X, Y = _multilabel(rng)
    alpha = 0.05
    model = StructuredSVM(loss="f1", rescaling="slack", solver="subgradient", alpha=alpha,
                          max_iter=30, tol=0.0, random_state=0).fit(X, Y)
    assert model.objective_curve_[-1] < model.objective_curve_[0]
    # Enumerate every 0/1 vector: Δ = 1 − F1 counting the labels that are on (0 when gold
    # and prediction are both empty), slack-rescaled: Δ(y) (1 + θ_y − θ_gold).
    scores = model.decision_function(X)
    n, n_labels = Y.shape
    outputs = np.array(list(itertools.product((0, 1), repeat=n_labels)))
    theta = scores @ outputs.T
    gold_theta = np.sum(scores * Y, axis=1)

    def slack_rescaled(gold, predicted):
        tp = gold @ predicted.T
        n_on = gold.sum(axis=1)[:, None] + predicted.sum(axis=1)[None, :]
        f1_loss = np.where(n_on > 0, 1.0 - 2.0 * tp / np.maximum(n_on, 1), 0.0)
        return f1_loss * (1.0 + theta - gold_theta[:, None])

    augmented = slack_rescaled(Y, outputs)
    best = augmented.max(axis=1)
    assert np.count_nonzero(best > 0) >= 10
    # The loss-augmented MAP of the fitted model's decoder and loss attains the maximum.
    found = model.decoder_.loss_augmented_map(MultilabelScores(scores), Y, model.loss_,
                                              "slack")
    assert found.shape == Y.shape
    index = found @ (2 ** np.arange(n_labels)[::-1])
    np.testing.assert_allclose(augmented[np.arange(n), index], best, rtol=1e-12, atol=1e-12)
    # The objective it reports is the enumerated primal at its weights (bias penalized).
    w = np.concatenate([model.coef_.ravel(), model.intercept_])
    expected = best.mean() + 0.5 * alpha * w @ w
    assert model.objective_curve_[-1] == pytest.approx(expected, rel=1e-10)
    # Counting the labels that are off instead would give another objective.
    off = slack_rescaled(1 - Y, 1 - outputs).max(axis=1).mean() + 0.5 * alpha * w @ w
    assert abs(off - expected) > 1e-3


def test_cutting_plane_inference_cache_reaches_the_same_optimum(rng):
    from skstruct.decoders import ChainDecoder
    from skstruct.features import LinearChainFeatures
    from skstruct.losses import FBetaLoss
    from skstruct.optim import minimize_cutting_plane
    from skstruct.utils import check_sequences

    X, y = _sequences(rng, n=20)
    batch, labels = check_sequences(X, y)
    classes, encoded = np.unique(labels, return_inverse=True)
    loss = StructuredHingeLoss(FBetaLoss(outside_label="A").bind(classes), "slack")
    risk = RegularizedRisk(LinearChainFeatures(3, 3), batch, encoded.astype(np.int64),
                           ChainDecoder(), loss, 0.1, np.ones(20))
    plain = minimize_cutting_plane(risk, max_iter=300, tol=1e-6)
    cached = minimize_cutting_plane(risk, max_iter=300, tol=1e-6, cache_size=3)
    assert plain.converged and cached.converged
    assert cached.n_evaluations <= plain.n_evaluations
    assert cached.objective_curve[-1] == pytest.approx(plain.objective_curve[-1], rel=1e-4)
