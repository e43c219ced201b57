"""A case's run as a picture's content: what `difftest show` draws (with
matplotlib, `difftest.draw`) and prints (with rich, `difftest.terminal`).

The rules of the layout, all of them decided here, none by a drawing backend:

* **The axis** is the logical clock: one column per distinct instant that a
  trace item or an update reaches, in time order, each as wide as the updates
  posted at that instant (at least one unit): the instants are evenly spaced,
  not proportional, so 30 events over an hour stay legible. A time between
  two instants (a pane's bound) lies between their columns, proportionally.
  The trace's `advance` and `jump` items are marked on it (a jump as the span
  it skips), and every update is a numbered step (#0, #1, ... as `difftest
  replay` numbers them) at its instant.
* **A lane per event**, in arrival order, each with a dot at its arrival and a
  bar from the update that inserted it to the update that removed it (no end:
  still held). Under `#groupwin` (and CCL's PER, Apama's `partition by`) the
  lanes are grouped by sub-window, groups in first-seen order. A CCL keyed
  window has **a lane per key** instead: a bar per stored row, update marks
  (the new row's id) and delete ends. A pane window (eKuiper) has no bars: an
  event's lane marks each pane that holds it, and the panes are intervals
  with their bounds on a track of their own, labelled `#n [start, end)` (n
  the update; the window's own run under a statement has none). A count
  window's pane has no span (its bounds are both the clock at the pane): it
  is labelled by its ordinal and its rows, `pane 2: 5 rows`.
* **Rows that are not events** (derived values, statement rows, errors) are a
  table under the axis, one line per row, numbered by update. A statement's or
  a derived-value window's lanes are its window's (the oracle's run of the
  window alone), since its updates hold no events.
* **Panels**: one per distinct output: the case's `expected`, then each
  engine's; an output equal to the one above it joins that panel (`oracle =
  expected`). The first update at which a panel differs from the first panel
  is its `difference`, highlighted.
* **Reasons** are the oracle's (`oracle.explain`): shown on a panel whose
  updates are the oracle's, and nowhere else.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from attrs import define, field, frozen

from difftest.compare import Difference, compare
from oracle.explain import Explained, explain, update_rows
from oracle.model import Advance, Arrive, Jump, SetVariables, Trace, Update, WindowSpec
from oracle.model import BatchedTime, CountPanes, GroupWin, Keyed, Statement
from oracle.model.derived import DERIVED_WINDOWS

#: where an instant lies in its column (units from its left edge); its updates follow
INSTANT = 0.25

#: a clock this large is shown as an offset from the first instant
LARGE_CLOCK = 10_000_000


@frozen
class Output:
    """One engine's (or the case's) updates, named; `explained` where they
    are the oracle's."""

    name: str
    updates: tuple[Update, ...]
    explained: tuple[Explained, ...] | None = None


@frozen
class Tick:
    """A trace item on the axis: its index, kind, the clock before and after it."""

    index: int
    kind: str
    before: int
    time: int
    label: str


@define
class Bar:
    lane: int
    start: float
    end: float | None = None
    label: str = ""
    title: str = ""
    end_title: str = ""


@define
class Mark:
    lane: int
    x: float
    kind: str  # arrival, update, removed, error, pane
    title: str = ""
    label: str = ""


@define
class Lane:
    key: Any
    label: str
    group: str | None


@frozen
class Step:
    """An update at its place on the axis."""

    number: int
    x: float
    update: Update
    title: str


@frozen
class TableRow:
    number: int
    side: str
    text: str
    title: str


@frozen
class PaneBox:
    start: float
    end: float
    label: str
    title: str
    number: int | None  # the update; None for the window's own run under a statement


@define
class Panel:
    title: str
    lanes: list[Lane]
    bars: list[Bar] = field(factory=list)
    marks: list[Mark] = field(factory=list)
    steps: list[Step] = field(factory=list)
    panes: list[PaneBox] = field(factory=list)
    table: list[TableRow] = field(factory=list)
    difference: Difference | None = None
    lanes_from: str | None = None  # "the window alone (oracle)" where the lanes are not the panel's own
    explained: tuple[Explained, ...] | None = None  # the oracle's reasons, where the panel is the oracle's output
    highlight: int | None = None  # the update marked as the first difference (in every panel)


@define
class Picture:
    title: str
    subtitle: str
    ticks: list[Tick]
    columns: list[tuple[int, float, float]]  # (instant, x of its left edge, width)
    width: float
    base: int  # times are labelled as offsets from this
    panels: list[Panel]

    def x_of(self, time: int | float) -> float:
        """A time's place on the axis: its instant's mark (near the left of the
        column, the updates posted then to its right), between two by proportion."""
        cols = self.columns
        if not cols:
            return 0.5
        centres = [(t, left + INSTANT) for t, left, w in cols]
        if time <= centres[0][0]:
            return max(0.0, centres[0][1] - INSTANT)
        for (t0, x0), (t1, x1) in zip(centres, centres[1:]):
            if t0 <= time <= t1:
                return x0 + (x1 - x0) * ((time - t0) / (t1 - t0) if t1 > t0 else 0)
        return min(self.width, centres[-1][1] + 0.5)

    def time_label(self, time: int) -> str:
        return str(time - self.base) if self.base else str(time)


# --------------------------------------------------------------------------- the axis


def ticks_of(trace: Trace) -> list[Tick]:
    clock = trace.start_time
    ticks = []
    for index, item in enumerate(trace.items):
        before = clock
        if isinstance(item, Arrive):
            clock = item.time if item.time is not None else clock
            ticks.append(Tick(index, "event", before, clock, item.event.id + (f" ({item.op})" if item.op else "")))
        elif isinstance(item, Advance):
            clock = item.time
            ticks.append(Tick(index, "advance", before, clock, f"advance to {item.time}"))
        elif isinstance(item, Jump):
            clock = item.time
            ticks.append(Tick(index, "jump", before, clock, f"jump to {item.time}"))
        elif isinstance(item, SetVariables):
            ticks.append(Tick(index, "set", before, clock, "set " + ", ".join(f"{k}={v!r}" for k, v in item.values.items())))
    return ticks


def _columns(ticks: list[Tick], outputs: Sequence[Sequence[Update]]) -> list[tuple[int, float, float]]:
    """Each instant's column: as wide as the most updates any output posts then."""
    width: dict[int, int] = {}
    for tick in ticks:
        width.setdefault(tick.time, 1)
        if tick.kind == "jump":
            width.setdefault(tick.before, 1)
    for updates in outputs:
        count: dict[int, int] = {}
        for u in updates:
            count[u.time] = count.get(u.time, 0) + 1
            if u.window is not None:  # a pane's bounds are instants of the axis
                width.setdefault(u.window.start, 1)
                width.setdefault(u.window.end, 1)
        for t, n in count.items():
            width[t] = max(width.get(t, 1), n)
    columns, left = [], 0.0
    for t in sorted(width):
        columns.append((t, left, float(width[t])))
        left += width[t]
    return columns


def _step_xs(picture: Picture, updates: Sequence[Update]) -> list[float]:
    """Each update's x: its instant's column, the k-th update there in the k-th slot."""
    col = {t: (left, w) for t, left, w in picture.columns}
    seen: dict[int, int] = {}
    xs = []
    for u in updates:
        k = seen.get(u.time, 0)
        seen[u.time] = k + 1
        left, w = col.get(u.time, (picture.x_of(u.time) - 0.5, 1.0))
        xs.append(left + k + 0.6)
    return xs


# --------------------------------------------------------------------------- lanes


def _group_keys(spec: WindowSpec) -> tuple[str, ...]:
    if isinstance(spec, GroupWin):
        return spec.keys
    if isinstance(spec, BatchedTime) and spec.partition:
        return spec.partition
    return ()


def lanes_spec(spec: WindowSpec) -> WindowSpec | None:
    """The window whose events a picture's lanes show: the spec itself, or
    for a statement or a derived-value window its window (None: the stream)."""
    if isinstance(spec, Statement):
        return lanes_spec(spec.window)
    if isinstance(spec, DERIVED_WINDOWS):
        return None if spec.source is None else lanes_spec(spec.source)
    if isinstance(spec, GroupWin) and isinstance(spec.window, DERIVED_WINDOWS):
        inner = lanes_spec(spec.window)
        return None if inner is None else GroupWin(keys=spec.keys, window=inner)
    return spec


def _key_text(names: tuple[str, ...], values: tuple) -> str:
    return ", ".join(f"{n}={v!r}" for n, v in zip(names, values))


def _lanes(spec: WindowSpec | None, trace: Trace) -> tuple[list[Lane], dict[Any, int], bool]:
    """The lanes (grouped, groups in first-seen order), the lane of each
    event id (keyed: of each key), and whether lanes are keys."""
    events = [item.event for item in trace.items if isinstance(item, Arrive)]
    if isinstance(spec, Keyed):
        lanes: list[Lane] = []
        index: dict[Any, int] = {}
        for event in events:
            key = tuple(event.get(k) for k in spec.keys)
            if key not in index:
                index[key] = len(lanes)
                lanes.append(Lane(key, _key_text(spec.keys, key), None))
        return lanes, index, True
    names = _group_keys(spec) if spec is not None else ()
    groups: dict[tuple, list] = {}
    for event in events:
        groups.setdefault(tuple(event.get(k) for k in names), []).append(event)
    lanes = [Lane(e.id, e.id, _key_text(names, key) if names else None) for key, members in groups.items() for e in members]
    return lanes, {lane.key: i for i, lane in enumerate(lanes)}, False


# --------------------------------------------------------------------------- panels


def row_text(side: str, row: Any) -> str:
    if side == "error":
        return str(row)
    if isinstance(row, Mapping):  # a values row (a frozen mapping): `{symbol: 'X', total: 13.0}`
        return "{" + ", ".join(f"{k}: {_value(v)}" for k, v in row.items()) + "}"
    return getattr(row, "id", str(row))


def _value(v: Any) -> str:
    return "NaN" if isinstance(v, float) and math.isnan(v) else repr(v)


SIGN = {"insert": "+", "remove": "-", "update": "~", "values.insert": "+", "values.remove": "-",
        "values.update": "~", "error": "!"}


def _reasons(explained: Sequence[Explained] | None, number: int) -> list[str | None]:
    if explained is None or number >= len(explained):
        return []
    return [row.because for row in explained[number].rows]


def _panel(picture: Picture, name: str, output: Output, spec: WindowSpec, trace: Trace,
           lane_output: Output | None) -> Panel:
    """One output's panel; `lane_output` the run whose events fill the lanes
    when the output's own updates hold none (a statement, a derived window)."""
    own_lanes = lane_output is None
    lane_spec = spec if own_lanes else lanes_spec(spec)
    lanes, lane_of, keyed = _lanes(lane_spec, trace)
    panel = Panel(name, lanes, lanes_from=None if own_lanes else "lanes: the window alone (oracle)",
                  explained=output.explained)
    ticks = {t.index: t for t in picture.ticks}
    for tick in picture.ticks:  # arrivals
        if tick.kind == "event":
            event = trace.items[tick.index].event
            lane = lane_of.get(tuple(event.get(k) for k in lane_spec.keys) if keyed else event.id)
            if lane is not None:
                panel.marks.append(Mark(lane, picture.x_of(tick.time), "arrival",
                                        f"{event.id} arrives at {tick.time} (item {tick.index})"))
    xs = _step_xs(picture, output.updates)
    if lane_output is not None:  # a statement's update at its window's update of the same unit of work
        window_xs: dict[tuple[int, int], list[float]] = {}
        for u, x in zip(lane_output.updates, _step_xs(picture, lane_output.updates)):
            window_xs.setdefault((u.after, u.time), []).append(x)
        xs = [(window_xs.get((u.after, u.time)) or [x]).pop(0) if window_xs.get((u.after, u.time)) else x
              for u, x in zip(output.updates, xs)]
    for number, (u, x) in enumerate(zip(output.updates, xs)):
        panel.steps.append(Step(number, x, u, _step_title(number, u, ticks)))
        reasons = _reasons(output.explained, number)
        for i, (side, row) in enumerate(update_rows(u)):
            why = reasons[i] if i < len(reasons) else None
            if side.startswith("values") or side == "error" or not own_lanes:
                title = f"#{number} {SIGN[side]} {row_text(side, row)}" + (f"\nwhy: {why}" if why else "")
                panel.table.append(TableRow(number, side, row_text(side, row), title))
                if side == "error" and isinstance(trace.items[u.after], Arrive):
                    event = trace.items[u.after].event
                    lane = lane_of.get(tuple(event.get(k) for k in lane_spec.keys) if keyed else event.id)
                    if lane is not None:
                        panel.marks.append(Mark(lane, x, "error", f"#{number} error: {row}"))
        if own_lanes:
            _event_rows(panel, number, x, u, reasons, lane_of, keyed, lane_spec, picture)
    if not own_lanes and lane_output is not None:
        for number, (u, x) in enumerate(zip(lane_output.updates, _step_xs(picture, lane_output.updates))):
            _event_rows(panel, None, x, u, _reasons(lane_output.explained, number), lane_of, keyed, lane_spec, picture)
    return panel


def _step_title(number: int, u: Update, ticks: dict[int, Tick]) -> str:
    tick = ticks.get(u.after)
    cause = f"item {u.after}" + (f" ({tick.label})" if tick else "")
    counts = ", ".join(f"{len(getattr(u, s))} {s}" for s in ("insert", "remove", "update") if getattr(u, s))
    return f"#{number} at {u.time}, after {cause}" + (f": {counts}" if counts else "")


def _event_rows(panel: Panel, number: int | None, x: float, u: Update, reasons: list, lane_of, keyed: bool,
                spec, picture: Picture) -> None:
    """An update's event rows as bars and marks (`number` None: the window's
    own run under a statement)."""
    tag = f"#{number} " if number is not None else "(window) "
    rows = list(update_rows(u))
    if u.window is not None:  # a pane: its box, and a mark on each of its rows' lanes
        rows_text = f"{len(u.insert)} row{'s' * (len(u.insert) != 1)}"
        if isinstance(spec, CountPanes):  # no span: told by its ordinal (the run's) and rows
            ordinal = 1 + sum((box.number is None) == (number is None) for box in panel.panes)
            label = rows_text if number is not None else f"pane {ordinal}: {rows_text}"
            where = f"pane {ordinal}"
            title = f"{tag}pane {ordinal} of the count window, {rows_text}, at {u.time}"
        else:
            label = f"[{picture.time_label(u.window.start)}, {picture.time_label(u.window.end)})"
            where = f"the pane {label}"
            title = f"{tag}pane {u.window.start} .. {u.window.end}, {rows_text}"
        why = reasons[0] if reasons else None
        title += f"\nwhy: {why}" if why else ""
        panel.panes.append(PaneBox(picture.x_of(u.window.start), picture.x_of(u.window.end), label, title, number))
        for event in u.insert:
            lane = lane_of.get(event.id)
            if lane is not None:
                panel.marks.append(Mark(lane, x, "pane", f"{tag}{event.id} in {where}"))
        return
    open_bars = {b.lane: b for b in panel.bars if b.end is None}
    for i, (side, row) in enumerate(rows):
        if side not in ("insert", "remove", "update"):
            continue
        why = reasons[i] if i < len(reasons) else None
        lane = lane_of.get(tuple(row.get(k) for k in spec.keys) if keyed else row.id)
        if lane is None:
            continue
        because = f"\nwhy: {why}" if why else ""
        if side == "insert":
            bar = Bar(lane, x, label=row.id if keyed else "", title=f"{tag}{row.id} inserted at {u.time}{because}")
            panel.bars.append(bar)
            open_bars[lane] = bar
        elif side == "remove":
            bar = open_bars.pop(lane, None)
            if bar is None:
                panel.marks.append(Mark(lane, x, "removed", f"{tag}{row.id} removed at {u.time}, never inserted{because}"))
            else:
                bar.end, bar.end_title = x, f"{tag}{row.id} removed at {u.time}{because}"
        else:
            panel.marks.append(Mark(lane, x, "update", f"{tag}update: {row.id} replaces the row at {u.time}{because}",
                                    row.id))


def picture_of(spec: WindowSpec, trace: Trace, outputs: Sequence[Output], title: str, subtitle: str = "") -> Picture:
    """The picture of `outputs` (the expectation first, if any) over `trace`."""
    ticks = ticks_of(trace)
    lane_output = None
    if lanes_spec(spec) is not spec:
        inner = lanes_spec(spec)
        explained = tuple(explain(inner, trace)) if inner is not None else None
        lane_output = Output("window", tuple(e.update for e in explained or ()), explained)
    columns = _columns(ticks, [o.updates for o in outputs] + ([lane_output.updates] if lane_output else []))
    times = [t for t, _, _ in columns]
    base = times[0] if times and max(abs(t) for t in times) >= LARGE_CLOCK else 0
    width = columns[-1][1] + columns[-1][2] if columns else 1.0
    picture = Picture(title, subtitle, ticks, columns, width, base, [])
    merged: list[tuple[str, Output]] = []
    for output in outputs:
        if merged and compare(merged[-1][1].updates, output.updates) is None:
            name, kept = merged[-1]
            merged[-1] = (f"{name} = {output.name}", kept if kept.explained else output)
        else:
            merged.append((output.name, output))
    first = merged[0][1].updates if merged else ()
    for i, (name, output) in enumerate(merged):
        panel = _panel(picture, name, output, spec, trace, lane_output)
        if i:
            panel.difference = compare(first, output.updates)
            panel.highlight = panel.difference.index if panel.difference is not None else None
        picture.panels.append(panel)
    found = [p.highlight for p in picture.panels if p.highlight is not None]
    if found and picture.panels:
        picture.panels[0].highlight = min(found)
    return picture


__all__ = ["Output", "Picture", "Panel", "picture_of", "ticks_of", "lanes_spec"]
