"""What every structured estimator shares: input checks and the output-kind lookup.

The kind of output (sequences, multiclass, multilabel, trees, matchings, or one a user
registers) is an :class:`~skstruct.outputs.OutputKind` object; this module picks it from
the decoder or the data (:meth:`StructuredEstimator._output_kind`) and delegates to it
everything that differs between kinds. See :mod:`skstruct.outputs`.
"""

import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.utils import ClassifierTags
from sklearn.utils.validation import check_is_fitted

from .outputs import get_output_kind, infer_output_kind, registered_output_kinds
from .outputs._sequence import is_sequence_input
from .utils._available import available_if_with_reason
from .utils._sequences import check_sample_weight_sequences

__all__ = ["StructuredEstimator", "output_kind", "is_sequence_input"]


def available_if_fitted_kind(attribute, reason):
    """Decorator: the method exists unless the estimator was fitted on a kind whose
    ``attribute`` is False.

    ``hasattr(estimator, name)`` is True before ``fit`` (calling the method then raises
    NotFittedError, as for every fitted method) and after a fit on a kind whose boolean
    ``attribute`` (e.g. :attr:`~skstruct.outputs.OutputKind.tabular_probabilities`) is
    True; after a fit on another kind it is False, and the AttributeError says
    ``reason`` (formatted with ``{kind}``, the fitted kind's name, and ``{name}``, the
    estimator's class name). scikit-learn's duck typing (scorers such as
    ``"neg_log_loss"``, ``CalibratedClassifierCV``) then sees the method only where its
    result has the form it expects.
    """

    def check(estimator):
        kind = getattr(estimator, "output_kind_", None)
        if kind is None or getattr(get_output_kind(kind), attribute):
            return True
        raise AttributeError(reason.format(kind=kind, name=type(estimator).__name__))

    return available_if_with_reason(check)


def _reject_token_dicts(X, name):
    """X given as sequences of token feature dicts or strings: say which transformer to use."""
    if not isinstance(X, (list, tuple)) or not X or not isinstance(X[0], (list, tuple)):
        return
    token = X[0][0] if X[0] else None
    if isinstance(token, dict):
        raise TypeError(
            f"X holds sequences of token {type(token).__name__}s; {name} takes numeric "
            "feature matrices. Turn token feature dicts into matrices with "
            "skstruct.preprocessing.SequenceVectorizer, e.g. "
            f"make_pipeline(SequenceVectorizer(), {name}())."
        )


def _check_container(data, what, name):
    """``X`` or ``y`` must be an array-like or a list; say what was given otherwise."""
    if sp.issparse(data):
        return
    if isinstance(data, (str, bytes, dict)) or not (
        hasattr(data, "__len__") or hasattr(data, "shape") or hasattr(data, "__array__")
    ):
        forms = ("a 2-D (n_samples, n_features) array or a list of 2-D (n_tokens, "
                 "n_features) arrays, one per sequence") if what == "X" else (
                 "an array of labels, a 0/1 indicator matrix or a list of label arrays, one "
                 "per sequence")
        raise TypeError(f"{what} must be {forms} in {name}; got {type(data).__name__}.")


def _n_examples(X):
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) >= 1:
        return shape[0]
    try:
        return len(X)
    except TypeError:
        return None


def _kind_of(X, y, decoder, name):
    """The kind a decoder chooses (trees, matchings), else the kind of the data."""
    declared = getattr(decoder, "output_kind", None)
    if declared is not None:
        if declared not in registered_output_kinds():
            raise ValueError(
                f"{name} was given a {type(decoder).__name__}, which decodes {declared!r} "
                "outputs, but no output kind of that name is registered; register one "
                "with skstruct.outputs.register_output_kind."
            )
        if get_output_kind(declared).chosen_by_decoder:
            return get_output_kind(declared)
    kind = infer_output_kind(X, y)
    if kind is None:
        raise ValueError(
            f"X and y have the form of no registered output kind in {name} "
            f"(registered: {', '.join(registered_output_kinds())})."
        )
    return kind


def output_kind(X, y):
    """The name of the output kind that ``X`` and ``y`` look like, without a decoder.

    A list of per-sequence matrices ``X`` means sequences (``y`` a list of label arrays,
    or a 2-D array with one row of labels per equal-length sequence). Tabular ``X`` means
    multiclass for 1-D ``y`` (or a column vector) and multilabel for a 2-D ``y``. See
    :func:`skstruct.outputs.infer_output_kind`.
    """
    return infer_output_kind(X, y).name


class StructuredEstimator(BaseEstimator):
    """Base class of structured estimators over every registered output kind.

    Every registered output kind is accepted whose ``intractable_operations`` name none
    of the subclass's ``_decoder_operations`` (the decoder operations its training
    needs); the decoder itself is then checked for them. Subclasses implement ``fit``
    and use the helpers below; ``predict`` and ``score`` are shared.
    """

    _decoder_operations = ()

    def set_params(self, **params):
        """Set parameters; ``decoder__<name>`` needs an explicit decoder.

        Parameters
        ----------
        **params : dict
            Estimator parameters, and ``decoder__<name>`` for the decoder's own.

        Returns
        -------
        self
        """
        nested = sorted(k for k in params if k.startswith("decoder__"))
        decoder = params.get("decoder", getattr(self, "decoder", None))
        if nested and decoder is None:
            name = type(self).__name__
            key = nested[0]
            raise ValueError(
                f"Cannot set {key}: {name}(decoder=None) chooses its decoder from y at fit "
                f"time. Pass the decoder itself, e.g. {name}(decoder=ChainDecoder("
                f"{key[len('decoder__'):]}=...)) or set_params(decoder=ChainDecoder(...)); "
                "then decoder__<name> works, also in a grid search."
            )
        return super().set_params(**params)

    def _output_kind(self, X, y):
        """The output kind of the training data, checked against the estimator and decoder.

        A decoder whose ``output_kind`` names a kind chosen by decoders (trees,
        matchings) chooses it; otherwise the kind is read from ``X`` and ``y``.

        Returns
        -------
        OutputKind
        """
        name = type(self).__name__
        decoder = getattr(self, "decoder", None)
        declared = getattr(decoder, "output_kind", None)
        kind = _kind_of(X, y, decoder, name)
        kind.check_data_form(X, y, name)
        if declared is not None and declared != kind.decoder_kind:
            raise ValueError(
                f"{name} was given a {type(decoder).__name__}, which decodes {declared} "
                f"outputs, but X and y look like {kind.name} data ({kind.form})."
            )
        for operation in self._decoder_operations:
            reason = kind.intractable_operations.get(operation)
            if reason is not None:
                raise ValueError(
                    f"{name} cannot learn {kind.name} outputs: its training needs the "
                    f"decoder operation {operation!r}, and {reason}."
                )
        if declared is None and kind.chosen_by_decoder:
            decoder_name = type(kind.default_decoder()).__name__
            raise ValueError(
                f"X and y look like {kind.name} data ({kind.form}), which {name} learns "
                f"with a decoder of {kind.name} outputs: pass "
                f"{name}(decoder={decoder_name}())."
            )
        return kind

    def _fitted_kind(self):
        """The output kind of the fitted model (looked up by ``output_kind_``)."""
        return get_output_kind(self.output_kind_)

    def _validate_training_data(self, X, y, sample_weight):
        """Check and encode training data.

        Returns
        -------
        kind : OutputKind
        batch : SequenceBatch
            Features; one row per example for tabular data (offsets 0, 1, ..., n). Its
            ``feature_names`` are the column names of a DataFrame ``X``, else None.
        classes : ndarray of shape (n_classes,) or None
            Sorted labels (sequences, multiclass) or label indices (multilabel); None
            for kinds without classes (trees, matchings).
        y_encoded : ndarray
            The outputs encoded as the decoder reads them (e.g. (n_tokens,) class
            indices, or the (n_samples, n_labels) 0/1 matrix).
        weights : ndarray of shape (n_examples,)
        """
        name = type(self).__name__
        if y is None:
            raise ValueError(f"{name} requires y to be passed, but the target y is None.")
        if _n_examples(X) == 0:
            declared = getattr(getattr(self, "decoder", None), "output_kind", None)
            noun = "sequences"
            if getattr(X, "ndim", 1) == 2:
                noun = "samples"
            elif declared in registered_output_kinds():
                noun = get_output_kind(declared).example_noun
            raise ValueError(f"X contains no {noun} in {name}; at least one is required.")
        _check_container(X, "X", name)
        _check_container(y, "y", name)
        _reject_token_dicts(X, name)
        kind = self._output_kind(X, y)
        batch, classes, y_encoded = kind.check_training_data(X, y, name)
        weights = check_sample_weight_sequences(sample_weight, batch.n_sequences)
        return kind, batch, classes, y_encoded, weights

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        # on tabular data every estimator learns any number of classes and multilabel Y.
        # The estimator type stays unset: they also learn sequences, trees and
        # matchings, which scikit-learn's classifier machinery (stratified splits of y)
        # cannot take.
        tags.classifier_tags = ClassifierTags(multi_class=True, multi_label=True)
        return tags

    def _validate_prediction_data(self, X):
        check_is_fitted(self)
        return self._fitted_kind().check_prediction_data(X, self)

    def predict(self, X):
        """Predict the output of every input.

        Parameters
        ----------
        X : list of (n_tokens_i, n_features) matrices (sequences), a (n_samples,
            n_features) matrix (multiclass, multilabel), a list of (n_i * n_i,
            n_features) arc feature matrices (trees), or a list of (n_rows_i, n_cols_i,
            n_features) pair feature arrays (matchings)

        Returns
        -------
        list of ndarray of shape (n_tokens_i,), ndarray of shape (n_samples,), 0/1
        ndarray of shape (n_samples, n_labels), list of CoNLL head arrays (n_i,), or list
        of matched-column arrays (n_rows_i,)
        """
        batch = self._validate_prediction_data(X)
        return self._fitted_kind().decode(self._decode(batch), batch, self.classes_)

    def score(self, X, y, sample_weight=None):
        """The output kind's score: token accuracy (sequences), attachment score (trees:
        the fraction of tokens with the right head), accuracy (multiclass), subset
        accuracy (multilabel), or the fraction of rows matched to their right column
        (matchings).

        Parameters
        ----------
        X : as in :meth:`predict`
        y : as in ``fit``
        sample_weight : array-like of shape (n_examples,), default=None

        Returns
        -------
        float
        """
        y_pred = self.predict(X)
        return self._fitted_kind().score(y, y_pred, sample_weight=sample_weight)
