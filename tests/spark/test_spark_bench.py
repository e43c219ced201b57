"""The Spark bench's baselines compute what they stand for (spark_impl/bench.py):
the bare plan with the output's rows writes exactly the rows a count window
posts, with the output's columns."""

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


def test_the_id_check_alone_finds_what_the_windows_check_refuses(spark, tmp_path):
    import pytest

    from spark_impl import apply_window_to_events, bench
    from spark_impl.errors import InvalidFrame

    events = spark.read.parquet(bench.write_events(spark, 1_000, 20, tmp_path))
    assert bench.check_ids(events).count() == 0
    repeated = events.selectExpr("n", "t", "k", "price", "CASE WHEN n IN (700, 900) THEN '3' "
                                 "WHEN n = 800 THEN '5' ELSE id END AS id")
    # the first by seq of the ids repeated: '3' (first at 3, then 700 and 900)
    assert [tuple(r) for r in bench.check_ids(repeated).select("id", "seq", "n").collect()] == [("3", 3, 3)]
    with pytest.raises(InvalidFrame, match="column 'id' has the value '3' 3 times"):
        apply_window_to_events(repeated, "#length(2)", order_col="n", time_col="t")
