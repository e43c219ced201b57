"""Where a session runs: checks of a master URL and a Spark Connect URL, made
before any JVM or gRPC channel starts, so a mistake is one sentence in seconds.

Rules:

* A master is `local`, `local[N]`, `local[*]`, `local[N,F]`, `local-cluster[...]`,
  `spark://HOST:PORT[,HOST:PORT...]`, `yarn`, or `k8s://...`; anything else is
  refused naming those forms. A `spark://` master must answer on one of its
  ports (a TCP connection within `TIMEOUT` seconds), and not with HTTP (the
  master's web UI, 8080, given for its RPC port, 7077): Spark itself would
  retry registering for a minute, then fail with a stack trace.
* A Connect URL is `sc://HOST[:PORT][/;key=value...]` (port 15002 by default,
  as pyspark reads it); the server must answer on that port, and (without
  `use_ssl`) speak gRPC: an HTTP/2 channel must be ready within `TIMEOUT`
  seconds. The Connect client would otherwise retry with back-off for minutes
  against a port that is open but not a Connect server's.
* Other masters (`yarn`, `k8s://`) are left to Spark: where they run is in the
  user's Hadoop or Kubernetes configuration, not in the URL.
"""

from __future__ import annotations

import re
import socket
from urllib.parse import urlsplit

from spark_impl.errors import SparkUnavailable

TIMEOUT = 5.0
CONNECT_PORT = 15002
_LOCAL = re.compile(r"local(\[(\d+|\*)(,\d+)?\])?|local-cluster\[\d+,\s*\d+,\s*\d+\]")
MASTER_FORMS = "spark://HOST:PORT, local[N], yarn or k8s://HOST:PORT"


def reachable(host: str, port: int, timeout: float | None = None) -> str | None:
    """None when something accepts a TCP connection at host:port, else why not."""
    timeout = TIMEOUT if timeout is None else timeout
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except socket.timeout:
        return f"no answer within {timeout:g} s"
    except OSError as exc:
        return exc.strerror or str(exc)


def _host_port(text: str, default: int | None, url: str, what: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":") if ":" in text else (text, "", "")
    if not sep:
        if default is None:
            raise SparkUnavailable(f"the {what} URL {url!r} has no port: expected HOST:PORT")
        return text, default
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise SparkUnavailable(f"the {what} URL {url!r} does not name HOST:PORT ({text!r})")
    return host.strip("[]"), int(port)


def check_master(url: str) -> str:
    """The master URL, stripped, once it is of a known form and, for `spark://`,
    answers; else `SparkUnavailable` saying which."""
    url = url.strip()
    if _LOCAL.fullmatch(url) or url == "yarn" or url.startswith("k8s://"):
        return url
    if not url.startswith("spark://"):
        raise SparkUnavailable(f"unknown Spark master URL {url!r}: expected {MASTER_FORMS}")
    masters = [_host_port(part, None, url, "master") for part in url.removeprefix("spark://").split(",")]
    reasons = [f"{host}:{port}: {why}" for host, port in masters if (why := reachable(host, port))]
    if len(reasons) == len(masters):
        raise SparkUnavailable(f"cannot reach the Spark master {url} ({'; '.join(reasons)}); "
                               "is the master running there?")
    web = [f"{host}:{port}" for host, port in masters if answers_http(host, port)]
    if web:
        raise SparkUnavailable(f"{web[0]} answers HTTP: a web UI, not a Spark master's RPC port (the master "
                               "prints both when it starts: `Starting Spark master at spark://HOST:PORT`)")
    return url


def answers_http(host: str, port: int, timeout: float = 2.0) -> bool:
    """Whether host:port answers an HTTP request (a Spark RPC port closes or stays silent)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(b"GET / HTTP/1.0\r\nHost: " + host.encode() + b"\r\n\r\n")
            return s.recv(5) == b"HTTP/"
    except OSError:
        return False


def check_remote(url: str) -> str:
    """The Spark Connect URL, stripped, once it is `sc://...` and its server
    answers; else `SparkUnavailable` saying which."""
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme != "sc" or not parts.netloc:
        raise SparkUnavailable(f"a Spark Connect URL is sc://HOST[:PORT], not {url!r}")
    host, port = _host_port(parts.netloc, CONNECT_PORT, url, "Spark Connect")
    why = reachable(host, port)
    if why:
        raise SparkUnavailable(f"cannot reach the Spark Connect server at {host}:{port} ({why}); "
                               "is the server running there?")
    if "use_ssl=true" not in parts.path.lower() and not speaks_grpc(host, port):
        raise SparkUnavailable(f"{host}:{port} answers but is not a Spark Connect server (no gRPC channel within "
                               f"{TIMEOUT:g} s); is that the server's port (spark.connect.grpc.binding.port)?")
    return url


def speaks_grpc(host: str, port: int, timeout: float | None = None) -> bool:
    """Whether an insecure gRPC (HTTP/2) channel to host:port gets ready in time
    (`TIMEOUT` seconds by default)."""
    timeout = TIMEOUT if timeout is None else timeout
    try:
        import grpc
    except ImportError:
        raise SparkUnavailable("Spark Connect needs pyspark's connect extras (grpcio ...): "
                               "pip install 'window-oracle[connect]'") from None

    channel = grpc.insecure_channel(f"{host}:{port}")
    try:
        grpc.channel_ready_future(channel).result(timeout=timeout)
        return True
    except grpc.FutureTimeoutError:
        return False
    finally:
        channel.close()
