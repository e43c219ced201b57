"""The README runs as written: its examples print what it shows (the convention:
tests/readme_blocks.py), its two commands are CI's, its links lead somewhere,
and it stays a guide (under 800 lines). The Spark examples:
tests/spark/test_spark_readme.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from readme_blocks import KNOWN, README, ROOT, blocks, check_output, run_examples

MAX_LINES = 800


def test_every_block_is_of_a_known_kind():
    unknown = [(b.line, " ".join(b.info)) for b in blocks() if b.info not in KNOWN]
    assert not unknown, f"README blocks with an info string tests/readme_blocks.py does not know: {unknown}"


def test_every_output_follows_an_example():
    """A `text` block is an example's output or a listing of its own; no example
    shows an output it could not be checked against."""
    for block in blocks():
        if block.info in {("python", "cluster"), ("sh", "not-run")}:
            assert block.expected is None, f"README.md:{block.line}: an example not run shows an output"


def test_python_examples_print_what_the_readme_shows():
    assert run_examples({("python",)}) >= 4


def _shell_blocks():
    return [b for b in blocks() if b.info == ("sh",)]


@pytest.mark.parametrize("block", _shell_blocks(), ids=lambda b: f"line{b.line}")
def test_shell_examples(block, tmp_path):
    (tmp_path / "corpus").symlink_to(ROOT / "corpus")
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    printed = ""
    for line in block.code.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        done = subprocess.run(line, shell=True, executable="/bin/bash", cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"README.md:{block.line}: {line}\n{done.stdout}\n{done.stderr}"
        printed += done.stdout
    if block.expected is not None:
        check_output(block, printed)
    else:
        # a command that writes a file (difftest show --out) wrote it
        for target in re.findall(r"--out (\S+)", block.code):
            assert (tmp_path / target).stat().st_size > 0, f"README.md:{block.line}: {target} not written"


def test_the_two_commands_are_cis():
    codes = [b.code.strip() for b in blocks() if b.info and b.info[0] == "sh"]
    assert "pip install -e . && difftest run" in codes
    assert "pip install -e '.[test]' && pytest -n 2 --dist worksteal" in codes
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^python -m pip install --quiet -e '\.\[test\]'$", ci, re.M)
    assert re.search(r"^pytest -n 2 --dist worksteal$", ci, re.M)


def test_links_and_pictures_exist():
    text = README.read_text()
    targets = {t for t in re.findall(r"\]\(([^)\s]+)\)", text) if not re.match(r"[a-z]+:", t)}
    missing = sorted(t for t in targets if not (ROOT / t.split("#")[0]).exists())
    assert not missing, f"README links to files that do not exist: {missing}"
    assert len(targets) > 20


def test_the_readme_stays_a_guide():
    assert len(README.read_text().splitlines()) < MAX_LINES
