"""The shared pipeline: input checks, a family's posts, and the output rows
(the family contract: spark_impl/windows/__init__.py).

    validated = check_input(trace_df, spec)       # columns, types, kinds, op codes
    posted    = family.posts(validated, window, ctx)
    output    = finalize(posted, validated, ctx)  # the update key, `pos`, properties

Every output row carries its update's identity, computed from the row alone:
(trace_id, after, phase, time, ordinal) (module docstring of `spark_impl`). No
step counts updates over a trace: consecutive numbers are a prefix count, one
more shuffle and sort of everything, so `numbered` adds them only on request.

`#groupwin(keys)` around a window is nothing but more partition columns: every
family partitions its window functions over events by `ctx.partition` = trace_id
+ keys, so a keyed window spreads over the cluster by key. Lookups on the clock
partition by (trace, time bucket) (`spark_impl.clock`). `trace_id` leads every
partitioning, so many traces run as one job.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from oracle.errors import UnsupportedWindow
from oracle.model import (
    OPCODES, GroupWin, Statement, WindowSpec, accepted_opcodes, spec_expression_names, unknown_property)
from spark_impl.errors import InvalidFrame
from spark_impl.frames import (
    BASE_COLUMNS, KINDS, NOT_FIELDS, OUTPUT_COLUMNS, RESERVED, ROW_OUTPUT_COLUMNS, posts_rows,
    row_fields, spec_properties)
from spark_impl.windows import Context, Family, family
from spark_impl.windows.base import events, quoted

_INTEGRAL = (T.LongType, T.IntegerType, T.ShortType, T.ByteType)
_REQUIRED = {
    "trace_id": ("the trace a row belongs to", (T.StringType,)),
    "seq": ("the item's position in its trace", _INTEGRAL),
    "kind": ("start, event, advance, jump or set", (T.StringType,)),
    "time": ("ms: the clock an item moves to, or an event's arrival clock", _INTEGRAL),
    "id": ("the event's id", (T.StringType,)),
}
_OPTIONAL = {"op": (T.StringType,), "vars": (T.StringType,)}


def split_groupwin(spec: WindowSpec) -> tuple[WindowSpec, tuple[str, ...]]:
    """The grouped window and its group keys (none without `#groupwin`)."""
    if isinstance(spec, GroupWin):
        return spec.window, spec.keys
    return spec, ()


def family_of(spec: WindowSpec) -> Family:
    """The family that runs `spec` (inside its groupwin), or `UnsupportedWindow`."""
    window, _ = split_groupwin(spec)
    return family(window)


# --------------------------------------------------------------------------- input


def check_input(trace_df: DataFrame, spec: WindowSpec, *, jumps: bool = True, variables: bool = True) -> DataFrame:
    """The input with `seq` and `time` as long and `op`/`vars` present; raises
    `InvalidFrame` naming a missing or mistyped column. Bad values (an unknown
    kind, an event with an operation code the window does not take: any code
    but insert, except in a keyed window, which takes every code of the model)
    raise when the frame is computed, naming the trace and seq; so does a jump
    item when `jumps` is false (the plan was made for input without jumps),
    and a `set` item or a start row declaring variables when `variables` is
    false."""
    fields = {f.name: f.dataType for f in trace_df.schema.fields}
    for name, (meaning, types) in _REQUIRED.items():
        if name not in fields:
            raise InvalidFrame(f"the input has no column {name!r} ({meaning})")
        _check_type(name, fields[name], types)
    for name, types in _OPTIONAL.items():
        if name in fields:
            _check_type(name, fields[name], types)
    read_off_rows = row_fields(spec)  # a statement over a derived window's rows names its fields, not variables
    maybe_variables = tuple(n for n in spec_expression_names(spec) if n not in read_off_rows)
    for name in spec_properties(spec):
        if name not in fields and name not in maybe_variables:
            raise InvalidFrame(f"the window reads property {name!r}, but the input has no column {name!r}")
    clashes = [c for c in fields if c.lower() in RESERVED and c not in BASE_COLUMNS]
    if clashes:
        raise InvalidFrame(f"column {clashes[0]!r} clashes with a column name the window output uses")
    props = [quoted(c) for c in trace_df.columns if c not in BASE_COLUMNS]
    # a name an expression reads may be a variable (declared on the start row's
    # `vars`) rather than a property: without a column it is a null property
    props += [f"CAST(NULL AS STRING) AS {quoted(n)}" for n in maybe_variables if n not in fields and n != "id"]
    op = "op" if "op" in fields else "CAST(NULL AS STRING)"
    vars_ = "vars" if "vars" in fields else "CAST(NULL AS STRING)"
    return trace_df.selectExpr(
        "trace_id", "CAST(seq AS BIGINT) AS seq", _checked_kind(op, accepted_opcodes(spec), jumps, variables, vars_),
        "CAST(time AS BIGINT) AS time", "id",
        f"{op} AS op", f"{vars_} AS vars", *props,
    )


def _check_type(name: str, actual: T.DataType, allowed: tuple) -> None:
    if not isinstance(actual, allowed):
        wanted = "an integer type (long)" if allowed is _INTEGRAL else "string"
        raise InvalidFrame(f"column {name!r} must be {wanted}, not {actual.simpleString()}")


_WHERE = "concat('trace ', trace_id, ' seq ', seq, ': ')"


def _checked_kind(op: str, taken: frozenset[str], jumps: bool, variables: bool = True,
                  declared: str = "vars") -> str:
    """SQL: the `kind` column, failing the job on an unknown kind, on an event's
    operation code the window does not take (`taken`: `accepted_opcodes`), on
    a jump when the plan promised none, and on a variable's declaration (SQL
    `declared`: the start row's variables) or setting when it promised none."""
    listed = ", ".join(repr(code) for code in OPCODES if code in taken)
    what = ("is not supported by this window" if taken == {"insert"}
            else f"is not an operation code (known: {', '.join(c for c in OPCODES if c in taken)})")
    return (
        f"CASE WHEN kind IS NULL OR kind NOT IN ({', '.join(repr(k) for k in KINDS)}) "
        f"THEN raise_error(concat({_WHERE}, 'kind must be one of {', '.join(KINDS)}, not ', coalesce(kind, 'null'))) "
        f"WHEN kind = 'event' AND {op} IS NOT NULL AND {op} NOT IN ({listed}) "
        f"THEN raise_error(concat({_WHERE}, 'operation code ', {op}, ' {what}')) "
        f"WHEN kind = 'jump' AND {str(not jumps).lower()} "
        f"THEN raise_error(concat({_WHERE}, 'a jump item, but the window was planned for input without jumps')) "
        f"{'' if variables else _NO_VARIABLES.format(where=_WHERE, vars=declared)}"
        "ELSE kind END AS kind"
    )


#: the CASE branch failing the job on a variable declared (a start row's `vars`) or set, where none was promised
_NO_VARIABLES = ("WHEN kind = 'set' OR (kind = 'start' AND {vars} IS NOT NULL AND {vars} <> '{{}}') "
                 "THEN raise_error(concat({where}, 'a variable declared or set, but the window was planned for "
                 "input without variables')) ")


# --------------------------------------------------------------------------- pipeline


def apply(trace_df: DataFrame, spec: WindowSpec, *, jumps: bool = True, pane_rows: bool = True,
          one_trace: str | None = None, variables: bool = True) -> DataFrame:
    """The window's output rows (OUTPUT_COLUMNS, then the properties), unsorted.
    `jumps=False` promises that the input holds no `jump` item (an event table
    never does): families whose jumps need more work plan without it, and a jump
    row fails the job, naming it. `variables=False` promises the same of
    variables (no `set` item, no start row declaring one: an event table has
    neither), so an expression window reads every name as a property.
    `pane_rows=False` (an eKuiper query only)
    leaves the panes' rows out: the query's output rows only. `one_trace`:
    every row's `trace_id`, when the caller knows it is one value (`Context`)."""
    if not pane_rows and not (isinstance(spec, Statement) and spec.rules.posted == "pane"):
        raise UnsupportedWindow("pane_rows=False is for an eKuiper query: only a query has output rows of its own")
    runner = family_of(spec)
    window, keys = split_groupwin(spec)
    validated = check_input(trace_df, spec, jumps=jumps, variables=variables)
    props = tuple(c for c in validated.columns if c not in BASE_COLUMNS)
    fields = _fields(runner, spec, {f.name: f for f in validated.schema.fields if f.name in props})
    ctx = Context(partition=("trace_id",) + keys, group_keys=keys, properties=props, jumps=jumps, variables=variables,
                  pane_rows=pane_rows, one_trace=one_trace)
    return finalize(runner.posts(validated, window, ctx), validated, ctx, fields)


def _fields(runner: Family, spec: WindowSpec, columns: dict[str, T.StructField]) -> tuple[tuple[T.StructField, int], ...] | None:
    """The output fields of `spec`'s rows and the index of the family's
    field each holds (`FIELDS`, named by `output_fields`); None for a
    window posting events (an Apama `select v` too, whose family has
    `FIELDS`: `frames.posts_rows`)."""
    if runner.fields is None or not posts_rows(spec):
        return None
    window, keys = split_groupwin(spec)
    return output_fields(tuple(runner.fields(window, columns, keys)))


def output_fields(fields) -> tuple[tuple[T.StructField, int], ...]:
    """A row's fields as output columns, each with the index of the field it
    holds. Two fields of one name are one column, in the first one's place,
    holding the later one's value (a row is a map of names: `select *,
    price` holds `price` once, and a later item of a name replaces an
    earlier one, as the engines' rows do). Refused, naming the field and
    suggesting an alias: a field named like a column the output has besides
    its fields (the update key, `side`, `pos`, `error`, `window`,
    `pane_event`, the numbered columns), and two fields whose names differ
    only in case (Spark resolves columns ignoring case)."""
    placed: dict[str, tuple[T.StructField, int]] = {}
    for index, field in enumerate(fields):
        folded = field.name.lower()
        if folded in NOT_FIELDS:
            raise UnsupportedWindow(
                f"statement: the field {field.name!r} is named like the output column {folded!r} "
                f"({', '.join(sorted(NOT_FIELDS))}); name it with `as` (for example `as {field.name}_value`)")
        twin = placed.get(folded)
        if twin is not None and twin[0].name != field.name:
            raise UnsupportedWindow(f"statement: the field {field.name!r} differs only in case from the field "
                                    f"{twin[0].name!r}, and Spark resolves columns ignoring case; name one with `as`")
        placed[folded] = (field, index)
    return tuple(placed.values())


def finalize(posted: DataFrame, validated: DataFrame, ctx: Context,
             fields: tuple[tuple[T.StructField, int], ...] | None = None) -> DataFrame:
    """Posts -> output rows: the update key, `pos` as (due, slot, n), and
    then the properties (joined back by id only where the family's rows
    lack them), or a row-posting family's fields, each checked to have its
    declared type (a plan and `output_schema` that disagree fail here)."""
    if fields is not None:
        return _finalize_rows(posted, ctx, fields)
    missing = [p for p in ctx.properties if p not in posted.columns]
    if missing:
        props = events(validated).select("trace_id", "id", *missing)
        posted = posted.join(props, ["trace_id", "id"], "left")
    return posted.selectExpr(*_key(posted), "id", _error(posted), *(quoted(p) for p in ctx.properties),
                             *_pane(posted))


_POS = ("CASE WHEN side IS NOT NULL THEN named_struct('due', CAST(slot_due AS BIGINT), "
        "'slot', CAST(slot AS BIGINT), 'n', CAST(pos AS BIGINT)) END AS pos")


def _key(posted: DataFrame) -> list[str]:
    """SQL: the update key, `side` and `pos` of a family's rows."""
    ordinal = "CAST(ordinal AS INT) AS ordinal" if "ordinal" in posted.columns else "CAST(0 AS INT) AS ordinal"
    return ["trace_id", "seq AS after", "CAST(phase AS INT) AS phase", "time", ordinal, "side", _POS]


def _error(posted: DataFrame) -> str:
    return "error" if "error" in posted.columns else "CAST(NULL AS STRING) AS error"


def _pane(posted: DataFrame) -> list[str]:
    """A pane window's bounds (eKuiper): the optional `window` column."""
    return (["CASE WHEN wend IS NOT NULL THEN named_struct('start', wstart, 'end', wend) END AS window"]
            if "wend" in posted.columns else [])


def _finalize_rows(posted: DataFrame, ctx: Context, fields: tuple[tuple[T.StructField, int], ...]) -> DataFrame:
    """A row-posting family's output: the key, `side`, `pos`, `error`, a
    pane's `window` and, where an eKuiper query posts its panes' rows,
    `pane_event`; then the fields (`#field<i>`) under their names."""
    types = {f.name: f.dataType for f in posted.schema.fields}
    for field, n in fields:
        found = types.get(f"#field{n}")
        if found != field.dataType:
            raise AssertionError(f"the plan's field {field.name!r} is {found and found.simpleString()}, "
                                 f"but its declared type is {field.dataType.simpleString()}")
    pane_event = ["id AS pane_event"] if ctx.pane_rows and "wend" in posted.columns else []
    own = [F.expr(sql) for sql in (*_key(posted), _error(posted), *_pane(posted), *pane_event)]
    return posted.select(*own, *(F.col(f"`#field{n}`").alias(f.name, metadata=f.metadata) for f, n in fields))


_KEY_TYPES = (("trace_id", T.StringType()), ("after", T.LongType()), ("phase", T.IntegerType()),
              ("time", T.LongType()), ("ordinal", T.IntegerType()), ("side", T.StringType()),
              ("pos", T.StructType([T.StructField(n, T.LongType()) for n in ("due", "slot", "n")])))
_PANE = T.StructType([T.StructField("start", T.LongType()), T.StructField("end", T.LongType())])
_TYPE_NAMES = {"long": T.LongType(), "bigint": T.LongType(), "int": T.IntegerType(), "integer": T.IntegerType(),
               "double": T.DoubleType(), "float": T.FloatType(), "string": T.StringType(),
               "boolean": T.BooleanType()}


def output_schema(spec: WindowSpec, columns, *, pane_rows: bool = True) -> T.StructType:
    """The schema of `spec`'s output over an input whose property columns
    are `columns` (a StructType, or a mapping of name to a Spark type or its
    name: `"double"`), found without running anything. A window posting
    events: OUTPUT_COLUMNS, then the properties; one posting rows (a
    statement, a derived-value window): ROW_OUTPUT_COLUMNS, an eKuiper pane's
    `window` and a query's `pane_event`, then its fields. Raises
    `InvalidFrame` for a property the window reads that `columns` lacks."""
    given = _columns(columns)
    unknown = unknown_property(spec, list(given)) if isinstance(spec, Statement) else None
    if unknown is not None:
        raise InvalidFrame(f"the statement reads property {unknown!r}, but the columns have no {unknown!r}: the "
                           f"{spec.rules.engine} dialect refuses a property its stream's type lacks")
    read_off_rows = row_fields(spec)
    variables = [n for n in spec_expression_names(spec) if n not in read_off_rows and n != "id"]
    for name in spec_properties(spec):
        if name not in given and name not in variables:
            raise InvalidFrame(f"the window reads property {name!r}, but the columns have no {name!r}")
    props = {**given, **{n: T.StructField(n, T.StringType()) for n in variables if n not in given}}
    runner = family_of(spec)
    fields = _fields(runner, spec, props)
    key = [T.StructField(name, kind) for name, kind in _KEY_TYPES]
    pane = [T.StructField("window", _PANE)] if runner.panes else []
    error = T.StructField("error", T.StringType())
    if fields is None:
        return T.StructType([*key, T.StructField("id", T.StringType()), error, *props.values(), *pane])
    query = isinstance(spec, Statement)
    pane_event = [T.StructField("pane_event", T.StringType())] if runner.panes and query and pane_rows else []
    return T.StructType([*key, error, *pane, *pane_event, *(f for f, _ in fields)])


def _columns(columns) -> dict[str, T.StructField]:
    """`output_schema`'s columns as StructFields, the input's own columns left out."""
    if isinstance(columns, T.StructType):
        found = list(columns.fields)
    else:
        found = []
        for name, kind in dict(columns).items():
            if isinstance(kind, str):
                if kind.lower() not in _TYPE_NAMES:
                    raise InvalidFrame(f"column {name!r}: {kind!r} is not a type name ({', '.join(_TYPE_NAMES)})")
                kind = _TYPE_NAMES[kind.lower()]
            found.append(T.StructField(name, kind))
    return {f.name: f for f in found if f.name not in BASE_COLUMNS}


def numbered(output: DataFrame) -> DataFrame:
    """`output` with `update_no`, the update's 0-based number in its trace, and
    `pos_no`, the row's 0-based position within its update's side: ranks over
    each whole trace, so one more shuffle and sort of the output (by trace: a
    long trace is ranked in one task). Ask for them only where a consumer needs
    consecutive numbers; the key columns already order everything."""
    key = "after, phase, time, ordinal"
    return output.selectExpr(
        "*",
        f"CAST(dense_rank() OVER (PARTITION BY trace_id ORDER BY {key}) - 1 AS BIGINT) AS update_no",
        f"CAST(CASE WHEN side IS NOT NULL THEN row_number() OVER (PARTITION BY trace_id, {key}, side ORDER BY pos) - 1 END AS INT) AS pos_no",
    )


__all__ = ["OUTPUT_COLUMNS", "ROW_OUTPUT_COLUMNS", "apply", "output_schema", "check_input", "family_of", "finalize", "numbered", "split_groupwin"]
