"""The oracle's windows, one module per family; `make_window` builds one from its spec."""

from __future__ import annotations

from oracle.errors import UnsupportedWindow
from oracle.model import WindowSpec, spec_kind
from oracle.windows.base import Post, Window

# spec class -> window class; each window class is built as cls(spec, now), `now` the
# clock when the window is created. Filled by the family modules' REGISTRY dicts.
WINDOW_CLASSES: dict[type, type] = {}


def _register() -> None:
    import importlib

    for family in ("length", "time", "time_batch", "keep", "unique", "groupwin"):
        try:
            module = importlib.import_module(f"oracle.windows.{family}")
        except ModuleNotFoundError as exc:
            if exc.name != f"oracle.windows.{family}":
                raise
            continue
        WINDOW_CLASSES.update(module.REGISTRY)


def make_window(spec: WindowSpec, now: int) -> Window:
    """A fresh window for `spec`, created with the clock at `now`."""
    if not WINDOW_CLASSES:
        _register()
    cls = WINDOW_CLASSES.get(type(spec))
    if cls is None:
        raise UnsupportedWindow(f"the oracle does not implement the {spec_kind(spec)} window")
    return cls(spec, now)


__all__ = ["Post", "Window", "make_window", "WINDOW_CLASSES"]
