"""The data windows together (one module per family beside this one):
`DataWindow`, `DATA_WINDOWS`, `BATCH_WINDOWS` (those that release batches),
and `NOT_MEMBERS`, those that cannot be members of an intersection or union."""

from __future__ import annotations

from typing import Union

from oracle.model.expr import Expr, ExprBatch
from oracle.model.keep import FirstEvent, KeepAll, LastEvent
from oracle.model.length import FirstLength, Length, LengthBatch
from oracle.model.sort import Rank, Sort
from oracle.model.time import ExtTimed, FirstTime, Time, TimeAccum
from oracle.model.time_batch import ExtTimedBatch, TimeBatch, TimeLengthBatch
from oracle.model.time_order import TimeOrder
from oracle.model.unique import FirstUnique, Unique


DataWindow = Union[
    Length, LengthBatch, Time, ExtTimed, TimeBatch, TimeLengthBatch, ExtTimedBatch, TimeAccum, TimeOrder, Sort, Rank, KeepAll,
    FirstLength, FirstTime, FirstEvent, LastEvent, Unique, FirstUnique, Expr, ExprBatch,
]
DATA_WINDOWS: tuple[type, ...] = DataWindow.__args__  # type: ignore[attr-defined]
BATCH_WINDOWS = (LengthBatch, TimeBatch, TimeLengthBatch, ExtTimedBatch, ExprBatch)
#: data windows that cannot be members of an intersection or union here (an
#: expression window re-evaluates when another member removes an event)
NOT_MEMBERS = (Expr, ExprBatch)
