import gzip
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from skstruct.datasets import load_multilabel
from skstruct.datasets._arff import (
    _bulk_dense,
    _bulk_sparse,
    _parse_columns,
    _parse_rows,
    _read_arff,
    _read_header,
)

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
    with warnings.catch_warnings():
        warnings.simplefilter("error")
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


@needs_shared
@pytest.mark.parametrize("name", ["emotions", "tmc2007"])
def test_bulk_parse_equals_row_by_row_parse_on_real_files(name):
    # the numbers of MULAN files are parsed in bulk; the general row-by-row parser
    # (used for quoted values, strings, dates, comments) must read the same table
    stem = {"tmc2007": "tmc2007-500"}.get(name, name)
    with gzip.open(MULTILABEL / name / f"{stem}-test.arff.gz", "rt") as f:
        lines = f.read().split("\n")
    attributes, start = _read_header(lines)
    rows = [line.strip() for line in lines[start:] if line.strip()]
    if name == "tmc2007":
        rows = rows[:2000]
    bulk = (_bulk_sparse if rows[0][0] == "{" else _bulk_dense)(rows, attributes)
    assert bulk is not None
    by_row, strings, weighted = _parse_rows(rows, np.arange(len(rows)), attributes)
    assert not strings and not weighted
    assert sp.issparse(bulk) == sp.issparse(by_row)
    if sp.issparse(bulk):
        bulk, by_row = bulk.toarray(), by_row.toarray()
    assert np.array_equal(bulk.view(np.int64), by_row.view(np.int64))


# --------------------------------------------------------------------------- small files


def write_text(path, text, compress=None):
    """Write ``text`` to ``path`` (gzipped if the name ends in .gz)."""
    if str(path).endswith(".gz") if compress is None else compress:
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def label_xml(*names):
    """A MULAN label file, with the names XML-escaped as MULAN writes them."""
    def escape(name):
        return (name.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")
                .replace("'", "&apos;"))
    labels = "".join(f'<label name="{escape(name)}"></label>\n' for name in names)
    return ('<?xml version="1.0" encoding="utf-8"?>\n'
            f'<labels xmlns="http://mulan.sourceforge.net/labels">\n{labels}</labels>\n')


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
TOY_XML = label_xml("alpha", "beta")


def test_read_sparse_arff():
    arff = _read_arff(SPARSE_ARFF)
    assert arff.names == ["f0", "f 1", "f2", "beta", "alpha"]
    assert sp.issparse(arff.table) and arff.table.format == "csr"
    np.testing.assert_array_equal(arff.table.toarray(), [
        [1.5, 0, 0, 1, 0],
        [0, 0, 0, 0, 0],
        [0, -2, 1, 1, 1],
        [0.25, 0, 0, 0, 1],
    ])
    assert arff.linenos.tolist() == [11, 12, 13, 15]


def test_read_dense_arff():
    text = ("@relation d\n@attribute x numeric\n@attribute y real\n@attribute c {no,yes}\n"
            "@data\n1,2.5,yes\n-3,?,no\n")
    arff = _read_arff(text)
    assert arff.names == ["x", "y", "c"]
    assert [a.kind for a in arff.attributes] == ["numeric", "numeric", "nominal"]
    assert isinstance(arff.table, np.ndarray)
    # a nominal attribute holds the index of its value
    np.testing.assert_array_equal(arff.table, [[1, 2.5, 1], [-3, np.nan, 0]])


def test_quoted_names_with_escapes():
    names = ["Swainson's Thrush", 'say "hi"', "back\\slash", "tab\there", "50% off",
             "a,b {c}", "plain"]
    header = "\n".join([
        r"@attribute 'Swainson\'s Thrush' numeric",
        r'@attribute "say \"hi\"" numeric',
        r"@attribute 'back\\slash' numeric",
        r"@attribute 'tab\there' numeric",
        r"@attribute '50% off' numeric   % the comment starts after the quote",
        r'@attribute "a,b {c}" numeric',
        r"@attribute plain numeric",
    ])
    arff = _read_arff(f"@relation 'r \\'1\\''\n{header}\n@data\n1,2,3,4,5,6,7\n")
    assert arff.names == names
    np.testing.assert_array_equal(arff.table, [[1, 2, 3, 4, 5, 6, 7]])


def arff_quote(text, quote="'"):
    escaped = (text.replace("\\", "\\\\").replace(quote, "\\" + quote)
               .replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t"))
    return f"{quote}{escaped}{quote}"


@settings(max_examples=60, deadline=None)
@given(names=st.lists(st.text(st.characters(exclude_categories=("Cs",)), min_size=1),
                      min_size=1, max_size=4, unique=True))
def test_any_quoted_name_round_trips(names):
    header = "".join(f"@attribute {arff_quote(name)} {{0,1}}\n" for name in names)
    arff = _read_arff(f"@relation r\n{header}@data\n{','.join('1' * len(names))}\n")
    assert arff.names == names


def test_escaped_quotes_in_unquoted_names_and_values():
    # a MULAN tag name: the backslash escapes the quote, as in a quoted name
    text = r"""@relation tags
@attribute TAG_m\'usica {0,1}
@attribute 'TAG_rock\'n\'roll' {0,1}
@attribute say\"hi\" numeric
@attribute C:\temp\x numeric
@attribute genre {pop, m\'usica, "rock'n'roll"}
@data
1,0,2,3,m\'usica
0,1,4,5,rock\'n\'roll
"""
    arff = _read_arff(text)
    # other backslashes of an unquoted name are kept as written
    assert arff.names == ["TAG_m'usica", "TAG_rock'n'roll", 'say"hi"', "C:\\temp\\x",
                          "genre"]
    assert arff.attributes[4].values == ("pop", "m'usica", "rock'n'roll")
    np.testing.assert_array_equal(arff.table, [[1, 0, 2, 3, 1], [0, 1, 4, 5, 2]])
    sparse = text.replace("1,0,2,3,m\\'usica", "{0 1, 2 2, 3 3, 4 m\\'usica}")
    np.testing.assert_array_equal(_read_arff(sparse).table.toarray()[0], [1, 0, 2, 3, 1])


@settings(max_examples=60, deadline=None)
@given(names=st.lists(st.text(st.sampled_from("aZ9_.-'\"\u00e9\u00fa"), min_size=1),
                      min_size=1, max_size=4, unique=True))
def test_any_unquoted_name_with_escaped_quotes_round_trips(names):
    def escape(name):
        return name.replace("'", "\\'").replace('"', '\\"')
    header = "".join(f"@attribute {escape(name)} {{{escape(name)},x}}\n" for name in names)
    row = ",".join(escape(name) for name in names)
    arff = _read_arff(f"@relation r\n{header}@data\n{row}\n")
    assert arff.names == names
    assert [attribute.values[0] for attribute in arff.attributes] == names
    np.testing.assert_array_equal(arff.table, np.zeros((1, len(names))))


@pytest.mark.parametrize("name", [r"TAG_m\'usica", r"'TAG_m\'usica'", r'"TAG_m\'usica"'])
def test_tag_with_an_escaped_quote_loads_as_before(tmp_path, name):
    # the line of a MULAN file that an earlier reader read with the same arrays
    header = f"@relation tags\n@attribute f0 numeric\n@attribute {name} {{0,1}}\n"
    text = header + "@attribute TAG_rock {0,1}\n@data\n{0 0.5,1 1}\n{2 1}\n{0 -1,1 1,2 1}\n"
    write_text(tmp_path / "tags-train.arff", text)
    (tmp_path / "tags.xml").write_text(label_xml("TAG_rock", "TAG_m'usica"))
    tags = load_multilabel("tags", path=tmp_path)
    assert tags.target_names.tolist() == ["TAG_m'usica", "TAG_rock"]
    assert tags.feature_names.tolist() == ["f0"]
    np.testing.assert_array_equal(tags.target, [[1, 0], [0, 1], [1, 1]])
    np.testing.assert_array_equal(tags.data.toarray(), [[0.5], [0], [-1]])
    # a label file that writes the name with its backslash matches it too
    (tmp_path / "tags.xml").write_text(label_xml("TAG_rock", r"TAG_m\'usica"))
    assert load_multilabel("tags", path=tmp_path).target_names[0] == "TAG_m'usica"


def test_keywords_in_any_case_comments_and_blank_lines():
    text = """\
% leading comment

@RELATION Mixed
@Attribute a NUMERIC   % trailing comment
@ATTRIBUTE b Real
@attribute c INTEGER
@attribute d {A , 'B b',"c,c"}  % values with spaces and commas are quoted
% a comment between attributes
@Data
% a comment in the data
1, 2, 3, A
   4,5,6,'B b'   % a comment after a row

7,8,9,"c,c"
"""
    arff = _read_arff(text)
    assert arff.attributes[3].values == ("A", "B b", "c,c")
    np.testing.assert_array_equal(arff.table, [[1, 2, 3, 0], [4, 5, 6, 1], [7, 8, 9, 2]])
    assert arff.linenos.tolist() == [11, 12, 14]


def test_dates_are_seconds_since_the_epoch():
    text = """\
@relation dates
@attribute iso date
@attribute day DATE "dd.MM.yyyy"
@attribute zoned date 'yyyy-MM-dd HH:mm:ss Z'
@data
"2001-04-03T12:12:12", 01.02.1970, '1970-01-01 02:00:00 +0200'
?, 31.12.1969, "1970-01-01 00:00:01 +0000"
"""
    table = _read_arff(text).table
    np.testing.assert_array_equal(table, [[986299932.0, 31 * 86400, 0.0],
                                          [np.nan, -86400, 1.0]])


BIRDS_ARFF = r"""% MULAN birds-like data: quoted names with escaped quotes, a string id column,
% a nominal feature and missing values
@relation 'birds: audio features'

@attribute id string
@attribute 'audio mean' numeric
@attribute location {'site A','site B',"site C"}
@attribute hour integer
@attribute 'Swainson\'s Thrush' {0,1}
@attribute "Hermit Thrush" {0,1}
@attribute Veery {0, 1}

@data
'rec 1',0.5,'site A',6,1,0,0
'rec 2',?,'site C',?,0,1,1
"rec \"3\"",-1.25,?,7,0,0,0
"""
BIRDS_SPARSE_ARFF = BIRDS_ARFF.split("@data")[0] + r"""@data
{0 'rec 1',1 0.5,3 6,4 1}
{0 'rec 2',1 ?,2 'site C',3 ?,5 1,6 1}
{0 "rec \"3\"",1 -1.25,2 ?,3 7}
"""
BIRDS_FEATURES = ["audio mean", "location=site A", "location=site B", "location=site C",
                  "hour"]
BIRDS_LABELS = ["Swainson's Thrush", "Hermit Thrush", "Veery"]
BIRDS_TARGET = [[1, 0, 0], [0, 1, 1], [0, 0, 0]]


def birds_folder(tmp_path, arff=BIRDS_ARFF, xml=None, file="birds-train.arff"):
    write_text(tmp_path / file, arff)
    (tmp_path / "birds.xml").write_text(xml or label_xml("Veery", *BIRDS_LABELS[:2]))
    return tmp_path


@pytest.mark.parametrize("sparse", [False, True])
def test_birds_style_file(tmp_path, sparse):
    folder = birds_folder(tmp_path, BIRDS_SPARSE_ARFF if sparse else BIRDS_ARFF)
    with pytest.warns(UserWarning, match=r"dropped the string attributes \['id'\]"):
        birds = load_multilabel("birds", path=folder)
    assert birds.feature_names.tolist() == BIRDS_FEATURES
    assert birds.target_names.tolist() == BIRDS_LABELS  # ARFF order, not XML order
    np.testing.assert_array_equal(birds.target, BIRDS_TARGET)
    assert birds.target.dtype == np.intp
    assert sp.issparse(birds.data) == sparse
    data = birds.data.toarray() if sparse else birds.data
    nan = np.nan
    np.testing.assert_array_equal(data, [
        [0.5, 1, 0, 0, 6],
        [nan, 0, 0, 1, nan],
        [-1.25, nan, nan, nan, 7],
    ])


def test_birds_sparse_row_leaves_out_the_first_nominal_value(tmp_path):
    # as in Weka, a nominal value left out of a sparse row is its first declared value
    arff = BIRDS_ARFF.split("@data")[0] + "@data\n{0 x, 4 1}\n{}\n"
    birds = load_multilabel("birds", path=birds_folder(tmp_path, arff),
                            string_attributes="drop")
    np.testing.assert_array_equal(birds.data.toarray(), [[0, 1, 0, 0, 0], [0, 1, 0, 0, 0]])
    np.testing.assert_array_equal(birds.target, [[1, 0, 0], [0, 0, 0]])


def test_label_names_with_backslash_escapes_in_the_xml(tmp_path):
    xml = label_xml("Hermit Thrush", "Veery").replace(
        "</labels>", "<label name=\"Swainson\\'s Thrush\"></label></labels>")
    birds = load_multilabel("birds", path=birds_folder(tmp_path, xml=xml),
                            string_attributes="drop")
    assert birds.target_names.tolist() == BIRDS_LABELS


def test_string_attributes_policies(tmp_path):
    folder = birds_folder(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dropped = load_multilabel("birds", path=folder, string_attributes="drop")
        returned = load_multilabel("birds", path=folder, string_attributes="return")
    assert dropped.feature_names.tolist() == BIRDS_FEATURES
    assert "strings" not in dropped
    assert returned.feature_names.tolist() == BIRDS_FEATURES
    assert returned.string_names.tolist() == ["id"]
    assert returned.strings.tolist() == [["rec 1"], ["rec 2"], ['rec "3"']]
    with pytest.raises(ValueError, match=r"birds-train.arff: string attributes \['id'\]"):
        load_multilabel("birds", path=folder, string_attributes="raise")
    with pytest.raises(ValueError, match="string_attributes must be one of"):
        load_multilabel("birds", path=folder, string_attributes="keep")


def test_missing_string_values_are_none(tmp_path):
    arff = BIRDS_ARFF.replace("'rec 2'", "?")
    birds = load_multilabel("birds", path=birds_folder(tmp_path, arff),
                            string_attributes="return")
    assert birds.strings[:, 0].tolist() == ["rec 1", None, 'rec "3"']


NOMINAL_ARFF = """\
@relation nominal
@attribute colour {red, 'dark blue'}
@attribute size {1, 2, 3}
@attribute on {0,1}
@attribute off {1,0}
@attribute x numeric
@attribute l1 {0,1}
@attribute l2 {1,0}
@attribute l3 numeric
@data
red,3,1,1,0.5,1,0,1
'dark blue',1,0,0,-1,0,1,0
?,?,?,?,?,1,1,1
"""


def test_nominal_coding(tmp_path):
    write_text(tmp_path / "nominal-train.arff", NOMINAL_ARFF)
    (tmp_path / "nominal.xml").write_text(label_xml("l3", "l2", "l1"))
    nominal = load_multilabel("nominal", path=tmp_path)
    assert nominal.feature_names.tolist() == [
        "colour=red", "colour=dark blue", "size=1", "size=2", "size=3", "on", "off", "x"]
    nan = np.nan
    np.testing.assert_array_equal(nominal.data, [
        [1, 0, 0, 0, 1, 1, 1, 0.5],
        [0, 1, 1, 0, 0, 0, 0, -1],
        [nan, nan, nan, nan, nan, nan, nan, nan],
    ])
    # nominal {0,1} labels in either order, and numeric labels, are 0/1 labels
    assert nominal.target_names.tolist() == ["l1", "l2", "l3"]
    np.testing.assert_array_equal(nominal.target, [[1, 0, 1], [0, 1, 0], [1, 1, 1]])


def test_nominal_coding_of_sparse_rows(tmp_path):
    header = NOMINAL_ARFF.split("@data")[0]
    rows = "{0 'dark blue', 1 2, 4 3, 6 0}\n{3 0, 5 1}\n"
    write_text(tmp_path / "nominal-train.arff", f"{header}@data\n{rows}")
    (tmp_path / "nominal.xml").write_text(label_xml("l1", "l2", "l3"))
    nominal = load_multilabel("nominal", path=tmp_path)
    assert sp.issparse(nominal.data)
    # left out: colour=red, size=1, off=1 (their first declared values), l2=1
    np.testing.assert_array_equal(nominal.data.toarray(), [
        [0, 1, 0, 1, 0, 0, 1, 3],
        [1, 0, 1, 0, 0, 0, 0, 0],
    ])
    np.testing.assert_array_equal(nominal.target, [[0, 0, 0], [1, 1, 0]])


@pytest.mark.parametrize("file", ["toy-train.arff", "toy-train.arff.gz",
                                  "toy-train-sparse.arff", "toy-train-sparse.arff.gz",
                                  "toy-sparse-train.arff"])
def test_finds_dense_and_sparse_file_names(tmp_path, file):
    folder = tmp_path / "toy"
    folder.mkdir()
    arff = write_text(folder / file, SPARSE_ARFF)
    (folder / "toy.xml").write_text(TOY_XML)
    for path in (tmp_path, folder, arff):
        toy = load_multilabel("toy", path=path)
        np.testing.assert_array_equal(toy.data.toarray(), [
            [1.5, 0, 0], [0, 0, 0], [0, -2, 1], [0.25, 0, 0]])
        # ARFF order (beta, alpha), not the order of the .xml
        assert toy.target_names.tolist() == ["beta", "alpha"]
        np.testing.assert_array_equal(toy.target, [[1, 0], [0, 0], [1, 1], [0, 1]])
        assert toy.feature_names.tolist() == ["f0", "f 1", "f2"]
    with pytest.raises(FileNotFoundError, match="toy-test-sparse.arff"):
        load_multilabel("toy", "test", path=tmp_path)


def corel_folder(folder, file="Corel5k-train-sparse.arff.gz", xml="Corel5k.xml"):
    """A folder holding a small Corel5k-like split (named as the real files are)."""
    folder.mkdir(parents=True, exist_ok=True)
    write_text(folder / file, SPARSE_ARFF)
    if xml:
        (folder / xml).write_text(TOY_XML)
    return folder


@pytest.mark.parametrize("name", ["corel5k", "Corel5k", "COREL5K"])
def test_data_set_and_folder_names_match_in_any_case(tmp_path, name):
    folder = corel_folder(tmp_path / "Corel5k")
    for path in (tmp_path, folder):
        corel = load_multilabel(name, path=path)
        assert corel.target_names.tolist() == ["beta", "alpha"]
        np.testing.assert_array_equal(corel.target, [[1, 0], [0, 0], [1, 1], [0, 1]])
    with pytest.raises(FileNotFoundError, match=f"no {name}-test.arff"):
        load_multilabel(name, "test", path=tmp_path)


def test_known_data_sets_in_any_case():
    emotions = load_multilabel("Emotions", "test")
    assert np.array_equal(emotions.data, load_multilabel("emotions", "test").data)
    assert emotions.DESCR.startswith("emotions (MULAN")


def test_files_in_any_sub_folder(tmp_path):
    # a sub-folder not named after the data set is searched too, one level deep only
    corel_folder(tmp_path / "mulan", file="corel5k-TRAIN.arff", xml="COREL5K.XML")
    assert load_multilabel("corel5k", path=tmp_path).target_names.tolist() == [
        "beta", "alpha"]
    corel_folder(tmp_path / "deeper" / "Corel5k", file="corel5k-test.arff")
    with pytest.raises(FileNotFoundError, match=r"corel5k-test\.arff.* or its sub-folders"):
        load_multilabel("corel5k", "test", path=tmp_path)


def test_the_data_set_folder_comes_first(tmp_path):
    # toy/ before the given folder, the given folder before its other sub-folders
    write_text(tmp_path / "toy-train.arff", SPARSE_ARFF.replace("1.5", "7"))
    (tmp_path / "toy.xml").write_text(TOY_XML)
    corel_folder(tmp_path / "other", file="toy-train.arff", xml="toy.xml")
    assert load_multilabel("toy", path=tmp_path).data[0, 0] == 7
    corel_folder(tmp_path / "TOY", file="toy-train.arff", xml="toy.xml")
    assert load_multilabel("toy", path=tmp_path).data[0, 0] == 1.5


def test_names_that_differ_only_in_case_are_ambiguous(tmp_path):
    folder = corel_folder(tmp_path / "Corel5k", file="Corel5k-train.arff")
    write_text(folder / "corel5k-train.arff", SPARSE_ARFF)
    both = rf"{folder / 'Corel5k-train.arff'}, {folder / 'corel5k-train.arff'}"
    for path in (tmp_path, folder):
        with pytest.raises(ValueError, match=rf"the train split of 'corel5k' in {path} is "
                                             rf"ambiguous: {both} match it .*pass path= the"):
            load_multilabel("corel5k", path=path)
    # the same file name in two folders named after the data set
    other = corel_folder(tmp_path / "COREL5K", file="Corel5k-test.arff")
    corel_folder(folder, file="Corel5k-test.arff")
    with pytest.raises(ValueError, match=rf"ambiguous: {other / 'Corel5k-test.arff'}, "
                                         rf"{folder / 'Corel5k-test.arff'} match"):
        load_multilabel("corel5k", "test", path=tmp_path)
    # a dense file before a sparse one, .arff.gz before .arff: not ambiguous
    assert load_multilabel("corel5k", "test", path=other).target.shape == (4, 2)


def test_label_files_that_differ_only_in_case_are_ambiguous(tmp_path):
    folder = corel_folder(tmp_path / "Corel5k")
    (folder / "corel5k.xml").write_text(TOY_XML)
    with pytest.raises(ValueError, match=rf"the label file of .* is ambiguous: "
                                         rf"{folder / 'Corel5k.xml'}, {folder / 'corel5k.xml'}"):
        load_multilabel("corel5k", path=tmp_path)


def test_missing_folder_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere, which is not a folder"):
        load_multilabel("toy", path=tmp_path / "nowhere")


def test_xml_named_after_the_arff_file(tmp_path):
    arff = write_text(tmp_path / "my data-train-sparse.arff", SPARSE_ARFF)
    (tmp_path / "my data.xml").write_text(TOY_XML)
    (tmp_path / "other.xml").write_text(label_xml("f0"))
    assert load_multilabel("x", path=arff).target_names.tolist() == ["beta", "alpha"]


def test_labels_anywhere_in_the_arff_file(tmp_path):
    # MULAN: "the label attributes need not be the last attributes of the ARFF file"
    write_text(tmp_path / "toy-train.arff", SPARSE_ARFF)
    (tmp_path / "toy.xml").write_text(label_xml("beta", "f2"))
    toy = load_multilabel("toy", path=tmp_path)
    assert toy.target_names.tolist() == ["f2", "beta"]
    assert toy.feature_names.tolist() == ["f0", "f 1", "alpha"]
    np.testing.assert_array_equal(toy.target, [[0, 1], [0, 0], [1, 1], [0, 0]])
    np.testing.assert_array_equal(toy.data.toarray(), [
        [1.5, 0, 0], [0, 0, 0], [0, -2, 1], [0.25, 0, 1]])


def identifier_file(tmp_path, ids, sparse=False):
    """A file with a nominal attribute ``doc`` whose values in the rows are ``ids``."""
    declared = sorted({value for value in ids if value != "?"})
    header = (f"@relation ids\n@attribute x numeric\n@attribute doc {{{','.join(declared)}}}"
              "\n@attribute l {0,1}\n@data\n")
    if sparse:
        rows = [f"{{0 {i}, 1 {value}, 2 {i % 2}}}" for i, value in enumerate(ids)]
    else:
        rows = [f"{i},{value},{i % 2}" for i, value in enumerate(ids)]
    write_text(tmp_path / "ids-train.arff", header + "\n".join(rows) + "\n")
    (tmp_path / "ids.xml").write_text(label_xml("l"))
    return tmp_path


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("ids, n_distinct, n_given", [
    ([f"d{i}" for i in range(20)], 20, 20),
    ([f"d{i}" for i in range(23)] + ["d0", "d1"], 23, 25),        # 92 % distinct
    ([f"d{i}" for i in range(20)] + ["?"] * 30, 20, 20),          # missing values left out
])
def test_identifier_like_nominal_attribute_is_coded_with_a_warning(tmp_path, ids,
                                                                   n_distinct, n_given,
                                                                   sparse):
    folder = identifier_file(tmp_path, ids, sparse)
    with pytest.warns(UserWarning, match=rf"ids-train.arff: the nominal attribute 'doc' has "
                                         rf"{n_distinct} distinct values in {n_given} rows, "
                                         r"like an identifier.* drop them, or declare"):
        ids_set = load_multilabel("ids", path=folder)
    assert ids_set.data.shape == (len(ids), 1 + n_distinct)
    assert ids_set.feature_names[1] == "doc=d0"


@pytest.mark.parametrize("ids", [
    [f"d{i}" for i in range(19)],                                  # too few rows
    [f"d{i}" for i in range(22)] + ["d0", "d1", "d2"],            # 88 % distinct
    [f"d{i}" for i in range(19)] + ["?"] * 30,                     # too few given values
])
def test_other_nominal_attributes_give_no_warning(tmp_path, ids):
    folder = identifier_file(tmp_path, ids)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_multilabel("ids", path=folder)


def test_sparse_rows_with_quoted_and_missing_values():
    text = """\
@relation s
@attribute a numeric
@attribute 'b b' {x, 'y y'}
@attribute c numeric
@data
{2 ?, 1 'y y'}
{ 0 '3.5' , 2 -1e2 }
{1 x}
"""
    table = _read_arff(text).table
    np.testing.assert_array_equal(table.toarray(), [[0, 1, np.nan], [3.5, 0, -100], [0, 0, 0]])


@pytest.mark.parametrize("rows", ["1,2,{3}\n4,5,{0.5}\n", "{0 1,1 2},{3}\n{0 4,1 5}, {0.5}\n"])
def test_instance_weights_are_ignored_with_a_warning(tmp_path, rows):
    header = "@relation w\n@attribute a numeric\n@attribute l {0,1}\n@data\n"
    write_text(tmp_path / "w-train.arff", header + rows.replace("2", "1").replace("5", "0"))
    (tmp_path / "w.xml").write_text(label_xml("l"))
    with pytest.warns(UserWarning, match="instance weights"):
        w = load_multilabel("w", path=tmp_path)
    assert w.data.shape == (2, 1)
    np.testing.assert_array_equal(w.target, [[1], [0]])


def test_crlf_line_ends_and_byte_order_mark(tmp_path):
    text = "\ufeff" + SPARSE_ARFF.replace("\n", "\r\n")
    (tmp_path / "toy-train.arff").write_bytes(text.encode("utf-8"))
    (tmp_path / "toy.xml").write_text(TOY_XML)
    toy = load_multilabel("toy", path=tmp_path)
    assert toy.feature_names.tolist() == ["f0", "f 1", "f2"]
    assert toy.data.shape == (4, 3)


def test_missing_feature_values_are_nan(tmp_path):
    text = "@relation m\n@attribute a numeric\n@attribute l {0,1}\n@data\n?,1\n2,0\n"
    write_text(tmp_path / "m-train.arff", text)
    (tmp_path / "m.xml").write_text(label_xml("l"))
    np.testing.assert_array_equal(load_multilabel("m", path=tmp_path).data, [[np.nan], [2]])
    write_text(tmp_path / "m-train.arff", text.replace("?,1\n2,0", "{0 ?, 1 1}\n{0 2}"))
    m = load_multilabel("m", path=tmp_path)
    np.testing.assert_array_equal(m.data.toarray(), [[np.nan], [2]])


@pytest.mark.parametrize("rows, message", [
    ("1,?,1\n", r"line 6: label 'l' is missing \('\?'\); labels must be 0 or 1"),
    ("1,0,1\n{1 ?}\n", r"line 7: label 'l' is missing"),
    ("1,1,1\n1,0,2\n", r"line 7: label 'n' is 2; labels must be 0 or 1"),
])
def test_bad_label_values(tmp_path, rows, message):
    header = "@relation m\n@attribute a numeric\n@attribute l {0,1}\n@attribute n numeric\n"
    arff = write_text(tmp_path / "m-train.arff", header + "@data\n" + rows)
    (tmp_path / "m.xml").write_text(label_xml("l", "n"))
    with pytest.raises(ValueError, match=f"{arff}: {message}"):
        load_multilabel("m", path=tmp_path)


@pytest.mark.parametrize("text, message", [
    # header
    ("@attribute 'Swainson's Thrush' {0,1}\n@data\n",
     r"line 1: unterminated quote ' in \"' \{0,1\}\" \(end a quoted name or value with ' "
     r"on the same line, and escape quotes inside it with a backslash: \\'\)"),
    ("@attribute 'abc numeric\n@data\n",
     r"line 1: unterminated quote ' in \"'abc numeric\" \(end a quoted name or value"),
    ("@attribute abc 'numeric\n@data\n", r"unterminated quote ' in \"'numeric\" \(end a quoted"),
    # a quote inside an unquoted word needs a backslash, and the message shows where
    ("@attribute TAG_m'usica {0,1}\n@data\n",
     r"line 1: unterminated quote ' in \"'usica \{0,1\}\" \(write a ' inside an unquoted "
     r"name or value as \\': TAG_m\\'usica\)$"),
    ('@attribute say"hi {0,1}\n@data\n', r"as \\\": say\\\"hi\)$"),
    ("@attribute a {x,rock'n}\n@data\n", r"as \\': rock\\'n\)$"),
    ("@attribute 'abc\\' numeric\n@data\n", "line 1: unterminated quote"),
    ("@attribute a {x,'y}\n@data\n", "line 1: unterminated quote"),
    ("@attribute a numbers\n@data\n", r"line 1: attribute 'a' has unknown type 'numbers'"),
    ("@attribute my name numeric\n@data\n",
     r"unknown type 'name' \(quote names that contain spaces\)"),
    ("@attribute bag relational\n@attribute x numeric\n@end bag\n@data\n",
     "line 1: attribute 'bag' is relational"),
    ("@attribute a\n@data\n", "line 1: attribute 'a' has no type"),
    ("@attribute\n@data\n", "line 1: @attribute needs a name and a type"),
    ("@attribute a numeric extra\n@data\n", "line 1: unexpected 'extra' after the type"),
    ("@attribute a {x, y\n@data\n", r"line 1: the values of 'a' have no closing"),
    ("@attribute a {x y}\n@data\n", r"line 1: expected ',' or '}' .* got 'y' \(quote"),
    ("@attribute a {x,,y}\n@data\n", r"line 1: expected a value in the values of 'a', got ','"),
    ("@attribute a {x,y,}\n@data\n", "line 1: empty value before"),
    ("@attribute a {}\n@data\n", "line 1: nominal attribute 'a' declares no values"),
    ("@attribute a {x,y,x}\n@data\n", r"line 1: nominal attribute 'a' declares \['x'\] more"),
    ("@attribute a {x} b\n@data\n", "line 1: unexpected 'b' after the values"),
    ("@attribute d date 'yyyy G'\n@data\n", "line 1: date attribute 'd': unsupported pattern"),
    ("@attribute a numeric\n@attribute a real\n@data\n",
     r"line 2: attribute 'a' is declared twice \(first at line 1\)"),
    ("@attribute a numeric\n1\n", "line 2: unexpected header line '1'"),
    ("@attribute a numeric\n", "no @data"),
    ("@relation r\n@data\n", "line 2: @data before any @attribute"),
    # dense rows
    ("@attribute a numeric\n@data\n1,2\n", "line 3: expected 1 values, got 2"),
    ("@attribute a numeric\n@attribute b numeric\n@data\n1\n", "line 4: expected 2 values"),
    ("@attribute a numeric\n@attribute b numeric\n@data\n1,x\n", "line 4: 'x' is not a"),
    ("@attribute a numeric\n@attribute b numeric\n@data\n1,2\n1,,\n", "line 5: value 2 is empty"),
    ("@attribute a numeric\n@attribute b numeric\n@data\n1,\n", "line 4: value 2 is empty"),
    ("@attribute a numeric\n@attribute b numeric\n@data\n1 2\n",
     "line 4: expected ',' after value 1, got '2'"),
    ("@attribute a numeric\n@data\n'1\n", "line 3: unterminated quote ' in \"'1\" \\(end a"),
    ("@attribute a {x}\n@data\nrock'n\n", r"line 3: .* as \\': rock\\'n\)$"),
    ("@attribute a numeric\n@data\n'?'\n", r"line 3: '\?' is not a number"),
    ("@attribute a {x,y}\n@data\nx\nz\n", r"line 4: 'z' is not a value of the nominal "
                                          r"attribute 'a' \(\{x, y\}\)"),
    ("@attribute a {0,1}\n@data\n0\n2\n", r"line 4: '2' is not a value of the nominal"),
    ("@attribute a date\n@data\n2001-02-30T00:00:00\n", r"line 3: '2001-02-30T00:00:00' is "
                                                         "not a date"),
    ("@attribute a numeric\n@data\n1,{x}\n", r"line 3: unexpected '\{ x \}' at the end"),
    # sparse rows
    ("@attribute a numeric\n@data\n{3 1}\n",
     r"line 3: bad sparse entry: attribute index 3 is out of range \(1 attributes"),
    ("@attribute a {0,1}\n@data\n{0 2}\n", "line 3: '2' is not a value of the nominal"),
    ("@attribute a numeric\n@data\n{-1 1}\n", "line 3: bad sparse entry: expected an attribute"
                                              " index, got '-1'"),
    ("@attribute a numeric\n@data\n{a 1}\n", "expected an attribute index, got 'a'"),
    ("@attribute a numeric\n@data\n{0}\n", "line 3: bad sparse entry: attribute 0 has no "),
    ("@attribute a numeric\n@data\n{0 1 2}\n", r"line 3: expected ',' or '\}' after the entry "
                                               "of attribute 0: got '2'"),
    ("@attribute a numeric\n@data\n{0 1,}\n", "line 3: bad sparse entry: expected an attribute"
                                              " index, got '}'"),
    ("@attribute a numeric\n@data\n{0 1\n", "line 3: .*the row has no closing"),
    ("@attribute a numeric\n@attribute b numeric\n@data\n{1 1, 1 2}\n",
     "line 4: attribute 1 is given twice"),
    ("@attribute a numeric\n@data\n{0 x}\n", "line 3: 'x' is not a number"),
    ("@attribute a numeric\n@data\n{0 1} x\n", "line 3: unexpected 'x' after the sparse row"),
])
def test_read_arff_errors(text, message):
    with pytest.raises(ValueError, match=message):
        _read_arff(text)


def test_errors_name_the_file_and_the_line(tmp_path):
    text = SPARSE_ARFF.replace("{}", "{1 x}")
    arff = write_text(tmp_path / "toy-train.arff.gz", text)
    (tmp_path / "toy.xml").write_text(TOY_XML)
    with pytest.raises(ValueError, match=f"^{arff}: line 12: 'x' is not a number "
                                         r"\(attribute 'f 1'\)$"):
        load_multilabel("toy", path=tmp_path)


def test_the_earliest_bad_value_is_reported():
    text = "@attribute a numeric\n@attribute b numeric\n@data\n1,2\n3,x\ny,4\n"
    with pytest.raises(ValueError, match="line 5: 'x'"):
        _read_arff(text)


def test_label_file_errors(tmp_path):
    arff = write_text(tmp_path / "toy-train.arff", SPARSE_ARFF)
    xml = tmp_path / "toy.xml"
    xml.write_text(label_xml("alpha", "Beta"))
    with pytest.raises(ValueError, match=f"{xml}: label 'Beta' is not an attribute of "
                                         f"{arff} \\(closest attribute: 'beta'\\)"):
        load_multilabel("toy", path=tmp_path)
    xml.write_text(label_xml("alpha", "alpha"))
    with pytest.raises(ValueError, match="labels 'alpha' and 'alpha' are the same"):
        load_multilabel("toy", path=tmp_path)
    xml.write_text(TOY_XML.replace("</labels>", ""))
    with pytest.raises(ValueError, match=f"{xml}: not a well-formed XML label file"):
        load_multilabel("toy", path=tmp_path)
    xml.write_text(label_xml())
    with pytest.raises(ValueError, match=f"{xml}: no <label"):
        load_multilabel("toy", path=tmp_path)
    xml.write_text(label_xml("f0", "f 1", "f2", "beta", "alpha"))
    with pytest.raises(ValueError, match="every attribute .* is a label"):
        load_multilabel("toy", path=tmp_path)
    xml.unlink()
    with pytest.raises(FileNotFoundError, match="no label file toy.xml"):
        load_multilabel("toy", path=tmp_path)


@pytest.mark.parametrize("declared, message", [
    ("{0,1,2}", r"label 'l' is declared \{0,1,2\}; labels must be numeric or nominal"),
    ("{no,yes}", r"label 'l' is declared \{no,yes\}"),
    ("string", "label 'l' is declared string"),
])
def test_labels_must_be_numeric_or_binary(tmp_path, declared, message):
    text = f"@relation r\n@attribute a numeric\n@attribute l {declared}\n@data\n"
    arff = write_text(tmp_path / "r-train.arff", text)
    (tmp_path / "r.xml").write_text(label_xml("l"))
    with pytest.raises(ValueError, match=f"{arff}: line 3: {message}"):
        load_multilabel("r", path=tmp_path)


def test_load_multilabel_errors(tmp_path):
    with pytest.raises(ValueError, match="subset"):
        load_multilabel("yeast", "valid")
    with pytest.raises(TypeError, match="name must be a str, such as 'yeast', got .*Path; "
                                        "pass a folder or an ARFF file as path="):
        load_multilabel(tmp_path)
    with pytest.raises(TypeError, match="got int$"):
        load_multilabel(1)
    with pytest.raises(ValueError, match="not bundled"):
        load_multilabel("bibtex")
    with pytest.raises(ValueError, match="unknown data set"):
        load_multilabel("nope")
    with pytest.raises(FileNotFoundError, match="yeast-train.arff"):
        load_multilabel("yeast", path=tmp_path)


def test_empty_data_section(tmp_path):
    write_text(tmp_path / "e-train.arff", "@relation e\n@attribute a numeric\n"
               "@attribute l {0,1}\n@data\n% nothing\n")
    (tmp_path / "e.xml").write_text(label_xml("l"))
    e = load_multilabel("e", path=tmp_path)
    assert e.data.shape == (0, 1) and e.target.shape == (0, 1)


# --------------------------------------------------------------------------- bulk parse

KINDS = {"numeric": None, "{0,1}": [0, 1], "{0,1,2}": [0, 1, 2], "{1,0}": [1, 0],
         "{2.5,-1}": [2.5, -1]}


@st.composite
def numeric_files(draw):
    """A file of numbers (dense or sparse rows) and the table it should give."""
    kinds = draw(st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=5))
    n_rows = draw(st.integers(1, 6))
    sparse = draw(st.booleans())
    table = np.zeros((n_rows, len(kinds)))
    rows = []
    for i in range(n_rows):
        entries = []
        for j, kind in enumerate(kinds):
            declared = KINDS[kind]
            if declared is None:
                code = draw(st.one_of(st.none(), st.floats(-1e6, 1e6, allow_nan=False)))
                text = "?" if code is None else repr(code)
            else:
                code = draw(st.one_of(st.none(), st.integers(0, len(declared) - 1)))
                text = "?" if code is None else str(declared[code])
            table[i, j] = np.nan if code is None else code
            if not sparse or code != 0 or draw(st.booleans()):
                entries.append((j, text))
        if sparse:
            entries = draw(st.permutations(entries))
            rows.append("{" + ", ".join(f"{j} {text}" for j, text in entries) + "}")
        else:
            rows.append(" , ".join(text for _, text in entries))
    header = "".join(f"@attribute a{j} {kind}\n" for j, kind in enumerate(kinds))
    return f"@relation r\n{header}@data\n" + "\n".join(rows) + "\n", table


@settings(max_examples=80, deadline=None)
@given(numeric_files())
def test_bulk_and_row_by_row_parse_agree(file):
    text, expected = file
    lines = text.split("\n")
    attributes, start = _read_header(lines)
    rows = [line for line in lines[start:] if line]
    bulk = (_bulk_sparse if rows[0][0] == "{" else _bulk_dense)(rows, attributes)
    assert bulk is not None
    by_row = _parse_rows(rows, np.arange(len(rows)), attributes)[0]
    for table in (bulk, by_row):
        table = table.toarray() if sp.issparse(table) else table
        np.testing.assert_array_equal(table, expected)


def test_date_patterns():
    text = """\
@relation dates
@attribute a date "dd MMM yyyy hh:mm a"
@attribute b date "yyyy.MM.dd 'at' HH:mm:ss.SSS"
@attribute c date "EEE, d MMMM yy"
@data
"02 Jan 1970 01:30 PM", "1970.01.01 at 00:00:01.500", "Thu, 1 January 70"
"""
    table = _read_arff(text).table
    np.testing.assert_array_equal(table, [[86400 + 13.5 * 3600, 1.5, 0.0]])


def test_numeric_nominal_values_in_any_spelling():
    # "1.0" is the declared value "1" in both the bulk and the row-by-row parser
    header = "@relation r\n@attribute a {0,1}\n@attribute b {1,2,3}\n@attribute s string\n"
    expected = [[1, 2], [0, 0]]
    for data in ("1.0,3.0,x\n0,1e0,y\n", "1.0,3.0\n0,1e0\n"):
        text = header if data.count(",") == 4 else header.replace("@attribute s string\n", "")
        table = _read_arff(text + "@data\n" + data).table
        np.testing.assert_array_equal(table[:, :2], expected)


VALUE_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")),
                     min_size=1, max_size=6)


@st.composite
def quoted_files(draw):
    """A dense file with quoted nominal and string values, and what it should give."""
    kinds = draw(st.lists(st.sampled_from(["numeric", "nominal", "string"]), min_size=1,
                          max_size=4))
    declared = {j: draw(st.lists(VALUE_TEXT, min_size=1, max_size=3, unique=True))
                for j, kind in enumerate(kinds) if kind == "nominal"}
    n_rows = draw(st.integers(1, 5))
    table = np.zeros((n_rows, len(kinds)))
    strings = {j: [None] * n_rows for j, kind in enumerate(kinds) if kind == "string"}
    rows, commas = [], False
    for i in range(n_rows):
        cells = []
        for j, kind in enumerate(kinds):
            if draw(st.integers(0, 4)) == 0:
                table[i, j] = 0 if kind == "string" else np.nan
                cells.append("?")
            elif kind == "numeric":
                number = draw(st.floats(-1e3, 1e3, allow_nan=False))
                table[i, j] = number
                cells.append(repr(number))
            else:
                value = draw(st.sampled_from(declared[j]) if kind == "nominal" else VALUE_TEXT)
                if kind == "nominal":
                    table[i, j] = declared[j].index(value)
                else:
                    strings[j][i] = value
                commas |= "," in value
                cells.append(arff_quote(value, draw(st.sampled_from(["'", '"']))))
        rows.append(draw(st.sampled_from([",", " , ", ",  "])).join(cells))
    header = "".join(
        f"@attribute a{j} " + ("{" + ",".join(arff_quote(v) for v in declared[j]) + "}"
                               if kind == "nominal" else kind) + "\n"
        for j, kind in enumerate(kinds))
    text = f"@relation r\n{header}@data\n" + "\n".join(rows) + "\n"
    return text, table, strings, commas


@settings(max_examples=100, deadline=None)
@given(quoted_files())
def test_column_and_row_by_row_parse_agree(file):
    text, expected, expected_strings, commas = file
    lines = text.split("\n")
    attributes, start = _read_header(lines)
    rows = [line.strip() for line in lines[start:] if line.strip()]
    linenos = np.arange(len(rows))
    columns = _parse_columns(rows, linenos, attributes)
    assert (columns is None) == commas  # a comma in a value needs the row-by-row parser
    for table, strings in [_parse_rows(rows, linenos, attributes)[:2]] + [columns] * (not commas):
        np.testing.assert_array_equal(table, expected)
        assert {j: list(values) for j, values in strings.items()} == expected_strings
