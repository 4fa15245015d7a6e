"""How much memory the factor-graph ADMM and the fits that call it need, and the limit.

Every array of the batched ADMM has one row per example: the variables (u, n_vars
values), the copies of the variables in the factors (the multipliers λ' and the local
problems and solutions a, w, q, n_entries values: two per PAIR factor, one per variable
of a logic factor) and the additional parts (v, one per PAIR factor and per extra part
of the structure factors). Memory therefore grows with n_examples × (n_entries +
n_additional), and a pairwise model on hundreds of labels has tens of thousands of
entries per example: on bibtex (159 labels, all 12,561 pairs, 4,880 examples) one
n_examples × n_entries array of float64 holds 0.98 GB.

:func:`fit_bytes` counts the arrays a fit holds at its peak from the graph's sizes
alone (nothing is allocated). Training evaluations larger than
:data:`EVALUATION_CHUNK_BYTES` run over chunks of examples
(:func:`evaluation_chunk_size`, read by the objective through the decoder's
``evaluation_chunk_size``): only what is kept between evaluations grows with all the
examples (the LP-SparseMAP warm start u, λ', ρ; BCFW's dual blocks, at most their
dense size, and the warm start of every example's LP-MAP), the scores, gold parts,
solves, gradient parts and (LP-SparseMAP) the spread of its subdifferential with one
chunk. The structured hinge's one-slack cutting
plane builds its constraints over the same chunks (the loss-augmented LP-MAP, the hinge
terms and the plane of one chunk at a time, every chunk warm-started from its own last
ADMM state).
:class:`~skstruct.decoders.FactorGraphDecoder` compares it with its ``max_memory``
before the first allocation of a fit (and :func:`solve_bytes` before every solve) and
raises :class:`FactorGraphMemoryError` past it.
"""

__all__ = ["DEFAULT_MAX_MEMORY", "EVALUATION_CHUNK_BYTES", "FactorGraphMemoryError",
           "solve_bytes", "fit_bytes", "fused_fit_bytes", "evaluation_chunk_size", "memory_report",
           "check_memory"]

#: Default of ``FactorGraphDecoder(max_memory=...)``: 2 GiB.
DEFAULT_MAX_MEMORY = 2 * 1024**3

#: Bytes of a float64.
_FLOAT = 8

#: Per-example scalars of a solve (iterations, two residuals, penalty, convergence flag,
#: integrality flag), in float64 units, rounded up.
_SCALARS = 6


class FactorGraphMemoryError(MemoryError, ValueError):
    """A factor-graph solve or fit would need more memory than ``max_memory``.

    A :class:`MemoryError` (memory is what is missing) and a :class:`ValueError` (the
    graph and the batch are too large for the configured limit), so that it is caught
    as either.
    """


def _sizes(flat):
    return flat.n_vars, flat.n_entries, flat.n_additional


def solve_bytes(flat, n_examples, *, keep_state=False, warm_start=False, compiled=True):
    """Bytes one batched ADMM solve allocates, beside the scores it is given.

    Parameters
    ----------
    flat : FlatFactorGraph
        The template (``FactorGraph.flat()``).
    n_examples : int
    keep_state : bool, default=False
        Whether the local problems and solutions a, w, q (and the scores s) are returned
        for the backward pass.
    warm_start : bool, default=False
        Whether the solve starts from a previous state (it copies u and λ').
    compiled : bool, default=True
        The compiled loop (graphs of built-in factors); False: the Python loop of graphs
        with structure factors, which holds every example's state twice (the running
        examples' blocks and the results).

    Returns
    -------
    int
        n_examples × 8 × (n_vars + n_entries + n_additional + scalars
        [+ 3 n_entries + n_additional with the state] [+ n_vars + n_entries warm]),
        and for the Python loop 4 n_entries + n_additional + n_vars more.
    """
    n_vars, n_entries, n_add = _sizes(flat)
    per = n_vars + n_entries + n_add + _SCALARS
    if n_add > flat.n_pair:
        per += n_add                             # PAIR and extra scores concatenated
    if keep_state or not compiled:
        per += 3 * n_entries + n_add
    if warm_start:
        per += n_vars + n_entries
    if not compiled:
        per += 4 * n_entries + n_add + n_vars
    return int(n_examples) * _FLOAT * per


#: Bytes the arrays of one chunk of a training evaluation may take (see
#: :func:`evaluation_chunk_size`): a full-batch evaluation larger than this runs over
#: chunks of examples.
EVALUATION_CHUNK_BYTES = 256 * 1024**2


def _chunk_work(flat):
    """float64 values per example that one evaluation of a chunk holds while it runs:
    the scores and gold parts (n_vars + n_additional each), a warm-started solve, the
    loss's gradient parts and their weighted copy, and the LP-SparseMAP loss's spread
    of its subdifferential at the kinks (down and up parts, and their weighted copies:
    :meth:`~skstruct.optim.RegularizedRisk.value_gradient_and_spread`; counted for
    every loss)."""
    n_vars, n_entries, n_add = _sizes(flat)
    solve = solve_bytes(flat, 1, warm_start=True, compiled=not flat.structures) // _FLOAT
    return 8 * (n_vars + n_add) + solve


#: Bytes per example, beside its arrays, of what per-example solvers keep for every
#: example (BCFW: the example's sub-batch, its warm start's record, dict and small
#: arrays) and of the allocator's overhead on those many small arrays: the resident size
#: of a BCFW fit on 1,500 examples of a 60-label graph grew 10-14 kB an example past its
#: arrays (traced by tracemalloc).
_PER_EXAMPLE_OBJECTS = 16 * 1024


def _kept(flat):
    """float64 values per example that a fit keeps for all examples between
    evaluations: the larger of the LP-SparseMAP loss's warm start (u, λ', ρ) and what
    the per-example solvers keep (BCFW: the dual blocks and the warm start of every
    example's LP-MAP; the subgradient: the gold parts).

    BCFW keeps a block compact, as its nonzero entries and their int32 positions,
    when they are fewer than two thirds of its n_vars + n_additional entries
    (:class:`~skstruct.decoders._factor_graph.decoder.CompactFactorGraphParts`), else
    dense: n_vars + n_additional values bound it either way, and that is what is
    counted (a block's density is not known before the fit; on bibtex's pairwise
    graph the blocks hold about 60 nonzeros out of 12,720 on average, a few of them
    are dense)."""
    n_vars, n_entries, n_add = _sizes(flat)
    warm = n_vars + n_entries + 1
    return max(warm, (n_vars + n_add) + warm, 2 * (n_vars + n_add))


def evaluation_chunk_size(flat, n_examples):
    """Examples per chunk of a training evaluation: all ``n_examples`` when their
    evaluation holds at most :data:`EVALUATION_CHUNK_BYTES`, else as many as fit in it
    (at least one)."""
    n_examples = int(n_examples)
    size = max(1, EVALUATION_CHUNK_BYTES // (_FLOAT * _chunk_work(flat)))
    return n_examples if size >= n_examples else int(size)


#: Bytes a fused LP-SparseMAP fit holds whatever its size (the solver's vectors, the
#: parallel chunks' scratch and the allocator's arenas; measured: 0.75 MB at 60 labels).
_FUSED_FIXED = 2 * 1024**2


#: Vectors of n_params values a quasi-Newton fit holds at once: its 10 curvature pairs,
#: the iterate, trial point, gradients, pseudo-gradients, direction, kink spreads and
#: the gradient's pieces, counted with room.
SOLVER_VECTORS = 48


def solver_bytes(flat, n_features):
    """Bytes of the solver's vectors (:data:`SOLVER_VECTORS`) for a model of
    ``n_features`` features on this graph (n_params = (n_features + 1) n_vars +
    n_additional); 0 when ``n_features`` is None."""
    if n_features is None:
        return 0
    n_vars, _, n_add = _sizes(flat)
    return _FLOAT * SOLVER_VECTORS * ((int(n_features) + 1) * n_vars + n_add)


def fused_fit_bytes(flat, n_examples):
    """Peak bytes of a fit whose evaluations run the fused pairwise LP-SparseMAP loss
    (:mod:`~skstruct.decoders._factor_graph.pair_loss`): nothing of size n_examples ×
    n_pairs, only the unary scores, the residuals u* − y, the gold outputs (as given,
    encoded and as floats for the gold pair sums) and a product's temporary (8 n_vars
    values an example, counted with room), the chunks' three sums of n_pairs, the
    coupling matrix (n_vars²) and :data:`_FUSED_FIXED`. Measured: 1.9 kB an example at
    60 labels (4 n_vars values) past the solver's vectors."""
    from .pair_loss import EXAMPLES_PER_CHUNK

    n_examples = int(n_examples)
    n_vars, n_entries, n_add = _sizes(flat)
    n_chunks = -(-n_examples // EXAMPLES_PER_CHUNK)
    return (_FLOAT * (n_examples * (8 * n_vars + 2) + 3 * n_chunks * n_add
                      + n_vars * n_vars + 4 * (n_entries + n_add))
            + _FUSED_FIXED)


def fit_bytes(flat, n_examples, solver=None, fused=False, n_features=None):
    """Peak bytes of a fit of a linear model with this decoder on ``n_examples``.

    Every solver evaluates the loss over chunks of examples
    (:func:`evaluation_chunk_size`; the one-slack cutting plane its constraints), so
    its peak is what it keeps for every example between evaluations (the largest of
    the LP-SparseMAP loss's and the cutting plane's warm start, u, λ' and ρ; BCFW's dual
    blocks and every example's LP-MAP warm start; the subgradient's gold parts) plus
    what one chunk holds while it is evaluated (the scores, the gold parts, a
    warm-started solve, the gradient parts and their weighted copy; for the cutting
    plane the outputs, their pair products and the gold ones).

    Parameters
    ----------
    flat : FlatFactorGraph
    n_examples : int
    solver : str or None, default=None
        The fit's solver (all are counted alike).
    fused : bool, default=False
        The fit's evaluations run the fused pairwise LP-SparseMAP loss
        (:func:`fused_fit_bytes`).
    n_features : int or None, default=None
        The model's number of features: the solver's vectors are counted
        (:func:`solver_bytes`); None: not counted.

    Returns
    -------
    int
        Bytes (the features X are not counted).
    """
    if fused:
        return fused_fit_bytes(flat, n_examples) + solver_bytes(flat, n_features)
    n_examples = int(n_examples)
    chunk = evaluation_chunk_size(flat, n_examples)
    return (_FLOAT * (n_examples * _kept(flat) + chunk * _chunk_work(flat))
            + n_examples * _PER_EXAMPLE_OBJECTS + solver_bytes(flat, n_features))


def memory_report(flat, n_examples, solver=None, fused=False, n_features=None):
    """The fit's estimated peak and its parts, for reports and error messages.

    Returns
    -------
    dict
        ``fit_bytes``, ``per_example`` (bytes: the peak divided by n_examples),
        ``per_factor`` (bytes per example and factor), ``n_vars``,
        ``n_entries``, ``n_additional``, ``n_factors``.
    """
    total = fit_bytes(flat, n_examples, solver, fused, n_features)
    per_example = total / max(int(n_examples), 1)
    n_factors = flat_n_factors(flat)
    return dict(fit_bytes=total, per_example=per_example,
                per_factor=per_example / max(n_factors, 1), n_vars=flat.n_vars,
                n_entries=flat.n_entries, n_additional=flat.n_additional,
                n_factors=n_factors)


def flat_n_factors(flat):
    """Number of factors of a flat template (linear, PAIR, OROut and structure)."""
    n_lin = flat.lin_offsets.shape[0] - 1
    n_orout = flat.orout_offsets.shape[0] - 1
    return n_lin + flat.n_pair + n_orout + len(flat.structures)


def format_bytes(n_bytes):
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n_bytes >= size:
            return f"{n_bytes / size:.2f} {unit}"
    return f"{int(n_bytes)} bytes"


def check_memory(estimate, limit, flat, n_examples, what):
    """Raise :class:`FactorGraphMemoryError` when ``estimate`` exceeds ``limit`` (None:
    no limit); the message names the estimate, the graph's size and what to do."""
    if limit is None or estimate <= limit:
        return
    per = estimate / max(int(n_examples), 1)
    raise FactorGraphMemoryError(
        f"{what} needs about {format_bytes(estimate)} ({format_bytes(per)} per example "
        f"for {n_examples} examples), more than max_memory={limit:.4g} bytes "
        f"({format_bytes(limit)}). The factor graph has {flat.n_vars} variables, "
        f"{flat_n_factors(flat)} factors ({flat.n_pair} PAIR) and {flat.n_entries} "
        "variable copies in its factors; the ADMM holds several arrays of n_examples x "
        "n_entries values. Raise the limit if the machine has the memory "
        "(FactorGraphDecoder(max_memory=...), decoder__max_memory in a grid search, None "
        "for no limit), keep fewer PAIR factors (FactorGraph.pairwise(n_labels, "
        "pairs=...), for instance the pairs of labels that co-occur in training), or "
        "train on fewer examples at a time (StructuredSVM.partial_fit on batches)."
    )
