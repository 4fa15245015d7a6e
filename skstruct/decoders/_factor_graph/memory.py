"""How much memory the factor-graph ADMM and the fits that call it need, and the limit.

Every array of the batched ADMM has one row per example: the variables (u, n_vars
values), the copies of the variables in the factors (the multipliers λ' and the local
problems and solutions a, w, q, n_entries values: two per PAIR factor, one per variable
of a logic factor) and the additional parts (v, one per PAIR factor and per extra part
of the structure factors). Memory therefore grows with n_examples × (n_entries +
n_additional), and a pairwise model on hundreds of labels has tens of thousands of
entries per example: on bibtex (159 labels, all 12,561 pairs, 4,880 examples) one
n_examples × n_entries array of float64 holds 0.98 GB.

:func:`fit_bytes` counts the arrays a fit holds at its peak, per example, from the
graph's sizes alone (nothing is allocated): the scores, the gold parts, the ADMM state
kept between solver iterations for the warm start, the new solve's outputs and what the
training loss builds from them (the relaxed outputs of the structured hinge, the
gradient parts of the LP-SparseMAP loss). :class:`~skstruct.decoders.FactorGraphDecoder`
compares it with its ``max_memory`` before the first allocation of a fit (and
:func:`solve_bytes` before every solve) and raises :class:`FactorGraphMemoryError`
past it.
"""

__all__ = ["DEFAULT_MAX_MEMORY", "FactorGraphMemoryError", "solve_bytes", "fit_bytes",
           "memory_report", "check_memory"]

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


def fit_bytes(flat, n_examples):
    """Peak bytes of a fit of a linear model with this decoder on ``n_examples``.

    The larger of the two learners' peaks, each counted at the moment of a warm-started
    solve (scores and gold parts held, the previous ADMM state kept for the warm start,
    the new solve's arrays) and right after it (what the loss builds from the solution):

    - the structured hinge (LP-MAP, cutting plane or per-example solvers): the scores
      (u, v), the gold parts (u, v), the warm state (u, λ'), the solve, then the
      relaxed outputs [u | v] and the products of the constraint's parts;
    - the LP-SparseMAP loss: the scores, the gold parts, the previous solution kept for
      the warm start (u, λ', v), the solve, then the gradient parts μ* − a_ȳ and their
      weighted copy.

    Parameters
    ----------
    flat : FlatFactorGraph
    n_examples : int

    Returns
    -------
    int
        Bytes (the features X and the parameters, whose sizes do not depend on the
        graph's entries, are not counted).
    """
    n_vars, n_entries, n_add = _sizes(flat)
    held = 2 * (n_vars + n_add)                  # scores and gold parts
    solve = solve_bytes(flat, 1, warm_start=True, compiled=not flat.structures) // _FLOAT
    hinge = held + (n_vars + n_entries) + solve + 2 * (n_vars + n_add)
    sparsemap = held + (n_vars + n_entries + n_add) + solve + 2 * (n_vars + n_add)
    return int(n_examples) * _FLOAT * max(hinge, sparsemap)


def memory_report(flat, n_examples):
    """The fit's estimated peak and its parts, for reports and error messages.

    Returns
    -------
    dict
        ``fit_bytes``, ``per_example`` (bytes), ``per_factor`` (bytes per example and
        factor, the fit's peak divided by the number of factors), ``n_vars``,
        ``n_entries``, ``n_additional``, ``n_factors``.
    """
    total = fit_bytes(flat, n_examples)
    per_example = fit_bytes(flat, 1)
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
