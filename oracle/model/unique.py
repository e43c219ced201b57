"""Keyed data windows: `Unique` (`#unique`), `FirstUnique` (`#firstunique`);
their rules: `oracle.windows.unique`."""

from __future__ import annotations

from typing import ClassVar

from attrs import field, frozen

from oracle.model.base import Spec, _property_names, _role


@frozen
class Unique(Spec):
    KIND: ClassVar[str] = "unique"
    keys: tuple[str, ...] = field(converter=tuple, validator=_property_names, metadata=_role("key"))


@frozen
class FirstUnique(Spec):
    KIND: ClassVar[str] = "firstunique"
    keys: tuple[str, ...] = field(converter=tuple, validator=_property_names, metadata=_role("key"))
