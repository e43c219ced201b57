"""The Esper dialect: table-driven parse, error and render rows, and round trips.

Each parse row is a window clause and the spec it means; each error row a clause,
the error class, a fragment of the message and, for syntax errors, the column.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from difftest.strategies import implemented_kinds, windows
from oracle.dialects import esper
from oracle.errors import InvalidSpec, UnsupportedWindow, WindowSyntaxError
from oracle.model import (
    Aggregate,
    Binary,
    Builtin,
    EventProperty,
    Expr,
    ExprBatch,
    Literal,
    Name,
    Negate,
    Not,
    DERIVED_WINDOWS,
    Correl,
    Linest,
    Size,
    Uni,
    WeightedAvg,
    ExtTimed,
    ExtTimedBatch,
    FirstEvent,
    FirstLength,
    FirstTime,
    FirstUnique,
    GroupWin,
    Intersection,
    KeepAll,
    LastEvent,
    Length,
    LengthBatch,
    RetainUnion,
    Time,
    Rank,
    Sort,
    SortKey,
    TimeAccum,
    TimeBatch,
    TimeLengthBatch,
    TimeOrder,
    Unique,
)

CORPUS = Path(__file__).resolve().parent.parent / "corpus"

PARSE_ROWS = [
    # expression windows (esper.md §4): precedence, keywords any case, built-ins, variables
    ("#expr(current_count <= MAXC)", Expr(Binary("<=", Builtin("current_count"), Name("MAXC")))),
    ("#expr(oldest_timestamp > newest_timestamp - 2000)",
     Expr(Binary(">", Builtin("oldest_timestamp"), Binary("-", Builtin("newest_timestamp"), Literal(2000))))),
    ("#expr(expired_count = 0 AND current_count <= 3 or Not x)",
     Expr(Binary("or", Binary("and", Binary("=", Builtin("expired_count"), Literal(0)),
                                      Binary("<=", Builtin("current_count"), Literal(3))), Not(Name("x"))))),
    ("#expr(newest_event.symbol <> oldest_event.symbol)",
     Expr(Binary("!=", EventProperty("newest_event", "symbol"), EventProperty("oldest_event", "symbol")))),
    ("#expr(SUM(price * 2) < -1.5 % 2)",
     Expr(Binary("<", Aggregate("sum", Binary("*", Name("price"), Literal(2))), Binary("%", Literal(-1.5), Literal(2))))),
    ("#expr(count(*) < 3 and avg(price) >= min(price))",
     Expr(Binary("and", Binary("<", Aggregate("count"), Literal(3)),
                 Binary(">=", Aggregate("avg", Name("price")), Aggregate("min", Name("price")))))),
    ("#expr((a - b) - c = -(d) and `current_count` = 'x')",
     Expr(Binary("and", Binary("=", Binary("-", Binary("-", Name("a"), Name("b")), Name("c")), Negate(Name("d"))),
                 Binary("=", Name("current_count"), Literal("x"))))),
    ("#expr(true)", Expr(Literal(True))),
    ("#expr(flag)", Expr(Name("flag"))),
    ("#expr(x = null)", Expr(Binary("=", Name("x"), Literal(None)))),
    ("#expr_batch(current_count >= 3)", ExprBatch(Binary(">=", Builtin("current_count"), Literal(3)))),
    ("#expr_batch(current_count >= 3, FALSE)", ExprBatch(Binary(">=", Builtin("current_count"), Literal(3)), False)),
    ("#groupwin(symbol)#expr_batch(sum(price) > 8, true)",
     GroupWin(("symbol",), ExprBatch(Binary(">", Aggregate("sum", Name("price")), Literal(8))))),
    # derived-value windows: the data windows before one are its source (esper.md §7)
    ("#size()", Size()),
    ("#std:size", Size()),
    ("#time(3 sec)#size(symbol)", Size(("symbol",), source=Time(3000))),
    ("#length(3)#uni(price)", Uni("price", source=Length(3))),
    ("#length(2)#stat:uni(price, symbol)", Uni("price", ("symbol",), source=Length(2))),
    ("#uni(price, *, symbol, symbol)", Uni("price", ("symbol",), True)),
    ("#length(4)#linest(price, ts)", Linest("price", "ts", source=Length(4))),
    ("#linest(price, ts, XSum)", Linest("price", "ts", ("XSum",))),
    ("#length(3)#correl(price, ts)", Correl("price", "ts", source=Length(3))),
    ("#length(3)#weighted_avg(price, volume, id)", WeightedAvg("price", "volume", ("id",), source=Length(3))),
    ("#length(2)#time(1 sec)#size()", Size(source=Intersection((Length(2), Time(1000))))),
    ("#length(2)#time(1 sec)#uni(price) retain-union", Uni("price", source=RetainUnion((Length(2), Time(1000))))),
    (".win:length(2).stat:uni(price)", Uni("price", source=Length(2))),
    # every window, canonical
    ("#length(2)", Length(2)),
    ("#length_batch(3)", LengthBatch(3)),
    ("#time(10 sec)", Time(10_000)),
    ("#ext_timed(ts, 10 seconds)", ExtTimed("ts", 10_000)),
    ("#time_batch(5 sec)", TimeBatch(5000)),
    ("#ext_timed_batch(ts, 5 sec)", ExtTimedBatch("ts", 5000)),
    ("#keepall", KeepAll()),
    ("#firstlength(10)", FirstLength(10)),
    ("#firsttime(1 min)", FirstTime(60_000)),
    ("#firstevent", FirstEvent()),
    ("#lastevent", LastEvent()),
    ("#unique(symbol)", Unique(("symbol",))),
    ("#firstunique(category)", FirstUnique(("category",))),
    ("#groupwin(symbol)#length(5)", GroupWin(("symbol",), Length(5))),
    # namespaces (seed 14.1), each window's own one
    ("#win:time(5 sec)", Time(5000)),
    (".win:time(5 sec)", Time(5000)),
    ("#std:unique(symbol)", Unique(("symbol",))),
    (".std:groupwin(symbol).win:length(5)", GroupWin(("symbol",), Length(5))),
    (".win:keepall", KeepAll()),
    (".win:keepall()", KeepAll()),
    ("#std:firstevent", FirstEvent()),
    # parameterless with or without ()
    ("#keepall()", KeepAll()),
    ("#firstevent()", FirstEvent()),
    ("#lastevent()", LastEvent()),
    ("#lastevent( )", LastEvent()),
    # time periods (seed 14.3.3: all four are the same window; Esper grammar `timePeriod`)
    ("#time(2 minutes 5 seconds)", Time(125_000)),
    ("#time(125 sec)", Time(125_000)),
    ("#time(125)", Time(125_000)),
    ("#time(1.5 sec)", Time(1500)),
    ("#time(1.5)", Time(1500)),
    ("#time(10)", Time(10_000)),
    ("#time(100 msec)", Time(100)),
    ("#time(1 hour)", Time(3_600_000)),
    ("#time(1 day 2 hours 3 minutes 4 seconds 5 milliseconds)", Time(93_784_005)),
    ("#time(2 days 1 hour 1 minute 1 second 1 millisecond)", Time(176_461_001)),
    ("#time(1 week)", Time(604_800_000)),
    ("#time(1 min 30 sec)", Time(90_000)),
    ("#time(0.5 min)", Time(30_000)),
    ("#time(2000 usec)", Time(2)),
    ("#time(1 sec 500000 usec)", Time(1500)),
    ("#time(1 sec 500 msec)", Time(1500)),
    ("#time(1 SEC)", Time(1000)),
    ("#time(3 Minutes)", Time(180_000)),
    ("#time(2minutes)", Time(120_000)),
    ("#time(.5)", Time(500)),
    ("#time(1e1)", Time(10_000)),
    ("#time(10L)", Time(10_000)),
    ("#time(2.5d)", Time(2500)),
    ("#time(+2 sec)", Time(2000)),
    # sizes: integers, longs
    ("#length(5L)", Length(5)),
    ("#length_batch(+2)", LengthBatch(2)),
    # reference points: ms, with or without L, on or off grid, negative
    ("#time_batch(1 sec, 3000L)", TimeBatch(1000, 3000)),
    ("#time_batch(1 sec, 3000)", TimeBatch(1000, 3000)),
    ("#time_batch(1 hour, 5000L)", TimeBatch(3_600_000, 5000)),
    ("#time_batch(1 sec, -250L)", TimeBatch(1000, -250)),
    ("#ext_timed_batch(ts, 1 hour, 5000L)", ExtTimedBatch("ts", 3_600_000, 5000)),
    ("#ext_timed_batch(timestamp, 2, 0L)", ExtTimedBatch("timestamp", 2000, 0)),
    # flow control: case-insensitive, comma-separated, trimmed; START_EAGER implies FORCE_UPDATE
    ('#time_batch(10 sec, "FORCE_UPDATE")', TimeBatch(10_000, None, True, False)),
    ("#time_batch(10 sec, 'START_EAGER')", TimeBatch(10_000, None, True, True)),
    ('#time_batch(10 sec, "FORCE_UPDATE, START_EAGER")', TimeBatch(10_000, None, True, True)),
    ('#time_batch(10 sec, " start_eager ,force_update ")', TimeBatch(10_000, None, True, True)),
    ('#time_batch(10 sec, "Force_Update")', TimeBatch(10_000, None, True, False)),
    ("#time_length_batch(10 sec, 5)", TimeLengthBatch(10_000, 5)),
    ("#groupwin(symbol)#length(3)#merge(symbol)", GroupWin(("symbol",), Length(3))),
    ("#groupwin(symbol, feed)#unique(id)#time(1 sec)#merge(symbol, feed)",
     GroupWin(("symbol", "feed"), Intersection((Unique(("id",)), Time(1000))))),
    ('#time_length_batch(1.5, 3, "FORCE_UPDATE")', TimeLengthBatch(1500, 3, True, False)),
    ("#win:time_length_batch(2 min, 100, 'START_EAGER')", TimeLengthBatch(120_000, 100, True, True)),
    ('#time_batch(10 sec, "FORCE_UPDATE,,")', TimeBatch(10_000, None, True, False)),
    ('#time_batch(10 sec, "")', TimeBatch(10_000)),
    ('#time_batch(10 sec, 3000L, "FORCE_UPDATE, START_EAGER")', TimeBatch(10_000, 3000, True, True)),
    ('#time_batch(1, 500, "force_update")', TimeBatch(1000, 500, True, False)),
    # time_accum; time_order, and timetolive as its span-0 form
    ("#time_accum(10 sec)", TimeAccum(10_000)),
    ("#win:time_accum(1.5)", TimeAccum(1500)),
    ("#time_order(ts, 2 sec)", TimeOrder("ts", 2000)),
    ("#ext:time_order(arrival_time, 10)", TimeOrder("arrival_time", 10_000)),
    ("#timetolive(ts)", TimeOrder("ts", 0)),
    (".ext:timetolive(ts)", TimeOrder("ts", 0)),
    # sort criteria: a property, then asc (the default) or desc, case-insensitive
    ("#sort(4, price asc, symbol desc)", Sort(4, (SortKey("price"), SortKey("symbol", True)))),
    ("#ext:sort(1, price DESC)", Sort(1, (SortKey("price", True),))),
    ("#sort(2, `desc` desc)", Sort(2, (SortKey("desc", True),))),
    # rank: unique properties, the size (the first number), criteria
    ("#rank(symbol, 3, price desc)", Rank(("symbol",), 3, (SortKey("price", True),))),
    ("#ext:rank(symbol, feed, 2, price, ts desc)", Rank(("symbol", "feed"), 2, (SortKey("price"), SortKey("ts", True)))),
    # property names: identifiers and backquoted names
    ("#unique(symbol, feed)", Unique(("symbol", "feed"))),
    ("#unique(`order`)", Unique(("order",))),
    ("#unique(sec)", Unique(("sec",))),
    ("#ext_timed(`ts`, 1 sec)", ExtTimed("ts", 1000)),
    ("#firstunique(a,b)", FirstUnique(("a", "b"))),
    # several data windows: an intersection, or with retain-union a union
    ("#unique(symbol)#time(10 sec)", Intersection((Unique(("symbol",)), Time(10_000)))),
    ("#unique(symbol)#time(10 sec) retain-intersection", Intersection((Unique(("symbol",)), Time(10_000)))),
    ("#unique(symbol)#time(10 sec) retain-union", RetainUnion((Unique(("symbol",)), Time(10_000)))),
    ("#unique(symbol)#time(10 sec) RETAIN-UNION", RetainUnion((Unique(("symbol",)), Time(10_000)))),
    ("#length(3)#time_batch(1 sec)#keepall", Intersection((Length(3), TimeBatch(1000), KeepAll()))),
    ("#length_batch(2)#time_batch(1 sec) retain-union", RetainUnion((LengthBatch(2), TimeBatch(1000)))),
    (".std:unique(symbol).win:time(1) retain-union", RetainUnion((Unique(("symbol",)), Time(1000)))),
    # one data window: the keyword changes nothing
    ("#length(2) retain-union", Length(2)),
    ("#length(2) retain-intersection", Length(2)),
    # groupwin around one window, an intersection, a union
    ("#groupwin(symbol)#time_batch(10 sec, 3000L, \"FORCE_UPDATE, START_EAGER\")",
     GroupWin(("symbol",), TimeBatch(10_000, 3000, True, True))),
    ("#groupwin(symbol, feed)#length(100)", GroupWin(("symbol", "feed"), Length(100))),
    ("#groupwin(symbol)#length(4)#time(10)", GroupWin(("symbol",), Intersection((Length(4), Time(10_000))))),
    ("#groupwin(symbol)#length(4)#time(10) retain-union", GroupWin(("symbol",), RetainUnion((Length(4), Time(10_000))))),
    ("#groupwin(symbol)#unique(feed) retain-union", GroupWin(("symbol",), Unique(("feed",)))),
    # blanks anywhere between tokens
    ("  # length ( 2 )  ", Length(2)),
    ("#groupwin( symbol , feed )\t#length(1)", GroupWin(("symbol", "feed"), Length(1))),
]

KINDS = implemented_kinds("esper")  # every kind Esper writes


@pytest.mark.parametrize("text, expected", PARSE_ROWS, ids=[row[0] for row in PARSE_ROWS])
def test_parse(text, expected):
    assert esper.parse(text) == expected


SYNTAX_ERROR_ROWS = [
    # (text, message fragment, column)
    ("", "expected '#' or '.'", 1),
    ("length(2)", "unexpected 'length'", 1),
    ("#", "unexpected end of the clause; expected a name", 2),
    ("#length(", "unexpected end of the clause", 9),
    ("#length(2", "expected ')' or ','", 10),
    ("#length(2))", "unexpected ')'", 11),
    ("#expr(current_count <=)", "unexpected ')'; expected a value", 23),
    ("#expr(a < b < c)", "unexpected '<'", 13),
    ("#expr(sum(price) < )", "unexpected ')'", 20),
    ("#expr(a and)", "unexpected ')'", 12),
    ("#expr(count(* ) > 1 +)", "unexpected ')'", 22),
    ("#length(2,)", "unexpected ')'", 11),
    ("#length(2)#", "expected a name", 12),
    (".length(2)", "expected ':'", 8),  # the dotted form needs a namespace
    ("#length(2).win:time(1)", "unexpected '.'", 11),  # the two forms do not mix
    (".win:length(2)#time(1)", "unexpected '#'", 15),
    ("#win:(2)", "expected a name", 6),
    ("#time(5 seconds 2 minutes)", "'minutes' is out of place", 19),
    ("#time(1 sec 1 sec)", "'sec' is out of place", 15),
    ("#time(1 msec 1 sec)", "units go from years down to microseconds", 16),
    ("#time(5 fortnights)", "unexpected 'fortnights'", 9),
    ("#time(1.5L)", "unexpected 'L'", 10),
    ("#unique(a b)", "unexpected 'b'", 11),
    ("#length(2) retain", "unexpected 'retain'", 12),
    ("#length(2) retain-unions", "unexpected 'retain'", 12),
    ('#time_batch(1 sec, "FORCE_UPDATE)', "unexpected character '\"'", 20),
    ("#time(1 sec", "unexpected end of the clause", 12),
]


@pytest.mark.parametrize("text, fragment, column", SYNTAX_ERROR_ROWS, ids=[row[0] or "<empty>" for row in SYNTAX_ERROR_ROWS])
def test_syntax_error(text, fragment, column):
    with pytest.raises(WindowSyntaxError) as caught:
        esper.parse(text)
    error = caught.value
    assert fragment in error.message
    assert error.column == column
    assert error.text == text
    # the message shows the clause with a caret under the column
    assert str(error).splitlines()[-1] == "  " + " " * (column - 1) + "^"


ERROR_ROWS = [
    # (text, error class, message fragments)
    # bad sizes
    ("#length(0)", InvalidSpec, ["length: parameter 1", "column 9", "above 0"]),
    ("#length(-1)", InvalidSpec, ["length: parameter 1", "above 0"]),
    ("#length_batch(1.5)", InvalidSpec, ["length_batch: parameter 1", "whole number", "decimal number 1.5"]),
    ("#firstlength(5 sec)", InvalidSpec, ["firstlength: parameter 1", "whole number", "time period"]),
    ("#length(symbol)", InvalidSpec, ["length: parameter 1", "property name symbol"]),
    ("#length('5')", InvalidSpec, ["length: parameter 1", "string"]),
    # bad time periods
    ("#time(0)", InvalidSpec, ["time: parameter 1", "above 0"]),
    ("#time(0 sec)", InvalidSpec, ["time: parameter 1", "above 0"]),
    ("#time(-1 sec)", InvalidSpec, ["time: parameter 1", "column 7", "above 0", "-1000 ms"]),
    ("#firsttime(-5)", InvalidSpec, ["firsttime: parameter 1", "above 0"]),
    ("#time(0.0001)", InvalidSpec, ["time: parameter 1", "whole milliseconds", "0.1 ms"]),
    ("#time(1.0005 sec)", InvalidSpec, ["whole milliseconds", "1000.5 ms"]),
    ("#time(1 usec)", InvalidSpec, ["whole milliseconds"]),
    ("#time(price)", InvalidSpec, ["time: parameter 1", "time period or a number of seconds", "property name price"]),
    ("#time(1 month)", UnsupportedWindow, ["calendar", "month"]),
    ("#time(1 year 2 months)", UnsupportedWindow, ["calendar"]),
    # wrong parameter counts
    ("#length()", InvalidSpec, ["length takes 1 parameter", "got 0"]),
    ("#length", InvalidSpec, ["length takes 1 parameter", "got 0"]),
    ("#length(1, 2)", InvalidSpec, ["length takes 1 parameter", "got 2"]),
    ("#time(1, 2)", InvalidSpec, ["time takes 1 parameter"]),
    ("#ext_timed(1 sec)", InvalidSpec, ["ext_timed takes 2 parameters", "got 1"]),
    ("#ext_timed_batch(ts, 1, 2, 3)", InvalidSpec, ["ext_timed_batch takes 2 or 3 parameters", "got 4"]),
    ("#time_batch()", InvalidSpec, ["time_batch takes 1 to 3 parameters", "got 0"]),
    ('#time_batch(1, 2, "FORCE_UPDATE", 4)', InvalidSpec, ["time_batch takes 1 to 3 parameters", "got 4"]),
    ("#keepall(1)", InvalidSpec, ["keepall takes no parameters", "got 1"]),
    ("#firstevent(symbol)", InvalidSpec, ["firstevent takes no parameters"]),
    ("#lastevent(1, 2)", InvalidSpec, ["lastevent takes no parameters", "got 2"]),
    ("#unique()", InvalidSpec, ["unique takes one or more property names"]),
    ("#firstunique", InvalidSpec, ["firstunique takes one or more property names"]),
    ("#groupwin()#length(1)", InvalidSpec, ["groupwin takes one or more property names"]),
    # a number (or other) where a property is needed
    ("#ext_timed(5, 1 sec)", InvalidSpec, ["ext_timed: parameter 1", "column 12", "property name", "whole number 5"]),
    ("#ext_timed_batch('ts', 1 sec)", InvalidSpec, ["ext_timed_batch: parameter 1", "property name", "string"]),
    ("#unique(symbol, 5)", InvalidSpec, ["unique: parameter 2", "column 17", "property name"]),
    ("#groupwin(1)#length(1)", InvalidSpec, ["groupwin: parameter 1", "property name"]),
    ("#firstunique(1 sec)", InvalidSpec, ["firstunique: parameter 1", "time period"]),
    ("#unique(symbol, symbol)", InvalidSpec, ["named twice"]),
    ("#unique(`my symbol`)", InvalidSpec, ["not a property name"]),
    # reference points and flow control
    ("#time_batch(1 sec, 1.5)", InvalidSpec, ["time_batch: parameter 2", "reference point", "whole number of milliseconds"]),
    ("#time_batch(1 sec, 2 sec)", InvalidSpec, ["time_batch: parameter 2", "reference point"]),
    ("#time_batch(1 sec, symbol)", InvalidSpec, ["time_batch: parameter 2", "reference point"]),
    ("#ext_timed_batch(ts, 1 sec, 0.5)", InvalidSpec, ["ext_timed_batch: parameter 3", "reference point"]),
    ('#ext_timed_batch(ts, 1 sec, "FORCE_UPDATE")', InvalidSpec, ["ext_timed_batch: parameter 3", "reference point"]),
    ('#time_batch(1 sec, "FORCE_UPDATE, NOW")', InvalidSpec, ["time_batch: parameter 2", "column 20", "unknown flow-control keyword 'NOW'", "FORCE_UPDATE, START_EAGER"]),
    ('#time_batch(1 sec, "FORCE-UPDATE")', InvalidSpec, ["unknown flow-control keyword 'FORCE-UPDATE'"]),
    ("#time_batch(1 sec, 100, 200)", InvalidSpec, ["time_batch: parameter 3", "flow-control keywords"]),
    ('#time_batch(1 sec, "FORCE_UPDATE", 100)', InvalidSpec, ["time_batch: parameter 2", "reference point"]),
    # names: unknown, wrong namespace, case
    ("#foo(1)", InvalidSpec, ["unknown window 'foo'", "column 1", "length", "time_batch", "groupwin"]),
    ("#length(1)#win:bar", InvalidSpec, ["unknown window 'win:bar'", "column 11"]),
    ("#Length(2)", InvalidSpec, ["unknown window 'Length'", "case-sensitive"]),
    ("#std:time(1)", InvalidSpec, ["unknown window 'std:time'", "time is win:time"]),
    (".win:unique(symbol)", InvalidSpec, ["unknown window 'win:unique'", "unique is std:unique"]),
    (".ext:length(1)", InvalidSpec, ["length is win:length"]),
    # windows Esper has that the oracle does not model
    ("#sort(2)", InvalidSpec, ["sort takes a size, then one or more sort criteria"]),
    ("#sort(price, 2)", InvalidSpec, ["sort: parameter 1", "size"]),
    ("#sort(2, 1 sec)", InvalidSpec, ["sort: parameter 2", "column 10", "sort criterion", "time period"]),
    ("#sort(2, price up)", WindowSyntaxError, ["unexpected 'up'", "asc or desc", "column 16"]),
    ("#sort(2, time)", InvalidSpec, ["sort: parameter 2", "reserved name"]),
    ("#rank(3, price)", InvalidSpec, ["rank takes one or more unique properties, a size, then one or more sort criteria"]),
    ("#rank(symbol, 3)", InvalidSpec, ["rank takes one or more unique properties"]),
    ("#rank(symbol, symbol, 3, price)", InvalidSpec, ["rank: a unique property is named twice"]),
    ("#rank(symbol, 0, price)", InvalidSpec, ["rank: parameter 2", "above 0"]),
    ("#rank(symbol, 1 sec, 2, price)", InvalidSpec, ["rank: parameter 2", "unique key", "time period"]),
    ("#time_order(ts, 0)", InvalidSpec, ["time_order: parameter 2", "above 0"]),
    ("#time_order(ts)", InvalidSpec, ["time_order", "2 parameters"]),
    ("#timetolive(ts, 1 sec)", InvalidSpec, ["timetolive", "1 parameter"]),
    ("#timetolive(1 sec)", InvalidSpec, ["timetolive: parameter 1", "property name"]),
    ("#time_accum(0)", InvalidSpec, ["time_accum: parameter 1", "above 0"]),
    ("#time_length_batch(10 sec)", InvalidSpec, ["time_length_batch", "2 or 3 parameters"]),
    ("#time_length_batch(10 sec, 0)", InvalidSpec, ["time_length_batch: parameter 2", "above 0"]),
    ("#time_length_batch(10 sec, 5, 3)", InvalidSpec, ["time_length_batch: parameter 3", "flow-control"]),
    ('#time_length_batch(10 sec, 5, "EAGER")', InvalidSpec, ["unknown flow-control keyword 'EAGER'"]),
    ("#length(2 * 3)", InvalidSpec, ["length: parameter 1", "column 9", "whole number", "the expression 2 * 3"]),
    ("#unique(a.b)", InvalidSpec, ["a.b at column 9", "only oldest_event and newest_event"]),
    ("#expr(price + 1)", InvalidSpec, ["expr: parameter 1", "column 7", "true or false", "price + 1"]),
    ("#expr(sum(price))", InvalidSpec, ["expr: parameter 1", "true or false"]),
    ("#expr(current_count)", InvalidSpec, ["expr: parameter 1", "true or false"]),
    ("#expr(5)", InvalidSpec, ["expr: parameter 1", "true or false"]),
    ("#expr(2 sec > 1)", WindowSyntaxError, ["unexpected '>'"]),
    ("#expr(median(price) > 1)", InvalidSpec, ["unknown function 'median' at column 7", "sum, count, avg, min, max"]),
    ("#expr(sum(*) > 1)", InvalidSpec, ["sum(*)", "column 7"]),
    ("#expr(sum(sum(price)) > 1)", InvalidSpec, ["argument of sum", "column 7"]),
    ("#expr(sum(current_count) > 1)", InvalidSpec, ["argument of sum", "column 7"]),
    ("#expr(oldest_event > 1)", InvalidSpec, ["oldest_event at column 7 is an event", "oldest_event.symbol"]),
    ("#expr(view_reference = null)", UnsupportedWindow, ["view_reference (column 7)"]),
    ("#expr(time > 1)", InvalidSpec, ["property 'time' is a reserved name"]),
    ("#expr(newest_event.seq > 1)", InvalidSpec, ["newest_event.seq at column 7", "reserved"]),
    ("#expr(current_count < 2, true)", InvalidSpec, ["expr takes 1 parameter"]),
    ("#expr_batch(current_count < 2, 1)", InvalidSpec, ["expr_batch: parameter 2", "true or false", "whole number 1"]),
    ("#length(2)#expr(current_count < 2)", UnsupportedWindow, ["intersection", "expr window as a member"]),
    ("#expr(x)#time(1) retain-union", UnsupportedWindow, ["retain_union", "expr window"]),
    ("#foo(a b)", InvalidSpec, ["unknown window 'foo'"]),
    # derived-value windows (esper.md §7): property parameters, the end of the chain, no groupwin
    ("#uni()", InvalidSpec, ["uni takes 1 property (the value)", "got 0 parameters", "column 1"]),
    ("#length(2)#uni(5)", InvalidSpec, ["uni: parameter 1", "column 16", "property name", "whole number 5"]),
    ("#uni(*)", InvalidSpec, ["uni: parameter 1", "column 6", "wildcard"]),
    ("#uni(id)", InvalidSpec, ["uni: parameter 1", "numeric", "string"]),
    ("#uni(price, 1 sec)", InvalidSpec, ["uni: parameter 2", "column 13", "additional property", "time period"]),
    ("#uni(price, Average)", InvalidSpec, ["uni: parameter 2", "overlaps the field 'average'"]),
    ("#linest(price, ts, slope)", InvalidSpec, ["linest: parameter 3", "overlaps the field 'slope'"]),
    ("#linest(price)", InvalidSpec, ["linest takes 2 properties (x, y)", "got 1 parameter"]),
    ("#correl(price, 2)", InvalidSpec, ["correl: parameter 2", "property name (y)"]),
    ("#weighted_avg(price)", InvalidSpec, ["weighted_avg takes 2 properties (the value, the weight)"]),
    ("#weighted_avg(price, ts, average)", InvalidSpec, ["overlaps the field 'average'"]),
    ("#size(size)", InvalidSpec, ["size: parameter 1", "overlaps the field 'size'"]),
    ("#size(time)", InvalidSpec, ["size: parameter 1", "reserved name"]),
    ("#uni(values)", InvalidSpec, ["uni: parameter 1", "reserved name"]),
    ("#size()#length(2)", InvalidSpec, ["size (column 1) is a derived-value window and ends the chain", "length at column 8"]),
    ("#length(2)#size()#uni(price)", InvalidSpec, ["size (column 11)", "ends the chain", "uni at column 18"]),
    ("#groupwin(symbol)#length(2)#merge(symbol)#uni(price)", UnsupportedWindow, ["uni, column 42", "merge"]),
    ("#groupwin(symbol, feed)#uni(price, symbol)", InvalidSpec, ["the key 'symbol' is also a field"]),
    ("#groupwin(symbol)#length(2)#merge(symbol)#size()", UnsupportedWindow, ["size, column 42"]),
    ("#length(2)#merge(symbol)", InvalidSpec, ["merge (column 11) needs a groupwin before it"]),
    ("#groupwin(symbol)#length(2)#merge(feed)", InvalidSpec, ["must name the groupwin's keys (symbol), got feed"]),
    ("#groupwin(symbol)#length(2)#merge(symbol)#time(1)", InvalidSpec, ["ends the grouped chain", "time at column 42"]),
    ("#groupwin(symbol)#length(2)#merge(symbol)#merge(symbol)", InvalidSpec, ["only one merge"]),
    ("#std:uni(price)", InvalidSpec, ["unknown window 'std:uni'", "stat:uni"]),
    # chains Esper rejects (ViewFactoryForgeUtil.verifyGroups / addMergeViews, IntersectViewFactoryForge)
    ("#groupwin(symbol)", InvalidSpec, ["groupwin (column 1) needs one or more data windows"]),
    ("#length(2)#groupwin(symbol)", InvalidSpec, ["groupwin (column 11) needs one or more data windows"]),
    ("#length(2)#groupwin(symbol)#time(1)", InvalidSpec, ["groupwin (column 11) must come first"]),
    ("#groupwin(a)#groupwin(b)#length(1)", InvalidSpec, ["only one groupwin", "column 13"]),
    ("#time_batch(1)#length_batch(10)", InvalidSpec, ["at most one batch window", "time_batch (column 1)", "length_batch (column 15)"]),
    ("#groupwin(a)#length_batch(2)#ext_timed_batch(ts, 1)", InvalidSpec, ["at most one batch window"]),
]


@pytest.mark.parametrize("text, error, fragments", ERROR_ROWS, ids=[row[0] for row in ERROR_ROWS])
def test_error(text, error, fragments):
    with pytest.raises(error) as caught:
        esper.parse(text)
    assert type(caught.value) is error
    for fragment in fragments:
        assert fragment in str(caught.value)


# numbers that parse but do not fit the columns Spark computes with: refused by the
# parser, naming the parameter and its column (the text shortened past 40 characters)
RANGE_ROWS = [
    ("size past an int", "#length(99999999999999999999999)", ["length: parameter 1", "column 9", "at most 2,147,483,647"]),
    ("size of 5,000 digits", "#length(" + "9" * 5000 + ")", ["length: parameter 1", "'9999999999", "...'", "at most"]),
    ("largest int size", "#length_batch(2147483648)", ["at most 2,147,483,647"]),
    ("period of 1e400 seconds", "#time(1e400 sec)", ["time: parameter 1", "column 7", "at most 2**62 ms"]),
    ("period past a long", "#time(9223372036854775807 sec)", ["at most 2**62 ms"]),
    ("seconds as a bare number", "#firsttime(9223372036854775807)", ["firsttime: parameter 1", "at most 2**62 ms"]),
    ("reference past a long", "#time_batch(1 sec, 99999999999999999999L)", ["time_batch: parameter 2", "within 2**62 ms"]),
]


# a property named like a field of the trace or update tables: refused alike for every
# engine (the model's validator; the parser adds the column); `id` is the event's id
RESERVED_PROPERTY_ROWS = [
    ("#unique(time)", ["unique: parameter 1", "column 9", "property 'time' is a reserved name"]),
    ("#firstunique(symbol, Seq)", ["firstunique: parameter 2", "property 'Seq' is a reserved name"]),
    ("#groupwin(kind)#length(1)", ["groupwin: parameter 1", "column 11", "property 'kind'"]),
    ("#ext_timed(after, 1 sec)", ["ext_timed: parameter 1", "property 'after'"]),
    ("#ext_timed_batch(trace_id, 1 sec)", ["property 'trace_id'"]),
]


@pytest.mark.parametrize("text, fragments", RESERVED_PROPERTY_ROWS, ids=[row[0] for row in RESERVED_PROPERTY_ROWS])
def test_a_reserved_property_name_is_refused(text, fragments):
    with pytest.raises(InvalidSpec) as caught:
        esper.parse(text)
    for fragment in fragments:
        assert fragment in str(caught.value)


def test_the_model_refuses_reserved_names_without_the_parser():
    with pytest.raises(InvalidSpec, match="property 'time' is a reserved name"):
        Unique(("time",))
    assert esper.parse("#unique(id)") == Unique(("id",))


@pytest.mark.parametrize("what, text, fragments", RANGE_ROWS, ids=[row[0] for row in RANGE_ROWS])
def test_numbers_that_do_not_fit_are_refused_by_the_parser(what, text, fragments):
    with pytest.raises(InvalidSpec) as caught:
        esper.parse(text)
    message = str(caught.value)
    assert len(message) < 300, message
    for fragment in fragments:
        assert fragment in message


def test_the_largest_numbers_that_fit_still_parse():
    assert esper.parse("#length(2147483647)") == Length(2_147_483_647)
    assert esper.parse(f"#time({2**62} msec)") == Time(2**62)


RENDER_ROWS = [
    (Length(2), "#length(2)"),
    (LengthBatch(5), "#length_batch(5)"),
    (FirstLength(1), "#firstlength(1)"),
    (Time(10_000), "#time(10 sec)"),
    (Time(1500), "#time(1500 msec)"),
    (Time(1), "#time(1 msec)"),
    (Time(125_000), "#time(125 sec)"),
    (FirstTime(3000), "#firsttime(3 sec)"),
    (ExtTimed("ts", 2500), "#ext_timed(ts, 2500 msec)"),
    (ExtTimedBatch("ts", 1000), "#ext_timed_batch(ts, 1 sec)"),
    (ExtTimedBatch("ts", 1000, -500), "#ext_timed_batch(ts, 1 sec, -500L)"),
    (TimeBatch(1000), "#time_batch(1 sec)"),
    (TimeBatch(1000, 3000), "#time_batch(1 sec, 3000L)"),
    (TimeBatch(1000, 0), "#time_batch(1 sec, 0L)"),
    (TimeBatch(1000, None, True), '#time_batch(1 sec, "FORCE_UPDATE")'),
    (TimeBatch(1000, None, True, True), '#time_batch(1 sec, "FORCE_UPDATE, START_EAGER")'),
    (TimeBatch(10_000, 3000, True, True), '#time_batch(10 sec, 3000L, "FORCE_UPDATE, START_EAGER")'),
    (KeepAll(), "#keepall"),
    (FirstEvent(), "#firstevent"),
    (LastEvent(), "#lastevent"),
    (Unique(("symbol", "feed")), "#unique(symbol, feed)"),
    (FirstUnique(("symbol",)), "#firstunique(symbol)"),
    (Intersection((Unique(("symbol",)), Time(1000))), "#unique(symbol)#time(1 sec)"),
    (RetainUnion((Unique(("symbol",)), Time(1000))), "#unique(symbol)#time(1 sec) retain-union"),
    (GroupWin(("symbol",), TimeBatch(10_000, 3000, True, True)), '#groupwin(symbol)#time_batch(10 sec, 3000L, "FORCE_UPDATE, START_EAGER")'),
    (GroupWin(("symbol", "feed"), Intersection((Length(4), Time(10_000)))), "#groupwin(symbol, feed)#length(4)#time(10 sec)"),
    (GroupWin(("symbol",), RetainUnion((Length(4), KeepAll()))), "#groupwin(symbol)#length(4)#keepall retain-union"),
]


@pytest.mark.parametrize("spec, text", RENDER_ROWS, ids=[row[1] for row in RENDER_ROWS])
def test_render(spec, text):
    assert esper.render(spec) == text
    assert esper.parse(text) == spec


def test_esper_does_not_write_an_intersection_whose_time_timer_follows_the_oldest():
    with pytest.raises(UnsupportedWindow, match="stale_time_timers=True"):
        esper.render(Intersection((Unique(("symbol",)), Time(1000)), stale_time_timers=False))


@given(windows("esper", KINDS))
def test_parse_of_render_is_identity(spec):
    # windows() itself renders and parses back; this states the property outright
    assert esper.parse(esper.render(spec)) == spec


# --------------------------------------------------------------------------- other spellings

NAMESPACE = esper.NAMESPACES


def _case(draw, word: str) -> str:
    return draw(st.sampled_from([word, word.upper(), word.capitalize()]))


def _period(draw, ms: int) -> str:
    """`ms` as a bare number of seconds, or a time period in some choice of units."""
    form = draw(st.sampled_from(["seconds", "msec", "parts"]))
    if form == "seconds":
        return f"{Decimal(ms) / 1000:f}"
    if form == "msec":
        return f"{ms} {_case(draw, draw(st.sampled_from(['msec', 'millisecond', 'milliseconds'])))}"
    parts = []
    rest = ms
    for unit_ms, words in ((86_400_000, ("day", "days")), (3_600_000, ("hour", "hours")),
                           (60_000, ("min", "minute", "minutes")), (1000, ("sec", "second", "seconds")),
                           (1, ("msec", "millisecond", "milliseconds"))):
        amount, rest = divmod(rest, unit_ms)
        if amount:
            parts.append(f"{amount} {_case(draw, draw(st.sampled_from(words)))}")
    return " ".join(parts)


def _whole(draw, n: int) -> str:
    return f"{n}{draw(st.sampled_from(['', 'L', 'l']))}"


def _flags(draw, force: bool, eager: bool) -> str:
    words = ["START_EAGER"] if eager else ["FORCE_UPDATE"] if force else []
    if eager and draw(st.booleans()):
        words.append("FORCE_UPDATE")
    words = [_case(draw, w.lower()) for w in draw(st.permutations(words))] + draw(st.lists(st.just(""), max_size=1))
    quote = draw(st.sampled_from(['"', "'"]))
    return quote + draw(st.sampled_from([",", ", ", " , "])).join(words) + quote


def _expression(draw, node) -> str:
    """An expression's text with keywords in any case, `<>` for `!=`, and
    maybe in parentheses."""
    words = esper.render_expression(node).split(" ")
    words = [_case(draw, w) if w in ("and", "or", "not") else ("<>" if w == "!=" and draw(st.booleans()) else w)
             for w in words]
    text = " ".join(words)
    return f"({text})" if draw(st.booleans()) else text


def _spell_window(draw, spec, dotted: bool) -> str:
    kind = esper.name(spec)  # Esper's name: TimeOrder with span 0 is timetolive
    head = f".{NAMESPACE[kind]}:{kind}" if dotted else "#" + draw(st.sampled_from(["", f"{NAMESPACE[kind]}:"])) + kind
    if isinstance(spec, (Length, LengthBatch, FirstLength)):
        params = [_whole(draw, spec.size)]
    elif isinstance(spec, (Time, FirstTime, TimeAccum)):
        params = [_period(draw, spec.span)]
    elif isinstance(spec, Rank):
        params = [*spec.keys, _whole(draw, spec.size)] + [
            f"{c.property} {_case(draw, 'desc')}" if c.descending else c.property for c in spec.criteria]
    elif isinstance(spec, Sort):
        params = [_whole(draw, spec.size)] + [
            f"{c.property} {_case(draw, 'desc')}" if c.descending else c.property + draw(st.sampled_from(["", " asc", " ASC"]))
            for c in spec.criteria]
    elif isinstance(spec, TimeOrder):
        params = [spec.timestamp] + ([_period(draw, spec.span)] if spec.span else [])
    elif isinstance(spec, ExtTimed):
        params = [spec.timestamp, _period(draw, spec.span)]
    elif isinstance(spec, ExtTimedBatch):
        params = [spec.timestamp, _period(draw, spec.span)]
        if spec.reference is not None:
            params.append(_whole(draw, spec.reference))
    elif isinstance(spec, TimeBatch):
        params = [_period(draw, spec.span)]
        if spec.reference is not None:
            params.append(_whole(draw, spec.reference))
        if spec.force_update or draw(st.booleans()):
            params.append(_flags(draw, spec.force_update, spec.start_eager))
    elif isinstance(spec, TimeLengthBatch):
        params = [_period(draw, spec.span), _whole(draw, spec.size)]
        if spec.force_update or draw(st.booleans()):
            params.append(_flags(draw, spec.force_update, spec.start_eager))
    elif isinstance(spec, (Unique, FirstUnique)):
        params = [draw(st.sampled_from([k, f"`{k}`"])) for k in spec.keys]
    elif isinstance(spec, (Expr, ExprBatch)):
        params = [_expression(draw, spec.expiry)]
        if isinstance(spec, ExprBatch) and (not spec.include_trigger or draw(st.booleans())):
            params.append(_case(draw, "true" if spec.include_trigger else "false"))
    else:
        return head + draw(st.sampled_from(["", "()", "( )"]))
    return f"{head}({draw(st.sampled_from([', ', ',', ' , '])).join(params)})"


def _spell_derived(draw, spec, dotted: bool) -> str:
    kind = spec.KIND
    head = f".{NAMESPACE[kind]}:{kind}" if dotted else "#" + draw(st.sampled_from(["", f"{NAMESPACE[kind]}:"])) + kind
    extras = list(spec.extra) + draw(st.lists(st.sampled_from(spec.extra), max_size=1)) if spec.extra else []
    if spec.all_properties:
        extras.insert(draw(st.integers(0, len(extras))), "*")
    params = [*spec.values(), *extras]
    if not params:
        return head + draw(st.sampled_from(["", "()", "( )"]))
    return f"{head}({draw(st.sampled_from([', ', ',', ' , '])).join(params)})"


@st.composite
def spellings(draw, spec) -> str:
    """Some way to write `spec` in Esper, other than the canonical one."""
    dotted = draw(st.booleans())
    if isinstance(spec, DERIVED_WINDOWS):
        derived = _spell_derived(draw, spec, dotted)
        if spec.source is None:
            return derived
        source = draw(spellings(spec.source))
        if dotted != source.startswith("."):  # the two forms do not mix in one chain
            derived = _spell_derived(draw, spec, source.startswith("."))
        keyword = re.search(r" retain-(union|intersection)$", source, re.IGNORECASE)
        at = keyword.start() if keyword else len(source)
        return source[:at] + derived + source[at:]
    text = ""
    if isinstance(spec, GroupWin):
        keys, spec = spec.keys, spec.window
        if isinstance(spec, DERIVED_WINDOWS):  # grouped statistics: the group's source, then the derived window
            source = "" if spec.source is None else draw(spellings(spec.source))
            dotted = source.startswith(".") if source else dotted
            keyword = re.search(r" retain-(union|intersection)$", source, re.IGNORECASE)
            at = keyword.start() if keyword else len(source)
            text = f".std:groupwin({', '.join(keys)})" if dotted else f"#groupwin({','.join(keys)})"
            return text + source[:at] + _spell_derived(draw, spec, dotted) + source[at:]
        text = f".std:groupwin({', '.join(keys)})" if dotted else f"#groupwin({','.join(keys)})"
    members = spec.members if isinstance(spec, (Intersection, RetainUnion)) else (spec,)
    text += draw(st.sampled_from(["", " "])).join(_spell_window(draw, m, dotted) for m in members)
    if isinstance(spec, RetainUnion):
        text += " " + _case(draw, "retain-union")
    elif len(members) > 1 or draw(st.booleans()):
        # an intersection may say so; one window may carry either keyword, to no effect
        text += draw(st.sampled_from(["", " retain-intersection", " RETAIN-INTERSECTION", " retain-union"][: 4 if len(members) == 1 else 3]))
    return text


@given(st.data())
def test_other_spellings_mean_the_same(data):
    spec = data.draw(windows("esper", [k for k in KINDS if not k.startswith("statement/")]), label="spec")
    text = data.draw(spellings(spec), label="text")
    assert esper.parse(text) == spec


# --------------------------------------------------------------------------- the corpus


def _corpus_windows() -> list[str]:
    found = set()
    for path in sorted(CORPUS.rglob("*.json")):
        raw = json.loads(path.read_text(encoding="utf-8"))
        if raw.get("dialect") == "esper":
            found.add(raw["window"])
    return sorted(found)


@pytest.mark.parametrize("text", _corpus_windows())
def test_corpus_windows_parse_and_round_trip(text):
    spec = esper.parse(text)
    assert esper.parse(esper.render(spec)) == spec
