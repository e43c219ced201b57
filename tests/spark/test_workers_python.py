"""The installed `difftest` run from a venv that is not activated (`.venv/bin/difftest`,
PATH without the venv, so `python3` on PATH is another interpreter, without
pyarrow): its Spark workers run the venv's interpreter, and the corpus passes.
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


def test_difftest_from_a_venv_not_activated_passes_the_corpus(tmp_path):
    difftest = Path(sys.executable).parent / "difftest"
    assert difftest.is_file(), f"{difftest}: the project is installed in the venv of {sys.executable}"
    bare_path = os.pathsep.join(p for p in ("/usr/bin", "/bin") if Path(p).is_dir())
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_REMOTE", "PYTEST_XDIST_WORKER")}
    env["PATH"] = bare_path
    if not env.get("JAVA_HOME") and shutil.which("java", path=bare_path) is None:  # keep Java reachable
        env["JAVA_HOME"] = str(Path(os.path.realpath(shutil.which("java"))).parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    done = subprocess.run([str(difftest), "replay", "--engine", "spark", "corpus"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    cases = len(list((ROOT / "corpus").rglob("*.json")))
    assert re.search(rf"^{cases} passed, 0 failed$", done.stdout, re.M), done.stdout[-500:]
