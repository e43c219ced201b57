"""Each engine's window syntax, parsed into the one spec model and rendered back.

A dialect module has `parse(text)`, `render(spec)` and `name(spec)`. A case with
the `query` key (CORPUS.md) runs the query's spec: `case_spec(case)`; and
`case_fields(spec, dialect)` gives the `window` text and the `query` key back.
"""

from __future__ import annotations

import importlib

from typing import Any

from oracle.errors import InvalidCase, UnsupportedWindow
from oracle.model import WindowSpec
from oracle.stream_query import QUERY_SPECS

DIALECTS = ("esper", "ccl", "apama", "kuiper")
IMPLEMENTED = ("esper", "ccl", "apama")


def _module(dialect: str):
    if dialect not in DIALECTS:
        raise UnsupportedWindow(f"unknown dialect {dialect!r}; known: {', '.join(DIALECTS)}")
    if dialect not in IMPLEMENTED:
        raise UnsupportedWindow(f"the {dialect} dialect is not implemented yet; implemented: {', '.join(IMPLEMENTED)}")
    return importlib.import_module(f"oracle.dialects.{dialect}")


def parse(text: str, dialect: str = "esper") -> WindowSpec:
    """The spec of a window clause written in `dialect`'s syntax."""
    return _module(dialect).parse(text)


def render(spec: WindowSpec, dialect: str = "esper") -> str:
    """`spec` written in `dialect`'s syntax; `parse(render(s)) == s`."""
    return _module(dialect).render(spec)


def writes(spec: WindowSpec, dialect: str) -> bool:
    """Whether `dialect` can write `spec` (most kinds exist in one engine only:
    CCL has no intersection, Esper no keyed window)."""
    try:
        render(spec, dialect)
    except UnsupportedWindow:
        return False
    return True


def window_name(spec: WindowSpec, dialect: str = "esper") -> str:
    """A short, file-safe name of `spec`'s window in `dialect`'s words
    (`groupwin-time_batch`), for reports and the names of saved cases."""
    return _module(dialect).name(spec)


def case_spec(case) -> WindowSpec:
    """The spec a conformance case runs: its `window`, or with a `query` key the
    query, whose window must be the `window` key's. Raises `InvalidCase` for a
    `query` that is not a string or not a query, or whose window differs."""
    window = parse(case.window, case.dialect)
    if "query" not in case.extra:
        return window
    text = case.extra["query"]
    if not isinstance(text, str):
        raise InvalidCase(f"'query' must be a string, got {text!r}")
    query = parse(text, case.dialect)
    if not isinstance(query, QUERY_SPECS):
        raise InvalidCase(f"'query' must be a whole query, got {text!r}")
    if query.window != window:
        raise InvalidCase(f"the query's window ({render(query.window, case.dialect)}) is not the case's "
                          f"'window' ({case.window})")
    return query


def case_fields(spec: WindowSpec, dialect: str) -> tuple[str, dict[str, Any]]:
    """The `window` text and the other case keys (`query`) that write `spec`."""
    if isinstance(spec, QUERY_SPECS):
        return render(spec.window, dialect), {"query": render(spec, dialect)}
    return render(spec, dialect), {}
