"""Why a window posted each row: the rule that posted it, as a phrase of the
window's own docstring rule list.

* Each window class names its rules in one table, a class attribute
  `REASONS = Reasons(rule=phrase, ...)`; each phrase is words of the class's
  (or its module's) docstring, so the table reads as an index of the rules
  (`tests/test_completeness.py` checks every phrase against the docstring).
* A post names the rule behind its rows: `Post(..., why=REASONS.pushed)` for
  every row of the post, or `why={"insert": ..., "remove": ...}` per side (the
  sides of `SIDES`); a side's entry is one reason for its rows or a list of
  one reason per row.
* A window that posts rows another window posted (a grouping, a keyed store,
  an intersection) passes their reasons on (`row_reasons`), wrapped where it
  adds a rule of its own: `REASONS.member.via(cause, "member 2, unique")`
  reads "removed by a member (member 2, unique): <the member's reason>".
* The reasons explain the oracle's output and are no part of it: `Post`
  equality ignores `why`, the driver never reads it (`oracle.explain` does),
  and nothing is compared with them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: a post's sides, in the order its rows are listed (the update's fields)
SIDES = ("insert", "remove", "update", "values.insert", "values.remove", "values.update", "error")


class Reason:
    """One rule of a window's table (`table`, `rule`); a `note` (what the
    rule was applied to) and a `cause` (the reason of the window it posts
    for) where a composite window adds its rule to another's."""

    __slots__ = ("table", "rule", "note", "cause")

    def __init__(self, table: Reasons, rule: str, note: str | None = None, cause: Reason | None = None):
        self.table, self.rule, self.note, self.cause = table, rule, note, cause

    @property
    def phrase(self) -> str:
        return self.table.phrases[self.rule]

    def via(self, cause: Reason | None, note: str | None = None) -> Reason:
        """This rule, applied to a row another rule (`cause`) posted."""
        return Reason(self.table, self.rule, note, cause)

    def text(self) -> str:
        """The phrase, its note in parentheses, then the cause after a colon."""
        text = self.phrase + (f" ({self.note})" if self.note else "")
        return f"{text}: {self.cause.text()}" if self.cause is not None else text

    def rules(self) -> list[tuple[Reasons, str]]:
        """This reason's (table, rule) and its causes', outermost first."""
        return [(self.table, self.rule)] + (self.cause.rules() if self.cause is not None else [])

    def __repr__(self) -> str:
        return f"Reason({self.text()!r})"


class Reasons:
    """A window's table of rule phrases; `REASONS.rule` is that rule's `Reason`.
    Assigned as a class attribute, it knows its window class (`owner`)."""

    def __init__(self, **phrases: str):
        self.phrases: dict[str, str] = phrases
        self._reasons = {rule: Reason(self, rule) for rule in phrases}
        self.owner: type | None = None

    def __set_name__(self, owner: type, name: str) -> None:
        if self.owner is None:
            self.owner = owner

    def __getattr__(self, rule: str) -> Reason:
        try:
            return self.__dict__["_reasons"][rule]
        except KeyError:
            raise AttributeError(f"no rule {rule!r} in the reasons of {self.__dict__.get('owner')}") from None

    def __repr__(self) -> str:
        return f"Reasons({getattr(self.owner, '__name__', '?')}: {', '.join(self.phrases)})"


def post_rows(post: Any) -> dict[str, tuple]:
    """A post's rows by side (`SIDES`), the sides it has."""
    values = post.values
    rows: dict[str, tuple] = {"insert": post.insert, "remove": post.remove, "update": post.update}
    if values is not None:
        rows["values.insert"] = tuple(values.insert)
        rows["values.remove"] = tuple(values.remove)
        rows["values.update"] = tuple(getattr(values, "update", ()) or ())
    if post.error is not None:
        rows["error"] = (post.error,)
    return rows


def row_reasons(post: Any, side: str) -> list[Reason | None]:
    """The reason of each row of `post` on `side` (None where the window named none)."""
    rows = post_rows(post).get(side, ())
    return _side(post.why, side, len(rows))


def _side(why: Any, side: str, count: int) -> list[Reason | None]:
    if why is None:
        return [None] * count
    if isinstance(why, Reason):
        return [why] * count
    if isinstance(why, Mapping):
        entry = why.get(side)
        if isinstance(entry, Reason) or entry is None:
            return [entry] * count
        entry = list(entry)
        if len(entry) != count:
            raise AssertionError(f"{len(entry)} reasons for {count} {side} rows")
        return entry
    raise AssertionError(f"a post's why is a Reason or a mapping of sides, not {why!r}")


def reasons_by_event(posts: list, side: str) -> dict[Any, Reason | None]:
    """Each event posted on `side` by `posts`, to the reason of its first posting."""
    found: dict[Any, Reason | None] = {}
    for post in posts:
        for event, reason in zip(post_rows(post).get(side, ()), row_reasons(post, side)):
            found.setdefault(event, reason)
    return found
