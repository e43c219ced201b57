"""`difftest replay`: run conformance case files on engines and compare each with its
expected updates (CORPUS.md: `difftest replay PATH...` must accept any case file).

Each case ends in one status:

* `PASS`: every engine's updates equal the expectation (`difftest.compare`);
* `FAIL`: some engine's updates differ; the report shows the first difference;
* `ERROR`: the case cannot be run: the file cannot be read or is not a case (bad
  JSON, a missing key, an unknown dialect), the window does not parse or is not
  supported, the trace is invalid, or an engine failed on it (an exception that
  is not a user-input error is reported with its type: a bug to report). The
  other cases still run.

Cases are loaded and parsed first, then each engine runs all of them in one call,
so the Spark engine starts one job for the whole replay.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from attrs import field, frozen

from difftest.compare import Difference, compare, counted
from difftest.engines import Engine
from oracle.cases import Case, case_files, load_case
from oracle.dialects import case_spec
from oracle.errors import WindowOracleError
from oracle.model import WindowSpec

PASS, FAIL, ERROR = "PASS", "FAIL", "ERROR"
_RANK = {PASS: 0, FAIL: 1, ERROR: 2}


@frozen
class Verdict:
    """One engine's result on one case."""

    engine: str
    status: str
    difference: Difference | None = None
    error: str | None = None
    actual: tuple | None = field(default=None, eq=False, repr=False)  # the engine's updates (a picture's)


@frozen
class CaseResult:
    """One case file's result. `error` is set when the case could not be run by any
    engine (it could not be loaded or its window not parsed); `verdicts` then is empty."""

    path: Path
    name: str | None
    window: str | None
    verdicts: tuple[Verdict, ...] = ()
    error: str | None = None

    @property
    def status(self) -> str:
        if self.error is not None:
            return ERROR
        return max((v.status for v in self.verdicts), key=_RANK.__getitem__, default=PASS)

    def first_problem(self) -> Verdict | None:
        """The first verdict with the case's own status, when that status is not PASS."""
        return next((v for v in self.verdicts if v.status == self.status != PASS), None)


def _reason(exc: WindowOracleError, path: Path) -> str:
    """The error's message without the file name `oracle.cases.load_case` puts first
    (the ERROR line names the file already)."""
    text = str(exc)
    prefix = f"{path}: "
    return text[len(prefix):] if text.startswith(prefix) else text


def _prepare(path: Path) -> tuple[Case, WindowSpec] | CaseResult:
    case = None
    try:
        case = load_case(path)
        return case, case_spec(case)
    except WindowOracleError as exc:
        name, window = (case.name, case.window) if case else (None, None)
        return CaseResult(path, name, window, error=_reason(exc, path))
    except Exception as exc:  # a parser bug must not stop the other cases
        name, window = (case.name, case.window) if case else (None, None)
        return CaseResult(path, name, window, error=f"internal error reading the case ({type(exc).__name__}: {exc})")


def _verdict(engine: str, case: Case, outcome) -> Verdict:
    if isinstance(outcome, Exception):
        return Verdict(engine, ERROR, error=str(outcome) or type(outcome).__name__)
    difference = compare(case.expected, outcome)
    return Verdict(engine, PASS if difference is None else FAIL, difference=difference, actual=tuple(outcome))


def replay(paths: Sequence[str | Path], engines: Sequence[Engine]) -> list[CaseResult]:
    """The result of every case file under `paths` (files, or folders searched
    recursively), in file order."""
    prepared = [_prepare(path) for path in case_files(list(paths))]
    pairs = [(spec, case.trace) for case, spec in (p for p in prepared if not isinstance(p, CaseResult))]
    per_case = zip(*(engine.run(pairs) for engine in engines))  # one tuple of outcomes per runnable case
    results = []
    for item in prepared:
        if isinstance(item, CaseResult):
            results.append(item)
            continue
        case = item[0]
        verdicts = tuple(_verdict(engine.name, case, outcome) for engine, outcome in zip(engines, next(per_case)))
        results.append(CaseResult(case.path, case.name, case.window, verdicts))
    return results


# --------------------------------------------------------------------------- summaries


@frozen
class Totals:
    passed: int
    failed: int
    errors: int

    @classmethod
    def of(cls, results: Sequence[CaseResult]) -> Totals:
        statuses = [r.status for r in results]
        return cls(statuses.count(PASS), statuses.count(FAIL), statuses.count(ERROR))

    def exit_code(self) -> int:
        """0 when every case passed, 1 when some failed, 2 when some could not be run."""
        return 2 if self.errors else 1 if self.failed else 0

    def line(self) -> str:
        text = f"{self.passed} passed, {self.failed} failed"
        return text + f", {counted(self.errors, 'error')}" if self.errors else text


def text_lines(results: Sequence[CaseResult], engine_names: Sequence[str]) -> list[tuple[str, str | None]]:
    """The replay's text report as (line, style) pairs: one line per case starting with
    its status and its path (`ERROR path: reason` for a case that cannot be run), the
    first difference under each failure, then the totals. With several engines, the
    lines under a case that did not pass name each engine."""
    several = len(engine_names) > 1
    out: list[tuple[str, str | None]] = []
    for result in results:
        out += _case_lines(result, several)
    out.append((Totals.of(results).line(), "bold"))
    return out


STYLES = {PASS: "green", FAIL: "red", ERROR: "yellow"}


def _case_lines(result: CaseResult, several: bool) -> list[tuple[str, str | None]]:
    status, style = result.status, STYLES[result.status]
    if result.error is not None:
        return [(f"{ERROR} {result.path}: {result.error}", style)]
    if status == PASS:
        return [(f"{PASS} {result.path}", style)]
    rest = result.verdicts
    if status == ERROR:
        problem = result.first_problem()
        label = f"{problem.engine}: " if several else ""
        out = [(f"{ERROR} {result.path}: {label}{problem.error}", style)]
        rest = tuple(v for v in rest if v is not problem) if several else ()
    else:
        out = [(f"{status} {result.path}", style)]
    for verdict in rest:
        out += _verdict_lines(verdict, several)
    return out


def _verdict_lines(verdict: Verdict, several: bool) -> list[tuple[str, str | None]]:
    label = f"{verdict.engine}: " if several else ""
    if verdict.status == PASS:
        return [(f"  {label}{PASS}", STYLES[PASS])]
    if verdict.status == ERROR:
        return [(f"  {label}{ERROR} {verdict.error}", STYLES[ERROR])]
    lines = verdict.difference.lines()
    indent = "    " if several else "  "
    head = [(f"  {label}{lines[0][0]}", STYLES[FAIL])]
    return head + [(indent + text, "red" if differs else None) for text, differs in lines[1:]]


def draw_failures(results: Sequence[CaseResult], directory: Path | None) -> dict[Path, Path]:
    """A picture (expected above each failing engine's output) of each failed
    case: in `directory`, or (None) beside the case when it is a saved finding
    (in a folder named `found`). Case path -> picture path, for those drawn."""
    from difftest.show import picture_file

    drawn = {}
    for result in results:
        if result.status != FAIL or (directory is None and result.path.parent.name != "found"):
            continue
        actual = [(v.engine, v.actual) for v in result.verdicts if v.status == FAIL and v.actual is not None]
        picture = picture_file(result.path, actual, directory)
        if picture is not None:
            drawn[result.path] = picture
    return drawn


def report_json(results: Sequence[CaseResult], engine: str) -> dict[str, Any]:
    """The replay as JSON: per case its path, name, window, status, and the engine
    and first difference or error behind a status that is not PASS (with several
    engines, `engines` gives each one's status); then the totals."""
    cases = []
    for result in results:
        problem = result.first_problem()
        entry: dict[str, Any] = {
            "path": str(result.path),
            "name": result.name,
            "window": result.window,
            "status": result.status,
            "engine": problem.engine if problem else engine,
            "difference": problem.difference.to_json() if problem and problem.difference else None,
            "error": result.error if result.error is not None else (problem.error if problem else None),
        }
        if len(result.verdicts) > 1:
            entry["engines"] = {v.engine: v.status for v in result.verdicts}
        cases.append(entry)
    totals = Totals.of(results)
    return {
        "engine": engine,
        "cases": cases,
        "totals": {"cases": len(results), "passed": totals.passed, "failed": totals.failed, "errors": totals.errors},
    }


__all__ = ["CaseResult", "Totals", "Verdict", "replay", "report_json", "text_lines", "PASS", "FAIL", "ERROR"]
