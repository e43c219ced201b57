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


def await_termination(query, timeout: float | None = None) -> bool | None:
    """`query.awaitTermination(timeout)`, but a query stopped by an exception
    raises `StreamFailed` naming its cause first."""
    from pyspark.errors import StreamingQueryException

    try:
        return query.awaitTermination(timeout) if timeout is not None else query.awaitTermination()
    except StreamingQueryException as exc:
        raise StreamFailed(f"{failure_sentence(exc)} (streaming query {query.name or query.id} stopped)") from exc
