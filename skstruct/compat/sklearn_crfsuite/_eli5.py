"""eli5's ``explain_weights`` for the facade CRF, when eli5 is installed.

eli5 recognises sklearn-crfsuite's ``CRF`` by its class. :func:`register` adds the
facade's class: eli5's own explainer when it imports (it reads only ``classes_``,
``attributes_``, ``state_features_`` and ``transition_features_``, which the facade has),
else the same explanation built from eli5's public classes (eli5 imports its explainer
only where sklearn-crfsuite is installed too).
"""

import importlib.util

import numpy as np


def _explain(crf, top=20, target_names=None, targets=None, feature_re=None,
             feature_filter=None):
    """eli5's explanation of a fitted facade CRF: the top state features of every label
    and the transition matrix."""
    from eli5._feature_names import FeatureNames
    from eli5._feature_weights import get_top_features
    from eli5.base import Explanation, TargetExplanation, TransitionFeatureWeights
    from eli5.utils import get_target_display_names

    classes = list(crf.classes_)
    names = np.array(crf.attributes_, dtype=object)
    column = {name: j for j, name in enumerate(names)}
    row = {label: k for k, label in enumerate(classes)}
    state = np.zeros((len(classes), len(names)))
    for (attribute, label), weight in crf.state_features_.items():
        state[row[label], column[attribute]] = weight
    transition = np.zeros((len(classes), len(classes)))
    for (source, target), weight in crf.transition_features_.items():
        transition[row[source], row[target]] = weight
    if feature_filter is not None or feature_re is not None:
        kept, indices = FeatureNames(list(names)).handle_filter(feature_filter, feature_re)
        names, state = np.array(kept.feature_names, dtype=object), state[:, indices]
    if targets is None:
        # labels of one chunk type together, "O" first (eli5's order for NER)
        targets = sorted(classes, key=lambda c: (c.split("-", 1)[1], c)
                         if isinstance(c, str) and len(c) > 2 and c[1] == "-" else ("", c))
    indices, display = zip(*get_target_display_names(classes, target_names, targets))
    indices = np.array(indices)
    return Explanation(
        targets=[TargetExplanation(target=label,
                                   feature_weights=get_top_features(names, state[k], top))
                 for k, label in zip(indices, display)],
        transition_features=TransitionFeatureWeights(
            class_names=list(display), coef=transition[indices][:, indices]),
        estimator=repr(crf), method="CRF")


def register(cls):
    """Make ``eli5.explain_weights`` explain instances of ``cls``; False without eli5."""
    if importlib.util.find_spec("eli5") is None:
        return False
    import eli5

    try:
        from eli5.sklearn_crfsuite.explain_weights import (
            explain_weights_sklearn_crfsuite as explain,
        )
    except ImportError:
        explain = _explain
    eli5.explain_weights.register(cls)(explain)
    return True
