"""window-oracle: the executable specification of streaming window semantics.

    >>> from oracle import parse, run
    >>> from oracle.model import Arrive, Event, Trace
    >>> spec = parse("#length(2)")
    >>> trace = Trace([Arrive(Event(f"E{i}")) for i in range(1, 4)])
    >>> [([e.id for e in u.insert], [e.id for e in u.remove]) for u in run(spec, trace)]
    [(['E1'], []), (['E2'], []), (['E3'], ['E1'])]

`run` (the driver and the windows) is imported on first use, so a program that
needs only the model, the parsers or the case format (`spark_impl`) never loads
the oracle's windows.
"""

from oracle.dialects import parse, render

__all__ = ["parse", "render", "run"]


def __getattr__(name: str):
    if name == "run":
        from oracle.driver import run

        return run
    raise AttributeError(f"module 'oracle' has no attribute {name!r}")
