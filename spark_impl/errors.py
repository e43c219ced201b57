"""Errors of the Spark implementation itself, beside the oracle's user-input errors
(`oracle.errors`: InvalidTrace, UnsupportedWindow, ...), which it raises too."""

from __future__ import annotations

import re

from oracle.errors import WindowOracleError


class SparkUnavailable(WindowOracleError):
    """Spark cannot start or be reached here: no Java to run its JVM, a master or
    Spark Connect URL of an unknown form or where nothing (or the wrong thing)
    answers, a second session in one process (`spark_impl.session`)."""


class InvalidFrame(WindowOracleError):
    """An input DataFrame without a column the window needs, or with a column of
    the wrong type; the message names the column."""


class WrongArgument(WindowOracleError, TypeError):
    """A public function given an argument of the wrong type (a list where a
    DataFrame belongs): one sentence naming the function and the argument."""


#: what each public function's frame argument is, for `check_frame`'s message
TRACE_FRAME = "a DataFrame of trace rows (spark_impl.frames.to_dataframe makes one from traces)"
EVENT_TABLE = "a DataFrame of events, one row per event"


def check_frame(value, function: str, argument: str, what: str) -> None:
    """Raise `WrongArgument` unless `value` is a Spark DataFrame (classic or
    Connect): `apply_window: trace_df must be a DataFrame of trace rows ...,
    got a list`."""
    from pyspark.sql import DataFrame

    if not isinstance(value, DataFrame):
        raise WrongArgument(f"{function}: `{argument}` must be {what}, got {described(value)}")


def described(value) -> str:
    """A value's type in words, with how to make a DataFrame of rows or of a pandas frame."""
    kind = type(value)
    if value is None:
        return "nothing (None)"
    if kind.__module__.startswith("pandas") and kind.__name__ == "DataFrame":
        return "a pandas DataFrame (spark.createDataFrame(pdf) makes a Spark one)"
    name = kind.__name__
    article = "an" if name[:1].lower() in "aeiou" else "a"
    rows = " (spark.createDataFrame(rows, schema) makes a DataFrame of rows)" if isinstance(value, (list, tuple)) else ""
    return f"{article} {name}{rows}"


class JobFailed(WindowOracleError):
    """A Spark job of `run_cases` that failed: every case of that job gets it, the
    other jobs run."""


#: a Java exception's class and message on one line: `org.apache.spark.SparkException: Job aborted ...`
_JAVA = re.compile(r"((?:[a-z_$][\w$]*\.)+[A-Z][\w$]*)(?::\s*(.*))?$")
#: a Python exception's line after a traceback: `ValueError: ...`, `pyarrow.lib.ArrowInvalid: ...`
_PYTHON = re.compile(r"((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)(?::\s*(.*))?$")
#: where a failed task's own exception starts in a stage failure's message
_TASK = re.compile(r"most recent failure: Lost task [^:]*\): ")
_SQLSTATE = re.compile(r"\s*SQLSTATE: \w+;?$")


def cause(exc: BaseException, limit: int = 300) -> str:
    """The exception's own cause as `Type: message` (one line, at most `limit`
    characters), not the wrapper Spark puts around it. Rules, first that applies:

    * a Python traceback in the text (a UDF's or `applyInPandas`'s exception,
      wrapped in a PythonException or a Py4JJavaError): the exception line
      after the last traceback, `ValueError: price 3 is not a price`;
    * a Java stack (`Py4JJavaError`: "An error occurred while calling
      o3.collectToPython."): the innermost exception that has a message: the
      last `Caused by:` with one, else a stage failure's task exception, else
      the first exception line;
    * else the exception's type and the first line of its message.

    Module and package paths are dropped from type names, and a trailing
    SQLSTATE too."""
    text = str(exc)
    lines = text.splitlines()
    found = _python_cause(lines) or _java_cause(lines) or _named(
        type(exc).__name__, next((line.strip() for line in lines if line.strip()), ""))
    return found[:limit]


def _named(type_name: str, message: str | None) -> str:
    message = _SQLSTATE.sub("", (message or "").strip()).rstrip(";")
    short = type_name.rsplit(".", 1)[-1]
    return f"{short}: {message}" if message else short


def _python_cause(lines: list[str]) -> str | None:
    starts = [n for n, line in enumerate(lines) if line.rstrip().endswith("Traceback (most recent call last):")]
    if not starts:
        return None
    for line in lines[starts[-1] + 1:]:
        if line[:1].isspace() or not line.strip():
            continue  # a frame (`  File ...`), its code or its carets
        match = _PYTHON.match(line.strip())
        return _named(match[1], match[2]) if match else line.strip()
    return None


def _java_cause(lines: list[str]) -> str | None:
    if not lines or not lines[0].startswith("An error occurred while calling"):
        return None
    found: list[tuple[str, str | None]] = []
    for line in lines[1:]:
        if line.startswith("Driver stacktrace:"):
            break
        line = line.removeprefix(": ").removeprefix("Caused by: ")
        if line[:1].isspace():
            continue  # a frame: `\tat org.apache...`, `\t... 21 more`
        for part in [line, *(line[m.end():] for m in _TASK.finditer(line))]:
            match = _JAVA.match(part)
            if match:
                found.append((match[1], _TASK.split(match[2] or "")[0]))
    with_message = [pair for pair in found if pair[1]]
    return _named(*(with_message or found)[-1]) if found else None
