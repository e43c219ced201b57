"""The README's fenced blocks, and how its examples are run (tests/test_readme.py,
tests/spark/test_spark_readme.py).

The convention, by a block's info string (the words after the opening fence):

* `python`: an example without Spark. The `python` blocks run in order in one
  namespace, as one reader's session (a block may use what an earlier one
  made); each prints exactly the `text` block right after it (blank lines
  between them only), or nothing where no `text` block follows.
* `python spark`: the same in the Spark lane, in one namespace with the
  `python` blocks before it, on the lane's session.
* `python cluster`: needs a cluster or a Spark Connect server; not run here
  (the cluster lane, tests/cluster/, runs the same calls).
* `sh`: shell commands, one a line, run from a scratch folder that sees the
  corpus; every line must succeed, and their stdout together is the `text`
  block after it, where there is one.
* `sh not-run`: installs, long runs, a cluster: not run.
* `text` (a block's output) and a bare fence (a listing): not run.

Output is compared exactly, but for trailing newlines at the end.
"""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

#: every info string a block of the README may have
KNOWN = {("python",), ("python", "spark"), ("python", "cluster"), ("sh",), ("sh", "not-run"), ("text",), ()}
FENCE = re.compile(r"^(`{3,})\s*([^`]*)$")  # a backtick fence's info string holds no backtick


@dataclass(frozen=True)
class Block:
    info: tuple[str, ...]
    code: str
    line: int  # the 1-based line of the first line of code
    expected: str | None = None  # the `text` block right after it


def blocks(text: str | None = None) -> list[Block]:
    """The README's fenced blocks in order, each with the `text` block after it."""
    lines = (README.read_text() if text is None else text).splitlines()
    found: list[tuple[tuple[str, ...], str, int, int]] = []  # info, code, first code line, closing line
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info = m.group(1), tuple(m.group(2).split())
        end = i + 1
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        if end == len(lines):
            raise ValueError(f"README.md:{i + 1}: a fenced block that never closes")
        found.append((info, "\n".join(lines[i + 1:end]) + "\n", i + 2, end + 1))
        i = end + 1
    out = []
    for k, (info, code, first, closing) in enumerate(found):
        expected = None
        if info and info[0] != "text" and k + 1 < len(found):
            nxt_info, nxt_code, nxt_first, _ = found[k + 1]
            between = lines[closing:nxt_first - 2]
            if nxt_info == ("text",) and all(not line.strip() for line in between):
                expected = nxt_code
        out.append(Block(info, code, first, expected))
    return out


def run_python(block: Block, namespace: dict) -> str:
    """Run one block in `namespace`; what it printed. A traceback names README.md's lines."""
    code = compile("\n" * (block.line - 1) + block.code, str(README), "exec")
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        exec(code, namespace)
    return buffer.getvalue()


def check_output(block: Block, printed: str) -> None:
    expected = (block.expected or "").rstrip("\n")
    if printed.rstrip("\n") != expected:
        raise AssertionError(f"README.md:{block.line}: the example printed\n{printed}\nwhere the README shows\n"
                             f"{expected}\n")


def run_examples(kinds: set[tuple[str, ...]]) -> int:
    """Run every block of those kinds in order in one namespace, checking each one's
    output; how many ran."""
    namespace: dict = {"__name__": "__readme__"}
    ran = 0
    for block in blocks():
        if block.info in kinds:
            check_output(block, run_python(block, namespace))
            ran += 1
    return ran
