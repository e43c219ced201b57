"""Conformance cases (the case format: corpus/README.md) to and from the model.

The only place that reads or writes the case format. Every error names the file,
the key and, for trace items, the item's index.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from attrs import field, frozen

from oracle.errors import InvalidCase, InvalidTrace
from oracle.model import (
    Advance,
    Arrive,
    DerivedValues,
    Event,
    Jump,
    Pane,
    SetVariables,
    Trace,
    TraceItem,
    Update,
    check_trace,
)

DIALECTS = ("esper", "ccl", "apama", "kuiper")


@frozen
class Case:
    """One conformance case. `extra` keeps keys this project does not interpret."""

    name: str
    dialect: str
    window: str
    trace: Trace
    expected: tuple[Update, ...]
    about: str = ""
    source: str = ""
    path: Path | None = field(default=None, eq=False)
    extra: Mapping[str, Any] = field(factory=dict, eq=False, hash=False)


# --------------------------------------------------------------------------- reading


def _got(value: Any) -> str:
    """What a message says a file held instead: `got 'x'`, or `not null` (JSON's null, no value)."""
    return "not null" if value is None else f"got {value!r}"


def _time(value: Any, what: str, index: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (isinstance(value, float) and not value.is_integer()):
        raise InvalidTrace(f"{what} must be whole milliseconds, {_got(value)}", index)
    return int(value)


def event_from_json(raw: Any, index: int | None = None) -> Event:
    if not isinstance(raw, Mapping):
        raise InvalidTrace(f"an event must be an object, {_got(raw)}", index)
    if "id" not in raw:
        raise InvalidTrace("the event has no 'id'", index)
    event_id = raw["id"]
    if not isinstance(event_id, str):
        raise InvalidTrace(f"the event id must be a string, {_got(event_id)}", index)
    return Event(event_id, {k: v for k, v in raw.items() if k != "id"})


def item_from_json(raw: Any, index: int) -> TraceItem:
    """One trace item; raises `InvalidTrace` naming `index`."""
    if not isinstance(raw, Mapping):
        raise InvalidTrace(f"an item must be an object, {_got(raw)}", index)
    keys = set(raw)
    if "event" in keys:
        unknown = keys - {"event", "time", "op"}
        if unknown:
            raise InvalidTrace(f"unknown key(s) {sorted(unknown)} beside 'event'", index)
        time = _time(raw["time"], "'time'", index) if "time" in raw else None
        op = raw.get("op")
        if op is not None and not isinstance(op, str):
            raise InvalidTrace(f"'op' must be a string, {_got(op)}", index)
        try:
            return Arrive(event_from_json(raw["event"], index), time=time, op=op)
        except InvalidTrace as exc:
            raise InvalidTrace(exc.reason, index) from None
    if keys == {"advance"}:
        return Advance(_time(raw["advance"], "'advance'", index))
    if keys == {"jump"}:
        return Jump(_time(raw["jump"], "'jump'", index))
    if keys == {"set"}:
        if not isinstance(raw["set"], Mapping):
            raise InvalidTrace(f"'set' must be an object of variables, {_got(raw['set'])}", index)
        return SetVariables(raw["set"])
    raise InvalidTrace(f"unknown item {json.dumps(raw)[:80]}; expected one of event, advance, jump, set", index)


def trace_from_json(items: Any, start_time: int = 0, variables: Any = None) -> Trace:
    if not isinstance(items, list):
        raise InvalidTrace(f"'input' must be a list of items, got {type(items).__name__}")
    if variables is not None and not isinstance(variables, Mapping):
        raise InvalidTrace(f"'variables' must be an object, variable name to starting value, {_got(variables)}")
    trace = Trace(tuple(item_from_json(raw, i) for i, raw in enumerate(items)), start_time, variables or {})
    check_trace(trace, mixed_kinds=True)  # one kind per property, where the window asks it, is checked when it runs
    return trace


def _ids(raw: Any, where: str) -> tuple[Event, ...]:
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise InvalidCase(f"{where} must be a list of event ids, {_got(raw)}")
    return tuple(Event(x) for x in raw)


def _value(v: Any) -> Any:
    return math.nan if v == "NaN" else v


def _whole(raw: Mapping, key: str, where: str) -> int:
    """`raw[key]` as whole milliseconds or a whole item index, by the input's rule
    (an int, or a float with nothing after the point); else `InvalidCase` naming it."""
    value = raw[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            isinstance(value, float) and not value.is_integer()):
        raise InvalidCase(f"{where}.{key} must be a whole number, {_got(value)}")
    return int(value)


def _rows(raw: Mapping, key: str, where: str) -> list[dict]:
    """A `values` side: a list of objects (one per derived row)."""
    rows = raw.get(key, [])
    if not isinstance(rows, list) or not all(isinstance(row, Mapping) for row in rows):
        raise InvalidCase(f"{where}.values.{key} must be a list of objects (one per row), {_got(rows)}")
    return [{k: _value(x) for k, x in row.items()} for row in rows]


def update_from_json(raw: Any, index: int, events: Mapping[str, Event]) -> Update:
    where = f"expected[{index}]"
    if not isinstance(raw, Mapping):
        raise InvalidCase(f"{where} must be an object")
    for key in ("after", "time"):
        if key not in raw and not (key == "time" and "error" in raw):
            raise InvalidCase(f"{where} has no {key!r}")
    known = {"after", "time", "insert", "remove", "update", "error", "values", "window", "unordered"}
    if set(raw) - known:
        raise InvalidCase(f"{where} has unknown key(s) {sorted(set(raw) - known)}")

    def side(key):
        return tuple(events.get(e.id, e) for e in _ids(raw.get(key, []), f"{where}.{key}"))

    values = None
    if "values" in raw:
        v = raw["values"]
        if not isinstance(v, Mapping) or not set(v) <= {"insert", "remove", "update"}:
            raise InvalidCase(f"{where}.values must be an object with insert/remove (and update) rows")
        values = DerivedValues(insert=_rows(v, "insert", where), remove=_rows(v, "remove", where),
                               update=_rows(v, "update", where))
    pane = None
    if "window" in raw:
        w = raw["window"]
        if not isinstance(w, Mapping) or set(w) != {"start", "end"}:
            raise InvalidCase(f"{where}.window must be {{'start': ms, 'end': ms}}")
        pane = Pane(_whole(w, "start", f"{where}.window"), _whole(w, "end", f"{where}.window"))
    if "error" in raw and not isinstance(raw["error"], str):
        raise InvalidCase(f"{where}.error must be a message (a string), {_got(raw['error'])}")
    unordered = raw.get("unordered", [])
    if not isinstance(unordered, list) or not set(unordered) <= {"insert", "remove"}:
        raise InvalidCase(f"{where}.unordered must name 'insert' and/or 'remove'")
    return Update(
        after=_whole(raw, "after", where),
        time=_whole(raw, "time", where) if "time" in raw else -1,
        insert=side("insert"),
        remove=side("remove"),
        update=side("update"),
        error=raw.get("error"),
        window=pane,
        values=values,
        unordered=frozenset(unordered),
    )


CASE_KEYS = ("name", "about", "source", "dialect", "window", "start_time", "variables", "input", "expected")


def case_from_json(raw: Any, path: Path | None = None) -> Case:
    """A case from its parsed JSON; raises `InvalidCase` or `InvalidTrace`."""
    if not isinstance(raw, Mapping):
        raise InvalidCase("a case must be a JSON object")
    for key in ("dialect", "window", "input", "expected"):
        if key not in raw:
            raise InvalidCase(f"the case has no {key!r}")
    if raw["dialect"] not in DIALECTS:
        raise InvalidCase(f"unknown dialect {raw['dialect']!r}; known: {', '.join(DIALECTS)}")
    if not isinstance(raw["window"], str):
        raise InvalidCase("'window' must be a string")
    start = _time(raw.get("start_time", 0), "'start_time'")
    trace = trace_from_json(raw["input"], start, raw.get("variables"))
    events = {e.id: e for e in trace.events()}
    if not isinstance(raw["expected"], list):
        raise InvalidCase("'expected' must be a list of updates")
    expected = tuple(update_from_json(u, i, events) for i, u in enumerate(raw["expected"]))
    return Case(
        name=str(raw.get("name") or (path.stem if path else "case")),
        dialect=raw["dialect"],
        window=raw["window"],
        trace=trace,
        expected=expected,
        about=str(raw.get("about", "")),
        source=str(raw.get("source", "")),
        path=path,
        extra={k: v for k, v in raw.items() if k not in CASE_KEYS},
    )


def load_case(path: str | Path) -> Case:
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidCase(f"{path}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise InvalidCase(f"{path}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    return case_from_json(raw, path)


def case_files(paths: list[str | Path]) -> list[Path]:
    """The case files named by `paths`: files as given, folders searched recursively for *.json."""
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found += sorted(q for q in p.rglob("*.json") if q.is_file())
        else:
            found.append(p)
    return found


#: the corpus folder `difftest run` saves its findings to; git ignores it
FOUND = "found"


def corpus_files(corpus: str | Path) -> list[Path]:
    """The corpus's own cases: every case file under `corpus` but the findings of
    differential runs (`corpus/found/`), which join the corpus only when moved
    into a dialect folder."""
    root = Path(corpus)
    return [p for p in case_files([root]) if p.relative_to(root).parts[0] != FOUND]


# --------------------------------------------------------------------------- writing


def item_to_json(item: TraceItem) -> dict[str, Any]:
    if isinstance(item, Arrive):
        out: dict[str, Any] = {"event": item.event.as_dict()}
        if item.time is not None:
            out["time"] = item.time
        if item.op is not None:
            out["op"] = item.op
        return out
    if isinstance(item, Advance):
        return {"advance": item.time}
    if isinstance(item, Jump):
        return {"jump": item.time}
    return {"set": dict(item.values)}


def update_to_json(update: Update) -> dict[str, Any]:
    out: dict[str, Any] = {"after": update.after, "time": update.time,
                           "insert": [e.id for e in update.insert], "remove": [e.id for e in update.remove]}
    if update.update:
        out["update"] = [e.id for e in update.update]
    if update.error is not None:
        out["error"] = update.error
    if update.window is not None:
        out["window"] = {"start": update.window.start, "end": update.window.end}
    if update.values is not None:
        def rows(rs):
            return [{k: ("NaN" if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()} for r in rs]
        out["values"] = {"insert": rows(update.values.insert), "remove": rows(update.values.remove)}
        if update.values.update:
            out["values"]["update"] = rows(update.values.update)
    if update.unordered:
        out["unordered"] = sorted(update.unordered)
    return out


def case_to_json(case: Case) -> dict[str, Any]:
    return {
        "name": case.name,
        "about": case.about,
        "source": case.source,
        "dialect": case.dialect,
        "window": case.window,
        "start_time": case.trace.start_time,
        **({"variables": dict(case.trace.variables)} if case.trace.variables else {}),
        "input": [item_to_json(i) for i in case.trace.items],
        "expected": [update_to_json(u) for u in case.expected],
        **dict(case.extra),
    }


def dump_case(case: Case) -> str:
    """The case as JSON text: one line per input item and per update, as in CORPUS.md."""
    raw = case_to_json(case)
    lines = ["{"]
    keys = list(raw)
    for n, key in enumerate(keys):
        comma = "," if n < len(keys) - 1 else ""
        value = raw[key]
        if key in ("input", "expected") and value:
            inner = ",\n".join(f"    {json.dumps(v)}" for v in value)
            lines.append(f"  {json.dumps(key)}: [\n{inner}\n  ]{comma}")
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


__all__ = [name for name in dir() if not name.startswith("_") and name not in ("attrs", "annotations")]
