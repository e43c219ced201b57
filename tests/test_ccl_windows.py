"""CCL's windows in the oracle: where a CCL form and an Esper window are the same
rule they post the same updates on generated traces; keyed windows apply the
operation codes, reject what they cannot take and go on; a window without a
primary key takes inserts only.

Where the rules differ, corpus cases show it side by side:
`ccl/every-rows-purges-on-row-n-plus-1` and `esper/length_batch-beside-ccl-keep-every-rows`,
`ccl/every-interval-inserts-at-once` and `esper/time_batch-beside-ccl-keep-every-interval`,
`ccl/interval-per-expires-oldest-first-across-groups` and
`esper/groupwin-time-beside-ccl-keep-interval-per`; `ccl/slack-purges-s-rows-at-n-plus-s`
against `#length`'s one row at a time.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from difftest.strategies import GRID, seeded_traces
from oracle import parse, run
from oracle.driver import start
from oracle.errors import InvalidTrace
from oracle.model import Arrive, Event, Trace, spec_keys

sizes = st.integers(1, 4)
spans = st.integers(1, 6).map(lambda k: k * GRID)
seeds = st.integers(0, 2**64 - 1)
TRACES = 40


def _same_updates(ccl_text: str, esper_text: str, seed: int, properties=()):
    ccl, esper = parse(ccl_text, "ccl"), parse(esper_text, "esper")
    for n, trace in enumerate(seeded_traces(seed, TRACES, properties)):
        assert run(ccl, trace) == run(esper, trace), f"{ccl_text} and {esper_text} differ on seeded_traces({seed})[{n}]"
    return ccl, esper


@given(sizes, seeds)
def test_keep_n_rows_is_length_n(n, seed):
    ccl, esper = _same_updates(f"KEEP {n} ROWS", f"#length({n})", seed)
    assert ccl == esper  # one rule, one kind


@given(seeds)
def test_keep_all_is_keepall(seed):
    ccl, esper = _same_updates("KEEP ALL", "#keepall", seed)
    assert ccl == esper


@given(spans, seeds)
def test_keep_an_interval_is_time(span, seed):
    ccl, esper = _same_updates(f"KEEP {span} MILLISECONDS", f"#time({span} msec)", seed)
    assert ccl == esper


@given(sizes, seeds)
def test_keep_n_rows_per_is_groupwin_length(n, seed):
    ccl, esper = _same_updates(f"KEEP {n} ROWS PER(symbol)", f"#groupwin(symbol)#length({n})", seed, ("symbol",))
    assert ccl == esper


@given(seeds)
def test_keep_1_row_posts_what_lastevent_posts(seed):
    ccl, esper = _same_updates("KEEP 1 ROW", "#lastevent", seed)
    assert ccl != esper  # two kinds, one rule


@pytest.mark.parametrize("ccl_text, esper_text", [
    ("PRIMARY KEY (id) KEEP 3 ROWS", "#length(3)"),
    ("PRIMARY KEY (id) KEEP ALL", "#keepall"),
    ("PRIMARY KEY (id) KEEP 1500 MILLISECONDS", "#time(1500 msec)"),
    ("PRIMARY KEY (id) KEEP 2 ROWS PER(symbol)", "#groupwin(symbol)#length(2)"),
])
@given(seed=seeds)
def test_a_window_keyed_by_the_event_id_posts_what_the_esper_window_posts(ccl_text, esper_text, seed):
    """Inserts of distinct keys only: the keyed window's store and its policy
    post exactly what the unkeyed rule posts."""
    _same_updates(ccl_text, esper_text, seed, ("symbol",))


# --------------------------------------------------------------------------- operation codes


def ev(event_id: str, op: str | None = None, time: int | None = None, **props) -> Arrive:
    return Arrive(Event(event_id, props), time=time, op=op)


def shown(updates) -> list[tuple]:
    """Updates by ids: (after, time, insert, remove, update, error)."""
    def ids(events):
        return [e.id for e in events]
    return [(u.after, u.time, ids(u.insert), ids(u.remove), ids(u.update), u.error) for u in updates]


@pytest.mark.parametrize("text", ["KEEP 2 ROWS", "KEEP ALL", "KEEP EVERY 1 SECOND", "KEEP 2 ROWS PER(Sym)",
                                  "PRIMARY KEY DEDUCED KEEP 2 ROWS"])
@pytest.mark.parametrize("op", ["update", "upsert", "delete", "safedelete"])
def test_a_window_without_a_primary_key_takes_inserts_only(text, op):
    trace = Trace([ev("E1", Sym="IBM"), ev("E2", op, Sym="IBM")])
    with pytest.raises(InvalidTrace) as caught:
        run(parse(text, "ccl"), trace)
    assert caught.value.index == 1 and f"operation code {op!r}" in str(caught.value)
    assert shown(run(parse(text, "ccl"), Trace([ev("E1", "insert", Sym="IBM")]))) == [(0, 0, ["E1"], [], [], None)]


@pytest.mark.parametrize("text", ["PRIMARY KEY (Sym) KEEP ALL", "PRIMARY KEY (Sym, Venue)"])
@pytest.mark.parametrize("op, fragment", [("insert", "duplicate insert: the window holds key (Sym='IBM'"),
                                          ("update", "update of a missing key (Sym='MSFT'"),
                                          ("delete", "delete of a missing key (Sym='MSFT'")])
def test_a_strict_error_names_the_key_changes_nothing_and_the_trace_goes_on(text, op, fragment):
    spec = parse(text, "ccl")
    missing = "IBM" if op == "insert" else "MSFT"
    trace = Trace([ev("E1", Sym="IBM", Venue="X"), ev("E2", Sym="GE", Venue="X", time=500),
                   ev("E3", op, Sym=missing, Venue="X"), ev("E4", "delete", Sym="GE", Venue="X")])
    driver = start(spec, trace)
    for index in range(2):
        driver.step(index, trace.items[index])
    before = driver.window.contents()
    (rejected,) = driver.step(2, trace.items[2])
    assert fragment in rejected.error and (rejected.after, rejected.time) == (2, 500)
    assert not (rejected.insert or rejected.remove or rejected.update)
    assert driver.window.contents() == before and driver.window.next_timer() is None
    assert shown(driver.step(3, trace.items[3])) == [(3, 500, [], ["E2"], [], None)]


@pytest.mark.parametrize("text", ["PRIMARY KEY (Sym) KEEP 2 ROWS", "PRIMARY KEY (Sym) KEEP 1 SECOND",
                                  "PRIMARY KEY (Sym) KEEP EVERY 2 ROWS", "PRIMARY KEY (Sym) KEEP 2 ROWS SLACK 2",
                                  "PRIMARY KEY (Sym) KEEP EVERY 1 SECOND", "PRIMARY KEY (Sym) KEEP 1 ROW PER(Venue)"])
def test_a_lax_window_never_errs(text):
    """Under a keep policy: a duplicate insert updates, an update of a missing
    key inserts, a delete of a missing key is ignored."""
    trace = Trace([ev("E1", Sym="IBM"), ev("E2", Sym="IBM"), ev("E3", "update", Sym="MSFT"),
                   ev("E4", "delete", Sym="GE"), ev("E5", "upsert", Sym="MSFT")])
    updates = run(parse(text, "ccl"), trace)
    assert all(u.error is None for u in updates)
    assert [u[4] for u in shown(updates) if u[4]] == [["E2"], ["E5"]]
    assert [u[2] for u in shown(updates) if u[2]] == [["E1"], ["E3"]]
    assert all(u.after != 3 for u in updates)  # the ignored delete posts nothing


def test_a_keyed_windows_contents_are_the_latest_versions_in_the_policys_order():
    spec = parse("PRIMARY KEY (Sym) KEEP 3 ROWS", "ccl")
    trace = Trace([ev("E1", Sym="A"), ev("E2", Sym="B"), ev("E3", "update", Sym="A"), ev("E4", Sym="C"),
                   ev("E5", "delete", Sym="B"), ev("E6", "upsert", Sym="D")])
    driver = start(spec, trace)
    driver.feed(trace)
    assert [e.id for e in driver.window.contents()] == ["E3", "E4", "E6"]
    assert spec_keys(spec) == ("Sym",)


def test_keyed_timeline():
    """`PRIMARY KEY (Sym) KEEP 1 SECOND`, A and B:

        time  0     300        700         1000       1300
              A:E1  B:E2  A:update E3  (A expires)  (B expires)
        post  +E1   +E2   ~E3          -E3          -E2
    """
    trace = Trace([ev("E1", Sym="A"), ev("E2", time=300, Sym="B"), ev("E3", "update", 700, Sym="A"), Arrive(
        Event("E4", {"Sym": "C"}), time=2000)])
    assert shown(run(parse("PRIMARY KEY (Sym) KEEP 1 SECOND", "ccl"), trace)) == [
        (0, 0, ["E1"], [], [], None),
        (1, 300, ["E2"], [], [], None),
        (2, 700, [], [], ["E3"], None),
        (3, 1000, [], ["E3"], [], None),
        (3, 1300, [], ["E2"], [], None),
        (3, 2000, ["E4"], [], [], None),
    ]
