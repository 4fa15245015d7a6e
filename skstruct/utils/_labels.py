"""Labels of one consistent type, checked before numpy silently converts them.

``np.asarray(["A", 7])`` is the string array ``["A", "7"]``: a mix of label types would be
learned as strings and predicted in a type the user never gave. Labels are therefore
checked on the user's values, before any conversion.
"""

import numbers

import numpy as np

__all__ = ["check_label_types", "label_kind"]


def label_kind(value):
    """The type family of one label: "string", "bytes", "boolean", "number", or a name."""
    if isinstance(value, (str, np.str_)):
        return "string"
    if isinstance(value, (bytes, np.bytes_)):
        return "bytes"
    if isinstance(value, (bool, np.bool_)):
        return "boolean"
    if isinstance(value, numbers.Number):
        return "number"
    if value is None:
        return "None"
    return type(value).__name__


_DTYPE_KINDS = {"U": "string", "S": "bytes", "b": "boolean", "i": "number", "u": "number",
                "f": "number"}


def _kinds_and_examples(labels):
    """The label kinds of one array-like of labels, with one example value of each."""
    if isinstance(labels, np.ndarray) and labels.dtype.kind in _DTYPE_KINDS:
        if labels.size == 0:
            return {}
        kind = _DTYPE_KINDS[labels.dtype.kind]
        if labels.dtype.kind == "f" and np.isnan(labels).any():
            return {kind: labels.flat[0], "NaN": float("nan")}
        return {kind: labels.flat[0]}
    values = labels if isinstance(labels, (list, tuple)) else list(
        np.asarray(labels, dtype=object).ravel())
    examples = {}
    for label_type in dict.fromkeys(map(type, values)):  # in order of first appearance
        value = next(v for v in values if type(v) is label_type)
        examples.setdefault(label_kind(value), value)
    if "number" in examples and any(v != v for v in values if isinstance(v, float)):
        examples["NaN"] = float("nan")
    return examples


def check_label_types(label_arrays, where=""):
    """Check that labels are of one type family, with no missing values.

    Parameters
    ----------
    label_arrays : list of array-like
        The labels, in any number of pieces (one per sequence, or a single array).
    where : str, default=""
        Appended to error messages (e.g. " in CRF").

    Raises
    ------
    ValueError
        When labels mix type families (strings and numbers, booleans and numbers, ...),
        or contain ``None`` or NaN.
    TypeError
        When a label is not hashable.
    """
    examples = {}
    for labels in label_arrays:
        for kind, value in _kinds_and_examples(labels).items():
            examples.setdefault(kind, value)
    if "None" in examples or "NaN" in examples:
        missing = " and ".join(k for k in ("None", "NaN") if k in examples)
        raise ValueError(
            f"y contains missing labels ({missing}){where}; every token or sample needs a "
            "label. Drop or fill them before fitting."
        )
    for kind, value in examples.items():
        try:
            hash(value)
        except TypeError:
            raise TypeError(
                f"y contains labels of type {kind}, which is not hashable{where}; labels "
                "must be strings, numbers or booleans."
            ) from None
    if len(examples) > 1:
        shown = ", ".join(f"{kind} (e.g. {value!r})" for kind, value in examples.items())
        raise ValueError(
            f"y mixes label types: {shown}{where}. Labels must all be of one type (all "
            "strings, or all numbers); convert them, e.g. with str()."
        )
