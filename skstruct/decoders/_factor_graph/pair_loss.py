"""The LP-SparseMAP loss of a pairwise model with shared PAIR scores, in one compiled pass.

A pairwise multilabel model scores example k's variables η_k = x_k W + b and every PAIR
factor f on (a_f, b_f) with one score c_f shared by all the examples. Its LP-SparseMAP
loss (:class:`~skstruct.losses.SparseMAPLoss` with a
:class:`~skstruct.decoders.FactorGraphDecoder` on a graph of PAIR factors only) is

    ℓ_k = max_{(u, v) ∈ L} [η_k·u + c·v − ½‖u‖²] − [η_k·y_k + c·g_k] + ½‖y_k‖²,

with g_k,f = y_k,a y_k,b, and its gradient is (u*_k − y_k) for η_k and v*_k − g_k for c.
The generic evaluation holds n_examples × n_pairs arrays (the scores c broadcast to every
example, the gold parts, the marginals, the gradient parts and their copies): on bibtex's
12,561 pairs and 4,880 examples, 490 MB each, and an evaluation is memory traffic over
them. Here every example is solved on its live variables alone
(:func:`~skstruct.decoders._factor_graph.admm_compiled._solve_one_live`: the peeled
variables and the factors of score zero left out), in scratch rows of its parallel chunk,
and only the live factors' v enter the sums: what grows with the examples is
n_examples × n_vars (the residuals u* − y), the rest is n_pairs per chunk.

Also returned: the spread of the subdifferential at the factors of score zero (v_f is
then free in [max(0, u_a + u_b − 1), min(u_a, u_b)]; see
:meth:`~skstruct.decoders._factor_graph.decoder.LPSparseMAPResult.marginal_spread`),
summed with the weights like the gradient.
"""

import numpy as np
from numba import njit, prange

from ...utils._parallel import dynamic_schedule
from .admm_compiled import _solve_one_live

__all__ = ["pair_sparsemap_loss"]


@njit(cache=True, nogil=True)
def _one_chunk(first, last, eta, c, weights, y_offsets, y_labels, coupling_matrix,
               entry_var, degree, adj_offsets, adj_entry, max_iter, tol, rho0, values,
               residual, n_iter, converged, grad_c, down_c, up_c):
    """Examples first..last − 1 in one scratch, their sums into row ``grad_c`` etc."""
    n_vars = eta.shape[1]
    n_pair = c.shape[1]
    n_entries = entry_var.shape[0]
    eta_row = np.empty((1, n_vars))
    u = np.empty((1, n_vars))
    lam = np.empty((1, n_entries))
    rho = np.empty(1)
    v = np.empty((1, n_pair))
    iters = np.zeros(1, dtype=np.int64)
    primal = np.empty(1)
    dual = np.empty(1)
    done = np.empty(1, dtype=np.bool_)
    bound = np.empty(n_vars)
    live = np.empty(n_vars, dtype=np.bool_)
    queue = np.empty(n_vars, dtype=np.int64)
    local = np.empty(n_vars, dtype=np.int64)
    for k in range(first, last):
        for i in range(n_vars):
            eta_row[0, i] = eta[k, i]
        _solve_one_live(0, eta_row, c, entry_var, degree, adj_offsets, adj_entry, 1.0,
                        max_iter, tol, True, rho0, True, u, lam, rho, v, iters, primal,
                        dual, done, bound, live, queue, local)
        u_k = u[0]
        for i in range(n_vars):
            if degree[i] == 0.0:
                u_k[i] = min(max(eta[k, i], 0.0), 1.0)
        n_iter[k] = iters[0]
        converged[k] = done[0]
        weight = weights[k]
        # η·u − ½‖u‖², and the residual u − y
        value = 0.0
        for i in range(n_vars):
            value += (eta[k, i] - 0.5 * u_k[i]) * u_k[i]
            residual[k, i] = weight * u_k[i]
        # − η·y − c·g + ½‖y‖² over the gold labels
        for p in range(y_offsets[k], y_offsets[k + 1]):
            i = y_labels[p]
            value += 0.5 - eta[k, i]
            residual[k, i] -= weight
            for q in range(p + 1, y_offsets[k + 1]):
                value -= coupling_matrix[i, y_labels[q]]
        # c·v and the live factors' v (the others' are 0), with the spread at zero scores
        for i in range(n_vars):
            if not live[i]:
                continue
            for e in range(adj_offsets[i], adj_offsets[i + 1]):
                j = adj_entry[e]
                if j % 2 != 0 or not live[entry_var[j + 1]]:
                    continue
                f = j // 2
                v_f = v[0, f]
                grad_c[f] += weight * v_f
                s = c[0, f]
                if s != 0.0:
                    value += s * v_f
                    continue
                a = min(max(u_k[i], 0.0), 1.0)
                b = min(max(u_k[entry_var[j + 1]], 0.0), 1.0)
                down_c[f] += weight * max(v_f - max(a + b - 1.0, 0.0), 0.0)
                up_c[f] += weight * max(min(a, b) - v_f, 0.0)
        values[k] = max(value, 0.0)


@njit(cache=True, nogil=True, parallel=True)
def _all_chunks(bounds, eta, c, weights, y_offsets, y_labels, coupling_matrix, entry_var,
                degree, adj_offsets, adj_entry, max_iter, tol, rho0, values, residual,
                n_iter, converged, grad_c, down_c, up_c):
    for t in prange(bounds.shape[0] - 1):
        _one_chunk(bounds[t], bounds[t + 1], eta, c, weights, y_offsets, y_labels,
                   coupling_matrix, entry_var, degree, adj_offsets, adj_entry, max_iter,
                   tol, rho0, values, residual, n_iter, converged, grad_c[t], down_c[t],
                   up_c[t])


#: Examples per parallel chunk: every chunk keeps three n_pairs sums.
EXAMPLES_PER_CHUNK = 256


def pair_sparsemap_loss(flat, eta, coupling, weights, y_offsets, y_labels, gold_pairs, *,
                        max_iter, tol, rho=1.0):
    """The weighted LP-SparseMAP losses, gradients and spreads of a pairwise model.

    Parameters
    ----------
    flat : FlatFactorGraph
        A graph of PAIR factors only.
    eta : ndarray of shape (n_examples, n_vars)
        Unary scores x_k W + b.
    coupling : ndarray of shape (n_pair,)
        The PAIR scores c, shared by every example.
    weights : ndarray of shape (n_examples,)
        Example weights ω_k (the gradient sums are weighted by them; the losses are not).
    y_offsets, y_labels : ndarray of int64
        The gold labels on of example k: ``y_labels[y_offsets[k]:y_offsets[k + 1]]``,
        increasing.
    gold_pairs : ndarray of shape (n_pair,)
        Σ_k ω_k y_k,a y_k,b of every factor f on (a, b).
    max_iter, tol, rho
        The ADMM's (every example from its cold start).

    Returns
    -------
    values : ndarray of shape (n_examples,)
        ℓ_k (clipped at 0, as the generic loss).
    residual : ndarray of shape (n_examples, n_vars)
        ω_k (u*_k − y_k): the gradient for η_k, weighted.
    grad_c, down_c, up_c : ndarray of shape (n_pair,)
        Σ_k ω_k (v*_k − g_k), and the weighted spread at the factors of score zero.
    n_iter : ndarray of shape (n_examples,), int64
    converged : ndarray of shape (n_examples,), bool
    """
    n, n_vars = eta.shape
    n_pair = flat.n_pair
    c = np.ascontiguousarray(coupling, dtype=np.float64).reshape(1, n_pair)
    coupling_matrix = np.zeros((n_vars, n_vars))
    first, second = flat.pair_var[:, 0], flat.pair_var[:, 1]
    coupling_matrix[first, second] = c[0]
    coupling_matrix[second, first] = c[0]
    bounds = np.unique(np.append(np.arange(0, n, EXAMPLES_PER_CHUNK), n)).astype(np.int64)
    n_chunks = max(bounds.shape[0] - 1, 0)
    sums = np.zeros((3, n_chunks, n_pair))
    values = np.zeros(n)
    residual = np.zeros((n, n_vars))
    n_iter = np.zeros(n, dtype=np.int64)
    converged = np.ones(n, dtype=bool)
    if n:
        with dynamic_schedule():
            _all_chunks(bounds, np.ascontiguousarray(eta, dtype=np.float64), c,
                        np.ascontiguousarray(weights, dtype=np.float64), y_offsets,
                        y_labels, coupling_matrix, flat.entry_var, flat.degree,
                        *flat.pair_adjacency, int(max_iter), float(tol), float(rho),
                        values, residual, n_iter, converged, sums[0], sums[1], sums[2])
    grad_c, down_c, up_c = sums.sum(axis=1)
    return values, residual, grad_c - gold_pairs, down_c, up_c, n_iter, converged
