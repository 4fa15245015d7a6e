"""ARFF files, Weka's attribute-relation format: the reader and the coding of attributes.

:func:`read_arff_file` parses a file (plain or gzipped) into an :class:`_ArffData`, one
column per attribute; :func:`encode_features` and :func:`encode_labels` turn its columns
into a feature matrix and a 0/1 label matrix. The MULAN loader
(:mod:`skstruct.datasets._multilabel`) is built on these.

The grammar is Weka's (https://waikato.github.io/weka-wiki/formats_and_processing/arff/):
case-insensitive keywords, ``%`` comments, names and values in single or double quotes
with backslash escapes, nominal specifications ``{a, 'b c'}``, dense rows
``v1, v2, ...`` and sparse rows ``{index value, ...}``, ``?`` for a missing value and an
optional instance weight ``{w}`` at the end of a row. An unquoted name or value may hold
an escaped quote (``TAG_m\\'usica`` is ``TAG_m'usica``, the name Weka writes as
``'TAG_m\\'usica'``); its other backslashes are kept as written, as Weka keeps them.

A problem at a line raises :class:`_ArffError`, a ValueError naming the line;
:func:`read_arff_file` puts the file name in front of every error.
"""

import datetime
import functools
import gzip
import io
import os
import re
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

__all__ = ["dense_column", "encode_features", "encode_labels", "read_arff_file", "unescape"]


# --------------------------------------------------------------------------- tokens

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
    """A problem at one line of an ARFF file; :func:`read_arff_file` prefixes the file
    name."""

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


def unescape(text):
    """Undo ARFF backslash escapes (``\\'``, ``\\"``, ``\\\\``, ``\\n``, ``\\t``, ...).

    Parameters
    ----------
    text : str
        A name or value as written between quotes.

    Returns
    -------
    str
    """
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
            tokens.append(("q", unescape(text[1:-1])))
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


# --------------------------------------------------------------------------- files


def _open_text(path):
    path = os.fspath(path)
    opener = gzip.open if path.endswith(".gz") else open
    return opener(path, "rt", encoding="utf-8-sig")


def read_arff_file(path):
    """Parse the ARFF file at ``path`` (plain or gzipped); errors name the file.

    Parameters
    ----------
    path : str or path-like
        An ``.arff`` file, or an ``.arff.gz`` file (read as UTF-8, a byte order mark
        allowed).

    Returns
    -------
    data : _ArffData
        The attributes and the values (see :class:`_ArffData`).

    Raises
    ------
    ValueError
        ``"<path>: line <n>: <problem>"`` for a file that breaks the grammar, or
        ``"<path>: cannot be read as UTF-8 text"``.
    """
    try:
        with _open_text(path) as file:
            text = file.read()
    except (UnicodeDecodeError, gzip.BadGzipFile, EOFError) as error:
        raise ValueError(f"{path}: cannot be read as UTF-8 text ({error})") from None
    try:
        return _read_arff(text)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None


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


def dense_column(table, j):
    """Column ``j`` of a dense table or a CSC matrix, as a 1-D float array.

    Parameters
    ----------
    table : ndarray or sparse matrix of shape (n_rows, n_attributes)
        The ``table`` of an :class:`_ArffData` (CSC for many columns of a sparse one).
    j : int
        The attribute's index.

    Returns
    -------
    codes : ndarray of shape (n_rows,)
    """
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


def encode_features(data, skip):
    """The feature matrix and the feature names of the attributes not in ``skip``.

    Numeric and date attributes, and nominal attributes whose values are 0 and 1, are
    one column each (of the numbers; seconds since the epoch for dates), other nominal
    attributes one-hot (one column per declared value, named ``<attribute>=<value>``,
    NaN in all of them where the value is missing); string attributes are left out.

    Parameters
    ----------
    data : _ArffData
    skip : set of int
        Indices of the attributes that are not features (the labels).

    Returns
    -------
    features : ndarray of shape (n_rows, n_features), or CSR matrix for a sparse table
    names : list of str
    """
    table, attributes = data.table, data.attributes
    coded = any(j not in skip and a.kind != "string" and not _plain(a)
                for j, a in enumerate(attributes))
    source = table.tocsc() if coded and sp.issparse(table) else table
    segments, names = _feature_segments(attributes, skip,
                                        lambda j: dense_column(source, j))
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


def encode_labels(data, columns):
    """The 0/1 label indicator matrix of the label attributes ``columns``.

    Parameters
    ----------
    data : _ArffData
    columns : list of int
        Indices of the label attributes, numeric or nominal ``{0,1}`` (or ``{1,0}``).

    Returns
    -------
    labels : ndarray of shape (n_rows, len(columns)), intp

    Raises
    ------
    ValueError
        Naming the line, for a label declared with another type or a value other than
        0 or 1 (a missing one included).
    """
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
