"""The solution of SparseMAP, whatever solver produced it, and the options every solver takes.

A solver returns a :class:`SparseMAPResult` built from the unary marginals u*, per-example
diagnostics and a *support*: an object that knows the structures of every example's sparse
distribution and their weights, stored ragged (example ``e`` owns positions
``ptr[e]:ptr[e + 1]`` of flat arrays). A support provides

- ``ptr`` (n_examples + 1,) int64 and ``weights`` (ptr[-1],) float64, positive and summing
  to one per example;
- ``outputs(positions)``: the encoded outputs of the structures at those flat positions,
  stacked as a decoder batch (one row, or one block of tokens, per position);
- ``split(outputs, count)``: that batch as a list of ``count`` per-structure arrays;
- ``combine(coefficients)``: Σ_k coefficients[ptr[e] + k] a_k per example, as a part
  container (the structures' part vectors weighted by ragged coefficients);
- ``marginals()``: μ* = Σ_k weights[ptr[e] + k] a_k as a part container (a closed form
  returns its exact solution rather than the recombined one);
- ``check_backward(method)``: raise when the solution has no backward pass;
- ``vjp(upstream)``: the backward pass for an upstream gradient on the flat unary marginals,
  as a part container.
"""

import numpy as np

__all__ = ["SparseMAPResult", "check_options", "check_init", "check_scores", "METHODS"]

#: The solvers ``method`` names; closed forms answer "active_set" and hand the others to
#: the generic solver (they are approximations one asks for explicitly).
METHODS = ("active_set", "away_fw", "fw", "pairwise_fw")


def check_options(method, max_iter, tol, max_inner):
    """Validate the options every SparseMAP solver takes; returns ``(max_iter, max_inner)``."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {sorted(METHODS)}; got {method!r}.")
    max_iter = int(max_iter)
    if max_iter < 1:
        raise ValueError(f"max_iter must be >= 1; got {max_iter}.")
    if not tol >= 0:
        raise ValueError(f"tol must be >= 0; got {tol}.")
    max_inner = int(max_inner)
    if max_inner < 1:
        raise ValueError(f"max_inner must be >= 1; got {max_inner}.")
    return max_iter, max_inner


def check_init(init, scores):
    """An earlier solution to start from must be a result for the same examples."""
    if init is None:
        return
    if not isinstance(init, SparseMAPResult):
        raise TypeError(f"init must be a SparseMAPResult; got {type(init).__name__}.")
    n = scores.n_examples
    if init.n_examples != n or not (
            np.array_equal(init._scores.offsets, scores.offsets)
            and np.array_equal(init._scores.unary_offsets, scores.unary_offsets)):
        raise ValueError(
            "init must solve the same examples (the same sizes) as the scores; it has "
            f"{init.n_examples} examples, the scores {n}."
        )


def check_scores(scores):
    """The flat unary scores as float64; NaN and +inf are rejected (-inf forbids a part)."""
    if scores.n_examples == 0:
        raise ValueError("SparseMAP needs at least one example; the batch is empty.")
    flat = np.ascontiguousarray(scores.unary, dtype=np.float64).reshape(-1)
    if np.isnan(flat).any() or np.isposinf(flat).any():
        raise ValueError("The scores contain NaN or +inf (-inf forbids a part).")
    return flat


class SparseMAPResult:
    """The solution of SparseMAP for a batch of examples.

    Attributes
    ----------
    unary : ndarray, shaped like ``scores.unary``
        u*, the unique unary marginals.
    marginals : part container
        μ* = [u*; v*] = Σ_s p_s a_s, laid out like the decoder's parts (for chains, the
        expected transition counts are the additional marginals v*).
    n_iter : ndarray of shape (n_examples,)
        Solver iterations per example: MAP calls for the active set and Frank–Wolfe, 1 for
        a closed form.
    gap : ndarray of shape (n_examples,)
        Final Frank–Wolfe gap max_s ⟨η − [u; 0], a_s − μ⟩ ≥ 0 (an upper bound on the
        distance to the optimum, in objective value); 0 for a closed form.
    objective : ndarray of shape (n_examples,)
        ηᵀμ − ½‖u‖² per example.
    converged : ndarray of shape (n_examples,), bool
    support_size : ndarray of shape (n_examples,)
        Number of structures in each example's distribution.
    method : str
        The solver that produced it (``"active_set"``, ``"fw"``, ``"away_fw"``,
        ``"pairwise_fw"``, or a closed form: ``"sparsemax"``, ``"clip"``).
    """

    def __init__(self, decoder, scores, support, unary, n_iter, gap, objective, converged,
                 method):
        self._decoder = decoder
        self._scores = scores
        self._support = support
        self.method = method
        self.support_size = np.diff(support.ptr)
        self.unary = np.asarray(unary).reshape(np.shape(scores.unary))
        self.n_iter = n_iter
        self.gap = gap
        self.objective = objective
        self.converged = converged
        self._marginals = None

    @property
    def n_examples(self):
        return self.support_size.shape[0]

    def combine(self, coefficients):
        """Σ_k coefficients[e, k] a_{s_k} over the support of every example, as parts.

        Parameters
        ----------
        coefficients : ndarray of shape (n_examples, K), K >= support_size.max()
            Column ``k`` weighs the ``k``-th structure of each example's support (in the
            order of the support, not of :meth:`distribution`).
        """
        coefficients = np.asarray(coefficients, dtype=np.float64)
        ptr = self._support.ptr
        example = np.repeat(np.arange(self.n_examples), self.support_size)
        rank = np.arange(ptr[-1]) - ptr[example]
        return self._support.combine(coefficients[example, rank])

    @property
    def marginals(self):
        if self._marginals is None:
            self._marginals = self._support.marginals()
        return self._marginals

    def distribution(self, i):
        """The support of example ``i``: its structures and their weights.

        Returns
        -------
        outputs : list of ndarray
            Encoded outputs, by decreasing weight.
        weights : ndarray of shape (support_size,)
            Positive, summing to one.
        """
        start, stop = self._support.ptr[i], self._support.ptr[i + 1]
        weights = self._support.weights[start:stop]
        order = np.argsort(-weights, kind="stable")
        positions = start + order
        outputs = self._support.split(self._support.outputs(positions), positions.shape[0])
        return outputs, weights[order].copy()

    def vjp(self, grad_unary):
        """Backward pass: the gradient with respect to η of ⟨grad_unary, u*(η)⟩.

        For the active set, by Proposition 1 of Niculae et al. (2018), on the final support
        I, ∂u/∂η = M_I D A_Iᵀ with D = Z − (Z1)(Z1)ᵀ / (1ᵀZ1) and Z = (M_IᵀM_I)⁻¹, so the
        vector–Jacobian product is A_I D (M_Iᵀ p), a combination of the support's part
        vectors. A closed form gives the Jacobian of its own formula (sparsemax:
        diag(s) − ssᵀ / size(S); clipping: diag(0 < η < 1)). The unary block of the Jacobian is
        symmetric, so this is also the Jacobian–vector product for a direction on η_U.

        Parameters
        ----------
        grad_unary : ndarray shaped like ``unary``
            Upstream gradient p on u*.

        Returns
        -------
        part container
            [∂/∂η_U; ∂/∂η_V] of ⟨p, u*⟩, laid out like the decoder's parts.
        """
        self._support.check_backward(self.method)
        if np.shape(grad_unary) != self.unary.shape:
            raise ValueError(
                f"grad_unary has shape {np.shape(grad_unary)}; expected {self.unary.shape}, "
                "the shape of the unary marginals."
            )
        upstream = np.ascontiguousarray(grad_unary, dtype=np.float64).reshape(-1)
        return self._support.vjp(upstream)
