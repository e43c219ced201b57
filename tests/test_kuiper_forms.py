"""Where an eKuiper window is another engine's rule, shown on generated traces.

eKuiper posts a pane (the window's whole content at a trigger); Esper and
Apama post what entered and what left. Each test rebuilds the other window's
content from its updates and checks that eKuiper's panes are that content at
the rows or times eKuiper triggers: two oracle classes of different kinds, so a
slip in either shows. Where the rules part (a closed interval, a jump,
alignment, a session's maximum duration) a corpus case shows it
(oracle/dialects/__init__.py, "Window forms across the engines").
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from difftest.strategies import seeded_traces
from oracle import parse, run
from oracle.model import Advance, Arrive, Jump, Trace

seeds = st.integers(0, 2**64 - 1)
TRACES = 30


def _traces(seed: int) -> list[Trace]:
    return seeded_traces(seed, TRACES, ("symbol",))


def _content_after(updates) -> dict[int, list[str]]:
    """The ids a delta-posting window holds after each item that posted."""
    held: list[str] = []
    content = {}
    for update in updates:
        gone = {e.id for e in update.remove}
        held = [i for i in held if i not in gone] + [e.id for e in update.insert]
        content[update.after] = list(held)
    return content


def _panes(updates) -> list[tuple[int, list[str]]]:
    return [(u.after, [e.id for e in u.insert]) for u in updates]


def _arrivals(trace: Trace) -> list[int]:
    return [i for i, item in enumerate(trace.items) if isinstance(item, Arrive)]


def _every_mth_row_once_n_held(trace: Trace, content: dict[int, list[str]], n: int, m: int):
    return [(i, content[i]) for count, i in enumerate(_arrivals(trace), 1) if count % m == 0 and count >= n]


@given(st.integers(1, 5), st.integers(1, 5), seeds)
def test_countwindow_is_the_content_of_length_every_mth_row(n, m, seed):
    """`COUNTWINDOW(n, m)` (m <= n): every m-th row, the last n rows once n are
    held, which is what `#length(n)` holds then (`COUNTWINDOW(n, 1)`: the last
    n; `COUNTWINDOW(1)`: the last row)."""
    m = min(m, n)
    count, length = parse(f"COUNTWINDOW({n}, {m})", "kuiper"), parse(f"#length({n})", "esper")
    for k, trace in enumerate(_traces(seed)):
        expected = _every_mth_row_once_n_held(trace, _content_after(run(length, trace)), n, m)
        assert _panes(run(count, trace)) == expected, f"seeded_traces({seed})[{k}]"


@given(st.integers(1, 5), st.integers(1, 5), seeds)
def test_countwindow_n_m_is_apama_retain_n_every_m_content(n, m, seed):
    """`COUNTWINDOW(n, m)` and Apama's `retain n every m` hold the same rows
    after every m-th row (eKuiper posts only once n are held)."""
    m = min(m, n)
    count, retain = parse(f"COUNTWINDOW({n}, {m})", "kuiper"), parse(f"retain {n} every {m}", "apama")
    for k, trace in enumerate(_traces(seed)):
        expected = _every_mth_row_once_n_held(trace, _content_after(run(retain, trace)), n, m)
        assert _panes(run(count, trace)) == expected, f"seeded_traces({seed})[{k}]"


@given(st.integers(1, 5), seeds)
def test_countwindow_n_is_length_batch_n(n, seed):
    """`COUNTWINDOW(n)`'s panes are `#length_batch(n)`'s inserted batches."""
    count, batch = parse(f"COUNTWINDOW({n})", "kuiper"), parse(f"#length_batch({n})", "esper")
    for k, trace in enumerate(_traces(seed)):
        assert _panes(run(count, trace)) == _panes(run(batch, trace)), f"seeded_traces({seed})[{k}]"


@given(st.sampled_from((1, 250, 1000, 2500, 10000)), seeds)
def test_slidingwindow_is_the_content_of_time_one_ms_longer(size, seed):
    """`SLIDINGWINDOW(ms, t)` posts at each row the rows of `[T - t, T]`, closed
    at both ends: what `#time(t + 1 msec)` holds after that row (Esper's
    `#time(t)` lets a row go at exactly t: `kuiper/sliding-processing-closed-both-ends`)."""
    sliding, time = parse(f"SLIDINGWINDOW(ms, {size})", "kuiper"), parse(f"#time({size + 1} msec)", "esper")
    for k, trace in enumerate(_traces(seed)):
        content = _content_after(run(time, trace))
        expected = [(i, content[i]) for i in _arrivals(trace)]
        assert _panes(run(sliding, trace)) == expected, f"seeded_traces({seed})[{k}]"


def _walks_for_jumps(trace: Trace) -> Trace:
    """`trace` with every jump made a walk to the same time."""
    items = tuple(Advance(item.time) if isinstance(item, Jump) else item for item in trace.items)
    return Trace(items, trace.start_time, trace.variables)


@given(st.sampled_from((2, 5, 10, 20, 30)), seeds)
def test_tumblingwindow_is_time_batch_on_the_zero_grid_without_jumps(seconds, seed):
    """`TUMBLINGWINDOW(ss, t)` (t dividing 60) in processing time is Esper's
    `#time_batch(t sec, 0L, "FORCE_UPDATE")` from the first row's batch on:
    the same grid, the same batches, empty ones too, a row on a boundary in the
    next batch. They part before the first row (eKuiper posts empty panes from
    its start: `kuiper/tumbling-processing-empty-panes-before-first-row`), on
    a jump (eKuiper skips a tick 50 ms late: `kuiper/tumbling-processing-jump-skips-and-realigns`;
    the traces' jumps are made walks here)
    and where eKuiper's alignment formula puts the first end at the start's
    own second (the second of the minute equals t:
    `kuiper/tumbling-processing-alignment-quirk-realigns`)."""
    tumbling = parse(f"TUMBLINGWINDOW(ss, {seconds})", "kuiper")
    batch = parse(f'#time_batch({seconds} sec, 0L, "FORCE_UPDATE")', "esper")
    compared = 0
    for k, trace in enumerate(map(_walks_for_jumps, _traces(seed))):
        if (trace.start_time // 1000) % 60 == seconds:
            continue
        panes = [(u.after, u.time, [e.id for e in u.insert]) for u in run(tumbling, trace)]
        while panes and not panes[0][2]:
            panes.pop(0)
        batches = [(u.after, u.time, [e.id for e in u.insert]) for u in run(batch, trace)]
        assert panes == batches, f"seeded_traces({seed})[{k}]"
        compared += 1
    assert compared > 0


@given(st.integers(1, 5), seeds)
def test_sessionwindow_is_time_accum_while_no_max_duration_cuts(seconds, seed):
    """`SESSIONWINDOW(ss, max, t)` closes a session t after its last row, as
    `#time_accum(t sec)` lets all its rows go then (jumps included): the pane
    is that removed batch. With a maximum duration beyond the trace they agree;
    eKuiper also cuts a session at aligned max-duration ticks
    (`kuiper/session-processing-cut-at-equality`), which Esper has not."""
    session, accum = parse(f"SESSIONWINDOW(ss, 3600, {seconds})", "kuiper"), parse(f"#time_accum({seconds} sec)", "esper")
    for k, trace in enumerate(_traces(seed)):
        removed = [(u.after, u.time, [e.id for e in u.remove]) for u in run(accum, trace) if u.remove]
        panes = [(u.after, u.time, [e.id for e in u.insert]) for u in run(session, trace)]
        assert panes == removed, f"seeded_traces({seed})[{k}]"
