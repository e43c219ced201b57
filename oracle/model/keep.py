"""Data windows that keep events by position alone: `KeepAll` (`#keepall`),
`FirstEvent` (`#firstevent`), `LastEvent` (`#lastevent`); their rules:
`oracle.windows.keep`."""

from __future__ import annotations

from typing import ClassVar

from attrs import frozen

from oracle.model.base import Spec


@frozen
class KeepAll(Spec):
    KIND: ClassVar[str] = "keepall"


@frozen
class FirstEvent(Spec):
    KIND: ClassVar[str] = "firstevent"


@frozen
class LastEvent(Spec):
    KIND: ClassVar[str] = "lastevent"
