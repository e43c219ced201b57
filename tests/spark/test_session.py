"""Where Spark runs (spark_impl.session, spark_impl.urls): a master or Connect URL
of an unknown form, or one where nothing (or the wrong thing) answers, is one
sentence before any JVM starts; the `difftest` commands print it and exit 2;
the workers run the driver's Python unless the user chose another."""

from __future__ import annotations

import http.server
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from spark_impl import urls
from spark_impl.errors import SparkUnavailable
from spark_impl.session import get_spark, workers_python

ROOT = Path(__file__).resolve().parents[2]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again: nothing listens there


@pytest.fixture
def silent_port():
    """A port that accepts connections and never answers (neither HTTP nor gRPC)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    yield server.getsockname()[1]
    server.close()


@pytest.fixture
def http_port():
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


@pytest.mark.parametrize("url", ["local", "local[2]", "local[*]", "local[4,2]", "yarn", "k8s://https://h:6443",
                                 " local[2] "])
def test_master_forms_spark_reads(url):
    assert urls.check_master(url) == url.strip()


def test_master_urls_refused(http_port, silent_port):
    port = closed_port()
    cases = {
        "foo://bar": "unknown Spark master URL 'foo://bar': expected spark://HOST:PORT, local[N], yarn or k8s://HOST:PORT",
        "local[two]": "unknown Spark master URL 'local[two]'",
        "spark://nohost": "the master URL 'spark://nohost' has no port: expected HOST:PORT",
        "spark://h:99999": "the master URL 'spark://h:99999' does not name HOST:PORT ('h:99999')",
        f"spark://127.0.0.1:{port}": f"cannot reach the Spark master spark://127.0.0.1:{port} "
                                     f"(127.0.0.1:{port}: Connection refused); is the master running there?",
        f"spark://127.0.0.1:{http_port}": f"127.0.0.1:{http_port} answers HTTP: a web UI, not a Spark master's RPC port",
    }
    for url, message in cases.items():
        with pytest.raises(SparkUnavailable) as raised:
            urls.check_master(url)
        assert str(raised.value).startswith(message), (url, str(raised.value))
    assert urls.check_master(f"spark://127.0.0.1:{port},127.0.0.1:{silent_port}")  # one master of two answers


def test_connect_urls_refused(silent_port, monkeypatch):
    monkeypatch.setattr(urls, "TIMEOUT", 1.0)
    port = closed_port()
    cases = {
        "http://h:15002": "a Spark Connect URL is sc://HOST[:PORT], not 'http://h:15002'",
        "sc://": "a Spark Connect URL is sc://HOST[:PORT], not 'sc://'",
        f"sc://127.0.0.1:{port}": f"cannot reach the Spark Connect server at 127.0.0.1:{port} (Connection refused)",
        f"sc://127.0.0.1:{silent_port}/;user_id=me": f"127.0.0.1:{silent_port} answers but is not a Spark Connect "
                                                     "server (no gRPC channel within 1 s)",
    }
    for url, message in cases.items():
        with pytest.raises(SparkUnavailable) as raised:
            urls.check_remote(url)
        assert str(raised.value).startswith(message), (url, str(raised.value))


def test_one_place_to_run(monkeypatch):
    with pytest.raises(SparkUnavailable, match="give a Spark master URL or a Spark Connect URL, not both"):
        get_spark(master="local[2]", remote="sc://h")
    monkeypatch.setenv("SPARK_REMOTE", "sc://somewhere:15002")
    with pytest.raises(SparkUnavailable, match=r"SPARK_REMOTE is set \(sc://somewhere:15002\), so pyspark builds "
                                               "Spark Connect sessions only; unset it to run on the master local"):
        get_spark(master="local[2]")


def test_workers_python_is_the_drivers_unless_chosen(monkeypatch):
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    assert workers_python({}) == sys.executable
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/py/bin/python3")
    assert workers_python({}) == "/opt/py/bin/python3"
    assert workers_python({"spark.pyspark.python": "/srv/python"}) == "/srv/python"


def test_the_session_runs_its_workers_in_this_interpreter(spark):
    if "PYSPARK_PYTHON" not in os.environ:
        assert spark.sparkContext.pythonExec == sys.executable


@pytest.mark.parametrize("option", ["--master", "--remote"])
def test_difftest_names_an_unreachable_place_in_one_line(option):
    url = f"{'spark' if option == '--master' else 'sc'}://127.0.0.1:{closed_port()}"
    done = subprocess.run([sys.executable, "-m", "difftest", "replay", "--engine", "spark", option, url,
                           "corpus/esper/observed"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if k != "SPARK_REMOTE"})
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("difftest replay: cannot reach the Spark ")


def test_difftest_refuses_a_master_where_no_spark_runs():
    done = subprocess.run([sys.executable, "-m", "difftest", "replay", "--master", "local[2]", "corpus/esper/observed"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr == ("difftest replay: --master applies where Spark runs: --engine spark or both, or --impl\n")
