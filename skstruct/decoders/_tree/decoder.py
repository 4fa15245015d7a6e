"""Arc-factored dependency trees: score and part containers and the tree decoder."""

import functools
import itertools

import numpy as np

from ...losses._base import check_task_loss_values
from ...utils._blocks import cumulative, gather_ranges, normalize_indices
from ...utils._parallel import threads_for
from ...utils._trees import _sentences_with_cycles
from . import kernels
from .._core.decoder import Decoder
from .._core.checks import (
    _trusted,
    check_encoded_outputs,
    check_feasible,
    check_k,
    check_offsets,
    check_part_scores,
    check_score_array,
    keeps_operations,
    no_exact_loss_augmented_map,
)
from .._core.sampling import (
    check_n_draws,
    check_neighbour_entries,
    check_neighbourhood_size,
    check_random_state,
    example_seeds,
)
from .._core.unary import BlockParts

__all__ = [
    "TreeScores",
    "TreeParts",
    "TreeDecoder",
    "tree_parts",
    "heads_to_states",
    "states_to_heads",
    "enumerate_trees",
]


def _check_offsets(offsets, owner="TreeScores"):
    """Validate token offsets (1-D integers from 0, strictly increasing); return int64."""
    return check_offsets(offsets, owner=owner, example="sentence")


def _unary_offsets(offsets):
    """Cumulative n_i² from 0: where every sentence's arc-score block starts."""
    return cumulative(np.diff(offsets) ** 2)


def _token_layout(offsets):
    """Per-token sentence index, index within the sentence, and sentence length."""
    lengths = np.diff(offsets)
    sentence = np.repeat(np.arange(lengths.shape[0], dtype=np.int64), lengths)
    local = np.arange(offsets[-1], dtype=np.int64) - offsets[sentence]
    return sentence, local, lengths[sentence]


def _take(unary, offsets, indices):
    indices = normalize_indices(indices, offsets.shape[0] - 1)
    lengths = np.diff(offsets)[indices]
    positions = gather_ranges(_unary_offsets(offsets)[indices], lengths**2)
    return unary[positions], cumulative(lengths)


def _check_states(y, offsets, name="y"):
    """Validate stacked encoded trees (one state per token: the head's index within the
    sentence, or the token's own index for the root); return y as int64 and the flat arc
    positions."""
    sentence, local, length = _token_layout(offsets)
    y = check_encoded_outputs(
        y, offsets, length - 1, name=name, example="sentence", unit="token",
        expected="a head index {low} .. {high} (the token's own index for the root)",
    )
    return y, _arc_positions(y, offsets)


def _check_trees(y, offsets, name="y"):
    """Validate stacked encoded trees as :func:`_check_states` does, and that the heads of
    every sentence form a tree (no cycle); return y as int64 and the flat arc positions."""
    y, positions = _check_states(y, offsets, name)
    _, local, _ = _token_layout(offsets)
    cyclic = _sentences_with_cycles(np.where(y == local, 0, y + 1), offsets)
    if cyclic.size:
        raise ValueError(
            f"{name} holds {cyclic.size} head array(s) that are not trees (the first is "
            f"sentence {cyclic[0]}): their heads form a cycle, so some words never reach "
            "the root."
        )
    return y, positions


def _arc_positions(y, offsets):
    """Flat positions in the arc scores of the arcs of checked encoded trees ``y``."""
    sentence, local, length = _token_layout(offsets)
    return _unary_offsets(offsets)[sentence] + local * length + y


def heads_to_states(heads, offsets):
    """Encode CoNLL heads as states.

    Parameters
    ----------
    heads : array-like of shape (n_tokens,), int
        Every token's head, stacked: 0 for the root, else the head's 1-based token id
        within the sentence.
    offsets : array-like of shape (n_sentences + 1,), int
        Token offsets of the sentences.

    Returns
    -------
    ndarray of shape (n_tokens,), int64
        The head's 0-based index within the sentence, or the token's own index when it
        attaches to the root.

    Examples
    --------
    >>> from skstruct.decoders._tree.decoder import heads_to_states
    >>> heads_to_states([2, 0, 2, 0], offsets=[0, 3, 4])
    array([1, 1, 1, 0])
    """
    offsets = _check_offsets(offsets, owner="heads_to_states")
    heads = np.asarray(heads)
    n_tokens = int(offsets[-1])
    if heads.shape != (n_tokens,):
        raise ValueError(f"heads has shape {heads.shape}; expected ({n_tokens},).")
    if heads.size and not np.issubdtype(heads.dtype, np.integer):
        raise ValueError(f"heads must hold integers; got dtype {heads.dtype}.")
    heads = heads.astype(np.int64)
    sentence, local, length = _token_layout(offsets)
    bad = np.flatnonzero((heads < 0) | (heads > length))
    if bad.size:
        t = bad[0]
        raise ValueError(
            f"heads[{t}] = {heads[t]} (token {local[t] + 1} of sentence {sentence[t]}, which "
            f"has {length[t]} tokens) is out of range: expected 0 (root) .. {length[t]}."
        )
    return np.where(heads == 0, local, heads - 1)


def states_to_heads(states, offsets):
    """Decode states into CoNLL heads (0 for the root, else 1-based head ids).

    Parameters
    ----------
    states : array-like of shape (n_tokens,), int
    offsets : array-like of shape (n_sentences + 1,), int

    Returns
    -------
    ndarray of shape (n_tokens,), int64

    Examples
    --------
    >>> from skstruct.decoders._tree.decoder import states_to_heads
    >>> states_to_heads([1, 1, 1, 0], offsets=[0, 3, 4])
    array([2, 0, 2, 0])
    """
    offsets = _check_offsets(offsets, owner="states_to_heads")
    states, _ = _check_states(states, offsets, name="states")
    _, local, _ = _token_layout(offsets)
    return np.where(states == local, 0, states + 1)


class TreeScores:
    """Arc scores η of a batch of sentences, for arc-factored dependency trees.

    Sentence ``i`` has n_i tokens and an (n_i, n_i) score matrix A_i, modifier-major:
    A_i[m, h] scores token h as the head of token m (h ≠ m) and the diagonal A_i[m, m]
    scores token m attached to the root. A tree y (one head per token, no cycle) scores

    .. math:: θ_y = \\sum_m A_i[m, y_m],

    with y_m = m for a root child (the encoded states).

    Parameters
    ----------
    unary : ndarray of shape (Σ_i n_i²,)
        The row-major ravel of every sentence's matrix, stacked: sentence ``i``'s matrix is
        ``unary[unary_offsets[i]:unary_offsets[i + 1]].reshape(n_i, n_i)``. Finite: NaN
        and ±inf are rejected (a large negative score rules an arc out), so every
        sentence has a tree of finite score.
    offsets : ndarray of shape (n_sentences + 1,), int
        Token offsets: sentence ``i`` owns output entries ``offsets[i]:offsets[i + 1]``
        (at least one).

    Attributes
    ----------
    unary : ndarray of shape (Σ_i n_i²,), float64
    offsets : ndarray of shape (n_sentences + 1,), int64

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.decoders._tree.decoder import TreeScores
    >>> scores = TreeScores(np.arange(5.), offsets=[0, 1, 3])
    >>> scores.n_examples, scores.lengths, scores.unary_offsets
    (2, array([1, 2]), array([0, 1, 5]))
    >>> scores.block(1)
    array([[1., 2.],
           [3., 4.]])
    """

    def __init__(self, unary, offsets):
        unary = check_score_array(
            unary, "unary", owner="TreeScores", ndim=1,
            layout="(Σ_i n_i²,): the row-major ravel of every sentence's (n_i, n_i) "
                   "arc-score matrix, stacked",
        )
        offsets = _check_offsets(offsets)
        unary_offsets = _unary_offsets(offsets)
        if unary.shape[0] != unary_offsets[-1]:
            raise ValueError(
                f"unary has {unary.shape[0]} entries; sentences of lengths "
                f"{np.diff(offsets).tolist()[:10]}{' ...' if len(offsets) > 11 else ''} need "
                f"Σ_i n_i² = {unary_offsets[-1]}."
            )
        check_part_scores(unary, "arc", owner="TreeScores", offsets=unary_offsets,
                          example="sentence", allow_minus_inf=False)
        self.unary = unary
        self.offsets = offsets
        self._unary_offsets = unary_offsets

    @classmethod
    def from_blocks(cls, blocks):
        """Scores from a list of square (n_i, n_i) modifier-major score matrices.

        Parameters
        ----------
        blocks : sequence of array-like of shape (n_i, n_i)

        Returns
        -------
        TreeScores
        """
        blocks = [np.asarray(block, dtype=np.float64) for block in blocks]
        if not blocks:
            raise ValueError(
                "TreeScores.from_blocks: no sentences (an empty list of blocks); give one "
                "(n_i, n_i) arc-score matrix per sentence."
            )
        for i, block in enumerate(blocks):
            if block.ndim != 2 or block.shape[0] != block.shape[1]:
                raise ValueError(f"Block {i} has shape {block.shape}; expected (n_i, n_i).")
        lengths = np.array([block.shape[0] for block in blocks], dtype=np.int64)
        unary = np.concatenate([block.ravel() for block in blocks])
        return cls(unary, cumulative(lengths))

    @property
    def n_examples(self):
        """Number of sentences in the batch."""
        return self.offsets.shape[0] - 1

    @property
    def n_sentences(self):
        """Number of sentences in the batch (same as ``n_examples``)."""
        return self.n_examples

    @property
    def lengths(self):
        """Number of tokens of every sentence, shape (n_sentences,)."""
        return np.diff(self.offsets)

    @property
    def unary_offsets(self):
        """Score offsets, shape (n_sentences + 1,): cumulative n_i² from 0."""
        return self._unary_offsets

    def block(self, i):
        """The (n_i, n_i) score matrix of sentence ``i``, as a view."""
        a, b = self._unary_offsets[i], self._unary_offsets[i + 1]
        n = self.offsets[i + 1] - self.offsets[i]
        return self.unary[a:b].reshape(n, n)

    def replace(self, *, unary=None):
        """A copy with the arc scores replaced (same sentences)."""
        return type(self)(self.unary if unary is None else unary, self.offsets)

    def take(self, indices):
        """The sub-batch of the sentences ``indices``, in that order.

        Parameters
        ----------
        indices : array-like of shape (n_taken,), int, or a boolean mask

        Returns
        -------
        TreeScores
        """
        unary, offsets = _take(self.unary, self.offsets, indices)
        return _trusted(type(self), unary=unary, offsets=offsets,
                        _unary_offsets=_unary_offsets(offsets))

    def _kernel_args(self):
        return self.unary, self.offsets, self._unary_offsets

    def _check_outputs(self, y, name="y"):
        """Encoded trees ``y`` (n_tokens,) checked against the batch, as int64."""
        return _check_states(y, self.offsets, name)[0]


class TreeParts(BlockParts):
    """Part vectors of a batch of trees: arc indicators, or arc marginals.

    Laid out like :class:`TreeScores`: ``unary`` is the row-major ravel of one (n_i, n_i)
    modifier-major matrix per sentence, stacked; the indicators of a tree y hold
    a[m, h] = 1[y_m = h] (the diagonal marks root children). Arithmetic keeps the layout.

    Parameters
    ----------
    unary : ndarray of shape (Σ_i n_i²,)
    offsets : ndarray of shape (n_sentences + 1,), int64
        Token offsets.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.decoders._tree.decoder import TreeScores, tree_parts
    >>> scores = TreeScores(np.array([1., 2., 3., 4.]), offsets=[0, 2])
    >>> parts = tree_parts(np.array([1, 1]), scores.offsets)
    >>> parts.unary
    array([0., 1., 0., 1.])
    >>> parts.dot(scores)
    array([6.])
    """

    def __init__(self, unary, offsets):
        self.unary = unary
        self.offsets = offsets
        self._unary_offsets = None

    def _new(self, unary):
        return type(self)(unary, self.offsets)

    @property
    def unary_offsets(self):
        """Cumulative n_i² from 0, shape (n_sentences + 1,)."""
        if self._unary_offsets is None:
            self._unary_offsets = _unary_offsets(self.offsets)
        return self._unary_offsets

    def block(self, i):
        """The (n_i, n_i) part matrix of sentence ``i``, as a view."""
        offsets = self.unary_offsets
        n = self.offsets[i + 1] - self.offsets[i]
        return self.unary[offsets[i] : offsets[i + 1]].reshape(n, n)

    def example(self, i):
        """The parts of sentence ``i`` alone, as a view: writing to them writes here."""
        offsets = self.unary_offsets
        n = self.offsets[i + 1] - self.offsets[i]
        return type(self)(self.unary[offsets[i] : offsets[i + 1]], np.array([0, n]))

    def take(self, indices):
        """The parts of the sentences ``indices``, in that order (a copy)."""
        return type(self)(*_take(self.unary, self.offsets, indices))


def tree_parts(y, offsets):
    """Arc indicators of encoded trees.

    Parameters
    ----------
    y : ndarray of shape (n_tokens,), int
        Every token's head index within its sentence (its own index for the root),
        stacked.
    offsets : ndarray of shape (n_sentences + 1,), int
        Token offsets.

    Returns
    -------
    TreeParts
        a[m, h] = 1 when y_m = h, else 0.
    """
    offsets = _check_offsets(offsets, owner="tree_parts")
    _, positions = _check_states(y, offsets)
    unary = np.zeros(int(_unary_offsets(offsets)[-1]))
    unary[positions] = 1.0
    return TreeParts(unary, offsets)


@functools.lru_cache(maxsize=None)
def _all_trees(n, projective, single_root):
    heads = np.array(list(itertools.product(range(n), repeat=n)), dtype=np.int64)
    heads = heads.reshape(-1, n)
    # parent of every token, n for the root; the root is its own parent
    tokens = np.arange(n)
    parent = np.concatenate(
        (np.where(heads == tokens, n, heads), np.full((heads.shape[0], 1), n)), axis=1
    )
    # ancestors[t, m, a]: a is m or an ancestor of m (a = n is the root)
    ancestors = np.zeros((heads.shape[0], n + 1, n + 1), dtype=bool)
    node = np.broadcast_to(np.arange(n + 1), parent.shape).copy()
    rows = np.arange(heads.shape[0])[:, None]
    for _ in range(n + 1):
        ancestors[rows, np.arange(n + 1), node] = True
        node = np.take_along_axis(parent, node, axis=1)
    trees = ancestors[:, :n, n].all(axis=1)  # every token reaches the root: no cycle
    if single_root:
        trees &= (heads == tokens).sum(axis=1) == 1
    if projective:
        # an arc h -> m is projective when h dominates every token strictly between them
        ok = np.ones(heads.shape[0], dtype=bool)
        for h in range(n):
            for m in range(n):
                lo, hi = min(h, m), max(h, m)
                if m == h or hi - lo < 2:
                    continue
                between = ancestors[:, lo + 1 : hi, h].all(axis=1)
                ok &= (heads[:, m] != h) | between
        trees &= ok
    out = heads[trees]
    out.flags.writeable = False
    return out


def enumerate_trees(n, projective=False, single_root=False):
    """Every dependency tree of an n-token sentence, encoded, by brute force.

    Enumerates the n^n head assignments and keeps the acyclic ones (and the projective
    ones, and those with one root child, when asked).

    Parameters
    ----------
    n : int, 1 <= n <= 6
    projective : bool, default=False
        Keep only projective trees: every token between a head and its modifier descends
        from that head (the root precedes the sentence).
    single_root : bool, default=False
        Keep only trees with exactly one root child.

    Returns
    -------
    ndarray of shape (n_trees, n), int64
        One encoded tree per row: the head's index, or the token's own index for the root.
        There are (n + 1)^(n - 1) trees, n^(n - 1) with a single root child.

    Examples
    --------
    >>> from skstruct.decoders._tree.decoder import enumerate_trees
    >>> enumerate_trees(2)
    array([[0, 0],
           [0, 1],
           [1, 1]])
    >>> enumerate_trees(3).shape, enumerate_trees(3, projective=True).shape
    ((16, 3), (12, 3))
    """
    n = int(n)
    if not 1 <= n <= 6:
        raise ValueError(f"enumerate_trees takes 1 <= n <= 6 tokens; got n={n}.")
    return _all_trees(n, bool(projective), bool(single_root)).copy()


class TreeDecoder(Decoder):
    """Exact inference over arc-factored dependency trees.

    Sentence ``i`` has n tokens and arc scores A[m, h] (:class:`TreeScores`). Its outputs
    are the dependency trees rooted at a virtual root: one head per token, the root or
    another token, with no cycle. A tree y scores θ_y = Σ_m A[m, y_m], where y_m = m
    stands for the root.

    MAP is the Chu–Liu–Edmonds maximum spanning arborescence (non-projective) or Eisner's
    algorithm (projective). The log-partition and arc marginals are given by the
    matrix-tree theorem (non-projective) or the inside–outside algorithm over Eisner's
    spans (projective). Marginals are the gradient of the log-partition.

    Parameters
    ----------
    projective : bool, default=False
        Restrict the outputs to projective trees (no crossing arcs, the root at the left).
    single_root : bool, default=False
        Restrict the outputs to trees in which exactly one token attaches to the root.

    Notes
    -----
    Encoded outputs hold one state per token, stacked over the batch (``scores.offsets``):
    the head's index within the sentence, or the token's own index when it attaches to the
    root (:func:`heads_to_states` converts CoNLL heads).

    *Non-projective MAP* contracts cycles of best incoming arcs lazily (Chu & Liu 1965;
    Edmonds 1967), in O(n²) time per sentence. With ``single_root`` (the root constraint
    of most treebanks; Zmigrod, Vieira & Cotterell 2020), arcs weigh
    (−[arc from the root], score), compared lexicographically. Chu–Liu–Edmonds is exact
    over any totally ordered abelian group, and a tree's first component is minus its
    number of root children, so the result is the best tree with one root child, in a
    single run. This is the limit of penalizing every root arc by an unbounded constant,
    with no rounding from the constant.

    *Projective MAP and marginals* run Eisner's O(n³) chart over complete and incomplete
    spans; with ``single_root`` the root's incomplete spans take only the split that
    gives it one child. The outside pass differentiates the log-partition: every span's
    marginal is split among its terms by their shares of the span's sum. Inside–outside
    runs in linear space after shifting the scores by the best score into each token,
    and in log space for a sentence whose shifted partition function is so small that
    spans could underflow.

    *Non-projective marginals*: with w(h, m) = exp A[m, h] and r(m) = exp A[m, m], the
    Laplacian L[h, m] = −w(h, m), L[m, m] = r(m) + Σ_{h ≠ m} w(h, m) has
    det L = Σ_y exp θ_y (Koo, Globerson, Carreras & Collins 2007). For ``single_root``
    the sum over trees with one root child is the λ¹ coefficient of det L(λ r). L is a
    diagonally dominant M-matrix, and its determinant is computed by GTH-style elimination
    (Grassmann, Taksar & Heyman 1985), in which every update adds non-negative terms. The
    marginals are the reverse-mode derivative of that elimination. Both stay accurate
    when the distribution is peaked, for instance with scores of magnitude 1e3, where
    LU and the inverse of L cancel catastrophically. Scores are shifted per token. A
    sentence whose scores into one token spread over more than 500 is eliminated in log
    space. O(n³) time per sentence; the marginals store the elimination, O(n³ / 3)
    floats.

    Loss-augmented MAP (margin rescaling, Hamming loss) is MAP on
    :meth:`cost_augmented` scores. Every operation runs over the whole batch in one
    compiled call, one sentence per parallel iteration. Arc scores must be finite.

    References
    ----------
    Chu & Liu (1965). On the shortest arborescence of a directed graph. Scientia Sinica 14.
    Edmonds (1967). Optimum branchings. J. Res. Nat. Bur. Standards 71B.
    Eisner (1996). Three new probabilistic models for dependency parsing. COLING.
    Koo, Globerson, Carreras & Collins (2007). Structured prediction models via the
    matrix-tree theorem. EMNLP-CoNLL.
    Grassmann, Taksar & Heyman (1985). Regenerative analysis and steady state
    distributions for Markov chains. Operations Research 33(5).
    Zmigrod, Vieira & Cotterell (2020). Please mind the root: decoding arborescences for
    dependency parsing. EMNLP.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.decoders._tree.decoder import TreeDecoder, TreeScores
    >>> scores = TreeScores.from_blocks([[[0., 5., 1.],
    ...                                   [2., 0., 1.],
    ...                                   [0., 3., 0.]]])
    >>> TreeDecoder().map(scores, return_score=True)
    (array([1, 1, 1]), array([8.]))
    >>> TreeDecoder(projective=True).map(scores)
    array([1, 1, 1])
    >>> log_z, marginals = TreeDecoder().marginals(scores)
    >>> marginals.block(0).sum(axis=1)  # every token has one head
    array([1., 1., 1.])
    """

    output_kind = "tree"
    _capabilities = frozenset({"map", "marginals", "loss_augmented_map", "parts",
                               "sample_uniform", "neighbours"})
    score_types = TreeScores
    _example_name = "sentence"
    _parameter_constraints: dict = {"projective": ["boolean"], "single_root": ["boolean"]}

    def __init__(self, projective=False, single_root=False):
        self.projective = projective
        self.single_root = single_root

    @property
    def capabilities(self):
        """The operations this decoder answers: every one of the family, except
        ``"sample_uniform"`` when ``projective`` (not implemented for projective
        trees)."""
        if self.projective:
            return self._capabilities - {"sample_uniform"}
        return self._capabilities

    def sample_uniform(self, scores, n_draws, random_state=None):
        """Independent uniform draws from the valid trees of every sentence.

        Wilson's algorithm (loop-erased random walks towards the root) on the graph of
        the arcs of finite score gives a uniform spanning arborescence rooted at the
        virtual root. With ``single_root`` the root child r is drawn first with
        probability proportional to the number of trees in which it is the root child
        (the matrix-tree theorem over the token arcs, computed only when some token arc
        is forbidden; otherwise uniform among the tokens whose root arc is allowed),
        then the rest of the tree by Wilson's algorithm rooted at r. Expected time
        O(n²) per sentence for the choices, then the mean hitting time of the walks per
        draw (O(n) on the complete graph). :class:`TreeScores` holds finite scores only,
        so every tree is valid and no sentence is infeasible; the kernels also honour
        -inf arcs.

        Parameters
        ----------
        scores : TreeScores
        n_draws : int >= 1
        random_state : None, int, numpy.random.Generator or numpy.random.RandomState
            Turned into a Generator by ``numpy.random.default_rng``; it draws one 64-bit
            seed per sentence before the compiled kernel runs (each sentence has its own
            splitmix64 stream), so the draws do not depend on the number of threads.

        Returns
        -------
        paths : ndarray of shape (n_tokens, n_draws), int64
            Column d stacks the d-th draw of every sentence (encoded trees).

        Raises
        ------
        NotImplementedError
            With ``projective=True``: uniform sampling over projective trees is not
            implemented.
        InfeasibleOutputError
            When a sentence has no valid tree.

        Examples
        --------
        >>> import numpy as np
        >>> from skstruct.decoders._tree.decoder import TreeDecoder, TreeScores
        >>> scores = TreeScores.from_blocks([np.zeros((3, 3))])
        >>> paths = TreeDecoder().sample_uniform(scores, 1600, random_state=0)
        >>> len(np.unique(paths.T, axis=0))  # (n + 1)^(n - 1) trees
        16
        """
        scores = self._check_scores(scores)
        if self.projective:
            raise NotImplementedError(
                "TreeDecoder(projective=True) does not implement 'sample_uniform': uniform "
                "sampling over projective trees is not implemented (its capabilities are "
                f"{sorted(self.capabilities)}); use projective=False."
            )
        n_draws = check_n_draws(n_draws)
        seeds = example_seeds(check_random_state(random_state), scores.n_examples)
        lengths = scores.lengths.astype(np.float64)
        with threads_for(np.sum(lengths**2) + n_draws * np.sum(lengths) * 4):
            paths, feasible = kernels.sample_trees(*scores._kernel_args(),
                                                   bool(self.single_root), n_draws, seeds)
        check_feasible(np.where(feasible, 0.0, -np.inf), "sentence")
        return paths

    def neighbours(self, scores, y, k=1):
        """The valid trees at Hamming distance 1 .. k from the trees ``y``.

        A neighbour changes the heads of 1 .. k tokens (n (n − 1) candidates for k = 1,
        Σ_{j ≤ k} C(n, j) (n − 1)^j in all: 3.6 thousand for n = 10 and k = 2, 2.9
        million for n = 50, k = 2) and is kept when it is a tree under the decoder's
        options (no cycle, one root child with ``single_root``, no crossing arcs with
        ``projective``) and its arcs have finite scores. Order: distance 1 first; within
        one distance the sets of tokens in lexicographic order, then their new heads in
        lexicographic order (each token's heads other than its own, increasing, the
        token's own index standing for the root). O(n) per candidate, O(n²) when
        projective; a sentence with more than
        :data:`~skstruct.decoders._core.sampling.MAX_NEIGHBOUR_CANDIDATES` candidates raises a
        ``ValueError`` before any work.

        Parameters
        ----------
        scores : TreeScores
        y : ndarray of shape (n_tokens,), int
            Encoded trees, stacked (checked like ``y_true``; they need not be trees).
        k : int >= 1, default=1

        Returns
        -------
        paths : ndarray of shape (n_tokens, max(counts)), int64
            Column r stacks the r-th neighbour of every sentence; -1 past its count.
        counts : ndarray of shape (n_sentences,), int64

        Examples
        --------
        >>> import numpy as np
        >>> from skstruct.decoders._tree.decoder import TreeDecoder, TreeScores
        >>> scores = TreeScores.from_blocks([np.zeros((2, 2))])
        >>> paths, counts = TreeDecoder().neighbours(scores, np.array([0, 0]), k=2)
        >>> paths.T, counts  # [1, 0] has a cycle
        (array([[0, 1],
               [1, 1]]), array([2]))
        """
        scores = self._check_scores(scores)
        k = check_k(k)
        y = self._check_y_true(scores, y)
        lengths = scores.lengths
        check_neighbourhood_size(lengths, lengths, k, "sentence")
        counts = np.zeros(scores.n_examples, dtype=np.int64)
        args = scores._kernel_args() + (y, k, bool(self.projective),
                                        bool(self.single_root))
        work = np.sum(lengths.astype(np.float64) ** (k + 2))
        with threads_for(work):
            kernels.neighbours(*args, np.empty((0, 0), dtype=np.int64), counts, False)
            check_neighbour_entries(y.shape[0], counts)
            width = int(counts.max()) if counts.size else 0
            paths = np.full((y.shape[0], width), -1, dtype=np.int64)
            kernels.neighbours(*args, paths, counts, True)
        return paths, counts

    def map(self, scores, *, return_score=False):
        """The highest-scoring tree of every sentence.

        Parameters
        ----------
        scores : TreeScores
        return_score : bool, default=False

        Returns
        -------
        y : ndarray of shape (n_tokens,), int64
            Encoded trees, stacked.
        best : ndarray of shape (n_sentences,)
            Their scores, when ``return_score`` is True.
        """
        scores = self._check_scores(scores)
        lengths = scores.lengths.astype(np.float64)
        single_root = bool(self.single_root)
        if self.projective:
            with threads_for(np.sum((lengths + 1) ** 3)):
                y, best = kernels.eisner(*scores._kernel_args(), single_root)
        else:
            with threads_for(20 * np.sum(lengths**2)):
                y, best = kernels.chu_liu_edmonds(*scores._kernel_args(), single_root)
        return (y, best) if return_score else y

    def _inside(self, scores, with_marginals):
        scores = self._check_scores(scores)
        lengths = scores.lengths.astype(np.float64)
        single_root = bool(self.single_root)
        if self.projective:
            with threads_for(10 * np.sum((lengths + 1) ** 3)):
                return kernels.eisner_inside_outside(
                    *scores._kernel_args(), single_root, with_marginals, False
                )
        with threads_for(2 * np.sum(lengths**3)):
            return kernels.matrix_tree(
                *scores._kernel_args(), single_root, with_marginals, False
            )

    def log_partition(self, scores):
        """log Σ_y exp θ_y of every sentence, over the trees allowed.

        Returns
        -------
        ndarray of shape (n_sentences,)
        """
        return self._inside(scores, False)[0]

    def marginals(self, scores):
        """Log-partition and arc marginals.

        Returns
        -------
        log_z : ndarray of shape (n_sentences,)
        marginals : TreeParts
            p(y_m = h) for every arc, laid out like the scores (the diagonal holds the
            probabilities of root attachment); every token's row sums to one. They are
            the gradient of ``log_z`` with respect to the arc scores.
        """
        log_z, marg = self._inside(scores, True)
        return log_z, TreeParts(marg, scores.offsets)

    def sparsemap(self, scores, *, max_iter=100, tol=1e-9, init=None, **options):
        """SparseMAP over trees, with the same result and options as
        :meth:`Decoder.sparsemap`.

        The non-projective active set runs every sentence's major and minor iterations,
        Chu–Liu–Edmonds included, in one compiled parallel call
        (:mod:`skstruct.decoders._tree.sparsemap`); the projective decoder, the
        Frank–Wolfe methods and a subclass that redefines ``map`` or ``parts`` get the
        generic active set.
        """
        method = options.get("method", "active_set")
        if (self.projective or method != "active_set"
                or not keeps_operations(self, TreeDecoder, ("map", "parts",
                                                            "score_outputs"))):
            return super().sparsemap(scores, max_iter=max_iter, tol=tol, init=init,
                                     **options)
        from .._sparsemap.result import check_init, check_options, check_scores
        from .sparsemap import tree_active_set_sparsemap

        max_iter, max_inner = check_options(method, max_iter, tol,
                                            options.get("max_inner", 200))
        unknown = set(options) - {"method", "max_inner"}
        if unknown:
            raise TypeError(f"sparsemap() got unexpected options {sorted(unknown)}.")
        scores = self._check_scores(scores)
        flat = check_scores(scores)
        check_init(init, scores)
        return tree_active_set_sparsemap(self, scores, flat, max_iter, tol, max_inner, init,
                                         TreeParts)

    def check_outputs(self, y, offsets):
        """Raise a clear error when gold trees ``y`` are not outputs of this decoder.

        Every sentence needs one state per token in range and heads that form a tree (no
        cycle); a projective decoder cannot produce a tree with crossing arcs, and a
        single-root decoder a tree with several words on the root. Training on such gold
        outputs would leave the loss unbounded below (the CRF's partition function, for
        one, would not include the gold tree).

        Parameters
        ----------
        y : ndarray of shape (n_tokens,)
            Encoded trees (states), stacked.
        offsets : ndarray of shape (n_sentences + 1,)
            Token offsets.
        """
        self._check_params()
        offsets = _check_offsets(offsets, owner="TreeDecoder.check_outputs")
        y, _ = _check_trees(y, offsets)
        sentence, local, _ = _token_layout(offsets)
        if self.single_root:
            roots = np.bincount(sentence[y == local], minlength=offsets.shape[0] - 1)
            bad = np.flatnonzero(roots != 1)
            if bad.size:
                raise ValueError(
                    f"{bad.size} gold tree(s) (the first is y[{bad[0]}]) attach "
                    f"{roots[bad[0]]} words to the root, but the decoder has "
                    "single_root=True; use single_root=False or drop those sentences."
                )
        if self.projective:
            bad = np.flatnonzero(kernels.non_projective_sentences(y, offsets))
            if bad.size:
                raise ValueError(
                    f"{bad.size} gold tree(s) (the first is y[{bad[0]}]) are not "
                    "projective (they have crossing arcs), but the decoder has "
                    "projective=True; use projective=False or drop those sentences."
                )

    def parts(self, scores, y):
        """Arc indicators of the encoded trees ``y`` (n_tokens,), as :class:`TreeParts`."""
        return tree_parts(y, self._check_scores(scores).offsets)

    def score_outputs(self, scores, y):
        """θ_y = Σ_m A[m, y_m] of every sentence, shape (n_sentences,).

        Raises
        ------
        ValueError
            When the heads of a sentence in ``y`` form a cycle, as :meth:`check_outputs`.
        """
        scores = self._check_scores(scores)
        _, positions = _check_trees(y, scores.offsets)
        if scores.n_examples == 0:
            return np.zeros(0)
        return np.add.reduceat(scores.unary[positions], scores.offsets[:-1])

    def cost_augmented(self, scores, y_true, task_loss):
        """Scores η + c whose tree scores are θ_y + Δ(y_true, y), exactly.

        For a loss that counts the tokens with a wrong head (root included) with weights
        w (:meth:`~skstruct.losses.TaskLoss.mismatch_weights`: the Hamming loss, w = 1, or
        1 / n with ``normalize=True``), Δ(y_true, y) = Σ_m w_m 1[y_m ≠ y_true_m] and the
        cost of arc (m, h) is c[m, h] = w_m 1[h ≠ y_true_m]. Then ⟨c, a_y⟩ = Δ(y_true, y)
        for every tree y, with no per-sentence constant.

        Another loss that decomposes over parts gives its costs with
        ``unary_costs(y_true, offsets, n_states)``, called with ``n_states`` the length
        of the longest sentence: the cost of arc (m, h) is its entry [m, h].

        Parameters
        ----------
        scores : TreeScores
        y_true : ndarray of shape (n_tokens,), int
            Encoded gold trees, stacked.
        task_loss : HammingLoss or TaskLoss with ``unary_costs``, or a loss name
            HammingLoss without ``class_costs`` (states are head positions, not
            classes).

        Returns
        -------
        TreeScores
        """
        return super().cost_augmented(scores, y_true, task_loss)

    def _cost_augmented(self, scores, y_true, task_loss):
        weights = task_loss.mismatch_weights(scores.offsets)
        if weights is not None:
            check_task_loss_values(weights, task_loss, "mismatch_weights")
            lengths = scores.lengths
            costs = np.repeat(np.asarray(weights, dtype=np.float64),
                              np.repeat(lengths, lengths))
            costs[_arc_positions(y_true, scores.offsets)] = 0.0
            return scores.replace(unary=scores.unary + costs)
        if task_loss.n_classes is not None:
            raise ValueError(
                f"{task_loss!r} is defined on {task_loss.n_classes} classes (class costs "
                "or positive classes), which trees do not have: states are head "
                "positions, not classes shared across sentences. Use a loss without "
                "classes (HammingLoss(class_costs=None))."
            )
        if task_loss.decomposition != "parts":
            raise self._unsupported_loss(task_loss, "margin")
        lengths = scores.lengths
        width = int(lengths.max()) if lengths.size else 0
        costs = np.asarray(task_loss.unary_costs(y_true, scores.offsets, width),
                           dtype=np.float64)
        if costs.shape != (y_true.shape[0], width):
            raise ValueError(
                f"{task_loss!r}.unary_costs returned shape {costs.shape}; expected "
                f"({y_true.shape[0]}, {width}), one cost per token and head position."
            )
        check_task_loss_values(costs, task_loss, "unary_costs")
        # the arcs of token m are its sentence's row m: stacked token by token, in order
        heads = np.arange(width) < np.repeat(lengths, lengths)[:, None]
        return scores.replace(unary=scores.unary + costs[heads])

    def _unsupported_loss(self, task_loss, rescaling):
        if rescaling != "margin":
            return no_exact_loss_augmented_map(
                self, task_loss, rescaling,
                "HammingLoss only among the built-in losses, and user losses with "
                "per-token costs, under rescaling='margin' only",
                "Use rescaling='margin'.",
            )
        return no_exact_loss_augmented_map(
            self, task_loss, "margin",
            "HammingLoss only among the built-in losses (a token with the wrong head "
            "costs 1), and user losses with per-token costs, under margin rescaling",
            f"For a loss that is a sum over tokens, implement "
            f"{type(task_loss).__name__}.unary_costs(y_true, offsets, n_states) (called "
            "with n_states the longest sentence's length: entry [m, h] is the cost of "
            "head h for token m, shape (n_tokens, n_states)).",
        )

    def loss_augmented_map(self, scores, y_true, task_loss, rescaling="margin"):
        """argmax_y θ_y + Δ(y_true, y) for every sentence, exactly (Hamming loss).

        MAP on :meth:`cost_augmented` scores.

        Parameters
        ----------
        scores : TreeScores
        y_true : ndarray of shape (n_tokens,), int
            Encoded gold trees, stacked.
        task_loss : HammingLoss or TaskLoss with ``unary_costs``, or a loss name
            HammingLoss without ``class_costs``; ``normalize`` allowed. See
            :meth:`cost_augmented`.
        rescaling : {"margin"}, default="margin"
            Slack rescaling has no exact solver here.

        Returns
        -------
        ndarray of shape (n_tokens,), int64
        """
        return super().loss_augmented_map(scores, y_true, task_loss, rescaling)

    def compiled_oracle(self, task_loss, rescaling, y, y_offsets, n_unary=None):
        """The compiled per-sentence oracle of trees (see
        :meth:`Decoder.compiled_oracle`)."""
        if not keeps_operations(self, TreeDecoder):
            return None
        from .oracle import compiled_tree_oracle

        return compiled_tree_oracle(self, task_loss, rescaling, y, y_offsets)
