"""Directed acyclic graphs with bounded in-degree: score and part containers and the
decoder (inference by enumeration, for graphs of at most six nodes)."""

import functools
from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import Interval

from ...losses._base import check_task_loss_values
from ...utils._blocks import cumulative, gather_ranges, normalize_indices
from ...utils._parallel import threads_for
from . import kernels
from .._core.decoder import Decoder
from .._core.checks import (
    _trusted,
    check_encoded_outputs,
    check_feasible,
    check_k,
    check_part_scores,
    check_score_array,
    no_exact_loss_augmented_map,
)
from .._core.sampling import check_neighbour_entries, check_random_state, example_seeds
from .._core.unary import BlockParts

__all__ = ["DAGScores", "DAGParts", "DAGDecoder", "enumerate_dags", "MAX_DAG_NODES"]

#: Largest number of nodes :class:`DAGDecoder` enumerates: 695,902 DAGs of 6 nodes with at
#: most 2 parents, 3,781,503 without a bound (7 nodes: 50.7 million with at most 2).
MAX_DAG_NODES = 6


def _check_n_nodes(n_nodes, owner="DAGScores"):
    array = np.asarray(n_nodes)
    if array.ndim != 1 or (array.size and not np.issubdtype(array.dtype, np.integer)):
        raise ValueError(
            f"{owner}: n_nodes must be a 1-D array of integers (the number of nodes of "
            f"every example); got shape {array.shape} and dtype {array.dtype}."
        )
    array = array.astype(np.int64)
    if array.size and array.min() < 1:
        i = int(np.argmax(array < 1))
        raise ValueError(f"{owner}: every example needs a node; n_nodes[{i}] = {array[i]}.")
    return array


class DAGScores:
    """Arc scores η of a batch of directed graphs, for DAGs with bounded in-degree.

    Example ``i`` has n_i nodes and an (n_i, n_i) score matrix A_i, parent-major:
    A_i[p, c] scores the arc p -> c (p is a parent of c); the diagonal is never used. A
    DAG y with 0/1 adjacency matrix a (a[p, c] = 1 for the arc p -> c) scores

    .. math:: θ_y = \\sum_{p \\ne c} A_i[p, c] a[p, c].

    Parameters
    ----------
    unary : ndarray of shape (Σ_i n_i²,)
        The row-major ravel of every example's matrix, stacked. Real numbers or -inf,
        which forbids an arc (the empty graph always remains); NaN and +inf are rejected.
    n_nodes : array-like of shape (n_examples,), int >= 1

    Attributes
    ----------
    unary : ndarray of shape (Σ_i n_i²,), float64
    n_nodes : ndarray of shape (n_examples,), int64
    offsets : ndarray of shape (n_examples + 1,), int64
        Cumulative n_i² from 0: example ``i`` owns ``unary[offsets[i]:offsets[i + 1]]``
        and the same entries of encoded outputs.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.decoders import DAGScores
    >>> scores = DAGScores.from_blocks([np.zeros((2, 2)), np.ones((3, 3))])
    >>> scores.n_examples, scores.n_nodes, scores.offsets
    (2, array([2, 3]), array([ 0,  4, 13]))
    """

    def __init__(self, unary, n_nodes):
        unary = check_score_array(
            unary, "unary", owner="DAGScores", ndim=1,
            layout="(Σ_i n_i²,): the row-major ravel of every example's (n_i, n_i) "
                   "arc-score matrix [parent, child], stacked",
        )
        n_nodes = _check_n_nodes(n_nodes)
        offsets = cumulative(n_nodes**2)
        if unary.shape[0] != offsets[-1]:
            raise ValueError(
                f"DAGScores: unary has {unary.shape[0]} entries; examples of "
                f"{n_nodes.tolist()[:10]}{' ...' if n_nodes.size > 10 else ''} nodes need "
                f"Σ_i n_i² = {offsets[-1]}."
            )
        check_part_scores(unary, "arc", owner="DAGScores", offsets=offsets)
        self.unary = unary
        self.n_nodes = n_nodes
        self.offsets = offsets

    @classmethod
    def from_blocks(cls, blocks):
        """Scores from a sequence of square (n_i, n_i) parent-major score matrices (or
        one (n_examples, n, n) array)."""
        blocks = [np.asarray(block, dtype=np.float64) for block in blocks]
        for i, block in enumerate(blocks):
            if block.ndim != 2 or block.shape[0] != block.shape[1]:
                raise ValueError(
                    f"DAGScores.from_blocks: block {i} has shape {block.shape}; expected "
                    "(n_i, n_i)."
                )
        unary = np.concatenate([b.ravel() for b in blocks]) if blocks else np.zeros(0)
        return cls(unary, np.array([b.shape[0] for b in blocks], dtype=np.int64))

    @property
    def n_examples(self):
        """Number of examples in the batch."""
        return self.n_nodes.shape[0]

    @property
    def unary_offsets(self):
        """Same as ``offsets``."""
        return self.offsets

    def block(self, i):
        """The (n_i, n_i) score matrix of example ``i``, as a view."""
        n = self.n_nodes[i]
        return self.unary[self.offsets[i] : self.offsets[i + 1]].reshape(n, n)

    def replace(self, *, unary=None):
        """A copy with the arc scores replaced (same examples)."""
        return type(self)(self.unary if unary is None else unary, self.n_nodes)

    def take(self, indices):
        """The sub-batch of the examples ``indices``, in that order."""
        indices = normalize_indices(indices, self.n_examples)
        n_nodes = self.n_nodes[indices]
        unary = self.unary[gather_ranges(self.offsets[indices], n_nodes**2)]
        return _trusted(type(self), unary=unary, n_nodes=n_nodes,
                        offsets=cumulative(n_nodes**2))

    def _check_outputs(self, y, name="y"):
        """Encoded graphs ``y`` (Σ_i n_i²,) checked against the batch (0/1), as int64."""
        return check_encoded_outputs(
            y, self.offsets, 1, name=name, unit="entry",
            expected="0 or 1 (row-major 0/1 adjacency matrices, stacked)", whole_floats=True,
        )


class DAGParts(BlockParts):
    """Part vectors of a batch of DAGs: arc indicators (adjacency matrices) or arc
    marginals, laid out like :class:`DAGScores`.

    Parameters
    ----------
    unary : ndarray of shape (Σ_i n_i²,)
    n_nodes : ndarray of shape (n_examples,), int64
    """

    def __init__(self, unary, n_nodes):
        self.unary = unary
        self.n_nodes = n_nodes
        self.unary_offsets = cumulative(n_nodes**2)

    def _new(self, unary):
        return type(self)(unary, self.n_nodes)

    def block(self, i):
        """The (n_i, n_i) part matrix of example ``i``, as a view."""
        n = self.n_nodes[i]
        return self.unary[self.unary_offsets[i] : self.unary_offsets[i + 1]].reshape(n, n)

    def example(self, i):
        """The parts of example ``i`` alone, as a view: writing to them writes here."""
        return type(self)(self.unary[self.unary_offsets[i]:self.unary_offsets[i + 1]],
                          self.n_nodes[i:i + 1])

    def take(self, indices):
        """The parts of the examples ``indices``, in that order (a copy)."""
        indices = normalize_indices(indices, self.n_examples)
        n_nodes = self.n_nodes[indices]
        return type(self)(self.unary[gather_ranges(self.unary_offsets[indices], n_nodes**2)],
                          n_nodes)


@functools.lru_cache(maxsize=None)
def _dags(n, max_parents):
    masks = kernels.enumerate_dags(n, max_parents)
    masks.flags.writeable = False
    return masks


def enumerate_dags(n, max_parents=None):
    """Every DAG on ``n`` nodes whose nodes have at most ``max_parents`` parents.

    Parameters
    ----------
    n : int, 1 <= n <= 6
    max_parents : int >= 0 or None, default=None
        None: no bound.

    Returns
    -------
    ndarray of shape (n_dags, n, n), int64
        0/1 adjacency matrices (a[p, c] = 1 for the arc p -> c), sorted
        lexicographically by their row-major ravel (the empty graph first). There are
        1, 3, 25, 543, 29,281, 3,781,503 DAGs on 1 .. 6 nodes; with at most 2 parents,
        25, 443, 13,956 and 695,902 on 3 .. 6 nodes.

    Examples
    --------
    >>> from skstruct.decoders._dag.decoder import enumerate_dags
    >>> enumerate_dags(2)
    array([[[0, 0],
            [0, 0]],
    <BLANKLINE>
           [[0, 0],
            [1, 0]],
    <BLANKLINE>
           [[0, 1],
            [0, 0]]])
    >>> len(enumerate_dags(5, max_parents=2))
    13956
    """
    n = int(n)
    if not 1 <= n <= MAX_DAG_NODES:
        raise ValueError(f"enumerate_dags takes 1 <= n <= {MAX_DAG_NODES} nodes; got n={n}.")
    bound = n - 1 if max_parents is None else min(int(max_parents), n - 1)
    return _adjacency(_dags(n, bound), n)


def _adjacency(masks, n):
    """Adjacency matrices (..., n, n) [parent, child] of DAGs given by parent masks."""
    return ((masks[..., None, :].astype(np.int64) >> np.arange(n)[:, None]) & 1)


def _masks(adjacency):
    """Parent masks (..., n) of adjacency matrices (..., n, n)."""
    n = adjacency.shape[-1]
    return (adjacency << np.arange(n)[:, None]).sum(axis=-2).astype(np.uint8)


class DAGDecoder(Decoder):
    """Exact inference over directed acyclic graphs with bounded in-degree, by
    enumeration (at most :data:`MAX_DAG_NODES` = 6 nodes per example).

    Example ``i`` has n nodes and arc scores A[p, c] (:class:`DAGScores`). Its outputs
    are the DAGs on its nodes in which every node has at most ``max_parents`` parents,
    scored θ_y = Σ A[p, c] over the arcs p -> c of y; an arc scored -inf is forbidden
    (the empty graph, of score 0, always remains, so every example is feasible).

    Every operation enumerates the DAGs once per number of nodes (cached) and scores all
    of them for every example in one compiled call (:mod:`skstruct.decoders._dag.kernels`): MAP, the
    ``K`` best (a heap), the log-partition and arc marginals (sums over all DAGs), and
    the neighbours at Hamming distance >= 3. Uniform samples (rejection from a subset
    dynamic programme, O(2^n n) per proposal) and the neighbours at Hamming distance 1
    or 2 (the graphs whose adjacency matrix differs from the given one in one or two
    entries, generated and checked; adding or removing an arc is distance 1, reversing
    one distance 2) never enumerate. Loss-augmented MAP is exact for losses with per-entry costs (Hamming) under
    margin rescaling (MAP on :meth:`cost_augmented` scores) and for the 0/1 loss.

    Parameters
    ----------
    max_parents : int >= 0 or None, default=2
        Most parents of a node; None: no bound.

    Notes
    -----
    Encoded outputs are 0/1 adjacency matrices a[p, c] (1 for the arc p -> c), every
    example's (n_i, n_i) matrix raveled row-major and stacked, shape (Σ_i n_i²,), like
    the scores; the Hamming distance between two outputs is the number of arcs that
    differ. Time per example with n nodes and N DAGs: O(2^n n² + N n) for the
    operations that enumerate, O(N log K) more for the K best; see
    :meth:`sample_uniform` and :meth:`neighbours` for the two that do not. N is 13,956 for 5 nodes with at most 2
    parents, 695,902 for 6 nodes (3,781,503 without a bound; see
    :func:`enumerate_dags`). Examples with more than 6 nodes raise a ``ValueError``,
    except in :meth:`parts`, :meth:`score_outputs` and :meth:`check_outputs`.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.decoders import DAGDecoder, DAGScores
    >>> A = np.array([[0., 2., 1.],
    ...               [-1., 0., 3.],
    ...               [-2., 1., 0.]])
    >>> y, best = DAGDecoder(max_parents=1).map(DAGScores.from_blocks([A]), return_score=True)
    >>> y.reshape(3, 3), best
    (array([[0, 1, 0],
           [0, 0, 1],
           [0, 0, 0]]), array([5.]))
    """

    output_kind = "dag"
    capabilities = frozenset({"map", "marginals", "top_k", "loss_augmented_map", "parts",
                              "sample_uniform", "neighbours"})
    score_types = DAGScores
    _parameter_constraints: dict = {
        "max_parents": [Interval(Integral, 0, None, closed="left"), None],
    }

    def __init__(self, max_parents=2):
        self.max_parents = max_parents

    def _bound(self, n):
        return n - 1 if self.max_parents is None else min(int(self.max_parents), n - 1)

    def _groups(self, scores):
        """Per number of nodes n: the examples with n nodes, their DAGs' parent masks and
        their score blocks (n_group, n * n); a clear error above :data:`MAX_DAG_NODES`."""
        self._check_scores(scores)
        n_nodes = scores.n_nodes
        if n_nodes.size and n_nodes.max() > MAX_DAG_NODES:
            i = int(np.argmax(n_nodes > MAX_DAG_NODES))
            raise ValueError(
                f"DAGDecoder enumerates every DAG and takes at most {MAX_DAG_NODES} nodes "
                f"per example; example {i} has {n_nodes[i]} (7 nodes have 50.7 million "
                "DAGs with at most 2 parents)."
            )
        for n in np.unique(n_nodes):
            n = int(n)
            examples = np.flatnonzero(n_nodes == n)
            blocks = scores.unary[scores.offsets[examples][:, None] + np.arange(n * n)]
            yield n, examples, _dags(n, self._bound(n)), blocks

    @staticmethod
    def _threads(masks, blocks):
        return threads_for(masks.size * blocks.shape[0])

    @staticmethod
    def _write(out, scores, examples, n, adjacency):
        """Write adjacency rows (n_group, n, n, ...) of ``examples`` into ``out``
        (Σ n_i², ...)."""
        rows = scores.offsets[examples][:, None] + np.arange(n * n)
        out[rows] = adjacency.reshape((len(examples), n * n) + adjacency.shape[3:])

    def map(self, scores, *, return_score=False):
        """The highest-scoring DAG of every example (ties: the first in the order of
        :func:`enumerate_dags`).

        Parameters
        ----------
        scores : DAGScores
        return_score : bool, default=False

        Returns
        -------
        y : ndarray of shape (Σ_i n_i²,), int64
            Adjacency matrices, raveled and stacked.
        best : ndarray of shape (n_examples,)
            Their scores, when ``return_score`` is True.
        """
        self._check_scores(scores)
        y = np.zeros(scores.unary.shape[0], dtype=np.int64)
        best = np.zeros(scores.n_examples)
        for n, examples, masks, blocks in self._groups(scores):
            with self._threads(masks, blocks):
                index, best[examples] = kernels.best(masks, blocks, n)
            self._write(y, scores, examples, n, _adjacency(masks[index], n))
        return (y, best) if return_score else y

    def _log_partition(self, scores, with_marginals):
        self._check_scores(scores)
        log_z = np.zeros(scores.n_examples)
        marginals = np.zeros(scores.unary.shape[0])
        for n, examples, masks, blocks in self._groups(scores):
            with self._threads(masks, blocks):
                log_z[examples], marg = kernels.log_partition(masks, blocks, n,
                                                              with_marginals)
            if with_marginals:
                self._write(marginals, scores, examples, n, marg)
        return log_z, marginals

    def log_partition(self, scores):
        """log Σ_y exp θ_y over the DAGs of every example, shape (n_examples,)."""
        return self._log_partition(scores, False)[0]

    def marginals(self, scores):
        """Log-partition and arc marginals.

        Returns
        -------
        log_z : ndarray of shape (n_examples,)
        marginals : DAGParts
            p(p -> c ∈ y) for every arc, laid out like the scores (zero diagonal); the
            gradient of ``log_z``.
        """
        log_z, marginals = self._log_partition(scores, True)
        return log_z, DAGParts(marginals, scores.n_nodes)

    def top_k(self, scores, k):
        """The ``k`` best distinct DAGs of every example (ties in the order of
        :func:`enumerate_dags`).

        Returns
        -------
        paths : ndarray of shape (Σ_i n_i², k), int64
            ``paths[:, r]`` holds the ``r``-th best DAGs; -1 where an example has fewer
            than ``r + 1`` DAGs of finite score.
        path_scores : ndarray of shape (n_examples, k)
            Non-increasing along each row; -inf where fewer exist.
        """
        self._check_scores(scores)
        K = check_k(k)
        paths = np.full((scores.unary.shape[0], K), -1, dtype=np.int64)
        top = np.full((scores.n_examples, K), -np.inf)
        for n, examples, masks, blocks in self._groups(scores):
            with self._threads(masks, blocks):
                index, top[examples] = kernels.top_k(masks, blocks, n, K)
            adjacency = np.moveaxis(_adjacency(masks[index], n), 1, -1)  # (g, n, n, K)
            adjacency[np.broadcast_to((index < 0)[:, None, None, :], adjacency.shape)] = -1
            self._write(paths, scores, examples, n, adjacency)
        check_feasible(top[:, 0])
        return paths, top

    def sample_uniform(self, scores, n_draws, random_state=None):
        """Independent uniform draws among the DAGs of finite score of every example,
        without enumerating them.

        Every draw is exactly uniform over the valid DAGs (acyclic, at most
        ``max_parents`` parents per node, no arc scored -inf), by rejection: a proposal
        draws a pair (π, G) uniformly among the pairs of a valid DAG G and one of its
        topological orders π (π from a dynamic programme over the subsets of nodes,
        then every node's parents uniformly among its allowed parent sets within its
        predecessors in π), and keeps G with probability 1 / ext(G), ext(G) its number
        of topological orders (:func:`skstruct.decoders._dag.kernels.sample_uniform_dags`).

        Cost per example with n nodes: O(2^n n) once, then O(2^n n + n²) per proposal;
        the expected number of proposals per draw is the number of pairs (π, G) over
        the number of valid DAGs, at most n! (without forbidden arcs: 10.2 for 6 nodes
        with at most 2 parents, 30.8 with at most 1, 6.2 without a bound; 5.3 for 5
        nodes and 3.0 for 4 with at most 2 parents), about 13 µs of CPU per draw for
        6 nodes with at most 2 parents.

        Parameters
        ----------
        scores : DAGScores
        n_draws : int >= 1
        random_state : None, int, numpy Generator or RandomState, default=None
            See :func:`~skstruct.decoders._core.sampling.check_random_state`; one 64-bit
            seed per example is drawn before the compiled call, so the draws do not
            depend on the number of threads.

        Returns
        -------
        ndarray of shape (Σ_i n_i², n_draws), int64

        Examples
        --------
        >>> import numpy as np
        >>> from skstruct.decoders import DAGDecoder, DAGScores
        >>> draws = DAGDecoder().sample_uniform(DAGScores.from_blocks([np.zeros((3, 3))]),
        ...                                     2500, random_state=0)
        >>> len(np.unique(draws.T, axis=0))  # the 25 DAGs on 3 nodes
        25
        """
        return self._sample_uniform(scores, n_draws, random_state)[0]

    def _sample_uniform(self, scores, n_draws, random_state):
        """The draws and the number of proposals of every example."""
        self._check_scores(scores)
        self._check_enumerable(scores)
        n_draws = check_k(n_draws, "n_draws")
        seeds = example_seeds(check_random_state(random_state), scores.n_examples)
        draws = np.zeros((scores.unary.shape[0], n_draws), dtype=np.int64)
        proposals = np.zeros(scores.n_examples, dtype=np.int64)
        n_nodes = scores.n_nodes
        with threads_for(float(np.sum(2.0**n_nodes * n_nodes)) * n_draws * 10):
            kernels.sample_uniform_dags(scores.unary, scores.offsets, n_nodes,
                                        self._bounds(n_nodes), n_draws, seeds, draws,
                                        proposals)
        return draws, proposals

    def log_count(self, scores):
        """log of the number of valid DAGs of every example (acyclic, at most
        ``max_parents`` parents per node, no arc scored -inf), without enumeration:
        inclusion-exclusion over the set of sinks, O(3^n n) per example with n nodes
        (:func:`skstruct.decoders._dag.kernels.count_dags`).

        Parameters
        ----------
        scores : DAGScores

        Returns
        -------
        ndarray of shape (n_examples,)

        Examples
        --------
        >>> import numpy as np
        >>> from skstruct.decoders import DAGDecoder, DAGScores
        >>> scores = DAGScores.from_blocks([np.zeros((6, 6))])
        >>> round(float(np.exp(DAGDecoder().log_count(scores)[0])))
        695902
        """
        self._check_scores(scores)
        self._check_enumerable(scores)
        n_nodes = scores.n_nodes
        with threads_for(float(np.sum(3.0**n_nodes * n_nodes))):
            counts = kernels.count_dags(scores.unary, scores.offsets, n_nodes,
                                        self._bounds(n_nodes))
        return np.log(np.round(counts))

    def _bounds(self, n_nodes):
        n_nodes = np.asarray(n_nodes, dtype=np.int64)
        return (n_nodes - 1 if self.max_parents is None
                else np.minimum(int(self.max_parents), n_nodes - 1))

    def _check_enumerable(self, scores):
        n_nodes = scores.n_nodes
        if n_nodes.size and n_nodes.max() > MAX_DAG_NODES:
            i = int(np.argmax(n_nodes > MAX_DAG_NODES))
            raise ValueError(
                f"DAGDecoder takes at most {MAX_DAG_NODES} nodes per example; example {i} "
                f"has {n_nodes[i]} (7 nodes have 50.7 million DAGs with at most 2 parents)."
            )

    def neighbours(self, scores, y, k=1):
        """Every valid DAG at Hamming distance 1 .. ``k`` from ``y``.

        Valid: acyclic, at most ``max_parents`` parents per node, no arc scored -inf
        (``y`` itself need only be a 0/1 matrix with a zero diagonal). Distance 1 adds
        or removes an arc, distance 2 also reverses one. For k <= 2 the candidates are
        generated directly (every flip of one off-diagonal adjacency entry, and of two),
        each checked in O(n²): O(n⁶) per example with n nodes for k = 2 (435 candidates
        for 6 nodes), O(n⁴) for k = 1, never the number of DAGs. For k >= 3 every DAG
        is compared with ``y`` (enumeration, O(2^n n² + N n) for N DAGs).

        Order: by distance, then by the set of changed entries of the raveled adjacency
        matrix, in lexicographic order.

        Parameters
        ----------
        scores : DAGScores
        y : ndarray of shape (Σ_i n_i²,)
            Adjacency matrices, raveled and stacked.
        k : int >= 1, default=1

        Returns
        -------
        paths : ndarray of shape (Σ_i n_i², max(counts)), int64
            ``paths[:, r]`` holds the ``r``-th neighbour of every example; -1 from
            ``counts[i]`` on.
        counts : ndarray of shape (n_examples,), int64
        """
        self._check_scores(scores)
        distance = check_k(k)
        y = scores._check_outputs(y)
        self._check_diagonal(y, scores.n_nodes, scores.offsets, "y")
        if distance > 2:
            return self._enumerated_neighbours(scores, y, distance)
        self._check_enumerable(scores)
        n_nodes = scores.n_nodes
        bounds = self._bounds(n_nodes)
        empty = np.zeros((0, 0), dtype=np.int64)
        work = float(np.sum((n_nodes.astype(np.float64) ** 2) ** distance * n_nodes**2))
        with threads_for(work):
            counts = kernels.local_neighbours(scores.unary, scores.offsets, n_nodes, bounds,
                                              y, distance, empty, False)
        check_neighbour_entries(scores.unary.shape[0], counts)
        width = int(counts.max()) if counts.size else 0
        paths = np.full((scores.unary.shape[0], width), -1, dtype=np.int64)
        with threads_for(work):
            kernels.local_neighbours(scores.unary, scores.offsets, n_nodes, bounds, y,
                                     distance, paths, True)
        return paths, counts

    def _enumerated_neighbours(self, scores, y, distance):
        """:meth:`neighbours` by enumeration: every DAG is compared with ``y`` (exact for
        every distance)."""
        groups = list(self._groups(scores))
        counts = np.zeros(scores.n_examples, dtype=np.int64)
        y_masks = {}
        for n, examples, masks, blocks in groups:
            rows = scores.offsets[examples][:, None] + np.arange(n * n)
            y_masks[n] = _masks(y[rows].reshape(-1, n, n))
            with self._threads(masks, blocks):
                counts[examples] = kernels.neighbours(
                    masks, blocks, n, y_masks[n], distance,
                    np.zeros((0, 0), dtype=np.int64), False)
        check_neighbour_entries(scores.unary.shape[0], counts)
        width = int(counts.max()) if counts.size else 0
        paths = np.full((scores.unary.shape[0], width), -1, dtype=np.int64)
        for n, examples, masks, blocks in groups:
            index = np.full((len(examples), width), -1, dtype=np.int64)
            with self._threads(masks, blocks):
                kernels.neighbours(masks, blocks, n, y_masks[n], distance, index, True)
            adjacency = np.moveaxis(_adjacency(masks[index], n), 1, -1)
            adjacency[np.broadcast_to((index < 0)[:, None, None, :], adjacency.shape)] = -1
            self._write(paths, scores, examples, n, adjacency)
        return paths, counts

    def _check_diagonal(self, y, n_nodes, offsets, name):
        """A clear error when an encoded graph has an arc from a node to itself."""
        owner = np.repeat(np.arange(n_nodes.shape[0]), n_nodes)
        local = np.arange(owner.shape[0]) - cumulative(n_nodes)[owner]
        diagonal = offsets[owner] + local * (n_nodes[owner] + 1)
        bad = np.flatnonzero(y[diagonal] != 0)
        if bad.size:
            i = int(np.searchsorted(offsets, diagonal[bad[0]], side="right") - 1)
            raise ValueError(
                f"{name} of example {i} has an arc from a node to itself (a nonzero "
                "diagonal entry of its adjacency matrix); DAGs have none."
            )

    def _check_dags(self, y, n_nodes, offsets, name="y"):
        """A clear error unless every encoded graph is a DAG with at most
        ``max_parents`` parents per node (one compiled pass,
        :func:`skstruct.decoders._dag.kernels.first_violation`)."""
        n_nodes = np.asarray(n_nodes, dtype=np.int64)
        bounds = (n_nodes - 1 if self.max_parents is None
                  else np.minimum(int(self.max_parents), n_nodes - 1))
        example, kind, detail = kernels.first_violation(
            np.ascontiguousarray(y, dtype=np.int64), np.asarray(offsets, dtype=np.int64),
            np.asarray(n_nodes, dtype=np.int64), bounds)
        if kind == 1:
            raise ValueError(
                f"{name} of example {example} has an arc from a node to itself (a nonzero "
                "diagonal entry of its adjacency matrix); DAGs have none."
            )
        if kind == 2:
            raise ValueError(
                f"{name} of example {example} has a node with {detail} parents; "
                f"DAGDecoder(max_parents={self.max_parents}) allows at most "
                f"{bounds[example]}."
            )
        if kind == 3:
            raise ValueError(
                f"{name} of example {example} has a directed cycle; DAGDecoder outputs "
                "are acyclic."
            )
        return y

    def _check_y_true(self, scores, y_true):
        y_true = scores._check_outputs(y_true, name="y_true")
        return self._check_dags(y_true, scores.n_nodes, scores.offsets, "y_true")

    def check_outputs(self, y, offsets):
        """Raise a clear ``ValueError`` unless every encoded graph is a DAG with at most
        ``max_parents`` parents per node.

        Parameters
        ----------
        y : ndarray of shape (Σ_i n_i²,)
            Adjacency matrices, raveled and stacked.
        offsets : ndarray of shape (n_examples + 1,)
            Cumulative n_i² from 0 (every step a square).
        """
        self._check_params()
        offsets = np.asarray(offsets, dtype=np.int64)
        sizes = np.diff(offsets)
        n_nodes = np.round(np.sqrt(np.maximum(sizes, 0))).astype(np.int64)
        if offsets.ndim != 1 or offsets.size < 1 or offsets[0] != 0 or np.any(
                (n_nodes**2 != sizes) | (sizes < 1)):
            raise ValueError(
                "DAGDecoder.check_outputs: offsets must be the cumulative squares of the "
                "numbers of nodes, from 0 (example i owns the n_i² entries "
                "offsets[i]:offsets[i + 1] of its adjacency matrix)."
            )
        y = check_encoded_outputs(
            y, offsets, 1, unit="entry",
            expected="0 or 1 (row-major 0/1 adjacency matrices, stacked)", whole_floats=True,
        )
        self._check_dags(y, n_nodes, offsets)

    def parts(self, scores, y):
        """Arc indicators of the DAGs ``y`` (their adjacency matrices), as
        :class:`DAGParts`."""
        self._check_scores(scores)
        y = self._check_dags(scores._check_outputs(y), scores.n_nodes, scores.offsets)
        return DAGParts(y.astype(np.float64), scores.n_nodes)

    def score_outputs(self, scores, y):
        """θ_y = Σ A[p, c] a[p, c] of every example, shape (n_examples,); -inf for a DAG
        with an arc scored -inf."""
        return self.parts(scores, y).dot(scores)

    def loss_augmented_map(self, scores, y_true, task_loss, rescaling="margin"):
        """argmax_y H(θ_y, Δ(y_true, y)) over the DAGs, exactly, by enumeration.

        Losses with per-entry costs (Hamming: the arcs that differ) under margin
        rescaling: MAP on :meth:`cost_augmented` scores; the 0/1 loss under either
        rescaling: the gold DAG against the best other one (top-2).

        Parameters
        ----------
        scores : DAGScores
        y_true : ndarray of shape (Σ_i n_i²,)
            Gold DAGs, raveled adjacency matrices.
        task_loss : TaskLoss or str
            An output is scored as a sequence of n_i² binary states.
        rescaling : {"margin", "slack"}, default="margin"

        Returns
        -------
        ndarray of shape (Σ_i n_i²,), int64
        """
        return super().loss_augmented_map(scores, y_true, task_loss, rescaling)

    def cost_augmented(self, scores, y_true, task_loss):
        """Scores η + c with Σ c[p, c'] a[p, c'] = Δ(y_true, y) up to a constant per
        example: every adjacency entry is a binary token, c is its cost of "on" minus
        its cost of "off" (Hamming: 1 − 2 y_true)."""
        return super().cost_augmented(scores, y_true, task_loss)

    def _cost_augmented(self, scores, y_true, task_loss):
        if task_loss.decomposition != "parts":
            return super()._cost_augmented(scores, y_true, task_loss)
        costs = task_loss.unary_costs(y_true, scores.offsets, 2)
        check_task_loss_values(costs, task_loss, "unary_costs")
        return scores.replace(unary=scores.unary + (costs[:, 1] - costs[:, 0]))

    def _unsupported_loss(self, task_loss, rescaling):
        return no_exact_loss_augmented_map(
            self, task_loss, rescaling,
            "losses with per-entry costs (HammingLoss, or a loss with unary_costs) under "
            "margin rescaling and ZeroOneLoss under either rescaling",
            f"For a loss that is a sum over adjacency entries, implement "
            f"{type(task_loss).__name__}.unary_costs(y_true, offsets, n_states) (with "
            "n_states=2) and use rescaling='margin'.",
        )
