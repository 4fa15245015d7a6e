"""Hashed first-order arc features for arc-factored dependency parsers."""

from collections.abc import Mapping
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from numba import njit, prange
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from ..utils._chunks import weighted_chunks
from ..utils._parallel import dynamic_schedule, threads_for
from ..utils._trees import ArcFeatureBatch

__all__ = ["ARC_TEMPLATES", "ArcVectorizer"]

#: The feature templates, in the order of their ids. ``hw``/``hp`` are the head's word
#: and part of speech, ``mw``/``mp`` the modifier's, ``hp-1``/``hp+1`` and
#: ``mp-1``/``mp+1`` the parts of speech of the neighbours of the head and the
#: modifier, ``bp`` a part of speech strictly between them. Every template but
#: ``"bias"`` is emitted twice: alone, and conjoined with the direction and distance.
ARC_TEMPLATES = (
    "hw",
    "hp",
    "hw+hp",
    "mw",
    "mp",
    "mw+mp",
    "hw+hp+mw+mp",
    "hp+mw+mp",
    "hw+mw+mp",
    "hw+hp+mp",
    "hw+hp+mw",
    "hw+mw",
    "hp+mp",
    "hp+hp+1+mp-1+mp",
    "hp-1+hp+mp-1+mp",
    "hp+hp+1+mp+mp+1",
    "hp-1+hp+mp+mp+1",
    "hp+bp+mp",
    "bias",
)
#: Features of every arc that do not depend on the words between head and modifier:
#: 17 templates, alone and with direction and distance, and the bias.
_N_FIXED = 2 * 17 + 1

#: Ids of the special values: words "<unk>" and "<root>" are 0 and 1, tags "<unk>",
#: "<root>", "<s>" and "</s>" are 0 to 3; learned words and tags come after them.
_UNK_ID, _ROOT_ID, _START_ID, _END_ID = 0, 1, 2, 3

#: Direction ids: the head left of the modifier (an arc pointing right), right of it,
#: or the root.
_RIGHT_ARC, _LEFT_ARC, _ROOT_ARC = 0, 1, 2

# 64-bit mixing: the finalizer of SplitMix64 (Stafford's variant 13) and the golden ratio.
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)

#: Rows (arcs) per batch of sentences when building per-sentence matrices.
_BATCH_ROWS = 2**20
#: Most nonzeros of a matrix with 32-bit indices; more take 64-bit indices.
_MAX_INT32_NNZ = np.iinfo(np.int32).max
#: Operations per arc, to size the thread count of the compiled kernels.
_WORK_PER_ARC = 200

_NJIT = dict(cache=True, nogil=True)


@njit(inline="always", **_NJIT)
def _fmix(x):
    x = (x ^ (x >> _S30)) * _M1
    x = (x ^ (x >> _S27)) * _M2
    return x ^ (x >> _S31)


@njit(inline="always", **_NJIT)
def _mix(h, value):
    return _fmix((h * _GOLDEN) ^ np.uint64(value))


@njit(inline="always", **_NJIT)
def _start(template):
    return _fmix(np.uint64(template + 1) * _GOLDEN)


@njit(inline="always", **_NJIT)
def _column(h, n_features, mask):
    if mask != 0:
        return h & mask
    return h % n_features


@njit(inline="always", **_NJIT)
def _distance_bucket(distance):
    # 1, 2, 3, 4, 5 -> 0..4; 6-10 -> 5; more than 10 -> 6.
    if distance <= 5:
        return distance - 1
    if distance <= 10:
        return 5
    return 6


@njit(inline="always", **_NJIT)
def _emit(buffer, p, h, conjunction, n_features, mask):
    """Write the column of hash ``h`` and of its direction-distance conjunction at ``p``."""
    buffer[p] = _column(h, n_features, mask)
    buffer[p + 1] = _column(_mix(h, conjunction), n_features, mask)
    return p + 2


@njit(**_NJIT)
def _virtual_tags(tags, start, n):
    """Tags of the virtual sentence ``<s> <root> w_1 ... w_n </s>``, indexed by position + 1."""
    vp = np.empty(n + 3, dtype=np.int64)
    vp[0] = _START_ID
    vp[1] = _ROOT_ID
    for i in range(n):
        vp[i + 2] = tags[start + i]
    vp[n + 2] = _END_ID
    return vp


@njit(parallel=True, **_NJIT)
def _count_features(tags, offsets, row_offsets, n_tags, counts, bounds):
    """Number of features of every arc: the fixed ones and two per distinct tag between.

    Sentences run in the contiguous chunks ``bounds`` (:func:`_sentence_chunks`), one per
    parallel iteration; every arc is counted alone.
    """
    for chunk in prange(bounds.shape[0] - 1):
        for s in range(bounds[chunk], bounds[chunk + 1]):
            _count_sentence(tags, offsets, row_offsets, n_tags, counts, s)


@njit(**_NJIT)
def _count_sentence(tags, offsets, row_offsets, n_tags, counts, s):
    """:func:`_count_features` of sentence ``s``."""
    start = offsets[s]
    n = offsets[s + 1] - start
    row0 = row_offsets[s]
    vp = _virtual_tags(tags, start, n)
    seen = np.full(n_tags, -1, dtype=np.int64)
    for hv in range(n + 1):  # virtual head position, 0 = root
        for side in range(2):
            step = 1 if side == 0 else -1
            if side == 1 and hv <= 1:
                continue
            n_between = 0
            sweep = hv * 2 + side
            mv = hv + step
            while 1 <= mv <= n:
                m = mv - 1
                h = m if hv == 0 else hv - 1
                counts[row0 + m * n + h] = _N_FIXED + 2 * n_between
                tag = vp[mv + 1]
                if seen[tag] != sweep:
                    seen[tag] = sweep
                    n_between += 1
                mv += step


#: Buckets of the per-row sort: about one per feature of an arc.
_N_BUCKETS = 64


@njit(inline="always", **_NJIT)
def _write_sorted(buffer, k, indices, lo, counts, scale):
    """Write ``buffer[:k]`` sorted and without repeats to ``indices[lo:]``; return the count.

    Hashed columns are spread evenly over ``[0, n_features)``: a counting sort on
    ``_N_BUCKETS`` equal ranges of columns (``scale = _N_BUCKETS / n_features``) leaves few
    values out of order, which an insertion sort then fixes.
    """
    counts[:] = 0
    for i in range(k):
        counts[min(int(buffer[i] * scale), _N_BUCKETS - 1) + 1] += 1
    for b in range(_N_BUCKETS):
        counts[b + 1] += counts[b]
    for i in range(k):
        b = min(int(buffer[i] * scale), _N_BUCKETS - 1)
        indices[lo + counts[b]] = buffer[i]
        counts[b] += 1
    for i in range(lo + 1, lo + k):
        value = indices[i]
        j = i - 1
        while j >= lo and indices[j] > value:
            indices[j + 1] = indices[j]
            j -= 1
        indices[j + 1] = value
    end = lo + 1
    for i in range(lo + 1, lo + k):
        if indices[i] != indices[end - 1]:
            indices[end] = indices[i]
            end += 1
    return end - lo


@njit(parallel=True, **_NJIT)
def _fill_features(words, tags, offsets, row_offsets, n_tags, indptr, indices, data, n_unique,
                   n_features, mask, bounds):
    """Hash the features of every arc into ``indices[indptr[r]:]``, sorted and unique.

    Sentences run in the contiguous chunks ``bounds`` (:func:`_sentence_chunks`), one per
    parallel iteration; every arc is hashed alone.

    The matching ``data`` are set to one (unless ``data`` is empty: rows without values).
    ``n_unique[r]`` receives the number of distinct
    columns of row ``r``, smaller than ``indptr[r + 1] - indptr[r]`` only when two
    features of the arc share a column.
    """
    scale = _N_BUCKETS / np.float64(n_features)
    for chunk in prange(bounds.shape[0] - 1):
        for s in range(bounds[chunk], bounds[chunk + 1]):
            _fill_sentence(words, tags, offsets, row_offsets, n_tags, indptr, indices, data,
                           n_unique, n_features, mask, scale, s)


@njit(**_NJIT)
def _fill_sentence(words, tags, offsets, row_offsets, n_tags, indptr, indices, data,
                   n_unique, n_features, mask, scale, s):
    """:func:`_fill_features` of sentence ``s``."""
    start = offsets[s]
    n = offsets[s + 1] - start
    row0 = row_offsets[s]
    vp = _virtual_tags(tags, start, n)
    vw = np.empty(n + 1, dtype=np.int64)
    vw[0] = _ROOT_ID
    for i in range(n):
        vw[i + 1] = words[start + i]
    # Modifier-only hashes: templates "mw", "mp", "mw+mp" at every position.
    h_mw = np.empty(n + 1, dtype=np.uint64)
    h_mp = np.empty(n + 1, dtype=np.uint64)
    h_mwmp = np.empty(n + 1, dtype=np.uint64)
    for v in range(1, n + 1):
        h_mw[v] = _mix(_start(3), vw[v])
        h_mp[v] = _mix(_start(4), vp[v + 1])
        h_mwmp[v] = _mix(_mix(_start(5), vw[v]), vp[v + 1])
    seen = np.full(n_tags, -1, dtype=np.int64)
    between = np.empty(n_tags, dtype=np.int64)
    buffer = np.empty(_N_FIXED + 2 * n_tags, dtype=np.int32)
    counts = np.empty(_N_BUCKETS + 1, dtype=np.int64)
    for hv in range(n + 1):
        hw = vw[hv]
        hp = vp[hv + 1]
        hp_prev = vp[hv]
        hp_next = vp[hv + 2]
        # Head-only hashes and prefixes of the templates that start with the head.
        h_hw = _mix(_start(0), hw)
        h_hp = _mix(_start(1), hp)
        h_hwhp = _mix(_mix(_start(2), hw), hp)
        p6 = _mix(_mix(_start(6), hw), hp)
        p7 = _mix(_start(7), hp)
        p8 = _mix(_start(8), hw)
        p9 = _mix(_mix(_start(9), hw), hp)
        p10 = _mix(_mix(_start(10), hw), hp)
        p11 = _mix(_start(11), hw)
        p12 = _mix(_start(12), hp)
        p13 = _mix(_mix(_start(13), hp), hp_next)
        p14 = _mix(_mix(_start(14), hp_prev), hp)
        p15 = _mix(_mix(_start(15), hp), hp_next)
        p16 = _mix(_mix(_start(16), hp_prev), hp)
        p17 = _mix(_start(17), hp)
        bias = _column(_start(18), n_features, mask)
        for side in range(2):
            step = 1 if side == 0 else -1
            if side == 1 and hv <= 1:
                continue
            n_between = 0
            sweep = hv * 2 + side
            mv = hv + step
            while 1 <= mv <= n:
                m = mv - 1
                if hv == 0:
                    row = row0 + m * n + m
                    direction = _ROOT_ARC
                else:
                    row = row0 + m * n + hv - 1
                    direction = _RIGHT_ARC if side == 0 else _LEFT_ARC
                distance = mv - hv if side == 0 else hv - mv
                conj = direction * 8 + _distance_bucket(distance)
                mw = vw[mv]
                mp = vp[mv + 1]
                mp_prev = vp[mv]
                mp_next = vp[mv + 2]
                buffer[0] = bias
                p = 1
                p = _emit(buffer, p, h_hw, conj, n_features, mask)
                p = _emit(buffer, p, h_hp, conj, n_features, mask)
                p = _emit(buffer, p, h_hwhp, conj, n_features, mask)
                p = _emit(buffer, p, h_mw[mv], conj, n_features, mask)
                p = _emit(buffer, p, h_mp[mv], conj, n_features, mask)
                p = _emit(buffer, p, h_mwmp[mv], conj, n_features, mask)
                p = _emit(buffer, p, _mix(_mix(p6, mw), mp), conj, n_features, mask)
                p = _emit(buffer, p, _mix(_mix(p7, mw), mp), conj, n_features, mask)
                p = _emit(buffer, p, _mix(_mix(p8, mw), mp), conj, n_features, mask)
                p = _emit(buffer, p, _mix(p9, mp), conj, n_features, mask)
                p = _emit(buffer, p, _mix(p10, mw), conj, n_features, mask)
                p = _emit(buffer, p, _mix(p11, mw), conj, n_features, mask)
                p = _emit(buffer, p, _mix(p12, mp), conj, n_features, mask)
                p = _emit(buffer, p, _mix(_mix(p13, mp_prev), mp), conj, n_features, mask)
                p = _emit(buffer, p, _mix(_mix(p14, mp_prev), mp), conj, n_features, mask)
                p = _emit(buffer, p, _mix(_mix(p15, mp), mp_next), conj, n_features, mask)
                p = _emit(buffer, p, _mix(_mix(p16, mp), mp_next), conj, n_features, mask)
                for k in range(n_between):
                    h = _mix(_mix(p17, between[k]), mp)
                    p = _emit(buffer, p, h, conj, n_features, mask)
                lo = indptr[row]
                n_unique[row] = _write_sorted(buffer, p, indices, lo, counts, scale)
                if data.shape[0] > 0:
                    data[lo : lo + p] = 1
                if seen[mp] != sweep:
                    seen[mp] = sweep
                    between[n_between] = mp
                    n_between += 1
                mv += step


@njit(**_NJIT)
def _column_counts(indices, n_features):
    """Number of stored entries of every column."""
    counts = np.zeros(n_features, dtype=np.int64)
    for p in range(indices.shape[0]):
        counts[indices[p]] += 1
    return counts


#: Entries per chunk of :func:`_to_positions` (about 50 µs of random reads of ``rank``).
_POSITIONS_PER_CHUNK = 16_384


@njit(parallel=True, **_NJIT)
def _to_positions(indices, rank):
    """indices[p] = rank[indices[p]], in place, in chunks of ``_POSITIONS_PER_CHUNK``."""
    n = indices.shape[0]
    for chunk in prange((n + _POSITIONS_PER_CHUNK - 1) // _POSITIONS_PER_CHUNK):
        for p in range(chunk * _POSITIONS_PER_CHUNK, min(n, (chunk + 1) * _POSITIONS_PER_CHUNK)):
            indices[p] = rank[indices[p]]


def _sentence_chunks(row_offsets):
    """Chunks of sentences of about equal numbers of arcs (``_WORK_PER_ARC`` each), for
    the kernels that build the arc features; they depend on the sentences only."""
    return weighted_chunks(row_offsets, scale=_WORK_PER_ARC)


@njit(**_NJIT)
def _compact(indptr, indices, n_unique):
    """Move the rows left over the gaps left by repeated columns; rewrite ``indptr``.

    Only ``indices`` move: all the data are ones, so any prefix of them is right.
    """
    end = 0
    for row in range(n_unique.shape[0]):
        lo = indptr[row]
        for k in range(n_unique[row]):
            indices[end + k] = indices[lo + k]
        indptr[row] = end
        end += n_unique[row]
    indptr[n_unique.shape[0]] = end
    return end


def _check_dtype(dtype):
    """The output dtype of a vectorizer as a ``np.dtype``, which must be floating."""
    try:
        checked = np.dtype(dtype)
    except TypeError:
        checked = None
    if checked is None or not np.issubdtype(checked, np.floating):
        raise ValueError(
            f"dtype must be a floating type such as np.float64 or np.float32, got {dtype!r}."
        )
    return checked


def _check_string_column(column, name, sentence):
    """Reject a list of words or tags that holds non-strings (numpy would stringify them).

    ``"".join`` checks all items at C speed; arrays of strings need no check.
    """
    if isinstance(column, np.ndarray) and column.dtype.kind == "U":
        return
    try:
        "".join(column)
    except TypeError:
        i, value = next((i, v) for i, v in enumerate(column) if not isinstance(v, str))
        raise ValueError(
            f"all {name} must be strings; {name[:-1]} {i} of sentence {sentence} is "
            f"{value!r} of type {type(value).__name__}."
        ) from None


def _sentence_columns(X):
    """Concatenated words and tags of all sentences, and the sentence lengths."""
    if isinstance(X, (str, Mapping)) or not hasattr(X, "__len__"):
        raise ValueError(
            "X must be a list of sentences, each a dict with 'form' and 'upos' arrays "
            f"or a (words, tags) tuple; got {type(X).__name__}."
        )
    if len(X) == 0:
        raise ValueError("X is empty: pass at least one sentence.")
    words, tags, lengths = [], [], []
    for i, sentence in enumerate(X):
        if isinstance(sentence, Mapping):
            if "form" not in sentence or "upos" not in sentence:
                raise ValueError(
                    f"sentence {i} has no 'form' or no 'upos' key; its keys are "
                    f"{sorted(map(str, sentence))}."
                )
            pair = sentence["form"], sentence["upos"]
        elif (
            isinstance(sentence, (tuple, list))
            and len(sentence) == 2
            and not isinstance(sentence[0], str)
        ):
            pair = sentence
        else:
            raise ValueError(
                f"sentence {i} must be a dict with 'form' and 'upos' arrays or a "
                f"(words, tags) tuple, got {type(sentence).__name__}."
            )
        sentence_words, sentence_tags = (np.asarray(column) for column in pair)
        for name, column, given in (("words", sentence_words, pair[0]),
                                    ("tags", sentence_tags, pair[1])):
            if column.ndim != 1 or (column.size and column.dtype.kind not in "UO"):
                raise ValueError(
                    f"the {name} of sentence {i} must be a 1-d sequence of strings, "
                    f"got an array of shape {column.shape} and dtype {column.dtype}."
                )
            _check_string_column(given, name, i)
        if len(sentence_words) != len(sentence_tags):
            raise ValueError(
                f"sentence {i} has {len(sentence_words)} words but {len(sentence_tags)} tags."
            )
        lengths.append(len(sentence_words))
        if len(sentence_words):  # empty arrays may have any dtype: leave them out
            words.append(sentence_words)
            tags.append(sentence_tags)
    lengths = np.array(lengths, dtype=np.int64)
    if not words:
        return np.array([], dtype=str), np.array([], dtype=str), lengths
    return np.concatenate(words), np.concatenate(tags), lengths


#: Variable-width strings sort faster than fixed-width ones as wide as the longest word.
_STRING_DTYPE = getattr(getattr(np, "dtypes", None), "StringDType", None)  # NumPy >= 2


def _unique_strings(values, name):
    """``np.unique(values, return_inverse=True)``, checking that the values are strings."""
    if values.dtype.kind == "U" and _STRING_DTYPE is not None:
        values = values.astype(_STRING_DTYPE())
    try:
        unique, inverse = np.unique(values, return_inverse=True)
    except TypeError:
        unique, inverse = None, None
    if unique is None or not all(isinstance(value, str) for value in unique.tolist()):
        raise ValueError(f"all {name} must be strings.")
    return unique.tolist(), inverse.reshape(-1)


class ArcVectorizer(TransformerMixin, BaseEstimator, auto_wrap_output_keys=None):
    """Hashed first-order features of every possible arc of dependency trees.

    For a sentence of ``n`` words, builds the binary features of the ``n * n``
    candidate arcs of an arc-factored parser: the arc from head ``h`` to
    modifier ``m`` for ``h != m`` (0-based word positions), and the arc from the
    root to ``m``. Row ``m * n + h`` of the sentence's matrix holds the arc
    ``h -> m`` and row ``m * n + m`` the root arc ``ROOT -> m`` (modifier-major
    layout: ``(X_i @ w).reshape(n, n)[m, h]`` is the score of ``h -> m`` and its
    diagonal holds the root scores).

    The templates are the first-order ones of McDonald, Crammer and Pereira
    (2005), trimmed. With ``hw``/``hp`` the head word and part of speech (tag),
    ``mw``/``mp`` the modifier's, and ``x-1``/``x+1`` the tags left and right of
    a word:

    - unigram: ``hw``, ``hp``, ``hw+hp``, ``mw``, ``mp``, ``mw+mp``;
    - bigram: ``hw+hp+mw+mp``, ``hp+mw+mp``, ``hw+mw+mp``, ``hw+hp+mp``,
      ``hw+hp+mw``, ``hw+mw``, ``hp+mp``;
    - in-between: ``hp+bp+mp`` for each distinct tag ``bp`` strictly between
      the head and the modifier;
    - surrounding: ``hp+hp+1+mp-1+mp``, ``hp-1+hp+mp-1+mp``,
      ``hp+hp+1+mp+mp+1``, ``hp-1+hp+mp+mp+1``.

    Each is emitted alone and conjoined with the direction (head left of the
    modifier, right of it, or root) and the distance bucket (1, 2, 3, 4, 5,
    6-10, more than 10 words); every arc also has a bias feature. An arc thus
    has ``35 + 2 * n_between`` features, ``n_between`` being the number of
    distinct tags between its ends (fewer in the rare case that two of them
    hash to the same column).

    Features are computed on the sentence ``<root> w_1 ... w_n`` (the root is
    at position 0, before the first word, with word and tag ``"<root>"``):
    the root arc to ``m`` has distance ``m + 1``, the words before ``m`` in
    between, and the tag left of the first word is ``"<root>"``. Positions
    outside the sentence have tag ``"<s>"`` (left) or ``"</s>"`` (right).
    Words are lowercased, and words seen fewer than ``min_word_count`` times in
    fit become ``"<unk>"``; tags are kept as they are (tags unseen in fit
    become ``"<unk>"``).

    Features are hashed, so there are no feature names
    (``get_feature_names_out`` is not provided). Template ``t`` (its index in
    ``ARC_TEMPLATES``) with value ids ``v_1, ..., v_k`` (ids in
    :attr:`vocabulary_` and :attr:`pos_vocabulary_`) is hashed as
    ``h = f((t + 1) * G)``, then ``h = f(h * G ^ v_i)`` for each value, where
    ``f`` is the SplitMix64 finalizer and ``G = 0x9E3779B97F4A7C15``
    (arithmetic modulo ``2**64``). The conjunction with direction ``d``
    (0 head left of the modifier, 1 right of it, 2 root) and distance bucket
    ``b`` (0 to 6) is ``f(h * G ^ (8 * d + b))``. The column is
    ``h % n_features``. The output is therefore the same across runs and
    platforms for a given vocabulary.

    Parameters
    ----------
    min_word_count : int, default=2
        Words (lowercased) seen fewer times than this in fit are unknown.
    n_features : int, default=2**22
        Number of columns: features are hashed modulo ``n_features``.
    dtype : floating dtype, default=np.float64
        Type of the output values (all ones).

    Attributes
    ----------
    vocabulary_ : dict of {str: int}
        Id of each known (lowercased) word, from 2 in sorted order; ids 0 and 1,
        not in the dict, stand for ``"<unk>"`` and ``"<root>"``.
    pos_vocabulary_ : dict of {str: int}
        Id of each tag seen in fit, from 4 in sorted order; ids 0 to 3, not in
        the dict, stand for ``"<unk>"``, ``"<root>"``, ``"<s>"`` and ``"</s>"``.
    n_features_out_ : int
        Number of columns of the output, ``n_features``.

    Notes
    -----
    The output is large: a sentence of ``n`` words has ``n * n`` arcs of
    about 46 features each on UD English EWT (its training set: 5.27 million
    arcs, 245 million nonzeros, 2.8 GB in float64 CSR). Use ``dtype=np.float32``
    to store 8 instead of 12 bytes per nonzero, :meth:`transform_stacked`
    to avoid the per-sentence copies of :meth:`transform`, and
    :meth:`transform_batch` for 4 bytes per nonzero (no values, which are all
    1.0: 0.98 GB on EWT), a form the tree parsers train on directly. The
    kernels run in parallel over sentences.

    See Also
    --------
    skstruct.datasets.read_conllu : Reads sentences in the input format.

    References
    ----------
    R. McDonald, K. Crammer and F. Pereira, "Online Large-Margin Training of
    Dependency Parsers", ACL 2005.

    Examples
    --------
    >>> from skstruct.preprocessing import ArcVectorizer
    >>> X = [(["The", "dog", "barks"], ["DET", "NOUN", "VERB"]),
    ...      (["Dogs", "bark"], ["NOUN", "VERB"])]
    >>> vec = ArcVectorizer(min_word_count=1, n_features=2**18)
    >>> Xt = vec.fit_transform(X)
    >>> [x.shape for x in Xt]
    [(9, 262144), (4, 262144)]

    Row ``m * 3 + h`` is the arc ``h -> m``; arcs with words in between have
    two more features per distinct tag in between (the root is before the
    first word):

    >>> Xt[0].getnnz(axis=1).reshape(3, 3).tolist()
    [[35, 35, 37], [35, 37, 35], [37, 35, 39]]
    >>> vec.vocabulary_
    {'bark': 2, 'barks': 3, 'dog': 4, 'dogs': 5, 'the': 6}
    >>> stacked, offsets = vec.transform_stacked(X)
    >>> stacked.shape, offsets.tolist()
    ((13, 262144), [0, 3, 5])
    """

    _parameter_constraints: dict = {
        "min_word_count": [Interval(Integral, 1, None, closed="left")],
        "n_features": [Interval(Integral, 1, np.iinfo(np.int32).max, closed="both")],
        "dtype": "no_validation",  # validation delegated to numpy
    }

    def __init__(self, *, min_word_count=2, n_features=2**22, dtype=np.float64):
        self.min_word_count = min_word_count
        self.n_features = n_features
        self.dtype = dtype

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Learn the word and tag vocabularies.

        Parameters
        ----------
        X : list of n_sentences dict or tuple
            Each sentence a dict with ``"form"`` (words) and ``"upos"`` (tags)
            arrays, as :func:`~skstruct.datasets.read_conllu` returns, or a
            ``(words, tags)`` tuple.
        y : None
            Ignored.

        Returns
        -------
        self : ArcVectorizer
            The fitted vectorizer.
        """
        self._fit(*_sentence_columns(X))
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_transform(self, X, y=None):
        """Learn the vocabularies from X and return its arc feature matrices.

        Parameters
        ----------
        X : list of n_sentences dict or tuple
            Each sentence a dict with ``"form"`` and ``"upos"`` arrays or a
            ``(words, tags)`` tuple.
        y : None
            Ignored.

        Returns
        -------
        Xt : list of n_sentences sparse matrices of shape (n_words_i ** 2, n_features)
            The CSR arc feature matrix of each sentence, modifier-major.
        """
        words, tags, lengths = _sentence_columns(X)
        self._fit(words, tags, lengths)
        return self._transform_list(words, tags, lengths)

    def transform(self, X):
        """Arc feature matrices of sentences, one CSR matrix per sentence.

        Parameters
        ----------
        X : list of n_sentences dict or tuple
            Each sentence a dict with ``"form"`` and ``"upos"`` arrays or a
            ``(words, tags)`` tuple.

        Returns
        -------
        Xt : list of n_sentences sparse matrices of shape (n_words_i ** 2, n_features)
            The CSR matrix of each sentence, with sorted, unique column indices:
            row ``m * n_words_i + h`` holds the features of the arc ``h -> m``,
            row ``m * n_words_i + m`` those of the root arc to ``m``.
        """
        check_is_fitted(self)
        return self._transform_list(*_sentence_columns(X))

    def transform_stacked(self, X):
        """Arc features of all sentences in one CSR matrix.

        The matrices of :meth:`transform` stacked vertically, built without
        per-sentence matrices (which scipy stores in arrays of their own, a
        copy of all the features): the cheaper output for large data sets.

        Parameters
        ----------
        X : list of n_sentences dict or tuple
            Each sentence a dict with ``"form"`` and ``"upos"`` arrays or a
            ``(words, tags)`` tuple.

        Returns
        -------
        Xt : sparse matrix of shape (sum of n_words_i ** 2, n_features)
            The arc features in CSR format with sorted, unique column indices.
            Sentence ``i`` has rows ``row_offsets[i]:row_offsets[i + 1]``,
            where ``row_offsets = np.r_[0, np.cumsum(np.diff(offsets) ** 2)]``.
        offsets : ndarray of shape (n_sentences + 1,), dtype=int64
            Word offsets: sentence ``i`` has words ``offsets[i]:offsets[i + 1]``
            of the concatenated sentences.
        """
        check_is_fitted(self)
        words, tags, lengths = _sentence_columns(X)
        word_ids, tag_ids = self._ids(words, tags)
        return self._arc_matrix(word_ids, tag_ids, lengths)

    def transform_batch(self, X, values=False):
        """Arc features of all sentences as one :class:`~skstruct.utils._trees.ArcFeatureBatch`.

        The compact form for training parsers on large data: the stacked rows of
        :meth:`transform_stacked` without a ``data`` array (every value is 1.0), int32
        column indices and int64 row pointers, 4 bytes a stored entry instead of 12
        (UD English EWT's training set: 0.98 GB instead of 2.8 GB). Estimators with a
        :class:`~skstruct.decoders.TreeDecoder` take it for ``X`` and learn the same model
        as from the list :meth:`transform` returns.

        Parameters
        ----------
        X : list of n_sentences dict or tuple
            Each sentence a dict with ``"form"`` and ``"upos"`` arrays or a
            ``(words, tags)`` tuple.
        values : bool, default=False
            Also store the values (ones of ``dtype``), e.g. to scale them afterwards.

        The columns are stored in decreasing order of frequency in ``X`` (the batch's
        ``column_order``; ``indices`` are positions in it), rewritten in place: the
        weights of frequent columns (part-of-speech templates, the bias) are then packed
        together and stay in the cache while all arcs are scored.

        Returns
        -------
        ArcFeatureBatch
            ``batch[i]`` is sentence i's matrix, as ``transform(X)[i]`` (in float64).
        """
        check_is_fitted(self)
        words, tags, lengths = _sentence_columns(X)
        word_ids, tag_ids = self._ids(words, tags)
        dtype = _check_dtype(self.dtype) if values else None
        indices, indptr, data, offsets = self._arc_arrays(word_ids, tag_ids, lengths, dtype)
        order = np.argsort(-_column_counts(indices, self.n_features), kind="stable")
        rank = np.empty(self.n_features, dtype=np.int32)
        rank[order] = np.arange(self.n_features, dtype=np.int32)
        with threads_for(indices.shape[0]), dynamic_schedule():
            _to_positions(indices, rank)
        return ArcFeatureBatch(indices, indptr, offsets, self.n_features, data,
                               order.astype(np.int32))

    def _fit(self, words, tags, lengths):
        _check_dtype(self.dtype)
        if lengths.sum() == 0:
            raise ValueError("X contains no words: all sentences are empty.")
        unique, inverse = _unique_strings(words, "words")
        totals = {}
        for word, count in zip(unique, np.bincount(inverse, minlength=len(unique)).tolist()):
            key = word.lower()
            totals[key] = totals.get(key, 0) + count
        known = sorted(word for word, count in totals.items() if count >= self.min_word_count)
        self.vocabulary_ = {word: i for i, word in enumerate(known, _ROOT_ID + 1)}
        tag_set = _unique_strings(tags, "tags")[0]
        self.pos_vocabulary_ = {tag: i for i, tag in enumerate(tag_set, _END_ID + 1)}
        self.n_features_out_ = self.n_features

    def _ids(self, words, tags):
        """Word and tag ids of every word, looked up once per distinct string."""
        unique, inverse = _unique_strings(words, "words")
        get = self.vocabulary_.get
        word_ids = np.array([get(word.lower(), _UNK_ID) for word in unique], dtype=np.int64)
        unique, tag_inverse = _unique_strings(tags, "tags")
        get = self.pos_vocabulary_.get
        tag_ids = np.array([get(tag, _UNK_ID) for tag in unique], dtype=np.int64)
        return word_ids[inverse], tag_ids[tag_inverse]

    def _transform_list(self, words, tags, lengths):
        """Per-sentence matrices, built a batch of sentences at a time.

        scipy copies a matrix built on a slice of much larger arrays, so a batch's
        stacked matrix lives only until its sentences are cut out of it.
        """
        word_ids, tag_ids = self._ids(words, tags)
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        rows = np.cumsum(lengths**2)
        blocks, first = [], 0
        while first < len(lengths):
            done = rows[first - 1] if first else 0
            last = max(first + 1, int(np.searchsorted(rows, done + _BATCH_ROWS, side="right")))
            lo, hi = offsets[first], offsets[last]
            matrix, batch_offsets = self._arc_matrix(
                word_ids[lo:hi], tag_ids[lo:hi], lengths[first:last]
            )
            blocks.extend(_split_sentences(matrix, batch_offsets))
            first = last
        return blocks

    def _arc_matrix(self, word_ids, tag_ids, lengths):
        """Stacked CSR arc features of sentences given by word and tag ids."""
        dtype = _check_dtype(self.dtype)
        indices, indptr, data, offsets = self._arc_arrays(word_ids, tag_ids, lengths, dtype)
        n_rows = indptr.shape[0] - 1
        if n_rows == 0:
            return sp.csr_matrix((0, self.n_features), dtype=dtype), offsets
        index_dtype = np.int32 if indptr[-1] <= _MAX_INT32_NNZ else np.int64
        matrix = sp.csr_matrix(
            (data, indices.astype(index_dtype, copy=False),
             indptr.astype(index_dtype, copy=False)),
            shape=(n_rows, self.n_features))
        matrix.has_sorted_indices = True
        matrix.has_canonical_format = True
        return matrix, offsets

    def _arc_arrays(self, word_ids, tag_ids, lengths, dtype):
        """CSR arrays of the stacked arc features: ``indices`` (int32, sorted and unique
        in every row), ``indptr`` (int64), ``data`` (ones of ``dtype``, or None when
        ``dtype`` is None) and the word offsets."""
        n_features = self.n_features
        offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        row_offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths**2, out=row_offsets[1:])
        n_rows = int(row_offsets[-1])
        if n_rows == 0:
            return (np.zeros(0, dtype=np.int32), np.zeros(1, dtype=np.int64),
                    None if dtype is None else np.zeros(0, dtype=dtype), offsets)
        n_tags = len(self.pos_vocabulary_) + _END_ID + 1
        counts = np.empty(n_rows, dtype=np.int64)
        bounds = _sentence_chunks(row_offsets)
        with threads_for(_WORK_PER_ARC * n_rows), dynamic_schedule():
            _count_features(tag_ids, offsets, row_offsets, n_tags, counts, bounds)
        indptr = np.empty(n_rows + 1, dtype=np.int64)
        indptr[0] = 0
        np.cumsum(counts, out=indptr[1:])
        nnz = int(indptr[-1])
        indices = np.empty(nnz, dtype=np.int32)  # columns < n_features <= int32 max
        data = np.empty(nnz if dtype is not None else 0, dtype=dtype or np.float64)
        mask = n_features - 1 if n_features & (n_features - 1) == 0 else 0
        with threads_for(_WORK_PER_ARC * n_rows), dynamic_schedule():
            _fill_features(
                word_ids, tag_ids, offsets, row_offsets, n_tags, indptr, indices, data, counts,
                np.uint64(n_features), np.uint64(mask), bounds,
            )
        if counts.sum() < nnz:  # some arcs had two features hashed to the same column
            nnz = _compact(indptr, indices, counts)
            indices = indices[:nnz]
            data = data[:nnz] if dtype is not None else data
        return indices, indptr, (data if dtype is not None else None), offsets

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        return tags


def _split_sentences(stacked, offsets):
    """Cut a stacked arc matrix into one CSR matrix per sentence."""
    bounds = np.zeros(len(offsets), dtype=np.int64)
    np.cumsum(np.diff(offsets) ** 2, out=bounds[1:])
    data, indices, indptr = stacked.data, stacked.indices, stacked.indptr
    n_features = stacked.shape[1]
    blocks = []
    for start, stop in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        lo, hi = int(indptr[start]), int(indptr[stop])
        block = sp.csr_matrix(
            (data[lo:hi], indices[lo:hi], indptr[start : stop + 1] - lo),
            shape=(stop - start, n_features),
        )
        block.has_sorted_indices = True
        block.has_canonical_format = True
        blocks.append(block)
    return blocks
