"""Errors of the Spark implementation itself, beside the oracle's user-input errors
(`oracle.errors`: InvalidTrace, UnsupportedWindow, ...), which it raises too."""

from __future__ import annotations

from oracle.errors import WindowOracleError


class SparkUnavailable(WindowOracleError):
    """Spark cannot start or be reached here: no Java to run its JVM, a master or
    Spark Connect URL of an unknown form or where nothing (or the wrong thing)
    answers, a second session in one process (`spark_impl.session`)."""


class InvalidFrame(WindowOracleError):
    """An input DataFrame without a column the window needs, or with a column of
    the wrong type; the message names the column."""


class JobFailed(WindowOracleError):
    """A Spark job of `run_cases` that failed: every case of that job gets it, the
    other jobs run."""
