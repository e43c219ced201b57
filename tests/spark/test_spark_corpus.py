"""Every conformance case in corpus/ replays through spark_impl, all in one batched
`run_cases` call (one Spark job for the corpus); a case Spark does not build yet
must be of a kind whose Spark family tests/test_completeness.py lists as pending
(its `PENDING` table)."""

from __future__ import annotations

from pathlib import Path

from difftest.compare import compare
from oracle.cases import corpus_files, load_case
from oracle.dialects import case_spec
from oracle.model import nested_specs
from test_completeness import PENDING  # tests/ is on sys.path (rootdir conftest, prepend import mode)

ROOT = Path(__file__).resolve().parents[2]


def test_every_corpus_case_replays_on_spark(spark):
    from spark_impl import run_cases, unsupported

    pending = {cls for cls, aspects in PENDING.items() if "spark" in aspects}
    cases = [(c, case_spec(c)) for c in (load_case(p) for p in corpus_files(ROOT / "corpus"))]
    assert len(cases) >= 100
    not_built = [f"{c.path}: {reason}" for c, spec in cases if (reason := unsupported(spec))
                 and not {type(inner) for inner in nested_specs(spec)} & pending]
    assert not not_built, "\n".join(not_built)
    cases = [(c, spec) for c, spec in cases if unsupported(spec) is None]
    outcomes = run_cases([(spec, c.trace) for c, spec in cases], spark)
    failures = case_failures(cases, outcomes)
    assert not failures, "\n".join(failures)


def case_failures(cases, outcomes) -> list[str]:
    """Each (case, spec) whose outcome is an error or differs from the case's
    `expected`, told with its path and the first difference."""
    found = []
    for (case, _), outcome in zip(cases, outcomes):
        if isinstance(outcome, Exception):
            found.append(f"{case.path}: {outcome}")
        elif (difference := compare(case.expected, outcome)) is not None:
            found.append(f"{case.path}:\n{difference}")
    return found
