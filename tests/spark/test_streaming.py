"""Windows on a live stream (spark_impl/streaming/) in real Structured
Streaming queries: a file source read one file per micro-batch, the window's
query (`micro_batch.start_window`: each micro-batch run by spark_impl's plans
from the state the one before left), a sink that keeps rows by batch id.

* corpus cases of each dialect, every trace cut at random points into 3 or
  more micro-batches (some items ahead of a gap), post their expected updates;
* the public `apply_window` on a stream gives the batch `apply_window`'s
  schema and rows (`pos` compared as the order it gives);
* a query stopped after micro-batch k (a clean stop, or a crash in the sink
  after the micro-batch's state is written) and restarted from its
  checkpoint posts, over the whole stream, exactly the rows of a run without
  a stop.

`pytest -m streaming` runs it with the other streaming tests.
`STREAMING_ALL_K=1` restarts after every k of the 5-batch stream.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from difftest.compare import compare
from oracle import parse
from oracle.cases import load_case
from oracle.dialects import case_spec
from oracle.model import Advance, Arrive, Event, Jump, Trace

pytestmark = pytest.mark.streaming

ROOT = Path(__file__).resolve().parent.parent.parent
CASES = {
    "esper": ["time-jump-sees-target", "groupwin-time-batch-per-group",
              "expr-set-on-an-empty-window-posts-an-empty-update", "uni-force-update-empty-batch-posts-unchanged"],
    "ccl": [], "apama": [], "kuiper": [],
}


def _case_paths(dialect: str, names: list[str], count: int = 2) -> list[Path]:
    folder = ROOT / "corpus" / dialect
    chosen = [folder / f"{n}.json" for n in names if (folder / f"{n}.json").exists()]
    others = sorted(p for p in folder.glob("*.json") if p not in chosen)
    random.Random(dialect).shuffle(others)
    return chosen + others[:max(0, count - len(chosen))]


def test_corpus_cases_of_every_dialect_on_a_stream_post_their_expected_updates(spark, tmp_path):
    from spark_impl import streaming

    paths = [p for dialect in CASES for p in _case_paths(dialect, CASES[dialect])]
    cases = [load_case(p) for p in paths]
    pairs = [(case_spec(c), c.trace) for c in cases]
    found = streaming.run_cases(pairs, spark, batches=3, seed=7, early=0.2, folder=tmp_path)
    assert {c.dialect for c in cases} == {"esper", "ccl", "apama", "kuiper"}
    failures = [(p.name, r if isinstance(r, Exception) else compare(c.expected, r))
                for p, c, r in zip(paths, cases, found)
                if isinstance(r, Exception) or compare(c.expected, r) is not None]
    assert not failures, failures
    assert sum(len(r) for r in found) > 25  # updates compared, not an empty agreement
    # three micro-batches per trace: every group's input was written as three files
    assert all(len(list(group.glob("in/*.parquet"))) == 3 for group in tmp_path.glob("group-*"))


def _traces(n: int, seed: int) -> list[tuple[str, Trace]]:
    rng = random.Random(seed)
    out = []
    for t in range(n):
        items, clock = [], 0
        for i in range(rng.randint(5, 25)):
            clock += rng.choice([0, 0, 250, 500, 1000, 1500])
            roll = rng.random()
            if roll < 0.1:
                items.append(Jump(clock))
            elif roll < 0.2:
                items.append(Advance(clock))
            else:
                items.append(Arrive(Event(f"E{i}", {"k": rng.choice(["a", "b", "c"]), "v": rng.randint(0, 9)}),
                                    time=clock))
        out.append((f"t{t}", Trace(items)))
    return out


def _rows_by_order(rows) -> list[tuple]:
    """Rows as compared: the update key, the side, the row's rank in its side by `pos`, and the rest."""
    keyed = {}
    for r in rows:
        d = r.asDict(recursive=True)
        # an update's event rows (`id`, a query's `pane_event`) and its rows of fields are ordered apart
        # (frames.updates_from_rows)
        key = (d["trace_id"], d["after"], d["phase"], d["time"], d["ordinal"], d["side"],
               d.get("id") is None and d.get("pane_event") is None)
        keyed.setdefault(key, []).append(d)
    out = []
    for key, group in keyed.items():
        group.sort(key=lambda d: tuple(d["pos"].values()) if d["pos"] else ())
        for rank, d in enumerate(group):
            out.append(key + (rank, tuple(sorted((k, repr(v)) for k, v in d.items() if k != "pos"))))
    return sorted(out, key=repr)


@pytest.mark.parametrize("dialect, window, props", [
    ("esper", "#groupwin(k)#time(1 sec)", ["k"]),
    ("esper", "select k, sum(v) as total from S#length_batch(3) group by k", ["k", "v"]),
    ("ccl", "KEEP 2 ROWS PER(k)", ["k"]),
    ("kuiper", "SELECT k, count(*) AS c FROM demo GROUP BY k, TUMBLINGWINDOW(ss, 2)", ["k"]),
])
def test_apply_window_on_a_stream_gives_the_batch_schema_and_rows(spark, dialect, window, props):
    from spark_impl import apply_window
    from spark_impl.frames import to_dataframe
    from spark_impl.streaming import apply_window_as_stream

    from spark_impl import output_schema
    from spark_impl.frames import posts_rows

    frame = to_dataframe(spark, _traces(30, seed=len(window)), props)
    batch = apply_window(frame, window, dialect)
    streamed = apply_window_as_stream(frame, window, dialect, batches=3, seed=3)
    # the same columns of the same types and metadata (whether a struct's field may be null differs between
    # the batch's families already: a field computed from a column that is never null is not nullable)
    def columns(schema):
        return [(f.name, f.dataType.simpleString(), dict(f.metadata)) for f in schema.fields]

    assert columns(streamed.schema) == columns(batch.schema)
    if "values" not in batch.columns:  # a family posting typed fields (or events): the public schema
        assert columns(streamed.schema) == columns(output_schema(window, frame.schema, dialect))
    if posts_rows(parse(window, dialect)) and "values" not in batch.columns:
        assert "values" not in streamed.columns and "error" in streamed.columns
    want, got = _rows_by_order(batch.collect()), _rows_by_order(streamed.collect())
    assert len(want) > 20
    assert got == want


def test_a_field_of_json_text_keeps_its_metadata_and_reads_back_as_the_batch_s(spark):
    """`select *` over a property of lists and objects (a JSON text column): the field is JSON text,
    marked so in the output's schema (frames.JSON_TEXT), and its rows are the batch's."""
    from spark_impl import apply_window
    from spark_impl.frames import JSON_TEXT, to_dataframe
    from spark_impl.streaming import apply_window_as_stream

    rng = random.Random(2)
    traces = [(f"t{t}", Trace([Arrive(Event(f"E{i}", {"k": rng.choice("ab"), "tags": rng.choice(
        [[1, 2], {"b": [True], "a": None}, None, []])}), time=i * 300) for i in range(12)])) for t in range(6)]
    frame = to_dataframe(spark, traces, ["k"])
    window = "select *, count(*) as n from S#length(3)"
    batch = apply_window(frame, window)
    streamed = apply_window_as_stream(frame, window, batches=3, seed=1)
    tags = next(f for f in streamed.schema.fields if f.name == "tags")
    assert tags.metadata.get(JSON_TEXT) and tags.dataType.simpleString() == "string"
    assert [(f.name, f.dataType.simpleString(), dict(f.metadata)) for f in streamed.schema.fields] == [
        (f.name, f.dataType.simpleString(), dict(f.metadata)) for f in batch.schema.fields]
    want, got = _rows_by_order(batch.collect()), _rows_by_order(streamed.collect())
    assert len(want) > 50 and got == want


def test_apply_window_refuses_a_recorded_frame(spark):
    from spark_impl.errors import InvalidFrame
    from spark_impl.frames import to_dataframe
    from spark_impl.streaming import apply_window as on_stream

    frame = to_dataframe(spark, _traces(1, seed=1), ["k"])
    with pytest.raises(InvalidFrame, match="streaming DataFrame"):
        on_stream(frame, "#length(2)")


# --------------------------------------------------------------------------- restart


BATCHES = 5
WINDOWS = {"0": "#groupwin(k)#time_batch(1 sec)", "1": "#expr(current_count <= 3)", "2": "#length(2)"}


def _stream_input(tmp_path: Path):
    from spark_impl.frames import PropertyTypes, input_schema, trace_rows
    from spark_impl.streaming import micro_batches

    traces = dict(_traces(30, seed=11))
    specs = {tid: parse(WINDOWS[str(n % 3)]) for n, tid in enumerate(traces)}
    types = PropertyTypes(["k", "v"])
    for tid, trace in traces.items():
        types.merge(PropertyTypes.of_trace(tid, trace))
    schema_map = types.schema()
    rng = random.Random(5)
    files: list[list[tuple]] = [[] for _ in range(BATCHES)]
    for tid, trace in traces.items():
        for n, rows in enumerate(micro_batches(trace_rows(tid, trace, schema_map), BATCHES, rng, 0.1)):
            files[n] += rows
    for n, rows in enumerate(files):  # every micro-batch has rows, so the stream has exactly BATCHES batches
        assert rows, n
    return traces, specs, input_schema(schema_map), files


@pytest.fixture(scope="module")
def uninterrupted(spark, tmp_path_factory):
    from spark_impl.streaming import run_files, write_files

    tmp = tmp_path_factory.mktemp("uninterrupted")
    traces, specs, schema, files = _stream_input(tmp)
    assert write_files(tmp / "in", files, schema) == BATCHES
    posted = run_files(spark, tmp / "in", schema, specs, tmp / "checkpoint")
    assert sorted(posted) == list(range(BATCHES))
    return traces, specs, schema, files, posted


def _all_rows(posted: dict) -> list:
    return sorted((tuple(r) for batch in posted.values() for r in batch), key=repr)


def test_the_uninterrupted_stream_posts_what_the_oracle_posts(uninterrupted):
    from oracle import run
    from spark_impl.frames import updates_from_rows

    traces, specs, _, _, posted = uninterrupted
    found = updates_from_rows([r for b in sorted(posted) for r in posted[b]], traces)
    assert sum(len(u) for u in found.values()) > 100
    for tid, trace in traces.items():
        assert compare(run(specs[tid], trace), found[tid]) is None, tid


#: (how, k) of the restarts checked: a stop after the first micro-batch and a crash in the middle, or with
#: STREAMING_ALL_K=1 both after every k
RESTARTS = ([(how, k) for how in ("crash", "stop") for k in range(1, BATCHES)] if os.environ.get("STREAMING_ALL_K")
            else [("stop", 1), ("crash", 3)])


@pytest.mark.parametrize("how, k", RESTARTS)
def test_a_restart_from_the_checkpoint_after_batch_k_loses_nothing_and_repeats_nothing(spark, tmp_path, uninterrupted,
                                                                                         how, k):
    """`stop`: the source has k files, the query runs them all and stops; the
    other files come, and the query starts again from its checkpoint.
    `crash`: the sink fails at batch k (its state for batch k may be written,
    its output is not); the query starts again from its checkpoint."""
    from spark_impl.streaming import run_files, write_files

    _, specs, schema, files, posted = uninterrupted
    if how == "stop":
        write_files(tmp_path / "in", files[:k], schema)
        first = run_files(spark, tmp_path / "in", schema, specs, tmp_path / "checkpoint")
        assert sorted(first) == list(range(k))
        write_files(tmp_path / "in", files[k:], schema, first=k)  # the rest of the stream comes
    else:
        write_files(tmp_path / "in", files, schema)
        first = run_files(spark, tmp_path / "in", schema, specs, tmp_path / "checkpoint", fail_after=k)
        assert sorted(first) == list(range(k))
    second = run_files(spark, tmp_path / "in", schema, specs, tmp_path / "checkpoint")
    assert sorted(second) == list(range(k, BATCHES))  # batch k runs again after a crash, never one before it
    assert _all_rows({**first, **second}) == _all_rows(posted)


@pytest.mark.parametrize("how, k", [(None, 0), ("crash", 3), ("stop", 2)])
def test_a_state_of_snapshot_and_logs_posts_what_a_snapshot_per_batch_posts(spark, tmp_path, uninterrupted, monkeypatch,
                                                                            how, k):
    """Every micro-batch that may logs its items (`micro_batch.LOG_SHARE`
    unbounded, a snapshot every third): the stream, and a restart after batch
    k, post the rows of the stream that rewrote its state every time."""
    from spark_impl.streaming import micro_batch, run_files, write_files

    _, specs, schema, files, posted = uninterrupted
    monkeypatch.setattr(micro_batch, "LOG_SHARE", float("inf"))
    monkeypatch.setattr(micro_batch, "MAX_LOGS", 3)
    manifests = []
    write = micro_batch.Location.write

    def spy(self, frame, batch_id, manifest=None):
        manifests.append((batch_id, manifest))
        return write(self, frame, batch_id, manifest)

    monkeypatch.setattr(micro_batch.Location, "write", spy)
    if how is None:
        write_files(tmp_path / "in", files, schema)
        assert _all_rows(run_files(spark, tmp_path / "in", schema, specs, tmp_path / "checkpoint")) == _all_rows(posted)
        # batch 0 a snapshot; 1 and 2 logs over it; 3 a snapshot (a third log would reach MAX_LOGS); 4 a log
        assert manifests == [(0, None), (1, {"base": 0, "logs": [1], "log_rows": manifests[1][1]["log_rows"]}),
                             (2, {"base": 0, "logs": [1, 2], "log_rows": manifests[2][1]["log_rows"]}), (3, None),
                             (4, {"base": 3, "logs": [4], "log_rows": manifests[4][1]["log_rows"]})]
        return
    if how == "stop":
        write_files(tmp_path / "in", files[:k], schema)
        first = run_files(spark, tmp_path / "in", schema, specs, tmp_path / "checkpoint")
        write_files(tmp_path / "in", files[k:], schema, first=k)
    else:
        write_files(tmp_path / "in", files, schema)
        first = run_files(spark, tmp_path / "in", schema, specs, tmp_path / "checkpoint", fail_after=k)
    second = run_files(spark, tmp_path / "in", schema, specs, tmp_path / "checkpoint")
    assert _all_rows({**first, **second}) == _all_rows(posted)
    assert any(m is not None for _, m in manifests)
