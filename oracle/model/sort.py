"""Data windows that keep the best events by sort criteria: `SortKey` (one
criterion), `Sort` (`#sort`), `Rank` (`#rank`); their rules:
`oracle.windows.sort`."""

from __future__ import annotations

from typing import ClassVar

from attrs import field, frozen

from oracle.errors import InvalidSpec
from oracle.model.base import _NAME, Spec, _positive, _property_names, _role, reserved_name_error


def _criteria(inst, attribute, value):
    if not value:
        raise InvalidSpec(f"{type(inst).KIND}: needs at least one sort criterion")
    for criterion in value:
        if not isinstance(criterion, SortKey):
            raise InvalidSpec(f"{type(inst).KIND}: {criterion!r} is not a sort criterion")


@frozen
class SortKey:
    """One sort criterion: a property, ascending unless `descending`. Null sorts
    before every value ascending (after every value descending)."""

    property: str = field()
    descending: bool = False

    @property.validator
    def _check(self, attribute, value):
        if not isinstance(value, str) or not _NAME.match(value):
            raise InvalidSpec(f"sort: {attribute.name} must be a property name, got {value!r}")
        if reserved_name_error(value):
            raise InvalidSpec(f"sort: {reserved_name_error(value)}")


@frozen
class Sort(Spec):
    """The `size` best events by `criteria` (compared in order); among equal
    criteria the newer is better."""

    KIND: ClassVar[str] = "sort"
    size: int = field(validator=_positive)
    criteria: tuple[SortKey, ...] = field(converter=tuple, validator=_criteria, metadata=_role("sort"))


@frozen
class Rank(Spec):
    """The latest event per unique `keys`, and of those the `size` best by
    `criteria`."""

    KIND: ClassVar[str] = "rank"
    keys: tuple[str, ...] = field(converter=tuple, validator=_property_names, metadata=_role("key"))
    size: int = field(validator=_positive)
    criteria: tuple[SortKey, ...] = field(converter=tuple, validator=_criteria, metadata=_role("sort"))

    def unsafe_nulls(self) -> tuple[str, ...]:
        """With one sort criterion its null value is the sort key, which Esper's
        map of unique keys reads as absent; with one unique key a null key
        throws when a scan of tied events reaches it (`oracle.windows.sort`)."""
        return ((self.keys if len(self.keys) == 1 else ())
                + ((self.criteria[0].property,) if len(self.criteria) == 1 else ()))
