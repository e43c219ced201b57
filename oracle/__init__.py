"""window-oracle: the executable specification of streaming window semantics.

    >>> from oracle import parse, run
    >>> from oracle.model import Arrive, Event, Trace
    >>> spec = parse("#length(2)")
    >>> trace = Trace([Arrive(Event(f"E{i}")) for i in range(1, 4)])
    >>> [([e.id for e in u.insert], [e.id for e in u.remove]) for u in run(spec, trace)]
    [(['E1'], []), (['E2'], []), (['E3'], ['E1'])]
"""

from oracle.dialects import parse, render
from oracle.run import run

__all__ = ["parse", "render", "run"]
