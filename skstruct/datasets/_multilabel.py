"""The MULAN multilabel data sets: their loader, the search for their files and the
bundled copies.

The ARFF files themselves are read by :mod:`._arff`; this module finds a split's ARFF
file and its XML label file, takes the labels the XML file names, and stores or loads
the bundled copies (yeast and emotions).
"""

import difflib
import os
import textwrap
import warnings
import xml.etree.ElementTree as ElementTree
from importlib import resources
from pathlib import Path

import numpy as np
from sklearn.utils import Bunch

from ._arff import dense_column, encode_features, encode_labels, read_arff_file, unescape

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


# --------------------------------------------------------------------------- files

# the ARFF file names of a split, dense and sparse (tried in this order, each .arff.gz
# then .arff)
_ARFF_NAMES = ("{stem}-{subset}", "{stem}-{subset}-sparse", "{stem}-sparse-{subset}")
_STRING_POLICIES = ("warn", "drop", "raise", "return")


def _read_label_names(xml_path):
    """Label names of a MULAN ``.xml`` file, in its order (XML entities decoded)."""
    try:
        root = ElementTree.parse(xml_path).getroot()
    except ElementTree.ParseError as error:
        raise ValueError(f"{xml_path}: not a well-formed XML label file ({error})") from None
    names = []
    for element in root.iter():
        if element.tag.rsplit("}", 1)[-1] == "label":
            if element.get("name") is None:
                raise ValueError(f"{xml_path}: a <label> element has no name attribute")
            names.append(element.get("name"))
    if not names:
        raise ValueError(f"{xml_path}: no <label name=...> element")
    return names


def _base_name(arff):
    """``bibtex`` for ``bibtex-train-sparse.arff.gz`` and the like."""
    base = arff.name.removesuffix(".gz").removesuffix(".arff")
    for suffix in ("-sparse", "-train", "-test", "-sparse"):
        base = base.removesuffix(suffix)
    return base


def _folder_entries(folder):
    """The files and folders in ``folder``, sorted; none if it cannot be listed."""
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


def _one_match(matches, what, hint):
    """The one file of ``matches``; a ValueError naming them all if there are several."""
    if len(matches) > 1:
        listed = ", ".join(str(match) for match in matches)
        raise ValueError(f"{what} is ambiguous: {listed} match it (file and folder names "
                         f"are compared in any case); {hint}")
    return matches[0] if matches else None


def _find_arff(name, stem, subset, folder):
    """The ARFF file of a split in ``folder`` or one of its sub-folders, or None.

    File and folder names are compared case-insensitively. The sub-folders named after
    the data set (``name`` or ``stem``) come first, then ``folder`` itself, then its
    other sub-folders; in the first of these that has a match, the file name patterns
    of :data:`_ARFF_NAMES` are tried in order, each ``.arff.gz`` then ``.arff``. Two
    matches at the same place in this order (such as two names that differ only in
    case) are an error naming both.
    """
    ranks = {}
    for base in _ARFF_NAMES:
        for suffix in (".arff.gz", ".arff"):
            file_name = base.format(stem=stem, subset=subset) + suffix
            ranks.setdefault(file_name.casefold(), len(ranks))
    subfolders = [entry for entry in _folder_entries(folder) if entry.is_dir()]
    own_names = {name.casefold(), stem.casefold()}
    own = [subfolder for subfolder in subfolders if subfolder.name.casefold() in own_names]
    others = [subfolder for subfolder in subfolders if subfolder not in own]
    for group in (own, [folder], others):
        matches = [(ranks[entry.name.casefold()], entry) for searched in group
                   for entry in _folder_entries(searched)
                   if entry.name.casefold() in ranks and entry.is_file()]
        if matches:
            best = min(rank for rank, _ in matches)
            return _one_match([entry for rank, entry in matches if rank == best],
                              f"the {subset} split of {name!r} in {folder}",
                              "pass path= the file to read")
    return None


def _find_label_file(arff, stem):
    """The XML label file next to ``arff`` (names compared in any case), or None.

    ``<stem>.xml``, else the name of the ARFF file without ``-train``, ``-test`` and
    ``-sparse`` (``bibtex.xml`` for ``bibtex-train-sparse.arff``), else the only XML
    file of the folder.
    """
    xml_files = [entry for entry in _folder_entries(arff.parent)
                 if entry.name.casefold().endswith(".xml") and entry.is_file()]
    for base in (stem, _base_name(arff)):
        wanted = f"{base}.xml".casefold()
        xml = _one_match([entry for entry in xml_files if entry.name.casefold() == wanted],
                         f"the label file of {arff}", "rename or remove all but one")
        if xml is not None:
            return xml
    return xml_files[0] if len(xml_files) == 1 else None


def _find_files(name, subset, path):
    """The ARFF file and the (possibly missing) XML file of ``name`` under ``path``."""
    stem = _MULAN[name][0] if name in _MULAN else name
    path = Path(path)
    if path.is_file():
        arff = path
    else:
        arff = _find_arff(name, stem, subset, path)
        if arff is None:
            names = [pattern.format(stem=stem, subset=subset) for pattern in _ARFF_NAMES]
            where = (f"{path} or its sub-folders (in any case)" if path.is_dir()
                     else f"{path}, which is not a folder")
            raise FileNotFoundError(
                f"no {' or '.join(n + '.arff(.gz)' for n in names)} in {where}; pass path= "
                "the folder that holds the files (or its parent folder), or the ARFF file")
    return arff, _find_label_file(arff, stem)


def _label_columns(data, name, arff, xml):
    """The attribute indices of the labels named in ``xml`` (in ARFF order)."""
    names = data.names
    if xml is None:
        if name not in _MULAN:
            raise FileNotFoundError(f"no label file {name}.xml next to {arff}")
        return list(range(len(names) - _MULAN[name][4], len(names)))
    position = {attribute: j for j, attribute in enumerate(names)}
    columns = {}
    for label in _read_label_names(xml):
        j = position.get(label, position.get(unescape(label)))
        if j is None:
            close = difflib.get_close_matches(label, names, n=1)
            hint = f" (closest attribute: {close[0]!r})" if close else ""
            raise ValueError(f"{xml}: label {label!r} is not an attribute of {arff}{hint}")
        if j in columns:
            raise ValueError(f"{xml}: labels {columns[j]!r} and {label!r} are the same "
                             f"attribute {names[j]!r}")
        columns[j] = label
    if len(columns) == len(names):
        raise ValueError(f"{xml}: every attribute of {arff} is a label")
    return sorted(columns)


def _string_columns(data, labels, policy, arff):
    """The string attributes (not labels) to return, after applying ``policy``."""
    columns = [j for j, a in enumerate(data.attributes) if a.kind == "string" and
               j not in labels]
    names = [data.attributes[j].name for j in columns]
    if columns and policy == "raise":
        raise ValueError(f"{arff}: string attributes {names} cannot be features; pass "
                         "string_attributes='drop' or 'return'")
    if columns and policy == "warn":
        warnings.warn(f"{arff}: dropped the string attributes {names} from the features "
                      "(string_attributes='return' returns them, 'drop' drops them "
                      "silently)", UserWarning, stacklevel=4)
    return columns if policy == "return" else []


# A nominal feature with at least this many given values, at least this fraction of them
# distinct, looks like an identifier (a row number, a file name, a document id)
_IDENTIFIER_MIN_VALUES = 20
_IDENTIFIER_DISTINCT_FRACTION = 0.9


def _warn_identifier_like(data, labels, arff):
    """Warn about the nominal features whose values look like identifiers.

    Those with at least ``_IDENTIFIER_MIN_VALUES`` given (not missing) values, at least
    ``_IDENTIFIER_DISTINCT_FRACTION`` of them distinct: one-hot coded, each of their
    columns is nonzero in about one row, which a model learns nothing general from.
    """
    n_rows = data.table.shape[0]
    min_distinct = _IDENTIFIER_DISTINCT_FRACTION * _IDENTIFIER_MIN_VALUES
    for j, attribute in enumerate(data.attributes):
        if (attribute.kind != "nominal" or j in labels or n_rows < _IDENTIFIER_MIN_VALUES
                or len(attribute.values) < min_distinct):
            continue
        codes = dense_column(data.table, j)
        given = codes[~np.isnan(codes)]
        n_distinct = len(np.unique(given))
        if (len(given) >= _IDENTIFIER_MIN_VALUES
                and n_distinct >= _IDENTIFIER_DISTINCT_FRACTION * len(given)):
            warnings.warn(
                f"{arff}: the nominal attribute {attribute.name!r} has {n_distinct} distinct "
                f"values in {len(given)} rows, like an identifier; it is one-hot coded into "
                f"{len(attribute.values)} columns ({attribute.name}=...) that a model cannot "
                "generalise from: drop them, or declare the attribute string in the file "
                "(string_attributes= then drops or returns it)", UserWarning, stacklevel=4)


def _parse_files(name, subset, path, string_attributes="warn"):
    arff, xml = _find_files(name, subset, path)
    data = read_arff_file(arff)
    labels = _label_columns(data, name, arff, xml)
    try:
        target = encode_labels(data, labels)
    except ValueError as error:
        raise ValueError(f"{arff}: {error}") from None
    strings = _string_columns(data, labels, string_attributes, arff)
    _warn_identifier_like(data, set(labels), arff)
    if data.weighted:
        warnings.warn(f"{arff}: instance weights {{w}} are ignored", UserWarning, stacklevel=3)
    features, feature_names = encode_features(data, set(labels))
    bunch = Bunch(data=features, target=target,
                  feature_names=np.array(feature_names, dtype=object),
                  target_names=np.array([data.names[j] for j in labels], dtype=object))
    if string_attributes == "return":
        n_rows = len(data.linenos)
        bunch.strings = np.empty((n_rows, len(strings)), dtype=object)
        for k, j in enumerate(strings):
            bunch.strings[:, k] = data.strings[j]
        bunch.string_names = np.array([data.names[j] for j in strings], dtype=object)
    return bunch


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


def load_multilabel(name, subset="train", *, path=None, string_attributes="warn"):
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
        The data set: one of the table above (in any case), or, with ``path``, the stem
        of any MULAN style files ``<name>-<subset>.arff[.gz]`` and ``<name>.xml``.
    subset : {"train", "test"}, default="train"
        Which split to load.
    path : str or path-like, default=None
        Read the ARFF files instead of the bundled copy: a folder such as
        ``shared/data/multilabel`` (holding ``<name>/``) or ``shared/data/multilabel/yeast``
        (holding the files), or one ARFF file (plain or ``.gz``, with the ``.xml`` label
        file next to it). In a folder the split is ``<name>-<subset>.arff``, or the
        sparse variants ``<name>-<subset>-sparse.arff`` and
        ``<name>-sparse-<subset>.arff`` (each also ``.arff.gz``; tried in this order).
        File and folder names match in any case (``"corel5k"`` finds
        ``Corel5k/Corel5k-train-sparse.arff.gz``). The files are looked for in the
        sub-folders of ``path`` named after the data set, then in ``path``, then in its
        other sub-folders (not deeper); two files that match equally well, such as two
        names that differ only in case, are an error naming both.
        The labels are the attributes the ``.xml`` file names (``<name>.xml``, or the
        name of the ARFF file without ``-train``/``-test``/``-sparse``, or the only
        ``.xml`` file of the folder): anywhere in the ARFF file and in any order, as
        MULAN allows.
    string_attributes : {"warn", "drop", "raise", "return"}, default="warn"
        What to do with ``string`` attributes (such as an identifier column), which
        cannot be features: ``"warn"`` drops them with a warning that names them,
        ``"drop"`` drops them silently, ``"raise"`` raises a ValueError, and
        ``"return"`` drops them from ``data`` and returns them as ``strings``. Only used
        with ``path``.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        With the keys ``data`` (ndarray of shape (n_samples, n_features), float64, or a
        CSR matrix for files with sparse rows: bibtex, tmc2007), ``target`` (the 0/1
        label indicator matrix, ndarray of shape (n_samples, n_labels), intp),
        ``feature_names`` (ndarray of shape (n_features,)), ``target_names`` (the label
        names in the order of the ARFF attributes, the columns of ``target``) and
        ``DESCR`` (a description of the data set). With ``string_attributes="return"``
        also ``strings`` (object ndarray of shape (n_samples, n_strings); None where the
        value is missing) and ``string_names``.

    Raises
    ------
    ValueError
        For a file that breaks the ARFF grammar, naming the file, the line and the
        problem (an unterminated quote, an unknown type, a data row with the wrong
        number of values, a value that is not a number or not a declared nominal value,
        a bad sparse entry, ...), a label of the ``.xml`` file that is not an attribute
        of the ARFF file, a label value other than 0 or 1, or two files that match
        ``name`` and ``subset`` equally well (names that differ only in case).
    FileNotFoundError
        If the ARFF file, or the ``.xml`` file of a data set not in the table, is not
        found.

    Warns
    -----
    UserWarning
        Naming the attributes: string attributes dropped (with
        ``string_attributes="warn"``), instance weights ignored, and nominal features
        that look like identifiers (see the Notes).

    Notes
    -----
    **The ARFF grammar read** is Weka's: the keywords ``@relation``, ``@attribute`` and
    ``@data`` in any case; ``%`` starts a comment (outside quotes); names and values in
    single or double quotes, with backslash escapes (``'Swainson\\'s Thrush'``), which
    names and values with spaces, commas, braces or ``%`` need. An unquoted name or
    value may hold a quote escaped with a backslash: ``TAG_m\\'usica`` is
    ``TAG_m'usica`` (the name Weka writes ``'TAG_m\\'usica'``; Weka's own reader stops
    an unquoted name at the quote), and its other backslashes are kept as written. The
    types are ``numeric``, ``real``, ``integer``, ``string``, ``date ["pattern"]`` and
    nominal ``{value, ...}`` (``relational`` is rejected). Data rows are dense
    ``v1, v2, ...`` or sparse ``{index value, ...}`` (indices from 0, in any order, each
    at most once). A value left out of a sparse row is 0, for a nominal attribute its
    first declared value, as in Weka. The values of a nominal attribute declared with
    numbers (such as ``{0,1}``) may be written in any spelling of those numbers
    (``1.0``). An instance weight ``{w}`` at the end of a row is ignored, with a warning.

    **Coding of the features.** Numeric attributes are one column each. A nominal
    attribute whose values are 0 and 1 (MULAN's binary word features) is one 0/1
    column; every other nominal attribute is one-hot coded, one column per declared
    value in declaration order, named ``<attribute>=<value>``. A date is the number of
    seconds since 1970-01-01 UTC (patterns use the Java letters ``y M d H h m s S a Z X
    E``; a date without a zone is UTC). String attributes are handled as
    ``string_attributes`` says. A nominal feature that looks like an identifier (a row
    number or a document id: at least 20 rows give it a value and at least 90 % of these
    values are distinct) is one-hot coded all the same, with a warning that names it:
    drop its columns, or declare it ``string`` in the file.

    **Missing values.** A ``?`` feature value is NaN (in all the one-hot columns of a
    nominal attribute): NaN means "missing", to impute (for instance with
    :class:`~sklearn.impute.SimpleImputer`) before fitting an estimator, which rejects
    NaN. A label must be 0 or 1: a missing label is an error naming its line.

    Files of numbers (all MULAN files) are parsed in bulk by numpy; a file with quoted
    values, strings or dates row by row.

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
    if not isinstance(name, str):
        hint = "; pass a folder or an ARFF file as path=" if isinstance(name, os.PathLike) else ""
        raise TypeError(f"name must be a str, such as 'yeast', got {type(name).__name__}"
                        f"{hint}")
    if name.casefold() in _MULAN.keys() | _ALIASES.keys():
        name = _ALIASES.get(name.casefold(), name.casefold())
    if subset not in ("train", "test"):
        raise ValueError(f"subset must be 'train' or 'test', got {subset!r}")
    if string_attributes not in _STRING_POLICIES:
        raise ValueError(f"string_attributes must be one of {list(_STRING_POLICIES)}, got "
                         f"{string_attributes!r}")
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
        bunch = _parse_files(name, subset, path, string_attributes)
    bunch.DESCR = _describe(name, bunch)
    return bunch
