"""The randomized likelihood of MAP-perturbation training: the likelihood of every gold
output within a random candidate set, and the ascent direction of its logarithm."""

import numpy as np

from ._training import TrainingLoss

__all__ = ["RandomizedLikelihoodLoss", "likelihood_weights", "softmax_over_candidates"]


def softmax_over_candidates(theta, keep, beta, return_log_gold=False):
    """p[l, i]: softmax over the kept candidate layers of example i of θ / β.

    Parameters
    ----------
    theta : ndarray of shape (L + 1, m) or list of L + 1 ndarrays of shape (m,)
        Scores of the candidate layers (layer 0: the gold outputs).
    keep : ndarray of shape (L + 1, m), bool, or list of L + 1 such rows
        Which layers are candidates of each example.
    beta : float
        Temperature β > 0.
    return_log_gold : bool, default=False
        Also return log p[0, i], finite where p[0, i] underflows to 0.

    Returns
    -------
    p : ndarray of shape (L + 1, m)
    log_gold : ndarray of shape (m,)
        Only with ``return_log_gold``.
    """
    if isinstance(theta, np.ndarray) and isinstance(keep, np.ndarray):
        logits = np.where(keep, theta / beta, -np.inf)
    else:
        logits = np.stack([np.where(k, th / beta, -np.inf) for k, th in zip(keep, theta)])
    logits -= logits.max(axis=0)
    p = np.exp(logits)
    total = p.sum(axis=0)
    p /= total
    return (p, logits[0] - np.log(total)) if return_log_gold else p


def likelihood_weights(omega, log_q, beta):
    """ω_i q_i / (β Σ_j ω_j q_j), the weight of example i in ∇ log Σ_i ω_i q_i.

    Computed from log q, so that it is finite when every q_i underflows to 0 (the
    examples nearest to their gold output then carry the step).

    Parameters
    ----------
    omega : ndarray of shape (m,)
        Normalized example weights.
    log_q : ndarray of shape (m,)
        log q_i, the log-probabilities of the gold outputs.
    beta : float

    Returns
    -------
    ndarray of shape (m,)
    """
    log_weighted = np.full(log_q.shape, -np.inf)
    positive = omega > 0
    log_weighted[positive] = np.log(omega[positive]) + log_q[positive]
    weights = np.exp(log_weighted - log_weighted.max())
    return weights / (beta * weights.sum())


class RandomizedLikelihoodLoss(TrainingLoss):
    """L = 1 − Σ_i ω_i q_i, the randomized loss of MAP-perturbation models.

    q_i = p_i(y_i) is the probability of the gold output under p_i, the softmax of the
    scores θ / β over a candidate set T_i drawn for example i (the gold output and
    random proposals). Training ascends log Σ_i ω_i q_i, whose gradient with respect to
    the part scores is

        g = Σ_i c_i (a_{y_i} − E_{p_i}[a_y]),   c_i = ω_i q_i / (β Σ_j ω_j q_j),

    with a_y the indicator parts of y (:meth:`ascent`). The candidate sets are drawn
    anew at every step, so the loss has no per-example value and gradient at fixed
    scores: calling it as a :class:`TrainingLoss` raises ``NotImplementedError``, and
    the solvers of the ``"randomized_likelihood"`` family use :meth:`ascent`.

    Parameters
    ----------
    candidates : object
        Draws the candidate sets: ``candidates.draw(decoder, scores, y_true, w,
        random_state)`` returns an object with ``theta`` and ``keep`` (as for
        :func:`softmax_over_candidates`, layer 0 holding the gold outputs) and
        ``weighted_sum(weights)``, Σ_l weights[l, i] a_{l, i} for weights of shape
        (L + 1, m), a part container laid out like ``scores``.
    beta : float
        The temperature β > 0 (the Gumbel scale of the perturbation model).
    pooled : bool, default=True
        True: ascend log Σ_i ω_i q_i (the paper's objective; examples weighted by
        c_i = ω_i q_i / (β Σ_j ω_j q_j), so that an example whose gold output is
        improbable hardly moves the model); False: ascend Σ_i ω_i log q_i, the
        log-likelihood of every example (c_i = ω_i / β), reported as its negative.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.losses._randomized import softmax_over_candidates
    >>> theta = np.array([[0.0, 1.0], [0.0, 0.0]])  # gold, one proposal; 2 examples
    >>> keep = np.array([[True, True], [True, False]])
    >>> softmax_over_candidates(theta, keep, beta=1.0)[0]  # q: the second has no rival
    array([0.5, 1. ])
    """

    required_capability = "parts"

    solver_family = "randomized_likelihood"

    def __init__(self, candidates, beta, pooled=True):
        self.candidates = candidates
        self.beta = beta
        self.pooled = pooled

    def ascent(self, decoder, scores, y_true, weights, w, random_state):
        """The loss and the ascent direction of log Σ_i ω_i q_i on fresh candidate sets.

        Parameters
        ----------
        decoder : Decoder
        scores : part scores at ``w``
        y_true : ndarray
            Encoded gold outputs, stacked.
        weights : ndarray of shape (m,)
            Normalized example weights ω.
        w : ndarray of shape (n_params,)
            The weights the scores belong to (the proposal may depend on them).
        random_state : RandomState
            The candidate draws.

        Returns
        -------
        value : float
            1 − Σ_i ω_i q_i on the drawn sets (``pooled``), else −Σ_i ω_i log q_i.
        direction : part container laid out like ``scores``
            ∇ log Σ_i ω_i q_i with respect to the part scores.
        set_sizes : ndarray of shape (m,), int
            |T_i|, the number of distinct candidates of every example.

        Raises
        ------
        FloatingPointError
            When the weights c_i are not finite (the scores / β overflow).
        """
        sets = self.candidates.draw(decoder, scores, y_true, w, random_state)
        set_sizes = np.sum(sets.keep, axis=0)
        p, log_q = softmax_over_candidates(sets.theta, sets.keep, self.beta,
                                           return_log_gold=True)
        if self.pooled:
            value = 1.0 - float(weights @ p[0])
            scale = likelihood_weights(weights, log_q, self.beta)
        else:
            value = -float(weights @ log_q)
            scale = np.asarray(weights, dtype=np.float64) / self.beta
        if not np.all(np.isfinite(scale)):
            raise FloatingPointError("the scores / beta overflow")
        layer_weights = -scale * p
        layer_weights[0] = scale * (1.0 - p[0])
        return value, sets.weighted_sum(layer_weights), set_sizes
