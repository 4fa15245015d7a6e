"""Reader for MULAN multilabel ARFF files (dense and sparse rows) and their loader."""

import gzip
import os
import textwrap
import xml.etree.ElementTree as ElementTree
from importlib import resources
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.utils import Bunch

__all__ = ["load_multilabel"]

# name -> (file stem, n_train, n_test, n_features, n_labels, sparse, label cardinality,
#          description, reference)
_MULAN = {
    "yeast": ("yeast", 1500, 917, 103, 14, False, 4.24,
              "Gene functional classes of yeast (Saccharomyces cerevisiae) genes from micro-"
              "array expression and phylogenetic profiles; 103 numeric features.",
              "Elisseeff & Weston (2001). A kernel method for multi-labelled classification. "
              "NIPS 14."),
    "scene": ("scene", 1211, 1196, 294, 6, False, 1.07,
              "Natural scene images (beach, sunset, fall foliage, field, mountain, urban) "
              "described by 294 colour moments (spatial colour features in LUV space).",
              "Boutell, Luo, Shen & Brown (2004). Learning multi-label scene classification. "
              "Pattern Recognition 37(9)."),
    "emotions": ("emotions", 391, 202, 72, 6, False, 1.87,
                 "Music clips annotated with the emotions they evoke; 72 rhythmic and timbre "
                 "features.",
                 "Trohidis, Tsoumakas, Kalliris & Vlahavas (2008). Multilabel classification "
                 "of music into emotions. ISMIR 2008."),
    "bibtex": ("bibtex", 4880, 2515, 1836, 159, True, 2.40,
               "BibTeX entries of the Bibsonomy social bookmarking site tagged by their users; "
               "1836 binary bag-of-words features (sparse ARFF rows).",
               "Katakis, Tsoumakas & Vlahavas (2008). Multilabel text classification for "
               "automated tag suggestion. ECML/PKDD 2008 Discovery Challenge."),
    "tmc2007": ("tmc2007-500", 21519, 7077, 500, 22, True, 2.16,
                "Aviation safety reports (SIAM text mining competition 2007) with the "
                "problems they describe; the 500 most informative binary word features "
                "(sparse ARFF rows).",
                "Srivastava & Zane-Ulman (2005). Discovering recurring anomalies in text "
                "reports regarding complex space systems. IEEE Aerospace Conference."),
}
_ALIASES = {"tmc2007-500": "tmc2007"}
# bundled with the package: name -> file in skstruct/datasets/data
_BUNDLED = {"yeast": "multilabel-yeast.npz", "emotions": "multilabel-emotions.npz"}
_NUMERIC = {"numeric", "real", "integer"}
_DESCR_TEMPLATE = """\
{title}
{underline}

{description}

=================  ===========================
samples            {n_train} train / {n_test} test
features           {n_features}{sparse_note}
labels             {n_labels}
label cardinality  {cardinality:.2f} (train and test)
=================  ===========================

The published train/test split of the MULAN repository
(https://mulan.sourceforge.net/datasets-mlc.html). The labels are the last
{n_labels} attributes of each ARFF file; ``target_names`` follows their order
in the file.

Reference: {reference}
"""


# --------------------------------------------------------------------------- ARFF reader


def _split_name(rest, lineno):
    """Split ``rest`` of an @attribute line into (name, type), unquoting the name."""
    rest = rest.strip()
    if rest[:1] in ("'", '"'):
        end = rest.find(rest[0], 1)
        if end < 0:
            raise ValueError(f"line {lineno}: unterminated quoted attribute name")
        return rest[1:end], rest[end + 1:].strip()
    parts = rest.split(None, 1)
    if len(parts) != 2:
        raise ValueError(f"line {lineno}: @attribute needs a name and a type")
    return parts[0], parts[1].strip()


def _unquote(value):
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in ("'", '"'):
        return value[1:-1]
    return value


def _attribute_codec(name, kind, lineno):
    """How to read values of an attribute: ``None`` for numbers, else a value→code dict.

    Nominal values that are all numbers (MULAN's ``{0,1}``) are read as those numbers;
    other nominal values as their index in the declaration.
    """
    if kind.lower() in _NUMERIC:
        return None
    if kind.startswith("{") and kind.endswith("}"):
        values = [_unquote(v) for v in kind[1:-1].split(",")]
        try:
            codes = [float(v) for v in values]
        except ValueError:
            codes = list(range(len(values)))
        return dict(zip(values, map(float, codes)))
    raise ValueError(f"line {lineno}: attribute {name!r} has unsupported type {kind!r} "
                     "(numeric and nominal attributes only)")


def _convert(value, codec, name, lineno):
    value = _unquote(value)
    if value == "?":
        return np.nan
    if codec is None:
        try:
            return float(value)
        except ValueError:
            raise ValueError(f"line {lineno}: {value!r} is not a number "
                             f"(attribute {name!r})") from None
    try:
        return codec[value]
    except KeyError:
        raise ValueError(f"line {lineno}: {value!r} is not a value of the nominal "
                         f"attribute {name!r}") from None


def _read_arff(lines):
    """Parse the lines of an ARFF file (dense rows, or sparse ``{index value, ...}`` rows).

    Returns
    -------
    names : list of str
        The attribute names, in file order.
    data : ndarray of shape (n_rows, n_attributes) or CSR matrix
        The values, as a dense array if every data row is dense, else as a CSR matrix
        (entries omitted by sparse rows are 0).
    """
    names, codecs = [], []
    lines = iter(enumerate(lines, 1))
    for lineno, line in lines:
        line = line.strip()
        if not line or line.startswith("%"):
            continue
        keyword = line.split(None, 1)[0].lower()
        if keyword == "@attribute":
            name, kind = _split_name(line[len("@attribute"):], lineno)
            names.append(name)
            codecs.append(_attribute_codec(name, kind, lineno))
        elif keyword == "@data":
            break
        elif keyword != "@relation":
            raise ValueError(f"line {lineno}: unexpected header line {line[:40]!r}")
    else:
        raise ValueError("no @data section")
    n_attributes = len(names)
    if n_attributes == 0:
        raise ValueError("no @attribute declared")
    plain = all(codec is None for codec in codecs)
    dense, linenos, indptr, indices, values = [], [], [0], [], []
    for lineno, line in lines:
        line = line.strip()
        if not line or line.startswith("%"):
            continue
        if line.startswith("{"):
            end = line.find("}")  # an instance weight ", {w}" may follow; it is ignored
            if end < 0:
                raise ValueError(f"line {lineno}: unterminated sparse row")
            body = line[1:end].strip()
            row = {}
            for item in body.split(",") if body else ():
                parts = item.split(None, 1)
                try:
                    index = int(parts[0])
                except (ValueError, IndexError):
                    index = -1
                if len(parts) != 2 or not 0 <= index < n_attributes:
                    raise ValueError(f"line {lineno}: bad sparse entry {item.strip()!r} "
                                     f"({n_attributes} attributes)")
                if index in row:
                    raise ValueError(f"line {lineno}: attribute {index} given twice")
                row[index] = _convert(parts[1], codecs[index], names[index], lineno)
            for index in sorted(row):
                indices.append(index)
                values.append(row[index])
            indptr.append(len(indices))
            dense.append(None)
        else:
            fields = line.split(",")
            if len(fields) != n_attributes:
                raise ValueError(f"line {lineno}: expected {n_attributes} values, "
                                 f"got {len(fields)}")
            if not (plain and "?" not in line and "'" not in line and '"' not in line):
                fields = [_convert(v, c, n, lineno) for v, c, n in zip(fields, codecs, names)]
            dense.append(fields)  # plain numbers are converted in bulk below
            indptr.append(indptr[-1])
        linenos.append(lineno)
    n_rows = len(dense)
    if any(row is not None for row in dense):
        try:
            rows = np.array([np.zeros(n_attributes) if row is None else row for row in dense],
                            dtype=np.float64).reshape(n_rows, n_attributes)
        except ValueError:  # say where: convert row by row
            for row, lineno in zip(dense, linenos):
                if row is not None:
                    [_convert(v, c, n, lineno) for v, c, n in zip(row, codecs, names)]
            raise
        if not indices:
            return names, rows
    else:
        rows = None
    data = sp.csr_matrix((np.asarray(values, dtype=np.float64),
                          np.asarray(indices, dtype=np.int32),
                          np.asarray(indptr, dtype=np.int64)), shape=(n_rows, n_attributes))
    if rows is not None:  # a mix of dense and sparse rows
        data = data + sp.csr_matrix(rows)
    data.eliminate_zeros()
    return names, data.tocsr()


def _open_text(path):
    path = os.fspath(path)
    opener = gzip.open if path.endswith(".gz") else open
    return opener(path, "rt", encoding="utf-8")


def _read_label_names(xml_path):
    """Label names of a MULAN ``.xml`` file, in its order."""
    root = ElementTree.parse(xml_path).getroot()
    return [element.get("name") for element in root.iter()
            if element.tag.rsplit("}", 1)[-1] == "label"]


# --------------------------------------------------------------------------- files


def _find_files(name, subset, path):
    """The ARFF file and the (possibly missing) XML file of ``name`` under ``path``."""
    stem = _MULAN[name][0] if name in _MULAN else name
    path = Path(path)
    if path.is_file():
        folder = path.parent
        arff = path
        others = sorted(folder.glob("*.xml"))
        xml_candidates = [folder / f"{stem}.xml"] + (others if len(others) == 1 else [])
    else:
        folders = [path / name, path / stem, path]
        arff = None
        for folder in folders:
            for suffix in (".arff.gz", ".arff"):
                candidate = folder / f"{stem}-{subset}{suffix}"
                if candidate.is_file():
                    arff = candidate
                    break
            if arff is not None:
                break
        if arff is None:
            raise FileNotFoundError(
                f"no {stem}-{subset}.arff(.gz) in {path} or its folder {name!r}")
        folder = arff.parent
        xml_candidates = [folder / f"{stem}.xml"]
    xml = next((f for f in xml_candidates if f.is_file()), None)
    return arff, xml


def _parse_files(name, subset, path):
    arff, xml = _find_files(name, subset, path)
    with _open_text(arff) as lines:
        try:
            attribute_names, table = _read_arff(lines)
        except ValueError as error:
            raise ValueError(f"{arff}: {error}") from None
    if xml is not None:
        label_names = _read_label_names(xml)
    elif name in _MULAN:
        label_names = attribute_names[len(attribute_names) - _MULAN[name][4]:]
    else:
        raise FileNotFoundError(f"no label file {name}.xml next to {arff}")
    n_labels = len(label_names)
    tail = attribute_names[len(attribute_names) - n_labels:]
    if n_labels == 0 or n_labels >= len(attribute_names) or set(tail) != set(label_names):
        raise ValueError(f"{arff}: the last {n_labels} attributes are not the labels named "
                         f"in {xml}")
    n_features = len(attribute_names) - n_labels
    if sp.issparse(table):
        data = table[:, :n_features].tocsr()
        labels = table[:, n_features:].toarray()
        data.sort_indices()
    else:
        data, labels = table[:, :n_features], table[:, n_features:]
        data = np.ascontiguousarray(data)
    if not np.all((labels == 0) | (labels == 1)):
        raise ValueError(f"{arff}: label values must be 0 or 1")
    return Bunch(data=data, target=labels.astype(np.intp),
                 feature_names=np.array(attribute_names[:n_features], dtype=object),
                 target_names=np.array(tail, dtype=object))


# Bundled copies store each split as exact integers: every value v of a dense feature
# matrix is m / 10**d for an integer m (the ARFF files write at most d = 6 decimals), and
# m / 10**d in float64 is correctly rounded, so it equals the parsed decimal bit for bit.
# The int32 mantissas are stored as 4 byte planes (least significant first), which
# deflate compresses 15-20 % better than the interleaved bytes (yeast: 630 kB, against
# 840 kB for the gzipped ARFF files).

def _to_fixed(data):
    for decimals in range(10):
        scale = 10.0 ** decimals
        mantissa = np.rint(data * scale)
        if np.all(np.abs(mantissa) < 2**31) and np.array_equal(mantissa / scale, data):
            return mantissa.astype(np.int32), decimals
    raise ValueError("the features are not decimals with at most 9 digits")


def _load_bundled(name, subset):
    file = resources.files(__package__) / "data" / _BUNDLED[name]
    with resources.as_file(file) as file, np.load(file, allow_pickle=False) as npz:
        planes = npz[f"{subset}_planes"]
        shape = tuple(npz[f"{subset}_shape"])
        mantissa = planes.T.copy().view("<i4").reshape(shape)
        data = mantissa / 10.0 ** int(npz["decimals"])
        target = np.unpackbits(npz[f"{subset}_target"], axis=1,
                               count=int(npz["n_labels"])).astype(np.intp)
        feature_names = npz["feature_names"].astype(object)
        target_names = npz["target_names"].astype(object)
    return Bunch(data=data, target=target, feature_names=feature_names,
                 target_names=target_names)


def _write_bundle(name, path, out):
    """Write the bundled copy of ``name`` (used by the maintainers, not at run time)."""
    splits = {subset: _parse_files(name, subset, path) for subset in ("train", "test")}
    fixed = {subset: _to_fixed(bunch.data) for subset, bunch in splits.items()}
    decimals = max(d for _, d in fixed.values())
    arrays = {"decimals": np.array(decimals),
              "n_labels": np.array(splits["train"].target.shape[1]),
              "feature_names": splits["train"].feature_names.astype(str),
              "target_names": splits["train"].target_names.astype(str)}
    for subset, bunch in splits.items():
        mantissa, d = fixed[subset]
        mantissa = mantissa.astype(np.int64) * 10 ** (decimals - d)
        if np.abs(mantissa).max() >= 2**31:
            raise ValueError("the features do not fit in int32 at a common scale")
        mantissa = mantissa.astype("<i4")
        arrays[f"{subset}_planes"] = mantissa.reshape(-1, 1).view(np.uint8).T.copy()
        arrays[f"{subset}_shape"] = np.array(mantissa.shape)
        arrays[f"{subset}_target"] = np.packbits(bunch.target.astype(np.uint8), axis=1)
    np.savez_compressed(out, **arrays)


# --------------------------------------------------------------------------- loader


def _describe(name, bunch):
    if name not in _MULAN:
        return (f"{name} (multilabel ARFF data set)\n\n{bunch.data.shape[0]} samples, "
                f"{bunch.data.shape[1]} features, {bunch.target.shape[1]} labels.\n")
    stem, n_train, n_test, n_features, n_labels, sparse, cardinality, text, ref = _MULAN[name]
    title = (name if stem == name else f"{name} ({stem})") + " (MULAN multilabel data set)"
    return _DESCR_TEMPLATE.format(
        title=title, underline="-" * len(title), description=textwrap.fill(text, 78),
        n_train=n_train, n_test=n_test, n_features=n_features, n_labels=n_labels,
        cardinality=cardinality, sparse_note=" (sparse, returned as CSR)" if sparse else "",
        reference=textwrap.fill(ref, 78, initial_indent=" " * 11)[11:])


def load_multilabel(name, subset="train", *, path=None):
    """Load a multilabel data set of the MULAN repository (published train/test split).

    =========  ============  ========  ======  ======  ===========
    name       train/test    features  labels  rows    cardinality
    =========  ============  ========  ======  ======  ===========
    yeast      1500 / 917    103       14      dense   4.24
    scene      1211 / 1196   294       6       dense   1.07
    emotions   391 / 202     72        6       dense   1.87
    bibtex     4880 / 2515   1836      159     sparse  2.40
    tmc2007    21519 / 7077  500       22      sparse  2.16
    =========  ============  ========  ======  ======  ===========

    The cardinality is the mean number of labels per sample (train and test together).
    yeast and emotions are bundled with the package (bit-exact copies of the parsed ARFF
    files); scene, bibtex and tmc2007 (``tmc2007-500``) are read from ``path``.

    Parameters
    ----------
    name : str
        The data set: one of the table above, or, with ``path``, the stem of any MULAN
        style files ``<name>-<subset>.arff[.gz]`` and ``<name>.xml``.
    subset : {"train", "test"}, default="train"
        Which split to load.
    path : str or path-like, default=None
        Read the ARFF files instead of the bundled copy: a folder such as
        ``shared/data/multilabel`` (holding ``<name>/``) or ``shared/data/multilabel/yeast``
        (holding ``<name>-<subset>.arff.gz`` and ``<name>.xml``), or one ARFF file (plain
        or ``.gz``, with the ``.xml`` label file next to it). Both dense and sparse
        (``{index value, ...}``) ARFF rows are read. The labels are the last attributes,
        as many as the ``.xml`` file names (its order may differ; it is checked against
        the names of those attributes).

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        With the keys ``data`` (ndarray of shape (n_samples, n_features), float64, or a
        CSR matrix for files with sparse rows: bibtex, tmc2007), ``target`` (the 0/1
        label indicator matrix, ndarray of shape (n_samples, n_labels), intp),
        ``feature_names`` (ndarray of shape (n_features,)), ``target_names`` (the label
        names in the order of the ARFF attributes, the columns of ``target``) and
        ``DESCR`` (a description of the data set).

    Examples
    --------
    >>> from skstruct.datasets import load_multilabel
    >>> yeast = load_multilabel("yeast")
    >>> yeast.data.shape, yeast.target.shape
    ((1500, 103), (1500, 14))
    >>> yeast.target_names[:3].tolist()
    ['Class1', 'Class2', 'Class3']
    >>> round(float(yeast.target.sum(axis=1).mean()), 2)  # labels per sample
    4.23
    """
    name = _ALIASES.get(name, name)
    if subset not in ("train", "test"):
        raise ValueError(f"subset must be 'train' or 'test', got {subset!r}")
    if path is None:
        if name not in _BUNDLED:
            known = sorted(_MULAN)
            if name in _MULAN:
                raise ValueError(f"{name!r} is not bundled with skstruct; pass path= to the "
                                 "folder holding its ARFF files (such as "
                                 "shared/data/multilabel)")
            raise ValueError(f"unknown data set {name!r}; expected one of {known}, or "
                             "pass path=")
        bunch = _load_bundled(name, subset)
    else:
        bunch = _parse_files(name, subset, path)
    bunch.DESCR = _describe(name, bunch)
    return bunch
