"""A deliberately broken implementation, for the test that `difftest run --impl`
catches it: `spark_impl.apply_window`, minus every removed row whose order `n`
is 1 (for `#length_batch`, whose `n` is the event's index in its batch: the
second removed row of every update)."""

from pyspark.sql import functions as F

from spark_impl import apply_window as correct_apply_window


def apply_window(trace_df, window, dialect="esper"):
    out = correct_apply_window(trace_df, window, dialect)
    return out.where(~((F.col("side") == "remove") & (F.col("pos.n") == 1)))


# --- implementations users tried (issue 10): each is caught with the reason named

def returns_none(trace_df, window, dialect="esper"):
    return None


def returns_its_input(trace_df, window, dialect="esper"):
    return trace_df


def returns_pandas(trace_df, window, dialect="esper"):
    return correct_apply_window(trace_df, window, dialect).toPandas()


def raises(trace_df, window, dialect="esper"):
    raise RuntimeError("my window is not ready\nsecond line")


def fails_in_a_worker(trace_df, window, dialect="esper"):
    def price_of(event_id):
        raise ValueError("no price for any event")

    return correct_apply_window(trace_df, window, dialect).withColumn("id", F.udf(price_of, "string")("id"))


def two_arguments(trace_df, window):
    return correct_apply_window(trace_df, window)


def time_as_string(trace_df, window, dialect="esper"):
    return correct_apply_window(trace_df, window, dialect).withColumn("time", F.col("time").cast("string"))


def off_by_one_in_time(trace_df, window, dialect="esper"):
    return correct_apply_window(trace_df, window, dialect).withColumn("time", F.col("time") + 1)


def drops_removes(trace_df, window, dialect="esper"):
    return correct_apply_window(trace_df, window, dialect).where("side IS NULL OR side <> 'remove'")


def posts_an_unknown_id(trace_df, window, dialect="esper"):
    """Every trace's first row posted again under an id no event has."""
    out = correct_apply_window(trace_df, window, dialect)
    return out.unionByName(out.where("after = 0 AND side = 'insert'").withColumn("id", F.lit("BOGUS")))


def posts_a_row_twice(trace_df, window, dialect="esper"):
    """Every trace's first row posted twice, at one position."""
    out = correct_apply_window(trace_df, window, dialect)
    return out.unionByName(out.where("after = 0 AND side = 'insert'"))
