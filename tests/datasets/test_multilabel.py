import gzip
import io
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from skstruct.datasets import load_multilabel
from skstruct.datasets._multilabel import _read_arff

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
MULTILABEL = SHARED / "multilabel"
needs_shared = pytest.mark.skipif(
    not MULTILABEL.is_dir(), reason=f"shared benchmark data folder {MULTILABEL} not found"
)

# the README table of shared/data: train, test, features, labels, sparse, label
# cardinality (of train and test together), its tolerance (tmc2007 is given as 2.2)
TABLE = {
    "yeast": (1500, 917, 103, 14, False, 4.23, 0.01),
    "scene": (1211, 1196, 294, 6, False, 1.07, 0.01),
    "emotions": (391, 202, 72, 6, False, 1.87, 0.01),
    "bibtex": (4880, 2515, 1836, 159, True, 2.40, 0.01),
    "tmc2007": (21519, 7077, 500, 22, True, 2.2, 0.05),
}
BUNDLED = ["yeast", "emotions"]


def check_against_table(name, train, test):
    n_train, n_test, n_features, n_labels, sparse, cardinality, tol = TABLE[name]
    for bunch, n in ((train, n_train), (test, n_test)):
        assert bunch.data.shape == (n, n_features)
        assert bunch.target.shape == (n, n_labels)
        assert sp.issparse(bunch.data) == sparse
        assert bunch.data.dtype == np.float64
        assert np.issubdtype(bunch.target.dtype, np.integer)
        assert set(np.unique(bunch.target)) <= {0, 1}
        assert len(bunch.feature_names) == n_features
        assert len(bunch.target_names) == n_labels
        assert name in bunch.DESCR
    assert list(train.target_names) == list(test.target_names)
    assert list(train.feature_names) == list(test.feature_names)
    counts = np.concatenate([train.target.sum(axis=1), test.target.sum(axis=1)])
    assert counts.mean() == pytest.approx(cardinality, abs=tol)
    # every label occurs in the training set
    assert np.all(train.target.sum(axis=0) > 0)


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_matches_table(name):
    train, test = load_multilabel(name), load_multilabel(name, "test")
    check_against_table(name, train, test)
    assert np.all(np.isfinite(train.data))
    assert train.data.flags.c_contiguous


@needs_shared
@pytest.mark.parametrize("name", list(TABLE))
def test_full_files_match_table(name):
    train = load_multilabel(name, path=MULTILABEL)
    test = load_multilabel(name, "test", path=MULTILABEL)
    check_against_table(name, train, test)
    if sp.issparse(train.data):
        assert train.data.format == "csr"
        assert train.data.has_sorted_indices
        # bibtex and tmc2007 have binary word features
        assert set(np.unique(train.data.data)) == {1.0}


@needs_shared
@pytest.mark.parametrize("name", BUNDLED)
@pytest.mark.parametrize("subset", ["train", "test"])
def test_bundled_equals_parsed_full_file(name, subset):
    bundled = load_multilabel(name, subset)
    full = load_multilabel(name, subset, path=MULTILABEL / name / f"{name}-{subset}.arff.gz")
    # bit for bit, not merely close
    assert np.array_equal(bundled.data.view(np.int64), full.data.view(np.int64))
    assert np.array_equal(bundled.target, full.target)
    assert bundled.target.dtype == full.target.dtype
    assert list(bundled.feature_names) == list(full.feature_names)
    assert list(bundled.target_names) == list(full.target_names)


@needs_shared
def test_label_names_in_arff_order_not_xml_order():
    # yeast.xml lists Class6 before Class4; the columns follow the ARFF attributes
    xml = (MULTILABEL / "yeast" / "yeast.xml").read_text()
    assert xml.index('"Class6"') < xml.index('"Class4"')
    names = load_multilabel("yeast", path=MULTILABEL / "yeast").target_names.tolist()
    assert names == [f"Class{i}" for i in range(1, 15)]


@needs_shared
def test_full_file_first_row():
    yeast = load_multilabel("yeast", path=MULTILABEL)
    assert yeast.data[0, :3].tolist() == [0.0937, 0.139771, 0.062774]
    bibtex = load_multilabel("bibtex", path=MULTILABEL)
    # first row of bibtex-train.arff: "{0 1,5 1,6 1,20 1,..."
    assert bibtex.data[0].indices[:4].tolist() == [0, 5, 6, 20]
    assert bibtex.feature_names[:2].tolist() == ["0", "000"]
    assert bibtex.target_names[0] == "TAG_2005"


SPARSE_ARFF = """\
% a comment
@relation toy

@attribute f0 numeric
@attribute 'f 1' numeric
@ATTRIBUTE f2 {0,1}
@attribute beta {0,1}
@attribute alpha {0,1}

@data
{0 1.5,3 1}
{}
{1 -2, 2 1, 4 1 , 3 1}

{4 1,0 0.25}
"""
TOY_XML = """\
<?xml version="1.0" encoding="utf-8"?>
<labels xmlns="http://mulan.sourceforge.net/labels">
<label name="alpha"></label>
<label name="beta"></label>
</labels>
"""


def test_read_sparse_arff():
    names, table = _read_arff(io.StringIO(SPARSE_ARFF))
    assert names == ["f0", "f 1", "f2", "beta", "alpha"]
    assert sp.issparse(table) and table.format == "csr"
    np.testing.assert_array_equal(table.toarray(), [
        [1.5, 0, 0, 1, 0],
        [0, 0, 0, 0, 0],
        [0, -2, 1, 1, 1],
        [0.25, 0, 0, 0, 1],
    ])


def test_read_dense_arff():
    text = ("@relation d\n@attribute x numeric\n@attribute y real\n@attribute c {no,yes}\n"
            "@data\n1,2.5,yes\n-3,?,no\n")
    names, table = _read_arff(io.StringIO(text))
    assert names == ["x", "y", "c"]
    assert isinstance(table, np.ndarray)
    np.testing.assert_array_equal(table, [[1, 2.5, 1], [-3, np.nan, 0]])


@pytest.mark.parametrize("text, message", [
    ("@attribute a numeric\n@data\n1,2\n", "line 3: expected 1 values"),
    ("@attribute a numeric\n@attribute b numeric\n@data\n1,x\n", "line 4: 'x' is not a"),
    ("@attribute a numeric\n@data\n{3 1}\n", "line 3: bad sparse entry"),
    ("@attribute a {0,1}\n@data\n{0 2}\n", "not a value of the nominal"),
    ("@attribute a string\n@data\n", "unsupported type"),
    ("@attribute a numeric\n1\n", "unexpected header line"),
    ("@attribute a numeric\n", "no @data"),
])
def test_read_arff_errors(text, message):
    with pytest.raises(ValueError, match=message):
        _read_arff(io.StringIO(text))


@pytest.mark.parametrize("compress", [False, True])
def test_load_sparse_files_from_folder(tmp_path, compress):
    folder = tmp_path / "toy"
    folder.mkdir()
    arff = folder / ("toy-train.arff.gz" if compress else "toy-train.arff")
    if compress:
        with gzip.open(arff, "wt") as f:
            f.write(SPARSE_ARFF)
    else:
        arff.write_text(SPARSE_ARFF)
    (folder / "toy.xml").write_text(TOY_XML)
    for path in (tmp_path, folder, arff):
        toy = load_multilabel("toy", path=path)
        assert sp.issparse(toy.data) and toy.data.format == "csr"
        np.testing.assert_array_equal(toy.data.toarray(), [
            [1.5, 0, 0], [0, 0, 0], [0, -2, 1], [0.25, 0, 0]])
        # ARFF order (beta, alpha), not the order of the .xml
        assert toy.target_names.tolist() == ["beta", "alpha"]
        np.testing.assert_array_equal(toy.target, [[1, 0], [0, 0], [1, 1], [0, 1]])
        assert toy.feature_names.tolist() == ["f0", "f 1", "f2"]


def test_labels_must_be_the_last_attributes(tmp_path):
    (tmp_path / "toy-train.arff").write_text(SPARSE_ARFF)
    (tmp_path / "toy.xml").write_text(TOY_XML.replace('"alpha"', '"f2"'))
    with pytest.raises(ValueError, match="last 2 attributes are not the labels"):
        load_multilabel("toy", path=tmp_path)


def test_load_multilabel_errors(tmp_path):
    with pytest.raises(ValueError, match="subset"):
        load_multilabel("yeast", "valid")
    with pytest.raises(ValueError, match="not bundled"):
        load_multilabel("bibtex")
    with pytest.raises(ValueError, match="unknown data set"):
        load_multilabel("nope")
    with pytest.raises(FileNotFoundError):
        load_multilabel("yeast", path=tmp_path)
