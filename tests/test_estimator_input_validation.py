"""Estimators reject bad training input with one clear message, the same in every estimator."""

import numpy as np
import pytest
from sklearn.base import clone

from skstruct import CRF, SparseMAPClassifier, StructuredPerceptron, StructuredSVM
from skstruct.decoders import ChainDecoder, DAGDecoder, MatchingDecoder, TreeDecoder
from skstruct.losses import HammingLoss, TaskLoss

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

ESTIMATORS = [
    CRF(max_iter=5),
    StructuredSVM(max_iter=3, random_state=0),
    StructuredPerceptron(max_iter=3, random_state=0),
    SparseMAPClassifier(max_iter=5),
]
TABULAR = [e for e in ESTIMATORS if not isinstance(e, CRF)]


def _name(estimator):
    return type(estimator).__name__


@pytest.fixture
def sequences():
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(n, 3)) for n in (3, 2, 4)]
    y = [np.array(["B", "I", "O"]), np.array(["O", "B"]), np.array(["B", "I", "I", "O"])]
    return X, y


# -- labels ------------------------------------------------------------------------------

MIXED_SEQUENCE_LABELS = {
    "string-and-int": ([["A", 7, "B"], ["A", "B"], ["B", "A", "A", "B"]], "mixes label types"),
    "across-sequences": ([["A", "B", "A"], [7, 8], ["B", "A", "A", "B"]], "mixes label types"),
    "object-none": ([np.array(["A", None, "B"], dtype=object), ["A", "B"], ["A"] * 4],
                    "missing labels"),
    "nan": ([[1.0, np.nan, 2.0], [1.0, 2.0], [1.0] * 4], "missing labels"),
    "bool-and-int": ([[True, 2, 2], [True, 2], [2] * 4], "mixes label types"),
}


@pytest.mark.parametrize("case", list(MIXED_SEQUENCE_LABELS))
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_mixed_or_missing_sequence_labels_are_one_clear_error(estimator, case, sequences):
    X, _ = sequences
    y, message = MIXED_SEQUENCE_LABELS[case]
    with pytest.raises(ValueError, match=message) as error:
        clone(estimator).fit(X, y)
    assert _name(estimator) in str(error.value)


@pytest.mark.parametrize("estimator", TABULAR, ids=_name)
def test_mixed_multiclass_labels_are_a_clear_error(estimator):
    X = np.random.default_rng(0).normal(size=(4, 2))
    with pytest.raises(ValueError, match=r"mixes label types: string \(e.g. 'A'\), number"):
        clone(estimator).fit(X, ["A", 7, "A", 7])
    with pytest.raises(ValueError, match="missing labels"):
        clone(estimator).fit(X, np.array(["A", None, "A", "B"], dtype=object))


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_one_label_type_is_kept_in_predictions(estimator, sequences):
    X, y = sequences
    codes = {"B": 3, "I": 5, "O": 7}
    y_int = [np.array([codes[t] for t in labels]) for labels in y]
    predicted = clone(estimator).fit(X, y_int).predict(X)
    assert len(predicted) == len(X)
    assert all(np.issubdtype(p.dtype, np.integer) for p in predicted)


# -- forms of X and y ----------------------------------------------------------------------

@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_empty_x_says_no_sequences(estimator):
    with pytest.raises(ValueError, match=f"X contains no sequences in {_name(estimator)}"):
        clone(estimator).fit([], [])


@pytest.mark.parametrize("decoder, noun", [(TreeDecoder, "sentences"),
                                           (MatchingDecoder, "instances"),
                                           (DAGDecoder, "graphs")])
def test_empty_x_names_what_the_decoder_decodes(decoder, noun):
    with pytest.raises(ValueError, match=f"X contains no {noun} in StructuredSVM"):
        StructuredSVM(decoder=decoder()).fit([], [])


@pytest.mark.parametrize("estimator", TABULAR, ids=_name)
def test_empty_tabular_x_says_no_samples(estimator):
    with pytest.raises(ValueError, match="X contains no samples"):
        clone(estimator).fit(np.empty((0, 3)), np.empty(0))


@pytest.mark.parametrize("labels", [["B", "I", "O"], [0, 1, 2]], ids=["strings", "ints"])
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_2d_y_of_equal_length_sequences_is_read_as_sequences(estimator, labels):
    """Every estimator reads a 2-D y with list-of-matrices X as one row per sequence."""
    rng = np.random.default_rng(1)
    X = [rng.normal(size=(3, 2)) for _ in range(6)]
    y_rows = np.array([rng.permutation(labels) for _ in range(6)])
    from_array = clone(estimator).fit(X, y_rows)
    from_list = clone(estimator).fit(X, list(y_rows))
    assert from_array.output_kind_ == "sequence"
    np.testing.assert_array_equal(from_array.coef_, from_list.coef_)
    assert len(from_array.predict(X)) == len(X)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_wrong_2d_y_is_an_error_about_y(estimator):
    X = [np.ones((3, 2)), np.ones((3, 2))]
    with pytest.raises(ValueError, match="Sequence 0 has 3 tokens in X but 2 labels in y"):
        clone(estimator).fit(X, np.array([["A", "B"], ["B", "A"]]))


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_token_feature_dicts_point_to_the_vectorizer(estimator):
    X = [[{"word": "the"}, {"word": "cat"}]]
    with pytest.raises(TypeError, match="SequenceVectorizer"):
        clone(estimator).fit(X, [["B", "I"]])


def test_crf_on_a_2d_array_learns_multiclass_not_one_sequence():
    X = np.random.default_rng(0).normal(size=(4, 3))
    model = CRF(max_iter=5).fit(X, ["a", "b", "a", "b"])
    assert model.output_kind_ == "multiclass"
    assert model.predict_proba(X).shape == (4, 2)


@pytest.mark.parametrize("estimator", TABULAR, ids=_name)
def test_sequences_at_predict_after_a_tabular_fit(estimator):
    X = np.random.default_rng(0).normal(size=(6, 3))
    model = clone(estimator).fit(X, ["a", "b", "c"] * 2)
    with pytest.raises(ValueError, match="fitted on tabular data"):
        model.predict([X[:2], X[2:]])


# -- DataFrames -----------------------------------------------------------------------------

@pytest.mark.parametrize("estimator", TABULAR, ids=_name)
def test_feature_names_in_from_dataframes(estimator):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(9, 3)), columns=["a", "b", "c"])
    y = ["x", "y", "z"] * 3
    model = clone(estimator).fit(frame, y)
    np.testing.assert_array_equal(model.feature_names_in_, ["a", "b", "c"])
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        from_array = model.predict(frame.to_numpy())
    np.testing.assert_array_equal(model.predict(frame), from_array)
    with pytest.raises(ValueError, match="same order as they were in fit"):
        model.predict(frame[["b", "a", "c"]])
    with pytest.raises(ValueError, match="Feature names unseen at fit time"):
        model.predict(frame.rename(columns={"a": "z"}))
    refit = model.fit(frame.to_numpy(), y)
    assert not hasattr(refit, "feature_names_in_")


# -- hyper-parameters ------------------------------------------------------------------------

@pytest.mark.parametrize("estimator", [StructuredSVM(), StructuredPerceptron()], ids=_name)
def test_n_jobs_zero_is_rejected(estimator, sequences):
    X, y = sequences
    with pytest.raises(ValueError, match="'n_jobs' parameter .* Got 0 instead"):
        clone(estimator).set_params(n_jobs=0).fit(X, y)


@pytest.mark.parametrize("n_jobs", [-1, -100, 1, 64])
def test_n_jobs_in_joblib_range_is_accepted(n_jobs, sequences):
    X, y = sequences
    StructuredPerceptron(max_iter=2, n_jobs=n_jobs, random_state=0).fit(X, y)


class _NegativeLoss(TaskLoss):
    def __call__(self, y_true, y_pred, offsets):
        return -HammingLoss()(y_true, y_pred, offsets) - 1.0


class _NegativeCosts(HammingLoss):
    def unary_costs(self, y_true, offsets, n_states):
        return -super().unary_costs(y_true, offsets, n_states)


class _NonzeroOnGold(HammingLoss):
    def __call__(self, y_true, y_pred, offsets):
        return super().__call__(y_true, y_pred, offsets) + 1.0


@pytest.mark.parametrize("solver", ["bcfw", "subgradient", "cutting_plane"])
def test_negative_task_loss_is_rejected(solver, sequences):
    X, y = sequences
    model = StructuredSVM(loss=_NegativeCosts(), solver=solver, max_iter=2, random_state=0)
    with pytest.raises(ValueError, match="returned negative unary_costs"):
        model.fit(X, y)
    tabular = np.random.default_rng(0).normal(size=(6, 2))
    model.set_params(loss=_NegativeLoss(), rescaling="slack" if solver != "bcfw" else "margin")
    with pytest.raises(ValueError, match="returned negative values"):
        model.fit(tabular, ["a", "b", "c"] * 2)


def test_task_loss_must_vanish_on_gold(sequences):
    X, y = sequences
    with pytest.raises(ValueError, match="Δ\\(y, y\\) must be 0"):
        StructuredSVM(loss=_NonzeroOnGold(), max_iter=2).fit(X, y)


@pytest.mark.parametrize("solver", ["bcfw", "cutting_plane"])
def test_solvers_that_cannot_warm_start_say_so(solver, sequences):
    X, y = sequences
    model = StructuredSVM(solver=solver, max_iter=2, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match=f"solver='{solver}' cannot warm-start"):
        model.set_params(warm_start=True).fit(X, y)


def test_subgradient_warm_start_continues(sequences):
    X, y = sequences
    model = StructuredSVM(solver="subgradient", max_iter=2, random_state=0,
                          warm_start=True).fit(X, y)
    steps = model.t_
    model.fit(X, y)
    assert model.t_ == 2 * steps


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_nested_decoder_params_need_a_decoder(estimator, sequences):
    with pytest.raises(ValueError, match="Cannot set decoder__log_space.*Pass the decoder"):
        clone(estimator).set_params(decoder__log_space=True)
    model = clone(estimator).set_params(decoder=ChainDecoder(), decoder__log_space=True)
    assert model.decoder.log_space is True
    X, y = sequences
    assert model.fit(X, y).decoder_.log_space is True


# -- containers, shapes and types ------------------------------------------------------------

@pytest.mark.parametrize("X", ["abc", {"a": 1}, (x for x in range(3)), 3.0],
                         ids=["str", "dict", "generator", "float"])
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_x_that_is_no_array_or_list_is_a_type_error(estimator, X):
    with pytest.raises(TypeError, match="X must be a 2-D .* array or a list of 2-D"):
        clone(estimator).fit(X, ["a", "b", "c"])


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_1d_sequences_say_each_sequence_must_be_2d(estimator, sequences):
    _, y = sequences
    X = [np.arange(len(labels), dtype=float) for labels in y]
    with pytest.raises(ValueError, match="sequence 0 of X is 1-D.*reshape"):
        clone(estimator).fit(X, y)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_one_stacked_matrix_with_label_sequences_says_to_split_it(estimator, sequences):
    X, y = sequences
    with pytest.raises(ValueError, match="X is a single 2-D matrix"):
        clone(estimator).fit(np.vstack(X), y)


@pytest.mark.parametrize("fmt", ["dok", "bsr", "coo", "csc", "lil"])
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_every_sparse_format_gives_the_csr_model(estimator, fmt, sequences):
    import scipy.sparse as sp

    X, y = sequences
    csr = clone(estimator).fit([sp.csr_matrix(x) for x in X], y)
    other = clone(estimator).fit([sp.csr_matrix(x).asformat(fmt) for x in X], y)
    np.testing.assert_array_equal(csr.coef_, other.coef_)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_complex_and_overflowing_features_are_rejected(estimator, sequences):
    X, y = sequences
    with pytest.raises(ValueError, match="Complex data not supported"):
        clone(estimator).fit([x + 1j for x in X], y)
    with pytest.raises(ValueError, match="would overflow float64. Scale the features"):
        clone(estimator).fit([x * 1e300 for x in X], y)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_name)
def test_sequence_dataframes_set_and_check_feature_names(estimator, sequences):
    pd = pytest.importorskip("pandas")
    X, y = sequences
    frames = [pd.DataFrame(x, columns=["a", "b", "c"]) for x in X]
    model = clone(estimator).fit(frames, y)
    np.testing.assert_array_equal(model.feature_names_in_, ["a", "b", "c"])
    for p, q in zip(model.predict(frames), model.predict(X), strict=True):
        np.testing.assert_array_equal(p, q)
    with pytest.raises(ValueError, match="feature names should match"):
        model.predict([f[["c", "b", "a"]] for f in frames])
    mixed = frames[:1] + [frames[1].rename(columns={"a": "z"})] + frames[2:]
    with pytest.raises(ValueError, match="Sequence 1 of X has other column names"):
        clone(estimator).fit(mixed, y)


@pytest.mark.parametrize("estimator", TABULAR, ids=_name)
def test_column_vector_y_warns_and_is_raveled(estimator):
    from sklearn.exceptions import DataConversionWarning

    X = np.random.default_rng(0).normal(size=(6, 2))
    y = np.array(["a", "b", "c"] * 2)
    with pytest.warns(DataConversionWarning):
        column = clone(estimator).fit(X, y[:, None])
    np.testing.assert_array_equal(column.coef_, clone(estimator).fit(X, y).coef_)


class _ScalarLoss(TaskLoss):
    def __call__(self, y_true, y_pred, offsets):
        return 0.0


class _NegativeOffGold(TaskLoss):
    def __call__(self, y_true, y_pred, offsets):
        return -HammingLoss()(y_true, y_pred, offsets)


def test_task_loss_shape_and_sign_are_checked_on_tabular_data():
    X = np.random.default_rng(0).normal(size=(6, 2))
    y = ["a", "b", "c"] * 2
    with pytest.raises(ValueError, match=r"shape \(\); expected \(6,\)"):
        StructuredSVM(loss=_ScalarLoss()).fit(X, y)
    with pytest.raises(ValueError, match="returned negative values"):
        StructuredSVM(loss=_NegativeOffGold()).fit(X, y)


@pytest.mark.parametrize("solver", ["bcfw", "subgradient"])
def test_class_costs_of_the_wrong_length_name_the_shape(solver, sequences):
    X, y = sequences
    model = StructuredSVM(loss=HammingLoss(class_costs=[1.0, 2.0]), solver=solver)
    with pytest.raises(ValueError, match=r"class_costs has shape \(2,\); expected \(3,\)"):
        model.fit(X, y)
    with pytest.raises(ValueError, match=r"class_costs has shape \(2,\); expected \(3,\)"):
        model.fit(np.vstack(X), np.concatenate(y))


@pytest.mark.parametrize("beta", [-1, 0, np.nan, np.inf, "x", True])
def test_fbeta_loss_rejects_a_bad_beta(beta):
    from skstruct.losses import FBetaLoss

    with pytest.raises(ValueError, match="beta must be a positive finite number"):
        FBetaLoss(beta=beta)
    assert FBetaLoss(beta=2).beta == 2


def test_table_memory_error_names_the_training_sequence():
    from skstruct.decoders import TableMemoryError

    rng = np.random.default_rng(0)
    lengths = [3, 4, 40, 5]
    X = [rng.normal(size=(n, 2)) for n in lengths]
    y = [rng.choice(np.array(["B-NP", "I-NP", "O"]), size=n) for n in lengths]
    decoder = ChainDecoder(max_table_memory=20_000)
    for solver in ("bcfw", "subgradient"):
        model = StructuredSVM(loss="f1", decoder=decoder, solver=solver, max_iter=1)
        with pytest.raises(TableMemoryError,
                           match="sequence 2 of the training data \\(40 tokens"):
            model.fit(X, y)
    StructuredSVM(loss="f1", decoder=decoder, max_iter=1).fit(X[:2], y[:2])


@pytest.mark.parametrize("estimator", TABULAR, ids=_name)
def test_label_name_lists_point_to_multilabel_binarizer(estimator):
    X = np.random.default_rng(0).normal(size=(3, 2))
    with pytest.raises(ValueError, match="MultiLabelBinarizer"):
        clone(estimator).fit(X, [["x"], ["x", "y"], []])
