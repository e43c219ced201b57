"""A copy of a window per group: `GroupWin` (Esper's `#groupwin`), and
`GROUPED_LOT_WINDOWS`, the lot windows a group may hold; its rules:
`oracle.windows.groupwin`."""

from __future__ import annotations

from typing import ClassVar

from attrs import field, frozen

from oracle.errors import InvalidSpec
from oracle.model.base import Spec, _property_names, _role
from oracle.model.data_windows import DATA_WINDOWS, DataWindow
from oracle.model.lots import BatchedLength, LengthUnique
from oracle.model.retention import RETENTION_WINDOWS, RetentionWindow
from oracle.model.several import Intersection, RetainUnion


#: lot windows a group may hold (a `BatchedTime` keeps its partitions itself: they share its grid)
GROUPED_LOT_WINDOWS: tuple[type, ...] = (BatchedLength, LengthUnique)


def _grouped(inst, attribute, value):
    from oracle.model.derived import DERIVED_WINDOWS  # a derived window's source check knows GroupWin: import here

    if not isinstance(value, DATA_WINDOWS + RETENTION_WINDOWS + GROUPED_LOT_WINDOWS + DERIVED_WINDOWS
                      + (Intersection, RetainUnion)):
        raise InvalidSpec(f"groupwin: cannot group {value!r}")
    if isinstance(value, DERIVED_WINDOWS):
        added = [k for k in inst.keys if value.has_field(k)]
        if added and len(added) != len(inst.keys):
            raise InvalidSpec(f"groupwin: the key {added[0]!r} is also a field of {value.KIND}'s rows, and the other "
                              "keys are not: Esper refuses a property in both the row and the added keys")


@frozen
class GroupWin(Spec):
    """A complete copy of `window` per distinct value of `keys`, created on the
    key's first event (Esper `#groupwin`). A derived-value window per group
    (grouped statistics) posts its rows with the keys added, unless every key
    is already a field of its rows."""

    KIND: ClassVar[str] = "groupwin"
    keys: tuple[str, ...] = field(converter=tuple, validator=_property_names, metadata=_role("key"))
    window: DataWindow | RetentionWindow | Intersection | RetainUnion = field(validator=_grouped)
