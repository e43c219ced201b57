"""The cluster lane (marker `cluster`; the default run leaves it out, README
"Running on a cluster" gives its command): the project's Spark work on a
standalone cluster of this machine (a master and two workers of one core and
2 GB, `standalone.Cluster`) and through a Spark Connect server on it, compared
row for row with local[2].

Each run of Spark is a process of its own (`rows.py`, the `difftest` command):
a process holds one SparkContext, and a Connect client no classic session. The
local[2] reference rows are made once per session. The Connect server holds
both workers' cores while it runs, so it is started by the Connect tests'
module and stopped at its end (a classic application started meanwhile would
wait for cores).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))  # rows.py, standalone.py, checks.py
ROOT = HERE.parents[1]
OBSERVED = ROOT.parent / "shared" / "esper-observed"
GENERATED_SEED = 29
#: what the lane replays: the corpus and the cases observed on a real Esper
REPLAYED = (ROOT / "corpus", OBSERVED)


def pytest_collection_modifyitems(config, items):
    """Mark this folder's tests `cluster`; leave them out (deselected, not skipped)
    unless the run's `-m` names the marker: `pytest -m cluster -p no:xdist`."""
    ours = [item for item in items if HERE in Path(item.fspath).parents]
    for item in ours:
        item.add_marker(pytest.mark.cluster)
    if ours and "cluster" not in (config.getoption("markexpr") or ""):
        config.hook.pytest_deselected(items=ours)
        items[:] = [item for item in items if item not in ours]


def python_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED",
                                                            "PYTEST_XDIST_WORKER")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env.update(extra)
    return env


def run(argv: list[str], timeout: float = 1800, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=ROOT, env=python_env(**env), capture_output=True, text=True, timeout=timeout)


def output_rows(out: Path, *where: str) -> dict:
    """rows.py's file for the replayed cases and the generated batch, Spark on `where`."""
    missing = [str(p) for p in REPLAYED if not p.is_dir()]
    assert not missing, f"the lane replays {missing}, which is not there"
    done = run([sys.executable, str(HERE / "rows.py"), str(out), *map(str, REPLAYED),
                "--generated", str(GENERATED_SEED), *where])
    assert done.returncode == 0, done.stdout + done.stderr[-5000:]
    return json.loads(out.read_text())


@pytest.fixture(scope="session")
def local_rows(tmp_path_factory) -> dict:
    return output_rows(tmp_path_factory.mktemp("local") / "rows.json")


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    from standalone import Cluster

    with Cluster(workers=2, cores=1, memory="2g", folder=tmp_path_factory.mktemp("cluster")) as started:
        yield started


@pytest.fixture(scope="session")
def local_run(tmp_path_factory) -> dict:
    """The cluster lane's `difftest run` (checks.RUN) on local[2]: its JSON report."""
    from checks import RUN, assert_run_report

    out = tmp_path_factory.mktemp("local-run")
    done = run([sys.executable, *RUN, "--report", str(out / "run.json"), "--found-dir", str(out / "found")])
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-5000:]
    return assert_run_report(out / "run.json")
