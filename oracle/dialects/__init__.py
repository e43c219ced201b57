"""Each engine's window syntax, parsed into the one spec model and rendered back."""

from __future__ import annotations

import importlib

from oracle.errors import UnsupportedWindow
from oracle.model import WindowSpec

DIALECTS = ("esper", "ccl", "apama", "kuiper")
IMPLEMENTED = ("esper", "ccl")


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
