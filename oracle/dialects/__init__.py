"""Each engine's window syntax, parsed into the one spec model and rendered back.

A dialect module has `parse(text)`, `render(spec)` and `name(spec)`; one whose
windows need more than their text (eKuiper's time mode, timestamp field, late
tolerance and time zone: case keys of corpus/README.md) also has
`SETTING_KEYS`, `parse(text, settings)` and `settings(spec)`, the case keys
`spec` needs. A case with the `query` key (CORPUS.md) runs the query's spec:
`case_spec(case)`; and `case_fields(spec, dialect)` gives the `window` text and
the other case keys (`query`, settings) back.

**Window forms across the engines.** Which forms are one rule (a test runs
both on generated traces) and which differ (a corpus case shows each).
eKuiper posts panes, the window's whole content at each trigger: it is "the
same rule" where its panes are the other window's content at those triggers
(`tests/test_kuiper_forms.py` rebuilds the content from the other window's
updates).

| rule | Esper | CCL | Apama | eKuiper | shown by |
|---|---|---|---|---|---|
| the last n | `#length(n)` | `KEEP n ROWS` | `retain n` | `COUNTWINDOW(n, 1)`: the same rows, posted whole at each row once n are held | tested: `test_ccl_windows.py::test_keep_n_rows_is_length_n`, `test_apama.py::test_retain_n_is_length_n`, `test_kuiper_forms.py::test_countwindow_is_the_content_of_length_every_mth_row` |
| the last 1 | `#lastevent` (another kind) | `KEEP 1 ROW`, `KEEP LAST ROW` | `retain 1` | `COUNTWINDOW(1)`: the row, as a pane | tested: `test_keep_1_row_posts_what_lastevent_posts`, `test_retain_1_is_lastevent`, `test_countwindow_is_the_content_of_length_every_mth_row` |
| everything | `#keepall` | `KEEP ALL` | `retain all` | none | tested: `test_keep_all_is_keepall`, `test_retain_all_is_keepall` |
| sliding time, out at exactly t | `#time(t)` | `KEEP t` | `within t` | differs: `SLIDINGWINDOW(u, t)` is closed, `[T - t, T]`, a pane per row: `#time(t + 1 ms)`'s content | tested: `test_keep_an_interval_is_time`, `test_within_d_is_time_d`, `test_within_d_is_ccl_keep_interval`; eKuiper: `test_slidingwindow_is_the_content_of_time_one_ms_longer`, case `kuiper/sliding-processing-closed-both-ends` |
| the last n per group | `#groupwin(k)#length(n)` | `KEEP n ROWS PER(k)` | `partition by k retain n` | none: `GROUP BY` keys group one pane's rows | tested: `test_keep_n_rows_per_is_groupwin_length`, `test_partition_retain_n_is_groupwin_length_and_ccl_per` |
| a count batch | `#length_batch(n)` | differs: `KEEP EVERY n ROWS` purges on row n+1 | `retain n every n` | `COUNTWINDOW(n)`: the batch as a pane | tested: `test_retain_n_every_n_is_length_batch`; case `esper/length_batch-beside-ccl-keep-every-rows`; `test_countwindow_n_is_length_batch_n` |
| last n of the last t | `#time(t)#length(n)` | none | `within t retain n` | none | tested: `test_within_d_retain_n_is_the_intersection_of_time_and_length` |
| latest per key of the last t | `#unique(k)#time(t)` | none | `within t with unique k` | none | tested: `test_within_d_with_unique_is_the_intersection_of_unique_and_time` |
| the above per group, in one jump | `#groupwin(g)#unique(k)#time(t)`: a group whose `#time` timer went stale (a quiet removal) posts first | none | `partition by g within t with unique k`: partitions release by their items' own due times | none | differs: `esper/groupwin-unique-time-stale-timer-orders-a-jump`, `apama/partition-within-unique-jump-releases-by-own-due` |
| latest per key of the last n | `#unique(k)#length(n)`: a removed duplicate frees its place | none | `retain n with unique k`: a hidden duplicate holds its place | none | differs: `apama/retain-unique-hidden-duplicate-takes-a-slot`, `esper/intersection-unique-length-beside-apama-retain-unique` |
| time batches | `#time_batch(t)`: in at the batch end, out a batch later | `KEEP EVERY t`: in at once, out at the interval end | `within d every p`: in at the next grid point, out by lifetime | `TUMBLINGWINDOW(u, t)`: `#time_batch(t, 0L, "FORCE_UPDATE")`'s batches from the first row's on; differs before it, on a jump and where the alignment formula ends at the current second | differs: `esper/time_batch-beside-apama-within-every`, `esper/time_batch-beside-ccl-keep-every-interval`, `apama/within-every-boundary-arrival-beside-a-leaving-item`; eKuiper: `test_tumblingwindow_is_time_batch_on_the_zero_grid_without_jumps`, cases `kuiper/tumbling-processing-empty-panes-before-first-row`, `kuiper/tumbling-processing-jump-skips-and-realigns`, `kuiper/tumbling-processing-alignment-quirk-realigns` |
| sliding time per group | `#groupwin(k)#time(t)`: group by group | `KEEP t PER(k)`: PER ignored, oldest first | `partition by k within t`: ignored, arrival order | none: `GROUP BY` keys group one pane's rows, never windows per key | differs: `esper/groupwin-time-beside-ccl-keep-interval-per`, `apama/within-partition-by-is-ignored`; eKuiper: `kuiper/query-event-grouped-stats-having-order` |
| a session closed by a quiet gap | `#time_accum(t)`: all leave t after the last arrival | none | none | `SESSIONWINDOW(u, max, t)`: that session as a pane, and also cut at aligned max-duration ticks | tested: `test_sessionwindow_is_time_accum_while_no_max_duration_cuts`; differs: `kuiper/session-processing-cut-at-equality` |
| count batches of m, the newest n kept | none | none | `retain n every m` | `COUNTWINDOW(n, m)` (m <= n): the same rows every m-th row, once n are held | own rule: `apama/retain-every-fewer-than-the-batch`, `apama/retain-every-more-than-the-batch`; tested beside eKuiper: `test_countwindow_n_m_is_apama_retain_n_every_m_content` |

The model carries what the four engines need: a window posts events as
inserted, removed or `update` rows,
derived `values` rows, or a rejected item's `error` (`oracle.windows.base.Post`);
it declares how one unit of work's posts become updates (`Delivery`: Esper's
one update per unit, or one per post as an eKuiper pane); a spec declares the
operation codes it takes and whether a bad item invalidates the trace (Esper)
or is rejected with an error while the trace goes on (CCL); kinds are the
model's names, and each dialect names and writes them in its own words.

Each concern is one table keyed by spec class: `oracle.windows.WINDOW_CLASSES`,
`spark_impl.windows.FAMILIES` (and each family module's `POSTS`), each
dialect's `SYNTAX`, `difftest.strategies.STRATEGIES` and `EXAMPLES`.
`tests/test_completeness.py` fails when a spec class lacks one of them or three
corpus cases, unless its `PENDING` table names the gap.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from oracle.dialects.limits import check_text
from oracle.errors import InvalidCase, UnsupportedWindow, WindowOracleError, WindowSyntaxError
from oracle.model import Statement, WindowSpec

DIALECTS = ("esper", "ccl", "apama", "kuiper")
IMPLEMENTED = ("esper", "ccl", "apama", "kuiper")
#: the optional case keys a dialect's windows may read besides `window` (CORPUS.md)
CASE_SETTINGS = ("time_mode", "timestamp_field", "late_tolerance", "time_zone")
#: the specs a case's `query` key may hold: a statement over the window, whichever engine's
QUERIES = (Statement,)


def _module(dialect: str):
    if dialect not in DIALECTS:
        raise UnsupportedWindow(f"unknown dialect {dialect!r}; known: {', '.join(DIALECTS)}")
    if dialect not in IMPLEMENTED:
        raise UnsupportedWindow(f"the {dialect} dialect is not implemented yet; implemented: {', '.join(IMPLEMENTED)}")
    return importlib.import_module(f"oracle.dialects.{dialect}")


def parse(text: str, dialect: str = "esper", settings: Mapping[str, Any] | None = None) -> WindowSpec:
    """The spec of a window clause (or statement) written in `dialect`'s syntax,
    with the case `settings` (`CASE_SETTINGS`) where the dialect takes them."""
    module = _module(dialect)
    check_text(text)
    if settings and getattr(module, "SETTING_KEYS", None) is None:
        raise UnsupportedWindow(f"the {dialect} dialect takes no setting ({', '.join(sorted(settings))}); "
                                "those case keys are eKuiper's")
    try:
        return module.parse(text, settings) if getattr(module, "SETTING_KEYS", None) is not None else module.parse(text)
    except RecursionError:  # a left-deep chain of terms the grammar's tree walk cannot descend
        raise WindowSyntaxError("an expression of too many terms for the parser (a few hundred at most)",
                                text if len(text) <= 200 else text[:200] + "...", 1) from None


def render(spec: WindowSpec, dialect: str = "esper") -> str:
    """`spec` written in `dialect`'s syntax; `parse(render(s), d, settings(s, d)) == s`."""
    return _module(dialect).render(spec)


def expression_text(node: Any, dialect: str = "esper") -> str:
    """A statement's expression (a select item, WHERE, HAVING ...) as `dialect`
    writes it (its `render_expression`; Esper's where a dialect writes no
    expressions: Apama's queries); `repr` where the dialect cannot write it."""
    module = _module(dialect)
    write = getattr(module, "render_expression", None) or _module("esper").render_expression
    try:
        return write(node)
    except WindowOracleError:
        return repr(node)


def spec_text(spec: WindowSpec) -> str:
    """`spec` as the first dialect that writes it writes it, for a message
    (`esper: #length(2)`); its repr where none does."""
    for dialect in IMPLEMENTED:
        try:
            return f"{dialect}: {render(spec, dialect)}"
        except WindowOracleError:
            continue
    return repr(spec)


def settings(spec: WindowSpec, dialect: str = "esper") -> dict[str, Any]:
    """The case keys besides the text that `spec` needs in `dialect` (none for most)."""
    module = _module(dialect)
    return module.settings(spec) if hasattr(module, "settings") else {}


def writes(spec: WindowSpec, dialect: str) -> bool:
    """Whether `dialect` can write `spec` (most kinds exist in one engine only:
    CCL has no intersection, Esper no keyed window, eKuiper only panes)."""
    try:
        render(spec, dialect)
    except UnsupportedWindow:
        return False
    return True


def window_name(spec: WindowSpec, dialect: str = "esper") -> str:
    """A short, file-safe name of `spec`'s window in `dialect`'s words
    (`groupwin-time_batch`), for reports and the names of saved cases."""
    return _module(dialect).name(spec)


def case_spec(case) -> WindowSpec:
    """The spec a conformance case runs: its `window`, or with a `query` key the
    query, whose window must be the `window` key's; with its settings. Raises
    `InvalidCase` for a `query` that is not a string or not a query, or whose
    window differs."""
    extra = case.extra
    chosen = {key: extra[key] for key in CASE_SETTINGS if key in extra}
    window = parse(case.window, case.dialect, chosen)
    if "query" not in extra:
        return window
    text = extra["query"]
    if not isinstance(text, str):
        raise InvalidCase(f"'query' must be a string, {'not null' if text is None else f'got {text!r}'}")
    query = parse(text, case.dialect, chosen)
    if not isinstance(query, QUERIES):
        raise InvalidCase(f"'query' must be a whole statement over the window (a query), got {text!r}")
    if query.window != window:
        raise InvalidCase(f"the query's window ({render(query.window, case.dialect)}) is not the case's "
                          f"'window' ({case.window})")
    return query


def case_fields(spec: WindowSpec, dialect: str) -> tuple[str, dict[str, Any]]:
    """The `window` text and the other case keys (`query`, settings) that write `spec`."""
    extra = dict(settings(spec, dialect))
    if isinstance(spec, QUERIES):
        extra = {"query": render(spec, dialect), **extra}
        return render(spec.window, dialect), extra
    return render(spec, dialect), extra
