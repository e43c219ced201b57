"""Time-based tumbling data windows: `TimeBatch` (`#time_batch`),
`TimeLengthBatch` (`#time_length_batch`), `ExtTimedBatch`
(`#ext_timed_batch`); their rules: `oracle.windows.time_batch`."""

from __future__ import annotations

from typing import ClassVar

from attrs import field, frozen

from oracle.errors import InvalidSpec
from oracle.model.base import Spec, _optional_int, _positive, _property_name, _role


@frozen
class TimeBatch(Spec):
    """`reference`: the batch grid's reference point (None: the first arrival's
    time). `start_eager` implies `force_update` (Esper's TimeBatchFlags)."""

    KIND: ClassVar[str] = "time_batch"
    span: int = field(validator=_positive)
    reference: int | None = field(default=None, validator=_optional_int)
    force_update: bool = False
    start_eager: bool = False

    def __attrs_post_init__(self):
        if self.start_eager and not self.force_update:
            raise InvalidSpec("time_batch: START_EAGER implies FORCE_UPDATE; set force_update too")


@frozen
class TimeLengthBatch(Spec):
    """A batch released when it holds `size` events or `span` after the timer
    was armed, whichever comes first. `start_eager` implies `force_update`."""

    KIND: ClassVar[str] = "time_length_batch"
    span: int = field(validator=_positive)
    size: int = field(validator=_positive)
    force_update: bool = False
    start_eager: bool = False

    def __attrs_post_init__(self):
        if self.start_eager and not self.force_update:
            raise InvalidSpec("time_length_batch: START_EAGER implies FORCE_UPDATE; set force_update too")


@frozen
class ExtTimedBatch(Spec):
    KIND: ClassVar[str] = "ext_timed_batch"
    timestamp: str = field(validator=_property_name, metadata=_role("timestamp"))
    span: int = field(validator=_positive)
    reference: int | None = field(default=None, validator=_optional_int)

    def unsafe_nulls(self) -> tuple[str, ...]:
        """A null timestamp: Esper's view unboxes it and throws."""
        return (self.timestamp,)
