"""Every conformance case in corpus/ replays through the oracle; corpus/esper/observed/
holds the cases observed on a real Esper engine (windows, and statements over them:
`query_*`, `query2_*`; null window properties: `nulls_*`), copied from the shared folder ../shared/esper-observed. Where that
folder is beside the checkout, its cases must equal the copies (nothing drifts)."""

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


def test_the_observed_cases_are_in_the_corpus():
    """A clone holds the observed cases it is checked against (corpus/esper/observed),
    the 124 statement cases and the 50 null-property cases among them."""
    copies = {p.name for p in OBSERVED_COPY.glob("*.json")}
    assert len(copies) >= 200
    assert sum(name.startswith("query_") for name in copies) >= 62
    assert sum(name.startswith("query2_") for name in copies) >= 62
    assert sum(name.startswith("nulls_") for name in copies) >= 50
    if OBSERVED:
        assert {p.name for p in OBSERVED} == copies
        for name in copies:
            assert json.loads((OBSERVED_DIR / name).read_text()) == json.loads((OBSERVED_COPY / name).read_text()), name


def test_findings_of_a_run_are_not_corpus_cases(tmp_path):
    """`difftest run` saves to corpus/found/ (git ignores it): the tests read the corpus's own cases only."""
    for rel in ("esper/a.json", "found/esper-x.json", "kuiper/found/b.json"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}")
    assert [p.relative_to(tmp_path).as_posix() for p in corpus_files(tmp_path)] == ["esper/a.json", "kuiper/found/b.json"]
    assert "corpus/found/" in (ROOT / ".gitignore").read_text().splitlines()
