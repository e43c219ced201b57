"""Apama EPL stream queries: the window definition of a `from` clause, and the
whole query. `parse(text) -> spec`, `render(spec) -> str`.

Syntax (apama-ccl.md §1.1, SYNTAX and BATCH):

    [partition by k1[, k2]...] ( within d [every p] [retain n] [with unique key]
                               | retain n [every m] [with unique key] )
    | retain all

and a query `from v in values <window> select (v | rstream v | agg(arg))`,
`agg` one of `sum`, `avg`, `min`, `max` (an argument) or `count()`.

* `d` and `p` are seconds as float literals (`1.5`, `1.0`: EPL has no
  implicit integer to float conversion, so `within 1` is an error), converted
  with `Decimal` to whole milliseconds; what is not whole milliseconds is an
  error. `n` and `m` are integer literals (`retain 2.0` is an error), 1 or
  more, within a 32-bit int.
* Keys and arguments are written as users write them, through the item's
  alias: `partition by v.symbol`, `with unique v.symbol`, `sum(v.price)`
  (apama-ccl.md §1.1 [INFER]: the parser removes the alias). Every alias in
  a clause must be the same one, and in a query the `from` clause's.
  Decided: the bare item `v` in an aggregate reads property `value` (a stream
  of numbers, the seed's `values`, is events whose `value` is the number).
* Keywords are lower case, as EPL's.

What each form is (a form that is an existing kind's rule is that kind; the
lot kinds are `oracle.windows.lots`):

| Apama | spec | why |
|---|---|---|
| `retain all` | `KeepAll` | |
| `retain n` | `Length(n)` | one activation per arrival: in, and the oldest out |
| `retain n every m`, m == n | `LengthBatch(n)` | the m-th item lets the batch in and the previous batch out |
| `retain n every 1`, n > 1 | as `retain n` | every item is its own batch |
| `retain n every m` | `BatchedLength(n, m)` | |
| `retain n with unique k` | `LengthUnique(n, k)` | a hidden duplicate holds a place (not `#unique#length`) |
| `within d` | `Time(d)` | in at arrival, out at exactly arrival + d, same-instant expiries in one lot |
| `within d retain n` | `Intersection(Time(d), Length(n))`¹ | "the last n items received in the last d seconds" |
| `within d with unique k` | `Intersection(Unique(k), Time(d))`¹ | the latest per key; an older duplicate never shows again |
| `within d retain n with unique k` | `LengthUnique(n, k, d)` | |
| `within d every p [retain n] [with unique k]` | `BatchedTime(d, p, n, k)` | a 1 ms period is the unbatched form |
| `partition by ks <form>` | `GroupWin(ks, form)` | "as if ... applied separately to each partition" |
| `partition by ks within d every p ...` | `BatchedTime(..., partition=ks)` | the partitions share the window's grid |
| `partition by ks within d [every p]` | the form alone | PTIME: "The correlator ignores a partition by statement if it is used only with a within window" |

¹ with `stale_time_timers=False`: a partition's timer is due at its oldest
item's own due time, so in one jump the partitions release in the order their
items fall due (Esper's `#time` keeps a stale timer instead).

Errors: a clause that does not parse is a `WindowSyntaxError` with its
1-based column (`where`, `group by`, `join`, any other aggregate...). What
parses but cannot be is an `InvalidSpec` naming the column: a duration that is
not a float literal, is 0, or is not whole milliseconds; a count that is not
an integer literal or is 0; an alias other than the clause's; a key named
twice; a reserved property name; `select rstream` over `retain all` (REF: a
compile-time restriction).

`render` writes the canonical text: `partition by v.a, v.b`, durations with
the fewest decimals (`1.5`, `1.0`, `0.001`), the alias `v` and the stream
`values`. `parse(render(s)) == s` for every spec the dialect writes; any
other spec is `UnsupportedWindow`.
"""

from __future__ import annotations

from decimal import Decimal

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedInput, VisitError

from oracle.dialects.syntax import syntax_error
from oracle.errors import InvalidSpec, UnsupportedWindow, WindowSyntaxError
from oracle.model import (
    MAX_CLOCK,
    BatchedLength,
    BatchedTime,
    GroupWin,
    Intersection,
    KeepAll,
    Length,
    LengthBatch,
    LengthUnique,
    Time,
    Unique,
    WindowSpec,
    reserved_name_error,
)
from oracle.model import APAMA, ITEM_VALUE, Aggregate, Name, SelectItem, Statement, selection

GRAMMAR = r"""
start: query | window

query: FROM NAME IN NAME window SELECT projection
projection: NAME                       -> istream
          | RSTREAM NAME               -> rstream
          | AGG LPAR argument? RPAR    -> aggregate
argument: NAME (DOT NAME)?

window: partition? form | RETAIN ALL
partition: PARTITION BY ref (COMMA ref)*
form: WITHIN NUMBER every? retain? unique?  -> timed
    | RETAIN NUMBER every? unique?         -> counted
every: EVERY NUMBER
retain: RETAIN NUMBER
unique: WITH UNIQUE ref
ref: NAME DOT NAME

FROM.2: /from\b/
IN.2: /in\b/
SELECT.2: /select\b/
RSTREAM.2: /rstream\b/
AGG.2: /(sum|count|avg|min|max)\b/
PARTITION.2: /partition\b/
BY.2: /by\b/
WITHIN.2: /within\b/
EVERY.2: /every\b/
RETAIN.2: /retain\b/
ALL.2: /all\b/
WITH.2: /with\b/
UNIQUE.2: /unique\b/
NAME: /[A-Za-z_][A-Za-z0-9_]*/
NUMBER: /\d+(\.\d+)?/
LPAR: "("
RPAR: ")"
COMMA: ","
DOT: "."

%import common.WS
%ignore WS
"""

_DESCRIBE = {
    "FROM": "from", "IN": "in", "SELECT": "select", "RSTREAM": "rstream", "AGG": "sum, count, avg, min or max",
    "PARTITION": "partition", "BY": "by", "WITHIN": "within", "EVERY": "every", "RETAIN": "retain", "ALL": "all",
    "WITH": "with", "UNIQUE": "unique", "NAME": "a name", "NUMBER": "a number", "LPAR": "'('", "RPAR": "')'",
    "COMMA": "','", "DOT": "'.'", "$END": "the end of the clause",
    "<END-OF-FILE>": "the end of the clause",
}

MAX_COUNT = 2**31 - 1
ALIAS, STREAM = "v", "values"

_PARSER = Lark(GRAMMAR, start="start", parser="lalr", lexer="contextual")


def _column(token: Token) -> int:
    return token.start_pos + 1


def _syntax_error(exc: UnexpectedInput, text: str) -> WindowSyntaxError:
    return syntax_error(exc, text, _DESCRIBE)


def _count(token: Token, what: str) -> int:
    if "." in token:
        raise InvalidSpec(f"{what} must be an integer literal, got {token} at column {_column(token)}")
    value = int(token)
    if value < 1:
        raise InvalidSpec(f"{what} must be 1 or more, got {value} at column {_column(token)}")
    if value > MAX_COUNT:
        raise InvalidSpec(f"{what} must fit a 32-bit int (at most {MAX_COUNT}), got {value} at column {_column(token)}")
    return value


def _duration(token: Token, what: str) -> int:
    """Seconds as a float literal -> whole milliseconds."""
    if "." not in token:
        raise InvalidSpec(f"{what} is seconds as a float literal ({token}.0), got {token} at column {_column(token)}")
    ms = Decimal(str(token)) * 1000
    if ms != ms.to_integral_value():
        raise InvalidSpec(f"{what} {token} at column {_column(token)} is not whole milliseconds "
                          "(the clock counts milliseconds)")
    if ms == 0:
        raise InvalidSpec(f"{what} {token} at column {_column(token)} must be above 0")
    if ms > MAX_CLOCK:
        raise InvalidSpec(f"{what} {token} at column {_column(token)} is longer than 2**62 ms")
    return int(ms)


class _Window:
    """A window definition as written: its parts, where they stand."""

    def __init__(self, form: str, keyword: Token, number: Token, every=None, retain=None, unique=None, partition=()):
        self.form, self.keyword, self.number = form, keyword, number
        self.every, self.retain, self.unique, self.partition = every, retain, unique, partition


class _ToSpec(Transformer):
    """Parse tree -> spec, checking what the grammar cannot (InvalidSpec with a column)."""

    def ref(self, items: list[Token]) -> tuple[Token, Token]:
        return items[0], items[2]  # (alias, property)

    def partition(self, items: list) -> list[tuple[Token, Token]]:
        return [item for item in items if isinstance(item, tuple)]

    def every(self, items: list[Token]) -> tuple[str, Token]:
        return "every", items[1]

    def retain(self, items: list[Token]) -> tuple[str, Token]:
        return "retain", items[1]

    def unique(self, items: list) -> tuple[str, tuple[Token, Token]]:
        return "unique", items[2]

    def timed(self, items: list) -> _Window:
        return self._form("within", items)

    def counted(self, items: list) -> _Window:
        return self._form("retain", items)

    @staticmethod
    def _form(form: str, items: list) -> _Window:
        keyword, number = items[0], items[1]
        window = _Window(form, keyword, number)
        for part, value in items[2:]:
            setattr(window, part, value)
        return window

    def window(self, items: list) -> _Window:
        if isinstance(items[0], Token) and items[0].type == "RETAIN":  # retain all
            return _Window("all", items[0], items[1])
        if len(items) == 2:
            items[1].partition = tuple(items[0])
            return items[1]
        return items[0]

    def argument(self, items: list[Token]) -> tuple[Token, Token | None]:
        return (items[0], items[2]) if len(items) == 3 else (items[0], None)

    def istream(self, items: list[Token]) -> tuple[str, Token, None]:
        return "istream", items[0], None

    def rstream(self, items: list[Token]) -> tuple[str, Token, Token]:
        return "rstream", items[1], items[0]  # the item, and the keyword (where an error points)

    def aggregate(self, items: list) -> tuple[str, Token, tuple | None]:
        argument = items[2] if len(items) == 4 else None
        return str(items[0]), items[0], argument

    def query(self, items: list) -> Statement:
        alias, window, (output, where, argument) = items[1], items[4], items[6]
        spec = _spec(window, alias)
        if output in ("istream", "rstream"):
            _same_alias(where, alias)
            if output == "rstream" and isinstance(spec, KeepAll):
                raise InvalidSpec(f"select rstream (column {_column(argument)}) cannot be combined with retain all "
                                  f"(column {_column(window.keyword)}): an unbounded window removes nothing")
            return stream_query(spec, output)
        if output == "count":
            if argument is not None:
                raise InvalidSpec(f"count takes no argument here (column {_column(argument[0])}): count() counts "
                                  "the items in the window")
            return stream_query(spec, "count")
        if argument is None:
            raise InvalidSpec(f"{output} at column {_column(where)} needs an argument, the item or one of its "
                              f"properties ({output}({alias}.price))")
        _same_alias(argument[0], alias)
        name = ITEM_VALUE if argument[1] is None else _name(argument[1])
        return stream_query(spec, output, name)

    def start(self, items: list):
        item = items[0]
        return _spec(item, None) if isinstance(item, _Window) else item


def _same_alias(token: Token, alias: Token | None) -> None:
    if alias is not None and str(token) != str(alias):
        raise InvalidSpec(f"{str(token)!r} at column {_column(token)} is not the item: the clause names the item "
                          f"{str(alias)!r} (write {str(alias)}.property)")


def _name(token: Token) -> str:
    problem = reserved_name_error(str(token))
    if problem:
        raise InvalidSpec(f"{problem} (column {_column(token)})")
    return str(token)


def _keys(refs, alias: Token | None, what: str) -> tuple[tuple[str, ...], Token | None]:
    """Property names of `alias.property` references, each once; the alias they
    use (all the same one)."""
    seen: dict[str, Token] = {}
    for ref_alias, prop in refs:
        if alias is None:
            alias = ref_alias
        _same_alias(ref_alias, alias)
        name = _name(prop)
        if name in seen:
            raise InvalidSpec(f"{what}: {name!r} is named twice (columns {_column(seen[name])} and {_column(prop)})")
        seen[name] = prop
    return tuple(seen), alias


def _spec(window: _Window, alias: Token | None) -> WindowSpec:
    """The spec of a window definition (the table in the module docstring)."""
    if window.form == "all":
        return KeepAll()
    partition, alias = _keys(window.partition, alias, "partition by")
    unique = ()
    if window.unique is not None:
        unique, alias = _keys([window.unique], alias, "with unique")
    if window.form == "retain":
        size = _count(window.number, "the retain size")
        batch = _count(window.every, "the batch size") if window.every is not None else 1
        if window.every is not None and batch == size and not unique:
            spec = LengthBatch(size)  # retain 1 every 1 too: the model's two kinds of that one rule are Esper's
        elif batch == 1:
            spec = LengthUnique(size, unique) if unique else Length(size)
        else:
            spec = BatchedLength(size, batch, unique)
        return GroupWin(partition, spec) if partition else spec
    span = _duration(window.number, "the window duration")
    size = _count(window.retain, "the retain size") if window.retain is not None else None
    period = _duration(window.every, "the batch period") if window.every is not None else None
    if period is not None and period > 1:
        return BatchedTime(span, period, size, unique, partition if size is not None or unique else ())
    if size is not None and unique:
        spec = LengthUnique(size, unique, span)
    elif size is not None:
        spec = Intersection((Time(span), Length(size)), stale_time_timers=False)
    elif unique:
        spec = Intersection((Unique(unique), Time(span)), stale_time_timers=False)
    else:
        return Time(span)  # PTIME: a partition changes nothing in a pure within window
    return GroupWin(partition, spec) if partition else spec


def stream_query(window: WindowSpec, output: str, argument: str | None = None) -> Statement:
    """An Apama query over `window` (`Statement`, Apama's rules) from what it
    selects: `istream` (`select v`), `rstream` (`select rstream v`), or an
    aggregate (`sum`, `avg`, `min`, `max` of property `argument`; `count`)."""
    if output in ("istream", "rstream"):
        return Statement((SelectItem(),), window, output, STREAM, rules=APAMA)
    node = Aggregate(output, Name(argument) if argument is not None else None)
    return Statement((SelectItem(node),), window, source=STREAM, rules=APAMA)


def parse(text: str) -> WindowSpec | Statement:
    """The spec of an Apama window definition (`partition by v.symbol retain 2`)
    or stream query (`from v in values within 1.5 every 1.0 select sum(v)`)."""
    if not isinstance(text, str):
        raise TypeError(f"a window clause is a string, got {type(text).__name__}")
    try:
        tree = _PARSER.parse(text)
    except UnexpectedInput as exc:
        raise _syntax_error(exc, text) from None
    try:
        return _ToSpec().transform(tree)
    except VisitError as exc:
        raise exc.orig_exc from None


# --------------------------------------------------------------------------- render


def render_duration(ms: int) -> str:
    """Milliseconds as seconds with the fewest decimals, at least one: `1.5`, `1.0`, `0.001`."""
    seconds = format(Decimal(ms) / 1000, "f")
    if "." in seconds:
        seconds = seconds.rstrip("0")
    return seconds + "0" if seconds.endswith(".") else seconds if "." in seconds else seconds + ".0"


def _refs(names: tuple[str, ...]) -> str:
    return ", ".join(f"{ALIAS}.{name}" for name in names)


def _unique(names: tuple[str, ...]) -> str:
    if not names:
        return ""
    if len(names) != 1:
        raise UnsupportedWindow(f"the apama dialect writes one unique key (with unique key), not {list(names)}")
    return f" with unique {ALIAS}.{names[0]}"


def _intersection(spec: Intersection) -> str:
    members = spec.members
    if spec.stale_time_timers:
        raise UnsupportedWindow(f"the apama dialect cannot write {spec!r}: its within window's timer follows the "
                                "oldest item held (stale_time_timers=False)")
    if len(members) == 2 and isinstance(members[0], Time) and type(members[1]) is Length:
        return f"within {render_duration(members[0].span)} retain {members[1].size}"
    if len(members) == 2 and isinstance(members[0], Unique) and isinstance(members[1], Time):
        return f"within {render_duration(members[1].span)}{_unique(members[0].keys)}"
    raise UnsupportedWindow(f"the apama dialect cannot write the intersection {spec!r}: an Apama window is within, "
                            "retain and with unique, in that shape")


def _batched_time(spec: BatchedTime) -> str:
    retain = f" retain {spec.size}" if spec.size is not None else ""
    partition = f"partition by {_refs(spec.partition)} " if spec.partition else ""
    return (f"{partition}within {render_duration(spec.span)} every {render_duration(spec.period)}{retain}"
            f"{_unique(spec.unique)}")


def _length_unique(spec: LengthUnique) -> str:
    within = f"within {render_duration(spec.span)} " if spec.span is not None else ""
    return f"{within}retain {spec.size}{_unique(spec.unique)}"


#: spec class -> its window definition (one table: what the dialect writes)
SYNTAX = {
    KeepAll: lambda spec: "retain all",
    Length: lambda spec: f"retain {spec.size}",
    LengthBatch: lambda spec: f"retain {spec.size} every {spec.size}",
    BatchedLength: lambda spec: f"retain {spec.size} every {spec.batch}{_unique(spec.unique)}",
    LengthUnique: _length_unique,
    Time: lambda spec: f"within {render_duration(spec.span)}",
    Intersection: _intersection,
    BatchedTime: _batched_time,
}

#: the kinds a partition (a GroupWin) may hold
PARTITIONED = (Length, LengthBatch, BatchedLength, LengthUnique, Intersection)


def _render_window(spec: WindowSpec) -> str:
    if isinstance(spec, GroupWin) and isinstance(spec.window, PARTITIONED):
        return f"partition by {_refs(spec.keys)} {_render_window(spec.window)}"
    write = SYNTAX.get(type(spec))
    if write is None:
        raise UnsupportedWindow(f"the apama dialect cannot write {spec!r}: Apama has no such window")
    return write(spec)


def render(spec: WindowSpec | Statement) -> str:
    """The canonical Apama text of `spec`; `parse(render(spec)) == spec`."""
    if isinstance(spec, Statement):
        if spec.rules is not APAMA:
            raise UnsupportedWindow(f"the apama dialect writes Apama's queries, not {spec.rules.engine}'s statements")
        window = _render_window(spec.window)
        output, argument = selection(spec)
        if output == "istream":
            select = ALIAS
        elif output == "rstream":
            select = f"rstream {ALIAS}"
        elif output == "count":
            select = "count()"
        else:
            argument = ALIAS if argument == ITEM_VALUE else f"{ALIAS}.{argument}"
            select = f"{output}({argument})"
        return f"from {ALIAS} in {STREAM} {window} select {select}"
    return _render_window(spec)


_NAMES = {KeepAll: "retain-all", Length: "retain", LengthBatch: "retain-every", BatchedLength: "retain-every",
          Time: "within", BatchedTime: "within-every"}


def name(spec: WindowSpec | Statement) -> str:
    """A short, file-safe name of `spec` in Apama's words: `retain`,
    `within-every-retain-unique`, `partition-retain-unique`, `query-sum`."""
    render(spec)  # UnsupportedWindow for what Apama cannot write
    if isinstance(spec, Statement):
        return f"query-{selection(spec)[0]}-" + name(spec.window)
    if isinstance(spec, GroupWin):
        return "partition-" + name(spec.window)
    if isinstance(spec, BatchedTime):
        return "within-every" + ("-retain" if spec.size else "") + ("-unique" if spec.unique else "") + (
            "-partition" if spec.partition else "")
    if isinstance(spec, LengthUnique):
        return ("within-" if spec.span else "") + "retain-unique"
    if isinstance(spec, BatchedLength):
        return "retain-every" + ("-unique" if spec.unique else "")
    if isinstance(spec, Intersection):
        return "within-retain" if isinstance(spec.members[1], Length) else "within-unique"
    return _NAMES[type(spec)]
