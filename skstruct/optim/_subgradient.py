"""Stochastic subgradient descent with iterate averaging (Pegasos steps), and the
structured perceptron.

Both visit one example at a time. When the feature map and the decoder offer a compiled
form (:func:`~skstruct.optim._engine.compiled_problem`), every pass runs in compiled code;
otherwise (a user's decoder or loss) the same steps run as a Python loop.
"""

import numpy as np
from sklearn.utils import check_random_state

from ._engine import compiled_problem, loss_rescaling
from ._overlap import drive_passes, overlap_threads
from ._progress import Progress
from ._result import STOPPED_BY_CALLBACK, OptimizeResult

__all__ = ["minimize_subgradient", "perceptron"]


def minimize_subgradient(
    risk, w0=None, *, max_iter=50, tol=0.0, averaging=True, random_state=None, verbose=0,
    callback=None, printer=print, first_step=0, shuffle=True, state=None,
    _force_python=False,
):
    """Minimize (λ/2) ‖w‖² + Σ_i ω_i ℓ_i(w) by stochastic subgradient steps.

    Each step takes one example i (a random permutation per pass) and moves along
    λ w + n ω_i ∂ℓ_i(w), an unbiased estimate of a subgradient of the objective, with
    Pegasos step sizes η_t = 1 / (λ (t + 2)).

    Parameters
    ----------
    risk : RegularizedRisk
        Its training loss gives per-example values and part-score subgradients (any loss:
        structured hinge with either rescaling, perceptron, CRF); its feature map must have
        ``example_transpose``.
    w0 : ndarray of shape (n_params,), default=None
        Starting point (zeros).
    max_iter : int, default=50
        Number of passes over the examples.
    tol : float, default=0.0
        Stop when the objective after a pass decreased by less than ``tol`` (relative to
        the previous pass); 0 runs all passes.
    averaging : bool, default=True
        Return the average of the iterates weighted by t (w̄ ← w̄ + 2/(t+2) (w − w̄)),
        which has the O(1/t) rate of strongly convex problems.
    random_state, verbose, callback, printer
        As for :func:`~skstruct.optim.minimize_bcfw`.
    first_step : int, default=0
        Step counter t to start from, to continue a previous run from ``w0`` with small
        steps.
    shuffle : bool, default=True
        Visit the examples in a new random order each pass; False: in their order.
    state : dict or None, default=None
        To continue a run on new examples (``partial_fit``): the ``extra["state"]`` of the
        previous run, or an empty dict to start from ``w0`` and ``first_step``. It holds
        the raw iterate ``w``, the average ``w_avg``, the step counter ``step`` (η_t
        continues from it) and ``first_step``, the step the average started from: the
        steps and the average continue as if the examples of all runs had been one pass.

    Returns
    -------
    OptimizeResult
        ``objective_curve`` holds the objective of the returned iterate after each pass;
        ``n_evaluations`` is the step counter reached; with ``state``, ``extra["state"]``
        is the state after the last pass reported.

    Notes
    -----
    With the structured hinge or perceptron loss and a feature map and decoder that offer
    a compiled form, the passes run in compiled code in O(nnz of the example) per step:
    w is kept as a w' with a scalar a, so the shrink (1 − η_t λ) is one multiplication,
    and the average lazily (see :func:`~skstruct.optim._engine_kernels.subgradient_pass`).
    The objective after each pass is then evaluated by the same compiled oracle
    (parallel over examples, summed in example order); on large problems with two or
    more threads, in a second thread while the next pass runs (the same values and
    model: see :func:`~skstruct.optim._overlap.drive_passes`).

    References
    ----------
    Shalev-Shwartz, Singer, Srebro & Cotter (2011). Pegasos: primal estimated sub-gradient
    solver for SVM. Mathematical Programming.
    Ratliff, Bagnell & Zinkevich (2007). (Approximate) subgradient methods for structured
    prediction. AISTATS.
    """
    rng = check_random_state(random_state)
    lam = risk.alpha
    if lam <= 0:
        raise ValueError("The subgradient solver needs a positive regularization alpha.")
    n = risk.n_examples
    scales = n * risk.weights
    known, rescaling = loss_rescaling(risk.loss)
    problem = None if (_force_python or not known) else compiled_problem(risk, rescaling)
    average = None
    if state:
        first_step = int(state["first_step"])
        # the returned w_avg is also the model's coefficients: copied, never written into
        average = state.get("w_avg") if averaging else None
    if problem is not None:
        # w is handed over (a copy of w0, or the state's, which this run's replaces)
        w = state["w"] if state else (np.zeros(risk.features.n_params) if w0 is None
                                      else np.array(w0, dtype=np.float64))
        run = problem.subgradient(w, scales, lam, averaging, first_step, average,
                                  adopt=True)
        to_user = problem.to_user
    else:
        w = (np.array(state["w"], dtype=np.float64) if state else
             np.zeros(risk.features.n_params) if w0 is None
             else np.array(w0, dtype=np.float64))
        run = _PythonSubgradient(risk, w, scales, lam, averaging, first_step)
        if average is not None:
            run.w_avg = np.array(average, dtype=np.float64)
        to_user = np.array
    if state:
        run.step = int(state["step"])
    keep = state is not None
    eager = keep and max_iter > 1  # see minimize_bcfw
    status = {"message": "maximum number of passes reached", "converged": False}

    def state_now(current):
        if problem is None:
            raw = to_user(run.w)
        else:  # after the last pass the run no longer writes into v
            raw = to_user(run.v, copy=eager)
        return {"w": raw, "w_avg": current if averaging else None,
                "step": run.step, "first_step": run.first_step}

    def snapshot():
        current = run.current()
        return current, run.step, state_now(current) if eager else None

    progress = Progress(verbose, callback, printer, unit="pass", max_iter=max_iter)

    def evaluate(snap):
        return (risk.value(snap[0]) if problem is None
                else problem.hinge_primal(snap[0], risk.weights, lam))

    def on_value(snap, value):
        if progress.report(snap[0], value):
            status.update(message=STOPPED_BY_CALLBACK, converged=False)
            return True
        curve = progress.curve
        if tol > 0 and len(curve) > 1 and curve[-2] - value <= tol * abs(curve[-2]):
            status.update(message="relative decrease below tol", converged=True)
            return True
        return False

    if max_iter >= 1:
        snap = drive_passes(run, pass_order(rng, n, shuffle), snapshot, evaluate, on_value,
                            max_iter, overlap_threads(problem))
    else:
        snap = snapshot()
    return OptimizeResult(
        w=snap[0], n_iter=progress.n_iter, converged=status["converged"],
        objective_curve=progress.curve, message=status["message"], n_evaluations=snap[1],
        extra={"state": snap[2] if eager else state_now(snap[0])} if keep else {},
    )


def pass_order(rng, n, shuffle):
    """``next_order()`` of the passes: a new permutation of the n examples each pass
    (``shuffle``), else 0 .. n − 1."""
    if shuffle:
        return lambda: rng.permutation(n)
    return lambda: np.arange(n)


class _PythonSubgradient:
    """The subgradient steps as a Python loop (any loss, decoder and feature map with
    ``example_transpose``)."""

    def __init__(self, risk, w, scales, lam, averaging, first_step):
        self.risk, self.w, self.scales, self.lam = risk, w, scales, lam
        self.averaging, self.first_step, self.step = averaging, first_step, first_step
        self.w_avg = w.copy()

    def run_pass(self, order):
        risk, w, lam = self.risk, self.w, self.lam
        for i in order:
            indices, values = risk.example_gradient(i, w)
            eta = 1.0 / (lam * (self.step + 2))
            w *= 1.0 - eta * lam
            w[indices] -= eta * self.scales[i] * values
            self.step += 1
            if self.averaging:
                self.w_avg += (2.0 / (self.step - self.first_step + 2)) * (w - self.w_avg)

    def current(self):
        return (self.w_avg if self.averaging else self.w).copy()


def perceptron(risk, w0=None, *, max_iter=10, averaging=True, random_state=None, verbose=0,
               callback=None, printer=print, shuffle=True, state=None,
               _force_python=False):
    """The structured perceptron: w ← w − A_iᵀ(a_ŷ − a_{y_i}) after each mistake.

    Parameters
    ----------
    risk : RegularizedRisk
        With a :class:`~skstruct.losses.PerceptronLoss`; ``alpha`` is ignored and example
        weights scale the updates (an update of example i is multiplied by n ω_i).
    w0 : ndarray of shape (n_params,), default=None
    max_iter : int, default=10
        Number of passes.
    averaging : bool, default=True
        Return the uniform average of all iterates (the averaged perceptron).
    random_state, verbose, callback, printer, shuffle
        As for :func:`minimize_subgradient`.
    state : dict or None, default=None
        To continue a run on new examples (``partial_fit``): the previous run's
        ``extra["state"]``, or an empty dict to start from ``w0``. It holds the raw
        iterate ``w``, the step counter ``step`` T and ``acc``, Σ_t t Δw_t, so that the
        average of w_0 .. w_T is w_T − acc / (T + 1): the average continues over the
        examples of all runs.

    Returns
    -------
    OptimizeResult
        ``objective_curve`` holds the fraction of examples mispredicted during each pass;
        ``converged`` is True when a pass made no mistake; with ``state``,
        ``extra["state"]`` is the state after the last pass.

    Notes
    -----
    With a feature map and decoder that offer a compiled form, the passes run in compiled
    code; the average is kept lazily (an accumulator of t Δw_t), so that an update costs
    the nonzeros of the example's mistaken parts.

    References
    ----------
    Collins (2002). Discriminative training methods for hidden Markov models. EMNLP.
    """
    rng = check_random_state(random_state)
    n = risk.n_examples
    scales = n * risk.weights
    known, rescaling = loss_rescaling(risk.loss)
    problem = (None if (_force_python or not known or rescaling is not None)
               else compiled_problem(risk, None))
    if problem is not None and state:
        # the state's arrays are handed over: the run writes into them, and the state
        # it returns replaces this one
        run = problem.perceptron(state["w"], scales, averaging, adopt=True)
    else:
        w = (np.array(state["w"], dtype=np.float64) if state else
             np.zeros(risk.features.n_params) if w0 is None
             else np.array(w0, dtype=np.float64))
        run = (problem.perceptron(w, scales, averaging, adopt=True) if problem is not None
               else _PythonPerceptron(risk, w, scales, averaging))
    if state:
        _restore_perceptron(run, problem, state["step"], state.get("acc"))
    progress = Progress(verbose, callback, printer, unit="pass", max_iter=max_iter)
    message, converged = "maximum number of passes reached", False
    next_order = pass_order(rng, n, shuffle)
    for _ in range(max_iter):
        mistakes = run.run_pass(next_order())
        # the average costs a pass over w: made only for a callback that receives it
        current = run.current() if callback is not None else None
        if progress.report(current, mistakes / n, mistakes=mistakes):
            message, converged = STOPPED_BY_CALLBACK, False
            break
        if mistakes == 0:
            message, converged = "no mistake in a pass", True
            break
    return OptimizeResult(
        w=run.current(), n_iter=progress.n_iter, converged=converged,
        objective_curve=progress.curve, message=message, n_evaluations=run.step,
        extra={} if state is None else {"state": _perceptron_state(run, problem)},
    )


def _restore_perceptron(run, problem, step, acc):
    """Continue ``run`` (compiled when ``problem`` is not None) from step ``step`` with
    the accumulator ``acc`` (column order; None: the average starts at w)."""
    if problem is None:
        run.restore(step, acc)
        return
    run.step = int(step)
    if acc is not None and run.averaging:
        run.acc = problem.to_engine(acc, copy=False)


def _perceptron_state(run, problem):
    """The state that :func:`perceptron` continues from (``state``), column order; the
    run's own arrays when no permutation is needed (the run is over)."""
    if problem is None:
        return run.state()
    return {"w": problem.to_user(run.w, copy=False), "step": run.step,
            "acc": problem.to_user(run.acc, copy=False) if run.averaging else None}


class _PythonPerceptron:
    """The perceptron steps as a Python loop (any decoder and feature map with
    ``example_transpose``)."""

    def __init__(self, risk, w, scales, averaging):
        self.risk, self.w, self.scales, self.averaging = risk, w, scales, averaging
        self.w_avg = w.copy()
        self.step = 0
        self.gold = risk.gold_parts()
        self.examples = [risk.example(i) for i in range(risk.n_examples)]

    def run_pass(self, order):
        risk, w = self.risk, self.w
        mistakes = 0
        for i in order:
            batch_i, y_i = self.examples[i]
            _, grad = risk.loss(risk.decoder, risk.features.scores(batch_i, w), y_i,
                                gold=self.gold.example(i))
            if np.any(grad.unary != 0):
                mistakes += 1
                indices, values = risk.features.example_transpose(batch_i, grad)
                w[indices] -= self.scales[i] * values
            self.step += 1
            if self.averaging:
                self.w_avg += (w - self.w_avg) / (self.step + 1)
        return mistakes

    def current(self):
        return (self.w_avg if self.averaging else self.w).copy()

    def restore(self, step, acc):
        """Continue from step ``step`` with the average w − acc / (step + 1)."""
        self.step = int(step)
        if acc is not None:
            self.w_avg = self.w - np.asarray(acc) / (self.step + 1)

    def state(self):
        """The raw w, the step T and acc = (T + 1)(w − w̄) (see :func:`perceptron`)."""
        return {"w": self.w.copy(), "step": self.step,
                "acc": (self.step + 1) * (self.w - self.w_avg) if self.averaging else None}

