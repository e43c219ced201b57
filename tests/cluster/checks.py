"""Assertions the cluster lane's modules share: rows equal to local[2]'s, and a
`difftest run` of every dialect without a mismatch."""

from __future__ import annotations

import json
from pathlib import Path


def assert_same_rows(local: dict, other: dict) -> None:
    """Same cases, verdicts and output rows as local[2]; every replayed case passes."""
    assert other["cases"] == local["cases"]
    assert len(local["cases"]) >= 1300  # the corpus, esper-observed, and the generated batch
    assert other["unsupported"] == local["unsupported"]
    bad = {name: v for name, v in other["verdicts"].items() if v != "PASS" and not name.startswith("generated/")}
    assert not bad, f"{len(bad)} replayed cases did not pass on {other['master']}: {list(bad.items())[:5]}"
    assert other["verdicts"] == local["verdicts"]
    assert len(other["rows"]) == len(local["rows"]) > 3000
    differ = [(a, b) for a, b in zip(local["rows"], other["rows"]) if a != b]
    assert not differ, f"{len(differ)} rows differ from local[2]'s, the first:\n{differ[0][0]}\n{differ[0][1]}"


#: a batch of 4 traces of one window per kind of every dialect (one Spark job each)
RUN = ["-m", "difftest", "run", "--dialect", "all", "--examples", "4", "--batch-size", "8", "--budget", "100000",
       "--seed", "29", "--in-flight", "2"]


def assert_run_report(path: Path, local: dict | None = None) -> dict:
    """A `difftest run` (RUN) of every dialect without a mismatch or an error; with
    `local`, the same kinds, windows, cases and updates compared as on local[2]
    (a fixed seed and no budget limit draw the same batches)."""
    report = json.loads(path.read_text())
    assert report["mismatches"] == 0 and not report["errors"], (report["mismatches"], report["errors"])
    assert set(report["dialects"]) == {"esper", "ccl", "apama", "kuiper"}
    assert len(report["kinds"]) >= 90 and report["updates_compared"] > 1000
    if local is not None:
        keys = ("kind", "batches", "windows", "cases", "events", "updates_compared", "rejected", "unsupported")
        assert [{k: s[k] for k in keys} for s in report["kinds"]] == [{k: s[k] for k in keys} for s in local["kinds"]]
    return report
