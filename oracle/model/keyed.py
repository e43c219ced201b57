"""A keyed window: `Keyed` (CCL's `PRIMARY KEY (cols) KEEP ...`), and the
retention policies it may apply (`KEYED_POLICIES`, `KEYED_GROUP_POLICIES`);
its rules: `oracle.windows.keyed`."""

from __future__ import annotations

from typing import Any, ClassVar

from attrs import field, frozen

from oracle.errors import InvalidSpec
from oracle.model.base import Spec, _property_names, _role
from oracle.model.events import OPCODES
from oracle.model.groupwin import GroupWin
from oracle.model.keep import KeepAll
from oracle.model.length import Length
from oracle.model.retention import JumpingLength, JumpingTime, SlackLength
from oracle.model.time import Time


#: the retention policies a keyed window applies to its rows, and those it may apply per group
KEYED_POLICIES: tuple[type, ...] = (KeepAll, Length, SlackLength, JumpingLength, Time, JumpingTime)
KEYED_GROUP_POLICIES: tuple[type, ...] = (Length, SlackLength, JumpingLength)


def _keyed_retention(inst, attribute, value):
    inner = value.window if isinstance(value, GroupWin) else value
    allowed = KEYED_GROUP_POLICIES if isinstance(value, GroupWin) else KEYED_POLICIES
    if not isinstance(inner, allowed):
        what = "per group" if isinstance(value, GroupWin) else "to its rows"
        raise InvalidSpec(f"keyed: applies a {', '.join(c.KIND for c in allowed)} policy {what}, not {value!r}")


@frozen
class Keyed(Spec):
    """A store of rows keyed by the values of `keys` (a primary key), changed
    by the operation codes of arriving events, with a retention policy over
    its rows (`retention`: keep-all, a count or time policy, or a count policy
    per group as a `GroupWin`). Its rules: `oracle.windows.keyed`. It applies
    the operation codes itself (`APPLIES_OPCODES`): its policy sees inserts only."""

    KIND: ClassVar[str] = "keyed"
    OPCODES: ClassVar[frozenset[str]] = frozenset(OPCODES)  # the module's OPCODES: every code
    REJECTS_BAD_ITEMS: ClassVar[bool] = True
    APPLIES_OPCODES: ClassVar[bool] = True
    keys: tuple[str, ...] = field(converter=tuple, validator=_property_names, metadata=_role("key"))
    retention: Any = field(factory=KeepAll, validator=_keyed_retention)
