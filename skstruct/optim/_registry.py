"""The solver registry: which optimizers exist, what they accept, and how to run them.

An estimator does not switch on solver names. It asks the registry for the names that
solve its training loss (its ``solver`` parameter's choices), checks the chosen one
against the loss and ``warm_start``, passes it the estimator parameters the solver
declares (:attr:`SolverSpec.parameters`), starts a ``partial_fit`` from the state the
solver declares (:attr:`SolverSpec.initial_state`), and runs it with :func:`run_solver`.
A new solver is one module with its ``minimize_*`` function plus one
:func:`register_solver` call in ``_solvers.py`` that adapts the estimator's options to it.

Training losses are named by family (:data:`LOSS_FAMILIES`), which :func:`loss_family`
reads from a training loss object.
"""

from collections.abc import Set
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..utils._parallel import n_jobs_threads

__all__ = [
    "LOSS_FAMILIES",
    "SolverNames",
    "SolverSpec",
    "check_solver",
    "get_solver",
    "loss_family",
    "register_solver",
    "run_solver",
    "solver_names",
]

#: The families of training losses a solver may accept.
#:
#: - ``"hinge_margin"``, ``"hinge_slack"``: the structured hinge with margin or slack
#:   rescaling (:class:`~skstruct.losses.StructuredHingeLoss`);
#: - ``"perceptron"``: the structured perceptron loss (plain MAP);
#: - ``"smooth"``: differentiable losses minimized through ``risk.value_and_gradient``
#:   (the CRF's negative log-likelihood, the SparseMAP loss);
#: - ``"randomized_likelihood"``: the likelihood of the gold outputs within candidate
#:   sets drawn anew at every step
#:   (:class:`~skstruct.losses._randomized.RandomizedLikelihoodLoss`, the
#:   MAP-perturbation learner's).
LOSS_FAMILIES = ("hinge_margin", "hinge_slack", "perceptron", "smooth",
                 "randomized_likelihood")

_RESCALING_NAMES = {"hinge_margin": "margin rescaling", "hinge_slack": "slack rescaling",
                    "perceptron": "the perceptron loss", "smooth": "smooth losses",
                    "randomized_likelihood": "the randomized likelihood"}


@dataclass(frozen=True)
class SolverSpec:
    """One registered solver.

    Attributes
    ----------
    name : str
        The value of an estimator's ``solver`` parameter.
    run : callable
        ``run(risk, w0, options) -> OptimizeResult``. ``options`` is a dict of the
        estimator's settings (``max_iter``, ``tol``, ``averaging``, ``random_state``,
        ``verbose``, ``callback``, ``first_step``, the step counter of the previous
        fit when warm starting, and for smooth losses ``l1``, the strength of an L1 term
        added to the risk, and ``fixed``, a boolean mask of parameters held at zero, or
        None; for the randomized likelihood ``learning_rate``, ``step_scale`` and
        ``l1``; for the quasi-Newton solvers ``preconditioner``, a positive vector D
        of one entry per parameter or None: they then minimize F(D v) and return
        w = D v); the adapter takes what its solver uses and ignores the
        rest, and puts solver-specific results in the result's ``duality_gaps`` and
        ``extra`` (``extra["t"]``: the step counter an estimator stores as ``t_``).
    losses : frozenset of str
        The :data:`LOSS_FAMILIES` it solves.
    warm_start : bool
        Whether it can continue from a previous fit's w (solvers that keep dual
        variables between iterations cannot).
    description : str
        One line, for error messages and documentation.
    l1 : bool, default=False
        Whether it minimizes an L1 term beside the smooth risk: an estimator with an L1
        penalty passes ``options["l1"]`` (the L1 strength, > 0), which solvers without it
        do not accept (:func:`check_solver` says so).
    partial_fit : bool, default=False
        Whether it can continue on new data (an estimator's ``partial_fit``): given
        ``options["state"]`` (a dict, empty on the first call: start from ``w0``), it
        continues from that state and returns the state to pass to the next call in
        ``extra["state"]``. ``options["shuffle"]`` (default True) says whether a pass
        visits the examples in a random order.
    initial_state : callable or None, default=None
        With ``partial_fit``: ``initial_state(w, t, seen_weight) -> dict``, the
        ``options["state"]`` that continues from the coefficients ``w`` (a fresh float64
        array the state may keep) and the step counter ``t`` without the solver's own
        history, as after ``fit`` or another solver's calls; ``seen_weight`` is the total
        sample weight trained on so far. None without ``partial_fit``.
    parameters : frozenset of str, default=frozenset()
        The estimator parameters of its own that it reads from ``options`` (e.g.
        ``"learning_rate"``, ``"smoothing"``): an estimator passes those of them it has
        (:meth:`options_from`), besides the settings every solver is given.
    stops_on_duality_gap : bool, default=False
        Whether its stopping rule bounds the distance to the optimum (a duality gap at
        most ``tol``), so that stopping at ``max_iter`` is worth a convergence warning
        even with ``tol=0``; a rule on the progress of the iterates is not met at
        ``tol=0``, where running ``max_iter`` iterations is what was asked.
    """

    name: str
    run: Callable
    losses: frozenset
    warm_start: bool
    description: str
    l1: bool = False
    partial_fit: bool = False
    initial_state: Callable = None
    parameters: frozenset = frozenset()
    stops_on_duality_gap: bool = False

    def options_from(self, params):
        """The solver's own options among an estimator's parameters.

        Parameters
        ----------
        params : dict
            The estimator's parameters (``estimator.get_params(deep=False)``).

        Returns
        -------
        dict
            ``params`` restricted to :attr:`parameters`.
        """
        return {name: params[name] for name in sorted(self.parameters) if name in params}

    def continue_from(self, w, t, seen_weight):
        """The ``partial_fit`` state that continues from coefficients ``w`` and step
        counter ``t`` (see :attr:`initial_state`)."""
        return self.initial_state(np.array(w, dtype=np.float64), t, seen_weight)


_REGISTRY = {}


def register_solver(name, run, *, losses, warm_start, description, l1=False,
                    partial_fit=False, initial_state=None, parameters=(),
                    stops_on_duality_gap=False, replace=False):
    """Add a solver to the registry.

    Parameters
    ----------
    name : str
    run : callable
        ``run(risk, w0, options) -> OptimizeResult``; see :class:`SolverSpec`.
    losses : iterable of str
        Loss families from :data:`LOSS_FAMILIES`.
    warm_start : bool
    description : str
    l1 : bool, default=False
        Whether ``run`` minimizes the L1 term ``options["l1"] * ||w||_1`` beside the risk.
    partial_fit : bool, default=False
        Whether ``run`` continues from ``options["state"]`` on new data (see
        :class:`SolverSpec`).
    initial_state : callable, default=None
        ``initial_state(w, t, seen_weight) -> dict``, the state that continues from
        coefficients alone; required with ``partial_fit=True`` (see :class:`SolverSpec`).
    parameters : iterable of str, default=()
        The estimator parameters ``run`` reads from ``options`` beyond the common ones.
    stops_on_duality_gap : bool, default=False
        Whether its stopping rule is a duality gap (see :class:`SolverSpec`).
    replace : bool, default=False
        Allow replacing a solver registered under the same name.

    Returns
    -------
    SolverSpec

    Examples
    --------
    >>> from skstruct.optim import minimize_lbfgs
    >>> from skstruct.optim._registry import get_solver, register_solver, unregister_solver
    >>> spec = register_solver(
    ...     "my_lbfgs",
    ...     lambda risk, w0, options: minimize_lbfgs(risk.value_and_gradient, w0),
    ...     losses={"smooth"}, warm_start=True, description="L-BFGS with its defaults")
    >>> get_solver("my_lbfgs").losses
    frozenset({'smooth'})
    >>> unregister_solver("my_lbfgs")
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"A solver's name must be a non-empty string (the value of the "
                        f"estimators' solver parameter); got {name!r}.")
    losses = _check_families(losses)
    if not callable(run):
        raise TypeError(f"run must be callable; got {run!r}.")
    if warm_start not in (True, False):
        raise TypeError(f"warm_start must be True or False; got {warm_start!r}.")
    if l1 not in (True, False):
        raise TypeError(f"l1 must be True or False; got {l1!r}.")
    if partial_fit not in (True, False):
        raise TypeError(f"partial_fit must be True or False; got {partial_fit!r}.")
    if partial_fit and not callable(initial_state):
        raise TypeError(
            f"A solver with partial_fit=True declares initial_state(w, t, seen_weight), "
            f"the state that continues from coefficients alone; got {initial_state!r}.")
    if not partial_fit and initial_state is not None:
        raise TypeError("initial_state is the state of partial_fit; pass partial_fit=True "
                        "with it, or no initial_state.")
    if isinstance(parameters, str) or not hasattr(parameters, "__iter__"):
        raise TypeError(f"parameters must be a collection of parameter names; got "
                        f"{parameters!r}.")
    parameters = frozenset(parameters)
    if not all(isinstance(p, str) for p in parameters):
        raise TypeError(f"parameters must be a collection of parameter names; got "
                        f"{sorted(map(repr, parameters))}.")
    if stops_on_duality_gap not in (True, False):
        raise TypeError(f"stops_on_duality_gap must be True or False; got "
                        f"{stops_on_duality_gap!r}.")
    if name in _REGISTRY and not replace:
        raise ValueError(f"A solver named {name!r} is registered already; pass "
                         "replace=True to replace it.")
    spec = SolverSpec(name, run, losses, bool(warm_start), str(description), bool(l1),
                      bool(partial_fit), initial_state, parameters,
                      bool(stops_on_duality_gap))
    _REGISTRY[spec.name] = spec
    return spec


def _check_families(losses):
    """``losses`` as a frozenset of known loss families, at least one."""
    if isinstance(losses, str) or not hasattr(losses, "__iter__"):
        raise TypeError(f"losses must be a collection of loss families from {LOSS_FAMILIES},"
                        f" e.g. {{'smooth'}}; got {losses!r}.")
    losses = frozenset(losses)
    unknown = losses - set(LOSS_FAMILIES)
    if unknown or not losses:
        raise ValueError(f"losses must be a non-empty subset of {LOSS_FAMILIES}; got "
                         f"{sorted(map(repr, losses))}.")
    return losses


def unregister_solver(name):
    """Remove a solver (for tests and plug-ins that registered one)."""
    _REGISTRY.pop(name, None)


def get_solver(name):
    """The :class:`SolverSpec` registered as ``name``; ValueError naming the known ones."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"Unknown solver {name!r}; registered solvers: "
                         f"{sorted(_REGISTRY)}.") from None


def solver_names(*families):
    """Names of the solvers that accept at least one of the loss ``families``.

    This is what an estimator's ``solver`` parameter offers, e.g.
    ``StrOptions(solver_names("hinge_margin", "hinge_slack"))`` for a structured SVM.

    Examples
    --------
    >>> sorted(solver_names("hinge_margin", "hinge_slack"))
    ['bcfw', 'casimir', 'cutting_plane', 'subgradient', 'svrg']
    >>> sorted(solver_names("smooth"))
    ['lbfgs', 'lbfgsb', 'owlqn', 'svrg']
    """
    unknown = set(families) - set(LOSS_FAMILIES)
    if unknown:
        raise ValueError(f"Unknown loss families {sorted(unknown)}; known: {LOSS_FAMILIES}.")
    return {name for name, spec in _REGISTRY.items() if spec.losses & set(families)}


class SolverNames(Set):
    """The names of the solvers of some loss families, read from the registry when asked.

    The choices of an estimator's ``solver`` parameter,
    ``StrOptions(SolverNames("smooth"))``: a solver registered after the estimator class
    was defined is one of them.

    Parameters
    ----------
    *families : str
        Loss families from :data:`LOSS_FAMILIES`.

    Examples
    --------
    >>> "lbfgs" in SolverNames("smooth"), "bcfw" in SolverNames("smooth")
    (True, False)
    """

    def __init__(self, *families):
        solver_names(*families)  # unknown families are the error, now
        self.families = families

    def __contains__(self, name):
        return name in solver_names(*self.families)

    def __iter__(self):
        return iter(sorted(solver_names(*self.families)))

    def __len__(self):
        return len(solver_names(*self.families))

    def __repr__(self):
        return f"SolverNames{self.families!r}"

    @classmethod
    def _from_iterable(cls, names):
        # the results of set operations are plain sets
        return set(names)


def loss_family(loss):
    """The family of a training loss object (see :data:`LOSS_FAMILIES`).

    The loss declares it (:attr:`~skstruct.losses.TrainingLoss.solver_family`): the
    structured hinge gives ``"hinge_" + rescaling``, the perceptron loss
    ``"perceptron"``, the randomized likelihood of candidate sets
    ``"randomized_likelihood"``, any other loss ``"smooth"``.
    """
    return loss.solver_family


def check_solver(name, family, *, warm_start=False, l1=False, partial_fit=False):
    """The :class:`SolverSpec` of ``name``, checked against a loss family, warm start,
    an L1 penalty and ``partial_fit``.

    Raises
    ------
    ValueError
        When the solver does not solve ``family`` (the message names the solvers that
        do), ``warm_start`` is asked of a solver that cannot continue a previous fit, or
        ``l1`` (an L1 term in the penalty) of a solver without one, or ``partial_fit``
        of a solver that cannot continue on new data.
    """
    spec = get_solver(name)
    if family not in LOSS_FAMILIES:
        raise ValueError(f"Unknown loss family {family!r}; known: {LOSS_FAMILIES}.")
    if family not in spec.losses:
        raise ValueError(
            f"solver={name!r} solves {_describe(spec.losses)} only; "
            f"{_alternatives(sorted(solver_names(family)))} for "
            f"{_RESCALING_NAMES[family]}."
        )
    if warm_start and not spec.warm_start:
        able = sorted(other for other in solver_names(family)
                      if get_solver(other).warm_start)
        raise ValueError(
            f"solver={name!r} cannot warm-start (its dual variables are not kept between "
            f"fits); {_alternatives(able)} with warm_start=True, or warm_start=False."
        )
    if l1 and not spec.l1:
        able = sorted(other for other in solver_names(family) if get_solver(other).l1)
        raise ValueError(
            f"solver={name!r} cannot minimize an L1 penalty (l1_ratio > 0); "
            f"{_alternatives(able)} with l1_ratio > 0, or l1_ratio=0."
        )
    if partial_fit and not spec.partial_fit:
        able = sorted(other for other in solver_names(family)
                      if get_solver(other).partial_fit)
        raise ValueError(
            f"solver={name!r} cannot continue on new data (partial_fit): it solves one "
            f"fixed training set; {_alternatives(able)} with partial_fit, or fit."
        )
    return spec


def _alternatives(names):
    """'use solver='a' or solver='b'', or that no registered solver does."""
    if not names:
        return "no registered solver can be used"
    return "use " + " or ".join(f"solver={other!r}" for other in names)


def run_solver(name, risk, w0, options, n_jobs=None):
    """Run the solver ``name`` on ``risk`` from ``w0``, with ``n_jobs`` kernel threads.

    Parameters
    ----------
    name : str
    risk : RegularizedRisk
    w0 : ndarray of shape (n_params,)
        Starting point (solvers that start from their dual's zero ignore it).
    options : dict
        The estimator's settings; see :class:`SolverSpec`.
    n_jobs : int or None, default=None
        Threads of the compiled kernels during the run (None: unchanged; negative: all
        but abs(n_jobs) − 1), restored afterwards.

    Returns
    -------
    OptimizeResult
    """
    get_solver(name)  # an unknown name is the error, before the risk is read
    spec = check_solver(name, loss_family(risk.loss), l1=options.get("l1", 0) > 0,
                        partial_fit=options.get("state") is not None)
    with n_jobs_threads(n_jobs):
        return spec.run(risk, w0, dict(options))


def _describe(families):
    return " and ".join(_RESCALING_NAMES[family] for family in LOSS_FAMILIES
                        if family in families)
