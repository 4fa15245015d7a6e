"""The likelihood of every gold output within its Hamming neighbourhood: the default
training loss of :class:`~skstruct.PerturbedMAPClassifier`.

The candidate set of example i is T_i = {y_i} ∪ N_k(y_i), the gold output and the valid
outputs that differ from it in 1 .. k positions. T_i does not depend on w, so the parts of
its candidates are computed once per fit, as differences d_r = a_r − a_{y_i} from the
gold parts (a few nonzeros each: a neighbour changes k positions), in one sparse matrix
D of shape (Σ_i |N_k(y_i)|, U). With η the flat part scores,

    z = D η / β                         (relative logits θ_r − θ_{y_i}, over β)
    ℓ_i = log(1 + Σ_{r ∈ N_i} e^{z_r}) = −log q_i
    ∇_η ℓ_i = (1 / β) Σ_{r ∈ N_i} p_r d_r = Dᵀ p / β

cost two sparse products over the candidates' changed parts and one compiled pass
(:func:`~._neighbourhood_kernels.neighbourhood_softmax`): O(Σ_i |T_i| × the parts a
candidate changes), never O(|Y|).
"""

import copy

import numpy as np
import scipy.sparse as sp

from ._neighbourhood_kernels import neighbourhood_softmax
from ._training import TrainingLoss

__all__ = ["NeighbourhoodDifferences", "NeighbourhoodLikelihoodLoss",
           "estimate_neighbourhood_bytes"]

#: Entries of the neighbour paths and part arrays one chunk of examples may hold while
#: the difference matrix is built (about 32 MB of float64 per array).
_CHUNK_ENTRIES = 1 << 22

#: Bytes per stored nonzero of the two CSR copies of D (float64 value, int32 index each).
_BYTES_PER_NONZERO = 2 * (8 + 4)


def _flat_arrays(parts):
    """The names of the float arrays of a part container, in a fixed order."""
    return sorted(name for name, value in vars(parts).items()
                  if isinstance(value, np.ndarray) and value.dtype.kind == "f")


def estimate_neighbourhood_bytes(n_candidates, changed_parts):
    """Bytes of the difference matrix of ``n_candidates`` candidates that change
    ``changed_parts`` parts each (two CSR copies: D and Dᵀ)."""
    return int(n_candidates) * int(changed_parts) * _BYTES_PER_NONZERO + \
        8 * int(n_candidates)


class _Layout:
    """Where every float array of a part container sits in two flat vectors: the parts'
    (one block per example and array) and the scores' (the score container's arrays of
    the same names, which are either laid out like the parts, or shared by every
    example: a chain's transition scores against its per-sequence transition counts).
    """

    def __init__(self, template, scores, n_examples):
        self.names = _flat_arrays(template)
        self.template = template
        self.shapes, self.shared, self.part_base, self.score_base = {}, {}, {}, {}
        part_base = score_base = 0
        for name in self.names:
            part = getattr(template, name)
            score = getattr(scores, name, None)
            if score is None:
                raise TypeError(f"the scores have no array {name!r} to match the parts'")
            score = np.asarray(score)
            if score.shape == part.shape:
                shared = False
            elif name != "unary" and part.shape[0] == n_examples and \
                    score.shape == part.shape[1:]:
                shared = True
            else:
                raise TypeError(f"the parts' {name!r} of shape {part.shape} do not match the "
                                f"scores' of shape {score.shape}")
            self.shapes[name], self.shared[name] = part.shape, shared
            self.part_base[name], self.score_base[name] = part_base, score_base
            part_base += part.size
            score_base += score.size
        self.n_parts, self.n_scores = part_base, score_base
        self.unary_offsets = np.asarray(template.unary_offsets, dtype=np.int64)

    def block(self, name, start, stop):
        """The flat range of array ``name`` owned by examples ``start:stop``."""
        if name == "unary":
            return self.unary_offsets[start], self.unary_offsets[stop]
        row = int(np.prod(self.shapes[name][1:], dtype=np.int64))
        return start * row, stop * row

    def block_size(self, name):
        return int(np.prod(self.shapes[name][1:], dtype=np.int64))

    def flat_scores(self, scores):
        """η: the scores' arrays concatenated (-inf, the forbidden parts, as 0: no
        valid candidate changes them)."""
        eta = np.concatenate([np.ravel(getattr(scores, name)) for name in self.names])
        return np.where(np.isfinite(eta), eta, 0.0)

    def container(self, flat):
        """A part container like the template holding the flat parts vector ``flat``."""
        out = copy.copy(self.template)
        for name in self.names:
            base = self.part_base[name]
            size = int(np.prod(self.shapes[name], dtype=np.int64))
            setattr(out, name, flat[base:base + size].reshape(self.shapes[name]))
        return out


class NeighbourhoodDifferences:
    """The parts of every neighbour of every gold output, as differences from the gold
    parts.

    Attributes
    ----------
    matrix : scipy.sparse.csr_matrix of shape (n_candidates, n_scores)
        Row r holds d_r = a_r − a_{y_i} of candidate r (owned by example i), over the
        flat score vector η (so that θ_r − θ_{y_i} = (matrix @ η)_r).
    transposed : scipy.sparse.csr_matrix of shape (n_parts, n_candidates)
        The same differences over the flat parts vector (one block per example), for
        gradients laid out like the parts.
    row_offsets : ndarray of shape (n_examples + 1,), int64
        Example ``i`` owns the rows ``row_offsets[i]:row_offsets[i + 1]``.
    group_offsets : ndarray of shape (n_groups + 1,), int64
        The rows of one example split where the first changed position of the output
        changes (the neighbours' order lists them by position): for k = 1, group g holds
        the neighbours that relabel one position (a token, a label, a dependent's head).
    group_owner : ndarray of shape (n_groups,), int64
    template : part container
        The gold parts; gradients are returned laid out like it.
    """

    def __init__(self, matrix, transposed, row_offsets, group_offsets, layout):
        self.matrix = matrix
        self.transposed = transposed
        self.row_offsets = np.asarray(row_offsets, dtype=np.int64)
        self.group_offsets = np.asarray(group_offsets, dtype=np.int64)
        self.group_owner = np.searchsorted(self.row_offsets, self.group_offsets[:-1],
                                           side="right") - 1
        self.layout = layout
        self.template = layout.template

    @property
    def n_candidates(self):
        return self.matrix.shape[0]

    @property
    def nbytes(self):
        return sum(a.nbytes for mat in (self.matrix, self.transposed)
                   for a in (mat.data, mat.indices, mat.indptr))

    @classmethod
    def build(cls, decoder, scores, y, output_offsets, k=1, max_bytes=None):
        """List N_k(y_i) for every example with ``decoder.neighbours`` (in chunks of
        examples) and keep the part differences.

        Parameters
        ----------
        decoder : Decoder
            With ``neighbours`` and ``parts``.
        scores : score container
            Scores of the batch (their -inf entries fix which outputs are valid).
        y : ndarray
            Encoded gold outputs, stacked.
        output_offsets : ndarray of shape (n_examples + 1,)
        k : int, default=1
        max_bytes : int or None, default=None
            Raise ``MemoryError`` as soon as the matrix would exceed this many bytes.

        Returns
        -------
        NeighbourhoodDifferences

        Raises
        ------
        TypeError
            When the part containers' arrays cannot be matched with the scores'.
        MemoryError
            When the matrix would exceed ``max_bytes``.
        """
        template = decoder.parts(scores, y)
        offsets = np.asarray(output_offsets)
        m = offsets.shape[0] - 1
        layout = _Layout(template, scores, m)
        offered = getattr(decoder, "neighbour_differences", None)
        if offered is not None:
            try:
                listed = offered(scores, y, k, max_entries=None if max_bytes is None
                                 else max(0, int(max_bytes // _BYTES_PER_NONZERO)))
            except MemoryError as error:
                raise MemoryError(
                    f"{error} The neighbourhood candidates of the {m} examples would take "
                    f"more than the limit of {max_bytes / 1e9:.2f} GB (max_memory); lower "
                    "k, raise max_memory or use candidates='proposal'.") from error
            if listed is not None:
                return cls._from_listed(listed, layout, m, max_bytes)
        # a chunk holds about |N_k| ≤ (unary size)^k copies of every example's parts
        sizes = np.maximum(np.diff(layout.unary_offsets).astype(np.float64), 1.0)
        blocks = sizes + sum(layout.block_size(name) for name in layout.names
                             if name != "unary")
        cumulative = np.concatenate([[0.0], np.cumsum(sizes ** k * blocks)])
        counts = np.zeros(m, dtype=np.int64)
        # one CSR block of rows per chunk (of D over the scores and over the parts), so
        # that no list of coordinates of every nonzero is ever held
        score_blocks, part_blocks, positions = [], [], []
        nonzeros = 0
        start = 0
        while start < m:
            stop = int(np.searchsorted(cumulative, cumulative[start] + _CHUNK_ENTRIES,
                                       side="right")) - 1
            stop = min(m, max(stop, start + 1))
            n = stop - start
            chunk_scores = scores.take(np.arange(start, stop))
            chunk_y = y[offsets[start]:offsets[stop]]
            paths, chunk_counts = decoder.neighbours(chunk_scores, chunk_y, k)
            counts[start:stop] = chunk_counts
            n_layers = paths.shape[-1]
            if n_layers:
                local = offsets[start:stop + 1] - offsets[start]
                valid = np.arange(n_layers)[:, None] < chunk_counts[None, :]
                entries = np.repeat(valid, np.diff(local), axis=1).reshape(
                    (n_layers, -1) + (1,) * (paths.ndim - 2))
                filled = np.where(entries, np.moveaxis(paths, -1, 0), chunk_y[None])
                changed = (filled != chunk_y[None]).reshape(n_layers, -1)
                width = changed.shape[1] // max(1, chunk_y.shape[0])
                position = np.where(changed, np.arange(changed.shape[1])[None],
                                    changed.shape[1])
                first = np.minimum.reduceat(position, local[:-1] * width, axis=1)
                # rows are example-major: example e's neighbours j < counts[e] in order
                positions.append(first.T[valid.T])
                tiled = chunk_scores.take(np.tile(np.arange(n), n_layers))
                parts = decoder.parts(tiled, filled.reshape((-1,) + chunk_y.shape[1:]))
                chunk_rows = np.concatenate([[0], np.cumsum(chunk_counts)])[:-1]
                rows, score_cols, part_cols, values = [], [], [], []
                for name in layout.names:
                    lo, hi = layout.block(name, start, stop)
                    gold = np.ravel(getattr(template, name))[lo:hi]
                    flat = np.ravel(getattr(parts, name)).reshape(n_layers, -1) - gold[None]
                    layer, col = np.nonzero(flat)
                    if name == "unary":
                        bounds = layout.unary_offsets[start:stop + 1] - lo
                        owner = np.searchsorted(bounds, col, side="right") - 1
                    else:
                        owner = col // layout.block_size(name)
                    rows.append(chunk_rows[owner] + layer)
                    values.append(flat[layer, col])
                    part_cols.append(layout.part_base[name] + lo + col)
                    within = col - owner * layout.block_size(name) if layout.shared[name] \
                        else lo + col
                    score_cols.append(layout.score_base[name] + within)
                    nonzeros += col.size
                del parts, flat, filled, tiled, paths
                rows, values = np.concatenate(rows), np.concatenate(values)
                shape = (int(chunk_counts.sum()), layout.n_scores)
                score_blocks.append(sp.csr_matrix(
                    (values, (rows, np.concatenate(score_cols))), shape=shape))
                part_blocks.append(sp.csr_matrix(
                    (values, (rows, np.concatenate(part_cols))),
                    shape=(shape[0], layout.n_parts)))
                del rows, values, score_cols, part_cols
                if max_bytes is not None:
                    needed = nonzeros * _BYTES_PER_NONZERO + 8 * int(counts[:stop].sum())
                    if needed > max_bytes:
                        raise MemoryError(
                            f"the neighbourhood candidates of the first {stop} of {m} "
                            f"examples already take {needed / 1e9:.2f} GB, more than the "
                            f"limit of {max_bytes / 1e9:.2f} GB (max_memory); lower k, "
                            "raise max_memory or use candidates='proposal'.")
            start = stop
        row_offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        position = (np.concatenate(positions).astype(np.int64) if positions
                    else np.zeros(0, np.int64))
        del positions
        # a new group where the example or the first changed position changes
        owner = np.repeat(np.arange(m), counts)
        starts = np.ones(position.shape[0], dtype=bool)
        starts[1:] = (owner[1:] != owner[:-1]) | (position[1:] != position[:-1])
        group_offsets = np.concatenate([np.flatnonzero(starts), [position.shape[0]]])
        n_rows = int(row_offsets[-1])
        matrix = (sp.vstack(score_blocks, format="csr") if score_blocks
                  else sp.csr_matrix((n_rows, layout.n_scores)))
        del score_blocks
        by_parts = (sp.vstack(part_blocks, format="csr") if part_blocks
                    else sp.csr_matrix((n_rows, layout.n_parts)))
        del part_blocks
        transposed = by_parts.T.tocsr()
        del by_parts
        return cls(matrix, transposed, row_offsets, group_offsets, layout)

    @classmethod
    def _from_listed(cls, listed, layout, m, max_bytes):
        """The matrices from a decoder's ``neighbour_differences``: the neighbours'
        counts, the position each changes first and the nonzero entries of every part
        array (row, flat index into the batch's array, value)."""
        counts, position, entries = listed
        counts = np.asarray(counts, dtype=np.int64)
        row_offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        n_rows = int(row_offsets[-1])
        nonzeros = sum(np.asarray(entries[name][0]).size for name in layout.names
                       if name in entries)
        if max_bytes is not None:
            needed = nonzeros * _BYTES_PER_NONZERO + 8 * n_rows
            if needed > max_bytes:
                raise MemoryError(
                    f"the neighbourhood candidates of the {m} examples take "
                    f"{needed / 1e9:.2f} GB, more than the limit of {max_bytes / 1e9:.2f} "
                    "GB (max_memory); lower k, raise max_memory or use "
                    "candidates='proposal'.")
        rows, score_cols, part_cols, values = [], [], [], []
        for name in layout.names:
            if name not in entries:
                continue
            row, flat, value = (np.asarray(a) for a in entries[name])
            flat = flat.astype(np.int64)
            rows.append(row)
            values.append(value)
            part_cols.append(layout.part_base[name] + flat)
            within = flat % layout.block_size(name) if layout.shared[name] else flat
            score_cols.append(layout.score_base[name] + within)
        if rows:
            rows, values = np.concatenate(rows), np.concatenate(values)
            score_cols, part_cols = np.concatenate(score_cols), np.concatenate(part_cols)
        else:
            rows = score_cols = part_cols = np.zeros(0, np.int64)
            values = np.zeros(0)
        matrix = sp.csr_matrix((values, (rows, score_cols)), shape=(n_rows, layout.n_scores))
        del score_cols
        transposed = sp.csr_matrix((values, (part_cols, rows)),
                                   shape=(layout.n_parts, n_rows))
        del rows, values, part_cols
        position = np.asarray(position, dtype=np.int64)
        owner = np.repeat(np.arange(m), counts)
        starts = np.ones(n_rows, dtype=bool)
        starts[1:] = (owner[1:] != owner[:-1]) | (position[1:] != position[:-1])
        group_offsets = np.concatenate([np.flatnonzero(starts), [n_rows]])
        return cls(matrix, transposed, row_offsets, group_offsets, layout)

    def softmax(self, scores, beta, grouped=False):
        """−log q_i of every example and the candidate probabilities p_r.

        ``grouped``: one softmax per group, {y_i} ∪ the group's candidates, and
        −Σ_g log q_ig per example (the pseudo-likelihood for k = 1).
        """
        z = self.matrix @ self.layout.flat_scores(scores)
        z /= beta
        p = np.empty(z.shape[0])
        m = self.row_offsets.shape[0] - 1
        if not grouped:
            values = np.empty(m)
            neighbourhood_softmax(z, self.row_offsets, values, p)
            return values, p
        group_values = np.empty(self.group_offsets.shape[0] - 1)
        neighbourhood_softmax(z, self.group_offsets, group_values, p)
        return np.bincount(self.group_owner, weights=group_values, minlength=m), p

    def gradient(self, p, beta):
        """(1 / β) Σ_r p_r d_r per example, a part container like ``template``."""
        return self.layout.container(self.transposed @ (p / beta))

    def changed_parts(self, weights=None):
        """Σ_r π_r abs(d_r) per example, π_r = 1 (None: how many candidates change every
        part) or ``weights`` (one per candidate), a part container like ``template``."""
        magnitudes = abs(self.transposed)
        if weights is None:
            return self.layout.container(np.asarray(magnitudes.sum(axis=1)).ravel())
        return self.layout.container(magnitudes @ np.asarray(weights, dtype=np.float64))


class NeighbourhoodLikelihoodLoss(TrainingLoss):
    """ℓ_i = −log q_i, q_i = softmax over T_i = {y_i} ∪ N_k(y_i) of θ / β at y_i.

    The negative log-likelihood of the gold output under the perturbed-MAP model
    P(y | x) ∝ exp(θ_y / β) restricted to the gold output's Hamming-k neighbourhood.
    With T_i = Y(x_i) it would be the CRF's loss at temperature β; for outputs whose
    parts are independent given x (multilabel vectors), with k = 1 it has the
    gradient directions of the per-label logistic losses. It is convex in the part
    scores, and smooth: its Hessian is Cov_{p_i}[a] / β².

    Parameters
    ----------
    differences : NeighbourhoodDifferences
        Built once for the training batch.
    beta : float
        The temperature β > 0.
    grouped : bool, default=False
        True: ℓ_i = −Σ_g log q_ig, with q_ig the softmax over {y_i} ∪ N_ig, N_ig the
        neighbours that change the g-th position (``differences.group_offsets``):
        Besag's pseudo-likelihood at temperature β for k = 1, which for multilabel
        vectors is the sum of the per-label logistic losses.
    """

    required_capability = "parts"

    def __init__(self, differences, beta, grouped=False):
        self.differences = differences
        self.beta = float(beta)
        self.grouped = bool(grouped)

    def __call__(self, decoder, scores, y_true, gold=None):
        values, p = self.differences.softmax(scores, self.beta, self.grouped)
        return values, self.differences.gradient(p, self.beta)

    def values(self, decoder, scores, y_true, gold, **options):
        return self.differences.softmax(scores, self.beta, self.grouped)[0]

    def set_sizes(self):
        """|T_i| = 1 + |N_k(y_i)| of every example."""
        return 1 + np.diff(self.differences.row_offsets)
