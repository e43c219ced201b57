"""The project's Spark work through Spark Connect (a server on the standalone
cluster, started for this module and stopped at its end): the same rows as
local[2], the `difftest` commands with `--remote` and `SPARK_REMOTE`, and the
public functions called from a thin client as the README shows."""

from __future__ import annotations

import json
import re
import sys

import pytest

from checks import RUN, assert_run_report, assert_same_rows
from conftest import ROOT, output_rows, run


@pytest.fixture(scope="module")
def connect(cluster):
    url = cluster.start_connect({"spark.connect.session.planCache.maxSize": "1024"})
    yield url
    cluster.stop_connect()


def test_replayed_and_generated_rows_equal_local(connect, cluster, local_rows, tmp_path):
    rows = output_rows(tmp_path / "rows.json", "--remote", connect)
    assert rows["master"] == cluster.url  # the server's sessions run on the cluster
    assert_same_rows(local_rows, rows)


def test_difftest_replay_through_spark_remote(connect):
    done = run([sys.executable, "-m", "difftest", "replay", "--engine", "both", "corpus/kuiper", "corpus/apama"],
               SPARK_REMOTE=connect)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    cases = len(list((ROOT / "corpus" / "kuiper").rglob("*.json"))) + len(list((ROOT / "corpus" / "apama").rglob("*.json")))
    assert re.search(rf"^{cases} passed, 0 failed$", done.stdout, re.M), done.stdout[-500:]


def test_difftest_run_of_every_dialect_over_connect(connect, local_run, tmp_path):
    done = run([sys.executable, *RUN, "--remote", connect, "--report", str(tmp_path / "run.json"),
                "--found-dir", str(tmp_path / "found")])
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-5000:]
    assert_run_report(tmp_path / "run.json", local_run)


CLIENT = """
import json, sys
from pyspark.sql import SparkSession
from oracle import parse, run
from oracle.model import Advance, Arrive, Event, Trace
from spark_impl import apply_window, apply_window_to_events, frames
from spark_impl.session import get_spark, interpreted

spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
assert get_spark() is spark
trace = Trace([Arrive(Event("E1", {"symbol": "IBM"})), Arrive(Event("E2", {"symbol": "MSFT"}), time=500),
               Advance(2500)])
df = frames.to_dataframe(spark, [("t1", trace)])
with interpreted(spark):
    out = apply_window(df, "#groupwin(symbol)#time_batch(1 sec)")
    posted = [(r.after, r.time, r.side, r.id) for r in
              out.orderBy("trace_id", "after", "phase", "time", "ordinal", "side", "pos").collect()]
expected = [(u.after, u.time, side, e.id) for u in run(parse("#groupwin(symbol)#time_batch(1 sec)"), trace)
            for side, events in (("insert", u.insert), ("remove", u.remove)) for e in events]
events = spark.createDataFrame([(1, 0, "IBM"), (2, 500, "MSFT")], "n long, t long, symbol string")
table = apply_window_to_events(events, "#groupwin(symbol)#time_batch(1 sec)", order_col="n", time_col="t", until=2500)
tabled = sorted((r.time, r.side, r.symbol) for r in table.collect())
bad = spark.createDataFrame([(1, 600, "IBM"), (2, 500, "MSFT")], "n long, t long, symbol string")
try:
    apply_window_to_events(bad, "#length(2)", order_col="n", time_col="t")
    refused = None
except Exception as exc:
    refused = f"{type(exc).__name__}: {exc}"
print(json.dumps({"posted": posted, "expected": expected, "tabled": tabled, "refused": refused,
                  "codegen": spark.conf.get("spark.sql.codegen.wholeStage")}))
"""


def test_public_functions_from_a_connect_client(connect):
    done = run([sys.executable, "-c", CLIENT, connect], timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["posted"] == [list(p) for p in got["expected"]] and len(got["posted"]) == 4
    assert got["tabled"] == [[1000, "insert", "IBM"], [1500, "insert", "MSFT"], [2000, "remove", "IBM"],
                             [2500, "remove", "MSFT"]]
    assert got["refused"].startswith("InvalidFrame: time_col 't' goes back along order_col 'n'"), got["refused"]
    assert got["codegen"] == "true"  # `interpreted` restored the server's setting


def test_bench_over_connect(connect):
    done = run([sys.executable, "-m", "difftest", "bench", "--engine", "spark", "--remote", connect,
                "--events", "20000", "--repeat", "1", "--window", "#time(10 sec)"])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert re.search(r"^#time\(10 sec\)\s+20,000\s+\d+\.\d\d .* \d+ \+ \d+ bc", done.stdout, re.M), done.stdout
    assert "peak JVM resident memory: unknown (a Spark Connect session)" in done.stdout
