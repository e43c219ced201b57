"""Properties every oracle window keeps, over generated traces (DESIGN.md "Oracle":
"cheap properties worth having").

Each test runs one window kind on traces from `difftest.strategies.cases`, driving
the window itself with `oracle.driver.Driver`, and checks the window against its own
update stream:

* nothing is removed that was not inserted before (earlier, or earlier in the
  same update: a unit of work lists its inserts first), nor more often than it
  was inserted, except the one thing
  Esper does otherwise: an intersection with a first-X member posts an arrival
  a member refused as old, never as new, when another event left in the same
  arrival (`IntersectionWindow`; corpus case
  intersection-refused-arrival-posted-as-old);
* replaying the updates (insert, then remove) gives the window's `contents()`
  as a multiset, after every trace item;
* a deep copy of the window taken between two items, fed the rest of the trace,
  posts the same updates as the original.

A stream query or a statement (`QUERY_KINDS`) posts rows made from its
window's posts, not the window, so these are checked on its windows, not on it.

A keyed window (CCL's PRIMARY KEY) also posts `update` rows: a row so posted
replaces the row of its key, so it counts as inserted, and the replaced row
leaves what a replay holds. Each kind is drawn in a dialect that writes it.

The first three are also checked in bulk, on fifty seeded traces per drawn
window (`seeded_traces`): many more traces per run, for little time. A kind
the oracle does not run yet is skipped, naming it.
"""

from __future__ import annotations

import copy
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from difftest.strategies import KINDS as ALL_KINDS
from difftest.strategies import (
    KIND_EXAMPLES, QUERY_KINDS, GeneratedCase, implemented_kinds, seeded_traces, trace_names, trace_opcodes, trace_present,
    trace_stamps,
    windows,
    writer,
)
from difftest.strategies import cases as _cases
from oracle.model import PANE_WINDOWS, Arrive, GroupWin, Intersection, Keyed, Trace, Update, nested_specs
from oracle.windows.keys import key_of
from oracle.windows.several import FIRST_X
from oracle.driver import Driver, start

IMPLEMENTED = implemented_kinds(None)
KINDS = tuple(kind for kind in ALL_KINDS if kind not in QUERY_KINDS)
#: the kinds whose updates are an insert and a remove stream of what the window
#: holds: every kind but eKuiper's panes, whose updates list each pane's rows
STREAM_KINDS = [kind for kind in KINDS
                if not any(isinstance(s, PANE_WINDOWS) for s in nested_specs(KIND_EXAMPLES[kind]))]


def cases(kinds: str):
    """Cases of one kind, in a dialect that writes it."""
    return _cases(writer(kinds), kinds=kinds)


def _kind(kind: str) -> str:
    if kind not in IMPLEMENTED:
        pytest.skip(f"the oracle does not run the {kind} window yet")
    return kind


def _driver(case: GeneratedCase) -> Driver:
    trace = case.trace
    return start(case.spec, trace)


def _steps(driver: Driver, trace: Trace, start: int = 0, stop: int | None = None):
    """(index, updates of that item) for the items from `start` up to `stop`."""
    for index in range(start, len(trace.items) if stop is None else stop):
        yield index, driver.step(index, trace.items[index])


def _ids(events) -> Counter:
    return Counter(e.id for e in events)


def _replay(spec, held: dict, update: Update) -> None:
    """`held` (id -> event) after `update`: inserted rows in, an update row in
    place of its key's row (a keyed window), removed rows out."""
    for event in update.insert:
        held[event.id] = event
    for event in update.update:
        key = key_of(event, spec.keys)
        replaced = [i for i, e in held.items() if key_of(e, spec.keys) == key]
        assert len(replaced) == 1, f"the update row {event.id} replaces {replaced}, not one row"
        del held[replaced[0]]
        held[event.id] = event
    for event in update.remove:
        held.pop(event.id, None)


def _refused_arrivals(spec, trace: Trace, update: Update) -> set[str]:
    """The arrival of the update's item, where the window may post it as old
    only (an intersection with a first-X member)."""
    spec = spec.window if isinstance(spec, GroupWin) else spec
    item = trace.items[update.after]
    if (isinstance(spec, Intersection) and any(isinstance(m, FIRST_X) for m in spec.members)
            and isinstance(item, Arrive) and not update.insert):
        return {item.event.id}
    return set()


def _where(update: Update) -> str:
    return f"update after item {update.after} at {update.time} ms (insert {[e.id for e in update.insert]}, remove {[e.id for e in update.remove]})"


@pytest.mark.parametrize("kind", KINDS)
@given(data=st.data())
def test_nothing_removed_that_was_not_inserted_before_nor_more_often(kind, data):
    case = data.draw(cases(_kind(kind)), label="case")
    inserted, removed = Counter(), Counter()
    for _, updates in _steps(_driver(case), case.trace):
        for update in updates:
            refused = _refused_arrivals(case.spec, case.trace, update)
            inserted += _ids(update.insert + update.update)
            never = [e.id for e in update.remove if e.id not in set(inserted) | refused]
            assert not never, f"{case.window}: {never} removed, never inserted, in the {_where(update)}"
            inserted += Counter(refused)
            removed += _ids(update.remove)
            excess = removed - inserted
            assert not excess, f"{case.window}: {sorted(excess)} removed more often than inserted, by the {_where(update)}"


@pytest.mark.parametrize("kind", STREAM_KINDS)
@given(data=st.data())
def test_replaying_the_updates_gives_the_contents(kind, data):
    case = data.draw(cases(_kind(kind)), label="case")
    driver = _driver(case)
    held = Counter()
    rows: dict = {}
    for index, updates in _steps(driver, case.trace):
        for update in updates:
            held += _ids(update.insert)
            held -= _ids(update.remove)
            if isinstance(case.spec, Keyed):
                _replay(case.spec, rows, update)
                held = Counter(rows.keys())
        contents = _ids(driver.window.contents())
        assert held == contents, (
            f"{case.window}: after item {index} the updates hold {sorted(held.elements())}, "
            f"contents() is {sorted(contents.elements())}")


@pytest.mark.parametrize("kind", KINDS)
@given(data=st.data())
def test_a_deep_copy_mid_trace_posts_the_same(kind, data):
    case = data.draw(cases(_kind(kind)), label="case")
    trace = case.trace
    cut = data.draw(st.integers(0, len(trace.items)), label="cut")
    original = _driver(case)
    for _ in _steps(original, trace, 0, cut):
        pass
    twin = copy.deepcopy(original)
    assert twin.window is not original.window
    rest = [u for _, updates in _steps(original, trace, cut) for u in updates]
    rest_of_twin = [u for _, updates in _steps(twin, trace, cut) for u in updates]
    assert rest_of_twin == rest, f"{case.window}: the copy taken before item {cut} posts differently"


SEEDED_PER_EXAMPLE = 50


@pytest.mark.parametrize("kind", STREAM_KINDS)
@given(data=st.data())
def test_the_update_stream_invariants_hold_over_many_seeded_traces(kind, data):
    spec = data.draw(windows(writer(_kind(kind)), kinds=kind), label="spec")
    seed = data.draw(st.integers(0, 2**64 - 1), label="seed")
    for n, trace in enumerate(seeded_traces(seed, SEEDED_PER_EXAMPLE, trace_names(spec), opcodes=trace_opcodes(spec),
                                            stamps=trace_stamps(spec), present=trace_present(spec))):
        where = f"{spec!r}, seeded_traces({seed}, ...)[{n}]"
        driver = start(spec, trace)
        inserted, removed, held, rows = Counter(), Counter(), Counter(), {}
        for index, updates in _steps(driver, trace):
            for update in updates:
                inserted += _ids(update.insert + update.update) + Counter(_refused_arrivals(spec, trace, update))
                removed += _ids(update.remove)
                never = [e.id for e in update.remove if e.id not in inserted]
                assert not never, f"{where}: {never} removed, never inserted, in the {_where(update)}"
                assert not removed - inserted, f"{where}: removed more often than inserted, by the {_where(update)}"
                held += _ids(update.insert)
                held -= _ids(update.remove)
                if isinstance(spec, Keyed):
                    _replay(spec, rows, update)
                    held = Counter(rows.keys())
            assert held == _ids(driver.window.contents()), f"{where}: updates and contents() differ after item {index}"


DERIVED = [kind for kind in KINDS if kind in ("size", "uni", "linest", "correl", "weighted_avg")]


@pytest.mark.parametrize("kind", DERIVED)
@given(data=st.data())
def test_a_derived_window_posts_as_old_the_row_it_posted_last_as_new(kind, data):
    """Each values row posted as old is the row posted as new just before
    (esper.md §7), and a derived window posts no events."""
    case = data.draw(cases(_kind(kind)), label="case")
    last = None
    for _, updates in _steps(_driver(case), case.trace):
        for update in updates:
            assert not update.insert and not update.remove, f"{case.window}: events posted in the {_where(update)}"
            assert len(update.values.insert) == len(update.values.remove) >= 1
            for new, old in zip(update.values.insert, update.values.remove):
                if last is not None:
                    assert dict(old) == dict(last), f"{case.window}: the old row is not the last new row in the {_where(update)}"
                last = new
