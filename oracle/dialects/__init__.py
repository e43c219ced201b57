"""Each engine's window syntax, parsed into the one spec model and rendered back.

A dialect module has `parse(text)`, `render(spec)` and `name(spec)`; one whose
windows need more than their text (eKuiper's time mode, timestamp field, late
tolerance and time zone: case keys of corpus/README.md) also has
`SETTING_KEYS`, `parse(text, settings)` and `settings(spec)`, the case keys
`spec` needs. A case with the `query` key (CORPUS.md) runs the query's spec:
`case_spec(case)`; and `case_fields(spec, dialect)` gives the `window` text and
the other case keys (`query`, settings) back.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from oracle.dialects.limits import check_text
from oracle.errors import InvalidCase, UnsupportedWindow, WindowOracleError, WindowSyntaxError
from oracle.model import Statement, WindowSpec

DIALECTS = ("esper", "ccl", "apama", "kuiper")
IMPLEMENTED = ("esper", "ccl", "apama", "kuiper")
#: the optional case keys a dialect's windows may read besides `window` (CORPUS.md)
CASE_SETTINGS = ("time_mode", "timestamp_field", "late_tolerance", "time_zone")
#: the specs a case's `query` key may hold: a statement over the window, whichever engine's
QUERIES = (Statement,)


def _module(dialect: str):
    if dialect not in DIALECTS:
        raise UnsupportedWindow(f"unknown dialect {dialect!r}; known: {', '.join(DIALECTS)}")
    if dialect not in IMPLEMENTED:
        raise UnsupportedWindow(f"the {dialect} dialect is not implemented yet; implemented: {', '.join(IMPLEMENTED)}")
    return importlib.import_module(f"oracle.dialects.{dialect}")


def parse(text: str, dialect: str = "esper", settings: Mapping[str, Any] | None = None) -> WindowSpec:
    """The spec of a window clause (or statement) written in `dialect`'s syntax,
    with the case `settings` (`CASE_SETTINGS`) where the dialect takes them."""
    module = _module(dialect)
    check_text(text)
    if settings and getattr(module, "SETTING_KEYS", None) is None:
        raise UnsupportedWindow(f"the {dialect} dialect takes no setting ({', '.join(sorted(settings))}); "
                                "those case keys are eKuiper's")
    try:
        return module.parse(text, settings) if getattr(module, "SETTING_KEYS", None) is not None else module.parse(text)
    except RecursionError:  # a left-deep chain of terms the grammar's tree walk cannot descend
        raise WindowSyntaxError("an expression of too many terms for the parser (a few hundred at most)",
                                text if len(text) <= 200 else text[:200] + "...", 1) from None


def render(spec: WindowSpec, dialect: str = "esper") -> str:
    """`spec` written in `dialect`'s syntax; `parse(render(s), d, settings(s, d)) == s`."""
    return _module(dialect).render(spec)


def expression_text(node: Any, dialect: str = "esper") -> str:
    """A statement's expression (a select item, WHERE, HAVING ...) as `dialect`
    writes it (its `render_expression`; Esper's where a dialect writes no
    expressions: Apama's queries); `repr` where the dialect cannot write it."""
    module = _module(dialect)
    write = getattr(module, "render_expression", None) or _module("esper").render_expression
    try:
        return write(node)
    except WindowOracleError:
        return repr(node)


def spec_text(spec: WindowSpec) -> str:
    """`spec` as the first dialect that writes it writes it, for a message
    (`esper: #length(2)`); its repr where none does."""
    for dialect in IMPLEMENTED:
        try:
            return f"{dialect}: {render(spec, dialect)}"
        except WindowOracleError:
            continue
    return repr(spec)


def settings(spec: WindowSpec, dialect: str = "esper") -> dict[str, Any]:
    """The case keys besides the text that `spec` needs in `dialect` (none for most)."""
    module = _module(dialect)
    return module.settings(spec) if hasattr(module, "settings") else {}


def writes(spec: WindowSpec, dialect: str) -> bool:
    """Whether `dialect` can write `spec` (most kinds exist in one engine only:
    CCL has no intersection, Esper no keyed window, eKuiper only panes)."""
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
    query, whose window must be the `window` key's; with its settings. Raises
    `InvalidCase` for a `query` that is not a string or not a query, or whose
    window differs."""
    extra = case.extra
    chosen = {key: extra[key] for key in CASE_SETTINGS if key in extra}
    window = parse(case.window, case.dialect, chosen)
    if "query" not in extra:
        return window
    text = extra["query"]
    if not isinstance(text, str):
        raise InvalidCase(f"'query' must be a string, {'not null' if text is None else f'got {text!r}'}")
    query = parse(text, case.dialect, chosen)
    if not isinstance(query, QUERIES):
        raise InvalidCase(f"'query' must be a whole statement over the window (a query), got {text!r}")
    if query.window != window:
        raise InvalidCase(f"the query's window ({render(query.window, case.dialect)}) is not the case's "
                          f"'window' ({case.window})")
    return query


def case_fields(spec: WindowSpec, dialect: str) -> tuple[str, dict[str, Any]]:
    """The `window` text and the other case keys (`query`, settings) that write `spec`."""
    extra = dict(settings(spec, dialect))
    if isinstance(spec, QUERIES):
        extra = {"query": render(spec, dialect), **extra}
        return render(spec.window, dialect), extra
    return render(spec, dialect), extra
