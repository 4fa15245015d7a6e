"""benchmarks/bench_dask_crf.py still runs: --quick fits DaskCRF on 1 and 2 workers on a
slice of CoNLL-2000, matches the local objective and writes its results."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from _dask_cluster import environment_kept

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def test_quick_run_matches_the_local_fit_and_writes_its_results(tmp_path):
    pytest.importorskip("distributed")
    path = BENCHMARKS / "bench_dask_crf.py"
    if not path.exists():
        pytest.skip(f"{path} not in this checkout")
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location("_bench_dask_crf", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    with environment_kept():
        run = module.main(["--quick", "--output", str(tmp_path)])
    stored = json.loads((tmp_path / "dask_crf.json").read_text())["runs"]["latest"]
    assert stored["n_sequences"] == 500
    rows = run["dask"]
    assert [(r["workers"], r["copies"]) for r in rows] == [(1, 1), (1, 2), (2, 1), (2, 2)]
    for row in rows:
        assert row["objective_vs_local"] < 1e-10
        assert row["per_iteration"] > 0 and row["n_iter"] == 4
    assert (tmp_path / "dask_crf.md").read_text().startswith("# DaskCRF")
