"""Hypothesis strategies for the differential harness: window specs, traces, cases.

    >>> from hypothesis import given
    >>> from difftest.strategies import cases
    >>> @given(cases(kinds=["length", "groupwin/time_batch"]))
    ... def test_same_output(case): ...

* `windows(dialect, kinds)`: valid specs of the given kinds (`spec_kind` names:
  "length", "time_batch", "groupwin/length", "intersection", ...). Each spec is
  drawn, rendered to the dialect's text and parsed back, so every generated case
  also exercises the dialect's parser and renderer; the parsed spec is returned
  (and must equal the drawn one). `kinds=None` means every kind the oracle runs
  today (`implemented_kinds()`): the data windows and `groupwin` around each, and
  intersections and unions once the oracle has them.
* `traces(properties, max_items)`: a `Trace` of events and clock moves, every
  choice a Hypothesis draw (shrinkable). `seeded_traces(seed, count, ...)`: many
  traces by the same rules from one seeded `random.Random`, about forty times
  cheaper (measured: 10,500 against 230 traces/s); the runner draws the seed
  from Hypothesis and fills its batches this way (generation would otherwise
  cost more than the Spark job).
* `cases(dialect, kinds)`: a `GeneratedCase`, a window (spec and text) and a trace.

Aimed at the hard cases of DESIGN.md "Differential harness":

* A coarse grid: spans are multiples of `GRID` (500 ms) up to 4 s, clock moves
  are mostly grid steps, so due times fall on arrival times; reference points
  are on the grid and off it (1, 250, 1250, 2999 ms), and negative or far ahead.
* Bursts of several events at one instant; events with the `{"event", "time"}`
  shorthand; walks (`advance`) and jumps over many due times; long idle
  stretches, so batches come out empty and FORCE_UPDATE posts; now and then a
  trace four times longer than usual.
* Few distinct key values, so keys repeat; a value the trace has not used yet
  becomes likelier as the trace goes on (new groups late in a trace); a missing
  key property (null) is a key like any other.
* Event timestamps (`ts`, for ext_timed and ext_timed_batch) walk forward on the
  grid, sometimes standing still (ties) and sometimes stepping back (late events).
* Small sizes (1..5), so windows fill and evict early.

Runs are reproducible: every choice comes from Hypothesis, directly or through
a seed it draws. Each choice lists its simplest value first, so a trace drawn
through `traces` shrinks towards short traces of plain events.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, TypeVar

import attrs
from attrs import frozen
from hypothesis import strategies as st

from oracle.dialects import IMPLEMENTED, parse, render, settings, writes
from oracle.errors import UnsupportedWindow
from oracle.model import (
    DAY,
    HOUR,
    MILLISECOND,
    MINUTE,
    SECOND,
    BATCH_WINDOWS,
    BatchedLength,
    BatchedTime,
    LengthUnique,
    KEYED_GROUP_POLICIES,
    KEYED_POLICIES,
    JumpingLength,
    JumpingTime,
    Keyed,
    SlackLength,
    accepted_opcodes,
    Call,
    Collect,
    Deduplicate,
    CountPanes,
    Hopping,
    Index,
    Member,
    OrderKey,
    SelectItem,
    Session,
    Sliding,
    Tumbling,
    Advance,
    Correl,
    Linest,
    Size,
    Uni,
    WeightedAvg,
    Arrive,
    Event,
    Aggregate,
    Binary,
    Builtin,
    EventProperty,
    Expr,
    ExprBatch,
    Literal,
    Name,
    Not,
    NOT_MEMBERS,
    SetVariables,
    ExtTimed,
    ExtTimedBatch,
    FirstEvent,
    FirstLength,
    FirstTime,
    FirstUnique,
    GroupWin,
    Intersection,
    Jump,
    KeepAll,
    LastEvent,
    Length,
    LengthBatch,
    Rank,
    RetainUnion,
    Sort,
    SortKey,
    Time,
    TimeAccum,
    TimeBatch,
    TimeLengthBatch,
    TimeOrder,
    Trace,
    TraceItem,
    Unique,
    WindowSpec,
    nested_specs,
    spec_expression_names,
    spec_extras,
    spec_keys,
    spec_sort_properties,
    spec_timestamps,
    spec_values,
)
from oracle.dialects.apama import stream_query
from oracle.model import APAMA_AGGREGATES, CCL, DERIVED_WINDOWS, KUIPER, SHAPES, Statement
from oracle.windows import make_window

T = TypeVar("T")

GRID = 500
"""The clock grid, ms: spans, most clock moves and timestamps are multiples of it."""

SYMBOLS = ("IBM", "MSFT", None, "GE")
"""Values of `symbol`; None: the event has no `symbol` (a null key)."""

KEY_VALUES = ("A", "B", None, "C")
"""Values of any other key property a window uses (None: missing)."""

KEY_PROPERTIES = ("symbol", "feed")
"""The properties generated windows key by (unique, firstunique, groupwin)."""

OTHER_KEY = "region"
"""A key name beyond the fixed ones, drawn now and then: a window reads the
names it is given, not five it knows (its values are `KEY_VALUES`)."""

TIMESTAMP = "ts"
"""The timestamp property of generated ext_timed and ext_timed_batch windows."""

OTHER_TIMESTAMP = "stamp"
"""A timestamp name beyond `ts`, drawn now and then for ext_timed,
ext_timed_batch and time_order (its values are timestamps, as `ts`'s)."""

VARIABLES = {"MAXC": (2, 0, 1, 3, 5)}
"""The variables generated expressions read, and their values: a trace for such
a window declares them (starting at one value) and sets them now and then."""

# --------------------------------------------------------------------------- window specs

sizes = st.integers(1, 5)
spans = st.integers(1, 8).map(lambda k: k * GRID)
references = st.one_of(
    st.integers(0, 10).map(lambda k: k * GRID),
    st.sampled_from([1, 250, 1250, 2999, -GRID, -1, 100 * GRID]),
)
key_names = st.lists(st.sampled_from((*KEY_PROPERTIES, *KEY_PROPERTIES, OTHER_KEY)), min_size=1, max_size=2,
                     unique=True).map(tuple)
timestamp_names = st.sampled_from((TIMESTAMP, TIMESTAMP, OTHER_TIMESTAMP))
flow_control = st.sampled_from([(False, False), (True, False), (True, True)])
#: sort criteria over the properties every generated event has (symbol sometimes null)
criteria = st.lists(
    st.builds(SortKey, st.sampled_from(("price", "symbol", TIMESTAMP)), st.booleans()),
    min_size=1, max_size=2, unique_by=lambda c: c.property,
).map(tuple)


def _binary(op: str):
    return lambda left, right: Binary(op, left, right)


_counts = st.integers(0, 5).map(Literal)
_amounts = st.integers(40, 79).map(lambda k: Literal(k / 4))  # prices are 10.0 to 20.0 in quarters: a bound some price passes
_spreads = st.integers(0, 40).map(lambda k: Literal(k / 4))  # a max - min of such prices
_spans_literal = spans.map(Literal)
_count_bound = _counts | st.just(Name("MAXC"))
_expiry_atoms = st.one_of(
    st.builds(_binary("<="), st.just(Builtin("current_count")), _count_bound),
    st.builds(_binary("<"), st.just(Builtin("current_count")), _count_bound),
    st.builds(lambda t: Binary(">", Builtin("oldest_timestamp"), Binary("-", Builtin("newest_timestamp"), t)), _spans_literal),
    st.builds(_binary("="), st.just(Builtin("expired_count")), _counts),
    st.builds(_binary(">="), st.just(Builtin("expired_count")), _counts),
    st.builds(_binary("<"), st.just(Aggregate("sum", Name("price"))), _amounts.map(lambda a: Literal(a.value * 3))),
    st.builds(_binary("<"), st.just(Aggregate("avg", Name("price"))), _amounts),
    st.builds(_binary("<"), st.just(Binary("-", Aggregate("max", Name("price")), Aggregate("min", Name("price")))),
              _spreads),
    st.builds(_binary("<="), st.sampled_from([Aggregate("count"), Aggregate("count", Name("symbol"))]), _count_bound),
    st.just(Binary("=", EventProperty("newest_event", "symbol"), EventProperty("oldest_event", "symbol"))),
    st.builds(_binary(">"), st.just(Name("price")), _amounts),
    st.builds(_binary("!="), st.just(Name("symbol")), st.sampled_from([Literal(s) for s in SYMBOLS if s])),
)
_batch_atoms = st.one_of(
    st.builds(_binary(">="), st.just(Builtin("current_count")), _count_bound),
    st.builds(_binary(">"), st.just(Aggregate("sum", Name("price"))), _amounts.map(lambda a: Literal(a.value * 3))),
    st.builds(lambda t: Binary(">=", Binary("-", Builtin("newest_timestamp"), Builtin("oldest_timestamp")), t), _spans_literal),
    st.builds(_binary("="), st.just(Name("symbol")), st.sampled_from([Literal(s) for s in SYMBOLS if s])),
    st.just(Binary("!=", EventProperty("newest_event", "symbol"), EventProperty("oldest_event", "symbol"))),
    st.builds(_binary(">"), st.just(Name("price")), _amounts),
)


def _combined(atoms: st.SearchStrategy) -> st.SearchStrategy:
    """An atom, or two joined by and/or, or a negation: null, three-valued logic
    and the short-circuit all come up."""
    return atoms | st.builds(lambda op, a, b: Binary(op, a, b), st.sampled_from(("and", "or")), atoms, atoms) | atoms.map(Not)


DATA_WINDOW_SPECS: dict[type, st.SearchStrategy] = {
    Length: st.builds(Length, sizes),
    LengthBatch: st.builds(LengthBatch, sizes),
    Time: st.builds(Time, spans),
    ExtTimed: st.builds(ExtTimed, timestamp_names, spans),
    TimeBatch: st.builds(lambda span, ref, flags: TimeBatch(span, ref, *flags), spans, st.none() | references, flow_control),
    TimeLengthBatch: st.builds(lambda span, size, flags: TimeLengthBatch(span, size, *flags), spans, sizes, flow_control),
    ExtTimedBatch: st.builds(ExtTimedBatch, timestamp_names, spans, st.none() | references),
    TimeAccum: st.builds(TimeAccum, spans),
    TimeOrder: st.builds(TimeOrder, timestamp_names, st.just(0) | spans),
    Sort: st.builds(Sort, sizes, criteria),
    Rank: st.builds(Rank, key_names, sizes, criteria),
    KeepAll: st.just(KeepAll()),
    FirstLength: st.builds(FirstLength, sizes),
    FirstTime: st.builds(FirstTime, spans),
    FirstEvent: st.just(FirstEvent()),
    LastEvent: st.just(LastEvent()),
    Unique: st.builds(Unique, key_names),
    FirstUnique: st.builds(FirstUnique, key_names),
    Expr: st.builds(Expr, _combined(_expiry_atoms)),
    ExprBatch: st.builds(ExprBatch, _combined(_batch_atoms), st.booleans()),
}
"""One strategy per data-window spec class."""

_any_data_window = st.one_of(*(s for cls, s in DATA_WINDOW_SPECS.items() if cls not in NOT_MEMBERS))


def _at_most_one_batch(members: list) -> bool:
    return sum(isinstance(m, BATCH_WINDOWS) for m in members) <= 1


UNGROUPED_SPECS: dict[type, st.SearchStrategy] = {
    **DATA_WINDOW_SPECS,
    # Esper rejects two batch windows in an intersection (esper.md §6)
    Intersection: st.lists(_any_data_window, min_size=2, max_size=3).filter(_at_most_one_batch).map(Intersection),
    RetainUnion: st.lists(_any_data_window, min_size=2, max_size=3).map(RetainUnion),
}

VALUE_PROPERTIES = ("price", "ts")
"""The numeric properties every generated event has (`price` a float, `ts` an integer)."""

EXTRA_PROPERTIES = ("symbol", "price", "ts", "id")
"""The additional properties of generated derived-value windows: properties every
generated event has (`symbol` sometimes missing: null)."""

_values = st.sampled_from(VALUE_PROPERTIES)
_extras = st.lists(st.sampled_from(EXTRA_PROPERTIES), max_size=2, unique=True).map(tuple)
_wildcard = st.sampled_from((False, False, True))
#: a derived-value window's source: the stream itself, a data window, an intersection or a union
_sources = st.one_of(st.none(), *UNGROUPED_SPECS.values())

DERIVED_SPECS: dict[type, st.SearchStrategy] = {
    Size: st.builds(Size, _extras, _wildcard, source=_sources),
    Uni: st.builds(Uni, _values, _extras, _wildcard, source=_sources),
    Linest: st.builds(Linest, _values, _values, _extras, _wildcard, source=_sources),
    Correl: st.builds(Correl, _values, _values, _extras, _wildcard, source=_sources),
    WeightedAvg: st.builds(WeightedAvg, _values, _values, _extras, _wildcard, source=_sources),
}
"""Derived-value windows."""


def _grouped_statistics(keys: tuple, window) -> GroupWin | None:
    """`#groupwin(keys)` around a derived-value window, or None where Esper
    refuses it (a key among the row's fields beside one that is not) or Spark
    does not build it (a source that may post an update of no event: a
    FORCE_UPDATE batch, an expression window on a `set` item)."""
    added = [k for k in keys if window.has_field(k)]
    forced = window.source is not None and any(
        isinstance(inner, (Expr, ExprBatch)) or (isinstance(inner, (TimeBatch, TimeLengthBatch)) and inner.force_update)
        for inner in nested_specs(window.source))
    if (added and len(added) != len(keys)) or forced:
        return None
    return GroupWin(keys, window)


#: grouped statistics, per derived-value kind
GROUPED_DERIVED_SPECS: dict[type, st.SearchStrategy] = {
    cls: st.builds(_grouped_statistics, key_names, strategy).filter(lambda spec: spec is not None)
    for cls, strategy in DERIVED_SPECS.items()
}

RETENTION_SPECS: dict[type, st.SearchStrategy] = {
    SlackLength: st.builds(SlackLength, sizes, st.integers(2, 4)),
    JumpingLength: st.builds(JumpingLength, sizes),
    JumpingTime: st.builds(JumpingTime, spans),
}
"""CCL's retention policies that are no other kind (`oracle.windows.retention`)."""

_POLICY_SPECS = {cls: (RETENTION_SPECS | DATA_WINDOW_SPECS)[cls] for cls in KEYED_POLICIES}
#: a keyed window's retention: a policy, or a count policy per group (PER)
KEYED_SPECS: dict[str, st.SearchStrategy] = {
    **{f"keyed/{cls.KIND}": st.builds(Keyed, key_names, inner) for cls, inner in _POLICY_SPECS.items()},
    **{f"keyed/groupwin/{cls.KIND}": st.builds(Keyed, key_names, st.builds(GroupWin, key_names, _POLICY_SPECS[cls]))
       for cls in KEYED_GROUP_POLICIES},
}
"""Keyed windows (CCL's PRIMARY KEY), one strategy per retention kind."""

_unique_key = st.sampled_from(KEY_PROPERTIES).map(lambda name: (name,))
#: batch periods: on the grid and off it (250 ms), shorter and longer than the spans
_periods = st.sampled_from((GRID, 2 * GRID, 250, 3 * GRID, 4 * GRID, 8 * GRID, 2))


def _batched_time(span, period, size, unique, partition):
    return BatchedTime(span, period, size, unique, partition if size is not None or unique else ())


LOT_SPECS: dict[type, st.SearchStrategy] = {
    BatchedTime: st.builds(_batched_time, spans, _periods, st.none() | sizes, st.just(()) | _unique_key,
                           st.just(()) | key_names),
    # a batch as large as the size, without a unique key, is length_batch: one larger then
    BatchedLength: st.builds(lambda size, batch, unique: BatchedLength(size, batch + (batch == size and not unique), unique),
                             sizes, st.integers(2, 5), st.just(()) | _unique_key),
    LengthUnique: st.builds(LengthUnique, sizes, _unique_key, st.none() | spans),
}
"""Apama's lot windows (`oracle.windows.lots`); a `BatchedTime` keeps its own partitions."""

#: Apama's windows: the lot kinds and the forms that are other kinds (`oracle.dialects.apama`)
APAMA_WINDOWS = st.one_of(
    DATA_WINDOW_SPECS[Length], DATA_WINDOW_SPECS[LengthBatch], DATA_WINDOW_SPECS[Time], DATA_WINDOW_SPECS[KeepAll],
    st.builds(lambda span, size: Intersection((Time(span), Length(size)), stale_time_timers=False), spans, sizes),
    st.builds(lambda key, span: Intersection((Unique(key), Time(span)), stale_time_timers=False), _unique_key, spans),
    *LOT_SPECS.values(),
    st.builds(GroupWin, key_names, st.one_of(DATA_WINDOW_SPECS[Length], DATA_WINDOW_SPECS[LengthBatch],
                                             LOT_SPECS[BatchedLength], LOT_SPECS[LengthUnique])),
)


def _stream_query(window, output, argument):
    """An Apama query: `select v` (`istream`), `select rstream v`, or an aggregate."""
    if output == "rstream" and isinstance(window, KeepAll):
        output = "istream"  # `retain all` never removes: rstream over it is refused (InvalidSpec)
    return stream_query(window, output, argument if output in ("sum", "avg", "min", "max") else None)


STREAM_QUERY_SPECS: dict[str, st.SearchStrategy] = {
    "stream_query": st.builds(_stream_query, APAMA_WINDOWS, st.sampled_from(("istream", "rstream") + APAMA_AGGREGATES),
                              st.sampled_from(VALUE_PROPERTIES)),
}
"""Stream queries over Apama's windows: `select v`, `select rstream v`, aggregates."""

# --------------------------------------------------------------------------- Esper statements over a window
# Over every Esper data window, intersection and union, grouped or not: one
# strategy per processor (`Statement.shape`), aggregates of the float `price`,
# the integer `ts` and the string `symbol`, GROUP BY `symbol`, the stream
# filter, WHERE and HAVING now and then, each stream selector.

_STATEMENT_WINDOWS = st.one_of(*UNGROUPED_SPECS.values(), st.builds(GroupWin, key_names, st.one_of(*UNGROUPED_SPECS.values())),
                               # the seed's `#groupwin(symbol)#length(5)`: the sub-windows that slide by count, weighted
                               st.builds(GroupWin, key_names, st.one_of(*(UNGROUPED_SPECS[c] for c in (Length, KeepAll, LastEvent)))),
                               # `#time`, whose statements read the events by their clocks (`TimeFrame`), weighted too
                               UNGROUPED_SPECS[Time],
                               st.one_of(*DERIVED_SPECS.values()).map(lambda w: attrs.evolve(w, extra=(*w.extra, "symbol"))),
                               *GROUPED_DERIVED_SPECS.values())


def _row_names(window) -> dict[str, str]:
    """Over a derived-value window the statement reads its rows: `price` and
    `ts` become two of its fields, `symbol` its GROUP BY key (an additional
    property, or the grouped statistics' first key)."""
    inner = window.window if isinstance(window, GroupWin) else window
    if not isinstance(inner, DERIVED_WINDOWS):
        return {}
    symbol = window.keys[0] if isinstance(window, GroupWin) else "symbol"
    return {"price": inner.FIELDS[0], "ts": inner.FIELDS[-1], "symbol": symbol}


def _renamed(node, names: dict[str, str]):
    """`node` with each `Name` read through `names`."""
    if node is None or not names:
        return node
    if isinstance(node, Name):
        return Name(names.get(node.name, node.name))
    changed = {a.name: _renamed(getattr(node, a.name), names) for a in attrs.fields(type(node))
               if a.name in ("operand", "left", "right", "argument")}
    return attrs.evolve(node, **changed)
_STATEMENT_AGGREGATES = (
    Aggregate("count"), Aggregate("sum", Name("price")), Aggregate("avg", Name("price")),
    Aggregate("min", Name("price")), Aggregate("max", Name("price")), Aggregate("count", Name("symbol"), distinct=True),
    Aggregate("count", Name("symbol")), Aggregate("sum", Name("ts")), Aggregate("max", Name("symbol")),
    Aggregate("sum", Name("price"), distinct=True), Aggregate("avg", Name("ts"), distinct=True),
)
#: select items that combine aggregates, or an aggregate and a literal
_STATEMENT_COMBINED = (
    Binary("/", Aggregate("sum", Name("price")), Aggregate("count")),
    Binary("-", Aggregate("max", Name("price")), Aggregate("min", Name("price"))),
    Binary("+", Aggregate("count"), Literal(1)),
    Binary("*", Aggregate("avg", Name("price")), Aggregate("count", Name("symbol"))),
)
_STATEMENT_ROW_ITEMS = (
    SelectItem(), SelectItem(Name("symbol")), SelectItem(Name("price")), SelectItem(Name("ts"), "t"),
    SelectItem(Binary("*", Name("price"), Literal(2))), SelectItem(Binary("/", Name("ts"), Name("price")), "ratio"),
    SelectItem(Binary("%", Name("ts"), Literal(3))),
)
#: GROUP BY keys: the string properties, the float `price`, the integer `ts`, expressions over them
_GROUP_KEYS = (Name("symbol"), Name("feed"), Name("price"), Name("ts"),
               Binary(">", Name("price"), Literal(15.0)), Binary("%", Name("ts"), Literal(3)))
#: what a statement over a derived-value window can key by: its rows hold no `feed` (`_row_names`)
_ROW_GROUP_KEYS = tuple(k for k in _GROUP_KEYS if k != Name("feed"))
_statement_atoms = st.one_of(
    st.builds(_binary(">"), st.just(Name("price")), _amounts),
    st.builds(_binary("!="), st.just(Name("symbol")), st.sampled_from([Literal(s) for s in SYMBOLS if s])),
    st.builds(_binary(">"), st.just(Name("ts")), st.sampled_from([Literal(k * GRID) for k in (1, 2, 4)])),
    st.builds(_binary("="), st.just(Name("feed")), st.sampled_from([Literal(s) for s in KEY_VALUES if s])))
_statement_conditions = st.one_of(st.none(), st.none(), st.none(), _combined(_statement_atoms))
#: WHERE over a derived-value window's rows: they hold no `feed`
_derived_row_conditions = st.one_of(st.none(), st.none(), st.none(), _combined(_statement_atoms.filter(
    lambda atom: atom.left != Name("feed"))))
#: HAVING over any aggregate and over arithmetic of aggregates, with bounds some groups pass
_having_atoms = st.one_of(
    st.builds(_binary(">"), st.just(Aggregate("count")), _counts),
    st.builds(_binary(">"), st.just(Aggregate("sum", Name("price"))), _amounts),
    st.builds(_binary("<"), st.sampled_from([Aggregate("avg", Name("price")), Aggregate("min", Name("price"))]), _amounts),
    st.builds(_binary(">="), st.just(Aggregate("max", Name("price"))), _amounts),
    st.builds(_binary(">="), st.just(Aggregate("count", Name("symbol"), distinct=True)), st.integers(1, 3).map(Literal)),
    st.builds(_binary(">"), st.just(Binary("/", Aggregate("sum", Name("price")), Aggregate("count"))), _amounts),
    st.builds(_binary(">"), st.just(Binary("-", Aggregate("max", Name("price")), Aggregate("min", Name("price")))),
              _spreads),
    st.builds(_binary(">"), st.just(Aggregate("sum", Name("ts"))), st.sampled_from([Literal(k * GRID) for k in (2, 8)])),
)
_having = st.one_of(st.none(), st.none(), _having_atoms, _combined(_having_atoms))


def _key_item(key, n: int) -> SelectItem:
    """A GROUP BY key as a select item: a property by its name, an expression named `g<n>`."""
    return SelectItem(key) if isinstance(key, Name) else SelectItem(key, f"g{n}")


@st.composite
def _statement(draw, shape: str) -> Statement:
    """A statement of one shape over a drawn Esper window (section comment)."""
    window = draw(_STATEMENT_WINDOWS)
    derived = isinstance(window.window if isinstance(window, GroupWin) else window, DERIVED_WINDOWS)
    aggregates = draw(st.lists(st.sampled_from(_STATEMENT_AGGREGATES + _STATEMENT_COMBINED), min_size=1, max_size=3,
                               unique=True))
    named = [SelectItem(node, draw(st.sampled_from((None, f"a{n}")))) for n, node in enumerate(aggregates)]
    keys: tuple = ()
    having = None
    if shape == "simple":
        items = draw(st.just([SelectItem()])  # `*` first where it stands, as Esper writes it
                     | st.lists(st.sampled_from(_STATEMENT_ROW_ITEMS[1:]), min_size=1, max_size=3, unique=True)
                     | st.lists(st.sampled_from(_STATEMENT_ROW_ITEMS[1:]), min_size=1, max_size=2, unique=True).map(
                         lambda rest: [SelectItem(), *rest]))
    elif shape == "row_for_all":
        items = named
    elif shape == "row_per_event":
        items = [draw(st.sampled_from((SelectItem(Name("symbol")), SelectItem(Name("price"), "p")))), *named]
    else:  # GROUP BY one to three keys of any kind, or now and then the `#groupwin` keys
        keys = tuple(draw(st.lists(st.sampled_from(_ROW_GROUP_KEYS if derived else _GROUP_KEYS), min_size=1, max_size=3,
                                   unique=True)))
        if isinstance(window, GroupWin) and not derived and draw(st.booleans()):
            keys = tuple(Name(k) for k in window.keys)
        # over a derived-value window `price` and `ts` may read one field: a key once
        keys = tuple({_renamed(k, _row_names(window)): k for k in keys}.values())
        extra = []
        if shape == "aggregate_grouped":  # a property read outside the aggregates that is no key
            outside = [p for p in (Name("price"), Name("ts"), Name("symbol")) if p not in keys]
            if not outside:
                keys, outside = keys[:-1], [keys[-1]]
            extra = [SelectItem(draw(st.sampled_from(outside)), "p")]
        items = [*(_key_item(k, n) for n, k in enumerate(keys)), *extra, *named]
    if shape != "simple":
        having = draw(_having)
    selector = draw(st.sampled_from(("irstream", "irstream", "istream", "rstream")))
    names = _row_names(window)
    items = [SelectItem(_renamed(i.expression, names), i.alias) for i in items]
    where = draw(_derived_row_conditions if derived else _statement_conditions)
    return Statement(tuple(items), window, selector, "E", draw(_statement_conditions),
                     _renamed(where, names), tuple(_renamed(k, names) for k in keys), _renamed(having, names))


_CCL_POLICIES = st.one_of(*_POLICY_SPECS.values(),
                         *(st.builds(GroupWin, key_names, _POLICY_SPECS[cls]) for cls in KEYED_GROUP_POLICIES))
#: CCL's aggregates: min and max of numbers, DISTINCT in count only (the dialect refuses the rest)
_CCL_AGGREGATES = tuple(a for a in _STATEMENT_AGGREGATES if not (a.function in ("min", "max") and a.argument == Name("symbol"))
                        and not (a.distinct and a.function != "count"))


@st.composite
def _aggregation(draw) -> Statement:
    """A CCL aggregation window over a drawn retention policy: GROUP BY one to
    three keys of any kind (`_GROUP_KEYS`), each a select column as CCL
    requires, named aggregates and their combinations, HAVING now and then."""
    keys = tuple(draw(st.lists(st.sampled_from(_GROUP_KEYS), min_size=1, max_size=3, unique=True)))
    aggregates = draw(st.lists(st.sampled_from(_CCL_AGGREGATES + _STATEMENT_COMBINED), min_size=1, max_size=3,
                               unique=True))
    items = [SelectItem(k) if isinstance(k, Name) else SelectItem(k, f"g{n}") for n, k in enumerate(keys)]
    items += [SelectItem(a, f"a{n}") for n, a in enumerate(aggregates)]
    return Statement(tuple(items), draw(_CCL_POLICIES), keys=keys, having=draw(_having), rules=CCL)


STATEMENT_SPECS: dict[str, st.SearchStrategy] = {
    **{f"statement/{shape}": _statement(shape) for shape in SHAPES},
    "statement/store": _aggregation(),
}
"""Statements: Esper's, one kind per processor; CCL's aggregation windows."""

#: the kinds that are queries, not windows (what they post is rows made from a window's posts)
QUERY_KINDS: tuple[str, ...] = (*STREAM_QUERY_SPECS, *STATEMENT_SPECS)

#: spec class -> its strategy: every kind of the model (the completeness test checks it)
STRATEGIES: dict[type, st.SearchStrategy] = {
    **UNGROUPED_SPECS,
    GroupWin: st.one_of(st.builds(GroupWin, key_names, st.one_of(*UNGROUPED_SPECS.values())),
                        *GROUPED_DERIVED_SPECS.values()),
    **DERIVED_SPECS,
    **RETENTION_SPECS,
    Keyed: st.one_of(*KEYED_SPECS.values()),
    **LOT_SPECS,
}

SPECS: dict[str, st.SearchStrategy] = {
    **{cls.KIND: strategy for cls, strategy in UNGROUPED_SPECS.items()},
    **{f"groupwin/{cls.KIND}": st.builds(GroupWin, key_names, inner) for cls, inner in UNGROUPED_SPECS.items()},
    **{cls.KIND: strategy for cls, strategy in DERIVED_SPECS.items()},
    **{f"groupwin/{cls.KIND}": strategy for cls, strategy in GROUPED_DERIVED_SPECS.items()},
    **{cls.KIND: strategy for cls, strategy in RETENTION_SPECS.items()},
    **{f"groupwin/{cls.KIND}": st.builds(GroupWin, key_names, RETENTION_SPECS[cls])
       for cls in RETENTION_SPECS if cls in KEYED_GROUP_POLICIES},
    **KEYED_SPECS,
    **{cls.KIND: strategy for cls, strategy in LOT_SPECS.items()},
    **{f"groupwin/{cls.KIND}": st.builds(GroupWin, key_names, LOT_SPECS[cls]) for cls in (BatchedLength, LengthUnique)},
    **STREAM_QUERY_SPECS,
    **STATEMENT_SPECS,
}
"""One strategy per kind, keyed by `spec_kind` name (eKuiper's are added below)."""

# --------------------------------------------------------------------------- eKuiper's pane windows and queries
# Periods on the trace grid: seconds mostly (1 to 4 s: ends fall on arrivals
# and on idle stretches), milliseconds in GRID steps; event time on `ts` with
# tolerances around the grid, so rows come late and several panes close at
# once; conditions over the generated events' `price`, `symbol` and `ts`.

_conditions = st.one_of(
    st.builds(_binary(">"), st.just(Name("price")), _amounts),
    st.builds(_binary("<="), st.just(Name("price")), _amounts),
    st.builds(_binary("="), st.just(Name("symbol")), st.sampled_from([Literal(s) for s in SYMBOLS if s])),
    st.builds(_binary("!="), st.just(Name("symbol")), st.sampled_from([Literal(s) for s in SYMBOLS if s])),
)
_row_conditions = _conditions | st.builds(lambda op, a, b: Binary(op, a, b), st.sampled_from(("and", "or")),
                                          _conditions, _conditions)
_filters = st.one_of(st.none(), st.none(), _row_conditions)
_triggers = st.one_of(
    st.none(), st.none(), _row_conditions,
    st.builds(lambda t: Binary(">", Binary("-", Name(TIMESTAMP), Call("last_hit_time")), Literal(t)),
              st.sampled_from((0, GRID, 2 * GRID, 1000))),
)
# minutes, hours and days now and then: their ends fall in a trace that starts
# just before a UTC hour or day (`_START_TIMES`), and an hour's or a day's
# alignment in a zone is the alignment quirk's case (a creation on its end)
_units = st.sampled_from((SECOND, SECOND, SECOND, SECOND, SECOND, SECOND, MILLISECOND, MILLISECOND, MINUTE, HOUR, DAY))


def _unit_period(unit: int, low: int = 1, high: int = 4) -> st.SearchStrategy[int]:
    """A period of `unit`: 1 to 4 s, GRID multiples in ms, 1 or 2 minutes,
    1 or 8 hours (8: a day in UTC+8 starts on its end), 1 day."""
    if unit == MILLISECOND:
        return st.integers(low, high * 2).map(lambda k: k * GRID)
    if unit == MINUTE:
        return st.integers(1, 2).map(lambda k: k * unit)
    if unit == HOUR:
        return st.sampled_from((unit, 8 * unit))
    if unit == DAY:
        return st.just(unit)
    return st.integers(low, high).map(lambda k: k * unit)


@st.composite
def _time_fields(draw) -> dict:
    """Processing time, or event time on `ts` with a late tolerance; a zone."""
    fields: dict = {}
    if draw(st.booleans()):
        fields["timestamp"] = TIMESTAMP
        fields["late_tolerance"] = draw(st.sampled_from((0, 0, GRID, 1000, 2 * GRID + 1, 3000)))
    fields["time_zone"] = draw(st.sampled_from(("UTC", "UTC", "UTC", "Asia/Shanghai", "Asia/Kathmandu",
                                                "America/New_York", "Europe/Berlin")))
    return fields


@st.composite
def _tumbling(draw) -> Tumbling:
    unit = draw(_units)
    return Tumbling(draw(_unit_period(unit)), unit, filter=draw(_filters), **draw(_time_fields()))


@st.composite
def _hopping(draw) -> Hopping:
    unit = draw(_units)
    return Hopping(draw(_unit_period(unit)), draw(_unit_period(unit)), unit, filter=draw(_filters),
                   **draw(_time_fields()))


@st.composite
def _sliding(draw) -> Sliding:
    unit = draw(_units)
    delay = draw(st.just(0) | _unit_period(unit, 1, 2))
    return Sliding(draw(_unit_period(unit, 1, 3)), unit, delay, trigger=draw(_triggers), filter=draw(_filters),
                   **draw(_time_fields()))


@st.composite
def _session(draw) -> Session:
    unit = draw(_units)
    return Session(draw(_unit_period(unit)), draw(_unit_period(unit, 1, 3)), unit, filter=draw(_filters),
                   **draw(_time_fields()))


@st.composite
def _count(draw) -> CountPanes:
    size = draw(sizes)
    return CountPanes(size, draw(st.integers(1, size)), filter=draw(_filters))


PANE_SPECS: dict[type, st.SearchStrategy] = {
    Tumbling: _tumbling(), Hopping: _hopping(), Sliding: _sliding(), Session: _session(), CountPanes: _count(),
}
"""eKuiper's windows, one strategy per pane-window spec class."""

_AGGREGATE_ITEMS = (
    SelectItem(Aggregate("count"), "c"), SelectItem(Aggregate("sum", Name("price")), "total"),
    SelectItem(Aggregate("avg", Name("price"))), SelectItem(Aggregate("min", Name("price")), "low"),
    SelectItem(Aggregate("max", Name(TIMESTAMP)), "latest"), SelectItem(Aggregate("count", Name("symbol")), "named"),
    SelectItem(Member(Index(Collect(), 0), "symbol"), "first_symbol"), SelectItem(Index(Collect(Name("id")), 1)),
    SelectItem(Deduplicate(Name("symbol"), True), "distinct"), SelectItem(Member(Deduplicate(Name("price"), False), "id")),
    SelectItem(Call("event_time"), "et"), SelectItem(Aggregate("max", Call("event_time")), "last_time"),
)
_ROW_ITEMS = (
    SelectItem(), SelectItem(Name("symbol")), SelectItem(Name("price")), SelectItem(Name("id")),
    SelectItem(Binary("*", Name("price"), Literal(2)), "double"), SelectItem(Call("event_time"), "et"),
)
_PANE_ITEMS = (SelectItem(Call("window_start")), SelectItem(Call("window_end"), "we"), SelectItem(Call("row_number"), "rn"))


#: an eKuiper query's GROUP BY keys beside its window: properties of each kind, an expression
_KUIPER_GROUP_KEYS = (Name("symbol"), Name("symbol"), Name("feed"), Name("price"), Binary(">", Name("price"), Literal(15.0)))
_kuiper_having = st.one_of(  # a count bound of 1 to 3: a pane's groups are small, and some pass it, some not
    st.builds(_binary(">"), st.just(Aggregate("count")), st.integers(1, 3).map(Literal)),
    st.builds(_binary(">"), st.just(Aggregate("sum", Name("price"))), _amounts),
    st.builds(_binary("<"), st.just(Aggregate("avg", Name("price"))), _amounts),
    st.builds(_binary(">"), st.just(Binary("-", Aggregate("max", Name("price")), Aggregate("min", Name("price")))),
              _spreads),
)


@st.composite
def _query(draw) -> Statement:
    """A statement over a drawn pane window: grouped by nothing or one to three
    keys (`_KUIPER_GROUP_KEYS`), or row by row; WHERE, HAVING (over any
    aggregate and their arithmetic) and ORDER BY now and then."""
    window = draw(st.one_of(*PANE_SPECS.values()))
    aggregate = draw(st.sampled_from((True, True, False)))  # grouped two times in three: keys and HAVING are there
    if aggregate:
        keys = draw(st.lists(st.sampled_from(_KUIPER_GROUP_KEYS), min_size=1, max_size=3, unique=True).map(tuple)
                    | st.just(()))
        items = draw(st.lists(st.sampled_from(_AGGREGATE_ITEMS), min_size=1, max_size=3, unique=True))
        items = [_key_item(k, n) for n, k in enumerate(keys)] + items
        having = draw(_kuiper_having | st.builds(lambda op, a, b: Binary(op, a, b),  # eKuiper writes no NOT
                                                 st.sampled_from(("and", "or")), _kuiper_having, _kuiper_having)
                      | st.none())
        order = draw(st.sampled_from(((), (OrderKey(Name("symbol")),), (OrderKey(Aggregate("count"), True),))))
    else:
        keys, having = (), None
        items = draw(st.lists(st.sampled_from(_ROW_ITEMS), min_size=1, max_size=3, unique=True))
        order = draw(st.sampled_from(((), (OrderKey(Name("price"), True),), (OrderKey(Name("symbol")),))))
    items += draw(st.lists(st.sampled_from(_PANE_ITEMS), max_size=2, unique=True))
    where = draw(st.one_of(st.none(), st.none(), _row_conditions))
    if where is not None and not (isinstance(window, KUIPER.where_into) and not window.event_time) and draw(st.booleans()):
        # a WHERE after the window may read the pane's aggregates (eKuiper's AggFuncPlan)
        where = draw(st.builds(_binary(">="), st.just(Name("price")),
                               st.sampled_from([Aggregate("avg", Name("price")), Aggregate("min", Name("price")),
                                                Binary("-", Aggregate("max", Name("price")), Literal(2.5))])))
    return Statement(tuple(items), window, source="demo", where=where, keys=keys, having=having, order=order,
                     rules=KUIPER)

KUIPER_SPECS: dict[str, st.SearchStrategy] = {
    **{cls.KIND: strategy for cls, strategy in PANE_SPECS.items()},
    **{f"query/{cls.KIND}": _query().filter(lambda q, cls=cls: type(q.window) is cls) for cls in PANE_SPECS},
}
"""eKuiper's kinds, keyed by `spec_kind` name."""

SPECS.update(KUIPER_SPECS)
KINDS: tuple[str, ...] = tuple(SPECS)
"""Every kind; a dialect's are those it writes (`implemented_kinds`)."""
STRATEGIES.update(PANE_SPECS)
#: every engine's statements: one model, its rules drawn with it
STRATEGIES[Statement] = st.one_of(*STATEMENT_SPECS.values(), *STREAM_QUERY_SPECS.values(), _query())

#: the simplest spec of each class, to ask the oracle whether it runs the kind
EXAMPLES: dict[type, WindowSpec] = {
    Length: Length(1), LengthBatch: LengthBatch(1), Time: Time(GRID), ExtTimed: ExtTimed(TIMESTAMP, GRID),
    TimeBatch: TimeBatch(GRID), TimeLengthBatch: TimeLengthBatch(GRID, 1), ExtTimedBatch: ExtTimedBatch(TIMESTAMP, GRID), TimeAccum: TimeAccum(GRID), TimeOrder: TimeOrder(TIMESTAMP, GRID),
    Sort: Sort(1, (SortKey("price"),)), Rank: Rank(("symbol",), 1, (SortKey("price"),)),
    KeepAll: KeepAll(),
    FirstLength: FirstLength(1), FirstTime: FirstTime(GRID), FirstEvent: FirstEvent(), LastEvent: LastEvent(),
    Unique: Unique(("symbol",)), FirstUnique: FirstUnique(("symbol",)),
    Expr: Expr(Binary("<=", Builtin("current_count"), Literal(1))), ExprBatch: ExprBatch(Literal(True)),
    Intersection: Intersection((Length(1), KeepAll())), RetainUnion: RetainUnion((Length(1), KeepAll())),
    GroupWin: GroupWin(("symbol",), Length(1)),
    Size: Size(), Uni: Uni("price"), Linest: Linest("price", "ts"), Correl: Correl("price", "ts"),
    WeightedAvg: WeightedAvg("price", "ts"),
    SlackLength: SlackLength(1, 2), JumpingLength: JumpingLength(1), JumpingTime: JumpingTime(GRID),
    Keyed: Keyed(("symbol",), KeepAll()),
    Tumbling: Tumbling(SECOND), Hopping: Hopping(2 * SECOND, SECOND), Sliding: Sliding(SECOND),
    Session: Session(2 * SECOND, SECOND), CountPanes: CountPanes(1, 1),
    BatchedTime: BatchedTime(GRID, GRID), BatchedLength: BatchedLength(1, 2), LengthUnique: LengthUnique(1, ("symbol",)),
    Statement: Statement((SelectItem(Aggregate("count"), "n"),), Length(1), "irstream"),
}


#: the simplest statement of each kind (`Statement.kind_name`'s suffix)
STATEMENT_EXAMPLES: dict[str, Statement] = {
    "simple": Statement((SelectItem(),), Length(1)),
    "row_for_all": EXAMPLES[Statement],
    "row_per_event": Statement((SelectItem(Name("symbol")), SelectItem(Aggregate("count"), "n")), Length(1)),
    "row_per_group": Statement((SelectItem(Name("symbol")), SelectItem(Aggregate("count"), "n")), Length(1),
                               keys=(Name("symbol"),)),
    "aggregate_grouped": Statement((SelectItem(Name("price")), SelectItem(Aggregate("count"), "n")), Length(1),
                                   keys=(Name("symbol"),)),
    "store": Statement((SelectItem(Name("symbol")), SelectItem(Aggregate("count"), "n")), Length(1),
                       keys=(Name("symbol"),), rules=CCL),
}
#: the simplest eKuiper query and Apama query
QUERY_EXAMPLES: dict[str, Statement] = {
    "query": Statement((SelectItem(Aggregate("count"), "c"),), Tumbling(SECOND), source="demo", rules=KUIPER),
    "stream_query": stream_query(Length(1), "istream"),
}


def _kind_example(kind: str) -> WindowSpec:
    """The simplest spec of a kind named as `spec_kind` names it."""
    if kind.startswith("keyed/"):
        return Keyed(("symbol",), _kind_example(kind[len("keyed/"):]))
    if kind.startswith("groupwin/"):
        return GroupWin(("symbol",), _kind_example(kind[len("groupwin/"):]))
    if kind.startswith("query/"):
        return attrs.evolve(QUERY_EXAMPLES["query"], window=_kind_example(kind[len("query/"):]))
    if kind in QUERY_EXAMPLES:
        return QUERY_EXAMPLES[kind]
    if kind.startswith("statement/"):
        return STATEMENT_EXAMPLES[kind[len("statement/"):]]
    return next(example for cls, example in EXAMPLES.items() if cls.KIND == kind)


#: kind -> its simplest spec, to ask the oracle whether it runs the kind and a
#: dialect whether it writes it
KIND_EXAMPLES: dict[str, WindowSpec] = {kind: _kind_example(kind) for kind in KINDS}


def _runs(spec: WindowSpec) -> bool:
    try:
        make_window(spec, 0)
    except UnsupportedWindow:
        return False
    return True


def implemented_kinds(dialect: str | None = "esper") -> tuple[str, ...]:
    """The kinds the oracle runs now that `dialect` writes (None: any
    implemented dialect): a grouped kind when the oracle has both groupwin and
    the grouped window's classes."""
    return tuple(kind for kind, example in KIND_EXAMPLES.items()
                 if _runs(example) and (writes(example, dialect) if dialect else writer(kind) is not None))


def writer(kind: str) -> str | None:
    """The first implemented dialect that writes `kind`, or None."""
    return next((d for d in IMPLEMENTED if writes(KIND_EXAMPLES[kind], d)), None)


def _kinds(kinds: str | Iterable[str] | None, dialect: str = "esper") -> tuple[str, ...]:
    if kinds is None:
        chosen = implemented_kinds(dialect)
        if not chosen:
            raise ValueError("the oracle implements no window kind yet")
        return chosen
    chosen = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    unknown = [k for k in chosen if k not in SPECS]
    if unknown or not chosen:
        raise ValueError(f"unknown window kind(s) {unknown}; known: {', '.join(KINDS)}")
    return chosen


def windows(dialect: str = "esper", kinds: str | Iterable[str] | None = None) -> st.SearchStrategy[WindowSpec]:
    """Valid specs of `dialect`'s `kinds` (None: `implemented_kinds(dialect)`),
    each rendered in `dialect` (its text and settings) and parsed back; the
    parsed spec is drawn."""

    def through_text(spec: WindowSpec) -> WindowSpec:
        text = render(spec, dialect)
        parsed = parse(text, dialect, settings(spec, dialect))
        if parsed != spec:
            raise AssertionError(f"the {dialect} dialect does not round-trip {spec!r}: {text!r} parses to {parsed!r}")
        return parsed

    return st.one_of(*(SPECS[kind] for kind in _kinds(kinds, dialect))).map(through_text)


# --------------------------------------------------------------------------- traces

# Each list starts with its simplest choice, the one a failing case shrinks to.
_STEPS = ("event", "advance", "burst", "event_at", "jump", "idle_advance", "idle_jump")
_STEPS_WITH_SET = _STEPS + ("set",)
_MOVES = (GRID, 0, 2 * GRID, 3 * GRID, 1, GRID // 2, 4 * GRID, 6 * GRID, 10 * GRID)
_IDLE = (20 * GRID, 40 * GRID, 60 * GRID, 120 * GRID)
_TS_STEPS = (GRID, 0, 2 * GRID, -GRID, 3 * GRID, -3 * GRID, 10 * GRID)
# an event's timestamp is the grid walk's plus, now and then, an offset off the grid:
# mostly on it (ties, batch boundaries), sometimes not, so a reference point off the
# grid cuts timestamp batches differently (tests/test_strategy_strength.py)
_TS_OFFSETS = (0, 0, 0, 0, 0, 0, GRID // 2, 1)
# New York's repeated 01:xx (EST, from 2024-11-03 06:00 UTC) and Berlin's (CEST, from
# 2024-10-27 00:00 UTC), where Go's time.Date resolves a unit's start to the other
# occurrence (oracle.windows.panes.go_date)
_NEW_YORK_REPEATED, _BERLIN_REPEATED = 1_730_613_600_000, 1_729_987_200_000
# from the seventh on: just before 16:00 UTC (midnight in UTC+8) and a UTC midnight,
# where an eKuiper window in minutes, hours or days ends within the trace, and 10
# minutes into a repeated local hour; event times start near the start time
_START_TIMES = (0, 0, 0, GRID, 2 * GRID + 1, 250, 16 * HOUR - 10 * GRID, DAY - 10 * GRID,
                _NEW_YORK_REPEATED + 10 * MINUTE - 10 * GRID, _BERLIN_REPEATED + 10 * MINUTE - 10 * GRID)
_LONG = (False, False, False, False, False, False, False, True)
#: whether a property of a schemaless stream's row holds a value of another kind
_KIND_CHANGES = (False,) * 39 + (True,)
_MISSING = object()
#: with `build_trace`'s `odd`, an event's price: as drawn (None) mostly, else missing, NaN or an infinity
_ODD_PRICES = (None,) * 40 + (_MISSING,) * 4 + (math.nan, math.inf, -math.inf)


class Choices(Protocol):
    """Where a trace's choices come from: `integer(low, high)` (both included)
    and `pick(options)`, each preferring its simplest value when shrunk."""

    def integer(self, low: int, high: int) -> int: ...

    def pick(self, options: Sequence[T]) -> T: ...


@frozen
class HypothesisChoices:
    """Choices drawn from Hypothesis: a failing trace shrinks choice by choice."""

    draw: Callable

    def integer(self, low: int, high: int) -> int:
        return self.draw(st.integers(low, high))

    def pick(self, options: Sequence[T]) -> T:
        return self.draw(st.sampled_from(options))


@frozen
class SeededChoices:
    """Choices from a seeded `random.Random`: the same seed, the same trace, at a
    small fraction of the cost of Hypothesis draws."""

    rng: random.Random

    # `random()` scaled, not `randint`/`randrange` (which draw bits until a value
    # falls in range: two thirds of a batch's making); the bias of a 53-bit float
    # over a few dozen options is nil
    def integer(self, low: int, high: int) -> int:
        return low + int(self.rng.random() * (high - low + 1))

    def pick(self, options: Sequence[T]) -> T:
        return options[int(self.rng.random() * len(options))]


def _key_value(choose: Choices, values: tuple, events_so_far: int):
    """A key value; the later in the trace, the more of `values` are in play, so
    values first seen late (new groups) turn up."""
    in_play = min(len(values), 2 + events_so_far // 4)
    return values[choose.integer(0, in_play - 1)]


def trace_names(spec: WindowSpec) -> tuple[str, ...]:
    """The names a trace for `spec` needs: its key properties and the names its
    expressions read (a name in `VARIABLES` becomes a declared variable), but
    the fields of a derived-value window's rows (what a statement over it reads)."""
    fields = {f for inner in nested_specs(spec) if isinstance(inner, DERIVED_WINDOWS) for f in inner.FIELDS}
    return tuple(n for n in dict.fromkeys(spec_keys(spec) + spec_expression_names(spec)) if n not in fields)


def trace_numbers(spec: WindowSpec) -> tuple[str, ...]:
    """The properties a trace for `spec` carries as numbers (`build_trace`'s
    `numbers`): what its statistics read, and the aggregates of a statement
    whose rules read numbers (`Rules.numeric_aggregates`), under their own names."""
    names = list(spec_values(spec))
    names += [name for inner in nested_specs(spec) if isinstance(inner, Statement) and inner.rules.numeric_aggregates
              for name in inner.aggregate_arguments]
    return tuple(name for name in dict.fromkeys(names) if name not in ("price", "ts"))


def trace_stamps(spec: WindowSpec) -> tuple[str, ...]:
    """The properties a trace for `spec` carries as integer timestamps (`build_trace`'s `stamps`)."""
    return tuple(name for name in dict.fromkeys(spec_timestamps(spec)) if name != "ts")


def trace_present(spec: WindowSpec) -> tuple[str, ...]:
    """The properties a trace for `spec` never leaves null (`build_trace`'s
    `present`): what an intersection's or union's member cannot take null
    (`Spec.unsafe_nulls`; the trace would be refused, `null_unsafe_member`)."""
    return tuple(dict.fromkeys(
        name for inner in nested_specs(spec) if isinstance(inner, (Intersection, RetainUnion))
        for member in inner.members for part in nested_specs(member) for name in part.unsafe_nulls()))


def trace_nulls(spec: WindowSpec) -> tuple[str, ...]:
    """The properties a trace for `spec` now and then leaves out (`build_trace`'s
    `nulls`), beyond the keys (`SYMBOLS`, `KEY_VALUES`) and a statement's
    prices (`odd_prices`): the timestamps whose null Esper's view throws on and
    posts nothing for (`unsafe_nulls`: the externally timed views), sort values, a statistic's inputs, an
    `#expr`'s inputs; none a member of an intersection or union cannot take
    null (`trace_present`), nor a declared variable."""
    present = set(trace_present(spec))
    names = [n for inner in nested_specs(spec) if not isinstance(inner, (Intersection, RetainUnion))
             for n in inner.unsafe_nulls() if n in spec_timestamps(inner)]
    names += [*spec_sort_properties(spec), *spec_values(spec)]
    names += [n for inner in nested_specs(spec) if isinstance(inner, (Expr, ExprBatch))
              for n in spec_expression_names(inner)]
    return tuple(n for n in dict.fromkeys(names) if n not in present and n not in VARIABLES and n != "id")


def trace_shape(spec: WindowSpec) -> dict[str, Any]:
    """Every keyword `build_trace` (and `seeded_traces`, `traces`) takes for a
    trace `spec` can read: keys, numbers, timestamps, operation codes,
    whether a property's kind may change between rows (`MIXED_KINDS`),
    whether a price may be missing or not finite (`odd_prices`), which
    properties are now and then null (`trace_nulls`) and which never are
    (`trace_present`)."""
    numbers = trace_numbers(spec)
    return {"properties": tuple(n for n in trace_names(spec) if n not in numbers), "numbers": numbers,
            "stamps": trace_stamps(spec), "opcodes": trace_opcodes(spec), "mixed": spec.MIXED_KINDS,
            "odd": odd_prices(spec), "nulls": trace_nulls(spec), "present": trace_present(spec)}


def odd_prices(spec: WindowSpec) -> bool:
    """Whether a trace for `spec` now and then leaves an event's `price` out or
    makes it NaN or an infinity: for a statement of Esper's rules (its rows
    posted per update) over a window that reads no `price` itself, so that its
    aggregates, WHERE, HAVING and filter meet Java's null and double rules."""
    if not isinstance(spec, Statement) or spec.rules.posted != "update":
        return False
    window = spec.window
    read = (*spec_values(window), *spec_keys(window), *spec_expression_names(window), *spec_timestamps(window),
            *spec_sort_properties(window), *spec_extras(window))
    return "price" not in read


#: an event's operation code, where the window takes more than inserts: None
#: (no code: an insert) first and twice as likely as each other code
_OPS = (None, "update", "delete", None, "upsert", "safedelete", "insert")


#: now and then (one in eight) a property in `build_trace`'s `nulls` is missing
_NULLS = (False,) * 7 + (True,)
#: the key values without the missing one, for a key `build_trace` keeps `present`
_NOT_NULL = {values: tuple(v for v in values if v is not None) for values in (SYMBOLS, KEY_VALUES)}


def trace_opcodes(spec: WindowSpec) -> tuple[str, ...]:
    """The operation codes a trace for `spec` draws: those it takes, when more
    than inserts (a keyed window); none otherwise (every event an insert)."""
    taken = accepted_opcodes(spec)
    return tuple(sorted(taken)) if taken != {"insert"} else ()


def build_trace(choose: Choices, properties: Iterable[str] = (), max_items: int = 25,
                opcodes: Iterable[str] = (), numbers: Iterable[str] = (), stamps: Iterable[str] = (),
                mixed: bool = False, odd: bool = False, nulls: Iterable[str] = (),
                present: Iterable[str] = ()) -> Trace:
    """A trace of at most `max_items` items (now and then four times as many).

    Every event has an id `E1`, `E2`, ... in arrival order, a float `price`, an
    integer `ts` (the timestamp property) and, unless drawn missing, a `symbol`.
    Each name in `properties` (the names the window under test reads) that is
    not one of these gets a value from `KEY_VALUES` or is missing, except a name
    in `VARIABLES`: the trace declares it, and `set` items change it.
    `start_time` is usually 0. With `opcodes` (a keyed window's codes), each
    event carries one of them or none (an insert), so keys repeat under every
    code: duplicate inserts, updates and deletes of missing keys included.
    Each name in `numbers` is a number like `price`, each in `stamps` an integer
    like `ts`, always present. The names are the window's own: `symbol`,
    `price` or `ts` is left out where the window reads a name differing from it
    in case only (`Symbol`), so no event holds two names one engine can confuse.
    With `mixed` (a schemaless stream), now and then a `price` is a string, a
    `symbol` or another key a number: a property's kind changes between rows.
    With `odd`, now and then a `price` is missing, NaN or an infinity. Each
    name in `nulls` is missing now and then (`_NULLS`); each in `present`
    (a key, say) is never missing."""
    names = tuple(dict.fromkeys(properties))
    nulls, present = tuple(dict.fromkeys(nulls)), frozenset(present)
    variables = tuple(name for name in names if name in VARIABLES)
    read = {*names, *numbers, *stamps}
    builtins = {b for b in ("symbol", "price", "ts") if not any(n.lower() == b and n != b for n in read)}
    extra = tuple(name for name in names if name not in ("symbol", "price", "ts", "id") and name not in VARIABLES)
    numbers = tuple(n for n in dict.fromkeys(numbers) if n not in names and n not in ("price", "ts", "id"))
    stamps = tuple(n for n in dict.fromkeys(stamps) if n not in names and n not in numbers and n not in ("ts", "id"))
    steps = _STEPS_WITH_SET if variables else _STEPS
    ops = tuple(op for op in _OPS if op is None or op in set(opcodes)) if opcodes else ()
    target = choose.integer(0, max_items * 4 if choose.pick(_LONG) else max_items)
    start = choose.pick(_START_TIMES)
    declared = {name: choose.pick(VARIABLES[name]) for name in variables}
    clock, ts = start, start - start % GRID + choose.pick((0, GRID, 2 * GRID))
    items: list[TraceItem] = []
    count = 0
    dropped: dict[str, Any] = {}  # a property left out of an event: the value it would have had

    def event() -> Event:
        nonlocal count, ts
        count += 1
        ts = max(0, ts + choose.pick(_TS_STEPS))
        props = {"price": 10.0 + choose.integer(0, 40) / 4, "ts": ts + choose.pick(_TS_OFFSETS)}
        if odd:
            price = choose.pick(_ODD_PRICES)
            if price is _MISSING:
                dropped["price"] = props.pop("price")
            elif price is not None:
                props["price"] = price
        for name, values in (("symbol", SYMBOLS), *((name, KEY_VALUES) for name in extra)):
            value = _key_value(choose, values if name not in present else _NOT_NULL[values], count - 1)
            if value is not None:
                props[name] = value
            else:
                dropped[name] = _NOT_NULL[values][0]
        for name in numbers:
            props[name] = 10.0 + choose.integer(0, 40) / 4
        for name in stamps:
            props[name] = ts + choose.pick(_TS_OFFSETS)
        for name in ("symbol", "price", "ts"):
            if name not in builtins:
                props.pop(name, None)
        for name in nulls:
            if name in props and choose.pick(_NULLS):
                dropped[name] = props.pop(name)
        if mixed:
            for name in [n for n in ("price", "symbol", *extra) if n in props]:
                if choose.pick(_KIND_CHANGES):
                    props[name] = "cheap" if name == "price" else 49
        return Event(f"E{count}", props)

    def arrive(time: int | None = None) -> Arrive:
        made = event()
        return Arrive(made, time=time, op=choose.pick(ops) if ops else None)

    while len(items) < target:
        step = choose.pick(steps)
        if step == "event":
            items.append(arrive())
        elif step == "burst":
            items += [arrive() for _ in range(choose.integer(2, 4))]
        elif step == "event_at":
            clock += choose.pick(_MOVES)
            items.append(arrive(clock))
        elif step == "set":
            name = choose.pick(variables)
            items.append(SetVariables({name: choose.pick(VARIABLES[name])}))
        else:
            clock += choose.pick(_IDLE if step.startswith("idle") else _MOVES)
            items.append(Jump(clock) if step.endswith("jump") else Advance(clock))
    dropped = {name: value for name, value in dropped.items() if name in builtins or name not in ("symbol", "price", "ts")}
    return Trace(_with_every_property(items[:target], dropped), start, declared)


def _with_every_property(items: list[TraceItem], dropped: dict[str, Any]) -> tuple[TraceItem, ...]:
    """`items`, the last event given back each property every event was left
    without (the value it would have had): a trace's events make its stream's
    type, and a statement reading a property no event has is refused
    (`oracle.model.check_properties`), so a drawn trace never loses one whole."""
    arrivals = [n for n, item in enumerate(items) if isinstance(item, Arrive)]
    if not arrivals:
        return tuple(items)
    had = {name for n in arrivals for name in items[n].event.props}
    back = {name: value for name, value in dropped.items() if name not in had}
    if back:
        last = items[arrivals[-1]]
        items[arrivals[-1]] = Arrive(Event(last.event.id, {**last.event.props, **back}), time=last.time, op=last.op)
    return tuple(items)


@st.composite
def traces(draw, properties: Iterable[str] = (), max_items: int = 25, opcodes: Iterable[str] = (),
           numbers: Iterable[str] = (), stamps: Iterable[str] = (), mixed: bool = False, odd: bool = False,
           nulls: Iterable[str] = (), present: Iterable[str] = ()) -> Trace:
    """A trace (`build_trace`) whose every choice is a Hypothesis draw, so a
    failing trace shrinks to a minimal one."""
    return build_trace(HypothesisChoices(draw), properties, max_items, opcodes, numbers, stamps, mixed, odd,
                       nulls, present)


def seeded_traces(seed: int, count: int, properties: Iterable[str] = (), max_items: int = 25,
                  opcodes: Iterable[str] = (), numbers: Iterable[str] = (), stamps: Iterable[str] = (),
                  mixed: bool = False, odd: bool = False, nulls: Iterable[str] = (),
                  present: Iterable[str] = ()) -> list[Trace]:
    """`count` traces (`build_trace`) from one `random.Random(seed)`: the cheap
    way to make a big batch. Hypothesis draws the seed, so a run with a fixed
    Hypothesis seed makes the same batches; a failing trace is then shrunk by
    the harness (`difftest.shrink`), not by Hypothesis."""
    choose = SeededChoices(random.Random(seed))
    return [build_trace(choose, properties, max_items, opcodes, numbers, stamps, mixed, odd, nulls, present)
            for _ in range(count)]


# --------------------------------------------------------------------------- cases


@frozen
class GeneratedCase:
    """A window, as a spec and as the dialect's text, and a trace to run it on."""

    dialect: str
    spec: WindowSpec
    window: str
    trace: Trace


@st.composite
def cases(draw, dialect: str = "esper", kinds: str | Iterable[str] | None = None, max_items: int = 25) -> GeneratedCase:
    """A window of `kinds` (see `windows`) and a trace whose events carry the
    properties the window keys by."""
    spec = draw(windows(dialect, kinds))
    trace = draw(traces(max_items=max_items, **trace_shape(spec)))
    return GeneratedCase(dialect, spec, render(spec, dialect), trace)
