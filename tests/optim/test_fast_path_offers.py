"""Fast paths are offered by the decoder, the loss and the feature map, and read by
what they declare: a user's task loss that declares ``decomposition="parts"`` gets the
compiled chain oracle, and a user's feature map that derives from nothing gets the
defaults of :class:`~skstruct.features.FeatureMap`."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import skstruct.optim._bcfw as bcfw_module
from skstruct import StructuredSVM
from skstruct.decoders import ChainDecoder, Decoder, FactorGraph, FactorGraphDecoder
from skstruct.features import FeatureMap, LinearChainFeatures, feature_map_hook
from skstruct.losses import (
    CRFLoss,
    HammingLoss,
    PerceptronLoss,
    StructuredHingeLoss,
    TaskLoss,
    TrainingLoss,
)
from skstruct.optim import RegularizedRisk, minimize_bcfw
from skstruct.optim._engine import compiled_problem, loss_rescaling
from skstruct.utils import SequenceBatch

COSTS = np.array([1.0, 2.5, 0.5])


class TokenCosts(TaskLoss):
    """c(a, b) = COSTS[a] 1[a ≠ b] per token: Hamming's class costs, written by a user."""

    decomposition = "parts"

    def unary_costs(self, y_true, offsets, n_states):
        return COSTS[np.asarray(y_true)][:, None] * (
            np.arange(n_states)[None, :] != np.asarray(y_true)[:, None])

    def __call__(self, y_true, y_pred, offsets):
        per_token = COSTS[np.asarray(y_true)] * (np.asarray(y_true) != np.asarray(y_pred))
        return np.add.reduceat(per_token, offsets[:-1])


def _risk(task_loss, sequences, n_states=3):
    X, y, weights = sequences
    codes = {"O": 0, "A": 1, "B": 2}
    offsets = np.concatenate(([0], np.cumsum([x.shape[0] for x in X])))
    encoded = np.array([codes[s] for labels in y for s in labels])
    return RegularizedRisk(LinearChainFeatures(6, n_states),
                           SequenceBatch(sp.vstack(X).tocsr(), offsets), encoded,
                           ChainDecoder(), StructuredHingeLoss(task_loss, "margin"), 0.05,
                           weights)


def test_a_user_parts_loss_gets_the_compiled_chain_oracle(sequences):
    risk = _risk(TokenCosts(), sequences)
    problem = compiled_problem(risk, "margin")
    assert problem is not None
    assert problem.oracle.costs.shape == (risk.y.shape[0], 3)
    # without the number of states the costs cannot be laid out: no compiled form
    assert ChainDecoder().compiled_oracle(TokenCosts(), "margin", risk.y,
                                          risk.batch.output_offsets) is None


def test_user_parts_loss_compiled_equals_python_and_the_built_in_loss(sequences):
    runs = {}
    for name, task_loss, force in [("user", TokenCosts(), False),
                                   ("python", TokenCosts(), True),
                                   ("built_in", HammingLoss(class_costs=COSTS), False)]:
        risk = _risk(task_loss, sequences)
        runs[name] = minimize_bcfw(risk, max_iter=3, tol=0.0, random_state=0,
                                   _force_python=force)
    np.testing.assert_allclose(runs["user"].w, runs["python"].w, rtol=0, atol=1e-9)
    np.testing.assert_allclose(runs["user"].w, runs["built_in"].w, rtol=0, atol=1e-12)
    np.testing.assert_allclose(runs["user"].objective_curve,
                               runs["python"].objective_curve, rtol=1e-9, atol=1e-12)


def test_the_estimator_trains_a_user_parts_loss_on_the_compiled_engine(monkeypatch,
                                                                       sequences):
    X, y, weights = sequences
    offered = []

    def spy(risk, rescaling):
        offered.append(compiled_problem(risk, rescaling))
        return offered[-1]

    def fit(task_loss):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return StructuredSVM(loss=task_loss, solver="bcfw", alpha=0.05, max_iter=3,
                                 tol=0.0, random_state=0).fit(X, y, sample_weight=weights)

    with monkeypatch.context() as patch:
        patch.setattr(bcfw_module, "compiled_problem", spy)
        user = fit(TokenCosts())
    assert offered and offered[0] is not None
    built_in = fit(HammingLoss(class_costs=COSTS))
    np.testing.assert_allclose(user.coef_, built_in.coef_, rtol=0, atol=1e-12)
    np.testing.assert_allclose(user.transition_, built_in.transition_, rtol=0, atol=1e-12)


def test_user_parts_loss_with_invalid_costs_keeps_the_python_error(sequences):
    class Negative(TokenCosts):
        def unary_costs(self, y_true, offsets, n_states):
            return -super().unary_costs(y_true, offsets, n_states)

    assert compiled_problem(_risk(Negative(), sequences), "margin") is None


def test_training_losses_offer_their_engine_form():
    assert loss_rescaling(PerceptronLoss()) == (True, None)
    assert loss_rescaling(StructuredHingeLoss("hamming", "slack")) == (True, "slack")

    class MyHinge(StructuredHingeLoss):
        pass

    assert loss_rescaling(MyHinge()) == (False, None)
    assert loss_rescaling(CRFLoss()) == (False, None)
    assert loss_rescaling(object()) == (False, None)
    assert CRFLoss().is_log_likelihood and not CRFLoss(cost="hamming").is_log_likelihood
    assert not TrainingLoss().is_log_likelihood


def test_decoders_offer_the_fused_crf_and_the_shared_pairs():
    assert Decoder().fused_crf_constraints(3) is NotImplemented
    assert ChainDecoder().fused_crf_constraints(3) is None
    assert ChainDecoder(log_space=True).fused_crf_constraints(3) is NotImplemented

    class OwnForwardBackward(ChainDecoder):
        def _forward_backward(self, *args, **kwargs):
            return super()._forward_backward(*args, **kwargs)

    assert OwnForwardBackward().fused_crf_constraints(3) is NotImplemented
    assert Decoder().shared_pair_parts(None) is None
    assert Decoder().shared_pair_map() is None
    pairwise = FactorGraphDecoder(FactorGraph.pairwise(3))
    assert pairwise.shared_pair_parts(np.arange(3))["n_pairs"] == 3
    assert pairwise.shared_pair_map() is not None
    with pytest.raises(ValueError, match="variables"):
        pairwise.shared_pair_parts(np.arange(4))


class _BareChainFeatures:
    """A user's chain feature map with only the required members."""

    def __init__(self):
        self.inner = LinearChainFeatures(6, 3)
        self.n_params = self.inner.n_params

    def scores(self, batch, w):
        return self.inner.scores(batch, w)

    def transpose(self, batch, grad):
        return self.inner.transpose(batch, grad)

    def example_transpose(self, batch, grad):
        return self.inner.example_transpose(batch, grad)


def test_feature_map_defaults_apply_to_a_map_without_the_base(sequences):
    risk = _risk("hamming", sequences)
    bare = _BareChainFeatures()
    assert not isinstance(bare, FeatureMap)
    assert feature_map_hook(bare, "compiled_features")(risk.batch) is None
    assert feature_map_hook(bare, "pairs") is None
    assert feature_map_hook(bare, "shared_pair_layout")() is False
    zero = feature_map_hook(bare, "zero_scores")(risk.batch)
    np.testing.assert_array_equal(zero.unary, risk.features.zero_scores(risk.batch).unary)
    risk.features = bare
    assert compiled_problem(risk, "margin") is None
    assert risk.compiled_objective() is None
    result = minimize_bcfw(risk, max_iter=2, tol=0.0, random_state=0)
    assert result.n_evaluations == 2 * risk.n_examples


def test_built_in_feature_maps_derive_from_the_base():
    from skstruct.features import FactorGraphFeatures, LinearArcFeatures, LinearFeatures

    for cls in (LinearFeatures, LinearChainFeatures, LinearArcFeatures,
                FactorGraphFeatures):
        assert issubclass(cls, FeatureMap)
    assert not LinearFeatures(2, 3, None).shared_pair_layout()
