"""The project's Spark work on a standalone cluster (a master and two workers of
one core each, started by the `cluster` fixture): the corpus, Esper's observed
cases and a generated batch of every dialect give the same rows as local[2],
and the `difftest` commands run there with `--master`."""

from __future__ import annotations

import re
import sys

from checks import RUN, assert_run_report, assert_same_rows
from conftest import ROOT, output_rows, run


def test_replayed_and_generated_rows_equal_local(cluster, local_rows, tmp_path):
    rows = output_rows(tmp_path / "rows.json", "--master", cluster.url)
    assert rows["master"] == cluster.url
    assert_same_rows(local_rows, rows)


def test_difftest_replay_on_the_cluster(cluster):
    """The command's path (the whole corpus ran above, through the same `run_cases`)."""
    done = run([sys.executable, "-m", "difftest", "replay", "--engine", "spark", "--master", cluster.url, "corpus/ccl"])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    cases = len(list((ROOT / "corpus" / "ccl").rglob("*.json")))
    assert re.search(rf"^{cases} passed, 0 failed$", done.stdout, re.M), done.stdout[-500:]


def test_difftest_run_of_every_dialect_on_the_cluster(cluster, local_run, tmp_path):
    done = run([sys.executable, *RUN, "--master", cluster.url, "--report", str(tmp_path / "run.json"),
                "--found-dir", str(tmp_path / "found")])
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-5000:]
    assert_run_report(tmp_path / "run.json", local_run)


def test_bench_on_the_cluster(cluster):
    done = run([sys.executable, "-m", "difftest", "bench", "--engine", "spark", "--master", cluster.url,
                "--events", "20000", "--repeat", "1", "--window", "#groupwin(k)#length(10)"])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f", {cluster.url}, " in done.stdout.splitlines()[0]
    assert re.search(r"^#groupwin\(k\)#length\(10\)\s+20,000\s+\d+\.\d\d", done.stdout, re.M), done.stdout


def test_a_second_master_in_one_process_is_one_sentence(cluster):
    code = ("from spark_impl.session import get_spark\nget_spark()\n"
            f"get_spark(master={cluster.url!r})\n")
    done = run([sys.executable, "-c", code])
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == (f"spark_impl.errors.SparkUnavailable: this process already runs a Spark session on local[2]; "
                    f"Spark runs one SparkContext per process, so a session on {cluster.url} needs a process of its own")
