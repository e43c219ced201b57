"""A window on a stream of trace items, run by spark_impl's own plans: each
micro-batch resumes the window from the state the one before it left.

    from spark_impl import streaming
    query = streaming.start_window(stream, "#groupwin(k)#length(10)", location="s3://bucket/window/",
                                   sink=lambda updates, batch_id: updates.write.parquet(f"out/{batch_id}"))

**What runs.** A `foreachBatch` query over the stream: each micro-batch's
rows and the items held back before (below) are put in order per trace, and
the items whose turn has come run through
`spark_impl.apply_window_incrementally` (the batch plans,
`spark_impl.pipeline`) resumed from the state the previous micro-batch
wrote. No per-key Python runs: a micro-batch is one set of Spark jobs over
every trace and key, so a keyed window (`#groupwin`, CCL `PER`, Apama
`partition by`, an eKuiper `GROUP BY`) spreads over every core and worker
as the batch plan does. The state is what the window's family declares its
future reads (`spark_impl.windows.HELD`; every item so far for a family that
declares nothing: exact, and the state grows with the trace).

**Order.** A trace's items may arrive over any number of micro-batches, in
any order within and across them. Each trace runs its items in `seq` order,
the ones after its cut (the last item run) up to the first gap; an item ahead
of a gap is held back in the state until the gap fills (an item that never
comes holds back everything after it: its updates are not posted, never
guessed). The optional `start` row (seq -1) must come no later than seq 0's
micro-batch. The query fails, naming the trace and the seq, on an item whose
seq has run already or that comes twice (a replayed input), and on what the
batch refuses (`apply_window_incrementally`'s checks, `validate`).

**Output.** Each micro-batch's updates, the rows of the batch output's
schema (`spark_impl.output_schema`: the same columns, types, update keys and
`pos`), posted in the micro-batch their causing item runs in: over the
whole stream, exactly the rows of one batch `apply_window` over all the
items. Time is each trace's logical clock, as in batch: no Spark timer and
no watermark.

**Cost.** A micro-batch is a handful of jobs: the survey (one job: the
order and id scan of its items, `event_table.scan_and_hash`, which also
gives each trace's seqs, clock and the batch's per-trace checks where they
pass, `scanned_summary`, beside the state's cut per trace), the batch's
exact checks only where the scan cannot decide (they name the problem), the
state (the window's `HELD` plan, each trace's last item read off the survey)
and the updates (the window's plan, computed by the sink), each over the
state and the items, plus each job's fixed cost
(spark_impl/streaming/bench.py has the figures). A micro-batch of files (or
local rows) is read again by each job, which costs less than caching it;
any other source's rows are cached by the survey's job. The checks cover
every item the micro-batch holds, those held back ahead of a gap too: a bad
one fails the micro-batch it arrives in, not the one its turn comes in. The
jobs after the survey of a micro-batch whose items and state hold at most
`frames.ONE_PARTITION_ROWS` rows run interpreted, without code generation
or adaptive execution (`session.interpreted`): at that size compiling and
re-planning each job cost more than its rows.

**State and restart.** Under `location`: `state/<batch id>/`, the state
after that micro-batch, and `checkpoint/`, the query's. A state is a
snapshot (the window's state, `HELD`, and the items held back) or a log
(the items the micro-batch ran and those held back, beside a manifest
naming the snapshot and the logs since it, `Location.manifest`); the next
micro-batch reads the snapshot and the logs as its state, and the window's
plans run over the logged items again: exact, as over any items after a
state. A micro-batch logs while the logged rows stay under `LOG_SHARE` of
the snapshot's and the logs under `MAX_LOGS`, else it writes a snapshot:
so a small micro-batch over a large state writes its own rows, not the
whole state (a 1,000-row micro-batch over 100,000 rows of state: 1.2 to
1.4 s to write the snapshot, 0.2 to 0.35 s the log). A micro-batch reads
the newest state before its own id, so a micro-batch run again after a
stop or a crash reads the state before it; a state is written whole or not
at all (a staging folder renamed), and states older than the snapshot the
newest was read from are removed. So the sink sees each micro-batch's
updates computed from the same input and state however often Spark runs
it: exactly once for a sink idempotent by batch id (as `foreachBatch`
requires). A state written by another window is refused, naming both.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from contextlib import nullcontext

from attrs import frozen

from oracle.dialects import spec_text
from oracle.model import Spec, WindowSpec
from spark_impl.errors import InvalidFrame
from spark_impl.frames import BASE_COLUMNS, ONE_PARTITION_ROWS, START_SEQ
from spark_impl.event_table import check_trace_frame, scan_and_hash, scanned_summary, trace_checks
from spark_impl.incremental import STATE_OF, fingerprint, lookup, resume
from spark_impl.session import interpreted
from spark_impl.windows.base import quoted

#: the state's rows of items held back ahead of a gap (not yet run): they belong to no window yet
HELD_BACK = f"{STATE_OF} IS NULL"
#: the columns of a state written as a dict (`Location.write`): the frame a row is of (its folder), its row
PART, STATE_COLUMN = "wo_part", "wo_state_{}"
#: a state version's file naming the versions its state is read from (`Location.manifest`)
MANIFEST = "_manifest.json"
#: a micro-batch logs its items rather than rewriting the state while the logged rows stay under this share of
#: the snapshot's rows, and the logs under `MAX_LOGS` versions (each a folder every micro-batch lists)
LOG_SHARE, MAX_LOGS = 0.5, 24


class Location:
    """A folder of any Hadoop file system (local, HDFS, S3...) holding a
    window's versioned states: `state/<batch id>`, each written under
    `_staging/` and renamed into place whole."""

    def __init__(self, spark, path: str):
        self.spark, self.path = spark, str(path).rstrip("/")
        jvm = spark.sparkContext._jvm
        self._Path = jvm.org.apache.hadoop.fs.Path
        self._fs = self._Path(self.path).getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        #: the schema of the state last read (batch id, schema): Spark infers a Parquet folder's schema by a
        #: job of its own, and a micro-batch reads its state's parts one by one
        self._schema: tuple | None = None

    def folder(self, *parts: str) -> str:
        return "/".join((self.path, *parts))

    def ensure(self, *parts: str) -> None:
        """The folder made if it is not there."""
        self._fs.mkdirs(self._Path(self.folder(*parts)))

    def versions(self) -> list[int]:
        """The batch ids with a state written, ascending."""
        where = self._Path(self.folder("state"))
        if not self._fs.exists(where):
            return []
        names = [status.getPath().getName() for status in self._fs.listStatus(where)]
        return sorted(int(n) for n in names if n.isdigit())

    def _place(self, staging: str, batch_id: int) -> None:
        target = self._Path(self.folder("state", str(batch_id)))
        self._fs.mkdirs(target.getParent())
        if self._fs.exists(target):
            self._fs.delete(target, True)
        if not self._fs.rename(self._Path(staging), target):
            raise OSError(f"could not move the window's state into {target}")

    def write(self, frame, batch_id: int, manifest: Mapping | None = None) -> None:
        """`frame` (or a dict of named frames) as the state of `batch_id`:
        written to a staging folder, then renamed into place (replacing a
        state of the same id left by an earlier run of the micro-batch). A
        dict is written by one job: each frame's rows as one struct column
        (`STATE_COLUMN`), the rows split by `PART` into a folder per frame.
        `manifest`: written beside the rows (`manifest`)."""
        from pyspark.sql import functions as F

        staging = self.folder("_staging", f"state-{batch_id}")
        if self._schema and self._schema[0] == batch_id:
            self._schema = None  # a micro-batch run again replaces its state
        if isinstance(frame, Mapping):
            rows = None
            for name, part in frame.items():
                packed = part.select(F.struct(*(F.col(quoted(c)) for c in part.columns))
                                     .alias(STATE_COLUMN.format(name)), F.lit(name).alias(PART))
                rows = packed if rows is None else rows.unionByName(packed, allowMissingColumns=True)
            rows.write.mode("overwrite").partitionBy(PART).parquet(staging)
            if not any(self._fs.exists(self._Path(f"{staging}/{PART}={name}")) for name in frame):
                # no row at all: an empty file keeps the columns, so each part reads as an empty frame
                rows.sparkSession.createDataFrame([], rows.schema).write.mode("overwrite").parquet(staging)
        else:
            frame.write.mode("overwrite").parquet(staging)
        if manifest is not None:
            out = self._fs.create(self._Path(f"{staging}/{MANIFEST}"), True)
            try:
                out.write(bytearray(json.dumps(dict(manifest)).encode()))
            finally:
                out.close()
        self._place(staging, batch_id)

    def manifest(self, batch_id: int) -> dict:
        """The versions the state of `batch_id` is read from: `base`, the
        version holding the window's state (a snapshot), and `logs`, the
        versions after it holding the items run since, with `log_rows` their
        rows. A version written without a manifest is a snapshot."""
        path = self._Path(self.folder("state", str(batch_id), MANIFEST))
        if not self._fs.exists(path):
            return {"base": batch_id, "logs": [], "log_rows": 0}
        jvm = self.spark.sparkContext._jvm
        stream = self._fs.open(path)
        try:
            text = jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
        finally:
            stream.close()
        return json.loads(text)

    def read_versions(self, batch_ids: list[int], schema, spark=None):
        """The rows of several versions, each of `schema` (the state's
        columns), as one frame: one scan, no job to infer a schema."""
        return (spark or self.spark).read.schema(schema).parquet(
            *(self.folder("state", str(b)) for b in batch_ids))

    def read(self, batch_id: int, part: str | None = None, spark=None):
        """The state of `batch_id` (its frame `part`, of a dict written; None
        if the dict held no such frame), a frame of `spark` (default the
        location's session). A micro-batch passes its own: a frame runs
        under the session of the frame it is built on (a union's or a join's
        left side), and the window's plans are built on the state, so the
        settings the micro-batch runs under (`session.interpreted`'s) must
        be the state's session's."""
        known = self._schema[1] if self._schema and self._schema[0] == batch_id else None
        reader = (spark or self.spark).read
        found = (reader if known is None else reader.schema(known)).parquet(
            self.folder("state", str(batch_id)))
        self._schema = (batch_id, found.schema)
        if part is None:
            return found
        column = STATE_COLUMN.format(part)
        if column not in found.columns:  # a dict written without such a frame
            return None
        return found.where(f"{PART} = '{part}'").select(f"`{column}`.*")

    def newest_before(self, batch_id: int) -> int | None:
        """The newest state version before `batch_id` (None: none); refuses a
        location holding a later micro-batch's state."""
        versions = self.versions()
        later = [v for v in versions if v > batch_id]
        if later:
            raise InvalidFrame(f"{self.folder('state')} holds the state of micro-batch {later[0]}, after this "
                               f"query's micro-batch {batch_id}: the state of another query? Give each query its "
                               "own location, and keep its checkpoint and state together")
        before = [v for v in versions if v < batch_id]
        return before[-1] if before else None

    def prune(self, before: int) -> None:
        """Remove the states older than `before`."""
        for version in self.versions():
            if version < before:
                self._fs.delete(self._Path(self.folder("state", str(version))), True)


@frozen
class Turns:
    """Which items of a micro-batch run now, per trace: `all` (every item
    after the cut, no gap), `gap` (those up to the first gap), `none`; `base`
    the first seq to run (the cut + 1; 0 for a new trace)."""

    all: tuple[str, ...]
    gap: dict
    none: tuple[str, ...]
    base: dict


class WindowStream:
    """The per-micro-batch step of `start_window` (module docstring): `spec_of`
    gives each trace's window (`specs`: the distinct ones)."""

    def __init__(self, location: Location, specs: Mapping[str, WindowSpec] | WindowSpec, *, validate: bool,
                 sink: Callable, columns: list[str], schema):
        self.location, self.validate, self.sink, self.columns = location, validate, sink, columns
        self.one = specs if isinstance(specs, Spec) else None
        self.table = None if self.one is not None else dict(specs)
        self.marks = {fingerprint(s): s for s in ([self.one] if self.one is not None else self.table.values())}
        self.schema = schema  # the output's
        self._last_items: int | None = None  # the last micro-batch's items

    def __call__(self, batch, batch_id: int) -> None:
        prior = self.location.newest_before(batch_id)
        before = [] if prior is None else [prior]
        carried = self.location.read(prior, spark=batch.sparkSession) if before else None
        self._manifest = None if prior is None else self.location.manifest(prior)
        items = batch.selectExpr(*(quoted(c) for c in self.columns))
        state = None
        if carried is not None:
            # the snapshot and the items logged since (`manifest`); rows held back are the newest version's
            state = carried.where(f"NOT ({HELD_BACK})")
            older = [v for v in (self._manifest["base"], *self._manifest["logs"]) if v != prior]
            if older:
                state = self.location.read_versions(older, carried.schema, batch.sparkSession) \
                    .where(f"NOT ({HELD_BACK})").unionByName(state)
            items = items.unionByName(carried.where(HELD_BACK).selectExpr(*(quoted(c) for c in self.columns)))
        if rereadable(batch):
            # files (and local rows): each job reads the micro-batch's rows again, which costs less than
            # caching them (1 M rows: read 0.1-0.3 s a job, cached 0.9 s)
            self._step(items, state, batch_id, before)
            return
        # any other source (a Kafka topic, ...): the items computed once, by the survey's job; every job
        # after it (the checks, the window, the state) reads them from memory
        items = items.persist()
        try:
            self._step(items, state, batch_id, before)
        finally:
            items.unpersist()

    def _step(self, items, state, batch_id: int, before: list[int]) -> None:
        # the survey runs before the micro-batch's size is known: uncompiled after a micro-batch of few items
        # (a stream's micro-batches are alike), whatever the state's rows, which it only counts per trace (a
        # 1,000-row micro-batch over 100,000 rows of state: the survey 0.45-0.48 -> 0.36-0.43 s, a job fewer)
        small = self._last_items is not None and self._last_items <= ONE_PARTITION_ROWS
        with interpreted(items.sparkSession) if small else nullcontext():
            survey = self._survey(items, state)
        # a small micro-batch over a small state runs its jobs uncompiled (`session.interpreted`): compiling
        # them costs more than their rows (a 1,000-row micro-batch over 100,000 rows of state runs faster
        # compiled and adapted: 3.6 to 4.6 s against 4.7 to 5.3 s)
        self._last_items = sum(row["n"] + row["start_rows"] for row in survey["items"].values())
        rows = self._last_items + sum(row["rows"] for row in survey["state"].values())
        with interpreted(items.sparkSession) if rows <= ONE_PARTITION_ROWS else nullcontext():
            self._window(items, state, survey, batch_id, before)

    def _window(self, items, state, survey: dict, batch_id: int, before: list[int]) -> None:
        """The rest of `_step`: the turns, the window, the state, the sink."""
        turns = self._turns(survey)
        running, held_back = self._split(items, turns)
        manifest = self._logged(survey, batch_id)
        updates, kept = self._run(running, items, state, turns, survey, keep=manifest is None)
        from pyspark.sql import functions as F

        waiting = held_back.withColumn(STATE_OF, F.lit(None).cast("string"))
        if manifest is None:  # a snapshot: the window's state after the items (`HELD`)
            self.location.write(waiting if kept is None else kept.unionByName(waiting, allowMissingColumns=True),
                                batch_id)
        else:  # a log: the items that ran, each marked with its window, in the snapshot's columns (a column the
            # window's checks added there, a variable's or `op`, is null on an item as those checks make it)
            mark = F.lit(next(iter(self.marks))) if self.one is not None else F.expr(
                lookup({t: fingerprint(s) for t, s in self.table.items()}, sql_type="STRING"))
            logged = running.withColumn(STATE_OF, mark).unionByName(waiting)
            self.location.write(conform(logged, state.schema), batch_id, manifest)
        self.sink(updates, batch_id)
        if before:
            self.location.prune(self._manifest["base"])

    def _logged(self, survey: dict, batch_id: int) -> dict | None:
        """The manifest of this micro-batch's state where it logs its items
        (None: it writes a snapshot). A snapshot is rewritten whole (the
        family's `HELD` plan, a shuffle of the state and the items) at most
        once per `MAX_LOGS` micro-batches and once its logged rows reach
        `LOG_SHARE` of its own; between, a micro-batch writes the items it
        ran, and the next reads the snapshot and the logs as its state (the
        window's plans run over them again: exact, as any items after a
        state)."""
        if self._manifest is None:
            return None
        logs, log_rows = self._manifest["logs"], self._manifest["log_rows"]
        snapshot = sum(row["rows"] for row in survey["state"].values()) - log_rows
        if len(logs) + 1 >= MAX_LOGS or log_rows + self._last_items > LOG_SHARE * snapshot:
            return None
        return {"base": self._manifest["base"], "logs": [*logs, batch_id], "log_rows": log_rows + self._last_items}

    # ------------------------------------------------------------------ order

    def _survey(self, items, state) -> dict:
        """One job: per trace, of the state its cut (last seq run), whether it holds a jump and the windows
        that wrote it; of the items their count, lowest and highest seq (the start row apart), start rows,
        earliest item and latest clock. With `validate` the items' figures are read off the order and id scan of the
        items (`event_table.scan_and_hash`, in the same job) where it shows they pass every check of the
        batch (`scanned_summary`); where it does not, a second job aggregates them with the batch's
        per-trace checks (`event_table.trace_checks`), which name the problem. `checked`: the scan
        decided, so the checks run no job of their own. Refuses a state another window wrote."""
        parts = None if self.validate else self._per_item(items, checks=False)
        if state is not None:
            per_state = state.groupBy("trace_id").agg(
                _expr("'state'").alias("part"), _expr("max(CASE WHEN kind <> 'start' THEN seq END)").alias("hi"),
                _expr("coalesce(max(kind = 'jump'), false)").alias("state_jumps"),
                _expr("max(seq)").alias("cut"), _expr("max(time)").alias("clock"), _expr("count(1)").alias("rows"),
                _expr(f"collect_set({STATE_OF})").alias("marks"))
            parts = per_state if parts is None else parts.unionByName(per_state, allowMissingColumns=True)
        if self.validate:
            scan = scan_and_hash(items).select(_expr("'scan'").alias("part"), _expr("struct(*)").alias("scan"))
            parts = scan if parts is None else parts.unionByName(scan, allowMissingColumns=True)
        found: dict = {"items": {}, "state": {}, "scan": [], "checked": False, "jumps": True}
        for row in parts.collect():
            if row["part"] == "scan":
                found["scan"].append(row["scan"])
            else:
                found[row["part"]][row["trace_id"]] = row
        if self.validate:
            summary = scanned_summary(found["scan"])
            if summary is not None:
                found.update(items=summary.traces, checked=True, jumps=summary.jumps)
            else:
                found["items"] = {row["trace_id"]: row for row in self._per_item(items, checks=True).collect()}
        strange = sorted({m for row in found["state"].values() for m in row["marks"]} - set(self.marks))
        if strange:
            names = ", ".join(spec_text(s) for s in self.marks.values())
            raise InvalidFrame(f"the state in {self.location.path} was written by another window (fingerprint "
                               f"{strange[0]}), not {names}: restart a changed window at a new location")
        return found

    @staticmethod
    def _per_item(items, *, checks: bool):
        """The survey's aggregate of the items per trace, with the batch's per-trace checks if `checks`."""
        return items.groupBy("trace_id").agg(
            _expr("'items'").alias("part"),
            _expr(f"count(CASE WHEN seq <> {START_SEQ} THEN 1 END)").alias("n"),
            _expr(f"min(CASE WHEN seq <> {START_SEQ} THEN seq END)").alias("lo"),
            _expr(f"max(CASE WHEN seq <> {START_SEQ} THEN seq END)").alias("hi"),
            _expr(f"count(CASE WHEN seq = {START_SEQ} THEN 1 END)").alias("start_rows"),
            _expr(f"min_by(struct(time, seq), struct(time, seq)) FILTER (WHERE seq <> {START_SEQ})").alias("early"),
            _expr(f"max(CASE WHEN seq <> {START_SEQ} THEN time END)").alias("clock"),
            *(trace_checks() if checks else ()))

    def _turns(self, survey: dict) -> Turns:
        """Per trace with items, which run now (`Turns`); refuses an item that ran already or comes twice,
        and one whose clock is before the state's (so the window's plans check no row again)."""
        cuts = {t: row["hi"] for t, row in survey["state"].items()}
        clocks = {t: row["clock"] for t, row in survey["state"].items()}
        every, gap, none, base = [], {}, [], {}
        for trace_id, row in survey["items"].items():
            n, lo, hi, starts = row["n"], row["lo"], row["hi"], row["start_rows"]
            cut = cuts.get(trace_id)
            if trace_id is None:
                raise InvalidFrame("an item with a null trace_id")
            if self.table is not None and trace_id not in self.table:
                raise InvalidFrame(f"trace {trace_id!r} has no window (apply_windows names a window per trace)")
            where = f"trace {trace_id!r}"
            if cut is not None and starts:
                raise InvalidFrame(f"{where} seq {START_SEQ}: a start row after the trace began (it must come no "
                                   "later than seq 0's micro-batch)")
            if starts > 1:
                raise InvalidFrame(f"{where} seq {START_SEQ}: the item arrived twice (a replayed input?)")
            if lo is not None and lo < 0:
                raise InvalidFrame(f"{where} seq {lo}: an item with a negative seq")
            first = 0 if cut is None else cut + 1
            base[trace_id] = first
            if n and lo < first:
                raise InvalidFrame(f"{where} seq {lo}: the item arrived again after it ran (a replayed input?)")
            early, clock = row["early"], clocks.get(trace_id)
            if early is not None and clock is not None and early["time"] < clock:
                raise InvalidFrame(f"{where} seq {early['seq']}: its clock {early['time']} ms is before the clock "
                                   f"{clock} ms of the items run before it")
            if not n or lo > first:
                none.append(trace_id)
            elif hi - first + 1 == n:
                every.append(trace_id)
            else:
                gap[trace_id] = first
        return Turns(tuple(every), gap, tuple(none), base)

    def _split(self, items, turns: Turns):
        """(the items that run now, those held back): a trace's items up to its first gap run (its start
        row with them)."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        # each trace's turn and base as literals looked up by trace id: a join with a frame of them would
        # broadcast it, a job of its own in each plan reading the items
        turn = {**{t: "all" for t in turns.all}, **{t: "gap" for t in turns.gap},
                **{t: "none" for t in turns.none}}
        marked = items.selectExpr("*", f"{lookup(turn, sql_type='STRING')} AS `#turn`",
                                  f"{lookup(turns.base)} AS `#base`")
        columns = [quoted(c) for c in self.columns]
        running = marked.where(f"`#turn` = 'all' OR (`#turn` = 'gap' AND seq = {START_SEQ})")
        held = marked.where("`#turn` = 'none'")
        if turns.gap:
            # past the cut, the k-th item in seq order (from 0) runs if its seq is the cut + 1 + k
            gapped = marked.where(f"`#turn` = 'gap' AND seq <> {START_SEQ}").withColumn(
                "#runs", F.col("seq") == F.col("#base") + F.row_number().over(
                    Window.partitionBy("trace_id").orderBy("seq")) - 1)
            running = running.unionByName(gapped.where("`#runs`").drop("#runs"))
            held = held.unionByName(gapped.where("NOT `#runs`").drop("#runs"))
        return running.selectExpr(*columns), held.selectExpr(*columns)

    # ------------------------------------------------------------------ the window

    def _run(self, running, items, state, turns: Turns, survey: dict, keep: bool = True):
        """(the updates, the window's state after the items that run): per window, its traces' items
        resumed from their state; a trace without items to run keeps its state as it was. `keep`
        False: the state is not wanted (None)."""

        moved = list(turns.all) + list(turns.gap)
        spark = running.sparkSession
        still = None
        if state is not None:
            still, state = split_state(state, moved)
        groups = by_window(self.one if moved else None, self.table, moved, running, state)
        jumps = True
        if self.validate and moved:
            # the batch's checks, once for every window (`apply_window_incrementally` would run them per
            # window), of every item the micro-batch holds (those held back too: a bad one fails now, not
            # when its turn comes), their per-trace aggregate read off the survey; a plan for input without
            # jumps where neither they nor the state hold one
            jumps = survey["jumps"] if survey["checked"] else check_trace_frame(
                items.selectExpr("trace_id", "CAST(seq AS BIGINT) AS seq", "kind", "CAST(time AS BIGINT) AS time", "id"),
                list(survey["items"].values()), survey["scan"])
            jumps = jumps or any(survey["state"][t]["state_jumps"] for t in moved if t in survey["state"])
        from spark_impl import PLANS_PER_JOB

        # each touched trace's cut and clock, read off the survey: literals, so no plan reading the state
        # computes and broadcasts them in jobs of their own
        cuts = None if state is None else {t: (survey["state"][t]["cut"], survey["state"][t]["clock"])
                                           for t in moved if t in survey["state"]}
        # each moved trace's last item (seq, time), read off the survey where every item of it runs now (no
        # gap): literals, so the state's plan aggregates no items to find them (`incremental.held`)
        lasts = None if turns.gap else {t: (survey["items"][t]["hi"], survey["items"][t]["clock"]) for t in moved}
        updates, kept = None, still
        chunks = [groups[i:i + PLANS_PER_JOB] for i in range(0, len(groups), PLANS_PER_JOB)]
        for chunk in chunks:
            part_updates, part_kept = None, None
            for spec, mine, held in chunk:
                # the survey refused a state of another window and an item at or before its trace's cut or
                # its clock (`_turns`): the window's plans check no row again (`placed`)
                done = resume(mine, spec, state=held, cuts=cuts, jumps=jumps, placed=held is not None,
                              lasts=lasts and {t: lasts[t] for t in moved if self.one is not None or self.table[t] == spec})
                part = conform(done.updates, self.schema)
                part_updates = part if part_updates is None else part_updates.unionByName(part)
                part_kept = done.state if part_kept is None else part_kept.unionByName(done.state,
                                                                                       allowMissingColumns=True)
            if len(chunks) > 1:
                # many windows: a job per `PLANS_PER_JOB` of them (as the batch `run_cases`), each's rows
                # computed and kept, so the sink's and the state's jobs read rows, not every window's plan
                part_updates = part_updates.localCheckpoint()
                part_kept = part_kept.localCheckpoint() if keep else None
            updates = part_updates if updates is None else updates.unionByName(part_updates)
            if keep:
                kept = part_kept if kept is None else kept.unionByName(part_kept, allowMissingColumns=True)
        if updates is None:
            updates = spark.createDataFrame([], self.schema)
        return updates, kept if keep else None


def rereadable(frame) -> bool:
    """Whether every leaf of `frame`'s plan reads files or local rows, which a
    job reads again cheaply (False where it cannot tell: a Connect session)."""
    try:
        leaves = frame._jdf.queryExecution().analyzed().collectLeaves()
    except Exception:  # noqa: BLE001 - no JVM plan to look at (Spark Connect): cache, as for any source
        return False
    names = [leaves.apply(i).getClass().getSimpleName() for i in range(leaves.size())]
    return bool(names) and all(n in ("LogicalRelation", "LocalRelation") for n in names)


def split_state(state, traces: list[str]):
    """(the rows of `state` of no trace in `traces`, those of one): a set of
    literals, not a join, so no broadcast job of its own in each plan reading
    the state."""
    from pyspark.sql import functions as F

    touched = F.coalesce(F.col("trace_id").isin(traces), F.lit(False))
    return state.where(~touched), state.where(touched)


def by_window(one: WindowSpec | None, table: Mapping[str, WindowSpec] | None, traces: list[str], items, state):
    """Per window, (its spec, its traces' items, their state or None): `one`
    the stream's single window (all of `items` and `state`), else `table`'s
    window of each trace of `traces` (the traces that run)."""
    from pyspark.sql import functions as F

    if one is not None:
        return [(one, items, state)]
    by_spec: dict[WindowSpec, list[str]] = {}
    for t in traces if table is not None else ():
        by_spec.setdefault(table[t], []).append(t)
    return [(spec, items.where(F.col("trace_id").isin(ids)),
             None if state is None else state.where(F.col("trace_id").isin(ids))) for spec, ids in by_spec.items()]


def run_to_end(start: Callable, fail_after: int | None = None) -> dict[int, list]:
    """Run the query `start(sink)` starts (an `availableNow` trigger) to its
    end into a sink keeping each micro-batch's rows by batch id (a batch run
    again replaces its rows): those rows. `fail_after`: the sink fails from
    that batch id on (a crash, for restart tests; the micro-batch's state is
    written by then); the batches before it are returned."""
    posted: dict[int, list] = {}

    def sink(frame, batch_id):
        rows = frame.collect()
        if fail_after is not None and batch_id >= fail_after:
            raise RuntimeError(f"the sink stops at batch {batch_id} (a crash, on purpose)")
        posted[batch_id] = rows

    query = start(sink)
    try:
        query.awaitTermination()
    except Exception:  # noqa: BLE001 - a crash the caller asked for; any other error is raised
        if fail_after is None:
            raise
    finally:
        query.stop()
    return posted


def conform(frame, schema):
    """`frame`'s rows in `schema`'s columns: a column it lacks is null."""
    from pyspark.sql import functions as F

    have = set(frame.columns)
    return frame.select(*(F.col(quoted(f.name)) if f.name in have else F.lit(None).cast(f.dataType).alias(f.name)
                          for f in schema.fields))


def _expr(sql: str):
    from pyspark.sql import functions as F

    return F.expr(sql)


# --------------------------------------------------------------------------- the public functions


def start_window(stream_df, window: str | WindowSpec | Mapping[str, WindowSpec], dialect: str = "esper", *,
                 location: str, sink: Callable, trigger: Mapping | None = None, validate: bool = True,
                 query_name: str | None = None):
    """Start the window's query over the streaming frame of trace items
    `stream_df` (`window`: a clause in `dialect`'s syntax, a spec, or a
    mapping of trace id -> spec, a window per trace), its state and
    checkpoint under `location`; `sink(updates, batch_id)` gets each
    micro-batch's updates (a DataFrame of `output_schema`) and must be
    idempotent by batch id. `trigger`: `DataStreamWriter.trigger`'s keyword
    arguments (`{"availableNow": True}`). Returns the `StreamingQuery`.
    Raises `InvalidFrame` naming a missing or mistyped column, the parser's
    errors for a bad clause, before the query starts."""
    from spark_impl import pipeline
    from spark_impl.streaming.output import merged, window_schema

    specs = _specs(window, dialect)
    distinct = [specs] if isinstance(specs, Spec) else list(dict.fromkeys(specs.values()))
    for spec in distinct:
        pipeline.check_input(stream_df, spec)  # the batch's columns, kinds and operation codes
    props = _properties(stream_df)
    schema = merged((spec, window_schema(spec, props)) for spec in distinct)
    location = Location(stream_df.sparkSession, location)
    step = WindowStream(location, specs, validate=validate, sink=sink, columns=list(stream_df.columns),
                        schema=schema)
    writer = stream_df.writeStream.foreachBatch(step).option("checkpointLocation", location.folder("checkpoint"))
    if trigger:
        writer = writer.trigger(**trigger)
    if query_name:
        writer = writer.queryName(query_name)
    return writer.start()


def output_schema_of(stream_df, window, dialect: str = "esper"):
    """The schema of `start_window`'s updates over `stream_df` (the union of the windows' for a mapping)."""
    from spark_impl.streaming.output import merged, window_schema

    specs = _specs(window, dialect)
    distinct = [specs] if isinstance(specs, Spec) else list(dict.fromkeys(specs.values()))
    props = _properties(stream_df)
    return merged((spec, window_schema(spec, props)) for spec in distinct)


def _specs(window, dialect: str):
    from oracle.dialects import parse

    if isinstance(window, str):
        return parse(window, dialect)
    if isinstance(window, Spec):
        return window
    from spark_impl.streaming.traces import check_specs

    return check_specs(window, "streaming.start_window")


def _properties(frame):
    from pyspark.sql import types as T

    return T.StructType([f for f in frame.schema.fields if f.name not in BASE_COLUMNS])


class UpdatesTable:
    """A `start_window` sink writing each micro-batch's updates to
    `<location>/updates/<batch id>/` (written under `_staging/`, then renamed
    into place whole; a micro-batch run again whose folder is in place
    already writes nothing: its rows were computed from the same input and
    state), the table the stream `apply_window` returns reads."""

    def __init__(self, location: Location):
        self.location = location

    def __call__(self, updates, batch_id: int) -> None:
        loc = self.location
        target = loc._Path(loc.folder("updates", f"{batch_id:012d}"))
        if loc._fs.exists(target):
            return
        staging = loc.folder("_staging", f"updates-{batch_id}")
        updates.write.mode("overwrite").parquet(staging)
        loc._fs.mkdirs(target.getParent())
        if not loc._fs.rename(loc._Path(staging), target):
            raise OSError(f"could not move the window's updates into {target}")


def updates_stream(spark, schema, location: str | None, start: Callable):
    """The streaming frame of a window query's updates: `start(location,
    sink)` starts the query with an `UpdatesTable` sink under `location`
    (a `Location`; None: a new temporary folder); the frame reads that
    table, each micro-batch's updates once, and has the query as its
    `window_query` attribute (registered for `failures.await_termination`)."""
    import tempfile

    from spark_impl.streaming.failures import WINDOW_QUERIES

    where = Location(spark, location or tempfile.mkdtemp(prefix="window-oracle-stream-"))
    where.ensure("updates")
    query = start(where, UpdatesTable(where))
    out = spark.readStream.schema(schema).parquet(where.folder("updates", "*"))
    out.window_query = query
    WINDOW_QUERIES[where.folder("updates")] = query
    return out
