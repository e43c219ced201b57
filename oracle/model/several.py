"""Several data windows on one stream: `Intersection` (Esper's default) and
`RetainUnion` (`retain-union`); their rules: `oracle.windows.several`."""

from __future__ import annotations

from typing import ClassVar

import attrs
from attrs import field, frozen

from oracle.errors import InvalidSpec, UnsupportedWindow
from oracle.model.base import Spec
from oracle.model.data_windows import DATA_WINDOWS, NOT_MEMBERS, DataWindow


def _members(inst, attribute, value):
    if len(value) < 2:
        raise InvalidSpec(f"{type(inst).KIND}: needs at least two data windows")
    for member in value:
        if not isinstance(member, DATA_WINDOWS):
            raise InvalidSpec(f"{type(inst).KIND}: {member!r} cannot be a member")
        if isinstance(member, NOT_MEMBERS):
            raise UnsupportedWindow(f"{type(inst).KIND}: an {member.KIND} window as a member is not supported "
                                    "(it re-evaluates its expression when another member removes an event)")


@frozen
class Intersection(Spec):
    """Several data windows on one stream, an event held while every member holds it.

    `stale_time_timers`: when another member removes a `#time` member's events,
    True (Esper's `TimeWindowView`) leaves the `#time` member's timer where it
    was, to fire at that stale time; False (Apama's lots) moves it to the
    oldest event still held. It decides only which sub-window of a group posts
    first in one jump."""

    KIND: ClassVar[str] = "intersection"
    REMOVES_UNENTERED: ClassVar[bool] = True  # an arrival a member refuses is posted as old data only
    members: tuple[DataWindow, ...] = field(converter=tuple, validator=_members)
    stale_time_timers: bool = field(default=True, validator=attrs.validators.instance_of(bool), kw_only=True)


@frozen
class RetainUnion(Spec):
    """Several data windows on one stream, an event held while any member holds it."""

    KIND: ClassVar[str] = "retain_union"
    members: tuple[DataWindow, ...] = field(converter=tuple, validator=_members)
