"""`difftest bench --engine streaming` on a tiny stream (spark_impl/streaming/bench.py):
the command runs the window's real streaming query, the bare
`applyInPandasWithState` streams and the batch beside it, and reports what it
says it measures."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.streaming


def test_the_bench_command_on_a_tiny_stream_reports_every_figure(spark, tmp_path, capsys, monkeypatch):
    import numpy as np

    from difftest.__main__ import main
    from spark_impl.streaming import bench

    monkeypatch.setattr(bench, "FILL_EVENTS", 2_000)
    monkeypatch.setattr(bench, "LATENCY_BATCHES", 2)
    report = tmp_path / "bench.json"
    assert main(["bench", "--engine", "streaming", "--events", "3000", "--keys", "50", "--batch-rows", "1000",
                 "--window", "#groupwin(k)#length(10)", "--report", str(report)]) == 0
    data = json.loads(report.read_text())
    assert (data["sizes"], data["keys"]) == ([[3000, 1000]], 50)
    bare, bare_by_key, stream, batch, latency = data["figures"]
    assert (bare["workload"], bare_by_key["workload"]) == (bench.BARE, bench.BARE_BY_KEY)
    assert bare["output_rows"] == bare_by_key["output_rows"] == 3000  # one row per event
    assert bare["state_rows"] == 1 and bare_by_key["state_rows"] == 50  # a counter per key
    assert bare["verdict"] == bare_by_key["verdict"] == ""
    assert (stream["mode"], stream["events"], stream["batches"], stream["stopped"]) == ("stream", 3000, 3, False)
    # every event is inserted once; each key's events past its tenth push one out
    counts = np.bincount(np.random.default_rng(bench.SEED).integers(0, 50, 3000), minlength=50)
    expected = 3000 + int(np.maximum(counts - 10, 0).sum())
    assert stream["output_rows"] == batch["output_rows"] == expected
    # the state: each key's last ten events (keys seen fewer times keep all); the last event among them
    # stands for the clock (no `advance` row)
    assert stream["state_rows"] == int(np.minimum(counts, 10).sum()) and stream["state_bytes"] > 0
    assert stream["events_per_s"] > 0 and stream["steady_events_per_s"] > 0
    assert stream["jvm_peak_bytes"] > 0
    assert (batch["mode"], batch["events"]) == ("batch", 3000) and batch["seconds"] > 0
    assert latency["mode"] == "latency" and len(latency["latencies"]) == 2 and latency["events"] == 2_000 + 2_000
    out = capsys.readouterr().out
    assert f"#groupwin(k)#length(10) (1,000 rows per micro-batch): output rows, stream {expected:,d}, " \
           f"batch {expected:,d}" in out
    assert "a 1,000-row micro-batch after a first of 2,000 events: median" in out
