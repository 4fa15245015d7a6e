import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.metrics import f1_score, jaccard_score, precision_score, recall_score

from skstruct.losses import FBetaLoss, IoULoss, LabelCountLoss, PrecisionLoss, RecallLoss


@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1)), min_size=1, max_size=12))
def test_multilabel_losses_equal_sklearn_metrics(pairs):
    y_true, y_pred = map(np.array, zip(*pairs))
    offsets = np.array([0, len(y_true)])
    positive = np.array([False, True])
    for loss, metric in [(FBetaLoss(), f1_score), (PrecisionLoss(), precision_score),
                         (RecallLoss(), recall_score), (IoULoss(), jaccard_score)]:
        value = loss.with_positive_states(positive)(y_true, y_pred, offsets)[0]
        expected = 1 - metric(y_true, y_pred, zero_division=1.0)
        assert value == pytest.approx(expected)
    count = LabelCountLoss().with_positive_states(positive)(y_true, y_pred, offsets)[0]
    assert count == abs(y_pred.sum() - y_true.sum())


def test_bind_uses_the_outside_label():
    loss = FBetaLoss().bind(np.array(["B-NP", "I-NP", "O"]))
    np.testing.assert_array_equal(loss.positive_states_, [True, True, False])
    y_true, y_pred = np.array([0, 1, 2, 2]), np.array([0, 2, 1, 2])
    # tp = 1 (B-NP), fp = 1 (I-NP predicted on an O), |y*| = 2
    assert loss(y_true, y_pred, np.array([0, 4]))[0] == pytest.approx(1 - 2 / 4)


def test_zero_when_correct_and_unbound_error():
    loss = IoULoss().bind(["O", "X"])
    y = np.array([1, 0, 1])
    assert loss(y, y, np.array([0, 3]))[0] == 0
    with pytest.raises(ValueError, match="bind"):
        IoULoss()(y, y, np.array([0, 3]))


def test_string_names():
    from skstruct.losses import check_task_loss

    assert isinstance(check_task_loss("f1"), FBetaLoss)
    assert check_task_loss("f1").beta == 1.0
    assert isinstance(check_task_loss("iou"), IoULoss)
    assert isinstance(check_task_loss("precision"), PrecisionLoss)
    assert isinstance(check_task_loss("recall"), RecallLoss)
    assert isinstance(check_task_loss("label_count"), LabelCountLoss)
