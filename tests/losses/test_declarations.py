"""What task and training losses declare about themselves, with defaults, so that the
solvers and the objective ask a loss rather than probe it for attributes."""

import numpy as np
import pytest

from skstruct.decoders import ChainDecoder
from skstruct.features import LinearChainFeatures
from skstruct.losses import (
    CRFLoss,
    FBetaLoss,
    HammingLoss,
    PerceptronLoss,
    SparseMAPLoss,
    StructuredHingeLoss,
    TaskLoss,
    TrainingLoss,
    ZeroOneLoss,
)
from skstruct.optim import RegularizedRisk, minimize_bcfw
from skstruct.utils import SequenceBatch


class _PlainLoss(TrainingLoss):
    """A user's training loss that declares nothing: the perceptron loss, counting calls."""

    required_capability = "map"

    def __init__(self):
        self.calls = 0

    def __call__(self, decoder, scores, y_true, gold=None):
        self.calls += 1
        return PerceptronLoss()(decoder, scores, y_true, gold=gold)


def _risk(rng, loss):
    offsets = np.array([0, 3, 5, 9])
    X = rng.normal(size=(9, 4))
    y = rng.integers(0, 3, size=9)
    return RegularizedRisk(LinearChainFeatures(4, 3), SequenceBatch(X, offsets), y,
                           ChainDecoder(), loss, 0.1, np.array([1.0, 2.0, 1.0]))


def test_training_losses_declare_what_they_are():
    declared = ("task_loss", "rescaling", "cost", "warm_startable")
    assert [getattr(_PlainLoss(), name) for name in declared] == [None, None, None, False]
    hinge = StructuredHingeLoss("zero_one", "slack")
    assert isinstance(hinge.task_loss, ZeroOneLoss) and hinge.rescaling == "slack"
    assert hinge.cost is None and not hinge.warm_startable
    assert isinstance(CRFLoss(cost="hamming").cost, HammingLoss)
    assert CRFLoss().task_loss is None and CRFLoss().rescaling is None
    assert SparseMAPLoss().warm_startable and SparseMAPLoss().rescaling is None


@pytest.mark.parametrize("loss", [_PlainLoss(), CRFLoss(), PerceptronLoss(),
                                  StructuredHingeLoss(), SparseMAPLoss()],
                         ids=lambda loss: type(loss).__name__)
def test_values_are_the_losses_of_the_value_and_gradient(rng, loss):
    risk = _risk(rng, loss)
    w = rng.normal(size=risk.n_params)
    value, _ = risk.value_and_gradient(w)
    assert risk.value(w) == pytest.approx(value, rel=1e-12)
    scores = risk.features.scores(risk.batch, w)
    np.testing.assert_allclose(
        loss.values(risk.decoder, scores, risk.y, risk.gold(scores)),
        loss(risk.decoder, scores, risk.y, gold=risk.gold(scores))[0], rtol=1e-12)


def test_the_objective_asks_the_loss_for_its_values(rng):
    loss = _PlainLoss()
    risk = _risk(rng, loss)
    risk.value(np.zeros(risk.n_params))
    assert loss.calls == 1
    loss.values = lambda decoder, scores, y_true, gold: np.zeros(3)  # a cheaper way
    assert risk.value(np.ones(risk.n_params)) == pytest.approx(0.05 * risk.n_params)
    assert loss.calls == 1


def test_a_solver_asks_the_loss_its_rescaling(rng):
    with pytest.raises(ValueError, match="margin rescaling only"):
        minimize_bcfw(_risk(rng, _PlainLoss()), max_iter=1)


def test_task_losses_declare_the_classes_they_are_defined_on():
    assert TaskLoss().n_classes is None
    assert HammingLoss().n_classes is None and ZeroOneLoss().n_classes is None
    assert HammingLoss(class_costs=[1.0, 2.0, 0.5]).n_classes == 3
    assert HammingLoss(class_costs=np.ones((4, 4)) - np.eye(4)).n_classes == 4
    unbound = FBetaLoss()
    assert unbound.positive_states_ is None and unbound.n_classes is None
    bound = unbound.bind(np.array(["B", "I", "O"]))
    assert bound.n_classes == 3 and bound.positive_states_.tolist() == [True, True, False]
    with pytest.raises(ValueError, match="does not know which labels are positive"):
        unbound(np.array([0]), np.array([0]), np.array([0, 1]))


def test_training_losses_declare_their_solver_family():
    from skstruct.losses import CRFLoss, PerceptronLoss, StructuredHingeLoss
    from skstruct.losses._randomized import RandomizedLikelihoodLoss
    from skstruct.optim import LOSS_FAMILIES
    from skstruct.optim._registry import loss_family

    class Mine(StructuredHingeLoss):
        pass

    assert loss_family(CRFLoss()) == "smooth"
    assert loss_family(StructuredHingeLoss(rescaling="slack")) == "hinge_slack"
    assert loss_family(Mine()) == "hinge_margin"
    assert loss_family(PerceptronLoss()) == "perceptron"
    assert RandomizedLikelihoodLoss.solver_family == "randomized_likelihood"
    for family in ("smooth", "hinge_margin", "hinge_slack", "perceptron",
                   "randomized_likelihood"):
        assert family in LOSS_FAMILIES


def test_the_crf_loss_offers_the_softmax_margin_form_unless_redefined():
    from skstruct.losses import CRFLoss, HammingLoss, TrainingLoss

    class Redefined(CRFLoss):
        def __call__(self, decoder, scores, y_true, gold=None):
            return super().__call__(decoder, scores, y_true, gold)

    assert CRFLoss().is_softmax_margin and CRFLoss(HammingLoss()).is_softmax_margin
    assert CRFLoss().is_log_likelihood and not CRFLoss(HammingLoss()).is_log_likelihood
    assert not Redefined().is_softmax_margin and not Redefined().is_log_likelihood
    assert not TrainingLoss.is_softmax_margin.fget(CRFLoss())
