from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from skstruct.datasets import load_letters

SHARED_LETTERS = Path(__file__).resolve().parents[3] / "shared/data/ocr_letters/letters.npz"


@pytest.fixture(scope="module")
def letters():
    return load_letters()


@pytest.fixture(scope="module")
def raw():
    with resources.as_file(resources.files("skstruct.datasets") / "data" / "letters.npz") as path:
        with np.load(path) as npz:
            return dict(npz)


def test_counts_and_shapes(letters, raw):
    assert len(letters.data) == len(letters.target) == len(letters.folds) == 6877
    assert letters.words.shape == (6877,)
    lengths = np.array([len(t) for t in letters.target])
    assert lengths.sum() == 52152
    np.testing.assert_array_equal(lengths, raw["word_len"])
    np.testing.assert_array_equal([x.shape[0] for x in letters.data], lengths)
    assert all(x.shape[1] == 128 and x.dtype == np.float64 for x in letters.data)


def test_values(letters):
    pixels = np.concatenate(letters.data)
    assert set(np.unique(pixels)) == {0.0, 1.0}
    labels = np.concatenate(letters.target)
    assert np.issubdtype(labels.dtype, np.integer)
    assert labels.min() == 0 and labels.max() == 25
    assert letters.target_names.tolist() == list("abcdefghijklmnopqrstuvwxyz")
    assert np.issubdtype(letters.folds.dtype, np.integer)
    assert set(letters.folds.tolist()) == set(range(10))
    assert "Taskar" in letters.DESCR


def test_targets_spell_words(letters):
    rng = np.random.default_rng(0)
    for i in rng.choice(len(letters.words), size=200, replace=False):
        assert "".join(letters.target_names[letters.target[i]]) == letters.words[i]
    assert [len(w) for w in letters.words] == [len(t) for t in letters.target]


def test_letters_follow_word_and_position(letters, raw):
    # Recover one word's letters directly from the flat arrays.
    word = 1234
    mask = raw["word_idx"] == word
    order = np.argsort(raw["position"][mask])
    np.testing.assert_array_equal(letters.data[word], raw["X"][mask][order])
    np.testing.assert_array_equal(letters.target[word], raw["y"][mask][order])


def test_shuffled_file_gives_same_sequences(letters, raw, tmp_path):
    perm = np.random.default_rng(0).permutation(len(raw["y"]))
    per_letter = ("X", "y", "word_idx", "position", "fold")
    shuffled = {k: v[perm] if k in per_letter else v for k, v in raw.items()}
    path = tmp_path / "shuffled.npz"
    np.savez(path, **shuffled)
    reloaded = load_letters(path=path)
    assert all(np.array_equal(a, b) for a, b in zip(reloaded.data, letters.data))
    assert all(np.array_equal(a, b) for a, b in zip(reloaded.target, letters.target))
    np.testing.assert_array_equal(reloaded.words, letters.words)


@pytest.mark.skipif(not SHARED_LETTERS.is_file(), reason=f"{SHARED_LETTERS} not found")
def test_path_matches_bundled(letters):
    full = load_letters(path=str(SHARED_LETTERS))
    np.testing.assert_array_equal(full.words, letters.words)
    np.testing.assert_array_equal(full.folds, letters.folds)
    assert all(np.array_equal(a, b) for a, b in zip(full.data, letters.data))
