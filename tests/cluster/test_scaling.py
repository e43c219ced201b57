"""`scaling.py` runs the stream on one worker and on two and prints both (its figures are measured by
running it, README "On a stream"; here a small input checks the script, not the speed)."""

from __future__ import annotations

import re
import sys

from conftest import HERE, run


def test_scaling_prints_one_and_two_workers(tmp_path):
    report = tmp_path / "scaling.json"
    done = run([sys.executable, str(HERE / "scaling.py"), "--events", "20000", "--batch-rows", "5000", "--keys", "100",
                "--memory", "2g", "--report", str(report)])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = re.findall(r"^\s+([12])\s+([12])\s+20,000\s+\d+\.\d\d\s+[\d,]+\s+[\d,]+\s+4\s+[\d,]+$", done.stdout, re.M)
    assert rows == [("1", "1"), ("2", "2")], done.stdout
    assert re.search(r"^2 workers over 1: \d+\.\d\dx end to end, \d+\.\d\dx steady \(target: 1\.7x\)$", done.stdout,
                     re.M), done.stdout
    import json

    runs = json.loads(report.read_text())["runs"]
    assert [r["workers"] for r in runs] == [1, 2] and all(r["events"] == 20_000 for r in runs)
    assert all(r["source_rows"] >= 20_000 for r in runs)  # every event was read (some twice, on two executors)
