"""Why each row of a run was posted: the oracle's updates, each row with the
rule of the window that posted it (`oracle.windows.reasons`).

* `explain(spec, trace)` runs the oracle as `run` does (the same driver, the
  same updates) and pairs each update with its rows, in the update's order:
  `insert`, `remove`, `update`, the `values` rows by side, the `error`; each
  row with its reason (None where a window named none, which
  tests/test_explain.py forbids for every corpus case).
* The reasons are not part of the output: `run` never reads them, nothing
  compares them, and another implementation's rows have none.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from attrs import frozen

from oracle.driver import Driver, start
from oracle.model import Trace, Update, WindowSpec
from oracle.windows.base import Post
from oracle.windows.reasons import SIDES, Reason, row_reasons


@frozen
class Row:
    """One posted row: its side (`SIDES`), the row (an event, a values row,
    an error message) and why it was posted."""

    side: str
    row: Any
    reason: Reason | None

    @property
    def because(self) -> str | None:
        return None if self.reason is None else self.reason.text()

    @property
    def label(self) -> str:
        """The row as a line shows it: an event's id, a values row as `k=v`."""
        row = self.row
        if hasattr(row, "id"):
            return row.id
        if isinstance(row, Mapping):
            return ", ".join(f"{k}={v!r}" for k, v in row.items())
        return str(row)


@frozen
class Explained:
    """An update and its rows with their reasons."""

    update: Update
    rows: tuple[Row, ...]


def update_rows(update: Update) -> Iterator[tuple[str, Any]]:
    """An update's rows as (side, row), in the order `explain` lists them."""
    for side in ("insert", "remove", "update"):
        for row in getattr(update, side):
            yield side, row
    if update.values is not None:
        for side in ("insert", "remove", "update"):
            for row in getattr(update.values, side, ()) or ():
                yield f"values.{side}", row
    if update.error is not None:
        yield "error", update.error


class _Explaining(Driver):
    """The driver, keeping each update's row reasons beside it."""

    def __init__(self, driver: Driver):
        self.__dict__.update(driver.__dict__)
        self.reasons: list[dict[str, list[Reason | None]]] = []

    def unit(self, index: int, time: int, posts: list[Post], *phase: int) -> None:
        before = len(self.updates)
        super().unit(index, time, posts, *phase)
        made = len(self.updates) - before
        groups = [[post] for post in posts] if made == len(posts) and made > 1 else [posts] if made else []
        for group in groups:
            by_side: dict[str, list[Reason | None]] = {side: [] for side in SIDES}
            for post in group:
                for side in SIDES:
                    by_side[side] += row_reasons(post, side)
            self.reasons.append(by_side)


def explain(spec: WindowSpec, trace: Trace) -> list[Explained]:
    """The oracle's updates for `trace`, each row with its reason (module docstring)."""
    driver = _Explaining(start(spec, trace))
    updates = driver.feed(trace)
    out = []
    for update, reasons in zip(updates, driver.reasons, strict=True):
        rows = []
        taken = {side: 0 for side in SIDES}
        for side, row in update_rows(update):
            found = reasons[side]
            reason = found[taken[side]] if taken[side] < len(found) else None
            taken[side] += 1
            rows.append(Row(side, row, reason))
        out.append(Explained(update, tuple(rows)))
    return out
