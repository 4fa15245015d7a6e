"""
Learned label couplings of a pairwise multilabel model
======================================================

A multilabel model with independent labels scores every label on its own. A *pairwise*
model adds one score per pair of labels, paid when both are on: the labels of the
output interact, and prediction becomes inference in a factor graph (one binary
variable per label, one PAIR factor per pair of labels), which skstruct solves by LP-MAP
with its ADMM (:class:`~skstruct.decoders.FactorGraphDecoder`; see
:ref:`factor_graphs`). The estimators learn the per-label weights (``coef_``,
``intercept_``) and, in the fitted attribute ``coupling_``, one score per PAIR factor,
shared by all samples.

Here :class:`~skstruct.StructuredSVM` learns such a model on the yeast data (MULAN,
bundled with skstruct: genes described by 103 expression and phylogenetic features,
14 functional classes, 4.2 classes per gene on average) with the structured hinge
(Hamming loss, margin rescaling) and the one-slack cutting-plane solver, which calls the
decoder once per iteration on the whole training set. To keep the documentation build
short it trains on 500 of the 1,500 training genes for at most 40 iterations.

The couplings are drawn as a symmetric matrix beside the correlation of the labels in
the training data: a positive coupling makes the two labels likelier together than
their own scores say, a negative one apart.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

from skstruct import StructuredSVM
from skstruct.datasets import load_multilabel
from skstruct.decoders import FactorGraph, FactorGraphDecoder
from skstruct.metrics import example_f1_score

train, test = load_multilabel("yeast"), load_multilabel("yeast", "test")
scaler = StandardScaler().fit(train.data)
X_train, Y_train = scaler.transform(train.data)[:500], train.target[:500]
X_test, Y_test = scaler.transform(test.data), test.target
n_labels = Y_train.shape[1]

graph = FactorGraph.pairwise(n_labels)  # every pair i < j, in row-major order
decoder = FactorGraphDecoder(graph)
model = StructuredSVM(decoder, solver="cutting_plane", alpha=1e-2, max_iter=40)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)  # 40 iterations
    model.fit(X_train, Y_train)
print(f"{graph}: {model.coupling_.shape[0]} couplings learned in {model.n_iter_} "
      f"iterations")
print(f"test example F1: {example_f1_score(Y_test, model.predict(X_test)):.3f}")

# %%
# From one score per pair to a matrix
# ------------------------------------
#
# ``FactorGraph.pairwise`` creates the PAIR factors in the order of
# ``np.triu_indices(n_labels, 1)``, so the couplings fill the upper triangle of a
# matrix in that order; it is mirrored for the plot.

first, second = np.triu_indices(n_labels, 1)
coupling = np.zeros((n_labels, n_labels))
coupling[first, second] = coupling[second, first] = model.coupling_
correlation = np.corrcoef(Y_train.T)
np.fill_diagonal(correlation, 0.0)
names = [str(name) for name in train.target_names]

fig, axes = plt.subplots(1, 2, figsize=(11, 4.8))
for ax, matrix, title in [(axes[0], coupling, "learned coupling_ (PAIR scores)"),
                          (axes[1], correlation, "label correlation in the training data")]:
    bound = np.abs(matrix).max()
    image = ax.imshow(matrix, cmap="RdBu_r", vmin=-bound, vmax=bound)
    ax.set_xticks(range(n_labels), names, rotation=90, fontsize=8)
    ax.set_yticks(range(n_labels), names, fontsize=8)
    ax.set_title(title)
    fig.colorbar(image, ax=ax, fraction=0.046)
fig.tight_layout()
plt.show()

upper = np.triu_indices(n_labels, 1)
agree = np.corrcoef(coupling[upper], correlation[upper])[0, 1]
print(f"correlation between the couplings and the label correlations: {agree:.2f}")
order = np.argsort(model.coupling_)
for k in list(order[::-1][:3]) + list(order[:3]):
    print(f"  {names[first[k]]:8s} & {names[second[k]]:8s} coupling {model.coupling_[k]:+.3f}"
          f"  correlation {correlation[first[k], second[k]]:+.2f}")

# %%
# The couplings follow the co-occurrences of the data: the largest are between classes
# that are mostly on together, the most negative between classes that rarely are. They
# are not the correlations, though: a coupling is what the two labels' own scores leave
# unexplained, so two correlated labels whose features already predict both need only a
# small one.
