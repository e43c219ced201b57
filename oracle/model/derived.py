"""Derived-value windows: `Derived`, what they share, and `Size` (`#size`),
`Uni` (`#uni`), `Linest` (`#linest`), `Correl` (`#correl`), `WeightedAvg`
(`#weighted_avg`); their rules: `oracle.windows.derived`."""

from __future__ import annotations

from typing import Any, ClassVar, Union

from attrs import field, frozen

from oracle.errors import InvalidSpec
from oracle.model.base import _NAME, Spec, _property_name, _role, reserved_name_error
from oracle.model.data_windows import DATA_WINDOWS
from oracle.model.groupwin import GroupWin
from oracle.model.several import Intersection, RetainUnion


def _source(inst, attribute, value):
    if value is not None and not isinstance(value, DATA_WINDOWS + (Intersection, RetainUnion)):
        what = "a grouped window" if isinstance(value, GroupWin) else repr(value)
        raise InvalidSpec(f"{type(inst).KIND}: its source must be a data window, an intersection or a union "
                          f"(or none: the stream itself), not {what}")


def _extra_names(inst, attribute, value):
    for name in value:
        if not isinstance(name, str) or not _NAME.match(name):
            raise InvalidSpec(f"{type(inst).KIND}: additional property {name!r} is not a property name")
        if reserved_name_error(name):
            raise InvalidSpec(f"{type(inst).KIND}: {reserved_name_error(name)}")
        clash = next((f for f in type(inst).CHECKED_FIELDS if f.lower() == name.lower()), None)
        if clash is not None:
            raise InvalidSpec(f"{type(inst).KIND}: the additional property {name!r} overlaps the field {clash!r} "
                              "that the window posts")


class Derived(Spec):
    """What the derived-value windows share (esper.md §7): `extra`, additional
    properties copied from the last new event into every posted row (each
    named once: a name written twice is one field), `all_properties` (Esper's
    `*` among them: every property of that event), and `source`, the window
    whose insert and remove streams feed the statistics (None: the stream
    itself, every event new and none removed).

    `FIELDS`: the fields of a posted row, in Esper's order. `CHECKED_FIELDS`:
    those an additional property may not be named like, ignoring case (Esper's
    `addCheckDupProperties`; `#linest` checks only two of its fields, and an
    additional property named like another one replaces it in the row).
    `VALUES`: the names of the fields holding the statistic's properties."""

    FIELDS: ClassVar[tuple[str, ...]]
    CHECKED_FIELDS: ClassVar[tuple[str, ...]]
    VALUES: ClassVar[tuple[str, ...]]
    REMOVES_UNENTERED: ClassVar[bool] = True  # the first post's old row, the values of nothing, was never new

    def values(self) -> tuple[str, ...]:
        """The statistic's properties, in parameter order."""
        return tuple(getattr(self, name) for name in self.VALUES)

    def has_field(self, name: str) -> bool:
        """Whether the posted rows' type has a field `name`: one of `FIELDS`, an
        additional property, or any event property under `*`."""
        return name in self.FIELDS or name in self.extra or self.all_properties


def _extra_field():
    return field(default=(), converter=lambda names: tuple(dict.fromkeys(names)), validator=_extra_names,
                 metadata=_role("extra"))


def _value_name(inst, attribute, value):
    _property_name(inst, attribute, value)
    if value == "id":
        raise InvalidSpec(f"{type(inst).KIND}: {attribute.name} must be a numeric property; `id` is the event's id, a string")


def _value_field():
    return field(validator=_value_name, metadata=_role("value"))


def _source_field():
    return field(default=None, validator=_source, kw_only=True)


@frozen
class Size(Derived):
    """`#size([props])`: the number of events in the source, posted when it changes."""

    KIND: ClassVar[str] = "size"
    FIELDS: ClassVar[tuple[str, ...]] = ("size",)
    CHECKED_FIELDS: ClassVar[tuple[str, ...]] = FIELDS
    VALUES: ClassVar[tuple[str, ...]] = ()
    extra: tuple[str, ...] = _extra_field()
    all_properties: bool = False
    source: Any = _source_field()


@frozen
class Uni(Derived):
    """`#uni(x[, props])`: univariate statistics of `x`."""

    KIND: ClassVar[str] = "uni"
    FIELDS: ClassVar[tuple[str, ...]] = ("datapoints", "total", "average", "variance", "stddev", "stddevpa")
    CHECKED_FIELDS: ClassVar[tuple[str, ...]] = FIELDS
    VALUES: ClassVar[tuple[str, ...]] = ("x",)
    x: str = _value_field()
    extra: tuple[str, ...] = _extra_field()
    all_properties: bool = False
    source: Any = _source_field()


@frozen
class Linest(Derived):
    """`#linest(x, y[, props])`: the regression of `y` on `x` (the slope is
    d(y)/d(x); esper.md §7)."""

    KIND: ClassVar[str] = "linest"
    FIELDS: ClassVar[tuple[str, ...]] = (
        "slope", "YIntercept", "XAverage", "XStandardDeviationPop", "XStandardDeviationSample", "XSum", "XVariance",
        "YAverage", "YStandardDeviationPop", "YStandardDeviationSample", "YSum", "YVariance", "dataPoints", "n",
        "sumX", "sumXSq", "sumXY", "sumY", "sumYSq")
    CHECKED_FIELDS: ClassVar[tuple[str, ...]] = ("slope", "YIntercept")
    VALUES: ClassVar[tuple[str, ...]] = ("x", "y")
    x: str = _value_field()
    y: str = _value_field()
    extra: tuple[str, ...] = _extra_field()
    all_properties: bool = False
    source: Any = _source_field()


@frozen
class Correl(Derived):
    """`#correl(x, y[, props])`: the correlation of `x` and `y`."""

    KIND: ClassVar[str] = "correl"
    FIELDS: ClassVar[tuple[str, ...]] = ("correlation",)
    CHECKED_FIELDS: ClassVar[tuple[str, ...]] = FIELDS
    VALUES: ClassVar[tuple[str, ...]] = ("x", "y")
    x: str = _value_field()
    y: str = _value_field()
    extra: tuple[str, ...] = _extra_field()
    all_properties: bool = False
    source: Any = _source_field()


@frozen
class WeightedAvg(Derived):
    """`#weighted_avg(x, weight[, props])`: sum(x * weight) / sum(weight)."""

    KIND: ClassVar[str] = "weighted_avg"
    FIELDS: ClassVar[tuple[str, ...]] = ("average",)
    CHECKED_FIELDS: ClassVar[tuple[str, ...]] = FIELDS
    VALUES: ClassVar[tuple[str, ...]] = ("x", "weight")
    x: str = _value_field()
    weight: str = _value_field()
    extra: tuple[str, ...] = _extra_field()
    all_properties: bool = False
    source: Any = _source_field()


DerivedWindow = Union[Size, Uni, Linest, Correl, WeightedAvg]
DERIVED_WINDOWS: tuple[type, ...] = DerivedWindow.__args__  # type: ignore[attr-defined]
