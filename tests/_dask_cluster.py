"""A small Dask cluster for the tests of skstruct.dask: 2 worker processes, 1 thread each."""

import contextlib

import pytest


@contextlib.contextmanager
def local_cluster():
    distributed = pytest.importorskip("distributed")
    pytest.importorskip("dask.bag")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=40)
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()
