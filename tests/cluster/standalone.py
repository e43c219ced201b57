"""A Spark standalone cluster (a master and workers) and a Spark Connect server,
started on this machine from the installed pyspark, and stopped.

Rules:

* Spark is the installed pyspark's (`pyspark.find_spark_home`), never another
  Spark on the machine: `$SPARK_HOME/bin/spark-class` runs the master and the
  workers, `$SPARK_HOME/bin/spark-submit` the Connect server (its jar,
  `spark-connect_2.13`, is among pyspark's jars).
* Everything listens on 127.0.0.1 on ports found free when it starts (the web
  UIs too: the master's JSON status tells when every worker has registered).
* Every process gets the caller's environment (so `PYTHONPATH` reaches the
  executors' Python workers) plus `PYSPARK_PYTHON`, the caller's interpreter
  unless set: the Connect server's Python functions run with its environment's
  `PYSPARK_PYTHON`, whatever the client asks.
* Each process leads a process group of its own, and `stop()` ends the group
  (SIGTERM, then SIGKILL after 15 s), ignoring SIGTERM itself meanwhile (`timeout`
  signals its whole group: a second SIGTERM must not cut the stopping short):
  no JVM is left behind. A process that
  exits or does not get ready in time is an error quoting the end of its log.
* Run as a script it starts a master and two workers (and with `--connect` a
  Connect server on them), prints their URLs and waits for Ctrl-C.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

#: settings the Connect server's sessions start with (runtime ones a client could set too)
CONNECT_CONF = {
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.buffer.pageSize": "2m",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.ui.enabled": "false",
    "spark.sql.ui.retainedExecutions": "20",
    "spark.ui.retainedJobs": "50",
    "spark.ui.retainedStages": "50",
    "spark.ui.retainedTasks": "2000",
}


def spark_home() -> Path:
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


class ClusterError(RuntimeError):
    """A process of the cluster that exited or did not get ready in time."""


class Process:
    """One JVM, its log file, and how to end it."""

    def __init__(self, name: str, argv: list[str], log: Path, env: dict[str, str]):
        self.name, self.log = name, log
        with open(log, "wb") as out:
            self.popen = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env,
                                          stdin=subprocess.DEVNULL, start_new_session=True)

    def check_alive(self) -> None:
        if self.popen.poll() is not None:
            raise ClusterError(f"the {self.name} exited with code {self.popen.returncode}:\n{self.tail()}")

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.popen.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
            try:
                os.killpg(self.popen.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.popen.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue


def wait_until(ready, processes: list[Process], what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        for p in processes:
            p.check_alive()
        if time.monotonic() > deadline:
            raise ClusterError(f"{what} not ready after {timeout:.0f} s:\n" + "\n".join(p.tail() for p in processes))
        time.sleep(0.5)


class Cluster:
    """A master and `workers` workers of `cores` cores and `memory` each; `url` is
    the master's `spark://127.0.0.1:PORT`. A context manager: stopped on exit."""

    def __init__(self, workers: int = 2, cores: int = 1, memory: str = "2g", folder: Path | None = None):
        self.folder = Path(folder or tempfile.mkdtemp(prefix="window-oracle-cluster-"))
        self.home = spark_home()
        self.env = environment(self.folder)
        self.port, self.ui = free_port(), free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.processes: list[Process] = []
        self.connect_port: int | None = None
        try:
            self._start(workers, cores, memory)
        except BaseException:
            self.stop()
            raise

    def _class(self, name: str, main: str, *args: str) -> Process:
        argv = [str(self.home / "bin" / "spark-class"), main, *args]
        process = Process(name, argv, self.folder / f"{name.replace(' ', '-')}.log", self.env)
        self.processes.append(process)
        return process

    def _start(self, workers: int, cores: int, memory: str) -> None:
        master = self._class("master", "org.apache.spark.deploy.master.Master",
                             "--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(self.ui))
        wait_until(lambda: listening(self.port), [master], "the master", 60)
        for n in range(workers):
            work = self.folder / f"worker-{n}"
            work.mkdir()
            self._class(f"worker {n}", "org.apache.spark.deploy.worker.Worker", self.url, "--host", "127.0.0.1",
                        "--cores", str(cores), "--memory", memory, "--webui-port", str(free_port()),
                        "--work-dir", str(work))
        wait_until(lambda: self.alive_workers() >= workers, self.processes, f"{workers} workers", 90)

    def alive_workers(self) -> int:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui}/json/", timeout=2) as answer:
                return int(json.load(answer).get("aliveworkers", 0))
        except (OSError, ValueError):
            return 0

    def start_connect(self, conf: dict[str, str] | None = None) -> str:
        """A Connect server whose sessions run on this cluster; its `sc://` URL."""
        self.connect_port = free_port()
        settings = {**CONNECT_CONF, **(conf or {}), "spark.connect.grpc.binding.port": str(self.connect_port),
                    "spark.connect.grpc.binding.address": "127.0.0.1", "spark.driver.host": "127.0.0.1"}
        argv = [str(self.home / "bin" / "spark-submit"), "--master", self.url,
                "--class", "org.apache.spark.sql.connect.service.SparkConnectServer", "--name", "window-oracle-connect"]
        for key, value in settings.items():
            argv += ["--conf", f"{key}={value}"]
        server = Process("connect server", argv, self.folder / "connect-server.log", self.env)
        self.processes.append(server)
        wait_until(lambda: listening(self.connect_port), [server], "the Connect server", 300)
        return self.connect_url

    @property
    def connect_url(self) -> str:
        return f"sc://127.0.0.1:{self.connect_port}"

    def stop_connect(self) -> None:
        for p in [p for p in self.processes if p.name == "connect server"]:
            p.stop()
            self.processes.remove(p)

    def stop(self) -> None:
        """End every process, the later started first; a signal arriving meanwhile
        (a second SIGTERM from `timeout`) is held off until all are stopped."""
        previous = signal.signal(signal.SIGTERM, signal.SIG_IGN) if _main_thread() else None
        try:
            for process in reversed(self.processes):
                process.stop()
            self.processes.clear()
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def environment(folder: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.update(SPARK_LOCAL_IP="127.0.0.1", SPARK_LOG_DIR=str(folder), SPARK_PID_DIR=str(folder),
               SPARK_NO_DAEMONIZE="1")
    for name in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "PYSPARK_SUBMIT_ARGS"):
        env.pop(name, None)
    return env


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # `timeout`, `kill`: stop the JVMs too
    with Cluster() as cluster:
        print(f"master: {cluster.url} (web UI http://127.0.0.1:{cluster.ui}), logs in {cluster.folder}", flush=True)
        if "--connect" in sys.argv:
            print(f"connect: {cluster.start_connect()}", flush=True)
        try:
            signal.pause()
        except (KeyboardInterrupt, SystemExit):
            pass


if __name__ == "__main__":
    main()
