"""Process and thread parallelism after a fit: every joblib backend, fork pools, no hang.

A fit starts the compiled kernels' thread pool (numba's threading layer) in the process.
Processes forked afterwards (joblib's ``multiprocessing`` backend, ``multiprocessing`` with
the fork start method) must still run the kernels, and threads (joblib's ``threading``
backend) must be able to run them concurrently. Each check runs in a fresh interpreter
with a timeout, so that a hang fails the test instead of stalling the suite.
"""

import json
import os
import platform
import signal
import subprocess
import sys

import pytest

# A hang never ends; a child whose kernels are cached ends in seconds. The kernels are
# compiled first, once, by `compiled_kernels` (a cold cache on a busy two-core machine
# can take minutes), so that only the forks and threads under test count against this.
TIMEOUT = 120
COMPILE_TIMEOUT = 1200

pytestmark = [
    # Short fits on purpose: the same scores, not the optimum, are under test.
    pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning"),
    # pytest-timeout's limit (the ini's 300 s) counts the fixtures too: the compile, the
    # shared child of `fork_and_threads` and a test's own child, with room to spare.
    pytest.mark.timeout(COMPILE_TIMEOUT + 4 * TIMEOUT),
]

# Runs first in every child interpreter. Defines X, y (small chunking data), `model` (a fit
# in this process), `big` (chain scores large enough for every kernel thread) and
# `search(n_jobs)` (GridSearchCV scores); before that, the kernels ran on all threads.
SETUP = """
import json, os, sys, warnings
warnings.simplefilter("ignore")
import numpy as np
import joblib
import numba
from sklearn.model_selection import GridSearchCV, KFold
import skstruct
from skstruct import CRF
from skstruct.decoders import ChainDecoder, ChainScores
from skstruct.datasets import load_conll2000
from skstruct.preprocessing import SequenceVectorizer, sentences_to_features

data = load_conll2000("test")
X = SequenceVectorizer().fit_transform(sentences_to_features(data.words[:60], data.pos[:60]))
y = list(data.target[:60])
rng = np.random.default_rng(0)
big = ChainScores(rng.normal(size=(40_000, 10)), np.arange(0, 40_001, 20),
                  rng.normal(size=(10, 10)), np.zeros(10), np.zeros(10))
log_z = ChainDecoder().marginals(big)[0]
model = CRF(max_iter=5).fit(X, y)


def search(n_jobs):
    grid = GridSearchCV(CRF(max_iter=5), {"alpha": [1e-3, 1e-1]}, cv=KFold(2), n_jobs=n_jobs)
    return grid.fit(X, y).cv_results_["mean_test_score"].tolist()


# joblib >= 1.3 calls it parallel_config; parallel_backend before.
backend_config = getattr(joblib, "parallel_config", joblib.parallel_backend)


def report(**values):
    values["layer"] = numba.threading_layer()
    print("RESULT " + json.dumps(values), flush=True)
"""


def run_child(code, env=None, setup=SETUP, timeout=TIMEOUT):
    """Run ``setup + code`` in a fresh interpreter; return what it passed to ``report``.

    The child gets its own process group, killed whole after ``timeout`` seconds (pool
    workers included).
    """
    child_env = dict(os.environ if env is None else env)
    process = subprocess.Popen([sys.executable, "-c", setup + code], env=child_env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        pytest.fail(f"hung for {timeout} s; stderr:\n{err[-3000:]}")
    assert process.returncode == 0, err[-3000:]
    results = [line for line in out.splitlines() if line.startswith("RESULT ")]
    assert results, f"no result; stderr:\n{err[-3000:]}"
    return json.loads(results[-1][len("RESULT "):]), err


def tbb_expected():
    """Whether skstruct should run on TBB here: the platforms it installs ``tbb`` on."""
    from importlib import metadata

    if sys.platform != "linux" or platform.machine() != "x86_64":
        return False
    try:
        metadata.distribution("tbb")
    except metadata.PackageNotFoundError:
        return False
    return True


def default_env():
    """This environment without a threading layer chosen by the caller."""
    return {k: v for k, v in os.environ.items()
            if k not in ("NUMBA_THREADING_LAYER", "NUMBA_THREADING_LAYER_PRIORITY")}


@pytest.fixture(scope="module", autouse=True)
def compiled_kernels():
    """Compile (or load) the kernels every child runs, before any child is timed.

    The setup alone, in a child without forks or threads; the cache it fills is the one
    the children read.
    """
    run_child("report()", timeout=COMPILE_TIMEOUT)


fork_only = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


# One child for the checks that share a starting point: a fit, then forks and threads.
FORK_AND_THREADS = """
import multiprocessing

def work(i):
    part = X[10 * i: 10 * (i + 1)]
    refit = CRF(max_iter=5).fit(X, y)
    return ([p.tolist() for p in model.predict(part)],
            ChainDecoder().marginals(big)[0].tolist(),
            bool(np.array_equal(refit.coef_, model.coef_)))

with multiprocessing.get_context("fork").Pool(2) as pool:
    out = pool.map(work, range(2))
expected = [[p.tolist() for p in model.predict(X[10 * i: 10 * (i + 1)])] for i in range(2)]
pool_result = {"predictions": [o[0] for o in out] == expected,
               "log_z": all(np.allclose(o[1], log_z, rtol=1e-12) for o in out),
               "refit": all(o[2] for o in out)}
reference = search(1)
scores = {}
for backend in ["multiprocessing", "threading"]:
    with backend_config(backend=backend):
        scores[backend] = search(2)
report(pool=pool_result, reference=reference, scores=scores)
"""


@pytest.fixture(scope="module")
def fork_and_threads():
    # Fork explicitly in joblib's multiprocessing backend too (the default start method of
    # newer Pythons is not fork); no threading layer chosen by the caller.
    env = dict(default_env(), JOBLIB_START_METHOD="fork")
    return run_child(FORK_AND_THREADS, env=env)[0]


@fork_only
def test_fork_pool_after_fit(fork_and_threads):
    assert fork_and_threads["pool"] == {"predictions": True, "log_z": True, "refit": True}


@fork_only
def test_tbb_is_the_default_layer_where_the_package_is_installed(fork_and_threads):
    if not tbb_expected():
        pytest.skip("no tbb package for this platform")
    assert fork_and_threads["layer"] == "tbb"


@fork_only
@pytest.mark.parametrize("backend", ["multiprocessing", "threading"])
def test_grid_search_backends_match_serial(fork_and_threads, backend):
    assert fork_and_threads["scores"][backend] == fork_and_threads["reference"]


def test_grid_search_loky_matches_serial():
    # loky starts fresh interpreters (no fork) and reports dead workers instead of waiting
    # for them, so this one runs here, after a fit in this process, and can reuse the
    # workers other tests started.
    import joblib
    from sklearn.model_selection import GridSearchCV, KFold

    from skstruct import CRF
    from skstruct.datasets import load_conll2000
    from skstruct.preprocessing import SequenceVectorizer, sentences_to_features

    data = load_conll2000("test")
    X = SequenceVectorizer().fit_transform(
        sentences_to_features(data.words[:60], data.pos[:60]))
    y = list(data.target[:60])
    CRF(max_iter=5).fit(X, y)

    def search(n_jobs):
        grid = GridSearchCV(CRF(max_iter=5), {"alpha": [1e-3, 1e-1]}, cv=KFold(2),
                            n_jobs=n_jobs)
        return grid.fit(X, y).cv_results_["mean_test_score"].tolist()

    backend_config = getattr(joblib, "parallel_config", joblib.parallel_backend)
    with backend_config(backend="loky"):
        parallel = search(2)
    assert parallel == search(1)


def test_grid_search_dask_matches_serial():
    pytest.importorskip("dask")
    pytest.importorskip("distributed")
    result, _ = run_child("""
from dask.distributed import Client, LocalCluster

reference = search(1)
with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                  dashboard_address=None) as cluster, Client(cluster):
    with backend_config(backend="dask"):
        parallel = search(2)
report(reference=reference, parallel=parallel)
""")
    assert result["parallel"] == result["reference"]


@fork_only
@pytest.mark.skipif(sys.platform != "linux", reason="GNU OpenMP layer")
def test_user_choice_of_openmp_is_kept_and_forked_children_run_on_one_thread():
    result, _ = run_child("""
import multiprocessing

def work(i):
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return (ChainDecoder().marginals(big)[0].tolist(), numba.get_num_threads(),
            [p.tolist() for p in model.predict(X)])

with multiprocessing.get_context("fork").Pool(2) as pool:
    out = pool.map(work, range(2))
report(log_z=all(np.allclose(o[0], log_z, rtol=1e-12) for o in out),
       threads=[o[1] for o in out],
       predictions=all(o[2] == [p.tolist() for p in model.predict(X)] for o in out),
       tbb_library=skstruct._threading.threading_layer_info()["tbb_library"])
""", env=dict(os.environ, NUMBA_THREADING_LAYER="omp"))
    assert result["layer"] == "omp"
    assert result["tbb_library"] is None
    assert result["log_z"] and result["predictions"]
    assert result["threads"] == [1, 1]


@fork_only
@pytest.mark.skipif(sys.platform != "linux", reason="GNU OpenMP layer")
def test_openmp_started_before_import_warns_and_forks_still_work():
    setup = """
import numba
numba.config.THREADING_LAYER = "omp"  # as a library run before skstruct's import would
numba.get_num_threads()
numba.config.THREADING_LAYER = "default"
import warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import skstruct
warned = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
""" + SETUP
    result, _ = run_child("""
import multiprocessing

def work(i):
    return [p.tolist() for p in model.predict(X)]

with multiprocessing.get_context("fork").Pool(2) as pool:
    out = pool.map(work, range(2))
report(same=all(o == [p.tolist() for p in model.predict(X)] for o in out), warned=warned)
""", env=default_env(), setup=setup)
    assert result["layer"] == "omp"
    assert result["same"]
    assert any("not fork-safe" in message for message in result["warned"])


def test_user_choice_of_workqueue_is_kept():
    setup = """
import json
import numba
import numpy as np
from skstruct.decoders import ChainDecoder, ChainScores
from skstruct._threading import threading_layer_info

rng = np.random.default_rng(0)
ChainDecoder().map(ChainScores(rng.normal(size=(4, 3)), [0, 4], np.zeros((3, 3)),
                               np.zeros(3), np.zeros(3)))
report = lambda: print("RESULT " + json.dumps(threading_layer_info()), flush=True)
"""
    result, _ = run_child("report()", env=dict(os.environ, NUMBA_THREADING_LAYER="workqueue"),
                          setup=setup)
    assert result["layer"] == result["requested"] == "workqueue"
    assert result["tbb_library"] is None
