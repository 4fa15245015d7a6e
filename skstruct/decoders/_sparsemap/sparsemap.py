"""SparseMAP: a sparse combination of a few structures, as a decoder operation.

:func:`sparsemap` is the public entry: it asks the decoder for its ``sparsemap`` operation
when it has one (a decoder may bring its own solver) and runs the generic active set,
:func:`active_set_sparsemap`, otherwise. The closed forms :func:`sparsemax_sparsemap`
(one class per example) and :func:`clip_sparsemap` (independent labels) are what the
multiclass and multilabel decoders bring. All take the same options and return a
:class:`SparseMAPResult`.
"""

from .active_set import active_set_sparsemap
from .closed_forms import clip_sparsemap, sparsemax_sparsemap
from .result import SparseMAPResult

__all__ = [
    "sparsemap",
    "active_set_sparsemap",
    "sparsemax_sparsemap",
    "clip_sparsemap",
    "SparseMAPResult",
]


def sparsemap(decoder, scores, **options):
    """SparseMAP: argmax_{μ=[u;v] ∈ M} η_Uᵀu + η_Vᵀv − ½‖u‖² for every example.

    Calls ``decoder.sparsemap(scores, **options)`` when the decoder has that operation
    (a decoder may bring its own solver: the multiclass and multilabel decoders their
    closed forms), and :func:`active_set_sparsemap` otherwise. The active set needs only
    MAP calls on the decoder, so it works for every decoder with the ``"map"`` and
    ``"parts"`` operations, including a user's own. The unary marginals u* are unique;
    the solution is returned as a sparse convex combination of structures.

    Parameters
    ----------
    decoder : Decoder
        Must provide ``map`` and ``parts``. A user's decoder works as is when its score
        container has ``unary``, ``unary_offsets``, ``offsets`` (where each example's
        encoded output starts), ``replace(unary=...)``, ``take(indices)`` and
        ``n_examples``, and its part container has ``unary``, ``unary_offsets``,
        ``dot``, ``scale`` and ``+`` (see :ref:`architecture`).
    scores : score container
        Part scores η of a batch (its ``unary`` array is η_U; the rest is η_V).
    **options
        The keyword options below, passed on to the solver unchanged.
    method : {"active_set", "fw", "away_fw", "pairwise_fw"}, default="active_set"
        The active-set method (Niculae et al. 2018, Algorithm 2), or vanilla, away-step or
        pairwise Frank–Wolfe (Algorithm 1), which converge more slowly and less sparsely.
    max_iter : int, default=100
        Most MAP calls per example (a closed form is exact and does not need it).
    tol : float, default=1e-9
        Stop an example when its Frank–Wolfe gap is at most ``tol · ρ²``, with ρ² the
        squared norm of the example's first structure's unary vector (the scale of the
        problem; 1 if that is zero), or at rounding level (1e-13 · max(ρ², abs(τ)), τ the
        multiplier of the simplex constraint). The test does not change when a constant
        is added to every structure's score.
    max_inner : int, default=200
        Most minor (line-search) iterations per major iteration of the active-set method.
    init : SparseMAPResult, default=None
        Warm start: begin from the supports and weights of an earlier solution for the
        same examples (for instance at the previous scores of a training loop). Its
        structures are rescored under ``scores``; dependent ones are left out.

    Returns
    -------
    SparseMAPResult
        Its ``method`` names the solver that answered: ``"sparsemax"`` and ``"clip"`` for
        the multiclass and multilabel decoders' closed forms.

    Notes
    -----
    Active set: keep a support I with weights p on the simplex; solve the equality
    constrained QP on I through its KKT system [[M_IᵀM_I, 1], [1ᵀ, 0]] [p; τ] = [θ_I; 1]
    with a Cholesky factor updated by one row (added structure) or one Givens sweep
    (removed structure); line search to the QP solution and drop the structures whose
    weight reaches zero; when the QP solution is feasible, ask MAP(η_U − u, η_V) for a
    structure s and stop when θ_s − m_sᵀu ≤ τ + tol (the KKT conditions). Every example of
    the batch is handled at once: one batched MAP call per major iteration for all
    unconverged examples, then one compiled update of all their active sets.

    Transition scores make the active m_s affinely dependent (M_IᵀM_I singular) more often
    than not; a naive solve then stalls. The factor is kept of the lifted Gram matrix
    M_IᵀM_I + ρ² 11ᵀ (ρ² the squared norm of the first structure), singular exactly on
    affine dependence, and a dependent new structure enters by an exchange step along the
    null direction, which raises the objective by (θ_s − θ_Iᵀc) times the step, so the
    method still reaches the optimum.

    References
    ----------
    Niculae, Martins, Blondel & Cardie (2018). SparseMAP: differentiable sparse structured
    inference. ICML.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.decoders import MulticlassDecoder, MulticlassScores, sparsemap
    >>> result = sparsemap(MulticlassDecoder(), MulticlassScores(np.array([[1.0, 0.5, -2.0]])))
    >>> result.unary  # sparsemax of the scores
    array([[0.75, 0.25, 0.  ]])
    """
    solve = getattr(decoder, "sparsemap", None)
    if callable(solve):
        return solve(scores, **options)
    return active_set_sparsemap(decoder, scores, **options)
