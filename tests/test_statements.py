"""Esper statements on the oracle (oracle/windows/statement.py) against the
windows themselves, over the drawn window kinds: the ground truth is the 62
observed statement cases (tests/test_corpus.py); these check that the
statement layer keeps what the window posts, for every kind the cases do not
cover."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from difftest.strategies import implemented_kinds, trace_shape, traces, windows
from oracle import run
from oracle.model import DERIVED_WINDOWS, Aggregate, Arrive, Binary, Event, Literal, Name, SelectItem, Trace
from oracle.model import Statement

#: Esper's window kinds a statement reads (a derived-value window posts rows, not events)
KINDS = [k for k in implemented_kinds("esper") if not any(k.split("/")[-1] == c.KIND for c in DERIVED_WINDOWS)
         and not k.startswith("statement/")]


@st.composite
def window_and_trace(draw):
    window = draw(windows("esper", KINDS))
    return window, draw(traces(**trace_shape(window)))


@settings(max_examples=60, deadline=None)
@given(window_and_trace())
def test_select_irstream_star_posts_the_windows_events(drawn):
    """`select irstream * from E<window>`: one row per posted event, new rows
    the inserted events' properties, old rows the removed ones', update by update."""
    window, trace = drawn
    statement = Statement((SelectItem(),), window, "irstream")
    expected = [(u.after, u.time, [e.as_dict() for e in u.insert], [e.as_dict() for e in u.remove])
                for u in run(window, trace) if u.insert or u.remove]
    posted = [(u.after, u.time, [dict(r) for r in u.values.insert], [dict(r) for r in u.values.remove])
              for u in run(statement, trace)]
    assert posted == expected


@settings(max_examples=60, deadline=None)
@given(window_and_trace())
def test_count_after_each_update_is_what_entered_less_what_left(drawn):
    """`select irstream count(*) as n`: one update per update of the window
    (an empty FORCE_UPDATE post too), its last new row counting the events the
    window has posted as new less those it has posted as old (entered first,
    then left one by one, a leave at 0 leaving 0: an intersection may post as
    old an arrival it refused), its first old row the count before the update."""
    window, trace = drawn
    statement = Statement((SelectItem(Aggregate("count"), "n"),), window, "irstream")
    held = 0
    posted = run(statement, trace)
    updates = run(window, trace)
    assert [(u.after, u.time) for u in posted] == [(u.after, u.time) for u in updates]
    for update, rows in zip(updates, posted):
        assert rows.values.remove[0]["n"] == held
        held = max(0, held + len(update.insert) - len(update.remove))  # the leaves come last, each clamped
        assert rows.values.insert[-1]["n"] == held


@settings(max_examples=40, deadline=None)
@given(window_and_trace())
def test_the_stream_selectors_split_one_statements_rows(drawn):
    """istream posts irstream's new rows, rstream its old rows as new data."""
    window, trace = drawn
    item = (SelectItem(Name("price"), "p"),)
    both = [(u.after, [dict(r) for r in u.values.insert], [dict(r) for r in u.values.remove])
            for u in run(Statement(item, window, "irstream"), trace)]
    new = [(u.after, [dict(r) for r in u.values.insert]) for u in run(Statement(item, window, "istream"), trace)]
    old = [(u.after, [dict(r) for r in u.values.insert]) for u in run(Statement(item, window, "rstream"), trace)]
    assert new == [(after, rows) for after, rows, _ in both if rows]
    assert old == [(after, rows) for after, _, rows in both if rows]


def test_wildcard_beside_items_adds_the_events_properties_to_each_row():
    """`select irstream *, price * 2 as d`: each row is the event's properties
    and the items' columns (the wildcard first, as Esper writes it)."""
    from oracle.dialects import parse, render

    statement = parse("select irstream *, price * 2 as d from E#length(1)", "esper")
    assert parse(render(statement, "esper"), "esper") == statement
    trace = Trace((Arrive(Event("E1", {"price": 1.0, "symbol": "A"})), Arrive(Event("E2", {"price": 2.0}))))
    rows = [([dict(r) for r in u.values.insert], [dict(r) for r in u.values.remove]) for u in run(statement, trace)]
    assert rows == [([{"id": "E1", "price": 1.0, "symbol": "A", "d": 2.0}], []),
                    ([{"id": "E2", "price": 2.0, "d": 4.0}], [{"id": "E1", "price": 1.0, "symbol": "A", "d": 2.0}])]


# --------------------------------------------------------------------------- one model, each engine's rules


def test_every_engines_statement_is_the_one_model_with_its_rules():
    """Each dialect parses its statements into `Statement`, its engine's rules
    declared on it, and writes back only its own engine's."""
    from oracle import parse, render
    from oracle.dialects import writes
    from oracle.model import APAMA, CCL, ESPER, KUIPER, RULES

    texts = {
        ESPER: ("esper", "select irstream sum(price) as total from E#length(3)"),
        CCL: ("ccl", "SELECT symbol, sum(price) AS total FROM s KEEP 3 ROWS GROUP BY symbol"),
        KUIPER: ("kuiper", "SELECT count(*) AS c FROM demo GROUP BY TUMBLINGWINDOW(ss, 10)"),
        APAMA: ("apama", "from v in values retain 3 select sum(v.price)"),
    }
    assert set(texts) == set(RULES)
    for rules, (dialect, text) in texts.items():
        spec = parse(text, dialect)
        assert type(spec) is Statement and spec.rules is rules
        assert render(spec, dialect) == text
        assert [d for d in ("esper", "ccl", "kuiper", "apama") if writes(spec, d)] == [dialect]


def test_the_rules_refuse_what_their_engine_does_not_read():
    """A statement's window and clauses are checked against its rules, naming why."""
    import pytest

    from oracle.errors import InvalidSpec
    from oracle.model import APAMA, CCL, KUIPER, Length, OrderKey, Tumbling

    count = (SelectItem(Aggregate("count"), "n"),)
    cases = [
        (lambda: Statement(count, Tumbling(1000)), "esper's statements do not read a tumbling window"),
        (lambda: Statement(count, Length(3), rules=KUIPER), "kuiper's statements do not read a length window"),
        (lambda: Statement(count, Length(3), rules=CCL), "an aggregation window needs GROUP BY"),
        (lambda: Statement(count, Length(3), order=(OrderKey(Name("price")),)), "ORDER BY is not supported"),
        (lambda: Statement(count, Length(3), rules=APAMA), "with no alias"),
        (lambda: Statement((SelectItem(),), Length(3), "irstream", rules=APAMA), "not both"),
        (lambda: Statement((SelectItem(Aggregate("sum", Name("id"))),), Length(3), rules=APAMA), "`id` is the event's id"),
        (lambda: Statement(count, Length(3), where=Binary(">", Aggregate("count"), Literal(1))), "cannot aggregate"),
        (lambda: Statement(count, Tumbling(1000), where=Binary(">", Aggregate("count"), Literal(1)), rules=KUIPER),
         "pushes WHERE into the window's own filter"),
    ]
    for make, message in cases:
        with pytest.raises(InvalidSpec, match=message):
            make()


def test_the_value_table_is_the_engines():
    """Esper's and eKuiper's statements divide two ints and compare with null
    by their own engine's table (`oracle.windows.values`)."""
    from oracle.windows.values import GO, JAVA, VALUES
    from oracle.model import RULES

    assert JAVA.arithmetic("/", 7, 2) == 3.5 and GO.arithmetic("/", 7, 2) == 3
    assert JAVA.compare("=", None, 1) is None and GO.compare("=", None, 1) is False
    assert JAVA.logical("or", None, lambda: True) is True and GO.logical("or", None, lambda: True) is False
    assert {rules.values for rules in RULES} - {None} <= set(VALUES)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_select_irstream_star_over_a_derived_window_posts_its_rows(data):
    """Over a derived-value window a statement reads the window's rows: `select
    irstream *` posts exactly the rows the window posts, new and old."""
    from difftest.strategies import DERIVED_SPECS

    window = data.draw(st.one_of(*DERIVED_SPECS.values()))
    trace = data.draw(traces(**trace_shape(window)))
    statement = Statement((SelectItem(),), window, "irstream")
    expected = [(u.after, [dict(r) for r in u.values.insert], [dict(r) for r in u.values.remove])
                for u in run(window, trace) if u.values is not None and (u.values.insert or u.values.remove)]
    posted = [(u.after, [dict(r) for r in u.values.insert], [dict(r) for r in u.values.remove])
              for u in run(statement, trace)]
    assert repr(posted) == repr(expected)  # NaN fields compare by their text


def test_a_statement_pickles_with_its_engines_rules():
    """Spark ships specs to its workers by pickling: the rules come back as the
    engine's one `Rules`, so a statement equals its copy."""
    import pickle

    from oracle import parse
    from oracle.model import RULES

    for text, dialect in (("SELECT count(*) AS c FROM demo GROUP BY TUMBLINGWINDOW(ss, 10)", "kuiper"),
                          ("from v in values retain 3 select sum(v.price)", "apama"),
                          ("select irstream sum(price) as total from E#length(3)", "esper")):
        spec = parse(text, dialect)
        copy = pickle.loads(pickle.dumps(spec))
        assert copy == spec and copy.rules is spec.rules and copy.rules in RULES
