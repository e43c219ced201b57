"""Retention policies: CCL's count and time retention policies whose rule no
other kind has (apama-ccl.md §2.3, §2.4, §2.6): `SlackLength`,
`JumpingLength`, `JumpingTime`. The policies that are an existing kind's rule
map to that kind: `KEEP n ROWS` is `Length`, `KEEP t` is `Time`, `KEEP ALL`
is `KeepAll`. Their rules: `oracle.windows.retention`."""

from __future__ import annotations

from typing import ClassVar, Union

from attrs import field, frozen

from oracle.errors import InvalidSpec
from oracle.model.base import Spec, _positive


@frozen
class SlackLength(Spec):
    """The last `size` rows, cleaned `slack` at a time: when an insert makes the
    window hold `size + slack` rows, the `slack` oldest leave. Slack 1 is
    `Length`'s rule, so `slack` is 2 or more here (one spec per rule)."""

    KIND: ClassVar[str] = "length_slack"
    size: int = field(validator=_positive)
    slack: int = field()

    @slack.validator
    def _check_slack(self, attribute, value):
        if isinstance(value, bool) or not isinstance(value, int) or value < 2:
            raise InvalidSpec(f"length_slack: slack must be a size of 2 or more (slack 1 is the length window), got {value!r}")


@frozen
class JumpingLength(Spec):
    """At most `size` rows: an insert that would make `size + 1` deletes the
    `size` held before it and stays, alone."""

    KIND: ClassVar[str] = "jumping_length"
    size: int = field(validator=_positive)


@frozen
class JumpingTime(Spec):
    """Rows held until the end of the `span`-long interval they arrived in;
    intervals are `[k * span, (k + 1) * span)` of the clock, every row held
    leaving together at an interval's end."""

    KIND: ClassVar[str] = "jumping_time"
    span: int = field(validator=_positive)


RetentionWindow = Union[SlackLength, JumpingLength, JumpingTime]
RETENTION_WINDOWS: tuple[type, ...] = RetentionWindow.__args__  # type: ignore[attr-defined]
