"""Learning MAP-perturbation models from random candidate sets, without MAP calls."""

import copy
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Hidden, Interval, StrOptions

from ._linear_model import LinearStructuredModel
from ._partial_fit import PartialFitMixin
from .decoders import Decoder
from .decoders._core.best_neighbour import best_neighbour_by_scan
from .decoders._core.unary import PartsArithmetic
from .features import feature_map_hook
from .losses._neighbourhood import NeighbourhoodDifferences, NeighbourhoodLikelihoodLoss
from .losses._randomized import RandomizedLikelihoodLoss, softmax_over_candidates
from .optim._perturbed_ascent import TrainingDivergedError
from .optim._streaming import StreamedRisk
from .optim._wrapped_risk import WrappedRisk
from .utils._parallel import n_jobs_threads
from .utils._params import N_JOBS_CONSTRAINT

__all__ = ["PerturbedMAPClassifier"]

#: Decoder operations the counter reports (``decoder_calls_``).
COUNTED_OPERATIONS = ("map", "top_k", "marginals", "log_partition", "loss_augmented_map",
                      "sparsemap", "sample_uniform", "neighbours", "best_neighbour",
                      "score_outputs", "parts", "neighbour_differences")


class _CountingDecoder:
    """A decoder seen through a counter of its operations' calls."""

    def __init__(self, decoder):
        self._decoder = decoder
        self.calls = dict.fromkeys(COUNTED_OPERATIONS, 0)

    def __getattr__(self, name):
        attribute = getattr(self._decoder, name)
        if name in COUNTED_OPERATIONS and callable(attribute):
            def counted(*args, **kwargs):
                self.calls[name] += 1
                return attribute(*args, **kwargs)
            return counted
        return attribute


def _per_entry(mask, output_offsets):
    """A per-example mask repeated over the first axis of stacked outputs."""
    return np.repeat(mask, np.diff(output_offsets))


def _select(mask, a, b, output_offsets):
    """Stacked outputs: example i's from ``a`` where ``mask[i]``, else from ``b``."""
    entries = _per_entry(mask, output_offsets).reshape((-1,) + (1,) * (a.ndim - 1))
    return np.where(entries, a, b)


def _mix(z):
    """The splitmix64 finalizer: a bijection of uint64 that scatters every input bit."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _hashes(outputs, output_offsets, salt):
    """A 64-bit fingerprint of every example's output (equal outputs, equal prints).

    Row r of an example (a token's state, a label vector's row) gets the value
    v_r = XOR_j (y_rj + 1) s_j and the print is Σ_r mix(v_r XOR mix(r + s_0)) mod 2⁶⁴, with
    ``mix`` the splitmix64 finalizer and r the row's position in its example: distinct
    outputs collide with probability about 2⁻⁶⁴. (A print linear in the position,
    Σ_r v_r (a r + b), made every two outputs with the same number of parts and the same
    sum of part positions collide, e.g. the DAGs with arcs {0, 3} and {1, 2}.)
    """
    flat = outputs.reshape(outputs.shape[0], -1).astype(np.uint64) + np.uint64(1)
    mixed = flat * salt[: flat.shape[1]]
    rows = np.bitwise_xor.reduce(mixed, axis=1) if flat.shape[1] > 1 else mixed[:, 0]
    position = np.arange(flat.shape[0], dtype=np.uint64) - np.repeat(
        output_offsets[:-1], np.diff(output_offsets)).astype(np.uint64)
    rows = _mix(rows ^ _mix(position + salt[0]))
    return np.add.reduceat(rows, output_offsets[:-1]) if rows.size else rows


def _score_layers(decoder, scores, layers):
    """θ of R stacked output batches (each laid out like ``scores``' outputs) in one
    decoder call, shape (R, n_examples)."""
    n_examples = scores.n_examples
    tiled = scores.take(np.tile(np.arange(n_examples), len(layers)))
    return decoder.score_outputs(tiled, np.concatenate(layers, axis=0)).reshape(
        len(layers), n_examples)


def _largest_squared_row_norm(X):
    """max_r ‖x_r‖² over the feature rows of ``X`` (dense, sparse CSR, or rows without
    values, which are all 1.0), in float64 whatever the dtype."""
    indptr = getattr(X, "indptr", None)
    if indptr is None:
        dense = np.asarray(X, dtype=np.float64)
        return float(np.einsum("ij,ij->i", dense, dense).max(initial=0.0))
    counts = np.diff(np.asarray(indptr))
    if getattr(X, "data", None) is None:
        return float(counts.max(initial=0))
    data = np.asarray(X.data, dtype=np.float64)
    rows = np.repeat(np.arange(counts.shape[0]), counts)
    return float(np.bincount(rows, weights=data * data, minlength=counts.shape[0]).max(
        initial=0.0))


def objective_trouble(curve, window):
    """Whether an objective curve (a loss, lower is better) ``rose`` (the mean of its
    last ``window`` values above that of its first ``window``) and whether it
    ``collapsed`` (``window`` values in a row after the first at most
    :data:`COLLAPSED_OBJECTIVE`)."""
    curve = np.asarray(curve, dtype=np.float64)
    rose = curve.size >= 2 * window and \
        np.mean(curve[-window:]) > np.mean(curve[:window]) + 1e-12
    low = np.concatenate([[False], curve[1:] <= COLLAPSED_OBJECTIVE, [False]])
    edges = np.flatnonzero(np.diff(low.astype(np.int8)))
    runs = edges[1::2] - edges[::2]
    return bool(rose), bool(runs.size and runs.max() >= window)


def _squared_features(X):
    """The feature rows of ``X`` with every value squared, in the container type of
    ``X`` (rows without values, all 1.0, are their own squares)."""
    if getattr(X, "indptr", None) is None:
        return np.square(np.asarray(X, dtype=np.float64))
    if getattr(X, "data", None) is None:
        return X
    squared = copy.copy(X)
    squared.data = np.square(np.asarray(X.data, dtype=np.float64))
    return squared


def _filled(outputs, valid, y_encoded, offsets):
    """``outputs`` with the entries of the examples not ``valid`` replaced by the gold ones
    (no copy when every example is valid)."""
    return outputs if valid.all() else _select(valid, outputs, y_encoded, offsets)


def _differs_from_gold(paths, y_encoded, offsets):
    """differs[l, i]: output ``paths[..., l]`` of example ``i`` is not its gold output,
    shape (L, m), by exact comparison of the encoded outputs."""
    differs = (paths != y_encoded[..., None]).reshape(paths.shape[0], -1, paths.shape[-1])
    return np.logical_or.reduceat(differs.any(axis=1), offsets[:-1], axis=0).T


#: Iterations over which a rising or collapsed objective of the stochastic ascent warns.
RISING_WINDOW = 5

#: An objective at most this small has collapsed (no competitor left in the sets).
COLLAPSED_OBJECTIVE = 1e-12


#: Enumerated outputs per batched ``parts`` call when the exact path builds its matrix.
_LAYERS_PER_CALL = 256


class _EnumeratedParts:
    """Every candidate of every example as one row of a sparse part-indicator matrix.

    For ``candidates="all"`` the candidate sets T_i = Y(x_i) do not depend on w (the
    outputs of finite score are fixed by the batch), so their parts are computed once
    per fit instead of once per output and iteration. Row ``l * m + i`` of ``matrix``
    (shape ((L + 1) m, U), U the size of a part container's flat ``unary``) holds the
    parts a of candidate layer ``l`` of example ``i`` (layer 0: the gold output), so

        θ[l, i] = (matrix @ η)[l m + i]            (η the flat part scores)
        ∇ = matrix.T @ vec(G)                       (G[l, i] the layer weights)

    are the scores of all candidates and the weighted sum of their parts in one sparse
    product each.

    Attributes
    ----------
    matrix : scipy.sparse.csr_matrix of shape ((L + 1) m, U)
    keep : ndarray of shape (L + 1, m), bool
        Layer ``l`` holds a candidate of example ``i`` that is not the gold output.
    template : PartsArithmetic
        The gold parts; ``template._new`` turns a flat gradient into a container.
    """

    def __init__(self, decoder, scores, y_encoded, layers, offsets, keep, template):
        m = scores.n_examples
        size = template.unary.size
        owner = np.repeat(np.arange(m), np.diff(np.asarray(template.unary_offsets)))
        rows, cols, values = [], [], []
        n_layers = len(layers) + 1
        for first in range(0, n_layers, _LAYERS_PER_CALL):
            chunk = [y_encoded if index == 0 else _filled(*layers[index - 1], y_encoded,
                                                          offsets)
                     for index in range(first, min(first + _LAYERS_PER_CALL, n_layers))]
            tiled = scores.take(np.tile(np.arange(m), len(chunk)))
            flat = np.ravel(decoder.parts(tiled, np.concatenate(chunk, axis=0)).unary)
            nonzero = np.flatnonzero(flat)
            layer, col = np.divmod(nonzero, size)
            rows.append((first + layer) * m + owner[col])
            cols.append(col)
            values.append(flat[nonzero])
        self.matrix = sp.csr_matrix(
            (np.concatenate(values), (np.concatenate(rows), np.concatenate(cols))),
            shape=(n_layers * m, size))
        self.transposed = self.matrix.T.tocsr()
        self.keep = np.asarray(keep)
        self.template = template
        self.n_examples = m

    def scores(self, scores):
        """θ of every candidate, shape (L + 1, m); -inf where not kept (except layer 0)."""
        theta = (self.matrix @ np.ravel(scores.unary)).reshape(-1, self.n_examples)
        theta[1:][~self.keep[1:]] = -np.inf
        return theta

    def weighted_sum(self, weights):
        """Σ_l weights[l, i] a_{l, i} as a part container like ``template``."""
        flat = self.transposed @ np.ravel(weights)
        return self.template._new(flat.reshape(self.template.unary.shape))


class _CandidateSets:
    """The candidate sets of one step, as the randomized likelihood reads them.

    Attributes
    ----------
    theta : ndarray of shape (L + 1, m) or list of L + 1 ndarrays of shape (m,)
        Scores of the candidate layers; layer 0 holds the gold outputs.
    keep : ndarray of shape (L + 1, m) or list of L + 1 ndarrays of shape (m,), bool
        Layer ``l`` holds a distinct candidate of example ``i``.
    weighted_sum : callable
        ``weighted_sum(weights)``: Σ_l weights[l, i] a_{l, i}, a part container.
    """

    def __init__(self, theta, keep, weighted_sum):
        self.theta, self.keep, self.weighted_sum = theta, keep, weighted_sum


class _LayerParts:
    """Σ_l weights[l, i] a_{l, i} over candidate layers held as outputs: one ``parts``
    call per layer of nonzero weight (examples without a candidate in a layer take
    their gold output there, of weight zero)."""

    def __init__(self, decoder, scores, y_encoded, offsets, layers, keep):
        self.decoder, self.scores, self.y_encoded = decoder, scores, y_encoded
        self.offsets, self.layers, self.keep = offsets, layers, keep

    def __call__(self, weights):
        total = None
        for index, (outputs, _) in enumerate(self.layers):
            if index and not np.any(weights[index]):
                continue
            outputs = _select(self.keep[index], outputs, self.y_encoded, self.offsets)
            part = self.decoder.parts(self.scores, outputs).scale(weights[index])
            total = part if total is None else total + part
        return total


class _CandidateSampler:
    """Draws the candidate sets T_i of every training step as ``model``'s parameters
    say (``candidates``, ``k``, ``n_candidates``, ``uniform_start``), for
    :class:`~skstruct.losses._randomized.RandomizedLikelihoodLoss`.

    With ``candidates="all"`` the outputs are enumerated at the first draw, once per fit
    (:meth:`PerturbedMAPClassifier._enumerate`), when the decoder's parts allow it.
    """

    def __init__(self, model, state):
        self.model, self.state = model, state
        self._enumerated = None
        self._enumerate_next = model.candidates == "all"

    def draw(self, decoder, scores, y_encoded, w, rng):
        """The candidate sets at ``scores`` (the part scores of ``w``): a
        :class:`_CandidateSets`."""
        if self._enumerate_next:
            self._enumerated = self.model._enumerate(decoder, scores, y_encoded, self.state)
            self._enumerate_next = False
        if self._enumerated is not None:
            enumerated = self._enumerated
            return _CandidateSets(enumerated.scores(scores), enumerated.keep,
                                  enumerated.weighted_sum)
        layers, theta, keep = self.model._candidate_sets(
            decoder, scores, y_encoded, self.state, w, rng, self.model.candidates)
        return _CandidateSets(theta, keep, _LayerParts(
            decoder, scores, y_encoded, self.state["offsets"], layers, keep))


def _l2_diagonal(alpha, free, n_params):
    """The L2 term's curvature of every parameter: α, 0 at the positions ``free``."""
    if free is None or not free.size:
        return alpha
    diagonal = np.full(n_params, float(alpha))
    diagonal[free] = 0.0
    return diagonal


def _feature_mean(X, sample_weight):
    """The weighted mean of the feature rows of ``X`` (dense or CSR), shape
    (n_features,)."""
    weights = np.asarray(sample_weight, dtype=np.float64)
    weights = weights / weights.sum()
    if sp.issparse(X):
        return np.asarray(X.T @ weights, dtype=np.float64).ravel()
    return weights @ np.asarray(X, dtype=np.float64)


class _CentredRisk(WrappedRisk):
    """G(v) = F(T v) for the change of coordinates T of the feature map's
    ``intercept_centring``; ∇G = Tᵀ ∇F."""

    def __init__(self, risk, centring):
        super().__init__(risk)
        self.centring = centring

    def value_and_gradient(self, v):
        value, gradient = self.risk.value_and_gradient(self.centring.forward(v))
        return value, self.centring.adjoint(gradient)


class _InterceptFreeRisk(WrappedRisk):
    """A risk F(w) = data term + (α / 2) ‖w‖² seen without the L2 term on the positions
    ``free`` (the intercept): F(w) − (α / 2) ‖w_free‖², as a logistic regression leaves
    its intercept unpenalized.

    Parameters
    ----------
    risk : RegularizedRisk
    free : ndarray of int64
    """

    def __init__(self, risk, free):
        super().__init__(risk)
        self.free = np.asarray(free, dtype=np.int64)

    def value_and_gradient(self, w):
        value, gradient = self.risk.value_and_gradient(w)
        kept = w[self.free]
        gradient = np.array(gradient, dtype=np.float64)
        gradient[self.free] -= self.risk.alpha * kept
        return value - 0.5 * self.risk.alpha * float(kept @ kept), gradient


#: Steps of one ``partial_fit`` call when ``max_iter`` is None.
PARTIAL_FIT_STEPS = 1


class PerturbedMAPClassifier(PartialFitMixin, LinearStructuredModel):
    """A MAP-perturbation model learned from candidate sets, without MAP calls.

    The predictor is f(x) = argmax_{y ∈ Y(x)} ⟨φ(x, y), w⟩ + γ_y with γ_y i.i.d.
    Gumbel(0, β), so that P(f(x) = y) = softmax(⟨φ(x, ·), w⟩ / β)_y, the CRF's
    distribution at temperature β (:meth:`sample` draws from it; :meth:`predict` returns
    the MAP, γ = 0). Training maximizes the likelihood of the data under that model
    restricted, for every example, to a small candidate set T_i ∋ y_i, so that it needs
    neither the MAP nor the marginals nor the partition function: only the decoder's
    ``neighbours`` (or ``sample_uniform``) and ``parts``. One evaluation costs
    O(Σ_i :math:`|T_i|` × the parts a candidate changes), never O(:math:`|Y|`).

    **Default** (``candidates="neighbourhood"``, ``objective="pseudo_likelihood"``):
    T_i = {y_i} ∪ N_k(y_i), the outputs within Hamming distance ``k`` of the gold one.
    These sets do not depend on w, so their parts are listed once per fit (kept as
    sparse differences from the gold parts, within ``max_memory``; written by the
    decoder's compiled ``neighbour_differences`` where it offers them: chains and
    multilabel vectors for k = 1), and the neighbours
    are grouped by the position they change (a token's tag, a label, a dependent's
    head): the loss

        ℓ_i(w) = −Σ_g log [ e^{θ_{y_i}/β} / (e^{θ_{y_i}/β} + Σ_{y ∈ N_ig} e^{θ_y/β}) ]

    is, for k = 1, Besag's pseudo-likelihood at temperature β (the per-label logistic
    losses for multilabel vectors); ``objective="log_likelihood"`` takes one softmax over
    the whole of T_i instead. The risk (1/Σ s) Σ_i s_i ℓ_i(w) + (l2 / 2) ‖w / β‖², convex,
    is minimized by L-BFGS (``solver="lbfgs"``) in coordinates rescaled by the curvature
    of every parameter (a diagonal preconditioner from the squared features), so that
    neither the scale of the features nor β changes what it converges to or how fast.
    The L2 term leaves the intercept out (multiclass and multilabel outputs), as a
    logistic regression does; L-BFGS then runs with the features centred at their mean
    (an exact change of coordinates, W and b − meanᵀW), which keeps uncentred features
    (counts, positive values) from making the intercept and the coefficients
    ill-conditioned.

    **The paper's learner** (``candidates="proposal"``, ``objective="pooled"``, Algorithm 1
    of Ghoshal & Honorio 2019, run with ``solver="perturbed_ascent"``): T_i is the gold
    output and ⌈√m⌉ draws per iteration of a proposal that starts, with probability
    ``uniform_start``, from a uniform sample of Y(x_i), else from y_i, and keeps the best
    output of the start's Hamming-``k`` neighbourhood (ties to the later one); each of
    ``max_iter`` iterations takes one step of size ``learning_rate β² / (R² √t)`` along

        g = Σ_i c_i (φ(x_i, y_i) − E_{p_i}[φ(x_i, ·)]),

    with p_i the softmax over T_i of the scores / β, q_i = p_i(y_i), c_i = ω_i q_i /
    (β Σ_j ω_j q_j) (``"pooled"``: the gradient of log Σ_i ω_i q_i) or c_i = ω_i / β
    (``"log_likelihood"``), minus the L2 term's, then an ℓ1 proximal step (soft-thresholding
    by step × ``l1``). R² = 1 + max_r ‖x_r‖² over the feature rows: a step moves every
    logit θ / β by at most about ``learning_rate / √t``, whatever the scale of the
    features and β. The pooled objective weights every example by its q_i, so the
    examples the model gets wrong hardly move it, and with ``uniform_start="auto"``
    (α = min(1, ‖w‖₁ / √m), 1 as soon as the weights grow) the proposals of a large
    output space end far from the gold outputs: the sets then hold no competitor, the
    objective collapses to 0 and the model stops learning. A
    :class:`~sklearn.exceptions.ConvergenceWarning` says so (and when the objective rises
    for ``RISING_WINDOW`` iterations); a step that makes the weights or scores non-finite
    raises ``ValueError`` ("training diverged").

    **Streaming** (:meth:`partial_fit`): with the default sets every call minimizes, by
    the same preconditioned L-BFGS, the risk of its batch plus a diagonal quadratic
    summary of the earlier batches (:class:`~skstruct.optim._streaming.StreamedRisk`:
    their data term expanded at the weights they left, its Hessian by the diagonal
    (1/β²) Σ_r p_r (1 − p_r) abs(d_r) x² accumulated over the calls, each batch's at the
    weights its call started from: at its own minimizer a small batch is nearly
    separated and its curvature would vanish), with ``l2="auto"`` = 1 / (the
    total sample weight seen so far): the first call is a :meth:`fit` on its batch, and
    one pass over a stream approximates a :meth:`fit` on all of it. With drawn sets a call
    takes ``max_iter`` steps (1 when None) of the stochastic ascent, its step counter
    continued. The first call fixes β.

    The solvers are registered (:mod:`skstruct.optim`) and report every iteration
    (``verbose``, ``callback``) as the other estimators' solvers do. The decoder needs
    ``neighbours`` and ``parts`` for the default training (``sample_uniform`` too for
    the proposals, ``top_k`` for ``candidates="all"``; ``map`` only for :meth:`predict`);
    chains, multiclass, multilabel sets, k-subsets, trees and DAGs provide them.
    ``decoder_calls_`` counts the decoder operations of the last ``fit``: a training
    without MAP has ``decoder_calls_["map"] == 0``.

    Parameters
    ----------
    decoder : Decoder, default=None
        Inferred from ``y`` as for :class:`StructuredSVM`.
    k : int, default=1
        Hamming radius of the neighbourhoods (the candidate sets' or the proposal's).
        k-subsets change in two positions per swap: use k >= 2 for them.
    n_candidates : "sqrt" or int, default="sqrt"
        ``candidates="proposal"``: proposal draws per example and iteration, ⌈√m⌉ for m
        training examples, as in the paper, or a number.
    candidates : {"neighbourhood", "proposal", "all"}, default="neighbourhood"
        ``"neighbourhood"``: T_i = {y_i} ∪ N_k(y_i), listed once per fit.
        ``"proposal"``: the paper's proposals, drawn anew at every iteration.
        ``"all"``: T_i = Y(x_i), every output (enumerated by ``top_k``; tiny problems
        only), which is exact CRF training by the same steps (the paper's CRF_ALL); the
        outputs are enumerated once per fit and their parts kept in one sparse matrix
        (decoders whose part containers hold one array; others re-enumerate at every
        step).
    objective : {"auto", "pseudo_likelihood", "log_likelihood", "pooled"}, default="auto"
        ``"pseudo_likelihood"`` (``"auto"`` with ``candidates="neighbourhood"``): one
        softmax per changed position, as above. ``"log_likelihood"`` (``"auto"``
        otherwise): Σ_i ω_i log q_i, one softmax over each T_i. ``"pooled"``: the
        paper's log Σ_i ω_i q_i (stochastic ascent only).
    solver : {"auto", "lbfgs", "perturbed_ascent"}, default="auto"
        ``"lbfgs"`` for the fixed sets of ``candidates="neighbourhood"`` (``"auto"``
        there), ``"perturbed_ascent"`` for the sets drawn at every step (``"auto"``
        otherwise).
    beta : "auto" or float, default="auto"
        Gumbel scale β; ``"auto"`` is the paper's 1 / log((r − 1)(√m − 1)) with r the
        largest number of outputs of an example (read from the log-partition at zero
        scores, or by enumeration up to ``max_outputs``), clipped to a positive value.
        With the L2 term on w / β the predictions do not depend on it.
    uniform_start : "auto" or float in [0, 1], default="auto"
        ``candidates="proposal"``: probability that a proposal starts from a uniform
        sample of Y(x_i) rather than from the gold output (the paper's α); ``"auto"`` is
        min(1, ‖w‖₁ / √m), recomputed every iteration.
    l2 : "auto" or float, default="auto"
        Strength of (l2 / 2) ‖w / β‖² (the intercept left out under L-BFGS);
        ``"auto"`` is 1 / Σ_i s_i (1 / m without ``sample_weight``), the penalty of a
        logistic regression with C = 1 written as a mean over the examples.
    l1 : float, default=0.0
        ℓ1 strength: of the proximal step (stochastic ascent; the paper's 0.01), or of
        (l1 / β) ‖w‖₁ for L-BFGS, which then runs as OWL-QN (without the
        preconditioner).
    learning_rate : float, default=1.0
        Stochastic ascent: the step at t = 1, in units of β² / R² (R² = 1 + the largest
        squared norm of a feature row); steps decay as 1/√t.
    max_iter : int, default=None
        Iterations: 300 for L-BFGS, 20 (the paper's T) for the stochastic ascent.
    tol : float, default=1e-4
        L-BFGS stops when the largest gradient entry (in the rescaled coordinates) is at
        most ``tol``, or the objective's relative decrease is below ``tol * 1e-3``.
    max_outputs : int, default=100000
        For ``candidates="all"``, ``beta="auto"`` without a log-partition and
        :meth:`sample`: the largest number of outputs enumerated per example.
    max_memory : float, default=2.0
        ``candidates="neighbourhood"``: gigabytes the candidates' part differences may
        take; past it ``fit`` raises ``MemoryError`` while listing them, before they are
        all held.
    random_state : int, RandomState or None, default=None
        The proposal draws (the default training draws nothing).
    verbose : int, default=0
        Print one line per iteration.
    warm_start : bool, default=False
        Start from the previous solution.
    n_jobs : int, default=None
        Threads of the compiled kernels during ``fit`` (None or -1: all cores; 0 is an
        error, as in joblib). The result does not depend on it.
    callback : callable, default=None
        Called as ``callback(n_iter, w, objective)`` after each iteration, with the flat
        parameter vector ``w`` after the step and ``objective`` the iteration's entry of
        ``objective_curve_``; returning True stops the training.
    alpha : "auto" or float in [0, 1], default="deprecated"
        Former name of ``uniform_start``; when given, it is used instead of
        ``uniform_start``.

        .. deprecated:: 0.1
           ``alpha`` was renamed ``uniform_start`` in 0.1 and will be removed in 0.2.

    Attributes
    ----------
    coef_, intercept_, transition_, ... : ndarray
        As for the other linear models of the output kind.
    beta_ : float
        The Gumbel scale used.
    n_iter_ : int
    objective_curve_ : ndarray of shape (``n_iter_``,)
        L-BFGS: the risk after each iteration. Stochastic ascent: before each step, the
        loss of the iteration's candidate sets, 1 − Σ_i ω_i q_i (``"pooled"``) or
        −Σ_i ω_i log q_i.
    decoder_calls_ : dict
        Calls of every decoder operation during the last ``fit``.
    output_kind_, classes_, decoder_, n_features_in_

    References
    ----------
    Ghoshal & Honorio (2019). Learning maximum-a-posteriori perturbation models for
    structured prediction in polynomial time. ICML.
    Besag (1975). Statistical analysis of non-lattice data. Journal of the Royal
    Statistical Society D, 24(3).

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct import PerturbedMAPClassifier
    >>> X = np.array([[1., 0.], [0., 1.], [1., 1.], [0., 0.]])
    >>> Y = np.array([[1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 1]])
    >>> model = PerturbedMAPClassifier().fit(X, Y)
    >>> model.predict(X[:3])
    array([[1, 0, 0],
           [0, 1, 0],
           [1, 1, 0]])
    >>> model.decoder_calls_["map"]
    0
    """

    _decoder_operations = ("map",)

    _parameter_constraints = {
        "decoder": [None, Decoder],
        "k": [Interval(Integral, 1, None, closed="left")],
        "n_candidates": [StrOptions({"sqrt"}), Interval(Integral, 1, None, closed="left")],
        "candidates": [StrOptions({"neighbourhood", "proposal", "all"})],
        "objective": [StrOptions({"auto", "pseudo_likelihood", "log_likelihood", "pooled"})],
        "solver": [StrOptions({"auto", "lbfgs", "perturbed_ascent"})],
        "beta": [StrOptions({"auto"}), Interval(Real, 0, None, closed="neither")],
        "uniform_start": [StrOptions({"auto"}), Interval(Real, 0, 1, closed="both")],
        "l2": [StrOptions({"auto"}), Interval(Real, 0, None, closed="left")],
        "l1": [Interval(Real, 0, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [None, Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "max_outputs": [Interval(Integral, 1, None, closed="left")],
        "max_memory": [Interval(Real, 0, None, closed="neither")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "warm_start": ["boolean"],
        "n_jobs": N_JOBS_CONSTRAINT,
        "callback": [None, callable],
        "alpha": [StrOptions({"auto"}), Interval(Real, 0, 1, closed="both"),
                  Hidden(StrOptions({"deprecated"}))],
    }

    def __init__(self, decoder=None, *, k=1, n_candidates="sqrt",
                 candidates="neighbourhood", objective="auto", solver="auto",
                 beta="auto", uniform_start="auto", l2="auto", l1=0.0, learning_rate=1.0,
                 max_iter=None, tol=1e-4, max_outputs=100000, max_memory=2.0,
                 random_state=None, verbose=0, warm_start=False, n_jobs=None,
                 callback=None, alpha="deprecated"):
        self.decoder = decoder
        self.k = k
        self.n_candidates = n_candidates
        self.candidates = candidates
        self.objective = objective
        self.solver = solver
        self.beta = beta
        self.uniform_start = uniform_start
        self.l2 = l2
        self.l1 = l1
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.tol = tol
        self.max_memory = max_memory
        self.max_outputs = max_outputs
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.callback = callback
        self.alpha = alpha

    # -- training ------------------------------------------------------------------

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the model by randomized likelihood ascent (no MAP calls).

        Parameters
        ----------
        X, y
            As for :meth:`StructuredSVM.fit`.
        sample_weight : array-like of shape (n_examples,), default=None
            Example weights s_i: the likelihood is (1/Σ s) Σ_i s_i q_i.

        Returns
        -------
        self : PerturbedMAPClassifier
        """
        return self._fit_sequence(X, y, sample_weight)

    def _check_fit_parameters(self, partial_fit):
        if self.alpha != "deprecated":
            warnings.warn("'alpha' was renamed 'uniform_start' in version 0.1 and will be "
                          "removed in 0.2; pass uniform_start instead.", FutureWarning)

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """Continue training on one batch, from the model the previous calls left.

        With the default candidates, L-BFGS minimizes the batch's risk plus a diagonal
        quadratic summary of the earlier batches (see the class's notes on streaming);
        with drawn candidate sets (``solver="perturbed_ascent"``), ``max_iter`` steps (1
        when None) of the stochastic ascent, their sizes shrinking as 1/√t over all the
        calls. ``l2="auto"`` is 1 / (the total sample weight of every batch so far). The
        first call fixes the classes, the decoder and β; :meth:`fit` starts over, and
        ``partial_fit`` after :meth:`fit` continues from the fitted model (the fit's
        data summarized as an earlier batch).

        Parameters
        ----------
        X, y
            One batch, as for :meth:`fit`.
        classes : array-like of shape (n_classes,), default=None
            Every label of the stream (sequences: token labels; multiclass: labels).
            Required on the first call for them, optional later (then the same). None
            for trees, DAGs and subsets; None or ``np.arange(n_labels)`` for multilabel
            outputs.
        sample_weight : array-like of shape (n_examples,), default=None
            Example weights of the batch.

        Returns
        -------
        self : PerturbedMAPClassifier
        """
        return self._fit_sequence(X, y, sample_weight, classes, partial_fit=True)

    def _solver_name(self, partial_fit=False):
        """``solver``; ``"auto"``: L-BFGS on the fixed neighbourhood sets of the
        log-likelihood, else the stochastic ascent (in ``fit`` and ``partial_fit``)."""
        objective = self._objective()
        fixed = self.candidates == "neighbourhood" and objective != "pooled"
        if objective == "pseudo_likelihood" and self.candidates != "neighbourhood":
            raise ValueError(
                "objective='pseudo_likelihood' groups the neighbours of the gold outputs "
                "by the position they change: it needs candidates='neighbourhood'.")
        solver = self.solver
        if solver == "auto":
            solver = "lbfgs" if fixed else "perturbed_ascent"
        if solver == "lbfgs" and not fixed:
            raise ValueError(
                f"solver='lbfgs' minimizes the log-likelihood of the fixed candidate sets "
                f"candidates='neighbourhood'; with candidates={self.candidates!r} and "
                f"objective={objective!r} use solver='perturbed_ascent' (or 'auto').")
        if solver == "perturbed_ascent" and self.candidates == "neighbourhood":
            raise ValueError(
                "solver='perturbed_ascent' draws candidate sets at every step: use "
                "candidates='proposal' or 'all' with it, or solver='lbfgs' (or 'auto') "
                "with candidates='neighbourhood'.")
        return solver

    def _objective(self):
        """``objective``; ``"auto"``: the pseudo-likelihood with the neighbourhood
        candidates, else the per-example log-likelihood."""
        if self.objective != "auto":
            return self.objective
        return "pseudo_likelihood" if self.candidates == "neighbourhood" else \
            "log_likelihood"

    def _decoder_needs(self):
        if self.candidates == "all":
            needs = [("top_k", "PerturbedMAPClassifier(candidates='all')")]
        elif self.candidates == "neighbourhood":
            needs = [("neighbours", "PerturbedMAPClassifier(candidates='neighbourhood')")]
        else:
            needs = [("sample_uniform", "PerturbedMAPClassifier's proposal"),
                     ("neighbours", "PerturbedMAPClassifier's proposal")]
        return needs + [("parts", "PerturbedMAPClassifier")]

    def _initial_params(self, features, kind, classes, n_features):
        # float64, and never a view of the fitted attributes that a warm start reads
        return np.array(super()._initial_params(features, kind, classes, n_features),
                        dtype=np.float64)

    def _prepare_training(self, run):
        """The decoder seen through a counter (``decoder_calls_``), the random generator
        of the run and the candidate-set state drawn at ``run.w0``; for
        ``candidates="neighbourhood"`` the part differences of every gold output's
        neighbours (:class:`~skstruct.losses._neighbourhood.NeighbourhoodDifferences`),
        within ``max_memory``."""
        if run.partial_fit and run.solver == "lbfgs" and run.state.get("w") is not None:
            run.w0 = np.array(run.state["w"], dtype=np.float64)
        run.training_decoder = _CountingDecoder(run.decoder)
        run.rng = check_random_state(self.random_state)
        with n_jobs_threads(self.n_jobs):
            run.candidate_state = self._training_state(
                run.training_decoder, run.features, run.batch, run.y_encoded, run.w0,
                run.rng)
            if run.partial_fit and not run.first:
                run.candidate_state["beta"] = self.beta_
            if self.candidates == "neighbourhood":
                scores = run.features.scores(run.batch, run.w0)
                try:
                    run.differences = NeighbourhoodDifferences.build(
                        run.training_decoder, scores, run.y_encoded,
                        run.candidate_state["offsets"], self.k,
                        max_bytes=self.max_memory * 1e9)
                except TypeError as error:
                    raise ValueError(
                        f"{type(self).__name__}(candidates='neighbourhood') needs part "
                        f"containers of one array ({error}); use candidates='proposal'."
                    ) from error
                except MemoryError as error:
                    raise MemoryError(f"{type(self).__name__}: {error}") from error

    def _l2(self, run):
        """The L2 strength on w / β: ``l2``, or 1 / Σ_i s_i for ``"auto"`` (1 / m
        without sample weights: a logistic regression's C = 1, as a mean over the
        examples, so that a weight of 2 trains as a repeated example)."""
        if self.l2 != "auto":
            return float(self.l2)
        total = float(np.sum(run.sample_weight))
        kept = getattr(self, "_partial_state", None)
        if run.partial_fit and not run.first and kept is not None:
            total += kept["seen_weight"]
        return 1.0 / total if total > 0 else 1.0

    def _penalty(self, kind, features, batch, y_encoded, classes):
        """None here: the L2 term (l2 / 2) ‖w / β‖² needs β, drawn with the training
        state; :meth:`_run_solver` sets it (the risk's α = l2 / β²)."""
        return 0.0, {}

    def _training_loss(self, run):
        state = run.candidate_state
        if self.candidates == "neighbourhood":
            return NeighbourhoodLikelihoodLoss(
                run.differences, state["beta"],
                grouped=self._objective() == "pseudo_likelihood")
        return RandomizedLikelihoodLoss(_CandidateSampler(self, state), state["beta"],
                                        pooled=self._objective() == "pooled")

    def _training_options(self, run):
        beta = run.candidate_state["beta"]
        stream = {"state": run.state} if run.partial_fit else {}
        if run.solver == "lbfgs":
            return dict(max_iter=300 if self.max_iter is None else self.max_iter,
                        tol=self.tol, verbose=self.verbose, callback=self.callback,
                        l1=self.l1 / beta)
        steps = PARTIAL_FIT_STEPS if run.partial_fit else 20
        return dict(max_iter=steps if self.max_iter is None else self.max_iter,
                    learning_rate=self.learning_rate,
                    step_scale=self._step_scale(run.batch) / beta ** 2, l1=self.l1,
                    random_state=run.rng, verbose=self.verbose, callback=self.callback,
                    **stream)

    def _run_solver(self, run, risk, options):
        """The solver's result, with the risk's L2 strength α = l2 / β² (the penalty
        (l2 / 2) ‖w / β‖² on the natural parameters w / β of P(y | x) ∝ exp(θ_y / β))."""
        beta = run.candidate_state["beta"]
        risk.alpha = self._l2(run) / beta ** 2
        streamed = run.solver == "lbfgs" and run.partial_fit and run.state.get("w") is not None
        if streamed:
            # F on the batch with λ N / n, so that (n / N) F carries the L2 term λ
            seen, batch_weight = run.state["seen_weight"], float(np.sum(run.sample_weight))
            risk.alpha *= (seen + batch_weight) / batch_weight
        free = None
        if run.solver == "lbfgs":
            positions = feature_map_hook(run.features, "intercept_positions")
            free = None if positions is None else np.asarray(positions(), dtype=np.int64)
        alpha = risk.alpha
        centring = None
        if free is not None and free.size:
            risk = _InterceptFreeRisk(risk, free)
            make = feature_map_hook(run.features, "intercept_centring")
            # not for a call that continues a stream: its summary is diagonal in w (a
            # diagonal summary in the centred coordinates measured worse: scene in
            # batches of 100, 0.46 of fit's example-F1 against 0.69)
            if make is not None and not streamed:
                centring = make(_feature_mean(run.batch.X, run.sample_weight))
                risk = _CentredRisk(risk, centring)
        if streamed:
            risk = StreamedRisk(risk, batch_weight, run.state["w"], run.state["curvature"],
                                seen)
        if run.solver == "lbfgs" and options.get("l1", 0.0) == 0:
            l2 = _l2_diagonal(alpha, free, risk.n_params)
            if streamed:
                share, total = risk.batch_share, risk.total_weight
                curvature = (share * (self._curvature_bound(run, centring=centring) + l2)
                             + risk.curvature / total)
                scale = 1.0 / np.sqrt(np.maximum(curvature, np.finfo(np.float64).tiny))
            else:
                scale = self._preconditioner(run, l2, centring)
            options = {**options, "preconditioner": scale}
        if centring is not None:
            return self._run_centred(run, risk, options, centring)
        try:
            return super()._run_solver(run, risk, options)
        except TrainingDivergedError as error:
            raise ValueError(f"{type(self).__name__}: {error}") from error

    def _run_centred(self, run, risk, options, centring):
        """The solver on ``risk``, a function of v, w = T v with the features centred at
        ``centring.mean`` (the intercept unpenalized: same minimizer); the start, the
        callback and the result in w."""
        callback = options.get("callback")
        if callback is not None:
            options = {**options, "callback": lambda n_iter, v, *args: callback(
                n_iter, centring.forward(v), *args)}
        w0 = run.w0
        run.w0 = centring.inverse(w0)
        try:
            result = super()._run_solver(run, risk, options)
        except TrainingDivergedError as error:
            raise ValueError(f"{type(self).__name__}: {error}") from error
        finally:
            run.w0 = w0
        result.w = centring.forward(result.w)
        return result

    def _preconditioner(self, run, alpha, centring=None):
        """D_p = 1 / sqrt(h_p + α), h the :meth:`_curvature_bound` of the batch (in the
        centred coordinates of ``centring`` when given): the diagonal preconditioner of
        L-BFGS."""
        curvature = self._curvature_bound(run, centring=centring) + alpha
        return 1.0 / np.sqrt(np.maximum(curvature, np.finfo(np.float64).tiny))

    def _curvature_bound(self, run, probabilities=None, centring=None):
        """h_p = (1 / (m β²)) Σ_r π_r Σ_{parts a changed by candidate r} abs(d_ra) x_{a,p}²,
        a bound on the curvature of parameter p in the batch's mean loss (through the
        feature map's transpose at the squared features): with π_r = 1 the curvature if
        every candidate had probability one, which makes the diagonal preconditioner D_p =
        1 / sqrt(h_p + α) of L-BFGS (:class:`~skstruct.optim._preconditioning.
        DiagonallyPreconditionedRisk`: progress independent of each feature's scale, the
        minimizer unchanged); with π the candidates' probabilities (times the examples'
        weights s_i, and m → 1) the diagonal curvature that ``partial_fit`` keeps of a
        batch."""
        self._step_scale(run.batch)  # raises for features whose squares overflow
        if probabilities is None:
            parts, m = run.differences.changed_parts(), max(1, run.batch.n_sequences)
        else:
            parts, m = run.differences.changed_parts(probabilities), 1
        squared = getattr(run, "squared_batch", None)
        if squared is None:  # once per fit: the preconditioner and partial_fit's summary
            squared = copy.copy(run.batch)
            squared.X = _squared_features(run.batch.X)
            run.squared_batch = squared
        beta = run.candidate_state["beta"]
        curvature = np.asarray(run.features.transpose(squared, parts), dtype=np.float64)
        if centring is not None:  # Σ c (x − mean)² = Σ c x² − 2 mean Σ c x + mean² Σ c
            curvature = centring.curvature(
                curvature, np.asarray(run.features.transpose(run.batch, parts)))
        curvature = np.abs(curvature) / (m * beta ** 2)
        if not np.all(np.isfinite(curvature)):
            raise ValueError(
                f"{type(self).__name__}: the squared features overflow (features of "
                "about 1e154 or more); scale the features.")
        return curvature

    def _solver_state(self, solver, features, part):
        """``"lbfgs"``: the summary of the earlier batches (weights w̄, summed diagonal
        curvature, their total weight), or none on a first call; the stochastic ascent:
        the registry's state (weights and step counter)."""
        if solver != "lbfgs":
            return super()._solver_state(solver, features, part)
        kept = getattr(self, "_partial_state", None)
        if part.first or kept is None or kept["solver"] != "lbfgs":
            if part.first:
                return {"w": None}
            # after the ascent: its weights, with only the L2 term's curvature
            w = self._read_coefficients(self, part.kind, features)
            return {"w": w, "curvature": np.zeros_like(w),
                    "seen_weight": kept["seen_weight"] if kept else 0.0}
        return kept["state"]

    def _keep_training_state(self, run, result):
        """L-BFGS (``fit`` or ``partial_fit``): the weights it ended on and the curvature
        of every batch so far, for the next ``partial_fit``; else the mixin's."""
        if run.solver != "lbfgs":
            return super()._keep_training_state(run, result)
        beta = run.candidate_state["beta"]
        # partial_fit: the batch's curvature at the weights the call started from, before
        # the batch was fitted; at its own minimizer a small batch is fitted (nearly
        # separated), p (1 - p) vanishes and the summary would forget it (bibtex in
        # batches of 100 / 1,000: 0.30 / 0.67 of fit's example-F1 at the end point, 0.36 /
        # 0.81 at the start). fit: at the weights it ended on.
        at = np.asarray(run.w0 if run.partial_fit else result.w, dtype=np.float64)
        scores = run.features.scores(run.batch, at)
        p = run.differences.softmax(scores, beta, self._objective() == "pseudo_likelihood")[1]
        rows = np.repeat(np.asarray(run.sample_weight, dtype=np.float64),
                         np.diff(run.differences.row_offsets))
        curvature = self._curvature_bound(run, p * (1.0 - p) * rows)
        batch_weight = float(np.sum(run.sample_weight))
        state = run.state if run.partial_fit else {"w": None}
        if state.get("w") is not None:
            curvature = curvature + state["curvature"]
            seen = state["seen_weight"] + batch_weight
        else:
            seen = batch_weight
        self._partial_state = {
            "solver": "lbfgs", "seen_weight": seen,
            "state": {"w": np.array(result.w), "curvature": curvature, "seen_weight": seen}}

    def _warn_after_training(self, run, result):
        if self.candidates == "neighbourhood" and run.differences.n_candidates == 0:
            warnings.warn(
                f"No output lies within Hamming distance k={self.k} of the gold ones (a "
                "k-subset changes in two positions per swap: use k >= 2), so every "
                "candidate set held the gold output alone, the gradient was zero and the "
                "model did not learn.", UserWarning)
            return
        if run.solver == "lbfgs":
            if not result.converged:
                warnings.warn(
                    f"{type(self).__name__} did not converge in {result.n_iter} L-BFGS "
                    f"iterations ({result.message}); {result.advice()}.",
                    ConvergenceWarning)
            return
        if self.candidates == "proposal" and result.extra["largest_candidate_set"] == 1:
            warnings.warn(
                f"Every candidate set held the gold output alone: no output lies within "
                f"Hamming distance k={self.k} of the gold ones (a k-subset changes in two "
                "positions per swap: use k >= 2), so the gradient was zero and the model "
                "did not learn.", UserWarning)
            return
        self._warn_on_curve(np.asarray(result.objective_curve))

    def _warn_on_curve(self, curve):
        """A ConvergenceWarning when the stochastic ascent's objective rose (the mean
        of its last ``RISING_WINDOW`` values above that of its first) or collapsed to 0
        for ``RISING_WINDOW`` iterations in a row after the first."""
        rose, collapsed = objective_trouble(curve, RISING_WINDOW)
        if rose:
            warnings.warn(
                f"{type(self).__name__}: the training objective rose over the iterations "
                f"(mean of the first {RISING_WINDOW}: {np.mean(curve[:RISING_WINDOW]):.4g}, "
                f"of the last {RISING_WINDOW}: {np.mean(curve[-RISING_WINDOW:]):.4g}): the "
                f"steps overshoot; lower learning_rate (now {self.learning_rate:g}) or use "
                "the default candidates='neighbourhood'.", ConvergenceWarning)
        if collapsed:
            warnings.warn(
                f"{type(self).__name__}: the training objective collapsed to 0 for "
                f"{RISING_WINDOW} iterations or more: the candidate sets held no output that "
                "competes with the gold ones (proposals that start from uniform samples of "
                "a large output space end far from them), so the gradient vanished; use "
                "candidates='neighbourhood' (the default), lower uniform_start or lower "
                "learning_rate.", ConvergenceWarning)

    def _store_results(self, run, result):
        self.beta_ = run.candidate_state["beta"]
        self.decoder_calls_ = dict(run.training_decoder.calls)

    def _uniform_start(self):
        """``uniform_start``, or the deprecated ``alpha`` when it is given."""
        return self.uniform_start if self.alpha == "deprecated" else self.alpha

    def _step_scale(self, batch):
        """R² = 1 + max_r ‖x_r‖², the step's divisor: a change of one part of an output
        changes its score by at most R² times the step per unit of gradient (the feature
        row and the intercept's constant 1), so the score changes of a step do not grow
        with the scale of the features."""
        squared_norm = 1.0 + _largest_squared_row_norm(batch.X)
        if not np.isfinite(squared_norm):
            raise ValueError(
                f"{type(self).__name__}: the squared norms of the feature rows overflow "
                "(features of about 1e154 or more); scale the features."
            )
        return squared_norm

    def _enumerate(self, decoder, scores, y_encoded, state):
        """``candidates="all"``: every output's parts, once per fit (:class:`_EnumeratedParts`),
        or None for part containers with more than one array (chains, factor graphs),
        which take the per-iteration path of :meth:`_candidate_sets`.

        The outputs are enumerated by ``top_k`` at the initial scores; the set of outputs of
        finite score, hence T_i, is the same at every w as long as the -inf scores (the
        forbidden parts) do not depend on w, which holds for the linear models: their
        scores are finite.
        """
        template = decoder.parts(scores, y_encoded)
        if not isinstance(template, PartsArithmetic):
            return None
        offsets = state["offsets"]
        paths, top = self._enumerate_all(decoder, scores, state["n_all"])
        valid = top > -np.inf                                           # (m, L)
        keep = np.concatenate([np.ones((1, valid.shape[0]), bool),
                               valid.T & _differs_from_gold(paths, y_encoded, offsets)])
        layers = [(paths[..., j], valid[:, j]) for j in range(paths.shape[-1])]
        return _EnumeratedParts(decoder, scores, y_encoded, layers, offsets, keep, template)

    def _training_state(self, decoder, features, batch, y_encoded, w, rng):
        """β, the draw count, the enumeration size and the output fingerprint salt."""
        m = batch.n_sequences
        log_r = self._log_largest_output_count(decoder, features, batch, w)
        return {
            "offsets": np.asarray(batch.output_offsets),
            "n_draws": (int(np.ceil(np.sqrt(m))) if self.n_candidates == "sqrt"
                        else self.n_candidates),
            "beta": self._beta(log_r, m),
            "n_all": int(min(self.max_outputs, np.ceil(np.exp(min(log_r, 50.0)) - 1e-9))),
            "salt": rng.randint(1, 2 ** 62, size=max(1, y_encoded[:1].size)).astype(
                np.uint64) | np.uint64(1),
        }

    def _candidate_sets(self, decoder, scores, y_encoded, state, w, rng, candidates):
        """The candidate layers of every example, their scores and which to keep.

        Layer 0 is the gold output; ``keep[l][i]`` is False where layer ``l`` repeats
        an earlier candidate of example ``i`` or holds none.
        """
        offsets = state["offsets"]
        m = offsets.shape[0] - 1
        if candidates == "all":
            layers = self._all_outputs(decoder, scores, state["n_all"])
            filled = [self._fill(out, y_encoded, offsets, valid) for out, valid in layers]
            theta = list(_score_layers(decoder, scores, [y_encoded] + filled))
            layers = [(y_encoded, np.ones(m, bool))] + layers
            theta = theta[:1] + [np.where(valid, th, -np.inf)
                                 for th, (_, valid) in zip(theta[1:], layers[1:])]
            gold = _hashes(y_encoded, offsets, state["salt"])
            keep = [np.ones(m, bool)] + [
                valid & (_hashes(out, offsets, state["salt"]) != gold)
                for out, valid in layers[1:]]
            return layers, theta, keep
        uniform_start = self._uniform_start()
        uniform_start = (min(1.0, np.abs(w).sum() / np.sqrt(m)) if uniform_start == "auto"
                         else float(uniform_start))
        layers, theta = self._proposals(decoder, scores, y_encoded, offsets,
                                        state["n_draws"], uniform_start, rng)
        return layers, theta, self._first_occurrences(layers, offsets, state["salt"])

    def randomized_loss(self, X, y, candidates="proposal", random_state=None):
        """The randomized loss L(w, S, T̄) = 1 − (1/m) Σ_i q_i at the fitted weights.

        q_i = p_i(y_i), with p_i the softmax of the scores / β over the candidate set
        T_i: ``"proposal"`` draws them as training does (Lemma 1 of the paper: this never
        exceeds the full loss), ``"all"`` takes every output, which gives the CRF loss
        1 − (1/m) Σ_i P(y_i | x_i) at temperature β.

        Parameters
        ----------
        X, y : as for :meth:`fit`
        candidates : {"proposal", "all"}, default="proposal"
        random_state : int, RandomState or None, default=None

        Returns
        -------
        float
        """
        if candidates not in ("proposal", "all"):
            raise ValueError(f"candidates must be 'proposal' or 'all'; got {candidates!r}.")
        batch = self._validate_prediction_data(X)
        features = self._features()
        w = self._params()
        _, _, classes, y_encoded, _ = self._validate_training_data(X, y, None)
        if classes is not None and not np.array_equal(classes, self.classes_):
            unknown = np.setdiff1d(classes, self.classes_)
            if unknown.size:
                raise ValueError(f"y has labels not seen in fit: {unknown.tolist()[:5]}.")
            y_encoded = np.searchsorted(self.classes_, classes[y_encoded])
        rng = check_random_state(random_state)
        state = self._training_state(self.decoder_, features, batch, y_encoded, w, rng)
        state["beta"] = self.beta_
        scores = features.scores(batch, w)
        _, theta, keep = self._candidate_sets(self.decoder_, scores, y_encoded, state, w,
                                              rng, candidates)
        return 1.0 - float(softmax_over_candidates(theta, keep, self.beta_)[0].mean())

    def _beta(self, log_r, m):
        """β = 1 / log((r − 1)(√m − 1)), from log r = max_i log |Y(x_i)|."""
        if self.beta != "auto":
            return float(self.beta)
        log_r_minus_1 = log_r + np.log1p(-np.exp(-log_r)) if log_r > 0 else -np.inf
        value = log_r_minus_1 + (np.log(np.sqrt(m) - 1.0) if m > 1 else 0.0)
        return 1.0 / value if np.isfinite(value) and value > 0 else 1.0

    def _log_largest_output_count(self, decoder, features, batch, w):
        """log max_i |Y(x_i)|: the log-partition at zero scores when the decoder has one
        (log Σ_y e⁰), else by enumeration up to ``max_outputs`` (then the cap); a
        decoder's ``log_count`` first when it has one (a count that does not enumerate,
        as :meth:`DAGDecoder.log_count`)."""
        scores = feature_map_hook(features, "zero_scores")(batch)
        if callable(getattr(decoder, "log_count", None)):
            return float(np.max(decoder.log_count(scores)))
        if "marginals" in decoder.capabilities:
            return float(np.max(decoder.log_partition(scores)))
        if "top_k" in decoder.capabilities:
            _, top = decoder.top_k(scores, self.max_outputs)
            return float(np.log(np.max(np.sum(top > -np.inf, axis=1))))
        return float(np.log(self.max_outputs))

    @staticmethod
    def _fill(outputs, y_encoded, offsets, valid):
        """Outputs with the invalid examples' entries replaced by the gold ones."""
        return _select(valid, outputs, y_encoded, offsets)

    def _all_outputs(self, decoder, scores, n_all):
        paths, top = self._enumerate_all(decoder, scores, n_all)
        return [(paths[..., j], top[:, j] > -np.inf) for j in range(paths.shape[-1])
                if np.any(top[:, j] > -np.inf)]

    def _enumerate_all(self, decoder, scores, n_all):
        """``top_k`` of every output: paths (..., n_all + 1) and their scores (m, n_all + 1)
        with the last column empty; raises when an example has more outputs."""
        paths, top = decoder.top_k(scores, n_all + 1)
        if np.any(top[:, -1] > -np.inf):
            raise ValueError(
                f"candidates='all' enumerates every output with top_k, but some example has "
                f"more than max_outputs={self.max_outputs}; raise max_outputs or use "
                "candidates='proposal'."
            )
        return paths, top

    def _proposals(self, decoder, scores, y_encoded, offsets, n_draws, uniform_start,
                   rng):
        """Algorithm 1, ``n_draws`` times for every example; the gold output first.

        The scan keeps y ← y' whenever θ(y') ≥ θ(y) over the neighbours of the start,
        in the decoder's order: it ends at the last neighbour of largest score when that
        score is at least the start's, else at the start. A decoder with a
        ``best_neighbour(scores, start, k, start_scores=None)`` method answers the scan
        directly (chains: a compiled O(L S) kernel for k = 1); otherwise the neighbours
        are listed and scored (:func:`~skstruct.decoders._core.best_neighbour.
        best_neighbour_by_scan`).
        """
        m = offsets.shape[0] - 1
        gold_scores = decoder.score_outputs(scores, y_encoded)
        layers = [(y_encoded, np.ones(m, bool))]
        theta = [gold_scores]
        uniform = None
        if uniform_start > 0:
            uniform = decoder.sample_uniform(scores, n_draws,
                                             random_state=rng.randint(2 ** 31 - 1))
        direct = getattr(decoder, "best_neighbour", None)
        for d in range(n_draws):
            start, start_scores = y_encoded, gold_scores
            if uniform is not None:
                explore = rng.random_sample(m) < uniform_start
                if explore.any():
                    start = _select(explore, uniform[..., d], y_encoded, offsets)
                    start_scores = decoder.score_outputs(scores, start)
            if direct is not None:
                best, best_scores = direct(scores, start, self.k, start_scores=start_scores)
            else:
                best, best_scores = best_neighbour_by_scan(decoder, scores, start, self.k,
                                                           offsets, start_scores)
            layers.append((best, np.ones(m, bool)))
            theta.append(best_scores)
        return layers, theta

    @staticmethod
    def _first_occurrences(layers, offsets, salt):
        """keep[l][i]: layer l holds the first copy of its output for example i."""
        prints = np.stack([_hashes(outputs, offsets, salt) for outputs, _ in layers])
        keep = np.ones(prints.shape, dtype=bool)
        for index in range(1, prints.shape[0]):
            keep[index] = np.all(prints[:index] != prints[index], axis=0)
        return list(keep)

    # -- sampling ------------------------------------------------------------------

    def sample(self, X, n_samples=1, random_state=None):
        """Draws of the perturbed-MAP predictor: argmax_y θ_y + γ_y, γ_y ~ Gumbel(0, β).

        By the Gumbel-max identity every draw is y with probability
        softmax(θ / β)_y. The outputs are enumerated by the decoder's ``top_k`` (at most
        ``max_outputs`` per example; a larger output space raises).

        Parameters
        ----------
        X : as in :meth:`predict`
        n_samples : int, default=1
        random_state : int, RandomState or None, default=None

        Returns
        -------
        list of length n_samples
            Each element is what :meth:`predict` returns for ``X``: one draw per input.
        """
        if not isinstance(n_samples, Integral) or n_samples < 1:
            raise ValueError(f"n_samples must be an integer >= 1; got {n_samples!r}.")
        batch = self._validate_prediction_data(X)
        decoder = self.decoder_
        if "top_k" not in decoder.capabilities:
            raise ValueError(
                f"sample enumerates the outputs with top_k, which {type(decoder).__name__} "
                "does not provide."
            )
        scores = self._scores(batch)
        log_r = self._log_largest_output_count(decoder, self._features(), batch,
                                               self._params())
        n_all = int(min(self.max_outputs, np.ceil(np.exp(min(log_r, 50.0)) - 1e-9)))
        paths, top = decoder.top_k(scores, n_all + 1)
        if np.any(top[:, -1] > -np.inf):
            raise ValueError(
                f"sample enumerates every output, but some example has more than "
                f"max_outputs={self.max_outputs}."
            )
        rng = check_random_state(random_state)
        offsets = np.asarray(batch.output_offsets)
        kind = self._fitted_kind()
        draws = []
        for _ in range(n_samples):
            gumbel = rng.gumbel(0.0, self.beta_, size=top.shape)
            pick = np.argmax(np.where(top > -np.inf, top + gumbel, -np.inf), axis=1)
            rows = np.repeat(pick, np.diff(offsets))
            chosen = np.take_along_axis(
                paths, rows.reshape((-1,) + (1,) * (paths.ndim - 1)), axis=-1)[..., 0]
            draws.append(kind.decode(chosen, batch, self.classes_))
        return draws
