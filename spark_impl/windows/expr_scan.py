"""`#expr(expiry)`'s expiry loop as a lock-step scan over many sub-windows at once.

The rule (`spark_impl.windows.expr`): an arrival joins the held events; then,
while any is held, the expiry is evaluated for the oldest, and false or null
expires it. Each sub-window's loop is sequential, but the sub-windows' loops
are independent, so a partition's sub-windows (rows sorted by sub-window and
seq) step together: step t takes the t-th arrival of every sub-window that has
one, and the expiry is evaluated for all of them as numpy arrays; those whose
oldest expires evaluate again, until none does. Each evaluation is the rule's,
value for value:

* the held events of a sub-window are a run of its rows, from its `lo` (the
  oldest) to the arrival (the newest); the built-ins are that run's count,
  the expired count of this loop, the oldest's and the arrival's clocks;
* an aggregate reads the run afresh, in arrival order: a double `sum` is the
  left-to-right sum of its non-null values (a cumulative sum along the run,
  nulls and the positions past the run added as +0.0, which changes no sum
  that starts, as the rule's does, from the integer 0: such a sum is never
  -0.0); `min` and `max` keep the first value no later one is below (above);
* null propagates, `and`/`or` are three-valued, `/` is IEEE division (Java's
  infinities and NaN on zero), an integer `%` by zero is null.

Scanned only where every value is a number or a boolean of known type, so no
evaluation can fail: no string, no `id`, no `distinct`, no double sub-window
key (Spark's grouping merges 0.0 and -0.0, a sort does not split them), and
no variable (a sub-window whose trace declares a variable or sets one, one
much longer than the others beside it (`LONG_RUN`: the steps would outnumber
the rows, as over one trace without groups), and a
chunk holding a value where numpy and Python could part, an integer past
2**53 beside a double or an integer result past 2**62, run the
per-sub-window kernel instead, `expr._kernel`).
"""

from __future__ import annotations

import numpy as np

from oracle.model import Aggregate, Binary, Builtin, EventProperty, Expr, Literal, Name, Negate, Not, expression_nodes
from spark_impl import clock
from spark_impl.compiled import whole_runs

#: rows a scan takes at once (sub-windows whole): its width and its memory
CHUNK_ROWS = 1_000_000
#: a sub-window longer than this and than a sixteenth of its chunk runs the kernel: the scan
#: pays a numpy round per step, worth it only where many sub-windows share the steps
LONG_RUN = 256
_EXACT_INT = 2 ** 53
_SAFE_INT = 2 ** 62


class _NotExact(Exception):
    """A value where numpy and the rule's Python values could part: the chunk runs the sequential kernel."""


def _type_of(node, types: dict) -> str | None:
    """The static type of `node`'s values ("int", "float", "bool"), or None
    where the scan does not take it (a string, an evaluation that could fail)."""
    if isinstance(node, Literal):
        value = node.value
        if isinstance(value, bool):
            return "bool"
        if isinstance(value, int):
            return "int" if abs(value) < _SAFE_INT else None  # past a long's safe range: the kernel's Python ints
        return "float" if isinstance(value, float) else None  # a string; a null literal's type is not known
    if isinstance(node, (Name, EventProperty)):
        return types.get(node.name)
    if isinstance(node, Builtin):
        return "int"
    if isinstance(node, Negate):
        inner = _type_of(node.operand, types)
        return inner if inner in ("int", "float") else None
    if isinstance(node, Not):
        return "bool" if _type_of(node.operand, types) == "bool" else None
    if isinstance(node, Aggregate):
        if node.distinct:
            return None
        if node.argument is None:
            return "int"
        inner = _type_of(node.argument, types)
        if inner not in ("int", "float") or any(isinstance(n, Aggregate) for n in expression_nodes(node.argument)):
            return None
        if node.function == "count":
            return "int"
        return "float" if node.function == "avg" else inner
    if isinstance(node, Binary):
        left, right = _type_of(node.left, types), _type_of(node.right, types)
        if left is None or right is None:
            return None
        if node.op in ("and", "or"):
            return "bool" if left == right == "bool" else None
        numbers = left in ("int", "float") and right in ("int", "float")
        if node.op in ("=", "!="):
            return "bool" if numbers or left == right == "bool" else None
        if node.op in ("<", "<=", ">", ">="):
            return "bool" if numbers else None
        if not numbers or (node.op == "%" and "float" in (left, right)):
            return None  # a double remainder of an infinity fails the rule's evaluation
        if node.op == "/":
            return "float"
        return "int" if left == right == "int" else "float"
    return None


def scannable(spec, types: dict, keys: dict) -> bool:
    """Whether `spec`'s expiry runs as the scan: an `#expr` whose expiry is a
    boolean of the types above over `types` (property -> "int", "float",
    "bool"), under sub-window keys none of which is a double (`keys`: key ->
    Spark type name)."""
    if not isinstance(spec, Expr) or any(t in ("double", "float") for t in keys.values()):
        return False
    if any(isinstance(n, (Name, EventProperty)) and n.name == "id" for n in expression_nodes(spec.expiry)):
        return False
    return _type_of(spec.expiry, types) == "bool"


# --------------------------------------------------------------------------- the evaluation


class _Where:
    """One evaluation over candidate sub-windows: their oldest (`lo`) and newest
    (`hi`) row, this loop's expired count; the chunk's columns (`values`, `known`)."""

    def __init__(self, chunk, lo, hi, expired):
        self.chunk, self.lo, self.hi, self.expired = chunk, lo, hi, expired
        self._run = None

    def run(self):
        """The held rows as a matrix (a sub-window per row, its held rows from the
        oldest, padded past its newest) and the mask of the real ones."""
        if self._run is None:
            width = int((self.hi - self.lo).max()) + 1 if self.lo.size else 1
            index = self.lo[:, None] + np.arange(width)[None, :]
            inside = index <= self.hi[:, None]
            self._run = (np.where(inside, index, self.hi[:, None]), inside)
        return self._run


def _check_int(values, known) -> None:
    if values.dtype.kind == "i" and np.any(known & (np.abs(values) >= _SAFE_INT)):
        raise _NotExact


def _checked(result_float, values, known):
    """An integer result, refused where it may have wrapped (the float twin's magnitude)."""
    if np.any(known & ~(np.abs(result_float) < _SAFE_INT)):
        raise _NotExact
    return values


def compile_scan(node, types: dict):
    """`node` as a function of a `_Where` (and, inside an aggregate, of the held
    rows' matrix) giving (values, known) as numpy arrays, or scalars."""
    kind = _type_of(node, types)
    if isinstance(node, Literal):
        value = node.value
        return lambda w, rows=None: (value, True)
    if isinstance(node, Name):
        name = node.name

        def prop(w, rows=None):
            values, known = w.chunk.values[name], w.chunk.known[name]
            at = w.lo if rows is None else rows
            return values[at], known[at]
        return prop
    if isinstance(node, EventProperty):
        name, newest = node.name, node.event == "newest_event"

        def event_prop(w, rows=None):
            at = w.hi if newest else w.lo
            values, known = w.chunk.values[name][at], w.chunk.known[name][at]
            return (values, known) if rows is None else (values[:, None], known[:, None])
        return event_prop
    if isinstance(node, Builtin):
        name = node.name

        def builtin(w, rows=None):
            if name == "current_count":
                values = w.hi - w.lo + 1
            elif name == "expired_count":
                values = w.expired
            else:
                values = w.chunk.time[w.lo if name == "oldest_timestamp" else w.hi]
            return values if rows is None else values[:, None], True
        return builtin
    if isinstance(node, Negate):
        operand = compile_scan(node.operand, types)

        def negate(w, rows=None):
            values, known = operand(w, rows)
            _check_int(np.asarray(values), known)
            return -values, known
        return negate
    if isinstance(node, Not):
        operand = compile_scan(node.operand, types)

        def negation(w, rows=None):
            values, known = operand(w, rows)
            return ~np.asarray(values, bool), known
        return negation
    if isinstance(node, Aggregate):
        return _compile_aggregate(node, types)
    left, right = compile_scan(node.left, types), compile_scan(node.right, types)
    op = node.op
    if op in ("and", "or"):
        decisive = op == "or"

        def logical(w, rows=None):
            (a, ak), (b, bk) = left(w, rows), right(w, rows)
            a, b = np.asarray(a, bool), np.asarray(b, bool)
            decided = (ak & (a == decisive)) | (bk & (b == decisive))
            return decided == decisive if decisive else ~decided, decided | (ak & bk)
        return logical
    if op in ("+", "-", "*", "/", "%"):
        ints = kind == "int"

        def arithmetic(w, rows=None):
            (a, ak), (b, bk) = left(w, rows), right(w, rows)
            a, b = np.asarray(a), np.asarray(b)
            known = ak & bk
            with np.errstate(all="ignore"):
                if op == "/":
                    return a.astype(float) / b.astype(float), known
                if op == "%":  # integers: Java's remainder (the dividend's sign); by zero, null
                    _check_int(a, known)
                    _check_int(b, known)
                    zero = b == 0
                    return np.fmod(a, np.where(zero, 1, b)), known & ~zero
                result = {"+": np.add, "-": np.subtract, "*": np.multiply}[op](a, b)
                if ints:
                    twin = {"+": np.add, "-": np.subtract, "*": np.multiply}[op](a.astype(float), b.astype(float))
                    return _checked(twin, result, known), known
            return result, known
        return arithmetic
    mixed = {_type_of(node.left, types), _type_of(node.right, types)} == {"int", "float"}
    compare = {"=": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal, ">": np.greater,
               ">=": np.greater_equal}[op]

    def comparison(w, rows=None):
        (a, ak), (b, bk) = left(w, rows), right(w, rows)
        a, b = np.asarray(a), np.asarray(b)
        known = ak & bk
        if mixed:  # Python compares an int with a float exactly; numpy rounds the int first
            for side in (a, b):
                if side.dtype.kind == "i" and np.any(known & (np.abs(side) > _EXACT_INT)):
                    raise _NotExact
        with np.errstate(invalid="ignore"):
            return compare(a, b), known
    return comparison


def _compile_aggregate(node: Aggregate, types: dict):
    function = node.function
    if node.argument is None:
        return lambda w, rows=None: (w.hi - w.lo + 1, True)
    argument = compile_scan(node.argument, types)
    ints = _type_of(node.argument, types) == "int"

    def aggregate(w, rows=None):
        index, inside = w.run()
        values, known = argument(w, index)
        values = np.broadcast_to(np.asarray(values), index.shape)
        taken = inside & np.broadcast_to(known, index.shape)
        count = taken.sum(axis=1)
        if function == "count":
            return count, True
        if function in ("sum", "avg"):
            if ints:
                _check_int(values, taken)
                total = np.where(taken, values, 0).sum(axis=1)
                _checked(np.where(taken, values, 0).astype(float).sum(axis=1), total, count > 0)
                if function == "avg":
                    if np.any(np.abs(total) > _EXACT_INT):
                        raise _NotExact
                    with np.errstate(all="ignore"):
                        return total.astype(float) / count, count > 0
                return total, count > 0
            # left to right, as the rule adds: a cumulative sum is sequential (numpy's sum is pairwise)
            terms = np.where(taken, values, 0.0)
            terms[:, 0] += 0.0  # the rule's sum starts from the integer 0, and 0 + -0.0 is 0.0
            with np.errstate(all="ignore"):
                total = np.cumsum(terms, axis=1)[:, -1]
                return (total if function == "sum" else total / count), count > 0
        best = np.zeros(index.shape[0], values.dtype)
        have = np.zeros(index.shape[0], bool)
        better = np.less if function == "min" else np.greater
        with np.errstate(invalid="ignore"):
            for k in range(index.shape[1]):
                column = values[:, k]
                take = taken[:, k] & (~have | better(column, best))
                best = np.where(take, column, best)
                have |= taken[:, k]
        return best, have
    return aggregate


# --------------------------------------------------------------------------- the scan


class _Chunk:
    """A chunk's columns as numpy: `values` and `known` per property read, `time`."""

    def __init__(self, table, names, types):
        self.time = table.column("time").to_numpy()
        self.values, self.known = {}, {}
        for name in names:
            column = table.column(name)
            known = ~np.asarray(column.is_null().to_numpy(zero_copy_only=False), bool)
            fill = {"float": 0.0, "int": 0, "bool": False}[types[name]]
            self.values[name] = np.asarray(column.fill_null(fill).to_numpy(zero_copy_only=False),
                                           {"float": float, "int": np.int64, "bool": bool}[types[name]])
            self.known[name] = known


def _starts(table, partition) -> np.ndarray:
    """The first row of each sub-window of a table sorted by sub-window."""
    import pyarrow.compute as pc

    n = table.num_rows
    new = np.zeros(n, bool)
    if n:
        new[0] = True
    for name in partition:
        column = table.column(name)
        before, after = column.slice(0, n - 1), column.slice(1)
        same = pc.or_(pc.fill_null(pc.equal(before, after), False),
                      pc.and_(pc.is_null(before), pc.is_null(after)))
        new[1:] |= ~np.asarray(same.to_numpy(zero_copy_only=False), bool)
    return np.flatnonzero(new)


def scan_expiry(table, expiry, names, types, partition):
    """The expiries of every sub-window of `table` (event rows only, sorted by
    sub-window and seq), as arrays: the expired row, the arrival's row, its
    number in that arrival's loop."""
    chunk = _Chunk(table, names, types)
    holds = compile_scan(expiry, types)
    starts = _starts(table, partition)
    lengths = np.diff(np.append(starts, table.num_rows))
    lo = starts.copy()
    gone, by, number = [], [], []
    for t in range(int(lengths.max()) if lengths.size else 0):
        act = np.flatnonzero(lengths > t)
        hi = starts[act] + t
        oldest = lo[act]
        expired = np.zeros(act.size, np.int64)
        cand = np.arange(act.size)
        while cand.size:
            values, known = holds(_Where(chunk, oldest[cand], hi[cand], expired[cand]))
            kept = np.broadcast_to(np.asarray(known, bool) & np.asarray(values, bool), cand.shape)
            out = cand[~kept]
            gone.append(oldest[out])
            by.append(hi[out])
            number.append(expired[out])
            oldest[out] += 1
            expired[out] += 1
            cand = out[oldest[out] <= hi[out]]
        lo[act] = oldest
    empty = np.zeros(0, np.int64)
    return (np.concatenate(gone) if gone else empty, np.concatenate(by) if by else empty,
            np.concatenate(number) if number else empty)


def _with_variables(table, starts) -> np.ndarray:
    """Per sub-window of `table`, whether it holds a `set` item or a start row
    declaring a variable (a name may then be a variable: the kernel's case)."""
    import pyarrow.compute as pc

    kinds, texts = table.column("kind"), table.column("vars")
    declared = pc.and_(pc.equal(kinds, clock.START), pc.and_(pc.is_valid(texts), pc.not_equal(texts, "{}")))
    rows = pc.fill_null(pc.or_(pc.equal(kinds, "set"), declared), False)
    rows = np.asarray(rows.to_numpy(zero_copy_only=False), bool)
    return np.logical_or.reduceat(rows, starts) if starts.size else np.zeros(0, bool)


def scan_kernel(spec, partition: tuple[str, ...], names: tuple[str, ...], types: dict, sequential, schema,
                carried: tuple[str, ...] = (), constants: dict | None = None):
    """The `mapInArrow` function over partitions sorted by sub-window and seq:
    chunks of whole sub-windows scanned (`scan_expiry`), or run one sub-window at
    a time by `sequential` (the per-sub-window kernel) where the scan does not
    apply (a sub-window with variables, `_with_variables`; a chunk with a value
    where numpy could part from the rule, `_NotExact`). Its rows are that
    kernel's, each with the `carried` properties of its event (null on a post
    of no event). `constants`: columns left out of the rows in and out, each
    one value on every row, as name -> (value, Arrow type): `kind` given
    (every row an event) means no variables, and `sequential` gets them all."""
    constants = dict(constants or {})
    keys = tuple(c for c in partition if c not in constants)  # the sub-window's columns that come in

    def filled(table):
        """`table` with the constant columns, as `sequential` reads them."""
        import pyarrow as pa

        for name, (value, kind) in constants.items():
            table = table.append_column(pa.field(name, kind), pa.array([value] * table.num_rows, kind))
        return table

    def with_carried(posted, table):
        """The sequential kernel's rows of one sub-window, its events' `carried` properties added."""
        import pyarrow as pa

        posted = posted.drop_columns([c for c in constants if c in posted.column_names])
        if not carried:
            return posted.cast(schema)
        row_of = {key: n for n, key in enumerate(table.column("id").to_pylist()) if key is not None}
        at = pa.array([row_of.get(key) for key in posted.column("id").to_pylist()], pa.int64())
        return pa.Table.from_arrays([*posted.columns, *(table.column(p).take(at) for p in carried)],
                                    names=schema.names).cast(schema)

    def posts(table):
        import pyarrow as pa
        import pyarrow.compute as pc

        starts = _starts(table, keys)
        lengths = np.diff(np.append(starts, table.num_rows))
        # a long sub-window among few: the scan's steps (one numpy round each) would outnumber the rows
        sequential_ones = lengths > max(LONG_RUN, table.num_rows // 16)
        if "kind" in constants:  # every row an event, and no variable anywhere
            rows = table.filter(pa.array(np.repeat(~sequential_ones, lengths)))
        else:
            sequential_ones |= _with_variables(table, starts)
            scanned = np.repeat(~sequential_ones, lengths) & np.asarray(
                pc.equal(table.column("kind"), "event").to_numpy(zero_copy_only=False), bool)
            rows = table.filter(pa.array(scanned))
        try:
            gone, by, number = scan_expiry(rows, spec.expiry, names, types, keys)
        except _NotExact:
            sequential_ones[:] = True
        else:
            n = rows.num_rows
            at = np.concatenate([np.arange(n), gone])  # the row read for keys, slot and id
            arrival = np.concatenate([np.arange(n), by])
            seq, time = rows.column("seq").to_numpy(), rows.column("time").to_numpy()
            side = pa.array(["insert"] * n + ["remove"] * gone.size, pa.string())
            taken = pa.array(at)
            yield pa.Table.from_arrays(
                [*(rows.column(c).take(taken) for c in (*keys, "slot") if c not in constants),
                 pa.array(seq[arrival]), pa.array(time[arrival]), side,
                 pa.array(np.concatenate([seq, number])), rows.column("id").take(taken),
                 *(rows.column(p).take(taken) for p in carried)],
                schema=schema)
        for group in np.flatnonzero(sequential_ones):
            one = table.slice(starts[group], lengths[group])
            yield with_carried(sequential(filled(one)), one)

    def kernel(batches):
        for table in whole_runs(batches, lambda table: _starts(table, keys)[-1], CHUNK_ROWS):
            for out in posts(table):
                yield from out.to_batches()

    return kernel
