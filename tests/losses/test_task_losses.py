import numpy as np
import pytest

from skstruct.losses import HammingLoss, ZeroOneLoss

OFFSETS = np.array([0, 3, 5])
Y_TRUE = np.array([0, 1, 2, 2, 0])
Y_PRED = np.array([0, 2, 1, 2, 0])


def test_hamming_counts_and_normalizes():
    np.testing.assert_allclose(HammingLoss()(Y_TRUE, Y_PRED, OFFSETS), [2.0, 0.0])
    np.testing.assert_allclose(HammingLoss(normalize=True)(Y_TRUE, Y_PRED, OFFSETS), [2 / 3, 0])


def test_hamming_class_costs_vector_and_matrix():
    per_class = HammingLoss(class_costs=[1.0, 5.0, 0.5])
    np.testing.assert_allclose(per_class(Y_TRUE, Y_PRED, OFFSETS), [5.5, 0.0])
    matrix = np.array([[0, 1, 2], [3, 0, 4], [5, 6, 0]], dtype=float)
    np.testing.assert_allclose(HammingLoss(class_costs=matrix)(Y_TRUE, Y_PRED, OFFSETS),
                               [4 + 6, 0])


def test_unary_costs_sum_to_the_loss(rng):
    y_true = rng.integers(0, 3, size=9)
    y_pred = rng.integers(0, 3, size=9)
    offsets = np.array([0, 4, 9])
    for loss in (HammingLoss(), HammingLoss(normalize=True), HammingLoss(class_costs=[1, 2, 3])):
        costs = loss.unary_costs(y_true, offsets, 3)
        per_token = costs[np.arange(9), y_pred]
        np.testing.assert_allclose(np.add.reduceat(per_token, offsets[:-1]),
                                   loss(y_true, y_pred, offsets))
        assert np.all(costs[np.arange(9), y_true] == 0)


def test_zero_one():
    np.testing.assert_allclose(ZeroOneLoss()(Y_TRUE, Y_PRED, OFFSETS), [1.0, 0.0])


def test_bad_class_costs():
    with pytest.raises(ValueError, match="zero on the diagonal"):
        HammingLoss(class_costs=np.ones((3, 3))).unary_costs(Y_TRUE, OFFSETS, 3)
    with pytest.raises(ValueError, match="expected"):
        HammingLoss(class_costs=[1.0, 2.0]).unary_costs(Y_TRUE, OFFSETS, 3)
