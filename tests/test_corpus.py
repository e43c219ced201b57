"""Every conformance case in corpus/ replays through the oracle; so do the cases
observed on a real Esper engine (../shared/esper-observed), where that folder is
present, each window the oracle lacks named in its skip reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from difftest.compare import compare
from oracle import run
from oracle.cases import case_files, load_case
from oracle.dialects import case_spec
from oracle.errors import UnsupportedWindow

ROOT = Path(__file__).resolve().parent.parent
CORPUS = case_files([ROOT / "corpus"])
OBSERVED_DIR = ROOT.parent / "shared" / "esper-observed"
OBSERVED = case_files([OBSERVED_DIR]) if OBSERVED_DIR.is_dir() else []


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: str(p.relative_to(ROOT / "corpus")))
def test_corpus_case_replays_on_the_oracle(path):
    case = load_case(path)
    difference = compare(case.expected, run(case_spec(case), case.trace))
    assert difference is None, f"{path}:\n{difference}"


@pytest.mark.skipif(not OBSERVED, reason=f"{OBSERVED_DIR} is not beside this checkout")
@pytest.mark.parametrize("path", OBSERVED, ids=lambda p: p.name)
def test_observed_esper_case_replays_on_the_oracle(path):
    case = load_case(path)
    try:
        spec = case_spec(case)
        actual = run(spec, case.trace)
    except UnsupportedWindow as exc:
        pytest.skip(f"window {case.window} not built yet: {exc}")
    difference = compare(case.expected, actual)
    assert difference is None, f"{path}:\n{difference}"
