"""SparseMAP in closed form for one class per example (sparsemax) and independent labels
(clipping), with the sparse distributions that realize them."""

import numpy as np

from ...utils._blocks import cumulative
from ...utils._chunks import even_chunks
from ...utils._parallel import dynamic_schedule, threads_for
from . import closed_form_kernels as kernels
from .active_set import active_set_sparsemap
from .result import SparseMAPResult, check_init, check_options, check_scores

__all__ = ["sparsemax_sparsemap", "clip_sparsemap"]


def _exact(decoder, scores, method, max_iter, tol, max_inner, init):
    """Validate the options like the active set does; whether a closed form answers.

    The closed forms replace the active-set method (they reach its optimum exactly);
    a Frank–Wolfe variant is an approximation one asks for by name, so it goes to the
    generic solver.
    """
    check_options(method, max_iter, tol, max_inner)
    if method != "active_set":
        return False
    check_scores(scores)
    check_init(init, scores)
    return True


def _parts_like(decoder, scores, y0, unary):
    """A part container of ``decoder`` holding ``unary`` (a container of a unary-only
    family is built from its unary array; its type is that of the decoder's parts)."""
    template = decoder.parts(scores.take([0]), y0)
    return type(template)(unary)


#: Work per score of the row kernels (a sort of the row, an allocation per row).
_WORK_PER_SCORE = 16


def _row_chunks(unary):
    """Chunks of the rows of ``unary`` for the kernels (the same for all four)."""
    return even_chunks(unary.shape[0], _WORK_PER_SCORE * unary.size)


def _finished(n):
    """n_iter, gap and converged of an exact solution."""
    return np.ones(n, dtype=np.int64), np.zeros(n), np.ones(n, dtype=bool)


class ClassSupport:
    """The support of a multiclass solution: classes and their probabilities, ragged
    (see :mod:`skstruct.decoders._sparsemap.result` for the interface)."""

    def __init__(self, decoder, scores, ptr, classes, weights, probabilities):
        self._decoder = decoder
        self._scores = scores
        self.ptr = ptr
        self.classes = classes
        self.weights = weights
        self._probabilities = probabilities

    def outputs(self, positions):
        return self.classes[positions]

    def split(self, outputs, count):
        return [outputs[j : j + 1] for j in range(count)]

    def combine(self, coefficients):
        unary = np.zeros(np.shape(self._scores.unary))
        example = np.repeat(np.arange(unary.shape[0]), np.diff(self.ptr))
        unary[example, self.classes] = coefficients
        return self._parts(unary)

    def _parts(self, unary):
        return _parts_like(self._decoder, self._scores, self.classes[:1], unary)

    def marginals(self):
        return self._parts(self._probabilities.copy())

    def check_backward(self, method):
        pass

    def vjp(self, upstream):
        # sparsemax Jacobian diag(s) − ssᵀ/|S| (s the support indicator), row by row
        upstream = upstream.reshape(self._probabilities.shape)
        on = self._probabilities > 0.0
        mean = (upstream * on).sum(axis=1, keepdims=True) / on.sum(axis=1, keepdims=True)
        return self._parts(np.where(on, upstream - mean, 0.0))


def sparsemax_sparsemap(decoder, scores, *, method="active_set", max_iter=100, tol=1e-9,
                        max_inner=200, init=None):
    """SparseMAP of one class per example: the sparsemax of the class scores.

    The marginal polytope of one-hot vectors is the simplex, so the solution of
    max_{p ∈ Δ} ηᵀp − ½‖p‖² is sparsemax(η), the Euclidean projection of η on the simplex
    (Martins & Astudillo 2016): exact, in O(K log K) per example of K classes, compiled and
    batched. The support is the classes of positive probability, each its own structure
    with that probability.

    Parameters
    ----------
    decoder : MulticlassDecoder (or a decoder with its layout)
        Encoded outputs are class indices of shape (n_samples,), part vectors one-hot rows
        of a part container built from its (n_samples, n_classes) unary array.
    scores : score container with ``unary`` of shape (n_samples, n_classes)
        -inf forbids a class; an example whose classes are all forbidden is an error (the
        decoder's own, from its ``map``).
    method, max_iter, tol, max_inner, init
        As in :func:`~skstruct.decoders.sparsemap`. The solution is exact, so ``max_iter``,
        ``tol``, ``max_inner`` and ``init`` (checked for the same examples) do not change
        it; a ``method`` other than ``"active_set"`` runs that Frank–Wolfe variant
        through :func:`active_set_sparsemap`.

    Returns
    -------
    SparseMAPResult
        ``method == "sparsemax"``, ``n_iter`` 1, ``gap`` 0, all converged. Its backward
        pass is the sparsemax Jacobian diag(s) − ssᵀ / size(S).
    """
    if not _exact(decoder, scores, method, max_iter, tol, max_inner, init):
        return active_set_sparsemap(decoder, scores, method=method, max_iter=max_iter,
                                    tol=tol, max_inner=max_inner, init=init)
    unary = np.ascontiguousarray(scores.unary, dtype=np.float64)
    n = unary.shape[0]
    if (unary == -np.inf).all(axis=1).any():
        decoder.map(scores)  # the decoder's own error names the infeasible examples
        raise ValueError("Every class of some example scores -inf.")
    probabilities = np.empty_like(unary)
    sizes = np.empty(n, dtype=np.int64)
    objective = np.empty(n)
    bounds = _row_chunks(unary)
    with threads_for(unary.size), dynamic_schedule():
        kernels.sparsemax_rows(unary, probabilities, sizes, objective, bounds)
        ptr = cumulative(sizes)
        classes = np.empty(ptr[-1], dtype=np.int64)
        weights = np.empty(ptr[-1])
        kernels.class_support(probabilities, ptr, classes, weights, bounds)
    support = ClassSupport(decoder, scores, ptr, classes, weights, probabilities)
    n_iter, gap, converged = _finished(n)
    return SparseMAPResult(decoder, scores, support, probabilities, n_iter, gap, objective,
                           converged, "sparsemax")


class StaircaseSupport:
    """The staircase decomposition of points of the cube, ragged (see
    :mod:`skstruct.decoders._sparsemap.result` for the interface).

    Example ``e`` ranks its labels by decreasing marginal (``rank[e, j]``, ties by label);
    its structure at position k turns on the ``counts[k]`` labels of lowest rank.
    """

    def __init__(self, decoder, scores, ptr, counts, weights, rank, marginals):
        self._decoder = decoder
        self._scores = scores
        self.ptr = ptr
        self.counts = counts
        self.weights = weights
        self._rank = rank
        self._marginals = marginals

    def outputs(self, positions):
        owner = np.searchsorted(self.ptr, positions, side="right") - 1
        return (self._rank[owner] < self.counts[positions][:, None]).astype(np.int64)

    def split(self, outputs, count):
        return list(outputs)

    def combine(self, coefficients):
        unary = np.empty(self._rank.shape)
        with threads_for(unary.size), dynamic_schedule():
            kernels.staircase_combine(self.ptr, self.counts,
                                      np.ascontiguousarray(coefficients, dtype=np.float64),
                                      self._rank, unary, _row_chunks(unary))
        return self._parts(unary)

    def _parts(self, unary):
        return _parts_like(self._decoder, self._scores,
                           np.zeros((1, self._rank.shape[1]), dtype=np.int64), unary)

    def marginals(self):
        return self._parts(self._marginals.copy())

    def check_backward(self, method):
        pass

    def vjp(self, upstream):
        # ∂ clip(η, 0, 1) / ∂η = diag(0 < η < 1); 0 < u < 1 on exactly those labels
        inside = (self._marginals > 0.0) & (self._marginals < 1.0)
        return self._parts(np.where(inside, upstream.reshape(self._rank.shape), 0.0))


def clip_sparsemap(decoder, scores, *, method="active_set", max_iter=100, tol=1e-9,
                   max_inner=200, init=None):
    """SparseMAP of independent binary labels: the scores clipped to [0, 1].

    A labeling y ∈ {0, 1}^L has part vector y and score ηᵀy, so the marginal polytope is
    the cube [0, 1]^L and max_{u ∈ [0,1]^L} ηᵀu − ½‖u‖² separates over labels:
    u_j = clip(η_j, 0, 1) (0 for η_j = -inf), objective Σ_j η_j u_j − ½ u_j².

    The distribution is the *staircase* decomposition of u: with u sorted decreasingly,
    1 = v_0 ≥ v_1 ≥ … ≥ v_L ≥ v_{L+1} = 0, the labeling that turns on the c labels of
    largest u has weight v_c − v_{c+1} (c = 0 … L). The weights are nonnegative and sum to
    one, label of rank r is on in the labelings c > r, of total weight v_{r+1} = its
    marginal; only the positive weights are kept, one per distinct level of u plus the
    ends, so at most L + 1 nested — hence affinely independent — labelings.

    Parameters
    ----------
    decoder : MultilabelDecoder (or a decoder with its layout)
        Encoded outputs are 0/1 rows of shape (n_samples, n_labels), part vectors those
        rows, in a part container built from its unary array.
    scores : score container with ``unary`` of shape (n_samples, n_labels)
    method, max_iter, tol, max_inner, init
        As in :func:`sparsemax_sparsemap`.

    Returns
    -------
    SparseMAPResult
        ``method == "clip"``, ``n_iter`` 1, ``gap`` 0, all converged. Its backward pass is
        the Jacobian of the clipping, diag(0 < η < 1).
    """
    if not _exact(decoder, scores, method, max_iter, tol, max_inner, init):
        return active_set_sparsemap(decoder, scores, method=method, max_iter=max_iter,
                                    tol=tol, max_inner=max_inner, init=init)
    unary = np.ascontiguousarray(scores.unary, dtype=np.float64)
    n, n_labels = unary.shape
    marginals = np.empty_like(unary)
    rank = np.empty((n, n_labels), dtype=np.int32)
    sizes = np.empty(n, dtype=np.int64)
    objective = np.empty(n)
    bounds = _row_chunks(unary)
    with threads_for(unary.size), dynamic_schedule():
        kernels.clip_rows(unary, marginals, rank, sizes, objective, bounds)
        ptr = cumulative(sizes)
        counts = np.empty(ptr[-1], dtype=np.int32)
        weights = np.empty(ptr[-1])
        kernels.staircase(marginals, rank, ptr, counts, weights, bounds)
    support = StaircaseSupport(decoder, scores, ptr, counts, weights, rank, marginals)
    n_iter, gap, converged = _finished(n)
    return SparseMAPResult(decoder, scores, support, marginals, n_iter, gap, objective,
                           converged, "clip")
