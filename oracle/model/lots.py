"""Lot windows: Apama's stream-query windows whose rule no other kind has
(apama-ccl.md §1.5 to §1.8): batched entry (`BatchedTime`, `BatchedLength`),
and a uniqueness applied after the rest of the window (`LengthUnique`). A
form that is an existing kind's rule maps to that kind
(`oracle.dialects.apama`). Their rules: `oracle.windows.lots`; one activation
posts one lot, the change of what the window shows, and nothing when it did
not change."""

from __future__ import annotations

from typing import ClassVar, Union

from attrs import field, frozen

from oracle.errors import InvalidSpec
from oracle.model.base import Spec, _positive, _property_names, _role


def _optional_positive(inst, attribute, value):
    if value is not None:
        _positive(inst, attribute, value)


def _optional_names(inst, attribute, value):
    if value:
        _property_names(inst, attribute, value)


@frozen
class BatchedTime(Spec):
    """Items enter in batches on the grid `creation + k * period` (k >= 0): an
    item arriving on the grid at once, any other at the next grid point; each
    leaves at the first grid point at or after its arrival + `span`, so one
    that would leave where it would enter never enters. With `size`, the
    newest `size` of a partition stay; with `unique`, only the latest item per
    key of a partition shows (after the rest). `partition` keys partitions
    sharing the one grid (not a `GroupWin`: a group's copy would start its
    own grid)."""

    KIND: ClassVar[str] = "batched_time"
    span: int = field(validator=_positive)
    period: int = field()
    size: int | None = field(default=None, validator=_optional_positive)
    unique: tuple[str, ...] = field(default=(), converter=tuple, validator=_optional_names, metadata=_role("key"))
    partition: tuple[str, ...] = field(default=(), converter=tuple, validator=_optional_names, metadata=_role("key"))

    @period.validator
    def _check_period(self, attribute, value):
        if isinstance(value, bool) or not isinstance(value, int) or value < 2:
            raise InvalidSpec(f"batched_time: period must be a time period of 2 ms or more (a 1 ms grid is the "
                              f"sliding window's rule), got {value!r}")

    def __attrs_post_init__(self):
        if self.partition and self.size is None and not self.unique:
            raise InvalidSpec("batched_time: a partition changes nothing without a size or a unique key; leave it out")


@frozen
class BatchedLength(Spec):
    """Items enter `batch` at a time, when the `batch`-th item since the last
    batch arrives; the newest `size` stay, so a batch's items that newer ones
    of the same batch displace never enter. With `unique`, only the latest item
    per key shows (after the rest). A batch of 1 is the sliding rule, and
    `size == batch` without `unique` is `LengthBatch`'s rule."""

    KIND: ClassVar[str] = "batched_length"
    size: int = field(validator=_positive)
    batch: int = field()
    unique: tuple[str, ...] = field(default=(), converter=tuple, validator=_optional_names, metadata=_role("key"))

    @batch.validator
    def _check_batch(self, attribute, value):
        if isinstance(value, bool) or not isinstance(value, int) or value < 2:
            raise InvalidSpec(f"batched_length: batch must be a size of 2 or more (a batch of 1 is the sliding "
                              f"rule), got {value!r}")

    def __attrs_post_init__(self):
        if not self.unique and self.batch == self.size:
            raise InvalidSpec("batched_length: a batch as large as the size, without a unique key, is the "
                              "length_batch rule")


@frozen
class LengthUnique(Spec):
    """The newest `size` items (of those that arrived in the last `span` ms,
    with a span), of which only the latest per `unique` key shows: a hidden
    item still holds one of the `size` places."""

    KIND: ClassVar[str] = "length_unique"
    size: int = field(validator=_positive)
    unique: tuple[str, ...] = field(converter=tuple, validator=_property_names, metadata=_role("key"))
    span: int | None = field(default=None, validator=_optional_positive)


LotWindow = Union[BatchedTime, BatchedLength, LengthUnique]
LOT_WINDOWS: tuple[type, ...] = LotWindow.__args__  # type: ignore[attr-defined]
