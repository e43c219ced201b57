"""The README's Spark examples print what it shows: its `python spark` blocks
run in order, on the lane's session, in one namespace with the `python` blocks
before them (the convention: tests/readme_blocks.py; the examples without
Spark: tests/test_readme.py). The streaming examples write to a fresh
temporary folder each run, as the README tells readers to."""

from __future__ import annotations

from readme_blocks import run_examples


def test_spark_examples_print_what_the_readme_shows(spark):
    assert run_examples({("python",), ("python", "spark")}) >= 9
