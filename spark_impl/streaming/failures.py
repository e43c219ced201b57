"""A streaming query's failure, told by its cause.

A query whose processor refuses an item (a replayed seq, time going back, a
property of two kinds) stops with pyspark's `StreamingQueryException`: a
wrapper of some forty lines around a Python traceback, with the sentence that
matters (the trace, the seq, what is wrong) inside it. `await_termination`
waits for a query as `query.awaitTermination` does, and raises `StreamFailed`
instead, whose message starts with that sentence (`spark_impl.errors.cause`)."""

from __future__ import annotations

from oracle.errors import WindowOracleError
from spark_impl.errors import cause

#: the exception types of this project, whose names a failure's sentence leaves out
_OWN = ("InvalidTrace", "InvalidFrame", "InvalidSpec", "UnsupportedWindow", "WindowOracleError")


class StreamFailed(WindowOracleError):
    """A streaming query stopped by an exception; the message is its cause's
    sentence, `__cause__` the whole `StreamingQueryException`."""


def failure_sentence(exc: BaseException) -> str:
    """The cause of a failed query in one sentence: `trace 't1' seq 4: time goes
    backwards: ...`, or `ValueError: ...` for an exception not of this project."""
    found = cause(exc, limit=1000)
    kind, _, rest = found.partition(": ")
    return rest if kind in _OWN and rest else found


#: the window queries `streaming.apply_window` started, by the folder of updates the frame it returns reads
WINDOW_QUERIES: dict[str, object] = {}


def await_termination(query, timeout: float | None = None) -> bool | None:
    """`query.awaitTermination(timeout)`, but a query stopped by an exception
    raises `StreamFailed` naming its cause first. A query reading the frame
    `streaming.apply_window` returned fails so too when the window's own query
    fails (`WINDOW_QUERIES`): it is stopped, and `StreamFailed` names the
    window's cause; once it ends, the window's query is waited for until it has
    run what it had (or fails)."""
    import time

    from pyspark.errors import StreamingQueryException

    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while True:
            _raise_a_failed_window(query)
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            if query.awaitTermination(0.2 if left is None else min(0.2, left)):
                break
    except StreamingQueryException as exc:
        raise StreamFailed(f"{failure_sentence(exc)} (streaming query {query.name or query.id} stopped)") from exc
    for window in _windows_read_by(query):  # the reader ended: the window finishes what it has, or fails
        while window.isActive and (window.status.get("isDataAvailable") or window.status.get("isTriggerActive")):
            time.sleep(0.2)
            _raise_a_failed_window(query)
        _raise_a_failed_window(query)
    return True


def _windows_read_by(query) -> list:
    """The window queries whose updates `query` reads (by its sources' descriptions; every window query
    known while `query` has run no micro-batch)."""
    import json

    progress = query.recentProgress
    if not progress:
        return list(WINDOW_QUERIES.values())
    described = " ".join(json.dumps(json.loads(p.json if hasattr(p, "json") else json.dumps(p)).get("sources", []))
                         for p in progress)
    return [window for folder, window in WINDOW_QUERIES.items() if folder in described]


def _raise_a_failed_window(query) -> None:
    for window in _windows_read_by(query):
        failed = window.exception()
        if failed is not None:
            for folder in [f for f, w in WINDOW_QUERIES.items() if w is window]:
                del WINDOW_QUERIES[folder]  # told once
            query.stop()
            raise StreamFailed(f"{failure_sentence(failed)} (the window's streaming query {window.name or window.id} "
                               "stopped)") from failed
