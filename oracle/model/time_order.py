"""The data window that holds events by a timestamp property against the
clock: `TimeOrder` (`#time_order`, `#timetolive`); its rules:
`oracle.windows.time_order`."""

from __future__ import annotations

from typing import ClassVar

from attrs import field, frozen

from oracle.model.base import Spec, _not_negative, _property_name, _role


@frozen
class TimeOrder(Spec):
    """Events held until the clock passes their timestamp property plus `span`,
    released in timestamp order; `span` 0 holds each event until the clock
    reaches its timestamp (Esper's `#timetolive`, which is `#time_order(ts, 0)`)."""

    KIND: ClassVar[str] = "time_order"
    timestamp: str = field(validator=_property_name, metadata=_role("timestamp"))
    span: int = field(validator=_not_negative)

    def unsafe_nulls(self) -> tuple[str, ...]:
        """A null timestamp: Esper's view unboxes it and throws."""
        return (self.timestamp,)
