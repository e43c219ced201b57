"""Every conformance case in corpus/ replays through the oracle; corpus/esper/observed/
holds the window cases observed on a real Esper engine, copied from the shared
folder ../shared/esper-observed. Where that folder is beside the checkout, its
window cases must equal the copies (nothing drifts), and its statement cases
(`query_*`) are a declared gap: statements over windows are not built yet
(issue 26), marked strict xfail so they fail the day they pass and get copied."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from difftest.compare import compare
from oracle import run
from oracle.cases import case_files, corpus_files, load_case
from oracle.dialects import case_spec

ROOT = Path(__file__).resolve().parent.parent
CORPUS = corpus_files(ROOT / "corpus")
OBSERVED_DIR = ROOT.parent / "shared" / "esper-observed"
OBSERVED = case_files([OBSERVED_DIR]) if OBSERVED_DIR.is_dir() else []


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: str(p.relative_to(ROOT / "corpus")))
def test_corpus_case_replays_on_the_oracle(path):
    case = load_case(path)
    difference = compare(case.expected, run(case_spec(case), case.trace))
    assert difference is None, f"{path}:\n{difference}"


OBSERVED_COPY = ROOT / "corpus" / "esper" / "observed"
STATEMENTS_PENDING = "statements over windows (`select ... from E#...`) are not built yet: issue 26"


def test_the_observed_window_cases_are_in_the_corpus():
    """A clone holds the observed cases it is checked against (corpus/esper/observed)."""
    copies = {p.name for p in OBSERVED_COPY.glob("*.json")}
    assert len(copies) >= 138
    if OBSERVED:
        windows = {p.name for p in OBSERVED if not p.name.startswith("query_")}
        assert windows == copies
        for name in windows:
            assert json.loads((OBSERVED_DIR / name).read_text()) == json.loads((OBSERVED_COPY / name).read_text()), name


@pytest.mark.skipif(not OBSERVED, reason=f"{OBSERVED_DIR} is not beside this checkout (its window cases are in corpus/)")
@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.xfail(strict=True, reason=STATEMENTS_PENDING))
                                  for p in OBSERVED if p.name.startswith("query_")], ids=lambda p: p.name)
def test_observed_esper_statement_case_replays_on_the_oracle(path):
    case = load_case(path)
    difference = compare(case.expected, run(case_spec(case), case.trace))
    assert difference is None, f"{path}:\n{difference}"


def test_findings_of_a_run_are_not_corpus_cases(tmp_path):
    """`difftest run` saves to corpus/found/ (git ignores it): the tests read the corpus's own cases only."""
    for rel in ("esper/a.json", "found/esper-x.json", "kuiper/found/b.json"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}")
    assert [p.relative_to(tmp_path).as_posix() for p in corpus_files(tmp_path)] == ["esper/a.json", "kuiper/found/b.json"]
    assert "corpus/found/" in (ROOT / ".gitignore").read_text().splitlines()
