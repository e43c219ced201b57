"""Known differences between the oracle and an implementation under test: data, not code paths.

Each entry names the window kinds it covers, the reason, and a predicate that
recognises the difference on one case. A mismatch an entry recognises is counted
under that entry in every report (never skipped silently); any other mismatch
fails the run.

Today the list is empty: the Spark implementation agrees with the oracle on
every implemented window. An entry is added only with its reason and a corpus
case that shows it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from attrs import frozen

from oracle.model import Trace, Update, WindowSpec, spec_kind

Predicate = Callable[[WindowSpec, Trace, Sequence[Update], Sequence[Update]], bool]


@frozen
class KnownDifference:
    name: str
    kinds: tuple[str, ...]
    reason: str
    applies: Predicate

    def matches(self, spec: WindowSpec, trace: Trace, expected: Sequence[Update], actual: Sequence[Update]) -> bool:
        return spec_kind(spec) in self.kinds and self.applies(spec, trace, expected, actual)


KNOWN_DIFFERENCES: tuple[KnownDifference, ...] = ()


def known_difference(spec: WindowSpec, trace: Trace, expected: Sequence[Update], actual: Sequence[Update],
                     known: Sequence[KnownDifference] = KNOWN_DIFFERENCES) -> KnownDifference | None:
    """The entry that explains this mismatch, if any."""
    return next((k for k in known if k.matches(spec, trace, expected, actual)), None)
