"""skstruct.compat.seqlearn: seqlearn's conll.py runs with only its imports changed,
and the facade takes seqlearn's stacked, sparse inputs."""

import gzip
import re
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from skstruct.compat.seqlearn.datasets import load_conll
from skstruct.compat.seqlearn.evaluation import bio_f_score, whole_sequence_accuracy
from skstruct.compat.seqlearn.hmm import MultinomialHMM
from skstruct.compat.seqlearn.perceptron import StructuredPerceptron
from skstruct.datasets import load_conll2000

from _peer_examples import read_example, rewrite_imports, run_script


def write_bio_files(folder, n_files=10, per_file=60):
    """CoNLL-2000 training sentences (bundled) as ``word chunk`` files, the form of
    seqlearn's example data."""
    data = load_conll2000("train")
    folder.mkdir()
    for k in range(n_files):
        lines = []
        for i in range(k * per_file, (k + 1) * per_file):
            lines += [f"{w} {t}" for w, t in zip(data.words[i], data.target[i])] + [""]
        (folder / f"part{k:02d}.bio").write_text("\n".join(lines) + "\n")


def test_conll_example_runs_and_learns_chunks(tmp_path):
    text = rewrite_imports(read_example("seqlearn-0.2.tar.gz",
                                        "seqlearn-0.2/examples/conll.py"), {
        "from seqlearn.datasets import load_conll":
            "from skstruct.compat.seqlearn.datasets import load_conll",
        "from seqlearn.evaluation import bio_f_score":
            "from skstruct.compat.seqlearn.evaluation import bio_f_score",
        "from seqlearn.perceptron import StructuredPerceptron":
            "from skstruct.compat.seqlearn.perceptron import StructuredPerceptron",
    })
    write_bio_files(tmp_path / "nerdata")
    out = run_script(text, tmp_path)
    accuracy = float(re.search(r"Accuracy: ([\d.]+)", out).group(1))
    f1 = float(re.search(r"CoNLL F1: ([\d.]+)", out).group(1))
    # the all-"I-NP" tagger, the most frequent tag, as the floor to beat
    data = load_conll2000("train")
    test_tags = np.concatenate([data.target[i] for i in range(600) if (i // 60) % 5 == 0])
    majority = 100 * np.mean(test_tags == "I-NP")
    assert accuracy > majority + 20, out
    assert f1 > 50, out


def stacked(n=80):
    data = load_conll2000("train")
    lines = []
    for i in range(n):
        lines += [f"{w} {t}\n" for w, t in zip(data.words[i], data.target[i])] + ["\n"]
    X, y, lengths = load_conll(
        iter(lines),
        lambda sentence, i: [f"w={sentence[i].lower()}", f"suffix={sentence[i][-2:]}"])
    return X, y, lengths


def test_load_conll_returns_seqlearns_stacked_form():
    X, y, lengths = stacked(30)
    assert sp.issparse(X) and X.shape[0] == len(y) == lengths.sum()
    assert lengths.dtype == np.int32 and len(lengths) == 30
    assert X.shape[1] == 2 ** 16


def test_perceptron_takes_sparse_stacked_input_and_predicts_flat_labels():
    X, y, lengths = stacked()
    clf = StructuredPerceptron(max_iter=5, random_state=0).fit(X, y, lengths)
    y_pred = clf.predict(X, lengths)
    assert y_pred.shape == y.shape
    assert clf.score(X, y, lengths) == pytest.approx(np.mean(y_pred == y))
    assert clf.score(X, y, lengths) > 0.9
    assert clf.coef_.shape == (len(clf.classes_), X.shape[1])
    # one sequence when lengths is None
    first = lengths[0]
    np.testing.assert_array_equal(clf.predict(X[:first]), y_pred[:first])


def test_whole_sequence_accuracy_counts_sequences_without_errors():
    y_true = np.array(["B", "I", "O", "B", "O"])
    y_pred = np.array(["B", "I", "O", "B", "I"])
    assert whole_sequence_accuracy(y_true, y_pred, [3, 2]) == 0.5
    assert bio_f_score(y_true, y_true) == 1.0
    # chunks B-I and B true, B-I and B-I predicted: one of two right either way
    assert bio_f_score(y_true, y_pred) == 0.5


def test_bad_lengths_and_unavailable_parts_raise():
    X, y, lengths = stacked(5)
    with pytest.raises(ValueError, match="sum to"):
        StructuredPerceptron().fit(X, y, lengths[:-1])
    with pytest.raises(NotImplementedError, match="trans_features"):
        StructuredPerceptron(trans_features=True).fit(X, y, lengths)
    with pytest.raises(NotImplementedError, match="skstruct.CRF"):
        MultinomialHMM()
