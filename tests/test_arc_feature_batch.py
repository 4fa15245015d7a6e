"""Arc features as one ArcFeatureBatch (no values for binary features): the same data as
the list of per-sentence matrices, the same models, clear errors on bad input; and the
full-batch compiled arc products equal to scipy's."""

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.model_selection import cross_val_score

from skstruct import CRF, SparseMAPClassifier, StructuredPerceptron, StructuredSVM
from skstruct.datasets import load_ud_english_ewt
from skstruct.decoders import TreeDecoder, TreeScores
from skstruct.features import LinearArcFeatures
from skstruct.features._arc_products import arc_matvec, arc_rmatvec
from skstruct.features._compiled import compiled_rows
from skstruct.preprocessing import ArcVectorizer
from skstruct.utils._trees import ArcFeatureBatch, ArcRows, TreeBatch, check_trees

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.fixture(scope="module")
def treebank():
    sentences = [s for s in load_ud_english_ewt("dev") if len(s["head"]) <= 12][:90]
    vectorizer = ArcVectorizer(n_features=2**16).fit(sentences[:60])
    y = [s["head"] for s in sentences]
    return vectorizer, sentences[:60], y[:60], sentences[60:], y[60:]


def test_batch_holds_the_matrices_of_transform(treebank):
    vectorizer, train, *_ = treebank
    listed = vectorizer.transform(train)
    batch = vectorizer.transform_batch(train)
    assert len(batch) == len(listed) == len(train)
    assert batch.rows.data is None and batch.rows.indices.dtype == np.int32
    for i in range(len(listed)):
        assert batch[i].shape == listed[i].shape
        assert (batch[i] != listed[i]).nnz == 0
        assert np.array_equal(batch[i].indices, listed[i].indices)  # sorted again
    picked = batch[np.array([7, 2, 2])]
    assert len(picked) == 3
    for got, i in zip(picked.to_list(), [7, 2, 2], strict=True):
        assert (got != listed[i]).nnz == 0
    assert [m.shape for m in batch[3:5].to_list()] == [m.shape for m in listed[3:5]]
    # 4 bytes a stored entry (int32 indices), against 12 for float64 CSR
    nnz = sum(m.nnz for m in listed)
    assert batch.rows.indices.nbytes == 4 * nnz
    per_entry = batch.nbytes - batch.rows.column_order.nbytes  # n_features * 4 bytes
    assert per_entry < sum(m.data.nbytes + m.indices.nbytes for m in listed) / 2


def test_values_kept_on_request(treebank):
    vectorizer, train, *_ = treebank
    batch = vectorizer.set_params(dtype=np.float32).transform_batch(train, values=True)
    vectorizer.set_params(dtype=np.float64)
    assert batch.rows.data.dtype == np.float32 and np.all(batch.rows.data == 1)
    assert (batch[4] != vectorizer.transform(train)[4]).nnz == 0


PARSERS = {
    "crf": lambda: CRF(decoder=TreeDecoder(), alpha=1e-2, max_iter=15),
    "sparsemap": lambda: SparseMAPClassifier(decoder=TreeDecoder(), alpha=1e-2, max_iter=8),
    "m-sparsemap": lambda: SparseMAPClassifier(decoder=TreeDecoder(), cost="hamming",
                                               alpha=1e-2, max_iter=8),
    "ssvm": lambda: StructuredSVM(decoder=TreeDecoder(), loss="hamming", alpha=1e-2,
                                  max_iter=3, random_state=0),
    "ssvm-python": lambda: StructuredSVM(decoder=TreeDecoder(), loss="hamming", alpha=1e-2,
                                         max_iter=2, random_state=0),
    "perceptron": lambda: StructuredPerceptron(decoder=TreeDecoder(), max_iter=2,
                                               random_state=0),
    "subgradient": lambda: StructuredSVM(decoder=TreeDecoder(), solver="subgradient",
                                         alpha=1e-2, max_iter=2, random_state=0),
}


@pytest.mark.parametrize("key", list(PARSERS))
def test_same_model_from_the_batch_as_from_the_list(key, treebank, monkeypatch):
    vectorizer, train, y, test, y_test = treebank
    if key == "ssvm-python":  # BCFW's Python loop over sentences (no compiled engine)
        import skstruct.optim._bcfw as bcfw_module

        monkeypatch.setattr(bcfw_module, "compiled_problem", lambda *args: None)
    listed = PARSERS[key]().fit(vectorizer.transform(train), y)
    batched = PARSERS[key]().fit(vectorizer.transform_batch(train), y)
    # the CRF and SparseMAP sum the sentences' terms in parallel: equal to 1e-12
    tolerance = 0.0 if key in ("ssvm", "perceptron", "subgradient") else 1e-12
    scale = max(1.0, np.abs(listed.coef_).max())
    assert np.abs(listed.coef_ - batched.coef_).max() <= tolerance * scale
    X_test = vectorizer.transform_batch(test)
    assert [np.array_equal(a, b) for a, b in zip(batched.predict(X_test),
                                                  listed.predict(vectorizer.transform(test)),
                                                  strict=True)] == [True] * len(test)
    assert batched.score(X_test, y_test) == listed.score(vectorizer.transform(test), y_test)
    scores = batched.decision_function(X_test)
    assert len(scores) == len(test) and scores[0].shape == (len(y_test[0]),) * 2


def test_batch_without_column_order_and_with_values(treebank):
    vectorizer, train, y, *_ = treebank
    listed = vectorizer.transform(train)
    stacked = sp.vstack(listed).tocsr()
    lengths = [len(h) for h in y]
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    plain = ArcFeatureBatch(stacked.indices, stacked.indptr, offsets, 2**16)
    valued = ArcFeatureBatch(stacked.indices, stacked.indptr, offsets, 2**16,
                             data=stacked.data.astype(np.float32))
    models = [StructuredSVM(decoder=TreeDecoder(), alpha=1e-2, max_iter=2,
                            random_state=0).fit(X, y) for X in (listed, plain, valued)]
    assert np.array_equal(models[0].coef_, models[1].coef_)
    assert np.array_equal(models[0].coef_, models[2].coef_)


def test_cross_validation_indexes_the_batch(treebank):
    vectorizer, train, y, *_ = treebank
    model = StructuredSVM(decoder=TreeDecoder(), alpha=1e-2, max_iter=2, random_state=0)
    batched = cross_val_score(model, vectorizer.transform_batch(train), y, cv=2)
    listed = cross_val_score(model, vectorizer.transform(train), y, cv=2)
    assert np.array_equal(batched, listed)


def _small_batch():
    # two sentences of 1 and 2 words: 1 + 4 arc rows
    return dict(indices=np.array([0, 2, 1, 1, 2], dtype=np.int32),
                indptr=np.array([0, 1, 2, 3, 4, 5]), word_offsets=np.array([0, 1, 3]),
                n_features=3)


@pytest.mark.parametrize("change, message", [
    (dict(indptr=np.array([0, 1, 2, 3, 5])), "indptr has 5 entries"),
    (dict(indptr=np.array([0, 1, 3, 2, 4, 5])), "never decrease"),
    (dict(indptr=np.array([0, 1, 2, 3, 4, 4])), "end at the number of indices"),
    (dict(indices=np.array([0, 2, 1, 1, 3])), r"indices must lie in 0 \.\. n_features"),
    (dict(indices=np.array([0, -1, 1, 1, 2])), r"indices must lie in 0 \.\. n_features"),
    (dict(indices=np.array([0.0, 2, 1, 1, 2])), "indices must be a 1-D integer array"),
    (dict(word_offsets=np.array([0, 1, 1, 3])), "Sentence 1 has 0 words"),
    (dict(word_offsets=np.array([1, 3])), "word_offsets must start at 0"),
    (dict(n_features=0), "n_features must be a positive integer"),
    (dict(data=np.ones(5, dtype=np.int64)), "data must be float32 or float64"),
    (dict(data=np.ones(4)), "data has shape"),
    (dict(data=np.array([1.0, np.nan, 1, 1, 1])), "NaN or infinite"),
    (dict(column_order=np.array([0, 0, 1])), "column_order must be a permutation"),
    (dict(column_order=np.array([0, 1])), "column_order must be a permutation"),
])
def test_bad_batches_are_rejected(change, message):
    with pytest.raises(ValueError, match=message):
        ArcFeatureBatch(**{**_small_batch(), **change})


def test_batch_checked_against_the_fitted_model(treebank):
    vectorizer, train, y, *_ = treebank
    model = StructuredSVM(decoder=TreeDecoder(), alpha=1e-2, max_iter=1,
                          random_state=0).fit(vectorizer.transform_batch(train), y)
    with pytest.raises(ValueError, match="X has 3 features, but StructuredSVM is expecting"):
        model.predict(ArcFeatureBatch(**_small_batch()))
    with pytest.raises(ValueError, match="X has 2 sentences but y has 1"):
        check_trees(ArcFeatureBatch(**_small_batch()), [[0]])
    with pytest.raises(ValueError, match="y\\[1\\] has a token that heads itself"):
        check_trees(ArcFeatureBatch(**_small_batch()), [[0], [1, 2]])


def _random_arcs(rng, binary, lengths=(1, 4, 7, 3), n_features=50, density=0.2):
    rows = int(np.sum(np.square(lengths)))
    X = sp.random(rows, n_features, density=density, format="csr", random_state=rng)
    if binary:
        X.data[:] = 1.0
    else:
        X.data = rng.normal(size=X.nnz)
    return X, np.asarray(lengths)


@pytest.mark.parametrize("binary", [True, False])
@pytest.mark.parametrize("form", ["csr", "rows", "ordered rows", "float32 rows"])
def test_compiled_arc_products_equal_scipy(binary, form):
    rng = np.random.default_rng(0)
    features = LinearArcFeatures(50, TreeScores)
    for trial in range(5):
        X, lengths = _random_arcs(rng, binary)
        words = np.concatenate(([0], np.cumsum(lengths)))
        rows = np.concatenate(([0], np.cumsum(lengths**2)))
        data = None if binary else X.data
        if form == "csr":
            stored = X
        elif form == "float32 rows":
            data = X.data.astype(np.float32)
            stored = ArcRows(X.indices, X.indptr.astype(np.int64), 50, data)
            X = sp.csr_matrix((data.astype(np.float64), X.indices, X.indptr), shape=X.shape)
        elif form == "rows":
            stored = ArcRows(X.indices, X.indptr.astype(np.int64), 50, data)
        else:
            order = rng.permutation(50)
            rank = np.argsort(order)
            stored = ArcRows(rank[X.indices].astype(np.int32), X.indptr.astype(np.int64), 50,
                             data, order)
        batch = TreeBatch(stored, rows, words)
        w = rng.normal(size=50)
        g = TreeScores(rng.normal(size=X.shape[0]), words)
        np.testing.assert_allclose(features.scores(batch, w).unary, X @ w, rtol=0,
                                   atol=1e-12)
        np.testing.assert_allclose(features.transpose(batch, g), X.T @ g.unary, rtol=0,
                                   atol=1e-12)


def test_compiled_arc_products_same_on_any_thread_count():
    rng = np.random.default_rng(1)
    n_rows, n_features = 3000, 400
    X = sp.random(n_rows, n_features, density=0.3, format="csr", random_state=rng)
    indptr = X.indptr.astype(np.int64)
    w, g = rng.normal(size=n_features), rng.normal(size=n_rows)
    import skstruct.features._arc_products as products

    previous = products.ENTRIES_PER_CHUNK
    products.ENTRIES_PER_CHUNK = 4096  # many chunks on this small matrix
    try:
        results = []
        for threads in (1, numba.config.NUMBA_NUM_THREADS):
            numba.set_num_threads(threads)
            results.append((arc_matvec(X.indices, indptr, X.data, False, w),
                            arc_rmatvec(X.indices, indptr, X.data, False, g, n_features)))
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    finally:
        products.ENTRIES_PER_CHUNK = previous
    assert np.array_equal(results[0][0], results[1][0])
    assert np.array_equal(results[0][1], results[1][1])
    np.testing.assert_allclose(results[0][1], X.T @ g, atol=1e-12, rtol=0)


def test_binary_rows_give_the_engine_no_values(treebank):
    vectorizer, train, *_ = treebank
    batch = check_trees(vectorizer.transform_batch(train))[0]
    compiled = compiled_rows(batch.X, batch.offsets, 2**16, 1, False, 0)
    assert compiled.binary and compiled.data.shape == (0,)
    # engine rows map back to the columns: the batch's positions through its order
    listed = check_trees(vectorizer.transform(train))[0]
    reference = compiled_rows(listed.X, listed.offsets, 2**16, 1, False, 0)
    assert reference.binary
    starts = reference.column_offsets
    for i in (0, 5, 33):
        mine = np.sort(compiled.column_order[
            compiled.local_columns[compiled.column_offsets[i]:compiled.column_offsets[i + 1]]])
        theirs = np.sort(reference.column_order[
            reference.local_columns[starts[i]:starts[i + 1]]])
        assert np.array_equal(mine, theirs)


def test_engine_never_reads_values_of_binary_rows(monkeypatch):
    """Chain features (K > 1 rows) with all values 1.0: the engine's kernels given NaN
    values and ``binary=True`` learn the same model as with the values, so they never read
    them (score_example, _sparse_update and bcfw_pass with K > 1)."""
    from skstruct.features import LinearChainFeatures

    rng = np.random.default_rng(0)
    X = [sp.csr_matrix((rng.random((n, 12)) < 0.3).astype(float)) for n in (4, 6, 3, 5)]
    y = [rng.integers(0, 3, size=x.shape[0]) for x in X]
    original = LinearChainFeatures.compiled_features

    def poisoned(self, batch):
        compiled = original(self, batch)
        assert compiled.binary
        return compiled._replace(data=np.full_like(compiled.data, np.nan))

    models = {}
    for poison in (False, True):
        if poison:
            monkeypatch.setattr(LinearChainFeatures, "compiled_features", poisoned)
        models[poison] = [
            StructuredSVM(alpha=0.1, max_iter=3, random_state=0).fit(X, y),
            StructuredPerceptron(max_iter=3, random_state=0).fit(X, y),
            StructuredSVM(solver="subgradient", alpha=0.1, max_iter=3,
                          random_state=0).fit(X, y),
        ]
    for clean, poisoned_model in zip(models[False], models[True], strict=True):
        assert np.all(np.isfinite(poisoned_model.coef_))
        assert np.array_equal(clean.coef_, poisoned_model.coef_)


@pytest.mark.parametrize("ordered", [False, True])
def test_example_transpose_of_rows_gives_columns(ordered):
    rng = np.random.default_rng(3)
    X, lengths = _random_arcs(rng, binary=True, lengths=(4,))
    words, rows = np.array([0, 4]), np.array([0, 16])
    if ordered:
        order = rng.permutation(50)
        stored = ArcRows(np.argsort(order)[X.indices].astype(np.int32),
                         X.indptr.astype(np.int64), 50, None, order)
    else:
        stored = ArcRows(X.indices, X.indptr.astype(np.int64), 50)
    features = LinearArcFeatures(50, TreeScores)
    g = TreeScores(rng.normal(size=16), words)
    columns, values = features.example_transpose(TreeBatch(stored, rows, words), g)
    expected_columns, expected_values = features.example_transpose(TreeBatch(X, rows, words),
                                                                    g)
    assert np.array_equal(columns, expected_columns)
    np.testing.assert_allclose(values, expected_values, rtol=0, atol=1e-12)
    dense = np.zeros(50)
    dense[columns] = values
    np.testing.assert_allclose(dense, X.T @ g.unary, rtol=0, atol=1e-12)
