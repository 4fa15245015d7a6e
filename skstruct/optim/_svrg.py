"""SVRG on the smoothed structured hinge, through the compiled per-example engine."""

import numpy as np
from sklearn.utils import check_random_state

from ._engine import compiled_problem, loss_rescaling
from ._engine_kernels import _balanced_chunks
from ._progress import Progress
from ._result import STOPPED_BY_CALLBACK, OptimizeResult
from . import _svrg_kernels as kernels

__all__ = ["SMOOTHINGS", "SmoothedProblem", "minimize_svrg", "smoothed_problem"]

#: Smoothing names and their oracle codes.
SMOOTHINGS = {"entropy": 0, "l2": 1}

#: The default smoothing schedule (``mu=None``): μ_k = MU_START · MU_DECAY^k at epoch k,
#: with the automatic step ``STEP_SCALE`` / (L_μk + λ) shrinking with μ_k (the smoothed
#: objective's smoothness constant is proportional to 1/μ).
MU_START = 1.0
MU_DECAY = 0.95
STEP_SCALE = 2.0

#: Chunks of the full-gradient pass: fixed, so that ḡ (summed chunk by chunk in order)
#: is the same for any number of threads.
GRADIENT_CHUNKS = 8


def _supports(oracle, smoothing):
    try:
        from ..decoders._engine.smoothed import supports_smoothed
    except ImportError:
        return False
    return bool(supports_smoothed(oracle, smoothing))


def smoothed_problem(risk, smoothing, top_k, solver):
    """The compiled problem of ``risk`` for smoothed steps, or a ValueError saying why not.

    Parameters
    ----------
    risk : RegularizedRisk
        With a :class:`~skstruct.losses.StructuredHingeLoss` under margin rescaling.
    smoothing : {"entropy", "l2"}
    top_k : int
    solver : str
        The solver's name, for the messages.

    Returns
    -------
    SmoothedProblem
    """
    if smoothing not in SMOOTHINGS:
        raise ValueError(f"smoothing must be one of {sorted(SMOOTHINGS)}, got {smoothing!r}.")
    if risk.loss.rescaling != "margin":
        raise ValueError(f"solver={solver!r} smooths the structured hinge under margin "
                         "rescaling only.")
    if risk.alpha <= 0:
        raise ValueError(f"solver={solver!r} needs a positive regularization strength.")
    known, rescaling = loss_rescaling(risk.loss)
    problem = compiled_problem(risk, rescaling) if known else None
    if problem is None or not _supports(problem.oracle, smoothing):
        decoder = type(risk.decoder).__name__
        task_loss = type(risk.loss.task_loss).__name__
        raise ValueError(
            f"solver={solver!r} needs a compiled smoothed oracle ({smoothing} smoothing), "
            f"which {decoder} with the task loss {task_loss} does not offer. Smoothed "
            "oracles exist for the built-in decoders (chain, multiclass, multilabel; trees "
            "with entropy smoothing) with task losses that decompose over parts (Hamming) "
            "under margin rescaling, and the built-in feature maps; use solver='bcfw', "
            "'subgradient' or 'cutting_plane' otherwise.")
    return SmoothedProblem(problem, SMOOTHINGS[smoothing], top_k, risk.weights, risk.alpha,
                           solver=solver)


def smoothness_estimate(problem, weights):
    """An estimate of L·μ, the smoothness of the data term times μ.

    The mean over examples of s_i · 2 (‖x_r‖² (+ 1 with a bias) + 2 with pair
    parameters) averaged over the example's rows r: the squared norm of
    A_iᵀ(a_y − a_{y'}) for two outputs that differ at one row (a unary part and, on a
    chain, two transitions each). A smoothed loss f_i = h_μ(A_iᵀ w) has a gradient of
    Lipschitz constant ‖A_i‖² / μ at most, which counts outputs that differ everywhere;
    near the optimum the outputs that share the smoothing's weight differ at few rows,
    and the per-row value gives the practical step size (the paper tunes L instead).
    """
    f = problem.features
    n = f.n_examples
    offsets = np.asarray(f.row_offsets)
    indptr = np.asarray(f.indptr)
    counts = np.diff(indptr)
    row_of_entry = np.repeat(np.arange(counts.shape[0]), counts)
    data = np.ones(indptr[-1]) if f.binary else np.asarray(f.data)
    row_norms = np.bincount(row_of_entry, weights=data * data, minlength=counts.shape[0])
    if f.has_bias:
        row_norms += 1.0
    if f.n_pair:
        row_norms += 2.0
    cumulative = np.concatenate([[0.0], np.cumsum(row_norms)])
    rows = np.maximum(np.diff(offsets), 1)
    per_row = (cumulative[offsets[1:]] - cumulative[offsets[:-1]]) / rows
    scales = n * np.asarray(weights, dtype=np.float64)
    return max(float(np.mean(scales * 2.0 * per_row)), 1e-12)


class SmoothedProblem:
    """A compiled problem with the state of SVRG epochs on its smoothed hinge.

    Parameters
    ----------
    problem : CompiledProblem
    smoothing : int
        0 entropy, 1 ℓ2 (top-K).
    top_k : int
    weights : ndarray of shape (n_examples,)
        ω_i.
    lam : float
        λ.
    solver : str, default="svrg"
        The solver's name (the estimator's ``solver``), for the messages.
    free : ndarray of shape (n_params,) or None, default=None
        Nonzero for the parameters the epochs train, in the engine's order; the others
        are held at zero (ḡ is zero there and the steps do not write them). None: all.

    The loss is the oracle's: margin rescaling gives the smoothed structured hinge; an
    oracle of plain MAP (rescaling None, no costs) a smooth loss without hinge (with
    entropy smoothing and μ = 1, the CRF's negative log-likelihood).
    """

    def __init__(self, problem, smoothing, top_k, weights, lam, solver="svrg", free=None):
        self.problem = problem
        self.solver = solver
        self.smoothing = int(smoothing)
        self.top_k = int(top_k)
        self.weights = np.ascontiguousarray(weights, dtype=np.float64)
        self.lam = float(lam)
        f = problem.features
        n = f.n_examples
        self.n_examples = n
        self.anchor_unary = np.zeros((f.row_offsets[-1], f.n_unary))
        self.anchor_pair = np.zeros((n, f.n_pair))
        self.values = np.zeros(n)
        self.exact = np.zeros(n, dtype=np.uint8)
        n_chunks = max(1, min(GRADIENT_CHUNKS, n))
        self.bounds = _balanced_chunks(f, n_chunks)
        self.grads = np.zeros((n_chunks, f.n_params))
        self.scales = n * self.weights
        self.free = None if free is None else np.ascontiguousarray(free, dtype=np.uint8)
        self._free_blocks = _free_blocks(problem, self.free)
        self.oracle_calls = 0
        self.inexact = 0

    def full_gradient(self, w, mu):
        """(ḡ, Σ_i ω_i f_i(w)) at ``w`` (engine order): ḡ = Σ_i ω_i ∇f_i(w) (zero at
        the held parameters), the d_i(w) kept as the anchor's."""
        p = self.problem
        kernels.full_gradient(
            p.features, p.oracle, self.smoothing, float(mu), self.top_k,
            *p.blocks(w), self.weights, self.anchor_unary, self.anchor_pair, self.values,
            self.exact, self.grads, self.bounds)
        self.oracle_calls += self.n_examples
        self.inexact += int(self.n_examples - self.exact.sum())
        gbar = self.grads.sum(axis=0)
        if self.free is not None:
            gbar *= self.free
        return gbar, float(self.weights @ self.values)

    def epoch(self, w_start, mu, eta, kappa, center, order, averaging=True, lazy=True):
        """One SVRG epoch from (and anchored at) ``w_start`` (engine order).

        Minimizes Σ_i ω_i f_i(w) + (λ/2)‖w‖² + (κ/2)‖w − center‖² (``center`` ignored
        when κ = 0) with ``len(order)`` steps of size ``eta``: :meth:`full_gradient` at
        ``w_start``, then :meth:`steps`.

        Returns
        -------
        w : ndarray of shape (n_params,)
            The average of the iterates w_1 .. w_T (``averaging``) or w_T, engine order.
        smoothed : float
            Σ_i ω_i f_i(w_start), the smoothed data term at the anchor.
        """
        self._check_step(eta, kappa)
        gbar, smoothed = self.full_gradient(w_start, mu)
        return self.steps(w_start, gbar, mu, eta, kappa, center, order, averaging,
                          lazy), smoothed

    def _check_step(self, eta, kappa):
        """Raise unless 0 < η < 1 / (λ + κ); η is the estimator's ``learning_rate``."""
        if 0 < eta and eta * (self.lam + kappa) < 1:
            return
        if kappa:
            bound = (f"1 / (alpha + kappa) = {1 / (self.lam + kappa):g} (alpha = "
                     f"{self.lam:g}, kappa = {kappa:g})")
        else:
            bound = f"1 / alpha = {1 / self.lam:g}" if self.lam > 0 else "infinity"
        raise ValueError(
            f"solver='{self.solver}' needs 0 < learning_rate < {bound}; got "
            f"learning_rate={eta:g}. Lower learning_rate, or use learning_rate='auto'."
        )

    def steps(self, w_start, gbar, mu, eta, kappa, center, order, averaging=True,
              lazy=True):
        """The steps of an SVRG epoch anchored at the point of the last
        :meth:`full_gradient` call, whose ḡ is ``gbar``, from ``w_start`` (usually that
        point); the average of the iterates (``averaging``) or the last one."""
        self._check_step(eta, kappa)
        p = self.problem
        x = eta * (self.lam + kappa)
        c = gbar - kappa * center if kappa > 0 else gbar
        w = np.array(w_start, dtype=np.float64)
        acc = np.zeros_like(w)
        order = np.ascontiguousarray(order, dtype=np.int64)
        last = np.zeros(p.features.n_features, dtype=np.int64)
        W, b, pair = p.blocks(w)
        aW, ab, ap = p.blocks(acc)
        cW, cb, cp = p.blocks(c)
        self.inexact += kernels.svrg_epoch(
            p.features, p.oracle, self.smoothing, float(mu), self.top_k,
            W, b, pair, aW, ab, ap, cW, cb, cp, last, self.anchor_unary, self.anchor_pair,
            self.scales, float(eta), float(x), order, bool(averaging), bool(lazy),
            *self._free_blocks)
        steps = order.shape[0]
        kernels.catch_up_all(W, aW, cW, last, steps, float(eta), float(x),
                             bool(averaging))
        self.oracle_calls += steps
        if averaging and steps:
            w = (acc - w_start + w) / steps
        return w


def _free_blocks(problem, free):
    """The (W, b, pair) blocks of the mask ``free`` for :func:`~._svrg_kernels.svrg_epoch`,
    or empty blocks (W of shape (0, 0)) when every parameter is free."""
    if free is None:
        return (np.zeros((0, 0), dtype=np.uint8), np.zeros(0, dtype=np.uint8),
                np.zeros(0, dtype=np.uint8))
    return problem.blocks(free)


def minimize_svrg(
    risk, w0=None, *, max_iter=50, tol=0.0, smoothing="l2", mu=None, top_k=5,
    learning_rate="auto", averaging=True, random_state=None, verbose=0, callback=None,
    printer=print, shuffle=True, state=None,
):
    """Structured SVM by SVRG on the smoothed structured hinge.

    Minimizes F_μ(w) = Σ_i ω_i h_μ(A_iᵀ w; i) + (λ/2)‖w‖², the structured hinge with its
    max smoothed (entropy: μ log Σ_y exp(ψ_y / μ); ℓ2: the top-K projection onto the
    simplex), and reports the non-smooth primal P(w) = (λ/2)‖w‖² + Σ_i ω_i H_i(w) after
    every epoch. F_μ is within μ log |Y| (entropy) or μ/2 (ℓ2) of P.

    Parameters
    ----------
    risk : RegularizedRisk
        Structured hinge under margin rescaling, with a compiled smoothed oracle.
    w0 : ndarray of shape (n_params,), default=None
        Starting point (zeros).
    max_iter : int, default=50
        Epochs. Each runs one full-gradient pass (n oracle calls) and n steps (n calls).
    tol : float, default=0.0
        Stop when an epoch changes P by at most ``tol`` relative to the previous value.
    smoothing : {"entropy", "l2"}, default="l2"
        ℓ2 with top-K is the paper's choice for its experiments.
    mu : float, default=None
        Constant smoothing strength μ > 0 (the paper's SVRG runs: 1). None: the
        decreasing schedule μ_k = 0.95^k of epoch k = 0, 1, ..., whose smoothing bias
        (at most μ_k / 2 for ℓ2) vanishes, so that the iterates approach the non-smooth
        optimum rather than the smoothed one.
    top_k : int, default=5
        K of the ℓ2 smoothing's top-K outputs (the paper's: 5); unused for entropy.
    learning_rate : float or "auto", default="auto"
        Step size η; "auto" is 1/(L + λ) with L the smoothness estimate
        ``smoothness_estimate`` / μ for a constant μ, and 2/(L_k + λ) with
        L_k = ``smoothness_estimate`` / μ_k (capped below 1/λ) under the default schedule.
    averaging : bool, default=True
        An epoch returns the average of its iterates (else the last one).
    random_state : int, RandomState or None
        Examples drawn uniformly with replacement, n per epoch.
    verbose, callback, printer
        As for the other solvers; the callback receives the epoch, w and P(w).
    shuffle : bool, default=True
        Draw the n steps of an epoch at random (with replacement); False: visit the
        examples once each, in their order.
    state : dict or None, default=None
        To continue on new examples (``partial_fit``): the previous run's
        ``extra["state"]`` (the iterate ``w``, the step size ``learning_rate`` fixed by
        the first run, and the oracle-call counter ``t``), or an empty dict for a first
        run. Each epoch is anchored at a full gradient of the examples at hand, so
        variance reduction (and its linear rate) holds within a run's examples only;
        across runs on different examples it is a sequence of SVRG epochs on their
        objectives.

    Returns
    -------
    OptimizeResult
        ``w``: the iterate of the smallest P among the epoch ends, min(``objective_curve``)
        (the last one when continuing with ``state``); ``objective_curve``: P after each epoch;
        ``n_evaluations``: smoothed oracle
        calls; ``extra``: ``mu`` per epoch, ``oracle_calls`` (cumulative oracle calls
        after each epoch, 2n per epoch; the primal's evaluation is not counted),
        ``inexact`` (top-K calls
        whose K outputs did not cover the projection's support), ``learning_rate``,
        and with ``state`` the ``state`` to continue from.

    References
    ----------
    Johnson & Zhang (2013). Accelerating stochastic gradient descent using predictive
    variance reduction. NeurIPS.
    Pillutla, Roulet, Kakade & Harchaoui (2018). A smoother way to train structured
    prediction models. NeurIPS.
    """
    _check_common(max_iter, tol, mu, top_k, learning_rate)
    sp = smoothed_problem(risk, smoothing, top_k, "svrg")
    rng = check_random_state(random_state)
    n, lam = risk.n_examples, risk.alpha
    l_mu = smoothness_estimate(sp.problem, risk.weights)
    problem = sp.problem
    first = int(state.get("k", 0)) if state else 0
    if state:
        w0 = state["w"]
    w = problem.to_engine(starting_point(w0, problem.n_params))
    log = EpochLog(sp, risk, tol, verbose, callback, printer, max_iter)
    next_order = epoch_order(rng, n, shuffle)
    eta = None
    for k in range(first, first + max_iter):
        mu_k = scheduled_mu(mu, k)
        eta = svrg_step(learning_rate, state, mu, mu_k, l_mu, lam)
        w, _ = sp.epoch(w, mu_k, eta, 0.0, w, next_order(), averaging)
        if log.after_epoch(w, mu_k):
            break
    first = k + 1
    kept = {} if state is None else {"state": {
        "w": problem.to_user(w), "learning_rate": eta, "k": first,
        "t": int(state.get("t", 0)) + sp.oracle_calls}}
    if state is not None:
        kept["t"] = kept["state"]["t"]
        return log.result(w, learning_rate=eta, **kept)
    return log.result(log.best(w), learning_rate=eta, **kept)


def scheduled_mu(mu, k):
    """μ of epoch ``k``: ``mu``, or the default schedule MU_START · MU_DECAY^k (None)."""
    if mu is not None:
        return float(mu)
    return MU_START * max(MU_DECAY ** k, 1e-6)


def svrg_step(learning_rate, state, mu, mu_k, l_mu, lam):
    """SVRG's step size: the given one, the one a continued run fixed, 1/(L_μ + λ) for a
    constant μ, or STEP_SCALE/(L_μk + λ) (below 1/λ) under the default schedule."""
    if learning_rate != "auto":
        return float(learning_rate)
    if state and "learning_rate" in state and mu is not None:
        return float(state["learning_rate"])
    if mu is not None:
        return 1.0 / (l_mu / mu + lam)
    return min(STEP_SCALE / (l_mu / mu_k + lam), 0.5 / lam)


def starting_point(w0, n_params):
    """``w0`` as a float64 vector of length ``n_params`` (zeros when None), or a
    ValueError: the compiled epochs read w by the problem's layout."""
    if w0 is None:
        return np.zeros(n_params)
    w0 = np.asarray(w0, dtype=np.float64)
    if w0.shape != (n_params,):
        raise ValueError(f"w0 has shape {w0.shape}; the problem has {n_params} parameters.")
    return w0


def epoch_order(rng, n, shuffle):
    """``next_order()`` of the SVRG epochs: n examples drawn with replacement
    (``shuffle``), else 0 .. n − 1."""
    if shuffle:
        return lambda: rng.randint(0, n, size=n)
    return lambda: np.arange(n)


class EpochLog:
    """What the SVRG drivers do after every epoch: the non-smooth primal P(w), its
    progress line and callback, the stopping rules, and the result.

    Parameters
    ----------
    sp : SmoothedProblem
    risk : RegularizedRisk
    tol : float
        Stop when an epoch changes P by at most a relative ``tol`` (0: never).
    verbose, callback, printer
        As for :class:`~skstruct.optim._progress.Progress`.
    max_iter : int or None, default=None
        The epoch budget, for the estimate of the time left in the progress lines.
    """

    def __init__(self, sp, risk, tol, verbose, callback, printer, max_iter=None):
        self.sp, self.risk, self.tol = sp, risk, tol
        self.progress = Progress(verbose, callback, printer, unit="epoch", max_iter=max_iter)
        self.message, self.converged = "maximum number of epochs reached", False
        self.mus, self.calls = [], []
        self.best_w, self.best_value = None, np.inf

    def after_epoch(self, w, mu):
        """Record the epoch that ended at engine-order ``w`` with smoothing ``mu``;
        True when the run must stop."""
        problem = self.sp.problem
        w_user = problem.to_user(w)
        primal = problem.hinge_primal(w_user, self.risk.weights, self.risk.alpha)
        self.mus.append(mu)
        self.calls.append(self.sp.oracle_calls)
        if primal < self.best_value:
            self.best_w, self.best_value = np.array(w, dtype=np.float64), primal
        if self.progress.report(w_user, primal, mu=float(mu), oracle=self.sp.oracle_calls):
            self.message, self.converged = STOPPED_BY_CALLBACK, False
            return True
        if _small_change(self.progress.curve, self.tol):
            self.message, self.converged = "relative change below tol", True
            return True
        return False

    def best(self, w):
        """The engine-order iterate of the smallest P recorded (``w`` before any)."""
        return w if self.best_w is None else self.best_w

    def result(self, w, **extra):
        """The OptimizeResult at engine-order ``w``; ``extra`` joins the per-epoch
        records (``mu``, ``oracle_calls``, ``inexact``, ``t``)."""
        sp = self.sp
        return OptimizeResult(
            w=sp.problem.to_user(w), n_iter=self.progress.n_iter, converged=self.converged,
            objective_curve=self.progress.curve, message=self.message,
            n_evaluations=sp.oracle_calls,
            extra={"mu": self.mus, "oracle_calls": self.calls, "inexact": sp.inexact,
                   "t": sp.oracle_calls, **extra})


def _small_change(curve, tol):
    return (tol > 0 and len(curve) > 1
            and abs(curve[-2] - curve[-1]) <= tol * abs(curve[-2]))


def _check_common(max_iter, tol, mu, top_k, learning_rate):
    if not (isinstance(max_iter, (int, np.integer)) and max_iter >= 1):
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}.")
    if not tol >= 0:
        raise ValueError(f"tol must be non-negative, got {tol!r}.")
    if mu is not None and not (np.isfinite(mu) and mu > 0):
        raise ValueError(f"mu must be positive, got {mu!r}.")
    if not (isinstance(top_k, (int, np.integer)) and top_k >= 1):
        raise ValueError(f"top_k must be a positive integer, got {top_k!r}.")
    if not (learning_rate == "auto" or (isinstance(learning_rate, (float, int))
                                        and not isinstance(learning_rate, bool)
                                        and learning_rate > 0)):
        raise ValueError(f"learning_rate must be 'auto' or a positive number, got "
                         f"{learning_rate!r}.")

