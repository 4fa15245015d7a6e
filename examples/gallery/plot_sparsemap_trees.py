"""
SparseMAP: a sparse distribution over dependency trees
======================================================

SparseMAP (Niculae et al., 2018) replaces the MAP structure by the solution of

    max over μ in the marginal polytope of  ηᵀμ − ½‖u‖²,

where η are the part scores (here, one score per arc "word h heads word m") and u the
arc part of μ. Its solution is a convex combination of **a few** structures, found by
an active-set method that only calls the MAP decoder (Chu–Liu–Edmonds for
non-projective trees): where the model is sure, one tree; where it hesitates, a handful,
with weights that sum to one. :class:`~skstruct.SparseMAPClassifier` trains a linear
parser with the SparseMAP loss, and :meth:`predict_distribution
<skstruct.SparseMAPClassifier.predict_distribution>` returns the trees and their weights
for every sentence.

The parser is trained on UD English EWT (bundled with skstruct) with McDonald et al.'s
first-order arc features (:class:`~skstruct.preprocessing.ArcVectorizer`). To keep the
documentation build short it sees only 300 training sentences of at most 15 words, for
25 L-BFGS iterations.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Arc
from sklearn.exceptions import ConvergenceWarning

from skstruct import SparseMAPClassifier
from skstruct.datasets import load_ud_english_ewt
from skstruct.decoders import TreeDecoder
from skstruct.preprocessing import ArcVectorizer

train = [s for s in load_ud_english_ewt("train") if 3 <= len(s["head"]) <= 15][:300]
test = [s for s in load_ud_english_ewt("test") if 6 <= len(s["head"]) <= 10][:100]
vectorizer = ArcVectorizer().fit(train)
X_train, X_test = vectorizer.transform(train), vectorizer.transform(test)
y_train = [s["head"] for s in train]

parser = SparseMAPClassifier(decoder=TreeDecoder(), alpha=1.0 / len(train), max_iter=25)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)  # 25 iterations: not converged
    parser.fit(X_train, y_train)
print(f"UAS on {len(test)} short test sentences: "
      f"{parser.score(X_test, [s['head'] for s in test]):.3f}")

# %%
# The distribution of one sentence
# --------------------------------
#
# ``predict_distribution`` returns one ``(trees, weights)`` pair per sentence, the trees
# as arrays of CoNLL heads (0: the root), by decreasing weight. The supports of this
# quickly trained parser hold from one to a dozen or more trees (a better trained one
# is surer, and its supports are smaller); we draw the first test sentence with three
# or four.

distributions = parser.predict_distribution(X_test)
sizes = np.array([len(weights) for _, weights in distributions])
counts = np.bincount(sizes)
print("trees in the support: number of sentences",
      {size: int(count) for size, count in enumerate(counts) if count})
i = int(np.flatnonzero((sizes >= 3) & (sizes <= 4))[0])
trees, weights = distributions[i]
words, gold = test[i]["form"], test[i]["head"]
print(f"sentence {i}: {' '.join(words)}")
for tree, weight in zip(trees, weights):
    print(f"  weight {weight:.3f}  heads {tree.tolist()}  "
          f"({np.sum(tree == gold)}/{len(gold)} right)")

# %%
# The weights and the trees
# -------------------------
#
# Left, the weight of every tree. Right, each tree as arcs from head to modifier drawn
# above the words (an arrow from the root for the word attached to it); the arcs that
# every tree of the support shares are grey, those where the trees differ are coloured.
# The SparseMAP arc marginals u* (``predict_marginals``) are the weighted average of the
# trees' arcs.

n = len(words)
shared = np.all(np.array(trees) == trees[0], axis=0)
fig = plt.figure(figsize=(11, 1.7 * len(trees) + 1))
grid = fig.add_gridspec(len(trees), 2, width_ratios=[1, 4])
bars = fig.add_subplot(grid[:, 0])
bars.barh(range(len(trees)), weights, color=[f"C{k}" for k in range(len(trees))])
bars.set_yticks(range(len(trees)), [f"tree {k + 1}" for k in range(len(trees))])
bars.invert_yaxis()
bars.set_xlabel("SparseMAP weight")
bars.set_xlim(0, 1)

for k, tree in enumerate(trees):
    ax = fig.add_subplot(grid[k, 1])
    for m, h in enumerate(tree):
        color = "0.6" if shared[m] else f"C{k}"
        if h == 0:
            ax.annotate("", xy=(m, 0.1), xytext=(m, 1.6),
                        arrowprops=dict(arrowstyle="->", color=color, lw=1.5))
            continue
        h = h - 1
        width = abs(m - h)
        ax.add_patch(Arc(((m + h) / 2, 0.1), width, min(0.5 * width, 2.6), theta1=0,
                         theta2=180, color=color, lw=1.5))
        ax.plot([m], [0.1], marker="v", color=color, markersize=5)
    for m, word in enumerate(words):
        ax.text(m, -0.2, word, ha="center", va="top", fontsize=9)
    ax.set_xlim(-0.7, n - 0.3)
    ax.set_ylim(-0.8, 1.6)
    ax.axis("off")
    ax.set_title(f"tree {k + 1}: weight {weights[k]:.2f}, "
                 f"{np.sum(tree == gold)}/{n} heads right", fontsize=9, loc="left")
fig.tight_layout()
plt.show()

# %%
# The trees of the support differ in a few arcs only: the uncertainty of the model is
# local (typically the attachment of a prepositional phrase or of punctuation), and
# SparseMAP shows it as a short list of whole, valid trees, which marginal
# probabilities alone (as a CRF gives) cannot.
