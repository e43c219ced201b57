"""A stream query over one window (Apama's `from v in values <window> select ...`):
what the query posts for each activation of its window. Data only; the rules are
in `oracle.windows.stream_query`.

A case with the `query` key (CORPUS.md) runs a `StreamQuery`; its `window` key
is the query's window. The projections (apama-ccl.md §1.2, ADD and BEHLOT):

| `output` | Apama | an update posts |
|---|---|---|
| `istream` | `select v` | `insert`: the items the lot put in the window |
| `rstream` | `select rstream v` | `remove`: the items the lot took out |
| `sum`, `avg`, `min`, `max` | `select sum(v.p)` | `values.insert`: one row `{"sum": ...}` |
| `count` | `select count()` | `values.insert`: one row `{"count": n}` |

`argument` is the property an aggregate reads (`value` for the bare item `v`,
a stream of numbers: `oracle.dialects.apama`), None for the other outputs.
"""

from __future__ import annotations

from typing import Any, ClassVar

from attrs import field, frozen

from oracle.errors import InvalidSpec
from oracle.model import DERIVED_WINDOWS, WINDOW_SPECS, KeepAll, Spec, _property_name
from oracle.statement import Statement

PROJECTIONS = ("istream", "rstream")
AGGREGATES = ("sum", "count", "avg", "min", "max")
OUTPUTS = PROJECTIONS + AGGREGATES


def _query_window(inst, attribute, value):
    if not isinstance(value, WINDOW_SPECS) or isinstance(value, DERIVED_WINDOWS):
        raise InvalidSpec(f"stream_query: its window must be a window spec (not a derived-value window), got {value!r}")


def _argument(inst, attribute, value):
    if inst.output in ("sum", "avg", "min", "max"):
        if value is None:
            raise InvalidSpec(f"stream_query: {inst.output} needs the property it aggregates")
        _property_name(inst, attribute, value)
        if value == "id":
            raise InvalidSpec(f"stream_query: {inst.output} reads a numeric property; `id` is the event's id")
    elif value is not None:
        raise InvalidSpec(f"stream_query: {inst.output} takes no argument, got {value!r}")


@frozen
class StreamQuery(Spec):
    """`window`'s lots, projected by `output` (`OUTPUTS`), an aggregate reading
    property `argument`."""

    KIND: ClassVar[str] = "stream_query"
    window: Any = field(validator=_query_window)
    output: str = field()
    argument: str | None = field(default=None, validator=_argument, metadata={"role": "value"})

    @output.validator
    def _check_output(self, attribute, value):
        if value not in OUTPUTS:
            raise InvalidSpec(f"stream_query: output must be one of {', '.join(OUTPUTS)}, got {value!r}")

    def __attrs_post_init__(self):
        if self.output == "rstream" and isinstance(self.window, KeepAll):
            raise InvalidSpec("stream_query: an unbounded window (retain all) never removes an item, so it cannot "
                              "be combined with select rstream")


#: the query kinds (beside `oracle.model.WINDOW_SPECS`): Apama's, and Esper's statements
QUERY_SPECS: tuple[type, ...] = (StreamQuery, Statement)
