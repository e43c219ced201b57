"""A deliberately broken implementation, for the test that `difftest run --impl`
catches it: `spark_impl.apply_window`, minus every removed row whose order `n`
is 1 (for `#length_batch`, whose `n` is the event's index in its batch: the
second removed row of every update)."""

from pyspark.sql import functions as F

from spark_impl import apply_window as correct_apply_window


def apply_window(trace_df, window, dialect="esper"):
    out = correct_apply_window(trace_df, window, dialect)
    return out.where(~((F.col("side") == "remove") & (F.col("pos.n") == 1)))
