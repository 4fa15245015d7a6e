"""The EWT parsing benchmark keeps the rows it did not re-run in its results."""

import importlib.util
from pathlib import Path

BENCH = Path(__file__).parents[1] / "benchmarks" / "bench_parsing_ewt.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_parsing_ewt", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _row(bench, key, seconds):
    return dict(key=key, name=bench.NAMES[key], uas=0.84, seconds=seconds, cpu=seconds,
                n_iter=12, converged=False, load=[1.0, 2.0], features="batch",
                feature_gb=1.0, peak_rss_gb=3.0, date="2026-01-01",
                command=f"python benchmarks/bench_parsing_ewt.py --parsers {key}")


def test_partial_runs_merge_into_the_table(tmp_path):
    bench = _bench()
    store = tmp_path / "parsing.json"
    setup = dict(n_train=10, n_words=100, nnz=1000, alpha=0.1, sparsemap_max_iter=20,
                 machine="x", threads=2)
    rows = bench.merge_rows(store, [_row(bench, "crf", 30.0), _row(bench, "ssvm", 5.0)],
                            setup)
    assert [r["key"] for r in rows] == ["ssvm", "crf"]  # table order
    rows = bench.merge_rows(store, [_row(bench, "ssvm", 4.0)], setup)
    assert [(r["key"], r["seconds"]) for r in rows] == [("ssvm", 4.0), ("crf", 30.0)]
    table = bench.report(rows, None, setup)
    assert "| SSVM (Hamming, BCFW) | 84.00 | 4 s |" in table
    assert "| CRF | 84.00 | 30 s |" in table
    assert "--parsers ssvm" in table and "--parsers crf" in table
    # another setup (e.g. fewer training sentences) starts a new table
    rows = bench.merge_rows(store, [_row(bench, "ssvm", 1.0)], {**setup, "n_train": 5})
    assert [r["key"] for r in rows] == ["ssvm"]
