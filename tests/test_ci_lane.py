"""The Spark lane cannot pass by skipping under CI: where Spark cannot start (no
Java), a run with `CI` set fails naming the cause, and a developer's run without
it skips (tests/spark/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SPARK_TEST = "tests/spark/test_spark_expr.py::test_variables_come_from_the_start_row_without_a_column"


def run_without_java(ci: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "CI", "PYTEST_XDIST_WORKER")}
    env["PATH"] = str(Path(sys.executable).parent)  # the venv's own tools, no `java`
    if ci:
        env["CI"] = "true"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", SPARK_TEST],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("ci, code, text", [
    (True, 1, "the Spark lane cannot run under CI: Spark needs Java"),
    (False, 0, "skipped"),
])
def test_spark_lane_without_java(ci, code, text):
    done = run_without_java(ci)
    assert done.returncode == code, done.stdout + done.stderr
    assert text in done.stdout
