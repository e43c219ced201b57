"""Every conformance case in corpus/ replays through spark_impl, all in one batched
`run_cases` call (one Spark job for the corpus)."""

from __future__ import annotations

from pathlib import Path

from difftest.compare import compare
from oracle import parse
from oracle.cases import case_files, load_case
from oracle.model import nested_specs
from test_completeness import PENDING  # tests/ is on sys.path (rootdir conftest, prepend import mode)

ROOT = Path(__file__).resolve().parents[2]


def test_every_corpus_case_replays_on_spark(spark):
    from spark_impl import run_cases, unsupported

    cases = [load_case(p) for p in case_files([ROOT / "corpus"])]
    assert len(cases) >= 100
    # a case of a kind whose Spark family is pending (tests/test_completeness.py) is not run;
    # any other case Spark does not build fails the test
    pending = {cls for cls, aspects in PENDING.items() if "spark" in aspects}
    specs = {c.path: parse(c.window, c.dialect) for c in cases}
    cases = [c for c in cases if not any(type(inner) in pending for inner in nested_specs(specs[c.path]))]
    not_built = [f"{c.path}: {reason}" for c in cases if (reason := unsupported(specs[c.path]))]
    assert not not_built, "\n".join(not_built)
    outcomes = run_cases([(parse(c.window, c.dialect), c.trace) for c in cases], spark)
    failures = []
    for case, outcome in zip(cases, outcomes):
        if isinstance(outcome, Exception):
            failures.append(f"{case.path}: {outcome}")
        elif (difference := compare(case.expected, outcome)) is not None:
            failures.append(f"{case.path}:\n{difference}")
    assert not failures, "\n".join(failures)
