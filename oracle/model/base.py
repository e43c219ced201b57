"""What every part of the model shares: the `Spec` base class of the window
specs, the validators of their fields (sizes, time periods, property names,
names), the reserved property names, and `is_float_equal`."""

from __future__ import annotations

import math
import re
from typing import Any, ClassVar

from oracle.errors import InvalidSpec


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _positive(inst, attribute, value):
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        what = "a time period" if attribute.name == "span" else "a size"
        raise InvalidSpec(f"{type(inst).KIND}: {attribute.name} must be {what} above 0, got {value!r}")


def _not_negative(inst, attribute, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidSpec(f"{type(inst).KIND}: {attribute.name} must be a time period of 0 or more, got {value!r}")


def _optional_int(inst, attribute, value):
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise InvalidSpec(f"{type(inst).KIND}: {attribute.name} must be whole milliseconds, got {value!r}")


#: the fields of a trace item and of an update in the engines' tables (CORPUS.md, the
#: Spark schemas in the README): no property may be named like one, ignoring case,
#: and no window reads one. `id`, the event's id, is readable as a property.
RESERVED_NAMES = frozenset({
    "trace_id", "seq", "kind", "time", "op", "vars",
    "after", "phase", "ordinal", "side", "pos", "update_no", "pos_no", "slot", "slot_due", "values", "error",
})


def reserved_name_error(name: str) -> str | None:
    """Why a window cannot read property `name`, or None if it can."""
    if name.lower() in RESERVED_NAMES:
        return (f"property {name!r} is a reserved name (a field of the trace and update tables: "
                f"{', '.join(sorted(RESERVED_NAMES))}); a window cannot read it")
    return None


def _property_name(inst, attribute, value):
    if not isinstance(value, str) or not _NAME.match(value):
        raise InvalidSpec(f"{type(inst).KIND}: {attribute.name} must be a property name, got {value!r}")
    if reserved_name_error(value):
        raise InvalidSpec(f"{type(inst).KIND}: {reserved_name_error(value)}")


def _property_names(inst, attribute, value):
    if not value:
        raise InvalidSpec(f"{type(inst).KIND}: needs at least one property name")
    for name in value:
        if not isinstance(name, str) or not _NAME.match(name):
            raise InvalidSpec(f"{type(inst).KIND}: {name!r} is not a property name")
        if reserved_name_error(name):
            raise InvalidSpec(f"{type(inst).KIND}: {reserved_name_error(name)}")
    if len(set(value)) != len(value):
        raise InvalidSpec(f"{type(inst).KIND}: a property is named twice in {list(value)}")


class Spec:
    """What every window spec declares besides its fields (class attributes,
    read once for both engines through `item_problem`):

    * `KIND`: the model's name of the kind (no engine's syntax: each dialect
      names and writes a kind its own way).
    * `OPCODES`: the operation codes an arriving event may carry (CCL's
      `update`, `delete`, ...); no code means `insert`.
    * `REJECTS_BAD_ITEMS`: what an item the window cannot take does. False (an
      Esper window): the trace is invalid, `InvalidTrace` naming the item. True
      (a CCL window): the item is rejected, an update with its `error`, the
      window unchanged, and the trace goes on.
    * `APPLIES_OPCODES`: the spec applies the operation codes itself (a keyed
      window), so the specs inside it see inserts only and do not narrow its
      `OPCODES` (`accepted_opcodes`).
    * `MIXED_KINDS`: a property may hold values of different kinds in different
      rows (eKuiper's schemaless streams: a string `size` in one row, a
      number in the next); otherwise a property holds one kind across a trace
      (`TraceProperties`), as engines with typed events require.
    * `REMOVES_UNENTERED`: the window may post as removed an event it never
      posted as inserted (an intersection turning an arrival away posts it as
      old data only); what reads its posts as enter and leave (a statement's
      aggregators) then meets a leave of what never entered.
    * `unsafe_nulls()`: the properties whose null Esper's view for this spec
      (itself, not nested ones) does not take as a value: it throws on it (a
      null timestamp: `oracle.windows.base.ViewFailure`) or keeps it under a
      key its maps read as absent (`#rank`'s one sort value or one unique
      key). Alone and under `#groupwin` both engines model what the view
      does; an intersection or union refuses an event with such a null for a
      member (`null_unsafe_member`), since Esper leaves the members before the
      failing one changed, a partial state not modelled.

    A field holding a property name carries its role in its metadata
    (`role="key"` or `role="timestamp"`); `spec_keys` and `spec_timestamps`
    find them in any spec, nested ones included."""

    KIND: ClassVar[str]
    OPCODES: ClassVar[frozenset[str]] = frozenset({"insert"})
    REJECTS_BAD_ITEMS: ClassVar[bool] = False
    APPLIES_OPCODES: ClassVar[bool] = False
    MIXED_KINDS: ClassVar[bool] = False
    REMOVES_UNENTERED: ClassVar[bool] = False

    def unsafe_nulls(self) -> tuple[str, ...]:
        """The class docstring's `unsafe_nulls`: none unless a spec says."""
        return ()

    def kind_name(self) -> str:
        """The kind's name in reports (`spec_kind`): `KIND`, unless a kind is
        split further (a statement by its shape)."""
        return self.KIND


def _role(role: str) -> dict:
    return {"role": role}


def _identifier(_inst, attribute, value):
    if not isinstance(value, str) or not _NAME.match(value):
        raise InvalidSpec(f"{attribute.name} must be a name, got {value!r}")


def is_float_equal(a: Any, b: Any) -> bool:
    """Equality of property values under CORPUS.md: floats within relative 1e-9, NaN equal to NaN."""
    if isinstance(a, float) or isinstance(b, float):
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or isinstance(a, bool) or isinstance(b, bool):
            return False
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0) or a == b
    return a == b
