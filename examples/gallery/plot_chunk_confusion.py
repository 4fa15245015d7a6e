"""
Which chunk types a chunker confuses: a confusion matrix on CoNLL-2000
======================================================================

Chunk F1 (:func:`~skstruct.metrics.span_f1_score`, as ``conlleval`` computes it) counts a
predicted chunk as right when its type **and** both of its boundaries match a gold
chunk. This example breaks the errors down: every gold chunk is matched with the
predicted chunk of the same boundaries, if there is one, and the pairs (gold type,
predicted type) are counted; a gold chunk with no predicted chunk of the same
boundaries falls in the column "no chunk" (missed, or found with other boundaries), and
a predicted chunk with no gold chunk of the same boundaries in the row "no chunk". The
diagonal holds the correct chunks.

The chunker is a :class:`~skstruct.StructuredSVM` (Hamming loss, margin rescaling,
block-coordinate Frank–Wolfe) on the usual token features. To keep the documentation
build short it trains on 2,000 of the 8,936 training sentences for 8 passes and is
tested on 1,000 of the 2,012 test sentences.
"""

import warnings
from collections import Counter

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import LogNorm
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import make_pipeline

from skstruct import StructuredSVM
from skstruct.datasets import load_conll2000
from skstruct.metrics import extract_spans, span_classification_report
from skstruct.preprocessing import SequenceVectorizer, sentences_to_features

train, test = load_conll2000("train"), load_conll2000("test")
n_train, n_test = 2000, 1000
X_train = sentences_to_features(train.words[:n_train], train.pos[:n_train])
X_test = sentences_to_features(test.words[:n_test], test.pos[:n_test])
y_train, y_test = train.target[:n_train], test.target[:n_test]

model = make_pipeline(SequenceVectorizer(),
                      StructuredSVM(alpha=1e-3, max_iter=8, random_state=0))
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)  # 8 passes: gap still open
    model.fit(X_train, y_train)
y_pred = model.predict(X_test)
print(span_classification_report(y_test, y_pred, digits=3))

# %%
# Matching the chunks
# -------------------
#
# :func:`~skstruct.metrics.extract_spans` returns the ``(type, start, end)`` chunks of a
# tag sequence as ``conlleval`` delimits them.

NONE = "no chunk"
pairs = Counter()
for gold_tags, pred_tags in zip(y_test, y_pred):
    gold = {(start, end): kind for kind, start, end in extract_spans(gold_tags)}
    pred = {(start, end): kind for kind, start, end in extract_spans(pred_tags)}
    for bounds, kind in gold.items():
        pairs[kind, pred.get(bounds, NONE)] += 1
    for bounds, kind in pred.items():
        if bounds not in gold:
            pairs[NONE, kind] += 1

frequency = Counter()
for (gold_kind, pred_kind), count in pairs.items():
    frequency[gold_kind] += count
types = [kind for kind, _ in frequency.most_common() if kind != NONE] + [NONE]
index = {kind: k for k, kind in enumerate(types)}
matrix = np.zeros((len(types), len(types)), dtype=int)
for (gold_kind, pred_kind), count in pairs.items():
    matrix[index[gold_kind], index[pred_kind]] = count

# %%
# The matrix
# ----------
#
# Counts, on a logarithmic colour scale (the types are very unequal: noun phrases
# outnumber the rarest types a thousand to one); empty cells are blank.

fig, ax = plt.subplots(figsize=(8, 7))
shown = np.ma.masked_equal(matrix, 0)
image = ax.imshow(shown, cmap="viridis", norm=LogNorm(vmin=1, vmax=matrix.max()))
for r, c in zip(*np.nonzero(matrix)):
    ax.text(c, r, matrix[r, c], ha="center", va="center", fontsize=7,
            color="white" if matrix[r, c] < np.sqrt(matrix.max()) else "black")
ax.set_xticks(range(len(types)), types, rotation=60, ha="right")
ax.set_yticks(range(len(types)), types)
ax.set_xlabel("predicted chunk with the same boundaries")
ax.set_ylabel("gold chunk")
ax.set_title("CoNLL-2000 chunk types, 1,000 test sentences")
fig.colorbar(image, ax=ax, fraction=0.046)
fig.tight_layout()
plt.show()

n_types = len(types) - 1  # the last row and column are "no chunk"
print(f"boundary errors: {matrix[:, -1].sum()} gold chunks without a predicted chunk of "
      f"their boundaries, {matrix[-1].sum()} predicted chunks without a gold one")
confusions = matrix[:n_types, :n_types].copy()
np.fill_diagonal(confusions, 0)
print(f"type errors: {confusions.sum()} chunks with the right boundaries and the wrong "
      "type; the most frequent:")
for k in np.argsort(confusions, axis=None)[::-1][:5]:
    r, c = np.unravel_index(k, confusions.shape)
    print(f"  gold {types[r]:5s} predicted {types[c]:5s} {confusions[r, c]:4d}")

# %%
# Most errors are boundary errors (the "no chunk" row and column: a noun phrase split in
# two or merged with its neighbour) rather than confusions of type. The type
# confusions that remain are between types that share words: subordinating
# conjunctions and prepositions (SBAR and PP: "as", "before", "after"), adverbs and
# prepositions or particles (ADVP against PP and PRT: "up", "out", "about").
