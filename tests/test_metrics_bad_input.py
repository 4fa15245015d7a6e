"""Bad input to the metrics and scorers: a clear error or warning, never a silent answer."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import UndefinedMetricWarning

from skstruct.metrics import (
    get_scorer,
    span_classification_report,
    span_f1_score,
    span_precision_recall_fscore,
    token_accuracy,
)
from skstruct.utils._sequences import check_sample_weight_sequences

Y = [["B-NP", "I-NP", "O"], ["B-VP"]]


@pytest.mark.parametrize("weights", [[-1, 1], [np.nan, 1], [1, np.inf]])
def test_token_accuracy_rejects_negative_or_nonfinite_sample_weight(weights):
    with pytest.raises(ValueError, match="sample_weight must be finite and non-negative"):
        token_accuracy(Y, Y, sample_weight=weights)


@pytest.mark.parametrize("weights", [["a", "b"], [1, None], [1j, 1], "ab"])
def test_token_accuracy_rejects_non_numeric_sample_weight(weights):
    with pytest.raises(TypeError, match="sample_weight must be numeric"):
        token_accuracy(Y, Y, sample_weight=weights)


def test_token_accuracy_sample_weight_of_wrong_length_names_expected_shape():
    with pytest.raises(ValueError, match=r"one weight per sequence, i.e. shape \(2,\)"):
        token_accuracy(Y, Y, sample_weight=[1, 2, 3])


def test_token_accuracy_all_zero_weights_give_zero_as_documented():
    assert token_accuracy(Y, Y, sample_weight=[0, 0]) == 0.0


def test_estimators_weight_check_still_rejects_all_zero():
    with pytest.raises(ValueError, match="not be all zero"):
        check_sample_weight_sequences([0, 0], 2)
    np.testing.assert_array_equal(check_sample_weight_sequences([0, 0], 2, allow_zero_sum=True),
                                  [0.0, 0.0])


@pytest.mark.parametrize("bad", [None, np.nan, 3, b"B-NP"])
def test_span_metrics_reject_non_string_tags(bad):
    y = [["B-NP", bad]]
    with pytest.raises(TypeError, match=r"tags must be strings.*y_true\[0\]\[1\]"):
        span_f1_score(y, [["B-NP", "O"]])
    with pytest.raises(TypeError, match=r"y_pred\[0\]\[1\]"):
        span_f1_score([["B-NP", "O"]], y)
    with pytest.raises(TypeError, match="tags must be strings"):
        span_classification_report(y, y)


def test_span_metrics_reject_integer_labels():
    with pytest.raises(TypeError, match="use token_accuracy"):
        span_f1_score([[0, 1, 2]], [[0, 1, 2]])


def test_span_metrics_warn_when_tags_are_not_chunk_tags():
    y = [["A", "B", "C"]]
    with pytest.warns(UndefinedMetricWarning, match=r"No chunks.*such as 'A'"):
        assert span_f1_score(y, y) == 0.0
    with pytest.warns(UndefinedMetricWarning, match="No chunks"):
        span_classification_report(y, y)


def test_span_metrics_warn_when_no_chunks_at_all():
    with pytest.warns(UndefinedMetricWarning, match="No chunks in y_true or y_pred"):
        span_f1_score([["O", "O"]], [["O", "O"]])


def test_span_metrics_do_not_warn_when_chunks_exist():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert span_f1_score(Y, Y) == 1.0
        assert span_f1_score([["O", "O"]], [["B-NP", "O"]]) == 0.0


@pytest.mark.parametrize("beta", [-1, np.nan, np.inf])
def test_beta_out_of_range_is_rejected(beta):
    with pytest.raises(ValueError, match="beta must be a finite number >= 0"):
        span_precision_recall_fscore(Y, Y, beta=beta)


@pytest.mark.parametrize("beta", ["x", None, True])
def test_beta_of_wrong_type_is_rejected(beta):
    with pytest.raises(TypeError, match="beta must be a finite number >= 0"):
        span_precision_recall_fscore(Y, Y, beta=beta)


def test_beta_zero_and_two_are_valid():
    y_pred = [["B-NP", "I-NP", "O"], ["O"]]
    p, r, f0, _ = span_precision_recall_fscore(Y, y_pred, beta=0)
    assert f0 == pytest.approx(p)
    f2 = span_precision_recall_fscore(Y, y_pred, beta=2)[2]
    assert f2 == pytest.approx(5 * p * r / (4 * p + r))


@pytest.mark.parametrize("digits, error", [(-1, ValueError), ("2", TypeError),
                                           (2.0, TypeError), (True, TypeError)])
def test_report_digits_must_be_a_non_negative_int(digits, error):
    with pytest.raises(error, match="digits must be an int >= 0"):
        span_classification_report(Y, Y, digits=digits)


def test_report_digits_zero_and_numpy_int_work():
    row = span_classification_report(Y, Y, digits=0).splitlines()[2]
    assert row.split() == ["NP", "1", "1", "1", "1"]
    assert "1.000" in span_classification_report(Y, Y, digits=np.int64(3))


def test_unknown_scorer_lists_skstruct_scorers_and_close_match():
    with pytest.raises(ValueError, match=r"'span_f2' is not a valid scoring value") as exc:
        get_scorer("span_f2")
    message = str(exc.value)
    for name in ("token_accuracy", "span_f1", "span_precision", "span_recall"):
        assert repr(name) in message
    assert "Did you mean 'span_f1'" in message
    assert "sklearn.metrics.get_scorer_names()" in message


def test_known_scorers_still_resolve():
    assert get_scorer("span_f1")._score_func is span_f1_score
    assert get_scorer("accuracy") is not None
