"""Expression data windows: `Expr` (`#expr`), `ExprBatch` (`#expr_batch`),
whose expiry is an expression (`oracle.model.expressions`); their rules:
`oracle.windows.expr`."""

from __future__ import annotations

from typing import ClassVar

from attrs import field, frozen

from oracle.errors import InvalidSpec
from oracle.model.base import Spec, _role, reserved_name_error
from oracle.model.expressions import Expression, _expression, expression_names


def _expiry(inst, attribute, value):
    _expression(inst, attribute, value)
    for name in expression_names(value):
        if reserved_name_error(name):
            raise InvalidSpec(f"{type(inst).KIND}: {reserved_name_error(name)}")


@frozen
class Expr(Spec):
    """Events held while `expiry`, evaluated for the oldest, holds (Esper `#expr`)."""

    KIND: ClassVar[str] = "expr"
    expiry: Expression = field(validator=_expiry, metadata=_role("expression"))


@frozen
class ExprBatch(Spec):
    """Events buffered until `expiry`, evaluated for each arrival, holds; then
    released as a batch, with the triggering event or (not `include_trigger`)
    without it (Esper `#expr_batch`)."""

    KIND: ClassVar[str] = "expr_batch"
    expiry: Expression = field(validator=_expiry, metadata=_role("expression"))
    include_trigger: bool = True
