"""Sequential kernels compiled to machine code (numba), for the loops no set
operation gives: a window whose state is truly sequential per sub-window
(`windows.sort`'s `#rank` books) runs as one loop over a partition's rows,
sorted by sub-window and seq, at tens of millions of rows per second where
the interpreted loop ran a few hundred thousand.

`jit(function)` compiles on the first call (in each Python worker: numba is
imported there, not when `spark_impl` is), caching the machine code beside
the module (`cache=True`: a worker started later loads it in milliseconds).
The function is plain Python over numpy arrays and scalars, so it also runs
uncompiled (`function.py_func`) where a test wants to step through it.
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator


def jit(function: Callable) -> Callable:
    """`function` compiled by numba at its first call (nopython mode, no GIL)."""
    compiled: list[Callable] = []

    def call(*args):
        if not compiled:
            import numba

            compiled.append(numba.njit(cache=True, nogil=True)(function))
        return compiled[0](*args)

    call.py_func = function
    call.__name__, call.__doc__, call.__wrapped__ = function.__name__, function.__doc__, function
    return call


def whole_runs(batches: Iterable, last_start: Callable, rows: int) -> Iterator:
    """The Arrow batches of a partition (its rows sorted by sub-window) as
    tables of at least `rows` rows but the last, each ending where a
    sub-window ends: `last_start(table)` is the row where the table's last
    sub-window begins, which may go on in the next batch."""
    import pyarrow as pa

    pending, held = [], 0
    for batch in batches:
        pending.append(batch)
        held += batch.num_rows
        if held >= rows:
            table = pa.Table.from_batches(pending)
            cut = int(last_start(table))
            if cut:
                yield table.slice(0, cut)
                rest = table.slice(cut)
                pending, held = rest.to_batches(), rest.num_rows
    if held:
        yield pa.Table.from_batches(pending)
