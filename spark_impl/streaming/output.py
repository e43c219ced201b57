"""The streaming functions' output schema, the batch's, and the rows read back by the harness.

**The schema.** One window's output schema is the batch's:
`spark_impl.output_schema(spec, columns)` over the input's property columns
(`pipeline.output_schema`): a window posting events, OUTPUT_COLUMNS and the
properties; a window posting rows (`frames.posts_rows`), ROW_OUTPUT_COLUMNS,
an eKuiper pane's `window` and a query's `pane_event`, then one typed column
per field. A query running several windows (`apply_windows`: a window per
trace) has the union of theirs: each window's columns in order, the first
window's first, a column named by several windows once. A column two windows
give must agree in name (case too: Spark resolves names ignoring case), type
and `JSON_TEXT`; else `InvalidFrame` naming both windows (`merged`: run them
in separate queries). A trace's rows leave null the columns its window lacks.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from oracle.dialects import spec_text
from oracle.model import WindowSpec
from spark_impl.errors import InvalidFrame
from spark_impl.frames import JSON_TEXT

#: `json.dumps(value, separators=(",", ":"))`, made once
COMPACT_JSON = json.JSONEncoder(separators=(",", ":")).encode


# --------------------------------------------------------------------------- the schema


def window_schema(spec: WindowSpec, columns):
    """`spec`'s batch output schema over the property `columns` (a
    StructType): `pipeline.output_schema`. Raises what it raises
    (`InvalidFrame`, `UnsupportedWindow`)."""
    from spark_impl import pipeline

    return pipeline.output_schema(spec, columns)


def merged(schemas: Iterable[tuple[WindowSpec, Any]]):
    """The union of (spec, schema) pairs' columns (module docstring), or
    `InvalidFrame` naming a column two windows give differently."""
    from pyspark.sql import types as T

    found: dict[str, tuple[Any, WindowSpec]] = {}
    for spec, schema in schemas:
        for field in schema.fields:
            twin = found.get(field.name.lower())
            if twin is None:
                found[field.name.lower()] = (field, spec)
            elif not agree(twin[0], field):
                raise InvalidFrame(
                    f"the windows {spec_text(twin[1])} and {spec_text(spec)} cannot share an output: the "
                    f"first's column {_described(twin[0])} is {_described(field)} in the second; run them in "
                    "separate queries")
    return T.StructType([field for field, _ in found.values()])


def agree(a, b) -> bool:
    """Whether two windows' columns can be one column: the same name, type and `JSON_TEXT`."""
    return (a.name == b.name and a.dataType == b.dataType
            and bool(a.metadata.get(JSON_TEXT)) == bool(b.metadata.get(JSON_TEXT)))


def _described(field) -> str:
    return f"{field.name!r} {field.dataType.simpleString()}" + (" (JSON text)" if field.metadata.get(JSON_TEXT) else "")


# --------------------------------------------------------------------------- rows read back (the harness)


def reader(spec: WindowSpec, schema):
    """The `frames.RowFields` that reads the rows of `spec`'s own output
    `schema` (`window_schema`); None for a window posting events."""
    from spark_impl.frames import RowFields

    return RowFields.of(spec, schema)


def harness_rows(rows, readers: dict) -> list[dict]:
    """Collected output rows of a query as `frames.updates_from_rows` reads
    them (HARNESS_COLUMNS and `window`), as `frames.harness_columns` makes
    them of one window's output: the fields of a trace with a reader
    (`readers`: trace id -> `RowFields`) packed into `values` as JSON text
    (nulls kept; "[]" on a row of side null; null on a query's pane rows,
    whose event, `pane_event`, is the `id`); other traces' `id` as it is.
    A row is a pyspark Row or a dict."""
    out = []
    for row in rows:
        found = row.asDict() if hasattr(row, "asDict") else row
        reader = readers.get(found["trace_id"])
        picked = {name: found.get(name) for name in ("trace_id", "after", "phase", "time", "ordinal", "side", "pos",
                                                      "error", "window")}
        if isinstance(picked["pos"], dict):  # a row made a dict recursively: its struct's values, in order
            picked["pos"] = tuple(picked["pos"].values())
        if reader is None:
            picked["id"], picked["values"] = found.get("id"), None
        else:
            event = found.get("pane_event")
            picked["id"] = event
            picked["values"] = ("[]" if found["side"] is None else None if event is not None
                              else COMPACT_JSON({name: found[name] for name in reader.names}))
        out.append(picked)
    return out


__all__ = ["window_schema", "merged", "agree", "reader", "harness_rows"]
