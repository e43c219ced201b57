"""Time-based sliding data windows: `Time` (`#time`), `ExtTimed`
(`#ext_timed`), `TimeAccum` (`#time_accum`), `FirstTime` (`#firsttime`);
their rules: `oracle.windows.time`."""

from __future__ import annotations

from typing import ClassVar

from attrs import field, frozen

from oracle.model.base import Spec, _positive, _property_name, _role


@frozen
class Time(Spec):
    KIND: ClassVar[str] = "time"
    span: int = field(validator=_positive)


@frozen
class ExtTimed(Spec):
    KIND: ClassVar[str] = "ext_timed"
    timestamp: str = field(validator=_property_name, metadata=_role("timestamp"))
    span: int = field(validator=_positive)

    def unsafe_nulls(self) -> tuple[str, ...]:
        """A null timestamp: Esper's view unboxes it and throws."""
        return (self.timestamp,)


@frozen
class TimeAccum(Spec):
    """Events accumulate while they keep arriving; `span` after the last arrival
    they all leave at once."""

    KIND: ClassVar[str] = "time_accum"
    span: int = field(validator=_positive)


@frozen
class FirstTime(Spec):
    KIND: ClassVar[str] = "firsttime"
    span: int = field(validator=_positive)
