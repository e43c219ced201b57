"""The statistics and `#rank` over one event table (`apply_window_to_events`:
one trace, its rows as one partition for the statistics' kernel, the columns
of one value left out of the kernels) post what the same events post as a
trace frame (`apply_window`: the kernel per trace), which the corpus and
`difftest run` hold to the oracle."""

from __future__ import annotations

import random

import pytest

from spark_impl import apply_window, apply_window_to_events
from spark_impl.bench import as_trace_frame

WINDOWS = ["#length(4)#uni(price)", "#time(3 sec)#linest(price, k)", "#length_batch(3)#correl(price, k)",
           "#length(5)#size()", "#keepall()#uni(price, k)", "#unique(k)#uni(price)",
           "#length(6)#uni(price, k, id)", "#rank(k, 3, price)", "#groupwin(k)#rank(price, 2, price desc)"]


@pytest.mark.parametrize("window", WINDOWS)
def test_one_event_table_posts_what_its_trace_frame_posts(spark, window):
    draw = random.Random(window)
    rows, t = [], 0
    for n in range(400):
        t += draw.choice([0, 0, 500, 1000, 2500])
        price = draw.choice([None, float("nan"), -0.0, 1.5, 3.25, 1e300, float("inf"), 7.0])
        rows.append((n, t, draw.randrange(5), f"E{n}", price))
    events = spark.createDataFrame(rows, "n long, t long, k long, id string, price double")
    table = apply_window_to_events(events, window, order_col="n", time_col="t")
    frame = apply_window(as_trace_frame(events), window)
    columns = [c for c in table.columns if c in frame.columns and c != "trace_id"]
    assert columns and "side" in columns
    got = sorted(map(repr, table.select(*columns).collect()))
    expected = sorted(map(repr, frame.select(*columns).collect()))
    assert len(got) > 5
    assert got == expected
