"""Exact comparison of expected and actual updates (CORPUS.md, "Expected updates").

Two updates are equal when every key the expected update carries is equal:

* `after` and `time` are equal integers. An expected error update may leave out
  `time` (`{"after": k, "error": "..."}`, read as time -1); its time is then not
  compared.
* `insert`, `remove` and `update` list the same event ids in the same order;
  events compare by id only. A side named in the expected update's `unordered`
  (`insert` and/or `remove`) compares as a multiset of ids instead.
* `error`: the actual error message contains the expected text, ignoring case;
  an update without an expected error must have no actual error.
* `window`: the same pane bounds (both absent counts as equal).
* `values`: the same number of rows on each side (`insert`, `update`,
  `remove`), and in each row only the fields
  the expected row lists are compared, with `oracle.model.is_float_equal` (floats
  within relative 1e-9, NaN equal to NaN). On an `unordered` side each expected row
  is matched to a distinct actual row, first fit.

`compare(expected, actual)` returns None when the two sequences are equal, else a
`Difference` describing the first update that differs, or the first one missing or
extra at the end.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from attrs import frozen

from oracle.cases import update_to_json
from oracle.model import DerivedValues, Event, Pane, Update, is_float_equal

FIELDS = ("after", "time", "insert", "remove", "update", "error", "window", "values")
ID_SIDES = ("insert", "remove", "update")
NO_TIME = -1  # how oracle.cases reads an expected error update that gives no time
_MISSING = object()


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`1 window`, `2 windows`: a count with its noun in the right number."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


# --------------------------------------------------------------------------- field rules


def _ids(events: Sequence[Event]) -> list[str]:
    return [e.id for e in events]


def _same_ids(expected: Sequence[Event], actual: Sequence[Event], unordered: bool) -> bool:
    if unordered:
        return Counter(_ids(expected)) == Counter(_ids(actual))
    return _ids(expected) == _ids(actual)


def _row_matches(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> bool:
    """Only the fields the expected row lists are compared."""
    return all(is_float_equal(value, actual.get(name, _MISSING)) for name, value in expected.items())


def _same_rows(expected: Sequence[Mapping], actual: Sequence[Mapping], unordered: bool) -> bool:
    if len(expected) != len(actual):
        return False
    if not unordered:
        return all(_row_matches(e, a) for e, a in zip(expected, actual))
    free = list(actual)
    for row in expected:
        match = next((i for i, candidate in enumerate(free) if _row_matches(row, candidate)), None)
        if match is None:
            return False
        free.pop(match)
    return True


def _same_values(expected: DerivedValues | None, actual: DerivedValues | None, unordered: frozenset[str]) -> bool:
    if expected is None or actual is None:
        return expected is actual
    return all(
        _same_rows(getattr(expected, side), getattr(actual, side), side in unordered)
        for side in ("insert", "update", "remove")
    )


def _same_error(expected: str | None, actual: str | None) -> bool:
    if expected is None or actual is None:
        return expected is actual
    return expected.casefold() in actual.casefold()


def differing_fields(expected: Update, actual: Update) -> list[str]:
    """The names (from `FIELDS`) of the fields in which `actual` breaks `expected`."""
    bad = []
    if expected.after != actual.after:
        bad.append("after")
    if expected.time != actual.time and not (expected.error is not None and expected.time == NO_TIME):
        bad.append("time")
    for side in ID_SIDES:
        if not _same_ids(getattr(expected, side), getattr(actual, side), side in expected.unordered):
            bad.append(side)
    if not _same_error(expected.error, actual.error):
        bad.append("error")
    if expected.window != actual.window:
        bad.append("window")
    if not _same_values(expected.values, actual.values, expected.unordered):
        bad.append("values")
    return bad


# --------------------------------------------------------------------------- the report


def shown_fields(*updates: Update | None) -> list[str]:
    """The fields a report shows: after, time, insert and remove always, the others
    where one of `updates` has them."""
    present = [u for u in updates if u is not None]

    def shown(name):
        return name in ("after", "time", "insert", "remove") or any(getattr(u, name) for u in present)

    return [name for name in FIELDS if shown(name)]


def _show(name: str, update: Update) -> str:
    """One field of one update, as the report prints it."""
    value = getattr(update, name)
    if name in ID_SIDES:
        return "[" + ", ".join(_ids(value)) + "]"
    if value is None:
        return "-"
    if isinstance(value, Pane):
        return f"[{value.start}, {value.end})"
    if isinstance(value, DerivedValues):
        updated = f" update {_rows(value.update)}" if value.update else ""
        return f"insert {_rows(value.insert)}{updated} remove {_rows(value.remove)}"
    if name == "time" and update.error is not None and value == NO_TIME:
        return "-"
    return str(value) if isinstance(value, int) else repr(value)


def _rows(rows: Sequence[Mapping[str, Any]]) -> str:
    def show(v):
        return "NaN" if isinstance(v, float) and math.isnan(v) else repr(v)

    return "[" + ", ".join("{" + ", ".join(f"{k}: {show(v)}" for k, v in r.items()) + "}" for r in rows) + "]"


@frozen
class Difference:
    """The first update at which `actual` breaks `expected`.

    `index` is the update's position in both sequences; `expected_update` or
    `actual_update` is None when that side has run out of updates (a missing or an
    extra update); `fields` names the fields that differ (all shown fields when one
    side is missing)."""

    index: int
    expected_update: Update | None
    actual_update: Update | None
    fields: tuple[str, ...]
    expected_count: int
    actual_count: int

    def headline(self) -> str:
        counts = f"of {counted(self.expected_count, 'update')} expected, {self.actual_count} posted"
        if self.actual_update is None:
            return f"update {self.index} is missing ({counts})"
        if self.expected_update is None:
            return f"update {self.index} is extra ({counts})"
        return f"update {self.index} differs in {', '.join(self.fields)} ({counts})"

    def rows(self) -> list[tuple[str, str, str, bool]]:
        """(field, expected text, actual text, differs) for each shown field."""
        out = []
        for name in shown_fields(self.expected_update, self.actual_update):
            label = f"{name} (unordered)" if self.expected_update and name in self.expected_update.unordered else name
            exp = _show(name, self.expected_update) if self.expected_update else "(none)"
            act = _show(name, self.actual_update) if self.actual_update else "(none)"
            out.append((label, exp, act, name in self.fields))
        return out

    def lines(self) -> list[tuple[str, bool]]:
        """The report's lines, each with whether it marks a differing field.

        A differing field's line starts with `!`, the others with a space."""
        rows = self.rows()
        width = max(len("field"), *(len(r[0]) for r in rows))
        col = max(len("expected"), *(len(r[1]) for r in rows))
        out = [(self.headline(), False), (f"  {'field':<{width}}  {'expected':<{col}}  actual", False)]
        for label, exp, act, differs in rows:
            out.append((f"{'!' if differs else ' '} {label:<{width}}  {exp:<{col}}  {act}", differs))
        return out

    def render(self) -> str:
        return "\n".join(text for text, _ in self.lines())

    def __str__(self) -> str:
        return self.render()

    def to_json(self) -> dict[str, Any]:
        def side(update):
            if update is None:
                return None
            out = update_to_json(update)
            if update.error is not None and update.time == NO_TIME:
                del out["time"]
            return out

        return {
            "index": self.index,
            "fields": list(self.fields),
            "expected": side(self.expected_update),
            "actual": side(self.actual_update),
            "expected_count": self.expected_count,
            "actual_count": self.actual_count,
        }


def compare(expected: Sequence[Update], actual: Sequence[Update]) -> Difference | None:
    """None when `actual` equals `expected` update by update, else the first difference."""
    for index in range(max(len(expected), len(actual))):
        exp = expected[index] if index < len(expected) else None
        act = actual[index] if index < len(actual) else None
        if exp is None or act is None:
            return Difference(index, exp, act, tuple(shown_fields(exp, act)), len(expected), len(actual))
        bad = differing_fields(exp, act)
        if bad:
            return Difference(index, exp, act, tuple(bad), len(expected), len(actual))
    return None


__all__ = ["Difference", "compare", "differing_fields", "FIELDS"]
