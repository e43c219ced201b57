"""The Spark bench's verdicts (spark_impl/bench.py) hold each row to issue 47's targets: a window with its
defaults within 2x of the bare plan at the largest size, with `validate=False` within 1.5x."""

from __future__ import annotations

from spark_impl import bench


def _row(window: str, vs_bare: float, events: int = 10_000_000, scaling: float | None = None) -> dict:
    return {"window": window, "events": events, "vs_bare": vs_bare, "scaling": scaling}


def test_a_window_with_its_checks_is_held_to_twice_the_bare_plan():
    assert bench.verdict(_row("#groupwin(k)#length(10)", 1.99), 10_000_000) == "meets"
    assert bench.verdict(_row("#groupwin(k)#length(10)", 2.16), 10_000_000) == "MISSES: x bare 2.16 > 2.0"


def test_a_window_without_its_checks_is_held_to_one_and_a_half():
    unchecked = "#groupwin(k)#length(10)" + bench.UNCHECKED
    assert bench.verdict(_row(unchecked, 1.49), 10_000_000) == "meets"
    assert bench.verdict(_row(unchecked, 1.6), 10_000_000) == "MISSES: x bare 1.60 > 1.5"


def test_smaller_sizes_baselines_and_scaling():
    assert bench.verdict(_row("#time(10 sec)", 9.0, events=1_000_000), 10_000_000) == ""
    assert bench.verdict(_row(bench.BARE, 1.0), 10_000_000) == ""
    assert bench.verdict(_row("#time(10 sec)", 1.2, scaling=12.0), 10_000_000) == "MISSES: scaling 12.00 > 10.0"


def test_unchecked_measures_each_window_again_without_its_checks(monkeypatch):
    import spark_impl

    calls = []
    monkeypatch.setattr(spark_impl, "apply_window_to_events",
                        lambda events, clause, **kw: calls.append((clause, kw["validate"])))
    builds = bench.workloads(["#length(3)"], unchecked=True)
    builds["#length(3)"](None)
    builds["#length(3)" + bench.UNCHECKED](None)
    assert calls == [("#length(3)", True), ("#length(3)", False)]
    assert "#length(3)" + bench.UNCHECKED not in bench.workloads(["#length(3)"])


def test_plan_exchanges_counts_every_partitioning_and_no_reused_exchange():
    plan = """== Physical Plan ==
AdaptiveSparkPlan isFinalPlan=false
+- Window [lag(id#1, 10, null)]
   +- Sort [n#2 ASC NULLS FIRST], false, 0
      +- Exchange SinglePartition, ENSURE_REQUIREMENTS, [plan_id=12]
         +- BroadcastHashJoin [trace_id#3], [trace_id#4], Inner, BuildRight
            :- Exchange hashpartitioning(k#5, 4), ENSURE_REQUIREMENTS, [plan_id=10]
            :  +- Exchange rangepartitioning(n#2 ASC NULLS FIRST, 4), REPARTITION_BY_NUM, [plan_id=9]
            :     +- Exchange RoundRobinPartitioning(4), REPARTITION_BY_NUM, [plan_id=8]
            +- BroadcastExchange HashedRelationBroadcastMode(List(input[0, string, true]),false), [plan_id=11]
               +- ReusedExchange [trace_id#4], Exchange hashpartitioning(k#5, 4), ENSURE_REQUIREMENTS, [plan_id=10]
"""
    assert bench.plan_exchanges(plan) == (4, 1)
    assert bench.plan_exchanges("== Physical Plan ==\n*(1) Scan parquet") == (0, 0)
