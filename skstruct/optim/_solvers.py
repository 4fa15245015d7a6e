"""The built-in solvers' registrations: one adapter and one entry per solver.

An adapter turns the estimator's options (see :class:`~skstruct.optim._registry.SolverSpec`)
into its solver's keyword arguments, and puts what the solver reports beyond the common
result into ``duality_gaps`` and ``extra``.
"""

from contextlib import nullcontext

import numpy as np

from ..utils._parallel import single_threaded_blas
from ._bcfw import minimize_bcfw
from ._casimir import minimize_casimir
from ._cutting_plane import minimize_cutting_plane
from ._lbfgs import minimize_lbfgs, minimize_lbfgsb
from ._owlqn import _masked, minimize_owlqn
from ._perturbed_ascent import perturbed_ascent
from ._preconditioning import run_preconditioned
from ._registry import loss_family, register_solver
from ._subgradient import minimize_subgradient, perceptron
from ._svrg import minimize_svrg
from ._svrg_crf import minimize_svrg_crf

__all__ = []

#: Inference-cache size of the cutting plane when loss-augmented inference costs much
#: more than re-scoring cached outputs.
CUTTING_PLANE_CACHE_SIZE = 3


def _pick(options, *names):
    return {name: options[name] for name in names if name in options}


def _with_step_counter(result):
    result.extra.setdefault("t", result.n_evaluations)
    return result


def _with_oracle_calls(result, per_iteration):
    """``extra["oracle_calls"]``: the cumulative per-example oracle calls after each
    iteration, ``per_iteration`` each (the solver's updates, not the evaluation of the
    reported objective)."""
    result.extra["oracle_calls"] = [per_iteration * (k + 1) for k in range(result.n_iter)]
    return result


#: Options of the incremental solvers, passed on when the estimator gives them.
_PASS_OPTIONS = ("max_iter", "tol", "averaging", "random_state", "verbose", "callback",
                 "shuffle", "state")


def _run_bcfw(risk, w0, options):
    return _with_oracle_calls(_with_step_counter(minimize_bcfw(
        risk, **_pick(options, *_PASS_OPTIONS, "batch_weight", "check_gap_every"))),
        risk.n_examples)


def _run_subgradient(risk, w0, options):
    return _with_oracle_calls(_with_step_counter(minimize_subgradient(
        risk, w0, first_step=options.get("first_step", 0),
        **_pick(options, *_PASS_OPTIONS))), risk.n_examples)


#: Options of the smoothed solvers, passed on when the estimator gives them.
_SMOOTHED_OPTIONS = ("max_iter", "tol", "smoothing", "top_k", "learning_rate", "averaging",
                     "random_state", "verbose", "callback", "shuffle", "state")


def _run_svrg(risk, w0, options):
    if loss_family(risk.loss) == "smooth":
        if options.get("state") is not None:
            raise ValueError("solver='svrg' continues on new data (partial_fit) for the "
                             "structured hinge only.")
        return minimize_svrg_crf(
            risk, w0, fixed=options.get("fixed"),
            **_pick(options, "max_iter", "tol", "learning_rate", "random_state", "verbose",
                    "callback"))
    mu = options.get("mu")
    return minimize_svrg(risk, w0, **_pick(options, *_SMOOTHED_OPTIONS),
                         **({} if mu is None else {"mu": mu}))


def _run_casimir(risk, w0, options):
    return minimize_casimir(risk, w0, **_pick(options, *_SMOOTHED_OPTIONS, "mu", "schedule",
                                          "kappa", "warm_start_rule"))


def cutting_plane_cache_size(loss):
    """The inference cache the cutting plane uses for a structured hinge ``loss``.

    0 (no cache) for losses that decompose over parts under margin rescaling (inference is one
    Viterbi-like pass, as cheap as scoring the cached outputs), ``CUTTING_PLANE_CACHE_SIZE``
    otherwise (count-statistic losses, slack rescaling, losses without a declared
    decomposition).
    """
    cheap = (loss.task_loss.decomposition == "parts"
             and loss.rescaling == "margin")
    return 0 if cheap else CUTTING_PLANE_CACHE_SIZE


def _run_cutting_plane(risk, w0, options):
    # one iteration (one entry of the curve) per decoder call over all examples
    return _with_oracle_calls(_with_step_counter(minimize_cutting_plane(
        risk, cache_size=cutting_plane_cache_size(risk.loss),
        **_pick(options, "max_iter", "tol", "verbose", "callback"))), risk.n_examples)


def _run_perceptron(risk, w0, options):
    return _with_step_counter(perceptron(
        risk, w0, **_pick(options, "max_iter", "averaging", "random_state", "verbose",
                          "callback", "shuffle", "state")))


def _smooth_part(risk, w0, options):
    """``risk.value_and_gradient`` and ``w0`` with ``options["fixed"]`` (a boolean mask of
    parameters held at zero, or absent) applied: zero there in w0, gradient zeroed there.

    A quasi-Newton direction is a combination of gradients and of steps, all zero on the
    fixed coordinates, so they stay at zero without any change to the solver.
    """
    fixed = options.get("fixed")
    if fixed is None:
        return risk.value_and_gradient, w0
    w0 = np.where(fixed, 0.0, w0)
    return _masked(risk.value_and_gradient, ~fixed), w0


def _blas_for(risk):
    """BLAS limited to one thread when the risk has a compiled evaluation, else unchanged.

    The compiled evaluation does all of its work in numba's threads; the BLAS calls left
    (the line search's inner products) are small, and OpenBLAS threads started by one of
    them keep spinning afterwards on the cores the kernels need (measured on CoNLL-2000,
    2 threads: 100 L-BFGS iterations took 15.6 s with them, 12.3 s without).
    """
    return single_threaded_blas() if risk.compiled_objective() is not None else nullcontext()


def _quasi_newton(minimize, l1_fallback=None):
    """The adapter of a smooth quasi-Newton solver; with an L1 term (``options["l1"]`` >
    0), ``l1_fallback`` runs instead (L-BFGS hands over to its orthant-wise form). With
    ``options["preconditioner"]`` (a positive vector D, one entry per parameter, and no
    L1 term) it minimizes F(D v) instead and returns w = D v
    (:func:`~._preconditioning.run_preconditioned`)."""
    def run(risk, w0, options):
        if options.get("l1", 0.0) > 0 or (l1_fallback is not None
                                           and _kinked(risk) is not None):
            return l1_fallback(risk, w0, options)
        scale = options.get("preconditioner")
        if scale is not None:
            return run_preconditioned(run, risk, w0, scale,
                                      {**options, "preconditioner": None})
        fun, w0 = _smooth_part(risk, w0, options)
        with _blas_for(risk):
            return minimize(fun, w0, **_pick(options, "max_iter", "tol", "tol_scale",
                                             "verbose", "callback"))
    return run


def _kinked(risk):
    """The risk's ``kinked_parameters()`` (where it has kinks at zero), or None."""
    offer = getattr(risk, "kinked_parameters", None)
    return None if offer is None else offer()


def _run_owlqn(risk, w0, options):
    """OWL-QN on the risk; orthant-wise also along the coordinates where the risk itself
    has kinks at zero (:meth:`~skstruct.optim.RegularizedRisk.kinked_parameters`)."""
    kinked = _kinked(risk)
    fun = risk.value_and_gradient if kinked is None else risk.value_gradient_and_spread
    with _blas_for(risk):
        return minimize_owlqn(
            fun, w0, l1=options.get("l1", 0.0), fixed=options.get("fixed"), kinked=kinked,
            **_pick(options, "max_iter", "tol", "tol_scale", "verbose", "callback"))


def _run_perturbed_ascent(risk, w0, options):
    return perturbed_ascent(risk, w0, **_pick(
        options, "max_iter", "learning_rate", "step_scale", "l1", "random_state", "verbose",
        "callback", "state"))


# The partial_fit states that continue from coefficients w and step counter t alone
# (see SolverSpec.initial_state); each is the layout its solver's ``state`` reads.

def _bcfw_state(w, t, seen_weight):
    return {"w": w, "lazy": None, "step": t, "dual_sums": (0.0, 0.0),
            "seen_weight": seen_weight}


def _subgradient_state(w, t, seen_weight):
    return {"w": w, "w_avg": w.copy(), "step": t, "first_step": t}


def _svrg_state(w, t, seen_weight):
    return {"w": w, "t": t}


def _casimir_state(w, t, seen_weight):
    return {"w_prev": w, "t": t}


def _perturbed_ascent_state(w, t, seen_weight):
    return {"w": w, "t": t}


def _perceptron_state(w, t, seen_weight):
    return {"w": w, "step": 0, "acc": None}


#: The estimator parameters the smoothed solvers read beyond the common ones.
_SVRG_PARAMETERS = ("learning_rate", "random_state", "smoothing", "mu", "top_k")

register_solver(
    "bcfw", _run_bcfw, losses={"hinge_margin"}, partial_fit=True,
    initial_state=_bcfw_state, warm_start=False, stops_on_duality_gap=True,
    parameters=("check_gap_every",),
    description="block-coordinate Frank-Wolfe on the dual, exact line search, the exact "
                "duality gap every check_gap_every passes")
register_solver(
    "subgradient", _run_subgradient, losses={"hinge_margin", "hinge_slack"},
    partial_fit=True, initial_state=_subgradient_state, warm_start=True,
    description="stochastic subgradient with Pegasos steps and averaging")
register_solver(
    "cutting_plane", _run_cutting_plane, losses={"hinge_margin", "hinge_slack"},
    warm_start=False,
    description="one-slack cutting planes, the working-set QP solved exactly, an inference "
                "cache when inference is costly")
register_solver(
    "svrg", _run_svrg, losses={"hinge_margin", "smooth"}, partial_fit=True,
    initial_state=_svrg_state, parameters=_SVRG_PARAMETERS, warm_start=False,
    description="SVRG on the smoothed structured hinge (entropy or top-K l2 smoothing) or "
                "on the CRF loss, lazy dense updates, the training objective after every "
                "epoch")
register_solver(
    "casimir", _run_casimir, losses={"hinge_margin"}, partial_fit=True,
    initial_state=_casimir_state,
    parameters=_SVRG_PARAMETERS + ("schedule", "kappa", "warm_start_rule"),
    warm_start=False,
    description="Casimir-SVRG: Catalyst extrapolation around SVRG epochs on the smoothed "
                "hinge, constant or decreasing smoothing")
register_solver(
    "perceptron", _run_perceptron, losses={"perceptron"}, partial_fit=True,
    initial_state=_perceptron_state, warm_start=True,
    description="the (averaged) structured perceptron")
register_solver(
    "lbfgs", _quasi_newton(minimize_lbfgs, l1_fallback=_run_owlqn), losses={"smooth"},
    warm_start=True, l1=True,
    description="L-BFGS with a strong-Wolfe line search (two-loop recursion in compiled "
                "code); with an L1 term, or a loss with kinks at zero (LP-SparseMAP's "
                "PAIR scores), its orthant-wise form OWL-QN")
register_solver(
    "lbfgsb", _quasi_newton(minimize_lbfgsb), losses={"smooth"}, warm_start=True,
    description="scipy's L-BFGS-B without bounds")
register_solver(
    "owlqn", _run_owlqn, losses={"smooth"}, warm_start=True, l1=True,
    description="orthant-wise L-BFGS (OWL-QN) with a projected backtracking line search, "
                "for an L1 term beside the smooth risk")
register_solver(
    "perturbed_ascent", _run_perturbed_ascent, losses={"randomized_likelihood"},
    warm_start=True, l1=True, partial_fit=True, initial_state=_perturbed_ascent_state,
    description="stochastic proximal ascent on the randomized likelihood of candidate sets "
                "drawn at every step, steps decaying as 1/sqrt(t), l1 soft-thresholding")
