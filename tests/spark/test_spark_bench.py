"""The Spark bench's baselines compute what they stand for (spark_impl/bench.py):
the bare plan with the output's rows writes exactly the rows a count window
posts, with the output's columns; the checks alone are the pass the windows run."""

from __future__ import annotations

from collections import Counter


def test_the_bare_plan_with_the_outputs_rows_posts_what_a_count_window_posts(spark, tmp_path):
    from spark_impl import apply_window_to_events, bench
    from spark_impl.frames import OUTPUT_COLUMNS

    events = spark.read.parquet(bench.write_events(spark, 2_000, 20, tmp_path))
    rows = bench.bare_rows(events)
    assert list(rows.columns) == [*OUTPUT_COLUMNS, "k", "price"]
    window = apply_window_to_events(events, "#groupwin(k)#length(10)", order_col="n", time_col="t")
    got = Counter(tuple(r) for r in rows.select("after", "side", "id").collect())
    posted = Counter(tuple(r) for r in window.select("after", "side", "id").collect())
    assert got == posted and sum(1 for side in got.elements() if side[1] == "remove") > 0


def test_the_checks_alone_find_what_the_windows_check_refuses(spark, tmp_path):
    """`bench.check` is the pass every window runs: it passes the bench's events, and it meets a suspect
    where an id repeats, which the window's checks then refuse."""
    import pytest

    from spark_impl import apply_window_to_events, bench
    from spark_impl.errors import InvalidFrame
    from spark_impl.event_table import runs_pass

    def passes(frame) -> bool:
        rows = frame.collect()
        return not any(r["suspect"] for r in rows) and runs_pass([r for r in rows if r["bucket"] is None])

    events = spark.read.parquet(bench.write_events(spark, 1_000, 20, tmp_path))
    assert passes(bench.check(events))
    repeated = events.selectExpr("n", "t", "k", "price", "CASE WHEN n IN (700, 900) THEN '3' "
                                 "WHEN n = 800 THEN '5' ELSE id END AS id")
    assert not passes(bench.check(repeated))
    with pytest.raises(InvalidFrame, match="column 'id' has the value '3' 3 times"):
        apply_window_to_events(repeated, "#length(2)", order_col="n", time_col="t")
