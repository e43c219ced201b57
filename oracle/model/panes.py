"""Pane windows: windows that emit panes, each firing posting the rows of one
pane with its bounds (eKuiper's TUMBLINGWINDOW, HOPPINGWINDOW, SLIDINGWINDOW,
SESSIONWINDOW, COUNTWINDOW; kuiper.md): `PaneWindow`, what the timed ones
share, `Tumbling`, `Hopping`, `Sliding`, `Session`, `CountPanes`, and the
units their periods are written in (`MILLISECOND` ... `DAY`,
`PERIOD_UNITS`). The rules are in oracle/windows/panes.py."""

from __future__ import annotations

from typing import Any, ClassVar

from attrs import field, frozen

from oracle.errors import InvalidSpec
from oracle.model.base import Spec, _not_negative, _positive, _property_name, _role, reserved_name_error
from oracle.model.expressions import GROUP_NODES, Builtin, EventProperty, Name, _expression, expression_nodes


#: the units a pane window's periods are written in, ms each: the unit decides
#: how the first pane end is aligned (to the minute for seconds, the hour for
#: minutes, the local day for hours; kuiper.md §2)
MILLISECOND, SECOND, MINUTE, HOUR, DAY = 1, 1000, 60_000, 3_600_000, 86_400_000
PERIOD_UNITS = (MILLISECOND, SECOND, MINUTE, HOUR, DAY)


def _unit(inst, attribute, value):
    if value not in PERIOD_UNITS or isinstance(value, bool):
        raise InvalidSpec(f"{type(inst).KIND}: {attribute.name} must be one of {', '.join(map(str, PERIOD_UNITS))} ms, "
                          f"got {value!r}")


def _optional_condition(inst, attribute, value):
    if value is None:
        return
    _expression(inst, attribute, value)
    for node in expression_nodes(value):
        if isinstance(node, GROUP_NODES):
            raise InvalidSpec(f"{type(inst).KIND}: {attribute.name} is evaluated for one row; it cannot aggregate")
        if isinstance(node, (Builtin, EventProperty)):
            raise InvalidSpec(f"{type(inst).KIND}: {attribute.name} cannot read {node!r}")
        if isinstance(node, Name) and reserved_name_error(node.name):
            raise InvalidSpec(f"{type(inst).KIND}: {reserved_name_error(node.name)}")


def _optional_timestamp(inst, attribute, value):
    if value is not None:
        _property_name(inst, attribute, value)


def _time_zone(inst, attribute, value):
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    if not isinstance(value, str) or not value:
        raise InvalidSpec(f"{type(inst).KIND}: the time zone must be an IANA zone name, got {value!r}")
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidSpec(f"{type(inst).KIND}: unknown time zone {value!r} (an IANA name such as UTC or "
                          "Asia/Shanghai)") from None


class PaneWindow(Spec):
    """What the timed pane windows share besides their periods:

    * `unit`: the unit the periods are written in (`PERIOD_UNITS`); every
      period is a whole number of it, and it decides the alignment.
    * `filter`: a condition a row must meet to enter the window at all
      (eKuiper's `FILTER(WHERE ...)`), or None.
    * `timestamp`: None for processing time (a row's time is the clock at its
      arrival); else event time, the property holding each row's time in ms,
      with `late_tolerance`, how far the watermark trails the largest event
      time seen.
    * `time_zone`: the IANA zone whose local hours and days align `HOUR` and
      `DAY` periods.

    eKuiper's streams are schemaless JSON: `MIXED_KINDS`."""

    MIXED_KINDS: ClassVar[bool] = True
    PERIODS: ClassVar[tuple[str, ...]]

    def periods(self) -> tuple[int, ...]:
        return tuple(getattr(self, name) for name in self.PERIODS)

    @property
    def event_time(self) -> bool:
        return self.timestamp is not None

    def _check_periods(self) -> None:
        for name in self.PERIODS:
            value = getattr(self, name)
            if value % self.unit:
                raise InvalidSpec(f"{self.KIND}: {name} {value} ms is not a whole number of the unit ({self.unit} ms)")
        if self.timestamp is None and self.late_tolerance:
            raise InvalidSpec(f"{self.KIND}: a late tolerance needs event time (a timestamp property)")


def _filter_field():
    return field(default=None, validator=_optional_condition, kw_only=True, metadata=_role("expression"))


def _timestamp_field():
    return field(default=None, validator=_optional_timestamp, kw_only=True, metadata=_role("timestamp"))


def _tolerance_field():
    return field(default=0, validator=_not_negative, kw_only=True)


def _zone_field():
    return field(default="UTC", validator=_time_zone, kw_only=True)


@frozen
class Tumbling(PaneWindow):
    """Panes of `size` one after the other, each emitted at its end."""

    KIND: ClassVar[str] = "tumbling"
    PERIODS: ClassVar[tuple[str, ...]] = ("size",)
    size: int = field(validator=_positive)
    unit: int = field(default=SECOND, validator=_unit)
    filter: Any = _filter_field()
    timestamp: str | None = _timestamp_field()
    late_tolerance: int = _tolerance_field()
    time_zone: str = _zone_field()

    def __attrs_post_init__(self):
        self._check_periods()


@frozen
class Hopping(PaneWindow):
    """Panes of `size` emitted every `hop` (a `hop` larger than `size` skips rows)."""

    KIND: ClassVar[str] = "hopping"
    PERIODS: ClassVar[tuple[str, ...]] = ("size", "hop")
    size: int = field(validator=_positive)
    hop: int = field(validator=_positive)
    unit: int = field(default=SECOND, validator=_unit)
    filter: Any = _filter_field()
    timestamp: str | None = _timestamp_field()
    late_tolerance: int = _tolerance_field()
    time_zone: str = _zone_field()

    def __attrs_post_init__(self):
        self._check_periods()


@frozen
class Sliding(PaneWindow):
    """A pane per triggering row: the rows of the `size` before it, and with a
    `delay` the rows of the `delay` after it; `trigger` (eKuiper's `OVER (WHEN
    cond)`) decides which rows trigger (None: every row)."""

    KIND: ClassVar[str] = "sliding"
    PERIODS: ClassVar[tuple[str, ...]] = ("size", "delay")
    size: int = field(validator=_positive)
    unit: int = field(default=SECOND, validator=_unit)
    delay: int = field(default=0, validator=_not_negative)
    trigger: Any = field(default=None, validator=_optional_condition, kw_only=True, metadata=_role("expression"))
    filter: Any = _filter_field()
    timestamp: str | None = _timestamp_field()
    late_tolerance: int = _tolerance_field()
    time_zone: str = _zone_field()

    def __attrs_post_init__(self):
        self._check_periods()


@frozen
class Session(PaneWindow):
    """Rows closer than `timeout` to the one before form a session, cut at
    aligned checks every `max_duration`."""

    KIND: ClassVar[str] = "session"
    PERIODS: ClassVar[tuple[str, ...]] = ("max_duration", "timeout")
    max_duration: int = field(validator=_positive)
    timeout: int = field(validator=_positive)
    unit: int = field(default=SECOND, validator=_unit)
    filter: Any = _filter_field()
    timestamp: str | None = _timestamp_field()
    late_tolerance: int = _tolerance_field()
    time_zone: str = _zone_field()

    def __attrs_post_init__(self):
        self._check_periods()


@frozen
class CountPanes(Spec):
    """Every `every`-th row, a pane of the last `size` rows if that many are held
    (eKuiper's `COUNTWINDOW(size[, every])`); no time involved."""

    KIND: ClassVar[str] = "count"
    MIXED_KINDS: ClassVar[bool] = True  # eKuiper's schemaless streams
    size: int = field(validator=_positive)
    every: int = field(validator=_positive)
    filter: Any = _filter_field()

    def __attrs_post_init__(self):
        if self.every > self.size:
            raise InvalidSpec(f"count: the interval {self.every} must not be larger than the size {self.size}")

    #: a count window has no clock of its own: processing time, no zone (declared,
    #: so every pane window answers the same questions)
    event_time: ClassVar[bool] = False
    timestamp: ClassVar[None] = None
    late_tolerance: ClassVar[int] = 0
    time_zone: ClassVar[str] = "UTC"


TIMED_PANE_WINDOWS: tuple[type, ...] = (Tumbling, Hopping, Sliding, Session)
PANE_WINDOWS: tuple[type, ...] = TIMED_PANE_WINDOWS + (CountPanes,)
