"""The value rules, one table per engine (`Rules.values`): what null, the
arithmetic operators, comparisons and `and`/`or`/`not` give. Every evaluator
of the oracle applies its engine's table: the expression windows and Esper's
and CCL's statements `JAVA` (`oracle.windows.expr`), eKuiper's queries `GO`
(`oracle.windows.query`).

| rule | `JAVA` (Esper, CCL) | `GO` (eKuiper) |
|---|---|---|
| a null operand of `+ - * / %`, `-x` | null | null |
| a null operand of a comparison | null | false |
| `and` / `or` with a null side | three-valued: false and null is false, true or null true, else null | the left side may decide alone (false and, true or); else a null side makes it false |
| `not null` | null | null |
| int `op` int (`+ - * %`) | an int | an int |
| int `/` int | a float (Esper's default) | an int, truncated toward zero |
| `/` by zero | a float's infinity or NaN (Java) | the error `divided by zero` |
| `%` | the dividend's sign; an int `%` 0 is null (decided: Java throws) | the dividend's sign; `%` 0 the error |
| `=` / `!=` across kinds | numbers with numbers, strings with strings, booleans with booleans; else an error | the same; else `invalid operation T(v) = T(v)` |
| `< <= > >=` | numbers or strings | numbers or strings |
| a non-boolean in `and`/`or`/`not` | an error | `and`/`or` an error, `not` null |

An error is the engine's: `EventError` (Esper and CCL refuse such mixes when
they compile the statement; here at run time, naming the values) or
`QueryError` (eKuiper's message, Go's types and values).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping
from typing import Any, Callable

from oracle.windows.base import EventError

ARITHMETIC = ("+", "-", "*", "/", "%")


#: `+ - *`, alike in every table: an int of two ints, else a float
_RING = {"+": operator.add, "-": operator.sub, "*": operator.mul}


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class QueryError(Exception):
    """An error eKuiper's valuer returns; `str()` is its message."""


class Values:
    """One engine's value rules (module docstring): each operator's value for
    two (or one) already evaluated operands; `logical` takes the right side as
    a thunk, since a left side may decide alone."""

    name: str

    def arithmetic(self, op: str, left: Any, right: Any) -> Any:
        raise NotImplementedError

    def compare(self, op: str, left: Any, right: Any) -> Any:
        raise NotImplementedError

    def logical(self, op: str, left: Any, right: Callable[[], Any]) -> Any:
        raise NotImplementedError

    def negate(self, value: Any) -> Any:
        raise NotImplementedError

    def not_(self, value: Any) -> Any:
        raise NotImplementedError

    def binary(self, op: str, left: Any, right: Any) -> Any:
        """An arithmetic operator or a comparison of two values."""
        return self.arithmetic(op, left, right) if op in ARITHMETIC else self.compare(op, left, right)


class JavaValues(Values):
    """Java's rules as Esper applies them."""

    name = "java"

    def arithmetic(self, op: str, left: Any, right: Any) -> Any:
        if left is None or right is None:
            return None
        need_number(op, left)
        need_number(op, right)
        if op in _RING:
            return _RING[op](left, right)
        if op == "/":
            left, right = float(left), float(right)
            if right == 0.0:
                if left == 0.0 or math.isnan(left):
                    return math.nan
                return math.copysign(math.inf, left) * math.copysign(1.0, right)
            return left / right
        if isinstance(left, int) and isinstance(right, int):  # Java's remainder takes the dividend's sign
            if right == 0:
                return None
            remainder = abs(left) % abs(right)
            return remainder if left >= 0 else -remainder
        return math.fmod(float(left), float(right)) if right != 0 else math.nan

    def compare(self, op: str, left: Any, right: Any) -> Any:
        if left is None or right is None:
            return None
        comparable = (is_number(left) and is_number(right)) or (type(left) is str and type(right) is str)
        if op in ("=", "!="):
            if not comparable and not (type(left) is bool and type(right) is bool):
                raise EventError(f"the expression compares {left!r} with {right!r}, which cannot be compared")
            return (left == right) is (op == "=")
        if not comparable:
            raise EventError(f"the expression orders {left!r} and {right!r} ({op}), which cannot be ordered")
        return {"<": left < right, "<=": left <= right, ">": left > right, ">=": left >= right}[op]

    def logical(self, op: str, left: Any, right: Callable[[], Any]) -> Any:
        deciding = op == "or"  # the value of a side that decides: true for or, false for and
        unknown = False
        for side in (lambda: left, right):
            value = side()
            if value is None:
                unknown = True
            elif need_boolean(op, value) is deciding:
                return deciding
        return None if unknown else not deciding

    def negate(self, value: Any) -> Any:
        if value is None:
            return None
        need_number("-", value)
        return -value

    def not_(self, value: Any) -> Any:
        return None if value is None else not need_boolean("not", value)


def need_number(op: str, value: Any) -> None:
    if not is_number(value):
        raise EventError(f"the expression applies {op} to {value!r}, which is not a number")


def need_boolean(op: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise EventError(f"the expression applies {op} to {value!r}, which is not true or false")
    return value


class GoValues(Values):
    """eKuiper's valuer (xsql/valuer.go `SimpleDataEval`): Go's int64 and
    float64 as its JSON values hold them."""

    name = "go"

    def arithmetic(self, op: str, left: Any, right: Any) -> Any:
        if left is None or right is None:
            return None
        if not (is_number(left) and is_number(right)):
            raise invalid_operation(left, op, right)
        if op in _RING:
            return _RING[op](left, right)
        if right == 0:
            raise QueryError("divided by zero")
        if isinstance(left, int) and isinstance(right, int):
            quotient = abs(left) // abs(right) * (1 if (left >= 0) == (right >= 0) else -1)  # Go truncates toward 0
            return quotient if op == "/" else left - right * quotient
        return left / right if op == "/" else math.fmod(left, right)

    def compare(self, op: str, left: Any, right: Any) -> bool:
        if left is None or right is None:
            return False
        if isinstance(left, bool) or isinstance(right, bool):
            if not (isinstance(left, bool) and isinstance(right, bool) and op in ("=", "!=")):
                raise invalid_operation(left, op, right)
        elif not ((is_number(left) and is_number(right)) or (isinstance(left, str) and isinstance(right, str))):
            raise invalid_operation(left, op, right)
        return {"=": left == right, "!=": left != right, "<": left < right, "<=": left <= right,
                ">": left > right, ">=": left >= right}[op]

    def logical(self, op: str, left: Any, right: Callable[[], Any]) -> bool:
        if op == "and" and left is False:
            return False
        if op == "or" and left is True:
            return True
        value = right()
        if left is None or value is None:
            return False
        if not (isinstance(left, bool) and isinstance(value, bool)):
            raise invalid_operation(left, op, value)
        return (left and value) if op == "and" else (left or value)

    def negate(self, value: Any) -> Any:
        return -value if is_number(value) else None

    def not_(self, value: Any) -> Any:
        return (not value) if isinstance(value, bool) else None


def go_type(value: Any) -> str:
    """Go's `%T` of a value as eKuiper holds it."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "map[string]interface {}"
    return "[]interface {}"


def go_text(value: Any) -> str:
    """A value's text as Go's `fmt.Sprintf("%v")` writes it (eKuiper's values
    are Go values): null `<nil>`, booleans `true`/`false`, a float in the
    shortest form of 'g' (strconv: an exponent from 1e6 or below 1e-4: `1`
    for 1.0, `123456` but `1e+06`), a list `[a b]`, an object `map[k:v ...]`
    by sorted key."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "+Inf" if value > 0 else "-Inf"
        if value == 0:
            return "-0" if math.copysign(1.0, value) < 0 else "0"
        digits, exponent = _shortest(value)
        sign = "-" if value < 0 else ""
        point = exponent + 1  # digits before the decimal point
        if -4 <= exponent < 6:
            if point <= 0:
                return f"{sign}0.{'0' * -point}{digits}"
            if point >= len(digits):
                return f"{sign}{digits}{'0' * (point - len(digits))}"
            return f"{sign}{digits[:point]}.{digits[point:]}"
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'+' if exponent >= 0 else '-'}{abs(exponent):02d}"
    if isinstance(value, list):
        return "[" + " ".join(go_text(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "map[" + " ".join(f"{k}:{go_text(value[k])}" for k in sorted(value)) + "]"
    return str(value)


def _shortest(value: float) -> tuple[str, int]:
    """The shortest round-trip digits of |value| and its decimal exponent."""
    text = repr(abs(value))
    if "e" in text:
        mantissa, _, exp = text.partition("e")
        return mantissa.replace(".", "").rstrip("0") or "0", int(exp)
    whole, _, frac = text.partition(".")
    frac = frac.rstrip("0")
    if whole != "0":
        digits = (whole + frac).rstrip("0") or "0"
        return digits, len(whole) - 1
    stripped = frac.lstrip("0")
    return stripped.rstrip("0") or "0", -(len(frac) - len(stripped)) - 1


def invalid_operation(left: Any, op: str, right: Any) -> QueryError:
    return QueryError(f"invalid operation {go_type(left)}({go_text(left)}) {op.upper()} "
                      f"{go_type(right)}({go_text(right)})")


JAVA = JavaValues()
GO = GoValues()
#: the value tables, by `Rules.values`
VALUES: dict[str, Values] = {"java": JAVA, "go": GO}
