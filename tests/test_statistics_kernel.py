"""The derived windows' numpy sums (`spark_impl.windows.derived._segmented_sums`)
add as Java's `sum += v` does: from 0.0, one value at a time, left to right,
bit for bit (the oracle's `BaseStatisticsBean` sums), whatever the segments."""

from __future__ import annotations

import math
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

np = pytest.importorskip("numpy")
from spark_impl.windows.derived import _LONG_SEGMENT, _segmented_sums  # noqa: E402


def _bits(x: float) -> int:
    return struct.unpack(">q", struct.pack(">d", x))[0] if not math.isnan(x) else 0x7FF8000000000000


def _looped(values: list[float], starts: list[int]) -> list[float]:
    out = []
    bounds = [*starts, len(values)]
    for a, b in zip(bounds, bounds[1:]):
        total = 0.0
        for v in values[a:b]:
            total = total + v
            out.append(total)
    return out


_doubles = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 1e308, -1e308, 0.1]))


@settings(max_examples=200, deadline=None)
@given(st.lists(_doubles, min_size=1, max_size=300), st.data())
def test_segmented_sums_are_a_loop_of_additions_bit_for_bit(values, data):
    cuts = data.draw(st.sets(st.integers(1, len(values) - 1)) if len(values) > 1 else st.just(set()))
    # now and then one segment longer than the threshold, summed by its own cumsum
    starts = [0, *sorted(cuts)]
    got = _segmented_sums(np.array(values, dtype=float), np.array(starts, dtype=np.int64))
    assert [_bits(x) for x in got] == [_bits(x) for x in _looped(values, starts)]


def test_a_long_segment_and_short_ones_together():
    values = [0.1 * k if k % 5 else -0.0 for k in range(3 * _LONG_SEGMENT)] + [float("inf"), -float("inf"), 2.5]
    starts = [0, 2 * _LONG_SEGMENT + 3, 2 * _LONG_SEGMENT + 4, len(values) - 2]
    got = _segmented_sums(np.array(values), np.array(starts, dtype=np.int64))
    assert [_bits(x) for x in got] == [_bits(x) for x in _looped(values, starts)]
