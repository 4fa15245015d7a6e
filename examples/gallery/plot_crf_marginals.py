"""
Token marginals of a CRF as a heat map
======================================

A linear-chain CRF defines a distribution over the label sequences of a sentence, and
:meth:`CRF.predict_marginals <skstruct.CRF.predict_marginals>` returns, for every token,
the probability of every label under it (computed by forward–backward): an
``(n_tokens, n_classes)`` array per sentence whose rows sum to one. Where the model
hesitates between labels, the probability mass spreads over several of them; the MAP
labeling (``predict``, Viterbi) picks one sequence and hides the hesitation. This
example picks the sentence on which the model hesitates most and shows where.

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
# Choosing a sentence where the model hesitates
# ---------------------------------------------
#
# This CRF is sure of most tokens (the largest marginal of most is above 0.9, printed
# below), so the heat map of a sentence taken at random is mostly a staircase of ones.
# To show what the marginals add to ``predict``, the sentence is chosen by the model's
# own uncertainty: the test sentence of 8 to 20 tokens with the highest mean token
# entropy, −Σ_k p_k log p_k averaged over its tokens (0 when every token is certain,
# log 2 ≈ 0.69 for an even split between two labels).
#
# A pipeline has no ``predict_marginals``: the vectorizer step transforms the token
# features and the CRF step answers. Its columns follow ``classes_``.

vectorizer, crf = model[0], model[-1]
all_marginals = crf.predict_marginals(vectorizer.transform(X_test))
entropy = np.array([-(m * np.log(np.clip(m, 1e-300, None))).sum(axis=1).mean()
                    for m in all_marginals])
top = np.concatenate([m.max(axis=1) for m in all_marginals])
right = np.concatenate(crf.predict(vectorizer.transform(X_test))) == np.concatenate(y_test)
print(f"{np.mean(top > 0.9):.0%} of the {top.size} test tokens have a largest marginal "
      f"above 0.9; Viterbi labels {np.mean(right[top > 0.9]):.1%} of them right, "
      f"and {np.mean(right[top <= 0.9]):.1%} of the others")
short = np.flatnonzero([8 <= len(words) <= 20 for words in test.words[:n_test]])
i = short[np.argmax(entropy[short])]
words, gold = test.words[i], test.target[i]
marginals = all_marginals[i]
predicted = crf.predict(vectorizer.transform(X_test[i:i + 1]))[0]
print(f"test sentence {i}: {' '.join(words)!r}, mean token entropy {entropy[i]:.2f} "
      f"(median over the test sentences {np.median(entropy):.3f})")
print(f"rows sum to {marginals.sum(axis=1).min():.6f} .. {marginals.sum(axis=1).max():.6f}")
for t in np.flatnonzero(marginals.max(axis=1) < 0.9):  # the hesitant tokens
    top = np.argsort(marginals[t])[::-1][:3]
    print(f"  {words[t]!r:14} gold {gold[t]:7} predicted {predicted[t]:7} "
          + ", ".join(f"p({crf.classes_[k]}) = {marginals[t, k]:.2f}" for k in top))

# %%
# The marginals of that sentence
# ------------------------------
#
# Only the labels that get some probability in this sentence are drawn.

shown = np.flatnonzero(marginals.max(axis=0) > 0.01)
fig, ax = plt.subplots(figsize=(10, 0.45 * len(words) + 2))
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
    for k, p in zip(range(len(shown)), marginals[t, shown]):
        if p >= 0.1:  # the probabilities worth reading, written in their cells
            ax.text(k, t, f"{p:.2f}", ha="center", va="center", fontsize=8,
                    color="black" if p > 0.6 else "white")
ax.set_title("p(label of token | sentence); red boxes: gold labels")
fig.colorbar(image, ax=ax, fraction=0.03)
fig.tight_layout()
plt.show()

# %%
# In this sentence the model is sure of the verb *finished* and of the final period and
# hesitates on every other token. *Advancing and declining issues* is one noun phrase
# (gold ``B-NP I-NP I-NP I-NP``), but *advancing* and *declining* are -ing forms that
# also begin verb phrases: on the first three tokens no label gets half of the mass, and
# the favourites of the single tokens (``B-NP``, ``O``, ``B-VP``, ``B-NP``) do not even
# make a consistent chunking. Viterbi's most probable sequence is the gold one all the
# same: the mass of each token is spread over many labelings, and the one noun phrase is
# the most probable labeling as a whole. *About even*, an adjective phrase in the gold
# labels (``B-ADJP I-ADJP``), is read as an adverb phrase (``B-ADVP I-ADVP``, with
# probability about 0.7 each, and ``B-PP`` second on *about*): the prediction is wrong
# there, and the marginals say that it is in doubt.
#
# Over the whole test set, Viterbi labels right two tokens in three among those whose
# largest marginal is at most 0.9, against 97% of the others (printed above): the
# marginals are a per-token confidence that Viterbi's single answer does not show.
