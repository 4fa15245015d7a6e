"""Block-coordinate Frank–Wolfe on the dual of the structured SVM (margin rescaling)."""

import copy

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from ._bcfw_pairwise import PairwiseBCFW, keeps_warm_starts, per_example_warm_starts
from ._engine import compiled_problem, loss_rescaling
from ._overlap import drive_passes, overlap_threads
from ._progress import Progress
from ._result import STOPPED_BY_CALLBACK, OptimizeResult
from ._subgradient import pass_order

__all__ = ["minimize_bcfw", "structured_hinge_primal"]


def structured_hinge_primal(risk, w):
    """Primal objective λ/2 ‖w‖² + Σ_i ω_i H_i(w) and the hinge values H_i (batched)."""
    values = risk.loss_values(w)
    return float(risk.weights @ values) + 0.5 * risk.alpha * float(w @ w), values


def minimize_bcfw(
    risk, *, max_iter=50, tol=1e-3, averaging=True, random_state=None, verbose=0,
    callback=None, printer=print, shuffle=True, state=None, batch_weight=None,
    check_gap_every=10, steps="auto", _force_python=False,
):
    """Structured SVM by block-coordinate Frank–Wolfe on the dual.

    Minimizes P(w) = (λ/2) ‖w‖² + Σ_i ω_i H_i(w), H_i the margin-rescaled structured hinge
    of example i and ω_i its normalized weight (1/n by default). The dual variables of
    block i are kept in part space: w_i = (ω_i / λ) A_iᵀ c_i with c_i a convex combination
    of a_{y_i} − a_y, so memory is the size of the examples' parts, not n copies of w.

    Parameters
    ----------
    risk : RegularizedRisk
        With a :class:`~skstruct.losses.StructuredHingeLoss` with ``rescaling="margin"``
        and a feature map that has ``example_transpose``.
    max_iter : int, default=50
        Number of passes over the examples.
    tol : float, default=1e-3
        Stop when the duality gap P(w) − D(α) is at most ``tol``. The gap is computed
        exactly, with one batched loss-augmented inference over all examples, after the
        passes that ``check_gap_every`` chooses, and the run stops only on such an exact
        gap. On large problems with two or more compiled threads, the gap of pass k is
        computed in a second thread while pass k + 1 runs; the result is the same (the
        pass after the stopping one is discarded).
    averaging : bool, default=True
        Return the weighted average w̄_k = k/(k+2) w̄_{k−1} + 2/(k+2) w_k of the iterates
        (and its dual) instead of the last iterate. It is kept lazily, with sparse work
        per step: w̄_k = w_k − B_k / T_k with T_k = (k+1)(k+2)/2 and B_k the sum of
        m(m+1)/2 · Δw_m over the steps m ≤ k.
    random_state : int, RandomState or None
        Order of the examples in each pass.
    verbose, callback, printer
        As for :func:`~skstruct.optim.minimize_lbfgs`; the callback receives the pass
        number, w and the primal objective.
    shuffle : bool, default=True
        Visit the examples in a new random order each pass; False: in their order.
    state : dict or None, default=None
        To continue on new examples (``partial_fit``): the ``extra["state"]`` of the
        previous run, or an empty dict for a first run. See Notes.
    batch_weight : float, default=None
        The total (unnormalized) sample weight of these examples, which weighs them
        against the ``seen_weight`` of the state; None: their number.
    check_gap_every : int, default=10
        The exact duality gap (and the primal objective) is computed after every
        ``check_gap_every``-th pass, after the last pass, and after every pass whose
        running estimate of the gap is at most ``tol``: the sum over the pass's steps of
        the block gaps g_i = ω_i ⟨d, η_i⟩ − ℓ_i + ω_i Δ_i(ŷ), the numerators of the line
        searches, which the pass computes anyway (Lacoste-Julien et al., 2013). Each
        g_i is taken at the w of its step, so the estimate certifies nothing; it only
        asks for the exact gap early, and with ``tol=0`` it never does. The exact gap
        costs about 40 % of a pass on chains (one loss-augmented inference per example
        without the updates). 1: after every pass. The fitted model after a given
        number of passes does not depend on it; a run stopped by ``tol`` may stop later
        than with 1, by at most ``check_gap_every − 1`` passes.
    steps : {"auto", "frank_wolfe", "pairwise"}, default="auto"
        ``"frank_wolfe"``: the steps of Lacoste-Julien et al. (2013), one oracle call
        each. ``"pairwise"``: pairwise steps between the outputs each block holds, and
        after each pass of the oracle, passes over the held outputs without calling it
        (:class:`~skstruct.optim._bcfw_pairwise.PairwiseBCFW`; ``averaging`` does not
        apply, the iterate is the last one; not with ``state``). ``"auto"``:
        ``"pairwise"`` when the oracle is an iterative solver that keeps a warm start
        per example (the factor graph's LP-MAP by ADMM: a call costs hundreds of
        steps), else ``"frank_wolfe"``.

    Returns
    -------
    OptimizeResult
        ``objective_curve`` holds the primal objective and ``duality_gaps`` the gap after
        each pass, NaN after the passes where they were not computed
        (``check_gap_every``; the gap also when continuing a ``state``: it needs the
        earlier examples); the last entry is always computed. ``extra["gap_estimates"]``
        holds the running estimate of every pass. With ``state``, ``extra["state"]`` is
        the state after the last pass reported.

    Notes
    -----
    One step on block i: ŷ = loss-augmented MAP, d = c_i − (a_{y_i} − a_ŷ),
    γ = clip([ω_i d·η_i − ℓ_i + ω_i Δ_i(ŷ)] / [(ω_i² / λ) ‖A_iᵀ d‖²], 0, 1),
    w ← w − γ (ω_i / λ) A_iᵀ d, c_i ← c_i − γ d, ℓ_i ← (1 − γ) ℓ_i + γ ω_i Δ_i(ŷ), with
    η_i = A_i w the part scores of example i. A_iᵀ d touches only the parameters of the
    features present in example i.

    When the feature map and the decoder offer a compiled form
    (:func:`~skstruct.optim._engine.compiled_problem`), every pass is one compiled call
    (:func:`~skstruct.optim._engine_kernels.bcfw_pass`) with the same arithmetic;
    the primal objective of the duality gap is then evaluated by the same oracle in one
    compiled pass. Otherwise the steps run as a Python loop and the gap uses the batched
    :func:`structured_hinge_primal`.

    **Continuing on new examples** (``state``). The dual blocks of earlier examples
    cannot be kept (their parts are gone with their data), but their sum can: the state
    holds w = Σ_{earlier} (ω_i / λ) A_iᵀ c_i, its lazy average, the step counter, the
    dual values Σ ℓ_i and their average, and the total weight S of the earlier
    examples. The run continues from them unchanged, its own blocks starting at their
    gold output (c_i = 0) with weights ω_i B / (S + B), B the total weight of its
    examples: each example weighs s_i / (the total weight seen up to its run). The
    iterates then stay the primal points of a dual over all examples seen so far, the
    earlier blocks frozen, and every step still increases that dual; what is lost is
    convergence to :meth:`fit`'s optimum over the union: that problem weighs every
    example alike, earlier runs' examples here count more (the effective regularization
    of K runs of equal size is about λ / ln K), the frozen blocks are never revisited,
    and the duality gap cannot be computed without the earlier examples. The reported
    objective is that of these examples alone (their normalized weights).

    References
    ----------
    Lacoste-Julien, Jaggi, Schmidt & Pletscher (2013). Block-coordinate Frank–Wolfe
    optimization for structural SVMs. ICML.
    """
    if risk.loss.rescaling != "margin":
        raise ValueError("BCFW solves the structured SVM with margin rescaling only.")
    if (isinstance(check_gap_every, bool) or int(check_gap_every) != check_gap_every
            or check_gap_every < 1):
        raise ValueError(f"check_gap_every must be a positive integer, got "
                         f"{check_gap_every!r}.")
    check_gap_every = int(check_gap_every)
    if steps not in ("auto", "frank_wolfe", "pairwise"):
        raise ValueError(f"steps must be 'auto', 'frank_wolfe' or 'pairwise', got "
                         f"{steps!r}.")
    rng = check_random_state(random_state)
    lam = risk.alpha
    if lam <= 0:
        raise ValueError("BCFW needs a positive regularization strength alpha.")
    n = risk.n_examples
    known, rescaling = loss_rescaling(risk.loss)
    problem = None if (_force_python or not known) else compiled_problem(risk, rescaling)
    batch_weight = float(n if batch_weight is None else batch_weight)
    seen = float(state.get("seen_weight", 0.0)) if state else 0.0
    weights = risk.weights * (batch_weight / (seen + batch_weight))
    if steps == "auto":
        steps = ("pairwise" if keeps_warm_starts(risk) and problem is None
                 and state is None else "frank_wolfe")
    if steps == "pairwise" and state is not None:
        raise ValueError("steps='pairwise' does not continue a state (partial_fit); use "
                         "steps='frank_wolfe'.")
    if steps == "pairwise":
        block_bytes = _block_bytes(risk)
        run = PairwiseBCFW(risk, lam, weights, max_block_bytes=block_bytes,
                           max_total_bytes=None if block_bytes is None
                           else block_bytes * n // 2)
        to_engine = to_user = np.array
        primal_risk = _sparse_view(risk)

        def primal_of(w):
            return structured_hinge_primal(primal_risk, w)[0]
    elif problem is not None:
        run = problem.bcfw(weights, lam, averaging)
        to_engine, to_user = problem.to_engine, problem.to_user

        def primal_of(w):
            return problem.hinge_primal(w, risk.weights, lam)
    else:
        run = _PythonBCFW(risk, lam, averaging, weights)
        to_engine = to_user = np.array
        primal_risk = _sparse_view(risk)

        def primal_of(w):
            return structured_hinge_primal(primal_risk, w)[0]
    if state:
        _restore_bcfw(run, problem is not None, state, to_engine)
    progress = Progress(verbose, callback, printer, unit="pass", max_iter=max_iter)
    status = {"message": "maximum number of passes reached", "converged": False}
    gaps = []
    keep = state is not None
    continuing = bool(state)
    # with several passes one may run ahead of the last one reported: copy the state
    # after each; after a single pass, the run's state is the reported one
    eager = keep and max_iter > 1

    def state_now():
        return _bcfw_state(run, problem is not None, to_user, seen + batch_weight,
                           copy=eager)

    estimates = []

    def evaluate_after(n_pass):
        """Whether to compute the exact gap after pass ``n_pass`` (see check_gap_every)."""
        estimate = run.gap_estimate
        estimates.append(estimate)
        return n_pass % check_gap_every == 0 or estimate <= tol

    def snapshot():
        return (*run.current(), run.step, state_now() if eager else None, len(estimates))

    def evaluate(snap):
        """(P(w̄), P(w̄) − D) for a snapshot (w̄, Σ ℓ, steps): D = Σ ℓ − (λ/2) ‖w̄‖²."""
        w, dual_sum = snap[0], snap[1]
        primal = primal_of(w)
        if continuing:
            return primal, float("nan")
        return primal, primal - (dual_sum - 0.5 * lam * float(w @ w))

    def on_value(snap, value):
        primal, gap = value
        gaps.append(gap)
        if progress.report(snap[0], primal, gap=gap, iteration=snap[4]):
            status.update(message=STOPPED_BY_CALLBACK, converged=False)
            return True
        if gap <= tol:
            status.update(message="duality gap below tol", converged=True)
            return True
        return False

    if max_iter >= 1:
        snap = drive_passes(run, pass_order(rng, n, shuffle), snapshot, evaluate, on_value,
                            max_iter, overlap_threads(problem), evaluate_after)
    else:
        snap = snapshot()
    n_iter = progress.n_iter
    curve = np.full(n_iter, np.nan)
    gap_curve = np.full(n_iter, np.nan)
    done = np.asarray(progress.iterations, dtype=np.int64) - 1
    curve[done] = progress.curve
    gap_curve[done] = gaps
    extra = {"gap_estimates": estimates[:n_iter], "steps": steps}
    if steps == "pairwise":
        extra["cached_passes"] = run.cached_passes[:n_iter]
    if keep:
        extra["state"] = snap[3] if eager else state_now()
    return OptimizeResult(
        w=snap[0], n_iter=n_iter, converged=status["converged"],
        objective_curve=curve.tolist(), message=status["message"],
        n_evaluations=snap[2], duality_gaps=gap_curve.tolist(), extra=extra,
    )


def _block_bytes(risk):
    """The bytes one block's held outputs may take (pairwise steps): what the decoder
    counts for a dual block in its memory estimates (``dual_block_bytes``), or None
    (no limit) when it counts none."""
    offer = getattr(risk.decoder, "dual_block_bytes", None)
    return None if offer is None else int(offer())


def _restore_bcfw(run, compiled, state, to_engine):
    """Continue ``run`` from a previous run's ``state``: w, its lazy average, the step
    counter and the dual sums. A compiled run takes the state's arrays over (it writes
    into them; the state it returns replaces this one)."""
    hand_over = {"copy": False} if compiled else {}
    run.w = to_engine(state["w"], **hand_over)
    if state.get("lazy") is not None:
        run.lazy = to_engine(state["lazy"], **hand_over)
    run.step = int(state["step"])
    if compiled:
        run.sums[:2] = state["dual_sums"]
    else:
        run.ell_total, run.ell_avg_total = state["dual_sums"]


def _bcfw_state(run, compiled, to_user, seen_weight, copy=True):
    """The ``state`` that :func:`minimize_bcfw` continues from, column order; with
    ``copy`` False (the run is over), a compiled run's own arrays when no permutation is
    needed."""
    if compiled:
        dual_sums = (float(run.sums[0]), float(run.sums[1]))
    else:
        dual_sums = (run.ell_total, run.ell_avg_total)
    hand_over = {"copy": False} if compiled and not copy else {}
    return {"w": to_user(run.w, **hand_over),
            "lazy": to_user(run.lazy, **hand_over) if run.averaging else None,
            "step": run.step, "dual_sums": dual_sums, "seen_weight": seen_weight}


class _PythonBCFW:
    """The BCFW steps as a Python loop (any decoder and feature map with
    ``example_transpose``); the same arithmetic as the compiled pass."""

    def __init__(self, risk, lam, averaging, weights=None):
        self.risk, self.lam, self.averaging = risk, lam, averaging
        self.weights = risk.weights if weights is None else weights
        n_params = risk.features.n_params
        self.w = np.zeros(n_params)
        self.lazy = np.zeros(n_params)
        # c_i = 0 for all i: every block at its gold output, None until its first
        # step (no batch of zero parts is built). The gold parts of a block are rebuilt
        # at its step (not kept for all examples: as large as the duals). A block whose
        # parts offer it is kept compact (_keep_block)
        self.duals = [None] * risk.n_examples
        # one warm start per example for an oracle that offers it (LP-MAP by ADMM)
        self.warm = per_example_warm_starts(risk)
        self.ell = np.zeros(risk.n_examples)
        self.ell_total = 0.0
        self.ell_avg_total = 0.0
        self.gap_estimate = 0.0
        self.step = 0
        self.examples = [risk.example(i) for i in range(risk.n_examples)]

    def run_pass(self, order):
        risk, w, lam, ell = self.risk, self.w, self.lam, self.ell
        features, decoder, omega = risk.features, risk.decoder, self.weights
        self.gap_estimate = 0.0
        for i in order:
            batch_i, y_i = self.examples[i]
            scores_i = features.scores(batch_i, w)
            if self.warm is None:
                y_hat, delta = risk.loss.loss_augmented(decoder, scores_i, y_i)
            else:
                y_hat, delta = risk.loss.loss_augmented(decoder, scores_i, y_i,
                                                        warm_start=self.warm[i])
            shift = decoder.parts(scores_i, y_i) - decoder.parts(scores_i, y_hat)
            c_i = _open_block(self.duals[i])
            d = shift * -1.0 if c_i is None else c_i - shift
            indices, values = features.example_transpose(batch_i, d)
            curvature = omega[i] ** 2 / lam * float(values @ values)
            ell_s = omega[i] * float(delta[0])
            numerator = omega[i] * float(d.dot(scores_i)[0]) - ell[i] + ell_s
            self.gap_estimate += numerator
            gamma = min(max(numerator / curvature, 0.0), 1.0) if curvature > 0 else 0.0
            update = (gamma * omega[i] / lam) * values
            w[indices] -= update
            if self.averaging:
                self.lazy[indices] -= (self.step + 1) * (self.step + 2) / 2.0 * update
            moved = d * gamma
            self.duals[i] = _keep_block(moved * -1.0 if c_i is None else c_i - moved)
            self.ell_total += gamma * (ell_s - ell[i])
            ell[i] += gamma * (ell_s - ell[i])
            self.step += 1
            self.ell_avg_total += (2.0 / (self.step + 2)) * (self.ell_total
                                                             - self.ell_avg_total)

    def current(self):
        if self.averaging:
            return (self.w - self.lazy / ((self.step + 1) * (self.step + 2) / 2.0),
                    self.ell_avg_total)
        return self.w.copy(), float(self.ell.sum())


def _keep_block(block):
    """A dual block as it is kept between its steps: ``block.compact()`` when its parts
    offer it (an object whose ``expand()`` gives the parts back exactly, in fewer
    bytes when most entries are zeros), else the parts themselves."""
    compact = getattr(block, "compact", None)
    return block if compact is None else compact()


def _open_block(kept):
    """The parts of a kept dual block (:func:`_keep_block`); None (c_i = 0) as it is."""
    expand = getattr(kept, "expand", None)
    return kept if expand is None else expand()


def _sparse_view(risk):
    """The same objective on CSR features when dense features are mostly zeros.

    The duality gap needs the scores of all examples after a pass; with sparse
    pixels or indicator features the CSR product does a fraction of the work.
    """
    X = risk.batch.X
    if not isinstance(X, np.ndarray) or np.count_nonzero(X) > 0.5 * X.size:
        return risk  # sparse already, or a feature form of its own
    view = copy.copy(risk)
    view.batch = risk.batch.with_features(sp.csr_matrix(X))
    return view
