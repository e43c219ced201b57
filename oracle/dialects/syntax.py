"""The one way every dialect turns lark's parse failure into a `WindowSyntaxError`:
the 1-based column, what was found there, and what the grammar expected, each
terminal in the dialect's own words."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from oracle.errors import WindowSyntaxError


def syntax_error(exc: UnexpectedInput, text: str, describe: Mapping[str, str], *, end: str = "the clause",
                 summarize: Callable[[set[str]], str] | None = None) -> WindowSyntaxError:
    """The error for `exc` in `text`. `describe` names terminals (`"LPAR": "'('"`);
    `summarize`, if given, writes the expected set itself (Esper folds the
    operators and the starts of a value into one phrase each); `end` is what
    the text is called when it ends too soon."""
    if isinstance(exc, UnexpectedCharacters):
        column, found, expected = exc.pos_in_stream + 1, f"unexpected character {text[exc.pos_in_stream]!r}", exc.allowed
    else:
        assert isinstance(exc, UnexpectedToken)
        token = exc.token
        if token.type == "$END":
            column, found = len(text) + 1, f"unexpected end of {end}"
        else:
            column, found = token.start_pos + 1, f"unexpected {str(token)!r}"
        expected = exc.expected
    expected = {name for name in expected if not name.startswith("__")}  # lark's anonymous terminals
    wanted = summarize(expected) if summarize else " or ".join(sorted({describe.get(n, n) for n in expected}))
    return WindowSyntaxError(f"{found}; expected {wanted or 'something else'}", text, column)
