"""The installed `difftest` run from a venv that is not activated (`.venv/bin/difftest`,
PATH without the venv, so `python3` on PATH is another interpreter, without
pyarrow): its Spark workers run the venv's interpreter, and cases of every
grouped-map (Arrow) kernel pass: each such kernel imports pyarrow in a worker,
so one case per kernel proves where the workers run (the whole corpus is
replayed on Spark by tests/spark/test_spark_corpus.py).
Before, they ran `python3` from PATH and every grouped-map kernel failed with
`ModuleNotFoundError: No module named 'pyarrow'` (issue 29)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: one case per grouped-map kernel: statistics, #expr, #time_length_batch, #rank,
#: intersections, eKuiper's sliding, count and session panes, an Apama window
KERNEL_CASES = (
    "corpus/esper/weighted_avg-zero-weight-nan.json", "corpus/esper/observed/expr_timestamp-jump-1.json",
    "corpus/esper/time_length_batch-start-eager-from-creation.json", "corpus/esper/groupwin-rank-per-group.json",
    "corpus/esper/observed/unique_time_intersection-jump-1.json", "corpus/kuiper/sliding-event-delay-pane-bounds.json",
    "corpus/kuiper/count-filter-error-is-not-counted.json", "corpus/kuiper/session-event-tick-and-timeout.json",
)


def test_difftest_from_a_venv_not_activated_passes_every_kernel(tmp_path):
    difftest = Path(sys.executable).parent / "difftest"
    assert difftest.is_file(), f"{difftest}: the project is installed in the venv of {sys.executable}"
    bare_path = os.pathsep.join(p for p in ("/usr/bin", "/bin") if Path(p).is_dir())
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_REMOTE", "PYTEST_XDIST_WORKER")}
    env["PATH"] = bare_path
    if not env.get("JAVA_HOME") and shutil.which("java", path=bare_path) is None:  # keep Java reachable
        env["JAVA_HOME"] = str(Path(os.path.realpath(shutil.which("java"))).parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    cases = [*KERNEL_CASES, *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "corpus" / "apama").glob("*.json"))[:1]]
    assert all((ROOT / case).is_file() for case in cases), [c for c in cases if not (ROOT / c).is_file()]
    done = subprocess.run([str(difftest), "replay", "--engine", "spark", *cases], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert re.search(rf"^{len(cases)} passed, 0 failed$", done.stdout, re.M), done.stdout[-500:]
