"""`#rank`'s kernel (spark_impl.windows.sort): its sort and key ranks are
Spark's `dense_rank()` over the same ordering (nulls, NaN, -0.0, strings,
booleans, several criteria), and a nested criterion, which Arrow cannot
sort, ranks as Spark orders it."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from spark_impl import apply_window_to_events
from spark_impl.windows.sort import dense_ranks

DOUBLES = [None, float("nan"), -0.0, 0.0, 1.5, -1.5, float("inf"), float("-inf"), 2.0]
STRINGS = [None, "", "a", "b", "ab", "é", "Z"]
ORDERS = [[("d", False)], [("d", True)], [("s", False), ("d", True)], [("b", True), ("l", False)],
          [("l", True), ("s", True), ("b", False)]]


@pytest.mark.parametrize("order", ORDERS, ids=lambda o: ",".join(f"{c}{'-' if d else '+'}" for c, d in o))
def test_the_kernels_ranks_are_sparks_dense_rank(spark, order):
    draw = random.Random(len(order) * 7 + order[0][1])
    rows = [(draw.randrange(20), draw.choice(DOUBLES), draw.choice(STRINGS), draw.choice([None, True, False]),
             draw.choice([None, -3, 0, 7, 2**40]), i) for i in range(1500)]
    frame = spark.createDataFrame(rows, "g long, d double, s string, b boolean, l long, i long")
    sql = ", ".join(f"{c} {'DESC NULLS LAST' if d else 'ASC NULLS FIRST'}" for c, d in order)
    ranked = frame.selectExpr("*", f"dense_rank() OVER (PARTITION BY g ORDER BY {sql}) AS r").orderBy("g", "i")
    table = ranked.toArrow()
    g = table.column("g").to_numpy()
    sub = np.cumsum(np.r_[True, g[1:] != g[:-1]]) - 1
    expected = table.column("r").to_numpy()
    got = dense_ranks(table, sub, order)
    assert (got == expected).all(), np.flatnonzero(got != expected)[:10]
    assert len(set(np.asarray(pa.array(table.column("d")).is_nan().fill_null(False)))) == 2  # NaN was drawn


def test_a_nested_criterion_ranks_as_spark_orders_it(spark):
    rows = [(i, f"E{i}", i % 3, (i * 7) % 5) for i in range(40)]
    frame = spark.createDataFrame(rows, "n long, id string, k long, p long")
    nested = frame.selectExpr("n", "id", "k", "named_struct('a', p) AS p")
    window = "#groupwin(k)#rank(p, 3, p)"

    def posts(events):
        out = apply_window_to_events(events, window, order_col="n", time_col="n")
        return sorted((r.after, r.side, r.id) for r in out.collect())

    assert posts(nested) == posts(frame)
    assert any(side == "remove" for _, side, _ in posts(frame))
