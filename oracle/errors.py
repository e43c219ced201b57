"""The errors a user can cause: a bad window clause, a bad parameter, a bad trace.

Each names the place (the column of a clause, the index of a trace item) so the
command line can print one clear sentence instead of a traceback.
"""

from __future__ import annotations


class WindowOracleError(Exception):
    """Base of every error caused by user input."""


class WindowSyntaxError(WindowOracleError):
    """A window clause that does not parse. `column` is 1-based."""

    def __init__(self, message: str, text: str, column: int):
        self.message = message
        self.text = text
        self.column = column
        caret = " " * (max(column, 1) - 1) + "^"
        super().__init__(f"{message} at column {column}\n  {text}\n  {caret}")


class InvalidSpec(WindowOracleError):
    """A window that parses but cannot exist: an unknown name, size 0, a flow-control
    word that does not exist, a window the dialect does not allow where it stands."""


class UnsupportedWindow(WindowOracleError):
    """A well-formed window that this implementation does not run (yet)."""


class InvalidTrace(WindowOracleError):
    """A trace the window cannot run: time going backwards, a duplicate or missing
    id, an unknown item. `index` is the position of the item in the trace."""

    def __init__(self, message: str, index: int | None = None):
        self.index = index
        self.reason = message
        where = f"trace item {index}: " if index is not None else ""
        super().__init__(where + message)


class InvalidCase(WindowOracleError):
    """A conformance case file that cannot be read: bad JSON, a missing key."""
