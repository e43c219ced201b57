"""The data model shared by every part of the project. Data only, no behaviour.

Time is integer milliseconds everywhere.

* `Event`: an `id` and properties.
* Trace items: `Arrive` (an event, optionally after walking the clock to `time`,
  optionally with a CCL operation code), `Advance` (a walk), `Jump`, `SetVariables`.
* `Update`: what a subscriber receives for one unit of work.
* Window specs: frozen attrs classes, one per window kind, each field a real
  semantic variation. Engines whose windows behave alike map to the same spec.

One module per family, mirroring `oracle.windows`; this package re-exports
every name, so `from oracle.model import X` reads any of them:

* `base`: the `Spec` base class, the shared field validators, the reserved
  property names, `is_float_equal`.
* `events`: `Event`, the trace items, `Trace` and its checks, `OPCODES`,
  `Update`, `Pane`, `DerivedValues`.
* `expressions`: the expression nodes and their walks.
* Data windows, by family: `length`, `time`, `time_batch`, `time_order`,
  `sort`, `keep`, `unique`, `expr`; together in `data_windows`.
* `retention` (CCL's retention policies), `lots` (Apama's lot windows),
  `several` (intersections and unions), `groupwin`, `keyed`, `derived`
  (derived-value windows), `panes` (eKuiper's pane windows), `statement`
  (the statements over a window, every engine's: `Statement` and its `Rules`).
* `specs`: every window spec together (`WindowSpec`, `WINDOW_SPECS`) and what
  is read off any spec (`spec_kind`, `nested_specs`, `spec_keys`, ...).
"""

from __future__ import annotations

from oracle.model.base import (
    RESERVED_NAMES,
    Spec,
    is_float_equal,
    reserved_name_error,
    _NAME,
    _identifier,
    _not_negative,
    _optional_int,
    _positive,
    _property_name,
    _property_names,
    _role,
)
from oracle.model.events import (
    MAX_CLOCK,
    OPCODES,
    SIDES,
    Advance,
    Arrive,
    DerivedValues,
    Event,
    Jump,
    Pane,
    SetVariables,
    Trace,
    TraceItem,
    TraceCheck,
    TraceProperties,
    Update,
    check_trace,
    clock_times,
    _NO_SIDES,
    _check_opcode,
    _check_variables,
    _freeze_props,
    _tuple,
    _value_type,
)
from oracle.model.expressions import (
    AGGREGATES,
    ARITHMETIC,
    BUILTIN_EVENTS,
    BUILTINS,
    CALLS,
    COMPARISONS,
    EXPRESSIONS,
    GROUP_NODES,
    LOGICAL,
    Aggregate,
    Binary,
    Builtin,
    Call,
    Collect,
    Deduplicate,
    EventProperty,
    Expression,
    Index,
    Literal,
    Member,
    Name,
    Negate,
    Not,
    expression_names,
    expression_nodes,
    _expression,
    _literal_value,
    _one_of,
    _row_argument,
)
from oracle.model.length import (
    FirstLength,
    Length,
    LengthBatch,
)
from oracle.model.time import (
    ExtTimed,
    FirstTime,
    Time,
    TimeAccum,
)
from oracle.model.time_batch import (
    ExtTimedBatch,
    TimeBatch,
    TimeLengthBatch,
)
from oracle.model.time_order import (
    TimeOrder,
)
from oracle.model.sort import (
    Rank,
    Sort,
    SortKey,
    _criteria,
)
from oracle.model.keep import (
    FirstEvent,
    KeepAll,
    LastEvent,
)
from oracle.model.unique import (
    FirstUnique,
    Unique,
)
from oracle.model.expr import (
    Expr,
    ExprBatch,
    _expiry,
)
from oracle.model.data_windows import (
    BATCH_WINDOWS,
    DATA_WINDOWS,
    NOT_MEMBERS,
    DataWindow,
)
from oracle.model.retention import (
    RETENTION_WINDOWS,
    JumpingLength,
    JumpingTime,
    RetentionWindow,
    SlackLength,
)
from oracle.model.lots import (
    LOT_WINDOWS,
    BatchedLength,
    BatchedTime,
    LengthUnique,
    LotWindow,
    _optional_names,
    _optional_positive,
)
from oracle.model.several import (
    Intersection,
    RetainUnion,
    _members,
)
from oracle.model.groupwin import (
    GROUPED_LOT_WINDOWS,
    GroupWin,
    _grouped,
)
from oracle.model.keyed import (
    KEYED_GROUP_POLICIES,
    KEYED_POLICIES,
    Keyed,
    _keyed_retention,
)
from oracle.model.derived import (
    DERIVED_WINDOWS,
    Correl,
    Derived,
    DerivedWindow,
    Linest,
    Size,
    Uni,
    WeightedAvg,
    _extra_field,
    _extra_names,
    _source,
    _source_field,
    _value_field,
    _value_name,
)
from oracle.model.panes import (
    DAY,
    HOUR,
    MILLISECOND,
    MINUTE,
    PANE_WINDOWS,
    PERIOD_UNITS,
    SECOND,
    TIMED_PANE_WINDOWS,
    CountPanes,
    Hopping,
    PaneWindow,
    Session,
    Sliding,
    Tumbling,
    _filter_field,
    _optional_condition,
    _optional_timestamp,
    _time_zone,
    _timestamp_field,
    _tolerance_field,
    _unit,
    _zone_field,
)
from oracle.model.specs import (
    WINDOW_SPECS,
    WindowSpec,
    accepted_opcodes,
    item_problem,
    nested_specs,
    null_unsafe_member,
    rejects_bad_items,
    spec_expression_names,
    spec_extras,
    spec_keys,
    spec_kind,
    spec_sort_properties,
    spec_timestamps,
    spec_values,
    _children,
    _expressions_in,
    _with_role,
)
from oracle.model.statement import (
    APAMA,
    APAMA_AGGREGATES,
    CCL,
    ESPER,
    ITEM_VALUE,
    KUIPER,
    POSTED,
    RULES,
    SELECTORS,
    SHAPES,
    UNNAMED_FIELD,
    WHERE_AGGREGATE_IN_WINDOW,
    OrderKey,
    Rules,
    SelectItem,
    Statement,
    check_properties,
    selection,
    statement_properties,
    unknown_property,
)
