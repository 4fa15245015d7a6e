"""The table codes of all token items read by a compiled kernel straight from the dicts.

:func:`dict_codes` walks every token dict with CPython's own ``PyDict_Next`` and finds
each (key, value) item in the column table with ``PyDict_GetItem``, called from a numba
kernel through their addresses: about 25 ns an item against about 80 ns for the C-level
passes of :func:`._vectorizing._codes` (the list of values, the set of their types, two
``dict.get`` calls per item through ``map``), whose work it does in one pass.

It holds the GIL throughout (the kernel is not ``nogil``) and runs no Python code: it
takes only exact ``dict`` tokens, exact ``str`` keys and values of the exact types
``str``, ``bool``, ``int`` and ``float``, whose hashing and comparison are CPython's C
code, and columns stored as exact ``int`` (read with ``PyLong_AsSsize_t``, which cannot
fail on them), and it reads every object by a borrowed reference that the caller's list
of tokens (and the fitted table) keep alive. Any other token, key or value type stops the walk, and the caller takes its
general path: the results are those of the C-level passes, item for item.

The object header (``ob_type`` one machine word after the start of the object) and the
functions are checked once per process, with ``ctypes``; where they differ (PyPy, a
free-threaded build) :func:`dict_codes` returns None and the C-level passes run instead.
"""

import ctypes
import sys
import sysconfig

import numpy as np
from llvmlite import ir
import numba
from numba import njit, types
from numba.extending import intrinsic

__all__ = ["NUMBER", "dict_codes"]

#: Code of a number that the table missed (not 0 or 1, or a key only numeric in fit):
#: resolved by the caller from the token.
NUMBER = -3

_WORD = ctypes.sizeof(ctypes.c_ssize_t)


@intrinsic
def _word_at(typingctx, address):
    """The machine word stored at ``address``."""
    sig = types.intp(types.intp)

    def codegen(context, builder, signature, args):
        word = context.get_value_type(types.intp)
        return builder.load(builder.inttoptr(args[0], word.as_pointer()))

    return sig, codegen


@intrinsic
def _call_word_1(typingctx, function, a):
    """``function(a)`` for a C function of one word returning one word."""
    sig = types.intp(types.intp, types.intp)

    def codegen(context, builder, signature, args):
        word = context.get_value_type(types.intp)
        pointer = builder.inttoptr(args[0], ir.FunctionType(word, [word]).as_pointer())
        return builder.call(pointer, [args[1]])

    return sig, codegen


@intrinsic
def _call_word_2(typingctx, function, a, b):
    """``function(a, b)`` for a C function of two words returning one word."""
    sig = types.intp(types.intp, types.intp, types.intp)

    def codegen(context, builder, signature, args):
        word = context.get_value_type(types.intp)
        pointer = builder.inttoptr(args[0], ir.FunctionType(word, [word, word]).as_pointer())
        return builder.call(pointer, [args[1], args[2]])

    return sig, codegen


@intrinsic
def _call_int_4(typingctx, function, a, b, c, d):
    """``function(a, b, c, d)`` for a C function of four words returning a C ``int``."""
    sig = types.intp(types.intp, types.intp, types.intp, types.intp, types.intp)

    def codegen(context, builder, signature, args):
        word = context.get_value_type(types.intp)
        function_type = ir.FunctionType(ir.IntType(32), [word] * 4)
        pointer = builder.inttoptr(args[0], function_type.as_pointer())
        return builder.sext(builder.call(pointer, list(args[1:])), word)

    return sig, codegen


#: Slots of the walk's direct-mapped cache of key lookups (a power of 2).
_KEY_CACHE = 4096

#: Walk outcomes besides the number of items read.
_OTHER_TYPE = -1  # a token, key or value type the walk does not take
_TOO_MANY = -2  # more items than counted


@njit(cache=True)  # not nogil: the kernel calls the CPython API and must hold the GIL
def _walk(token_ids, table_id, api, kinds, miss, codes):
    """Fill ``codes`` with the table code of every item of every token.

    Parameters
    ----------
    token_ids : ndarray of shape (n_tokens,), intp
        Addresses of the token dicts.
    table_id : int
        Address of the column table ``{key: {value: column}}``.
    api : ndarray of shape (3,), intp
        Addresses of ``PyDict_Next``, ``PyDict_GetItem`` and ``PyLong_AsSsize_t``.
    kinds : ndarray of shape (5,), intp
        Addresses of the types ``dict``, ``str``, ``bool``, ``int`` and ``float``.
    miss : int
        Code of a string the table does not hold.
    codes : ndarray of shape (n_items,), int32 or int64
        Output: column, DROP, ``miss`` or :data:`NUMBER`.

    Returns
    -------
    n_read : int
        Items read, or ``_OTHER_TYPE`` or ``_TOO_MANY`` (the walk stopped).
    """
    dict_next, get_item, as_ssize = api[0], api[1], api[2]
    dict_type, str_type, bool_type, int_type, float_type = (
        kinds[0], kinds[1], kinds[2], kinds[3], kinds[4])
    slots = np.zeros(3, dtype=np.intp)  # PyDict_Next's position, key and value
    # The inner table of recent keys, by the key's address: a key object is alive (held
    # by its token) throughout the walk, so an address names one key.
    cached_keys = np.zeros(_KEY_CACHE, dtype=np.intp)
    cached_inners = np.zeros(_KEY_CACHE, dtype=np.intp)
    base = slots.ctypes.data
    n_items = codes.shape[0]
    item = 0
    for t in range(token_ids.shape[0]):
        token = token_ids[t]
        if _word_at(token + 8) != dict_type:
            return _OTHER_TYPE
        slots[0] = 0
        while _call_int_4(dict_next, token, base, base + 8, base + 16) != 0:
            key, value = slots[1], slots[2]
            if _word_at(key + 8) != str_type:
                return _OTHER_TYPE
            kind = _word_at(value + 8)
            is_str = kind == str_type
            if not (is_str or kind == bool_type or kind == int_type or kind == float_type):
                return _OTHER_TYPE
            if item == n_items:
                return _TOO_MANY
            code = miss
            slot = (key >> 4) & (_KEY_CACHE - 1)
            if cached_keys[slot] == key:
                inner = cached_inners[slot]
            else:
                inner = _call_word_2(get_item, table_id, key)
                cached_keys[slot], cached_inners[slot] = key, inner
            if inner != 0:
                column = _call_word_2(get_item, inner, value)
                if column != 0:
                    if _word_at(column + 8) != int_type:  # PyLong_AsSsize_t needs an int
                        return _OTHER_TYPE
                    code = _call_word_1(as_ssize, column)
                elif not is_str:
                    code = NUMBER
            codes[item] = code
            item += 1
    return item


def _function_address(name):
    return ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value


def _setup():
    """``(api, kinds)`` arrays for :func:`_walk`, or None where the walk does not apply."""
    if sys.implementation.name != "cpython" or sysconfig.get_config_var("Py_GIL_DISABLED"):
        return None
    if _WORD != 8 or not hasattr(ctypes, "pythonapi") or numba.config.DISABLE_JIT:
        return None  # (uncompiled, the kernel's intrinsics cannot run)
    try:
        api = np.array([_function_address(name) for name in
                        ("PyDict_Next", "PyDict_GetItem", "PyLong_AsSsize_t")], dtype=np.intp)
    except (AttributeError, TypeError):
        return None
    kinds = (dict, str, bool, int, float)
    samples = ({}, "x", True, 1 << 70, 0.5)
    for kind, sample in zip(kinds, samples):  # ob_type is the second word of an object
        if ctypes.c_ssize_t.from_address(id(sample) + _WORD).value != id(kind):
            return None
    return api, np.array([id(kind) for kind in kinds], dtype=np.intp)


_SETUP = _setup()


def available():
    """Whether :func:`dict_codes` can run in this interpreter."""
    return _SETUP is not None


def dict_codes(tokens, n_items, table, miss, code_dtype=np.int64):
    """Table code of every (key, value) item of every token, in token then dict order.

    Parameters
    ----------
    tokens : list of dict
    n_items : int
        Total ``len`` of the tokens.
    table : dict
        The column table (:func:`._vectorizing.column_table`).
    miss : int
        Code of an item the table does not hold whose value is a string.
    code_dtype : integer dtype, default=np.int64

    Returns
    -------
    codes : ndarray of shape (n_items,), dtype ``code_dtype``, or None
        Column, DROP, ``miss`` or :data:`NUMBER` (a number the table missed); None when
        the walk does not apply here or met a token, key or value of another type.

    Raises
    ------
    RuntimeError
        The tokens hold more or fewer items than ``n_items``.
    """
    if _SETUP is None:
        return None
    api, kinds = _SETUP
    token_ids = np.fromiter(map(id, tokens), dtype=np.intp, count=len(tokens))
    codes = np.empty(n_items, dtype=code_dtype)
    n_read = _walk(token_ids, id(table), api, kinds, miss, codes)
    if n_read == _OTHER_TYPE:
        return None
    if n_read == _TOO_MANY or n_read != n_items:
        raise RuntimeError("a token feature dict changed while it was being vectorized")
    return codes
