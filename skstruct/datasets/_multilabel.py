"""Reader for MULAN multilabel ARFF files (dense and sparse rows) and their loader."""

import datetime
import difflib
import functools
import gzip
import io
import os
import re
import textwrap
import warnings
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
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
#
# The grammar is Weka's (https://waikato.github.io/weka-wiki/formats_and_processing/arff/):
# case-insensitive keywords, ``%`` comments, names and values in single or double quotes
# with backslash escapes, nominal specifications ``{a, 'b c'}``, dense rows
# ``v1, v2, ...`` and sparse rows ``{index value, ...}``, ``?`` for a missing value and an
# optional instance weight ``{w}`` at the end of a row. An unquoted name or value may
# hold an escaped quote (``TAG_m\'usica`` is ``TAG_m'usica``, the name Weka writes as
# ``'TAG_m\'usica'``); its other backslashes are kept as written, as Weka keeps them.

_NUMERIC = {"numeric", "real", "integer"}
_TYPES = _NUMERIC | {"string", "date", "relational"}
_DEFAULT_DATE = "yyyy-MM-dd'T'HH:mm:ss"
_TOKEN = re.compile(r"""
    \s*(?:
      (?P<quoted>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
    | (?P<punct>[{},])
    | (?P<word>(?:[^\s{},'"%\\]+|\\['"]?)+)
    | (?P<comment>%)
    | (?P<open>['"])
    )""", re.VERBOSE | re.DOTALL)
_WORD_CHARS = re.compile(r"""[^\s{},'"%]*""")
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_ESCAPED_QUOTE = re.compile(r"""\\(['"])""")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}
_KEYWORD = re.compile(r"@([A-Za-z]+)")


class _ArffError(ValueError):
    """A problem at one line of an ARFF file; the loader prefixes the file name."""

    def __init__(self, lineno, problem):
        super().__init__(f"line {lineno}: {problem}")
        self.lineno = lineno


@dataclass(frozen=True)
class _Attribute:
    """One ``@attribute`` declaration.

    ``kind`` is "numeric" (numeric, real and integer), "nominal", "string" or "date";
    ``values`` are the declared values of a nominal attribute; ``date_pattern`` is the
    Java pattern of a date attribute and ``date_format`` its
    :func:`~datetime.datetime.strptime` translation.
    """

    name: str
    kind: str
    lineno: int
    values: tuple = ()
    date_pattern: str = ""
    date_format: str = ""

    @functools.cached_property
    def numbers(self):
        """The declared nominal values as distinct finite numbers, or None."""
        if self.values == ("0", "1"):
            return np.array([0.0, 1.0])
        try:
            numbers = np.array([float(value) for value in self.values])
        except ValueError:
            return None
        if not np.all(np.isfinite(numbers)) or len(np.unique(numbers)) != len(numbers):
            return None
        return numbers


@dataclass
class _ArffData:
    """The content of an ARFF file, one column per attribute.

    ``table`` is an ndarray of shape (n_rows, n_attributes), or a CSR matrix if the file
    has sparse rows. It holds numbers for numeric attributes, seconds since the epoch for
    dates, the index of the declared value for nominal attributes, NaN for missing values
    and 0 for string attributes, whose values are in ``strings`` (attribute index ->
    object ndarray of shape (n_rows,), None where missing). ``linenos`` gives the line of
    each data row.
    """

    attributes: list
    table: object
    linenos: np.ndarray
    strings: dict = field(default_factory=dict)
    weighted: bool = False

    @property
    def names(self):
        return [attribute.name for attribute in self.attributes]


def _unescape(text):
    """Undo ARFF backslash escapes (``\\'``, ``\\"``, ``\\\\``, ``\\n``, ``\\t``, ...)."""
    if "\\" not in text:
        return text
    return _ESCAPE.sub(lambda match: _ESCAPES.get(match.group(1), match.group(1)), text)


def _unterminated_quote(line, start, word_start):
    """The message for the quote at ``line[start]`` that no quote closes on its line.

    ``word_start`` is where the unquoted word that ends right at ``start`` begins, or
    None. A quote between two characters of such a word is one that needs a backslash;
    any other quote opens a quoted name or value that ends too early or never.
    """
    quote, rest = line[start], line[start:]
    rest = rest if len(rest) <= 30 else rest[:27] + "..."
    problem = f"unterminated quote {quote} in {rest!r}"
    word_end = _WORD_CHARS.match(line, start + 1).group()
    if word_start is not None and word_end:
        escaped = f"{line[word_start:start]}\\{quote}{word_end}"
        return (f"{problem} (write a {quote} inside an unquoted name or value as "
                f"\\{quote}: {escaped})")
    return (f"{problem} (end a quoted name or value with {quote} on the same line, and "
            f"escape quotes inside it with a backslash: \\{quote})")


def _tokenize(line, lineno, pos=0):
    """Split ``line[pos:]`` into ``(kind, text)`` tokens, up to a ``%`` comment.

    ``kind`` is "q" for a quoted string (``text`` unquoted and unescaped), "w" for a bare
    word (``\\'`` and ``\\"`` in it unescaped, other backslashes kept), or the
    punctuation itself (``{``, ``}``, ``,``).
    """
    tokens, word_start = [], None
    while (match := _TOKEN.match(line, pos)) is not None:
        kind = match.lastgroup
        if kind == "comment":
            break
        if kind == "open":
            start = match.start(kind)
            adjacent_word = word_start if start == pos else None
            raise _ArffError(lineno, _unterminated_quote(line, start, adjacent_word))
        text = match.group(kind)
        word_start = match.start(kind) if kind == "word" else None
        if kind == "quoted":
            tokens.append(("q", _unescape(text[1:-1])))
        elif kind == "word":
            tokens.append(("w", _ESCAPED_QUOTE.sub(r"\1", text) if "\\" in text else text))
        else:
            tokens.append((text, text))
        pos = match.end()
    return tokens


def _is_text(token):
    return token[0] in ("q", "w")


# --------------------------------------------------------------------------- header


def _nominal_values(name, tokens, lineno):
    """The values of a nominal specification ``{ v1, v2, ... }`` (``tokens[0]`` is ``{``)."""
    values, expect_value = [], True
    for position, token in enumerate(tokens[1:], 1):
        if token[0] == "}":
            if expect_value and values:
                raise _ArffError(lineno, f"empty value before '}}' in the values of {name!r}")
            if not values:
                raise _ArffError(lineno, f"nominal attribute {name!r} declares no values")
            if position != len(tokens) - 1:
                raise _ArffError(lineno, f"unexpected {tokens[position + 1][1]!r} after the "
                                         f"values of {name!r}")
            duplicates = sorted({v for v in values if values.count(v) > 1})
            if duplicates:
                raise _ArffError(lineno, f"nominal attribute {name!r} declares {duplicates} "
                                         "more than once")
            return tuple(values)
        if expect_value != _is_text(token):
            what = "a value" if expect_value else "',' or '}'"
            hint = "" if expect_value else " (quote values that contain spaces)"
            raise _ArffError(lineno, f"expected {what} in the values of {name!r}, got "
                                     f"{token[1]!r}{hint}")
        if expect_value:
            values.append(token[1])
        expect_value = not expect_value
    raise _ArffError(lineno, f"the values of {name!r} have no closing '}}'")


_DATE_CODES = {"y": "%Y", "M": "%m", "d": "%d", "H": "%H", "h": "%I", "m": "%M",
               "s": "%S", "S": "%f", "a": "%p", "Z": "%z", "X": "%z", "E": "%a"}


def _date_code(letters):
    """The ``strptime`` directive of a run of one Java pattern letter (``yyyy``, ``MMM``)."""
    letter, n = letters[0], len(letters)
    if letter == "y" and n == 2:
        return "%y"
    if letter in "ME" and n >= 3:
        return {"M": ("%b", "%B"), "E": ("%a", "%A")}[letter][n > 3]
    return _DATE_CODES[letter]


def _date_format(pattern, name, lineno):
    """Translate a Java ``SimpleDateFormat`` pattern into a ``strptime`` format."""
    parts = []
    for match in re.finditer(r"'([^']*)'|([A-Za-z])\2*|.", pattern):
        letters = match.group(0)
        if match.group(1) is not None:  # quoted literal text; '' is a quote
            parts.append((match.group(1) or "'").replace("%", "%%"))
        elif match.group(2) is None:
            parts.append(letters.replace("%", "%%"))
        elif letters[0] in _DATE_CODES:
            parts.append(_date_code(letters))
        else:
            raise _ArffError(lineno, f"date attribute {name!r}: unsupported pattern letter "
                                     f"{letters[0]!r} in {pattern!r} (supported: "
                                     f"{''.join(_DATE_CODES)})")
    return "".join(parts)


def _parse_type(name, tokens, lineno):
    """The :class:`_Attribute` declared by the type ``tokens`` that follow ``name``."""
    if tokens[0][0] == "{":
        return _Attribute(name, "nominal", lineno, values=_nominal_values(name, tokens, lineno))
    word = tokens[0][1].lower() if tokens[0][0] == "w" else None
    if word not in _TYPES:
        hint = ""
        if len(tokens) > 1 and tokens[1][1].lower() in _TYPES | {"{"}:
            hint = " (quote names that contain spaces)"
        raise _ArffError(lineno, f"attribute {name!r} has unknown type {tokens[0][1]!r}"
                                 f"{hint}; expected numeric, real, integer, string, date or "
                                 "a nominal specification {...}")
    if word == "relational":
        raise _ArffError(lineno, f"attribute {name!r} is relational: relational (multi-"
                                 "instance) attributes are not supported")
    extra = tokens[1:]
    if word == "date" and extra and _is_text(extra[0]):
        extra = extra[1:]
    if extra:
        raise _ArffError(lineno, f"unexpected {extra[0][1]!r} after the type of {name!r}")
    if word == "date":
        pattern = tokens[1][1] if len(tokens) == 2 else _DEFAULT_DATE
        return _Attribute(name, "date", lineno, date_pattern=pattern,
                          date_format=_date_format(pattern, name, lineno))
    return _Attribute(name, "numeric" if word in _NUMERIC else "string", lineno)


def _parse_attribute(line, start, lineno):
    """The :class:`_Attribute` declared by ``line[start:]``, the text after ``@attribute``."""
    tokens = _tokenize(line, lineno, start)
    if not tokens or not _is_text(tokens[0]):
        raise _ArffError(lineno, "@attribute needs a name and a type")
    name = tokens[0][1]
    if len(tokens) == 1:
        raise _ArffError(lineno, f"attribute {name!r} has no type")
    return _parse_type(name, tokens[1:], lineno)


def _read_header(lines):
    """Parse the header of an ARFF file.

    Returns
    -------
    attributes : list of _Attribute
        In file order.
    start : int
        The index in ``lines`` of the first line after ``@data``.
    """
    attributes, seen = [], {}
    for index, line in enumerate(lines):
        lineno, line = index + 1, line.strip()
        if not line or line[0] == "%":
            continue
        match = _KEYWORD.match(line)
        keyword = match.group(1).lower() if match else None
        if keyword == "data":
            if not attributes:
                raise _ArffError(lineno, "@data before any @attribute")
            return attributes, index + 1
        if keyword == "attribute":
            attribute = _parse_attribute(line, match.end(), lineno)
            if attribute.name in seen:
                raise _ArffError(lineno, f"attribute {attribute.name!r} is declared twice "
                                         f"(first at line {seen[attribute.name]})")
            seen[attribute.name] = lineno
            attributes.append(attribute)
        elif keyword != "relation":
            raise _ArffError(lineno, f"unexpected header line {line[:40]!r} (expected "
                                     "@relation, @attribute or @data)")
    raise ValueError("no @data section after the header")


# --------------------------------------------------------------------------- data rows
#
# Files of numbers (every attribute numeric or nominal with numeric values, no quotes, no
# comments after values: all MULAN files) are parsed in bulk by numpy; other dense rows
# column by column; any other file, and any file these reject, row by row by the
# tokenizer, which also names the line and the problem of bad input.


def _codes_from_numbers(numbers, declared):
    """Indices of ``numbers`` among the ``declared`` values (NaN stays NaN), or None."""
    order = np.argsort(declared)
    pos = np.minimum(np.searchsorted(declared[order], numbers), len(declared) - 1)
    missing = np.isnan(numbers)
    if not np.all((declared[order][pos] == numbers) | missing):
        return None
    return np.where(missing, np.nan, order[pos])


def _bulk_codes(values, columns, attributes):
    """Turn bulk-parsed numbers into the codes of their attributes, in place.

    ``values`` is a dense table (``columns`` None) or the values of sparse entries whose
    attributes are ``columns``. A nominal attribute declared ``{0, 1, ..., k-1}`` in this
    order (MULAN's ``{0,1}``) has its numbers as codes; other nominal attributes are
    looked up. Returns False if a value is not declared (the row-by-row parser then says
    where).
    """
    limit = np.full(len(attributes), np.inf)
    others = []
    for j, attribute in enumerate(attributes):
        if attribute.kind == "nominal":
            declared = attribute.numbers
            if np.array_equal(declared, np.arange(len(declared))):
                limit[j] = len(declared)
            else:
                others.append((j, declared))
    coded = np.isfinite(limit)
    if coded.any():
        if columns is None:
            numbers, bound = values[:, coded], limit[coded]
        else:
            numbers = values[coded[columns]]
            bound = limit[columns[coded[columns]]]
        with np.errstate(invalid="ignore"):
            valid = (numbers >= 0) & (numbers < bound) & (numbers == np.floor(numbers))
        if not np.all(valid | np.isnan(numbers)):
            return False
    for j, declared in others:
        where = (slice(None), j) if columns is None else columns == j
        codes = _codes_from_numbers(values[where], declared)
        if codes is None:
            return False
        values[where] = codes
    return True


def _bulk_dense(rows, attributes):
    """Parse dense rows of numbers with numpy; None if numpy rejects one."""
    text = "\n".join(rows)
    if "?" in text:
        text = text.replace("?", "nan")
    try:
        table = np.loadtxt(io.StringIO(text), delimiter=",", comments=None,
                           dtype=np.float64, ndmin=2)
    except ValueError:
        return None
    if table.shape != (len(rows), len(attributes)):
        return None
    return table if _bulk_codes(table, None, attributes) else None


def _bulk_sparse(rows, attributes):
    """Parse sparse rows ``{index value, ...}`` of numbers with numpy; None if it fails.

    Every entry is put on a line of its own and numpy reads them as pairs; a row with an
    empty entry, an entry that is not a pair, an index out of range or given twice, or
    a trailing weight, is left to the row-by-row parser.
    """
    n_attributes = len(attributes)
    if any(row[-1] != "}" for row in rows):
        return None
    bodies = [row[1:-1] for row in rows]
    counts = np.array([body.count(",") + 1 if body.strip() else 0 for body in bodies],
                      dtype=np.int64)
    text = "\n".join(bodies)
    if "{" in text or "}" in text:
        return None
    text = text.replace(",", "\n").replace("?", "nan")
    n_entries = int(counts.sum())
    try:
        with warnings.catch_warnings():  # rows of bare commas leave numpy no entries
            warnings.simplefilter("ignore", UserWarning)
            entries = np.loadtxt(io.StringIO(text), comments=None, dtype=np.float64,
                                 ndmin=2) if n_entries else np.empty((0, 2))
    except ValueError:
        return None
    if entries.shape != (n_entries, 2):
        return None
    index, values = entries[:, 0], entries[:, 1].copy()
    if not np.all((index >= 0) & (index < n_attributes) & (index == np.floor(index))):
        return None
    columns = index.astype(np.int64)
    if not _bulk_codes(values, columns, attributes):
        return None
    indptr = np.concatenate([[0], np.cumsum(counts)])
    table = sp.csr_matrix((values, columns, indptr), shape=(len(rows), n_attributes))
    table.sort_indices()
    same_row = np.repeat(np.arange(len(rows)), counts)
    if np.any((np.diff(table.indices) == 0) & (same_row[1:] == same_row[:-1])):
        return None
    return table


def _weight(tokens, lineno):
    """The instance weight of the tokens ``{ w }`` at the end of a row."""
    if len(tokens) == 3 and tokens[0][0] == "{" and tokens[1][0] == "w" and \
            tokens[2][0] == "}":
        try:
            return float(tokens[1][1])
        except ValueError:
            pass
    text = " ".join(token[1] for token in tokens)
    raise _ArffError(lineno, f"unexpected {text!r} at the end of the row (an instance "
                             "weight is written {w})")


def _dense_entries(tokens, lineno, n_attributes):
    """The attribute indices, value tokens and weight of a dense row ``v1, v2, ...``."""
    values, position = [], 0
    while position < len(tokens) and tokens[position][0] != "{":
        token = tokens[position]
        if not _is_text(token):
            raise _ArffError(lineno, f"value {len(values) + 1} is empty" if token[0] == ","
                             else f"unexpected {token[1]!r} in a data row")
        values.append(token)
        position += 1
        if position < len(tokens):
            if tokens[position][0] != ",":
                raise _ArffError(lineno, f"expected ',' after value {len(values)}, got "
                                         f"{tokens[position][1]!r} (quote values that "
                                         "contain spaces)")
            position += 1
            if position == len(tokens):
                raise _ArffError(lineno, f"value {len(values) + 1} is empty (the row ends "
                                         "with ',')")
    weight = _weight(tokens[position:], lineno) if position < len(tokens) else None
    if len(values) != n_attributes:
        raise _ArffError(lineno, f"expected {n_attributes} values, got {len(values)}")
    return range(n_attributes), values, weight


def _sparse_entry(tokens, lineno, n_attributes):
    """The attribute index and value token of the sparse entry ``tokens[:2]``."""
    index = tokens[0][1] if tokens else "the end of the line"
    if not tokens or tokens[0][0] != "w" or not (index.isascii() and index.isdigit()):
        raise _ArffError(lineno, f"bad sparse entry: expected an attribute index, got "
                                 f"{index!r}")
    index = int(index)
    if index >= n_attributes:
        raise _ArffError(lineno, f"bad sparse entry: attribute index {index} is out of range "
                                 f"({n_attributes} attributes, indices 0 to "
                                 f"{n_attributes - 1})")
    if len(tokens) < 2 or not _is_text(tokens[1]):
        raise _ArffError(lineno, f"bad sparse entry: attribute {index} has no value")
    return index, tokens[1]


def _sparse_entries(tokens, lineno, n_attributes):
    """The attribute indices, value tokens and weight of a sparse row ``{i v, ...}``."""
    indices, values, position = [], [], 1
    if position < len(tokens) and tokens[position][0] == "}":
        position += 1
    else:
        while True:
            index, value = _sparse_entry(tokens[position:position + 2], lineno, n_attributes)
            if index in indices:
                raise _ArffError(lineno, f"attribute {index} is given twice in a sparse row")
            indices.append(index)
            values.append(value)
            position += 2
            separator = tokens[position] if position < len(tokens) else None
            position += 1
            if separator is not None and separator[0] == "}":
                break
            if separator is None or separator[0] != ",":
                got = f"got {separator[1]!r}" if separator else "the row has no closing '}'"
                raise _ArffError(lineno, f"expected ',' or '}}' after the entry of attribute "
                                         f"{index}: {got}")
    weight = None
    if position < len(tokens):
        if tokens[position][0] != ",":
            raise _ArffError(lineno, f"unexpected {tokens[position][1]!r} after the sparse "
                                     "row")
        weight = _weight(tokens[position + 1:], lineno)
    return indices, values, weight


class _BadValue(Exception):
    """A value that does not fit its attribute, at ``position`` in the column."""

    def __init__(self, position, message):
        super().__init__(message)
        self.position = position


def _date_reader(attribute):
    """A function text -> seconds since 1970-01-01 UTC for a date attribute."""
    def read(text):
        try:
            moment = datetime.datetime.strptime(text, attribute.date_format)
        except ValueError:
            raise ValueError(f"{text!r} is not a date {attribute.date_pattern!r} (attribute "
                             f"{attribute.name!r})") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=datetime.timezone.utc)
        return moment.timestamp()
    return read


def _nominal_reader(attribute):
    """A function text -> index of the declared value (numbers match in any spelling)."""
    codes = {value: float(index) for index, value in enumerate(attribute.values)}
    numbers = attribute.numbers
    shown = ", ".join(attribute.values[:10]) + (", ..." if len(codes) > 10 else "")

    def read(text):
        code = codes.get(text)
        if code is None and numbers is not None:  # "1.0" for a declared "1"
            try:
                hits = np.flatnonzero(numbers == float(text))
            except ValueError:
                hits = ()
            code = float(hits[0]) if len(hits) else None
        if code is None:
            raise ValueError(f"{text!r} is not a value of the nominal attribute "
                             f"{attribute.name!r} ({{{shown}}})")
        return code
    return read


def _value_reader(attribute):
    """A function text -> value of ``attribute`` (raises ValueError with a message)."""
    name = attribute.name
    if attribute.kind == "numeric":
        def read(text):
            try:
                return float(text)
            except ValueError:
                raise ValueError(f"{text!r} is not a number (attribute {name!r})") from None
        return read
    if attribute.kind == "nominal":
        return _nominal_reader(attribute)
    if attribute.kind == "date":
        return _date_reader(attribute)
    return str


def _convert_column(attribute, tokens, read=None):
    """The values of one attribute from its tokens; unquoted ``?`` is missing."""
    read = read or _value_reader(attribute)
    missing = None if attribute.kind == "string" else np.nan
    out = []
    for position, (kind, text) in enumerate(tokens):
        if kind == "w" and text == "?":
            out.append(missing)
            continue
        try:
            out.append(read(text))
        except ValueError as error:
            raise _BadValue(position, str(error)) from None
    return out


def _parse_rows(rows, linenos, attributes):
    """Parse data rows one by one (any ARFF row); returns (table, strings, weighted)."""
    n_rows, n_attributes = len(rows), len(attributes)
    row_ids, columns, tokens, sparse, weighted = [], [], [], False, False
    for row, (text, lineno) in enumerate(zip(rows, linenos)):
        line_tokens = _tokenize(text, lineno)
        entries = _sparse_entries if line_tokens[0][0] == "{" else _dense_entries
        indices, values, weight = entries(line_tokens, lineno, n_attributes)
        sparse |= entries is _sparse_entries
        weighted |= weight is not None
        row_ids.extend([row] * len(values))
        columns.extend(indices)
        tokens.extend(values)
    row_ids, columns = np.array(row_ids, dtype=np.int64), np.array(columns, dtype=np.int64)
    numbers, strings, errors = np.zeros(len(tokens)), {}, []
    order = np.argsort(columns, kind="stable")
    bounds = np.searchsorted(columns[order], np.arange(n_attributes + 1))
    for j, attribute in enumerate(attributes):
        entries = order[bounds[j]:bounds[j + 1]]
        try:
            values = _convert_column(attribute, [tokens[e] for e in entries])
        except _BadValue as bad:
            errors.append((linenos[row_ids[entries[bad.position]]], str(bad)))
            continue
        if attribute.kind == "string":  # omitted from a sparse row: the empty string
            strings[j] = np.full(n_rows, "", dtype=object)
            strings[j][row_ids[entries]] = values
        else:
            numbers[entries] = values
    if errors:
        raise _ArffError(*min(errors))
    if sparse:
        table = sp.csr_matrix((numbers, (row_ids, columns)), shape=(n_rows, n_attributes))
    else:
        table = numbers.reshape(n_rows, n_attributes)
    return table, strings, weighted


def _read_cells(cells, attribute):
    """The values of one column of dense cells, or None if a cell is not one value.

    Each distinct cell is read once, by the tokenizer (so quotes, escapes and ``?`` mean
    what they mean in the row-by-row parser); a column of numbers is parsed by numpy.
    """
    if attribute.kind == "numeric":
        try:
            return np.array(cells, dtype=np.float64)
        except ValueError:
            pass
    distinct = {}
    inverse = np.fromiter((distinct.setdefault(cell, len(distinct)) for cell in cells),
                          dtype=np.intp, count=len(cells))
    read, values = _value_reader(attribute), []
    for k, cell in enumerate(distinct):  # in the order of their first rows
        try:
            tokens = _tokenize(cell, 0)
        except _ArffError:
            return None
        if len(tokens) != 1 or not _is_text(tokens[0]):
            return None
        try:
            values.append(_convert_column(attribute, tokens, read)[0])
        except _BadValue as bad:
            raise _BadValue(int(np.argmax(inverse == k)), str(bad)) from None
    dtype = object if attribute.kind == "string" else np.float64
    return np.array(values, dtype=dtype)[inverse]


def _parse_columns(rows, linenos, attributes):
    """Parse dense rows column by column; None if a row needs the row-by-row parser.

    For rows without comments, braces or commas inside quoted values, whose cells
    between commas are single values: files with quoted values, strings or dates.
    Returns (table, strings).
    """
    n_attributes = len(attributes)
    cells = [row.split(",") for row in rows]
    if any(len(row_cells) != n_attributes for row_cells in cells):
        return None
    table, strings, errors = np.zeros((len(rows), n_attributes)), {}, []
    for j, (attribute, column) in enumerate(zip(attributes, zip(*cells))):
        try:
            values = _read_cells(column, attribute)
        except _BadValue as bad:
            errors.append((linenos[bad.position], str(bad)))
            continue
        if values is None:
            return None
        if attribute.kind == "string":
            strings[j] = values
        else:
            table[:, j] = values
    if errors:
        raise _ArffError(*min(errors))
    return table, strings


def _parse_data(rows, linenos, attributes):
    """The table, strings and weight flag of the data rows (see :class:`_ArffData`).

    Rows of numbers (every MULAN file) are parsed in bulk by numpy, other dense rows
    column by column, and the rest (and any rows these reject) row by row, which also
    names the line and the problem of bad input.
    """
    blob = "\n".join(rows)
    plain = rows and not any(char in blob for char in "%{}")  # dense rows, no comments
    numbers = all(a.kind == "numeric" or (a.kind == "nominal" and a.numbers is not None)
                  for a in attributes)
    table = None
    if numbers and rows and not any(char in blob for char in "'\"%"):
        if plain:
            table = _bulk_dense(rows, attributes)
        elif all(row[0] == "{" for row in rows):
            table = _bulk_sparse(rows, attributes)
    if table is not None:
        return table, {}, False
    columns = _parse_columns(rows, linenos, attributes) if plain else None
    if columns is not None:
        return (*columns, False)
    return _parse_rows(rows, linenos, attributes)


def _read_arff(source):
    """Parse an ARFF file.

    Parameters
    ----------
    source : str or file-like
        The text of the file, or an open text file.

    Returns
    -------
    data : _ArffData
        The attributes and the values (see :class:`_ArffData`).
    """
    text = source if isinstance(source, str) else source.read()
    lines = text.split("\n")
    attributes, start = _read_header(lines)
    numbered = [(line.strip(), lineno) for lineno, line in enumerate(lines[start:], start + 1)]
    rows = [row for row, _ in numbered if row and row[0] != "%"]
    linenos = np.array([lineno for row, lineno in numbered if row and row[0] != "%"],
                       dtype=np.int64)
    table, strings, weighted = _parse_data(rows, linenos, attributes)
    return _ArffData(attributes, table, linenos, strings, weighted)


# --------------------------------------------------------------------------- coding


def _describe_type(attribute):
    if attribute.kind == "nominal":
        return "{" + ",".join(attribute.values) + "}"
    return attribute.kind


def _binary_values(attribute):
    """The declared numbers of a nominal attribute whose values are 0 and 1, else None."""
    declared = attribute.numbers if attribute.kind == "nominal" else None
    if declared is None or sorted(declared) != [0.0, 1.0]:
        return None
    return declared


def _column(table, j):
    """Column ``j`` of a dense table or a CSC matrix, as a 1-D float array."""
    if sp.issparse(table):
        return table[:, [j]].toarray().ravel()
    return table[:, j]


def _one_hot(codes, n_values):
    """One column per declared value (NaN in every column where the value is missing)."""
    block = (codes[:, None] == np.arange(n_values)).astype(np.float64)
    block[np.isnan(codes)] = np.nan
    return block


def _plain(attribute):
    """Whether the codes of an attribute are its feature column as they are."""
    binary = _binary_values(attribute)
    return attribute.kind != "nominal" or (binary is not None and binary[0] == 0)


def _feature_segments(attributes, skip, column):
    """The feature columns in attribute order, as runs of raw columns and coded blocks.

    Returns ``(segments, names)``: each segment is a list of raw table columns or an
    ndarray of shape (n_rows, k) of coded columns; ``column(j)`` gives the codes of
    attribute ``j``.
    """
    segments, names, run = [], [], None
    for j, attribute in enumerate(attributes):
        if j in skip or attribute.kind == "string":
            continue
        if _plain(attribute):
            if run is None:
                run = []
                segments.append(run)
            run.append(j)
            names.append(attribute.name)
            continue
        run = None
        if _binary_values(attribute) is not None:  # declared {1, 0}
            segments.append((1.0 - column(j))[:, None])
            names.append(attribute.name)
        else:
            segments.append(_one_hot(column(j), len(attribute.values)))
            names.extend(f"{attribute.name}={value}" for value in attribute.values)
    return segments, names


def _raw_columns(table, columns):
    """``table[:, columns]``, as a slice when the columns are consecutive."""
    if columns[-1] - columns[0] == len(columns) - 1:
        return table[:, columns[0]:columns[-1] + 1]
    return table[:, columns]


def _features(data, skip):
    """The feature matrix (ndarray, or CSR for a sparse table) and the feature names."""
    table, attributes = data.table, data.attributes
    coded = any(j not in skip and a.kind != "string" and not _plain(a)
                for j, a in enumerate(attributes))
    source = table.tocsc() if coded and sp.issparse(table) else table
    segments, names = _feature_segments(attributes, skip, lambda j: _column(source, j))
    n_rows = table.shape[0]
    if not sp.issparse(table):
        blocks = [_raw_columns(table, s) if isinstance(s, list) else s for s in segments]
        features = np.hstack(blocks) if blocks else np.empty((n_rows, 0))
        return np.ascontiguousarray(features), names
    blocks = [_raw_columns(table, s) if isinstance(s, list) else sp.csr_matrix(s)
              for s in segments]
    if len(blocks) == 1:
        features = blocks[0].tocsr()
    else:
        features = sp.hstack(blocks, format="csr") if blocks else sp.csr_matrix((n_rows, 0))
    features.eliminate_zeros()
    features.sort_indices()
    return features, names


def _check_label_type(attribute):
    if attribute.kind != "numeric" and _binary_values(attribute) is None:
        raise _ArffError(attribute.lineno, f"label {attribute.name!r} is declared "
                                           f"{_describe_type(attribute)}; labels must be "
                                           "numeric or nominal {0,1}")


def _targets(data, columns):
    """The 0/1 label indicator matrix of the label attributes ``columns``."""
    attributes = [data.attributes[j] for j in columns]
    for attribute in attributes:
        _check_label_type(attribute)
    table = data.table[:, columns]
    labels = table.toarray() if sp.issparse(table) else np.array(table)
    for k, attribute in enumerate(attributes):
        binary = _binary_values(attribute)
        if binary is not None and binary[0]:  # declared {1, 0}: codes -> numbers
            labels[:, k] = 1.0 - labels[:, k]
    bad = np.argwhere(~((labels == 0) | (labels == 1)))
    if len(bad):
        row, k = bad[0]
        value = "missing ('?')" if np.isnan(labels[row, k]) else f"{labels[row, k]:g}"
        raise _ArffError(data.linenos[row], f"label {attributes[k].name!r} is {value}; "
                                            "labels must be 0 or 1")
    return labels.astype(np.intp)


# --------------------------------------------------------------------------- files

# the ARFF file names of a split, dense and sparse (tried in this order, each .arff.gz
# then .arff)
_ARFF_NAMES = ("{stem}-{subset}", "{stem}-{subset}-sparse", "{stem}-sparse-{subset}")
_STRING_POLICIES = ("warn", "drop", "raise", "return")


def _open_text(path):
    path = os.fspath(path)
    opener = gzip.open if path.endswith(".gz") else open
    return opener(path, "rt", encoding="utf-8-sig")


def _read_arff_file(path):
    """Parse the ARFF file at ``path`` (plain or gzipped); errors name the file."""
    try:
        with _open_text(path) as file:
            text = file.read()
    except (UnicodeDecodeError, gzip.BadGzipFile, EOFError) as error:
        raise ValueError(f"{path}: cannot be read as UTF-8 text ({error})") from None
    try:
        return _read_arff(text)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None


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
        j = position.get(label, position.get(_unescape(label)))
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
        codes = _column(data.table, j)
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
    data = _read_arff_file(arff)
    labels = _label_columns(data, name, arff, xml)
    try:
        target = _targets(data, labels)
    except ValueError as error:
        raise ValueError(f"{arff}: {error}") from None
    strings = _string_columns(data, labels, string_attributes, arff)
    _warn_identifier_like(data, set(labels), arff)
    if data.weighted:
        warnings.warn(f"{arff}: instance weights {{w}} are ignored", UserWarning, stacklevel=3)
    features, feature_names = _features(data, set(labels))
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
