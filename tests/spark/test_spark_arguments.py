"""The public entry points of spark_impl given an argument of the wrong type (issue
43, item 9): one sentence naming the function and the argument (`WrongArgument`,
a TypeError and a WindowOracleError), never a raw AttributeError from inside."""

from __future__ import annotations

import pandas as pd
import pytest

import spark_impl
from oracle import parse
from oracle.errors import WindowOracleError
from oracle.model import Arrive, Event, Trace
from spark_impl import streaming
from spark_impl.errors import WrongArgument

ROWS = [("t", 0, "event", 0, "E1", None)]
PAIR = (parse("#length(2)"), Trace([Arrive(Event("E1"))]))
EVENTS = {"order_col": "n", "time_col": "t"}

CALLS = [
    (lambda: spark_impl.apply_window(ROWS, "#length(2)"),
     "apply_window: `trace_df` must be a DataFrame of trace rows (spark_impl.frames.to_dataframe makes one from "
     "traces), got a list (spark.createDataFrame(rows, schema) makes a DataFrame of rows)"),
    (lambda: spark_impl.apply_window(pd.DataFrame({"id": ["E1"]}), "#length(2)"),
     "apply_window: `trace_df` must be a DataFrame of trace rows (spark_impl.frames.to_dataframe makes one from "
     "traces), got a pandas DataFrame (spark.createDataFrame(pdf) makes a Spark one)"),
    (lambda: spark_impl.apply_window_to_events(None, "#length(2)", **EVENTS),
     "apply_window_to_events: `events_df` must be a DataFrame of events, one row per event, got nothing (None)"),
    (lambda: spark_impl.run_cases("#length(2)"),
     "run_cases: `pairs` must be a list of (window spec, Trace) pairs, got a str"),
    (lambda: spark_impl.run_cases([PAIR, ("#length(2)", PAIR[1])]),
     "run_cases: `pairs[1]` must be a (window spec, Trace) pair (oracle.parse gives a spec), got ('#length(2)', "),
    (lambda: streaming.apply_window(ROWS, "#length(2)"),
     "streaming.apply_window: `stream_df` must be a streaming DataFrame of trace rows (spark.readStream...), "
     "got a list"),
    (lambda: streaming.apply_windows(ROWS, {"t": PAIR[0]}),
     "streaming.apply_windows: `stream_df` must be a streaming DataFrame of trace rows"),
    (lambda: streaming.apply_window_as_stream(ROWS, "#length(2)"),
     "streaming.apply_window_as_stream: `trace_df` must be a DataFrame of trace rows"),
    (lambda: streaming.apply_window_to_events(ROWS, "#length(2)", delay=0, **EVENTS),
     "streaming.apply_window_to_events: `stream_df` must be a streaming DataFrame of events (spark.readStream...), "
     "got a list"),
    (lambda: streaming.apply_windows_to_events(ROWS, {"t": PAIR[0]}, delay=0, trace_col="k", **EVENTS),
     "streaming.apply_windows_to_events: `stream_df` must be a streaming DataFrame of events"),
    (lambda: streaming.run_cases(PAIR), "streaming.run_cases: `pairs[0]` must be a (window spec, Trace) pair"),
]


@pytest.mark.parametrize("call, message", CALLS, ids=[m.split(":")[0] + f"-{i}" for i, (_, m) in enumerate(CALLS)])
def test_a_wrong_argument_is_named(call, message):
    with pytest.raises(WrongArgument) as caught:
        call()
    assert str(caught.value).startswith(message)
    assert isinstance(caught.value, TypeError) and isinstance(caught.value, WindowOracleError)


def test_a_streams_windows_must_be_a_mapping_of_specs(spark):
    stream = spark.readStream.format("rate").load()
    with pytest.raises(WrongArgument, match=r"^streaming.apply_windows: `specs` must be a mapping of trace id to "
                                            r"window spec \(oracle.parse gives a spec\), got \['#length\(2\)'\]"):
        streaming.apply_windows(stream, ["#length(2)"])
    with pytest.raises(WrongArgument, match=r"^streaming.apply_windows_to_events: `specs` must be a mapping"):
        streaming.apply_windows_to_events(stream, {"t": "#length(2)"}, delay=0, trace_col="k", **EVENTS)
