"""The interface of feature maps, and the defaults of their optional hooks."""

import numpy as np

__all__ = ["FeatureMap", "feature_map_hook"]


class FeatureMap:
    """Base class of feature maps: the linear map from inputs and w to part scores.

    A feature map turns a batch of inputs and a parameter vector w into the score
    container of a decoder, and maps gradients with respect to the part scores back to
    w. Deriving from this class is optional: the learners call the optional hooks
    through :func:`feature_map_hook`, which applies the defaults below to a map that
    does not define them, so a user's map needs only the required members.

    Required members (no default):

    ``n_params`` : int
        Length of w.
    ``scores(batch, w)``
        The score container of every example of ``batch``.
    ``transpose(batch, grad)``
        ∇_w from per-example gradients ``grad`` with respect to the part scores (a
        part container laid out like the scores), shape (n_params,).
    ``example_transpose(batch, grad)``
        The same for a batch of one example, sparse: ``(indices, values)``, positions
        in w without repetition and their values (the per-example solvers).
    ``pack(*parts)``, ``unpack(w)``
        w from its blocks and the blocks (views) of w; the output kind stores the
        fitted attributes from them.

    Optional hooks, each defined here with the default a map without it gets:

    - :meth:`zero_scores`: the scores at w = 0;
    - :meth:`compiled_features`: the map for the compiled per-example engine;
    - :meth:`compiled_objective`: a fused evaluation of the regularized risk;
    - :meth:`scores_of_parts`: scores from a fitted model's parts, without w;
    - :attr:`pairs`: the (feature, label) pairs that have a weight;
    - :meth:`shared_pair_layout`: the shared-coupling layout of a pairwise factor graph.

    Hooks that a map offers by defining them (None on the base: not offered):

    ``restricted(pairs)``
        The map with weights for the (feature, label) pairs ``pairs`` only (the
        estimators' ``feature_label_pairs="seen"``); without it, unseen pairs are held
        at zero by the solver.
    ``store_coefficients(fitted, w)``, ``coefficients(fitted)``
        A map that stores and reads its own fitted attributes (a factor graph's
        ``coupling_``); without them the output kind does.
    ``intercept_positions()``, ``intercept_centring(mean)``
        The positions in w of the intercept (bias) parameters, for estimators that
        leave them out of the L2 term, and the change of coordinates that centres the
        features at ``mean`` (better conditioned with an unpenalized intercept); without
        them the map has no intercept.
    """

    #: The (feature, label) pairs that have a weight (bool, (n_features, n_states)), or
    #: None (the default) when every pair has one.
    pairs = None
    #: ``restricted(pairs)``, or None: the map cannot leave pairs out (class docstring).
    restricted = None
    #: ``store_coefficients(fitted, w)`` and ``coefficients(fitted)``, or None: the output
    #: kind stores and reads the fitted attributes (class docstring).
    store_coefficients = None
    coefficients = None
    #: ``intercept_positions()``, or None: the map has no intercept (class docstring).
    intercept_positions = None
    intercept_centring = None

    def zero_scores(self, batch):
        """The part scores at w = 0.

        The default computes ``scores(batch, zeros)``; maps override it to build zeros of
        the right shape without a product.

        Parameters
        ----------
        batch : batch of inputs

        Returns
        -------
        score container
        """
        return self.scores(batch, np.zeros(self.n_params))

    def compiled_features(self, batch):
        """The map as arrays for the compiled per-example engine, or None.

        Parameters
        ----------
        batch : batch of inputs

        Returns
        -------
        CompiledFeatures or None
            None (the default): the per-example solvers run their Python loop.
        """
        return None

    def compiled_objective(self, batch, y, decoder, loss, weights):
        """A fused evaluation of the data term of the regularized risk, or None.

        Parameters
        ----------
        batch : batch of inputs
        y : ndarray
            Encoded gold outputs, stacked.
        decoder : Decoder
        loss : TrainingLoss
        weights : ndarray of shape (n_examples,)
            Normalized example weights.

        Returns
        -------
        object or None
            An object whose ``value_and_gradient(w, alpha)`` returns (ℓ_i, F, ∇F) exactly
            as the generic composition of scores, loss and transpose would (or None at a
            ``w`` it cannot handle); None (the default) when it is not exactly what
            ``loss`` and ``decoder`` compute. The map reads what the loss and the decoder
            offer, never their types.
        """
        return None

    def scores_of_parts(self, batch, *parts):
        """:meth:`scores` from the parts :meth:`unpack` gives (a fitted model's
        attributes), without forming w, or None (the default): the scores are then
        computed from the packed w."""
        return None

    def kinked_parameters(self):
        """The parameters at which a loss may have a kink at zero that the map passes on
        exactly, or None (the default: none).

        A loss whose subdifferential with respect to some part scores is an interval
        (its ``values_gradients_and_spread``) can be minimized by an orthant-wise
        quasi-Newton method when each such part score is one parameter itself, shared
        by every example: the transposed interval is then that parameter's. A map
        returns the boolean mask of those parameters, shape (n_params,).
        """
        return None

    def shared_pair_layout(self):
        """Whether the scores are a factor graph's unary scores X W + b with PAIR scores
        shared by every example, laid out as
        :class:`~skstruct.features.FactorGraphFeatures` lays them out (``unpack``,
        ``coupling``, ``n_pairs``): the cutting plane then builds its constraints from
        whole-batch array operations. False by default."""
        return False


def feature_map_hook(features, name):
    """The optional hook ``name`` of ``features``, or the :class:`FeatureMap` default
    bound to it when the map does not define the hook (a map that does not derive from
    :class:`FeatureMap`).

    Parameters
    ----------
    features : feature map
    name : str
        One of the optional hooks of :class:`FeatureMap`.

    Returns
    -------
    callable or object
        The bound method, or the attribute's value for :attr:`FeatureMap.pairs`.
    """
    default = getattr(FeatureMap, name)
    own = getattr(features, name, None)
    if own is not None:
        return own
    if callable(default):
        return default.__get__(features, type(features))
    return default
