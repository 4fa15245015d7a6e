"""benchmarks/bench_tagging_throughput.py still runs: --quick --no-peer times the skstruct
side on slices of CoNLL-2000 and writes its results."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def test_quick_run_writes_the_skstruct_side(tmp_path):
    path = BENCHMARKS / "bench_tagging_throughput.py"
    if not path.exists():
        pytest.skip(f"{path} not in this checkout")
    sys.path.insert(0, str(BENCHMARKS))
    try:
        spec = importlib.util.spec_from_file_location("_bench_tagging", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCHMARKS))
    run = module.main(["--quick", "--no-peer", "--iterations", "2", "--output", str(tmp_path)])
    stored = json.loads((tmp_path / "tagging_throughput.json").read_text())["runs"]
    assert list(stored) == ["latest"]
    timings = stored["latest"]["timings"]
    assert {"skstruct", "skstruct transform", "skstruct predict", "skstruct model only",
            "featurize"} <= set(timings)
    assert "crfsuite" not in timings and stored["latest"]["speedup_from_dicts"] is None
    assert len(timings["skstruct"]["seconds"]) == 3 and timings["skstruct"]["median"] > 0
    assert run["test_sentences"] == 200
    assert (tmp_path / "tagging_throughput.md").read_text().startswith("# ")
