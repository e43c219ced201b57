"""Every window spec together: `WindowSpec`, `WINDOW_SPECS`, and what is read
off any spec, nested ones included (`spec_kind`, `nested_specs`,
`spec_keys`, `spec_timestamps`, `spec_expression_names`,
`spec_sort_properties`, `spec_values`, `spec_extras`, `accepted_opcodes`,
`null_unsafe_member`,
`rejects_bad_items`, `item_problem`)."""

from __future__ import annotations

from typing import Union

import attrs

from oracle.model.base import Spec
from oracle.model.data_windows import DATA_WINDOWS, DataWindow
from oracle.model.derived import DERIVED_WINDOWS, DerivedWindow
from oracle.model.events import Arrive, TraceItem
from oracle.model.expressions import expression_names
from oracle.model.groupwin import GroupWin
from oracle.model.keyed import Keyed
from oracle.model.lots import LOT_WINDOWS, LotWindow
from oracle.model.panes import PANE_WINDOWS, CountPanes, Hopping, Session, Sliding, Tumbling
from oracle.model.retention import RETENTION_WINDOWS, RetentionWindow
from oracle.model.several import Intersection, RetainUnion
from oracle.model.sort import SortKey


WindowSpec = Union[DataWindow, RetentionWindow, LotWindow, Intersection, RetainUnion, GroupWin, Keyed, DerivedWindow,
                   Tumbling, Hopping, Sliding, Session, CountPanes]
WINDOW_SPECS: tuple[type, ...] = (DATA_WINDOWS + RETENTION_WINDOWS + LOT_WINDOWS
                                  + (Intersection, RetainUnion, GroupWin, Keyed) + DERIVED_WINDOWS + PANE_WINDOWS)


def null_unsafe_member(spec: WindowSpec, event) -> str | None:
    """Why the intersection or union `spec` cannot take `event`: a member reads
    a property in its `unsafe_nulls` (`Spec`'s docstring) that is null for
    it; None otherwise (and for any other spec)."""
    if not isinstance(spec, (Intersection, RetainUnion)):
        return None
    for member in spec.members:
        for inner in nested_specs(member):
            name = next((n for n in inner.unsafe_nulls() if event.get(n) is None), None)
            if name is not None:
                return (f"event {event.id!r}: property {name!r} is null, which the {inner.KIND} member of the "
                        f"{spec.KIND} cannot take (Esper's view throws on it or keeps it under a key read as "
                        "absent, leaving the members before it changed: not modelled)")
    return None


def spec_kind(spec: WindowSpec) -> str:
    """A short name for reports: `length`, `groupwin/time_batch`, `intersection`."""
    if isinstance(spec, GroupWin):
        return f"groupwin/{spec_kind(spec.window)}"
    if isinstance(spec, Keyed):
        return f"keyed/{spec_kind(spec.retention)}"
    return spec.kind_name()


def nested_specs(spec: WindowSpec) -> tuple[WindowSpec, ...]:
    """`spec` and every spec inside it (a grouped window, members), outermost first."""
    found = [spec]
    for value in attrs.astuple(spec, recurse=False):
        for inner in value if isinstance(value, tuple) else (value,):
            if isinstance(inner, Spec):
                found += nested_specs(inner)
    return tuple(found)


def _expressions_in(value) -> list:
    """The expressions a field holds: one, none (None), a tuple of them, or of
    items that hold one (a query's `SelectItem`s and `OrderKey`s)."""
    found = []
    for item in value if isinstance(value, tuple) else (value,):
        item = getattr(item, "expression", item)
        if item is not None:
            found.append(item)
    return found


def _with_role(spec: WindowSpec, role: str) -> tuple[str, ...]:
    names: list[str] = []
    for inner in nested_specs(spec):
        for attribute in attrs.fields(type(inner)):
            if attribute.metadata.get("role") == "expression" and role == "expression":
                for expression in _expressions_in(getattr(inner, attribute.name)):
                    names += expression_names(expression)
            elif attribute.metadata.get("role") == role:
                value = getattr(inner, attribute.name)
                for item in value if isinstance(value, tuple) else (value,):
                    if item is not None:
                        names.append(item.property if isinstance(item, SortKey) else item)
    return tuple(dict.fromkeys(names))


def spec_keys(spec: WindowSpec) -> tuple[str, ...]:
    """The properties `spec` keys events by (a grouping, a unique window's
    keys), outermost first, each once."""
    return _with_role(spec, "key")


def spec_timestamps(spec: WindowSpec) -> tuple[str, ...]:
    """The properties `spec` reads as event timestamps, each once."""
    return _with_role(spec, "timestamp")


def spec_expression_names(spec: WindowSpec) -> tuple[str, ...]:
    """The identifiers `spec`'s expressions read, each once: event properties,
    or variables where the trace declares them."""
    return _with_role(spec, "expression")


def spec_sort_properties(spec: WindowSpec) -> tuple[str, ...]:
    """The properties `spec` sorts events by, each once."""
    return _with_role(spec, "sort")


def spec_values(spec: WindowSpec) -> tuple[str, ...]:
    """The numeric properties a derived-value window computes its statistic of,
    each once."""
    return _with_role(spec, "value")


def spec_extras(spec: WindowSpec) -> tuple[str, ...]:
    """The additional properties a derived-value window copies into its rows
    (without `*`), each once."""
    return _with_role(spec, "extra")


def accepted_opcodes(spec: WindowSpec) -> frozenset[str]:
    """The operation codes `spec` takes: those every window inside it takes,
    except inside a spec that applies the codes itself (`APPLIES_OPCODES`, a
    keyed window: what it wraps sees inserts only), which takes its own."""
    if type(spec).APPLIES_OPCODES:
        return type(spec).OPCODES
    return frozenset.intersection(type(spec).OPCODES, *(accepted_opcodes(inner) for inner in _children(spec)))


def _children(spec: WindowSpec) -> tuple[WindowSpec, ...]:
    """The specs directly inside `spec` (a grouped window, members, a source)."""
    found = []
    for value in attrs.astuple(spec, recurse=False):
        found += [inner for inner in (value if isinstance(value, tuple) else (value,)) if isinstance(inner, Spec)]
    return tuple(found)


def rejects_bad_items(spec: WindowSpec) -> bool:
    """Whether an item `spec` cannot take is rejected (an error update, the trace
    goes on) rather than making the trace invalid (`Spec.REJECTS_BAD_ITEMS`)."""
    return any(type(inner).REJECTS_BAD_ITEMS for inner in nested_specs(spec))


def item_problem(spec: WindowSpec, item: TraceItem) -> str | None:
    """Why `spec` cannot take `item` (an operation code it does not accept), or
    None. What follows is the spec's rule (`Spec.REJECTS_BAD_ITEMS`)."""
    if type(item) is Arrive and item.op is not None and item.op not in accepted_opcodes(spec):
        return f"operation code {item.op!r} is not supported by this window"
    return None
