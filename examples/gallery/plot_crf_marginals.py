"""
Token marginals of a CRF as a heat map
======================================

A linear-chain CRF defines a distribution over the label sequences of a sentence, and
:meth:`CRF.predict_marginals <skstruct.CRF.predict_marginals>` returns, for every token,
the probability of every label under it (computed by forward–backward): an
``(n_tokens, n_classes)`` array per sentence whose rows sum to one. Where the model
hesitates between labels, the probability mass spreads over several of them; the MAP
labeling (``predict``, Viterbi) picks one sequence.

The CRF here is trained on CoNLL-2000 chunking (bundled with skstruct) with the usual
token features (:func:`~skstruct.preprocessing.sentences_to_features`). To keep the
documentation build short it sees only the first 1,000 of the 8,936 training sentences
for 40 L-BFGS iterations (the full run reaches a chunk F1 of about 0.93; see
``examples/quickstart_chunking.py``).
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import make_pipeline

from skstruct import CRF
from skstruct.datasets import load_conll2000
from skstruct.metrics import span_f1_score
from skstruct.preprocessing import SequenceVectorizer, sentences_to_features

train, test = load_conll2000("train"), load_conll2000("test")
n_train, n_test = 1000, 500
X_train = sentences_to_features(train.words[:n_train], train.pos[:n_train])
X_test = sentences_to_features(test.words[:n_test], test.pos[:n_test])
y_train, y_test = train.target[:n_train], test.target[:n_test]

model = make_pipeline(SequenceVectorizer(), CRF(alpha=2 * 0.1 / n_train, max_iter=40))
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)  # 40 iterations: not converged
    model.fit(X_train, y_train)
print(f"chunk F1 on {n_test} test sentences: "
      f"{span_f1_score(y_test, model.predict(X_test)):.3f}")

# %%
# The marginals of one sentence
# -----------------------------
#
# A pipeline has no ``predict_marginals``: the vectorizer step transforms the token
# features and the CRF step answers. The columns follow ``classes_``; only the labels
# that get some probability in this sentence are drawn.

vectorizer, crf = model[0], model[-1]
i = 7  # a test sentence of moderate length
words, gold = test.words[i], test.target[i]
encoded = vectorizer.transform(X_test[i:i + 1])
marginals = crf.predict_marginals(encoded)[0]
predicted = crf.predict(encoded)[0]
print(f"{len(words)} tokens, rows sum to {marginals.sum(axis=1).min():.6f} .. "
      f"{marginals.sum(axis=1).max():.6f}")

shown = np.flatnonzero(marginals.max(axis=0) > 0.01)
fig, ax = plt.subplots(figsize=(10, 0.35 * len(words) + 1.5))
image = ax.imshow(marginals[:, shown], cmap="viridis", vmin=0, vmax=1, aspect="auto")
ax.set_xticks(range(len(shown)), crf.classes_[shown], rotation=60, ha="right")
ax.set_yticks(range(len(words)),
              [f"{w}  ({g}{'' if g == p else ' / pred. ' + p})"
               for w, g, p in zip(words, gold, predicted)])
for t in range(len(words)):  # the gold label of every token, boxed
    column = np.flatnonzero(crf.classes_[shown] == gold[t])
    if column.size:
        ax.add_patch(plt.Rectangle((column[0] - 0.5, t - 0.5), 1, 1, fill=False,
                                   edgecolor="red", linewidth=1.5))
ax.set_title("p(label of token | sentence); red boxes: gold labels")
fig.colorbar(image, ax=ax, fraction=0.03)
fig.tight_layout()
plt.show()

# %%
# Most tokens get nearly all the mass on one label. The uncertain ones are where
# chunks begin or where a word can head different phrases; the marginals are a
# per-token confidence that Viterbi's single answer does not show.
