"""Count-based data windows: `Length` (`#length`), `LengthBatch`
(`#length_batch`), `FirstLength` (`#firstlength`); their rules:
`oracle.windows.length`."""

from __future__ import annotations

from typing import ClassVar

from attrs import field, frozen

from oracle.model.base import Spec, _positive


@frozen
class Length(Spec):
    KIND: ClassVar[str] = "length"
    size: int = field(validator=_positive)


@frozen
class LengthBatch(Spec):
    KIND: ClassVar[str] = "length_batch"
    size: int = field(validator=_positive)


@frozen
class FirstLength(Spec):
    KIND: ClassVar[str] = "firstlength"
    size: int = field(validator=_positive)
