"""Output kinds: the registry, every built-in kind's round trips, and a kind added from
outside the package (the worked example of doc/developers/output_kinds.rst)."""

import types

import numpy as np
import pytest
import scipy.sparse as sp

from skstruct import CRF, SparseMAPClassifier, StructuredPerceptron, StructuredSVM
from skstruct.outputs import (
    MatchingKind,
    MulticlassKind,
    MultilabelKind,
    OutputKind,
    SequenceKind,
    TreeKind,
    get_output_kind,
    infer_output_kind,
    register_output_kind,
    registered_output_kinds,
)
from skstruct.outputs import _base

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

BUILT_IN = {"multiclass": MulticlassKind, "multilabel": MultilabelKind,
            "sequence": SequenceKind, "tree": TreeKind, "matching": MatchingKind}


def test_built_in_kinds_are_registered_in_order():
    assert registered_output_kinds()[:5] == tuple(BUILT_IN)
    for name, kind_type in BUILT_IN.items():
        kind = get_output_kind(name)
        assert type(kind) is kind_type
        assert kind.name == kind.decoder_kind == name
        assert type(kind.default_decoder()).output_kind == name
    assert get_output_kind("tree").chosen_by_decoder
    assert get_output_kind("matching").chosen_by_decoder
    assert not get_output_kind("sequence").chosen_by_decoder


def test_registry_errors():
    with pytest.raises(ValueError, match="No output kind named 'ranking' is registered.*"
                                         "register_output_kind"):
        get_output_kind("ranking")
    with pytest.raises(ValueError, match="'sequence' is already registered.*replace=True"):
        register_output_kind(SequenceKind)
    with pytest.raises(TypeError, match="subclass of OutputKind"):
        register_output_kind(SequenceKind())
    with pytest.raises(ValueError, match="name must be a non-empty string"):
        register_output_kind(type("Nameless", (OutputKind,), {}))


def _data(kind, rng):
    """Training data of a built-in kind, with outputs that exercise its encoding."""
    if kind == "sequence":
        lengths = [3, 1, 4]
        return ([rng.normal(size=(n, 2)) for n in lengths],
                [rng.choice(np.array(["B", "I", "O"]), size=n) for n in lengths])
    if kind == "multiclass":
        return rng.normal(size=(6, 2)), np.array(["b", "a", "c", "a", "b", "c"])
    if kind == "multilabel":
        return rng.normal(size=(4, 2)), np.array([[1, 0, 1], [0, 0, 0], [1, 1, 1], [0, 1, 0]])
    if kind == "tree":
        heads = [np.array([0, 1, 1]), np.array([2, 0]), np.array([0])]
        return [rng.normal(size=(len(h) ** 2, 2)) for h in heads], heads
    matchings = [np.array([1, 0, 2]), np.array([-1, 0, -1, 1]), np.array([2, 0])]
    shapes = [(3, 3), (4, 2), (2, 4)]
    return [rng.normal(size=(r, c, 2)) for r, c in shapes], matchings


def _assert_same_outputs(kind, decoded, y):
    if kind in ("multiclass", "multilabel"):
        np.testing.assert_array_equal(decoded, y)
        return
    assert len(decoded) == len(y)
    for a, b in zip(decoded, y, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", list(BUILT_IN))
def test_every_kind_round_trips_its_outputs(name):
    kind = get_output_kind(name)
    X, y = _data(name, np.random.default_rng(0))
    batch, classes, encoded = kind.check_training_data(X, y, "Test")
    assert batch.n_sequences == len(y)
    _assert_same_outputs(name, kind.decode(encoded, batch, classes), y)
    offsets = batch.output_offsets
    assert offsets.shape == (len(y) + 1,)
    one_by_one = [kind.decode_one(encoded[offsets[i]:offsets[i + 1]], classes)
                  for i in range(len(y))]
    _assert_same_outputs(name, np.array(one_by_one) if name in ("multiclass", "multilabel")
                         else one_by_one, y)
    # The decoder reads the encoded outputs: its indicator parts score the gold outputs.
    features = kind.feature_map(batch.n_features, classes)
    w = np.random.default_rng(1).normal(size=features.n_params)
    scores = features.scores(batch, w)
    decoder = kind.default_decoder()
    gold_score = decoder.parts(scores, encoded).dot(scores)
    np.testing.assert_allclose(gold_score, decoder.score_outputs(scores, encoded))


@pytest.mark.parametrize("name", list(BUILT_IN))
def test_every_kind_stores_and_reads_its_coefficients(name):
    kind = get_output_kind(name)
    X, y = _data(name, np.random.default_rng(0))
    batch, classes, _ = kind.check_training_data(X, y, "Test")
    features = kind.feature_map(batch.n_features, classes)
    w = np.random.default_rng(1).normal(size=features.n_params)
    fitted = types.SimpleNamespace()
    kind.store_coefficients(fitted, features, w)
    np.testing.assert_array_equal(kind.coefficients(fitted, features), w)
    n_outputs = None if classes is None else len(classes)
    expected = (batch.n_features,) if n_outputs is None else (n_outputs, batch.n_features)
    assert fitted.coef_.shape == expected


@pytest.mark.parametrize("name", list(BUILT_IN))
def test_unary_scores_come_back_in_the_users_shape(name):
    kind = get_output_kind(name)
    X, y = _data(name, np.random.default_rng(0))
    batch, classes, _ = kind.check_training_data(X, y, "Test")
    features = kind.feature_map(batch.n_features, classes)
    unary = features.scores(batch, np.ones(features.n_params)).unary
    user = kind.unary_to_user(unary, batch)
    if name in ("multiclass", "multilabel"):
        assert user.shape == (len(y), len(classes))
    elif name == "sequence":
        assert [u.shape for u in user] == [(len(labels), 3) for labels in y]
    elif name == "tree":
        assert [u.shape for u in user] == [(len(h), len(h)) for h in y]
    else:
        assert [u.shape for u in user] == [x.shape[:2] for x in X]
        for u, x in zip(user, X, strict=True):
            np.testing.assert_allclose(u, x.sum(axis=2))


@pytest.mark.parametrize("name", ["sequence", "multiclass", "multilabel", "matching"])
def test_kinds_are_inferred_from_the_data(name):
    X, y = _data(name, np.random.default_rng(0))
    assert infer_output_kind(X, y).name == name
    # Trees are chosen by the decoder: their data looks like sequences.
    X, y = _data("tree", np.random.default_rng(0))
    assert infer_output_kind(X, y).name == "sequence"


# -- the worked example: a kind for label sets --------------------------------------


class LabelSetKind(MultilabelKind):
    """``y`` a list of Python sets of label names, one per sample."""

    name = "label_set"
    form = "X a 2-D (n_samples, n_features) matrix, y a list of sets of labels"
    decoder_kind = "multilabel"  # decoded by the decoders of multilabel outputs

    def recognizes(self, X, y):
        return (isinstance(y, list) and len(y) > 0
                and all(isinstance(labels, (set, frozenset)) for labels in y))

    def check_training_data(self, X, y, estimator):
        classes = np.array(sorted(set().union(*y)))
        indicator = np.array([[c in labels for c in classes] for labels in y], dtype=int)
        batch, _, encoded = super().check_training_data(X, indicator, estimator)
        return batch, classes, encoded

    def decode(self, encoded, batch, classes):
        return [self.decode_one(row, classes) for row in encoded]

    def decode_one(self, encoded, classes):
        return set(classes[np.asarray(encoded).reshape(-1) == 1].tolist())

    def score(self, y, y_pred, sample_weight=None):
        """Mean Jaccard similarity of the true and predicted sets (1 for two empty sets)."""
        similarity = [len(a & b) / len(a | b) if a | b else 1.0
                      for a, b in zip(y, y_pred, strict=True)]
        return float(np.average(similarity, weights=sample_weight))


@pytest.fixture
def label_sets(monkeypatch):
    """LabelSetKind registered for one test (the registry is restored afterwards)."""
    monkeypatch.setattr(_base, "_REGISTRY", dict(_base._REGISTRY))
    register_output_kind(LabelSetKind)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 4))
    names = np.array(["art", "news", "sport"])
    on = X[:, :3] + 0.3 * rng.normal(size=(80, 3)) > 0
    y = [set(names[row].tolist()) for row in on]
    return X, y


@pytest.mark.parametrize("estimator", [
    StructuredSVM(alpha=1e-2, max_iter=20, random_state=0),
    StructuredPerceptron(max_iter=10, random_state=0),
    SparseMAPClassifier(alpha=1e-2),
    CRF(alpha=1e-2),
], ids=lambda e: type(e).__name__)
def test_a_registered_kind_is_learned_by_the_estimators(estimator, label_sets):
    X, y = label_sets
    model = estimator.fit(X, y)
    assert model.output_kind_ == "label_set"
    assert model.classes_.tolist() == ["art", "news", "sport"]
    assert model.coef_.shape == (3, 4)
    predicted = model.predict(X)
    assert isinstance(predicted, list) and len(predicted) == len(y)
    assert all(isinstance(p, set) and p <= {"art", "news", "sport"} for p in predicted)
    assert model.score(X, y) == pytest.approx(LabelSetKind().score(y, predicted))
    # Better than every constant prediction (all labels: about 0.5 here).
    constant = max(LabelSetKind().score(y, [labels] * len(y))
                   for labels in (set(), {"art", "news", "sport"}, {"art"}))
    assert model.score(X, y) > max(0.6, constant + 0.1)
    assert model.decision_function(X[:2]).shape == (2, 3)


def test_a_registered_kind_follows_the_estimators_rules(label_sets, monkeypatch):
    X, y = label_sets
    # The kind's traits reach the estimators: label sets are tabular, so the CRF's
    # probabilities exist, one column per label.
    crf = CRF(alpha=1e-2).fit(X, y)
    assert crf.predict_proba(X[:3]).shape == (3, 3)
    np.testing.assert_allclose(np.exp(crf.predict_log_proba(X[:3])),
                               crf.predict_proba(X[:3]))
    # A kind that declares marginals intractable is refused by the CRF, for its reason.
    monkeypatch.setattr(LabelSetKind, "intractable_operations",
                        {"marginals": "label sets have no marginals here"})
    with pytest.raises(ValueError, match="CRF cannot learn label_set outputs: its training "
                       "needs the decoder operation 'marginals', and label sets have no "
                       "marginals here"):
        CRF().fit(X, y)
    StructuredSVM(max_iter=2).fit(X, y)
    # It names the decoders it uses: a multilabel decoder is accepted, others are not.
    from skstruct.decoders import MulticlassDecoder, MultilabelDecoder

    StructuredPerceptron(decoder=MultilabelDecoder(), max_iter=2).fit(X, y)
    with pytest.raises(ValueError, match="decodes multiclass outputs, but X and y look "
                                         "like label_set data"):
        StructuredPerceptron(decoder=MulticlassDecoder()).fit(X, y)


def test_a_model_of_an_unregistered_kind_says_what_to_import(label_sets, monkeypatch):
    X, y = label_sets
    model = StructuredPerceptron(max_iter=2).fit(X, y)
    monkeypatch.delitem(_base._REGISTRY, "label_set")
    with pytest.raises(ValueError, match="No output kind named 'label_set' is registered"):
        model.predict(X)
    # Without the kind, the same data is not learnable: sets are not labels.
    with pytest.raises(TypeError, match="not hashable"):
        StructuredPerceptron().fit(X, y)


def test_sparse_indicator_still_means_multilabel(label_sets):
    X, _ = label_sets
    y = sp.csr_matrix(np.eye(80, 3, dtype=int))
    assert infer_output_kind(X, y).name == "multilabel"


def test_replacing_a_kind_keeps_its_place(monkeypatch):
    monkeypatch.setattr(_base, "_REGISTRY", dict(_base._REGISTRY))

    class StrictMulticlassKind(MulticlassKind):
        name = "multiclass"

    order = registered_output_kinds()
    register_output_kind(StrictMulticlassKind, replace=True)
    assert registered_output_kinds() == order
    assert type(get_output_kind("multiclass")) is StrictMulticlassKind
    # Still the fallback: a 2-D y is multilabel.
    assert infer_output_kind(np.ones((3, 2)), np.eye(3, 2, dtype=int)).name == "multilabel"


def test_data_of_no_registered_kind_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(_base, "_REGISTRY", {"tree": TreeKind()})
    with pytest.raises(ValueError, match="form of no registered output kind.*registered: "
                                         "tree"):
        StructuredPerceptron().fit(np.ones((3, 2)), np.array([0, 1, 0]))


def test_a_decoder_of_an_unregistered_kind_is_a_clear_error():
    from skstruct.decoders import MulticlassDecoder

    class RankingDecoder(MulticlassDecoder):
        output_kind = "ranking"

    with pytest.raises(ValueError, match="RankingDecoder, which decodes 'ranking' outputs, "
                                         "but no output kind of that name is registered"):
        StructuredPerceptron(decoder=RankingDecoder()).fit(np.ones((3, 2)),
                                                            np.array([0, 1, 0]))


# -- what the estimators ask the kinds -------------------------------------------------

TRAITS = {  # classes_are_labels, has_label_pairs, tabular_probabilities, example_noun
    "multiclass": (True, True, True, "samples"),
    "multilabel": (False, True, True, "samples"),
    "sequence": (True, True, False, "sequences"),
    "tree": (False, False, False, "sentences"),
    "matching": (False, False, False, "instances"),
    "dag": (False, False, False, "graphs"),
    "graph": (True, False, False, "graphs"),
}


@pytest.mark.parametrize("name", list(TRAITS))
def test_every_built_in_kind_declares_its_traits(name):
    kind = get_output_kind(name)
    assert (kind.classes_are_labels, kind.has_label_pairs, kind.tabular_probabilities,
            kind.example_noun) == TRAITS[name]


@pytest.mark.parametrize("name", list(BUILT_IN))
def test_read_labels_are_the_labels_that_training_data_encodes(name):
    kind = get_output_kind(name)
    X, y = _data(name, np.random.default_rng(0))
    if not kind.classes_are_labels:
        with pytest.raises(NotImplementedError, match="classes_are_labels is False"):
            kind.read_labels(X, y, "Test")
        return
    batch, labels = kind.read_labels(X, y, "Test")
    expected_batch, classes, encoded = kind.check_training_data(X, y, "Test")
    np.testing.assert_array_equal(classes[encoded], labels)
    np.testing.assert_array_equal(batch.offsets, expected_batch.offsets)
    # one class in a batch is no error here (partial_fit's classes come from elsewhere)
    one = ([np.full_like(labels, y[0][0]) for labels in y] if name == "sequence"
           else np.full_like(y, y[0]))
    assert np.unique(kind.read_labels(X, one, "Test")[1]).shape == (1,)


@pytest.mark.parametrize("name", list(BUILT_IN))
def test_row_labels_and_unary_packing_of_the_kinds_with_label_pairs(name):
    kind = get_output_kind(name)
    X, y = _data(name, np.random.default_rng(0))
    batch, classes, encoded = kind.check_training_data(X, y, "Test")
    if not kind.has_label_pairs:
        with pytest.raises(NotImplementedError, match="has_label_pairs is False"):
            kind.row_labels(encoded, 1)
        return
    rows = kind.row_labels(encoded, len(classes)).toarray()
    assert rows.shape == (batch.X.shape[0], len(classes))
    if name == "multilabel":
        np.testing.assert_array_equal(rows, y)
    else:
        np.testing.assert_array_equal(rows, np.eye(len(classes))[encoded])
    features = kind.feature_map(batch.n_features, classes)
    unary = np.arange(batch.n_features * len(classes), dtype=float).reshape(
        batch.n_features, len(classes)) + 1
    parts = features.unpack(kind.pack_unary(features, unary))
    np.testing.assert_array_equal(parts[0], unary)
    assert all(not np.any(part) for part in parts[1:])


def test_the_log_marginals_of_tabular_kinds_are_those_of_the_decoder(rng):
    from skstruct.decoders import MulticlassScores, MultilabelScores, SubsetDecoder

    unary = rng.normal(size=(5, 4))
    for name, scores, decoders in [
        ("multiclass", MulticlassScores(unary), [get_output_kind("multiclass")
                                                  .default_decoder()]),
        ("multilabel", MultilabelScores(unary), [get_output_kind("multilabel")
                                                  .default_decoder(), SubsetDecoder(2)]),
    ]:
        for decoder in decoders:
            expected = np.log(decoder.marginals(scores)[1].unary)
            got = get_output_kind(name).log_marginals(decoder, scores)
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


class TagSequenceKind(SequenceKind):
    """Sequences whose ``y`` is a tuple of label lists (a kind added from outside)."""

    name = "tag_sequence"

    def recognizes(self, X, y):
        return isinstance(y, tuple) and super().recognizes(X, y)

    def read_labels(self, X, y, estimator):
        return super().read_labels(X, [np.asarray(labels) for labels in y], estimator)


@pytest.fixture
def tag_sequences(monkeypatch):
    monkeypatch.setattr(_base, "_REGISTRY", dict(_base._REGISTRY))
    register_output_kind(TagSequenceKind)
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(n, 3)) for n in (4, 2, 5, 3)]
    y = tuple([["B", "I", "O"][int(np.argmax(row))] for row in x] for x in X)
    return X, y


def test_a_registered_kind_gets_partial_fit_and_seen_pairs_from_its_traits(tag_sequences):
    X, y = tag_sequences
    # partial_fit: its classes are labels, so the stream's classes are required first ...
    model = StructuredPerceptron(random_state=0)
    with pytest.raises(ValueError, match="classes must be passed on the first call"):
        model.partial_fit(X[:1], y[:1])
    # ... and a batch may hold a single class of them
    model.partial_fit(X[:1], (["B"] * 4,), classes=["B", "I", "O"])
    model.partial_fit(X[1:], y[1:])
    assert model.output_kind_ == "tag_sequence"
    assert model.classes_.tolist() == ["B", "I", "O"]
    # feature_label_pairs="seen": its unary weights are (feature, label) pairs
    crf = CRF(alpha=1e-2, feature_label_pairs="seen", l1_ratio=0.5).fit(X, y)
    assert crf.output_kind_ == "tag_sequence" and crf.coef_.shape == (3, 3)
