"""Every spec kind of the model has everything a kind needs, each found in one
table keyed by spec class: an oracle window (`oracle.windows.WINDOW_CLASSES`), a
Spark family (`spark_impl.windows.FAMILIES`, its module imported, or the
pipeline's grouping around one), a writer in at least one implemented dialect
(and in each dialect that writes it, render and parse back: most kinds exist in
one engine only), a strategy (`difftest.strategies.STRATEGIES`) and at least three corpus cases.

Dialects: every kind is written by at least one implemented dialect, and every
dialect that writes it (`oracle.dialects.writes`) parses its text, with the
settings the dialect writes beside it (eKuiper's time mode, ...), back to the
same spec. A dialect need not write every kind: Esper's windows are not
eKuiper's.

PENDING lists what is knowingly missing, kind by kind, until the issue that
builds it closes: the test fails when a piece is missing that PENDING does not
name, and when PENDING names a piece that is there (shrink it as work lands).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from difftest.strategies import EXAMPLES, STRATEGIES
from oracle.cases import corpus_files, load_case
from oracle.dialects import IMPLEMENTED, case_spec, parse, render, settings, writes
from oracle.errors import UnsupportedWindow, WindowOracleError
from oracle.model import WINDOW_SPECS, nested_specs
from oracle.model import Statement
from oracle.windows import WINDOW_CLASSES

ROOT = Path(__file__).resolve().parent.parent
ASPECTS = ("oracle", "spark", "dialects", "strategies", "corpus")

#: spec class -> the aspects still missing
PENDING: dict[type, set[str]] = {}
SPECS = WINDOW_SPECS + (Statement,)


def _corpus_counts() -> Counter:
    counts: Counter = Counter()
    for path in corpus_files(ROOT / "corpus"):
        case = load_case(path)
        try:
            spec = case_spec(case)
        except WindowOracleError:
            continue
        counts.update({type(inner) for inner in nested_specs(spec)})
    return counts


def _has(aspect: str, cls: type, corpus: Counter) -> bool:
    if aspect == "oracle":
        return cls in WINDOW_CLASSES
    if aspect == "spark":  # FAMILIES, or the pipeline's grouping around a family
        from spark_impl.pipeline import family_of

        try:
            return callable(family_of(EXAMPLES[cls]).posts)
        except UnsupportedWindow:
            return False
    if aspect == "dialects":
        example = EXAMPLES[cls]
        writers = [dialect for dialect in IMPLEMENTED if writes(example, dialect)]
        return bool(writers) and all(
            parse(render(example, dialect), dialect, settings(example, dialect)) == example for dialect in writers)
    if aspect == "strategies":
        return cls in STRATEGIES and cls in EXAMPLES
    return corpus[cls] >= 3


def test_every_spec_class_has_an_example():
    assert set(EXAMPLES) == set(SPECS)


@pytest.mark.parametrize("cls", SPECS, ids=lambda cls: cls.__name__)
def test_every_kind_has_every_piece(cls):
    corpus = _corpus_counts()
    missing = {aspect for aspect in ASPECTS if not _has(aspect, cls, corpus)}
    assert missing == PENDING.get(cls, set())


def test_every_table_keyed_by_kind_holds_every_kind_it_can_meet():
    """The tables the Spark side keeps per kind, beside FAMILIES: a kind the
    model lets in but a table lacks would fail inside a Spark worker, not here.
    Members of an intersection or union: every data window the model accepts
    as a member (`_members`) has the kernel's member class; pane windows: every
    pane kind but the count window (from row indices, `panes.count_posts`) has
    its machines in the pane kernel (processing time, event time)."""
    from oracle.model import DATA_WINDOWS, NOT_MEMBERS, PANE_WINDOWS, CountPanes
    from spark_impl.windows.members import MEMBERS
    from spark_impl.windows.pane_kernel import MACHINES

    members = {cls for cls in DATA_WINDOWS if not issubclass(cls, NOT_MEMBERS)}
    assert members - set(MEMBERS) == set(), "data windows the intersection kernel has no member class for"
    assert set(PANE_WINDOWS) - set(MACHINES) == {CountPanes}, "pane windows the pane kernel has no machine for"
    assert all(len(pair) == 2 and all(map(callable, pair)) for pair in MACHINES.values()), \
        "a pane kind without its processing-time machine or its event-time window"


def test_every_family_module_posts_every_kind_routed_to_it():
    """A spec class FAMILIES routes to a module is in that module's POSTS (and
    its CHECKS, where the module has one, are callables): a class routed but
    not posted would fail in the planner, not here."""
    import importlib

    from spark_impl.windows import FAMILIES

    for cls, name in FAMILIES.items():
        module = importlib.import_module(f"spark_impl.windows.{name}")
        assert cls in module.POSTS, f"{cls.__name__} is routed to spark_impl.windows.{name}, whose POSTS lacks it"
        assert callable(getattr(module, "CHECKS", {}).get(cls, len)), f"{name}.CHECKS[{cls.__name__}]"


def test_every_keyed_policy_and_lot_kind_runs_on_both_engines():
    """CCL's keyed policies (under PER where a policy takes one) and Apama's
    lot windows: each the model accepts has the oracle's rule and the Spark
    family's plan, and the CCL or Apama dialect writes it."""
    from oracle.model import KEYED_GROUP_POLICIES, KEYED_POLICIES, LOT_WINDOWS, GroupWin, Keyed
    from oracle.windows import make_window
    from oracle.windows.lots import RULES
    from spark_impl.pipeline import family_of

    keyed = [Keyed(("symbol",), EXAMPLES[cls]) for cls in KEYED_POLICIES]
    keyed += [Keyed(("symbol",), GroupWin(("feed",), EXAMPLES[cls])) for cls in KEYED_GROUP_POLICIES]
    for spec in keyed:
        make_window(spec, 0)
        family_of(spec)
        assert writes(spec, "ccl"), spec
    assert set(LOT_WINDOWS) - set(RULES) == set(), "lot windows the oracle's lot rules lack"
    for cls in LOT_WINDOWS:
        make_window(EXAMPLES[cls], 0)
        family_of(EXAMPLES[cls])
        assert writes(EXAMPLES[cls], "apama"), cls


def test_every_statement_shape_runs_on_both_engines():
    """Each of Esper's processors (`Statement.shape`) and CCL's aggregation
    window has a drawn kind, an example the oracle runs, and a Spark plan."""
    from difftest.strategies import STATEMENT_EXAMPLES, STATEMENT_SPECS
    from oracle.model import SHAPES
    from oracle.windows import make_window
    from spark_impl.pipeline import family_of

    assert set(STATEMENT_EXAMPLES) == {*SHAPES, "store"} == {k.removeprefix("statement/") for k in STATEMENT_SPECS}
    for kind, example in STATEMENT_EXAMPLES.items():
        assert example.kind_name() == f"statement/{kind}"
        make_window(example, 0)
        family_of(example)


def test_every_engines_statement_rules_run_on_both_engines():
    """Each engine's rules (`oracle.model.RULES`) have an example the oracle
    runs, Spark plans and one dialect writes back; each way of posting
    (`Rules.posted`) has an oracle window and a Spark family."""
    from difftest.strategies import QUERY_EXAMPLES, STATEMENT_EXAMPLES
    from oracle.model import POSTED, RULES
    from oracle.windows import STATEMENT_WINDOWS, make_window
    from spark_impl.pipeline import family_of
    from spark_impl.windows import STATEMENT_FAMILIES

    assert set(STATEMENT_WINDOWS) == set(STATEMENT_FAMILIES) == set(POSTED)
    examples = [*STATEMENT_EXAMPLES.values(), *QUERY_EXAMPLES.values()]
    assert {example.rules for example in examples} == set(RULES)
    for example in examples:
        make_window(example, 0)
        assert callable(family_of(example).posts)
        (dialect,) = [d for d in IMPLEMENTED if writes(example, d)]
        assert parse(render(example, dialect), dialect, settings(example, dialect)) == example


# --------------------------------------------------------------------------- reasons

def _window_classes() -> set[type]:
    """Every oracle window class a spec can build (statements by their rules)."""
    from oracle.windows import STATEMENT_WINDOWS, derived, panes

    found = {cls for cls in WINDOW_CLASSES.values() if isinstance(cls, type)}
    found |= set(derived.WINDOWS.values()) | set(panes.WINDOWS.values())
    found |= {cls for cls in STATEMENT_WINDOWS.values() if isinstance(cls, type)}
    return found


#: windows that post only rows other windows posted, with those windows' reasons
PASSES_REASONS_ON = {"GroupWinWindow"}


def _plain(text: str) -> str:
    """Docstring text as a phrase is matched against it: no markup, one space, lower case."""
    return " ".join(text.replace("`", "").replace("*", "").split()).lower()


@pytest.mark.parametrize("cls", sorted(_window_classes(), key=lambda c: c.__name__), ids=lambda c: c.__name__)
def test_every_window_has_a_reason_table_from_its_docstring(cls):
    """Each window names the rules behind its posts in one table (`REASONS`),
    each phrase words of its docstring (the class's or its module's)."""
    import sys

    from oracle.windows.reasons import Reasons

    if cls.__name__ in PASSES_REASONS_ON:
        assert "REASONS" not in vars(cls)
        return
    table = getattr(cls, "REASONS", None)
    assert isinstance(table, Reasons), f"{cls.__name__} has no reason table"
    owner = table.owner
    doc = _plain((owner.__doc__ or "") + " " + (sys.modules[owner.__module__].__doc__ or ""))
    missing = {rule: phrase for rule, phrase in table.phrases.items() if _plain(phrase) not in doc}
    assert not missing, f"{owner.__name__}: phrases not in its docstring: {missing}"


def test_the_drivers_reason_comes_from_its_docstring():
    import oracle.driver

    doc = _plain(oracle.driver.__doc__)
    assert all(_plain(phrase) in doc for phrase in oracle.driver.REASONS.phrases.values())
