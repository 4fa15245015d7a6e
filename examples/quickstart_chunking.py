"""
Quick start: chunking CoNLL-2000 with a linear-chain CRF
=======================================================

Trains :class:`skstruct.CRF` on the CoNLL-2000 chunking data bundled with skstruct (8,936
training and 2,012 test sentences), with the usual token features (word, suffixes, shape,
part of speech, and the same for the neighbouring words), then prints the chunk-level
scores computed as the CoNLL ``conlleval`` script does, the time each step took, and the
time numba spent compiling kernels (near zero when ``pip install .`` precompiled them).

Finally it decodes the test set again with the BIO constraints of the tag names (``I-X``
only after ``B-X`` or ``I-X``): a decoding choice that needs no new training. It prints
how many predicted sentences broke them before, and the chunk F1 of both decodings.
"""

import time

from sklearn.pipeline import make_pipeline

from skstruct import CRF
from skstruct.datasets import load_conll2000
from skstruct.decoders import ChainConstraints
from skstruct.metrics import span_classification_report, span_f1_score, token_accuracy
from skstruct.preprocessing import SequenceVectorizer, sentences_to_features
from skstruct.warmup import CompileTimer

compile_timer = CompileTimer().start()
tic = time.perf_counter()
train, test = load_conll2000("train"), load_conll2000("test")
X_train = sentences_to_features(train.words, train.pos)
X_test = sentences_to_features(test.words, test.pos)
n_test_tokens = sum(len(sentence) for sentence in test.words)
print(f"loaded and featurized {len(X_train)} + {len(X_test)} sentences "
      f"in {time.perf_counter() - tic:.1f} s")

# CRFsuite's c2 = 0.1 on the summed log-loss is alpha = 2 * 0.1 / n_sequences here. The
# other parameters are the defaults: the weights of the (feature, label) pairs seen in
# training, and L-BFGS stopping once the largest gradient entry has fallen below
# tol = 2e-3 times its starting value (within the default 100 iterations).
model = make_pipeline(SequenceVectorizer(), CRF(alpha=2 * 0.1 / len(X_train)))

tic = time.perf_counter()
model.fit(X_train, train.target)
fit_time = time.perf_counter() - tic
crf = model[-1]
print(f"trained in {fit_time:.1f} s ({crf.n_iter_} L-BFGS iterations, "
      f"{len(crf.classes_)} tags, {crf.n_features_in_} features)")

tic = time.perf_counter()
model.predict(X_test)  # the first call after installing compiles the decoder
first_time = time.perf_counter() - tic
tic = time.perf_counter()
y_pred = model.predict(X_test)
predict_time = time.perf_counter() - tic
print(f"tagged {n_test_tokens} test tokens in {predict_time:.2f} s "
      f"({n_test_tokens / predict_time:,.0f} tokens/s, featurization included; "
      f"first call {first_time:.2f} s)")
print(f"{compile_timer.stop().summary()} (included in the times above)")

print(f"\ntoken accuracy: {token_accuracy(test.target, y_pred):.4f}")
print(f"chunk F1:       {span_f1_score(test.target, y_pred):.4f}\n")
print(span_classification_report(test.target, y_pred, digits=2))

# The same weights, decoded over the valid BIO sequences only.
bio = ChainConstraints.from_tags(crf.classes_, "bio")
n_invalid = len(y_pred) - bio.is_valid(y_pred).sum()
crf.decoder_.set_params(constraints=bio)
tic = time.perf_counter()
y_bio = model.predict(X_test)
bio_time = time.perf_counter() - tic
print(f"BIO constraints: {n_invalid} of {len(y_pred)} predicted sentences broke them "
      f"before, {len(y_bio) - bio.is_valid(y_bio).sum()} now "
      f"({n_test_tokens / bio_time:,.0f} tokens/s)")
print(f"chunk F1 without constraints: {span_f1_score(test.target, y_pred):.4f}")
print(f"chunk F1 with constraints:    {span_f1_score(test.target, y_bio):.4f}")
