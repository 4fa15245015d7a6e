"""The compiled per-example engine of the incremental solvers.

A per-example solver visits one example at a time: score it, ask the decoder for its
(loss-augmented) MAP output, and move w along a sparse direction. In Python each visit
costs a fraction of a millisecond of interpreter work whatever the example; here a whole
pass runs in one compiled call (``_engine_kernels.py``).

Nothing in this module knows a decoder or a feature map by its type. The feature map
offers ``compiled_features(batch)`` (a :class:`~skstruct.features.CompiledFeatures`) and
the decoder offers ``compiled_oracle(task_loss, rescaling, y, y_offsets)`` (a
:class:`~skstruct.decoders._core.engine_protocol.CompiledOracle`); :func:`compiled_problem`
asks both and returns None when either has nothing to offer, and the solver then runs its
Python loop. The training loss says what it maximizes (its ``engine_form``): the
structured perceptron loss is plain MAP, the structured hinge has a task loss and a
rescaling.
"""

import numba
import numpy as np

from ..features._base import feature_map_hook
from . import _engine_kernels as kernels

__all__ = ["CompiledProblem", "compiled_problem", "loss_rescaling"]


def loss_rescaling(loss):
    """How the engine reads a training loss: (True, rescaling) or (False, None).

    The loss offers it (:meth:`~skstruct.losses.TrainingLoss.engine_form`): the
    structured perceptron loss is plain MAP (rescaling None); the structured hinge gives
    its ``rescaling``; any other loss (or a subclass, which may change the math) has no
    compiled form.
    """
    offer = getattr(loss, "engine_form", None)
    return (False, None) if offer is None else offer()


def compiled_problem(risk, rescaling):
    """The compiled form of ``risk`` for per-example passes, or None.

    Parameters
    ----------
    risk : RegularizedRisk
    rescaling : {None, "margin", "slack"}
        None for plain MAP (the perceptron); the task loss is the training loss's.

    Returns
    -------
    CompiledProblem or None
        None when the feature map has no ``compiled_features``, the decoder no
        ``compiled_oracle``, or the decoder has no compiled form for this task loss and
        rescaling. The decoder is told the features' ``n_unary``.
    """
    offer_oracle = getattr(risk.decoder, "compiled_oracle", None)
    if offer_oracle is None:
        return None
    features = feature_map_hook(risk.features, "compiled_features")(risk.batch)
    if features is None or features.n_params != risk.features.n_params:
        return None
    task_loss = None if rescaling is None else risk.loss.task_loss
    oracle = offer_oracle(task_loss, rescaling, risk.y, risk.batch.output_offsets,
                          n_unary=features.n_unary)
    if oracle is None:
        return None
    return CompiledProblem(features, oracle)


class CompiledProblem:
    """A feature map and an oracle in compiled form, and the passes that use them.

    Parameters
    ----------
    features : CompiledFeatures
    oracle : CompiledOracle
    """

    def __init__(self, features, oracle):
        self.features = features
        self.oracle = oracle

    @property
    def n_params(self):
        """Length of w."""
        return self.features.n_params

    def to_engine(self, w, copy=True):
        """``w`` (n_params,) in the engine's order: the rows of W permuted by
        ``features.column_order`` when the features have one.

        A new array, unless ``copy`` is False and W needs no permutation: then ``w``
        itself (float64 and C-contiguous; the caller hands it over, and the engine
        writes into it).
        """
        order = self.features.column_order
        if not copy and not order.shape[0]:
            return _owned(w)
        engine = np.array(w, dtype=np.float64)
        if order.shape[0]:
            engine[:order.shape[0]] = engine[order]
        return engine

    def to_user(self, engine, copy=True):
        """The inverse of :meth:`to_engine`: ``engine`` in column order, a new array
        unless ``copy`` is False and W needs no permutation (then ``engine`` itself:
        the engine hands it over and no longer writes into it)."""
        order = self.features.column_order
        if not copy and not order.shape[0]:
            return engine
        w = np.array(engine, dtype=np.float64)
        if order.shape[0]:
            w[order] = engine[:order.shape[0]]
        return w

    def blocks(self, w):
        """Views (W, b, pair) of a parameter vector ``w`` (``b`` empty without a bias)."""
        f = self.features
        cut = f.n_features * f.n_unary
        bias = f.n_unary if f.has_bias else 0
        return (w[:cut].reshape(f.n_features, f.n_unary), w[cut:cut + bias],
                w[cut + bias:])

    def hinge_primal(self, w, weights, lam):
        """P(w) = (λ/2) ‖w‖² + Σ_i ω_i H_i(w), the structured hinge of the oracle's
        rescaling: the H_i in one compiled pass, parallel over examples (no batch-sized
        temporaries), summed in example order, so P(w) is the same for any thread
        count."""
        values = np.empty(self.features.n_examples)
        engine = self.to_engine(w, copy=False)  # read only
        kernels.hinge_values(self.features, self.oracle, *self.blocks(engine),
                             values, 4 * numba.get_num_threads())
        return float(weights @ values) + 0.5 * lam * float(w @ w)

    def perceptron(self, w0, scales, averaging, adopt=False):
        """A :class:`PerceptronRun` from ``w0`` with update scales s_i = n ω_i (``adopt``:
        the run may take ``w0`` over instead of copying it)."""
        return PerceptronRun(self, w0, scales, averaging, adopt)

    def subgradient(self, w0, scales, lam, averaging, first_step, average=None,
                    adopt=False):
        """A :class:`SubgradientRun` (Pegasos steps) from ``w0`` and the running
        average ``average`` (None: w0; always copied); ``adopt`` as for
        :meth:`perceptron`."""
        return SubgradientRun(self, w0, scales, lam, averaging, first_step, average, adopt)

    def bcfw(self, weights, lam, averaging):
        """A :class:`BCFWRun` from w = 0, all blocks at their gold output."""
        return BCFWRun(self, weights, lam, averaging)


def _owned(w):
    """``w`` as a float64 C-contiguous writable array: itself when it is one."""
    if (isinstance(w, np.ndarray) and w.dtype == np.float64 and w.flags.c_contiguous
            and w.flags.writeable):
        return w
    return np.array(w, dtype=np.float64)


class PerceptronRun:
    """State of the averaged perceptron between compiled passes (see
    :func:`~skstruct.optim._engine_kernels.perceptron_pass`)."""

    def __init__(self, problem, w0, scales, averaging, adopt=False):
        self.problem = problem
        self.w = problem.to_engine(w0, copy=not adopt)
        self.acc = np.zeros(self.w.shape[0])
        self.scales = np.ascontiguousarray(scales, dtype=np.float64)
        self.averaging = bool(averaging)
        self.step = 0

    def run_pass(self, order):
        """One pass over ``order``; returns the number of mistakes."""
        p = self.problem
        self.step, mistakes = kernels.perceptron_pass(
            p.features, p.oracle, *p.blocks(self.w), *p.blocks(self.acc), self.scales,
            np.asarray(order, dtype=np.int64), self.step, self.averaging)
        return int(mistakes)

    def current(self):
        """The returned iterate (column order, a new array): the average of
        w_0 .. w_T, or w_T."""
        if not self.averaging:
            return self.problem.to_user(self.w)
        average = self.acc * (-1.0 / (self.step + 1))
        average += self.w
        return self.problem.to_user(average, copy=False)


class SubgradientRun:
    """State of Pegasos steps between compiled passes: w = a v and w̄ = α u + β v (see
    :func:`~skstruct.optim._engine_kernels.subgradient_pass`). After every pass both are
    made explicit again (a = α = 1, β = 0), which keeps the scalars near 1."""

    def __init__(self, problem, w0, scales, lam, averaging, first_step, average=None,
                 adopt=False):
        self.problem = problem
        self.v = problem.to_engine(w0, copy=not adopt)
        self.u = self.v.copy() if average is None else problem.to_engine(average)
        self.state = np.array([1.0, 1.0, 0.0])
        self.scales = np.ascontiguousarray(scales, dtype=np.float64)
        self.lam = float(lam)
        self.averaging = bool(averaging)
        self.first_step = int(first_step)
        self.step = int(first_step)

    def run_pass(self, order):
        """One pass over ``order``."""
        p = self.problem
        self.step = kernels.subgradient_pass(
            p.features, p.oracle, *p.blocks(self.v), self.state, *p.blocks(self.u),
            self.scales, self.lam, np.asarray(order, dtype=np.int64), self.step,
            self.first_step, self.averaging)
        a, alpha, beta = self.state
        self.v *= a
        if self.averaging:
            self.u *= alpha
            self.u += beta / a * self.v if a != 0 else 0.0
        self.state[:] = (1.0, 1.0, 0.0)

    def current(self):
        """The returned iterate (between passes, column order): w̄ or w."""
        return self.problem.to_user(self.u if self.averaging else self.v)


class BCFWRun:
    """State of block-coordinate Frank–Wolfe between compiled passes (see
    :func:`~skstruct.optim._engine_kernels.bcfw_pass`)."""

    def __init__(self, problem, weights, lam, averaging):
        self.problem = problem
        f = problem.features
        n = f.n_examples
        self.w = np.zeros(f.n_params)
        self.lazy = np.zeros(f.n_params)
        self.dual_unary = np.zeros((f.row_offsets[-1], f.n_unary))
        self.dual_pair = np.zeros((n, f.n_pair))
        self.ell = np.zeros(n)
        # Σ_i ℓ_i, its running average, the block gaps met during the last pass
        self.sums = np.zeros(3)
        self.weights = np.ascontiguousarray(weights, dtype=np.float64)
        self.lam = float(lam)
        self.averaging = bool(averaging)
        self.step = 0
        self._scratch = np.zeros((f.n_features, f.n_unary))
        self._slot = np.full(f.n_features, -1, dtype=np.int32)
        self._touched_list = np.zeros(f.n_features, dtype=np.int64)

    def run_pass(self, order):
        """One pass over ``order``."""
        p = self.problem
        self.sums[2] = 0.0
        self.step = kernels.bcfw_pass(
            p.features, p.oracle, *p.blocks(self.w), *p.blocks(self.lazy), self.dual_unary,
            self.dual_pair, self.ell, self.sums, self.weights, self.lam,
            np.asarray(order, dtype=np.int64), self.step, self.averaging, self._scratch,
            self._slot, self._touched_list)

    @property
    def gap_estimate(self):
        """The block gaps of the last pass added up (each at the w of its step)."""
        return float(self.sums[2])

    def current(self):
        """(w̄, averaged Σ ℓ) with averaging, else (w, Σ ℓ); w̄ and w in column order."""
        to_user = self.problem.to_user
        if self.averaging:
            average = self.lazy * (-2.0 / ((self.step + 1) * (self.step + 2)))
            average += self.w
            return to_user(average, copy=False), self.sums[1]
        return to_user(self.w), float(self.ell.sum())
