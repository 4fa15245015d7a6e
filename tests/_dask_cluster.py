"""A small Dask cluster for the tests of skstruct.dask: 2 worker processes, 1 thread each."""

import contextlib
import os

import pytest


@contextlib.contextmanager
def environment_kept():
    """Restore ``os.environ`` on exit: starting a ``LocalCluster`` sets variables in the
    parent process (``OMP_NUM_THREADS=1``, ``MALLOC_TRIM_THRESHOLD_``, ...), which would
    otherwise reach every later test."""
    saved = dict(os.environ)
    try:
        yield
    finally:
        for key in set(os.environ) - set(saved):
            del os.environ[key]
        os.environ.update(saved)


@contextlib.contextmanager
def local_cluster():
    distributed = pytest.importorskip("distributed")
    pytest.importorskip("dask.bag")
    with environment_kept():
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                           processes=True, dashboard_address=None,
                                           silence_logs=40)
        client = distributed.Client(cluster)
        try:
            yield client
        finally:
            client.close()
            cluster.close()
