"""spark_impl is a second formulation of the windows, not a wrapper around the
oracle: it may import from `oracle` only the model, the errors, the dialect
parsers and the case format (DESIGN.md, "Spark implementation"). Checked on the
source of every module (ast), so an import inside a function counts too: no
exception, the streaming package included (both streams run spark_impl's own
plans). No module outside the streaming package imports it, so the batch
plans stay independent of it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import spark_impl

ALLOWED = ("oracle.model", "oracle.errors", "oracle.dialects",
           "oracle.cases")  # specs, errors, parsers, cases
PACKAGE = Path(spark_impl.__file__).parent
STREAMING = "streaming/"


def oracle_imports(source: str) -> list[tuple[int, str]]:
    """(line, module) of every import of an `oracle` module in `source`;
    `from oracle import x` counts as importing `oracle.x`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "oracle":
                found += [(node.lineno, f"oracle.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, node.module))
    return [(line, name) for line, name in found if name == "oracle" or name.startswith("oracle.")]


def forbidden(name: str) -> bool:
    return not any(name == allowed or name.startswith(allowed + ".") for allowed in ALLOWED)


def modules_() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_the_walk_sees_the_package():
    names = {p.relative_to(PACKAGE).as_posix() for p in modules_()}
    assert {"__init__.py", "frames.py", "pipeline.py", "windows/__init__.py", "windows/length.py"} <= names
    assert any(oracle_imports(p.read_text()) for p in modules_())


@pytest.mark.parametrize("source, bad", [
    ("import oracle.windows", ["oracle.windows"]),
    ("from oracle.driver import run", ["oracle.driver"]),
    ("from oracle import run, model", ["oracle.run"]),
    ("import oracle", ["oracle"]),
    ("def f():\n    from oracle.windows.length import LengthWindow", ["oracle.windows.length"]),
    ("from oracle.model import Length\nfrom oracle.dialects.esper import parse\nfrom oracle.cases import Case", []),
])
def test_the_check_tells_allowed_from_forbidden(source, bad):
    assert [name for _, name in oracle_imports(source) if forbidden(name)] == bad


@pytest.mark.parametrize("path", modules_(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_spark_impl_imports_only_the_model_errors_parsers_and_cases(path):
    bad = [f"line {line}: {name}" for line, name in oracle_imports(path.read_text()) if forbidden(name)]
    assert not bad, f"{path.relative_to(PACKAGE)} imports {bad}; allowed from oracle: {', '.join(ALLOWED)}"


def test_nothing_outside_the_streaming_package_imports_it():
    for path in modules_():
        if not path.relative_to(PACKAGE).as_posix().startswith(STREAMING):
            tree = ast.parse(path.read_text())
            names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
            names += [f"{n.module}.{a.name}" if n.module == "spark_impl" else n.module
                      for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module for a in n.names]
            assert not any(name == "spark_impl.streaming" or name.startswith("spark_impl.streaming.")
                           for name in names), f"{path.relative_to(PACKAGE)} imports spark_impl.streaming"


def test_importing_spark_impl_loads_no_oracle_window_or_driver():
    """At run time too, not only in the source: importing every spark_impl module
    and parsing a clause loads the model, errors and parser, nothing else of the
    oracle. (A fresh interpreter: this test process has loaded the oracle.)"""
    import subprocess
    import sys

    modules = [f"spark_impl.{p.relative_to(PACKAGE).with_suffix('').as_posix().replace('/', '.')}" for p in modules_()]
    code = (
        "import importlib, sys\n"
        f"for name in {[m.removesuffix('.__init__') for m in modules]!r}:\n"
        "    importlib.import_module(name)\n"
        "from spark_impl.pipeline import family_of\n"
        "from oracle import parse\n"
        "family_of(parse('#groupwin(k)#time_batch(1 sec)'))\n"
        "print(sorted(m for m in sys.modules if m == 'oracle' or m.startswith('oracle.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = eval(out.strip().splitlines()[-1])
    assert loaded and all(not forbidden(name) or name == "oracle" for name in loaded), loaded
    assert not any(name.startswith(("oracle.windows", "oracle.driver")) for name in loaded), loaded
