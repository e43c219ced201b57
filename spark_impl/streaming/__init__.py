"""The windows on a live stream (Spark Structured Streaming): exact and restartable.

* `traces`: a stream of trace items (the batch `apply_window`'s input), keyed
  by trace, each trace's items run by the oracle's window state machine.

The modules' docstrings state their rules, their state and their restart
guarantee. This package is the one place of `spark_impl` that runs the
oracle's runtime; nothing else in `spark_impl` imports it.
"""

from spark_impl.streaming.traces import (
    PROVIDER, ROCKSDB, TraceProcessor, apply_window, apply_window_as_stream, apply_windows, ensure_provider,
    has_panes, micro_batches, run_cases, run_files, write_files)

__all__ = ["apply_window", "apply_window_as_stream", "apply_windows", "micro_batches", "run_cases", "run_files",
           "write_files", "ensure_provider", "has_panes", "TraceProcessor", "ROCKSDB", "PROVIDER"]
