"""The windows on a live stream (Spark Structured Streaming): exact and restartable.

* `traces`: a stream of trace items (the batch `apply_window`'s input), run
  by spark_impl's own plans (`micro_batch`: each micro-batch resumes the
  window from the state the one before left).
* `output`: the output's schema, the batch's (`spark_impl.output_schema`),
  and the rows an oracle update becomes in it (a row's fields as typed
  columns).
* `failures`: `await_termination`, a failed query told by its cause.
* `events`: a stream of plain events with an event-time column (the batch
  `apply_window_to_events`' input), put in order under a watermark, late rows
  posted as rejected, timers fired as the watermark passes them, run by the
  same plans.

The modules' docstrings state their rules, their state and their restart
guarantee. No module here runs the oracle's runtime.
"""

from spark_impl.streaming.failures import StreamFailed, await_termination, failure_sentence
from spark_impl.streaming.events import (
    REJECTED, EventStream, apply_window_to_events, apply_windows_to_events, run_event_files)
from spark_impl.streaming.micro_batch import start_window
from spark_impl.streaming.traces import (
    apply_window, apply_window_as_stream, apply_windows, has_panes, micro_batches, run_cases, run_files, write_files)

__all__ = ["apply_window", "apply_window_as_stream", "apply_windows", "apply_window_to_events",
           "apply_windows_to_events", "micro_batches",
           "run_cases", "run_files", "run_event_files", "write_files", "has_panes",
           "start_window", "EventStream", "REJECTED",
           "await_termination", "StreamFailed", "failure_sentence"]
