"""`difftest show` and `difftest explain`: a case as a picture, and the
reason for every row the oracle posts.

* `difftest show CASE.json [--engine oracle|spark|both] [--out FILE.svg|.png]`:
  the case's timeline (`difftest.timeline`) with its `expected` (when the file
  has that key) above each engine's output; an output equal to the one above
  joins its panel. With `--out`, drawn by matplotlib (`difftest.draw`);
  without, printed: the updates in order with the clock items between them,
  each row with its sign and the oracle's reason, and the first difference.
* `difftest explain CASE.json`: the oracle's updates, each row with its
  reason (`oracle.explain`).
* `picture_files(...)`: what `difftest run` and `difftest replay` write
  beside a saved or failing case: its picture with expected and actual.

A file that cannot be read or is not a case is one line naming it (exit 2).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from difftest.timeline import Output, Picture, row_text, picture_of
from oracle.cases import Case, case_from_json
from oracle.dialects import case_spec
from oracle.errors import InvalidSpec, WindowOracleError
from oracle.explain import explain
from oracle.model import Update


class CaseError(WindowOracleError):
    """A case file that cannot be shown."""


def read_case(path: Path) -> tuple[Case, bool]:
    """The case at `path`, and whether it states an expectation (a case being
    written may have no `expected` yet)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    except json.JSONDecodeError as exc:
        raise CaseError(f"{path}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    has_expected = isinstance(raw, dict) and "expected" in raw
    if isinstance(raw, dict):
        raw.setdefault("expected", [])
    try:
        return case_from_json(raw, path), has_expected
    except WindowOracleError as exc:
        text = str(exc)
        raise CaseError(text if text.startswith(str(path)) else f"{path}: {text}") from None


def case_picture(case: Case, has_expected: bool, engine: str = "oracle",
                 actual: Sequence[tuple[str, Sequence[Update]]] = ()) -> Picture:
    """The picture of a case: its expectation (if stated), the oracle's output
    (with reasons) unless `engine` is spark, Spark's if it is spark or both,
    and any further `actual` outputs (name, updates)."""
    spec = case_spec(case)
    outputs = [Output("expected", tuple(case.expected))] if has_expected else []
    if engine in ("oracle", "both"):
        explained = tuple(explain(spec, case.trace))
        outputs.append(Output("oracle", tuple(e.update for e in explained), explained))
    if engine in ("spark", "both"):
        outputs.append(Output("spark", _spark(spec, case)))
    outputs += [Output(name, tuple(updates)) for name, updates in actual]
    if not outputs:
        raise CaseError("nothing to show: the case states no expectation and no engine ran")
    if not any(o.explained for o in outputs):  # reasons where an output is the oracle's
        try:
            explained = tuple(explain(spec, case.trace))
            outputs = [Output(o.name, o.updates, explained if _same(o.updates, explained) else None) for o in outputs]
        except WindowOracleError:
            pass
    subtitle = f"{case.dialect}: {case.name}" + (f" - {case.about}" if case.about else "")
    return picture_of(spec, case.trace, outputs, case.extra.get("query") or case.window, subtitle[:160])


def _same(updates, explained) -> bool:
    from difftest.compare import compare

    return compare(updates, [e.update for e in explained]) is None


def _spark(spec, case: Case) -> tuple[Update, ...]:
    from difftest.engines import SparkEngine, check_java

    check_java()
    (outcome,) = SparkEngine().run([(spec, case.trace)])
    if isinstance(outcome, Exception):
        raise CaseError(f"{case.path}: the spark engine could not run the case: {outcome}")
    return outcome


def picture_file(case_path: Path, actual: Sequence[tuple[str, Sequence[Update]]], directory: Path | None = None,
                 suffix: str = ".svg") -> Path | None:
    """Draw a saved case (expected and `actual`) beside it, or in `directory`;
    the file written, or None where it cannot be drawn (no matplotlib, a case
    the oracle cannot run): a picture never stops a run."""
    from difftest import draw

    target = (directory or case_path.parent) / (case_path.stem + suffix)
    try:
        case, has_expected = read_case(case_path)
        picture = case_picture(case, has_expected, "none", actual)
        target.parent.mkdir(parents=True, exist_ok=True)
        draw.render(picture, target)
    except (WindowOracleError, OSError):
        return None
    return target


# --------------------------------------------------------------------------- text


def picture_lines(picture: Picture) -> list[tuple[str, str | None]]:
    """The picture as lines (text, rich style): per panel, the clock items and
    updates in order, each row with its sign and reason."""
    lines: list[tuple[str, str | None]] = [(picture.title, "bold"), (picture.subtitle, "dim")]
    for panel in picture.panels:
        lines.append(("", None))
        heading = f"== {panel.title}"
        if panel.difference is not None:
            lines.append((f"{heading}: first difference, {panel.difference.headline()}", "bold red"))
        else:
            lines.append((heading, "bold"))
        lines += _panel_lines(picture, panel)
        if panel.difference is not None:
            lines += [("   " + text, "red" if differs else None) for text, differs in panel.difference.lines()]
    return lines


def _panel_lines(picture: Picture, panel) -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = []
    steps = list(panel.steps)
    diff = panel.highlight
    for tick in picture.ticks:
        if tick.kind != "event":
            out.append((f"   -- item {tick.index}: {tick.label}" + (f" (from {tick.before})" if tick.kind == "jump" else ""),
                        "yellow" if tick.kind == "jump" else "dim"))
        else:
            out.append((f"   item {tick.index}: {tick.label} arrives at {tick.time}", "dim"))
        while steps and steps[0].update.after == tick.index:
            step = steps.pop(0)
            style = "bold red" if step.number == diff else "bold"
            u = step.update
            out.append((f"   #{step.number} at {u.time}" + (f", pane [{u.window.start}, {u.window.end})" if u.window else ""),
                        style))
            out += [(f"       {line}", style if step.number == diff else None) for line in _step_rows(panel, step)]
    return out


def _step_rows(panel, step) -> list[str]:
    """An update's rows as `sign row   why: ...` lines (reasons where the panel is the oracle's)."""
    from oracle.explain import update_rows

    explained = panel.explained
    if explained is not None and step.number < len(explained):
        rows = [(r.side, r.row, r.because) for r in explained[step.number].rows]
    else:
        rows = [(side, row, None) for side, row in update_rows(step.update)]
    lines = []
    for side, row, why in rows:
        sign = {"insert": "+", "remove": "-", "update": "~", "error": "!"}[side.split(".")[-1]]
        lines.append(f"{sign} {row_text(side, row)}" + (f"   why: {why}" if why else ""))
    return lines


def explain_lines(case: Case) -> list[tuple[str, str | None]]:
    """Each update of the oracle's run of `case` with its rows' reasons."""
    spec = case_spec(case)
    lines: list[tuple[str, str | None]] = [(f"{case.extra.get('query') or case.window}   ({case.dialect}: {case.name})", "bold")]
    for number, explained in enumerate(explain(spec, case.trace)):
        u = explained.update
        pane = f", pane [{u.window.start}, {u.window.end})" if u.window is not None else ""
        lines.append((f"#{number} after item {u.after}, at {u.time}{pane}", "bold"))
        for row in explained.rows:
            sign = {"insert": "+", "remove": "-", "update": "~", "error": "!"}[row.side.split(".")[-1]]
            lines.append((f"  {sign} {row_text(row.side, row.row)}   why: {row.because}", None))
    return lines


def check_case(path: Path) -> tuple[Case, bool]:
    """`read_case`, with the case's spec checked, errors naming the file."""
    case, has_expected = read_case(path)
    try:
        case_spec(case)
    except (InvalidSpec, WindowOracleError) as exc:
        raise CaseError(f"{path}: {exc}") from None
    return case, has_expected


__all__ = ["CaseError", "case_picture", "check_case", "explain_lines", "picture_file", "picture_lines",
           "read_case"]
