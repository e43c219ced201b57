"""The oracle's windows, one module per family; `make_window` builds one from its spec."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oracle.errors import UnsupportedWindow
from oracle.model import (
    BatchedLength,
    BatchedTime,
    Expr,
    ExprBatch,
    ExtTimed,
    ExtTimedBatch,
    FirstEvent,
    FirstLength,
    FirstTime,
    FirstUnique,
    GroupWin,
    Intersection,
    JumpingLength,
    JumpingTime,
    KeepAll,
    Keyed,
    LastEvent,
    Length,
    LengthUnique,
    LengthBatch,
    Rank,
    RetainUnion,
    SlackLength,
    Sort,
    Time,
    TimeAccum,
    TimeBatch,
    TimeLengthBatch,
    TimeOrder,
    Statement,
    Unique,
    WindowSpec,
    spec_kind,
)
from oracle.windows import (
    derived, expr, groupwin, keep, keyed, length, lots, panes, retention, several, sort, time, time_batch,
    time_order, unique,
)
from oracle.windows import statement, stream_query
from oracle.windows.base import Delivery, Post, Window, WindowBase

#: spec class -> window class, built as cls(spec, now), `now` the clock when the
#: window is created
WINDOW_CLASSES: dict[type, type] = {
    Length: length.LengthWindow,
    LengthBatch: length.LengthBatchWindow,
    FirstLength: length.FirstLengthWindow,
    KeepAll: keep.KeepAllWindow,
    FirstEvent: keep.FirstEventWindow,
    LastEvent: keep.LastEventWindow,
    Unique: unique.UniqueWindow,
    FirstUnique: unique.FirstUniqueWindow,
    Time: time.TimeWindow,
    ExtTimed: time.ExtTimedWindow,
    FirstTime: time.FirstTimeWindow,
    TimeAccum: time.TimeAccumWindow,
    TimeOrder: time_order.TimeOrderWindow,
    Sort: sort.SortWindow,
    Rank: sort.RankWindow,
    TimeBatch: time_batch.TimeBatchWindow,
    TimeLengthBatch: time_batch.TimeLengthBatchWindow,
    ExtTimedBatch: time_batch.ExtTimedBatchWindow,
    Intersection: several.IntersectionWindow,
    RetainUnion: several.RetainUnionWindow,
    Expr: expr.ExprWindow,
    ExprBatch: expr.ExprBatchWindow,
    GroupWin: groupwin.GroupWinWindow,
    SlackLength: retention.SlackLengthWindow,
    JumpingLength: retention.JumpingLengthWindow,
    JumpingTime: retention.JumpingTimeWindow,
    Keyed: keyed.KeyedWindow,
    BatchedTime: lots.LotsWindow,
    BatchedLength: lots.LotsWindow,
    LengthUnique: lots.LotsWindow,
    Statement: lambda spec, now: STATEMENT_WINDOWS[spec.rules.posted](spec, now),
    **derived.WINDOWS,
    **panes.WINDOWS,
}

#: a statement's window class, by when its rows are posted (`Rules.posted`)
STATEMENT_WINDOWS: dict[str, Any] = {
    "update": statement.StatementWindow,
    "store": statement.StatementWindow,
    "pane": panes.query_window,
    "activation": stream_query.StreamQueryWindow,
}


def make_window(spec: WindowSpec, now: int, variables: Mapping[str, Any] | None = None) -> Window:
    """A fresh window for `spec`, created with the clock at `now`, reading
    `variables` (the driver's mapping, shared, not copied; none: no variables)."""
    cls = WINDOW_CLASSES.get(type(spec))
    if cls is None:
        raise UnsupportedWindow(f"the oracle does not implement the {spec_kind(spec)} window")
    window = cls(spec, now)
    if variables is not None:
        window.variables = variables
    return window


__all__ = ["Delivery", "Post", "Window", "WindowBase", "make_window", "WINDOW_CLASSES"]
