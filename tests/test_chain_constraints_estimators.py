"""Every sequence learner honours ChainDecoder(constraints=...): in training (the gold
check, the compiled engine, the CRF objective) and in prediction (CoNLL-2000, BIO)."""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

import skstruct.optim._bcfw as bcfw_module
from skstruct import (
    CRF,
    PerturbedMAPClassifier,
    SparseMAPClassifier,
    StructuredPerceptron,
    StructuredSVM,
)
from skstruct.datasets import load_conll2000
from skstruct.decoders import ChainConstraints, ChainDecoder
from skstruct.optim._engine import compiled_problem


def _n_invalid_bio(sequences):
    """Sequences with an I-X that does not follow B-X or I-X (the rule written out)."""
    bad = 0
    for tags in sequences:
        previous = "O"
        for tag in tags:
            if tag.startswith("I-") and previous not in ("B-" + tag[2:], tag):
                bad += 1
                break
            previous = tag
    return bad


def _featurize(vocabulary, *corpora):
    """One-hot word (those of ``vocabulary``, else one unknown word), POS and
    neighbouring POS per token (a cheap stand-in for the full features: these tests are
    about validity, not accuracy), one CSR per sentence, a list per corpus."""
    vocabulary = set(vocabulary)
    codes = {}
    rows = []
    for corpus_words, corpus_pos in corpora:
        for words, pos in zip(corpus_words, corpus_pos):
            padded = ["<s>"] + list(pos) + ["</s>"]
            rows.append([[codes.setdefault(("w", w if w in vocabulary else "<unk>"),
                                           len(codes)),
                          codes.setdefault(("p", padded[t + 1]), len(codes)),
                          codes.setdefault(("l", padded[t]), len(codes)),
                          codes.setdefault(("r", padded[t + 2]), len(codes))]
                         for t, w in enumerate(words)])
    n_features = len(codes)
    sentences = [sp.csr_matrix((np.ones(4 * len(r)), np.ravel(r),
                                np.arange(0, 4 * len(r) + 1, 4)), shape=(len(r), n_features))
                 for r in rows]
    cut = np.cumsum([len(c[0]) for c in corpora])
    return [sentences[a:b] for a, b in zip(np.concatenate(([0], cut[:-1])), cut)]


@pytest.fixture(scope="module")
def conll():
    train, test = load_conll2000("train"), load_conll2000("test")
    n = 150
    X_train, X_test = _featurize(np.concatenate(train.words[:n]),
                                 (train.words[:n], train.pos[:n]), (test.words, test.pos))
    return X_train[:n], train.target[:n], X_test, test.target


def _quiet_fit(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a few iterations: convergence is not the point
        return model.fit(X, y)


@pytest.mark.parametrize("make", [
    lambda: CRF(max_iter=8, decoder=ChainDecoder(constraints="bio")),
    lambda: StructuredSVM(solver="bcfw", max_iter=2, random_state=0,
                          decoder=ChainDecoder(constraints="bio")),
], ids=["CRF", "StructuredSVM"])
def test_constrained_models_never_predict_invalid_bio_on_the_conll2000_test_set(conll,
                                                                                 make):
    X_train, y_train, X_test, y_test = conll
    model = _quiet_fit(make(), X_train, y_train)
    assert isinstance(model.decoder_.constraints, ChainConstraints)
    assert model.decoder.constraints == "bio"  # the parameter is left alone
    y_pred = model.predict(X_test)
    assert len(y_pred) == len(y_test) == 2012
    assert _n_invalid_bio(y_pred) == 0
    # the same weights without the constraints do predict invalid sequences
    model.decoder_.set_params(constraints=None)
    assert _n_invalid_bio(model.predict(X_test)) > 0


def test_an_unconstrained_model_decodes_with_constraints(conll):
    X_train, y_train, X_test, _ = conll
    model = _quiet_fit(StructuredPerceptron(max_iter=2, random_state=0), X_train, y_train)
    assert _n_invalid_bio(model.predict(X_test)) > 0
    model.decoder_.set_params(constraints=ChainConstraints.from_tags(model.classes_, "bio"))
    assert _n_invalid_bio(model.predict(X_test)) == 0
    paths, scores = model.predict_top_k(X_test[:50], 3)
    assert all(_n_invalid_bio(listed) == 0 for listed in paths)


@pytest.mark.parametrize("make", [
    lambda d: StructuredPerceptron(max_iter=2, random_state=0, decoder=d),
    lambda d: SparseMAPClassifier(max_iter=3, decoder=d),
    lambda d: PerturbedMAPClassifier(max_iter=1, random_state=0, decoder=d),
    lambda d: StructuredSVM(loss="f1", rescaling="slack", solver="cutting_plane",
                            max_iter=2, decoder=d),
], ids=["perceptron", "sparsemap", "perturbed", "ssvm-f1-slack"])
def test_every_learner_predicts_valid_sequences_only(conll, make):
    X_train, y_train, X_test, _ = conll
    model = _quiet_fit(make(ChainDecoder(constraints="iob2")), X_train[:20], y_train[:20])
    assert _n_invalid_bio(model.predict(X_test[:300])) == 0


@pytest.mark.parametrize("make", [
    lambda: CRF(decoder=ChainDecoder(constraints="bio")),
    lambda: StructuredSVM(decoder=ChainDecoder(constraints="bio")),
    lambda: StructuredPerceptron(decoder=ChainDecoder(constraints="iob2")),
    lambda: PerturbedMAPClassifier(decoder=ChainDecoder(constraints="bio")),
], ids=["CRF", "StructuredSVM", "StructuredPerceptron", "PerturbedMAPClassifier"])
def test_gold_sequences_that_break_the_constraints_are_rejected_at_fit(make):
    X = [np.eye(3), np.eye(2)[:, [0, 1, 1]]]
    y = [np.array(["B-NP", "I-NP", "O"]), np.array(["O", "I-NP"])]
    with pytest.raises(ValueError, match=r"1 of 2 training sequences.*'I-NP' after 'O'"):
        make().fit(X, y)
    with pytest.raises(ValueError, match="'B-NP'"):  # BIO tags are not BIOES-valid at the end
        StructuredPerceptron(decoder=ChainDecoder(constraints="bioes")).fit(
            X[:1], [np.array(["O", "O", "B-NP"])])
    with pytest.raises(ValueError, match="'X'"):
        make().fit(X[:1], [np.array(["B-NP", "X", "O"])])


def test_constrained_crf_trains_the_constrained_likelihood():
    """The gradient is that of log Σ_{valid y} exp θ_y: the model never spends weight on
    the forbidden transitions, and the CRF objective of the constrained decoder is the
    one minimized, by L-BFGS and by SVRG (whose smoothed oracle reads the constraints)."""
    rng = np.random.default_rng(0)
    # sparse features: the path of the fused compiled CRF objective, which reads the
    # constraints
    X = [sp.csr_matrix(rng.normal(size=(5, 4))) for _ in range(20)]
    tags = np.array(["B-NP", "I-NP", "O"])
    y = [tags[np.array([0, 1, 2, 0, 1])] for _ in range(20)]
    model = _quiet_fit(CRF(max_iter=30, decoder=ChainDecoder(constraints="bio")), X, y)
    free = _quiet_fit(CRF(max_iter=30), X, y)
    o, i = 2, 1
    # the unconstrained CRF learns to push O -> I-NP down; the constrained one has no
    # reason to (that transition is absent from every valid sequence)
    assert free.transition_[o, i] < -0.1 and abs(model.transition_[o, i]) < 1e-8
    svrg = _quiet_fit(CRF(solver="svrg", max_iter=5, decoder=ChainDecoder(constraints="bio")),
                      X, y)
    free_svrg = _quiet_fit(CRF(solver="svrg", max_iter=5), X, y)
    assert free_svrg.transition_[o, i] < -0.1 and abs(svrg.transition_[o, i]) < 1e-8
    assert _n_invalid_bio(svrg.predict(X)) == 0


def test_the_compiled_engine_gives_the_python_loop_model(conll, monkeypatch):
    X_train, y_train, _, _ = conll
    models, offers = [], []
    for python_loop in (False, True):
        def spy(risk, rescaling, python_loop=python_loop):
            problem = None if python_loop else compiled_problem(risk, rescaling)
            offers.append(problem)
            return problem
        monkeypatch.setattr(bcfw_module, "compiled_problem", spy)
        models.append(_quiet_fit(StructuredSVM(
            solver="bcfw", max_iter=2, random_state=0, loss="hamming",
            decoder=ChainDecoder(constraints="bio")), X_train[:30], y_train[:30]))
    assert offers[0] is not None
    for name in ("coef_", "transition_", "start_transition_", "end_transition_"):
        np.testing.assert_allclose(getattr(models[0], name), getattr(models[1], name),
                                   atol=1e-9)


def test_clone_and_pickle_keep_the_constraints(conll):
    X_train, y_train, X_test, _ = conll
    model = StructuredPerceptron(max_iter=1, random_state=0,
                                 decoder=ChainDecoder(constraints="bio"))
    assert clone(model).get_params()["decoder__constraints"] == "bio"
    _quiet_fit(model, X_train[:30], y_train[:30])
    again = pickle.loads(pickle.dumps(model))
    for a, b in zip(again.predict(X_test[:100]), model.predict(X_test[:100])):
        np.testing.assert_array_equal(a, b)


def _named_bio_constraints(tags):
    """The BIO constraints over ``tags`` written as plain masks with names, in the order
    of ``tags`` (which need not be the sorted order of ``classes_``)."""
    bio = ChainConstraints.from_tags(tags, "bio")
    return ChainConstraints(bio.transition, start=bio.start, end=bio.end,
                            state_names=list(tags))


_EVERY_LEARNER = {
    "CRF": lambda d: CRF(max_iter=8, decoder=d),
    "StructuredSVM": lambda d: StructuredSVM(solver="bcfw", max_iter=2, random_state=0,
                                             decoder=d),
    "StructuredPerceptron": lambda d: StructuredPerceptron(max_iter=2, random_state=0,
                                                           decoder=d),
    "SparseMAPClassifier": lambda d: SparseMAPClassifier(max_iter=3, decoder=d),
    "PerturbedMAPClassifier": lambda d: PerturbedMAPClassifier(max_iter=1, random_state=0,
                                                               decoder=d),
}


@pytest.mark.parametrize("name", sorted(_EVERY_LEARNER))
def test_named_constraints_are_matched_to_classes_by_name(conll, name):
    X_train, y_train, X_test, _ = conll
    X_train, y_train = X_train[:40], y_train[:40]
    tags = sorted(set(np.concatenate(y_train).tolist()))
    # the user's order: reversed, so that no state keeps its position in classes_
    user_order = tags[::-1]
    assert all(a != b for a, b in zip(user_order, tags)) or len(tags) % 2
    decoder = ChainDecoder(constraints=_named_bio_constraints(user_order))
    model = _quiet_fit(_EVERY_LEARNER[name](decoder), X_train, y_train)
    assert list(model.classes_) == tags
    bound = model.decoder_.constraints
    assert bound.state_names == tags
    assert np.array_equal(bound.transition, ChainConstraints.from_tags(tags).transition)
    y_pred = model.predict(X_test[:300])
    assert _n_invalid_bio(y_pred) == 0
    assert not any(tags_[0].startswith("I-") for tags_ in y_pred)


def test_named_constraints_break_by_gold_data_name_the_right_tags():
    # in the user's order, state 0 is "I-NP" (which may not start a sequence); in the
    # sorted classes_ state 0 is "B-NP"
    user_order = ["I-NP", "O", "B-NP"]
    decoder = ChainDecoder(constraints=_named_bio_constraints(user_order))
    X = [np.eye(3), np.eye(3)]
    good = [np.array(["B-NP", "I-NP", "O"]), np.array(["O", "B-NP", "I-NP"])]
    CRF(max_iter=2, decoder=decoder).fit(X, good)  # valid BIO: no error
    bad = [np.array(["B-NP", "I-NP", "O"]), np.array(["I-NP", "O", "O"])]
    with pytest.raises(ValueError, match=r"1 of 2 training sequences.*starts with 'I-NP'"):
        CRF(max_iter=2, decoder=decoder).fit(X, bad)


def test_constraints_naming_other_states_say_which_names_do_not_match():
    decoder = ChainDecoder(constraints=_named_bio_constraints(["B-NP", "I-NP", "O"]))
    X = [np.eye(3)]
    with pytest.raises(ValueError, match=r"training labels \['B-VP'\] are not among them "
                                         r"\(and the names \['B-NP'\] are not"):
        CRF(max_iter=2, decoder=decoder).fit(X, [np.array(["B-VP", "I-NP", "O"])])


def test_duplicate_state_names_are_an_error():
    with pytest.raises(ValueError, match=r"state_names must all differ; \['O'\]"):
        ChainConstraints(np.ones((3, 3), bool), state_names=["O", "B-NP", "O"])


def test_masks_without_names_follow_classes():
    # state 0 of the masks is classes_[0] = "B-NP": forbidding it as a first state
    start = np.array([False, True, True])
    decoder = ChainDecoder(constraints=ChainConstraints(np.ones((3, 3), bool), start=start))
    X = [np.eye(3), np.eye(3)]
    y = [np.array(["O", "B-NP", "I-NP"]), np.array(["I-NP", "O", "O"])]
    model = CRF(max_iter=2, decoder=decoder).fit(X, y)
    assert model.decoder_.constraints.state_names == ["B-NP", "I-NP", "O"]
    assert model.decoder_.constraints.start.tolist() == start.tolist()
    with pytest.raises(ValueError, match="starts with 'B-NP'"):
        CRF(max_iter=2, decoder=decoder).fit(X, [np.array(["B-NP", "I-NP", "O"])] * 2)
