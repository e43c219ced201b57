"""What any dialect's text may hold before its grammar reads it: the limits shared
by the four parsers, each refusal a `WindowSyntaxError` naming the column.

* Digits are ASCII `0`-`9`: Python's `int()` reads `１２` (full-width) or `٣`
  as numbers, none of the engines does. Inside a quoted string any character
  is text.
* A number has at most `MAX_DIGITS` digits: every value the model holds fits a
  64-bit long or a double long before that (and Python refuses to convert an
  integer string of more than 4,300 digits).
* Brackets nest at most `MAX_NESTING` deep, and the text is at most
  `MAX_LENGTH` characters: the grammars build trees whose depth follows the
  nesting and the number of terms, and walk them recursively.
"""

from __future__ import annotations

from oracle.errors import WindowSyntaxError

MAX_DIGITS = 40
MAX_NESTING = 50
MAX_LENGTH = 4000
QUOTES = "'\"`"


def check_text(text: str) -> None:
    """Raise `WindowSyntaxError` at the first place `text` breaks a limit above."""
    if not isinstance(text, str):
        raise TypeError(f"a window clause is text, not {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise WindowSyntaxError(f"the clause is {len(text):,} characters long; at most {MAX_LENGTH:,} are read",
                                text[:80] + "...", 1)
    quote = None  # the quote character of the string being read
    depth, digits, escaped = 0, 0, False
    for column, char in enumerate(text, start=1):
        if quote is not None:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = None
            continue
        if char in QUOTES:
            quote, digits = char, 0
        elif char.isdigit() and not char.isascii():
            raise WindowSyntaxError(f"{char!r} is not an ASCII digit; numbers are written with 0-9", text, column)
        elif char.isascii() and char.isdigit():
            digits += 1
            if digits > MAX_DIGITS:
                raise WindowSyntaxError(f"a number of more than {MAX_DIGITS} digits", text, column - MAX_DIGITS)
            continue
        elif char in "([{":
            depth += 1
            if depth > MAX_NESTING:
                raise WindowSyntaxError(f"brackets nest more than {MAX_NESTING} deep", text, column)
        elif char in ")]}":
            depth = max(0, depth - 1)
        if char != ".":
            digits = 0
