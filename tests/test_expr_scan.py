"""`#expr`'s lock-step scan (`spark_impl.windows.expr_scan`) posts exactly what the
per-sub-window kernel (`expr._kernel`) posts, row for row, over drawn
sub-windows whose values include nulls, -0.0, NaN and the infinities, with the
partition cut into chunks at every size (no Spark: the Arrow functions alone)."""

import random

import pyarrow as pa
import pytest

import oracle
from spark_impl.frames import START_SEQ
from spark_impl.windows import expr, expr_scan

EXPIRIES = [
    "sum(price) < 30", "sum(price) < 30 and count(price) > 0", "avg(price) >= 2.5 or current_count < 2",
    "max(price) - min(price) <= 10", "not (oldest_event.price > newest_event.price)", "price > 5",
    "current_count * 2 + expired_count < 9", "oldest_timestamp + 2000 > newest_timestamp",
    "sum(qty) % 3 != 0", "sum(price) / count(*) < 4", "1 / sum(price) > 0", "flag or current_count < 3",
    "min(price) = min(price)", "max(qty) < 6 or avg(qty) < 2", "-sum(qty) > -12", "sum(price * 2) < 40",
]
PRICES = [1.5, -0.0, 0.0, float("nan"), float("inf"), float("-inf"), None, 3.0, 7.25, 1e300, -2.5, 0.1, 0.2]
PARTITION = ("trace_id", "symbol")
NAMES = ("price", "qty", "flag")
TYPES = {"price": "float", "qty": "int", "flag": "bool"}
SCHEMA = pa.schema([("trace_id", pa.string()), ("symbol", pa.string()), ("slot", pa.int64()), ("seq", pa.int64()),
                    ("kind", pa.string()), ("time", pa.int64()), ("id", pa.string()), ("vars", pa.string()),
                    ("price", pa.float64()), ("qty", pa.int64()), ("flag", pa.bool_())])
OUT = pa.schema([("trace_id", pa.string()), ("symbol", pa.string()), ("slot", pa.int64()), ("seq", pa.int64()),
                 ("time", pa.int64()), ("side", pa.string()), ("pos", pa.int64()), ("id", pa.string())])


def _rows(rng: random.Random, variables: bool = False) -> list[tuple]:
    """Sub-windows sorted by (trace, symbol, seq), each led by its trace's start row."""
    rows = []
    for trace in ("t0", "t1", "t2"):
        clock, seq = 0, 0
        for symbol in (None, "A", "B", "C")[: rng.randint(1, 4)]:
            rows.append((trace, symbol, 0, START_SEQ, "start", 0, None, '{"x": 1}' if variables else None,
                         None, None, None))
            for _ in range(rng.randint(0, 30)):
                clock += rng.choice([0, 0, 400, 1000, 2500])
                rows.append((trace, symbol, 0, seq, "event", clock, f"{trace}-{seq}", None, rng.choice(PRICES),
                             rng.choice([None, 0, 1, 2, 5, -3, 7]), rng.choice([None, True, False])))
                seq += 1
    return rows


def _table(rows):
    return pa.Table.from_arrays([pa.array(list(c), f.type) for c, f in zip(zip(*rows), SCHEMA)], schema=SCHEMA)


def _posted(tables) -> list[tuple]:
    return sorted((tuple(r.values()) for t in tables for r in t.to_pylist()), key=repr)


def _sequential(spec, table) -> list[tuple]:
    kernel = expr._kernel(spec, PARTITION, NAMES)
    starts = list(expr_scan._starts(table, PARTITION)) + [table.num_rows]
    return _posted(kernel(table.slice(a, b - a)) for a, b in zip(starts, starts[1:]))


@pytest.mark.parametrize("expiry", EXPIRIES)
def test_the_scan_posts_what_the_kernel_posts(expiry, monkeypatch):
    spec = oracle.parse(f"#expr({expiry})")
    assert expr_scan.scannable(spec, TYPES, {"symbol": "string"})
    rng = random.Random(expiry)
    removed = 0
    for round_ in range(6):
        table = _table(_rows(rng))
        want = _sequential(spec, table)
        monkeypatch.setattr(expr_scan, "CHUNK_ROWS", [1, 7, 40, 10**6][round_ % 4])
        scan = expr_scan.scan_kernel(spec, PARTITION, NAMES, TYPES, expr._kernel(spec, PARTITION, NAMES), OUT)
        got = _posted([pa.Table.from_batches(list(scan(iter(table.to_batches(max_chunksize=5)))), schema=OUT)])
        assert got == want, (expiry, round_)
        removed += sum(row[5] == "remove" for row in got)
    assert removed > 0  # the expiry loop ran, not only the inserts


def test_sub_windows_with_variables_run_the_kernel_beside_the_scanned_ones():
    spec = oracle.parse("#expr(sum(price) < 30)")
    declaring = [("t9", *row[1:]) for row in _rows(random.Random(4), variables=True) if row[0] == "t1"]
    rows = _rows(random.Random(3)) + declaring
    table = _table(sorted(rows, key=lambda r: (r[0], r[1] or "", r[3])))
    with_variables = expr_scan._with_variables(table, expr_scan._starts(table, PARTITION))
    assert with_variables.any() and not with_variables.all()
    scan = expr_scan.scan_kernel(spec, PARTITION, NAMES, TYPES, expr._kernel(spec, PARTITION, NAMES), OUT)
    got = _posted([pa.Table.from_batches(list(scan(iter(table.to_batches()))), schema=OUT)])
    assert got == _sequential(spec, table)


@pytest.mark.parametrize(("expiry", "types", "keys"), [
    ("symbol = 'A'", {"symbol": None}, {}),  # a string
    ("count(distinct price) < 3", TYPES, {}),
    ("sum(price) < 3", TYPES, {"level": "double"}),  # a double sub-window key
    ("sum(price) % 2 = 0", TYPES, {}),  # a double remainder
    ("current_count + flag < 3", TYPES, {}),  # a boolean in arithmetic fails the evaluation
    ("price", TYPES, {}),  # a double, not a boolean
    ("current_count < 9223372036854775807", TYPES, {}),  # an integer past 2**62
])
def test_what_the_scan_leaves_to_the_kernel(expiry, types, keys):
    assert not expr_scan.scannable(oracle.parse(f"#expr({expiry})"), types, keys)


def test_each_post_carries_its_events_properties():
    """With `carried`, a post holds its event's properties (the expired one's on a
    removal), in the scanned sub-windows and in those the kernel runs."""
    spec = oracle.parse("#expr(sum(price) < 30)")
    declaring = [("t9", *row[1:]) for row in _rows(random.Random(6), variables=True) if row[0] == "t1"]
    table = _table(sorted(_rows(random.Random(5)) + declaring, key=lambda r: (r[0], r[1] or "", r[3])))
    out = pa.schema([*OUT, SCHEMA.field("price"), SCHEMA.field("flag")])
    scan = expr_scan.scan_kernel(spec, PARTITION, NAMES, TYPES, expr._kernel(spec, PARTITION, NAMES), out,
                                 ("price", "flag"))
    got = pa.Table.from_batches(list(scan(iter(table.to_batches(max_chunksize=9)))), schema=out).to_pylist()
    by_id = {(row["trace_id"], row["id"]): row for row in table.to_pylist() if row["id"] is not None}
    assert _posted([pa.Table.from_pylist(got, out).select(OUT.names)]) == _sequential(spec, table)
    assert {r["trace_id"] for r in got} >= {"t0", "t9"}
    for row in got:
        event = by_id[row["trace_id"], row["id"]]
        assert repr((row["price"], row["flag"])) == repr((event["price"], event["flag"]))


def test_a_long_sub_window_among_few_runs_the_kernel(monkeypatch):
    """The scan steps all sub-windows together: one much longer than the chunk's
    others (an ungrouped window over one long trace) goes to the kernel, the
    short ones to the scan, and the posts are the kernel's."""
    spec = oracle.parse("#expr(sum(price) < 30)")
    monkeypatch.setattr(expr_scan, "LONG_RUN", 20)
    rng = random.Random(8)
    rows = [("t0", None, 0, START_SEQ, "start", 0, None, None, None, None, None)]
    rows += [("t0", None, 0, n, "event", 10 * n, f"e{n}", None, rng.choice(PRICES), 1, True) for n in range(400)]
    rows += [r for r in _rows(rng) if r[0] != "t0"]
    table = _table(rows)
    kernel = expr._kernel(spec, PARTITION, NAMES)
    ran = []
    scan = expr_scan.scan_kernel(spec, PARTITION, NAMES, TYPES, lambda t: ran.append(t.num_rows) or kernel(t), OUT)
    got = _posted([pa.Table.from_batches(list(scan(iter(table.to_batches()))), schema=OUT)])
    assert got == _sequential(spec, table)
    assert ran == [401]  # t0 alone (its start row and 400 events)


def test_columns_of_one_value_stay_out_and_the_posts_are_the_kernels(monkeypatch):
    """An event table's rows (every row an event of trace "0", no variable,
    slot 0) come in without `trace_id`, `kind`, `vars` and `slot`: the scan,
    and the kernel where it runs (a long sub-window), post what the kernel
    posts over the whole rows, less those columns."""
    spec = oracle.parse("#expr(sum(price) < 30)")
    monkeypatch.setattr(expr_scan, "LONG_RUN", 100)
    rng = random.Random(11)
    symbols = ["A"] * 300 + [rng.choice([None, "B", "C", "D"]) for _ in range(200)]
    rows = [("0", symbol, 0, seq, "event", 10 * seq, f"e{seq}", None, rng.choice(PRICES),
             rng.choice([None, 1, 5]), rng.choice([True, False])) for seq, symbol in enumerate(symbols)]
    table = _table(sorted(rows, key=lambda r: (r[1] or "", r[3])))
    constants = {"trace_id": ("0", pa.string()), "slot": (0, pa.int64()), "kind": ("event", pa.string()),
                 "vars": (None, pa.string())}
    out = pa.schema([f for f in OUT if f.name not in constants])
    ran = []
    kernel = expr._kernel(spec, PARTITION, NAMES)
    scan = expr_scan.scan_kernel(spec, PARTITION, NAMES, TYPES, lambda t: ran.append(t.num_rows) or kernel(t), out,
                                 constants=constants)
    got = pa.Table.from_batches(list(scan(iter(table.drop_columns(list(constants)).to_batches(max_chunksize=64)))),
                                schema=out)
    want = pa.Table.from_pylist([dict(zip(OUT.names, row)) for row in _sequential(spec, table)], OUT)
    assert _posted([got]) == _posted([want.select(out.names)])
    assert ran == [300]  # the long sub-window ran the kernel, its rows given the constant columns
    assert sum(side == "remove" for side in got.column("side").to_pylist()) > 100
